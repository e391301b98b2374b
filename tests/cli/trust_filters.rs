//! Nothing the command in an isolation can write chooses configuration, links, HEAD or filters
//! for the git that a3s-iso runs outside the sandbox, and patch bytes depend on the two trees
//! only. The attacks are planted by writing the admin dir directly (a command that escaped, or
//! one run with `--no-sandbox`), because the point is that a3s-iso's own git never trusts it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::fixture::{ALLOW_FILE, Fixture, admin_dir, error_code, isolate, json_of};

/// How the command tries to get a filter of its own run by a3s-iso's git.
#[derive(Debug, Clone, Copy)]
enum Attack {
    /// `<admin>/commondir` points at a repository whose config defines `filter.x.clean`.
    CommonDir,
    /// `<admin>/config.worktree` defines `filter.x.clean`; the repository's own config sets
    /// `extensions.worktreeConfig`, so a git that takes the admin dir as its git dir reads it.
    WorktreeConfig,
}

const ATTACKS: [Attack; 2] = [Attack::CommonDir, Attack::WorktreeConfig];

/// Where a planted filter would leave its mark.
fn marker(fx: &Fixture, attack: Attack) -> PathBuf {
    fx.root.join(format!("filter-ran-{attack:?}"))
}

/// Content in the isolation that makes any git snapshotting it run filter `x`: an attributes
/// file sending every path through it, and an edit to hash.
fn content_for_the_filter(iso: &Path) {
    std::fs::write(iso.join(".gitattributes"), "* filter=x\n").unwrap();
    std::fs::write(iso.join("README.md"), "hello\nedited in the isolation\n").unwrap();
}

/// Sets `filter.x.clean` in the config file `file` to a program that leaves `mark`.
fn evil_filter(fx: &Fixture, file: &Path, mark: &Path) {
    let program = format!("touch '{}'; cat", mark.display());
    fx.git(
        &fx.root,
        &[
            "config",
            "-f",
            file.to_str().unwrap(),
            "filter.x.clean",
            &program,
        ],
    );
}

/// Plants `attack` against session `id` (its admin dir written directly) and the content that
/// would trigger it; returns the marker.
fn plant(fx: &Fixture, id: &str, attack: Attack) -> PathBuf {
    let admin = admin_dir(fx, id);
    let mark = marker(fx, attack);
    content_for_the_filter(&fx.isolation(id));
    match attack {
        Attack::CommonDir => {
            let evil = fx.root.join("evil.git");
            fx.git(
                &fx.root,
                &[
                    "clone",
                    "-q",
                    "--bare",
                    fx.src.to_str().unwrap(),
                    "evil.git",
                ],
            );
            evil_filter(fx, &evil.join("config"), &mark);
            std::fs::write(admin.join("commondir"), format!("{}\n", evil.display())).unwrap();
        }
        Attack::WorktreeConfig => {
            fx.git(&fx.src, &["config", "core.repositoryFormatVersion", "1"]);
            fx.git(&fx.src, &["config", "extensions.worktreeConfig", "true"]);
            evil_filter(fx, &admin.join("config.worktree"), &mark);
        }
    }
    mark
}

/// Runs `git add -A` on the isolation the way a3s-iso used to (`--git-dir <admin>`), on a
/// throwaway copy of its index: the planted filter runs. Proves an attack is live.
fn trusting_git_runs_the_filter(fx: &Fixture, id: &str, mark: &Path) -> bool {
    let admin = admin_dir(fx, id);
    let iso = fx.isolation(id);
    let index = fx.root.join("throwaway-index");
    std::fs::copy(admin.join("index"), &index).unwrap();
    let mut cmd = Command::new("git");
    cmd.current_dir(&iso);
    isolate(&mut cmd, &fx.home);
    cmd.arg("--git-dir")
        .arg(&admin)
        .arg("--work-tree")
        .arg(&iso)
        .args(["add", "-A"])
        .env("GIT_INDEX_FILE", &index)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let _ = cmd.status().unwrap();
    let ran = mark.exists();
    let _ = std::fs::remove_file(mark);
    ran
}

/// Binds session `id` for an owner that has exited since: sweep reclaims it.
fn dead_owner_bind(fx: &Fixture, id: &str) {
    let mut owner: Child = Command::new("sleep")
        .arg("120")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let (code, doc) = fx.json(&["bind", "-s", id, "--owner-pid", &owner.id().to_string()]);
    assert_eq!(code, 0, "{doc}");
    owner.kill().unwrap();
    owner.wait().unwrap();
}

#[test]
fn the_planted_filters_run_for_a_git_that_trusts_the_admin_dir() {
    for attack in ATTACKS {
        let fx = Fixture::new();
        fx.bind("s");
        let mark = plant(&fx, "s", attack);
        assert!(
            trusting_git_runs_the_filter(&fx, "s", &mark),
            "{attack:?} is not live, so the tests below would prove nothing"
        );
    }
}

#[test]
fn capture_runs_no_filter_of_the_command() {
    for attack in ATTACKS {
        let fx = Fixture::new();
        fx.bind("s");
        let mark = plant(&fx, "s", attack);
        let (code, doc) = fx.json(&["capture", "-s", "s"]);
        assert_eq!(code, 0, "{attack:?}: {doc}");
        assert!(!mark.exists(), "{attack:?}: the command's filter ran");
        assert!(doc["patch_bytes"].as_u64().unwrap() > 0, "{doc}");
    }
}

#[test]
fn promote_runs_no_filter_of_the_command() {
    for attack in ATTACKS {
        let fx = Fixture::new();
        fx.bind("s");
        let mark = plant(&fx, "s", attack);
        let (code, doc) = fx.json(&["promote", "-s", "s"]);
        assert_eq!(
            (code, doc["outcome"].as_str()),
            (0, Some("applied")),
            "{doc}"
        );
        assert!(!mark.exists(), "{attack:?}: the command's filter ran");
        assert_eq!(
            std::fs::read_to_string(fx.src.join("README.md")).unwrap(),
            "hello\nedited in the isolation\n"
        );
    }
}

#[test]
fn branch_mode_runs_no_filter_of_the_command() {
    for attack in ATTACKS {
        let fx = Fixture::new();
        fx.bind("s");
        let mark = plant(&fx, "s", attack);
        let (code, doc) = fx.json(&["promote", "-s", "s", "--mode", "branch"]);
        assert_eq!(
            (code, doc["outcome"].as_str()),
            (0, Some("applied")),
            "{doc}"
        );
        assert!(!mark.exists(), "{attack:?}: the command's filter ran");
    }
}

#[test]
fn sweep_runs_no_filter_of_the_command() {
    for attack in ATTACKS {
        let fx = Fixture::new();
        dead_owner_bind(&fx, "s");
        let mark = plant(&fx, "s", attack);
        let (code, doc) = fx.json(&["sweep", "--grace", "0s"]);
        assert_eq!(code, 0, "{doc}");
        assert_eq!(doc["reclaimed"].as_array().unwrap().len(), 1, "{doc}");
        assert!(!mark.exists(), "{attack:?}: the command's filter ran");
        assert!(!fx.isolation("s").exists());
        // The final snapshot holds the command's work.
        assert_eq!(
            fx.git(&fx.src, &["show", "refs/a3s-iso/swept/s:README.md"]),
            "hello\nedited in the isolation"
        );
    }
}

#[test]
fn discard_runs_no_filter_of_the_command() {
    for attack in ATTACKS {
        let fx = Fixture::new();
        fx.bind("s");
        let mark = plant(&fx, "s", attack);
        let (code, doc) = fx.json(&["discard", "-s", "s"]);
        assert_eq!(code, 0, "{doc}");
        assert_eq!(doc["removed"], true);
        assert!(!mark.exists(), "{attack:?}: the command's filter ran");
        assert!(!fx.isolation("s").exists());
        assert_eq!(fx.worktrees().len(), 1);
    }
}

/// The command itself rewrites the admin dir (no sandbox stops it); `run`'s own result
/// snapshot afterwards must not take the bait. `repair_links` ran before the command, so this
/// is the case where nothing puts `commondir` back first.
#[test]
fn a_run_that_rewrites_its_admin_dir_gets_no_filter_run() {
    for attack in ATTACKS {
        let fx = Fixture::new();
        fx.bind("s");
        // Planted from outside, then undone, so that the command has something to copy back.
        let admin = admin_dir(&fx, "s");
        let mark = plant(&fx, "s", attack);
        let (name, planted) = match attack {
            Attack::CommonDir => ("commondir", admin.join("commondir")),
            Attack::WorktreeConfig => ("config.worktree", admin.join("config.worktree")),
        };
        let saved = fx.root.join("planted");
        std::fs::rename(&planted, &saved).unwrap();
        if matches!(attack, Attack::CommonDir) {
            std::fs::write(&planted, "../..\n").unwrap();
        }
        let script = format!(
            "echo run > ran.txt && cp '{}' '{}/{name}'",
            saved.display(),
            admin.display()
        );
        let (code, doc) = fx.json(&["run", "-s", "s", "--no-sandbox", "--", "sh", "-c", &script]);
        assert_eq!(code, 0, "{attack:?}: {doc}");
        assert_eq!(doc["state"], "completed", "{doc}");
        assert!(!mark.exists(), "{attack:?}: the command's filter ran");
        assert_eq!(doc["change_set"]["files_changed"], 1, "{doc}");
    }
}

/// Writes `content` as the isolation's HEAD (replacing whatever is there).
fn set_head(fx: &Fixture, id: &str, content: &str) {
    let head = admin_dir(fx, id).join("HEAD");
    let _ = std::fs::remove_file(&head);
    std::fs::write(head, content).unwrap();
}

#[test]
fn a_head_that_names_no_commit_of_the_repository_is_never_followed() {
    let evil_commit = {
        let fx = Fixture::new();
        fx.write("other.txt", "elsewhere\n");
        fx.commit_all("a commit that only another repository has")
    };
    let heads = [
        "ref: refs/heads/../../../../etc\n".to_string(),
        "ref: refs/worktree/mine\n".to_string(),
        "ref: HEAD\n".to_string(),
        "ref: refs/heads/does-not-exist\n".to_string(),
        format!("{evil_commit}\n"),
        "not a head at all\n".to_string(),
        "padded".to_string(),
    ];
    for head in heads {
        let fx = Fixture::new();
        fx.bind("s");
        // The real commit, padded to the other hash's length.
        let padded = format!(
            "{}{}\n",
            fx.git(&fx.src, &["rev-parse", "HEAD"]),
            "0".repeat(24)
        );
        let head = if head == "padded" { padded } else { head };
        std::fs::write(fx.isolation("s").join("work.txt"), "kept\n").unwrap();
        set_head(&fx, "s", &head);
        // A snapshot is the tree's content: it still holds the work.
        let (code, doc) = fx.json(&["capture", "-s", "s"]);
        assert_eq!(code, 0, "{head:?}: {doc}");
        assert_eq!(doc["patch_bytes"].as_u64().map(|b| b > 0), Some(true));
        // Branch mode promotes the commits HEAD names: it refuses rather than guess.
        let (code, doc) = fx.json(&["promote", "-s", "s", "--mode", "branch"]);
        assert_eq!(code, 1, "{head:?}: {doc}");
        assert_eq!(error_code(&doc), "change_set_unavailable", "{doc}");
        assert!(!fx.src.join("work.txt").exists());
    }
}

#[test]
fn a_head_that_is_a_link_or_a_fifo_is_not_followed_or_waited_on() {
    let fx = Fixture::new();
    fx.bind("s");
    std::fs::write(fx.isolation("s").join("work.txt"), "kept\n").unwrap();
    let head = admin_dir(&fx, "s").join("HEAD");
    std::fs::remove_file(&head).unwrap();
    std::os::unix::fs::symlink(fx.src.join(".git/HEAD"), &head).unwrap();
    let (code, doc) = fx.json(&["promote", "-s", "s", "--mode", "branch"]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(error_code(&doc), "change_set_unavailable", "{doc}");
    std::fs::remove_file(&head).unwrap();
    assert!(
        Command::new("mkfifo")
            .arg(&head)
            .status()
            .unwrap()
            .success()
    );
    // Not a regular file: the isolation is not healthy, and nothing hangs on it.
    let (code, doc) = fx.json(&["promote", "-s", "s", "--mode", "branch"]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(error_code(&doc), "change_set_unavailable", "{doc}");
}

#[test]
fn a_head_on_a_branch_of_the_repository_is_followed() {
    let fx = Fixture::new();
    fx.bind("s");
    let iso = fx.isolation("s");
    fx.git(&iso, &["switch", "-q", "-c", "feature"]);
    std::fs::write(iso.join("feature.txt"), "feature\n").unwrap();
    fx.git(&iso, &["add", "feature.txt"]);
    fx.git(&iso, &["commit", "-q", "-m", "feature work"]);
    let (code, doc) = fx.json(&["promote", "-s", "s", "--mode", "branch"]);
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("applied")),
        "{doc}"
    );
    assert_eq!(
        fx.git(&fx.src, &["log", "-1", "--format=%s"]),
        "feature work"
    );
}

/// The form a3s-iso relies on: a git dir holding nothing but `HEAD`, with objects, refs and
/// configuration found through `GIT_COMMON_DIR`, is a repository git accepts, and it sees the
/// same tree as the isolation's own git dir does.
#[test]
fn git_accepts_a_private_git_dir_that_holds_only_head() {
    let fx = Fixture::new();
    fx.bind("s");
    let iso = fx.isolation("s");
    std::fs::write(iso.join("new.txt"), "new\n").unwrap();
    let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let private = fx.root.join("private");
    std::fs::create_dir(&private).unwrap();
    std::fs::write(private.join("HEAD"), format!("{head}\n")).unwrap();
    let index = fx.root.join("index");
    let git = |args: &[&str]| {
        let mut cmd = Command::new("git");
        cmd.current_dir(&iso).args(args);
        isolate(&mut cmd, &fx.home);
        let out = cmd
            .env("GIT_DIR", &private)
            .env("GIT_COMMON_DIR", fx.src.join(".git"))
            .env("GIT_WORK_TREE", &iso)
            .env("GIT_INDEX_FILE", &index)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout)
            .unwrap()
            .trim_end()
            .to_string()
    };
    assert_eq!(git(&["rev-parse", "HEAD"]), head);
    git(&["read-tree", "HEAD"]);
    git(&["add", "-A"]);
    let tree = git(&["write-tree"]);
    fx.git(&iso, &["add", "-A"]);
    assert_eq!(fx.git(&iso, &["write-tree"]), tree);
}

#[test]
fn no_private_git_dir_is_left_behind() {
    let fx = Fixture::new();
    fx.bind("s");
    std::fs::write(fx.isolation("s").join("new.txt"), "new\n").unwrap();
    let (code, doc) = fx.json(&["capture", "-s", "s"]);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = fx.json(&["promote", "-s", "s"]);
    assert_eq!(code, 0, "{doc}");
    let scratch = fx.src.join(".git/a3s-iso/tmp");
    let left: Vec<_> = std::fs::read_dir(&scratch)
        .map(|entries| entries.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

/// A capture of session `s` under `run` with `env` added: its digest and its two trees.
fn capture_with(fx: &Fixture, run: &str, env: Env) -> (String, String, String) {
    let mut cmd = fx.cmd();
    cmd.args(["--json", "capture", "-s", "s", "--run-id", run]);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let (code, doc) = json_of(cmd.output().unwrap());
    assert_eq!(code, 0, "{run}: {doc}");
    let tree = |field: &str| doc[field].as_str().unwrap()["git-tree:".len()..].to_string();
    (
        doc["patch_digest"].as_str().unwrap().to_string(),
        tree("base_tree"),
        tree("result_tree"),
    )
}

/// What a plain `git diff` in the source prints for two trees, with `env` added.
fn plain_diff(fx: &Fixture, trees: (&str, &str), env: Env) -> String {
    let mut cmd = Command::new("git");
    cmd.current_dir(&fx.src);
    isolate(&mut cmd, &fx.home);
    cmd.args(["diff", "--binary", "--full-index", "-U3", trees.0, trees.1]);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Variables added to a command's environment.
type Env<'a> = &'a [(&'a str, &'a str)];

/// An attributes file and the line written to it.
type Attributes<'a> = Option<(&'a Path, &'a str)>;

/// The same two trees give the same patch bytes whatever attributes (`info/attributes`, the
/// source's working tree), diff drivers and environment say. Each setting is shown to change a
/// plain `git diff` of those trees first, so the comparison is not vacuous.
#[test]
fn patch_bytes_depend_on_the_two_trees_only() {
    let fx = Fixture::new();
    let lines = |changed: &str| -> String {
        let body: String = (1..=30)
            .map(|i| match i {
                20 => format!("    line {changed}\n"),
                _ => format!("    line {i}\n"),
            })
            .collect();
        format!("fn first() {{\n{body}}}\n")
    };
    fx.write("notes.txt", &lines("20"));
    fx.commit_all("notes");
    fx.bind("s");
    std::fs::write(fx.isolation("s").join("notes.txt"), lines("twenty")).unwrap();
    let (plain, base, result) = capture_with(&fx, "plain", &[]);
    let trees = (base.as_str(), result.as_str());
    let reference = plain_diff(&fx, trees, &[]);
    let driver = [
        ("GIT_CONFIG_COUNT", "1"),
        ("GIT_CONFIG_KEY_0", "diff.lines.xfuncname"),
        ("GIT_CONFIG_VALUE_0", "^    (line 1.*)$"),
    ];
    let info = fx.src.join(".git/info/attributes");
    std::fs::create_dir_all(info.parent().unwrap()).unwrap();
    let checked_out = fx.src.join(".gitattributes");
    let cases: [(&str, Attributes, Env); 5] = [
        ("no-diff", Some((&info, "*.txt -diff\n")), &[]),
        ("binary", Some((&info, "*.txt binary\n")), &[]),
        ("driver", Some((&info, "*.txt diff=lines\n")), &driver),
        ("checkout", Some((&checked_out, "* -diff\n")), &[]),
        ("diff-opts", None, &[("GIT_DIFF_OPTS", "--unified=10")]),
    ];
    for (run, attributes, env) in cases {
        if let Some((file, line)) = attributes {
            std::fs::write(file, line).unwrap();
        }
        assert_ne!(
            plain_diff(&fx, trees, env),
            reference,
            "{run} changes nothing"
        );
        let (digest, ..) = capture_with(&fx, run, env);
        assert_eq!(digest, plain, "{run}");
        if let Some((file, _)) = attributes {
            std::fs::remove_file(file).unwrap();
        }
    }
}

/// Runs `cmd` and fails the test if it has not finished within `secs` seconds.
fn output_within(mut cmd: Command, secs: u64) -> std::process::Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("{cmd:?} hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Replaces the admin dir's `commondir` with a FIFO, which any git that reads it waits on.
fn fifo_commondir(fx: &Fixture, id: &str) {
    let commondir = admin_dir(fx, id).join("commondir");
    std::fs::remove_file(&commondir).unwrap();
    assert!(
        Command::new("mkfifo")
            .arg(&commondir)
            .status()
            .unwrap()
            .success()
    );
}

#[test]
fn a_fifo_in_the_admin_dir_hangs_nothing() {
    let fx = Fixture::new();
    dead_owner_bind(&fx, "s");
    std::fs::write(fx.isolation("s").join("work.txt"), "kept\n").unwrap();
    fifo_commondir(&fx, "s");
    let mut capture = fx.cmd();
    capture.args(["--json", "capture", "-s", "s"]);
    let (code, doc) = json_of(output_within(capture, 60));
    assert_eq!(code, 0, "{doc}");
    fifo_commondir(&fx, "s");
    let mut sweep = fx.cmd();
    sweep.args(["--json", "sweep", "--grace", "0s"]);
    let (code, doc) = json_of(output_within(sweep, 60));
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["reclaimed"].as_array().unwrap().len(), 1, "{doc}");
    assert!(!fx.isolation("s").exists());
    assert_eq!(fx.worktrees().len(), 1);
}

/// A script for the command: a nested repository whose own config names a filter (and whose
/// attributes send its file through it), with a file git must hash again, registered as a
/// gitlink in the isolation's index. A git that checks whether that "submodule" is dirty runs
/// `git status` inside it, with its config.
fn nested_filter_script(mark: &Path) -> String {
    format!(
        "set -e
# The nested repository keeps its objects to itself, out of the run's quarantine.
unset GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES
git init -q nest
cd nest
echo a > a.txt
echo '* filter=x' > .gitattributes
git add a.txt .gitattributes
git -c user.name=n -c user.email=n@n commit -q -m nested
git config filter.x.clean \"touch '{}'; cat\"
touch -t 200001010000 a.txt
cd ..
git update-index --add --cacheinfo 160000,$(git -C nest rev-parse HEAD),nest
cp -R nest unregistered
echo work > work.txt
",
        mark.display()
    )
}

#[test]
fn a_gitlink_the_command_registers_gets_no_git_run_inside_it() {
    let sandboxes: &[bool] = if crate::fixture::sandbox_available() {
        &[false, true]
    } else {
        eprintln!("the sandboxed case is skipped: this kernel cannot give the run sandbox");
        &[false]
    };
    for &sandboxed in sandboxes {
        let fx = Fixture::new();
        fx.bind("s");
        let mark = fx.root.join("nested-filter-ran");
        let script = nested_filter_script(&mark);
        let mut args = vec!["run", "-s", "s"];
        if !sandboxed {
            args.push("--no-sandbox");
        }
        args.extend(["--", "sh", "-c", &script]);
        let (code, doc) = fx.json(&args);
        assert_eq!(code, 0, "sandboxed {sandboxed}: {doc}");
        assert!(
            !mark.exists(),
            "sandboxed {sandboxed}: the nested filter ran"
        );
        // git add -A on the isolation would run `git status` in the gitlink; since the run
        // took the filter out of the nested config, even a git that trusts everything there
        // runs nothing now.
        assert!(
            !trusting_git_runs_the_filter(&fx, "s", &mark),
            "sandboxed {sandboxed}: the planted filter is still live after the run"
        );
        for args in [
            vec!["capture", "-s", "s"],
            vec!["promote", "-s", "s", "--mode", "branch", "--no-apply"],
            vec!["promote", "-s", "s"],
        ] {
            let (code, doc) = fx.json(&args);
            assert_eq!(code, 0, "{args:?}: {doc}");
            assert!(!mark.exists(), "{args:?}: the nested filter ran");
        }
        assert_eq!(
            std::fs::read_to_string(fx.src.join("work.txt")).unwrap(),
            "work\n"
        );
    }
}

/// The tree plain `git add -A` and `git write-tree` give for the isolation, through a copy of
/// its index (what a3s-iso's snapshot did before it kept gitlinks out of `add`).
fn plain_snapshot(fx: &Fixture, id: &str) -> String {
    let index = fx.root.join(format!("plain-index-{id}"));
    std::fs::copy(admin_dir(fx, id).join("index"), &index).unwrap();
    let git = |args: &[&str]| {
        let mut cmd = Command::new("git");
        cmd.current_dir(fx.isolation(id)).args(args);
        isolate(&mut cmd, &fx.home);
        let out = cmd.env("GIT_INDEX_FILE", &index).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout)
            .unwrap()
            .trim_end()
            .to_string()
    };
    git(&["add", "-A"]);
    git(&["write-tree"])
}

/// Submodules are snapshotted as before: a new commit in one is taken, an uninitialised one is
/// kept, a deleted one is dropped.
#[test]
fn submodules_are_snapshotted_as_plain_git_add_would() {
    let fx = Fixture::new();
    fx.add_submodule();
    for id in ["bumped", "gone"] {
        let mut bind = fx.cmd();
        bind.args(["--json", "bind", "-s", id, "--submodules"])
            .envs(ALLOW_FILE);
        let (code, doc) = json_of(bind.output().unwrap());
        assert_eq!(code, 0, "{doc}");
    }
    fx.bind("uninitialised");
    let sub = fx.isolation("bumped").join("vendor/lib");
    std::fs::write(sub.join("lib.txt"), "library, improved\n").unwrap();
    fx.git(&sub, &["commit", "-q", "-a", "-m", "improve"]);
    std::fs::write(sub.join("scratch.txt"), "untracked in the submodule\n").unwrap();
    std::fs::remove_dir_all(fx.isolation("gone").join("vendor/lib")).unwrap();
    for id in ["bumped", "gone", "uninitialised"] {
        std::fs::write(fx.isolation(id).join("README.md"), format!("{id}\n")).unwrap();
        let (code, doc) = fx.json(&["capture", "-s", id]);
        assert_eq!(code, 0, "{id}: {doc}");
        let result = &doc["result_tree"].as_str().unwrap()["git-tree:".len()..];
        assert_eq!(result, plain_snapshot(&fx, id), "{id}");
    }
    let bumped = fx.git(&sub, &["rev-parse", "HEAD"]);
    let (_, doc) = fx.json(&["capture", "-s", "bumped"]);
    let result = &doc["result_tree"].as_str().unwrap()["git-tree:".len()..];
    assert_eq!(
        fx.git(&fx.src, &["rev-parse", &format!("{result}:vendor/lib")]),
        bumped
    );
}

/// A resumed isolation is restored through its new admin dir, where its submodules' git dirs
/// are: with `submodule.recurse` set, `read-tree -u` updates the submodules too.
#[test]
fn a_resume_with_submodules_restores_through_the_new_admin_dir() {
    let fx = Fixture::new();
    fx.add_submodule();
    let config = [
        ("GIT_CONFIG_COUNT", "2"),
        ("GIT_CONFIG_KEY_0", "protocol.file.allow"),
        ("GIT_CONFIG_VALUE_0", "always"),
        ("GIT_CONFIG_KEY_1", "submodule.recurse"),
        ("GIT_CONFIG_VALUE_1", "true"),
    ];
    let a3s = |args: &[&str]| {
        let mut cmd = fx.cmd();
        cmd.arg("--json").args(args).envs(config);
        json_of(cmd.output().unwrap())
    };
    let (code, doc) = a3s(&["bind", "-s", "s", "--submodules"]);
    assert_eq!(code, 0, "{doc}");
    let iso = fx.isolation("s");
    std::fs::write(iso.join("README.md"), "captured\n").unwrap();
    let (code, doc) = a3s(&["capture", "-s", "s"]);
    assert_eq!(code, 0, "{doc}");
    std::fs::remove_dir_all(&iso).unwrap();
    let (code, doc) = a3s(&["bind", "-s", "s", "--resume", "--submodules"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        std::fs::read_to_string(iso.join("README.md")).unwrap(),
        "captured\n"
    );
    assert_eq!(
        std::fs::read_to_string(iso.join("vendor/lib/lib.txt")).unwrap(),
        "library\n"
    );
}

/// Started inside an isolation whose `.git` file the command pointed at a repository of its
/// own (with a state store claiming the isolation, and a filter), a3s-iso still finds the real
/// session: through the stores it knows, not through git's discovery in the tree.
#[test]
fn started_inside_an_isolation_a3s_iso_finds_its_session_without_asking_its_git() {
    let fx = Fixture::new();
    fx.bind("s");
    let iso = fx.isolation("s");
    let mark = fx.root.join("fake-repository-filter-ran");
    content_for_the_filter(&iso);
    // The fake repository, its admin dir for the isolation, and its own state store, all in
    // the tree the command can write.
    let fake = iso.join(".fake/common");
    fx.git(
        &fx.root,
        &[
            "clone",
            "-q",
            "--bare",
            fx.src.to_str().unwrap(),
            fake.to_str().unwrap(),
        ],
    );
    evil_filter(&fx, &fake.join("config"), &mark);
    let fake_admin = fake.join("worktrees/s");
    std::fs::create_dir_all(&fake_admin).unwrap();
    let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    std::fs::write(fake_admin.join("HEAD"), format!("{head}\n")).unwrap();
    std::fs::write(fake_admin.join("commondir"), "../..\n").unwrap();
    std::fs::write(
        fake_admin.join("gitdir"),
        format!("{}\n", iso.join(".git").display()),
    )
    .unwrap();
    let real = fx.src.join(".git/a3s-iso/sessions/s.json");
    let mut record: Value = serde_json::from_slice(&std::fs::read(&real).unwrap()).unwrap();
    record["common_dir"] = fake.to_str().unwrap().into();
    record["admin_dir"] = fake_admin.to_str().unwrap().into();
    let sessions = fake.join("a3s-iso/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::write(
        sessions.join("s.json"),
        serde_json::to_vec(&record).unwrap(),
    )
    .unwrap();
    std::fs::write(
        iso.join(".git"),
        format!("gitdir: {}\n", fake_admin.display()),
    )
    .unwrap();
    let (code, doc) = fx.json_in(&iso, &["capture"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["identity"]["session_id"], "s");
    assert!(!mark.exists(), "the fake repository's filter ran");
    // The capture went to the real store.
    let runs = fx.src.join(".git/a3s-iso/runs/s");
    assert_eq!(std::fs::read_dir(runs).unwrap().count(), 1);
}

/// What a session plants for *your* git inside `run` (sandboxed): an embedded repository
/// registered as a gitlink whose config sets `core.fsmonitor`, `core.hooksPath`, `core.pager`,
/// `include.path`, a filter and an alias, with an executable `pre-commit` hook; and, where the
/// repository sets `extensions.worktreeConfig`, the isolation's own `config.worktree` with
/// `core.fsmonitor`. Each runs `mark.sh`, which leaves a file outside the isolation when it
/// runs on the host (inside the sandbox it cannot write there).
const PLANT: &str = r#"set -e
mark="$1"
printf '#!/bin/sh\ntouch "%s"\nexit 1\n' "$mark" > mark.sh
chmod +x mark.sh
here="$PWD"
# The nested repository keeps its own objects (run's quarantine is for the isolation's).
(
unset GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES
git init -q nested
cd nested
echo x > f
git add f
git -c user.name=a -c user.email=a@b -c core.hooksPath=/dev/null commit -qm nested
)
cd nested
git config core.fsmonitor "$here/mark.sh"
git config core.hooksPath "$here/hooks"
git config core.pager "$here/mark.sh"
git config include.path "$here/evil.inc"
git config filter.x.clean "$here/mark.sh"
git config alias.st "!$here/mark.sh"
printf '[core]\n\tfsmonitor = %s\n' "$here/mark.sh" > "$here/evil.inc"
cp "$here/mark.sh" .git/hooks/pre-commit
echo '* filter=x' > .gitattributes
cd ..
git add nested
if [ "$(git config extensions.worktreeConfig)" = true ]; then
  git config --worktree core.fsmonitor "$here/mark.sh"
fi
"#;

/// The git commands a user runs to review an agent's work, in the isolation and in the
/// repositories it holds.
fn review_with_your_own_git(fx: &Fixture, iso: &Path) {
    let nested = iso.join("nested");
    let commands: [(&Path, &[&str]); 10] = [
        (iso, &["status"]),
        (iso, &["diff"]),
        (iso, &["log", "-1"]),
        (iso, &["add", "-A"]),
        (iso, &["commit", "-qm", "review"]),
        (iso, &["submodule", "status"]),
        (&nested, &["status"]),
        (&nested, &["diff"]),
        (&nested, &["add", "-A"]),
        (&nested, &["commit", "--allow-empty", "-qm", "review"]),
    ];
    for (dir, args) in commands {
        let mut cmd = Command::new("git");
        cmd.current_dir(dir).args(args).stdin(Stdio::null());
        isolate(&mut cmd, &fx.home);
        // Whether it succeeds is the user's business; what it runs is the test's.
        let _ = cmd.output().unwrap();
    }
}

#[test]
fn your_own_git_in_an_isolation_runs_nothing_the_session_wrote() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    for worktree_config in [false, true] {
        let fx = Fixture::new();
        if worktree_config {
            fx.git(&fx.src, &["config", "extensions.worktreeConfig", "true"]);
        }
        fx.bind("t");
        let iso = fx.isolation("t");
        let mark = fx.root.join("marker");
        let out = fx
            .cmd()
            .args(["run", "-s", "t", "--", "sh", "-c", PLANT, "plant"])
            .arg(&mark)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(
            stderr.contains("nested"),
            "the warning names the repository: {stderr}"
        );
        assert!(stderr.contains("core.fsmonitor"), "{stderr}");
        assert!(!mark.exists(), "planting ran it on the host");
        review_with_your_own_git(&fx, &iso);
        assert!(
            !mark.exists(),
            "your own git ran what the session planted (worktreeConfig {worktree_config})"
        );
        // What stays is inert and still a working repository.
        let config = std::fs::read_to_string(iso.join("nested/.git/config")).unwrap();
        for planted in [
            "fsmonitor",
            "hooksPath",
            "pager",
            "include",
            "filter",
            "alias",
        ] {
            assert!(!config.contains(planted), "{planted} left in:\n{config}");
        }
        let head = fx.git(&iso.join("nested"), &["rev-parse", "HEAD"]);
        let hex_len = if crate::fixture::object_format() == "sha256" {
            64
        } else {
            40
        };
        assert_eq!(head.trim().len(), hex_len, "{head}");
    }
}
