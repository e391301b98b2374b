//! `path`, `shell-init`, `log`, `doctor`, `version`, and durations on the command line.

use std::path::Path;

use serde_json::Value;

use crate::completion_shells::shell;
use crate::fixture::{
    Fixture, error_code, listing, require_tool, sandbox_available, snapshot_settings_naming,
};

fn stdout_of(out: std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn path_prints_the_isolation_that_list_reports() {
    let fx = Fixture::new();
    fx.bind("one");
    fx.bind("two");
    let (_, listed) = fx.json(&["list"]);
    let worktree = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == "two")
        .unwrap()["worktree"]
        .as_str()
        .unwrap()
        .to_string();
    let printed = stdout_of(fx.cmd().args(["path", "-s", "two"]).output().unwrap());
    assert_eq!(printed, format!("{worktree}\n"));
    assert!(Path::new(&worktree).join("README.md").is_file());
    let (code, doc) = fx.json(&["path", "-s", "two"]);
    assert_eq!(code, 0);
    assert_eq!(doc["schema"], "a3s-iso.path.v1");
    assert_eq!(doc["session_id"], "two");
    assert_eq!(doc["worktree"], worktree.as_str());
    // Inside an isolation, the session is the one it belongs to.
    let inside = stdout_of(
        fx.cmd_in(Path::new(&worktree))
            .arg("path")
            .output()
            .unwrap(),
    );
    assert_eq!(inside, format!("{worktree}\n"));
}

#[test]
fn path_refuses_sessions_without_a_tree_and_changes_nothing() {
    let fx = Fixture::new();
    let (code, doc) = fx.json(&["bind", "-s", "ro", "--read-only"]);
    assert_eq!(code, 0, "{doc}");
    fx.bind("gone");
    fx.bind("dropped");
    std::fs::remove_dir_all(fx.isolation("gone")).unwrap();
    let (code, doc) = fx.json(&["discard", "-s", "dropped"]);
    assert_eq!(code, 0, "{doc}");
    let state = fx.src.join(".git/a3s-iso");
    let before = listing(&state);
    for id in ["ro", "gone", "dropped"] {
        let (code, doc) = fx.json(&["path", "-s", id]);
        assert_eq!(code, 4, "{id}: {doc}");
        assert_eq!(error_code(&doc), "isolation_unavailable", "{id}: {doc}");
        let out = fx.cmd().args(["path", "-s", id]).output().unwrap();
        assert_eq!(out.status.code(), Some(4));
        assert!(out.stdout.is_empty(), "{id}: nothing to cd into on stdout");
    }
    assert_eq!(listing(&state), before, "path only reads");
    assert!(!fx.isolation("gone").exists());
}

/// `eval "$(a3s-iso shell-init SHELL)"`, then `a3s-iso cd ID`, in the shell itself.
fn cd_in(fx: &Fixture, program: &str, script: &str) -> String {
    let mut cmd = shell(fx, program);
    match program {
        "fish" => cmd.args(["--no-config", "-c", script]),
        "zsh" => cmd.args(["-f", "-c", script]),
        _ => cmd.args(["--norc", "--noprofile", "-c", script]),
    };
    stdout_of(cmd.output().unwrap())
}

#[test]
fn shell_init_function_changes_directory_into_the_isolation() {
    let fx = Fixture::new();
    fx.bind("enter");
    let target = fx.isolation("enter");
    let posix = "eval \"$(a3s-iso shell-init SHELL)\"; \
                 a3s-iso cd nosuch 2>/dev/null && echo wrong; pwd -P; \
                 a3s-iso cd enter && pwd -P; a3s-iso path -s enter";
    let fish = "a3s-iso shell-init fish | source; \
                a3s-iso cd nosuch 2>/dev/null; and echo wrong; pwd -P; \
                a3s-iso cd enter; and pwd -P; a3s-iso path -s enter";
    let mut tried = 0;
    for program in ["bash", "zsh", "fish"] {
        if !require_tool(program) {
            continue;
        }
        tried += 1;
        let script = if program == "fish" {
            fish.to_string()
        } else {
            posix.replace("SHELL", program)
        };
        let out = cd_in(&fx, program, &script);
        let lines: Vec<&str> = out.lines().collect();
        // A refused cd stays where it was; then into the isolation; other commands pass through.
        let expected = [
            fx.src.display().to_string(),
            target.display().to_string(),
            target.display().to_string(),
        ];
        assert_eq!(lines, expected, "{program}");
    }
    assert!(tried > 0);
}

/// Binds `id`, changes `file` in its isolation, promotes it, commits the result; returns the
/// promote's digest.
fn promote_one(fx: &Fixture, id: &str, file: &str) -> String {
    fx.bind(id);
    std::fs::write(fx.isolation(id).join(file), format!("{id}\n")).unwrap();
    let (code, doc) = fx.json(&["promote", "-s", id]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "applied", "{doc}");
    fx.commit_all(&format!("promote {id}"));
    // Promotions a few milliseconds apart, so newest-first has one answer.
    std::thread::sleep(std::time::Duration::from_millis(20));
    doc["digest"].as_str().unwrap().to_string()
}

#[test]
fn log_lists_promotions_newest_first() {
    let fx = Fixture::new();
    let (code, doc) = fx.json(&["log"]);
    assert_eq!((code, doc["promotions"].clone()), (0, Value::Array(vec![])));
    let first = promote_one(&fx, "first", "a.txt");
    let second = promote_one(&fx, "second", "b.txt");
    let head_before_second = fx.git(&fx.src, &["rev-parse", "HEAD~1"]);
    // What the journal holds on disk, and what log reads from it.
    let journal = fx.src.join(".git/a3s-iso/promoted");
    for digest in [&first, &second] {
        let hex = digest.strip_prefix("sha256:").unwrap();
        assert!(journal.join(format!("{hex}.json")).is_file());
    }
    let (code, doc) = fx.json(&["log"]);
    assert_eq!(code, 0);
    assert_eq!(doc["schema"], "a3s-iso.log.v1");
    let promotions = doc["promotions"].as_array().unwrap();
    let digests: Vec<&str> = promotions
        .iter()
        .map(|p| p["digest"].as_str().unwrap())
        .collect();
    assert_eq!(digests, [second.as_str(), first.as_str()]);
    let newest = &promotions[0];
    let named = [
        (second.as_str(), "[SECOND]"),
        (head_before_second.as_str(), "[HEAD_BEFORE_SECOND]"),
    ];
    snapshot_settings_naming(&fx, &named).bind(|| {
        insta::assert_json_snapshot!(newest, @r#"
        {
          "digest": "[SECOND]",
          "files_changed": 1,
          "landing": "applied",
          "mode": "patch",
          "patch_bytes": "[PATCH_BYTES]",
          "promoted_at_ms": "[MS]",
          "session_id": "second",
          "source_head": "[HEAD_BEFORE_SECOND]"
        }
        "#)
    });
    assert!(
        newest["promoted_at_ms"].as_u64().unwrap()
            >= promotions[1]["promoted_at_ms"].as_u64().unwrap()
    );

    let (_, limited) = fx.json(&["log", "--limit", "1"]);
    assert_eq!(limited["promotions"].as_array().unwrap().len(), 1);
    assert_eq!(limited["promotions"][0]["digest"], second.as_str());
    let (_, only) = fx.json(&["log", "-s", "first"]);
    assert_eq!(only["promotions"].as_array().unwrap().len(), 1);
    assert_eq!(only["promotions"][0]["digest"], first.as_str());

    let table = stdout_of(fx.cmd().arg("log").output().unwrap());
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("TIME"), "{table}");
    assert!(
        lines[1].contains("second") && lines[1].contains(&second[..19]),
        "{table}"
    );
    assert!(
        lines[2].contains("first") && lines[2].contains("applied (patch)"),
        "{table}"
    );
}

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
    let claim = serde_json::json!({
        "session_id": "dead-bind",
        "path": fx.root.join("work/.a3s-isolate-dead-bind"),
        "bind_process": {"pid": 4_000_000, "start_identity": "linux-proc-start-ticks:1", "hostname": host.trim()},
        "created_at_ms": 1,
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
