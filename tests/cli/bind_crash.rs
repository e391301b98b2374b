//! `bind` killed after it claimed its id and built the tree, before it published the session:
//! the claim is the bind's write-ahead record. While the grace lasts (a git the bind started may
//! still be writing) nothing removes the tree but `sweep --grace` or a bind of the same id; once
//! it is over, the next command of any kind finishes the bind's undoing before it reads
//! anything, and a claim whose bind still runs is never touched, however old.

use serde_json::Value;
use std::path::Path;

use crate::fixture::{Fixture, listing, now_ms, sleeper, state_dir};

pub(crate) fn claim_file(fx: &Fixture, id: &str) -> std::path::PathBuf {
    state_dir(fx).join(format!("claims/{id}.json"))
}

/// Moves a claim's creation `minutes` into the past.
pub(crate) fn age_claim(fx: &Fixture, id: &str, minutes: u64) {
    let path = claim_file(fx, id);
    let mut claim: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    claim["created_at_ms"] = (now_ms() - minutes * 60_000).into();
    std::fs::write(&path, serde_json::to_vec(&claim).unwrap()).unwrap();
}

fn registered(fx: &Fixture, tree: &Path) -> bool {
    let listed = fx.git(&fx.src, &["worktree", "list", "--porcelain"]);
    listed.contains(tree.to_str().unwrap())
}

#[cfg(feature = "fault-injection")]
#[test]
fn a_bind_killed_before_publishing_is_undone_by_the_next_command_once_the_grace_is_over() {
    let fx = Fixture::new();
    fx.bind("other");
    crate::fixture::killed_at(&fx, "bind-before-publish", &["bind", "-s", "lost"]);
    let tree = fx.isolation("lost");
    assert!(tree.join("README.md").is_file(), "the bind built its tree");
    assert!(claim_file(&fx, "lost").is_file());
    assert!(registered(&fx, &tree));

    // Within the grace: a command that is not about binds leaves all of it.
    let (code, doc) = fx.json(&["list"]);
    assert_eq!(code, 0, "{doc}");
    assert!(tree.join("README.md").is_file());
    assert!(claim_file(&fx, "lost").is_file());

    // Past it, a command a run's command started (its PID namespace may hide every process of
    // the host, so none can be told dead) still leaves it.
    age_claim(&fx, "lost", 11);
    let out = fx
        .cmd()
        .args(["list"])
        .env("A3S_ISO_RUN_ID", "r-inside")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(tree.join("README.md").is_file());
    assert!(claim_file(&fx, "lost").is_file());

    // Otherwise the next command (a read-only one) undoes the bind first, and says so.
    let other_before = listing(&fx.isolation("other"));
    crate::fixture::list_finishing_one(&fx, "an interrupted bind of session lost was finished");
    assert!(!tree.exists(), "the dead bind's tree is gone");
    assert!(!claim_file(&fx, "lost").exists(), "its claim is gone");
    assert!(!registered(&fx, &tree), "its registration is gone");
    assert!(
        fx.git(&fx.src, &["for-each-ref", "refs/a3s-iso/sessions/lost"])
            .is_empty(),
        "nothing it pinned is left"
    );
    assert_eq!(listing(&fx.isolation("other")), other_before);
    let (code, doc) = fx.json(&["list"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 1, "{doc}");
    // The id is free again.
    let (code, doc) = fx.json(&["bind", "-s", "lost"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["reused"], false, "{doc}");
}

/// A claim naming a bind that still runs (here: a process that is alive, with its recorded
/// start identity) is in flight, not interrupted: however old, no command touches it.
#[test]
fn a_claim_whose_bind_still_runs_is_never_finished_however_old() {
    let fx = Fixture::new();
    fx.bind("other");
    let mut bind = sleeper();
    let pid = bind.id();
    let tree = fx.isolation("busy");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::write(tree.join("half-written.txt"), "checkout in progress\n").unwrap();
    let claim = serde_json::json!({
        "session_id": "busy",
        "path": tree,
        "bind_process": {
            "pid": pid,
            "start_identity": crate::fixture::start_identity(pid),
            "hostname": a3s_iso::base::owner::hostname(),
        },
        "created_at_ms": now_ms() - 3 * 3_600_000,
    });
    std::fs::create_dir_all(claim_file(&fx, "busy").parent().unwrap()).unwrap();
    std::fs::write(claim_file(&fx, "busy"), claim.to_string()).unwrap();
    let before = listing(&tree);
    for args in [
        &["list"][..],
        &["capture", "-s", "other"],
        &["discard", "-s", "other"],
    ] {
        let (code, doc) = fx.json(args);
        assert_eq!(code, 0, "{args:?}: {doc}");
    }
    bind.kill().unwrap();
    bind.wait().unwrap();
    assert_eq!(listing(&tree), before, "the tree of a running bind changed");
    assert!(claim_file(&fx, "busy").is_file());
}

/// `bind` SIGKILLed with its whole process group at random moments, then left for longer than
/// the grace: after the next command (`list`), each id is either a published session with a
/// healthy isolation or nothing at all (no claim, no tree at its path, no registration), and a
/// bind of it succeeds. `A3S_ISO_KILLS_WANTED` sets the kills landed while a bind ran.
#[test]
fn a_bind_killed_at_random_moments_leaves_a_session_or_nothing_once_the_next_command_ran() {
    use crate::sweep_races::{KillTiming, Rng, duration_of, kill_group_after, spawn_in_group};
    let fx = Fixture::new();
    for i in 0..40 {
        fx.write(&format!("d{}/f{i}.txt", i % 4), &format!("file {i}\n"));
    }
    fx.commit_all("more files");
    let mut rng = Rng::seeded(47, "bind kills");
    let mut took = std::time::Duration::MAX;
    for i in 0..3 {
        took = took.min(duration_of(&fx, &["bind", "-s", &format!("measure{i}")]));
    }
    let mut timing = KillTiming::new(took);
    let wanted = crate::fixture::repetitions("A3S_ISO_KILLS_WANTED", 32) / 2;
    let (mut attempts, mut killed, mut claims_left) = (0, 0, 0);
    while killed < wanted.max(2) && attempts < wanted.max(2) * 4 {
        let id = format!("k{attempts}");
        attempts += 1;
        let bind = spawn_in_group(&fx, &["bind", "-s", &id]);
        let was_running = kill_group_after(bind, timing.delay(&mut rng));
        killed += usize::from(was_running);
        let claimed = claim_file(&fx, &id).is_file();
        claims_left += usize::from(claimed);
        timing.adjust(match (was_running, claimed) {
            (false, _) => Some(false),
            (true, false) => Some(true),
            (true, true) => None,
        });
        if claimed {
            age_claim(&fx, &id, 11);
        }
        let (code, doc) = fx.json(&["list"]);
        assert_eq!(code, 0, "{doc}");
        assert!(
            !claim_file(&fx, &id).exists(),
            "{id}: a claim outlived its dead bind"
        );
        let published = doc["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["session_id"] == id.as_str());
        let tree = fx.isolation(&id);
        if published {
            assert_eq!(fx.git(&tree, &["status", "--porcelain"]), "", "{id}");
        } else {
            assert!(!tree.exists(), "{id}: a tree without a session");
            assert!(
                !registered(&fx, &tree),
                "{id}: a registration without a session"
            );
        }
        let (code, doc) = fx.json(&["bind", "-s", &id]);
        assert_eq!(code, 0, "{id}: {doc}");
        assert_eq!(fx.git(&tree, &["status", "--porcelain"]), "", "{id}");
    }
    eprintln!(
        "bind kills: {attempts} attempts (a bind takes {took:?}), {killed} killed while running, {claims_left} left a claim the next command finished"
    );
    assert!(
        killed >= wanted.max(2),
        "only {killed} binds were killed while running"
    );
}
