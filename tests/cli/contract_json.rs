//! What a script sees: the `--json` document of each command and outcome, with its exit
//! status, pinned as snapshots (what differs from run to run filtered out).

use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::fixture::{Fixture, require_tool, snapshot_settings};

/// Runs `a3s-iso --json ARGS` in the source and pins the exit status and the document.
fn snap(fx: &Fixture, name: &str, args: &[&str]) -> Value {
    snap_in(fx, &fx.src, name, args)
}

fn snap_in(fx: &Fixture, dir: &std::path::Path, name: &str, args: &[&str]) -> Value {
    let (code, doc) = fx.json_in(dir, args);
    snapshot_settings(fx).bind(|| {
        insta::assert_json_snapshot!(
            name,
            json!({ "args": args, "exit_code": code, "document": doc })
        )
    });
    doc
}

#[test]
fn bind_list_and_discard() {
    let fx = Fixture::new();
    snap(&fx, "bind", &["bind", "-s", "demo"]);
    snap(&fx, "bind_reused", &["bind", "-s", "demo"]);
    snap(&fx, "bind_generated_id", &["bind"]);
    snap(&fx, "bind_read_only", &["bind", "-s", "ro", "--read-only"]);
    snap(&fx, "list", &["list"]);
    snap(&fx, "discard", &["discard", "-s", "demo"]);
    snap(&fx, "discard_again", &["discard", "-s", "demo"]);
    snap(&fx, "list_after_discard", &["list", "--all"]);
}

#[test]
fn run_capture_and_verify() {
    let fx = Fixture::new();
    fx.bind("demo");
    snap(
        &fx,
        "run_completed",
        &[
            "run",
            "-s",
            "demo",
            "--no-sandbox",
            "--run-id",
            "edit",
            "--",
            "sh",
            "-c",
            "echo 'agent line' >> README.md; echo new > added.txt; echo on stdout",
        ],
    );
    snap(
        &fx,
        "run_failed",
        &[
            "run",
            "-s",
            "demo",
            "--no-sandbox",
            "--",
            "sh",
            "-c",
            "echo more >> added.txt; exit 3",
        ],
    );
    snap(
        &fx,
        "capture",
        &["capture", "-s", "demo", "--run-id", "cap"],
    );
    let stored = fx.src.join(".git/a3s-iso/runs/demo/cap.json");
    snap(&fx, "verify_valid", &["verify", stored.to_str().unwrap()]);
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&stored).unwrap()).unwrap();
    // The patch itself, byte for byte but for its object ids (the snapshots above filter it).
    let patch = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD
            .decode(doc["patch_base64"].as_str().unwrap())
            .unwrap()
    };
    assert_eq!(doc["patch_bytes"], json!(patch.len()));
    snapshot_settings(&fx).bind(|| {
        insta::assert_snapshot!("capture_patch", String::from_utf8(patch).unwrap());
    });
    doc["patch_bytes"] = json!(1);
    let tampered = fx.root.join("tampered.json");
    std::fs::write(&tampered, serde_json::to_vec(&doc).unwrap()).unwrap();
    snap(
        &fx,
        "verify_invalid",
        &["verify", tampered.to_str().unwrap()],
    );
}

#[test]
fn a_sandboxed_run() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("box");
    snap(
        &fx,
        "run_sandboxed",
        &[
            "run",
            "-s",
            "box",
            "--run-id",
            "boxed",
            "--",
            "sh",
            "-c",
            "echo boxed > boxed.txt",
        ],
    );
}

#[test]
fn every_promote_outcome() {
    let fx = Fixture::new();
    fx.bind("demo");
    std::fs::write(fx.isolation("demo").join("added.txt"), "new\n").unwrap();
    snap(
        &fx,
        "promote_planned",
        &["promote", "-s", "demo", "--no-apply"],
    );
    snap(&fx, "promote_applied", &["promote", "-s", "demo"]);
    snap(&fx, "promote_idempotent", &["promote", "-s", "demo"]);
    fx.commit_all("take the agent's work");

    fx.bind("idle");
    snap(&fx, "promote_empty", &["promote", "-s", "idle"]);

    // The user's uncommitted edit of the file the session changed.
    fx.bind("overlap");
    std::fs::write(fx.isolation("overlap").join("README.md"), "agent\n").unwrap();
    fx.write("README.md", "user\n");
    snap(
        &fx,
        "promote_conflict_patch_does_not_apply",
        &["promote", "-s", "overlap"],
    );
    fx.git(&fx.src, &["checkout", "--", "README.md"]);

    fx.bind("late");
    std::fs::write(fx.isolation("late").join("late.txt"), "late\n").unwrap();
    fx.write("user.txt", "the user's own commit\n");
    fx.commit_all("the user moves on");
    snap(
        &fx,
        "promote_conflict_head_moved",
        &["promote", "-s", "late"],
    );
}

#[test]
fn sweep_and_retain() {
    let fx = Fixture::new();
    fx.bind("live");
    fx.bind("kept");
    let mut owner = Command::new("sleep")
        .arg("600")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let (code, doc) = fx.json(&["bind", "-s", "dead", "--owner-pid", &owner.id().to_string()]);
    owner.kill().unwrap();
    owner.wait().unwrap();
    assert_eq!(code, 0, "{doc}");
    std::fs::write(fx.isolation("dead").join("work.txt"), "unsaved\n").unwrap();
    // Named like an isolation but a symbolic link: skipped, as a code with a detail.
    std::os::unix::fs::symlink(&fx.src, fx.isolation("link")).unwrap();
    snap(
        &fx,
        "retain",
        &["retain", "-s", "kept", "--reason", "look at it later"],
    );
    snap(&fx, "sweep_dry_run", &["sweep", "--dry-run"]);
    snap(&fx, "sweep", &["sweep"]);
    snap(&fx, "sweep_nothing_left", &["sweep"]);
}

#[test]
fn error_documents() {
    let fx = Fixture::new();
    snap(&fx, "error_session_not_found", &["capture", "-s", "nope"]);
    snap(&fx, "error_invalid_id", &["bind", "-s", "../escape"]);
    snap(&fx, "error_usage", &["bind", "--no-such-flag"]);
    snap_in(
        &fx,
        &fx.root,
        "error_isolation_unavailable",
        &["bind", "-s", "outside"],
    );
    snap(
        &fx,
        "error_change_set_unavailable",
        &["verify", fx.root.join("missing.json").to_str().unwrap()],
    );
    fx.bind("mine");
    let mut other = Command::new("sleep")
        .arg("600")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = other.id().to_string();
    snap(
        &fx,
        "error_session_exists",
        &["bind", "-s", "mine", "--owner-pid", &pid],
    );
    other.kill().unwrap();
    other.wait().unwrap();
    fx.json(&["bind", "-s", "reader", "--read-only"]);
    snap(&fx, "error_read_only_session", &["capture", "-s", "reader"]);
    fx.bind("vanished");
    std::fs::remove_dir_all(fx.isolation("vanished")).unwrap();
    snap(
        &fx,
        "error_isolation_missing",
        &["capture", "-s", "vanished"],
    );
    fx.write("wip.txt", "local work\n");
    snap(&fx, "error_dirty_source", &["bind", "-s", "dirty"]);
}
