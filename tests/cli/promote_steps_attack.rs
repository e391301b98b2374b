//! Adversarial checks of isolation names, tenants, promote in steps and submodules in steps:
//! each test names the promise it tries to break and checks bytes on disk afterwards.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fixture::{
    Fixture, content_listing, differences, isolate, json_of, outcome, source_state, worktree_of,
};
use crate::fixture::{SUB, with_submodule};
use crate::promote_crash::{Rng, kill_after};
use crate::promote_nested::read;

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

// ---------------------------------------------------------------------------------------
// Promote in steps, SIGKILLed in the middle of step 2.

fn binary(seed: u32, len: u32) -> Vec<u8> {
    (0..len)
        .map(|i| ((i * 31 + seed * 7) % 256) as u8)
        .collect()
}

/// A source with 240 files, a binary and a script; session `k` bound; step 1 edits 120 files,
/// the binary and the script's mode, renames one file and promotes.
fn stepped_session(mode: &str) -> Fixture {
    let fx = Fixture::in_memory();
    for i in 0..240 {
        fx.write(&format!("d/f{i:03}.txt"), &format!("line {i}\n").repeat(6));
    }
    std::fs::write(fx.src.join("blob.bin"), binary(1, 4000)).unwrap();
    fx.write("run.sh", "#!/bin/sh\necho run\n");
    fx.commit_all("files");
    fx.bind("k");
    let iso = fx.isolation("k");
    for i in 0..120 {
        let path = iso.join(format!("d/f{i:03}.txt"));
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(path, format!("{text}step one {i}\n")).unwrap();
    }
    std::fs::write(iso.join("blob.bin"), binary(2, 4100)).unwrap();
    std::fs::set_permissions(iso.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::rename(iso.join("d/f239.txt"), iso.join("renamed.txt")).unwrap();
    agent_commit_if(&fx, &iso, mode, "step one");
    let first = fx.json(&["promote", "-s", "k", "--mode", mode]);
    assert_eq!(outcome(&first), (0, "applied"), "{}", first.1);
    assert_eq!(first.1["step"], 1);
    fx
}

fn agent_commit_if(fx: &Fixture, iso: &Path, mode: &str, message: &str) {
    if mode != "branch" {
        return;
    }
    for args in [vec!["add", "-A"], vec!["commit", "-q", "-m", message]] {
        let mut cmd = Command::new("git");
        cmd.current_dir(iso).args(&args);
        isolate(&mut cmd, &fx.home);
        assert!(cmd.status().unwrap().success());
    }
}

/// Step 2: undoes 40 of step 1's edits, edits 40 more, deletes 40 untouched files, brings the
/// binary back, drops the script's mode, renames back and adds 80 files.
fn second_step_edits(fx: &Fixture, mode: &str) {
    let iso = fx.isolation("k");
    for i in 0..40 {
        fx_write_in(
            &iso,
            &format!("d/f{i:03}.txt"),
            &format!("line {i}\n").repeat(6),
        );
    }
    for i in 40..80 {
        let path = iso.join(format!("d/f{i:03}.txt"));
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(path, format!("{text}step two {i}\n")).unwrap();
    }
    for i in 150..190 {
        std::fs::remove_file(iso.join(format!("d/f{i:03}.txt"))).unwrap();
    }
    std::fs::write(iso.join("blob.bin"), binary(1, 4000)).unwrap();
    std::fs::set_permissions(iso.join("run.sh"), std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::rename(iso.join("renamed.txt"), iso.join("d/f239.txt")).unwrap();
    for i in 0..80 {
        fx_write_in(&iso, &format!("new/n{i:03}.txt"), &format!("new {i}\n"));
    }
    agent_commit_if(fx, &iso, mode, "step two");
}

fn fx_write_in(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Step 2 of a session is SIGKILLed (the whole process group) at random points: after the
/// next command the checkout holds step 1 or step 2 byte for byte, a rerun lands step 2, and
/// a third promote is `idempotent`.
fn step_two_killed_at_random_points(mode: &str) {
    let promote = ["promote", "-s", "k", "--mode", mode];
    // A reference run: the states after step 1 and after step 2, and how long step 2 takes.
    let reference = stepped_session(mode);
    let step_one = source_state(&reference);
    second_step_edits(&reference, mode);
    let started = Instant::now();
    let second = reference.json(&promote);
    let took = started.elapsed();
    assert_eq!(outcome(&second), (0, "applied"), "{}", second.1);
    assert_eq!(second.1["step"], 2);
    let step_two = source_state(&reference);
    assert_eq!(
        content_listing(&reference.isolation("k"))
            .into_iter()
            .filter(|(k, _)| k != ".git")
            .collect::<BTreeMap<_, _>>(),
        content_listing(&reference.src)
            .into_iter()
            .filter(|(k, _)| k != ".git" && !k.starts_with(".git/"))
            .collect::<BTreeMap<_, _>>(),
        "step 2 brings the checkout to the session's files"
    );
    let span = (took.as_millis() as u64 * 6 / 5).max(20);
    let name = format!("{mode} step-2 crash");
    let mut rng = Rng::seeded(&name);
    let rounds: usize = std::env::var("A3S_ISO_CRASH_ITERATIONS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    for round in 0..rounds {
        let fx = stepped_session(mode);
        assert_eq!(source_state(&fx), step_one, "round {round}: step 1");
        second_step_edits(&fx, mode);
        let delay = rng.below(span);
        let killed = kill_after(&fx, &promote, Duration::from_millis(delay));
        let out = fx.cmd().args(["bind", "-s", "k"]).output().unwrap();
        let warnings = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "round {round}: {warnings}");
        let now = source_state(&fx);
        let phase = if now == step_one {
            "step 1"
        } else if now == step_two {
            "step 2"
        } else {
            panic!(
                "round {round} (kill at {delay} ms): neither step 1 nor step 2: {:?} / {:?}\n{warnings}",
                differences(&now, &step_one),
                differences(&now, &step_two)
            )
        };
        eprintln!("{name} round {round}: kill at {delay} ms (killed {killed}), {phase}");
        let rerun = fx.json(&promote);
        assert!(
            rerun.0 == 0 && ["applied", "idempotent"].contains(&outcome(&rerun).1),
            "round {round}: {}",
            rerun.1
        );
        assert_eq!(rerun.1["step"], 2, "round {round}: {}", rerun.1);
        assert_eq!(
            source_state(&fx),
            step_two,
            "round {round}: after the rerun"
        );
        let third = fx.json(&promote);
        assert_eq!(
            outcome(&third),
            (0, "idempotent"),
            "round {round}: {}",
            third.1
        );
        assert_eq!(
            source_state(&fx),
            step_two,
            "round {round}: after the third promote"
        );
    }
}

#[test]
fn a_patch_step_two_killed_at_random_points_is_step_one_or_step_two() {
    step_two_killed_at_random_points("patch");
}

#[test]
fn a_branch_step_two_killed_at_random_points_is_step_one_or_step_two() {
    step_two_killed_at_random_points("branch");
}

// ---------------------------------------------------------------------------------------
// Submodules promoted in steps (the fixture of `nested`).

/// Edit inside the submodule, promote; edit the same file further, promote again: the second
/// promote lands the latest bytes (`applied`), never a conflict with the first step's own
/// change.
#[test]
fn a_submodule_edited_again_after_a_step_lands_its_latest_bytes() {
    let fx = with_submodule("s");
    let iso_sub = fx.isolation("s").join(SUB);
    std::fs::write(iso_sub.join("lib.txt"), "library, step one\n").unwrap();
    let first = fx.json(&["promote", "-s", "s"]);
    assert_eq!(outcome(&first), (0, "applied"), "{}", first.1);
    assert_eq!(
        read(fx.src.join(SUB).join("lib.txt")),
        "library, step one\n"
    );

    std::fs::write(iso_sub.join("lib.txt"), "library, step two\n").unwrap();
    let second = fx.json(&["promote", "-s", "s"]);
    assert_eq!(outcome(&second), (0, "applied"), "{}", second.1);
    assert_eq!(
        read(fx.src.join(SUB).join("lib.txt")),
        "library, step two\n"
    );
    let third = fx.json(&["promote", "-s", "s"]);
    assert_eq!(outcome(&third), (0, "idempotent"), "{}", third.1);
}

/// Edit inside the submodule, promote; then undo that edit and add a file: the second promote
/// must not say `applied` while the source's submodule still holds the undone edit.
#[test]
fn a_submodule_edit_undone_after_a_step_is_never_dropped_while_applied() {
    let fx = with_submodule("u");
    let iso_sub = fx.isolation("u").join(SUB);
    std::fs::write(iso_sub.join("lib.txt"), "library, step one\n").unwrap();
    let first = fx.json(&["promote", "-s", "u"]);
    assert_eq!(outcome(&first), (0, "applied"), "{}", first.1);

    std::fs::write(iso_sub.join("lib.txt"), "library\n").unwrap();
    std::fs::write(iso_sub.join("new.txt"), "new\n").unwrap();
    let second = fx.json(&["promote", "-s", "u"]);
    if outcome(&second).1 == "applied" {
        assert_eq!(read(fx.src.join(SUB).join("new.txt")), "new\n");
        assert_eq!(
            read(fx.src.join(SUB).join("lib.txt")),
            "library\n",
            "applied, but the undo was dropped: {}",
            second.1
        );
    } else {
        assert_eq!(outcome(&second).0, 3, "{}", second.1);
    }
}

/// Edit inside the submodule and at the root, promote; then undo only the submodule edit:
/// the next promote must not call the session `idempotent` while the source's submodule
/// still holds the undone edit.
#[test]
fn a_submodule_undo_alone_is_never_idempotent() {
    let fx = with_submodule("v");
    let iso = fx.isolation("v");
    std::fs::write(iso.join(SUB).join("lib.txt"), "library, step one\n").unwrap();
    std::fs::write(iso.join("root.txt"), "root\n").unwrap();
    let first = fx.json(&["promote", "-s", "v"]);
    assert_eq!(outcome(&first), (0, "applied"), "{}", first.1);
    assert_eq!(first.1["step"], 1);

    std::fs::write(iso.join(SUB).join("lib.txt"), "library\n").unwrap();
    let second = fx.json(&["promote", "-s", "v"]);
    if second.0 == 0 {
        assert_eq!(
            read(fx.src.join(SUB).join("lib.txt")),
            "library\n",
            "{} while the undo did not land: {}",
            outcome(&second).1,
            second.1
        );
    }
}
