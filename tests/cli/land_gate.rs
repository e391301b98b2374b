//! `land --test`: the test runs on the rebased tree and nothing it writes lands. What lands is
//! the session's rebased change set, byte for byte; the report names the tracked paths the
//! test changed (`test_wrote`).

use serde_json::Value;

use std::time::Duration;

use crate::fixture::{
    Fixture, iso_git, pairs, read_path, require_tool, spawn_json, wait_for, wait_json,
};
use crate::land_queue::outcomes;

/// What the test writes: a new file, a changed and a deleted tracked file, a file the session
/// changed, and ignored build output.
const WRITING_TEST: &str = "echo log > test-output.log; echo reformatted > README.md; \
                            rm keep.txt; echo tested >> s.txt; mkdir -p build; echo out > build/o";

/// Session `s` adds `s.txt`; the source holds `keep.txt` and ignores `build/`; the user's
/// commit then moves HEAD, so that the session is rebased before its test.
fn session_and_moved_head(fx: &Fixture) -> String {
    fx.write(".gitignore", "build/\n");
    fx.write("keep.txt", "keep\n");
    fx.commit_all("keep and ignore");
    fx.bind("s");
    std::fs::write(fx.isolation("s").join("s.txt"), "s\n").unwrap();
    fx.write("moved.txt", "moved\n");
    fx.commit_all("the user's commit")
}

/// The landed commit changes exactly `s.txt` (as the session wrote it) on the user's commit.
fn landed_exactly_the_session(fx: &Fixture, user: &str, doc: &Value) {
    assert_eq!(
        outcomes(doc),
        [("s".to_string(), "landed".to_string())],
        "{doc}"
    );
    assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD~1"]), user, "{doc}");
    let changed = fx.git(
        &fx.src,
        &["diff", "--name-status", "--no-renames", "HEAD~1", "HEAD"],
    );
    assert_eq!(changed, "A\ts.txt", "{doc}");
    assert_eq!(fx.git(&fx.src, &["show", "HEAD:s.txt"]), "s");
    // The landed tree is the rebased tree: the user's commit with s.txt added.
    let expected = fx.git(&fx.src, &["ls-tree", "-r", "HEAD~1"]);
    let landed = fx.git(&fx.src, &["ls-tree", "-r", "HEAD"]);
    let without: Vec<&str> = landed.lines().filter(|l| !l.ends_with("\ts.txt")).collect();
    assert_eq!(without.join("\n"), expected, "{doc}");
    let wrote: Vec<&str> = doc["sessions"][0]["test_wrote"]
        .as_array()
        .unwrap_or_else(|| panic!("no test_wrote: {doc}"))
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(
        wrote,
        ["README.md", "keep.txt", "s.txt", "test-output.log"],
        "{doc}"
    );
    // The isolation holds what landed again (the ignored build output may stay).
    let iso = fx.isolation("s");
    assert!(!iso.join("test-output.log").exists());
    assert_eq!(
        std::fs::read_to_string(iso.join("README.md")).unwrap(),
        "hello\n"
    );
    assert_eq!(
        std::fs::read_to_string(iso.join("keep.txt")).unwrap(),
        "keep\n"
    );
    assert_eq!(std::fs::read_to_string(iso.join("s.txt")).unwrap(), "s\n");
}

#[test]
fn land_gate_nothing_the_test_wrote_lands_without_the_sandbox() {
    let fx = Fixture::new();
    let user = session_and_moved_head(&fx);
    let args = [
        "land",
        "--keep",
        "-s",
        "s",
        "--no-sandbox",
        "--test",
        WRITING_TEST,
    ];
    let (code, doc) = fx.json(&args);
    assert_eq!(code, 0, "{doc}");
    landed_exactly_the_session(&fx, &user, &doc);
}

#[test]
fn land_gate_nothing_the_test_wrote_lands_from_the_sandbox() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    let user = session_and_moved_head(&fx);
    let (code, doc) = fx.json(&["land", "--keep", "-s", "s", "--test", WRITING_TEST]);
    assert_eq!(code, 0, "{doc}");
    landed_exactly_the_session(&fx, &user, &doc);
}

/// A failed test's writes are dropped too: fixing the session and landing again lands none of
/// them.
#[test]
fn land_gate_a_failed_tests_writes_never_land() {
    let fx = Fixture::new();
    let user = session_and_moved_head(&fx);
    std::fs::write(fx.isolation("s").join("fail-me"), "\n").unwrap();
    let test = format!("{WRITING_TEST}; test ! -e fail-me");
    let args = [
        "land",
        "--keep",
        "-s",
        "s",
        "--no-sandbox",
        "--test",
        test.as_str(),
    ];
    let (code, doc) = fx.json(&args);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["sessions"][0]["outcome"], "test_failed", "{doc}");
    assert_eq!(
        doc["sessions"][0]["test_wrote"].as_array().unwrap().len(),
        4,
        "{doc}"
    );
    std::fs::remove_file(fx.isolation("s").join("fail-me")).unwrap();
    let (code, doc) = fx.json(&["land", "--keep"]);
    assert_eq!(code, 0, "{doc}");
    landed_exactly_the_session(&fx, &user, &doc);
}

/// A `land` killed once its test has written leaves those writes in the isolation; the `land`
/// that continues the queue drops them before landing.
#[cfg(feature = "fault-injection")]
#[test]
fn land_gate_a_killed_tests_writes_never_land() {
    let fx = Fixture::new();
    let user = session_and_moved_head(&fx);
    let args = [
        "land",
        "--keep",
        "-s",
        "s",
        "--no-sandbox",
        "--test",
        WRITING_TEST,
    ];
    crate::fixture::killed_at(&fx, "land-after-test", &args);
    assert!(fx.isolation("s").join("test-output.log").exists());
    let (code, doc) = fx.json(&["land", "--keep"]);
    assert_eq!(code, 0, "{doc}");
    landed_exactly_the_session(&fx, &user, &doc);
    let warnings = doc["sessions"][0]["warnings"].to_string();
    assert!(warnings.contains("interrupted test"), "{doc}");
}

/// A test that writes every kind of change: a tracked file rewritten with the same bytes (not
/// a change), one made executable, one replaced by a link, a tracked directory removed, a new
/// file in a new directory, and ignored output.
const EVERY_KIND_TEST: &str = "cat keep.txt > k && cat k > keep.txt && rm k; \
     chmod +x run.sh; rm -f link-me && ln -s keep.txt link-me; rm -r docs; \
     mkdir -p new/deeper && echo n > new/deeper/n.txt; mkdir -p build && echo o > build/o";

/// Every file of the isolation but `.git` and ignored `build/`, with its kind, mode and bytes.
fn isolation_files(fx: &Fixture) -> Vec<(String, String)> {
    let root = fx.isolation("s");
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel == ".git" || rel == "build" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let what = if meta.is_dir() {
                stack.push(path.clone());
                "dir".to_string()
            } else if meta.file_type().is_symlink() {
                format!("link {}", std::fs::read_link(&path).unwrap().display())
            } else {
                use std::os::unix::fs::PermissionsExt;
                let bytes = std::fs::read(&path).unwrap();
                let mode = meta.permissions().mode() & 0o111;
                format!("file {mode:o} {}", String::from_utf8_lossy(&bytes))
            };
            out.push((rel, what));
        }
    }
    out.sort();
    out
}

/// Lands session `s` with [`EVERY_KIND_TEST`] as `args` (and `env`) say; what the test wrote.
fn every_kind_landed(extra: &[&str], full: bool) -> Vec<String> {
    let fx = Fixture::new();
    fx.write(".gitignore", "build/\n");
    fx.write("keep.txt", "keep\n");
    fx.write("run.sh", "echo run\n");
    fx.write("link-me", "plain\n");
    fx.write("docs/a.md", "a\n");
    fx.write("docs/b.md", "b\n");
    fx.commit_all("every kind");
    fx.bind("s");
    std::fs::write(fx.isolation("s").join("s.txt"), "s\n").unwrap();
    fx.write("moved.txt", "moved\n");
    fx.commit_all("the user's commit");
    // Rebased as the landing does, then looked at: what the test must leave as it is.
    assert_eq!(fx.json(&["rebase", "-s", "s"]).0, 0);
    let before = isolation_files(&fx);
    let mut args = vec![
        "--json",
        "land",
        "--keep",
        "-s",
        "s",
        "--test",
        EVERY_KIND_TEST,
    ];
    args.extend_from_slice(extra);
    let mut cmd = fx.cmd();
    if full {
        cmd.env("A3S_ISO_TEST_FULL_RUN", "1");
    }
    let (code, doc) = crate::fixture::json_of(cmd.args(&args).output().unwrap());
    assert_eq!(code, 0, "{doc}");
    assert_eq!(outcomes(&doc)[0].1, "landed", "{doc}");
    let changed = fx.git(&fx.src, &["diff", "--name-status", "HEAD~1", "HEAD"]);
    assert_eq!(changed, "A\ts.txt", "{doc}");
    assert_eq!(isolation_files(&fx), before, "the isolation moved: {doc}");
    (doc["sessions"][0]["test_wrote"].as_array())
        .unwrap_or_else(|| panic!("no test_wrote: {doc}"))
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect()
}

/// What the test wrote is the same whether the test ran on the run's layer (thrown away
/// without touching the isolation), on the full path, or without the sandbox; the isolation
/// is byte for byte what it was before the test, and nothing of it lands.
#[test]
fn land_gate_every_kind_of_write_is_named_and_dropped_on_every_path() {
    let expected = [
        "docs/a.md",
        "docs/b.md",
        "link-me",
        "new/deeper/n.txt",
        "run.sh",
    ];
    assert_eq!(every_kind_landed(&["--no-sandbox"], false), expected);
    if !require_tool("sandbox") {
        return;
    }
    assert_eq!(every_kind_landed(&[], false), expected, "on the layer");
    assert_eq!(every_kind_landed(&[], true), expected, "on the full path");
}

/// A `land` killed while its test's layer is read leaves the layer and its record: no command
/// after it merges the test's writes into the isolation, and the queue lands the session
/// alone.
#[cfg(feature = "fault-injection")]
#[test]
fn land_gate_a_test_layer_a_kill_left_is_thrown_away_never_merged() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    let user = session_and_moved_head(&fx);
    let args = ["land", "--keep", "-s", "s", "--test", WRITING_TEST];
    crate::fixture::killed_at(&fx, "run-layer-before-drop", &args);
    let iso = fx.isolation("s");
    assert!(!iso.join("test-output.log").exists());
    assert_eq!(fx.json(&["list"]).0, 0);
    assert!(
        !iso.join("test-output.log").exists(),
        "a command merged the test's layer"
    );
    assert!(iso.join("keep.txt").exists());
    assert!(!iso.join("build").exists());
    let (code, doc) = fx.json(&["land", "--keep"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        outcomes(&doc),
        [("s".to_string(), "landed".to_string())],
        "{doc}"
    );
    assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD~1"]), user, "{doc}");
    assert_eq!(
        fx.git(&fx.src, &["diff", "--name-status", "HEAD~1", "HEAD"]),
        "A\ts.txt"
    );
}

/// The line of `/proc/self/mountinfo` (as a command printed it) of the topmost mount at `dir`.
fn mount_line<'a>(mountinfo: &'a str, dir: &std::path::Path) -> Option<&'a str> {
    let dir = dir.to_str().unwrap();
    mountinfo
        .lines()
        .rev()
        .find(|line| line.split(' ').nth(4) == Some(dir))
}

/// The test's layer is thrown away, so it is mounted `volatile` (its unmount does not sync the
/// whole file system beneath it); a run's layer, merged into the isolation after, is not.
#[test]
fn land_gate_the_tests_layer_is_volatile_and_a_runs_is_not() {
    if !require_tool("sandbox") || !require_tool("volatile-overlay") {
        return;
    }
    let fx = Fixture::new();
    session_and_moved_head(&fx);
    let iso = fx.isolation("s");
    let out = fx
        .cmd()
        .args(["run", "-s", "s", "--", "cat", "/proc/self/mountinfo"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mountinfo = String::from_utf8_lossy(&out.stdout);
    let line = mount_line(&mountinfo, &iso).expect("the run's layer covers the isolation");
    assert!(line.contains(" - overlay "), "{line}");
    assert!(!line.contains("volatile"), "{line}");
    let test = format!(
        "grep ' {} ' /proc/self/mountinfo | tail -n 1 | grep -q volatile",
        iso.display()
    );
    let (code, doc) = fx.json(&["land", "--keep", "-s", "s", "--test", &test]);
    assert_eq!(code, 0, "the test's layer is volatile: {doc}");
}

/// Work the isolation gains while the session's test runs (an agent still writing) is not what
/// the test saw: what lands is the rebased tree the test ran on. The late work stays in the
/// isolation, which is therefore not cleaned up, and the next landing lands it.
#[test]
fn land_gate_work_written_during_the_test_stays_for_the_next_landing() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    let user = session_and_moved_head(&fx);
    let iso = fx.isolation("s");
    let child = spawn_json(&fx, &["land", "-s", "s", "--test", "sleep 2"]);
    // The rebase brings the user's commit into the isolation just before the test starts.
    wait_for(&iso.join("moved.txt"), Duration::from_secs(60));
    std::fs::write(iso.join("late.txt"), "written while the test ran\n").unwrap();
    let (code, doc) = wait_json(child);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(outcomes(&doc), pairs(&[("s", "landed")]), "{doc}");
    assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD~1"]), user, "{doc}");
    let changed = |range: &str| {
        let (from, to) = range.split_once("..").unwrap();
        fx.git(
            &fx.src,
            &["diff", "--name-status", "--no-renames", from, to],
        )
    };
    assert_eq!(changed("HEAD~1..HEAD"), "A\ts.txt", "{doc}");
    assert_eq!(doc["sessions"][0]["cleanup"], Value::Null, "{doc}");
    assert_eq!(
        read_path(iso.join("late.txt")),
        "written while the test ran\n"
    );
    let (code, doc) = fx.json(&["land", "-s", "s"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(outcomes(&doc), pairs(&[("s", "landed")]), "{doc}");
    assert_eq!(changed("HEAD~1..HEAD"), "A\tlate.txt", "{doc}");
    assert_eq!(doc["sessions"][0]["cleanup"], "discarded", "{doc}");
}

/// A commit an agent makes in the isolation while the session's test runs is not what the test
/// saw either: a branch landing replays the session's commits as the rebase left them, and the
/// late commit stays in the isolation for the next landing.
#[test]
fn land_gate_a_commit_made_during_the_test_stays_for_the_next_landing() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    let user = session_and_moved_head(&fx);
    let iso = fx.isolation("s");
    iso_git(&fx, "s", &["add", "s.txt"]);
    iso_git(&fx, "s", &["commit", "-q", "-m", "the session's commit"]);
    let args = ["land", "-s", "s", "--mode", "branch", "--test", "sleep 2"];
    let child = spawn_json(&fx, &args);
    // The rebase writes the files, then the index, then HEAD: once HEAD is the session's commit
    // on the user's, the test (`sleep 2`) is what runs.
    let rebased = || {
        let mut cmd = std::process::Command::new("git");
        cmd.current_dir(&iso)
            .args(["rev-parse", "-q", "--verify", "HEAD^"]);
        crate::fixture::isolate(&mut cmd, &fx.home);
        let out = cmd.output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim() == user
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !rebased() {
        assert!(
            std::time::Instant::now() < deadline,
            "the rebase never ended"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    std::fs::write(iso.join("late.txt"), "committed while the test ran\n").unwrap();
    iso_git(&fx, "s", &["add", "late.txt"]);
    iso_git(&fx, "s", &["commit", "-q", "-m", "a late commit"]);
    let (code, doc) = wait_json(child);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(outcomes(&doc), pairs(&[("s", "landed")]), "{doc}");
    let log = fx.git(&fx.src, &["log", "--format=%s", &format!("{user}..HEAD")]);
    assert_eq!(log, "the session's commit", "{doc}");
    assert!(
        fx.git(&fx.src, &["ls-tree", "--name-only", "HEAD"])
            .lines()
            .all(|p| p != "late.txt")
    );
    assert_eq!(doc["sessions"][0]["cleanup"], Value::Null, "{doc}");
    assert_eq!(
        iso_git(&fx, "s", &["log", "-1", "--format=%s"]),
        "a late commit"
    );
    let (code, doc) = fx.json(&["land", "-s", "s", "--mode", "branch"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        fx.git(&fx.src, &["log", "-1", "--format=%s"]),
        "a late commit",
        "{doc}"
    );
}
