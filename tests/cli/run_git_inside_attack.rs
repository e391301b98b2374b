//! A sandboxed command attacking what `run` does with git outside its sandbox: the session's
//! layers over the git dir and the admin dir, their move-down and mirror, the profile
//! write-back and the hints on hidden paths. Each test asserts the promise (SECURITY.md rows
//! 2, 3, 23, 25, 42, 43, 44).

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fixture::{Fixture, error_code, json_of, require_tool};
use crate::run_git_inside::{mirrored, run_script, source_refs, symbolic_head};

macro_rules! require_sandbox {
    () => {
        if !require_tool("sandbox") {
            return;
        }
    };
}

/// git as the user runs it in `dir` (outside any sandbox), whatever its status.
fn user_git(fx: &Fixture, dir: &Path, args: &[&str]) -> Output {
    let mut cmd = std::process::Command::new("git");
    cmd.current_dir(dir).args(args).stdin(Stdio::null());
    crate::fixture::isolate(&mut cmd, &fx.home);
    cmd.output().unwrap()
}

/// What is left in the store's `pending/` (an unfinished move-down stays there).
fn pending(fx: &Fixture) -> Vec<String> {
    std::fs::read_dir(fx.src.join(".git/a3s-iso/pending"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The isolation's admin dir.
fn admin_of(fx: &Fixture, id: &str) -> PathBuf {
    let text = std::fs::read_to_string(fx.isolation(id).join(".git")).unwrap();
    PathBuf::from(text.trim_end().strip_prefix("gitdir: ").unwrap())
}

/// Every entry under `dir` that is a link, a FIFO, a socket or a device, or carries a
/// setuid, setgid or sticky bit (links not followed).
fn odd_entries(dir: &Path) -> Vec<String> {
    let mut odd = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let kind = meta.file_type();
        if kind.is_symlink() || kind.is_fifo() || kind.is_socket() || kind.is_char_device() {
            odd.push(format!("{} ({kind:?})", path.display()));
        } else if meta.mode() & 0o7000 != 0 {
            odd.push(format!("{} (mode {:o})", path.display(), meta.mode()));
        } else if kind.is_dir() {
            odd.extend(odd_entries(&path));
        }
    }
    odd
}

/// Settings that make the user's own `git status` and `git diff` run a command that touches
/// `marker`, checked first to do so in a repository of the test's own (so the test can fail).
fn planted_config(fx: &Fixture, marker: &Path) -> String {
    let m = marker.display();
    let probe = fx.root.join("probe");
    std::fs::create_dir(&probe).unwrap();
    fx.git(&probe, &["init", "-q"]);
    std::fs::write(probe.join("f"), "a\n").unwrap();
    fx.git(&probe, &["add", "f"]);
    std::fs::write(probe.join("f"), "b\n").unwrap();
    fx.git(
        &probe,
        &["config", "diff.external", &format!("touch {m}.probe;:")],
    );
    user_git(fx, &probe, &["diff"]);
    assert!(
        Path::new(&format!("{m}.probe")).exists(),
        "diff.external runs nothing here: the test cannot fail"
    );
    format!(
        "git config --worktree core.fsmonitor 'touch {m}; false'
         git config --worktree diff.external 'touch {m};:'
         git config --worktree core.hooksPath {root}/hooks
         git config --worktree include.path {root}/evil.config
         git config --worktree filter.evil.clean 'touch {m}; cat'",
        root = fx.root.display()
    )
}

/// The user's git in the isolation after a run: status, diff, add and commit.
fn user_reviews(fx: &Fixture, iso: &Path) {
    for args in [
        &["status", "--short"][..],
        &["diff"],
        &["add", "-A"],
        &["commit", "-q", "-m", "reviewed"],
        &["log", "-1"],
    ] {
        user_git(fx, iso, args);
    }
}

#[test]
fn attack_a_config_worktree_planted_inside_runs_nothing_even_when_run_dies_moving_it_down() {
    require_sandbox!();
    let fx = crate::fixture::with_submodule("cw");
    fx.git(&fx.src, &["config", "extensions.worktreeConfig", "true"]);
    std::fs::create_dir(fx.root.join("hooks")).unwrap();
    std::fs::write(
        fx.root.join("hooks/pre-commit"),
        format!("#!/bin/sh\ntouch {}\n", fx.root.join("pwned").display()),
    )
    .unwrap();
    std::fs::set_permissions(
        fx.root.join("hooks/pre-commit"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let iso = fx.isolation("cw");
    let marker = fx.root.join("pwned");
    let script = format!(
        "set -e\n{}\necho more >> README.md\ngit switch -q -c feature
         git -C {sub} config core.fsmonitor 'touch {m}; false'
         echo more >> {sub}/lib.txt",
        planted_config(&fx, &marker),
        sub = crate::fixture::SUB,
        m = marker.display(),
    );
    let out = fx
        .cmd()
        .env("A3S_ISO_TEST_FAULT", "settle-git-after-move")
        .args(["run", "-s", "cw", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(9),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `run` died between the move-down and the rest: the user reviews before any other
    // a3s-iso command.
    user_reviews(&fx, &iso);
    assert!(
        !marker.exists(),
        "the user's own git ran what the session planted"
    );
    let (code, doc) = fx.json(&["list"]);
    assert_eq!(code, 0, "{doc}");
    assert!(pending(&fx).is_empty(), "{:?}", pending(&fx));
    user_reviews(&fx, &iso);
    assert!(
        !marker.exists(),
        "the user's own git ran what the session planted"
    );

    // And through a whole run.
    let (code, doc) = run_script(&fx, "cw", &format!("set -e\n{}", planted_config_again(&fx)));
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    user_reviews(&fx, &iso);
    assert!(
        !marker.exists(),
        "the user's own git ran what the session planted"
    );
}

/// The same settings again (the probe repository exists already).
fn planted_config_again(fx: &Fixture) -> String {
    let m = fx.root.join("pwned");
    format!(
        "git config --worktree core.fsmonitor 'touch {m}; false'
         git config --worktree diff.external 'touch {m};:'
         echo again >> README.md",
        m = m.display()
    )
}

#[test]
fn attack_hooks_attributes_and_config_planted_in_the_git_dirs_layers_reach_no_git_outside() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("hk");
    let iso = fx.isolation("hk");
    let marker = fx.root.join("pwned");
    let hook = format!("#!/bin/sh\ntouch {}\n", marker.display());
    let before_config = std::fs::read(fx.src.join(".git/config")).unwrap();
    let script = format!(
        "c=$(git rev-parse --git-common-dir); a=$(git rev-parse --git-dir)
         for d in \"$c\" \"$a\"; do
           mkdir -p \"$d/hooks\" \"$d/info\"
           for h in pre-commit post-commit post-checkout post-index-change fsmonitor-watchman reference-transaction; do
             printf '{hook}' > \"$d/hooks/$h\"; chmod +x \"$d/hooks/$h\"
           done
           echo '* filter=evil diff=evil' > \"$d/info/attributes\"
           printf '[core]\\n\\tfsmonitor = touch {m}\\n[filter \"evil\"]\\n\\tclean = touch {m}\\n' > \"$d/config\" 2>/dev/null
           printf '[include]\\n\\tpath = {root}/x\\n' >> \"$d/config\" 2>/dev/null
         done
         printf '[core]\\n\\thooksPath = {root}\\n' > \"$a/config.worktree\"
         git config core.hooksPath /nowhere 2>/dev/null
         echo more >> README.md
         git switch -q -c feature
         true",
        hook = hook.replace('\n', "\\n"),
        m = marker.display(),
        root = fx.root.display(),
    );
    let (code, doc) = run_script(&fx, "hk", &script);
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    assert_eq!(
        std::fs::read(fx.src.join(".git/config")).unwrap(),
        before_config
    );
    user_reviews(&fx, &iso);
    for args in [
        &["status"][..],
        &["commit", "-q", "--allow-empty", "-m", "mine"],
    ] {
        user_git(&fx, &fx.src, args);
    }
    let (code, doc) = fx.json(&["capture", "-s", "hk"]);
    assert_eq!(code, 0, "{doc}");
    assert!(
        !marker.exists(),
        "a git outside ran what the session planted"
    );
    let hooks: Vec<String> = std::fs::read_dir(fx.src.join(".git/hooks"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| !name.ends_with(".sample"))
        .collect();
    assert_eq!(
        hooks,
        Vec::<String>::new(),
        "a hook reached the repository's own hooks"
    );
    // Only refs, logs and packed-refs of the git dir's layer last: the next run sees none of
    // the rest.
    let (code, doc) = run_script(
        &fx,
        "hk",
        "c=$(git rev-parse --git-common-dir)
         test -e \"$c/hooks/pre-commit\" && exit 1
         test -e \"$c/info/attributes\" && exit 2
         exit 0",
    );
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
}

#[test]
fn attack_the_links_of_the_admin_dir_cannot_be_rewritten_or_whited_out() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("ln");
    let admin = admin_of(&fx, "ln");
    let dot_git = fx.isolation("ln").join(".git");
    let read = |p: &Path| std::fs::read(p).unwrap();
    let before = [
        read(&admin.join("commondir")),
        read(&admin.join("gitdir")),
        read(&dot_git),
    ];
    let script = format!(
        "a=$(git rev-parse --git-dir)
         rm -f \"$a/commondir\" \"$a/gitdir\" .git 2>/dev/null
         echo /tmp > \"$a/commondir\" 2>/dev/null
         echo /tmp/.git > \"$a/gitdir\" 2>/dev/null
         mv \"$a/commondir\" \"$a/x\" 2>/dev/null
         echo 'gitdir: {src}/.git' > .git 2>/dev/null
         git switch -q -c feature
         true",
        src = fx.src.display()
    );
    let (code, doc) = run_script(&fx, "ln", &script);
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    let after = [
        read(&admin.join("commondir")),
        read(&admin.join("gitdir")),
        read(&dot_git),
    ];
    assert_eq!(after, before);
    assert!(pending(&fx).is_empty());
}

#[test]
fn attack_odd_entries_in_the_admin_layer_never_stall_the_move_down_nor_write_elsewhere() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("od");
    let iso = fx.isolation("od");
    let admin = admin_of(&fx, "od");
    let before = source_refs(&fx);
    let script = format!(
        "set -e
         git switch -q -c feature
         echo f > f; git add f; git commit -q -m on-feature
         a=$(git rev-parse --git-dir)
         mkfifo \"$a/fifo\"
         ln -s {src}/.git/refs \"$a/linked\"
         rm -rf \"$a/logs\"; ln -s {src}/.git/refs/heads \"$a/logs\"
         mkdir \"$a/locked\"; echo x > \"$a/locked/f\"; chmod 500 \"$a/locked\"
         mkdir -p \"$a/closed/deeper\"; echo x > \"$a/closed/deeper/f\"; chmod 000 \"$a/closed/deeper\" \"$a/closed\"
         echo x > \"$a/unreadable\"; chmod 000 \"$a/unreadable\"
         echo x > \"$a/$(printf 'new\\nline')\"; echo x > \"$a/$(printf 'bad\\377')\"
         echo x > \"$a/suid\"; chmod 4755 \"$a/suid\"
         mkdir \"$a/sticky\"; chmod 1777 \"$a/sticky\"",
        src = fx.src.display()
    );
    let (code, doc) = run_script(&fx, "od", &script);
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    assert!(pending(&fx).is_empty(), "the move-down is stuck: {doc}");
    assert_eq!(source_refs(&fx), before);
    assert!(!symbolic_head(&fx, &iso));
    let feature = mirrored(&fx, "od", "heads/feature").expect("feature is mirrored");
    assert_eq!(fx.git(&iso, &["rev-parse", "HEAD"]), feature);
    assert_eq!(odd_entries(&admin), Vec::<String>::new());
    assert!(
        std::fs::symlink_metadata(admin.join("logs"))
            .is_ok_and(|m| m.is_dir() && !m.file_type().is_symlink()),
        "the admin dir's logs are gone or a link"
    );
    // The session's next run gets its layers and its branch.
    let (code, doc) = run_script(&fx, "od", "test \"$(git branch --show-current)\" = feature");
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    assert!(
        !doc["warnings"].to_string().contains("cannot be made ready"),
        "{doc}"
    );
    assert!(pending(&fx).is_empty());
}

/// What the command does to the modes of both layers (their roots last): as root, a3s-iso
/// passes over them; an unprivileged user's a3s-iso must still move, trim and empty them.
const TAKE_AWAY_MODES: &str = "set -e
git switch -q -c feature
a=$(git rev-parse --git-dir); c=$(git rev-parse --git-common-dir)
mkdir \"$a/locked\"; echo x > \"$a/locked/f\"; chmod 500 \"$a/locked\"
mkdir -p \"$a/closed/deeper\"; echo x > \"$a/closed/deeper/f\"; chmod 000 \"$a/closed/deeper\" \"$a/closed\"
echo x > \"$a/unreadable\"; chmod 000 \"$a/unreadable\"
mkdir -p \"$c/rr-cache/x\"; echo x > \"$c/rr-cache/x/f\"; chmod 500 \"$c/rr-cache/x\" \"$c/rr-cache\"
echo x > \"$c/unreadable\"; chmod 000 \"$c/unreadable\"
git branch fixed/one; chmod 500 \"$c/refs/heads/fixed\"; chmod 000 \"$c/refs/heads\"
chmod 500 \"$a\" \"$c\"";

#[test]
fn attack_modes_taken_away_in_the_layers_never_stall_an_unprivileged_users_session() {
    require_sandbox!();
    // Root hands the test files to an unprivileged user and becomes it with setpriv.
    if !require_tool("root") || !require_tool("setpriv") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::copy(crate::fixture::BIN, root.join("a3s-iso")).unwrap();
    std::fs::write(root.join("attack.sh"), TAKE_AWAY_MODES).unwrap();
    let script = "set -e; mkdir -p home; git init -q -b main src; cd src; echo a > a; git add a
         git commit -qm init
         ../a3s-iso bind -q -s u >/dev/null
         ../a3s-iso --json run -s u -- sh -c \"$(cat ../attack.sh)\" > ../first.json
         ls .git/a3s-iso/pending > ../pending.txt 2>/dev/null || true
         ../a3s-iso --json run -s u -- sh -c 'test \"$(git branch --show-current)\" = feature' > ../second.json
         git for-each-ref --format='%(refname)' refs/a3s-iso/sessions/u/git/ > ../mirrored.txt";
    let chown = std::process::Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(&root)
        .status()
        .unwrap();
    assert!(chown.success());
    let mut cmd = std::process::Command::new("setpriv");
    cmd.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "sh",
        "-c",
        script,
    ])
    .current_dir(&root);
    crate::fixture::isolate(&mut cmd, &root.join("home"));
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |name: &str| std::fs::read_to_string(root.join(name)).unwrap_or_default();
    let doc = |name: &str| -> Value { serde_json::from_str(&read(name)).unwrap() };
    let (first, second) = (doc("first.json"), doc("second.json"));
    assert_eq!(first["exit_code"], 0, "{first}");
    assert_eq!(first["warnings"], serde_json::json!([]), "{first}");
    assert_eq!(read("pending.txt"), "", "the move-down is stuck");
    assert_eq!(second["exit_code"], 0, "{second}");
    assert_eq!(second["warnings"], serde_json::json!([]), "{second}");
    assert_eq!(
        read("mirrored.txt").lines().collect::<Vec<_>>(),
        [
            "refs/a3s-iso/sessions/u/git/heads/feature",
            "refs/a3s-iso/sessions/u/git/heads/fixed/one"
        ]
    );
}

#[test]
fn attack_refs_that_alias_or_escape_never_move_the_users_branches_or_leave_the_namespace() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("ra");
    let iso = fx.isolation("ra");
    let main = fx.git(&fx.src, &["rev-parse", "main"]);
    let before = source_refs(&fx);
    let refs_before = fx.git(&fx.src, &["for-each-ref", "--format=%(refname)"]);
    let script = "set -e
         c=$(git rev-parse --git-common-dir)
         git symbolic-ref HEAD refs/heads/main
         echo y > y; git add y; git commit -q -m on-their-main
         id=$(git rev-parse HEAD)
         missing=$(echo $id | tr 0-9a-f 1-9a-f0)
         printf 'ref: refs/heads/main\\n' > \"$c/refs/heads/alias\"
         printf 'ref: refs/remotes/../../../HEAD\\n' > \"$c/refs/heads/up\"
         for name in 'a..b' 'x@{1}' \"$(printf 'n\\nl')\" '.hidden' 'end.lock' 'sp ace'; do
           printf '%s\\n' $id > \"$c/refs/heads/$name\"
         done
         printf '%s\\n' $missing > \"$c/refs/heads/missing\"
         printf '%s\\n' $id > \"$c/refs/stash-entries\"
         printf '%s refs/heads/../../../../x\\n%s refs/heads/packed\\n' $id $id >> \"$c/packed-refs\"";
    let (code, doc) = run_script(&fx, "ra", script);
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    assert_eq!(source_refs(&fx), before);
    assert_eq!(fx.git(&fx.src, &["rev-parse", "main"]), main);
    assert_eq!(
        std::fs::read_to_string(fx.src.join(".git/HEAD")).unwrap(),
        "ref: refs/heads/main\n"
    );
    // Every ref a3s-iso made is in the session's own namespace.
    let refs_after = fx.git(&fx.src, &["for-each-ref", "--format=%(refname)"]);
    for name in refs_after.lines() {
        assert!(
            refs_before.lines().any(|b| b == name)
                || name.starts_with("refs/a3s-iso/sessions/ra/")
                || name.starts_with("refs/a3s-iso/runs/ra/"),
            "{name}"
        );
    }
    assert!(!symbolic_head(&fx, &iso));
    let head = fx.git(&iso, &["rev-parse", "HEAD"]);
    assert_ne!(head, main);
    fx.git(&iso, &["cat-file", "-e", &format!("{head}^{{commit}}")]);
    assert_eq!(mirrored(&fx, "ra", "heads/main"), Some(head.clone()));
    // The next run is on the session's own `main` (once it cleared what it broke for its own
    // git); the user's stays where it is.
    let (code, doc) = run_script(
        &fx,
        "ra",
        &format!(
            "set -e
             c=$(git rev-parse --git-common-dir)
             find \"$c/refs/heads\" -type f ! -name main -delete
             rm -f \"$c/packed-refs\" \"$c/refs/stash-entries\"
             test \"$(git branch --show-current)\" = main
             test \"$(git rev-parse HEAD)\" = {head}
             echo z > z; git add z; git commit -q -m again"
        ),
    );
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    assert_eq!(source_refs(&fx), before);
    assert_eq!(fx.git(&fx.src, &["rev-parse", "main"]), main);
}

/// A pseudo-random fraction in [0, 1) from a seed (a xorshift step).
fn fraction(seed: &mut u64) -> f64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    (*seed % 10_000) as f64 / 10_000.0
}

#[test]
fn attack_a_run_killed_at_random_points_after_its_command_is_finished_or_undone() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.git(&fx.src, &["config", "extensions.worktreeConfig", "true"]);
    fx.bind("rk");
    let iso = fx.isolation("rk");
    let before = source_refs(&fx);
    let marker = fx.root.join("pwned");
    let script = |i: usize| {
        format!(
            "git switch -q -c b{i} && echo {i} > f{i} && git add f{i} && git commit -q -m c{i} \
             && git tag t{i} && c=$(git rev-parse --git-dir) && mkdir -p \"$c/extra\" \
             && echo x > \"$c/extra/x{i}\" \
             && git config --worktree core.fsmonitor 'touch {m}; false' && touch done{i}",
            m = marker.display()
        )
    };
    let started = Instant::now();
    let (code, doc) = run_script(&fx, "rk", &script(0));
    assert_eq!(code, 0, "{doc}");
    let whole = started.elapsed();
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("seed {seed}, a whole run takes {whole:?}");
    let log = fx.root.join("run.log");
    for i in 1..=20 {
        // A point after the command ended: up to the rest of a whole run.
        let at = whole.mul_f64(0.6 * fraction(&mut seed));
        let mut child = fx
            .cmd()
            .args(["run", "-s", "rk", "--", "sh", "-c", &script(i)])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .process_group(0)
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while !iso.join(format!("done{i}")).exists() && Instant::now() < deadline {
            if let Some(status) = child.try_wait().unwrap() {
                let log = std::fs::read_to_string(&log).unwrap_or_default();
                panic!("run {i} ended ({status}) before its command did: {log}");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(at);
        let group = rustix::process::Pid::from_child(&child);
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        child.wait().unwrap();
        // The user's own git first, before any a3s-iso command finishes the move.
        user_git(&fx, &iso, &["status"]);
        assert!(
            !marker.exists(),
            "kill {i} at {at:?}: your git ran the planted fsmonitor"
        );
        let (code, doc) = fx.json(&["list"]);
        assert_eq!(code, 0, "kill {i} at {at:?}: {doc}");
        assert!(pending(&fx).is_empty(), "kill {i} at {at:?}");
        assert!(!symbolic_head(&fx, &iso), "kill {i} at {at:?}");
        let head = fx.git(&iso, &["rev-parse", "HEAD"]);
        fx.git(&iso, &["cat-file", "-e", &format!("{head}^{{commit}}")]);
        assert_eq!(source_refs(&fx), before, "kill {i} at {at:?}");
        user_git(&fx, &iso, &["status"]);
        assert!(
            !marker.exists(),
            "kill {i} at {at:?}: your git ran the planted fsmonitor"
        );
    }
    let (code, doc) = run_script(
        &fx,
        "rk",
        "set -e; git status >/dev/null; git branch -q last",
    );
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    assert_eq!(source_refs(&fx), before);
}

#[test]
fn attack_a_link_or_hard_link_in_place_of_an_allowed_file_is_never_written_through() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("wb");
    let file = fx.home.join(".tool.json");
    let bashrc = fx.home.join(".bashrc");
    std::fs::write(&file, "old").unwrap();
    std::fs::write(&bashrc, "rc\n").unwrap();
    let readme = fx.src.join("README.md");
    let readme_before = std::fs::read(&readme).unwrap();
    for (n, script) in [
        "rm ~/.tool.json && ln -s ~/.bashrc ~/.tool.json && echo pwned >> ~/.tool.json",
        &format!(
            "rm ~/.tool.json && ln -s {} ~/.tool.json; echo pwned > ~/.bashrc",
            readme.display()
        ),
        "ln -f ~/.bashrc ~/.tool.json && echo pwned >> ~/.tool.json",
        "rm ~/.tool.json && mkfifo ~/.tool.json",
    ]
    .iter()
    .enumerate()
    {
        let (code, doc) = fx.json(&[
            "run",
            "-s",
            "wb",
            "--allow-write",
            file.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            script,
        ]);
        assert_eq!(code, 0, "{n}: {doc}");
        assert_eq!(std::fs::read(&bashrc).unwrap(), b"rc\n", "{n}: {doc}");
        assert_eq!(std::fs::read(&readme).unwrap(), readme_before, "{n}");
        let meta = std::fs::symlink_metadata(&file).unwrap();
        assert!(meta.is_file() && meta.nlink() == 1, "{n}: {meta:?}");
        assert_eq!(std::fs::metadata(&bashrc).unwrap().nlink(), 1, "{n}");
    }
    // A hard link is the file's content, written back as a file of its own.
    assert_eq!(std::fs::read(&file).unwrap(), b"rc\npwned\n");
}

#[test]
fn attack_a_profiles_copies_never_become_links_out_of_its_home() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("pa");
    fx.bind("pb");
    let bashrc = fx.home.join(".bashrc");
    std::fs::write(&bashrc, "rc\n").unwrap();
    let script = "rm -rf ~/.claude 2>/dev/null; mv ~/.claude ~/.moved 2>/dev/null
         ln -s ~/.bashrc ~/.claude/settings.json
         rm -f ~/.claude.json; ln -s ~/.bashrc ~/.claude.json
         true";
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "pa",
        "--profile",
        "claude",
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert_eq!(code, 0, "{doc}");
    let kept = std::path::PathBuf::from(doc["sandbox"]["profile"]["kept_in"].as_str().unwrap());
    let meta = std::fs::symlink_metadata(kept.join(".claude")).unwrap();
    assert!(meta.is_dir() && !meta.file_type().is_symlink(), "{meta:?}");
    assert!(std::fs::symlink_metadata(kept.join(".claude.json")).is_err_or_file());
    // Another session's run writes through the profile: never to the link's target.
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "pb",
        "--profile",
        "claude",
        "--",
        "sh",
        "-c",
        "echo pwned > ~/.claude/settings.json; echo '{}' > ~/.claude.json.new && mv ~/.claude.json.new ~/.claude.json",
    ]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(std::fs::read(&bashrc).unwrap(), b"rc\n");
    assert_eq!(std::fs::read(kept.join(".claude.json")).unwrap(), b"{}\n");
}

/// Whether a looked-up entry is absent or a regular file.
trait AbsentOrFile {
    fn is_err_or_file(&self) -> bool;
}

impl AbsentOrFile for std::io::Result<std::fs::Metadata> {
    fn is_err_or_file(&self) -> bool {
        self.as_ref().map_or(true, |m| m.is_file())
    }
}

/// `run` with its address space bounded (so a read without bound fails instead of eating the
/// machine's memory) and a deadline; the exit status and the document.
fn bounded_run(fx: &Fixture, args: &[&str]) -> (i32, Value) {
    let mut cmd = fx.cmd();
    cmd.arg("--json")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            let limit = rustix::process::Rlimit {
                current: Some(3 << 30),
                maximum: Some(3 << 30),
            };
            rustix::process::setrlimit(rustix::process::Resource::As, limit)?;
            Ok(())
        });
    }
    let child = cmd.process_group(0).spawn().unwrap();
    let group = rustix::process::Pid::from_child(&child);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watched = done.clone();
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if watched.load(std::sync::atomic::Ordering::Relaxed) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    });
    let out = child.wait_with_output().unwrap();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(
        out.status.code().is_some(),
        "run was killed ({:?}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    json_of(out)
}

#[test]
fn attack_a_script_that_links_to_a_secret_a_proc_file_or_a_fifo_is_never_read_by_run() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("hp");
    // A link the session left in its tree, run later as a script.
    let (code, doc) = run_script(&fx, "hp", "ln -s /proc/self/pagemap build.sh");
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = bounded_run(&fx, &["run", "-s", "hp", "--", "bash", "build.sh"]);
    assert_ne!(code, 0, "{doc}");
    assert_eq!(doc["state"], "failed", "{doc}");
    let (code, doc) = bounded_run(
        &fx,
        &["run", "-s", "hp", "--", "bash", "/proc/self/pagemap"],
    );
    assert_eq!(doc["state"], "failed", "{code} {doc}");
    // A link the session left to a secret the sandbox hides (it fails inside): what the
    // secret names never reaches the run's document.
    std::fs::create_dir_all(fx.home.join(".ssh")).unwrap();
    std::fs::write(
        fx.home.join(".ssh/config"),
        "Host *\n  IdentityFile ~/.ssh/id_named_only_in_the_secret\n",
    )
    .unwrap();
    let planted = format!("ln -s {} secret.sh", fx.home.join(".ssh/config").display());
    let (code, doc) = run_script(&fx, "hp", &planted);
    assert_eq!(code, 0, "{doc}");
    let (_, doc) = bounded_run(&fx, &["run", "-s", "hp", "--", "bash", "secret.sh"]);
    assert_eq!(doc["state"], "failed", "{doc}");
    assert!(
        !doc["hidden_paths"]
            .to_string()
            .contains("id_named_only_in_the_secret"),
        "{}",
        doc["hidden_paths"]
    );
    // A FIFO where the script is on the host (under /tmp, empty inside): nothing waits on it.
    let dir = tempfile::Builder::new()
        .prefix("a3s-iso-attack-")
        .tempdir_in("/tmp")
        .unwrap();
    let fifo = dir.path().join("script.sh");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let (_, doc) = bounded_run(
        &fx,
        &["run", "-s", "hp", "--", "bash", fifo.to_str().unwrap()],
    );
    assert_eq!(doc["state"], "failed", "{doc}");
}

#[test]
fn attack_what_a_killed_run_left_in_the_git_dirs_layer_beyond_refs_is_gone_for_the_next_run() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("kt");
    crate::run_git_inside::kill_run_inside(
        &fx,
        "kt",
        "c=$(git rev-parse --git-common-dir)
         mkdir -p \"$c/hooks\" \"$c/info\" \"$c/worktrees/planted\"
         printf '#!/bin/sh\\nexit 0\\n' > \"$c/hooks/pre-commit\"; chmod +x \"$c/hooks/pre-commit\"
         echo '* filter=evil' > \"$c/info/attributes\"
         git branch kept
         touch ready; sleep 60",
    );
    let (code, doc) = run_script(
        &fx,
        "kt",
        "c=$(git rev-parse --git-common-dir)
         test -e \"$c/hooks/pre-commit\" && exit 1
         test -e \"$c/info/attributes\" && exit 2
         test -e \"$c/worktrees/planted\" && exit 3
         git rev-parse -q --verify refs/heads/kept >/dev/null || exit 4
         exit 0",
    );
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
}

#[test]
fn attack_a_commondir_planted_in_a_submodules_git_dir_points_your_git_at_no_config() {
    require_sandbox!();
    let fx = crate::fixture::with_submodule("cd");
    let iso = fx.isolation("cd");
    let marker = fx.root.join("pwned");
    // A common dir of the command's own in the isolation, whose config runs a command; the
    // submodule's git dir (in the admin dir's layer) names it.
    let script = format!(
        "set -e
         m=$(git rev-parse --git-dir)/modules/{sub}
         e=$PWD/evil
         mkdir -p \"$e/objects/info\" \"$e/refs/heads\"
         echo \"$m/objects\" > \"$e/objects/info/alternates\"
         printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tfsmonitor = touch {m}; false\\n' > \"$e/config\"
         echo \"$e\" > \"$m/commondir\"
         echo more >> {sub}/lib.txt",
        sub = crate::fixture::SUB,
        m = marker.display(),
    );
    let (code, doc) = run_script(&fx, "cd", &script);
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    user_reviews(&fx, &iso);
    user_git(&fx, &iso.join(crate::fixture::SUB), &["status"]);
    assert!(
        !marker.exists(),
        "the user's own git ran what the session planted"
    );
}

#[test]
fn attack_a_submodules_git_file_pointed_at_a_git_dir_of_the_commands_runs_nothing() {
    require_sandbox!();
    let fx = crate::fixture::with_submodule("gf");
    let iso = fx.isolation("gf");
    let marker = fx.root.join("pwned");
    let script = format!(
        "set -e
         m=$(git rev-parse --git-dir)/modules/{sub}
         e=$PWD/evil.git
         mkdir -p \"$e/objects/info\" \"$e/refs/heads\"
         echo \"$m/objects\" > \"$e/objects/info/alternates\"
         cp \"$m/HEAD\" \"$m/index\" \"$e/\"
         printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tfsmonitor = touch {m}; false\\n' > \"$e/config\"
         echo \"gitdir: $e\" > {sub}/.git
         echo more >> {sub}/lib.txt",
        sub = crate::fixture::SUB,
        m = marker.display(),
    );
    let (code, doc) = run_script(&fx, "gf", &script);
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    // The planted git dir was found and disarmed (so the attack was live).
    assert!(doc["warnings"].to_string().contains("evil.git"), "{doc}");
    user_reviews(&fx, &iso);
    user_git(&fx, &iso.join(crate::fixture::SUB), &["status"]);
    assert!(
        !marker.exists(),
        "the user's own git ran what the session planted"
    );
}

#[test]
fn attack_a_link_left_in_a_profiles_copy_is_never_mounted_as_a_copy_later() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("pl");
    fx.bind("pm");
    let target = fx.home.join("precious");
    std::fs::create_dir(&target).unwrap();
    std::fs::write(target.join("keep"), "mine\n").unwrap();
    let config = fx.home.join(".config/a3s-iso/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let profile = |writable: &str| {
        std::fs::write(
            &config,
            // Its state: a link left there is not reviewed away.
            format!("[profiles.tool]\nwritable = [{writable}]\nstate = [\"~/.tool/\"]\n"),
        )
        .unwrap();
    };
    profile("\"~/.tool/\"");
    let plant = format!("ln -s {} ~/.tool/inner", target.display());
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "pl",
        "--profile",
        "tool",
        "--",
        "sh",
        "-c",
        &plant,
    ]);
    assert_eq!(code, 0, "{doc}");
    // The user later keeps `~/.tool/inner/` too; another session runs under the profile.
    profile("\"~/.tool/\", \"~/.tool/inner/\"");
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "pm",
        "--profile",
        "tool",
        "--",
        "sh",
        "-c",
        "echo pwned > ~/.tool/inner/keep; echo pwned > ~/.tool/inner/new",
    ]);
    assert_eq!((code, error_code(&doc)), (5, "invalid_input"), "{doc}");
    assert_eq!(
        std::fs::read_to_string(target.join("keep")).unwrap(),
        "mine\n",
        "{doc}"
    );
    assert!(!target.join("new").exists(), "{doc}");
}

#[test]
fn attack_a_link_made_of_the_write_back_layer_is_never_read_through() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("wl");
    let file = fx.home.join(".tool.json");
    std::fs::write(&file, "old").unwrap();
    // A directory under a hidden secret, shaped as a layer would be.
    let hidden = fx.home.join(".aws/upper");
    std::fs::create_dir_all(&hidden).unwrap();
    std::fs::write(hidden.join(".tool.json"), "secret-from-aws").unwrap();
    let script = format!(
        "set -e
         for r in /tmp/a3s-iso-*-layers-*; do
           for n in \"$r\"/*; do mv \"$n\" \"$n.old\"; ln -s {aws} \"$n\"; done
         done
         ls -la /tmp/a3s-iso-*-layers-*",
        aws = fx.home.join(".aws").display()
    );
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "wl",
        "--allow-write",
        file.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "old", "{doc}");
}

#[test]
fn attack_a_nested_git_file_through_a_link_never_makes_a3s_iso_rewrite_another_repository() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("nl");
    let other = fx.other_repository("other", "o.txt");
    fx.git(&other, &["config", "alias.hello", "!echo hello"]);
    fx.git(
        &other,
        &["config", "filter.lfs.clean", "git-lfs clean -- %f"],
    );
    let hook = other.join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config_before = std::fs::read(other.join(".git/config")).unwrap();
    // A link to the other repository's directory, and a nested repository whose `.git` file
    // names a git dir through it.
    let script = format!(
        "set -e
         ln -s {other} lnk
         mkdir n; echo x > n/x
         echo 'gitdir: ../lnk/.git' > n/.git",
        other = other.display()
    );
    let (code, doc) = run_script(&fx, "nl", &script);
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    let (code, doc) = fx.json(&["capture", "-s", "nl"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        String::from_utf8_lossy(&std::fs::read(other.join(".git/config")).unwrap()),
        String::from_utf8_lossy(&config_before),
    );
    let mode = std::fs::metadata(&hook).unwrap().permissions().mode();
    assert_eq!(
        mode & 0o111,
        0o111,
        "the other repository's hook was disarmed"
    );
}
