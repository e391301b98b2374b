//! Attacks on `gc` and `discard --purge`, also with change sets fetched from a remote. Each
//! test states the promise it attacks.

#[cfg(feature = "fault-injection")]
use std::path::Path;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

#[cfg(feature = "fault-injection")]
use crate::fixture::checkout_listing;
use crate::fixture::{Fixture, json_of, listing, ok, state_dir, worked};

// ---------------------------------------------------------------------------------------
// gc and discard --purge
// ---------------------------------------------------------------------------------------

/// Session `rev`, promoted in branch mode, its retained branch checked out in another
/// worktree (`work/review`): the branch's full name, its tip, and the review worktree.
fn retained_branch_under_review(fx: &Fixture) -> (String, String, PathBuf) {
    worked(fx, "rev", "rev.txt");
    let promoted = ok(fx, &["promote", "-s", "rev", "--mode", "branch"]);
    assert_eq!(promoted["outcome"], "applied", "{promoted}");
    let branch = "refs/heads/a3s-iso/rev".to_string();
    let tip = fx.git(&fx.src, &["rev-parse", &branch]);
    let review = fx.root.join("work/review");
    let add = [
        "worktree",
        "add",
        "-q",
        review.to_str().unwrap(),
        "a3s-iso/rev",
    ];
    fx.git(&fx.src, &add);
    (branch, tip, review)
}

/// docs/storage.md: the retained branch is "removed (kept if checked out)" by
/// `discard --purge` and by `gc`. Checked out means in any worktree of the repository, not
/// only the source (the natural way to review it is `git worktree add ../review
/// a3s-iso/<id>`): deleting it there would leave that worktree on an unborn branch. The
/// branch is kept and reported `checked_out`.
#[test]
fn attack_purge_keeps_a_retained_branch_checked_out_in_another_worktree() {
    let fx = Fixture::new();
    let (branch, tip, review) = retained_branch_under_review(&fx);
    let branch = branch.as_str();
    let purge = ok(&fx, &["discard", "-s", "rev", "--purge"]);
    let still = fx.git(&fx.src, &["for-each-ref", "--format=%(objectname)", branch]);
    assert_eq!(
        still,
        tip,
        "the branch checked out in {} was deleted: {purge}",
        review.display()
    );
    assert!(
        purge["kept"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["kind"] == "branch" && i["reason"] == "checked_out"),
        "{purge}"
    );
    assert_eq!(fx.git(&review, &["rev-parse", "HEAD"]), tip);
}

/// Same promise through `gc`: a discarded session's retained branch, checked out in another
/// worktree, must be kept (`checked_out`), not deleted.
#[test]
fn attack_gc_keeps_a_retained_branch_checked_out_in_another_worktree() {
    let fx = Fixture::new();
    let (branch, tip, review) = retained_branch_under_review(&fx);
    let branch = branch.as_str();
    ok(&fx, &["discard", "-s", "rev"]);
    let done = ok(&fx, &["gc", "--all"]);
    let still = fx.git(&fx.src, &["for-each-ref", "--format=%(objectname)", branch]);
    assert_eq!(
        still, tip,
        "gc deleted a branch checked out elsewhere: {done}"
    );
    assert_eq!(fx.git(&review, &["rev-parse", "HEAD"]), tip);
}

/// "gc (even --all) never removes a bound session's ... seed" and `discard --purge` removes
/// "everything of one session": only of that one. `a.nested-x` is a valid session id whose
/// own seed's name starts with `a`'s seed name and `.nested-`: purging `a` must not take it
/// for one of `a`'s nested seeds (those are marked with a `+`, which no id has).
#[test]
fn attack_purging_a_session_keeps_the_seed_of_a_live_session_with_a_longer_id() {
    let fx = Fixture::new();
    worked(&fx, "a", "a.txt");
    worked(&fx, "a.nested-x", "x.txt");
    let seeds = state_dir(&fx).join("seeds");
    let live_seed: Vec<PathBuf> = std::fs::read_dir(&seeds)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.to_string_lossy()
                .ends_with("a3s-isolate-a.nested-x.index")
        })
        .collect();
    assert_eq!(live_seed.len(), 1, "{:?}", listing(&seeds));
    let purge = ok(&fx, &["discard", "-s", "a", "--purge"]);
    assert!(
        live_seed[0].exists(),
        "the seed of the live session a.nested-x went with a's purge: {purge}"
    );
}

/// A promote killed after it applied and before it journaled leaves an intent. `gc --dry-run`
/// reports the store as the next command will find it: taking the repository lock finishes the
/// promote first (the checkout holds the whole change set, the journal records it, the intent
/// is gone), and then the dry run itself removes nothing of what it lists.
#[cfg(feature = "fault-injection")]
#[test]
fn attack_gc_dry_run_finishes_a_killed_promote_and_removes_nothing_it_lists() {
    let fx = Fixture::new();
    worked(&fx, "p", "p.txt");
    let killed = fx
        .cmd()
        .args(["promote", "-s", "p"])
        .env("A3S_ISO_TEST_FAULT", "promote-after-apply")
        .output()
        .unwrap();
    assert!(!killed.status.success());
    let intents = state_dir(&fx).join("intents");
    let count = |dir: &Path| std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0);
    assert_eq!(count(&intents), 1, "the killed promote left its intent");
    let out = fx
        .cmd()
        .args(["--json", "gc", "--dry-run", "--older-than", "0s"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("interrupted promote"), "{stderr}");
    assert_eq!(
        count(&intents),
        0,
        "the dry run left the promote unfinished"
    );
    assert_eq!(count(&state_dir(&fx).join("promoted")), 1, "not journaled");
    assert!(
        fx.src.join("p.txt").is_file(),
        "the change set did not land"
    );
    let files = |fx: &Fixture| -> Vec<String> {
        listing(&state_dir(fx))
            .into_iter()
            .filter(|(p, _)| !p.starts_with("tmp") && !p.starts_with("leases"))
            .map(|(p, kind)| format!("{p} {kind}"))
            .collect()
    };
    let before = (files(&fx), checkout_listing(&fx.src));
    let dry = ok(&fx, &["gc", "--dry-run", "--older-than", "0s"]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(
        (files(&fx), checkout_listing(&fx.src)),
        before,
        "gc --dry-run changed the state dir or the checkout: {dry}"
    );
}

/// "nor anything in progress": `fetch` and `promote --from` land the fetched commit on a
/// private ref `<ns>fetching/<token>` and verify it there without the repository lock.
/// `gc --all` removes every ref of its namespace that names no session, but never the
/// landing ref of a fetch whose process lives. Here git is slowed (a wrapper given as
/// `A3S_ISO_GIT`) only when it is asked to resolve a `fetching/` ref, to hold the fetch in
/// that window deterministically; the fetch verifies and keeps the change set.
#[test]
fn attack_gc_all_leaves_the_landing_ref_of_a_fetch_in_progress() {
    let fx = Fixture::new();
    let work = fx.root.join("work");
    let remote = work.join("remote.git");
    fx.git(&work, &["init", "-q", "--bare", "-b", "main", "remote.git"]);
    fx.git(
        &fx.src,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    fx.git(&fx.src, &["push", "-q", "origin", "main"]);
    fx.git(&work, &["clone", "-q", remote.to_str().unwrap(), "b"]);
    let b = work.join("b");
    ok(&fx, &["bind", "-s", "agent", "--owner", "none"]);
    std::fs::write(fx.isolation("agent").join("fix.txt"), "fix\n").unwrap();
    let pushed = ok(&fx, &["push", "-s", "agent", "origin"]);
    let digest = pushed["digest"].as_str().unwrap().to_string();

    let wrapper = fx.git_wrapper(
        "slow-git",
        "rp=0; slow=0\nfor a in \"$@\"; do\n  case \"$a\" in\n    rev-parse) rp=1 ;;\n    *:*) ;;\n    *fetching/*) slow=1 ;;\n  esac\ndone\nif [ $rp = 1 ] && [ $slow = 1 ]; then sleep 3; fi",
    );
    let fetch = fx
        .cmd_in(&b)
        .args(["--json", "fetch", "origin", "--digest", &digest])
        .env("A3S_ISO_GIT", &wrapper)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the fetch has landed its ref, then clean up while it verifies.
    let started = std::time::Instant::now();
    let landed = loop {
        let refs = fx.git(
            &b,
            &["for-each-ref", "--format=%(refname)", "refs/a3s-iso/"],
        );
        if refs.contains("/fetching/") {
            break true;
        }
        if started.elapsed() > Duration::from_secs(20) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(landed, "the fetch never landed its ref");
    let gc = fx.json_in(&b, &["gc", "--all"]);
    let (code, doc) = json_of(fetch.wait_with_output().unwrap());
    assert_eq!(
        code, 0,
        "a fetch in progress failed because gc --all removed its landing ref: fetch {doc}, gc {}",
        gc.1
    );
    assert_eq!(doc["fetched"].as_array().map(Vec::len), Some(1), "{doc}");
}
