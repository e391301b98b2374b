//! `retain` SIGKILLed at random moments, and crashed at each step of it and of `sweep`: the
//! next command (`list`) finishes or undoes it, after which record, tree, admin dir and refs
//! agree and nothing is pending.

use std::time::Duration;

use crate::fixture::{Fixture, state_dir};
use crate::sweep_races::{
    KillTiming, Rng, assert_consistent, duration_of, kill_group_after, kills_wanted,
    spawn_in_group, with_work,
};
#[cfg(feature = "fault-injection")]
use crate::sweep_races::{dead_owner_session, listed};

#[test]
fn a_retain_killed_at_any_moment_is_finished_or_undone_by_the_next_command() {
    let fx = Fixture::new();
    let mut rng = Rng::seeded(41, "retain kills");
    let mut took = Duration::MAX;
    for i in 0..3 {
        let id = format!("measure{i}");
        fx.bind(&id);
        took = took.min(duration_of(
            &fx,
            &["retain", "-s", &id, "--reason", "measure"],
        ));
        let (code, doc) = fx.json(&["discard", "-s", &id, "--purge"]);
        assert_eq!(code, 0, "{doc}");
    }
    let mut timing = KillTiming::new(took);
    let (mut attempts, mut killed, mut repaired, mut retained, mut bound) = (0, 0, 0, 0, 0);
    let (kills, most_attempts) = kills_wanted();
    while killed < kills && attempts < most_attempts {
        let id = format!("k{attempts}");
        attempts += 1;
        fx.bind(&id);
        with_work(&fx, &id);
        let retain = spawn_in_group(&fx, &["retain", "-s", &id, "--reason", "killed"]);
        let was_running = kill_group_after(retain, timing.delay(&mut rng));
        let intent = state_dir(&fx).join(format!("pending/{id}.json")).exists();
        killed += usize::from(was_running);
        repaired += usize::from(intent);
        let (code, list) = fx.json(&["list", "--all"]);
        assert_eq!(code, 0, "{list}");
        assert_consistent(&fx, &list, &[]);
        let session = &list["sessions"].as_array().unwrap()[0];
        let still_bound = session["state"] == "bound";
        if still_bound {
            assert_eq!(session["worktree"], fx.isolation(&id).to_str().unwrap());
            bound += 1;
        } else {
            retained += 1;
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
        "retain kills: {attempts} attempts (a retain takes {took:?}), {killed} killed while running, {repaired} of them left an intent that the next command repaired; afterwards {retained} retained, {bound} still bound; 0 inconsistent"
    );
    assert!(
        killed >= kills,
        "only {killed} retains were killed while running"
    );
}

#[cfg(feature = "fault-injection")]
#[test]
fn a_crash_at_each_step_of_retain_and_sweep_is_repaired_by_the_next_command() {
    let fx = Fixture::new();
    for (i, fault) in [
        "retain-after-intent",
        "retain-after-move",
        "retain-after-lock",
    ]
    .iter()
    .enumerate()
    {
        let id = format!("r{i}");
        fx.bind(&id);
        with_work(&fx, &id);
        let out = fx
            .cmd()
            .env("A3S_ISO_TEST_FAULT", fault)
            .args(["retain", "-s", &id, "--reason", "crash"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), None, "{fault}: killed");
        let (code, list) = fx.json(&["list", "--all"]);
        assert_eq!(code, 0, "{list}");
        assert_consistent(&fx, &list, &[]);
        let expected = if *fault == "retain-after-intent" {
            "bound"
        } else {
            "retained"
        };
        assert_eq!(list["sessions"][i]["state"], expected, "{fault}: {list}");
    }
    let (code, doc) = fx.json(&["discard", "-s", "r0", "--purge"]);
    assert_eq!(code, 0, "{doc}");
    for (i, fault) in [
        "sweep-after-snapshot",
        "sweep-after-intent",
        "sweep-after-move",
        "sweep-after-admin",
        "sweep-after-records",
    ]
    .iter()
    .enumerate()
    {
        let id = format!("s{i}");
        dead_owner_session(&fx, &id);
        with_work(&fx, &id);
        let out = fx
            .cmd()
            .env("A3S_ISO_TEST_FAULT", fault)
            .args(["sweep", "--grace", "0s"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), None, "{fault}: killed");
        let (code, list) = fx.json(&["list", "--all"]);
        assert_eq!(code, 0, "{list}");
        let gone = !listed(&list).contains(&id);
        let reclaimed = if gone { vec![id.clone()] } else { Vec::new() };
        assert_consistent(&fx, &list, &reclaimed);
        // Before the tree moves the session stands; once it moved, the reclaim is finished.
        let undone = ["sweep-after-snapshot", "sweep-after-intent"].contains(fault);
        assert_eq!(gone, !undone, "{fault}: {list}");
        if gone {
            // Killed after the tree moved: the session is swept, and its work comes back.
            let (code, doc) = fx.json(&["bind", "-s", &id, "--resume"]);
            assert_eq!(code, 0, "{fault}: {doc}");
            assert_eq!(
                std::fs::read_to_string(fx.isolation(&id).join("work.txt")).unwrap(),
                "work of the session\n",
                "{fault}"
            );
            let (code, doc) = fx.json(&["discard", "-s", &id, "--purge"]);
            assert_eq!(code, 0, "{doc}");
        } else {
            let (code, doc) = fx.json(&["discard", "-s", &id, "--purge"]);
            assert_eq!(code, 0, "{doc}");
        }
    }
}
