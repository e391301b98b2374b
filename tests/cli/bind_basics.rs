use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::fixture::{
    Fixture, error_code, human, json_of, listing, require_tool, sleeper, snapshot_settings_naming,
};

#[test]
fn binds_a_detached_worktree_next_to_the_source() {
    let fx = Fixture::new();
    let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let doc = fx.bind("task-1");
    let iso = fx.isolation("task-1");
    let tree = fx.git(&fx.src, &["rev-parse", "HEAD^{tree}"]);
    let named = [(head.as_str(), "[HEAD]"), (tree.as_str(), "[TREE]")];
    snapshot_settings_naming(&fx, &named).bind(|| {
        insta::assert_json_snapshot!(doc, @r#"
        {
          "base_tree": "git-tree:[TREE]",
          "bound_revision": "[HEAD]",
          "carried_wip": false,
          "copied_ignored": null,
          "fill": "[FILL]",
          "owner": {
            "hostname": "[HOST]",
            "liveness": "alive",
            "name": "[NAME]",
            "pid": "[PID]",
            "start_identity": "linux-proc-start-ticks:[TICKS]"
          },
          "read_only": false,
          "reclaimed": [],
          "reused": false,
          "schema": "a3s-iso.bind.v1",
          "session_id": "task-1",
          "setup": [],
          "source": "[ROOT]/work/src",
          "warm": false,
          "warnings": [],
          "wip_left_out": false,
          "worktree": "[ROOT]/work/.src.a3s-isolate-task-1"
        }
        "#)
    });
    // Detached at the bound revision, same content.
    assert_eq!(fx.git(&iso, &["rev-parse", "HEAD"]), head);
    let detached = Command::new("git")
        .current_dir(&iso)
        .args(["symbolic-ref", "-q", "HEAD"])
        .status()
        .unwrap();
    assert!(!detached.success(), "the isolation must be detached");
    assert_eq!(
        std::fs::read_to_string(iso.join("src/lib.txt")).unwrap(),
        "one\ntwo\n"
    );
    assert!(fx.worktrees().contains(&iso.to_string_lossy().into_owned()));
    // Owner: the caller (this test process), with its start identity from /proc.
    let me = std::process::id();
    assert_eq!(doc["owner"]["pid"], me);
    assert_eq!(
        doc["owner"]["start_identity"],
        crate::fixture::start_identity(me)
    );
    // The base ref pins the bound commit.
    assert_eq!(
        fx.git(&fx.src, &["rev-parse", "refs/a3s-iso/sessions/task-1/base"]),
        head
    );
    // The isolation is invisible to the source's status.
    assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), "");
}

#[test]
fn generated_ids_are_printed_and_valid() {
    let fx = Fixture::new();
    let (code, doc) = fx.json(&["bind"]);
    assert_eq!(code, 0, "{doc}");
    let id = doc["session_id"].as_str().unwrap();
    assert!(id.starts_with("s-"), "{id}");
    assert!(fx.isolation(id).is_dir());
}

fn assert_unavailable_and_untouched(
    dir: &std::path::Path,
    fx: &Fixture,
    hint_contains: Option<&str>,
) {
    let before = crate::fixture::listing_but_cache(&fx.root);
    let (code, doc) = fx.json_in(dir, &["bind", "-s", "x"]);
    assert_eq!(code, 4, "{doc}");
    assert_eq!(error_code(&doc), "isolation_unavailable");
    if let Some(hint) = hint_contains {
        assert!(
            doc["error"]["hint"].as_str().unwrap().contains(hint),
            "{doc}"
        );
    }
    assert_eq!(
        crate::fixture::listing_but_cache(&fx.root),
        before,
        "nothing may be created anywhere"
    );
}

#[test]
fn fails_closed_in_a_plain_directory() {
    let fx = Fixture::bare_root();
    let plain = fx.root.join("work/plain");
    std::fs::create_dir_all(&plain).unwrap();
    std::fs::write(plain.join("f"), "x").unwrap();
    assert_unavailable_and_untouched(&plain, &fx, None);
}

#[test]
fn fails_closed_in_a_bare_repository() {
    let fx = Fixture::bare_root();
    let bare = fx.root.join("work/bare.git");
    fx.git(&fx.root.join("work"), &["init", "-q", "--bare", "bare.git"]);
    assert_unavailable_and_untouched(&bare, &fx, None);
}

#[test]
fn fails_closed_on_an_unborn_head() {
    let fx = Fixture::bare_root();
    std::fs::create_dir_all(&fx.src).unwrap();
    fx.git(&fx.src, &["init", "-q"]);
    fx.write("a.txt", "a");
    assert_unavailable_and_untouched(&fx.src, &fx, Some("create an initial commit"));
}

#[test]
fn rebinding_reuses_without_moving_to_a_newer_head() {
    let fx = Fixture::new();
    let first = fx.bind("same");
    fx.write("later.txt", "later\n");
    let newer = fx.commit_all("later");
    let second = fx.bind("same");
    assert_eq!(second["reused"], true);
    assert_eq!(second["bound_revision"], first["bound_revision"]);
    assert_ne!(second["bound_revision"], newer.as_str());
    assert_eq!(
        fx.git(&fx.isolation("same"), &["rev-parse", "HEAD"]),
        first["bound_revision"].as_str().unwrap()
    );
}

#[test]
fn another_live_owner_cannot_take_a_bound_session() {
    let fx = Fixture::new();
    fx.bind("mine");
    let mut other = sleeper();
    let (code, doc) = fx.json(&["bind", "-s", "mine", "--owner-pid", &other.id().to_string()]);
    other.kill().unwrap();
    other.wait().unwrap();
    assert_eq!(code, 1, "{doc}");
    assert_eq!(error_code(&doc), "session_exists");
    // Once that other process is gone, a session it owned can be taken over.
    let mut owner = sleeper();
    let (code, doc) = fx.json(&[
        "bind",
        "-s",
        "theirs",
        "--owner-pid",
        &owner.id().to_string(),
    ]);
    assert_eq!(code, 0, "{doc}");
    owner.kill().unwrap();
    owner.wait().unwrap();
    let again = fx.bind("theirs");
    assert_eq!(again["reused"], true);
    assert_eq!(again["owner"]["pid"], std::process::id());
}

#[test]
fn an_owner_pid_that_is_not_running_is_refused() {
    let fx = Fixture::new();
    let mut gone = sleeper();
    let pid = gone.id().to_string();
    gone.kill().unwrap();
    gone.wait().unwrap();
    let (code, doc) = fx.json(&["bind", "-s", "x", "--owner-pid", &pid]);
    assert_eq!(code, 2, "{doc}");
    assert_eq!(error_code(&doc), "usage");
    assert!(!fx.isolation("x").exists());
}

#[test]
fn invalid_ids_are_refused_before_anything_is_written() {
    let fx = Fixture::new();
    let long = "a".repeat(200);
    for id in [
        "../x",
        "a/b",
        ".hidden",
        "x.lock",
        "a..b",
        "",
        long.as_str(),
        "a\nb",
    ] {
        let before = crate::fixture::listing_but_cache(&fx.root);
        let (code, doc) = fx.json(&["bind", "-s", id]);
        assert_eq!(code, 5, "{id:?}: {doc}");
        assert_eq!(error_code(&doc), "invalid_id", "{id:?}");
        assert_eq!(
            crate::fixture::listing_but_cache(&fx.root),
            before,
            "{id:?} wrote something"
        );
    }
    // A NUL cannot travel in argv; it can in the environment's place of the id… also not.
    // So the NUL case is covered by the library's validator (unit tests) and proptest.
}

#[test]
fn occupied_paths_are_refused_and_left_untouched() {
    let fx = Fixture::new();
    let work = fx.root.join("work");
    std::os::unix::fs::symlink(&fx.src, fx.isolation("link")).unwrap();
    std::fs::write(fx.isolation("file"), "user data\n").unwrap();
    std::fs::create_dir(fx.isolation("dir")).unwrap();
    std::fs::write(fx.isolation("dir").join("keep.txt"), "mine\n").unwrap();
    let occupants = || {
        let mut all = listing(&work);
        all.retain(|path, _| path.starts_with(".src.a3s-isolate-"));
        all
    };
    for id in ["link", "file", "dir"] {
        let before = occupants();
        let (code, doc) = fx.json(&["bind", "-s", id]);
        assert_eq!(code, 1, "{doc}");
        assert_eq!(error_code(&doc), "isolation_path_occupied", "{id}");
        assert_eq!(occupants(), before, "{id}: the occupant must be untouched");
        assert!(
            !fx.src
                .join(".git/a3s-iso/sessions")
                .join(format!("{id}.json"))
                .exists()
        );
    }
    assert_eq!(fx.worktrees().len(), 1);
    // An empty leftover directory is cleared and the bind proceeds.
    std::fs::create_dir(fx.isolation("empty")).unwrap();
    let doc = fx.bind("empty");
    assert_eq!(doc["reused"], false);
    assert!(fx.isolation("empty").join("README.md").is_file());
}

#[test]
fn a_dirty_source_is_refused_unless_allowed() {
    let fx = Fixture::new();
    fx.write("README.md", "changed\n");
    fx.write("new.txt", "untracked\n");
    fx.write(".gitignore", "ignored.log\n");
    fx.git(&fx.src, &["add", ".gitignore"]);
    let (code, doc) = fx.json(&["bind", "-s", "d"]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(error_code(&doc), "dirty_source");
    let paths: Vec<&str> = doc["error"]["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(
        paths.contains(&"README.md") && paths.contains(&"new.txt"),
        "{paths:?}"
    );
    assert!(
        doc["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("--allow-dirty")
    );
    assert!(!fx.isolation("d").exists());

    let (code, doc) = fx.json(&["bind", "-s", "d", "--allow-dirty"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["wip_left_out"], true);
    // The isolation is at HEAD: the WIP is not in it.
    assert_eq!(
        std::fs::read_to_string(fx.isolation("d").join("README.md")).unwrap(),
        "hello\n"
    );
    assert!(!fx.isolation("d").join("new.txt").exists());
    // Only ignored files: not dirty.
    let clean = Fixture::new();
    clean.write(".gitignore", "*.log\n");
    clean.commit_all("ignore logs");
    clean.write("debug.log", "noise");
    clean.bind("c");
}

#[test]
fn read_only_sessions_have_no_tree() {
    let fx = Fixture::new();
    fx.write("wip.txt", "dirty is fine for reading\n");
    let (code, doc) = fx.json(&["bind", "-s", "ro", "--read-only"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["read_only"], true);
    assert!(doc["worktree"].is_null());
    assert!(!fx.isolation("ro").exists());
    assert_eq!(fx.worktrees().len(), 1);
    let (_, list) = fx.json(&["list"]);
    assert_eq!(list["sessions"][0]["state"], "bound");
    assert_eq!(list["sessions"][0]["read_only"], true);
}

#[test]
fn base_dir_places_the_isolation_and_must_be_outside_the_source() {
    let fx = Fixture::new();
    let base = fx.root.join("isolations");
    std::fs::create_dir(&base).unwrap();
    let (code, doc) = fx.json(&["bind", "-s", "b", "--base-dir", base.to_str().unwrap()]);
    assert_eq!(code, 0, "{doc}");
    // A shared directory: the name carries the source's hash, so same-named sources differ.
    assert_eq!(
        doc["worktree"],
        base.join(format!(".src-{}.a3s-isolate-b", source_hash(&fx.src)))
            .to_str()
            .unwrap()
    );
    let inside = fx.src.join("sub");
    std::fs::create_dir(&inside).unwrap();
    let (code, doc) = fx.json(&["bind", "-s", "c", "--base-dir", inside.to_str().unwrap()]);
    assert_eq!(code, 2, "{doc}");
    assert!(std::fs::read_dir(&inside).unwrap().next().is_none());
}

#[test]
fn binding_from_a_subdirectory_binds_the_top_level() {
    let fx = Fixture::new();
    let sub = fx.src.join("src");
    let (code, doc) = fx.json_in(&sub, &["bind", "-s", "sub"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["source"], fx.src.to_str().unwrap());
    let iso = std::path::PathBuf::from(doc["worktree"].as_str().unwrap());
    assert!(
        !iso.starts_with(&fx.src),
        "the isolation must be outside the source"
    );
    assert_eq!(iso, fx.isolation("sub"));
}

#[test]
fn falls_back_to_the_user_data_dir_when_the_parent_is_not_writable() {
    let fx = Fixture::new();
    let work = fx.root.join("work");
    // Root ignores permission bits; the immutable attribute binds even root. Anyone else gets
    // a directory without write permission.
    let as_root = crate::fixture::is_root();
    if as_root {
        if !require_tool("chattr") {
            return;
        }
        let locked = Command::new("chattr")
            .arg("+i")
            .arg(&work)
            .output()
            .unwrap();
        assert!(
            locked.status.success(),
            "chattr +i {} failed (the file system of the temp dir must support the immutable \
             attribute): {}",
            work.display(),
            String::from_utf8_lossy(&locked.stderr)
        );
    } else {
        std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o555)).unwrap();
    }
    let out = fx
        .cmd()
        .args(["--json", "bind", "-s", "fb"])
        .output()
        .unwrap();
    if as_root {
        let unlocked = Command::new("chattr")
            .arg("-i")
            .arg(&work)
            .status()
            .unwrap();
        assert!(unlocked.success());
    } else {
        std::fs::set_permissions(&work, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (code, doc) = json_of(out);
    assert_eq!(code, 0, "{doc}");
    let tree = std::path::PathBuf::from(doc["worktree"].as_str().unwrap());
    assert!(
        tree.starts_with(fx.home.join(".local/share/a3s-iso/isolations")),
        "{tree:?}"
    );
    assert!(tree.ends_with(format!(".src-{}.a3s-isolate-fb", source_hash(&fx.src))));
    assert!(tree.join("README.md").is_file());
    assert!(
        doc["warnings"][0]
            .as_str()
            .unwrap()
            .contains("not writable")
    );
}

#[test]
fn the_lock_times_out_naming_its_holder() {
    let fx = Fixture::new();
    let common = fx.src.join(".git");
    let held =
        a3s_iso::store::lock::FileLock::acquire(&common.join("a3s-iso.lock"), Duration::ZERO)
            .unwrap();
    let (code, doc) = fx.json(&["--lock-timeout", "100ms", "bind", "-s", "l"]);
    drop(held);
    assert_eq!(code, 6, "{doc}");
    assert_eq!(error_code(&doc), "lock_timeout");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("pid {}", std::process::id()))
    );
    assert!(!fx.isolation("l").exists());
}

#[test]
fn a_git_that_is_too_old_is_refused() {
    let fx = Fixture::new();
    let fake = fx.root.join("old-git");
    std::fs::write(&fake, "#!/bin/sh\necho 'git version 2.20.1'\n").unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(
        &mut std::fs::metadata(&fake).unwrap().permissions(),
        0o755,
    );
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let (code, doc) = fx.json(&["--git", fake.to_str().unwrap(), "bind", "-s", "g"]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(error_code(&doc), "git_too_old");
    let out = fx
        .cmd()
        .env("A3S_ISO_GIT", &fake)
        .args(["--json", "list"])
        .output()
        .unwrap();
    assert_eq!(error_code(&json_of(out).1), "git_too_old");
    // The version is kept per binary: a new git at the same path (an upgrade) is asked again.
    let real = crate::fixture::git_on_path();
    std::fs::write(
        &fake,
        format!("#!/bin/sh\nexec '{}' \"$@\"\n", real.display()),
    )
    .unwrap();
    let (code, doc) = fx.json(&["--git", fake.to_str().unwrap(), "list"]);
    assert_eq!(code, 0, "{doc}");
}

/// A git behind a wrapper (an asdf or mise shim, a script) may be another git at each call
/// with nothing of the wrapper changed: its version is asked every time, never kept.
#[test]
fn a_git_behind_a_wrapper_is_asked_its_version_every_time() {
    let fx = Fixture::new();
    let real = crate::fixture::git_on_path();
    let old = fx.root.join("old-git");
    std::fs::write(&old, "#!/bin/sh\necho 'git version 2.20.1'\n").unwrap();
    let shim = fx.root.join("shim").join("git");
    std::fs::create_dir_all(shim.parent().unwrap()).unwrap();
    std::fs::write(&shim, "#!/bin/sh\nexec \"$BEHIND\" \"$@\"\n").unwrap();
    for file in [&old, &shim] {
        std::fs::set_permissions(file, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
    let list = |behind: &std::path::Path| {
        let out = fx
            .cmd()
            .env("BEHIND", behind)
            .arg("--git")
            .arg(&shim)
            .args(["--json", "list"])
            .output()
            .unwrap();
        json_of(out)
    };
    assert_eq!(list(&real).0, 0);
    let (code, doc) = list(&old);
    assert_eq!((code, error_code(&doc)), (1, "git_too_old"), "{doc}");
    assert_eq!(list(&real).0, 0);
}

/// What a3s-iso keeps of git's version is a file anyone with the user's rights can replace:
/// a FIFO or a link there is not waited on or followed, and the command goes on.
#[test]
fn a_fifo_or_a_link_in_the_cache_of_git_versions_hangs_nothing() {
    use sha2::Digest;
    let fx = Fixture::new();
    let real = std::fs::canonicalize(crate::fixture::git_on_path()).unwrap();
    let name = hex::encode(sha2::Sha256::digest(real.as_os_str().as_encoded_bytes()));
    let dir = fx.home.join(".cache/a3s-iso/git-version");
    std::fs::create_dir_all(&dir).unwrap();
    let entry = dir.join(&name[..32]);
    let fifo = std::process::Command::new("mkfifo")
        .arg(&entry)
        .status()
        .unwrap();
    assert!(fifo.success());
    let within = |args: &[&str]| {
        let mut child = fx
            .cmd()
            .args(args)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status.code();
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    assert_eq!(within(&["list"]), Some(0), "a FIFO there hung the command");
    std::fs::remove_file(&entry).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &entry).unwrap();
    assert_eq!(within(&["list"]), Some(0), "a link there was followed");
    fx.bind("s");
    assert_eq!(within(&["capture", "-s", "s"]), Some(0));
}

#[test]
fn eight_concurrent_binds_of_one_id_have_one_winner() {
    let fx = Fixture::new();
    let mut owners: Vec<Child> = (0..8).map(|_| sleeper()).collect();
    let binds: Vec<Child> = owners
        .iter()
        .map(|owner| {
            fx.cmd()
                .args([
                    "--json",
                    "bind",
                    "-s",
                    "race",
                    "--owner-pid",
                    &owner.id().to_string(),
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let results: Vec<(i32, serde_json::Value)> = binds
        .into_iter()
        .map(|c| json_of(c.wait_with_output().unwrap()))
        .collect();
    for owner in &mut owners {
        owner.kill().unwrap();
        owner.wait().unwrap();
    }
    let winners = results.iter().filter(|(code, _)| *code == 0).count();
    assert_eq!(winners, 1, "{results:?}");
    for (code, doc) in results.iter().filter(|(code, _)| *code != 0) {
        assert_eq!(*code, 1, "{doc}");
        assert!(
            ["session_exists", "isolation_path_occupied"].contains(&error_code(doc)),
            "{doc}"
        );
    }
    assert_eq!(fx.worktrees().len(), 2, "exactly one isolation registered");
    let names: Vec<String> = std::fs::read_dir(fx.root.join("work"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.contains(".creating")), "{names:?}");
    assert_eq!(
        fx.git(&fx.isolation("race"), &["status", "--porcelain"]),
        ""
    );
}

#[test]
fn a_bind_killed_during_checkout_leaves_nothing_bound_and_can_be_redone() {
    let fx = Fixture::new();
    fx.commit_many_files();
    let iso = fx.isolation("killed");
    let mut killed_mid_checkout = false;
    for _attempt in 0..5 {
        let mut child = fx
            .cmd()
            .args(["--json", "bind", "-s", "killed"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let start = Instant::now();
        while !iso.join(".git").exists() && start.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_micros(200));
        }
        let running = child.try_wait().unwrap().is_none();
        // The whole group: a3s-iso and the git it started, as when a job is killed.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", child.id())])
            .status();
        child.wait().unwrap();
        if running {
            killed_mid_checkout = true;
            break;
        }
        // It finished first: undo and try again.
        fx.json(&["discard", "-s", "killed", "--purge"]);
    }
    assert!(
        killed_mid_checkout,
        "could not interrupt a bind during its checkout"
    );
    let (_, list) = fx.json(&["list"]);
    assert!(
        list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["state"] != "bound"),
        "{list}"
    );
    // The dead bind is provably dead: a new bind clears its leftovers and succeeds at once.
    let doc = fx.bind("killed");
    assert_eq!(doc["reused"], false);
    assert_eq!(fx.git(&iso, &["status", "--porcelain"]), "");
    assert_eq!(fx.worktrees().len(), 2);
}

#[test]
fn submodules_are_initialised_when_asked() {
    let fx = Fixture::new();
    fx.add_submodule();
    // Cloned from the source's own copy: git's default file-transport policy is enough.
    let mut bind = fx.cmd();
    bind.args(["--json", "bind", "-s", "sub", "--submodules"]);
    let (code, doc) = json_of(bind.output().unwrap());
    assert_eq!(code, 0, "{doc}");
    let iso = fx.isolation("sub");
    assert_eq!(
        std::fs::read_to_string(iso.join("vendor/lib/lib.txt")).unwrap(),
        "library\n"
    );
    // Without the flag the submodule stays uninitialised (an empty directory).
    fx.bind("plain");
    assert!(!fx.isolation("plain").join("vendor/lib/lib.txt").exists());
    // Discard removes a tree with an initialised submodule.
    let (code, doc) = fx.json(&["discard", "-s", "sub"]);
    assert_eq!(code, 0, "{doc}");
    assert!(!iso.exists());
}

#[test]
fn an_unwritable_state_dir_is_an_io_error_and_builds_nothing() {
    let fx = Fixture::new();
    let blocker = fx.root.join("a-file");
    std::fs::write(&blocker, "not a directory\n").unwrap();
    let state = blocker.join("state");
    let before = listing(&fx.root.join("work"));
    let (code, doc) = fx.json(&["--state-dir", state.to_str().unwrap(), "bind", "-s", "io"]);
    assert_eq!((code, error_code(&doc)), (1, "io"), "{doc}");
    let mut after = listing(&fx.root.join("work"));
    after.remove("src/.git/a3s-iso.lock");
    assert_eq!(after, before, "nothing built");
    assert_eq!(fx.worktrees().len(), 1);
}

#[test]
fn a_failing_git_is_reported_with_its_args_and_stderr() {
    let fx = Fixture::new();
    // A git that works, except that it cannot add worktrees.
    let wrapper = fx.root.join("git-wrapper");
    std::fs::write(
        &wrapper,
        "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = worktree ] && { echo 'fatal: simulated failure' >&2; exit 128; }; done\nexec git \"$@\"\n",
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let (code, doc) = fx.json(&["--git", wrapper.to_str().unwrap(), "bind", "-s", "gf"]);
    assert_eq!((code, error_code(&doc)), (1, "git_failed"), "{doc}");
    let git = &doc["error"]["git"];
    assert_eq!(git["exit_code"], 128);
    assert!(
        git["stderr"]
            .as_str()
            .unwrap()
            .contains("simulated failure")
    );
    assert!(
        git["args"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a == "worktree")
    );
    assert!(!fx.isolation("gf").exists());
    assert!(!fx.src.join(".git/a3s-iso/sessions/gf.json").exists());
    assert!(
        !fx.src.join(".git/a3s-iso/claims/gf.json").exists(),
        "the claim is released"
    );
}

/// The suite's object-format switch reaches every repository a fixture makes: a SHA-256 run
/// that silently tested SHA-1 repositories would prove nothing.
#[test]
fn fixtures_use_the_object_format_the_run_asked_for() {
    let fx = Fixture::new();
    let format = fx.git(&fx.src, &["rev-parse", "--show-object-format"]);
    assert_eq!(format, crate::fixture::object_format());
    let other = fx.root.join("work/other");
    std::fs::create_dir_all(&other).unwrap();
    fx.git(&other, &["init", "-q"]);
    let format = fx.git(&other, &["rev-parse", "--show-object-format"]);
    assert_eq!(
        format,
        crate::fixture::object_format(),
        "a test's own git init"
    );
}

/// The first 8 hex of sha256 of a source's canonical path: what isolation names in a shared
/// directory carry.
pub fn source_hash(source: &std::path::Path) -> String {
    use sha2::{Digest, Sha256};
    let canonical = std::fs::canonicalize(source).unwrap();
    let digest = Sha256::digest(canonical.as_os_str().as_encoded_bytes());
    digest[..4].iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn the_dirty_check_names_what_git_status_names() {
    // Every kind of local change, against `git status` itself: the check runs its tracked
    // and untracked halves side by side, and must see exactly what one status sees.
    let fx = Fixture::new();
    fx.write(".gitignore", "*.log\n");
    fx.write("keep.txt", "kept\n");
    fx.write("gone.txt", "to delete\n");
    fx.write("moved.txt", "to rename\n");
    fx.commit_all("more files");
    fx.write("README.md", "staged then reverted\n");
    fx.git(&fx.src, &["add", "README.md"]);
    fx.write("README.md", "hello\n");
    std::fs::remove_file(fx.src.join("gone.txt")).unwrap();
    fx.git(&fx.src, &["mv", "moved.txt", "renamed.txt"]);
    fx.write("keep.txt", "modified\n");
    fx.write("newdir/a.txt", "untracked in a directory\n");
    fx.write("newdir/b.log", "ignored in it\n");
    fx.write("top.log", "ignored\n");
    std::fs::create_dir_all(fx.src.join("emptydir")).unwrap();
    fx.git(&fx.src, &["init", "-q", "nested"]);
    let status = fx.git(
        &fx.src,
        &["status", "--porcelain=v1", "--untracked-files=normal"],
    );
    let expected: Vec<String> = status
        .lines()
        .map(|line| {
            let path = &line[3..];
            // A rename is `old -> new`; the check names the new path.
            path.rsplit(" -> ").next().unwrap().to_string()
        })
        .collect();
    let (code, doc) = fx.json(&["bind", "-s", "d"]);
    assert_eq!(code, 1, "{doc}");
    let paths: Vec<String> = doc["error"]["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    assert_eq!(doc["error"]["more_paths"], 0, "{doc}");
    assert_eq!(paths, expected, "{status}");
    assert!(paths.iter().any(|p| p == "nested/"), "{paths:?}");
    assert!(
        !paths
            .iter()
            .any(|p| p.contains(".log") || p.contains("emptydir"))
    );
}

#[test]
fn a_submodule_with_changes_makes_the_source_dirty() {
    let fx = Fixture::new();
    let sub = fx.add_submodule();
    // A modified file inside the submodule, then an untracked one: each is a local change.
    std::fs::write(sub.join("lib.txt"), "changed\n").unwrap();
    let (code, doc) = fx.json(&["bind", "-s", "d"]);
    assert_eq!((code, error_code(&doc)), (1, "dirty_source"), "{doc}");
    assert_eq!(
        doc["error"]["paths"],
        serde_json::json!(["vendor/lib"]),
        "{doc}"
    );
    fx.git(&sub, &["checkout", "-q", "--", "lib.txt"]);
    std::fs::write(sub.join("new.txt"), "untracked\n").unwrap();
    let (code, doc) = fx.json(&["bind", "-s", "d"]);
    assert_eq!((code, error_code(&doc)), (1, "dirty_source"), "{doc}");
    std::fs::remove_file(sub.join("new.txt")).unwrap();
    let (code, doc) = fx.json(&["bind", "-s", "d"]);
    assert_eq!(code, 0, "a clean submodule is no local change: {doc}");
}

#[test]
fn a_lock_timeout_names_the_holders_pid_and_command() {
    let fx = Fixture::new();
    let lock = fx.src.join(".git/a3s-iso.lock");
    let held = a3s_iso::store::lock::FileLock::acquire(&lock, Duration::ZERO).unwrap();
    let recorded = std::fs::read_to_string(&lock).unwrap();
    let (code, _, stderr) = human(&fx, &["--lock-timeout", "100ms", "bind", "-s", "l"]);
    let (json_code, doc) = fx.json(&["--lock-timeout", "100ms", "bind", "-s", "l"]);
    drop(held);
    assert_eq!((code, json_code), (6, 6), "{stderr}");
    assert_eq!(error_code(&doc), "lock_timeout");
    let pid = format!("pid {} (", std::process::id());
    assert!(recorded.starts_with(&pid), "{recorded}");
    assert!(recorded.contains(" since 20"), "{recorded}");
    // The command line of the holder (this test binary) is named.
    let program = std::env::args().next().unwrap();
    let program = program.rsplit('/').next().unwrap();
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&pid) && message.contains(program),
        "{message}"
    );
    assert!(
        stderr.contains(&pid) && stderr.contains(program),
        "{stderr}"
    );
    assert!(!fx.isolation("l").exists());
    // Released, the record is gone.
    assert_eq!(std::fs::read_to_string(&lock).unwrap(), "");
}

/// A harness runs each command through a fresh `sh -c`: the session belongs to the harness
/// (here, this test process), not to the shell that exits at once, and sweep keeps it.
#[test]
fn bind_from_sh_c_is_owned_by_the_long_lived_parent() {
    let fx = Fixture::new();
    let bin = env!("CARGO_BIN_EXE_a3s-iso");
    let mut cmd = std::process::Command::new("sh");
    // Not the last command, so that the shell cannot exec a3s-iso in its own place.
    cmd.args(["-c", &format!("'{bin}' --json bind -s harnessed; true")])
        .current_dir(&fx.src)
        .stdin(std::process::Stdio::null());
    crate::fixture::isolate(&mut cmd, &fx.home);
    let (code, doc) = crate::fixture::json_of(cmd.output().unwrap());
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["owner"]["pid"], std::process::id(), "{doc}");
    assert_eq!(doc["owner"]["liveness"], "alive", "{doc}");
    // The shell has exited; the session is live as long as this process runs.
    let (_, sweep) = fx.json(&["sweep", "--dry-run"]);
    let kept = &sweep["kept"][0];
    assert_eq!(kept["session_id"], "harnessed", "{sweep}");
    assert_eq!(kept["reason"], "live", "{sweep}");
    assert_eq!(sweep["reclaimed"], serde_json::json!([]), "{sweep}");
    let (_, list) = fx.json(&["list"]);
    assert_eq!(list["sessions"][0]["owner"]["liveness"], "alive", "{list}");
    assert_eq!(list["sessions"][0]["owner"]["pid"], std::process::id());
    // Interactive shells and other programs own what they bind: only `-c` shells are skipped.
    let mut cmd = std::process::Command::new("sh");
    cmd.args([
        "-c",
        &format!("'{bin}' --json bind -s direct --owner-pid $$; true"),
    ])
    .current_dir(&fx.src)
    .stdin(std::process::Stdio::null());
    crate::fixture::isolate(&mut cmd, &fx.home);
    let (code, doc) = crate::fixture::json_of(cmd.output().unwrap());
    assert_eq!(code, 0, "{doc}");
    assert_ne!(
        doc["owner"]["pid"],
        std::process::id(),
        "--owner-pid is taken as given"
    );
}
