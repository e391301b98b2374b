//! `doctor`, `version`, and durations on the command line.

use std::os::unix::process::CommandExt;
use std::path::Path;

use serde_json::Value;

use crate::fixture::{Fixture, listing, require_tool, sandbox_available, stdout_of};

fn check<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} check in {doc}"))
}

fn doctor(fx: &Fixture, env: &[(&str, &str)]) -> (i32, Value) {
    let mut cmd = fx.cmd();
    cmd.args(["--json", "doctor"]);
    for (key, value) in env {
        cmd.env(key, value);
    }
    crate::fixture::json_of(cmd.output().unwrap())
}

const SANDBOX_CHECKS: &[&str] = &[
    "landlock",
    "user_namespace",
    "mount_namespace",
    "pid_namespace",
    "net_namespace",
    "seccomp",
    "pty",
    "sandbox_trial",
];

#[test]
fn doctor_reports_git_and_the_sandbox_layers() {
    let fx = Fixture::new();
    let state = fx.src.join(".git/a3s-iso");
    fx.bind("probe");
    let before = listing(&state);
    let (code, doc) = doctor(&fx, &[]);
    assert_eq!(doc["schema"], "a3s-iso.doctor.v1");
    let git_version = fx.git(&fx.src, &["--version"]);
    let git_version = git_version.strip_prefix("git version ").unwrap();
    assert_eq!(doc["git_version"], git_version);
    let git = check(&doc, "git");
    assert_eq!(git["status"], "ok");
    assert!(
        git["detail"].as_str().unwrap().contains(git_version),
        "{git}"
    );
    for name in SANDBOX_CHECKS.iter().chain(&[
        "repository",
        "filesystem",
        "reflink",
        "state_dir",
        "lock",
        "stale_claims",
        "unfinished_intents",
        "pending_tree_operations",
        "scratch_leftovers",
        "user_registry",
        "agent_tools",
    ]) {
        let c = check(&doc, name);
        assert!(
            ["ok", "warn", "fail"].contains(&c["status"].as_str().unwrap()),
            "{c}"
        );
        assert!(c["detail"].is_string() && c.get("hint").is_some(), "{c}");
        if c["status"] != "ok" {
            assert!(c["hint"].is_string(), "a finding without a hint: {c}");
        }
    }
    let can_sandbox = sandbox_available();
    assert_eq!(doc["sandbox_available"], can_sandbox, "{doc}");
    assert_eq!(code, if can_sandbox { 0 } else { 4 }, "{doc}");
    assert_eq!(listing(&state), before, "doctor leaves the state as it was");
    assert_eq!(
        std::fs::read_dir(fx.src.parent().unwrap())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains("reflink"))
            .count(),
        0,
        "the reflink probe cleans up"
    );
}

#[test]
fn doctor_fails_closed_without_namespaces_and_warns_without_landlock() {
    let fx = Fixture::new();
    let (code, doc) = doctor(&fx, &[("A3S_ISO_SIMULATE_NO_NAMESPACES", "1")]);
    assert_eq!(code, 4, "{doc}");
    assert_eq!(doc["sandbox_available"], false);
    assert_eq!(check(&doc, "user_namespace")["status"], "fail");
    assert_eq!(check(&doc, "sandbox_trial")["status"], "fail");
    assert!(check(&doc, "sandbox_trial")["hint"].is_string());
    let human = fx
        .cmd()
        .arg("doctor")
        .env("A3S_ISO_SIMULATE_NO_NAMESPACES", "1")
        .output()
        .unwrap();
    assert_eq!(human.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&human.stdout).contains("run cannot sandbox commands here"));

    // Without Landlock run enforces one layer less: doctor fails (exit 4) by default.
    let (code, doc) = doctor(&fx, &[("A3S_ISO_SIMULATE_NO_LANDLOCK", "1")]);
    assert_eq!(code, 4, "{doc}");
    assert_eq!(check(&doc, "landlock")["status"], "fail");
    assert_eq!(doc["sandbox_available"], false);
    assert_eq!(doc["landlock_abi"], Value::Null);
    // A host content with the read-only mounts alone says so: then it is a warning.
    let mut cmd = fx.cmd();
    cmd.args(["--json", "doctor", "--landlock-optional"])
        .env("A3S_ISO_SIMULATE_NO_LANDLOCK", "1");
    let (code, doc) = crate::fixture::json_of(cmd.output().unwrap());
    let landlock = check(&doc, "landlock");
    assert_eq!(landlock["status"], "warn", "{landlock}");
    assert!(landlock["hint"].is_string());
    if require_tool("sandbox") {
        assert_eq!(code, 0, "{doc}");
        assert_eq!(check(&doc, "sandbox_trial")["status"], "ok");
    }
}

#[test]
fn doctor_reports_leftovers() {
    let fx = Fixture::new();
    fx.bind("kept");
    let state = fx.src.join(".git/a3s-iso");
    std::fs::create_dir_all(state.join("intents")).unwrap();
    std::fs::write(state.join("intents/0123.json"), "{}").unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    // A bind that died a moment ago: within the grace, so no command has cleared it yet.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let claim = serde_json::json!({
        "session_id": "dead-bind",
        "path": fx.root.join("work/.a3s-isolate-dead-bind"),
        "bind_process": {"pid": 4_000_000, "start_identity": "linux-proc-start-ticks:1", "hostname": host.trim()},
        "created_at_ms": now_ms,
    });
    std::fs::create_dir_all(state.join("claims")).unwrap();
    std::fs::write(state.join("claims/dead-bind.json"), claim.to_string()).unwrap();
    let before = listing(&state);
    let (_, doc) = doctor(&fx, &[]);
    let intents = check(&doc, "unfinished_intents");
    assert_eq!(intents["status"], "warn", "{intents}");
    assert!(
        intents["detail"].as_str().unwrap().starts_with("1 "),
        "{intents}"
    );
    let claims = check(&doc, "stale_claims");
    assert_eq!(claims["status"], "warn", "{claims}");
    assert_eq!(check(&doc, "pending_tree_operations")["status"], "ok");
    assert_eq!(
        listing(&state),
        before,
        "doctor reports, it does not repair"
    );
}

#[test]
fn doctor_outside_a_repository_checks_the_machine_only() {
    let fx = Fixture::bare_root();
    let out = fx
        .cmd_in(&fx.root)
        .args(["--json", "doctor"])
        .output()
        .unwrap();
    let (_, doc) = crate::fixture::json_of(out);
    assert_eq!(check(&doc, "repository")["status"], "warn");
    assert_eq!(check(&doc, "git")["status"], "ok");
    assert!(
        doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["name"] != "state_dir")
    );
}

#[test]
fn version_reports_git_and_kernel_features() {
    let fx = Fixture::bare_root();
    let out = fx
        .cmd_in(&fx.root)
        .args(["--json", "version"])
        .output()
        .unwrap();
    let (code, doc) = crate::fixture::json_of(out);
    assert_eq!(code, 0);
    assert_eq!(doc["schema"], "a3s-iso.version.v1");
    assert_eq!(doc["version"], env!("CARGO_PKG_VERSION"));
    assert!(
        doc["git"]["version"].as_str().unwrap().starts_with('2'),
        "{doc}"
    );
    for key in [
        "kernel",
        "landlock_abi",
        "user_namespaces",
        "mount_namespaces",
        "pid_namespaces",
        "net_namespaces",
        "seccomp",
    ] {
        assert!(doc.get(key).is_some(), "{key} in {doc}");
    }
    let text = stdout_of(fx.cmd_in(&fx.root).arg("version").output().unwrap());
    assert!(
        text.starts_with(&format!("a3s-iso {}\n", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    assert!(
        text.contains("landlock") && text.contains("namespaces"),
        "{text}"
    );
}

#[test]
fn durations_accept_fractions_and_compounds() {
    let fx = Fixture::new();
    for good in ["1.5s", "1m30s", "90s", "2h", "500ms"] {
        let (code, doc) = fx.json(&["--lock-timeout", good, "list"]);
        assert_eq!(code, 0, "{good}: {doc}");
    }
    for bad in ["1y", "1.5.0s", "30s1m", "soon"] {
        let out = fx
            .cmd()
            .args(["--lock-timeout", bad, "list"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("1m30s"), "{bad}: {err}");
    }
}

/// `doctor` counts, `gc --dry-run` lists and the next command that changes state removes the
/// same leftovers of dead processes; and a3s-iso inside a run judges none dead (the host's
/// pids are not its own there).
#[test]
fn doctor_gc_and_cleaning_agree_on_what_dead_processes_left() {
    let fx = Fixture::new();
    fx.bind("d");
    let state = fx.src.join(".git/a3s-iso");
    // Private TMPDIRs are made in the system's temporary directory: this test's own.
    let tmpdir = fx.root.join("tmp");
    std::fs::create_dir_all(&tmpdir).unwrap();
    let tmpdir = tmpdir.to_str().unwrap();
    // A run SIGKILLed with its group leaves its quarantine and its private TMPDIR.
    let mut run = fx.cmd();
    run.args(["run", "-s", "d", "--no-sandbox", "--", "sleep", "30"])
        .env("TMPDIR", tmpdir)
        .process_group(0);
    let mut child = run.spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    let group = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process_group(group, rustix::process::Signal::KILL).unwrap();
    child.wait().unwrap();
    let quarantined: Vec<_> = std::fs::read_dir(state.join("quarantine"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(quarantined.len(), 1, "{quarantined:?}");
    // An atomic write of a record whose writer is gone (no process has that pid).
    let dead_pid = (4_000_000..4_194_000)
        .find(|pid| !Path::new(&format!("/proc/{pid}")).exists())
        .unwrap();
    let half_written = state.join(format!("sessions/.d.json.tmp-{dead_pid}-0-0000abcd"));
    std::fs::write(&half_written, "{").unwrap();

    let count = |env: &[(&str, &str)]| {
        let mut cmd = fx.cmd();
        cmd.args(["--json", "doctor"])
            .env("TMPDIR", tmpdir)
            .envs(env.iter().copied());
        let (_, doc) = crate::fixture::json_of(cmd.output().unwrap());
        let check = doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "scratch_leftovers")
            .unwrap()
            .clone();
        check["detail"].as_str().unwrap().to_string()
    };
    let before = count(&[]);
    assert!(before.starts_with("3 "), "{before}");
    assert_eq!(count(&[("A3S_ISO_RUN_ID", "r-inside")]), "none");

    let mut gc = fx.cmd();
    gc.args(["--json", "gc", "--dry-run"]).env("TMPDIR", tmpdir);
    let (code, dry) = crate::fixture::json_of(gc.output().unwrap());
    assert_eq!(code, 0, "{dry}");
    let listed: Vec<String> = dry["removed"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["reason"] == "dead_maker")
        .map(|item| item["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(listed.len(), 3, "{dry}");
    assert!(
        listed.contains(&half_written.display().to_string()),
        "{dry}"
    );
    assert!(
        listed.contains(&quarantined[0].display().to_string()),
        "{dry}"
    );
    assert!(quarantined[0].exists() && half_written.exists());

    let mut bind = fx.cmd();
    bind.args(["bind", "-s", "e"]).env("TMPDIR", tmpdir);
    assert!(bind.output().unwrap().status.success());
    assert_eq!(count(&[]), "none");
    for path in listed {
        assert!(!Path::new(&path).exists(), "{path} is still there");
    }
}
