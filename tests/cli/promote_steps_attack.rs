//! Adversarial checks of promote in steps and submodules in steps: each test names the
//! promise it tries to break and checks bytes on disk afterwards.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::fixture::{Fixture, content_listing, differences, isolate, outcome, source_state};
use crate::fixture::{SUB, with_submodule};
use crate::promote_crash::{Rng, kill_after};
use crate::promote_nested::read;

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
    let rounds: usize = crate::fixture::repetitions("A3S_ISO_CRASH_ITERATIONS", 20);
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
