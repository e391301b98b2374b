//! Concurrent binds of distinct ids, while discards recycle trees into the pool and a sweep
//! loop runs: every bind succeeds with a healthy isolation, and nothing is left in flight.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::Value;

use crate::fixture::{Fixture, state_dir};
use crate::sweep_races::entries;

fn race_rounds() -> usize {
    crate::fixture::repetitions("A3S_ISO_RACE_ROUNDS", 2)
}

/// Rounds of 20 concurrent binds of distinct ids (the first ones warm, from a pool of 4), while
/// the previous round's sessions are discarded (their trees recycled into the pool) and a
/// `sweep --grace 0s` loop runs: every bind succeeds, every isolation is healthy (clean, at
/// the source's HEAD), and nothing is left in flight. `A3S_ISO_RACE_ROUNDS` sets the rounds.
/// One round: `ids` bound at once while `previous` are discarded and a sweep runs in a loop;
/// each bind's id, exit code and document.
fn bind_all_while_discarding_and_sweeping(
    fx: &Fixture,
    stop: &AtomicBool,
    (round, ids, previous): (usize, &[String], &[String]),
) -> Vec<(String, i32, Value)> {
    std::thread::scope(|scope| {
        let sweeper = scope.spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                let _ = fx.json(&["sweep", "--grace", "0s"]);
            }
        });
        let discards: Vec<_> = previous
            .iter()
            .map(|id| scope.spawn(move || fx.json(&["discard", "-s", id])))
            .collect();
        let binds: Vec<_> = ids
            .iter()
            .map(|id| {
                scope.spawn(move || {
                    let (code, doc) = fx.json(&["bind", "-s", id]);
                    (id.clone(), code, doc)
                })
            })
            .collect();
        let results = binds.into_iter().map(|b| b.join().unwrap()).collect();
        for discard in discards {
            let (code, doc) = discard.join().unwrap();
            assert_eq!(code, 0, "round {round}: discard: {doc}");
        }
        stop.store(true, Ordering::SeqCst);
        sweeper.join().unwrap();
        stop.store(false, Ordering::SeqCst);
        results
    })
}

/// After round `round`: no claim or debris left, and every id bound is a registered worktree.
fn nothing_left_but_the_sessions(fx: &Fixture, round: usize, ids: &[String]) {
    let claims = entries(&state_dir(fx).join("claims"));
    assert!(claims.is_empty(), "round {round}: claims left: {claims:?}");
    let debris: Vec<String> = entries(&fx.root.join("work"))
        .into_iter()
        .filter(|name| name.contains(".creating-") || name.contains("a3s-reclaimed"))
        .collect();
    assert!(debris.is_empty(), "round {round}: debris: {debris:?}");
    let worktrees = fx.git(&fx.src, &["worktree", "list", "--porcelain"]);
    for id in ids {
        assert!(
            worktrees.contains(&format!("a3s-isolate-{id}\n")),
            "{id}: {worktrees}"
        );
    }
}

#[test]
fn concurrent_binds_of_distinct_ids_all_succeed_with_healthy_isolations() {
    const BINDS: usize = 20;
    let fx = Fixture::new();
    for i in 0..200 {
        fx.write(&format!("d{}/f{i}.txt", i % 10), &format!("file {i}\n"));
    }
    let head = fx.commit_all("files");
    let (code, doc) = fx.json(&["pool", "--size", "4"]);
    assert_eq!(code, 0, "{doc}");
    let stop = AtomicBool::new(false);
    let (fx, stop) = (&fx, &stop);
    let mut previous: Vec<String> = Vec::new();
    let (mut failures, mut warm) = (Vec::new(), 0);
    for round in 0..race_rounds() {
        let ids: Vec<String> = (0..BINDS).map(|n| format!("r{round}-s{n}")).collect();
        let results = bind_all_while_discarding_and_sweeping(fx, stop, (round, &ids, &previous));
        for (id, code, doc) in &results {
            if *code != 0 {
                failures.push(format!("round {round} {id}: {doc}"));
                continue;
            }
            warm += usize::from(doc["warm"] == true);
            let iso = PathBuf::from(doc["worktree"].as_str().unwrap());
            assert_eq!(
                fx.git(&iso, &["status", "--porcelain"]),
                "",
                "{id}: not clean"
            );
            assert_eq!(
                fx.git(&iso, &["rev-parse", "HEAD"]),
                head,
                "{id}: not at HEAD"
            );
        }
        assert!(failures.is_empty(), "binds failed: {failures:#?}");
        nothing_left_but_the_sessions(fx, round, &ids);
        previous = ids;
    }
    eprintln!(
        "{} rounds of {BINDS} concurrent binds: 0 failures, {warm} warm",
        race_rounds()
    );
}
