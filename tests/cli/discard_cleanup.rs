//! Cleaning up as a user means it: `discard --all`, `-q` that quiets, `list` without the
//! discarded, `sweep` that keeps to its own repository, and an owner that outlives `sh -c`.

use std::os::unix::process::CommandExt;
use std::path::Path;

use crate::fixture::{Fixture, checkout_listing};

/// Every file and directory under `dir`, relative, sorted (links not followed).
fn tree_names(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            out.push(path.strip_prefix(dir).unwrap().display().to_string());
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn discard_all_purge_then_gc_all_leaves_only_the_lock_file_and_says_nothing_with_q() {
    let fx = Fixture::new();
    for id in ["a", "b", "c"] {
        fx.bind(id);
        std::fs::write(fx.isolation(id).join(format!("{id}.txt")), "work\n").unwrap();
    }
    let (code, doc) = fx.json(&["run", "-s", "b", "--no-sandbox", "--", "true"]);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = fx.json(&["promote", "-s", "c"]);
    assert_eq!(code, 0, "{doc}");
    fx.json(&["discard", "-s", "a"]);
    let before = checkout_listing(&fx.src);
    let git_dir = fx.src.join(".git");
    let git_before: Vec<String> = tree_names(&git_dir)
        .into_iter()
        .filter(|n| !n.starts_with("a3s-iso") && !n.starts_with("worktrees"))
        .filter(|n| !n.starts_with("refs") && !n.starts_with("logs") && !n.starts_with("objects"))
        .collect();

    let out = fx
        .cmd()
        .args(["-q", "discard", "--all", "--purge"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "",
        "discard -q says nothing"
    );
    let out = fx.cmd().args(["-q", "gc", "--all"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "",
        "gc -q says nothing"
    );

    // The checkout is as it was (c's landing included), and of a3s-iso only the lock is left.
    assert_eq!(checkout_listing(&fx.src), before);
    let ours: Vec<String> = tree_names(&git_dir)
        .into_iter()
        .filter(|n| n.contains("a3s-iso"))
        .collect();
    assert_eq!(ours, ["a3s-iso.lock"], "{ours:?}");
    assert_eq!(
        fx.git(
            &fx.src,
            &["for-each-ref", "refs/a3s-iso/", "refs/heads/a3s-iso/"]
        ),
        ""
    );
    assert_eq!(fx.worktrees().len(), 1, "{:?}", fx.worktrees());
    for id in ["a", "b", "c"] {
        assert!(!fx.isolation(id).exists(), "{id}");
    }
    let git_after: Vec<String> = tree_names(&git_dir)
        .into_iter()
        .filter(|n| !n.starts_with("a3s-iso") && !n.starts_with("worktrees"))
        .filter(|n| !n.starts_with("refs") && !n.starts_with("logs") && !n.starts_with("objects"))
        .collect();
    assert_eq!(git_after, git_before);
    assert_eq!(
        tree_names(&fx.home.join(".local/share/a3s-iso/sources")),
        Vec::<String>::new()
    );
}

#[test]
fn discard_all_reports_each_session_and_refuses_a_named_one_too() {
    let fx = Fixture::new();
    fx.bind("one");
    fx.bind("two");
    let (code, doc) = fx.json(&["discard", "--all"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["schema"], "a3s-iso.discard-all.v1");
    let ids: Vec<&str> = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["one", "two"]);
    assert!(
        doc["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["removed"] == true)
    );
    assert_eq!(doc["failed"], serde_json::json!([]));
    // Nothing left to discard: an empty report, not an error.
    let (code, doc) = fx.json(&["discard", "--all"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["sessions"], serde_json::json!([]));
    // Naming a session as well is a usage error.
    let out = fx
        .cmd()
        .args(["discard", "--all", "-s", "one"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn list_hides_discarded_sessions_unless_all() {
    let fx = Fixture::new();
    fx.bind("kept");
    fx.bind("gone");
    fx.json(&["discard", "-s", "gone"]);
    let (_, list) = fx.json(&["list"]);
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["kept"], "{list}");
    assert_eq!(list["hidden_discarded"], 1);
    let (_, all) = fx.json(&["list", "--all"]);
    let gone = all["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == "gone")
        .unwrap_or_else(|| panic!("{all}"));
    assert_eq!(gone["state"], "discarded");
    let out = fx.cmd().args(["list"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 discarded session not shown"), "{stderr}");
}

#[test]
fn sweep_keeps_quiet_about_another_repositorys_isolation_unless_all() {
    let fx = Fixture::new();
    // Another repository beside this one, with an isolation of its own in the same parent.
    let other = fx.other_repository("other", "o.txt");
    let (code, doc) = fx.json_in(&other, &["bind", "-s", "theirs"]);
    assert_eq!(code, 0, "{doc}");
    let theirs = fx.root.join("work/.other.a3s-isolate-theirs");
    assert!(theirs.is_dir());
    // Named like one of ours, as a tree of theirs could be.
    let planted = fx.isolation("planted");
    fx.git(
        &other,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            planted.to_str().unwrap(),
        ],
    );
    let (code, doc) = fx.json(&["sweep", "--dry-run"]);
    assert_eq!(code, 0, "{doc}");
    assert!(!doc.to_string().contains("other_repository"), "{doc}");
    let out = fx.cmd().args(["sweep", "--dry-run"]).output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        !text.contains("another repository") && !text.contains("other_repository"),
        "{text}"
    );
    let (code, doc) = fx.json(&["sweep", "--dry-run", "--all"]);
    assert_eq!(code, 0, "{doc}");
    assert!(doc.to_string().contains("other_repository"), "{doc}");
    assert!(planted.is_dir() && theirs.is_dir());
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

/// `list -z` and `show -z` give a path whose name holds a newline, a tab and bytes that are
/// not UTF-8 exactly as its bytes, one NUL-ended record each.
#[test]
fn list_and_show_z_give_paths_as_their_bytes() {
    use std::os::unix::ffi::OsStrExt;
    let fx = Fixture::new();
    let base: &[u8] = b"odd\nname\t\xff";
    let dir = fx.root.join(std::ffi::OsStr::from_bytes(base));
    std::fs::create_dir(&dir).unwrap();
    let out = fx
        .cmd()
        .args(["-q", "bind", "-s", "z", "--base-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = fx.cmd().args(["path", "-s", "z"]).output().unwrap();
    let bytes = out.stdout.strip_suffix(b"\n").unwrap();
    let tree = std::path::PathBuf::from(std::ffi::OsStr::from_bytes(bytes));
    assert!(
        tree.as_os_str()
            .as_bytes()
            .starts_with(dir.as_os_str().as_bytes())
    );
    assert!(tree.is_dir());

    let out = fx.cmd().args(["list", "-z"]).output().unwrap();
    assert!(out.status.success());
    let records: Vec<&[u8]> = out.stdout.split(|b| *b == 0).collect();
    assert_eq!(
        records.len(),
        2,
        "one record, then the end: {:?}",
        out.stdout
    );
    assert_eq!(records[1], b"");
    let fields: Vec<&[u8]> = records[0].splitn(7, |b| *b == b'\t').collect();
    assert_eq!(fields[0], b"z");
    assert_eq!(fields[1], b"bound");
    assert_eq!(fields[6], tree.as_os_str().as_bytes());

    let out = fx.cmd().args(["show", "-s", "z", "-z"]).output().unwrap();
    assert!(out.status.success());
    let isolation: Vec<u8> = [b"isolation\t", tree.as_os_str().as_bytes(), b"\0"].concat();
    assert!(
        out.stdout
            .windows(isolation.len())
            .any(|w| w == isolation.as_slice()),
        "{:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(out.stdout.starts_with(b"session\tz\0"));
}

/// `doctor` counts, `gc --dry-run` lists and the next command that changes state removes the
/// same leftovers of dead processes; and a3s-iso inside a run judges none dead (the host's
/// pids are not its own there).
#[test]
fn doctor_gc_and_cleaning_agree_on_what_dead_processes_left() {
    let fx = Fixture::new();
    fx.bind("d");
    let state = fx.src.join(".git/a3s-iso");
    // Private TMPDIRs are made in the system's temporary directory: this test's own.
    let tmpdir = fx.root.join("tmp");
    std::fs::create_dir_all(&tmpdir).unwrap();
    let tmpdir = tmpdir.to_str().unwrap();
    // A run SIGKILLed with its group leaves its quarantine and its private TMPDIR.
    let mut run = fx.cmd();
    run.args(["run", "-s", "d", "--no-sandbox", "--", "sleep", "30"])
        .env("TMPDIR", tmpdir)
        .process_group(0);
    let mut child = run.spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    let group = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process_group(group, rustix::process::Signal::KILL).unwrap();
    child.wait().unwrap();
    let quarantined: Vec<_> = std::fs::read_dir(state.join("quarantine"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(quarantined.len(), 1, "{quarantined:?}");
    // An atomic write of a record whose writer is gone (no process has that pid).
    let dead_pid = (4_000_000..4_194_000)
        .find(|pid| !Path::new(&format!("/proc/{pid}")).exists())
        .unwrap();
    let half_written = state.join(format!("sessions/.d.json.tmp-{dead_pid}-0-0000abcd"));
    std::fs::write(&half_written, "{").unwrap();

    let count = |env: &[(&str, &str)]| {
        let mut cmd = fx.cmd();
        cmd.args(["--json", "doctor"])
            .env("TMPDIR", tmpdir)
            .envs(env.iter().copied());
        let (_, doc) = crate::fixture::json_of(cmd.output().unwrap());
        let check = doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "scratch_leftovers")
            .unwrap()
            .clone();
        check["detail"].as_str().unwrap().to_string()
    };
    let before = count(&[]);
    assert!(before.starts_with("3 "), "{before}");
    assert_eq!(count(&[("A3S_ISO_RUN_ID", "r-inside")]), "none");

    let mut gc = fx.cmd();
    gc.args(["--json", "gc", "--dry-run"]).env("TMPDIR", tmpdir);
    let (code, dry) = crate::fixture::json_of(gc.output().unwrap());
    assert_eq!(code, 0, "{dry}");
    let listed: Vec<String> = dry["removed"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["reason"] == "dead_maker")
        .map(|item| item["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(listed.len(), 3, "{dry}");
    assert!(
        listed.contains(&half_written.display().to_string()),
        "{dry}"
    );
    assert!(
        listed.contains(&quarantined[0].display().to_string()),
        "{dry}"
    );
    assert!(quarantined[0].exists() && half_written.exists());

    let mut bind = fx.cmd();
    bind.args(["bind", "-s", "e"]).env("TMPDIR", tmpdir);
    assert!(bind.output().unwrap().status.success());
    assert_eq!(count(&[]), "none");
    for path in listed {
        assert!(!Path::new(&path).exists(), "{path} is still there");
    }
}

/// A run that publishes ports and is SIGKILLed leaves what it wrote for `show`; once no run
/// holds the session, `show` ignores it and the next command that cleans removes it.
#[test]
fn a_killed_runs_published_ports_are_forgotten_and_cleaned() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("p");
    let live = fx.src.join(".git/a3s-iso/live/p.json");
    let mut run = fx.cmd();
    run.args(["run", "-s", "p", "--publish", "3000", "--", "sleep", "30"])
        .process_group(0);
    let mut child = run.spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !live.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(live.exists(), "the run never published");
    let group = rustix::process::Pid::from_child(&child);
    rustix::process::kill_process_group(group, rustix::process::Signal::KILL).unwrap();
    child.wait().unwrap();
    assert!(live.exists());
    let (code, shown) = fx.json(&["show", "-s", "p"]);
    assert_eq!(code, 0, "{shown}");
    assert_eq!(shown["live_run"], serde_json::Value::Null, "{shown}");
    fx.bind("other");
    assert!(!live.exists(), "the killed run's live file is still there");
}
