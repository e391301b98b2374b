//! Reclaiming as `bind` and `land` start: a dead owner's session goes as `sweep` would take it
//! (its work snapshotted first, `bind --resume` brings it back byte for byte), while the session
//! being bound, the sessions of a `land` queue, and live, retained and ownerless ones stay
//! untouched; a kill at any point loses no work; `sweep.auto = false` and
//! `A3S_ISO_SWEEP_AUTO=0` turn it off.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::fixture::{Fixture, json_of, sleeper, state_dir};
use crate::sweep_races::{dead_owner_session, listed, with_work};

/// Bytes git and editors mangle when they get a chance: no newline, CRLF, invalid UTF-8.
const EDIT: &[u8] = b"edited \xff bytes\r\nno newline";
/// A file name that is not UTF-8.
const ODD_NAME: &[u8] = b"caf\xe9 \xff.bin";

/// Puts uncommitted work of every kind into session `id`'s tree: a tracked edit, a new
/// untracked file, a deletion, and a new file whose name is not UTF-8.
fn dirty(fx: &Fixture, id: &str) -> std::path::PathBuf {
    let tree = fx.isolation(id);
    std::fs::write(tree.join("README.md"), EDIT).unwrap();
    std::fs::write(tree.join("new.bin"), [0u8, 1, 2, 255]).unwrap();
    std::fs::remove_file(tree.join("src/lib.txt")).unwrap();
    std::fs::write(tree.join(OsStr::from_bytes(ODD_NAME)), b"\x00odd\n").unwrap();
    tree
}

/// Every file of a tree but `.git`, by its name's bytes, with its bytes.
fn tree_bytes(root: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<Vec<u8>, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .as_os_str()
                .as_bytes()
                .to_vec();
            if rel == b".git" {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                walk(root, &path, out);
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// Sets the user's `sweep.auto`.
fn auto(fx: &Fixture, on: bool) {
    let config = fx.home.join(".config/a3s-iso");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.toml"),
        format!("[sweep]\nauto = {on}\n"),
    )
    .unwrap();
}

/// `a3s-iso --json ARGS` with reclaiming off for this command: the sessions a test lays out
/// stay where it put them.
fn quiet_json(fx: &Fixture, args: &[&str]) -> (i32, Value) {
    json_of(
        fx.cmd()
            .env("A3S_ISO_SWEEP_AUTO", "0")
            .arg("--json")
            .args(args)
            .output()
            .unwrap(),
    )
}

fn reclaimed_ids(doc: &Value) -> Vec<String> {
    doc["reclaimed"]
        .as_array()
        .unwrap_or_else(|| panic!("no reclaimed: {doc}"))
        .iter()
        .map(|r| r["session_id"].as_str().unwrap().to_string())
        .collect()
}

/// The record, the tree's bytes and the refs of session `id`: all that must not change.
fn untouched(fx: &Fixture, id: &str) -> (Vec<u8>, BTreeMap<Vec<u8>, Vec<u8>>, String) {
    let record = std::fs::read(state_dir(fx).join(format!("sessions/{id}.json"))).unwrap();
    let tree = serde_json::from_slice::<Value>(&record).unwrap()["worktree"]
        .as_str()
        .unwrap()
        .to_string();
    (
        record,
        tree_bytes(Path::new(&tree)),
        fx.git(
            &fx.src,
            &[
                "for-each-ref",
                "--format=%(refname) %(objectname)",
                &format!("refs/a3s-iso/sessions/{id}/"),
            ],
        ),
    )
}

/// Resumes session `id` and checks its tree is `before` byte for byte.
fn assert_resumed(fx: &Fixture, id: &str, before: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let (code, doc) = quiet_json(fx, &["bind", "-s", id, "--resume"]);
    assert_eq!(code, 0, "{doc}");
    let tree = Path::new(doc["worktree"].as_str().unwrap());
    assert_eq!(
        &tree_bytes(tree),
        before,
        "{id} did not come back byte for byte"
    );
}

#[test]
fn sweep_auto_bind_reclaims_a_dead_owners_work_and_resume_brings_it_back_byte_for_byte() {
    let fx = Fixture::new();
    dead_owner_session(&fx, "gone");
    let gone = dirty(&fx, "gone");
    let gone_bytes = tree_bytes(&gone);
    assert!(gone_bytes.contains_key(ODD_NAME));
    // Kept by the decision table: a live owner's, a retained dead owner's, an ownerless one.
    let owner = sleeper();
    let (code, doc) = quiet_json(
        &fx,
        &["bind", "-s", "live", "--owner-pid", &owner.id().to_string()],
    );
    assert_eq!(code, 0, "{doc}");
    with_work(&fx, "live");
    dead_owner_session(&fx, "kept");
    with_work(&fx, "kept");
    let (code, doc) = quiet_json(&fx, &["retain", "-s", "kept", "--reason", "look at it"]);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = quiet_json(&fx, &["bind", "-s", "nobody", "--owner", "none"]);
    assert_eq!(code, 0, "{doc}");
    with_work(&fx, "nobody");
    // The session being bound is never reclaimed, even with its owner dead.
    dead_owner_session(&fx, "mine");
    with_work(&fx, "mine");
    let before: Vec<_> = ["live", "kept", "nobody", "mine"]
        .iter()
        .map(|id| untouched(&fx, id))
        .collect();

    let out = fx.cmd().args(["bind", "-s", "mine"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("reclaimed") && stderr.contains("bind --resume -s gone"),
        "{stderr}"
    );
    assert!(!gone.exists(), "the dead session's tree is still there");
    let after: Vec<_> = ["live", "kept", "nobody"]
        .iter()
        .map(|id| untouched(&fx, id))
        .collect();
    assert_eq!(after, before[..3]);
    assert_eq!(tree_bytes(&fx.isolation("mine")), before[3].1);
    let (_, list) = fx.json(&["list", "--all"]);
    let gone_listed = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == "gone")
        .unwrap();
    assert_eq!(gone_listed["state"], "swept", "{list}");

    assert_resumed(&fx, "gone", &gone_bytes);
    drop(owner);
}

#[test]
fn sweep_auto_reports_in_json_and_keeps_a_running_session() {
    let fx = Fixture::new();
    dead_owner_session(&fx, "running");
    with_work(&fx, "running");
    let marker = fx.root.join("started");
    let script = format!("touch {}; sleep 30", marker.display());
    let mut run = fx
        .cmd()
        .env("A3S_ISO_SWEEP_AUTO", "0")
        .args([
            "run",
            "-s",
            "running",
            "--no-sandbox",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(crate::sweep_races::wait_for(
        &marker,
        Duration::from_secs(20)
    ));
    // The only dead owner's session this bind may reclaim: the other has a run in progress.
    dead_owner_session(&fx, "gone");
    with_work(&fx, "gone");
    let (code, doc) = fx.json(&["bind", "-s", "next"]);
    let _ = run.kill();
    let _ = run.wait();
    assert_eq!(code, 0, "{doc}");
    assert_eq!(reclaimed_ids(&doc), ["gone"], "{doc}");
    let item = &doc["reclaimed"][0];
    assert_eq!(item["reason"], "owner_dead");
    assert_eq!(item["swept_ref"], "refs/a3s-iso/swept/gone");
    assert_eq!(
        fx.git(&fx.src, &["show", "refs/a3s-iso/swept/gone:work.txt"]),
        "work of the session"
    );
    assert!(fx.isolation("running").join("work.txt").is_file());
}

#[test]
fn sweep_auto_is_off_with_the_environment_or_the_configuration() {
    let fx = Fixture::new();
    dead_owner_session(&fx, "gone");
    with_work(&fx, "gone");
    let (code, doc) = quiet_json(&fx, &["bind", "-s", "a"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(reclaimed_ids(&doc), Vec::<String>::new());
    auto(&fx, false);
    let (code, doc) = fx.json(&["bind", "-s", "b"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(reclaimed_ids(&doc), Vec::<String>::new());
    // `land` reads the same key.
    std::fs::write(fx.isolation("b").join("b.txt"), "b\n").unwrap();
    let (code, doc) = fx.json(&["land", "-s", "b"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(reclaimed_ids(&doc), Vec::<String>::new());
    assert!(fx.isolation("gone").join("work.txt").is_file());
    // The environment turns it on over the configuration, and the configuration on again.
    let (code, doc) = json_of(
        fx.cmd()
            .env("A3S_ISO_SWEEP_AUTO", "1")
            .args(["--json", "bind", "-s", "c"])
            .output()
            .unwrap(),
    );
    assert_eq!(code, 0, "{doc}");
    assert_eq!(reclaimed_ids(&doc), ["gone"]);
    dead_owner_session(&fx, "gone2");
    auto(&fx, true);
    let (code, doc) = fx.json(&["bind", "-s", "d"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(reclaimed_ids(&doc), ["gone2"]);
}

#[test]
fn sweep_auto_land_reclaims_dead_owners_sessions_but_never_one_of_a_queue() {
    let fx = Fixture::new();
    dead_owner_session(&fx, "gone");
    let gone_bytes = tree_bytes(&dirty(&fx, "gone"));
    // Two dead owners' sessions in a queue that stops at the first (its test fails).
    for id in ["q1", "q2"] {
        dead_owner_session(&fx, id);
        std::fs::write(fx.isolation(id).join(format!("{id}.txt")), id).unwrap();
    }
    dead_owner_session(&fx, "kept");
    with_work(&fx, "kept");
    let (code, doc) = quiet_json(&fx, &["retain", "-s", "kept", "--reason", "evidence"]);
    assert_eq!(code, 0, "{doc}");
    let owner = sleeper();
    let (code, doc) = quiet_json(
        &fx,
        &["bind", "-s", "live", "--owner-pid", &owner.id().to_string()],
    );
    assert_eq!(code, 0, "{doc}");
    with_work(&fx, "live");
    let kept_before = [untouched(&fx, "kept"), untouched(&fx, "live")];

    let (code, doc) = fx.json(&[
        "land",
        "-s",
        "q1",
        "-s",
        "q2",
        "--test",
        "false",
        "--no-sandbox",
    ]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["stopped_at"], "q1", "{doc}");
    assert_eq!(reclaimed_ids(&doc), ["gone"], "{doc}");
    assert_eq!(doc["reclaimed"][0]["reason"], "owner_dead");
    assert!(!fx.isolation("gone").exists());
    // The stopped queue is recorded: a bind spares what it holds.
    let q_before = [untouched(&fx, "q1"), untouched(&fx, "q2")];
    let (code, doc) = fx.json(&["bind", "-s", "other"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(reclaimed_ids(&doc), Vec::<String>::new(), "{doc}");
    assert_eq!([untouched(&fx, "q1"), untouched(&fx, "q2")], q_before);
    assert_eq!(
        [untouched(&fx, "kept"), untouched(&fx, "live")],
        kept_before
    );

    // Once the queue is dropped, what it held is a dead owner's like any other: a `land` of
    // another session (a new queue) reclaims it, and lands its own session.
    let (code, doc) = fx.json(&["land", "--abort"]);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = fx.json(&["land", "-s", "q2"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["sessions"][0]["outcome"], "landed", "{doc}");
    assert_eq!(reclaimed_ids(&doc), ["q1"], "{doc}");
    assert_eq!(std::fs::read(fx.src.join("q2.txt")).unwrap(), b"q2");
    assert_eq!(
        fx.git(&fx.src, &["show", "refs/a3s-iso/swept/q1:q1.txt"]),
        "q1"
    );
    assert_eq!(
        [untouched(&fx, "kept"), untouched(&fx, "live")],
        kept_before
    );
    assert_resumed(&fx, "gone", &gone_bytes);
    drop(owner);
}

/// The git calls of `bind -s ID` (through a wrapper that logs them), one a line.
fn bind_git_calls(fx: &Fixture, id: &str) -> usize {
    let log = fx.root.join("git-calls.log");
    let wrapper = fx.root.join("logging-git");
    if !wrapper.exists() {
        use std::os::unix::fs::PermissionsExt;
        let real = crate::fixture::git_on_path();
        let script = format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real.display()
        );
        std::fs::write(&wrapper, script).unwrap();
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let _ = std::fs::remove_file(&log);
    let out = fx
        .cmd()
        .arg("--git")
        .arg(&wrapper)
        .args(["bind", "-s", id])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .count()
}

#[test]
fn sweep_auto_costs_bind_no_git_call_when_no_owner_is_dead() {
    let fx = Fixture::new();
    let owner = sleeper();
    let pid = owner.id().to_string();
    let (code, doc) = quiet_json(&fx, &["bind", "-s", "l0", "--owner-pid", &pid]);
    assert_eq!(code, 0, "{doc}");
    let few = bind_git_calls(&fx, "a");
    for i in 1..12 {
        let (code, doc) = quiet_json(&fx, &["bind", "-s", &format!("l{i}"), "--owner-pid", &pid]);
        assert_eq!(code, 0, "{doc}");
    }
    dead_owner_session(&fx, "kept");
    let (code, doc) = quiet_json(&fx, &["retain", "-s", "kept", "--reason", "evidence"]);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = quiet_json(&fx, &["bind", "-s", "nobody", "--owner", "none"]);
    assert_eq!(code, 0, "{doc}");
    // Twelve live sessions, a retained and an ownerless one: no more git calls than with one.
    let many = bind_git_calls(&fx, "b");
    assert_eq!(many, few, "a bind among many live sessions calls git more");
    // One dead owner's session: its reclaim calls git (the check above could fail).
    dead_owner_session(&fx, "gone");
    let reclaiming = bind_git_calls(&fx, "c");
    assert!(reclaiming > few, "{reclaiming} <= {few}");
    assert!(!fx.isolation("gone").exists());
    eprintln!("bind's git calls: {few} with nothing to reclaim, {reclaiming} reclaiming one");
    drop(owner);
}

/// The registered worktrees (but the source) are the trees of the sessions `list` shows (but
/// the swept ones); nothing is pending, no bind is left interrupted.
fn assert_worktrees_known(fx: &Fixture, list: &Value) {
    let pending = crate::sweep_races::entries(&state_dir(fx).join("pending"));
    assert!(pending.is_empty(), "pending: {pending:?}");
    let porcelain = fx.git(&fx.src, &["worktree", "list", "--porcelain"]);
    let registered: std::collections::BTreeSet<String> = porcelain
        .lines()
        .filter_map(|l| l.strip_prefix("worktree "))
        .filter(|p| Path::new(p) != fx.src)
        .map(str::to_string)
        .collect();
    let sessions = list["sessions"].as_array().unwrap().iter();
    let known: std::collections::BTreeSet<String> = sessions
        .filter(|s| s["state"] != "swept")
        .map(|s| s["worktree"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(list["interrupted"], serde_json::json!([]), "{list}");
    assert_eq!(registered, known, "{porcelain}\n{list}");
}

/// Whether session `id`'s swept snapshot holds its work.
fn swept_work(fx: &Fixture, id: &str) -> bool {
    let mut git = std::process::Command::new(crate::fixture::git_on_path());
    crate::fixture::isolate(&mut git, &fx.home);
    let shown = git
        .current_dir(&fx.src)
        .args([
            "cat-file",
            "-p",
            &format!("refs/a3s-iso/swept/{id}:work.txt"),
        ])
        .output()
        .unwrap();
    shown.status.success() && shown.stdout == b"work of the session\n"
}

/// `bind` SIGKILLed with its whole process group at random points while it reclaims two dead
/// owners' sessions: each one's work is afterwards in its tree or in its swept snapshot, and
/// once the next command ran, the registered worktrees are the sessions a3s-iso knows (the
/// killed bind's own half-built tree is undone at once: no process of its group is left),
/// nothing is pending, and each swept session resumes with its work.
/// How long a bind that reclaims two dead sessions takes here, at best of three.
fn a_reclaiming_binds_time(fx: &Fixture) -> Duration {
    let mut took = Duration::MAX;
    for i in 0..3 {
        for n in 0..2 {
            dead_owner_session(fx, &format!("m{i}-{n}"));
            with_work(fx, &format!("m{i}-{n}"));
        }
        let start = std::time::Instant::now();
        let (code, doc) = fx.json(&["bind", "-s", &format!("measure{i}")]);
        took = took.min(start.elapsed());
        assert_eq!(code, 0, "{doc}");
        assert_eq!(reclaimed_ids(&doc).len(), 2, "{doc}");
        with_work(fx, &format!("measure{i}"));
    }
    took
}

/// Before any command: no work of `dead` lost, wherever the kill came; how many were swept.
fn no_work_lost(fx: &Fixture, dead: &[String]) -> usize {
    let mut swept_now = 0;
    for id in dead {
        let tree = fx.isolation(id).join("work.txt");
        let snapshot = swept_work(fx, id);
        let in_tree = std::fs::read(&tree).is_ok_and(|b| b == b"work of the session\n");
        assert!(
            in_tree || snapshot,
            "{id}: its work is neither in its tree nor swept"
        );
        swept_now += usize::from(!in_tree);
    }
    swept_now
}

/// What a kill kept is reclaimed by the next bind, and every swept one resumes (then live:
/// the next attempt's bind keeps it).
fn bind_again_and_resume_the_swept(fx: &Fixture, binding: &str, dead: &[String]) {
    // What a kill kept is reclaimed by the next bind, and every swept one resumes (then
    // live: the next attempt's bind keeps it).
    let (code, doc) = fx.json(&["bind", "-s", binding]);
    assert_eq!(code, 0, "{doc}");
    with_work(fx, binding);
    for id in dead {
        let (code, doc) = quiet_json(fx, &["bind", "-s", id, "--resume"]);
        assert_eq!(code, 0, "{doc}");
        assert_eq!(
            std::fs::read(fx.isolation(id).join("work.txt")).unwrap(),
            b"work of the session\n"
        );
    }
}

#[test]
fn sweep_auto_a_bind_killed_while_it_reclaims_loses_no_work() {
    use crate::sweep_races::{
        KillTiming, Rng, assert_consistent, entries, kill_group_after, kills_wanted, spawn_in_group,
    };
    let fx = Fixture::new();
    let mut rng = Rng::seeded(53, "reclaiming bind kills");
    let took = a_reclaiming_binds_time(&fx);
    let mut timing = KillTiming::new(took);
    let (mut attempts, mut killed, mut intents_left, mut half) = (0, 0, 0, 0);
    let mut claims_left = 0;
    let (kills, most_attempts) = kills_wanted();
    while killed < kills && attempts < most_attempts {
        let dead = [format!("d{attempts}a"), format!("d{attempts}b")];
        let binding = format!("b{attempts}");
        attempts += 1;
        for id in &dead {
            dead_owner_session(&fx, id);
            with_work(&fx, id);
        }
        let bind = spawn_in_group(&fx, &["bind", "-s", &binding]);
        let was_running = kill_group_after(bind, timing.delay(&mut rng));
        killed += usize::from(was_running);
        let intents = entries(&state_dir(&fx).join("pending")).len();
        intents_left += usize::from(intents > 0);
        let swept_now = no_work_lost(&fx, &dead);
        half += usize::from(swept_now == 1);
        // The next command finishes what the kill cut short, the killed bind's own claim too
        // (its whole process group is gone): the registered worktrees are the sessions.
        claims_left += usize::from(crate::bind_crash::claim_file(&fx, &binding).is_file());
        let (code, list) = quiet_json(&fx, &["list", "--all"]);
        assert_eq!(code, 0, "{list}");
        assert_worktrees_known(&fx, &list);
        assert!(
            !crate::bind_crash::claim_file(&fx, &binding).exists(),
            "{binding}: claim left"
        );
        let now = listed(&list);
        if now.contains(&binding) {
            with_work(&fx, &binding);
        }
        let reclaimed: Vec<String> = dead
            .iter()
            .filter(|id| !now.contains(id))
            .cloned()
            .collect();
        assert_consistent(&fx, &list, &reclaimed);
        timing.adjust(match (was_running, reclaimed.len(), intents) {
            (false, ..) => Some(false),
            (true, 0, 0) => Some(true),
            _ => None,
        });
        bind_again_and_resume_the_swept(&fx, &binding, &dead);
    }
    eprintln!(
        "reclaiming bind kills: {attempts} attempts (a bind takes {took:?}), {killed} killed while running, {intents_left} left an intent, {half} left one session reclaimed and one not, {claims_left} left the bind's own claim"
    );
    assert!(
        killed >= kills,
        "only {killed} binds were killed while running"
    );
}
