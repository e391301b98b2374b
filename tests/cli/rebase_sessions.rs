//! `rebase`: a session moves onto a new base inside its isolation — its commits replayed with
//! their authors and messages, its uncommitted work merged on top and left uncommitted — while
//! the user's checkout stays byte for byte as it was; conflicts stay in the isolation
//! (`conflicted`) until `--continue` or `--abort`, and a promote lands exactly what is new.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use crate::fixture::{
    Fixture, admin_dir, checkout_listing, error_code, iso_git, isolate, listing, outcome, read_text,
};

/// The isolation as bytes: every file (content and mode), its index file and its HEAD file.
fn isolation_state(fx: &Fixture, id: &str) -> BTreeMap<String, String> {
    let mut state = listing(&fx.isolation(id));
    let admin = admin_dir(fx, id);
    for file in ["index", "HEAD"] {
        let bytes = std::fs::read(admin.join(file)).unwrap_or_default();
        state.insert(format!("<{file}>"), hex::encode(&bytes));
    }
    state
}

/// Three sessions from one HEAD: A changes line two of `src/lib.txt`, B adds its own file,
/// C changes the same line as A; A is promoted and the user commits it.
fn three_sessions(fx: &Fixture) {
    for id in ["A", "B", "C"] {
        fx.bind(id);
    }
    std::fs::write(fx.isolation("A").join("src/lib.txt"), "one\ntwo from A\n").unwrap();
    std::fs::write(fx.isolation("B").join("b.txt"), "from B\n").unwrap();
    std::fs::write(fx.isolation("C").join("src/lib.txt"), "one\ntwo from C\n").unwrap();
    std::fs::write(fx.isolation("C").join("c-notes.txt"), "untracked in C\n").unwrap();
    let a = fx.json(&["promote", "-s", "A"]);
    assert_eq!(outcome(&a), (0, "applied"), "{}", a.1);
    fx.commit_all("take A");
}

#[test]
fn conflict_stays_in_the_isolation_until_continue_then_promotes() {
    let fx = Fixture::new();
    three_sessions(&fx);
    let checkout = checkout_listing(&fx.src);
    let rebased = fx.json(&["rebase", "-s", "C"]);
    assert_eq!(outcome(&rebased), (3, "conflicted"), "{}", rebased.1);
    assert_eq!(
        rebased.1["conflicting_paths"],
        serde_json::json!(["src/lib.txt"])
    );
    assert_eq!(
        checkout_listing(&fx.src),
        checkout,
        "the checkout is untouched"
    );
    let lib = read_text(&fx.isolation("C"), "src/lib.txt");
    assert!(
        lib.contains("<<<<<<< ") && lib.contains("two from A") && lib.contains("two from C"),
        "{lib}"
    );
    let status = iso_git(&fx, "C", &["status", "--porcelain"]);
    assert!(status.contains("UU src/lib.txt"), "{status}");
    let stages = iso_git(&fx, "C", &["ls-files", "-u"]);
    assert_eq!(stages.lines().count(), 3, "{stages}");
    // The session is conflicted everywhere it is shown, and promote refuses it.
    let (_, list) = fx.json(&["list"]);
    let c = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == "C")
        .unwrap();
    assert_eq!(c["state"], "conflicted", "{c}");
    assert_eq!(c["conflicting_paths"], serde_json::json!(["src/lib.txt"]));
    let (_, show) = fx.json(&["show", "-s", "C"]);
    assert_eq!(show["state"], "conflicted", "{show}");
    let refused = fx.json(&["promote", "-s", "C"]);
    assert_eq!(refused.0, 3, "{}", refused.1);
    assert_eq!(error_code(&refused.1), "session_conflicted");
    assert_eq!(checkout_listing(&fx.src), checkout);
    // Markers still there: --continue refuses; resolved and added: it goes on.
    let early = fx.json(&["rebase", "-s", "C", "--continue"]);
    assert_eq!(
        (early.0, error_code(&early.1)),
        (3, "session_conflicted"),
        "{}",
        early.1
    );
    let resolve = "printf 'one\\ntwo from A and C\\n' > src/lib.txt && git add src/lib.txt";
    let mut run = fx.cmd();
    run.args(["run", "-s", "C", "--no-sandbox", "--", "sh", "-c", resolve]);
    assert!(run.status().unwrap().success());
    let done = fx.json(&["rebase", "-s", "C", "--continue"]);
    assert_eq!(outcome(&done), (0, "continued"), "{}", done.1);
    let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    assert_eq!(done.1["to_revision"], head.as_str());
    assert_eq!(iso_git(&fx, "C", &["rev-parse", "HEAD"]), head);
    assert_eq!(
        read_text(&fx.isolation("C"), "c-notes.txt"),
        "untracked in C\n"
    );
    assert_eq!(checkout_listing(&fx.src), checkout);
    let promoted = fx.json(&["promote", "-s", "C"]);
    assert_eq!(outcome(&promoted), (0, "applied"), "{}", promoted.1);
    assert_eq!(read_text(&fx.src, "src/lib.txt"), "one\ntwo from A and C\n");
    assert_eq!(read_text(&fx.src, "c-notes.txt"), "untracked in C\n");
    let again = fx.json(&["promote", "-s", "C"]);
    assert_eq!(outcome(&again), (0, "idempotent"), "{}", again.1);
}

#[test]
fn abort_restores_the_isolation_byte_for_byte() {
    let fx = Fixture::new();
    three_sessions(&fx);
    // Something staged, something committed, something untracked.
    std::fs::write(fx.isolation("C").join("staged.txt"), "staged\n").unwrap();
    iso_git(&fx, "C", &["add", "staged.txt"]);
    let before = isolation_state(&fx, "C");
    let checkout = checkout_listing(&fx.src);
    let rebased = fx.json(&["rebase", "-s", "C"]);
    assert_eq!(outcome(&rebased), (3, "conflicted"), "{}", rebased.1);
    assert_ne!(isolation_state(&fx, "C"), before);
    let aborted = fx.json(&["rebase", "-s", "C", "--abort"]);
    assert_eq!(outcome(&aborted), (0, "aborted"), "{}", aborted.1);
    assert_eq!(isolation_state(&fx, "C"), before);
    assert_eq!(checkout_listing(&fx.src), checkout);
    let (_, show) = fx.json(&["show", "-s", "C"]);
    assert_eq!(show["state"], "bound", "{show}");
    let again = fx.json(&["rebase", "-s", "C", "--abort"]);
    assert_eq!(
        (again.0, error_code(&again.1)),
        (5, "invalid_input"),
        "{}",
        again.1
    );
}

#[test]
fn a_clean_rebase_keeps_commits_and_uncommitted_work() {
    let fx = Fixture::new();
    fx.bind("s");
    let iso = fx.isolation("s");
    std::fs::write(iso.join("agent.txt"), "committed\n").unwrap();
    iso_git(&fx, "s", &["add", "agent.txt"]);
    let mut commit = Command::new("git");
    commit
        .current_dir(&iso)
        .args(["commit", "-q", "-m", "Agent work\n\nwith a body"]);
    isolate(&mut commit, &fx.home);
    commit
        .env("GIT_AUTHOR_NAME", "Bo Bot")
        .env("GIT_AUTHOR_EMAIL", "bo@example.com");
    assert!(commit.status().unwrap().success());
    std::fs::write(iso.join("README.md"), "hello\nagent edit\n").unwrap();
    std::fs::write(iso.join("loose.txt"), "untracked\n").unwrap();
    fx.write("user.txt", "the user's\n");
    fx.commit_all("the user moves on");
    let checkout = checkout_listing(&fx.src);
    let rebased = fx.json(&["rebase", "-s", "s"]);
    assert_eq!(outcome(&rebased), (0, "rebased"), "{}", rebased.1);
    assert_eq!(rebased.1["replayed"].as_array().unwrap().len(), 1);
    assert_eq!(checkout_listing(&fx.src), checkout);
    let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    assert_eq!(iso_git(&fx, "s", &["rev-parse", "HEAD^"]), head);
    assert_eq!(
        iso_git(&fx, "s", &["log", "-1", "--format=%an <%ae> %ad%n%B"]),
        "Bo Bot <bo@example.com> Fri Jan 2 03:04:05 2026 +0000\nAgent work\n\nwith a body"
    );
    assert_eq!(read_text(&iso, "user.txt"), "the user's\n");
    assert_eq!(read_text(&iso, "README.md"), "hello\nagent edit\n");
    assert_eq!(read_text(&iso, "loose.txt"), "untracked\n");
    assert_eq!(
        iso_git(&fx, "s", &["status", "--porcelain"]),
        " M README.md\n?? loose.txt"
    );
    let up = fx.json(&["rebase", "-s", "s"]);
    assert_eq!(outcome(&up), (0, "up_to_date"), "{}", up.1);
    // The session's delta is now from the new HEAD: promote lands it, no head_moved.
    let promoted = fx.json(&["promote", "-s", "s"]);
    assert_eq!(outcome(&promoted), (0, "applied"), "{}", promoted.1);
    assert_eq!(read_text(&fx.src, "agent.txt"), "committed\n");
    assert_eq!(read_text(&fx.src, "loose.txt"), "untracked\n");
}

/// Step 1 promoted and committed by the user, more work, rebase: promote lands only step 2,
/// and a third promote is idempotent.
fn steps_across_a_rebase(mode: &str) {
    let fx = Fixture::new();
    fx.bind("s");
    let iso = fx.isolation("s");
    std::fs::write(iso.join("one.txt"), "step one\n").unwrap();
    let first = fx.json(&["promote", "-s", "s", "--mode", mode]);
    assert_eq!(outcome(&first), (0, "applied"), "{}", first.1);
    if mode == "patch" {
        fx.commit_all("take step one");
    }
    std::fs::write(iso.join("two.txt"), "step two\n").unwrap();
    if mode == "patch" {
        let moved = fx.json(&["promote", "-s", "s", "--mode", mode]);
        assert_eq!(moved.1["reason"], "head_moved", "{}", moved.1);
    } else {
        // The user moves on past the replayed step.
        fx.write("user.txt", "the user's\n");
        fx.commit_all("the user moves on");
    }
    let rebased = fx.json(&["rebase", "-s", "s"]);
    assert_eq!(outcome(&rebased), (0, "rebased"), "{}", rebased.1);
    let second = fx.json(&["promote", "-s", "s", "--mode", mode]);
    assert_eq!(outcome(&second), (0, "applied"), "{}", second.1);
    assert_eq!(second.1["step"], 2, "{}", second.1);
    assert_eq!(second.1["files_changed"], 1, "only step two: {}", second.1);
    assert_eq!(read_text(&fx.src, "one.txt"), "step one\n");
    assert_eq!(read_text(&fx.src, "two.txt"), "step two\n");
    let third = fx.json(&["promote", "-s", "s", "--mode", mode]);
    assert_eq!(outcome(&third), (0, "idempotent"), "{}", third.1);
    assert_eq!(
        fx.git(&fx.src, &["status", "--porcelain"]).lines().count(),
        usize::from(mode == "patch")
    );
}

#[test]
fn steps_across_a_rebase_in_patch_mode() {
    steps_across_a_rebase("patch");
}

#[test]
fn steps_across_a_rebase_in_branch_mode() {
    steps_across_a_rebase("branch");
}

#[test]
fn a_git_without_merge_tree_base_is_too_old_for_rebase() {
    let fx = Fixture::new();
    fx.bind("s");
    let wrapper = fx.git_wrapper(
        "old-git",
        "for a; do [ \"$a\" = --version ] && { echo 'git version 2.39.2'; exit 0; }; done",
    );
    let out = fx
        .cmd()
        .args(["--json", "--git"])
        .arg(&wrapper)
        .args(["rebase", "-s", "s"])
        .output()
        .unwrap();
    let (code, doc) = crate::fixture::json_of(out);
    assert_eq!((code, error_code(&doc)), (1, "git_too_old"), "{doc}");
    assert!(
        doc["error"]["message"].as_str().unwrap().contains("2.40"),
        "{doc}"
    );
}

fn rounds() -> usize {
    crate::fixture::repetitions("A3S_ISO_REBASE_CRASH_ROUNDS", 50)
}

/// A rebase SIGKILLed with its process group at random points: the next command leaves the
/// isolation in the pre-rebase state or the conflicted one, never anything else, and the
/// checkout is untouched throughout; the abort of a conflicted one puts the isolation back
/// byte for byte, ready for the next kill (a fresh fixture every ten).
/// `A3S_ISO_REBASE_CRASH_ROUNDS` sets the number of kills (default 50), `A3S_ISO_CRASH_SEED`
/// replays a run.
#[test]
fn a_killed_rebase_is_finished_or_undone_by_the_next_command() {
    let mut rng = crate::promote_crash::Rng::seeded("rebase");
    let mut fixture = None;
    let mut seen = BTreeMap::<&str, usize>::new();
    for round in 0..rounds() {
        if round % 10 == 0 {
            let fx = Fixture::new();
            three_sessions(&fx);
            for n in 0..40 {
                std::fs::write(fx.isolation("C").join(format!("many-{n}.txt")), "x\n").unwrap();
            }
            let pre = isolation_state(&fx, "C");
            let checkout = checkout_listing(&fx.src);
            fixture = Some((fx, pre, checkout));
        }
        let (fx, pre, checkout) = fixture.as_ref().unwrap();
        let delay = Duration::from_millis(rng.below(400));
        crate::promote_crash::kill_after(fx, &["rebase", "-s", "C"], delay);
        let (_, list) = fx.json(&["list"]);
        let c = list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["session_id"] == "C")
            .unwrap()
            .clone();
        assert_eq!(&checkout_listing(&fx.src), checkout, "round {round}");
        if c["state"] == "conflicted" {
            *seen.entry("conflicted").or_default() += 1;
            assert!(
                read_text(&fx.isolation("C"), "src/lib.txt").contains("<<<<<<< "),
                "round {round}"
            );
            assert_eq!(read_text(&fx.isolation("C"), "many-7.txt"), "x\n");
            let aborted = fx.json(&["rebase", "-s", "C", "--abort"]);
            assert_eq!(
                outcome(&aborted),
                (0, "aborted"),
                "round {round}: {}",
                aborted.1
            );
        } else {
            *seen.entry("pre-rebase").or_default() += 1;
            assert_eq!(c["state"], "bound", "round {round}: {c}");
        }
        assert_eq!(&isolation_state(fx, "C"), pre, "round {round} ({delay:?})");
    }
    eprintln!("rebase kills: {seen:?}");
}

/// `promote --rebase` of a session after HEAD moved, SIGKILLed with its process group at random
/// points: the next command shows the session before its rebase, rebased and not promoted, or
/// promoted — never a checkout with part of it — and promoting again lands it exactly once.
/// Each round binds a new session in the same source. `A3S_ISO_REBASE_CRASH_ROUNDS` sets the
/// number of kills (default 50).
#[test]
fn a_killed_promote_rebase_lands_once_on_the_next_try() {
    let mut rng = crate::promote_crash::Rng::seeded("promote-rebase");
    let fx = Fixture::new();
    let mut seen = BTreeMap::<&str, usize>::new();
    for round in 0..rounds() {
        let id = format!("p{round}");
        fx.bind(&id);
        let iso = fx.isolation(&id);
        for n in 0..20 {
            std::fs::write(iso.join(format!("{id}-{n}.txt")), format!("{round}\n")).unwrap();
        }
        fx.write("moving.txt", &format!("the user's {round}\n"));
        let head = fx.commit_all(&format!("the user moves on {round}"));
        let before = checkout_listing(&fx.src);
        let delay = Duration::from_millis(rng.below(500));
        crate::promote_crash::kill_after(&fx, &["promote", "-s", &id, "--rebase"], delay);
        let (code, list) = fx.json(&["list"]);
        assert_eq!(code, 0, "round {round}: {list}");
        let landed: Vec<bool> = (0..20)
            .map(|n| fx.src.join(format!("{id}-{n}.txt")).exists())
            .collect();
        assert_eq!(
            fx.git(&fx.src, &["rev-parse", "HEAD"]),
            head,
            "round {round}"
        );
        if landed.iter().all(|l| *l) {
            *seen.entry("promoted").or_default() += 1;
        } else {
            assert!(landed.iter().all(|l| !l), "round {round}: a part landed");
            assert_eq!(checkout_listing(&fx.src), before, "round {round}");
            let bound = fx.json(&["show", "-s", &id]).1["bound_revision"].clone();
            *seen
                .entry(if bound == head.as_str() {
                    "rebased"
                } else {
                    "pre-rebase"
                })
                .or_default() += 1;
        }
        let again = fx.json(&["promote", "-s", &id, "--rebase"]);
        assert!(
            matches!(outcome(&again), (0, "applied" | "idempotent")),
            "round {round}: {}",
            again.1
        );
        for n in 0..20 {
            assert_eq!(
                read_text(&fx.src, &format!("{id}-{n}.txt")),
                format!("{round}\n")
            );
        }
        let status = fx.git(&fx.src, &["status", "--porcelain"]);
        assert_eq!(status.lines().count(), 20, "round {round}: {status}");
        fx.commit_all(&format!("take {id}"));
        fx.json(&["discard", "-s", &id]);
    }
    eprintln!("promote --rebase kills: {seen:?}");
}

/// Commits as the agent makes them in its isolation.
fn agent_commit(fx: &Fixture, id: &str, message: &str) {
    iso_git(fx, id, &["add", "-A"]);
    iso_git(fx, id, &["commit", "-q", "-m", message]);
}

#[test]
fn a_conflict_in_a_replayed_commit_continues_with_the_rest() {
    let fx = Fixture::new();
    three_sessions(&fx);
    let iso = fx.isolation("C");
    agent_commit(&fx, "C", "C changes line two");
    std::fs::write(iso.join("later.txt"), "a later commit\n").unwrap();
    agent_commit(&fx, "C", "C adds later.txt");
    std::fs::write(iso.join("wip.txt"), "uncommitted\n").unwrap();
    let stopped = fx.json(&["rebase", "-s", "C"]);
    assert_eq!(outcome(&stopped), (3, "conflicted"), "{}", stopped.1);
    assert!(stopped.1["conflict_commit"].is_string(), "{}", stopped.1);
    // Stopped inside the first commit: the later commit and the uncommitted work wait.
    assert!(!iso.join("later.txt").exists());
    assert!(!iso.join("wip.txt").exists());
    let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    assert_eq!(iso_git(&fx, "C", &["rev-parse", "HEAD"]), head);
    std::fs::write(iso.join("src/lib.txt"), "one\ntwo from both\n").unwrap();
    iso_git(&fx, "C", &["add", "src/lib.txt"]);
    let done = fx.json(&["rebase", "-s", "C", "--continue"]);
    assert_eq!(outcome(&done), (0, "continued"), "{}", done.1);
    assert_eq!(
        iso_git(&fx, "C", &["log", "--format=%s", &format!("{head}..HEAD")]),
        "C adds later.txt\nC changes line two"
    );
    assert_eq!(
        iso_git(&fx, "C", &["show", "HEAD^:src/lib.txt"]),
        "one\ntwo from both"
    );
    assert_eq!(read_text(&iso, "later.txt"), "a later commit\n");
    assert_eq!(read_text(&iso, "wip.txt"), "uncommitted\n");
    assert_eq!(read_text(&iso, "c-notes.txt"), "untracked in C\n");
    assert_eq!(iso_git(&fx, "C", &["status", "--porcelain"]), "?? wip.txt");
}

/// A kill at each point of the change of the isolation: the next command finishes it, to the
/// conflicted state, and an abort then restores the isolation exactly.
#[test]
fn a_rebase_killed_while_it_writes_the_isolation_is_finished() {
    for point in [
        "rebase-after-intent",
        "tree-move-after-removals",
        "rebase-after-files",
        "rebase-after-head",
    ] {
        let fx = Fixture::new();
        three_sessions(&fx);
        let pre = isolation_state(&fx, "C");
        let checkout = checkout_listing(&fx.src);
        let status = fx
            .cmd()
            .args(["rebase", "-s", "C"])
            .env("A3S_ISO_TEST_FAULT", point)
            .status()
            .unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9),
            "{point}"
        );
        let out = fx.cmd().args(["list"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("interrupted rebase of session C was completed"),
            "{point}: {stderr}"
        );
        let (_, show) = fx.json(&["show", "-s", "C"]);
        assert_eq!(show["state"], "conflicted", "{point}: {show}");
        assert!(
            read_text(&fx.isolation("C"), "src/lib.txt").contains("<<<<<<< "),
            "{point}"
        );
        assert!(iso_git(&fx, "C", &["status", "--porcelain"]).contains("UU src/lib.txt"));
        assert_eq!(checkout_listing(&fx.src), checkout, "{point}");
        let aborted = fx.json(&["rebase", "-s", "C", "--abort"]);
        assert_eq!(outcome(&aborted), (0, "aborted"), "{point}: {}", aborted.1);
        assert_eq!(isolation_state(&fx, "C"), pre, "{point}");
    }
}

/// A, B and C from one HEAD; A promoted and committed. B (its own files) promotes with
/// `--rebase`; C (A's line) rebases into a conflict that stays in its isolation, is resolved
/// with `run`, continued and promoted; the checkout never sees a marker.
#[test]
fn three_sessions_move_on_after_one_is_promoted() {
    let fx = Fixture::new();
    three_sessions(&fx);
    let plain = fx.json(&["promote", "-s", "B"]);
    assert_eq!(plain.1["reason"], "head_moved", "{}", plain.1);
    let human = fx.cmd().args(["promote", "-s", "B"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&human.stderr);
    assert!(
        stderr.contains("a3s-iso rebase") && stderr.contains("promote --rebase"),
        "{stderr}"
    );
    let b = fx.json(&["promote", "-s", "B", "--rebase"]);
    assert_eq!(outcome(&b), (0, "applied"), "{}", b.1);
    assert_eq!(read_text(&fx.src, "b.txt"), "from B\n");
    assert_eq!(read_text(&fx.src, "src/lib.txt"), "one\ntwo from A\n");
    fx.commit_all("take B");
    let checkout = checkout_listing(&fx.src);
    let c = fx.json(&["promote", "-s", "C", "--rebase"]);
    assert_eq!(outcome(&c), (3, "conflict"), "{}", c.1);
    assert_eq!(c.1["reason"], "rebase_conflicted", "{}", c.1);
    assert_eq!(
        c.1["conflicting_paths"],
        serde_json::json!(["src/lib.txt"]),
        "{}",
        c.1
    );
    assert_eq!(
        checkout_listing(&fx.src),
        checkout,
        "the checkout is byte for byte unchanged"
    );
    let (_, show) = fx.json(&["show", "-s", "C"]);
    assert_eq!(show["state"], "conflicted");
    let resolve = "printf 'one\\ntwo from A and C\\n' > src/lib.txt && git add src/lib.txt";
    // In the sandbox where the machine has one.
    let mut run = fx.cmd();
    run.args(["run", "-s", "C"]);
    if !crate::fixture::sandbox_available() {
        run.arg("--no-sandbox");
    }
    run.args(["--", "sh", "-c", resolve]);
    assert!(run.status().unwrap().success());
    let continued = fx.json(&["rebase", "-s", "C", "--continue"]);
    assert_eq!(outcome(&continued), (0, "continued"), "{}", continued.1);
    assert_eq!(checkout_listing(&fx.src), checkout);
    let promoted = fx.json(&["promote", "-s", "C"]);
    assert_eq!(outcome(&promoted), (0, "applied"), "{}", promoted.1);
    assert_eq!(read_text(&fx.src, "src/lib.txt"), "one\ntwo from A and C\n");
    assert_eq!(read_text(&fx.src, "c-notes.txt"), "untracked in C\n");
    assert_eq!(
        fx.git(&fx.src, &["status", "--porcelain"]),
        " M src/lib.txt\n?? c-notes.txt"
    );
}

#[test]
fn head_moved_after_a_committed_step_says_so_and_names_rebase() {
    let fx = Fixture::new();
    fx.bind("s");
    std::fs::write(fx.isolation("s").join("one.txt"), "step one\n").unwrap();
    let first = fx.json(&["promote", "-s", "s"]);
    assert_eq!(outcome(&first), (0, "applied"), "{}", first.1);
    std::fs::write(fx.isolation("s").join("two.txt"), "step two\n").unwrap();
    // Moved, but not by committing the step: no such claim.
    fx.write("other.txt", "other\n");
    fx.git(&fx.src, &["add", "other.txt"]);
    fx.git(&fx.src, &["commit", "-q", "-m", "something else"]);
    let other = fx.json(&["promote", "-s", "s"]);
    assert_eq!(other.1["reason"], "head_moved", "{}", other.1);
    assert!(
        !other.1["detail"]
            .as_str()
            .unwrap()
            .contains("you committed it"),
        "{}",
        other.1
    );
    fx.commit_all("take step one");
    let moved = fx.json(&["promote", "-s", "s"]);
    assert_eq!(moved.1["reason"], "head_moved", "{}", moved.1);
    let detail = moved.1["detail"].as_str().unwrap();
    assert!(
        detail.contains("you committed it") && detail.contains("a3s-iso rebase -s s"),
        "{detail}"
    );
}

#[test]
fn mode_changed_only_while_a_patch_step_is_uncommitted() {
    let fx = Fixture::new();
    fx.bind("s");
    std::fs::write(fx.isolation("s").join("one.txt"), "step one\n").unwrap();
    let first = fx.json(&["promote", "-s", "s"]);
    assert_eq!(outcome(&first), (0, "applied"), "{}", first.1);
    std::fs::write(fx.isolation("s").join("two.txt"), "step two\n").unwrap();
    let uncommitted = fx.json(&["promote", "-s", "s", "--mode", "branch"]);
    assert_eq!(uncommitted.1["reason"], "mode_changed", "{}", uncommitted.1);
    fx.commit_all("take step one");
    let committed = fx.json(&["promote", "-s", "s", "--mode", "branch"]);
    assert_eq!(committed.1["reason"], "head_moved", "{}", committed.1);
    assert!(
        committed.1["detail"]
            .as_str()
            .unwrap()
            .contains("a3s-iso rebase -s s"),
        "{}",
        committed.1
    );
    let rebased = fx.json(&["rebase", "-s", "s"]);
    assert_eq!(outcome(&rebased), (0, "rebased"), "{}", rebased.1);
    let second = fx.json(&["promote", "-s", "s", "--mode", "branch"]);
    assert_eq!(outcome(&second), (0, "applied"), "{}", second.1);
    assert_eq!(second.1["files_changed"], 1, "{}", second.1);
    assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), "");
    assert_eq!(read_text(&fx.src, "two.txt"), "step two\n");
}

#[test]
fn an_ignored_file_in_the_way_fails_before_anything_changes() {
    let fx = Fixture::new();
    fx.write(".gitignore", "build.log\n");
    fx.commit_all("ignore build.log");
    fx.bind("s");
    let iso = fx.isolation("s");
    std::fs::write(iso.join("build.log"), "the agent's ignored log\n").unwrap();
    std::fs::write(iso.join("mine.txt"), "work\n").unwrap();
    // The user now tracks a file at that path.
    fx.write(".gitignore", "");
    fx.write("build.log", "tracked now\n");
    fx.commit_all("track build.log");
    let before = isolation_state(&fx, "s");
    let failed = fx.json(&["rebase", "-s", "s"]);
    assert_ne!(failed.0, 0, "{}", failed.1);
    assert_eq!(isolation_state(&fx, "s"), before);
    let (_, show) = fx.json(&["show", "-s", "s"]);
    assert_eq!(show["state"], "bound", "{show}");
    let listed = fx.cmd().args(["list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&listed.stderr).contains("rebase"),
        "no intent left behind"
    );
}

#[test]
fn discarding_a_conflicted_session_forgets_its_rebase() {
    let fx = Fixture::new();
    three_sessions(&fx);
    let rebased = fx.json(&["rebase", "-s", "C"]);
    assert_eq!(outcome(&rebased), (3, "conflicted"), "{}", rebased.1);
    let state = fx.src.join(".git/a3s-iso/rebases");
    assert!(state.join("C.json").is_file());
    let discarded = fx.json(&["discard", "-s", "C"]);
    assert_eq!(discarded.0, 0, "{}", discarded.1);
    assert!(!state.join("C.json").exists() && !state.join("C.index").exists());
    // Its evidence stays, as for any discard: the pinned pre-rebase state included.
    let (_, show) = fx.json(&["show", "-s", "C"]);
    assert_eq!(show["state"], "discarded", "{show}");
    fx.git(
        &fx.src,
        &[
            "rev-parse",
            "--verify",
            "refs/a3s-iso/sessions/C/rebase/snapshot",
        ],
    );
}

#[test]
fn overlaps_predicts_which_sessions_conflict_without_touching_a_tree() {
    let fx = Fixture::new();
    for id in ["A", "B", "C"] {
        fx.bind(id);
    }
    std::fs::write(fx.isolation("A").join("src/lib.txt"), "one\ntwo from A\n").unwrap();
    std::fs::write(fx.isolation("B").join("b.txt"), "from B\n").unwrap();
    std::fs::write(fx.isolation("C").join("src/lib.txt"), "one\ntwo from C\n").unwrap();
    let before: Vec<_> = ["A", "B", "C"]
        .iter()
        .map(|id| isolation_state(&fx, id))
        .collect();
    let seeds = listing(&fx.src.join(".git/a3s-iso/seeds"));
    let checkout = checkout_listing(&fx.src);
    let (code, doc) = fx.json(&["overlaps"]);
    assert_eq!(code, 0, "{doc}");
    let pairs = doc["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 3, "{doc}");
    let find = |a: &str, b: &str| {
        pairs
            .iter()
            .find(|p| p["a"] == a && p["b"] == b)
            .unwrap()
            .clone()
    };
    assert_eq!(find("A", "B")["prediction"], "clean");
    assert_eq!(find("B", "C")["prediction"], "clean");
    let ac = find("A", "C");
    assert_eq!(ac["prediction"], "conflict", "{ac}");
    assert_eq!(ac["conflicting_paths"], serde_json::json!(["src/lib.txt"]));
    assert_eq!(doc["sessions"][1]["paths"], serde_json::json!(["b.txt"]));
    let after: Vec<_> = ["A", "B", "C"]
        .iter()
        .map(|id| isolation_state(&fx, id))
        .collect();
    assert_eq!(after, before, "no isolation is touched");
    assert_eq!(listing(&fx.src.join(".git/a3s-iso/seeds")), seeds);
    assert_eq!(checkout_listing(&fx.src), checkout);
    let (_, list) = fx.json(&["list"]);
    let with = |id: &str| {
        list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["session_id"] == id)
            .unwrap()["conflicts_with"]
            .clone()
    };
    assert_eq!(with("A"), serde_json::json!(["C"]));
    assert_eq!(with("B"), serde_json::json!([]));
    assert_eq!(with("C"), serde_json::json!(["A"]));
    let human = fx.cmd().args(["list"]).output().unwrap();
    let table = String::from_utf8_lossy(&human.stdout);
    assert!(table.contains("conflicts with C"), "{table}");
}

#[test]
fn onto_names_the_commit_to_move_to() {
    let fx = Fixture::new();
    fx.bind("s");
    std::fs::write(fx.isolation("s").join("mine.txt"), "mine\n").unwrap();
    fx.write("first.txt", "first\n");
    let first = fx.commit_all("first");
    fx.write("second.txt", "second\n");
    fx.commit_all("second");
    let rebased = fx.json(&["rebase", "-s", "s", "--onto", "HEAD~1"]);
    assert_eq!(outcome(&rebased), (0, "rebased"), "{}", rebased.1);
    assert_eq!(rebased.1["to_revision"], first.as_str());
    assert_eq!(iso_git(&fx, "s", &["rev-parse", "HEAD"]), first);
    assert!(fx.isolation("s").join("first.txt").is_file());
    assert!(!fx.isolation("s").join("second.txt").exists());
    let unknown = fx.json(&["rebase", "-s", "s", "--onto", "no-such-rev"]);
    assert_eq!(
        (unknown.0, error_code(&unknown.1)),
        (5, "invalid_input"),
        "{}",
        unknown.1
    );
}

/// `show` of a session stopped at a rebase conflict counts that session's own changes only:
/// the isolation now holds what another session landed (the rebase moved it there), which is
/// not this session's work. A lands `a-landed.txt` and its line of `src/lib.txt`; B changed
/// the same line and added `b-own.txt`: B's rebase stops at `src/lib.txt`, and B shows two
/// changed files, never A's.
#[test]
fn show_of_a_conflicted_session_counts_only_its_own_files() {
    let fx = Fixture::new();
    fx.bind("A");
    fx.bind("B");
    std::fs::write(fx.isolation("A").join("src/lib.txt"), "one\ntwo from A\n").unwrap();
    std::fs::write(fx.isolation("A").join("a-landed.txt"), "from A\n").unwrap();
    std::fs::write(fx.isolation("B").join("src/lib.txt"), "one\ntwo from B\n").unwrap();
    std::fs::write(fx.isolation("B").join("b-own.txt"), "from B\n").unwrap();
    let landed = fx.json(&["land", "-s", "A"]);
    assert_eq!(landed.0, 0, "{}", landed.1);
    let rebased = fx.json(&["rebase", "-s", "B"]);
    assert_eq!(outcome(&rebased), (3, "conflicted"), "{}", rebased.1);
    assert!(fx.isolation("B").join("a-landed.txt").is_file());
    let (code, show) = fx.json(&["show", "-s", "B"]);
    assert_eq!(code, 0, "{show}");
    assert_eq!(show["state"], "conflicted", "{show}");
    assert_eq!(show["files_changed"], 2, "{show}");
    assert_eq!(show["files_to_promote"], 2, "{show}");
    let out = fx.cmd().args(["show", "-s", "B"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("files"))
        .unwrap_or_default()
        .trim()
        .to_string();
    insta::assert_snapshot!(line, @"files changed  2 (2 not yet promoted)");
}

/// Conflict markers name their sides as git's do, never by raw commit ids: the branch the
/// session moves onto (`main`, as `git rebase` says `HEAD`), and the session's side, its
/// uncommitted work or the commit being replayed (`session/<id>/<short id>`).
#[test]
fn conflict_markers_name_the_branch_and_the_session() {
    let fx = Fixture::new();
    three_sessions(&fx);
    let rebased = fx.json(&["rebase", "-s", "C"]);
    assert_eq!(outcome(&rebased), (3, "conflicted"), "{}", rebased.1);
    let lib = read_text(&fx.isolation("C"), "src/lib.txt");
    insta::assert_snapshot!(lib, @r"
    one
    <<<<<<< main
    two from A
    =======
    two from C
    >>>>>>> session/C/uncommitted
    ");

    // A committed change: the commit being replayed, by its short id.
    let aborted = fx.json(&["rebase", "-s", "C", "--abort"]);
    assert_eq!(aborted.0, 0, "{}", aborted.1);
    agent_commit(&fx, "C", "C changes line two");
    let commit = iso_git(&fx, "C", &["rev-parse", "--short=7", "HEAD"]);
    let rebased = fx.json(&["rebase", "-s", "C"]);
    assert_eq!(outcome(&rebased), (3, "conflicted"), "{}", rebased.1);
    let lib = read_text(&fx.isolation("C"), "src/lib.txt");
    assert!(lib.contains("<<<<<<< main\n"), "{lib}");
    assert!(
        lib.contains(&format!(">>>>>>> session/C/{commit}\n")),
        "{lib}"
    );
}

#[test]
fn continue_names_each_unmerged_path_once_even_when_names_are_not_utf8() {
    use std::os::unix::ffi::OsStrExt;
    // `x\xfe` and `x\xff` read alike as text but sit apart in the index, `x\xfeA` between them.
    let names: [&[u8]; 3] = [b"x\xfe", b"x\xfeA", b"x\xff"];
    let fx = Fixture::new();
    let at = |root: &std::path::Path, name: &[u8]| root.join(std::ffi::OsStr::from_bytes(name));
    for name in names {
        std::fs::write(at(&fx.src, name), "base\n").unwrap();
    }
    fx.commit_all("three names");
    fx.bind("N");
    for name in names {
        std::fs::write(at(&fx.isolation("N"), name), "from the session\n").unwrap();
        std::fs::write(at(&fx.src, name), "from the user\n").unwrap();
    }
    fx.commit_all("the user's");
    let rebased = fx.json(&["rebase", "-s", "N"]);
    assert_eq!(outcome(&rebased), (3, "conflicted"), "{}", rebased.1);
    let stages = iso_git(&fx, "N", &["ls-files", "-u", "-z"]);
    assert_eq!(stages.split('\0').filter(|s| !s.is_empty()).count(), 9);
    let early = fx.json(&["rebase", "-s", "N", "--continue"]);
    assert_eq!(error_code(&early.1), "session_conflicted", "{}", early.1);
    assert_eq!(
        early.1["error"]["paths"],
        serde_json::json!(["x\u{fffd}", "x\u{fffd}A"]),
        "{}",
        early.1
    );
}
