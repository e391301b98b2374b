//! Sweeps and purges of one session id in several stores (the default store of two
//! repositories, and tenants with their own state dirs): each touches only its own store; and
//! a sweep keeps quiet about another repository's isolation unless asked for all.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::fixture::{Fixture, content_listing, json_of, worktree_of};

/// Every ref of the repository at `dir`, with its target.
fn refs(fx: &Fixture, dir: &Path) -> String {
    fx.git(dir, &["for-each-ref", "--format=%(refname) %(objectname)"])
}

/// An a3s-iso `--json` command in `dir`, with an optional state dir.
fn json_at(fx: &Fixture, dir: &Path, state: Option<&Path>, args: &[&str]) -> (i32, Value) {
    let mut cmd = fx.cmd_in(dir);
    if let Some(state) = state {
        cmd.arg("--state-dir").arg(state);
    }
    json_of(cmd.arg("--json").args(args).output().unwrap())
}

/// Binds `id` from a shell that exits at once, so its owner is dead when the bind returns.
fn bind_dead_owner(fx: &Fixture, dir: &Path, state: Option<&Path>, id: &str) -> Value {
    let mut args = vec!["--json".to_string()];
    if let Some(state) = state {
        args.extend(["--state-dir".to_string(), state.display().to_string()]);
    }
    args.extend(["bind".into(), "-s".into(), id.into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, doc) = crate::fixture::from_dying_script(fx, dir, &args);
    assert_eq!(code, 0, "{doc}");
    doc
}

/// The content of every isolation in `parent` but `except`, in path order.
fn isolation_trees(parent: &Path, except: Option<&Path>) -> Vec<BTreeMap<String, String>> {
    let mut trees: Vec<(PathBuf, BTreeMap<String, String>)> = std::fs::read_dir(parent)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".a3s-isolate-"))
        .filter(|e| Some(e.path().as_path()) != except)
        .map(|e| (e.path(), content_listing(&e.path())))
        .collect();
    trees.sort();
    trees.into_iter().map(|(_, tree)| tree).collect()
}

/// `sweep --grace 0s` (with and without `--all`) from the default store of each of `dirs`
/// reclaims nothing.
fn default_sweeps_reclaim_nothing(fx: &Fixture, dirs: &[&Path]) {
    for dir in dirs {
        for all in [false, true] {
            let mut args = vec!["sweep", "--grace", "0s"];
            if all {
                args.push("--all");
            }
            let (code, doc) = json_at(fx, dir, None, &args);
            assert_eq!(code, 0, "{doc}");
            assert_eq!(doc["reclaimed"], serde_json::json!([]), "{doc}");
        }
    }
}

/// Two repositories in one directory, each with the default store and a tenant, one session
/// id everywhere. A sweep with a grace of 0 s from every store, with and without `--all`,
/// without the user registry, reclaims only its own dead session; a tenant's
/// `discard --purge` drops only that tenant's refs.
fn second_repo(fx: &Fixture, name: &str) -> PathBuf {
    let dir = fx.root.join("work").join(name);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let format = format!("--object-format={}", crate::fixture::object_format());
    fx.git(&dir, &["init", "-q", "-b", "main", &format]);
    std::fs::write(dir.join("README.md"), "hello\n").unwrap();
    std::fs::write(dir.join("src/lib.txt"), "one\ntwo\n").unwrap();
    fx.git(&dir, &["add", "-A"]);
    fx.git(&dir, &["commit", "-q", "-m", "initial"]);
    dir
}

#[test]
fn tenant_sweeps_and_purges_of_one_id_touch_only_their_own_store() {
    let fx = Fixture::new();
    let other = second_repo(&fx, "other");
    let tenant = fx.root.join("tenant-state");
    let other_tenant = fx.root.join("other-tenant-state");
    let mut owner = Command::new("sleep").arg("600").spawn().unwrap();
    let live = format!("pid:{}", owner.id());
    // Live sessions of `x` in the default stores of both repositories and in the tenant of
    // `other`; a dead one in the tenant of the fixture's source.
    for (dir, state) in [
        (&fx.src, None),
        (&other, None),
        (&other, Some(other_tenant.as_path())),
    ] {
        let (code, doc) = json_at(&fx, dir, state, &["bind", "-s", "x", "--owner", &live]);
        assert_eq!(code, 0, "{doc}");
        std::fs::write(worktree_of(&doc).join("work.txt"), "live work\n").unwrap();
    }
    let dead = bind_dead_owner(&fx, &fx.src, Some(&tenant), "x");
    std::fs::write(worktree_of(&dead).join("work.txt"), "dead work\n").unwrap();
    let parent = fx.root.join("work");
    let trees_before = isolation_trees(&parent, Some(&worktree_of(&dead)));
    assert_eq!(trees_before.len(), 3);
    std::fs::remove_dir_all(fx.home.join(".local/share/a3s-iso/sources")).unwrap();

    // Default stores first, with and without --all: the dead tenant session is another's.
    default_sweeps_reclaim_nothing(&fx, &[&fx.src, &other]);
    assert!(worktree_of(&dead).join("work.txt").exists());
    // The other repository's tenant: the fixture source's tenant session is not its own.
    let (_, doc) = json_at(
        &fx,
        &other,
        Some(&other_tenant),
        &["sweep", "--grace", "0s", "--all"],
    );
    assert_eq!(doc["reclaimed"], serde_json::json!([]), "{doc}");
    let src_refs = refs(&fx, &fx.src);
    let other_refs = refs(&fx, &other);

    // Its own tenant reclaims it, and only it.
    let (_, doc) = json_at(&fx, &fx.src, Some(&tenant), &["sweep", "--grace", "0s"]);
    let reclaimed: Vec<&str> = doc["reclaimed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert_eq!(reclaimed, [worktree_of(&dead).to_str().unwrap()], "{doc}");
    let (code, doc) = json_at(
        &fx,
        &fx.src,
        Some(&tenant),
        &["discard", "-s", "x", "--purge"],
    );
    assert_eq!(code, 0, "{doc}");

    let trees_after = isolation_trees(&parent, None);
    assert_eq!(
        trees_after, trees_before,
        "the live isolations are untouched"
    );
    assert_eq!(refs(&fx, &other), other_refs);
    let kept: Vec<&str> = src_refs
        .lines()
        .filter(|l| !l.starts_with("refs/a3s-iso-tenants/"))
        .collect();
    let now = refs(&fx, &fx.src);
    assert_eq!(
        now.lines().collect::<Vec<_>>(),
        kept,
        "only the tenant's refs went"
    );
    assert!(fx.src.join(".git/a3s-iso/sessions/x.json").exists());
    let _ = owner.kill();
    let _ = owner.wait();
}

#[test]
fn sweep_keeps_quiet_about_another_repositorys_isolation_unless_all() {
    let fx = Fixture::new();
    // Another repository beside this one, with an isolation of its own in the same parent.
    let other = fx.other_repository("other", "o.txt");
    let (code, doc) = fx.json_in(&other, &["bind", "-s", "theirs"]);
    assert_eq!(code, 0, "{doc}");
    let theirs = fx.root.join("work/.other.a3s-isolate-theirs");
    assert!(theirs.is_dir());
    // Named like one of ours, as a tree of theirs could be.
    let planted = fx.isolation("planted");
    fx.git(
        &other,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            planted.to_str().unwrap(),
        ],
    );
    let (code, doc) = fx.json(&["sweep", "--dry-run"]);
    assert_eq!(code, 0, "{doc}");
    assert!(!doc.to_string().contains("other_repository"), "{doc}");
    let out = fx.cmd().args(["sweep", "--dry-run"]).output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        !text.contains("another repository") && !text.contains("other_repository"),
        "{text}"
    );
    let (code, doc) = fx.json(&["sweep", "--dry-run", "--all"]);
    assert_eq!(code, 0, "{doc}");
    assert!(doc.to_string().contains("other_repository"), "{doc}");
    assert!(planted.is_dir() && theirs.is_dir());
}
