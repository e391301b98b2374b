//! Tools kept where users keep them: a program (or its `#!` interpreter) installed under a
//! directory the sandbox replaces with an empty one (`/var/tmp`), linked into `PATH`, is named
//! with the installation's prefix to allow, and following the hint literally works.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::fixture::{Fixture, json_of, require_tool};

macro_rules! require_sandbox {
    () => {
        if !require_tool("sandbox") {
            return;
        }
    };
}

/// A directory under `/var/tmp` of this test's own, removed when dropped.
struct VarTmp(PathBuf);

impl VarTmp {
    fn new(name: &str) -> VarTmp {
        let unique = format!(
            "a3s-iso-test-{name}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        );
        let dir = Path::new("/var/tmp").join(unique);
        std::fs::create_dir_all(&dir).unwrap();
        VarTmp(std::fs::canonicalize(&dir).unwrap())
    }
}

impl Drop for VarTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn executable(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// An npm-style installation under `prefix`: `lib/node_modules/pkg/cli.js` holding `script`,
/// and `bin/tool` linking to it.
fn install(prefix: &Path, script: &str) {
    executable(&prefix.join("lib/node_modules/pkg/cli.js"), script);
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    std::os::unix::fs::symlink("../lib/node_modules/pkg/cli.js", prefix.join("bin/tool")).unwrap();
}

/// `PATH` with `dir` first.
fn path_with(dir: &Path) -> std::ffi::OsString {
    let mut dirs = vec![dir.to_path_buf()];
    dirs.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap()));
    std::env::join_paths(dirs).unwrap()
}

fn run(fx: &Fixture, path: &std::ffi::OsString, flags: &[String], command: &[&str]) -> Output {
    let mut cmd = fx.cmd();
    cmd.env("PATH", path)
        .args(["run", "-s", "tools"])
        .args(flags);
    cmd.arg("--").args(command).output().unwrap()
}

/// The flags a hint says to add: the words after "to let it through: " (or "the command
/// through: ").
fn hinted_flags(output: &Output) -> Vec<String> {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("hint:") && l.contains("--allow-read"))
        .unwrap_or_else(|| panic!("no --allow-read hint in:\n{stderr}"));
    let (_, flags) = line.split_once(" through: ").unwrap();
    flags.split_whitespace().map(String::from).collect()
}

#[test]
fn a_tool_linked_into_path_from_var_tmp_is_named_with_its_prefix_and_the_hint_works() {
    require_sandbox!();
    let tmp = VarTmp::new("npm");
    let prefix = tmp.0.join("prefix");
    install(&prefix, "#!/bin/sh\necho tool ran \"$@\"\n");
    let fx = Fixture::new();
    fx.bind("tools");
    let path = path_with(&prefix.join("bin"));
    let failed = run(&fx, &path, &[], &["tool", "--version"]);
    assert_eq!(failed.status.code(), Some(127), "{failed:?}");
    let flags = hinted_flags(&failed);
    assert_eq!(
        flags,
        vec!["--allow-read".to_string(), prefix.display().to_string()]
    );
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(stderr.contains("under /var/tmp"), "{stderr}");
    // The JSON error says the same.
    let mut cmd = fx.cmd();
    cmd.env("PATH", &path)
        .args(["--json", "run", "-s", "tools", "--", "tool"]);
    let (code, doc) = json_of(cmd.output().unwrap());
    assert_eq!(code, 127, "{doc}");
    let hidden = &doc["error"]["hidden_paths"][0];
    assert_eq!(doc["error"]["code"], "command_not_found", "{doc}");
    assert_eq!(hidden["allow_path"], prefix.display().to_string(), "{doc}");
    assert_eq!(hidden["under"], "/var/tmp", "{doc}");
    assert_eq!(
        hidden["path"],
        prefix
            .join("lib/node_modules/pkg/cli.js")
            .display()
            .to_string()
    );
    // Followed literally: it runs, by name and by its full path.
    let ok = run(&fx, &path, &flags, &["tool", "--version"]);
    assert_eq!(ok.status.code(), Some(0), "{ok:?}");
    assert_eq!(String::from_utf8_lossy(&ok.stdout), "tool ran --version\n");
    let full = prefix.join("bin/tool").display().to_string();
    let failed = run(&fx, &path, &[], &[&full]);
    assert_eq!(failed.status.code(), Some(127), "{failed:?}");
    assert_eq!(hinted_flags(&failed), flags);
    let ok = run(&fx, &path, &flags, &[&full]);
    assert_eq!(ok.status.code(), Some(0), "{ok:?}");
}

#[test]
fn a_node_tool_installed_by_npm_under_var_tmp_runs_once_its_prefix_is_allowed() {
    require_sandbox!();
    if !require_tool("node") {
        return;
    }
    let tmp = VarTmp::new("node");
    let prefix = tmp.0.join("npm-global");
    install(
        &prefix,
        "#!/usr/bin/env node\nconsole.log('node tool ' + process.argv.slice(2).join(' '))\n",
    );
    let fx = Fixture::new();
    fx.bind("tools");
    let path = path_with(&prefix.join("bin"));
    let failed = run(&fx, &path, &[], &["tool", "x"]);
    assert_eq!(failed.status.code(), Some(127), "{failed:?}");
    let flags = hinted_flags(&failed);
    assert_eq!(
        flags,
        vec!["--allow-read".to_string(), prefix.display().to_string()]
    );
    let ok = run(&fx, &path, &flags, &["tool", "x"]);
    assert_eq!(ok.status.code(), Some(0), "{ok:?}");
    assert_eq!(String::from_utf8_lossy(&ok.stdout), "node tool x\n");
}

#[test]
fn an_interpreter_under_var_tmp_is_named_for_a_script_that_names_it() {
    require_sandbox!();
    let tmp = VarTmp::new("interp");
    let interp_prefix = tmp.0.join("lang");
    executable(
        &interp_prefix.join("bin/myinterp"),
        "#!/bin/sh\nexec /bin/sh \"$@\"\n",
    );
    let fx = Fixture::new();
    fx.bind("tools");
    let iso = fx.isolation("tools");
    let direct = format!(
        "#!{}\necho direct ran\n",
        interp_prefix.join("bin/myinterp").display()
    );
    executable(&iso.join("direct.sh"), &direct);
    executable(
        &iso.join("via-env.sh"),
        "#!/usr/bin/env myinterp\necho env ran\n",
    );
    let path = path_with(&interp_prefix.join("bin"));
    let expected = vec![
        "--allow-read".to_string(),
        interp_prefix.display().to_string(),
    ];
    for (script, said) in [
        ("./direct.sh", "direct ran\n"),
        ("./via-env.sh", "env ran\n"),
    ] {
        let script_path = iso.join(script.trim_start_matches("./"));
        let script_path = script_path.display().to_string();
        let failed = run(&fx, &path, &[], &[&script_path]);
        assert_eq!(failed.status.code(), Some(127), "{script}: {failed:?}");
        let flags = hinted_flags(&failed);
        assert_eq!(flags, expected, "{script}");
        let ok = run(&fx, &path, &flags, &[&script_path]);
        assert_eq!(ok.status.code(), Some(0), "{script}: {ok:?}");
        assert_eq!(String::from_utf8_lossy(&ok.stdout), said);
    }
}

#[test]
fn doctor_warns_when_a_profiles_agent_lives_where_run_shows_an_empty_directory() {
    let tmp = VarTmp::new("doctor");
    let prefix = tmp.0.join("agent");
    install(&prefix, "#!/bin/sh\necho agent\n");
    std::fs::rename(prefix.join("bin/tool"), prefix.join("bin/claude")).unwrap();
    let fx = Fixture::new();
    let doctor = |path: &std::ffi::OsString| {
        let mut cmd = fx.cmd();
        let output = cmd
            .env("PATH", path)
            .args(["--json", "doctor"])
            .output()
            .unwrap();
        let (_, doc) = json_of(output);
        doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "agent_tools")
            .unwrap_or_else(|| panic!("no agent_tools check in {doc}"))
            .clone()
    };
    let check = doctor(&path_with(&prefix.join("bin")));
    assert_eq!(check["status"], "warn", "{check}");
    let detail = check["detail"].as_str().unwrap();
    assert!(detail.contains("profile claude"), "{check}");
    assert!(detail.contains("under /var/tmp"), "{check}");
    let hint = check["hint"].as_str().unwrap();
    assert!(
        hint.contains(&format!("--allow-read {}", prefix.display())),
        "{check}"
    );
    // Installed elsewhere (or not at all): nothing to say.
    let elsewhere = fx.home.join("agent-bin");
    executable(&elsewhere.join("claude"), "#!/bin/sh\necho agent\n");
    let check = doctor(&path_with(&elsewhere));
    assert_eq!(check["status"], "ok", "{check}");
}
