//! The pool of warm isolations: a spare taken by `bind`, a tree returned by `discard`, and what
//! the next session finds in it (nothing of the last one's).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::fixture::{Fixture, content_listing, json_of};
use crate::promote_crash::{Rng, kill_after};

/// A source with ignored build outputs (`target/`, `*.log`).
fn source() -> Fixture {
    let fx = Fixture::new();
    fx.write(".gitignore", "target/\n*.log\n");
    fx.write("docs/guide.txt", "guide\n");
    fx.commit_all("ignore build outputs");
    fx
}

fn pool(fx: &Fixture, args: &[&str]) -> Value {
    let mut all = vec!["pool"];
    all.extend_from_slice(args);
    let (code, doc) = fx.json(&all);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["schema"], "a3s-iso.pool.v1");
    doc
}

fn ready(doc: &Value) -> usize {
    doc["spares"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["state"] == "ready")
        .count()
}

fn spare(fx: &Fixture, slot: u32) -> PathBuf {
    fx.root
        .join("work")
        .join(format!(".src.a3s-isolate-.pool-{slot}"))
}

/// The admin dir a tree's `.git` file names.
fn admin_of(tree: &Path) -> PathBuf {
    let text = std::fs::read_to_string(tree.join(".git")).unwrap();
    PathBuf::from(text.trim_end().strip_prefix("gitdir: ").unwrap())
}

fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = content_listing(dir).into_keys().collect();
    names.sort();
    names
}

/// What a session sees of its isolation, without stat data and paths that name the tree.
fn observed(fx: &Fixture, tree: &Path) -> BTreeMap<String, String> {
    let mut seen = BTreeMap::new();
    let git = |args: &[&str]| fx.git(tree, args);
    seen.insert(
        "status".into(),
        git(&["status", "--porcelain", "--ignored"]),
    );
    seen.insert("HEAD".into(), git(&["rev-parse", "HEAD"]));
    seen.insert(
        "symbolic".into(),
        std::fs::read_to_string(admin_of(tree).join("HEAD")).unwrap(),
    );
    seen.insert("ls-files -s".into(), git(&["ls-files", "-s"]));
    seen.insert("ls-files -v".into(), git(&["ls-files", "-v"]));
    seen.insert(
        "ls-files -t".into(),
        git(&[
            "ls-files",
            "-t",
            "--others",
            "--ignored",
            "--exclude-standard",
        ]),
    );
    let flags: Vec<String> = git(&["ls-files", "--debug"])
        .lines()
        .filter(|l| !l.starts_with(' ') || l.trim_start().starts_with("flags"))
        .map(String::from)
        .collect();
    seen.insert("flags".into(), flags.join("\n"));
    seen.insert("admin files".into(), file_names(&admin_of(tree)).join(","));
    let mut tree_files = content_listing(tree);
    tree_files.remove(".git");
    seen.insert("tree".into(), format!("{tree_files:?}"));
    seen
}

/// A session that leaves everything a session can leave behind.
fn mess_up(fx: &Fixture, tree: &Path) {
    let git = |args: &[&str]| fx.git(tree, args);
    std::fs::write(tree.join("untracked.txt"), "untracked\n").unwrap();
    std::fs::create_dir_all(tree.join("target/debug")).unwrap();
    std::fs::write(tree.join("target/debug/out.bin"), "build output\n").unwrap();
    std::fs::write(tree.join("build.log"), "log\n").unwrap();
    std::fs::write(tree.join("README.md"), "modified\n").unwrap();
    git(&["stash", "push", "-q"]);
    std::fs::write(tree.join("src/lib.txt"), "committed by the session\n").unwrap();
    git(&["commit", "-q", "-am", "session commit"]);
    std::fs::write(tree.join("README.md"), "modified again\n").unwrap();
    std::fs::write(tree.join("intent.txt"), "intent\n").unwrap();
    git(&["add", "-N", "intent.txt"]);
    git(&["update-index", "--assume-unchanged", "docs/guide.txt"]);
    git(&["update-index", "--skip-worktree", ".gitignore"]);
    git(&["sparse-checkout", "set", "--no-cone", "/src/"]);
    git(&["config", "--worktree", "session.leftover", "yes"]);
    std::fs::write(admin_of(tree).join("hook-output"), "left by a hook\n").unwrap();
    std::fs::create_dir_all(admin_of(tree).join("refs/bisect")).unwrap();
}

/// Discards session `id` into a pool of one, takes the spare for `next` and binds `cold` with
/// the pool empty: the two trees must look the same in every way a session sees. Returns the
/// recycled tree.
fn recycled_like_a_cold_bind(fx: &Fixture, id: &str) -> PathBuf {
    let (code, doc) = fx.json(&["discard", "-s", id]);
    assert_eq!((code, &doc["recycled"]), (0, &Value::Bool(true)), "{doc}");
    let next = fx.bind("next");
    assert_eq!(next["warm"], true, "{next}");
    let cold = fx.bind("cold");
    assert_eq!(cold["warm"], false, "the pool is empty now: {cold}");
    let (warm_tree, cold_tree) = (fx.isolation("next"), fx.isolation("cold"));
    assert_eq!(observed(fx, &warm_tree), observed(fx, &cold_tree));
    assert_eq!(
        fx.git(&warm_tree, &["status", "--porcelain", "--ignored"]),
        ""
    );
    warm_tree
}

#[test]
fn a_recycled_tree_is_indistinguishable_from_a_cold_bind() {
    let fx = source();
    assert_eq!(ready(&pool(&fx, &["--size", "1"])), 1);
    let used = fx.bind("used");
    assert_eq!(used["warm"], true, "{used}");
    let tree = fx.isolation("used");
    mess_up(&fx, &tree);
    let session_commit = fx.git(&tree, &["rev-parse", "HEAD"]);

    let (code, doc) = fx.json(&["discard", "-s", "used"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["removed"], true);
    assert_eq!(doc["recycled"], true);
    assert!(!tree.exists());
    assert_eq!(
        ready(&pool(&fx, &["--status"])),
        1,
        "the tree went back to the pool"
    );
    assert!(spare(&fx, 1).is_dir());

    let next = fx.bind("next");
    assert_eq!(next["warm"], true, "{next}");
    let cold = fx.bind("cold");
    assert_eq!(cold["warm"], false, "the pool is empty now: {cold}");
    let (warm_tree, cold_tree) = (fx.isolation("next"), fx.isolation("cold"));
    assert_eq!(observed(&fx, &warm_tree), observed(&fx, &cold_tree));
    assert_eq!(
        fx.git(&warm_tree, &["status", "--porcelain", "--ignored"]),
        ""
    );
    assert!(!warm_tree.join("target").exists());
    // Nothing reaches the session's commit any more (HEAD, reflogs, refs of any worktree).
    let reachable = fx.git(&fx.src, &["rev-list", "--all", "--reflog"]);
    assert!(
        !reachable.lines().any(|c| c == session_commit),
        "the session's commit is still reachable"
    );
    assert_eq!(
        file_names(&admin_of(&warm_tree)),
        file_names(&admin_of(&cold_tree))
    );
}

#[test]
fn a_captured_session_is_cleaned_back_to_the_bound_revision() {
    // A capture writes the session's changes into a3s-iso's index of the tree: cleaning must
    // undo those entries too (added, modified, deleted, a directory turned into a file, a
    // name that reads as a pathspec pattern), and what changed after the capture.
    let fx = source();
    assert_eq!(ready(&pool(&fx, &["--size", "1"])), 1);
    let used = fx.bind("captured");
    assert_eq!(used["warm"], true, "{used}");
    let tree = fx.isolation("captured");
    std::fs::write(tree.join("README.md"), "changed and captured\n").unwrap();
    std::fs::write(tree.join("added.txt"), "added and captured\n").unwrap();
    std::fs::write(tree.join("glob[ab]*.txt"), "a pattern of a name\n").unwrap();
    std::fs::remove_dir_all(tree.join("docs")).unwrap();
    std::fs::write(tree.join("docs"), "a file where a directory was\n").unwrap();
    // A tracked directory turned into a link to a directory outside: cleaning must not
    // write through it.
    let outside = fx.root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("lib.txt"), "outside\n").unwrap();
    std::fs::remove_dir_all(tree.join("src")).unwrap();
    std::os::unix::fs::symlink(&outside, tree.join("src")).unwrap();
    let (code, captured) = fx.json(&["capture", "-s", "captured"]);
    assert_eq!(code, 0, "{captured}");
    std::fs::write(tree.join("README.md"), "changed after the capture\n").unwrap();
    std::fs::write(tree.join("late.txt"), "after the capture\n").unwrap();

    let warm_tree = recycled_like_a_cold_bind(&fx, "captured");
    assert_eq!(
        std::fs::read_to_string(warm_tree.join("docs/guide.txt")).unwrap(),
        "guide\n"
    );
    assert_eq!(
        content_listing(&outside).len(),
        1,
        "nothing was written outside"
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("lib.txt")).unwrap(),
        "outside\n"
    );
}

#[test]
fn a_warm_bind_at_a_new_head_lands_there() {
    let fx = source();
    pool(&fx, &["--size", "1"]);
    fx.write("README.md", "moved on\n");
    fx.write("new/added.txt", "added\n");
    std::fs::remove_file(fx.src.join("src/lib.txt")).unwrap();
    let head = fx.commit_all("move on");
    let warm = fx.bind("warm");
    assert_eq!(warm["warm"], true, "{warm}");
    assert_eq!(warm["bound_revision"], head.as_str());
    let cold = fx.bind("cold");
    assert_eq!(cold["warm"], false);
    let (w, c) = (fx.isolation("warm"), fx.isolation("cold"));
    assert_eq!(fx.git(&w, &["rev-parse", "HEAD"]), head);
    assert_eq!(observed(&fx, &w), observed(&fx, &c));
    assert_eq!(
        std::fs::read_to_string(w.join("README.md")).unwrap(),
        "moved on\n"
    );
    assert!(!w.join("src/lib.txt").exists());
    // The session works as any other: a capture sees its change.
    std::fs::write(w.join("work.txt"), "work\n").unwrap();
    let (code, doc) = fx.json(&["capture", "-s", "warm"]);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = fx.json(&["promote", "-s", "warm"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        std::fs::read_to_string(fx.src.join("work.txt")).unwrap(),
        "work\n"
    );
}

#[test]
fn concurrent_binds_never_take_the_same_spare() {
    let fx = source();
    assert_eq!(ready(&pool(&fx, &["--size", "4"])), 4);
    let children: Vec<_> = (0..8)
        .map(|n| {
            fx.cmd()
                .args(["--json", "bind", "--owner", "none", "-s", &format!("c{n}")])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let docs: Vec<Value> = children
        .into_iter()
        .map(|child| {
            let (code, doc) = json_of(child.wait_with_output().unwrap());
            assert_eq!(code, 0, "{doc}");
            doc
        })
        .collect();
    let warm = docs.iter().filter(|d| d["warm"] == true).count();
    assert_eq!(warm, 4, "every spare taken once: {docs:?}");
    let mut paths: Vec<String> = docs.iter().map(|d| d["worktree"].to_string()).collect();
    paths.sort();
    paths.dedup();
    assert_eq!(paths.len(), 8);
    let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    for n in 0..8 {
        let tree = fx.isolation(&format!("c{n}"));
        assert_eq!(fx.git(&tree, &["status", "--porcelain", "--ignored"]), "");
        assert_eq!(fx.git(&tree, &["rev-parse", "HEAD"]), head);
        assert_eq!(
            admin_of(&tree).parent().unwrap(),
            fx.src.join(".git/worktrees")
        );
    }
    assert_eq!(fx.worktrees().len(), 9);
    assert_eq!(ready(&pool(&fx, &["--status"])), 0);
}

#[test]
fn kept_ignored_paths_survive_recycling_and_the_rest_goes() {
    let fx = source();
    pool(&fx, &["--size", "1", "--keep-ignored", "target"]);
    fx.bind("build");
    let tree = fx.isolation("build");
    std::fs::create_dir_all(tree.join("target/debug")).unwrap();
    std::fs::write(tree.join("target/debug/cache"), "warm cache\n").unwrap();
    std::fs::write(tree.join("other.log"), "log\n").unwrap();
    std::fs::create_dir_all(tree.join("target2")).unwrap();
    std::fs::write(tree.join("target2/untracked"), "x\n").unwrap();
    std::fs::write(tree.join("README.md"), "changed\n").unwrap();
    let inode =
        |path: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(path).unwrap());
    let untouched = inode(&tree.join("docs/guide.txt"));
    fx.json(&["discard", "-s", "build"]);
    let next = fx.bind("next");
    assert_eq!(next["warm"], true, "{next}");
    let tree = fx.isolation("next");
    assert_eq!(
        std::fs::read_to_string(tree.join("target/debug/cache")).unwrap(),
        "warm cache\n"
    );
    assert_eq!(
        fx.git(&tree, &["status", "--porcelain", "--ignored"]),
        "!! target/"
    );
    assert_eq!(
        std::fs::read_to_string(tree.join("README.md")).unwrap(),
        "hello\n"
    );
    // Only what differed was written: an untouched file is the same file.
    assert_eq!(inode(&tree.join("docs/guide.txt")), untouched);
}

#[test]
fn copy_ignored_brings_the_sources_build_caches() {
    let fx = source();
    fx.write("target/debug/app", "binary\n");
    fx.write("target/nested/deep.o", "object\n");
    fx.write("loose.log", "not asked for\n");
    let doc = {
        let (code, doc) = fx.json(&["bind", "-s", "cached", "--copy-ignored", "target"]);
        assert_eq!(code, 0, "{doc}");
        doc
    };
    assert_eq!(doc["copied_ignored"]["files"], 2, "{doc}");
    let tree = fx.isolation("cached");
    assert_eq!(
        std::fs::read_to_string(tree.join("target/debug/app")).unwrap(),
        "binary\n"
    );
    assert_eq!(
        std::fs::read_to_string(tree.join("target/nested/deep.o")).unwrap(),
        "object\n"
    );
    assert!(!tree.join("loose.log").exists());
    // A change in the copy does not reach the source.
    std::fs::write(tree.join("target/debug/app"), "rebuilt\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(fx.src.join("target/debug/app")).unwrap(),
        "binary\n"
    );
    let plain = fx.bind("plain");
    assert_eq!(plain["copied_ignored"], Value::Null);
}

#[test]
fn spares_are_no_sessions_and_a_zero_size_drains_the_pool() {
    let fx = source();
    pool(&fx, &["--size", "2"]);
    let (code, list) = fx.json(&["list"]);
    assert_eq!(code, 0, "{list}");
    assert_eq!(list["sessions"].as_array().unwrap().len(), 0, "{list}");
    let (code, sweep) = fx.json(&["sweep", "--grace", "0s", "--include-ownerless"]);
    assert_eq!(code, 0, "{sweep}");
    assert!(!sweep.to_string().contains(".pool-"), "{sweep}");
    assert!(spare(&fx, 1).is_dir() && spare(&fx, 2).is_dir());
    // Another tenant neither sees nor takes them.
    let tenant = fx.root.join("tenant-state");
    let (code, doc) = fx.json(&["--state-dir", tenant.to_str().unwrap(), "bind", "-s", "t"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["warm"], false);
    let doc = pool(&fx, &["--size", "0"]);
    assert_eq!(doc["removed"], 2);
    assert!(!spare(&fx, 1).exists() && !spare(&fx, 2).exists());
    assert_eq!(
        fx.worktrees().len(),
        2,
        "the source and the tenant's session"
    );
    assert!(doc["reflink"].is_boolean(), "{doc}");
}

/// Whether every ready spare is pristine at the head its pool reports.
fn spares_are_pristine(fx: &Fixture) {
    let doc = pool(fx, &["--status"]);
    for spare in doc["spares"].as_array().unwrap() {
        let path = PathBuf::from(spare["path"].as_str().unwrap());
        assert!(path.is_dir(), "{doc}");
        assert_eq!(
            fx.git(&path, &["status", "--porcelain", "--ignored"]),
            "",
            "{doc}"
        );
        assert_eq!(
            fx.git(&path, &["rev-parse", "HEAD"]),
            spare["head"].as_str().unwrap()
        );
    }
}

#[test]
fn a_kill_during_take_or_return_leaves_a_spare_or_nothing() {
    let fx = Fixture::in_memory();
    fx.write(".gitignore", "target/\n");
    fx.commit_many_files();
    pool(&fx, &["--size", "1"]);
    let mut rng = Rng::seeded("pool kills");
    let rounds = crate::fixture::repetitions("A3S_ISO_CRASH_ITERATIONS", 12);
    for round in 0..rounds {
        let id = format!("k{round}");
        let delay = Duration::from_millis(5 + rng.below(250));
        if round % 2 == 0 {
            kill_after(&fx, &["bind", "--owner", "none", "-s", &id], delay);
        } else {
            let (code, doc) = fx.json(&["bind", "--owner", "none", "-s", &id]);
            assert_eq!(code, 0, "{doc}");
            let tree = fx.isolation(&id);
            std::fs::write(tree.join("d1/f1.txt"), "changed\n").unwrap();
            std::fs::create_dir_all(tree.join("target")).unwrap();
            std::fs::write(tree.join("target/out"), "out\n").unwrap();
            std::fs::write(tree.join("stray.txt"), "stray\n").unwrap();
            if round % 4 == 1 {
                // A capture writes the changes into a3s-iso's index of the tree too.
                let (code, doc) = fx.json(&["capture", "-s", &id]);
                assert_eq!(code, 0, "{doc}");
            }
            kill_after(&fx, &["discard", "-s", &id], delay);
        }
        spares_are_pristine(&fx);
        // The next bind works, and its tree is clean whichever way it was made.
        let next = format!("n{round}");
        let (code, doc) = fx.json(&["bind", "--owner", "none", "-s", &next]);
        assert_eq!(code, 0, "round {round}: {doc}");
        let tree = fx.isolation(&next);
        assert_eq!(
            fx.git(&tree, &["status", "--porcelain", "--ignored"]),
            "",
            "round {round}"
        );
        let (code, doc) = fx.json(&["discard", "-s", &next]);
        assert_eq!(code, 0, "{doc}");
        pool(&fx, &[]);
        spares_are_pristine(&fx);
    }
}

#[test]
fn sweep_returns_a_dead_sessions_tree_to_the_pool_after_its_snapshot() {
    let fx = source();
    pool(&fx, &["--size", "1", "--no-fill"]);
    let mut owner = std::process::Command::new("sleep")
        .arg("120")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let (code, doc) = fx.json(&["bind", "-s", "dead", "--owner-pid", &owner.id().to_string()]);
    assert_eq!(code, 0, "{doc}");
    owner.kill().unwrap();
    owner.wait().unwrap();
    let tree = fx.isolation("dead");
    std::fs::write(tree.join("work.txt"), "unsaved work\n").unwrap();
    std::fs::write(tree.join("build.log"), "log\n").unwrap();
    let (code, doc) = fx.json(&["sweep", "--grace", "0s"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["reclaimed"].as_array().unwrap().len(), 1, "{doc}");
    assert!(!tree.exists());
    assert_eq!(ready(&pool(&fx, &["--status"])), 1);
    // The work is in the swept snapshot, not in the spare.
    let (_, list) = fx.json(&["list"]);
    assert_eq!(list["sessions"][0]["state"], "swept", "{list}");
    let saved = fx.git(&fx.src, &["show", "refs/a3s-iso/swept/dead:work.txt"]);
    assert_eq!(saved, "unsaved work");
    assert_eq!(
        fx.git(&spare(&fx, 1), &["status", "--porcelain", "--ignored"]),
        ""
    );
    // Discarding the swept session leaves the spare alone.
    let (code, doc) = fx.json(&["discard", "-s", "dead"]);
    assert_eq!(code, 0, "{doc}");
    let next = fx.bind("next");
    assert_eq!(next["warm"], true, "{next}");
    assert_eq!(
        fx.git(
            &fx.isolation("next"),
            &["status", "--porcelain", "--ignored"]
        ),
        ""
    );
}

#[cfg(feature = "fault-injection")]
#[test]
fn a_crash_at_each_step_of_take_and_return_is_repaired() {
    let points = [
        ("bind", "pool-take-after-index"),
        ("bind", "pool-take-after-move"),
        ("bind", "pool-take-after-checkout"),
        ("discard", "pool-return-after-move"),
        ("discard", "pool-return-after-clean"),
        ("discard", "pool-return-after-record"),
    ];
    for (command, point) in points {
        let fx = source();
        pool(&fx, &["--size", "1"]);
        if command == "discard" {
            fx.bind("victim");
            let tree = fx.isolation("victim");
            std::fs::write(tree.join("README.md"), "changed\n").unwrap();
            std::fs::write(tree.join("stray.txt"), "stray\n").unwrap();
            pool(&fx, &["--size", "0"]);
            pool(&fx, &["--size", "1", "--no-fill"]);
        }
        let args = match command {
            "bind" => vec!["bind", "--owner", "none", "-s", "victim"],
            _ => vec!["discard", "-s", "victim"],
        };
        crate::fixture::killed_at(&fx, point, &args);
        spares_are_pristine(&fx);
        fx.bind("next");
        let tree = fx.isolation("next");
        assert_eq!(
            fx.git(&tree, &["status", "--porcelain", "--ignored"]),
            "",
            "{point}"
        );
        assert!(!tree.join("stray.txt").exists(), "{point}");
        let listed = fx.git(&fx.src, &["worktree", "list", "--porcelain"]);
        assert!(!listed.contains("prunable"), "{point}: {listed}");
        let (code, doc) = fx.json(&["discard", "-s", "next"]);
        assert_eq!(code, 0, "{point}: {doc}");
        spares_are_pristine(&fx);
    }
}

#[test]
fn a_sandboxed_session_cannot_reach_a_spare() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    let fx = source();
    assert_eq!(ready(&pool(&fx, &["--size", "2"])), 2);
    let (code, bound) = fx.json(&["bind", "-s", "agent"]);
    assert_eq!(
        (code, bound["warm"].clone()),
        (0, Value::Bool(true)),
        "{bound}"
    );
    let other = spare(&fx, 2);
    let spare_path = if other.is_dir() { other } else { spare(&fx, 1) };
    let before = content_listing(&spare_path);
    let target = spare_path.join("README.md");
    let script = format!(
        "echo poisoned > '{0}'; echo planted > '{1}/planted.txt'; rm -f '{1}/.gitignore'; true",
        target.display(),
        spare_path.display()
    );
    let (code, run) = fx.json(&["run", "-s", "agent", "--", "sh", "-c", &script]);
    assert_eq!(code, 0, "{run}");
    assert_eq!(content_listing(&spare_path), before, "the spare changed");
    let next = fx.bind("next");
    assert_eq!(next["warm"], true, "{next}");
    assert_eq!(
        fx.git(
            &fx.isolation("next"),
            &["status", "--porcelain", "--ignored"]
        ),
        ""
    );
}

#[test]
fn a_tracked_gitattributes_the_session_rewrote_shapes_nothing_in_the_recycled_tree() {
    let fx = source();
    fx.write(".gitattributes", "*.txt text\n");
    fx.commit_all("attributes");
    assert_eq!(ready(&pool(&fx, &["--size", "1"])), 1);
    let used = fx.bind("used");
    assert_eq!(used["warm"], true, "{used}");
    let tree = fx.isolation("used");
    // Line ends converted for every file, the attributes file itself included.
    std::fs::write(
        tree.join(".gitattributes"),
        "* text eol=crlf\n.gitattributes text eol=crlf\n",
    )
    .unwrap();
    std::fs::write(tree.join("docs/guide.txt"), "changed\n").unwrap();
    std::fs::write(tree.join("README.md"), "changed\n").unwrap();
    let (code, captured) = fx.json(&["capture", "-s", "used"]);
    assert_eq!(code, 0, "{captured}");
    let warm_tree = recycled_like_a_cold_bind(&fx, "used");
    assert_eq!(
        std::fs::read(warm_tree.join(".gitattributes")).unwrap(),
        b"*.txt text\n"
    );
}

/// Every entry of a tree but its `.git`, as the next session finds it: kind, mode (setuid,
/// setgid and sticky bits included), owner and the names of its extended attributes.
fn entries(tree: &Path) -> BTreeMap<String, String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let mut out = BTreeMap::new();
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        let path = tree.join(&rel);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let kind = meta.file_type();
        let kind = if kind.is_dir() {
            "dir"
        } else if kind.is_file() {
            "file"
        } else if kind.is_symlink() {
            "link"
        } else if kind.is_fifo() {
            "fifo"
        } else if kind.is_socket() {
            "socket"
        } else {
            "device"
        };
        let mut buf = vec![0u8; 64 * 1024];
        let len = rustix::fs::llistxattr(&path, &mut buf[..]).unwrap_or(0);
        let mut attrs: Vec<String> = buf[..len]
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty() && !a.starts_with(b"security."))
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        attrs.sort();
        out.insert(
            format!("/{}", rel.display()),
            format!(
                "{kind} {:o} {}:{} [{}]",
                meta.mode() & 0o7777,
                meta.uid(),
                meta.gid(),
                attrs.join(",")
            ),
        );
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap().flatten() {
                let child = rel.join(entry.file_name());
                if child != Path::new(".git") {
                    todo.push(child);
                }
            }
        }
    }
    out
}

/// A POSIX ACL as the kernel keeps it in `system.posix_acl_*`: the owner, one named user (who
/// may do everything), the group, the mask and the others.
const ACL: &str = "struct.pack('<I', 2) + b''.join(struct.pack('<HHI', t, p, i) for t, p, i in \
    [(1, 7, 0xffffffff), (2, 7, os.getuid()), (4, 5, 0xffffffff), (16, 7, 0xffffffff), (32, 5, 0xffffffff)])";

/// What a sandboxed session leaves that git does not see: FIFOs and a bound socket (in
/// tracked, untracked and ignored directories), odd modes on tracked files and directories
/// (setuid and world-writable, 0666 on an executable, 000, sticky, setgid), user extended
/// attributes and ACLs, and untracked and ignored leftovers of every kind.
fn leave_what_git_does_not_see(fx: &Fixture, id: &str) {
    let script = format!(
        r#"set -e
mkdir -p newdir target/debug deep/a/b
mkfifo fifo docs/fifo newdir/fifo target/fifo
echo untracked > newdir/file; echo build > target/debug/out; echo log > build.log
ln -s README.md untracked-link
python3 - <<'PY'
import os, socket, struct
s = socket.socket(socket.AF_UNIX); s.bind('docs/sock')
t = socket.socket(socket.AF_UNIX); t.bind('target/sock')
for path in ['README.md', 'docs', 'src/lib.txt', '.', 'target/debug/out']:
    os.setxattr(path, 'user.x', b'y')
acl = {ACL}
os.setxattr('docs/guide.txt', 'system.posix_acl_access', acl)
os.setxattr('src', 'system.posix_acl_default', acl)
PY
chmod 4777 README.md
chmod 0666 run.sh
chmod 0777 docs/guide.txt docs
chmod 1777 src
chmod 2755 deep
chmod 000 src/lib.txt
touch deep/a/b/new.txt
chmod 000 deep/a
"#
    );
    let (code, doc) = fx.json(&["run", "-s", id, "--", "sh", "-c", &script]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["exit_code"], 0, "{doc}");
}

/// A source with an executable and a deep directory besides the usual files.
fn source_with_modes() -> Fixture {
    let fx = source();
    fx.write("run.sh", "#!/bin/sh\necho run\n");
    std::fs::set_permissions(
        fx.src.join("run.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    fx.write("deep/a/b/c.txt", "deep\n");
    fx.commit_all("modes and depth");
    fx
}

/// The tree a session used goes round the pool, session after session, each leaving what git
/// does not see: every time, the next session's warm tree equals a cold bind's entry by entry
/// (kind, mode, owner, extended attributes), and git sees the same in both.
#[test]
fn a_recycled_spare_is_a_fresh_checkout_entry_by_entry() {
    if !crate::fixture::require_tool("sandbox") || !crate::fixture::require_tool("python3") {
        return;
    }
    let fx = source_with_modes();
    assert_eq!(ready(&pool(&fx, &["--size", "1"])), 1);
    let mut id = "used".to_string();
    assert_eq!(fx.bind(&id)["warm"], true);
    for round in 0..4 {
        leave_what_git_does_not_see(&fx, &id);
        let tree = fx.isolation(&id);
        if crate::fixture::is_root() {
            // Owners only root can give (outside the sandbox, whose user namespace maps one
            // id).
            std::os::unix::fs::lchown(tree.join("docs/guide.txt"), Some(1234), Some(1234)).unwrap();
            std::os::unix::fs::lchown(tree.join("docs"), Some(1234), Some(4321)).unwrap();
            std::os::unix::fs::lchown(tree.join("untracked-link"), Some(1234), None).unwrap();
        }
        let (code, doc) = fx.json(&["discard", "-s", &id]);
        assert_eq!((code, &doc["recycled"]), (0, &Value::Bool(true)), "{doc}");
        let (warm, cold) = (format!("warm{round}"), format!("cold{round}"));
        assert_eq!(fx.bind(&warm)["warm"], true, "round {round}");
        assert_eq!(fx.bind(&cold)["warm"], false, "round {round}");
        let (warm_tree, cold_tree) = (fx.isolation(&warm), fx.isolation(&cold));
        assert_eq!(entries(&warm_tree), entries(&cold_tree), "round {round}");
        assert_eq!(
            observed(&fx, &warm_tree),
            observed(&fx, &cold_tree),
            "round {round}"
        );
        // The cold tree goes for good; the warm one is the next round's.
        pool(&fx, &["--size", "0"]);
        let (code, doc) = fx.json(&["discard", "-s", &cold]);
        assert_eq!(code, 0, "{doc}");
        pool(&fx, &["--size", "1", "--no-fill"]);
        id = warm;
    }
}

/// Kept caches (`--keep-ignored`) keep their content, but no FIFO, socket, setuid, setgid or
/// sticky bit, odd mode or extended attribute: a kept file gets the mode git gives a file
/// (executable when its owner could run it), a kept directory a directory's.
#[test]
fn kept_caches_keep_their_content_but_no_special_file_mode_or_attribute() {
    if !crate::fixture::require_tool("sandbox") || !crate::fixture::require_tool("python3") {
        return;
    }
    let fx = source_with_modes();
    pool(&fx, &["--size", "1", "--keep-ignored", "target"]);
    fx.bind("build");
    let script = r#"set -e
mkdir -p target/debug target/shared
printf 'app\n' > target/debug/app && chmod 4755 target/debug/app
printf 'data\n' > target/data.bin && chmod 000 target/data.bin
printf 'tool\n' > target/tool && chmod 6777 target/tool
chmod 1777 target/shared
chmod 0700 target/debug
mkfifo target/fifo target/debug/fifo
ln -s debug/app target/app-link
python3 -c "
import os, socket
s = socket.socket(socket.AF_UNIX); s.bind('target/debug/sock')
os.setxattr('target/debug/app', 'user.x', b'y')
os.setxattr('target/shared', 'user.x', b'y')
"
"#;
    let (code, doc) = fx.json(&["run", "-s", "build", "--", "sh", "-c", script]);
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    let (code, doc) = fx.json(&["discard", "-s", "build"]);
    assert_eq!((code, &doc["recycled"]), (0, &Value::Bool(true)), "{doc}");
    let next = fx.bind("next");
    assert_eq!(next["warm"], true, "{next}");
    let tree = fx.isolation("next");
    let seen = entries(&tree);
    // What git gives a directory, a file and an executable here (under this umask).
    let like = |path: &str| seen[path].clone();
    let (dir, file, exec, link) = (like("/docs"), like("/README.md"), like("/run.sh"), {
        let owner = like("/README.md").split(' ').nth(2).unwrap().to_string();
        format!("link 777 {owner} []")
    });
    let cache: BTreeMap<&str, String> = seen
        .iter()
        .filter(|(path, _)| path.starts_with("/target"))
        .map(|(path, entry)| (path.as_str(), entry.clone()))
        .collect();
    let expected: BTreeMap<&str, String> = [
        ("/target", &dir),
        ("/target/app-link", &link),
        ("/target/data.bin", &file),
        ("/target/debug", &dir),
        ("/target/debug/app", &exec),
        ("/target/shared", &dir),
        ("/target/tool", &exec),
    ]
    .into_iter()
    .map(|(path, entry)| (path, entry.clone()))
    .collect();
    assert_eq!(cache, expected);
    assert_eq!(
        std::fs::read_to_string(tree.join("target/debug/app")).unwrap(),
        "app\n"
    );
    assert_eq!(
        std::fs::read_to_string(tree.join("target/data.bin")).unwrap(),
        "data\n"
    );
}

// ---------------------------------------------------------------------------------------
// Attacks on the recycled trees
// ---------------------------------------------------------------------------------------

/// The files of a tree (its `.git` link left out), by name and content.
fn tree_files(tree: &Path) -> std::collections::BTreeMap<String, String> {
    let mut files = content_listing(tree);
    files.remove(".git");
    files
}

/// A source with ignored build outputs and a tracked directory.
fn pool_source() -> Fixture {
    let fx = Fixture::new();
    fx.write(".gitignore", "target/\n");
    fx.write("docs/guide.txt", "guide\n");
    fx.commit_all("ignore build outputs");
    fx
}

/// docs/pool.md: a recycled tree is indistinguishable from a cold bind, and "no
/// configuration, hook or filter the session wrote applies". A session that leaves an
/// untracked `.gitattributes` (`* text eol=crlf`) and touches tracked files: the files are
/// written again under the commit's attributes (untracked files go first, and git reads
/// attributes from the commit), so the warm tree's files equal a cold bind's.
#[test]
fn attack_a_sessions_gitattributes_do_not_shape_the_recycled_tree() {
    let fx = pool_source();
    let (code, doc) = fx.json(&["pool", "--size", "1"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(fx.bind("used")["warm"], true);
    let tree = fx.isolation("used");
    std::fs::write(tree.join(".gitattributes"), "* text eol=crlf\n").unwrap();
    std::fs::write(tree.join("README.md"), "changed\n").unwrap();
    std::fs::write(tree.join("docs/guide.txt"), "changed\n").unwrap();
    let (code, doc) = fx.json(&["discard", "-s", "used"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["recycled"], true, "{doc}");
    assert_eq!(fx.bind("next")["warm"], true);
    assert_eq!(fx.bind("cold")["warm"], false);
    let (warm, cold) = (fx.isolation("next"), fx.isolation("cold"));
    assert_eq!(
        std::fs::read(warm.join("README.md")).unwrap(),
        b"hello\n",
        "the recycled tree's README.md was written through the session's .gitattributes"
    );
    assert_eq!(tree_files(&warm), tree_files(&cold));
    assert_eq!(fx.git(&warm, &["status", "--porcelain", "--ignored"]), "");
}

/// docs/pool.md: with `--keep-ignored`, "only the --keep-ignored patterns survive". A
/// session that writes `docs/.gitignore` naming `planted.sh` and `docs/planted.sh` cannot
/// make the file survive: the cleaning reads no `.gitignore` at all (`git clean -x`), only
/// the kept patterns.
#[test]
fn attack_a_session_cannot_plant_a_file_through_the_keep_ignored_cleaning() {
    let fx = pool_source();
    let (code, doc) = fx.json(&["pool", "--size", "1", "--keep-ignored", "target"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(fx.bind("used")["warm"], true);
    let tree = fx.isolation("used");
    std::fs::write(tree.join("docs/.gitignore"), "planted.sh\n").unwrap();
    std::fs::write(tree.join("docs/planted.sh"), "echo planted\n").unwrap();
    let (code, doc) = fx.json(&["discard", "-s", "used"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["recycled"], true, "{doc}");
    assert_eq!(fx.bind("next")["warm"], true);
    let warm = fx.isolation("next");
    assert!(
        !warm.join("docs/planted.sh").exists(),
        "the previous session's docs/planted.sh reached the next session"
    );
    assert_eq!(fx.git(&warm, &["status", "--porcelain", "--ignored"]), "");
}

/// A `pool` killed after checking a spare out, before recording it ready, leaves a spare being
/// built by a dead process. Within the grace (a git it started may still be writing) only the
/// pool's own users repair it; past the grace the next command of any kind (`list` here)
/// removes its tree, admin dir and record before it reads anything.
#[cfg(feature = "fault-injection")]
#[test]
fn a_spare_build_killed_is_removed_by_the_next_command_once_the_grace_is_over() {
    let fx = source();
    fx.bind("other");
    crate::fixture::killed_at(&fx, "pool-fill-after-checkout", &["pool", "--size", "1"]);
    let record_file = crate::fixture::state_dir(&fx).join("pool/spares/1.json");
    let record =
        || -> Value { serde_json::from_slice(&std::fs::read(&record_file).unwrap()).unwrap() };
    assert_eq!(record()["state"], "building");
    let tree = spare(&fx, 1);
    assert!(
        tree.join("docs/guide.txt").is_file(),
        "the spare was checked out"
    );

    let (code, doc) = fx.json(&["list"]);
    assert_eq!(code, 0, "{doc}");
    assert!(tree.is_dir(), "removed within the grace");
    assert!(record_file.is_file());

    let mut aged = record();
    aged["at_ms"] = (crate::fixture::now_ms() - 11 * 60_000).into();
    std::fs::write(&record_file, serde_json::to_vec(&aged).unwrap()).unwrap();
    crate::fixture::list_finishing_one(
        &fx,
        "an interrupted build or cleaning of a pool spare was finished",
    );
    assert!(!tree.exists(), "the half-built spare is gone");
    assert!(!record_file.exists(), "its record is gone");
    let listed = fx.git(&fx.src, &["worktree", "list", "--porcelain"]);
    assert!(!listed.contains("pool-1"), "{listed}");
    assert!(!listed.contains("prunable"), "{listed}");
    // The pool builds it again, whole.
    assert_eq!(ready(&pool(&fx, &["--size", "1"])), 1);
    spares_are_pristine(&fx);
}

/// `pool --status` changes nothing and says nothing was built or removed; `--size` says what
/// it built and removed.
#[test]
fn pool_status_shows_what_is_there_and_size_what_it_did() {
    let fx = Fixture::new();
    let (code, built, _) = crate::fixture::human(&fx, &["pool", "--size", "1"]);
    assert_eq!(code, 0, "{built}");
    assert!(
        built
            .lines()
            .any(|l| l.split_whitespace().eq(["built", "1"])),
        "{built}"
    );
    assert!(!built.lines().any(|l| l.starts_with("removed")), "{built}");
    let (code, status, _) = crate::fixture::human(&fx, &["pool", "--status"]);
    assert_eq!(code, 0, "{status}");
    assert!(
        status.starts_with("pool of ") && status.contains("1 of 1 spare ready"),
        "{status}"
    );
    assert!(
        !status
            .lines()
            .any(|l| l.starts_with("built") || l.starts_with("removed")),
        "{status}"
    );
    let (code, shrunk, _) = crate::fixture::human(&fx, &["pool", "--size", "0"]);
    assert_eq!(code, 0, "{shrunk}");
    assert!(
        shrunk
            .lines()
            .any(|l| l.split_whitespace().eq(["removed", "1"])),
        "{shrunk}"
    );
}
