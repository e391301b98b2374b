use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fixture::{Fixture, human, listing, now_ms, sleeper, snapshot_settings_naming};

fn bind_owned_by(fx: &Fixture, id: &str, owner: &Child) {
    let (code, doc) = fx.json(&["bind", "-s", id, "--owner-pid", &owner.id().to_string()]);
    assert_eq!(code, 0, "{doc}");
}

fn dead_owner_session(fx: &Fixture, id: &str) {
    let mut owner = sleeper();
    bind_owned_by(fx, id, &owner);
    owner.kill().unwrap();
    owner.wait().unwrap();
}

fn record_path(fx: &Fixture, id: &str) -> PathBuf {
    fx.src.join(format!(".git/a3s-iso/sessions/{id}.json"))
}

fn edit_record(fx: &Fixture, id: &str, edit: impl Fn(&mut Value)) {
    let path = record_path(fx, id);
    let mut record: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut record);
    std::fs::write(&path, serde_json::to_vec_pretty(&record).unwrap()).unwrap();
}

fn make_old(path: &Path) {
    assert!(
        Command::new("touch")
            .args(["-h", "-d", "3 hours ago"])
            .arg(path)
            .status()
            .unwrap()
            .success()
    );
}

fn dead_pid() -> u32 {
    let mut child = sleeper();
    let pid = child.id();
    child.kill().unwrap();
    child.wait().unwrap();
    pid
}

/// An in-flight bind's leftovers: a checkout at the path and a claim naming a dead bind.
fn leftover_claim(fx: &Fixture, id: &str, created_at_ms: u64) {
    let path = fx.isolation(id);
    fx.git(
        &fx.src,
        &["worktree", "add", "-q", "--detach", path.to_str().unwrap()],
    );
    let claim = serde_json::json!({
        "session_id": id,
        "path": path,
        "bind_process": {"pid": dead_pid(), "start_identity": "linux-proc-start-ticks:1", "hostname": a3s_iso::base::owner::hostname()},
        "created_at_ms": created_at_ms,
    });
    let file = fx.src.join(format!(".git/a3s-iso/claims/{id}.json"));
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, serde_json::to_vec(&claim).unwrap()).unwrap();
}

fn paths(doc: &Value, key: &str) -> Vec<String> {
    let mut out: Vec<String> = doc[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            Path::new(e["path"].as_str().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    out.sort();
    out
}

/// One session for each row of the table: a live owner, a dead one with unsaved work, a
/// reused pid, a run holding a lease, a foreign host, an unknown start, a young claim, a
/// malformed record, a retained session, and a symlink and a file where isolations go. The
/// live owner, the run, and the retain's document.
fn lay_out_every_row(fx: &Fixture) -> (Child, Child, Value) {
    // The binds that lay out the rows reclaim nothing as they start: the dead owners' rows
    // must stay until this test's own sweep judges them.
    let config = fx.home.join(".config/a3s-iso");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "[sweep]\nauto = false\n").unwrap();
    let alive_owner = sleeper();
    bind_owned_by(fx, "alive", &alive_owner);
    dead_owner_session(fx, "dead");
    std::fs::write(
        fx.isolation("dead").join("unsaved.txt"),
        "work in progress\n",
    )
    .unwrap();
    fx.bind("reused");
    edit_record(fx, "reused", |r| {
        r["owner"]["start_identity"] = "linux-proc-start-ticks:1".into()
    });
    dead_owner_session(fx, "leased");
    let run = fx
        .cmd()
        .args([
            "run",
            "-s",
            "leased",
            "--no-sandbox",
            "--",
            "sh",
            "-c",
            "touch running; sleep 60",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    fx.bind("foreign");
    edit_record(fx, "foreign", |r| {
        r["owner"]["hostname"] = "elsewhere.example".into()
    });
    fx.bind("unknown");
    edit_record(fx, "unknown", |r| {
        r["owner"]["start_identity"] = Value::Null
    });
    leftover_claim(fx, "flight-young", now_ms());
    fx.bind("malformed");
    std::fs::write(record_path(fx, "malformed"), "{ this is not json").unwrap();
    make_old(&record_path(fx, "malformed"));
    make_old(&fx.isolation("malformed"));
    fx.bind("kept");
    let (code, retained) = fx.json(&["retain", "-s", "kept", "--reason", "inspect the failure"]);
    assert_eq!(code, 0, "{retained}");
    std::os::unix::fs::symlink(&fx.src, fx.isolation("symlink")).unwrap();
    std::fs::write(fx.isolation("file"), "a plain file\n").unwrap();
    let start = Instant::now();
    while !fx.isolation("leased").join("running").exists() {
        assert!(start.elapsed() < Duration::from_secs(20));
        std::thread::sleep(Duration::from_millis(10));
    }
    (alive_owner, run, retained)
}

/// The sweep reclaimed the dead, the reused, the old claim and the malformed, exactly as its
/// dry run said, and kept the others for their reasons.
fn check_reclaimed_and_kept(fx: &Fixture, doc: &Value, dry: &Value, retained_path: &Path) {
    let reclaimed = paths(doc, "reclaimed");
    assert_eq!(
        reclaimed,
        [
            ".src.a3s-isolate-dead",
            ".src.a3s-isolate-flight-old",
            ".src.a3s-isolate-malformed",
            ".src.a3s-isolate-reused"
        ],
        "{doc}"
    );
    // The dry run reported exactly what the sweep then did, and changed nothing itself.
    assert_eq!(paths(dry, "reclaimed"), reclaimed);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(paths(dry, "kept"), paths(doc, "kept"));
    for gone in ["dead", "flight-old", "malformed", "reused"] {
        assert!(!fx.isolation(gone).exists(), "{gone} should be reclaimed");
    }
    let kept: BTreeMap<String, String> = doc["kept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                Path::new(k["path"].as_str().unwrap())
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                k["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let retained_name = retained_path.file_name().unwrap().to_str().unwrap();
    let named = [(retained_name, "[RETAINED]")];
    snapshot_settings_naming(fx, &named).bind(|| {
        insta::assert_json_snapshot!(kept, @r#"
        {
          ".src.a3s-isolate-alive": "live",
          ".src.a3s-isolate-flight-young": "young",
          ".src.a3s-isolate-foreign": "foreign",
          "[RETAINED]": "retained",
          ".src.a3s-isolate-leased": "live",
          ".src.a3s-isolate-unknown": "unknown"
        }
        "#)
    });
}

/// The dead owner's uncommitted edit is recoverable from the swept ref, and the session is
/// listed swept.
fn the_dead_sessions_work_stays_recoverable(fx: &Fixture) {
    // The dead owner's uncommitted edit is recoverable from the swept ref.
    assert_eq!(
        fx.git(&fx.src, &["show", "refs/a3s-iso/swept/dead:unsaved.txt"]),
        "work in progress"
    );
    // The session is not forgotten: it is recorded swept, its refs kept for a resume.
    assert_ne!(
        fx.git(&fx.src, &["for-each-ref", "refs/a3s-iso/sessions/dead/"]),
        ""
    );
    let (_, list) = fx.json(&["list"]);
    let dead = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == "dead")
        .unwrap();
    assert_eq!(dead["state"], "swept", "{list}");
    assert_eq!(dead["swept_ref"], "refs/a3s-iso/swept/dead");
}

#[test]
fn every_row_of_the_decision_table_at_once() {
    let fx = Fixture::new();
    let (mut alive_owner, mut run, retained) = lay_out_every_row(&fx);

    // Last: any command but sweep would finish a bind this long dead itself (recovery, past the
    // grace); sweep judges it here, by its table, and reports it.
    leftover_claim(&fx, "flight-old", now_ms() - 3 * 3_600_000);

    let survivors = ["alive", "leased", "foreign", "unknown", "flight-young"];
    let link_before = std::fs::read_link(fx.isolation("symlink")).unwrap();
    let file_before = std::fs::read(fx.isolation("file")).unwrap();
    let before: BTreeMap<&str, _> = survivors
        .iter()
        .map(|id| (*id, listing(&fx.isolation(id))))
        .collect();
    let retained_path = PathBuf::from(retained["worktree"].as_str().unwrap());
    let retained_before = listing(&retained_path);

    let (code, dry) = fx.json(&["sweep", "--dry-run"]);
    assert_eq!(code, 0, "{dry}");
    let (code, doc) = fx.json(&["sweep"]);
    let _ = Command::new("kill")
        .args(["-TERM", &run.id().to_string()])
        .status();
    run.wait().unwrap();
    alive_owner.kill().unwrap();
    alive_owner.wait().unwrap();
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["schema"], "a3s-iso.sweep.v1");
    assert_eq!(doc["dry_run"], false);

    check_reclaimed_and_kept(&fx, &doc, &dry, &retained_path);
    assert_eq!(
        paths(&doc, "skipped"),
        [".src.a3s-isolate-file", ".src.a3s-isolate-symlink"]
    );
    for (id, listing_before) in &before {
        let mut now = listing(&fx.isolation(id));
        if *id == "leased" {
            // The run itself was still writing there; only its own marker may differ.
            now.remove("running");
        }
        let mut expected = listing_before.clone();
        expected.remove("running");
        assert_eq!(now, expected, "{id} must be untouched");
    }
    assert_eq!(listing(&retained_path), retained_before);
    assert_eq!(
        std::fs::read_link(fx.isolation("symlink")).unwrap(),
        link_before
    );
    assert_eq!(std::fs::read(fx.isolation("file")).unwrap(), file_before);
    assert!(doc["bytes_freed"].as_u64().unwrap() > 0);
    the_dead_sessions_work_stays_recoverable(&fx);
}

#[test]
fn dry_run_changes_nothing() {
    let fx = Fixture::new();
    dead_owner_session(&fx, "d");
    let before = listing(&fx.root);
    let (code, doc) = fx.json(&["sweep", "--dry-run"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(paths(&doc, "reclaimed"), [".src.a3s-isolate-d"]);
    assert_eq!(listing(&fx.root), before);
}

#[test]
fn a_hand_made_directory_is_kept_as_unknown() {
    let fx = Fixture::new();
    let fake = fx.isolation("foo");
    std::fs::create_dir(&fake).unwrap();
    std::fs::write(fake.join("mine.txt"), "made by hand\n").unwrap();
    make_old(&fake);
    let before = listing(&fake);
    let (code, doc) = fx.json(&["sweep", "--grace", "0s"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["kept"][0]["reason"], "unknown", "{doc}");
    assert_eq!(listing(&fake), before);
    // A registered worktree with a3s-iso's naming but no record is a3s-iso's own leftover: it is
    // reclaimed after the grace, snapshotted first.
    let orphan = fx.isolation("orphan");
    fx.git(
        &fx.src,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            orphan.to_str().unwrap(),
        ],
    );
    std::fs::write(orphan.join("left.txt"), "left behind\n").unwrap();
    make_old(&orphan);
    let (_, doc) = fx.json(&["sweep", "--grace", "1m"]);
    assert_eq!(
        paths(&doc, "reclaimed"),
        [".src.a3s-isolate-orphan"],
        "{doc}"
    );
    assert_eq!(
        fx.git(&fx.src, &["show", "refs/a3s-iso/swept/orphan:left.txt"]),
        "left behind"
    );
    assert!(fake.exists());
}

#[test]
fn a_sweep_during_a_bind_leaves_the_bind_alone() {
    let fx = Fixture::new();
    fx.commit_many_files();
    let iso = fx.isolation("racing");
    let binding = fx
        .cmd()
        .args(["--json", "bind", "-s", "racing"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !iso.exists() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_micros(200));
    }
    let (code, doc) = fx.json(&["sweep", "--grace", "0s"]);
    assert_eq!(code, 0, "{doc}");
    assert!(doc["reclaimed"].as_array().unwrap().is_empty(), "{doc}");
    let (code, bound) = crate::fixture::json_of(binding.wait_with_output().unwrap());
    assert_eq!(code, 0, "{bound}");
    assert_eq!(fx.git(&iso, &["status", "--porcelain"]), "");
}

#[test]
fn retained_isolations_survive_prune_and_sweep_until_asked() {
    let fx = Fixture::new();
    dead_owner_session(&fx, "r");
    std::fs::write(fx.isolation("r").join("evidence.txt"), "keep me\n").unwrap();
    let (code, doc) = fx.json(&["retain", "-s", "r", "--reason", "flaky test"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["schema"], "a3s-iso.retain.v1");
    let retained = PathBuf::from(doc["worktree"].as_str().unwrap());
    assert!(
        retained
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(".src.a3s-isolate-r.retained-")
    );
    assert!(
        !fx.isolation("r").exists(),
        "the old path is no longer valid"
    );
    assert_eq!(
        std::fs::read_to_string(retained.join("evidence.txt")).unwrap(),
        "keep me\n"
    );
    let porcelain = fx.git(&fx.src, &["worktree", "list", "--porcelain"]);
    assert!(porcelain.contains("locked flaky test"), "{porcelain}");
    fx.git(&fx.src, &["worktree", "prune"]);
    let (_, doc) = fx.json(&["sweep", "--grace", "0s"]);
    assert!(doc["reclaimed"].as_array().unwrap().is_empty(), "{doc}");
    assert!(retained.join("evidence.txt").exists());
    let (_, list) = fx.json(&["list"]);
    assert_eq!(list["sessions"][0]["state"], "retained");
    // Still capturable and promotable.
    let (code, doc) = fx.json(&["promote", "-s", "r"]);
    assert_eq!(
        (code, doc["outcome"].as_str().unwrap()),
        (0, "applied"),
        "{doc}"
    );
    assert_eq!(
        std::fs::read_to_string(fx.src.join("evidence.txt")).unwrap(),
        "keep me\n"
    );
    // Asked explicitly: reclaimed.
    let (_, doc) = fx.json(&["sweep", "--retained-older-than", "0s"]);
    assert_eq!(doc["reclaimed"][0]["reason"], "retained_expired", "{doc}");
    assert!(!retained.exists());
    assert_eq!(fx.worktrees().len(), 1);
}

#[test]
fn sweep_all_reports_sources_that_are_gone() {
    let fx = Fixture::new();
    dead_owner_session(&fx, "x");
    let other = fx.root.join("work/other");
    std::fs::create_dir(&other).unwrap();
    fx.git(&other, &["init", "-q"]);
    std::fs::write(other.join("f"), "f\n").unwrap();
    fx.git(&other, &["add", "-A"]);
    fx.git(&other, &["commit", "-q", "-m", "o"]);
    let (code, _) = fx.json_in(&other, &["bind", "-s", "o"]);
    assert_eq!(code, 0);
    std::fs::remove_dir_all(&other).unwrap();
    let (code, doc) = fx.json_in(&fx.root, &["sweep", "--all", "--dry-run"]);
    assert_eq!(code, 0, "{doc}");
    assert!(
        doc["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["reason"] == "source_gone"
                && s["detail"] == "registered source no longer exists"),
        "{doc}"
    );
    assert_eq!(paths(&doc, "reclaimed"), [".src.a3s-isolate-x"]);
}

#[test]
fn a_lookalike_of_a_recorded_session_is_never_reclaimed_in_its_name() {
    let fx = Fixture::new();
    let elsewhere = fx.root.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let (code, doc) = fx.json(&[
        "bind",
        "-s",
        "twin",
        "--base-dir",
        elsewhere.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{doc}");
    let bound = PathBuf::from(doc["worktree"].as_str().unwrap());
    // A registered worktree next to the source, named like that session.
    let lookalike = fx.isolation("twin");
    fx.git(
        &fx.src,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            lookalike.to_str().unwrap(),
        ],
    );
    make_old(&lookalike);
    let (code, doc) = fx.json(&["sweep", "--grace", "0s"]);
    assert_eq!(code, 0, "{doc}");
    assert!(doc["reclaimed"].as_array().unwrap().is_empty(), "{doc}");
    assert!(lookalike.exists());
    assert!(bound.starts_with(&elsewhere) && bound.exists());
    let (_, list) = fx.json(&["list"]);
    assert_eq!(list["sessions"][0]["state"], "bound");
    fx.git(&fx.src, &["rev-parse", "refs/a3s-iso/sessions/twin/base"]);
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
