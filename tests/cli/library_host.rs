//! The library as a host embeds it: `examples/host.rs` (built by `cargo test` with the other
//! examples) runs the lifecycle through the public API, and its result is the CLI's.

use std::path::PathBuf;
use std::process::Command;

use crate::fixture::{Fixture, isolate};

/// The example host, built beside this test binary (`target/<profile>/examples/host`).
fn host() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let host = profile.join("examples/host");
    assert!(
        host.is_file(),
        "{} is missing: `cargo test` builds the examples (run it without --test)",
        host.display()
    );
    host
}

#[test]
fn the_example_host_runs_the_lifecycle_through_the_library() {
    let fx = Fixture::new();
    let before = crate::fixture::checkout_listing(&fx.src);
    let mut cmd = Command::new(host());
    cmd.arg("hosted").current_dir(&fx.src);
    isolate(&mut cmd, &fx.home);
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("promote: Applied"), "{stdout}");
    // The host's change landed byte for byte, and nothing else changed.
    assert_eq!(
        std::fs::read(fx.src.join("HOST.md")).unwrap(),
        b"written by the host example\n"
    );
    let mut after = crate::fixture::checkout_listing(&fx.src);
    after.retain(|path, _| !path.contains("HOST.md"));
    assert_eq!(after, before);
    // The CLI sees what the library did: one landing, the isolation gone.
    assert!(!fx.isolation("hosted").exists());
    let (_, log) = fx.json(&["log"]);
    assert_eq!(log["promotions"].as_array().unwrap().len(), 1, "{log}");
    assert_eq!(log["promotions"][0]["session_id"], "hosted");
    let (_, list) = fx.json(&["list", "--all"]);
    assert_eq!(list["sessions"][0]["state"], "discarded", "{list}");
    // A host's error is the CLI's: the checkout holds uncommitted changes (the landing).
    let mut cmd = Command::new(host());
    cmd.args(["hosted", "true"]).current_dir(&fx.src);
    isolate(&mut cmd, &fx.home);
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("(dirty_source)"));
    // Committed, the same id binds afresh; a command that changes nothing is `empty`.
    fx.commit_all("the host's work");
    let mut cmd = Command::new(host());
    cmd.args(["hosted", "true"]).current_dir(&fx.src);
    isolate(&mut cmd, &fx.home);
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("promote: Empty"), "{stdout}");
}
