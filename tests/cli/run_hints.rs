//! `run` names the paths a failed command could not reach because of the sandbox, and the
//! flag that allows each; a command given without `--` is told where it goes.

use crate::fixture::{Fixture, error_code, human, require_tool, snapshot_settings_naming};

macro_rules! require_sandbox {
    () => {
        if !require_tool("sandbox") {
            return;
        }
    };
}

/// A script on the host's `/tmp`, outside every fixture directory.
fn host_tmp_script(fx: &Fixture) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("a3s-iso-hint-")
        .tempdir_in("/tmp")
        .unwrap();
    let script = dir.path().join("a.sh");
    std::fs::write(&script, "echo ran > ran.txt\n").unwrap();
    assert!(!script.starts_with(&fx.root));
    (dir, script)
}

#[test]
fn a_script_on_the_hosts_tmp_is_named_with_the_flag_that_shows_it() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("h");
    let (_dir, script) = host_tmp_script(&fx);
    let script_arg = script.to_str().unwrap();
    let out = fx
        .cmd()
        .args(["--json", "run", "-s", "h", "--", "sh", script_arg])
        .output()
        .unwrap();
    let (code, doc) = crate::fixture::json_of(out.clone());
    assert_eq!(code, 2, "{doc}");
    assert_eq!(doc["state"], "failed");
    let hints = &doc["hidden_paths"];
    let named = [(script_arg, "[SCRIPT]")];
    snapshot_settings_naming(&fx, &named).bind(|| {
        insta::assert_json_snapshot!(hints, @r#"
        [
          {
            "allow": "read",
            "allow_path": "[SCRIPT]",
            "path": "[SCRIPT]",
            "reason": "private",
            "under": "/tmp"
          }
        ]
        "#)
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("--allow-read {script_arg}")),
        "{stderr}"
    );

    // The flag it names is the one that works.
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "h",
        "--allow-read",
        script_arg,
        "--",
        "sh",
        script_arg,
    ]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["hidden_paths"], serde_json::json!([]));
    assert!(fx.isolation("h").join("ran.txt").is_file());
}

#[test]
fn a_secret_and_a_read_only_target_are_named_from_a_shell_script() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("s");
    std::fs::create_dir_all(fx.home.join(".ssh")).unwrap();
    std::fs::write(fx.home.join(".ssh/id_ed25519"), "secret").unwrap();
    let key = fx.home.join(".ssh/id_ed25519");
    let target = fx.home.join("notes.txt");
    let script = format!(
        "cat {} > key.txt; echo x >> {}",
        key.display(),
        target.display()
    );
    let (code, doc) = fx.json(&["run", "-s", "s", "--", "sh", "-c", &script]);
    assert_ne!(code, 0, "{doc}");
    let hints = doc["hidden_paths"].as_array().unwrap();
    let find = |path: &std::path::Path| {
        hints
            .iter()
            .find(|h| h["path"] == path.to_str().unwrap())
            .unwrap_or_else(|| panic!("no hint for {}: {doc}", path.display()))
    };
    let secret = find(&key);
    assert_eq!(secret["reason"], "hidden");
    assert_eq!(secret["under"], fx.home.join(".ssh").to_str().unwrap());
    assert_eq!(secret["allow"], "read");
    let read_only = find(&target);
    assert_eq!(read_only["reason"], "read_only");
    assert_eq!(read_only["allow"], "write");
    // The file does not exist: the flag needs a path that does, its directory.
    assert_eq!(read_only["allow_path"], fx.home.to_str().unwrap());
    // key.txt is in the isolation: writable, so it is not named.
    assert_eq!(hints.len(), 2, "{doc}");
    assert!(!target.exists());
}

#[test]
fn a_command_that_succeeds_gets_no_hints_and_one_that_fails_alone_gets_none_either() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("q");
    let (_dir, script) = host_tmp_script(&fx);
    // It names a private path but succeeds (its own test of existence).
    let probe = format!("test -e {} || true", script.display());
    let (code, doc) = fx.json(&["run", "-s", "q", "--", "sh", "-c", &probe]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["hidden_paths"], serde_json::json!([]));
    // It fails for a reason of its own, naming only paths it can reach.
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "q",
        "--",
        "sh",
        "-c",
        "cat /etc/hostname; exit 3",
    ]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["hidden_paths"], serde_json::json!([]));
}

#[test]
fn hints_are_read_from_a_script_file_the_shell_runs() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("f");
    let (_dir, script) = host_tmp_script(&fx);
    let iso = fx.isolation("f");
    std::fs::write(iso.join("build.sh"), format!(". {}\n", script.display())).unwrap();
    let (code, doc) = fx.json(&["run", "-s", "f", "--", "sh", "build.sh"]);
    assert_ne!(code, 0, "{doc}");
    let hints = doc["hidden_paths"].as_array().unwrap();
    assert_eq!(hints.len(), 1, "{doc}");
    assert_eq!(hints[0]["path"], script.to_str().unwrap());
    assert_eq!(hints[0]["reason"], "private");
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
