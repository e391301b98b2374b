//! Human output details: sizes, file lists, colours, list's SOURCE column, lock holders,
//! hints for a missing `--` and mistyped session ids; man pages that link only to pages that
//! exist.

use std::path::Path;
use std::time::Duration;

use crate::fixture::{Fixture, error_code};

/// Runs a3s-iso in the source; returns the status, stdout and stderr.
fn human(fx: &Fixture, args: &[&str]) -> (i32, String, String) {
    let out = fx.cmd().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// `n` new files `f01.txt`… in the session's isolation, each `size` bytes.
fn write_files(fx: &Fixture, id: &str, n: usize, size: usize) {
    for i in 1..=n {
        let line = "x".repeat(size.saturating_sub(1));
        std::fs::write(
            fx.isolation(id).join(format!("f{i:02}.txt")),
            format!("{line}\n"),
        )
        .unwrap();
    }
}

#[test]
fn sizes_are_humanised_and_json_keeps_bytes() {
    let fx = Fixture::new();
    fx.bind("big");
    write_files(&fx, "big", 2, 3000);
    let (code, stdout, _) = human(&fx, &["capture", "-s", "big", "--run-id", "c"]);
    assert_eq!(code, 0);
    let headline = stdout.lines().next().unwrap();
    assert!(headline.starts_with("2 files changed, "), "{headline}");
    assert!(headline.ends_with(" KiB"), "{headline}");
    assert!(!stdout.contains(" bytes"), "{stdout}");
    let (code, doc) = fx.json(&["capture", "-s", "big", "--run-id", "c"]);
    assert_eq!(code, 0);
    let bytes = doc["patch_bytes"].as_u64().unwrap();
    assert!(bytes > 6000, "{doc}");
    let shown = format!("{:.1} KiB", bytes as f64 / 1024.0);
    assert!(headline.contains(&shown), "{headline} vs {shown}");
}

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
fn capture_lists_its_files() {
    let fx = Fixture::new();
    fx.bind("few");
    write_files(&fx, "few", 2, 4);
    let (code, stdout, _) = human(&fx, &["capture", "-s", "few"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("\n  f01.txt\n  f02.txt\n"), "{stdout}");
    assert!(!stdout.contains("more"), "{stdout}");
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
fn list_all_has_a_source_column() {
    let fx = Fixture::new();
    fx.bind("s1");
    let (code, stdout, _) = human(&fx, &["list", "--all"]);
    assert_eq!(code, 0);
    let mut lines = stdout.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header[..3], ["SESSION", "SOURCE", "STATE"], "{stdout}");
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    let source = std::fs::canonicalize(&fx.src).unwrap();
    assert_eq!(row[0], "s1");
    assert_eq!(Path::new(row[1]), source, "{stdout}");
    assert_eq!(row[2], "bound");
    // Without --all there is one source, and no column for it.
    let (_, stdout, _) = human(&fx, &["list"]);
    assert!(!stdout.contains("SOURCE"), "{stdout}");
}

#[test]
fn sweep_reports_kept_isolations_without_a_warning() {
    let fx = Fixture::new();
    fx.bind("live");
    let (code, stdout, stderr) = human(&fx, &["sweep"]);
    assert_eq!(code, 0);
    // The summary ends the report, apart from the list.
    assert!(stdout.ends_with("\n\nkept: 1 live\n"), "{stdout}");
    assert!(!stderr.contains("warning:"), "{stderr}");
    assert!(fx.isolation("live").join("README.md").is_file());
}

#[test]
fn a_lock_timeout_names_the_holders_pid_and_command() {
    let fx = Fixture::new();
    let lock = fx.src.join(".git/a3s-iso.lock");
    let held = a3s_iso::store::lock::FileLock::acquire(&lock, Duration::ZERO).unwrap();
    let recorded = std::fs::read_to_string(&lock).unwrap();
    let (code, _, stderr) = human(&fx, &["--lock-timeout", "100ms", "bind", "-s", "l"]);
    let (json_code, doc) = fx.json(&["--lock-timeout", "100ms", "bind", "-s", "l"]);
    drop(held);
    assert_eq!((code, json_code), (6, 6), "{stderr}");
    assert_eq!(error_code(&doc), "lock_timeout");
    let pid = format!("pid {} (", std::process::id());
    assert!(recorded.starts_with(&pid), "{recorded}");
    assert!(recorded.contains(" since 20"), "{recorded}");
    // The command line of the holder (this test binary) is named.
    let program = std::env::args().next().unwrap();
    let program = program.rsplit('/').next().unwrap();
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&pid) && message.contains(program),
        "{message}"
    );
    assert!(
        stderr.contains(&pid) && stderr.contains(program),
        "{stderr}"
    );
    assert!(!fx.isolation("l").exists());
    // Released, the record is gone.
    assert_eq!(std::fs::read_to_string(&lock).unwrap(), "");
}

#[test]
fn run_without_the_separator_hints_at_it() {
    let fx = Fixture::new();
    fx.bind("x");
    let (code, _, stderr) = human(&fx, &["run", "-s", "x", "true"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("hint: put -- before the command"),
        "{stderr}"
    );
    let (code, doc) = fx.json(&["run", "-s", "x", "true"]);
    assert_eq!((code, error_code(&doc)), (2, "usage"));
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("put -- before the command"),
        "{doc}"
    );
    // With `--` it runs; other usage errors get no such hint.
    let (code, _, stderr) = human(&fx, &["run", "-s", "x", "--no-sandbox", "--", "true"]);
    assert_eq!(code, 0, "{stderr}");
    let (_, _, stderr) = human(&fx, &["list", "--bogus"]);
    assert!(!stderr.contains("put --"), "{stderr}");
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

#[test]
fn man_pages_link_only_to_pages_that_exist() {
    let man = Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    let pages: Vec<String> = std::fs::read_dir(&man)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(pages.iter().any(|p| p == "a3s-iso.1"));
    for page in &pages {
        let text = std::fs::read_to_string(man.join(page)).unwrap();
        let text = text.replace("\\-", "-");
        // Every `name(1)` reference of a3s-iso names a generated page.
        for (at, _) in text.match_indices("(1)") {
            let start = text[..at]
                .rfind(|c: char| c.is_whitespace())
                .map_or(0, |i| i + 1);
            let name = &text[start..at];
            if name.starts_with("a3s-iso") {
                assert!(
                    pages.contains(&format!("{name}.1")),
                    "{page} links {name}(1), which is not generated"
                );
            }
        }
        // One of each closing section.
        for section in [".SH \"EXIT STATUS\"", ".SH ENVIRONMENT", ".SH EXAMPLES"] {
            assert_eq!(text.matches(section).count(), 1, "{page}: {section}");
        }
        assert!(!text.contains(".SH EXTRA"), "{page}");
    }
}

#[test]
fn help_shows_examples_global_options_and_defaults() {
    let fx = Fixture::bare_root();
    for sub in ["bind", "promote", "run", "sweep", "list"] {
        let out = fx.cmd_in(&fx.root).args([sub, "--help"]).output().unwrap();
        let help = String::from_utf8(out.stdout).unwrap();
        assert!(help.contains("\nExamples:\n  a3s-iso "), "{sub}: {help}");
        assert!(help.contains("\nGlobal options:\n"), "{sub}: {help}");
        assert!(help.contains("[default: 60s]"), "{sub}: {help}");
    }
    let out = fx.cmd_in(&fx.root).arg("--help").output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let line = help
        .lines()
        .find(|l| l.starts_with("Exit status: "))
        .unwrap();
    assert!(readme.contains(line), "README and help disagree: {line}");
    assert!(line.contains("6 busy (lock timeout, session busy)"));
    // The README's command overview names every command the help lists.
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect();
    assert!(commands.len() > 10, "{help}");
    for name in commands {
        assert!(
            readme.contains(&format!("`{name}`")),
            "the README's command overview lacks `{name}`"
        );
    }
}
