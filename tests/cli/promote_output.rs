//! `promote`'s human output: the files it lists, colours as `--color` says, and a suggestion
//! for a mistyped session id.

use crate::fixture::{Fixture, error_code, human, write_files};

#[test]
fn promote_lists_ten_files_then_and_n_more() {
    let fx = Fixture::new();
    fx.bind("many");
    write_files(&fx, "many", 13, 4);
    let (code, stdout, _) = human(&fx, &["promote", "-s", "many"]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.starts_with("applied: 13 files changed"), "{stdout}");
    let listed: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("  "))
        .collect();
    let expected: Vec<String> = (1..=10).map(|i| format!("f{i:02}.txt")).collect();
    assert_eq!(listed[..10], expected[..], "{stdout}");
    assert_eq!(listed[10], "and 3 more", "{stdout}");
    assert_eq!(listed.len(), 11);
    // And the files are there.
    for i in 1..=13 {
        let path = fx.src.join(format!("f{i:02}.txt"));
        assert_eq!(std::fs::read_to_string(path).unwrap(), "xxx\n");
    }
}

#[test]
fn colours_follow_the_color_flag() {
    let fx = Fixture::new();
    fx.bind("c1");
    write_files(&fx, "c1", 1, 4);
    let (code, stdout, _) = human(&fx, &["--color", "always", "promote", "-s", "c1"]);
    assert_eq!(code, 0);
    assert!(
        stdout.starts_with("\x1b[32mapplied: 1 file changed\x1b[0m"),
        "{stdout:?}"
    );
    let (_, stdout, _) = human(&fx, &["--color", "always", "promote", "-s", "c1"]);
    assert!(stdout.starts_with("\x1b[2midempotent"), "{stdout:?}");
    let (_, stdout, _) = human(&fx, &["--color", "always", "list"]);
    assert!(stdout.contains("\x1b[32mbound\x1b[0m"), "{stdout:?}");
    for args in [
        &["--color", "never", "promote", "-s", "c1"][..],
        &["--color", "never", "list"][..],
    ] {
        let (_, stdout, stderr) = human(&fx, args);
        assert!(
            !stdout.contains('\x1b') && !stderr.contains('\x1b'),
            "{stdout:?}"
        );
    }
    // NO_COLOR does not override an explicit `always`, and `auto` off a terminal is plain.
    let out = fx
        .cmd()
        .env("NO_COLOR", "1")
        .args(["list"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains('\x1b'));
}

#[test]
fn a_mistyped_session_id_gets_a_suggestion() {
    let fx = Fixture::new();
    fx.bind("jr");
    fx.bind("other-session");
    let (code, doc) = fx.json(&["promote", "-s", "jx"]);
    assert_eq!((code, error_code(&doc)), (1, "session_not_found"), "{doc}");
    assert_eq!(doc["error"]["candidates"], serde_json::json!(["jr"]));
    assert!(
        doc["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("did you mean \"jr\""),
        "{doc}"
    );
    let (_, _, stderr) = human(&fx, &["capture", "-s", "jx"]);
    assert!(stderr.contains("did you mean \"jr\"?"), "{stderr}");
    // Nothing close: no suggestion.
    let (_, doc) = fx.json(&["promote", "-s", "zzzzzz"]);
    assert_eq!(doc["error"]["candidates"], serde_json::json!([]));
    assert!(
        !doc["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("did you mean")
    );
}
