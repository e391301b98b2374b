//! A session's life ends: a session whose work is in the source's history is `landed`
//! (computed from the trees, so a session promoted and then committed by hand counts too).
//! `list`, `show` and `overlaps` say so, `land` never rebases or lands it again, and a second
//! `land --all` with nothing to land exits 0 saying so.

use serde_json::Value;

use crate::fixture::{Fixture, ok, subjects_since};
use crate::land_queue::session_adding_its_file;

fn listed_state(fx: &Fixture, id: &str) -> String {
    let list = ok(fx, &["list"]);
    let row = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == id)
        .unwrap_or_else(|| panic!("{id} not listed: {list}"));
    row["state"].as_str().unwrap().to_string()
}

fn ids_in(doc: &Value, key: &str) -> Vec<String> {
    doc[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap().to_string())
        .collect()
}

/// `hand` promoted into the checkout and committed there by the user, then HEAD moved on with
/// a commit of the user's: `hand` is `landed`, and `other` is not.
fn promoted_by_hand_then_head_moved() -> Fixture {
    let fx = Fixture::new();
    session_adding_its_file(&fx, "hand");
    session_adding_its_file(&fx, "other");
    ok(&fx, &["promote", "-s", "hand"]);
    fx.commit_all("the user's commit of hand's work");
    fx.write("user.txt", "the user's\n");
    fx.commit_all("the user's next commit");
    fx
}

#[test]
fn land_promoted_by_hand_and_committed_is_landed_in_list_show_and_overlaps() {
    let fx = promoted_by_hand_then_head_moved();
    assert_eq!(listed_state(&fx, "hand"), "landed");
    assert_eq!(listed_state(&fx, "other"), "bound");
    let shown = ok(&fx, &["show", "-s", "hand"]);
    assert_eq!(shown["state"], "landed", "{shown}");
    let overlaps = ok(&fx, &["overlaps"]);
    assert_eq!(ids_in(&overlaps, "sessions"), ["other"], "{overlaps}");
    assert_eq!(
        overlaps["landed"],
        serde_json::json!(["hand"]),
        "{overlaps}"
    );
    // More work in the isolation: not landed any more.
    std::fs::write(fx.isolation("hand").join("more.txt"), "more\n").unwrap();
    assert_eq!(listed_state(&fx, "hand"), "bound");
}

#[test]
fn land_all_leaves_a_session_landed_by_hand_alone_never_rebased() {
    let fx = promoted_by_hand_then_head_moved();
    let iso_head = fx.git(&fx.isolation("hand"), &["rev-parse", "HEAD"]);
    let base = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let landed = ok(&fx, &["land", "--all"]);
    assert_eq!(ids_in(&landed, "sessions"), ["other"], "{landed}");
    assert_eq!(
        subjects_since(&fx, &base),
        ["a3s-iso: the work of session other"]
    );
    assert_eq!(
        fx.git(&fx.isolation("hand"), &["rev-parse", "HEAD"]),
        iso_head,
        "never rebased"
    );
}

#[test]
fn land_of_a_landed_session_by_id_is_idempotent_and_never_rebased() {
    let fx = promoted_by_hand_then_head_moved();
    let iso_head = fx.git(&fx.isolation("hand"), &["rev-parse", "HEAD"]);
    let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let (code, doc) = fx.json(&["land", "-s", "hand", "--keep"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["sessions"][0]["outcome"], "idempotent", "{doc}");
    assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD"]), head);
    assert_eq!(
        fx.git(&fx.isolation("hand"), &["rev-parse", "HEAD"]),
        iso_head
    );
}

#[test]
fn land_all_twice_lands_nothing_the_second_time_and_says_so() {
    let fx = Fixture::new();
    for id in ["a", "b"] {
        session_adding_its_file(&fx, id);
    }
    ok(&fx, &["land", "--all", "--keep"]);
    let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let (code, doc) = fx.json(&["land", "--all"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["sessions"], serde_json::json!([]), "{doc}");
    assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD"]), head);
    let out = fx.cmd().args(["land", "--all"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("nothing to land"), "{text}");
    for id in ["a", "b"] {
        assert_eq!(listed_state(&fx, id), "landed");
    }
}

/// Session `i` of a fleet: adds `f<i>.txt` and changes line `3 i` of the shared file (apart
/// enough from the others' lines to merge), in `dir`; odd ones commit it themselves.
fn fleet_work(fx: &Fixture, dir: &std::path::Path, i: usize, commit: bool) {
    std::fs::write(dir.join(format!("f{i}.txt")), format!("session {i}\n")).unwrap();
    let shared = dir.join("shared.txt");
    let mut lines: Vec<String> = std::fs::read_to_string(&shared)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    lines[3 * i] = format!("changed by session {i}");
    std::fs::write(&shared, lines.join("\n") + "\n").unwrap();
    if commit {
        crate::fixture::agent_commit(fx, dir, &format!("session {i}'s own commit"));
    }
}

fn shared_file() -> String {
    (0..40).map(|n| format!("line {n}\n")).collect()
}

/// Ten agents, bind to landed with no hand step: the landed tree is the one plain git makes of
/// the same work; a second `land --all` lands nothing; no session is left with work to land,
/// and no isolation is left (`git worktree list` shows only the source).
fn fleet_lands_like_raw_git(format: &str) {
    let fx = Fixture::with_object_format(format);
    fx.write("shared.txt", &shared_file());
    let base = fx.commit_all("shared");
    let ids: Vec<String> = (0..10).map(|i| format!("agent{i}")).collect();
    for (i, id) in ids.iter().enumerate() {
        fx.bind(id);
        fleet_work(&fx, &fx.isolation(id), i, i % 2 == 1);
    }
    fx.write("user.txt", "the user's\n");
    fx.commit_all("the user's commit");
    let (code, landed) = fx.json(&["land", "--all"]);
    assert_eq!(code, 0, "{landed}");
    for session in landed["sessions"].as_array().unwrap() {
        assert_eq!(session["outcome"], "landed", "{landed}");
        assert_eq!(session["cleanup"], "discarded", "{landed}");
    }
    // The same work by plain git, in a clone at the same base.
    let raw = fx.root.join("raw");
    let src = fx.src.to_str().unwrap();
    fx.git(&fx.root, &["clone", "-q", src, raw.to_str().unwrap()]);
    fx.git(&raw, &["reset", "-q", "--hard", &base]);
    std::fs::write(raw.join("user.txt"), "the user's\n").unwrap();
    crate::fixture::agent_commit(&fx, &raw, "the user's commit");
    for i in 0..10 {
        fleet_work(&fx, &raw, i, true);
    }
    assert_eq!(
        fx.git(&fx.src, &["rev-parse", "HEAD^{tree}"]),
        fx.git(&raw, &["rev-parse", "HEAD^{tree}"])
    );
    let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let (code, again) = fx.json(&["land", "--all"]);
    assert_eq!(
        (code, &again["sessions"]),
        (0, &serde_json::json!([])),
        "{again}"
    );
    assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD"]), head);
    let list = ok(&fx, &["list", "--all"]);
    for session in list["sessions"].as_array().unwrap() {
        assert_eq!(session["state"], "discarded", "{list}");
    }
    assert_eq!(fx.worktrees().len(), 1, "{:?}", fx.worktrees());
    for id in &ids {
        assert!(!fx.isolation(id).exists(), "{id}'s isolation is left");
        // Its evidence is kept, as `discard` keeps it.
        let base_ref = format!("refs/a3s-iso/sessions/{id}/base");
        fx.git(&fx.src, &["rev-parse", "--verify", &base_ref]);
    }
    assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), "");
}

#[test]
fn land_fleet_of_ten_lands_like_raw_git_and_cleans_up_sha1() {
    fleet_lands_like_raw_git("sha1");
}

#[test]
fn land_fleet_of_ten_lands_like_raw_git_and_cleans_up_sha256() {
    fleet_lands_like_raw_git("sha256");
}

#[test]
fn land_returns_a_landed_isolation_to_the_pool_and_keep_keeps_it() {
    let fx = Fixture::new();
    ok(&fx, &["pool", "--size", "1"]);
    for id in ["pooled", "kept"] {
        session_adding_its_file(&fx, id);
    }
    let landed = ok(&fx, &["land", "-s", "pooled"]);
    assert_eq!(landed["sessions"][0]["cleanup"], "pooled", "{landed}");
    assert!(!fx.isolation("pooled").exists());
    let kept = ok(&fx, &["land", "-s", "kept", "--keep"]);
    assert_eq!(kept["sessions"][0]["cleanup"], "kept", "{kept}");
    assert_eq!(
        std::fs::read_to_string(fx.isolation("kept").join("kept.txt")).unwrap(),
        "kept\n"
    );
    assert_eq!(listed_state(&fx, "kept"), "landed");
}

/// `first` conflicts with the user's commit and stops the queue before `second`.
fn queue_stopped_at_a_conflict() -> Fixture {
    let fx = Fixture::new();
    for id in ["first", "second"] {
        session_adding_its_file(&fx, id);
    }
    std::fs::write(fx.isolation("first").join("README.md"), "first's\n").unwrap();
    fx.write("README.md", "the user's\n");
    fx.commit_all("the user's commit");
    let (code, stopped) = fx.json(&["land", "--all"]);
    assert_eq!(
        (code, &stopped["stopped_at"]),
        (3, &"first".into()),
        "{stopped}"
    );
    fx
}

#[test]
fn land_abort_drops_the_stopped_queue_and_touches_no_session() {
    let fx = queue_stopped_at_a_conflict();
    let queue = crate::fixture::state_dir(&fx).join("land.json");
    assert!(queue.exists());
    let before: Vec<_> = ["first", "second"]
        .iter()
        .map(|id| crate::fixture::listing(&fx.isolation(id)))
        .collect();
    let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let (code, doc) = fx.json(&["land", "--abort"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["aborted"], true, "{doc}");
    assert!(!queue.exists());
    let after: Vec<_> = ["first", "second"]
        .iter()
        .map(|id| crate::fixture::listing(&fx.isolation(id)))
        .collect();
    assert_eq!(before, after);
    assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD"]), head);
    let (code, none) = fx.json(&["land", "--abort"]);
    assert_eq!(code, 2, "nothing to abort: {none}");
}

#[test]
fn land_of_a_queue_whose_sessions_were_discarded_meanwhile_finishes_saying_so() {
    let fx = queue_stopped_at_a_conflict();
    for id in ["first", "second"] {
        ok(&fx, &["discard", "-s", id]);
    }
    let (code, doc) = fx.json(&["land"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        crate::land_queue::outcomes(&doc),
        [
            ("first".to_string(), "discarded".to_string()),
            ("second".to_string(), "discarded".to_string())
        ],
        "{doc}"
    );
    assert!(!crate::fixture::state_dir(&fx).join("land.json").exists());
    let out = fx.cmd().args(["land", "--all"]).output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("nothing to land"), "{text}");
    assert!(!text.contains("conflict"), "a stale hint: {text}");
}

/// What the landing's test writes: a log and a tracked file.
const WRITING_TEST: &str = "echo log > test-output.log; echo tested >> README.md";

fn cleanup_kills() -> usize {
    crate::fixture::repetitions("A3S_ISO_LAND_CLEANUP_KILLS", 50)
}

/// Where session `id`'s work (`<id>.txt`) is: in HEAD, still in its isolation, or in its swept
/// snapshot. Never nowhere.
fn work_is_somewhere(fx: &Fixture, id: &str, round: usize) {
    let file = format!("{id}.txt");
    let in_head = fx.git(&fx.src, &["ls-tree", "--name-only", "HEAD", &file]) == file;
    let in_isolation = fx.isolation(id).join(&file).exists();
    let swept = format!("refs/a3s-iso/swept/{id}");
    let in_swept = !fx.git(&fx.src, &["for-each-ref", &swept]).is_empty();
    assert!(
        in_head || in_isolation || in_swept,
        "round {round}: {id}'s work is lost"
    );
}

/// `land --all` that cleans up, its process group SIGKILLed at random points again and again
/// until it finishes: no session lands twice, none is lost, and `land` again finishes the
/// queue and its cleanup: every isolation gone, `git worktree list` only the source.
/// `A3S_ISO_LAND_CLEANUP_KILLS` sets the number of kills (default 50).
#[test]
fn land_killed_while_landing_and_cleaning_up_loses_nothing_and_finishes() {
    let mut rng = crate::promote_crash::Rng::seeded("land-cleanup");
    let ids = ["q0", "q1", "q2", "q3"];
    let (mut kills, mut round) = (0, 0);
    while kills < cleanup_kills() {
        let fx = Fixture::new();
        for id in ids {
            session_adding_its_file(&fx, id);
        }
        crate::fixture::agent_commit(&fx, &fx.isolation("q1"), "q1 commits");
        fx.write("user.txt", "the user's\n");
        let base = fx.commit_all("the user's commit");
        let mut first = true;
        loop {
            let queued = crate::fixture::state_dir(&fx).join("land.json").exists();
            // The test writes a log and changes a tracked file: none of it may land, whatever
            // the kill interrupts.
            let args = match first || !queued {
                true => vec!["land", "--all", "--test", WRITING_TEST],
                false => vec!["land"],
            };
            first = false;
            let delay = std::time::Duration::from_millis(rng.below(900));
            if !crate::promote_crash::kill_after(&fx, &args, delay) {
                break;
            }
            kills += 1;
            let subjects = subjects_since(&fx, &base);
            for id in ids {
                let named = format!("a3s-iso: the work of session {id}");
                let times = subjects.iter().filter(|s| **s == named).count();
                assert!(times <= 1, "round {round}: {id} landed {times} times");
                work_is_somewhere(&fx, id, round);
            }
        }
        let (code, done) = fx.json(&["land", "--all"]);
        assert_eq!(code, 0, "round {round}: {done}");
        let landed = fx.git(&fx.src, &["diff", "--name-only", &base, "HEAD"]);
        assert_eq!(
            landed, "q0.txt\nq1.txt\nq2.txt\nq3.txt",
            "round {round}: {done}"
        );
        let mut subjects = subjects_since(&fx, &base);
        subjects.sort();
        let expected: Vec<String> = (ids.iter())
            .map(|id| format!("a3s-iso: the work of session {id}"))
            .collect();
        assert_eq!(subjects, expected, "round {round}: each exactly once");
        assert_eq!(
            fx.worktrees().len(),
            1,
            "round {round}: {:?}",
            fx.worktrees()
        );
        for id in ids {
            assert!(!fx.isolation(id).exists(), "round {round}: {id} left");
        }
        assert_eq!(
            fx.git(&fx.src, &["status", "--porcelain"]),
            "",
            "round {round}"
        );
        round += 1;
    }
    eprintln!("land cleanup: {kills} kills over {round} queues");
}

/// A session promoted in steps is landed only once its last step is in HEAD's history: after a
/// first step committed by hand, its later work keeps it `bound`, and `land` lands that later
/// work only (its first step once), then cleans it up.
#[test]
fn land_of_a_session_promoted_in_steps_lands_only_its_later_work() {
    let fx = Fixture::new();
    session_adding_its_file(&fx, "steps");
    ok(&fx, &["promote", "-s", "steps"]);
    fx.commit_all("the user's commit of the first step");
    assert_eq!(listed_state(&fx, "steps"), "landed");
    std::fs::write(fx.isolation("steps").join("later.txt"), "later\n").unwrap();
    assert_eq!(listed_state(&fx, "steps"), "bound");
    let base = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let landed = ok(&fx, &["land", "--all"]);
    assert_eq!(
        crate::land_queue::outcomes(&landed),
        [("steps".to_string(), "landed".to_string())],
        "{landed}"
    );
    let changed = fx.git(&fx.src, &["diff", "--name-only", &base, "HEAD"]);
    assert_eq!(changed, "later.txt");
    assert_eq!(landed["sessions"][0]["cleanup"], "discarded", "{landed}");
    assert!(!fx.isolation("steps").exists());
}

/// A session landed with `--keep` stays landed when a later landing changes the same file:
/// its work is in HEAD's history, even though HEAD's file is not its any more. `land --all`
/// leaves it out rather than rebasing it into a conflict with what came after it.
#[test]
fn land_a_kept_session_stays_landed_when_later_work_changes_its_file() {
    let fx = Fixture::new();
    session_adding_its_file(&fx, "early");
    ok(&fx, &["land", "-s", "early", "--keep"]);
    fx.bind("later");
    std::fs::write(fx.isolation("later").join("early.txt"), "later's\n").unwrap();
    ok(&fx, &["land", "-s", "later"]);
    assert_eq!(listed_state(&fx, "early"), "landed");
    let iso_head = fx.git(&fx.isolation("early"), &["rev-parse", "HEAD"]);
    let (code, again) = fx.json(&["land", "--all"]);
    assert_eq!(
        (code, &again["sessions"]),
        (0, &serde_json::json!([])),
        "{again}"
    );
    assert_eq!(
        fx.git(&fx.isolation("early"), &["rev-parse", "HEAD"]),
        iso_head
    );
    assert_eq!(
        std::fs::read_to_string(fx.src.join("early.txt")).unwrap(),
        "later's\n"
    );
}

/// `land --mode patch` leaves the work uncommitted in your checkout: not in your history, so the
/// session is not landed and its isolation stays.
#[test]
fn land_in_patch_mode_keeps_the_isolation_of_uncommitted_work() {
    let fx = Fixture::new();
    session_adding_its_file(&fx, "p");
    let landed = ok(&fx, &["land", "-s", "p", "--mode", "patch"]);
    assert_eq!(landed["sessions"][0]["outcome"], "landed", "{landed}");
    assert_eq!(landed["sessions"][0]["cleanup"], Value::Null, "{landed}");
    assert_eq!(
        std::fs::read_to_string(fx.isolation("p").join("p.txt")).unwrap(),
        "p\n"
    );
    assert_eq!(listed_state(&fx, "p"), "bound");
}

/// A landing cleans up after itself, so `land -s ID` again finds the session discarded: it
/// landed then (idempotent, exit 0, nothing committed), where a session discarded unlanded is
/// `discarded`.
#[test]
fn land_again_of_a_session_that_landed_and_went_says_it_landed_before() {
    let fx = Fixture::new();
    for id in ["went", "dropped"] {
        session_adding_its_file(&fx, id);
    }
    ok(&fx, &["land", "-s", "went"]);
    ok(&fx, &["discard", "-s", "dropped"]);
    let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let (code, doc) = fx.json(&["land", "-s", "went", "-s", "dropped"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["sessions"][0]["outcome"], "idempotent", "{doc}");
    assert_eq!(doc["sessions"][1]["outcome"], "discarded", "{doc}");
    assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD"]), head);
    let out = fx.cmd().args(["land", "-s", "went"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("went: landed before"), "{text}");
}
