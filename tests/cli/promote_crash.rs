//! Crash safety: the real binary SIGKILLed, with its whole process group, at random points of
//! a promote (a cancelled CI job, a stopped container). Whatever the point, after the next
//! command the checkout is the state before the promote or the state after it — plus the
//! user's WIP byte for byte — never anything in between, and promoting again lands it once.
//!
//! The delays are drawn from a seeded generator; the seed is printed (set
//! `A3S_ISO_CRASH_SEED` to replay a run, `A3S_ISO_CRASH_ITERATIONS` for more or fewer kills).

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fixture::{Fixture, agent_commit, differences, snapshot_settings, source_state};

/// splitmix64: small, seedable, good enough to spread delays.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn seeded(name: &str) -> Rng {
        let seed = std::env::var("A3S_ISO_CRASH_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            });
        eprintln!("{name}: seed {seed} (A3S_ISO_CRASH_SEED={seed} replays it)");
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn iterations() -> usize {
    crate::fixture::repetitions("A3S_ISO_CRASH_ITERATIONS", 50)
}

/// Starts `a3s-iso ARGS` in a process group of its own, waits `delay`, and SIGKILLs the whole
/// group. Returns whether the kill came before the promote had finished.
pub(crate) fn kill_after(fx: &Fixture, args: &[&str], delay: Duration) -> bool {
    let mut cmd = fx.cmd();
    cmd.args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    let mut child = cmd.spawn().unwrap();
    std::thread::sleep(delay);
    let group = rustix::process::Pid::from_child(&child);
    let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    let status = child.wait().unwrap();
    std::os::unix::process::ExitStatusExt::signal(&status) == Some(9)
}

/// How long a promote takes here, uninterrupted, and its document.
fn timed(fx: &Fixture, args: &[&str]) -> (Duration, Value) {
    let started = Instant::now();
    let (code, doc) = fx.json(args);
    assert_eq!(code, 0, "{doc}");
    (started.elapsed(), doc)
}

/// Where a kill landed, judged from the checkout right after it.
#[derive(Default, Debug)]
struct Phases {
    before: usize,
    during: usize,
    after: usize,
}

impl Phases {
    fn count(
        &mut self,
        now: &BTreeMap<String, String>,
        pre: &BTreeMap<String, String>,
        post: &BTreeMap<String, String>,
    ) -> &'static str {
        if now == pre {
            self.before += 1;
            "before"
        } else if now == post {
            self.after += 1;
            "after"
        } else {
            self.during += 1;
            "during"
        }
    }
}

/// The commands drawn from after a kill: every kind, read-only ones included. Each must finish
/// what the kill left before it reads or reports anything. `{id}` is the session, `{doc}` a
/// change-set document outside the checkout.
const NEXT_COMMANDS: &[&[&str]] = &[
    &["list"],
    &["show", "-s", "{id}"],
    &["log"],
    &["path", "-s", "{id}"],
    &["verify", "{doc}"],
    &["doctor", "--landlock-optional"],
    &["diff", "-s", "{id}", "--stat"],
    &["sweep", "--dry-run"],
    &["gc", "--dry-run"],
    &["capture", "-s", "{id}"],
    &["sweep"],
    &["discard", "-s", "no-such-session"],
    &["bind", "-s", "{id}"],
    &["pool", "--status"],
    &["__complete", "sessions"],
];

/// The next command after a kill, the `pick`th of [`NEXT_COMMANDS`]; it may fail (an unknown
/// session, a machine without the sandbox for `doctor`), but never leave the checkout half
/// done. Returns its command line and warnings.
fn next_command(fx: &Fixture, id: &str, doc: &Path, pick: usize) -> (String, String) {
    let doc = doc.to_str().unwrap();
    let args: Vec<String> = NEXT_COMMANDS[pick % NEXT_COMMANDS.len()]
        .iter()
        .map(|a| a.replace("{id}", id).replace("{doc}", doc))
        .collect();
    let out = fx.cmd().args(&args).output().unwrap();
    (
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `list --json` right after a kill, before any other command: it has finished what the kill
/// left (the checkout is `pre` or `post`), or, when it could not, says what is unfinished.
fn list_after_kill(
    fx: &Fixture,
    round: usize,
    pre: &BTreeMap<String, String>,
    post: &BTreeMap<String, String>,
) {
    let (code, doc) = fx.json(&["list"]);
    assert_eq!(code, 0, "round {round}: list after a kill: {doc}");
    let now = source_state(fx);
    let interrupted = doc["interrupted"].as_array().map_or(0, Vec::len);
    assert!(
        &now == pre || &now == post || interrupted > 0,
        "round {round}: list showed a half-done checkout as normal: {doc}\n{:?}",
        differences(&now, pre)
    );
}

/// Outcome of the rerun, tallied.
fn tally(outcomes: &mut BTreeMap<String, usize>, doc: &Value) {
    *outcomes
        .entry(doc["outcome"].as_str().unwrap_or("?").to_string())
        .or_default() += 1;
}

/// Forgets every promote of the store, so that the same change set can land again.
fn forget_promotes(fx: &Fixture) {
    let store = fx.src.join(".git/a3s-iso");
    for dir in ["promoted", "intents"] {
        let _ = std::fs::remove_dir_all(store.join(dir));
    }
}

/// The user's WIP, outside every path the promotes touch: an unstaged edit, a staged one and
/// an untracked binary file.
fn make_wip(fx: &Fixture) {
    fx.write("README.md", "hello\nunstaged user edit\n");
    fx.write("src/lib.txt", "one\ntwo\nstaged user edit\n");
    fx.git(&fx.src, &["add", "src/lib.txt"]);
    let binary: Vec<u8> = (0..700u32).map(|i| (i * 31 % 256) as u8).collect();
    std::fs::create_dir_all(fx.src.join("notes")).unwrap();
    std::fs::write(fx.src.join("notes/scratch.bin"), binary).unwrap();
}

/// A source with 700 files in `keep/` and 100 in `gone/`; the session's change set modifies
/// 600, deletes the 100 (and with them `gone/`) and creates 300 under `new/deep/`: 1,000 paths.
fn thousand_file_session(fx: &Fixture, id: &str) {
    for i in 0..700 {
        fx.write(
            &format!("keep/f{i:04}.txt"),
            &format!("line {i}\n").repeat(8),
        );
    }
    for i in 0..100 {
        fx.write(&format!("gone/g{i:03}.txt"), &format!("gone {i}\n"));
    }
    fx.commit_all("many files");
    fx.bind(id);
    let iso = fx.isolation(id);
    for i in 0..600 {
        let path = iso.join(format!("keep/f{i:04}.txt"));
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(&format!("agent {i}\n"));
        std::fs::write(path, text).unwrap();
    }
    std::fs::remove_dir_all(iso.join("gone")).unwrap();
    std::fs::create_dir_all(iso.join("new/deep")).unwrap();
    for i in 0..300 {
        std::fs::write(
            iso.join(format!("new/deep/n{i:03}.txt")),
            format!("new {i}\n"),
        )
        .unwrap();
    }
}

/// Promotes killed at random points, each followed by the next command and a rerun.
struct Rounds<'a> {
    name: &'a str,
    promote: &'a [&'a str],
    session: &'a str,
    /// Kills land within 0..span ms of the start.
    span: u64,
    /// A change-set document for `verify` among the next commands.
    doc: &'a Path,
}

impl Rounds<'_> {
    /// Resets to `pre`, kills a promote, runs the next command (the checkout must then be
    /// `pre` or `post`, the WIP and the stash list included), reruns the promote (`applied` or
    /// `idempotent`, and `post`); prints where the kills landed.
    fn run(
        &self,
        fx: &Fixture,
        pre: &BTreeMap<String, String>,
        post: &BTreeMap<String, String>,
        reset: impl Fn(),
    ) {
        let mut rng = Rng::seeded(self.name);
        let (mut phases, mut outcomes, mut notices) = (Phases::default(), BTreeMap::new(), 0);
        for round in 0..iterations() {
            reset();
            assert_eq!(&source_state(fx), pre, "round {round}: the reset");
            let delay = rng.below(self.span);
            let killed = kill_after(fx, self.promote, Duration::from_millis(delay));
            let phase = phases.count(&source_state(fx), pre, post);
            if round % 2 == 1 {
                list_after_kill(fx, round, pre, post);
            }
            let pick = rng.below(NEXT_COMMANDS.len() as u64) as usize;
            let (command, warnings) = next_command(fx, self.session, self.doc, pick);
            notices += warnings.contains("an interrupted promote") as usize;
            eprintln!(
                "{} round {round}: kill at {delay} ms ({}), {phase}; then {command}: {}",
                self.name,
                if killed { "killed" } else { "had finished" },
                warnings.trim()
            );
            let now = source_state(fx);
            assert!(
                &now == pre || &now == post,
                "round {round} (kill at {delay} ms, then {command}): neither before nor after: {:?} / {:?}\n{warnings}",
                differences(&now, pre),
                differences(&now, post)
            );
            let (code, doc) = fx.json(self.promote);
            let outcome = doc["outcome"].as_str().unwrap_or("?");
            assert!(
                code == 0 && ["applied", "idempotent"].contains(&outcome),
                "round {round}: {doc}"
            );
            tally(&mut outcomes, &doc);
            assert_eq!(&source_state(fx), post, "round {round}: after the rerun");
        }
        eprintln!(
            "{}: kills before the change {}, during {}, after {}; recoveries reported {notices}; reruns {outcomes:?}",
            self.name, phases.before, phases.during, phases.after
        );
    }
}

/// The session's change set as a document outside the checkout, for `verify`.
fn change_set_file(fx: &Fixture, id: &str) -> std::path::PathBuf {
    let path = fx.root.join(format!("{id}.change-set.json"));
    let (code, doc) = fx.json(&["capture", "-s", id, "-o", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{doc}");
    path
}

/// Back to the state before the promote: HEAD's files, the WIP, no record of the promote.
fn reset_patch(fx: &Fixture) {
    fx.git(&fx.src, &["reset", "-q", "--hard"]);
    fx.git(&fx.src, &["clean", "-fdq"]);
    forget_promotes(fx);
    make_wip(fx);
}

#[test]
fn patch_promote_killed_at_random_points_lands_whole_or_not_at_all() {
    let fx = Fixture::in_memory();
    thousand_file_session(&fx, "k");
    let promote = ["promote", "-s", "k"];
    reset_patch(&fx);
    let pre = source_state(&fx);
    let (took, doc) = timed(&fx, &promote);
    assert_eq!(doc["files_changed"], 1000, "{doc}");
    let post = source_state(&fx);
    reset_patch(&fx);
    let (again, _) = timed(&fx, &promote);
    let span = (took.min(again).as_millis() as u64 * 6 / 5).max(20);
    eprintln!("patch promote of 1,000 files takes {took:?} / {again:?}; kills within 0..{span} ms");
    let doc = change_set_file(&fx, "k");
    let rounds = Rounds {
        name: "patch crash",
        promote: &promote,
        session: "k",
        span,
        doc: &doc,
    };
    rounds.run(&fx, &pre, &post, || reset_patch(&fx));
}

/// Back to the state before a branch promote: the old tip, the WIP, no record, no stash.
fn reset_branch(fx: &Fixture, old_tip: &str) {
    fx.git(&fx.src, &["reset", "-q", "--hard", old_tip]);
    fx.git(&fx.src, &["clean", "-fdq"]);
    forget_promotes(fx);
    make_wip(fx);
}

#[test]
fn branch_promote_killed_at_random_points_lands_whole_or_not_at_all() {
    let fx = Fixture::in_memory();
    let old_tip = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    fx.bind("b");
    let iso = fx.isolation("b");
    for n in 0..4 {
        std::fs::create_dir_all(iso.join(format!("d{n}"))).unwrap();
        for i in 0..25 {
            std::fs::write(iso.join(format!("d{n}/f{i}.txt")), format!("commit {n}\n")).unwrap();
        }
        std::fs::write(iso.join(format!("agent{n}.txt")), format!("{n}\n")).unwrap();
        agent_commit(&fx, &iso, &format!("agent commit {n}"));
    }
    let promote = ["promote", "-s", "b", "--mode", "branch"];
    reset_branch(&fx, &old_tip);
    let pre = source_state(&fx);
    let (took, doc) = timed(&fx, &promote);
    assert_eq!(
        doc["branch"]["replayed"].as_array().unwrap().len(),
        4,
        "{doc}"
    );
    let post = source_state(&fx);
    assert_eq!(post["<stash list>"], "", "no stash left");
    reset_branch(&fx, &old_tip);
    let (again, _) = timed(&fx, &promote);
    assert_eq!(
        source_state(&fx),
        post,
        "a branch promote is deterministic here"
    );
    let span = (took.min(again).as_millis() as u64 * 6 / 5).max(20);
    eprintln!("branch promote of 4 commits takes {took:?} / {again:?}; kills within 0..{span} ms");
    let doc = change_set_file(&fx, "b");
    let rounds = Rounds {
        name: "branch crash",
        promote: &promote,
        session: "b",
        span,
        doc: &doc,
    };
    rounds.run(&fx, &pre, &post, || reset_branch(&fx, &old_tip));
}

/// A file whose three-line block appears three times: a patch that inserts a line after the
/// first block has context that matches again after it is applied, so only a record (never
/// whether the patch applies) can say that it is there already.
const BLOCKS: &str = "top\na\nb\nc\na\nb\nc\na\nb\nc\nbottom\n";
const INSERTED: &str = "top\na\nb\nc\ninserted\na\nb\nc\na\nb\nc\nbottom\n";

/// A session whose change set inserts one line into `blocks.txt`; returns its patch.
fn repeated_context_session(fx: &Fixture, id: &str) -> Vec<u8> {
    fx.write("blocks.txt", BLOCKS);
    fx.commit_all("blocks");
    fx.bind(id);
    std::fs::write(fx.isolation(id).join("blocks.txt"), INSERTED).unwrap();
    let (code, doc) = fx.json(&["capture", "-s", id]);
    assert_eq!(code, 0, "{doc}");
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(doc["patch_base64"].as_str().unwrap())
        .unwrap()
}

fn blocks(fx: &Fixture) -> String {
    std::fs::read_to_string(fx.src.join("blocks.txt")).unwrap()
}

/// Applied by hand, uncommitted: promote refuses it as a conflict that names why, and
/// applies nothing.
fn applied_by_hand_is_a_conflict(fx: &Fixture) {
    // Applied by hand, uncommitted.
    let (code, doc) = fx.json(&["promote", "-s", "r"]);
    assert_eq!(code, 3, "{doc}");
    snapshot_settings(fx).bind(|| insta::assert_json_snapshot!(doc, @r#"
        {
          "artifacts": "[ROOT]/work/src/.git/a3s-iso/artifacts/[HASH]",
          "base_matches_head": null,
          "bound_revision": "[HASH]",
          "conflicting_paths": [
            "blocks.txt"
          ],
          "conflicting_paths_exact": [
            "blocks.txt"
          ],
          "current_revision": "[HASH]",
          "detail": "the change set appears to be in the checkout already, but no promote of it is recorded; nothing applied (promote --note DIGEST records it)",
          "digest": "sha256:[HASH]",
          "files_changed": 1,
          "from_tree": "git-tree:[HASH]",
          "mode": "patch",
          "nested_repositories": [],
          "outcome": "conflict",
          "patch_bytes": "[PATCH_BYTES]",
          "reason": "patch_does_not_apply",
          "schema": "a3s-iso.promote.v1",
          "session_id": "r",
          "step": 1,
          "warnings": []
        }
        "#));
    assert_eq!(blocks(fx), INSERTED, "never applied twice");
}

/// The same change set as a document, after the change was committed by hand: refused as
/// its base differing, onto HEAD as already there, and from the session as its HEAD moved.
fn committed_by_hand_is_refused_every_way(fx: &Fixture, doc_file: &std::path::Path) {
    fx.commit_all("the agent's change, by hand");
    let (code, doc) = fx.json(&["promote", "--change-set", doc_file.to_str().unwrap()]);
    assert_eq!(
        (code, doc["reason"].as_str().unwrap()),
        (3, "base_differs"),
        "{doc}"
    );
    assert_eq!(blocks(fx), INSERTED, "never applied twice");
    // Onto HEAD, it would apply again: the checkout already holds its result.
    let (code, doc) = fx.json(&[
        "promote",
        "--change-set",
        doc_file.to_str().unwrap(),
        "--onto-head",
    ]);
    assert_eq!(
        (code, doc["outcome"].as_str().unwrap()),
        (3, "conflict"),
        "{doc}"
    );
    assert_eq!(doc["reason"], "patch_does_not_apply");
    assert!(doc["detail"].as_str().unwrap().contains("already"), "{doc}");
    assert_eq!(blocks(fx), INSERTED, "never applied twice");
    // The session itself: its HEAD moved.
    let (code, doc) = fx.json(&["promote", "-s", "r"]);
    assert_eq!(
        (code, doc["reason"].as_str().unwrap()),
        (3, "head_moved"),
        "{doc}"
    );
    assert_eq!(blocks(fx), INSERTED);
}

#[test]
fn a_change_set_present_without_a_record_is_a_conflict_never_applied_twice() {
    let fx = Fixture::new();
    let patch = repeated_context_session(&fx, "r");
    let patch_file = fx.root.join("by-hand.patch");
    std::fs::write(&patch_file, &patch).unwrap();
    // The patch would apply a second time (the context repeats): git alone cannot tell.
    fx.git(&fx.src, &["apply", patch_file.to_str().unwrap()]);
    assert_eq!(blocks(&fx), INSERTED);
    fx.git(&fx.src, &["apply", "--check", patch_file.to_str().unwrap()]);

    applied_by_hand_is_a_conflict(&fx);

    // The same change set as a document.
    let (_, captured) = fx.json(&["capture", "-s", "r"]);
    let doc_file = fx.root.join("r.json");
    std::fs::write(&doc_file, serde_json::to_vec(&captured).unwrap()).unwrap();
    committed_by_hand_is_refused_every_way(&fx, &doc_file);

    // Once a record says it landed, it is idempotent.
    let digest = captured["patch_digest"].as_str().unwrap();
    let (code, doc) = fx.json(&["promote", "--note", digest]);
    assert_eq!(
        (code, doc["outcome"].as_str().unwrap()),
        (0, "noted"),
        "{doc}"
    );
    let (code, doc) = fx.json(&["promote", "--change-set", doc_file.to_str().unwrap()]);
    assert_eq!(
        (code, doc["outcome"].as_str().unwrap()),
        (0, "idempotent"),
        "{doc}"
    );
    assert_eq!(blocks(&fx), INSERTED);
}

/// An intent recovery cannot finish (here: its checkout is gone) is never started over: promote
/// of its change set is a conflict, and every command says why.
#[test]
fn a_pending_intent_that_cannot_be_finished_blocks_its_change_set() {
    let fx = Fixture::new();
    fx.bind("x");
    std::fs::write(fx.isolation("x").join("x.txt"), "x\n").unwrap();
    let (_, captured) = fx.json(&["capture", "-s", "x"]);
    let digest = captured["patch_digest"].as_str().unwrap();
    let hex = digest.trim_start_matches("sha256:");
    let intent = serde_json::json!({
        "schema": "a3s-iso.intent.v1",
        "digest": digest,
        "session_id": "x",
        "mode": "branch",
        "source": fx.root.join("gone").to_str().unwrap(),
        "source_head": null,
        "patch_bytes": 1,
        "created_at_ms": 1,
        "pid": 1,
        "changes": {"branch": {
            "branch": "refs/heads/main", "old_tip": "0", "retained_tip": "0", "had_wip": false,
            "token": "t", "stash": null, "chain": [], "processed": 0, "replayed": [], "done": null
        }}
    });
    let dir = fx.src.join(".git/a3s-iso/intents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{hex}.json")), intent.to_string()).unwrap();
    for mode in ["branch", "patch"] {
        let (code, doc) = fx.json(&["promote", "-s", "x", "--mode", mode]);
        assert_eq!(
            (code, doc["outcome"].as_str().unwrap()),
            (3, "conflict"),
            "{doc}"
        );
        assert!(doc["warnings"].to_string().contains("is pending"), "{doc}");
        assert!(!fx.src.join("x.txt").exists());
    }
    let out = fx.cmd().args(["bind", "-s", "x"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("is pending"));
}

/// The same crashes at chosen points (test-only fault points that SIGKILL the process).
#[cfg(feature = "fault-injection")]
mod faults {
    use std::os::unix::ffi::OsStrExt;

    use super::*;
    use crate::fixture::{checkout_listing, promote_killed_at};

    fn intents(fx: &Fixture) -> Vec<std::path::PathBuf> {
        std::fs::read_dir(fx.src.join(".git/a3s-iso/intents"))
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    }

    /// Holds the repository lock from the test, as a live command would.
    fn hold_repository_lock(fx: &Fixture) -> std::fs::File {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(fx.src.join(".git/a3s-iso.lock"))
            .unwrap();
        rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
        file
    }

    /// A promote killed half way through writing the checkout, while another process holds
    /// the repository lock: the read-only commands cannot finish it, and say so (a state in
    /// `list` and `show`, a warning, the same as JSON data) instead of showing the half-done
    /// checkout as normal. Once the lock is free, the next `list` finishes it.
    #[test]
    fn a_half_done_promote_behind_a_held_lock_is_reported_never_shown_as_normal() {
        let fx = Fixture::new();
        fx.bind("h");
        let iso = fx.isolation("h");
        for i in 0..8 {
            std::fs::write(iso.join(format!("f{i}.txt")), format!("agent {i}\n")).unwrap();
        }
        promote_killed_at(&fx, "promote-during-apply", &["-s", "h"]);
        let half = checkout_listing(&fx.src);
        let held = hold_repository_lock(&fx);
        for args in [vec!["list"], vec!["show", "-s", "h"]] {
            let out = fx
                .cmd()
                .args(["--json", "--lock-timeout", "200ms"])
                .args(&args)
                .output()
                .unwrap();
            assert!(out.status.success(), "{args:?}");
            let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
            let interrupted = &doc["interrupted"];
            assert_eq!(interrupted[0]["operation"], "promote", "{args:?}: {doc}");
            assert_eq!(interrupted[0]["session_id"], "h", "{args:?}: {doc}");
            assert!(
                interrupted[0]["digest"]
                    .as_str()
                    .unwrap()
                    .starts_with("sha256:")
            );
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("in progress or was interrupted"),
                "{stderr}"
            );
        }
        let human = fx
            .cmd()
            .args(["--lock-timeout", "200ms", "list"])
            .output()
            .unwrap();
        let table = String::from_utf8_lossy(&human.stdout);
        assert!(table.contains("promote unfinished"), "{table}");
        assert_eq!(
            checkout_listing(&fx.src),
            half,
            "nothing moved behind the lock"
        );
        drop(held);
        let (code, doc) = fx.json(&["list"]);
        assert_eq!(code, 0, "{doc}");
        assert_eq!(doc["interrupted"], serde_json::json!([]), "{doc}");
        assert!(
            intents(&fx).is_empty(),
            "the next list finished the promote"
        );
        for i in 0..8 {
            let landed = std::fs::read_to_string(fx.src.join(format!("f{i}.txt"))).unwrap();
            assert_eq!(landed, format!("agent {i}\n"));
        }
        let stray: Vec<_> = std::fs::read_dir(&fx.src)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().as_bytes().starts_with(b".a3s-iso-"))
            .collect();
        assert!(stray.is_empty(), "{stray:?}");
    }

    #[test]
    fn repeated_context_killed_after_the_apply_lands_exactly_once() {
        let fx = Fixture::new();
        repeated_context_session(&fx, "rc");
        fx.write("wip.txt", "the user's own work\n");
        promote_killed_at(&fx, "promote-after-apply", &["-s", "rc"]);
        assert_eq!(blocks(&fx), INSERTED);
        assert_eq!(intents(&fx).len(), 1, "the intent outlives the crash");
        let (code, doc) = fx.json(&["promote", "-s", "rc"]);
        assert_eq!(
            (code, doc["outcome"].as_str().unwrap()),
            (0, "idempotent"),
            "{doc}"
        );
        let warnings = doc["warnings"].to_string();
        assert!(
            warnings.contains("an interrupted promote of sha256:"),
            "{doc}"
        );
        assert!(warnings.contains("was completed"), "{doc}");
        assert_eq!(blocks(&fx), INSERTED, "the insertion appears exactly once");
        assert_eq!(
            std::fs::read_to_string(fx.src.join("wip.txt")).unwrap(),
            "the user's own work\n"
        );
        assert!(intents(&fx).is_empty());
        let (code, doc) = fx.json(&["promote", "-s", "rc"]);
        assert_eq!(
            (code, doc["outcome"].as_str().unwrap()),
            (0, "idempotent"),
            "{doc}"
        );
        assert_eq!(blocks(&fx), INSERTED);
    }

    /// A session that changes ten files (and adds one whose name is not UTF-8).
    fn ten_file_session(fx: &Fixture, id: &str) -> Vec<String> {
        let names: Vec<String> = (0..10).map(|i| format!("t/f{i}.txt")).collect();
        for name in &names {
            fx.write(name, "before\n");
        }
        fx.commit_all("ten files");
        fx.bind(id);
        for name in &names {
            std::fs::write(fx.isolation(id).join(name), "after\n").unwrap();
        }
        let odd = std::ffi::OsStr::from_bytes(b"t/caf\xe9.bin");
        std::fs::write(fx.isolation(id).join(odd), [0u8, 1, 2, 255]).unwrap();
        names
    }

    fn contents(fx: &Fixture, names: &[String]) -> Vec<String> {
        names
            .iter()
            .map(|n| std::fs::read_to_string(fx.src.join(n)).unwrap())
            .collect()
    }

    #[test]
    fn a_promote_killed_halfway_is_completed_from_its_intent() {
        let fx = Fixture::new();
        let names = ten_file_session(&fx, "h");
        promote_killed_at(&fx, "promote-during-apply", &["-s", "h"]);
        let halfway = contents(&fx, &names);
        assert!(halfway.contains(&"after\n".to_string()), "{halfway:?}");
        assert!(halfway.contains(&"before\n".to_string()), "{halfway:?}");
        // The intent names every path losslessly: the odd one as base64.
        let intent = std::fs::read_to_string(&intents(&fx)[0]).unwrap();
        assert!(
            intent.contains(r#""bytes_base64": "dC9jYWbpLmJpbg==""#),
            "{intent}"
        );
        assert!(intent.contains(r#""t/f0.txt""#), "{intent}");
        // The next command (any that takes the lock) completes it, and says so.
        let out = fx.cmd().args(["bind", "-s", "h"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("an interrupted promote of sha256:"),
            "{stderr}"
        );
        assert!(stderr.contains("was completed"), "{stderr}");
        assert_eq!(contents(&fx, &names), vec!["after\n".to_string(); 10]);
        let odd = fx.src.join(std::ffi::OsStr::from_bytes(b"t/caf\xe9.bin"));
        assert_eq!(std::fs::read(odd).unwrap(), [0u8, 1, 2, 255]);
        assert!(intents(&fx).is_empty());
        let (code, doc) = fx.json(&["promote", "-s", "h"]);
        assert_eq!(
            (code, doc["outcome"].as_str().unwrap()),
            (0, "idempotent"),
            "{doc}"
        );
        let hex = doc["digest"]
            .as_str()
            .unwrap()
            .trim_start_matches("sha256:");
        let entry =
            std::fs::read_to_string(fx.src.join(format!(".git/a3s-iso/promoted/{hex}.json")));
        assert!(entry.unwrap().contains(r#""how": "recovered""#));
    }

    #[test]
    fn a_path_changed_after_the_crash_is_a_conflict_never_a_guess() {
        let fx = Fixture::new();
        let names = ten_file_session(&fx, "g");
        promote_killed_at(&fx, "promote-during-apply", &["-s", "g"]);
        let halfway = contents(&fx, &names);
        let pending = names[halfway.iter().position(|c| c == "before\n").unwrap()].clone();
        fx.write(&pending, "someone else\n");
        let before = checkout_listing(&fx.src);
        let (code, doc) = fx.json(&["promote", "-s", "g"]);
        assert_eq!(
            (code, doc["outcome"].as_str().unwrap()),
            (3, "conflict"),
            "{doc}"
        );
        assert_eq!(doc["reason"], "patch_does_not_apply");
        assert_eq!(doc["conflicting_paths"], serde_json::json!([pending]));
        assert!(
            doc["detail"]
                .as_str()
                .unwrap()
                .contains("interrupted promote"),
            "{doc}"
        );
        assert!(
            doc["warnings"].to_string().contains("cannot be completed"),
            "{doc}"
        );
        assert_eq!(
            checkout_listing(&fx.src),
            before,
            "nothing guessed, nothing written"
        );
        assert_eq!(intents(&fx).len(), 1, "the intent is kept");
        // Put back, the promote completes from its intent.
        fx.write(&pending, "before\n");
        let (code, doc) = fx.json(&["promote", "-s", "g"]);
        assert_eq!(
            (code, doc["outcome"].as_str().unwrap()),
            (0, "idempotent"),
            "{doc}"
        );
        assert_eq!(contents(&fx, &names), vec!["after\n".to_string(); 10]);
        assert!(intents(&fx).is_empty());
    }

    #[test]
    fn a_promote_killed_before_writing_is_rolled_back_and_applies_on_rerun() {
        let fx = Fixture::new();
        let names = ten_file_session(&fx, "p");
        let before = checkout_listing(&fx.src);
        promote_killed_at(&fx, "promote-after-intent", &["-s", "p"]);
        assert_eq!(checkout_listing(&fx.src), before);
        assert_eq!(intents(&fx).len(), 1);
        let (code, doc) = fx.json(&["promote", "-s", "p"]);
        assert_eq!(
            (code, doc["outcome"].as_str().unwrap()),
            (0, "applied"),
            "{doc}"
        );
        assert!(
            doc["warnings"].to_string().contains("was rolled back"),
            "{doc}"
        );
        assert_eq!(contents(&fx, &names), vec!["after\n".to_string(); 10]);
    }

    /// The text of the source's file `rel`.
    fn read_text(fx: &Fixture, rel: &str) -> String {
        std::fs::read_to_string(fx.src.join(rel)).unwrap()
    }

    /// The user's WIP as a fast-forward must leave it: the files' bytes and inodes (a stash
    /// and its restore would write them anew), what is staged, and no stash.
    fn wip_in_place(fx: &Fixture) -> (BTreeMap<String, String>, Vec<u64>, String) {
        use std::os::unix::fs::MetadataExt;
        let mut files = source_state(fx);
        files
            .retain(|k, _| ["README.md", "src/lib.txt", "notes/scratch.bin"].contains(&k.as_str()));
        files.insert("<stash list>".into(), fx.git(&fx.src, &["stash", "list"]));
        let inodes = ["README.md", "src/lib.txt", "notes/scratch.bin"]
            .map(|p| std::fs::metadata(fx.src.join(p)).unwrap().ino())
            .to_vec();
        let staged = fx.git(&fx.src, &["diff", "--cached", "--name-only"]);
        (files, inodes, staged)
    }

    /// A session whose work is all uncommitted, on the HEAD it was bound at, lands as a
    /// fast-forward: the user's WIP (unstaged, staged and untracked) never leaves its files,
    /// through the promote and through a kill at each of its steps, and no stash is made.
    #[test]
    fn a_fast_forward_promote_keeps_the_wip_in_its_files_through_every_kill() {
        for (fault, expect) in [
            (None, ""),
            (Some("promote-branch-after-intent"), "rolled back"),
            (Some("promote-branch-after-checkout"), "completed"),
            (Some("promote-branch-after-restore"), "completed"),
        ] {
            let fx = Fixture::new();
            let old_tip = fx.git(&fx.src, &["rev-parse", "HEAD"]);
            fx.bind("f");
            let iso = fx.isolation("f");
            std::fs::write(iso.join("agent.txt"), "agent\n").unwrap();
            make_wip(&fx);
            let before = wip_in_place(&fx);
            let args = ["-s", "f", "--mode", "branch"];
            let rerun = match fault {
                Some(fault) => {
                    promote_killed_at(&fx, fault, &args);
                    let out = fx.cmd().args(["list"]).output().unwrap();
                    let stderr = String::from_utf8_lossy(&out.stderr);
                    assert!(stderr.contains(expect), "{fault}: {stderr}");
                    let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
                    assert_eq!(head == old_tip, expect == "rolled back", "{fault}");
                    if expect == "rolled back" {
                        "applied"
                    } else {
                        "idempotent"
                    }
                }
                None => "applied",
            };
            assert_eq!(
                wip_in_place(&fx),
                before,
                "{fault:?}: the WIP left its files"
            );
            let mut all = vec!["promote"];
            all.extend(args);
            let (code, doc) = fx.json(&all);
            assert_eq!(
                (code, doc["outcome"].as_str()),
                (0, Some(rerun)),
                "{fault:?}: {doc}"
            );
            assert_eq!(
                wip_in_place(&fx),
                before,
                "{fault:?}: the WIP left its files"
            );
            assert_eq!(
                fx.git(&fx.src, &["rev-parse", "HEAD^"]),
                old_tip,
                "{fault:?}"
            );
            assert_eq!(fx.git(&fx.src, &["show", "HEAD:agent.txt"]), "agent");
            assert_eq!(
                fx.git(&fx.src, &["log", "--format=%s", "-1"]),
                "a3s-iso: uncommitted changes of session f"
            );
            assert!(!fx.src.join(".git/CHERRY_PICK_HEAD").exists());
        }
    }

    /// A fast-forward whose git was killed itself (the OOM killer, a whole cgroup) after it
    /// wrote some files and before it wrote the index: recovery puts those files back to the
    /// old tip's and removes the one it added, the WIP kept; a file that holds neither side
    /// (the one it was writing, cut short) is never guessed at, and the warning names it.
    #[test]
    fn files_a_killed_fast_forward_wrote_are_put_back_or_left_when_changed_since() {
        for neither in [false, true] {
            let fx = Fixture::new();
            let old_tip = fx.git(&fx.src, &["rev-parse", "HEAD"]);
            fx.bind("k");
            let iso = fx.isolation("k");
            std::fs::write(iso.join("README.md"), "the agent's README\n").unwrap();
            std::fs::write(iso.join("src/lib.txt"), "the agent's lib\n").unwrap();
            std::fs::write(iso.join("agent.txt"), "agent\n").unwrap();
            fx.write("notes.txt", "the user's notes\n");
            promote_killed_at(
                &fx,
                "promote-branch-after-intent",
                &["-s", "k", "--mode", "branch"],
            );
            let lib = fx.git(&fx.src, &["show", "HEAD:src/lib.txt"]) + "\n";
            // What the killed git had written: two of the three files, src/lib.txt not yet,
            // and the index's lock it held.
            fx.write("README.md", "the agent's README\n");
            fx.write("agent.txt", "agent\n");
            fx.write(".git/index.lock", "");
            if neither {
                fx.write("src/lib.txt", "cut short\n");
            }
            let out = fx.cmd().args(["list"]).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD"]), old_tip);
            assert_eq!(read_text(&fx, "notes.txt"), "the user's notes\n");
            if neither {
                assert!(
                    stderr.contains("left as it is") && stderr.contains("src/lib.txt"),
                    "{stderr}"
                );
                // The files the killed git wrote go back; the one it cut short is left.
                assert_eq!(read_text(&fx, "README.md"), "hello\n", "put back");
                assert!(
                    !fx.src.join("agent.txt").exists(),
                    "the file it added is gone"
                );
                assert_eq!(read_text(&fx, "src/lib.txt"), "cut short\n");
                continue;
            }
            assert!(stderr.contains("rolled back"), "{stderr}");
            assert_eq!(read_text(&fx, "README.md"), "hello\n");
            assert_eq!(read_text(&fx, "src/lib.txt"), lib);
            assert!(!fx.src.join("agent.txt").exists());
            // git's own lock is git's to clear (it says how): a3s-iso never guesses it stale.
            std::fs::remove_file(fx.src.join(".git/index.lock")).unwrap();
            assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), "?? notes.txt");
            let (code, doc) = fx.json(&["promote", "-s", "k", "--mode", "branch"]);
            assert_eq!(
                (code, doc["outcome"].as_str()),
                (0, Some("applied")),
                "{doc}"
            );
            assert_eq!(read_text(&fx, "agent.txt"), "agent\n");
        }
    }

    /// Killed before its git moved anything (no lock left: a git that ends, refusing or not,
    /// leaves none), a fast-forward is rolled back without a file written: an edit of the
    /// user's that happens to hold the session's bytes is the user's, and stays.
    #[test]
    fn a_fast_forward_killed_before_its_git_wrote_touches_no_file() {
        let fx = Fixture::new();
        fx.bind("k");
        std::fs::write(fx.isolation("k").join("README.md"), "the same bytes\n").unwrap();
        promote_killed_at(
            &fx,
            "promote-branch-after-intent",
            &["-s", "k", "--mode", "branch"],
        );
        fx.write("README.md", "the same bytes\n");
        let out = fx.cmd().args(["list"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("rolled back"), "{stderr}");
        assert_eq!(read_text(&fx, "README.md"), "the same bytes\n");
        assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), " M README.md");
    }

    /// A fast-forward git refused (the user's edit of a file it changes holds the session's
    /// very bytes), killed right after: the refusal is in the intent, so another git's lock
    /// when the next command looks is not taken for the mark of a git killed midway, and the
    /// user's edit stays.
    #[test]
    fn a_refused_fast_forward_killed_after_puts_nothing_back_whatever_lock_is_held() {
        let fx = Fixture::new();
        fx.bind("r");
        std::fs::write(fx.isolation("r").join("README.md"), "the same bytes\n").unwrap();
        fx.write("README.md", "the same bytes\n");
        promote_killed_at(
            &fx,
            "promote-branch-after-refusal",
            &["-s", "r", "--mode", "branch"],
        );
        let lock = fx.src.join(".git/index.lock");
        std::fs::write(&lock, "").unwrap();
        let out = fx.cmd().args(["list"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("rolled back"), "{stderr}");
        assert_eq!(read_text(&fx, "README.md"), "the same bytes\n");
        std::fs::remove_file(&lock).unwrap();
        assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), " M README.md");
    }

    /// A file the fast-forward changes whose index record is stale (touched, same bytes): git
    /// refuses it as a change; refreshed, the move is tried again and lands, the user's
    /// untracked file left where it was.
    #[test]
    fn a_stale_index_record_is_refreshed_and_the_fast_forward_lands() {
        use std::os::unix::fs::MetadataExt;
        let fx = Fixture::new();
        fx.bind("t");
        let iso = fx.isolation("t");
        std::fs::write(iso.join("README.md"), "the agent's README\n").unwrap();
        fx.write("notes.txt", "the user's notes\n");
        let notes = std::fs::metadata(fx.src.join("notes.txt")).unwrap().ino();
        let readme = fx.src.join("README.md");
        let later = std::time::SystemTime::now() + Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(&readme)
            .unwrap()
            .set_modified(later)
            .unwrap();
        let (code, doc) = fx.json(&["promote", "-s", "t", "--mode", "branch"]);
        assert_eq!(
            (code, doc["outcome"].as_str()),
            (0, Some("applied")),
            "{doc}"
        );
        assert_eq!(
            std::fs::read_to_string(&readme).unwrap(),
            "the agent's README\n"
        );
        assert_eq!(
            std::fs::metadata(fx.src.join("notes.txt")).unwrap().ino(),
            notes
        );
        assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), "?? notes.txt");
        assert_eq!(fx.git(&fx.src, &["stash", "list"]), "");
    }

    /// When git will not move the files (an edit of the user's behind `assume-unchanged` at a
    /// path the session changes; an index another git holds locked), the promote is a
    /// conflict that changed nothing: no stash, no reset, the user's bytes and commits kept.
    #[test]
    fn a_fast_forward_git_will_not_move_changes_nothing() {
        for case in ["assume-unchanged", "index locked"] {
            let fx = Fixture::new();
            fx.bind("t");
            std::fs::write(fx.isolation("t").join("README.md"), "the agent's\n").unwrap();
            let lock = fx.src.join(".git/index.lock");
            match case {
                "assume-unchanged" => {
                    fx.git(
                        &fx.src,
                        &["update-index", "--assume-unchanged", "README.md"],
                    );
                    fx.write("README.md", "the user's hidden edit\n");
                }
                _ => std::fs::write(&lock, "").unwrap(),
            }
            let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
            let before = source_state(&fx);
            let (code, doc) = fx.json(&["promote", "-s", "t", "--mode", "branch"]);
            assert_eq!(
                (code, doc["outcome"].as_str()),
                (3, Some("conflict")),
                "{case}: {doc}"
            );
            assert_eq!(
                differences(&source_state(&fx), &before),
                Vec::<String>::new(),
                "{case}: nothing changed"
            );
            assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD"]), head, "{case}");
            assert_eq!(fx.git(&fx.src, &["stash", "list"]), "", "{case}");
            if case == "index locked" {
                assert!(lock.exists(), "the other git's lock is left alone");
                std::fs::remove_file(&lock).unwrap();
            } else {
                assert_eq!(
                    std::fs::read_to_string(fx.src.join("README.md")).unwrap(),
                    "the user's hidden edit\n"
                );
            }
        }
    }

    #[test]
    fn a_branch_promote_killed_mid_way_never_leaves_the_wip_in_a_stash() {
        for (fault, expect) in [
            ("promote-branch-after-intent", "rolled back"),
            ("promote-branch-after-restore", "completed"),
        ] {
            let fx = Fixture::new();
            let old_tip = fx.git(&fx.src, &["rev-parse", "HEAD"]);
            fx.bind("w");
            let iso = fx.isolation("w");
            std::fs::write(iso.join("agent.txt"), "agent\n").unwrap();
            agent_commit(&fx, &iso, "agent commit");
            make_wip(&fx);
            let wip = source_state(&fx);
            promote_killed_at(&fx, fault, &["-s", "w", "--mode", "branch"]);
            let out = fx.cmd().args(["bind", "-s", "w"]).output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains(expect), "{fault}: {stderr}");
            assert_eq!(fx.git(&fx.src, &["stash", "list"]), "", "{fault}");
            let mut now = source_state(&fx);
            let mut then = wip.clone();
            for s in [&mut now, &mut then] {
                s.remove("<HEAD>");
                s.remove("<index entries>");
                s.remove("agent.txt");
            }
            assert_eq!(now, then, "{fault}: the WIP byte for byte");
            let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
            assert_eq!(head == old_tip, expect == "rolled back", "{fault}");
            let (code, doc) = fx.json(&["promote", "-s", "w", "--mode", "branch"]);
            assert_eq!(code, 0, "{doc}");
            assert_eq!(
                fx.git(&fx.src, &["log", "--format=%s", "-1"]),
                "agent commit"
            );
        }
    }
}
