//! `land --push REMOTE/BRANCH`: a bare repository stands for the git server, clones for the
//! machines. Every change set lands once (its `A3S-Change-Set` trailer counted on the
//! server's branch), on a tree its test ran on, after kills at random points, with nothing of
//! a session lost or touched when the server refuses it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::fixture::{Fixture, content_listing, error_code, json_of};

/// A bare server (`work/server.git`, branch `main`) holding the fixture's first commit, and
/// clones of it as machines.
struct Server {
    fx: Fixture,
    bare: PathBuf,
}

impl Server {
    fn new() -> Server {
        let fx = Fixture::new();
        let work = fx.root.join("work");
        let format = format!("--object-format={}", crate::fixture::object_format());
        fx.git(
            &work,
            &["init", "-q", "--bare", "-b", "main", &format, "server.git"],
        );
        let bare = work.join("server.git");
        fx.git(
            &fx.src,
            &["remote", "add", "origin", bare.to_str().unwrap()],
        );
        fx.git(&fx.src, &["push", "-q", "origin", "main"]);
        Server { fx, bare }
    }

    /// A clone of the server at `work/<name>`: one machine.
    fn machine(&self, name: &str) -> PathBuf {
        let work = self.fx.root.join("work");
        self.fx
            .git(&work, &["clone", "-q", self.bare.to_str().unwrap(), name]);
        work.join(name)
    }

    /// Machine `machine`'s pushes run the server's receive-pack in a session of its own, out
    /// of reach of a kill of the client's process group.
    fn receive_in_a_session_of_its_own(&self, machine: &Path) {
        self.fx.git(
            machine,
            &[
                "config",
                "remote.origin.receivepack",
                "setsid -w git-receive-pack",
            ],
        );
    }

    /// Binds `id` in `dir` and writes `files` into its isolation; the isolation.
    fn session(&self, dir: &Path, id: &str, files: &[(&str, &str)]) -> PathBuf {
        let (code, bind) = self.fx.json_in(dir, &["bind", "-s", id]);
        assert_eq!(code, 0, "{bind}");
        let isolation = PathBuf::from(bind["worktree"].as_str().unwrap());
        for (rel, text) in files {
            let path = isolation.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        isolation
    }

    /// The digests of the `A3S-Change-Set` trailers on the server's `main`, one per commit
    /// that carries one, newest first.
    fn trailers(&self) -> Vec<String> {
        let format = "--format=%(trailers:key=A3S-Change-Set,valueonly,separator=%x2C)";
        self.fx
            .git(&self.bare, &["log", format, "main"])
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.trim().to_string())
            .collect()
    }

    /// The bytes of `rel` in the server's `main`, if it holds it.
    fn file_on_main(&self, rel: &str) -> Option<String> {
        let mut cmd = std::process::Command::new("git");
        cmd.current_dir(&self.bare)
            .args(["cat-file", "blob", &format!("main:{rel}")]);
        crate::fixture::isolate(&mut cmd, &self.fx.home);
        let out = cmd.output().unwrap();
        out.status
            .success()
            .then(|| String::from_utf8(out.stdout).unwrap())
    }

    /// A pre-receive hook on the server refusing any push whose new tip holds `forbidden.txt`.
    fn refuse_forbidden(&self) {
        let hook = self.bare.join("hooks/pre-receive");
        std::fs::write(
            &hook,
            "#!/bin/sh\nwhile read old new ref; do\n  if git cat-file -e \"$new:forbidden.txt\" 2>/dev/null; then\n    echo \"policy: forbidden.txt may not land on $ref\" >&2\n    exit 1\n  fi\ndone\nexit 0\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// The test command of the concurrent landing: it passes when the fixture's README is there,
/// and appends a digest of every file of the tree it ran on (path and bytes, `.git` aside)
/// to `log`, so that what it saw can be compared with what landed.
fn recording_test(log: &Path) -> String {
    format!(
        "test -f README.md && find . -path ./.git -prune -o -type f -print | LC_ALL=C sort | while read -r f; do printf '%s ' \"$f\"; sha256sum < \"$f\"; done | sha256sum | cut -c1-64 >> {}",
        log.display()
    )
}

/// What [`recording_test`] appends for the tree of `commit` in the server, computed from a
/// checkout of it.
fn tree_digest(server: &Server, commit: &str, scratch: &Path) -> String {
    let _ = std::fs::remove_dir_all(scratch);
    std::fs::create_dir_all(scratch).unwrap();
    let git_dir = format!("--git-dir={}", server.bare.display());
    let work_tree = format!("--work-tree={}", scratch.display());
    let index = scratch.with_extension("index");
    let mut cmd = std::process::Command::new("git");
    cmd.args([
        git_dir.as_str(),
        work_tree.as_str(),
        "checkout",
        commit,
        "--",
        ".",
    ]);
    crate::fixture::isolate(&mut cmd, &server.fx.home);
    cmd.env("GIT_INDEX_FILE", &index);
    assert!(cmd.status().unwrap().success());
    let log = scratch.with_extension("log");
    let _ = std::fs::remove_file(&log);
    let script = recording_test(&log);
    let status = std::process::Command::new("bash")
        .args(["-e", "-o", "pipefail", "-c", &script])
        .current_dir(scratch)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::read_to_string(&log).unwrap().trim().to_string()
}

/// The one session of a `land --push` document named `id`.
fn session<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == id)
        .unwrap_or_else(|| panic!("no {id} in {doc}"))
}

/// A machine's clone and the arguments of its landing.
type Machine = (PathBuf, Vec<String>);

/// Four machines of five sessions each: the file each session adds, and each machine's
/// `land --push` of its five.
fn machines_of_five_sessions(
    server: &Server,
    test: &str,
) -> (BTreeMap<String, String>, Vec<Machine>) {
    let mut expected: BTreeMap<String, String> = BTreeMap::new();
    let mut machines = Vec::new();
    for m in 0..4 {
        let dir = server.machine(&format!("m{m}"));
        let mut args: Vec<String> = [
            "--json",
            "land",
            "--push",
            "origin/main",
            "--test",
            test,
            "--no-sandbox",
            "--attempts",
            "60",
        ]
        .map(String::from)
        .to_vec();
        for k in 0..5 {
            let (id, rel) = (format!("m{m}-s{k}"), format!("m{m}/f{k}.txt"));
            let text = format!("machine {m}, session {k}\n");
            server.session(&dir, &id, &[(rel.as_str(), text.as_str())]);
            expected.insert(rel, text);
            args.extend(["-s".to_string(), id]);
        }
        machines.push((dir, args));
    }
    (expected, machines)
}

/// Every machine's landing started at once; their documents, each a success.
fn land_all_at_once(server: &Server, machines: &[Machine]) -> Vec<Value> {
    // All four at once.
    let children: Vec<_> = machines
        .iter()
        .map(|(dir, args)| {
            server
                .fx
                .cmd_in(dir)
                .args(args)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let docs: Vec<Value> = children
        .into_iter()
        .map(|child| {
            let (code, doc) = json_of(child.wait_with_output().unwrap());
            assert_eq!(code, 0, "{doc}");
            doc
        })
        .collect();
    docs
}

/// Each change set on the server's branch once, byte for byte, built on the tip it names
/// from the tree its test saw.
fn check_each_landed_once_on_its_tested_tree(
    server: &Server,
    log: &Path,
    expected: BTreeMap<String, String>,
    docs: Vec<Value>,
) {
    // Exactly once: twenty trailers on the branch, twenty digests, each once.
    let trailers = server.trailers();
    assert_eq!(trailers.len(), 20, "{trailers:?}");
    let mut distinct = trailers.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        20,
        "a change set landed twice: {trailers:?}"
    );
    // Nothing lost: every session's file, byte for byte, and the first commit's own.
    for (rel, text) in &expected {
        assert_eq!(
            server.file_on_main(rel).as_deref(),
            Some(text.as_str()),
            "{rel}"
        );
    }
    assert_eq!(server.file_on_main("README.md").as_deref(), Some("hello\n"));
    let tested: Vec<String> = std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let scratch = server.fx.root.join("checkout");
    let mut pushes = 0;
    for doc in &docs {
        for landed in doc["sessions"].as_array().unwrap() {
            assert_eq!(landed["outcome"], "landed", "{landed}");
            let digest = landed["digest"].as_str().unwrap();
            assert_eq!(trailers.iter().filter(|t| *t == digest).count(), 1);
            let commit = landed["commit"].as_str().unwrap();
            let push = &landed["push"];
            pushes += push["attempts"].as_u64().unwrap();
            // The commit pushed is the one built on the tip it names, of the tree tested.
            let tree = server
                .fx
                .git(&server.bare, &["rev-parse", &format!("{commit}^{{tree}}")]);
            assert_eq!(push["tested_tree"], format!("git-tree:{tree}"), "{landed}");
            let parent = server
                .fx
                .git(&server.bare, &["rev-parse", &format!("{commit}^")]);
            assert_eq!(push["built_on"], parent.as_str(), "{landed}");
            // And the test itself saw exactly that tree's files.
            let seen = tree_digest(server, commit, &scratch);
            assert!(tested.contains(&seen), "{commit} landed untested: {landed}");
            assert_eq!(landed["cleanup"], "discarded", "{landed}");
        }
    }
    assert!(pushes >= 20);
    eprintln!("4 machines x 5 sessions: {pushes} pushes attempted for 20 landings");
}

#[test]
fn four_machines_land_twenty_sessions_with_tests_each_once_on_the_tree_it_tested() {
    let server = Server::new();
    let log = server.fx.root.join("tested.log");
    let test = recording_test(&log);
    let (expected, machines) = machines_of_five_sessions(&server, &test);
    let docs = land_all_at_once(&server, &machines);
    check_each_landed_once_on_its_tested_tree(&server, &log, expected, docs);
}

/// `a3s-iso ARGS` in `dir`, in a process group of its own, SIGKILLed whole after `delay`;
/// whether it was still running then.
fn kill_in_after(fx: &Fixture, dir: &Path, args: &[&str], delay: std::time::Duration) -> bool {
    use std::os::unix::process::CommandExt;
    let mut child = fx
        .cmd_in(dir)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    let group = rustix::process::Pid::from_child(&child);
    let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    let status = child.wait().unwrap();
    std::os::unix::process::ExitStatusExt::signal(&status) == Some(9)
}

/// Machine `b` lands a session of its own: the branch moves.
fn another_machine_lands(server: &Server, b: &Path, round: usize) {
    let other = format!("b{round}");
    let body = format!("b round {round}\n");
    let other_rel = format!("b/{round}.txt");
    server.session(b, &other, &[(other_rel.as_str(), body.as_str())]);
    let (code, doc) = server
        .fx
        .json_in(b, &["land", "--push", "origin/main", "-s", &other]);
    assert_eq!(code, 0, "{doc}");
}

/// Once more: idempotent, nothing pushed, no fetch pin left.
fn landing_again_is_idempotent(
    server: &Server,
    a: &Path,
    (again, id): (&[&str], &str),
    landed_total: usize,
    round: usize,
) {
    // Once more: idempotent, nothing pushed.
    let (code, doc) = server.fx.json_in(a, again);
    assert_eq!(
        (code, session(&doc, id)["outcome"].as_str()),
        (0, Some("idempotent")),
        "{doc}"
    );
    assert_eq!(server.trailers().len(), landed_total);
    let pins = server
        .fx
        .git(a, &["for-each-ref", "refs/a3s-iso/fetching/"]);
    assert!(pins.is_empty(), "round {round}: {pins}");
}

#[test]
fn land_push_killed_at_random_points_lands_each_change_set_exactly_once() {
    if !crate::fixture::require_tool("setsid") {
        return;
    }
    let server = Server::new();
    let a = server.machine("a");
    let b = server.machine("b");
    // A server is another machine: a kill of the client never reaches its receive-pack. The
    // bare repository's receive-pack runs in a session of its own, out of the killed group.
    server.receive_in_a_session_of_its_own(&a);
    let rounds = crate::fixture::repetitions("A3S_ISO_LAND_PUSH_KILLS", 30);
    let mut rng = crate::promote_crash::Rng::seeded("land --push kills");
    let mut killed = 0;
    let mut landed_total = 0;
    for round in 0..rounds {
        let id = format!("k{round}");
        let rel = format!("kills/{round}.txt");
        let text = format!("round {round}\n");
        server.session(&a, &id, &[(rel.as_str(), text.as_str())]);
        let args = [
            "land",
            "--push",
            "origin/main",
            "-s",
            &id,
            "--test",
            "test -f README.md",
            "--no-sandbox",
        ];
        let delay = std::time::Duration::from_millis(rng.below(400));
        killed += usize::from(kill_in_after(&server.fx, &a, &args, delay));
        // Every other round, another machine lands first: the branch moved under the kill.
        if round % 2 == 1 {
            another_machine_lands(&server, &b, round);
            landed_total += 1;
        }
        let again = [
            "land",
            "--push",
            "origin/main",
            "-s",
            &id,
            "--test",
            "test -f README.md",
            "--no-sandbox",
        ];
        let (code, doc) = server.fx.json_in(&a, &again);
        assert_eq!(code, 0, "round {round}: {doc}");
        let entry = session(&doc, &id);
        let outcome = entry["outcome"].as_str().unwrap();
        assert!(
            ["landed", "idempotent"].contains(&outcome),
            "round {round}: {doc}"
        );
        let digest = entry["digest"].as_str().unwrap().to_string();
        landed_total += 1;
        let trailers = server.trailers();
        assert_eq!(
            trailers.iter().filter(|t| **t == digest).count(),
            1,
            "round {round}: {trailers:?}"
        );
        assert_eq!(trailers.len(), landed_total, "round {round}: {trailers:?}");
        assert_eq!(server.file_on_main(&rel).as_deref(), Some(text.as_str()));
        landing_again_is_idempotent(&server, &a, (&again, &id), landed_total, round);
    }
    eprintln!("land --push kills: {killed} of {rounds} killed while running");
}

#[test]
fn a_server_hook_refusing_a_landing_ends_it_with_its_words_and_the_queue_keeps_going() {
    let server = Server::new();
    server.refuse_forbidden();
    let a = server.machine("a");
    server.session(&a, "ok1", &[("one.txt", "one\n")]);
    let refused = server.session(
        &a,
        "bad",
        &[("forbidden.txt", "no\n"), ("README.md", "changed\n")],
    );
    server.session(&a, "ok2", &[("two.txt", "two\n")]);
    let before = content_listing(&refused);
    let main_before = server.fx.git(&server.bare, &["rev-parse", "main"]);
    // Without --keep-going the queue stops at the refusal.
    let queue = [
        "land",
        "--push",
        "origin/main",
        "--test",
        "test -f README.md",
        "--no-sandbox",
    ];
    let mut args: Vec<&str> = queue.to_vec();
    args.extend(["-s", "bad", "-s", "ok1"]);
    let (code, doc) = server.fx.json_in(&a, &args);
    assert_eq!(code, 1, "{doc}");
    let bad = session(&doc, "bad");
    assert_eq!(bad["outcome"], "failed");
    assert_eq!(bad["error"]["code"], "push_refused", "{bad}");
    let message = bad["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("policy: forbidden.txt may not land on refs/heads/main"),
        "{message}"
    );
    assert_eq!(bad["push"]["attempts"], 1, "not retried: {bad}");
    assert_eq!(session(&doc, "ok1")["outcome"], "not_reached");
    assert_eq!(doc["stopped_at"], "bad");
    assert_eq!(
        server.fx.git(&server.bare, &["rev-parse", "main"]),
        main_before
    );
    // With --keep-going the rest lands; the refused session is byte for byte as it was.
    let mut args: Vec<&str> = queue.to_vec();
    args.extend(["--keep-going", "-s", "ok1", "-s", "bad", "-s", "ok2"]);
    let (code, doc) = server.fx.json_in(&a, &args);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(session(&doc, "ok1")["outcome"], "landed", "{doc}");
    assert_eq!(
        session(&doc, "bad")["error"]["code"],
        "push_refused",
        "{doc}"
    );
    assert_eq!(session(&doc, "ok2")["outcome"], "landed", "{doc}");
    assert_eq!(
        content_listing(&refused),
        before,
        "the refused session changed"
    );
    assert_eq!(server.trailers().len(), 2);
    assert_eq!(server.file_on_main("forbidden.txt"), None);
    assert_eq!(server.file_on_main("README.md").as_deref(), Some("hello\n"));
    assert_eq!(server.file_on_main("two.txt").as_deref(), Some("two\n"));
    let (code, show) = server.fx.json_in(&a, &["show", "-s", "bad"]);
    assert_eq!(code, 0, "{show}");
}

#[test]
fn an_unreachable_remote_fails_the_landing_at_once_naming_the_remote() {
    let server = Server::new();
    let a = server.machine("a");
    let gone = server.fx.root.join("work/gone.git");
    server
        .fx
        .git(&a, &["remote", "add", "far", gone.to_str().unwrap()]);
    let isolation = server.session(&a, "s1", &[("one.txt", "one\n")]);
    let before = content_listing(&isolation);
    let (code, doc) = server.fx.json_in(
        &a,
        &[
            "land",
            "--push",
            "far/main",
            "-s",
            "s1",
            "--test",
            "true",
            "--no-sandbox",
        ],
    );
    assert_eq!(code, 1, "{doc}");
    let entry = session(&doc, "s1");
    assert_eq!(entry["error"]["code"], "remote_unreachable", "{entry}");
    let message = entry["error"]["message"].as_str().unwrap();
    assert!(message.contains("\"far\""), "{message}");
    assert_eq!(entry["push"]["attempts"], 0, "nothing pushed: {entry}");
    assert_eq!(entry["test_exit_code"], Value::Null, "no test ran: {entry}");
    assert_eq!(content_listing(&isolation), before);
    // A remote that is not configured is refused before anything: a usage error names it.
    let (code, doc) = server
        .fx
        .json_in(&a, &["land", "--push", "nowhere/main", "-s", "s1"]);
    assert_ne!(code, 0, "{doc}");
    assert!(!error_code(&doc).is_empty(), "{doc}");
    // And the user's checkout was never needed: it is as the clone left it.
    assert!(server.fx.git(&a, &["status", "--porcelain"]).is_empty());
}

/// A change set captured on one machine, as a document: `land --push --change-set` of it
/// from two machines at once lands it once; killed at random points on one machine and landed
/// again on another, once every time; the scratch session of its test is gone after.
/// Session `id` on machine `a` adding `rel`, captured to a document in `docs`; the document
/// and its patch digest.
fn capture_document(
    server: &Server,
    a: &Path,
    docs: &Path,
    (id, rel, text): (&str, &str, &str),
) -> (PathBuf, String) {
    server.session(a, id, &[(rel, text)]);
    let doc = docs.join(format!("{id}.json"));
    let (code, out) = server
        .fx
        .json_in(a, &["capture", "-s", id, "-o", doc.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    (
        doc,
        out["patch_digest"].as_str().unwrap_or_default().to_string(),
    )
}

/// `land --push origin/main --change-set DOC`, tested, in `dir`.
fn land_document(server: &Server, dir: &Path, doc: &Path) -> std::process::Output {
    let doc = doc.to_str().unwrap().to_string();
    let args = [
        "--json",
        "land",
        "--push",
        "origin/main",
        "--change-set",
        &doc,
        "--test",
        "test -f README.md",
        "--no-sandbox",
    ];
    server.fx.cmd_in(dir).args(args).output().unwrap()
}

/// Killed on `b` at random points, each document lands again on `c`: exactly once.
fn killed_on_one_machine_landed_on_another(server: &Server, a: &Path, b: &Path, c: &Path) {
    let docs = server.fx.root.join("docs");
    // Killed on b at random points, landed again on c.
    let mut rng = crate::promote_crash::Rng::seeded("land --push --change-set kills");
    let rounds = crate::fixture::repetitions("A3S_ISO_LAND_PUSH_KILLS", 30).div_ceil(3);
    for round in 0..rounds {
        let rel = format!("docs/{round}.txt");
        let text = format!("document {round}\n");
        let (doc, _) = capture_document(server, a, &docs, (&format!("d{round}"), &rel, &text));
        let path = doc.to_str().unwrap();
        let args = [
            "land",
            "--push",
            "origin/main",
            "--change-set",
            path,
            "--test",
            "test -f README.md",
            "--no-sandbox",
        ];
        let delay = std::time::Duration::from_millis(rng.below(500));
        kill_in_after(&server.fx, b, &args, delay);
        let (code, doc) = json_of(land_document(server, c, &doc));
        assert_eq!(code, 0, "round {round}: {doc}");
        let entry = &doc["sessions"][0];
        assert!(
            ["landed", "idempotent"].contains(&entry["outcome"].as_str().unwrap()),
            "{doc}"
        );
        let digest = entry["digest"].as_str().unwrap();
        let trailers = server.trailers();
        assert_eq!(
            trailers.iter().filter(|t| *t == digest).count(),
            1,
            "round {round}"
        );
        assert_eq!(trailers.len(), round + 2, "round {round}: {trailers:?}");
        assert_eq!(server.file_on_main(&rel).as_deref(), Some(text.as_str()));
    }
}

#[test]
fn a_change_set_document_lands_once_from_any_machine_whatever_kills_it() {
    if !crate::fixture::require_tool("setsid") {
        return;
    }
    let server = Server::new();
    let (a, b, c) = (
        server.machine("a"),
        server.machine("b"),
        server.machine("c"),
    );
    for dir in [&b, &c] {
        server.receive_in_a_session_of_its_own(dir);
    }
    let docs = server.fx.root.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    // Two machines take the same entry at once.
    let (doc, _) = capture_document(&server, &a, &docs, ("twice", "twice.txt", "once only\n"));
    let (first, second) = std::thread::scope(|s| {
        let one = s.spawn(|| json_of(land_document(&server, &b, &doc)));
        let two = s.spawn(|| json_of(land_document(&server, &c, &doc)));
        (one.join().unwrap(), two.join().unwrap())
    });
    let mut outcomes: Vec<String> = [&first, &second]
        .iter()
        .map(|(code, doc)| {
            assert_eq!(*code, 0, "{doc}");
            doc["sessions"][0]["outcome"].as_str().unwrap().to_string()
        })
        .collect();
    outcomes.sort();
    assert_eq!(outcomes, ["idempotent", "landed"], "{first:?} {second:?}");
    assert_eq!(server.trailers().len(), 1);
    assert_eq!(
        server.file_on_main("twice.txt").as_deref(),
        Some("once only\n")
    );
    killed_on_one_machine_landed_on_another(&server, &a, &b, &c);
    // The next landing on b purges the scratch sessions its killed runs left.
    let (doc, _) = capture_document(&server, &a, &docs, ("last", "last.txt", "last\n"));
    let (code, out) = json_of(land_document(&server, &b, &doc));
    assert_eq!(code, 0, "{out}");
    let (code, list) = server.fx.json_in(&b, &["list"]);
    assert_eq!(code, 0, "{list}");
    assert_eq!(list["sessions"].as_array().unwrap().len(), 0, "{list}");
    for dir in [&b, &c] {
        assert!(server.fx.git(dir, &["status", "--porcelain"]).is_empty());
    }
}

/// `scripts/ci-promote.sh` with `A3S_ISO_LAND_PUSH`: the CI step lands the change set through
/// the server (no commit or push of its own), records the commit and the attempts, and the
/// comment script reports them; a re-run is idempotent, a refusing hook fails the step with
/// its words; the job's checkout is never touched.
/// A CI job's checkout (`ci`) running the promote and comment scripts over documents captured
/// on machine `a`, with its artifacts in `artifacts`.
struct CiJob<'a> {
    server: &'a Server,
    a: PathBuf,
    ci: PathBuf,
    docs: PathBuf,
    artifacts: PathBuf,
    scripts: PathBuf,
}

impl CiJob<'_> {
    fn new(server: &Server) -> CiJob<'_> {
        let (a, ci) = (server.machine("a"), server.machine("ci"));
        let docs = server.fx.root.join("docs");
        std::fs::create_dir_all(&docs).unwrap();
        CiJob {
            server,
            a,
            ci,
            docs,
            artifacts: server.fx.root.join("artifacts"),
            scripts: Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts"),
        }
    }

    /// Session `id` with `files`, captured to a document.
    fn capture(&self, id: &str, files: &[(&str, &str)]) -> PathBuf {
        self.server.session(&self.a, id, files);
        let doc = self.docs.join(format!("{id}.json"));
        let (code, out) = self
            .server
            .fx
            .json_in(&self.a, &["capture", "-s", id, "-o", doc.to_str().unwrap()]);
        assert_eq!(code, 0, "{out}");
        doc
    }

    /// The CI step landing `doc` through the server.
    fn step(&self, doc: &Path) -> std::process::Output {
        let mut cmd = std::process::Command::new("bash");
        cmd.arg(self.scripts.join("ci-promote.sh"))
            .arg(doc)
            .current_dir(&self.ci);
        crate::fixture::isolate(&mut cmd, &self.server.fx.home);
        cmd.env("A3S_ISO_BIN", crate::fixture::BIN)
            .env("A3S_ISO_CI", "plain")
            .env("A3S_ISO_LAND_PUSH", "origin/main")
            .env("A3S_ISO_LAND_TEST", "test -f README.md")
            .env("A3S_ISO_LAND_FLAGS", "--no-sandbox")
            .env("A3S_ISO_ARTIFACTS", &self.artifacts)
            .output()
            .unwrap()
    }

    /// The step's `outcome.env`.
    fn outcome(&self) -> BTreeMap<String, String> {
        std::fs::read_to_string(self.artifacts.join("outcome.env"))
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// The comment the comment script writes for `doc`.
    fn comment(&self, doc: &Path) -> String {
        let mut cmd = std::process::Command::new("bash");
        cmd.arg(self.scripts.join("ci-comment.sh"))
            .arg(self.artifacts.join("land.json"))
            .arg(doc);
        crate::fixture::isolate(&mut cmd, &self.server.fx.home);
        let out = cmd.current_dir(&self.ci).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

/// The first run of the job lands the agent's document and says so, with its attempts; a
/// re-run is idempotent.
fn the_ci_step_lands_once(job: &CiJob<'_>, doc: &Path) {
    let server = job.server;
    let out = job.step(doc);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let env = job.outcome();
    let tip = server.fx.git(&server.bare, &["rev-parse", "main"]);
    assert_eq!(env["A3S_ISO_OUTCOME"], "applied");
    assert_eq!(env["A3S_ISO_PUSHED"], tip);
    assert_eq!(env["A3S_ISO_ATTEMPTS"], "1");
    assert!(
        said.contains(&format!("pushed {tip} to main in 1 push attempt(s)")),
        "{said}"
    );
    assert_eq!(server.trailers().len(), 1);
    assert_eq!(
        server.file_on_main("agent.txt").as_deref(),
        Some("from the agent\n")
    );
    let text = job.comment(doc);
    assert!(
        text.contains(
            "**Landed**: merged onto the branch's tip, tested there (exit 0) and pushed as"
        ),
        "{text}"
    );
    assert!(
        text.contains("in 1 push attempt(s)") && text.contains("- `agent.txt`"),
        "{text}"
    );
    // A re-run of the job: idempotent, nothing pushed.
    let out = job.step(doc);
    assert!(out.status.success());
    assert_eq!(job.outcome()["A3S_ISO_OUTCOME"], "idempotent");
    assert_eq!(server.trailers().len(), 1);
    assert!(job.comment(doc).contains("**Landed before** (idempotent)"));
}

#[test]
fn the_ci_step_lands_through_the_server_and_the_comment_reports_the_attempts() {
    if !crate::fixture::require_tool("jq") {
        return;
    }
    let server = Server::new();
    server.refuse_forbidden();
    let job = CiJob::new(&server);
    let head = server.fx.git(&job.ci, &["rev-parse", "HEAD"]);
    let doc = job.capture("agent", &[("agent.txt", "from the agent\n")]);
    the_ci_step_lands_once(&job, &doc);
    // A hook refuses: the step fails with the hook's words, nothing retried or pushed.
    let refused = job.capture("refused", &[("forbidden.txt", "no\n")]);
    let out = job.step(&refused);
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("land --push failed (push_refused, exit 1, after 1 push attempt(s))"),
        "{said}"
    );
    assert!(
        said.contains("policy: forbidden.txt may not land on refs/heads/main"),
        "{said}"
    );
    assert_eq!(job.outcome()["A3S_ISO_OUTCOME"], "error");
    assert!(
        job.comment(&refused)
            .contains("**Failed**: `push_refused`, after 1 push attempt(s)")
    );
    assert_eq!(server.trailers().len(), 1);
    // The job's checkout was neither needed nor touched.
    assert_eq!(server.fx.git(&job.ci, &["rev-parse", "HEAD"]), head);
    assert!(
        server
            .fx
            .git(&job.ci, &["status", "--porcelain"])
            .is_empty()
    );
}

/// A change set one machine pushed (`push`) lands from two others at once with
/// `land --push --from origin --digest D`: once, its test run in a scratch isolation; a digest
/// the remote does not hold fails its entry with `change_set_not_found`, nothing pushed, and
/// the stop hint names the entry so that the printed command goes on from it.
/// `land --push origin/main` of the change set `digest` fetched from `origin`, in `dir`.
fn land_digest(server: &Server, dir: &Path, digest: &str) -> (i32, Value) {
    let args = [
        "--json",
        "land",
        "--push",
        "origin/main",
        "--from",
        "origin",
        "--digest",
        digest,
        "--test",
        "test -f README.md && test -f far/away.txt",
        "--no-sandbox",
    ];
    json_of(server.fx.cmd_in(dir).args(args).output().unwrap())
}

/// A digest the remote does not hold fails its entry; nothing is pushed and the machines are
/// left as they were.
fn an_unknown_digest_fails_its_entry_and_pushes_nothing(
    server: &Server,
    b: &Path,
    c: &Path,
    digest: &str,
) {
    // A digest the remote does not hold: the entry fails, nothing is pushed, and the hint's
    // command names it (and what follows it).
    let tip = server.fx.git(&server.bare, &["rev-parse", "main"]);
    let unknown = format!("sha256:{}", "0".repeat(64));
    let (code, doc) = json_of(
        server
            .fx
            .cmd_in(b)
            .args([
                "--json",
                "land",
                "--push",
                "origin/main",
                "--from",
                "origin",
                "--digest",
                &unknown,
                "--digest",
                digest,
            ])
            .output()
            .unwrap(),
    );
    assert_eq!(code, 1, "{doc}");
    let entry = &doc["sessions"][0];
    assert_eq!(entry["outcome"], "failed", "{entry}");
    assert_eq!(entry["error"]["code"], "change_set_not_found", "{entry}");
    assert_eq!(doc["sessions"][1]["outcome"], "not_reached", "{doc}");
    let next = doc["next_commands"][0].as_str().unwrap();
    assert!(
        next.contains(&format!("--digest {unknown} --digest {digest}"))
            && next.contains("--from origin"),
        "{next}"
    );
    assert_eq!(server.fx.git(&server.bare, &["rev-parse", "main"]), tip);
    assert_eq!(server.trailers().len(), 1);
    for dir in [&b, &c] {
        assert!(server.fx.git(dir, &["status", "--porcelain"]).is_empty());
        let (code, list) = server.fx.json_in(dir, &["list"]);
        assert_eq!(code, 0, "{list}");
        assert_eq!(list["sessions"].as_array().unwrap().len(), 0, "{list}");
    }
}

#[test]
fn a_pushed_change_set_lands_once_from_two_machines_at_once() {
    let server = Server::new();
    let (a, b, c) = (
        server.machine("a"),
        server.machine("b"),
        server.machine("c"),
    );
    server.session(&a, "far", &[("far/away.txt", "from machine a\n")]);
    let (code, pushed) = server.fx.json_in(&a, &["push", "-s", "far"]);
    assert_eq!(code, 0, "{pushed}");
    let digest = pushed["digest"].as_str().unwrap().to_string();
    let (first, second) = std::thread::scope(|s| {
        let one = s.spawn(|| land_digest(&server, &b, &digest));
        let two = s.spawn(|| land_digest(&server, &c, &digest));
        (one.join().unwrap(), two.join().unwrap())
    });
    let mut outcomes: Vec<String> = [&first, &second]
        .iter()
        .map(|(code, doc)| {
            assert_eq!(*code, 0, "{doc}");
            let entry = &doc["sessions"][0];
            assert_eq!(entry["digest"], digest.as_str(), "{entry}");
            assert_eq!(entry["session_id"], "far", "{entry}");
            entry["outcome"].as_str().unwrap().to_string()
        })
        .collect();
    outcomes.sort();
    assert_eq!(outcomes, ["idempotent", "landed"], "{first:?} {second:?}");
    assert_eq!(server.trailers(), std::slice::from_ref(&digest));
    assert_eq!(
        server.file_on_main("far/away.txt").as_deref(),
        Some("from machine a\n")
    );
    // Again from b: idempotent.
    let (code, again) = land_digest(&server, &b, &digest);
    assert_eq!(
        (code, again["sessions"][0]["outcome"].as_str()),
        (0, Some("idempotent")),
        "{again}"
    );
    an_unknown_digest_fails_its_entry_and_pushes_nothing(&server, &b, &c, &digest);
}

/// A session with two commits and uncommitted work lands with `--mode branch` as three
/// commits on the server's branch, in order, the trailer on the last only; again:
/// idempotent; killed at random points and landed again: exactly once, every time.
/// Two commits in session `id`'s isolation on machine `a`, and uncommitted work after them.
fn commit_twice_and_leave_work(server: &Server, a: &Path, id: &str, tag: &str) {
    let isolation = server.session(a, id, &[(&format!("{tag}/one.txt"), "one\n")]);
    server.fx.git(&isolation, &["add", "-A"]);
    server.fx.git(
        &isolation,
        &["commit", "-q", "-m", &format!("{tag}: first")],
    );
    std::fs::write(isolation.join(format!("{tag}/two.txt")), "two\n").unwrap();
    server.fx.git(&isolation, &["add", "-A"]);
    server.fx.git(
        &isolation,
        &["commit", "-q", "-m", &format!("{tag}: second")],
    );
    std::fs::write(isolation.join(format!("{tag}/three.txt")), "three\n").unwrap();
}

/// `land --push origin/main --mode branch` of session `id`, tested, as JSON.
fn branch_land_args(id: &str) -> Vec<String> {
    [
        "--json",
        "land",
        "--push",
        "origin/main",
        "--mode",
        "branch",
        "-s",
        id,
        "-m",
        "uncommitted work",
        "--test",
        "test -f README.md",
        "--no-sandbox",
    ]
    .map(String::from)
    .to_vec()
}

/// The subjects of the server's last `n` commits on `main`, newest first.
fn subjects(server: &Server, n: usize) -> Vec<String> {
    server
        .fx
        .git(
            &server.bare,
            &["log", "--format=%s", &format!("-{n}"), "main"],
        )
        .lines()
        .map(str::to_string)
        .collect()
}

/// The change set a commit of the server's names in its trailer, if any.
fn trailer_of(server: &Server, rev: &str) -> String {
    server.fx.git(
        &server.bare,
        &[
            "log",
            "-1",
            "--format=%(trailers:key=A3S-Change-Set,valueonly)",
            rev,
        ],
    )
}

/// Patch mode is refused: nothing uncommitted travels through a server.
fn patch_mode_through_a_server_is_refused(server: &Server, a: &Path) {
    // Patch mode is refused: nothing uncommitted travels through a server.
    let (code, doc) = server.fx.json_in(
        a,
        &[
            "land",
            "--push",
            "origin/main",
            "--mode",
            "patch",
            "-s",
            "br",
        ],
    );
    assert_ne!(code, 0, "{doc}");
    assert!(
        doc.to_string()
            .contains("nothing uncommitted travels through a server"),
        "{doc}"
    );
}

/// Killed at random points, then landed again: each session's commits land exactly once.
fn branch_mode_killed_at_random_points_lands_once(server: &Server, a: &Path) {
    // Killed at random points, then landed again: exactly once.
    let rounds = crate::fixture::repetitions("A3S_ISO_LAND_PUSH_BRANCH_KILLS", 10);
    let mut rng = crate::promote_crash::Rng::seeded("land --push --mode branch kills");
    let mut expected = server.trailers().len();
    let mut killed = 0;
    for round in 0..rounds {
        let id = format!("bk{round}");
        commit_twice_and_leave_work(server, a, &id, &id);
        let run: Vec<String> = branch_land_args(&id).into_iter().skip(1).collect();
        let run: Vec<&str> = run.iter().map(String::as_str).collect();
        let delay = std::time::Duration::from_millis(rng.below(500));
        killed += usize::from(kill_in_after(&server.fx, a, &run, delay));
        let (code, doc) = json_of(
            server
                .fx
                .cmd_in(a)
                .args(branch_land_args(&id))
                .output()
                .unwrap(),
        );
        assert_eq!(code, 0, "round {round}: {doc}");
        let entry = session(&doc, &id);
        assert!(
            ["landed", "idempotent"].contains(&entry["outcome"].as_str().unwrap()),
            "round {round}: {doc}"
        );
        expected += 1;
        let trailers = server.trailers();
        let digest = entry["digest"].as_str().unwrap();
        assert_eq!(
            trailers.iter().filter(|t| *t == digest).count(),
            1,
            "round {round}"
        );
        assert_eq!(trailers.len(), expected, "round {round}: {trailers:?}");
        assert_eq!(
            subjects(server, 3),
            [
                "uncommitted work".to_string(),
                format!("{id}: second"),
                format!("{id}: first")
            ],
            "round {round}"
        );
        assert_eq!(
            server.file_on_main(&format!("{id}/three.txt")).as_deref(),
            Some("three\n")
        );
    }
    eprintln!("land --push --mode branch kills: {killed} of {rounds} killed while running");
}

#[test]
fn branch_mode_lands_the_sessions_commits_in_order_with_the_trailer_on_the_last_once() {
    if !crate::fixture::require_tool("setsid") {
        return;
    }
    let server = Server::new();
    let (a, b) = (server.machine("a"), server.machine("b"));
    server.receive_in_a_session_of_its_own(&a);
    commit_twice_and_leave_work(&server, &a, "br", "br");
    // The branch moves first: the commits replay onto another machine's landing.
    server.session(&b, "other", &[("other.txt", "other\n")]);
    let (code, doc) = server
        .fx
        .json_in(&b, &["land", "--push", "origin/main", "-s", "other"]);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = json_of(
        server
            .fx
            .cmd_in(&a)
            .args(branch_land_args("br"))
            .output()
            .unwrap(),
    );
    assert_eq!(code, 0, "{doc}");
    let entry = session(&doc, "br");
    assert_eq!(entry["outcome"], "landed", "{entry}");
    let digest = entry["digest"].as_str().unwrap().to_string();
    assert_eq!(
        subjects(&server, 4),
        [
            "uncommitted work",
            "br: second",
            "br: first",
            "a3s-iso: the work of session other"
        ]
    );
    let tip = server.fx.git(&server.bare, &["rev-parse", "main"]);
    assert_eq!(entry["commit"], tip.as_str(), "{entry}");
    assert_eq!(trailer_of(&server, "main").trim(), digest);
    assert_eq!(trailer_of(&server, "main~1").trim(), "");
    assert_eq!(trailer_of(&server, "main~2").trim(), "");
    assert_eq!(server.trailers().len(), 2, "{:?}", server.trailers());
    for (rel, text) in [
        ("br/one.txt", "one\n"),
        ("br/two.txt", "two\n"),
        ("br/three.txt", "three\n"),
        ("other.txt", "other\n"),
    ] {
        assert_eq!(server.file_on_main(rel).as_deref(), Some(text), "{rel}");
    }
    // The second commit's tree on the server holds what the session's second commit held.
    let listed = server.fx.git(
        &server.bare,
        &["ls-tree", "-r", "--name-only", "main~1", "br"],
    );
    assert_eq!(listed, "br/one.txt\nbr/two.txt");
    // Again: idempotent, nothing pushed.
    let (code, doc) = json_of(
        server
            .fx
            .cmd_in(&a)
            .args(branch_land_args("br"))
            .output()
            .unwrap(),
    );
    assert_eq!(code, 0, "{doc}");
    assert_eq!(session(&doc, "br")["outcome"], "idempotent", "{doc}");
    assert_eq!(server.fx.git(&server.bare, &["rev-parse", "main"]), tip);
    patch_mode_through_a_server_is_refused(&server, &a);
    branch_mode_killed_at_random_points_lands_once(&server, &a);
}

/// `--mode branch`: a session's commit that conflicts with the branch's tip ends its entry as
/// `conflict`, with the path; nothing is pushed and the session's commits are as they were.
#[test]
fn branch_mode_conflict_while_replaying_ends_the_entry_as_conflict_nothing_pushed() {
    let server = Server::new();
    let (a, b) = (server.machine("a"), server.machine("b"));
    let isolation = server.session(&a, "clash", &[("README.md", "from a\n")]);
    server
        .fx
        .git(&isolation, &["commit", "-q", "-am", "a's readme"]);
    let head = server.fx.git(&isolation, &["rev-parse", "HEAD"]);
    server.session(&b, "first", &[("README.md", "from b\n")]);
    let (code, doc) = server
        .fx
        .json_in(&b, &["land", "--push", "origin/main", "-s", "first"]);
    assert_eq!(code, 0, "{doc}");
    let tip = server.fx.git(&server.bare, &["rev-parse", "main"]);
    let (code, doc) = server.fx.json_in(
        &a,
        &[
            "land",
            "--push",
            "origin/main",
            "--mode",
            "branch",
            "-s",
            "clash",
        ],
    );
    assert_eq!(code, 3, "{doc}");
    let entry = session(&doc, "clash");
    assert_eq!(entry["outcome"], "conflict", "{entry}");
    assert_eq!(entry["conflicting_paths"][0], "README.md", "{entry}");
    assert!(
        doc["next_commands"][0]
            .as_str()
            .unwrap()
            .ends_with("-s clash --mode branch"),
        "{doc}"
    );
    assert_eq!(server.fx.git(&server.bare, &["rev-parse", "main"]), tip);
    assert_eq!(server.fx.git(&isolation, &["rev-parse", "HEAD"]), head);
    assert_eq!(
        std::fs::read_to_string(isolation.join("README.md")).unwrap(),
        "from a\n"
    );
}

/// A fetch of yours killed while it moved `origin/main` leaves git's lock on it: `land
/// --push` neither trips on that lock nor moves your remote-tracking branch.
#[test]
fn land_push_leaves_your_remote_tracking_branch_and_its_stale_lock_alone() {
    let server = Server::new();
    let a = server.machine("a");
    let b = server.machine("b");
    server.session(&a, "s", &[("pushed.txt", "pushed\n")]);
    // The server's branch moves on: a fetch would move `origin/main` on machine a.
    another_machine_lands(&server, &b, 0);
    let tracking = server
        .fx
        .git(&a, &["rev-parse", "refs/remotes/origin/main"]);
    let lock = a.join(".git/refs/remotes/origin/main.lock");
    std::fs::write(&lock, "").unwrap();
    let args = ["land", "--push", "origin/main", "-s", "s"];
    let (code, doc) = server.fx.json_in(&a, &args);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(server.trailers().len(), 2, "{doc}");
    assert!(lock.exists());
    let after = server
        .fx
        .git(&a, &["rev-parse", "refs/remotes/origin/main"]);
    assert_eq!(after, tracking);
}
