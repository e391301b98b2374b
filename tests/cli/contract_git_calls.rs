//! How many git processes each command starts (counted through a `--git` wrapper that logs
//! its arguments): a ceiling per command, and no question asked twice in one promote.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::fixture::Fixture;

/// A git that logs each call's arguments (one line each) to `log`, then runs the real one.
fn logging_git(fx: &Fixture) -> (PathBuf, PathBuf) {
    let real = crate::fixture::git_on_path();
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
    let listed = calls(&fx, git, &["list"]);
    assert!(listed.len() <= 3, "{listed:#?}");
    assert!(calls(&fx, git, &["bind", "-s", "g"]).len() <= 10);
    let iso = fx.isolation("g");
    for i in 0..10 {
        std::fs::write(iso.join(format!("f{i}.txt")), format!("{i}\n")).unwrap();
    }
    // With a live session, `list` predicts its conflicts as `overlaps` does, and no more.
    let listed = calls(&fx, git, &["list"]);
    let predicted = calls(&fx, git, &["overlaps"]);
    assert!(listed.len() <= predicted.len() + 1, "{listed:#?}");
    let run = calls(&fx, git, &["run", "-s", "g", "--no-sandbox", "--", "true"]);
    assert!(run.len() <= 9, "{run:#?}");
    assert!(calls(&fx, git, &["capture", "-s", "g"]).len() <= 8);
    let promote = calls(&fx, git, &["promote", "-s", "g"]);
    assert!(promote.len() <= 11, "{promote:#?}");
    // What cannot change while it runs is asked once: a commit by its full id, the
    // checkout's core settings, each path's attributes. What is known already is not asked:
    // the bound commit the isolation's HEAD still names, the images the patch's own headers
    // give. (A git behind a wrapper, as this one is, is asked its version every time.)
    let asked = |what: &str| promote.iter().filter(|c| c.contains(what)).count();
    assert_eq!(asked("--version"), 1, "{promote:#?}");
    assert_eq!(asked("^{commit}"), 1, "{promote:#?}");
    assert_eq!(asked("diff-tree"), 0, "{promote:#?}");
    assert_eq!(asked("check-attr"), 1, "{promote:#?}");
    let commits: Vec<&String> = promote.iter().filter(|c| c.contains("^{commit}")).collect();
    let distinct: std::collections::BTreeSet<&&String> = commits.iter().collect();
    assert_eq!(commits.len(), distinct.len(), "{promote:#?}");
    assert_eq!(asked("--get-regexp ^core"), 1, "{promote:#?}");
    assert_eq!(asked("core.sparseCheckout"), 0, "{promote:#?}");
    assert!(fx.src.join("f9.txt").is_file());
}

/// A compiled git's version is asked by the first command and kept per binary: the real git,
/// traced, is not asked again by the next one.
#[test]
fn a_compiled_git_is_asked_its_version_once() {
    let fx = Fixture::new();
    let trace = fx.root.join("trace2.log");
    let versions_asked = |args: &[&str]| {
        let _ = std::fs::remove_file(&trace);
        let out = fx
            .cmd()
            .env("GIT_TRACE2", &trace)
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let log = std::fs::read_to_string(&trace).unwrap();
        assert!(log.contains(" start "), "{log}");
        log.lines()
            .filter(|l| l.contains(" start ") && l.ends_with(" --version"))
            .count()
    };
    assert_eq!(versions_asked(&["list"]), 1);
    assert_eq!(versions_asked(&["list"]), 0);
    fx.bind("s");
    assert_eq!(versions_asked(&["capture", "-s", "s"]), 0);
}

#[test]
fn a_branch_promote_asks_who_commits_once() {
    let fx = Fixture::new();
    let (wrapper, log) = logging_git(&fx);
    let git = (wrapper.as_path(), log.as_path());
    calls(&fx, git, &["bind", "-s", "b"]);
    let iso = fx.isolation("b");
    std::fs::write(iso.join("new.txt"), "x\n").unwrap();
    fx.git(&iso, &["add", "new.txt"]);
    fx.git(&iso, &["commit", "-q", "-m", "add new"]);
    std::fs::write(iso.join("left.txt"), "left\n").unwrap();
    let promote = calls(&fx, git, &["promote", "-s", "b", "--mode", "branch"]);
    // The snapshot's `status` is followed by one `update-index` here: the tree changed.
    assert!(promote.len() <= 28, "{promote:#?}");
    let asked = |what: &str| promote.iter().filter(|c| c.contains(what)).count();
    assert_eq!(asked("var GIT_COMMITTER_IDENT"), 1, "{promote:#?}");
    let landed = fx.git(&fx.src, &["log", "--format=%s", "-2"]);
    assert_eq!(landed.lines().nth(1), Some("add new"), "{landed}");
    assert_eq!(
        std::fs::read_to_string(fx.src.join("new.txt")).unwrap(),
        "x\n"
    );
    assert_eq!(
        std::fs::read_to_string(fx.src.join("left.txt")).unwrap(),
        "left\n"
    );
}

/// A sandboxed run writes through its layer: `run -- true` starts no git that reads the
/// isolation's files or index, and a run that changes files starts a few more, whatever the
/// repository holds.
#[test]
fn a_sandboxed_run_starts_git_for_what_it_changed_only() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    let (wrapper, log) = logging_git(&fx);
    let git = (wrapper.as_path(), log.as_path());
    fx.bind("s");
    // The first run's full snapshot is what the layer of the later ones starts from.
    calls(&fx, git, &["run", "-s", "s", "--", "true"]);
    let idle = calls(&fx, git, &["run", "-s", "s", "--", "true"]);
    assert!(idle.len() <= 4, "{idle:#?}");
    assert!(
        !idle
            .iter()
            .any(|c| c.contains(" add ") || c.contains("diff")),
        "{idle:#?}"
    );
    let script = "for i in 1 2 3 4 5 6 7 8 9 10; do echo $i > f$i.txt; done";
    let changed = calls(&fx, git, &["run", "-s", "s", "--", "sh", "-c", script]);
    assert!(changed.len() <= 12, "{changed:#?}");
    assert!(!changed.iter().any(|c| c.contains(" add ")), "{changed:#?}");
    assert_eq!(
        std::fs::read_to_string(fx.isolation("s").join("f10.txt")).unwrap(),
        "10\n"
    );
}

/// What a promote syncs, traced: the intent (its file and its directory) before the first file
/// of the checkout is renamed into place, the journal entry (file and directory) after the
/// last. Four in all: the artifacts are reports, written by rename and never synced.
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
    assert_eq!(syncs.len(), 4, "{syncs:#?}");
    let at = |what: &dyn Fn(&str) -> bool| lines.iter().position(|l| what(l));
    let synced =
        |end: &'static str| move |l: &str| l.contains("sync(") && l.contains(&format!("{end}>)"));
    let intent_dir = at(&synced("/a3s-iso/intents")).expect("the intents' directory synced");
    let journal_dir = at(&synced("/a3s-iso/promoted")).expect("the journal's directory synced");
    let into_checkout = |l: &str| l.contains("rename") && l.contains("/.a3s-iso-");
    let first = at(&into_checkout).expect("files renamed into the checkout");
    let last = lines.iter().rposition(|l| into_checkout(l)).unwrap();
    assert!(intent_dir < first && last < journal_dir, "{trace}");
    assert!(
        !syncs.iter().any(|l| l.contains("/a3s-iso/artifacts/")),
        "{syncs:#?}"
    );
    let artifacts = fx.src.join(".git/a3s-iso/artifacts");
    let written: Vec<_> = std::fs::read_dir(&artifacts).unwrap().collect();
    assert_eq!(written.len(), 1);
}

#[test]
fn a_queue_asks_which_paths_each_session_changed_once() {
    let fx = Fixture::new();
    let (wrapper, log) = logging_git(&fx);
    let git = (wrapper.as_path(), log.as_path());
    for id in ["q1", "q2", "q3"] {
        fx.bind(id);
        std::fs::write(fx.isolation(id).join(format!("{id}.txt")), "work\n").unwrap();
    }
    let land = calls(&fx, git, &["land", "--all", "--keep"]);
    // The queue's plan asks it of every session, and each landing again of its own session
    // (HEAD moved): the same two trees, so the same answer.
    let mut asked: Vec<&str> = land
        .iter()
        .filter(|c| c.contains("diff-tree") && c.contains("--name-only --no-renames"))
        .filter(|c| !c.contains("--diff-filter"))
        .map(String::as_str)
        .collect();
    let all = asked.len();
    asked.sort_unstable();
    asked.dedup();
    assert_eq!(asked.len(), all, "{land:#?}");
    // 59 before the queue snapshotted the next session ahead: that snapshot notes q2's and
    // q3's trees, which each landing's landed check then compares with HEAD's (two diff-trees
    // each), as it does for every session a run snapshotted.
    assert!(land.len() <= 63, "{} git calls: {land:#?}", land.len());
    let landed = fx.git(&fx.src, &["log", "--format=%s", "-3"]);
    assert_eq!(landed.lines().count(), 3, "{landed}");
    for id in ["q1", "q2", "q3"] {
        let file = std::fs::read_to_string(fx.src.join(format!("{id}.txt"))).unwrap();
        assert_eq!(file, "work\n");
    }
}

#[test]
fn a_tested_landing_plans_its_promote_while_the_test_runs() {
    let fx = Fixture::new();
    let (wrapper, log) = logging_git(&fx);
    let git = (wrapper.as_path(), log.as_path());
    fx.bind("t1");
    std::fs::write(fx.isolation("t1").join("t1.txt"), "work\n").unwrap();
    fx.write("by-you.txt", "yours\n");
    fx.commit_all("the user moves on");
    // The test marks the log when it ends, a while after it started: what the promote asks
    // beside it is asked by then.
    let test = format!("sleep 2; echo test-ended >> '{}'", log.display());
    let land = calls(
        &fx,
        git,
        &["land", "--all", "--keep", "--no-sandbox", "--test", &test],
    );
    let ended = land.iter().position(|c| c == "test-ended");
    let ended = ended.unwrap_or_else(|| panic!("the test never ran: {land:#?}"));
    // The landing commit (the rebase's own commits are made with `--no-gpg-sign`) and the
    // paths its fast-forward moves.
    let promote_asks = |c: &str| {
        c.contains("commit-tree") && !c.contains("--no-gpg-sign") || c.contains("--name-status")
    };
    let asked: Vec<usize> = (land.iter().enumerate())
        .filter(|(_, c)| promote_asks(c))
        .map(|(at, _)| at)
        .collect();
    assert_eq!(asked.len(), 2, "{land:#?}");
    assert!(asked.iter().all(|at| *at < ended), "{land:#?}");
    let file = std::fs::read_to_string(fx.src.join("t1.txt")).unwrap();
    assert_eq!(file, "work\n");
    let landed = fx.git(&fx.src, &["log", "--format=%s", "-2"]);
    assert_eq!(landed.lines().nth(1), Some("the user moves on"), "{landed}");
}
