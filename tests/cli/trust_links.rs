//! Links a session leaves in the places it can write (its admin dir, its submodules' git dirs,
//! the run's quarantine and TMPDIR, the tree a spare is made of) are never followed by what
//! a3s-iso does there afterwards, outside the sandbox, with the user's rights: another
//! repository of the user's, which such a link names, keeps every byte.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::fixture::{Fixture, listing};

/// Another repository of the user's, `work/other`, with two commits (loose objects and a
/// pack), and what its every entry is now (kind, mode, content).
fn other_repository(fx: &Fixture) -> (PathBuf, BTreeMap<String, String>) {
    let other = fx.root.join("work/other");
    std::fs::create_dir_all(&other).unwrap();
    fx.git(&other, &["init", "-q", "-b", "main"]);
    std::fs::write(other.join("secret.txt"), "the other repository\n").unwrap();
    std::fs::write(other.join(".gitattributes"), "* -text\n").unwrap();
    fx.git(&other, &["add", "-A"]);
    fx.git(&other, &["commit", "-q", "-m", "other"]);
    fx.git(&other, &["repack", "-q", "-a", "-d"]);
    std::fs::write(other.join("loose.txt"), "a loose object\n").unwrap();
    fx.git(&other, &["add", "-A"]);
    fx.git(&other, &["commit", "-q", "-m", "loose"]);
    let before = listing(&other);
    (other, before)
}

fn run(fx: &Fixture, id: &str, script: &str) -> Value {
    let (code, doc) = fx.json(&["run", "-s", id, "--", "sh", "-c", script]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["exit_code"], 0, "{doc}");
    doc
}

fn has_object(fx: &Fixture, repo: &Path, id: &str) -> bool {
    let mut cmd = std::process::Command::new("git");
    cmd.current_dir(repo).args(["cat-file", "-e", id]);
    crate::fixture::isolate(&mut cmd, &fx.home);
    cmd.status().unwrap().success()
}

/// A session turns its admin dir's `modules` into a link to another repository; the next
/// run's commit must not land in that repository's object store (which the submodule stores
/// of a run receive its new objects).
#[test]
fn a_modules_link_in_the_admin_dir_takes_no_object_elsewhere() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    let (other, before) = other_repository(&fx);
    fx.bind("s");
    let link = format!(
        "ln -s '{}' \"$(git rev-parse --git-dir)/modules\"",
        other.display()
    );
    // Sandboxed, the link stays in the session's layer over the admin dir: never moved down.
    let doc = run(&fx, "s", &link);
    assert!(
        doc["warnings"].to_string().contains("symbolic link"),
        "the link is named: {doc}"
    );
    let admin = PathBuf::from(fx.git(&fx.isolation("s"), &["rev-parse", "--absolute-git-dir"]));
    assert!(std::fs::symlink_metadata(admin.join("modules")).is_err());
    // Unsandboxed, it reaches the admin dir.
    let (code, doc) = fx.json(&["run", "-s", "s", "--no-sandbox", "--", "sh", "-c", &link]);
    assert_eq!(code, 0, "{doc}");
    let doc = run(
        &fx,
        "s",
        "echo work > work.txt && git add work.txt && git commit -q -m work",
    );
    let commit = fx.git(&fx.isolation("s"), &["rev-parse", "HEAD"]);
    assert!(
        has_object(&fx, &fx.src, &commit),
        "the run's commit is in the source: {doc}"
    );
    assert_eq!(listing(&other), before, "the other repository changed");
    assert!(
        doc["warnings"].to_string().contains("symbolic link"),
        "the link is named: {doc}"
    );
    // Recycled or removed, the admin dir goes without following it either.
    let (code, doc) = fx.json(&["pool", "--size", "1", "--no-fill"]);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = fx.json(&["discard", "-s", "s"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(listing(&other), before, "the other repository changed");
}

/// A session links its submodule store's `pack` directory to another repository's: the
/// run's new objects (which the submodule's store receives too) must not be written there.
#[test]
fn a_link_in_a_submodule_store_is_not_written_through() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    let fx = crate::fixture::with_submodule("s");
    let (other, before) = other_repository(&fx);
    let script = format!(
        "store=\"$(git rev-parse --git-dir)/modules/vendor/lib/objects\"; \
         mv \"$store/pack\" \"$store/pack.moved\" && ln -s '{}/.git/objects/pack' \"$store/pack\" && \
         echo work > work.txt && git add work.txt && git commit -q -m work",
        other.display()
    );
    let doc = run(&fx, "s", &script);
    assert_eq!(
        listing(&other),
        before,
        "the other repository changed: {doc}"
    );
    assert!(
        doc["warnings"].to_string().contains("symbolic link"),
        "the store is left out, and said so: {doc}"
    );
    let commit = fx.git(&fx.isolation("s"), &["rev-parse", "HEAD"]);
    assert!(has_object(&fx, &fx.src, &commit), "{doc}");
}

/// Links the command leaves in the run's quarantine (a `pack` directory or loose object
/// directories naming another repository's) are removed, never followed: the other
/// repository's objects do not join the source's store, and it keeps every byte.
#[test]
fn links_in_the_quarantine_are_removed_never_followed() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    let (other, before) = other_repository(&fx);
    let theirs = fx.git(&other, &["rev-parse", "HEAD"]);
    let first = fx.git(&other, &["rev-parse", "HEAD~1"]);
    fx.bind("s");
    let script = format!(
        "q=\"$GIT_OBJECT_DIRECTORY\"; o='{}/.git/objects'; \
         rmdir \"$q/pack\" && ln -s \"$o/pack\" \"$q/pack\" && \
         for d in \"$o\"/??; do ln -s \"$d\" \"$q/$(basename \"$d\")\"; done; \
         mkfifo \"$q/fifo\"; echo work > work.txt",
        other.display()
    );
    let doc = run(&fx, "s", &script);
    assert_eq!(listing(&other), before, "the other repository changed");
    for id in [&theirs, &first] {
        assert!(
            !has_object(&fx, &fx.src, id),
            "an object of the other repository joined the source's store: {doc}"
        );
    }
    assert!(
        doc["warnings"]
            .to_string()
            .contains("symbolic links or special files"),
        "{doc}"
    );
    // The run's work is captured all the same.
    let (code, doc) = fx.json(&["capture", "-s", "s"]);
    assert_eq!(code, 0, "{doc}");
}

/// Links in the admin dir where git keeps a repository's own directories (`objects`,
/// `worktrees`, `info`, `modules`, `refs`) naming another repository's: runs, captures, a
/// recycling discard and a removing one leave that repository as it was.
#[test]
fn links_in_the_admin_dir_are_removed_as_entries() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    let (other, before) = other_repository(&fx);
    let (code, doc) = fx.json(&["pool", "--size", "1", "--no-fill"]);
    assert_eq!(code, 0, "{doc}");
    for id in ["recycled", "removed"] {
        fx.bind(id);
        let script = format!(
            "a=\"$(git rev-parse --git-dir)\"; o='{}/.git'; \
             for d in objects worktrees info modules hooks; do ln -s \"$o/$d\" \"$a/$d\"; done; \
             mkfifo \"$a/fifo\"; echo work > work.txt",
            other.display()
        );
        run(&fx, id, &script);
        run(&fx, id, "echo more > more.txt");
        let (code, doc) = fx.json(&["capture", "-s", id]);
        assert_eq!(code, 0, "{doc}");
        let (code, doc) = fx.json(&["discard", "-s", id]);
        assert_eq!(code, 0, "{doc}");
        assert_eq!(
            listing(&other),
            before,
            "{id}: the other repository changed"
        );
    }
}

/// The session replaces a tracked directory, which the pool keeps (`--keep-ignored`), by a
/// link to another repository: cleaning the tree removes the link and writes the directory
/// again, and deletes nothing through it (its `.gitattributes`, say).
#[test]
fn a_kept_link_where_a_tracked_directory_was_is_not_followed() {
    let fx = Fixture::new();
    fx.write("build/.gitattributes", "*.bin binary\n");
    fx.write("build/rules.txt", "rules\n");
    fx.commit_all("a tracked build directory");
    let (other, before) = other_repository(&fx);
    let (code, doc) = fx.json(&["pool", "--size", "1", "--keep-ignored", "build"]);
    assert_eq!(code, 0, "{doc}");
    fx.bind("s");
    let tree = fx.isolation("s");
    std::fs::remove_dir_all(tree.join("build")).unwrap();
    std::os::unix::fs::symlink(&other, tree.join("build")).unwrap();
    let (code, doc) = fx.json(&["discard", "-s", "s"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(listing(&other), before, "the other repository changed");
    let next = fx.bind("next");
    assert_eq!(next["warm"], true, "{next}");
    let tree = fx.isolation("next");
    assert_eq!(
        std::fs::read_to_string(tree.join("build/.gitattributes")).unwrap(),
        "*.bin binary\n"
    );
    assert_eq!(fx.git(&tree, &["status", "--porcelain", "--ignored"]), "");
}

/// A link planted where a promote writes its artifacts (`<state>/artifacts/<digest>`)
/// naming another directory: the promote refuses, with the link named, and writes nothing
/// there.
#[test]
fn a_link_where_the_artifacts_go_is_refused() {
    let fx = Fixture::new();
    let (other, before) = other_repository(&fx);
    fx.bind("s");
    std::fs::write(fx.isolation("s").join("work.txt"), "work\n").unwrap();
    let (code, doc) = fx.json(&["capture", "-s", "s"]);
    assert_eq!(code, 0, "{doc}");
    let digest = doc["change_set"]["patch_digest"]
        .as_str()
        .or_else(|| doc["patch_digest"].as_str())
        .unwrap_or_else(|| panic!("{doc}"))
        .trim_start_matches("sha256:")
        .to_string();
    let artifacts = fx.src.join(".git/a3s-iso/artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    std::os::unix::fs::symlink(&other, artifacts.join(&digest)).unwrap();
    let (code, doc) = fx.json(&["promote", "-s", "s"]);
    assert_ne!(code, 0, "{doc}");
    assert!(doc.to_string().contains("symbolic link"), "{doc}");
    assert_eq!(listing(&other), before, "the other directory changed");
    assert!(!fx.src.join("work.txt").exists(), "nothing was applied");
}

/// The command plants the helper's status file in its TMPDIR as a link to a failure report of
/// its own and exits 127: a3s-iso does not read it through the link (the run reports the
/// command's exit, not the planted failure).
#[test]
fn a_planted_status_file_in_the_runs_tmpdir_is_not_followed() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    let planted = fx.root.join("planted.json");
    std::fs::write(
        &planted,
        r#"{"code":"usage","message":"planted by the command","program":"x"}"#,
    )
    .unwrap();
    fx.bind("s");
    let script = format!(
        "ln -s '{}' \"$TMPDIR/.a3s-iso-helper-status\"; exit 127",
        planted.display()
    );
    let (code, doc) = fx.json(&["run", "-s", "s", "--", "sh", "-c", &script]);
    assert!(!doc.to_string().contains("planted by the command"), "{doc}");
    assert_eq!((code, &doc["exit_code"]), (127, &Value::from(127)), "{doc}");
}

/// A nested repository whose object directory holds a link (its `pack` naming another
/// repository's) is not read: it is reported as not captured.
#[test]
fn a_nested_store_holding_a_link_is_not_read() {
    let fx = Fixture::new();
    let (other, before) = other_repository(&fx);
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
    let pack = iso.join("tools/.git/objects/pack");
    std::fs::rename(&pack, iso.join("tools/.git/objects/pack.moved")).unwrap();
    std::os::unix::fs::symlink(other.join(".git/objects/pack"), &pack).unwrap();
    std::fs::write(iso.join("README.md"), "hello, edited\n").unwrap();
    let (code, doc) = fx.json(&["promote", "-s", "s"]);
    assert_eq!(
        (code, &doc["outcome"]),
        (3, &Value::from("partial")),
        "{doc}"
    );
    let nested = doc["nested"]
        .as_array()
        .and_then(|n| n.iter().find(|n| n["path"] == "tools"))
        .unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(nested["reason"], "nested_unavailable", "{doc}");
    assert!(
        nested["detail"].as_str().unwrap().contains("symbolic link"),
        "{doc}"
    );
    assert_eq!(
        std::fs::read_to_string(tools.join("tool.txt")).unwrap(),
        "tool\n"
    );
    assert_eq!(listing(&other), before);
}
