//! Attacks on `land` and digest prefixes: each test checks the bytes on disk (the checkout,
//! its index and HEAD, the isolations, the journal) after an attempt to make a session land
//! twice, land partly or land over the user's own work.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::fixture::{
    Fixture, checkout_listing, differences, error_code, head, outcome_of, pairs, promoted,
    read_path, require_tool, source_state, spawn_json, subjects_since, wait_for, wait_json,
};
use crate::land_queue::{outcomes, session_adding_its_file};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Session `id` makes two commits of its own (`<id>-1.txt`, `<id>-2.txt`) and leaves
/// `<id>-wip.txt` uncommitted.
fn session_with_commits(fx: &Fixture, id: &str) {
    fx.bind(id);
    let iso = fx.isolation(id);
    for n in 1..=2 {
        std::fs::write(iso.join(format!("{id}-{n}.txt")), format!("{id} {n}\n")).unwrap();
        fx.git(&iso, &["add", "-A"]);
        fx.git(&iso, &["commit", "-q", "-m", &format!("{id} commit {n}")]);
    }
    std::fs::write(iso.join(format!("{id}-wip.txt")), format!("{id} wip\n")).unwrap();
}

/// Files of the checkout (outside `.git`) that hold a conflict marker.
fn files_with_markers(dir: &Path) -> Vec<String> {
    checkout_listing(dir)
        .into_iter()
        .filter(|(rel, kind)| !rel.starts_with(".git") && kind.starts_with("file"))
        .filter(|(rel, _)| {
            std::fs::read(dir.join(rel))
                .map(|b| {
                    let text = String::from_utf8_lossy(&b);
                    text.contains("<<<<<<<") || text.contains(">>>>>>>")
                })
                .unwrap_or(false)
        })
        .map(|(rel, _)| rel)
        .collect()
}

/// A session's record as `show --json` gives it.
fn show(fx: &Fixture, id: &str) -> Value {
    let (code, doc) = fx.json(&["show", "-s", id]);
    assert_eq!(code, 0, "{doc}");
    doc
}

// ---------------------------------------------------------------------------------------------
// 1. land
// ---------------------------------------------------------------------------------------------

/// `land --mode branch` of sessions that made their own commits, the user's WIP beside them,
/// killed (SIGKILL to its process group) at the branch promote's fault points and at random
/// moments: after the next command the checkout is never half landed, every commit of every
/// session lands at most once, no stash or cherry-pick is left, and the WIP is byte for byte
/// as it was, uncommitted.
#[cfg(feature = "fault-injection")]
/// The subjects landing `ids` writes, sorted: each session's two commits and its WIP's.
fn expected_subjects(ids: &[&str]) -> Vec<String> {
    let mut all = Vec::new();
    for id in ids {
        all.push(format!("{id} commit 1"));
        all.push(format!("{id} commit 2"));
        all.push(format!("a3s-iso: uncommitted changes of session {id}"));
    }
    all.sort();
    all
}

/// `land ARGS` killed at a fault point, else at a random time; whether it was killed.
fn land_killed(
    fx: &Fixture,
    args: &[&str],
    fault: Option<&str>,
    rng: &mut crate::promote_crash::Rng,
) -> bool {
    match fault {
        Some(point) => {
            let status = fx
                .cmd()
                .args(args)
                .env("A3S_ISO_TEST_FAULT", point)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .unwrap();
            std::os::unix::process::ExitStatusExt::signal(&status) == Some(9)
        }
        None => {
            let delay = Duration::from_millis(50 + rng.below(700));
            crate::promote_crash::kill_after(fx, args, delay)
        }
    }
}

/// After attempt `attempt`: no commit landed twice, and only the user's WIP is uncommitted,
/// byte for byte.
fn nothing_twice_and_the_wip_kept(
    fx: &Fixture,
    base: &str,
    wip: &[(&str, &str)],
    (round, attempt, fault): (usize, usize, Option<&str>),
) {
    let (code, list) = fx.json(&["list"]);
    assert_eq!(code, 0, "round {round}/{attempt}: {list}");
    let mut subjects = subjects_since(fx, base);
    subjects.sort();
    let mut deduped = subjects.clone();
    deduped.dedup();
    assert_eq!(
        subjects, deduped,
        "round {round}/{attempt} ({fault:?}): a commit landed twice"
    );
    for &(rel, text) in wip {
        assert_eq!(
            read_path(fx.src.join(rel)),
            text,
            "round {round}/{attempt} ({fault:?}): the user's {rel}"
        );
    }
    assert!(!fx.src.join(".git/CHERRY_PICK_HEAD").exists());
    assert_eq!(
        fx.git(&fx.src, &["status", "--porcelain"]),
        " M README.md\n?? mine.txt",
        "round {round}/{attempt} ({fault:?}): only the user's WIP is uncommitted"
    );
    assert_eq!(fx.git(&fx.src, &["stash", "list"]), "");
}

/// Landed to the end: each commit exactly once, the WIP never committed.
fn each_commit_landed_once(fx: &Fixture, base: &str, ids: &[&str], round: usize) {
    let (code, done) = fx.json(&["land", "--all", "--mode", "branch"]);
    assert_eq!(code, 0, "round {round}: {done}");
    let mut subjects = subjects_since(fx, base);
    subjects.sort();
    assert_eq!(
        subjects,
        expected_subjects(ids),
        "round {round}: each exactly once"
    );
    for id in ids {
        for n in 1..=2 {
            assert_eq!(
                read_path(fx.src.join(format!("{id}-{n}.txt"))),
                format!("{id} {n}\n")
            );
        }
    }
    // The WIP is never committed.
    let committed = fx.git(&fx.src, &["show", "HEAD:README.md"]);
    assert_eq!(committed, "hello");
    assert_eq!(
        fx.git(&fx.src, &["ls-tree", "--name-only", "HEAD", "mine.txt"]),
        ""
    );
}

#[test]
fn attack_land_branch_mode_killed_lands_every_commit_once_and_keeps_the_wip() {
    let mut rng = crate::promote_crash::Rng::seeded("attack_land branch kills");
    let ids = ["b0", "b1", "b2"];
    let wip = [
        ("README.md", "the user's README, not committed\n"),
        ("mine.txt", "the user's untracked notes\n"),
    ];
    let faults = [
        Some("promote-branch-after-intent"),
        Some("promote-branch-after-restore"),
        None,
        None,
    ];
    for (round, fault) in faults.iter().enumerate() {
        let fx = Fixture::new();
        for id in ids {
            session_with_commits(&fx, id);
        }
        // HEAD moves, so each session is rebased first, then replayed.
        fx.write("user.txt", "the user's commit\n");
        let base = fx.commit_all("the user's commit");
        for (rel, text) in wip {
            fx.write(rel, text);
        }
        let mut first = true;
        for attempt in 0..6 {
            let queued = fx.src.join(".git/a3s-iso/land.json").exists();
            let args: Vec<&str> = if first || !queued {
                vec!["land", "--all", "--mode", "branch"]
            } else {
                vec!["land"]
            };
            first = false;
            let killed = land_killed(&fx, &args, *fault, &mut rng);
            nothing_twice_and_the_wip_kept(&fx, &base, &wip, (round, attempt, *fault));
            if !killed {
                break;
            }
        }
        each_commit_landed_once(&fx, &base, &ids, round);
    }
}

/// Two `land` processes started together on the same queue: each session lands exactly once
/// (whichever process lands it), the other process reports it `idempotent`/`empty` or, when it
/// met the lease of the other's rebase or test, `session_busy`.
#[test]
fn attack_land_two_concurrent_lands_of_one_queue_land_each_session_once() {
    for round in 0..3 {
        let fx = Fixture::new();
        let ids = ["c0", "c1", "c2"];
        for id in ids {
            session_adding_its_file(&fx, id);
        }
        std::fs::write(fx.isolation("c1").join("README.md"), "c1's README\n").unwrap();
        fx.write("user.txt", "moved\n");
        let base = fx.commit_all("the user's commit");
        let args = ["land", "-s", "c0", "-s", "c1", "-s", "c2"];
        let one = spawn_json(&fx, &args);
        let two = spawn_json(&fx, &args);
        let (code_one, doc_one) = wait_json(one);
        let (code_two, doc_two) = wait_json(two);
        for (code, doc) in [(code_one, &doc_one), (code_two, &doc_two)] {
            assert!(code == 0 || code == 1, "round {round}: {doc}");
            for session in doc["sessions"].as_array().unwrap() {
                if session["outcome"] == "failed" {
                    assert_eq!(
                        session["error"]["code"], "session_busy",
                        "round {round}: {doc}"
                    );
                }
            }
        }
        let subjects = subjects_since(&fx, &base);
        for id in ids {
            let named = format!("a3s-iso: the work of session {id}");
            let times = subjects.iter().filter(|s| **s == named).count();
            assert!(times <= 1, "round {round}: {id} landed {times} times");
        }
        // Whatever a busy lease stopped lands now, once.
        let (code, rest) = fx.json(&["land", "--all"]);
        assert_eq!(code, 0, "round {round}: {rest}");
        let mut subjects = subjects_since(&fx, &base);
        subjects.sort();
        let expected: Vec<String> = ids
            .iter()
            .map(|id| format!("a3s-iso: the work of session {id}"))
            .collect();
        assert_eq!(subjects, expected, "round {round}: {doc_one}\n{doc_two}");
        assert_eq!(read_path(fx.src.join("README.md")), "c1's README\n");
        assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), "");
        assert_eq!(fx.git(&fx.src, &["stash", "list"]), "");
    }
}

/// `land --all` while a `run` holds session `b`'s lease, half way through its command (it has
/// written `one.txt` and waits before `two.txt`). A rebase, a discard or a second run of `b`
/// is `session_busy`; land must not take half a run either: `b` must be reported
/// `session_busy` and nothing of it may land, while `a` lands.
///
/// What happens: when HEAD has not moved before `b`'s turn (no rebase, so no lease is taken),
/// land captures the isolation mid-run and commits `one.txt` alone as "the work of session
/// b"; the next `land --all` lands `two.txt` as a second "work of session b" commit.
#[test]
fn attack_land_all_takes_half_of_a_run_that_holds_the_lease() {
    let fx = Fixture::new();
    // `b` first: its turn comes before HEAD moves.
    fx.bind("b");
    session_adding_its_file(&fx, "a");
    let base = head(&fx);
    let iso = fx.isolation("b");
    let mut run = fx
        .cmd()
        .args([
            "run",
            "-s",
            "b",
            "--no-sandbox",
            "--",
            "sh",
            "-c",
            "echo one > one.txt; while [ ! -e go ]; do sleep 0.05; done; echo two > two.txt",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&iso.join("one.txt"), Duration::from_secs(10));
    let (code, doc) = fx.json(&["land", "--all", "--keep-going"]);
    std::fs::write(iso.join("go"), "").unwrap();
    assert!(run.wait().unwrap().success());
    let landed_one = fx.src.join("one.txt").exists();
    let b = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == "b")
        .unwrap()
        .clone();
    assert!(
        !landed_one,
        "half of b's run landed while the run held b's lease (exit {code}): {doc}\ncommits: {:?}",
        subjects_since(&fx, &base)
    );
    assert_eq!(b["outcome"], "failed", "{doc}");
    assert_eq!(b["error"]["code"], "session_busy", "{doc}");
    assert!(fx.src.join("a.txt").exists(), "{doc}");
}

/// A session whose isolation was removed by hand: `land --all --keep-going` reports it
/// `failed` with `isolation_missing` and lands the others, each once; the missing session's
/// work is not invented.
#[test]
fn attack_land_keep_going_passes_over_a_hand_removed_isolation() {
    let fx = Fixture::new();
    for id in ["m0", "m1", "m2"] {
        session_adding_its_file(&fx, id);
    }
    std::fs::remove_dir_all(fx.isolation("m1")).unwrap();
    let base = head(&fx);
    let (code, doc) = fx.json(&["land", "--all", "--keep-going"]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(
        outcomes(&doc),
        pairs(&[("m0", "landed"), ("m1", "failed"), ("m2", "landed")]),
        "{doc}"
    );
    assert_eq!(doc["sessions"][1]["error"]["code"], "isolation_missing");
    assert_eq!(
        subjects_since(&fx, &base),
        [
            "a3s-iso: the work of session m0",
            "a3s-iso: the work of session m2"
        ]
    );
    assert!(!fx.src.join("m1.txt").exists());
    assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), "");
    // Continuing the queue keeps the missing session failed and lands nothing twice.
    let (code, again) = fx.json(&["land", "--all", "--keep-going"]);
    assert_eq!(code, 1, "{again}");
    assert_eq!(subjects_since(&fx, &base).len(), 2);
}

/// The user's own uncommitted work at paths no session touches (an unstaged edit, a staged
/// edit, an untracked file): after `land` in squash and in branch mode it is byte for byte as
/// before, staged where it was staged, and in no commit.
#[test]
fn attack_land_keeps_the_users_own_wip_byte_for_byte_and_uncommitted() {
    for mode in ["squash", "branch"] {
        let fx = Fixture::new();
        session_adding_its_file(&fx, "w0");
        session_with_commits(&fx, "w1");
        fx.write("README.md", "the user's unstaged edit\n");
        fx.write("src/lib.txt", "the user's staged edit\n");
        fx.git(&fx.src, &["add", "src/lib.txt"]);
        fx.write("notes/mine.txt", "the user's untracked file\n");
        let staged_before = fx.git(&fx.src, &["diff", "--cached"]);
        let unstaged_before = fx.git(&fx.src, &["diff"]);
        let base = head(&fx);
        let (code, doc) = fx.json(&["land", "--all", "--mode", mode]);
        assert_eq!(code, 0, "{mode}: {doc}");
        assert_eq!(
            read_path(fx.src.join("README.md")),
            "the user's unstaged edit\n"
        );
        assert_eq!(
            read_path(fx.src.join("src/lib.txt")),
            "the user's staged edit\n"
        );
        assert_eq!(
            read_path(fx.src.join("notes/mine.txt")),
            "the user's untracked file\n"
        );
        assert_eq!(
            fx.git(&fx.src, &["diff", "--cached"]),
            staged_before,
            "{mode}"
        );
        assert_eq!(fx.git(&fx.src, &["diff"]), unstaged_before, "{mode}");
        let touched = fx.git(&fx.src, &["diff", "--name-only", &format!("{base}..HEAD")]);
        for path in ["README.md", "src/lib.txt", "notes/mine.txt"] {
            assert!(
                !touched.lines().any(|l| l == path),
                "{mode}: the user's {path} was committed"
            );
        }
        assert_eq!(fx.git(&fx.src, &["stash", "list"]), "", "{mode}");
    }
}

/// The user's own uncommitted work at a path a session also changes. Plain `promote` refuses
/// such a change set (`patch_does_not_apply`, nothing applied), and branch mode promises never
/// to merge with conflict markers and to leave no unmerged entries.
///
/// What happens with `land` (squash, the default): the session's commit lands, the restore of
/// the user's stash fails, and the checkout is left half restored: `README.md` holds conflict
/// markers mixing the session's line with the user's, and the user's staged edit of
/// `src/lib.txt` is no longer staged.
#[test]
fn attack_land_leaves_conflict_markers_in_the_users_wip() {
    let fx = Fixture::new();
    fx.bind("a");
    std::fs::write(fx.isolation("a").join("README.md"), "from a\n").unwrap();
    fx.write("README.md", "the user's unstaged edit\n");
    fx.write("src/lib.txt", "the user's staged edit\n");
    fx.git(&fx.src, &["add", "src/lib.txt"]);
    let staged_before = fx.git(&fx.src, &["diff", "--cached", "--name-only"]);
    let before = source_state(&fx);
    let (code, doc) = fx.json(&["land", "-s", "a"]);
    let markers = files_with_markers(&fx.src);
    assert!(
        markers.is_empty(),
        "land (exit {code}) left conflict markers in {markers:?}: README.md is now {:?}; {doc}",
        read_path(fx.src.join("README.md"))
    );
    let refused = code == 3 && source_state(&fx) == before;
    let kept = read_path(fx.src.join("README.md")) == "the user's unstaged edit\n"
        && fx.git(&fx.src, &["diff", "--cached", "--name-only"]) == staged_before;
    assert!(
        refused || kept,
        "the user's WIP is neither untouched nor restored: {:?}\n{doc}",
        differences(&source_state(&fx), &before)
    );
}

/// The user's own file that the repository ignores (`.env`, never committed, not shown by
/// `git status`) and a session that stops ignoring it and writes its own `.env`. Plain
/// `promote` refuses (`.env: already exists in working directory`).
///
/// What happens with `land` (squash): the squashed commit is cherry-picked over the ignored
/// file, which no stash holds: the user's `.env` is replaced by the session's, with no
/// warning, and the user's bytes are gone.
#[test]
fn attack_land_squash_overwrites_the_users_ignored_file() {
    let fx = Fixture::new();
    fx.write(".gitignore", ".env\n");
    fx.commit_all("ignore .env");
    fx.write(".env", "SECRET=the user's\n");
    fx.bind("a");
    let iso = fx.isolation("a");
    std::fs::write(iso.join(".gitignore"), "").unwrap();
    std::fs::write(iso.join(".env"), "SECRET=the agent's\n").unwrap();
    // Plain promote refuses to write over it.
    let (code, promoted) = fx.json(&["promote", "-s", "a"]);
    assert_eq!((code, outcome_of(&promoted)), (3, "conflict"), "{promoted}");
    assert_eq!(read_path(fx.src.join(".env")), "SECRET=the user's\n");
    let (code, doc) = fx.json(&["land", "-s", "a"]);
    assert_eq!(
        read_path(fx.src.join(".env")),
        "SECRET=the user's\n",
        "land (exit {code}) replaced the user's ignored .env: {doc}"
    );
}

/// Like the squash case, in branch mode, with a session that only force-adds `.env` in a commit
/// of its own (beside a code file): the commit is replayed as it is (over the user's ignored
/// `.env`), then the snapshot, which leaves ignored files out, makes a trailing commit that
/// deletes `.env`. The user's `.env` is gone from the disk, and no stash holds it.
#[test]
fn attack_land_branch_deletes_the_users_ignored_file() {
    let fx = Fixture::new();
    fx.write(".gitignore", ".env\n");
    fx.commit_all("ignore .env");
    fx.write(".env", "SECRET=the user's\n");
    fx.bind("a");
    let iso = fx.isolation("a");
    std::fs::write(iso.join(".env"), "SECRET=the agent's\n").unwrap();
    std::fs::write(iso.join("code.txt"), "code\n").unwrap();
    fx.git(&iso, &["add", "-f", ".env", "code.txt"]);
    fx.git(&iso, &["commit", "-q", "-m", "the agent's commit"]);
    let (code, doc) = fx.json(&["land", "-s", "a", "--mode", "branch"]);
    let env = std::fs::read_to_string(fx.src.join(".env"));
    assert_eq!(
        env.as_deref().ok(),
        Some("SECRET=the user's\n"),
        "land --mode branch (exit {code}) did this to the user's ignored .env: {env:?}; commits: {}; {doc}",
        fx.git(&fx.src, &["log", "--format=%s", "--name-status", "-3"])
    );
}

/// A source on a detached HEAD (moved since the sessions were bound): squash and branch need
/// a branch, so the answer is `detached_source` — and nothing may change before it.
///
/// What happens: land first rebases each session onto the detached HEAD (its isolation's HEAD
/// and its bound revision move), then refuses.
#[test]
fn attack_land_on_a_detached_head_changes_nothing() {
    let fx = Fixture::new();
    session_with_commits(&fx, "d");
    let bound = show(&fx, "d")["bound_revision"].clone();
    let iso_head = fx.git(&fx.isolation("d"), &["rev-parse", "HEAD"]);
    let iso_files = crate::fixture::content_listing(&fx.isolation("d"));
    fx.write("user.txt", "the user's\n");
    fx.commit_all("the user's commit");
    fx.git(&fx.src, &["checkout", "-q", "--detach"]);
    let before = source_state(&fx);
    for mode in ["squash", "branch"] {
        let (code, doc) = fx.json(&["land", "-s", "d", "--mode", mode]);
        assert_ne!(code, 0, "{mode}: {doc}");
        let said = doc.to_string();
        assert!(said.contains("detached_source"), "{mode}: {doc}");
        assert_eq!(source_state(&fx), before, "{mode}");
        assert_eq!(
            show(&fx, "d")["bound_revision"],
            bound,
            "{mode}: the session was rebased onto the detached HEAD before the refusal"
        );
        assert_eq!(
            fx.git(&fx.isolation("d"), &["rev-parse", "HEAD"]),
            iso_head,
            "{mode}: the isolation's HEAD moved"
        );
        let now = crate::fixture::content_listing(&fx.isolation("d"));
        assert_eq!(now.get("d-1.txt"), iso_files.get("d-1.txt"));
    }
}

/// Session ids with odd characters: the valid ones (dots, underscores, upper case, digits
/// only, 128 characters) land once each; invalid ones are `invalid_id` before anything is
/// recorded or changed.
#[test]
fn attack_land_odd_session_ids() {
    let fx = Fixture::new();
    let long = "q".repeat(128);
    let ids = ["a.b", "A", "a", "x_-y", "0", long.as_str()];
    for id in ids {
        session_adding_its_file(&fx, id);
    }
    let before = source_state(&fx);
    for bad in [
        "..", "a..b", ".x", "-x", "a/b", "a.", "a.lock", "", "é", "a b",
    ] {
        let (code, doc) = fx.json(&["land", "-s", "a", "-s", bad]);
        assert!(code == 5 || code == 2, "{bad:?}: exit {code}: {doc}");
        assert!(
            !fx.src.join(".git/a3s-iso/land.json").exists(),
            "{bad:?}: a queue was recorded"
        );
        assert_eq!(source_state(&fx), before, "{bad:?}");
    }
    let base = head(&fx);
    let mut args = vec!["land"];
    for id in ids {
        args.extend(["-s", id]);
    }
    // Named twice: landed once.
    args.extend(["-s", "a"]);
    let (code, doc) = fx.json(&args);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        doc["sessions"].as_array().unwrap().len(),
        ids.len(),
        "{doc}"
    );
    let subjects = subjects_since(&fx, &base);
    assert_eq!(subjects.len(), ids.len(), "{subjects:?}");
    for id in ids {
        assert_eq!(
            read_path(fx.src.join(format!("{id}.txt"))),
            format!("{id}\n")
        );
    }
}

/// A `--test` command that tries to write outside its isolation (the source, another
/// session's isolation, HOME) and to reach a server on the host's loopback: no write reaches
/// the host (inside, the source is a throwaway skeleton, HOME is read-only, other isolations
/// are not there) and the connection fails, so the test that needs them is `test_failed` with
/// nothing landed, and the test that shrugs them off lands the session's own work only (not
/// even what it wrote in the isolation).
#[test]
fn attack_land_test_cannot_write_outside_or_reach_the_network() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    session_adding_its_file(&fx, "t");
    session_adding_its_file(&fx, "other");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let other = fx.isolation("other");
    let escape = format!(
        "echo src > \"$A3S_ISO_SOURCE/escaped.txt\"; echo other > '{}/escaped.txt'; \
         echo home > \"$HOME/escaped.txt\"; git ls-remote http://127.0.0.1:{port}/x",
        other.display()
    );
    let before = source_state(&fx);
    let (code, doc) = fx.json(&["land", "-s", "t", "--test", &format!("set -e; {escape}")]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(outcomes(&doc), pairs(&[("t", "test_failed")]), "{doc}");
    assert_eq!(source_state(&fx), before);
    // Under `-e`, as CI runs a step: each failure it shrugs off says so (`|| true`).
    let careful = format!(
        "(echo src > \"$A3S_ISO_SOURCE/escaped.txt\") 2>/dev/null || true; \
         (echo other > '{}/escaped.txt') 2>/dev/null || true; \
         (echo home > \"$HOME/escaped.txt\") 2>/dev/null || true; \
         ! git ls-remote http://127.0.0.1:{port}/x 2>/dev/null && echo mine > from-test.txt",
        other.display()
    );
    let base = head(&fx);
    let (code, doc) = fx.json(&["land", "-s", "t", "--test", &careful]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(outcomes(&doc), pairs(&[("t", "landed")]), "{doc}");
    let changed = fx.git(&fx.src, &["diff", "--name-only", &format!("{base}..HEAD")]);
    // What the test wrote is reported, not landed.
    assert_eq!(changed, "t.txt");
    assert_eq!(
        doc["sessions"][0]["test_wrote"],
        serde_json::json!(["from-test.txt"])
    );
    for path in [
        fx.src.join("escaped.txt"),
        other.join("escaped.txt"),
        fx.home.join("escaped.txt"),
    ] {
        assert!(!path.exists(), "{}", path.display());
    }
    assert!(
        listener.accept().is_err(),
        "the test reached the host's loopback"
    );
}

// ---------------------------------------------------------------------------------------------
// 2. digest prefixes
// ---------------------------------------------------------------------------------------------

/// Every form a `--digest` may take, for `diff`, `promote --reapply`: upper-case hex (whole or
/// prefix), `sha256:` with a short prefix, 63 digits, non-hex, empty, `sha256:` alone, blanks;
/// and a prefix that matches only a planned (`--no-apply`) change set in the artifacts.
#[test]
fn attack_digest_prefix_forms() {
    let fx = Fixture::new();
    let digest = promoted(&fx);
    let hex = digest.trim_start_matches("sha256:").to_string();
    let upper = hex.to_ascii_uppercase();
    let landed = source_state(&fx);
    let named = |given: &str| -> (i32, Value) { fx.json(&["diff", "--digest", given, "--stat"]) };
    for good in [
        hex[..8].to_string(),
        upper[..8].to_string(),
        upper.clone(),
        format!("sha256:{}", &hex[..8]),
        format!("sha256:{upper}"),
        hex[..63].to_string(),
        format!("sha256:{}", &hex[..63]),
    ] {
        let (code, doc) = named(&good);
        assert_eq!(code, 0, "{good:?}: {doc}");
        assert_eq!(doc["digest"], digest.as_str(), "{good:?}");
    }
    for bad in [
        hex[..7].to_string(),
        format!("sha256:{}", &hex[..7]),
        format!("{}g", &hex[..8]),
        format!("{}z{}", &hex[..10], &hex[11..]),
        String::new(),
        "sha256:".to_string(),
        format!("SHA256:{}", &hex[..10]),
        format!(" {}", &hex[..10]),
        format!("{hex}0"),
        format!("sha256:sha256:{}", &hex[..10]),
        format!("{}*", &hex[..8]),
    ] {
        let (code, doc) = named(&bad);
        assert_eq!((code, error_code(&doc)), (2, "usage"), "{bad:?}: {doc}");
        let (code, doc) = fx.json(&["promote", "--reapply", "--digest", &bad]);
        assert_eq!((code, error_code(&doc)), (2, "usage"), "{bad:?}: {doc}");
    }
    assert_eq!(source_state(&fx), landed);
    // A change set only planned (--no-apply): diff shows it by prefix; reapply refuses it (it
    // never landed), nothing applied.
    std::fs::write(fx.isolation("s").join("planned.txt"), "planned\n").unwrap();
    let (code, plan) = fx.json(&["promote", "-s", "s", "--no-apply"]);
    assert_eq!((code, outcome_of(&plan)), (0, "planned"), "{plan}");
    let planned = plan["digest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:")
        .to_string();
    let (code, doc) = named(&planned[..8].to_ascii_uppercase());
    assert_eq!(code, 0, "{doc}");
    let before = source_state(&fx);
    let (code, doc) = fx.json(&["promote", "--reapply", "--digest", &planned[..8]]);
    assert_eq!((code, error_code(&doc)), (5, "invalid_input"), "{doc}");
    assert_eq!(source_state(&fx), before);
}

/// `push --delete` with a prefix two change sets on the remote share: `digest_ambiguous`
/// (exit 5) with both candidates, and nothing is deleted, also when another `--digest` of the
/// same call is unique; one more digit deletes only the one it names.
#[test]
fn attack_push_delete_with_an_ambiguous_prefix_deletes_nothing() {
    let fx = Fixture::new();
    let remote = fx.root.join("work/remote.git");
    fx.git(
        &fx.root.join("work"),
        &["init", "-q", "--bare", "remote.git"],
    );
    fx.git(
        &fx.src,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    let commit = head(&fx);
    let one = format!("abcdef01{}", "1".repeat(56));
    let two = format!("abcdef01{}", "2".repeat(56));
    let three = format!("99999999{}", "3".repeat(56));
    let mut push = vec!["push".to_string(), "-q".into(), "origin".into()];
    for hex in [&one, &two, &three] {
        push.push(format!("{commit}:refs/a3s-iso/changes/{hex}"));
    }
    let push: Vec<&str> = push.iter().map(String::as_str).collect();
    fx.git(&fx.src, &push);
    let listed = || fx.git(&remote, &["for-each-ref", "--format=%(refname)"]);
    let before = listed();
    for args in [
        vec!["push", "--delete", "--digest", "abcdef01", "origin"],
        vec!["push", "--delete", "--digest", "ABCDEF01", "origin"],
        vec![
            "push",
            "--delete",
            "--digest",
            "99999999",
            "--digest",
            "sha256:abcdef01",
            "origin",
        ],
    ] {
        let (code, doc) = fx.json(&args);
        assert_eq!(
            (code, error_code(&doc)),
            (5, "digest_ambiguous"),
            "{args:?}: {doc}"
        );
        assert_eq!(
            doc["error"]["candidates"].as_array().map(Vec::len),
            Some(2),
            "{doc}"
        );
        assert_eq!(listed(), before, "{args:?}");
    }
    let (code, doc) = fx.json(&["push", "--delete", "--digest", "abcdef012", "origin"]);
    assert_eq!(code, 0, "{doc}");
    let after = listed();
    assert!(
        !after.contains(&two) && after.contains(&one) && after.contains(&three),
        "{after}"
    );
}

/// `land` promises each session is "rebased onto your moving HEAD, tested in its sandbox on
/// the rebased tree and promoted". Another `land` (here of session `b`) lands while `a`'s
/// test runs: `a`'s test passed on a tree without `b.txt`, yet `a` is then committed on top of
/// `b`'s landing, a combination no test ever saw. Landing `a` must either rebase and test it
/// again on the HEAD it lands on, or not land it.
#[test]
fn attack_land_lands_a_tree_its_test_never_saw_when_head_moves_during_the_test() {
    let fx = Fixture::new();
    session_adding_its_file(&fx, "a");
    session_adding_its_file(&fx, "b");
    let iso = fx.isolation("a");
    let test = "touch started; while [ ! -e go ]; do sleep 0.05; done; rm -f started go; \
                git ls-files --others --cached --exclude-standard | sort";
    let first = spawn_json(&fx, &["land", "-s", "a", "--no-sandbox", "--test", test]);
    wait_for(&iso.join("started"), Duration::from_secs(20));
    let (code, b) = fx.json(&["land", "-s", "b"]);
    assert_eq!(code, 0, "{b}");
    std::fs::write(iso.join("go"), "").unwrap();
    let (code, a) = wait_json(first);
    let seen = a["sessions"][0]["test_output"]
        .as_str()
        .map(read_path)
        .unwrap_or_default();
    let landed = fx.git(&fx.src, &["ls-tree", "-r", "--name-only", "HEAD"]);
    if a["sessions"][0]["outcome"] == "landed" {
        assert_eq!(
            landed.trim(),
            seen.trim(),
            "exit {code}: a landed on a tree its test did not see; the test saw:\n{seen}\n{a}"
        );
    }
}

/// While `land --all --mode branch` lands sessions with commits of their own, you go on
/// working in your checkout: appending to a file and staging another, over and over. The
/// sessions' commits land as a fast-forward (made as a cherry-pick would make them), so
/// nothing of yours is stashed: no stash is left, no line you wrote moves out of your file,
/// and each commit lands once. A land your own git's index lock refused is run again.
#[test]
fn attack_land_branch_mode_while_you_edit_and_stage_stashes_nothing_of_yours() {
    let ids = ["e0", "e1", "e2"];
    let fx = Fixture::new();
    for id in ids {
        session_with_commits(&fx, id);
    }
    let base = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    fx.write("staged.txt", "0\n");
    fx.write("edited.txt", "0\n");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let user = {
        let (stop, src, home) = (stop.clone(), fx.src.clone(), fx.home.clone());
        std::thread::spawn(move || {
            let mut lines = 0usize;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                lines += 1;
                for rel in ["staged.txt", "edited.txt"] {
                    let mut file = std::fs::OpenOptions::new()
                        .append(true)
                        .open(src.join(rel))
                        .unwrap();
                    std::io::Write::write_all(&mut file, format!("{lines}\n").as_bytes()).unwrap();
                }
                let mut add = std::process::Command::new("git");
                add.current_dir(&src).args(["add", "staged.txt"]);
                crate::fixture::isolate(&mut add, &home);
                let _ = add.stderr(Stdio::null()).status();
            }
            lines
        })
    };
    let mut landed = None;
    for _ in 0..8 {
        let (code, doc) = fx.json(&["land", "--all", "--mode", "branch", "--test", "true"]);
        assert_eq!(fx.git(&fx.src, &["stash", "list"]), "", "{doc}");
        if code == 0 {
            landed = Some(doc);
            break;
        }
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let lines = user.join().unwrap();
    assert!(landed.is_some(), "the queue never finished");
    let all: String = (0..=lines).map(|n| format!("{n}\n")).collect();
    for rel in ["staged.txt", "edited.txt"] {
        assert_eq!(
            read_path(fx.src.join(rel)),
            all,
            "every line of {rel} is in it"
        );
    }
    let mut subjects = subjects_since(&fx, &base);
    subjects.sort();
    assert_eq!(
        subjects,
        expected_subjects(&ids),
        "each commit exactly once"
    );
    assert_eq!(
        fx.git(&fx.src, &["ls-tree", "--name-only", "HEAD", "edited.txt"]),
        ""
    );
}
