//! `capture`'s human output: sizes humanised (the JSON keeps bytes) and the files it lists.

use crate::fixture::{Fixture, human, write_files};

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
fn capture_lists_its_files() {
    let fx = Fixture::new();
    fx.bind("few");
    write_files(&fx, "few", 2, 4);
    let (code, stdout, _) = human(&fx, &["capture", "-s", "few"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("\n  f01.txt\n  f02.txt\n"), "{stdout}");
    assert!(!stdout.contains("more"), "{stdout}");
}
