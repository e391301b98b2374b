//! Reclaiming as `bind` starts: a dead owner's session goes as `sweep` would take it (its work
//! snapshotted first, `bind --resume` brings it back byte for byte), while the session being
//! bound, a live one and a running one stay untouched; `sweep.auto = false` and
//! `A3S_ISO_SWEEP_AUTO=0` turn it off.

use std::path::Path;

use serde_json::Value;

use crate::fixture::{Fixture, json_of, listing, sleeper};
use crate::sweep_races::{dead_owner_session, listed, with_work};

/// Bytes git and editors mangle when they get a chance: no newline, CRLF, invalid UTF-8.
const EDIT: &[u8] = b"edited \xff bytes\r\nno newline";

/// Puts uncommitted work of every kind into session `id`'s tree.
fn dirty(fx: &Fixture, id: &str) -> std::path::PathBuf {
    let tree = fx.isolation(id);
    std::fs::write(tree.join("README.md"), EDIT).unwrap();
    std::fs::write(tree.join("new.bin"), [0u8, 1, 2, 255]).unwrap();
    std::fs::remove_file(tree.join("src/lib.txt")).unwrap();
    tree
}

/// Sets the user's `sweep.auto`.
fn auto(fx: &Fixture, on: Option<bool>) {
    let config = fx.home.join(".config/a3s-iso");
    std::fs::create_dir_all(&config).unwrap();
    let on = on.unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!("[sweep]\nauto = {on}\n"),
    )
    .unwrap();
}

/// The command with reclaiming on (the fixture turns it off for every other test).
fn on(cmd: &mut std::process::Command) -> &mut std::process::Command {
    cmd.env("A3S_ISO_SWEEP_AUTO", "1")
}

/// `bind -s ID` as the configuration says (the environment says nothing).
fn configured(fx: &Fixture, id: &str) -> (i32, Value) {
    json_of(
        fx.cmd()
            .env_remove("A3S_ISO_SWEEP_AUTO")
            .args(["--json", "bind", "-s", id])
            .output()
            .unwrap(),
    )
}

fn reclaimed_ids(doc: &Value) -> Vec<String> {
    doc["reclaimed"]
        .as_array()
        .unwrap_or_else(|| panic!("no reclaimed: {doc}"))
        .iter()
        .map(|r| r["session_id"].as_str().unwrap().to_string())
        .collect()
}

fn assert_work_back(tree: &Path) {
    assert_eq!(std::fs::read(tree.join("README.md")).unwrap(), EDIT);
    assert_eq!(
        std::fs::read(tree.join("new.bin")).unwrap(),
        [0u8, 1, 2, 255]
    );
    assert!(!tree.join("src/lib.txt").exists());
}

#[test]
fn sweep_auto_a_dead_owners_work_is_reclaimed_by_the_next_bind_and_resumed_byte_for_byte() {
    let fx = Fixture::new();
    dead_owner_session(&fx, "gone");
    let gone = dirty(&fx, "gone");
    let owner = sleeper();
    let (code, doc) = fx.json(&["bind", "-s", "live", "--owner-pid", &owner.id().to_string()]);
    assert_eq!(code, 0, "{doc}");
    std::fs::write(fx.isolation("live").join("live.txt"), "live work").unwrap();
    let live_before = listing(&fx.isolation("live"));
    // The session being bound is never the one reclaimed, even with its owner dead.
    dead_owner_session(&fx, "mine");

    let out = on(&mut fx.cmd())
        .args(["bind", "-s", "mine"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("reclaimed") && stderr.contains("bind --resume -s gone"),
        "{stderr}"
    );
    assert!(!gone.exists(), "the dead session's tree is still there");
    assert!(fx.isolation("mine").is_dir());
    assert_eq!(listing(&fx.isolation("live")), live_before);
    let (_, list) = fx.json(&["list"]);
    assert_eq!(
        listed(&list)
            .into_iter()
            .collect::<std::collections::BTreeSet<_>>(),
        ["live", "mine"].map(String::from).into()
    );

    let (code, doc) = fx.json(&["bind", "-s", "gone", "--resume"]);
    assert_eq!(code, 0, "{doc}");
    assert!(doc["reclaimed"].as_array().unwrap().is_empty(), "{doc}");
    assert_work_back(Path::new(doc["worktree"].as_str().unwrap()));
    let _ = owner;
}

#[test]
fn sweep_auto_reports_in_json_and_keeps_a_running_session() {
    let fx = Fixture::new();
    dead_owner_session(&fx, "running");
    with_work(&fx, "running");
    let marker = fx.root.join("started");
    let script = format!("touch {}; sleep 30", marker.display());
    let mut run = fx
        .cmd()
        .args([
            "run",
            "-s",
            "running",
            "--no-sandbox",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(crate::sweep_races::wait_for(
        &marker,
        std::time::Duration::from_secs(20)
    ));
    // This bind reclaims nothing: the only dead owner's session has a run in progress.
    dead_owner_session(&fx, "gone");
    with_work(&fx, "gone");
    let (code, doc) = json_of(
        on(&mut fx.cmd())
            .args(["--json", "bind", "-s", "next"])
            .output()
            .unwrap(),
    );
    let _ = run.kill();
    let _ = run.wait();
    assert_eq!(code, 0, "{doc}");
    assert_eq!(reclaimed_ids(&doc), ["gone"], "{doc}");
    let item = &doc["reclaimed"][0];
    assert_eq!(item["reason"], "owner_dead");
    assert_eq!(item["swept_ref"], "refs/a3s-iso/swept/gone");
    assert_eq!(
        fx.git(&fx.src, &["show", "refs/a3s-iso/swept/gone:work.txt"]),
        "work of the session"
    );
    assert!(fx.isolation("running").join("work.txt").is_file());
}

#[test]
fn sweep_auto_is_off_with_the_environment_or_the_configuration() {
    let fx = Fixture::new();
    dead_owner_session(&fx, "gone");
    with_work(&fx, "gone");
    let out = fx
        .cmd()
        .args(["--json", "bind", "-s", "a"])
        .env("A3S_ISO_SWEEP_AUTO", "0")
        .output()
        .unwrap();
    let (code, doc) = json_of(out);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(reclaimed_ids(&doc), Vec::<String>::new());
    auto(&fx, Some(false));
    let (code, doc) = configured(&fx, "b");
    assert_eq!(code, 0, "{doc}");
    assert_eq!(reclaimed_ids(&doc), Vec::<String>::new());
    assert!(fx.isolation("gone").join("work.txt").is_file());
    auto(&fx, Some(true));
    let (code, doc) = configured(&fx, "c");
    assert_eq!(code, 0, "{doc}");
    assert_eq!(reclaimed_ids(&doc), ["gone"]);
}
