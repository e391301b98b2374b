//! Promote in steps: a session promoted, worked on further and promoted again lands the delta
//! since its last promoted result, in patch and in branch mode, crash-safely.

use crate::fixture::{Fixture, agent_commit, checkout_listing, outcome, promote, read_text};

#[test]
fn patch_mode_promotes_in_steps_then_replays() {
    let fx = Fixture::new();
    let bound = fx.bind("p");
    let iso = fx.isolation("p");
    std::fs::write(iso.join("README.md"), "hello\nstep one\n").unwrap();
    let first = promote(&fx, &["-s", "p"]);
    assert_eq!(outcome(&first), (0, "applied"), "{}", first.1);
    assert_eq!(first.1["step"], 1);
    assert_eq!(first.1["from_tree"], bound["base_tree"]);
    assert_eq!(read_text(&fx.src, "README.md"), "hello\nstep one\n");

    // The same file again, and a new one.
    std::fs::write(iso.join("README.md"), "hello\nstep one\nstep two\n").unwrap();
    std::fs::create_dir_all(iso.join("notes")).unwrap();
    std::fs::write(iso.join("notes/new.txt"), "new\n").unwrap();
    let second = promote(&fx, &["-s", "p"]);
    assert_eq!(outcome(&second), (0, "applied"), "{}", second.1);
    assert_eq!(second.1["step"], 2);
    assert_ne!(second.1["digest"], first.1["digest"]);
    assert_ne!(second.1["from_tree"], bound["base_tree"]);
    assert_eq!(second.1["files_changed"], 2, "only the delta: {}", second.1);
    assert_eq!(
        read_text(&fx.src, "README.md"),
        "hello\nstep one\nstep two\n"
    );
    assert_eq!(read_text(&fx.src, "notes/new.txt"), "new\n");
    assert_eq!(
        fx.git(&fx.src, &["rev-parse", "HEAD"]),
        bound["bound_revision"].as_str().unwrap(),
        "patch mode commits nothing"
    );
    let after = checkout_listing(&fx.src);

    // Nothing new: a replay of step 2.
    let third = promote(&fx, &["-s", "p"]);
    assert_eq!(outcome(&third), (0, "idempotent"), "{}", third.1);
    assert_eq!(third.1["digest"], second.1["digest"]);
    assert_eq!(third.1["step"], 2);
    assert_eq!(checkout_listing(&fx.src), after);

    // The user changes a path the next step touches: a conflict naming it, nothing applied.
    std::fs::write(iso.join("README.md"), "hello\nstep three\n").unwrap();
    std::fs::write(iso.join("other.txt"), "other\n").unwrap();
    fx.write("README.md", "hello\nthe user's edit\n");
    let before = checkout_listing(&fx.src);
    let refused = promote(&fx, &["-s", "p"]);
    assert_eq!(outcome(&refused), (3, "conflict"), "{}", refused.1);
    assert_eq!(refused.1["reason"], "patch_does_not_apply");
    assert_eq!(
        refused.1["conflicting_paths"],
        serde_json::json!(["README.md"])
    );
    assert_eq!(refused.1["step"], 3);
    assert_eq!(checkout_listing(&fx.src), before, "nothing applied");
    assert!(!fx.src.join("other.txt").exists());

    // Put it back as step 2 left it: step 3 lands.
    fx.write("README.md", "hello\nstep one\nstep two\n");
    let fourth = promote(&fx, &["-s", "p"]);
    assert_eq!(outcome(&fourth), (0, "applied"), "{}", fourth.1);
    assert_eq!(fourth.1["step"], 3);
    assert_eq!(read_text(&fx.src, "README.md"), "hello\nstep three\n");
    assert_eq!(read_text(&fx.src, "other.txt"), "other\n");
}

#[test]
fn a_change_undone_and_made_again_lands_again() {
    let fx = Fixture::new();
    fx.bind("u");
    let iso = fx.isolation("u");
    for (content, step) in [("hello\nx\n", 1), ("hello\n", 2), ("hello\nx\n", 3)] {
        std::fs::write(iso.join("README.md"), content).unwrap();
        let result = promote(&fx, &["-s", "u"]);
        assert_eq!(outcome(&result), (0, "applied"), "{}", result.1);
        assert_eq!(result.1["step"], step);
        assert_eq!(read_text(&fx.src, "README.md"), content, "step {step}");
    }
    let replay = promote(&fx, &["-s", "u"]);
    assert_eq!(outcome(&replay), (0, "idempotent"), "{}", replay.1);
    assert_eq!(replay.1["step"], 3);
}

#[test]
fn branch_mode_promotes_in_steps() {
    let fx = Fixture::new();
    let bound = fx.bind("b")["bound_revision"].as_str().unwrap().to_string();
    let iso = fx.isolation("b");
    std::fs::write(iso.join("a.txt"), "a1\n").unwrap();
    agent_commit(&fx, &iso, "agent: a1");
    std::fs::write(iso.join("README.md"), "hello\nleftover\n").unwrap();
    let first = promote(&fx, &["-s", "b", "--mode", "branch"]);
    assert_eq!(outcome(&first), (0, "applied"), "{}", first.1);
    assert_eq!(first.1["step"], 1);
    let tip1 = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    assert_ne!(tip1, bound);

    // More commits on top (committing the leftover too), and new leftovers.
    std::fs::write(iso.join("a.txt"), "a1\na2\n").unwrap();
    std::fs::write(iso.join("b.txt"), "b\n").unwrap();
    agent_commit(&fx, &iso, "agent: a2 and b");
    std::fs::write(iso.join("src/lib.txt"), "one\ntwo\nthree\n").unwrap();
    let second = promote(&fx, &["-s", "b", "--mode", "branch"]);
    assert_eq!(outcome(&second), (0, "applied"), "{}", second.1);
    assert_eq!(second.1["step"], 2);
    let subjects = fx.git(&fx.src, &["log", "--format=%s", &format!("{tip1}..HEAD")]);
    assert_eq!(
        subjects.lines().collect::<Vec<_>>(),
        [
            "a3s-iso: uncommitted changes of session b",
            "agent: a2 and b"
        ],
        "step 2 lands its own commits on top of step 1"
    );
    assert_eq!(read_text(&fx.src, "a.txt"), "a1\na2\n");
    assert_eq!(read_text(&fx.src, "b.txt"), "b\n");
    assert_eq!(read_text(&fx.src, "README.md"), "hello\nleftover\n");
    assert_eq!(read_text(&fx.src, "src/lib.txt"), "one\ntwo\nthree\n");
    assert_eq!(
        fx.git(&fx.src, &["status", "--porcelain"]),
        "",
        "everything committed"
    );
    let tip2 = fx.git(&fx.src, &["rev-parse", "HEAD"]);

    let third = promote(&fx, &["-s", "b", "--mode", "branch"]);
    assert_eq!(outcome(&third), (0, "idempotent"), "{}", third.1);
    assert_eq!(third.1["digest"], second.1["digest"]);
    assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD"]), tip2);

    // A patch-mode step after branch steps: HEAD is where step 2 left it, not moved.
    std::fs::write(iso.join("b.txt"), "b\nmore\n").unwrap();
    let fourth = promote(&fx, &["-s", "b"]);
    assert_eq!(outcome(&fourth), (0, "applied"), "{}", fourth.1);
    assert_eq!(fourth.1["step"], 3);
    assert_eq!(read_text(&fx.src, "b.txt"), "b\nmore\n");
    assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD"]), tip2);

    // Branch mode after a patch-mode step would commit that step's work: refused.
    std::fs::write(iso.join("b.txt"), "b\nmore\nagain\n").unwrap();
    let before = checkout_listing(&fx.src);
    let refused = promote(&fx, &["-s", "b", "--mode", "branch"]);
    assert_eq!(outcome(&refused), (3, "conflict"), "{}", refused.1);
    assert_eq!(refused.1["reason"], "mode_changed");
    assert_eq!(checkout_listing(&fx.src), before);
    assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD"]), tip2);
}

#[test]
fn a_user_edit_to_a_path_the_branch_step_touches_is_a_conflict() {
    let fx = Fixture::new();
    fx.bind("e");
    let iso = fx.isolation("e");
    std::fs::write(iso.join("a.txt"), "a1\n").unwrap();
    agent_commit(&fx, &iso, "agent: a1");
    let first = promote(&fx, &["-s", "e", "--mode", "branch"]);
    assert_eq!(outcome(&first), (0, "applied"), "{}", first.1);
    let tip1 = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    std::fs::write(iso.join("a.txt"), "a2\n").unwrap();
    agent_commit(&fx, &iso, "agent: a2");
    fx.write("a.txt", "the user's edit\n");
    let before = checkout_listing(&fx.src);
    let second = promote(&fx, &["-s", "e", "--mode", "branch"]);
    assert_eq!(outcome(&second), (3, "conflict"), "{}", second.1);
    assert_eq!(second.1["reason"], "patch_does_not_apply");
    assert_eq!(second.1["conflicting_paths"], serde_json::json!(["a.txt"]));
    assert_eq!(checkout_listing(&fx.src), before, "nothing applied");
    assert_eq!(fx.git(&fx.src, &["stash", "list"]), "");
    assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD"]), tip1);
}

/// Crashes at chosen points of the second step (test-only fault points that SIGKILL it).
#[cfg(feature = "fault-injection")]
mod faults {
    use super::*;
    use crate::fixture::promote_killed_at;

    /// Two steps of a patch session; the second is killed at `fault`, then the next command
    /// sees step 1 or step 2 whole, and a re-run converges.
    fn second_step_killed(fault: &str, args: &[&str]) {
        let fx = Fixture::new();
        fx.bind("k");
        let iso = fx.isolation("k");
        for i in 0..5 {
            std::fs::write(iso.join(format!("f{i}.txt")), "step one\n").unwrap();
        }
        let mut all = vec!["-s", "k"];
        all.extend_from_slice(args);
        assert_eq!(outcome(&promote(&fx, &all)), (0, "applied"));
        for i in 0..5 {
            std::fs::write(iso.join(format!("f{i}.txt")), "step two\n").unwrap();
        }
        std::fs::write(iso.join("added.txt"), "step two\n").unwrap();
        promote_killed_at(&fx, fault, &all);
        // The next command (any that takes the lock) finishes or rolls back the step.
        let (code, listed) = fx.json(&["list"]);
        assert_eq!(code, 0, "{listed}");
        let holds = |content: &str, added: bool| {
            (0..5).all(|i| read_text(&fx.src, &format!("f{i}.txt")) == content)
                && fx.src.join("added.txt").exists() == added
        };
        assert!(
            holds("step one\n", false) || holds("step two\n", true),
            "{fault}: a mix of steps: {:?}",
            checkout_listing(&fx.src)
        );
        assert_eq!(
            fx.git(&fx.src, &["stash", "list"]),
            "",
            "{fault}: nothing left in a stash"
        );
        let rerun = promote(&fx, &all);
        assert!(
            matches!(outcome(&rerun), (0, "applied") | (0, "idempotent")),
            "{fault}: {}",
            rerun.1
        );
        assert_eq!(rerun.1["step"], 2, "{}", rerun.1);
        for i in 0..5 {
            assert_eq!(read_text(&fx.src, &format!("f{i}.txt")), "step two\n");
        }
        assert_eq!(read_text(&fx.src, "added.txt"), "step two\n");
        let again = promote(&fx, &all);
        assert_eq!(outcome(&again), (0, "idempotent"), "{}", again.1);
        assert_eq!(again.1["step"], 2, "the step is neither lost nor doubled");
    }

    #[test]
    fn a_patch_step_killed_after_the_intent_is_rolled_back_then_lands() {
        second_step_killed("promote-after-intent", &[]);
    }

    #[test]
    fn a_patch_step_killed_between_apply_and_journal_is_completed() {
        second_step_killed("promote-after-apply", &[]);
    }

    #[test]
    fn a_patch_step_killed_after_the_journal_is_not_doubled() {
        second_step_killed("promote-after-journal", &[]);
    }

    #[test]
    fn a_branch_step_killed_mid_way_lands_whole_or_not_at_all() {
        for fault in [
            "promote-branch-after-intent",
            "promote-branch-after-restore",
        ] {
            second_step_killed(fault, &["--mode", "branch"]);
        }
    }
}
