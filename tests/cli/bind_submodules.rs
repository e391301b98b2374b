//! `bind --submodules` without the network: each submodule is cloned from the source's own
//! copy of it, whatever its URL says, and `diff` shows the work done inside it.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::fixture::{Fixture, admin_dir, isolate, json_of, snapshot_settings};

/// Where the submodule sits in the superproject, and where its own submodule sits in it.
const SUB: &str = "vendor/lib";
const DEEP: &str = "deep";

/// The submodule's name, which is not its path: its git dir is `modules/<name>`.
const NAME: &str = "lib core";

/// A URL nothing answers.
const UNREACHABLE: &str = "https://invalid.example/sub.git";

/// git with the file transport allowed: for building the fixture only, never for a3s-iso.
fn git_allowing_file(fx: &Fixture, dir: &Path, args: &[&str]) {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir).args(args);
    isolate(&mut cmd, &fx.home);
    cmd.env("GIT_CONFIG_COUNT", "1")
        .env("GIT_CONFIG_KEY_0", "protocol.file.allow")
        .env("GIT_CONFIG_VALUE_0", "always");
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A repository `work/<name>` with one commit holding `<name>.txt`.
fn repository(fx: &Fixture, name: &str) -> PathBuf {
    let dir = fx.root.join("work").join(name);
    std::fs::create_dir(&dir).unwrap();
    fx.git(&dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join(format!("{name}.txt")), format!("{name}\n")).unwrap();
    fx.git(&dir, &["add", "-A"]);
    fx.git(&dir, &["commit", "-q", "-m", name]);
    dir
}

/// A source whose submodule `vendor/lib` (named `lib core`, from `work/lib`) has a submodule `deep` of its own
/// (from `../inner`, a relative URL), both initialised in the source; then the submodule's
/// URL is changed to one nothing answers (committed, and synced into the source's config) and
/// the repositories it was cloned from are deleted.
fn unreachable_submodules() -> Fixture {
    let fx = Fixture::new();
    repository(&fx, "inner");
    let lib = repository(&fx, "lib");
    git_allowing_file(&fx, &lib, &["submodule", "add", "-q", "../inner", DEEP]);
    fx.git(&lib, &["commit", "-q", "-m", "deep"]);
    let lib_url = lib.to_str().unwrap();
    let add = ["submodule", "add", "-q", "--name", NAME, lib_url, SUB];
    git_allowing_file(&fx, &fx.src, &add);
    git_allowing_file(
        &fx,
        &fx.src,
        &["submodule", "update", "-q", "--init", "--recursive"],
    );
    let key = format!("submodule.{NAME}.url");
    fx.git(&fx.src, &["config", "-f", ".gitmodules", &key, UNREACHABLE]);
    fx.git(&fx.src, &["submodule", "sync", "-q"]);
    fx.commit_all("add a submodule");
    std::fs::remove_dir_all(&lib).unwrap();
    std::fs::remove_dir_all(fx.root.join("work/inner")).unwrap();
    fx
}

/// `bind --submodules` with git's default file-transport policy: the fixture's git sees no
/// configuration but the repository's.
fn bind_submodules(fx: &Fixture, id: &str) -> Value {
    let (code, doc) = json_of(
        fx.cmd()
            .args(["--json", "bind", "-s", id, "--submodules"])
            .output()
            .unwrap(),
    );
    assert_eq!(code, 0, "{doc}");
    doc
}

fn read(path: PathBuf) -> Vec<u8> {
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                todo.push(entry.path());
            } else {
                found.push(entry.path());
            }
        }
    }
    found
}

#[test]
fn bind_submodules_clones_from_the_source_not_the_url() {
    let fx = unreachable_submodules();
    let doc = bind_submodules(&fx, "s");
    assert_eq!(doc["warnings"], serde_json::json!([]), "{doc}");
    let iso = fx.isolation("s");
    let (sub, deep) = (iso.join(SUB), iso.join(SUB).join(DEEP));

    // The commits the gitlinks name, and their files byte for byte.
    let recorded = |dir: &Path, path: &str| {
        let listed = fx.git(dir, &["ls-tree", "HEAD", path]);
        listed.split_whitespace().nth(2).unwrap().to_string()
    };
    assert_eq!(fx.git(&sub, &["rev-parse", "HEAD"]), recorded(&fx.src, SUB));
    assert_eq!(
        fx.git(&deep, &["rev-parse", "HEAD"]),
        recorded(&fx.src.join(SUB), DEEP)
    );
    assert_eq!(read(sub.join("lib.txt")), b"lib\n");
    assert_eq!(read(deep.join("inner.txt")), b"inner\n");
    assert_eq!(fx.git(&sub, &["status", "--porcelain"]), "");

    // The configuration names the user's URLs, as `git submodule update --init` leaves it: the
    // local git dirs were for the clone only.
    assert_eq!(fx.git(&sub, &["remote", "get-url", "origin"]), UNREACHABLE);
    assert_eq!(
        fx.git(&deep, &["remote", "get-url", "origin"]),
        "https://invalid.example/inner"
    );
    let key = format!("submodule.{NAME}.url");
    assert_eq!(fx.git(&fx.src, &["config", &key]), UNREACHABLE);
    assert_eq!(
        fx.git(&fx.src.join(SUB), &["remote", "get-url", "origin"]),
        UNREACHABLE
    );
    let config = String::from_utf8_lossy(&read(fx.src.join(".git/config"))).into_owned();
    assert!(!config.contains("file://"), "{config}");

    // Copied, not hard-linked: nothing done to the isolation's objects reaches the source's.
    let modules = admin_dir(&fx, "s").join("modules");
    let objects = files_under(&modules);
    assert!(
        objects
            .iter()
            .any(|f| f.to_string_lossy().contains("/objects/"))
    );
    for file in objects {
        let links = std::fs::metadata(&file).unwrap().nlink();
        assert_eq!(links, 1, "{} is hard-linked", file.display());
    }
}

/// The work done inside the submodule cloned from the source shows in `diff` (patch, `--stat`,
/// `--name-only`, JSON), then lands in the source's submodule.
/// `diff`, `--stat` and `--name-only` show the submodule's work under its header.
fn the_patch_shows_the_nested_work(fx: &Fixture) {
    let out = fx.cmd().args(["diff", "-s", "d"]).output().unwrap();
    assert!(out.status.success());
    let patch = String::from_utf8(out.stdout).unwrap();
    let header = format!("# nested repository {SUB} (submodule)\n");
    let at = patch.find(&header).unwrap_or_else(|| panic!("{patch}"));
    let nested = &patch[at + header.len()..];
    assert!(
        nested.starts_with(&format!("diff --git a/{SUB}/lib.txt b/{SUB}/lib.txt\n")),
        "{patch}"
    );
    assert!(nested.contains("-lib\n+lib, edited\n"), "{patch}");
    assert!(
        nested.contains(&format!("+++ b/{SUB}/new.txt\n")),
        "{patch}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("not shown"), "{stderr}");

    let stat = fx
        .cmd()
        .args(["diff", "-s", "d", "--stat"])
        .output()
        .unwrap();
    let stat = String::from_utf8(stat.stdout).unwrap();
    assert!(stat.contains(&header), "{stat}");
    assert!(stat.contains(&format!(" {SUB}/lib.txt ")), "{stat}");
    assert!(stat.contains("2 files changed"), "{stat}");
    let names = fx
        .cmd()
        .args(["diff", "-s", "d", "--name-only"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(names.stdout).unwrap(),
        format!("{SUB}/lib.txt\n{SUB}/new.txt\n")
    );
}

#[test]
fn work_in_an_offline_submodule_shows_in_diff_and_lands() {
    let fx = unreachable_submodules();
    bind_submodules(&fx, "d");
    let iso = fx.isolation("d");
    std::fs::write(iso.join(SUB).join("lib.txt"), "lib, edited\n").unwrap();
    std::fs::write(iso.join(SUB).join("new.txt"), "new\n").unwrap();

    the_patch_shows_the_nested_work(&fx);

    let (code, doc) = fx.json(&["diff", "-s", "d"]);
    assert_eq!(code, 0, "{doc}");
    crate::contract_schemas::assert_valid("diff with a nested change set", &doc);
    assert_eq!(doc["files"], serde_json::json!([]), "{doc}");
    let sets = doc["nested_change_sets"].as_array().unwrap();
    snapshot_settings(&fx).bind(|| {
        insta::assert_json_snapshot!(sets, @r#"
        [
          {
            "digest": "sha256:[HASH]",
            "files": [
              {
                "additions": 1,
                "binary": false,
                "deletions": 1,
                "path": "vendor/lib/lib.txt",
                "status": "modified"
              },
              {
                "additions": 1,
                "binary": false,
                "deletions": 0,
                "path": "vendor/lib/new.txt",
                "status": "added"
              }
            ],
            "from_tree": "git-tree:[HASH]",
            "kind": "submodule",
            "patch_bytes": "[PATCH_BYTES]",
            "path": "vendor/lib",
            "to_tree": "git-tree:[HASH]"
          }
        ]
        "#)
    });

    // What diff showed is what lands, with the digest diff named.
    let (code, promoted) = fx.json(&["promote", "-s", "d"]);
    assert_eq!(code, 0, "{promoted}");
    assert_eq!(promoted["nested"][0]["outcome"], "applied", "{promoted}");
    assert_eq!(
        promoted["nested"][0]["digest"], sets[0]["digest"],
        "{promoted}"
    );
    assert_eq!(read(fx.src.join(SUB).join("lib.txt")), b"lib, edited\n");
    assert_eq!(read(fx.src.join(SUB).join("new.txt")), b"new\n");
}

/// A submodule the source never initialised stays uninitialised in the isolation, with a
/// warning that says what to do; a3s-iso does not fetch it from its URL, even one that would
/// answer.
#[test]
fn a_submodule_the_source_lacks_is_not_fetched_from_its_url() {
    let fx = Fixture::new();
    let lib = repository(&fx, "lib");
    git_allowing_file(
        &fx,
        &fx.src,
        &["submodule", "add", "-q", lib.to_str().unwrap(), SUB],
    );
    fx.commit_all("add a submodule");
    fx.git(&fx.src, &["submodule", "deinit", "-q", "--force", SUB]);
    std::fs::remove_dir_all(fx.src.join(".git/modules")).unwrap();

    // The URL would answer, and the file transport is allowed: still nothing is fetched.
    let (code, doc) = json_of(
        fx.cmd()
            .args(["--json", "bind", "-s", "u", "--submodules"])
            .env("GIT_CONFIG_COUNT", "1")
            .env("GIT_CONFIG_KEY_0", "protocol.file.allow")
            .env("GIT_CONFIG_VALUE_0", "always")
            .output()
            .unwrap(),
    );
    assert_eq!(code, 0, "{doc}");
    let warning = doc["warnings"][0].as_str().unwrap_or_default();
    assert!(warning.contains(SUB), "{doc}");
    assert!(warning.contains("has not initialised it"), "{doc}");
    assert!(
        warning.contains(&format!("git submodule update --init -- {SUB}")),
        "{doc}"
    );
    let sub = fx.isolation("u").join(SUB);
    assert!(!sub.join(".git").exists(), "{doc}");
    assert!(!admin_dir(&fx, "u").join("modules").exists(), "{doc}");
}

/// The source's copy of a submodule that lacks the commit the superproject records (its
/// checkout moved back, the commit pruned) is not cloned: the warning names the commit.
#[test]
fn a_source_copy_without_the_recorded_commit_is_named() {
    let fx = Fixture::new();
    let lib = repository(&fx, "lib");
    git_allowing_file(
        &fx,
        &fx.src,
        &["submodule", "add", "-q", lib.to_str().unwrap(), SUB],
    );
    fx.commit_all("add a submodule");
    let sub = fx.src.join(SUB);
    std::fs::write(sub.join("lib.txt"), "lib, later\n").unwrap();
    fx.git(&sub, &["commit", "-q", "-a", "-m", "later"]);
    let later = fx.git(&sub, &["rev-parse", "HEAD"]);
    fx.commit_all("bump the submodule");
    fx.git(&sub, &["reset", "-q", "--hard", "HEAD~1"]);
    fx.git(&sub, &["update-ref", "-d", "ORIG_HEAD"]);
    fx.git(&sub, &["reflog", "expire", "--expire=now", "--all"]);
    fx.git(&sub, &["gc", "-q", "--prune=now"]);
    std::fs::remove_dir_all(&lib).unwrap();

    let (code, doc) = json_of(
        fx.cmd()
            .args(["--json", "bind", "-s", "m", "--submodules", "--allow-dirty"])
            .output()
            .unwrap(),
    );
    assert_eq!(code, 0, "{doc}");
    let warnings = doc["warnings"].to_string();
    assert!(
        warnings.contains(&format!("does not have commit {later}")),
        "{doc}"
    );
    assert!(!fx.isolation("m").join(SUB).join(".git").exists(), "{doc}");
}
