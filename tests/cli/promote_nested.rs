//! Submodules and nested repositories: their changes travel as nested change sets, a gitlink
//! bump lands in the source's submodule, and a promote that cannot land everything says
//! `partial` (or `conflict`), never `applied`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::fixture::{Fixture, SUB, isolate, json_of, promote, with_submodule};

fn bind_submodules(fx: &Fixture, id: &str) {
    let mut bind = fx.cmd();
    bind.args(["--json", "bind", "-s", id, "--submodules"]);
    let (code, doc) = json_of(bind.output().unwrap());
    assert_eq!(code, 0, "{doc}");
}

fn sub_in(dir: &Path) -> PathBuf {
    dir.join(SUB)
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
    let result = result
        .strip_prefix("git-tree:")
        .expect("a tree id in the document's form");
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

pub(crate) fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn nested_of<'a>(doc: &'a Value, path: &str) -> &'a Value {
    doc["nested"]
        .as_array()
        .and_then(|all| all.iter().find(|n| n["path"] == path))
        .unwrap_or_else(|| panic!("no nested result for {path}: {doc}"))
}

/// An uncommitted edit inside the submodule lands in the source's submodule; a promote again
/// is idempotent.
#[test]
fn a_submodule_edit_lands_in_the_source_submodule() {
    let fx = with_submodule("s");
    let iso = fx.isolation("s");
    std::fs::write(sub_in(&iso).join("lib.txt"), "library, edited\n").unwrap();
    // Only the submodule changed: the root change set is empty, and --no-apply says planned.
    let (code, plan) = promote(&fx, &["-s", "s", "--no-apply"]);
    assert_eq!(
        (code, plan["outcome"].as_str()),
        (0, Some("planned")),
        "{plan}"
    );
    std::fs::write(iso.join("README.md"), "hello, edited\n").unwrap();
    // The user's own work in the submodule, outside the touched paths, survives.
    std::fs::write(sub_in(&fx.src).join("notes.txt"), "mine\n").unwrap();
    // --no-apply: both patches written out, nothing applied.
    let (code, plan) = promote(&fx, &["-s", "s", "--no-apply"]);
    assert_eq!(
        (code, plan["outcome"].as_str()),
        (0, Some("planned")),
        "{plan}"
    );
    assert_eq!(nested_of(&plan, SUB)["outcome"], "planned", "{plan}");
    let written = PathBuf::from(plan["artifacts"].as_str().unwrap())
        .join(format!("nested/{}.patch", hex::encode(SUB)));
    assert!(read(written).contains("+library, edited"));
    assert_eq!(read(sub_in(&fx.src).join("lib.txt")), "library\n");
    let (code, doc) = promote(&fx, &["-s", "s"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "applied", "{doc}");
    assert_eq!(nested_of(&doc, SUB)["outcome"], "applied", "{doc}");
    assert_eq!(read(sub_in(&fx.src).join("lib.txt")), "library, edited\n");
    assert_eq!(read(fx.src.join("README.md")), "hello, edited\n");
    assert_eq!(read(sub_in(&fx.src).join("notes.txt")), "mine\n");
    let (code, again) = promote(&fx, &["-s", "s"]);
    assert_eq!(code, 0, "{again}");
    assert_eq!(again["outcome"], "idempotent", "{again}");
    assert_eq!(nested_of(&again, SUB)["outcome"], "idempotent", "{again}");
    assert_eq!(read(sub_in(&fx.src).join("lib.txt")), "library, edited\n");
}

/// A commit inside the isolation's submodule moves the source's submodule (checkout and the
/// superproject's index entry) to that commit, copied from the isolation; with an uncommitted
/// edit on top, both land.
#[test]
fn a_gitlink_bump_and_an_edit_on_top_land_together() {
    let fx = with_submodule("s");
    let bumped = commit_in_isolation_submodule(&fx, "s");
    let sub = sub_in(&fx.isolation("s"));
    std::fs::write(sub.join("extra.txt"), "uncommitted on top\n").unwrap();
    let (code, doc) = promote(&fx, &["-s", "s"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "applied", "{doc}");
    assert_eq!(nested_of(&doc, SUB)["outcome"], "applied", "{doc}");
    assert_eq!(fx.git(&sub_in(&fx.src), &["rev-parse", "HEAD"]), bumped);
    assert_eq!(index_gitlink(&fx), bumped);
    assert_eq!(read(sub_in(&fx.src).join("lib.txt")), "library, improved\n");
    assert_eq!(
        read(sub_in(&fx.src).join("extra.txt")),
        "uncommitted on top\n"
    );
    let (code, again) = promote(&fx, &["-s", "s"]);
    assert_eq!(
        (code, again["outcome"].as_str()),
        (0, Some("idempotent")),
        "{again}"
    );
}

/// The source's submodule has its own uncommitted change at the path the nested change set
/// touches: the root lands, the nested one does not (`partial`, exit 3, naming it); once the
/// user's change is gone, a promote again lands the rest and leaves the root as it is.
#[test]
fn a_blocked_nested_change_set_is_partial_and_a_rerun_lands_it() {
    let fx = with_submodule("s");
    let iso = fx.isolation("s");
    std::fs::write(sub_in(&iso).join("lib.txt"), "library, edited\n").unwrap();
    std::fs::write(iso.join("README.md"), "hello, edited\n").unwrap();
    std::fs::write(sub_in(&fx.src).join("lib.txt"), "the user's own edit\n").unwrap();
    let (code, doc) = promote(&fx, &["-s", "s"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["outcome"], "partial", "{doc}");
    let nested = nested_of(&doc, SUB);
    assert_eq!(nested["outcome"], "conflict", "{doc}");
    assert_eq!(nested["reason"], "patch_does_not_apply", "{doc}");
    assert_eq!(read(fx.src.join("README.md")), "hello, edited\n");
    assert_eq!(
        read(sub_in(&fx.src).join("lib.txt")),
        "the user's own edit\n"
    );
    // The human report names the submodule too.
    let out = fx.cmd().args(["promote", "-s", "s"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("partial") && text.contains(SUB), "{text}");

    fx.git(&sub_in(&fx.src), &["checkout", "--", "lib.txt"]);
    let (code, again) = promote(&fx, &["-s", "s"]);
    assert_eq!(code, 0, "{again}");
    assert_eq!(again["outcome"], "applied", "{again}");
    assert_eq!(nested_of(&again, SUB)["outcome"], "applied", "{again}");
    assert_eq!(read(sub_in(&fx.src).join("lib.txt")), "library, edited\n");
    assert_eq!(read(fx.src.join("README.md")), "hello, edited\n");
    let (code, third) = promote(&fx, &["-s", "s"]);
    assert_eq!(
        (code, third["outcome"].as_str()),
        (0, Some("idempotent")),
        "{third}"
    );
}

/// A source whose submodule is not initialised: a nested edit alone cannot land anywhere
/// (`conflict`, nothing applied); a gitlink bump cannot move it (`conflict` naming it).
#[test]
fn an_uninitialised_source_submodule_takes_nothing() {
    let fx = with_submodule("s");
    fx.git(&fx.src, &["submodule", "deinit", "-q", "--force", SUB]);
    let before = crate::fixture::checkout_listing(&fx.src);
    std::fs::write(sub_in(&fx.isolation("s")).join("lib.txt"), "edited\n").unwrap();
    let (code, doc) = promote(&fx, &["-s", "s"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["outcome"], "conflict", "{doc}");
    assert_eq!(doc["reason"], "nested_unavailable", "{doc}");
    assert_eq!(doc["conflicting_paths"][0], SUB, "{doc}");
    assert_eq!(crate::fixture::checkout_listing(&fx.src), before);

    bind_submodules(&fx, "t");
    commit_in_isolation_submodule(&fx, "t");
    std::fs::write(fx.isolation("t").join("README.md"), "bumped\n").unwrap();
    let (code, doc) = promote(&fx, &["-s", "t"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["outcome"], "conflict", "{doc}");
    assert_eq!(doc["reason"], "submodule_not_updated", "{doc}");
    assert_eq!(doc["conflicting_paths"][0], SUB, "{doc}");
    assert_eq!(crate::fixture::checkout_listing(&fx.src), before);
}

/// A script for the command: in the isolation's submodule, a commit, then its own git dir's
/// config names a clean filter, an fsmonitor hook and a hooks path (all leaving marks), its
/// attributes send every file through the filter, and a file is edited so git must hash it.
fn hostile_submodule_script(marks: &Path) -> String {
    let mark = |name: &str| marks.join(name).display().to_string();
    format!(
        "set -e
cd {SUB}
echo committed > committed.txt
git add committed.txt
git -c user.name=n -c user.email=n@n commit -q -m 'in the submodule'
git config filter.x.clean \"touch '{filter}'; cat\"
git config core.fsmonitor \"touch '{fsmonitor}'; false\"
mkdir -p hooks && printf '#!/bin/sh\\ntouch \"{hook}\"\\n' > hooks/post-checkout
chmod +x hooks/post-checkout
git config core.hooksPath \"$PWD/hooks\"
echo '* filter=x' > .gitattributes
echo 'library, edited' > lib.txt
",
        filter = mark("filter"),
        fsmonitor = mark("fsmonitor"),
        hook = mark("hook"),
    )
}

/// Whether a git that trusts the isolation's submodule (plain `git add` in it) runs the
/// planted filter: proves the planted config is live.
fn trusting_git_runs_the_filter(fx: &Fixture, id: &str, marks: &Path) -> bool {
    let sub = sub_in(&fx.isolation(id));
    let mut cmd = Command::new("git");
    cmd.current_dir(&sub).args(["add", "-A"]);
    isolate(&mut cmd, &fx.home);
    let _ = cmd.output().unwrap();
    marks.join("filter").exists()
}

/// The sandboxed command controls its submodules' git dirs (under the isolation's admin dir):
/// capturing and promoting their work runs none of their configuration. The commit made
/// under the sandbox still lands.
#[test]
fn hostile_submodule_config_does_not_run_outside_the_sandbox() {
    let sandboxed = crate::fixture::sandbox_available();
    if !sandboxed {
        eprintln!("the sandboxed case is skipped: this kernel cannot give the run sandbox");
    }
    let fx = with_submodule("s");
    let marks = fx.root.join("marks");
    std::fs::create_dir(&marks).unwrap();
    let script = hostile_submodule_script(&marks);
    let mut args = vec!["run", "-s", "s", "--allow-write", marks.to_str().unwrap()];
    if !sandboxed {
        args.push("--no-sandbox");
    }
    args.extend(["--", "sh", "-c", &script]);
    let out = fx.cmd().arg("--json").args(&args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let (code, doc) = json_of(out);
    assert_eq!(code, 0, "{doc}\n{stderr}");
    let clear = |what: &str| {
        let left: Vec<_> = std::fs::read_dir(&marks).unwrap().flatten().collect();
        assert!(left.is_empty(), "{what}: a planted command ran: {left:?}");
    };
    clear("run");
    assert_eq!(doc["nested"][0]["path"], SUB, "{doc}");
    let (code, doc) = fx.json(&["capture", "-s", "s"]);
    assert_eq!(code, 0, "{doc}");
    clear("capture");
    let (code, doc) = promote(&fx, &["-s", "s"]);
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("applied")),
        "{doc}"
    );
    clear("promote");
    let src_sub = sub_in(&fx.src);
    assert_eq!(read(src_sub.join("committed.txt")), "committed\n");
    assert_eq!(read(src_sub.join("lib.txt")), "library, edited\n");
    assert_eq!(
        fx.git(&src_sub, &["rev-parse", "HEAD"]),
        fx.git(&sub_in(&fx.isolation("s")), &["rev-parse", "HEAD"])
    );
    // And since the run took the filter out of the submodule's config, even your own git in
    // the isolation's submodule runs nothing of it.
    assert!(
        !trusting_git_runs_the_filter(&fx, "s", &marks),
        "the planted filter is still live after the run"
    );
}

/// Branch mode: the session's root commits are replayed onto the source's branch (the gitlink
/// bump among them, the source's submodule following it), and the uncommitted edit inside the
/// submodule becomes one commit in the source's submodule.
#[test]
fn branch_mode_commits_in_both_repositories() {
    let fx = with_submodule("s");
    let bumped = commit_in_isolation_submodule(&fx, "s");
    let iso = fx.isolation("s");
    fx.git(&iso, &["add", SUB]);
    fx.git(&iso, &["commit", "-q", "-m", "bump the library"]);
    std::fs::write(sub_in(&iso).join("extra.txt"), "uncommitted on top\n").unwrap();
    std::fs::write(iso.join("README.md"), "hello, edited\n").unwrap();
    let before = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let (code, doc) = promote(&fx, &["-s", "s", "--mode", "branch"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "applied", "{doc}");
    assert_eq!(nested_of(&doc, SUB)["outcome"], "applied", "{doc}");
    // The superproject: the bump and the leftovers, as commits on top of where it was.
    let log = fx.git(&fx.src, &["log", "--format=%s", &format!("{before}..HEAD")]);
    assert!(log.contains("bump the library"), "{log}");
    assert_eq!(
        fx.git(&fx.src, &["rev-parse", &format!("HEAD:{SUB}")]),
        bumped
    );
    assert_eq!(read(fx.src.join("README.md")), "hello, edited\n");
    // The submodule: one commit on the bumped one, holding the edit.
    let src_sub = sub_in(&fx.src);
    assert_eq!(fx.git(&src_sub, &["rev-parse", "HEAD^"]), bumped);
    let subject = fx.git(&src_sub, &["log", "-1", "--format=%s"]);
    assert!(
        subject.contains("session s") && subject.contains(SUB),
        "{subject}"
    );
    assert_eq!(
        fx.git(&src_sub, &["show", "HEAD:extra.txt"]),
        "uncommitted on top"
    );
    assert_eq!(read(src_sub.join("extra.txt")), "uncommitted on top\n");
    assert_eq!(fx.git(&src_sub, &["status", "--porcelain"]), "");
    let (code, again) = promote(&fx, &["-s", "s", "--mode", "branch"]);
    assert_eq!(
        (code, again["outcome"].as_str()),
        (0, Some("idempotent")),
        "{again}"
    );
}

/// A nested repository that is not a submodule, present at the same path in the source (a
/// clone of it in the isolation): its uncommitted work travels as a nested change set and
/// lands in the source's nested repository; the root patch never holds it as a gitlink.
#[test]
fn a_nested_repository_the_source_also_has_travels_as_a_nested_change_set() {
    let fx = Fixture::new();
    let tools = fx.src.join("tools");
    std::fs::create_dir(&tools).unwrap();
    fx.git(&tools, &["init", "-q", "-b", "main"]);
    std::fs::write(tools.join("tool.txt"), "tool\n").unwrap();
    fx.git(&tools, &["add", "-A"]);
    fx.git(&tools, &["commit", "-q", "-m", "tool"]);
    let (code, doc) = fx.json(&["bind", "-s", "s", "--allow-dirty"]);
    assert_eq!(code, 0, "{doc}");
    let iso = fx.isolation("s");
    fx.git(&iso, &["clone", "-q", tools.to_str().unwrap(), "tools"]);
    std::fs::write(iso.join("tools/tool.txt"), "tool, edited\n").unwrap();
    // diff shows it after the root's patch, its paths within the superproject.
    let (code, shown) = fx.json(&["diff", "-s", "s"]);
    assert_eq!(code, 0, "{shown}");
    assert_eq!(
        shown["nested_change_sets"][0]["kind"], "repository",
        "{shown}"
    );
    let patch = fx.cmd().args(["diff", "-s", "s"]).output().unwrap().stdout;
    let patch = String::from_utf8(patch).unwrap();
    assert!(
        patch.contains(
            "# nested repository tools (repository)\ndiff --git a/tools/tool.txt b/tools/tool.txt\n"
        ),
        "{patch}"
    );
    let (code, doc) = promote(&fx, &["-s", "s"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "applied", "{doc}");
    let nested = nested_of(&doc, "tools");
    assert_eq!(nested["kind"], "repository", "{doc}");
    assert_eq!(nested["outcome"], "applied", "{doc}");
    assert_eq!(read(tools.join("tool.txt")), "tool, edited\n");
    assert_eq!(
        nested["digest"], shown["nested_change_sets"][0]["digest"],
        "{shown}"
    );
    // Not folded into the superproject: its index has no entry for it.
    assert_eq!(fx.git(&fx.src, &["ls-files", "--", "tools"]), "");
    let (code, again) = promote(&fx, &["-s", "s"]);
    assert_eq!(
        (code, again["outcome"].as_str()),
        (0, Some("idempotent")),
        "{again}"
    );
}

/// A promote killed after the files were written but before the submodule moved: the next
/// command finishes it from the intent, submodule included (a gitlink's image is its commit),
/// and the change set is then `idempotent`.
#[cfg(feature = "fault-injection")]
#[test]
fn a_crash_before_the_submodule_moved_is_finished_by_the_next_command() {
    let fx = with_submodule("s");
    let bumped = commit_in_isolation_submodule(&fx, "s");
    std::fs::write(fx.isolation("s").join("README.md"), "hello, edited\n").unwrap();
    let out = fx
        .cmd()
        .env("A3S_ISO_TEST_FAULT", "promote-before-direct-writes")
        .args(["--json", "promote", "-s", "s"])
        .output()
        .unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(9),
        "the fault point must kill it"
    );
    assert_eq!(read(fx.src.join("README.md")), "hello, edited\n");
    assert_ne!(fx.git(&sub_in(&fx.src), &["rev-parse", "HEAD"]), bumped);
    let (code, doc) = promote(&fx, &["-s", "s"]);
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("idempotent")),
        "{doc}"
    );
    assert!(
        doc["warnings"].to_string().contains("was completed"),
        "{doc}"
    );
    assert_eq!(fx.git(&sub_in(&fx.src), &["rev-parse", "HEAD"]), bumped);
    assert_eq!(index_gitlink(&fx), bumped);
    assert_eq!(read(sub_in(&fx.src).join("lib.txt")), "library, improved\n");
}

/// Branch mode with a nested change set that meets the user's own edit in the source's
/// submodule: the root commit stays, the outcome is `partial` naming the submodule, and the
/// submodule is as it was; once the edit is gone, a promote again commits the rest.
#[test]
fn branch_mode_keeps_the_root_commits_when_a_nested_one_fails() {
    let fx = with_submodule("s");
    let iso = fx.isolation("s");
    std::fs::write(sub_in(&iso).join("lib.txt"), "library, edited\n").unwrap();
    std::fs::write(iso.join("README.md"), "hello, edited\n").unwrap();
    std::fs::write(sub_in(&fx.src).join("lib.txt"), "the user's own edit\n").unwrap();
    let sub_head = fx.git(&sub_in(&fx.src), &["rev-parse", "HEAD"]);
    let before = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let (code, doc) = promote(&fx, &["-s", "s", "--mode", "branch"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["outcome"], "partial", "{doc}");
    assert_eq!(nested_of(&doc, SUB)["outcome"], "conflict", "{doc}");
    assert_ne!(fx.git(&fx.src, &["rev-parse", "HEAD"]), before);
    assert_eq!(
        fx.git(&fx.src, &["show", "HEAD:README.md"]),
        "hello, edited"
    );
    assert_eq!(fx.git(&sub_in(&fx.src), &["rev-parse", "HEAD"]), sub_head);
    assert_eq!(
        read(sub_in(&fx.src).join("lib.txt")),
        "the user's own edit\n"
    );

    fx.git(&sub_in(&fx.src), &["checkout", "--", "lib.txt"]);
    let (code, again) = promote(&fx, &["-s", "s", "--mode", "branch"]);
    assert_eq!(
        (code, again["outcome"].as_str()),
        (0, Some("applied")),
        "{again}"
    );
    assert_eq!(fx.git(&sub_in(&fx.src), &["rev-parse", "HEAD^"]), sub_head);
    assert_eq!(
        fx.git(&sub_in(&fx.src), &["show", "HEAD:lib.txt"]),
        "library, edited"
    );
}

/// A submodule whose object store names alternates is not read (they would choose where
/// a3s-iso's git reads from): it is reported, and a promote whose root lands is `partial`,
/// never `applied`, since whatever work it holds does not travel.
#[test]
fn an_unreadable_submodule_is_reported_never_silently_dropped() {
    let fx = with_submodule("s");
    let iso = fx.isolation("s");
    let record = fx.src.join(".git/a3s-iso/sessions/s.json");
    let record: Value = serde_json::from_slice(&std::fs::read(record).unwrap()).unwrap();
    let admin = PathBuf::from(record["admin_dir"].as_str().unwrap());
    let info = admin.join("modules").join(SUB).join("objects/info");
    std::fs::create_dir_all(&info).unwrap();
    std::fs::write(info.join("alternates"), "/nonexistent/objects\n").unwrap();
    std::fs::write(sub_in(&iso).join("lib.txt"), "library, edited\n").unwrap();
    std::fs::write(iso.join("README.md"), "hello, edited\n").unwrap();
    let (code, doc) = promote(&fx, &["-s", "s"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["outcome"], "partial", "{doc}");
    let nested = nested_of(&doc, SUB);
    assert_eq!(nested["outcome"], "conflict", "{doc}");
    assert_eq!(nested["reason"], "nested_unavailable", "{doc}");
    assert!(
        nested["detail"].as_str().unwrap().contains("alternates"),
        "{doc}"
    );
    assert_eq!(read(fx.src.join("README.md")), "hello, edited\n");
    assert_eq!(read(sub_in(&fx.src).join("lib.txt")), "library\n");
}

/// Promote in steps with a submodule: each step's nested change set is the delta since the
/// last step that landed in that submodule, so a second step of work inside the submodule
/// lands on top of the first (and a third promote with nothing new is idempotent).
#[test]
fn a_submodule_is_promoted_in_steps() {
    let fx = with_submodule("st");
    let iso = fx.isolation("st");
    std::fs::write(sub_in(&iso).join("lib.txt"), "library, step 1\n").unwrap();
    let (code, doc) = promote(&fx, &["-s", "st"]);
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("applied")),
        "{doc}"
    );
    assert_eq!(read(sub_in(&fx.src).join("lib.txt")), "library, step 1\n");

    std::fs::write(sub_in(&iso).join("lib.txt"), "library, step 2\n").unwrap();
    std::fs::write(sub_in(&iso).join("new.txt"), "new in step 2\n").unwrap();
    std::fs::write(iso.join("README.md"), "hello, step 2\n").unwrap();
    let (code, doc) = promote(&fx, &["-s", "st"]);
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("applied")),
        "{doc}"
    );
    assert_eq!(nested_of(&doc, SUB)["outcome"], "applied", "{doc}");
    assert_eq!(read(sub_in(&fx.src).join("lib.txt")), "library, step 2\n");
    assert_eq!(read(sub_in(&fx.src).join("new.txt")), "new in step 2\n");
    assert_eq!(read(fx.src.join("README.md")), "hello, step 2\n");

    let (code, doc) = promote(&fx, &["-s", "st"]);
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("idempotent")),
        "{doc}"
    );
    assert_eq!(read(sub_in(&fx.src).join("lib.txt")), "library, step 2\n");
}

/// `diff` shows a submodule's change set as a promote now would land it: the delta since the
/// last step that landed in the submodule (nothing once that step is the latest work), the
/// whole of it with `--cumulative`; and it reads only, as for the root.
#[test]
fn diff_shows_the_nested_step_a_promote_would_land() {
    let fx = with_submodule("ds");
    let iso = fx.isolation("ds");
    std::fs::write(sub_in(&iso).join("lib.txt"), "library, step 1\n").unwrap();
    let (code, first) = fx.json(&["diff", "-s", "ds"]);
    assert_eq!(code, 0, "{first}");
    let (code, doc) = promote(&fx, &["-s", "ds"]);
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("applied")),
        "{doc}"
    );
    assert_eq!(
        nested_of(&doc, SUB)["digest"],
        first["nested_change_sets"][0]["digest"],
        "{doc}"
    );

    // Nothing new since the step: no nested change set, and nothing to show at all.
    let (code, none) = fx.json(&["diff", "-s", "ds"]);
    assert_eq!(code, 0, "{none}");
    assert_eq!(none["nested_change_sets"], serde_json::json!([]), "{none}");
    let out = fx.cmd().args(["diff", "-s", "ds"]).output().unwrap();
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("no changes"));

    std::fs::write(sub_in(&iso).join("lib.txt"), "library, step 2\n").unwrap();
    let since = fx.cmd().args(["diff", "-s", "ds"]).output().unwrap().stdout;
    let since = String::from_utf8(since).unwrap();
    let lib = format!("a/{SUB}/lib.txt");
    assert!(since.contains(&format!("--- {lib}\n")), "{since}");
    assert!(
        since.contains("-library, step 1\n+library, step 2\n"),
        "{since}"
    );
    let whole = fx
        .cmd()
        .args(["diff", "-s", "ds", "--cumulative"])
        .output()
        .unwrap();
    let whole = String::from_utf8(whole.stdout).unwrap();
    assert!(whole.contains("-library\n+library, step 2\n"), "{whole}");

    let before = crate::fixture::listing(&fx.src.join(".git/a3s-iso"));
    let (code, second) = fx.json(&["diff", "-s", "ds"]);
    assert_eq!(code, 0, "{second}");
    assert_eq!(
        crate::fixture::listing(&fx.src.join(".git/a3s-iso")),
        before
    );
    let (code, doc) = promote(&fx, &["-s", "ds"]);
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("applied")),
        "{doc}"
    );
    assert_eq!(
        nested_of(&doc, SUB)["digest"],
        second["nested_change_sets"][0]["digest"],
        "{doc}"
    );
    assert_eq!(read(sub_in(&fx.src).join("lib.txt")), "library, step 2\n");
}

/// `.gitmodules` values git refuses to read (`update = !command`, a word for a boolean, an
/// unknown recursion mode, a line that is no config at all), with URLs and names that would
/// run commands or climb out if anything acted on them. Every command in it touches `marker`.
fn hostile_gitmodules(marker: &Path) -> String {
    let m = marker.display();
    format!(
        "[submodule \"x\"]\n\tpath = sub\n\turl = ext::sh -c touch% {m}\n\tupdate = !touch {m}\n\
         \tshallow = maybe\n\tfetchRecurseSubmodules = sometimes\n\tignore = bogus\n\
         [submodule \"../../escape\"]\n\tpath = .git/hooks\n\turl = --upload-pack=touch {m}\n\
         \tupdate = !touch {m}\n[broken\n"
    )
}

/// Capture, diff and promote of `id`, whose isolation holds the hostile `.gitmodules` beside a
/// gitlink `sub`: each succeeds and runs nothing; the source ends with the session's
/// `.gitmodules` and `README.md`, byte for byte.
fn capture_diff_and_promote_ignore_gitmodules(fx: &Fixture, id: &str, marker: &Path) {
    let gitmodules = hostile_gitmodules(marker);
    let (code, doc) = fx.json(&["capture", "-s", id, "-o", "../cs.json"]);
    assert_eq!(code, 0, "{doc}");
    assert!(!marker.exists(), "capture ran a command of .gitmodules");
    let out = fx.cmd().args(["diff", "-s", id]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("+\tupdate = !touch"), "{stdout}");
    assert!(stdout.contains("+more"), "{stdout}");
    assert!(!marker.exists(), "diff ran a command of .gitmodules");
    let (code, doc) = promote(fx, &["-s", id]);
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("applied")),
        "{doc}"
    );
    assert!(!marker.exists(), "promote ran a command of .gitmodules");
    assert_eq!(
        std::fs::read_to_string(fx.src.join(".gitmodules")).unwrap(),
        gitmodules
    );
    assert_eq!(
        std::fs::read_to_string(fx.src.join("README.md")).unwrap(),
        "hello\nmore\n"
    );
    assert!(!fx.src.join("sub").exists());
}

/// A session's commit (made in its isolation, as an agent run without the sandbox would)
/// holds a `.gitmodules` git refuses to read, and a gitlink: its work still captures, shows
/// and lands.
#[test]
fn hostile_gitmodules_in_a_sessions_commit_never_stick_its_work() {
    let fx = Fixture::new();
    fx.bind("gm");
    let iso = fx.isolation("gm");
    let marker = fx.root.join("gitmodules-ran");
    std::fs::write(iso.join(".gitmodules"), hostile_gitmodules(&marker)).unwrap();
    std::fs::write(iso.join("README.md"), "hello\nmore\n").unwrap();
    let sub = iso.join("sub");
    std::fs::create_dir(&sub).unwrap();
    fx.git(&sub, &["init", "-q", "-b", "main"]);
    std::fs::write(sub.join("f"), "f\n").unwrap();
    fx.git(&sub, &["add", "f"]);
    fx.git(&sub, &["commit", "-q", "-m", "sub"]);
    fx.git(&iso, &["-c", "advice.addEmbeddedRepo=false", "add", "-A"]);
    fx.git(&iso, &["commit", "-q", "-m", "hostile .gitmodules"]);
    capture_diff_and_promote_ignore_gitmodules(&fx, "gm", &marker);
}

/// The same from a sandboxed run: it commits the gitlink (a hostile `.gitmodules` in a commit
/// is refused with the run's objects, as a push would be), then writes the hostile
/// `.gitmodules` beside it.
#[test]
fn hostile_gitmodules_written_in_a_run_never_stick_its_work() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("gr");
    let iso = fx.isolation("gr");
    let marker = fx.root.join("gitmodules-ran");
    std::fs::write(fx.root.join("gitmodules"), hostile_gitmodules(&marker)).unwrap();
    let script = "echo more >> README.md && \
                  git init -q -b main sub && echo f > sub/f && git -C sub add f && \
                  git -C sub -c user.name=a -c user.email=a@b commit -q -m sub && \
                  git -c advice.addEmbeddedRepo=false add README.md sub && \
                  git -c user.name=a -c user.email=a@b commit -q -m gitlink && \
                  cp \"$1\" .gitmodules";
    let gitmodules = fx.root.join("gitmodules");
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "gr",
        "--allow-read",
        gitmodules.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        script,
        "sh",
        gitmodules.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{doc}");
    assert!(
        !marker.exists(),
        "the run's snapshot ran a command of .gitmodules"
    );
    assert_eq!(
        fx.git(&iso, &["ls-files", "-s", "--", "sub"])
            .split(' ')
            .next(),
        Some("160000")
    );
    capture_diff_and_promote_ignore_gitmodules(&fx, "gr", &marker);
}

/// A sandboxed run that commits a `.gitmodules` naming a command to update with (which git
/// never runs from `.gitmodules`, and a3s-iso never updates submodules) completes: its commit
/// joins the repository, and capture, diff and promote (patch and branch) run nothing of it.
#[test]
fn a_gitmodules_update_command_committed_in_a_run_never_sticks_its_work() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("gu");
    let marker = fx.root.join("update-ran");
    let gitmodules = format!(
        "[submodule \"x\"]\n\tpath = x\n\turl = https://example.com/x\n\tupdate = !touch {}\n",
        marker.display()
    );
    std::fs::write(fx.root.join("gitmodules"), &gitmodules).unwrap();
    let script = "cp \"$1\" .gitmodules && git add .gitmodules && \
                  git -c user.name=a -c user.email=a@b commit -q -m 'update command'";
    let source = fx.root.join("gitmodules");
    let source = source.to_str().unwrap();
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "gu",
        "--allow-read",
        source,
        "--",
        "sh",
        "-c",
        script,
        "sh",
        source,
    ]);
    assert_eq!(
        (code, doc["state"].as_str()),
        (0, Some("completed")),
        "{doc}"
    );
    let iso = fx.isolation("gu");
    assert_eq!(
        fx.git(&iso, &["log", "-1", "--format=%s"]),
        "update command"
    );
    let (code, doc) = fx.json(&["diff", "-s", "gu"]);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = fx.json(&["promote", "-s", "gu", "--mode", "branch"]);
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("applied")),
        "{doc}"
    );
    assert_eq!(
        fx.git(&fx.src, &["log", "-1", "--format=%s"]),
        "update command"
    );
    assert_eq!(
        std::fs::read_to_string(fx.src.join(".gitmodules")).unwrap(),
        gitmodules
    );
    fx.git(&fx.src, &["status", "--porcelain"]);
    assert!(!marker.exists(), "a command of .gitmodules ran");
}
