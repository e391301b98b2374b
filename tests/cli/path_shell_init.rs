//! `path` and `shell-init`: the isolation's path for scripts, and a shell function that
//! changes directory into it.

use std::path::Path;

use crate::completion_shells::shell;
use crate::fixture::{Fixture, error_code, listing, require_tool, stdout_of};

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
