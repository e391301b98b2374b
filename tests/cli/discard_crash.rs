//! `discard` SIGKILLed at random moments: after the next command (`list`) the session is
//! either bound and whole or discarded completely, and nothing is pending.

use std::time::Duration;

use serde_json::Value;

use crate::fixture::{Fixture, state_dir};
use crate::sweep_races::{
    KillTiming, Rng, duration_of, entries, kill_group_after, kills_wanted, spawn_in_group,
    with_work,
};

/// After the next command, a discard killed at any moment either never happened (the session
/// is bound, its tree registered and holding its work) or is complete (discarded: no tree, no
/// registration, no renamed leftovers, the evidence kept), and nothing is pending.
fn assert_discard_consistent(fx: &Fixture, id: &str, list: &Value) {
    let state = state_dir(fx);
    assert!(entries(&state.join("pending")).is_empty(), "pending left");
    let session = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == id)
        .unwrap_or_else(|| panic!("{id} not listed: {list}"));
    let tree = fx.isolation(id);
    let porcelain = fx.git(&fx.src, &["worktree", "list", "--porcelain"]);
    let registered = porcelain.contains(&format!("worktree {}", tree.display()));
    match session["state"].as_str().unwrap() {
        "bound" => {
            assert!(registered, "{porcelain}");
            assert_eq!(
                std::fs::read_to_string(tree.join("work.txt")).unwrap(),
                "work of the session\n"
            );
        }
        "discarded" => {
            assert!(!tree.exists(), "{} is still there", tree.display());
            assert!(!registered, "{porcelain}");
            let base = fx.git(
                &fx.src,
                &["for-each-ref", &format!("refs/a3s-iso/sessions/{id}/")],
            );
            assert_ne!(base, "", "the evidence of {id} went with its tree");
        }
        other => panic!("{id} is {other}: {list}"),
    }
    let parent = fx.src.parent().unwrap();
    let leftovers: Vec<String> = entries(parent)
        .into_iter()
        .filter(|n| n.starts_with(".a3s-reclaimed-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_discard_killed_at_any_moment_is_finished_or_undone_by_the_next_command() {
    let fx = Fixture::new();
    let mut rng = Rng::seeded(43, "discard kills");
    let mut took = Duration::MAX;
    for i in 0..3 {
        let id = format!("measure{i}");
        fx.bind(&id);
        took = took.min(duration_of(&fx, &["discard", "-s", &id]));
    }
    let mut timing = KillTiming::new(took);
    let (mut attempts, mut killed, mut repaired, mut discarded, mut bound) = (0, 0, 0, 0, 0);
    let (kills, most_attempts) = kills_wanted();
    while killed < kills && attempts < most_attempts {
        let id = format!("d{attempts}");
        attempts += 1;
        fx.bind(&id);
        with_work(&fx, &id);
        let discard = spawn_in_group(&fx, &["discard", "-s", &id]);
        let was_running = kill_group_after(discard, timing.delay(&mut rng));
        let intent = state_dir(&fx).join(format!("pending/{id}.json")).exists();
        killed += usize::from(was_running);
        repaired += usize::from(intent);
        let (code, list) = fx.json(&["list", "--all"]);
        assert_eq!(code, 0, "{list}");
        assert_discard_consistent(&fx, &id, &list);
        let still_bound = fx.isolation(&id).exists();
        if still_bound {
            bound += 1;
        } else {
            discarded += 1;
        }
        timing.adjust(match (was_running, intent, still_bound) {
            (false, ..) => Some(false),
            (true, false, true) => Some(true),
            _ => None,
        });
        let (code, doc) = fx.json(&["discard", "-s", &id, "--purge"]);
        assert_eq!(code, 0, "{doc}");
    }
    eprintln!(
        "discard kills: {attempts} attempts (a discard takes {took:?}), {killed} killed while running, {repaired} of them left an intent that the next command repaired; afterwards {discarded} discarded, {bound} still bound; 0 inconsistent"
    );
    assert!(
        killed >= kills,
        "only {killed} discards were killed while running"
    );
}

/// What is left of a session in the store and the repository: its record, lease, run
/// documents, refs and isolation.
fn remains_of(fx: &Fixture, id: &str) -> Vec<String> {
    let state = state_dir(fx);
    let mut left: Vec<String> = [
        format!("sessions/{id}.json"),
        format!("leases/{id}.lock"),
        format!("runs/{id}"),
        format!("pending/{id}.json"),
    ]
    .into_iter()
    .filter(|rel| state.join(rel).exists())
    .collect();
    let refs = fx.git(&fx.src, &["for-each-ref", "--format=%(refname)", "refs/"]);
    left.extend(refs.lines().filter(|r| r.contains(id)).map(str::to_string));
    if fx.isolation(id).exists() {
        left.push("isolation".into());
    }
    left
}

/// A `discard --purge` killed once its records were gone (and the next command run) is done
/// as far as the user can tell: running it again succeeds, says the session is already
/// purged, and finishes what the kill left (its lease); likewise once a purge completed.
#[cfg(feature = "fault-injection")]
#[test]
fn a_purge_killed_after_its_records_went_is_already_purged_when_retried() {
    let fx = Fixture::new();
    for (id, fault) in [("p1", "purge-after-records"), ("p2", "gc-after-refs")] {
        fx.bind(id);
        with_work(&fx, id);
        let (code, doc) = fx.json(&["capture", "-s", id]);
        assert_eq!(code, 0, "{doc}");
        crate::fixture::killed_at(&fx, fault, &["discard", "--purge", "-s", id]);
        let (code, list) = fx.json(&["list", "--all"]);
        assert_eq!(code, 0, "{list}");
        let (code, doc) = fx.json(&["discard", "--purge", "-s", id]);
        assert_eq!(code, 0, "{fault}: {doc}");
        assert_eq!(doc["session_id"], id, "{doc}");
        assert_eq!(doc["purged"], true, "{doc}");
        assert_eq!(doc["removed"], false, "{doc}");
        assert_eq!(
            doc["already_purged"],
            fault == "purge-after-records",
            "{doc}"
        );
        assert_eq!(remains_of(&fx, id), Vec::<String>::new(), "{fault}");
        // Again, on a session whose purge completed: the same answer, nothing to do.
        let (code, doc) = fx.json(&["discard", "--purge", "-s", id]);
        assert_eq!(code, 0, "{doc}");
        assert_eq!(doc["already_purged"], true, "{doc}");
        assert_eq!(doc["purged_items"], serde_json::json!([]), "{doc}");
        assert_eq!(remains_of(&fx, id), Vec::<String>::new(), "{fault}");
        let out = fx
            .cmd()
            .args(["discard", "--purge", "-s", id])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(&format!("{id}: already purged (nothing of it is left)")),
            "{stdout}"
        );
        assert_eq!(remains_of(&fx, id), Vec::<String>::new(), "{fault}");
    }
    // Bound again, the id is a session like any other: purged as usual, not already.
    fx.bind("p1");
    assert!(!state_dir(&fx).join("purged/p1.json").exists());
    let (code, doc) = fx.json(&["discard", "--purge", "-s", "p1"]);
    assert_eq!(
        (code, &doc["already_purged"]),
        (0, &serde_json::json!(false)),
        "{doc}"
    );
    assert!(state_dir(&fx).join("purged/p1.json").exists());
    // An id that never was a session is still not found.
    let (code, doc) = fx.json(&["discard", "--purge", "-s", "never-bound"]);
    assert_eq!(
        (code, crate::fixture::error_code(&doc)),
        (1, "session_not_found"),
        "{doc}"
    );
}

/// A `discard --purge` SIGKILLed with its process group at any moment, then the next command,
/// then the purge again: it exits 0 (`already_purged` exactly when the record had gone), and
/// nothing of the session is left, nor anything renamed aside.
#[test]
fn a_purge_killed_at_any_moment_succeeds_when_run_again() {
    let fx = Fixture::new();
    let mut rng = Rng::seeded(47, "purge kills");
    let mut took = Duration::MAX;
    for i in 0..3 {
        let id = format!("measure{i}");
        fx.bind(&id);
        took = took.min(duration_of(&fx, &["discard", "--purge", "-s", &id]));
    }
    let mut timing = KillTiming::new(took);
    let (mut attempts, mut killed, mut already) = (0, 0, 0);
    let (kills, most_attempts) = kills_wanted();
    while killed < kills && attempts < most_attempts {
        let id = format!("p{attempts}");
        attempts += 1;
        fx.bind(&id);
        with_work(&fx, &id);
        let purge = spawn_in_group(&fx, &["discard", "--purge", "-s", &id]);
        let was_running = kill_group_after(purge, timing.delay(&mut rng));
        killed += usize::from(was_running);
        let untouched = fx.isolation(&id).exists();
        let (code, list) = fx.json(&["list", "--all"]);
        assert_eq!(code, 0, "{list}");
        let recorded = state_dir(&fx).join(format!("sessions/{id}.json")).exists();
        let (code, doc) = fx.json(&["discard", "--purge", "-s", &id]);
        assert_eq!(code, 0, "{doc}");
        assert_eq!(doc["already_purged"], !recorded, "{doc}");
        already += usize::from(!recorded);
        assert_eq!(remains_of(&fx, &id), Vec::<String>::new(), "{id}");
        let parent = fx.src.parent().unwrap();
        let leftovers: Vec<String> = entries(parent)
            .into_iter()
            .filter(|n| n.starts_with(".a3s-reclaimed-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        timing.adjust(match (was_running, untouched) {
            (false, _) => Some(false),
            (true, true) => Some(true),
            (true, false) => None,
        });
    }
    eprintln!(
        "purge kills: {attempts} attempts (a purge takes {took:?}), {killed} killed while running, {already} of them already purged when run again; 0 failed"
    );
    assert!(
        killed >= kills,
        "only {killed} purges were killed while running"
    );
}
