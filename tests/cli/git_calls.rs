//! How many git processes each command starts (counted through a `--git` wrapper that logs
//! its arguments): a ceiling per command, and no question asked twice in one promote.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::fixture::Fixture;

/// A git that logs each call's arguments (one line each) to `log`, then runs the real one.
fn logging_git(fx: &Fixture) -> (PathBuf, PathBuf) {
    let real = which_git();
    let log = fx.root.join("git-calls.log");
    let wrapper = fx.root.join("logging-git");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    (wrapper, log)
}

fn which_git() -> PathBuf {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("git"))
        .find(|git| git.is_file())
        .expect("git on PATH")
}

/// Runs `a3s-iso --git WRAPPER ARGS` and returns the git calls it made.
fn calls(fx: &Fixture, (wrapper, log): (&Path, &Path), args: &[&str]) -> Vec<String> {
    let _ = std::fs::remove_file(log);
    let out = fx
        .cmd()
        .arg("--git")
        .arg(wrapper)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn commands_start_no_more_git_processes_than_they_need() {
    let fx = Fixture::new();
    let (wrapper, log) = logging_git(&fx);
    let git = (wrapper.as_path(), log.as_path());
    assert!(calls(&fx, git, &["bind", "-s", "g"]).len() <= 10);
    let iso = fx.isolation("g");
    for i in 0..10 {
        std::fs::write(iso.join(format!("f{i}.txt")), format!("{i}\n")).unwrap();
    }
    assert!(calls(&fx, git, &["list"]).len() <= 3);
    let run = calls(&fx, git, &["run", "-s", "g", "--no-sandbox", "--", "true"]);
    assert!(run.len() <= 9, "{run:#?}");
    assert!(calls(&fx, git, &["capture", "-s", "g"]).len() <= 8);
    let promote = calls(&fx, git, &["promote", "-s", "g"]);
    assert!(promote.len() <= 13, "{promote:#?}");
    // What cannot change while it runs is asked once: a commit by its full id, the
    // checkout's core settings.
    let asked = |what: &str| promote.iter().filter(|c| c.contains(what)).count();
    let commits: Vec<&String> = promote.iter().filter(|c| c.contains("^{commit}")).collect();
    let distinct: std::collections::BTreeSet<&&String> = commits.iter().collect();
    assert_eq!(commits.len(), distinct.len(), "{promote:#?}");
    assert_eq!(asked("--get-regexp ^core"), 1, "{promote:#?}");
    assert_eq!(asked("core.sparseCheckout"), 0, "{promote:#?}");
    assert!(fx.src.join("f9.txt").is_file());
}
