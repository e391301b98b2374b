//! Submodules and nested repositories: their changes travel as nested change sets, a gitlink
//! bump lands in the source's submodule, and a promote that cannot land everything says
//! `partial` (or `conflict`), never `applied`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::fixture::{Fixture, isolate, json_of};

/// Local submodules need the file transport allowed (the fixture isolates git's config).
const ALLOW_FILE: [(&str, &str); 3] = [
    ("GIT_CONFIG_COUNT", "1"),
    ("GIT_CONFIG_KEY_0", "protocol.file.allow"),
    ("GIT_CONFIG_VALUE_0", "always"),
];

/// Where the submodule sits in the superproject.
const SUB: &str = "vendor/lib";

/// A source with a submodule at `vendor/lib` (from a local repository `work/lib`, one commit
/// holding `lib.txt`), and a session `id` bound with `--submodules`.
fn with_submodule(id: &str) -> Fixture {
    let fx = Fixture::new();
    let lib = fx.root.join("work/lib");
    std::fs::create_dir(&lib).unwrap();
    fx.git(&lib, &["init", "-q", "-b", "main"]);
    std::fs::write(lib.join("lib.txt"), "library\n").unwrap();
    fx.git(&lib, &["add", "-A"]);
    fx.git(&lib, &["commit", "-q", "-m", "lib"]);
    let mut add = Command::new("git");
    add.current_dir(&fx.src)
        .args(["submodule", "add", "-q", lib.to_str().unwrap(), SUB]);
    isolate(&mut add, &fx.home);
    add.envs(ALLOW_FILE);
    assert!(add.status().unwrap().success());
    fx.commit_all("add a submodule");
    bind_submodules(&fx, id);
    fx
}

fn bind_submodules(fx: &Fixture, id: &str) {
    let mut bind = fx.cmd();
    bind.args(["--json", "bind", "-s", id, "--submodules"])
        .envs(ALLOW_FILE);
    let (code, doc) = json_of(bind.output().unwrap());
    assert_eq!(code, 0, "{doc}");
}

fn sub_in(dir: &Path) -> PathBuf {
    dir.join(SUB)
}

fn promote(fx: &Fixture, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["promote"];
    all.extend_from_slice(args);
    fx.json(&all)
}

/// The gitlink the source's index records for the submodule.
fn index_gitlink(fx: &Fixture) -> String {
    let listed = fx.git(&fx.src, &["ls-files", "-s", "--", SUB]);
    let mut fields = listed.split_whitespace();
    assert_eq!(fields.next(), Some("160000"), "{listed}");
    fields.next().unwrap().to_string()
}

/// A commit inside the isolation's submodule (a gitlink bump); returns the new commit.
fn commit_in_isolation_submodule(fx: &Fixture, id: &str) -> String {
    let sub = sub_in(&fx.isolation(id));
    std::fs::write(sub.join("lib.txt"), "library, improved\n").unwrap();
    fx.git(&sub, &["commit", "-q", "-a", "-m", "improve the library"]);
    fx.git(&sub, &["rev-parse", "HEAD"])
}

/// The promise that comes before everything else: a promote whose patch carries a gitlink
/// change never says `applied` unless the source's submodule really moved.
#[test]
fn a_gitlink_bump_is_never_reported_applied_while_dropped() {
    let fx = with_submodule("s");
    let bumped = commit_in_isolation_submodule(&fx, "s");
    let before = fx.git(&sub_in(&fx.src), &["rev-parse", "HEAD"]);
    let (code, doc) = promote(&fx, &["-s", "s"]);
    let moved =
        fx.git(&sub_in(&fx.src), &["rev-parse", "HEAD"]) == bumped && index_gitlink(&fx) == bumped;
    if doc["outcome"] == "applied" {
        assert!(
            moved,
            "applied, but the submodule stayed at {before}: {doc}"
        );
        assert_eq!(code, 0, "{doc}");
    } else {
        assert_eq!(code, 3, "{doc}");
        assert!(doc.to_string().contains(SUB), "{doc}");
        assert_eq!(fx.git(&sub_in(&fx.src), &["rev-parse", "HEAD"]), before);
    }
}

/// An edit inside the isolation's submodule is captured as a nested change set: reported by
/// `run`, stored beside the run's document, its trees pinned; the document stays flat.
#[test]
fn a_submodule_edit_is_captured_as_a_nested_change_set() {
    let fx = with_submodule("s");
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "s",
        "--run-id",
        "r1",
        "--no-sandbox",
        "--",
        "sh",
        "-c",
        "echo 'library, edited' > vendor/lib/lib.txt",
    ]);
    assert_eq!(code, 0, "{doc}");
    let nested = doc["nested"].as_array().expect("a nested list");
    assert_eq!(nested.len(), 1, "{doc}");
    assert_eq!(nested[0]["path"], SUB, "{doc}");
    assert_eq!(nested[0]["kind"], "submodule", "{doc}");
    assert!(nested[0]["patch_bytes"].as_u64().unwrap() > 0, "{doc}");
    // The root change set does not see inside the submodule: it is empty.
    assert_eq!(doc["change_set"]["files_changed"], 0, "{doc}");
    let result = nested[0]["result_tree"].as_str().unwrap();
    let pinned = fx.git(&fx.src, &["rev-parse", "refs/a3s-iso/nested/s/r1/0/result"]);
    assert_eq!(pinned, result);
    assert_eq!(
        fx.git(&fx.src, &["cat-file", "-p", &format!("{result}:lib.txt")]),
        "library, edited"
    );
    let stored = fx.src.join(".git/a3s-iso/nested/s/r1.json");
    let stored: Value = serde_json::from_slice(&std::fs::read(stored).unwrap()).unwrap();
    assert_eq!(
        stored["nested"][0]["patch_digest"],
        nested[0]["patch_digest"]
    );
    // The document of the run carries the root only, flat.
    let (code, cap) = fx.json(&["capture", "-s", "s", "--run-id", "r1"]);
    assert_eq!(code, 0, "{cap}");
    assert!(cap.get("nested").is_none(), "{cap}");
    // Human output names the nested change set.
    let out = fx.cmd().args(["capture", "-s", "s"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("nested") && text.contains(SUB), "{text}");
}
