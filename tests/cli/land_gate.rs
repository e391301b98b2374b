//! `land --test`: the test runs on the rebased tree and nothing it writes lands. What lands is
//! the session's rebased change set, byte for byte; the report names the tracked paths the
//! test changed (`test_wrote`).

use serde_json::Value;

use crate::fixture::{Fixture, require_tool};
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
