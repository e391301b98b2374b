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
