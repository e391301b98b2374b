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

/// What a promote syncs, traced: the intent (its file and its directory) before the first file
/// of the checkout is renamed into place, the journal entry (file and directory) after the
/// last; the artifacts' contents, but not their directory. Seven in all.
#[test]
fn a_promote_syncs_its_intent_and_journal_before_and_after_the_checkout() {
    if !crate::fixture::require_tool("strace") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("s");
    for i in 0..3 {
        std::fs::write(fx.isolation("s").join(format!("f{i}.txt")), "new\n").unwrap();
    }
    let log = fx.root.join("strace.log");
    let inner = fx.cmd();
    let mut cmd = std::process::Command::new("strace");
    cmd.args(["-f", "-y", "-qq", "-s", "4096", "-o"])
        .arg(&log)
        .args(["-e", "trace=fsync,fdatasync,rename,renameat,renameat2"])
        .arg(inner.get_program())
        .args(inner.get_args())
        .args(["promote", "-s", "s"])
        .current_dir(&fx.src)
        .stdin(std::process::Stdio::null());
    crate::fixture::isolate(&mut cmd, &fx.home);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read(fx.src.join("f2.txt")).unwrap(), b"new\n");
    let trace = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = trace.lines().collect();
    let syncs: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.contains("fsync(") || l.contains("fdatasync("))
        .collect();
    assert_eq!(syncs.len(), 7, "{syncs:#?}");
    let at = |what: &dyn Fn(&str) -> bool| lines.iter().position(|l| what(l));
    let synced =
        |end: &'static str| move |l: &str| l.contains("sync(") && l.contains(&format!("{end}>)"));
    let intent_dir = at(&synced("/a3s-iso/intents")).expect("the intents' directory synced");
    let journal_dir = at(&synced("/a3s-iso/promoted")).expect("the journal's directory synced");
    let into_checkout = |l: &str| l.contains("rename") && l.contains("/.a3s-iso-");
    let first = at(&into_checkout).expect("files renamed into the checkout");
    let last = lines.iter().rposition(|l| into_checkout(l)).unwrap();
    assert!(intent_dir < first && last < journal_dir, "{trace}");
    for name in [".change.patch.tmp", ".summary.json.tmp"] {
        assert!(syncs.iter().any(|l| l.contains(name)), "{name}: {syncs:#?}");
    }
    assert!(
        !syncs
            .iter()
            .any(|l| l.contains("/a3s-iso/artifacts/") && !l.contains(".tmp"))
    );
}
