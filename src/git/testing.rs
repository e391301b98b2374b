//! Test support: git run directly, isolated from the machine, for tests that build a
//! repository or an index with git itself.
#![cfg(test)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// A git in `dir` that reads nothing of the machine's (configuration, home, repository
/// variables), with a pinned identity.
pub(crate) fn isolated(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir.join("no-home"))
        .env("XDG_CONFIG_HOME", dir.join("no-config"))
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_DIR");
    cmd
}

/// Runs `cmd` with `args`, `input` on its standard input; its output, once it succeeded.
pub(crate) fn output(mut cmd: Command, args: &[&str], input: &[u8]) -> Vec<u8> {
    let mut child = cmd
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    out.stdout
}

/// [`isolated`] git in `dir` with `args`; its output, once it succeeded.
pub(crate) fn git(dir: &Path, args: &[&str]) -> Vec<u8> {
    output(isolated(dir), args, b"")
}
