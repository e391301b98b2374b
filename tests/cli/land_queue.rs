//! `land`: a queue of sessions, each rebased onto the moving HEAD, tested in its sandbox and
//! promoted (one commit each by default), exactly once; a session that conflicts or fails its
//! test stops the queue (or is reported and passed over with `--keep-going`), and a killed
//! `land` continues where it stopped.

use std::time::Duration;

use serde_json::Value;

use crate::fixture::{Fixture, require_tool, subjects_since};

/// Session `id` adds `<id>.txt`.
pub(crate) fn session_adding_its_file(fx: &Fixture, id: &str) {
    fx.bind(id);
    std::fs::write(
        fx.isolation(id).join(format!("{id}.txt")),
        format!("{id}\n"),
    )
    .unwrap();
}

pub(crate) fn outcomes(doc: &Value) -> Vec<(String, String)> {
    doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["session_id"].as_str().unwrap().to_string(),
                s["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn queue_file(fx: &Fixture) -> std::path::PathBuf {
    fx.src.join(".git/a3s-iso/land.json")
}

#[test]
fn land_all_lands_every_session_once_in_bind_order_as_one_commit_each() {
    let fx = Fixture::new();
    for id in ["first", "second", "third"] {
        session_adding_its_file(&fx, id);
    }
    // An agent's own commit is squashed with its uncommitted work.
    let iso = fx.isolation("second");
    std::fs::write(iso.join("second-more.txt"), "more\n").unwrap();
    fx.git(&iso, &["add", "second-more.txt"]);
    fx.git(&iso, &["commit", "-q", "-m", "second commits"]);
    let base = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let (code, doc) = fx.json(&["land", "--all"]);
    assert_eq!(code, 0, "{doc}");
    let landed: Vec<(String, String)> = ["first", "second", "third"]
        .iter()
        .map(|id| (id.to_string(), "landed".to_string()))
        .collect();
    assert_eq!(outcomes(&doc), landed, "{doc}");
    assert_eq!(
        subjects_since(&fx, &base),
        [
            "a3s-iso: the work of session first",
            "a3s-iso: the work of session second",
            "a3s-iso: the work of session third"
        ]
    );
    let body = fx.git(&fx.src, &["log", "-1", "--format=%b", "HEAD~1"]);
    assert_eq!(body, "- second commits");
    let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    assert_eq!(doc["sessions"][2]["commit"], head.as_str());
    for id in ["first", "second", "third"] {
        assert_eq!(
            std::fs::read_to_string(fx.src.join(format!("{id}.txt"))).unwrap(),
            format!("{id}\n")
        );
    }
    assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), "");
    assert!(!queue_file(&fx).exists());
    // Again: nothing lands twice (a session rebased onto its own landing has nothing new).
    let (code, again) = fx.json(&["land", "--all"]);
    assert_eq!(code, 0, "{again}");
    assert!(
        outcomes(&again)
            .iter()
            .all(|(_, o)| o == "idempotent" || o == "empty"),
        "{again}"
    );
    assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD"]), head);
}

/// Ten sessions after the user's own commit; one fails its test, one conflicts with the user's
/// commit: with `--keep-going` the other eight land in order, exactly once each.
#[test]
fn keep_going_lands_the_other_eight_and_says_which_did_not_and_why() {
    let fx = Fixture::new();
    let ids: Vec<String> = (0..10).map(|n| format!("s{n}")).collect();
    for id in &ids {
        session_adding_its_file(&fx, id);
    }
    std::fs::write(fx.isolation("s3").join("fail-me"), "\n").unwrap();
    std::fs::write(fx.isolation("s6").join("README.md"), "s6's README\n").unwrap();
    fx.write("README.md", "the user's README\n");
    let base = fx.commit_all("the user's own commit");
    let args = [
        "land",
        "--all",
        "--keep-going",
        "--no-sandbox",
        "--test",
        "test ! -e fail-me",
    ];
    let (code, doc) = fx.json(&args);
    assert_eq!(code, 3, "{doc}");
    let expected: Vec<(String, String)> = ids
        .iter()
        .map(|id| {
            let outcome = match id.as_str() {
                "s3" => "test_failed",
                "s6" => "conflict",
                _ => "landed",
            };
            (id.clone(), outcome.to_string())
        })
        .collect();
    assert_eq!(outcomes(&doc), expected, "{doc}");
    assert_eq!(doc["sessions"][3]["test_exit_code"], 1, "{doc}");
    assert_eq!(doc["sessions"][6]["reason"], "rebase_conflicted", "{doc}");
    assert_eq!(
        doc["sessions"][6]["conflicting_paths"],
        serde_json::json!(["README.md"])
    );
    assert_eq!(doc["sessions"][0]["test_exit_code"], 0, "{doc}");
    let landed: Vec<String> = ids
        .iter()
        .filter(|id| !["s3", "s6"].contains(&id.as_str()))
        .map(|id| format!("a3s-iso: the work of session {id}"))
        .collect();
    assert_eq!(subjects_since(&fx, &base), landed);
    assert!(!fx.src.join("s3.txt").exists() && !fx.src.join("fail-me").exists());
    assert_eq!(
        std::fs::read_to_string(fx.src.join("README.md")).unwrap(),
        "the user's README\n"
    );
    assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), "");
    // Everything was tried: no queue is left to continue.
    assert!(!queue_file(&fx).exists());
}

/// Without `--keep-going` the queue stops at the failing session, the rest untouched; once it
/// is fixed, `land` with no session continues the recorded queue.
#[test]
fn a_stopped_queue_continues_where_it_stopped() {
    let fx = Fixture::new();
    for id in ["a", "b", "c"] {
        session_adding_its_file(&fx, id);
    }
    std::fs::write(fx.isolation("b").join("fail-me"), "\n").unwrap();
    let base = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let args = [
        "land",
        "-s",
        "a",
        "-s",
        "b",
        "-s",
        "c",
        "--no-sandbox",
        "--test",
        "test ! -e fail-me",
    ];
    let (code, doc) = fx.json(&args);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(
        outcomes(&doc),
        [("a", "landed"), ("b", "test_failed"), ("c", "not_reached")]
            .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    assert_eq!(doc["stopped_at"], "b");
    let output = doc["sessions"][1]["test_output"].as_str().unwrap();
    assert!(std::path::Path::new(output).is_file(), "{doc}");
    assert!(queue_file(&fx).exists());
    std::fs::remove_file(fx.isolation("b").join("fail-me")).unwrap();
    let (code, resumed) = fx.json(&["land"]);
    assert_eq!(code, 0, "{resumed}");
    assert_eq!(resumed["resumed"], true);
    assert_eq!(
        outcomes(&resumed),
        [("a", "landed"), ("b", "landed"), ("c", "landed")]
            .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    assert_eq!(subjects_since(&fx, &base).len(), 3);
    assert!(!queue_file(&fx).exists());
    let (code, nothing) = fx.json(&["land"]);
    assert_eq!((code, crate::fixture::error_code(&nothing)), (2, "usage"));
    // The tests' output goes with the session's other records.
    let (code, purged) = fx.json(&["discard", "-s", "b", "--purge"]);
    assert_eq!(code, 0, "{purged}");
    assert!(!std::path::Path::new(output).exists(), "{purged}");
    assert!(!fx.src.join(".git/a3s-iso/land-tests/b").exists());
}

/// The test runs in the session's sandbox on the rebased tree; its output is kept; patch mode
/// lands one session only; `--message` names the commit.
#[test]
fn the_test_runs_sandboxed_and_modes_and_messages_are_kept() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    session_adding_its_file(&fx, "x");
    session_adding_its_file(&fx, "y");
    fx.write("moved.txt", "HEAD moved\n");
    fx.commit_all("move HEAD");
    let test = "cat moved.txt x.txt && ! touch \"$HOME/escape\" 2>/dev/null";
    let (code, doc) = fx.json(&["land", "-s", "x", "--test", test, "-m", "Add x"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["sessions"][0]["test_exit_code"], 0, "{doc}");
    let output = doc["sessions"][0]["test_output"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(output).unwrap(),
        "HEAD moved\nx\n",
        "the rebased tree, seen from the sandbox"
    );
    assert_eq!(fx.git(&fx.src, &["log", "-1", "--format=%s"]), "Add x");
    let (code, refused) = fx.json(&["land", "-s", "x", "-s", "y", "--mode", "patch"]);
    assert_eq!((code, crate::fixture::error_code(&refused)), (2, "usage"));
    let (code, patch) = fx.json(&["land", "-s", "y", "--mode", "patch"]);
    assert_eq!(code, 0, "{patch}");
    assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), "?? y.txt");
}

fn land_rounds() -> usize {
    crate::fixture::repetitions("A3S_ISO_LAND_CRASH_KILLS", 50)
}

/// `land` of five sessions (HEAD moved first, so each is rebased) SIGKILLed with its process
/// group at random points, again and again until it finishes: never a session landed twice,
/// never a mixed checkout, and the queue completes. `A3S_ISO_LAND_CRASH_KILLS` sets the number
/// of kills (default 50), `A3S_ISO_CRASH_SEED` replays a run.
#[test]
fn land_killed_at_random_points_lands_each_session_exactly_once() {
    let mut rng = crate::promote_crash::Rng::seeded("land");
    let ids = ["k0", "k1", "k2", "k3", "k4"];
    let mut kills = 0;
    let mut round = 0;
    while kills < land_rounds() {
        let fx = Fixture::new();
        for id in ids {
            session_adding_its_file(&fx, id);
        }
        std::fs::write(fx.isolation("k2").join("README.md"), "k2 edits\n").unwrap();
        fx.write("user.txt", "the user's\n");
        let base = fx.commit_all("the user's commit");
        let mut first = true;
        loop {
            let args: Vec<&str> = match (first, queue_file(&fx).exists()) {
                (true, _) | (false, false) => vec!["land", "--all"],
                (false, true) => vec!["land"],
            };
            first = false;
            let delay = Duration::from_millis(rng.below(600));
            if !crate::promote_crash::kill_after(&fx, &args, delay) {
                break;
            }
            kills += 1;
            if rng.below(2) == 0 {
                let (code, list) = fx.json(&["list"]);
                assert_eq!(code, 0, "round {round}: {list}");
            }
            let subjects = subjects_since(&fx, &base);
            for id in ids {
                let named = format!("a3s-iso: the work of session {id}");
                let times = subjects.iter().filter(|s| **s == named).count();
                assert!(
                    times <= 1,
                    "round {round}: {id} landed {times} times: {subjects:?}"
                );
            }
        }
        let (code, done) = fx.json(&["land", "--all"]);
        assert_eq!(code, 0, "round {round}: {done}");
        let mut subjects = subjects_since(&fx, &base);
        subjects.sort();
        let expected: Vec<String> = ids
            .iter()
            .map(|id| format!("a3s-iso: the work of session {id}"))
            .collect();
        assert_eq!(subjects, expected, "round {round}: each exactly once");
        assert_eq!(
            fx.git(&fx.src, &["status", "--porcelain"]),
            "",
            "round {round}"
        );
        assert_eq!(fx.git(&fx.src, &["stash", "list"]), "", "round {round}");
        for id in ids {
            assert_eq!(
                std::fs::read_to_string(fx.src.join(format!("{id}.txt"))).unwrap(),
                format!("{id}\n")
            );
        }
        assert_eq!(
            std::fs::read_to_string(fx.src.join("README.md")).unwrap(),
            "k2 edits\n"
        );
        round += 1;
    }
    eprintln!("land: {kills} kills over {round} queues");
}

/// A branch of the user's named `a3s-iso` leaves no room for `a3s-iso/<id>`, the branch that
/// keeps a session's commits: the session lands all the same, with a warning, and nothing else
/// of the user's changes.
#[test]
fn a_branch_of_yours_named_a3s_iso_costs_the_kept_branch_not_the_landing() {
    let fx = Fixture::new();
    fx.git(&fx.src, &["branch", "a3s-iso"]);
    session_adding_its_file(&fx, "a");
    let (code, doc) = fx.json(&["land", "-s", "a"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(outcomes(&doc), [("a".to_string(), "landed".to_string())]);
    assert!(
        doc["sessions"][0]["warnings"][0]
            .as_str()
            .is_some_and(|w| w.contains("a3s-iso/a")),
        "{doc}"
    );
    assert_eq!(
        std::fs::read_to_string(fx.src.join("a.txt")).unwrap(),
        "a\n"
    );
    assert_eq!(
        fx.git(
            &fx.src,
            &["for-each-ref", "--format=%(refname)", "refs/heads/"]
        ),
        "refs/heads/a3s-iso\nrefs/heads/main"
    );
}

/// A file the agent committed with force although an ignore rule matches it is the session's
/// work: capture, promote and land take it (they left it out, and a squash of it was `empty`);
/// an ignored file it did not commit stays out.
#[test]
fn a_committed_ignored_file_is_the_sessions_work() {
    let fx = Fixture::new();
    fx.write(".gitignore", "*.generated\n");
    fx.commit_all("ignore generated files");
    fx.bind("g");
    let iso = fx.isolation("g");
    std::fs::write(iso.join("table.generated"), "a table\n").unwrap();
    std::fs::write(iso.join("scratch.generated"), "not committed\n").unwrap();
    fx.git(&iso, &["add", "-f", "table.generated"]);
    fx.git(&iso, &["commit", "-q", "-m", "add the generated table"]);
    let (code, diff) = fx.json(&["diff", "-s", "g", "--stat"]);
    assert_eq!(code, 0, "{diff}");
    let shown = diff.to_string();
    assert!(shown.contains("table.generated"), "{diff}");
    assert!(!shown.contains("scratch.generated"), "{diff}");
    let (code, doc) = fx.json(&["land", "-s", "g"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(outcomes(&doc), [("g".to_string(), "landed".to_string())]);
    assert_eq!(
        std::fs::read_to_string(fx.src.join("table.generated")).unwrap(),
        "a table\n"
    );
    assert!(!fx.src.join("scratch.generated").exists());
    assert_eq!(
        fx.git(&fx.src, &["ls-files", "table.generated"]),
        "table.generated"
    );
}

/// Sessions `broken` (whose tree lacks `marker`) and `ok` (whose tree holds it), landed in
/// that order (`ok` lands `marker`), for a test gate that reads `marker`.
fn marked_and_unmarked(fx: &Fixture) {
    session_adding_its_file(fx, "broken");
    session_adding_its_file(fx, "ok");
    std::fs::write(fx.isolation("ok").join("marker"), "marked\n").unwrap();
}

/// Lands both sessions with `--keep-going` under `test`, `path` as `PATH` when given.
fn land_both(fx: &Fixture, test: &str, sandbox: bool, path: Option<&std::path::Path>) -> Value {
    let mut args = vec!["--json", "land", "--all", "--keep-going", "--test", test];
    if !sandbox {
        args.push("--no-sandbox");
    }
    let mut cmd = fx.cmd();
    cmd.args(&args);
    if let Some(path) = path {
        cmd.env("PATH", path);
    }
    let (code, doc) = crate::fixture::json_of(cmd.output().unwrap());
    assert_eq!(code, 3, "{doc}");
    assert_eq!(
        outcomes(&doc),
        [("broken", "test_failed"), ("ok", "landed")].map(|(a, b)| (a.to_string(), b.to_string())),
        "{doc}"
    );
    assert!(fx.src.join("ok.txt").is_file() && !fx.src.join("broken.txt").exists());
    doc
}

/// A command failing at the head of a pipeline fails the gate, as CI runners' bash does
/// (`-e -o pipefail`): `cmd | tail -5` once passed a broken build.
#[test]
fn a_failure_anywhere_in_a_pipeline_fails_the_test() {
    if !require_tool("bash") {
        return;
    }
    let fx = Fixture::new();
    marked_and_unmarked(&fx);
    let doc = land_both(&fx, "cat marker | tail -5", false, None);
    assert_eq!(doc["sessions"][0]["test_exit_code"], 1, "{doc}");
    let output = doc["sessions"][0]["test_output"].as_str().unwrap();
    let log = std::fs::read_to_string(output).unwrap();
    assert!(log.contains("marker"), "cat's complaint is kept: {log}");
    let output = doc["sessions"][1]["test_output"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(output).unwrap(), "marked\n");
}

/// A failing command before the last fails the gate too (`-e`), sandboxed as by default.
#[test]
fn a_failing_command_before_the_last_fails_the_test() {
    if !require_tool("bash") || !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    marked_and_unmarked(&fx);
    let doc = land_both(&fx, "cat marker\necho done", true, None);
    let output = doc["sessions"][0]["test_output"].as_str().unwrap();
    let log = std::fs::read_to_string(output).unwrap();
    assert!(
        !log.contains("done"),
        "nothing ran after the failure: {log}"
    );
    assert_eq!(
        doc["sessions"][0]["warnings"],
        serde_json::json!([]),
        "{doc}"
    );
}

/// Without bash the test runs under `sh -e` (pipefail where sh has it), and says so.
#[test]
fn without_bash_the_test_runs_under_sh_e_and_says_so() {
    let fx = Fixture::new();
    marked_and_unmarked(&fx);
    let bin = tempfile::tempdir().unwrap();
    let sh = ["/bin/sh", "/usr/bin/sh"]
        .into_iter()
        .find(|p| std::path::Path::new(p).is_file())
        .expect("a sh");
    std::os::unix::fs::symlink(sh, bin.path().join("sh")).unwrap();
    std::os::unix::fs::symlink(crate::fixture::git_on_path(), bin.path().join("git")).unwrap();
    let doc = land_both(&fx, "test -e marker; echo done", false, Some(bin.path()));
    let output = doc["sessions"][0]["test_output"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(output).unwrap(), "");
    for landed in doc["sessions"].as_array().unwrap() {
        let warnings = landed["warnings"].to_string();
        assert!(
            warnings.contains("bash was not found on PATH: the test ran under `sh -e`"),
            "{doc}"
        );
    }
}
