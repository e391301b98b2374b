//! Isolation names that cannot collide (two repositories in one parent, two tenants of one
//! repository), sweeps that only reclaim what their store can prove is its own, ownerless
//! sessions for scripts, and swept sessions that stay findable and resumable.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::bind_basics::source_hash;
use crate::fixture::{Fixture, listing, worktree_of};

/// `a3s-iso --json ARGS` started by a shell script that exits right after (so the bind's
/// default owner, the script's shell, is dead as soon as it returns).
fn from_script(fx: &Fixture, dir: &Path, args: &[&str]) -> (i32, Value) {
    crate::fixture::from_dying_script(fx, dir, &[&["--json"], args].concat())
}

/// A tenant's tag, as the README documents it: `t` + 8 hex of sha256 of the canonical path.
fn tag(state_dir: &Path) -> String {
    format!("t{}", source_hash(state_dir))
}

/// The second repository `work/other`, beside the fixture's `work/src`, renamed to `name`.
fn second_repo(fx: &Fixture, name: &str) -> PathBuf {
    let other = fx.root.join("work").join(name);
    std::fs::create_dir_all(&other).unwrap();
    fx.git(&other, &["init", "-q", "-b", "main"]);
    std::fs::write(other.join("README.md"), "other\n").unwrap();
    fx.git(&other, &["add", "-A"]);
    fx.git(&other, &["commit", "-q", "-m", "other"]);
    other
}

fn sweep_in(fx: &Fixture, dir: &Path, state: Option<&Path>, args: &[&str]) -> Value {
    let mut all: Vec<&str> = Vec::new();
    if let Some(state) = state {
        all.extend(["--state-dir", state.to_str().unwrap()]);
    }
    all.push("sweep");
    all.extend(args);
    let (code, doc) = fx.json_in(dir, &all);
    assert_eq!(code, 0, "{doc}");
    doc
}

fn reason_of(doc: &Value, path: &Path) -> String {
    doc["kept"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["path"] == path.to_str().unwrap())
        .map(|k| k["reason"].as_str().unwrap().to_string())
        .unwrap_or_else(|| panic!("{} not kept: {doc}", path.display()))
}

#[test]
fn two_repositories_in_one_parent_use_one_session_id() {
    let fx = Fixture::new();
    let other = second_repo(&fx, "other");
    let mut trees = Vec::new();
    for (source, text) in [(&fx.src, "from src\n"), (&other, "from other\n")] {
        let (code, doc) = fx.json_in(source, &["bind", "-s", "task-1"]);
        assert_eq!(code, 0, "{doc}");
        let tree = worktree_of(&doc);
        assert_eq!(tree.parent(), source.parent());
        let script = format!("printf '{}' > made.txt", text.trim_end().replace('\n', ""));
        let (code, run) = fx.json_in(
            source,
            &[
                "run",
                "-s",
                "task-1",
                "--no-sandbox",
                "--",
                "sh",
                "-c",
                &script,
            ],
        );
        assert_eq!(code, 0, "{run}");
        let (code, cap) = fx.json_in(source, &["capture", "-s", "task-1"]);
        assert_eq!(code, 0, "{cap}");
        trees.push(tree);
    }
    assert_ne!(trees[0], trees[1]);
    assert!(trees[0].ends_with(".src.a3s-isolate-task-1"));
    assert!(trees[1].ends_with(".other.a3s-isolate-task-1"));
    for (source, expected) in [(&fx.src, "from src"), (&other, "from other")] {
        let (code, doc) = fx.json_in(source, &["promote", "-s", "task-1"]);
        assert_eq!(code, 0, "{doc}");
        assert_eq!(doc["outcome"], "applied", "{doc}");
        assert_eq!(
            std::fs::read_to_string(source.join("made.txt")).unwrap(),
            expected
        );
    }
    // Each sweep leaves the other repository's isolation alone.
    let doc = sweep_in(&fx, &fx.src, None, &["--grace", "0s"]);
    assert!(doc["reclaimed"].as_array().unwrap().is_empty(), "{doc}");
    assert!(trees.iter().all(|t| t.join("made.txt").is_file()));
}

/// Three stores of one repository (the default and two `--state-dir` tenants), one session id
/// each, every owner dead and the user registry gone: each sweep reclaims only its own.
#[test]
fn tenants_never_share_names_refs_or_reclaims() {
    let fx = Fixture::new();
    let a = fx.root.join("tenant-a");
    let b = fx.root.join("tenant-b");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let mut trees = Vec::new();
    for state in [None, Some(&a), Some(&b)] {
        let mut args = Vec::new();
        if let Some(state) = state {
            args.extend(["--state-dir", state.to_str().unwrap()]);
        }
        args.extend(["bind", "-s", "same"]);
        let (code, doc) = from_script(&fx, &fx.src, &args);
        assert_eq!(code, 0, "{doc}");
        let tree = worktree_of(&doc);
        std::fs::write(tree.join("work.txt"), tree.to_str().unwrap()).unwrap();
        trees.push(tree);
    }
    assert!(trees[0].ends_with(".src.a3s-isolate-same"));
    assert!(trees[1].ends_with(format!(".src.{}.a3s-isolate-same", tag(&a))));
    assert!(trees[2].ends_with(format!(".src.{}.a3s-isolate-same", tag(&b))));
    let base = |ns: &str| fx.git(&fx.src, &["rev-parse", &format!("{ns}sessions/same/base")]);
    base("refs/a3s-iso/");
    base(&format!("refs/a3s-iso-tenants/{}/", tag(&a)));
    base(&format!("refs/a3s-iso-tenants/{}/", tag(&b)));
    // Without the registry no store knows the others: ownership must come from the names.
    std::fs::remove_dir_all(fx.home.join(".local/share/a3s-iso/sources")).unwrap();

    let doc = sweep_in(&fx, &fx.src, Some(&a), &["--grace", "0s"]);
    assert_eq!(doc["reclaimed"].as_array().unwrap().len(), 1, "{doc}");
    assert_eq!(doc["reclaimed"][0]["path"], trees[1].to_str().unwrap());
    assert_eq!(reason_of(&doc, &trees[0]), "other_tenant");
    assert_eq!(reason_of(&doc, &trees[2]), "other_tenant");
    assert!(!trees[1].exists());
    for tree in [&trees[0], &trees[2]] {
        assert_eq!(
            std::fs::read_to_string(tree.join("work.txt")).unwrap(),
            tree.to_str().unwrap()
        );
    }
    let swept_a = format!("refs/a3s-iso-tenants/{}/swept/same:work.txt", tag(&a));
    assert_eq!(
        fx.git(&fx.src, &["show", &swept_a]),
        trees[1].to_str().unwrap()
    );

    let doc = sweep_in(&fx, &fx.src, None, &["--grace", "0s"]);
    assert_eq!(doc["reclaimed"].as_array().unwrap().len(), 1, "{doc}");
    assert_eq!(doc["reclaimed"][0]["path"], trees[0].to_str().unwrap());
    assert_eq!(reason_of(&doc, &trees[2]), "other_tenant");
    assert!(trees[2].join("work.txt").is_file());
    // The default sweep touched no tenant ref.
    assert_eq!(
        fx.git(&fx.src, &["show", &swept_a]),
        trees[1].to_str().unwrap()
    );

    let doc = sweep_in(&fx, &fx.src, Some(&b), &["--grace", "0s"]);
    assert_eq!(doc["reclaimed"][0]["path"], trees[2].to_str().unwrap());
    assert!(!trees[2].exists());
    // Each store lists its own session, swept.
    for state in [None, Some(&a), Some(&b)] {
        let mut args = Vec::new();
        if let Some(state) = state {
            args.extend(["--state-dir", state.to_str().unwrap()]);
        }
        args.push("list");
        let (_, list) = fx.json(&args);
        assert_eq!(list["sessions"].as_array().unwrap().len(), 1, "{list}");
        assert_eq!(list["sessions"][0]["state"], "swept", "{list}");
    }
}

#[test]
fn unrecorded_trees_named_for_another_tenant_or_repository_are_never_reclaimed() {
    let fx = Fixture::new();
    let work = fx.root.join("work");
    std::fs::create_dir(fx.root.join("elsewhere")).unwrap();
    let names = [
        format!(".src.{}.a3s-isolate-z", tag(&fx.root.join("elsewhere"))),
        ".other.a3s-isolate-z".to_string(),
        format!(".src-{}.a3s-isolate-z", "0".repeat(8)),
    ];
    let mut trees = Vec::new();
    for name in &names {
        // Registered in this repository's worktree list, unrecorded, old: only the name
        // tells that this store did not make it.
        let tree = work.join(name);
        fx.git(
            &fx.src,
            &["worktree", "add", "-q", "--detach", tree.to_str().unwrap()],
        );
        std::fs::write(tree.join("theirs.txt"), "theirs\n").unwrap();
        assert!(
            Command::new("touch")
                .args(["-h", "-d", "3 hours ago"])
                .arg(&tree)
                .status()
                .unwrap()
                .success()
        );
        trees.push(tree);
    }
    let before: Vec<_> = trees.iter().map(|t| listing(t)).collect();
    let doc = sweep_in(&fx, &fx.src, None, &["--grace", "0s"]);
    assert!(doc["reclaimed"].as_array().unwrap().is_empty(), "{doc}");
    assert_eq!(reason_of(&doc, &trees[0]), "other_tenant");
    assert_eq!(reason_of(&doc, &trees[1]), "not_ours");
    assert_eq!(reason_of(&doc, &trees[2]), "not_ours");
    let tenant = fx.root.join("tenant");
    let doc = sweep_in(&fx, &fx.src, Some(&tenant), &["--grace", "0s"]);
    assert!(doc["reclaimed"].as_array().unwrap().is_empty(), "{doc}");
    let after: Vec<_> = trees.iter().map(|t| listing(t)).collect();
    assert_eq!(before, after);
    // This store's own name, unrecorded and registered, is still reclaimed after the grace.
    let own = fx.isolation("orphan");
    fx.git(
        &fx.src,
        &["worktree", "add", "-q", "--detach", own.to_str().unwrap()],
    );
    let doc = sweep_in(&fx, &fx.src, None, &["--grace", "0s"]);
    assert_eq!(doc["reclaimed"][0]["path"], own.to_str().unwrap(), "{doc}");
}

#[test]
fn a_script_session_that_was_swept_is_found_and_resumed() {
    let fx = Fixture::new();
    let (code, doc) = from_script(&fx, &fx.src, &["bind", "-s", "step1"]);
    assert_eq!(code, 0, "{doc}");
    let tree = worktree_of(&doc);
    let edit: &[u8] = b"edited \xff bytes\r\nno newline";
    std::fs::write(tree.join("README.md"), edit).unwrap();
    std::fs::write(tree.join("new.bin"), [0u8, 1, 2, 255]).unwrap();

    let doc = sweep_in(&fx, &fx.src, None, &["--grace", "0s"]);
    assert_eq!(doc["reclaimed"][0]["session_id"], "step1", "{doc}");
    assert!(!tree.exists());
    let (_, list) = fx.json(&["list"]);
    assert_eq!(list["sessions"][0]["state"], "swept", "{list}");
    assert_eq!(list["sessions"][0]["swept_ref"], "refs/a3s-iso/swept/step1");
    let human = fx.cmd().arg("list").output().unwrap();
    let human = String::from_utf8_lossy(&human.stdout);
    assert!(
        human.contains("swept") && human.contains("bind -s step1 --resume"),
        "{human}"
    );

    for args in [
        &["promote", "-s", "step1"][..],
        &["capture", "-s", "step1"],
        &["run", "-s", "step1", "--no-sandbox", "--", "true"],
    ] {
        let (code, err) = fx.json(args);
        assert_ne!(code, 0, "{err}");
        assert_eq!(err["error"]["code"], "session_not_found", "{err}");
        let message = err["error"]["message"].as_str().unwrap();
        assert!(message.contains("swept at"), "{err}");
        assert!(message.contains("refs/a3s-iso/swept/step1"), "{err}");
        let hint = err["error"]["hint"].as_str().unwrap();
        assert!(hint.contains("bind -s step1 --resume"), "{err}");
    }
    // A plain bind does not shadow the swept work.
    let (code, err) = fx.json(&["bind", "-s", "step1"]);
    assert_eq!(err["error"]["code"], "session_exists", "{err}");
    assert_ne!(code, 0);
    assert!(err["error"]["hint"].as_str().unwrap().contains("--resume"));
    assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), "");

    let (code, doc) = fx.json(&["bind", "-s", "step1", "--resume"]);
    assert_eq!(code, 0, "{doc}");
    let resumed = worktree_of(&doc);
    assert_eq!(std::fs::read(resumed.join("README.md")).unwrap(), edit);
    assert_eq!(
        std::fs::read(resumed.join("new.bin")).unwrap(),
        [0u8, 1, 2, 255]
    );
    let (_, list) = fx.json(&["list"]);
    assert_eq!(list["sessions"][0]["state"], "bound", "{list}");

    let (code, doc) = fx.json(&["promote", "-s", "step1"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "applied", "{doc}");
    assert_eq!(std::fs::read(fx.src.join("README.md")).unwrap(), edit);
    assert_eq!(
        std::fs::read(fx.src.join("new.bin")).unwrap(),
        [0u8, 1, 2, 255]
    );
}

#[test]
fn ownerless_sessions_wait_for_include_ownerless() {
    let fx = Fixture::new();
    let (code, doc) = from_script(&fx, &fx.src, &["bind", "-s", "ci", "--owner", "none"]);
    assert_eq!(code, 0, "{doc}");
    assert!(doc["owner"].is_null(), "{doc}");
    let tree = worktree_of(&doc);
    std::fs::write(tree.join("ci.txt"), "built\n").unwrap();
    // Binding it again from another script reuses it and leaves it ownerless.
    let (code, again) = from_script(&fx, &fx.src, &["bind", "-s", "ci"]);
    assert_eq!(code, 0, "{again}");
    assert_eq!(again["reused"], true);
    assert!(again["owner"].is_null(), "{again}");

    let doc = sweep_in(&fx, &fx.src, None, &["--grace", "0s"]);
    assert!(doc["reclaimed"].as_array().unwrap().is_empty(), "{doc}");
    assert_eq!(reason_of(&doc, &tree), "ownerless");
    assert_eq!(
        std::fs::read_to_string(tree.join("ci.txt")).unwrap(),
        "built\n"
    );
    let (_, list) = fx.json(&["list"]);
    assert!(list["sessions"][0]["owner"].is_null(), "{list}");

    let doc = sweep_in(
        &fx,
        &fx.src,
        None,
        &["--include-ownerless", "--grace", "1h"],
    );
    assert_eq!(reason_of(&doc, &tree), "young");
    let doc = sweep_in(
        &fx,
        &fx.src,
        None,
        &["--include-ownerless", "--grace", "0s"],
    );
    assert_eq!(doc["reclaimed"][0]["reason"], "ownerless", "{doc}");
    assert!(!tree.exists());
    assert_eq!(
        fx.git(&fx.src, &["show", "refs/a3s-iso/swept/ci:ci.txt"]),
        "built"
    );

    // Discard forgets the swept session; --purge drops its refs too.
    let (code, doc) = fx.json(&["discard", "-s", "ci", "--purge"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(fx.git(&fx.src, &["for-each-ref", "refs/a3s-iso/"]), "");
    let (_, list) = fx.json(&["list"]);
    assert!(list["sessions"].as_array().unwrap().is_empty(), "{list}");

    // An ownerless session that was never swept is removed by discard.
    let (code, doc) = from_script(&fx, &fx.src, &["bind", "-s", "ci2", "--owner", "none"]);
    assert_eq!(code, 0, "{doc}");
    let tree = worktree_of(&doc);
    let (code, doc) = fx.json(&["discard", "-s", "ci2"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["removed"], true);
    assert!(!tree.exists());
    assert_eq!(fx.worktrees().len(), 1);
}

#[test]
fn owner_pid_forms_name_a_running_process() {
    let fx = Fixture::new();
    let me = std::process::id().to_string();
    let (code, doc) = fx.json(&["bind", "-s", "p", "--owner", &format!("pid:{me}")]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["owner"]["pid"].to_string(), me);
    let (code, err) = fx.json(&["bind", "-s", "q", "--owner", "pid"]);
    assert_eq!(code, 2, "{err}");
    let (code, err) = fx.json(&["bind", "-s", "q", "--owner", "none", "--owner-pid", &me]);
    assert_eq!(code, 2, "{err}");
}

/// A source directory whose name is not UTF-8: its isolation's name keeps those bytes, and the
/// session can be bound, reused, captured, listed and discarded (the human output; JSON has no
/// way to carry such a path as a string).
#[test]
fn a_source_name_that_is_not_utf8_names_its_isolation() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let fx = Fixture::new();
    let source = fx.root.join("work").join(OsStr::from_bytes(b"caf\xe9"));
    std::fs::rename(&fx.src, &source).unwrap();
    let a3s = |args: &[&str]| {
        let out = fx.cmd_in(&source).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    a3s(&["bind", "-s", "u"]);
    let tree = fx
        .root
        .join("work")
        .join(OsStr::from_bytes(b".caf\xe9.a3s-isolate-u"));
    assert!(tree.join("README.md").is_file());
    std::fs::write(tree.join("README.md"), "edited\n").unwrap();
    // Binding again reuses it: the record and the admin dir's links survived the bytes.
    let again = a3s(&["bind", "-s", "u"]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("reused"));
    let captured = a3s(&["capture", "-s", "u"]);
    assert!(String::from_utf8_lossy(&captured.stdout).contains("1 file changed"));
    let listed = a3s(&["list"]);
    assert!(String::from_utf8_lossy(&listed.stdout).contains("bound"));
    a3s(&["discard", "-s", "u"]);
    assert!(!tree.exists());
    assert_eq!(
        fx.git(&source, &["worktree", "list", "--porcelain"])
            .lines()
            .filter(|l| l.starts_with("worktree "))
            .count(),
        1
    );
}

/// A tenant's session, used from inside its isolation: runs pin under the tenant's namespace,
/// branch mode retains its commits on the tenant's branch, and `discard --purge` drops only the
/// tenant's refs, never the default store's session of the same id.
#[test]
fn a_tenant_uses_its_own_refs_from_inside_its_isolation() {
    let fx = Fixture::new();
    let state = fx.root.join("tenant");
    std::fs::create_dir(&state).unwrap();
    let tenant = ["--state-dir", state.to_str().unwrap()];
    let ns = format!("refs/a3s-iso-tenants/{}/", tag(&state));
    fx.bind("t");
    let (code, doc) = fx.json(&[&tenant[..], &["bind", "-s", "t"]].concat());
    assert_eq!(code, 0, "{doc}");
    let tree = worktree_of(&doc);
    assert_ne!(tree, fx.isolation("t"));

    // Inside the isolation, no -s: the tenant's session is found through its store.
    let (code, run) = fx.json_in(
        &tree,
        &[
            &tenant[..],
            &[
                "run",
                "--no-sandbox",
                "--",
                "sh",
                "-c",
                "echo one > one.txt",
            ],
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{run}");
    assert_eq!(run["session_id"], "t");
    let result_ref = run["result_ref"].as_str().unwrap();
    assert!(result_ref.starts_with(&format!("{ns}runs/t/")), "{run}");
    fx.git(&fx.src, &["rev-parse", "--verify", result_ref]);
    fx.git(&tree, &["add", "one.txt"]);
    fx.git(&tree, &["commit", "-q", "-m", "tenant commit"]);

    let (code, doc) = fx.json(&[&tenant[..], &["promote", "-s", "t", "--mode", "branch"]].concat());
    assert_eq!(code, 0, "{doc}");
    let retained = format!("a3s-iso-tenants/{}/t", tag(&state));
    assert_eq!(doc["branch"]["retained_branch"], retained.as_str(), "{doc}");
    fx.git(
        &fx.src,
        &["rev-parse", "--verify", &format!("refs/heads/{retained}")],
    );
    assert_eq!(
        fx.git(&fx.src, &["log", "-1", "--format=%s"]),
        "tenant commit"
    );

    let (code, doc) = fx.json(&[&tenant[..], &["discard", "-s", "t", "--purge"]].concat());
    assert_eq!(code, 0, "{doc}");
    assert_eq!(fx.git(&fx.src, &["for-each-ref", &ns]), "");
    fx.git(
        &fx.src,
        &["rev-parse", "--verify", "refs/a3s-iso/sessions/t/base"],
    );
    assert!(fx.isolation("t").join("README.md").is_file());
    let (_, list) = fx.json(&["list"]);
    assert_eq!(list["sessions"][0]["state"], "bound", "{list}");
}

/// A reclaim interrupted by a kill under an earlier version, whose intent does not record the
/// swept ref: the next command finishes it and still records where the snapshot is.
#[test]
fn an_older_reclaim_intent_is_finished_as_a_swept_session() {
    let fx = Fixture::new();
    let (code, doc) = from_script(&fx, &fx.src, &["bind", "-s", "old"]);
    assert_eq!(code, 0, "{doc}");
    let tree = worktree_of(&doc);
    let state = fx.src.join(".git/a3s-iso");
    let record: Value =
        serde_json::from_slice(&std::fs::read(state.join("sessions/old.json")).unwrap()).unwrap();
    let head_tree = fx.git(&fx.src, &["rev-parse", "HEAD^{tree}"]);
    fx.git(
        &fx.src,
        &["update-ref", "refs/a3s-iso/swept/old", &head_tree],
    );
    let trash = fx.root.join("work/.a3s-reclaimed-old-killed");
    std::fs::rename(&tree, &trash).unwrap();
    let intent = serde_json::json!({
        "operation": "reclaim",
        "session_id": "old",
        "path": tree,
        "admin": record["admin_dir"],
        "trash": trash,
    });
    std::fs::create_dir_all(state.join("pending")).unwrap();
    std::fs::write(
        state.join("pending/old.json"),
        serde_json::to_vec(&intent).unwrap(),
    )
    .unwrap();

    let (code, list) = fx.json(&["list"]);
    assert_eq!(code, 0, "{list}");
    assert_eq!(list["sessions"][0]["state"], "swept", "{list}");
    assert_eq!(list["sessions"][0]["swept_ref"], "refs/a3s-iso/swept/old");
    assert!(!trash.exists());
    assert!(!state.join("pending/old.json").exists());
    assert_eq!(fx.worktrees().len(), 1);
}

/// One state dir for two repositories (a harness's `A3S_ISO_STATE_DIR`): a session id holds
/// one repository's session; the other repository is refused, never handed the first one's
/// session, and nothing of the first changes.
#[test]
fn a_state_dir_shared_by_two_repositories_never_hands_out_the_other_ones_session() {
    let fx = Fixture::new();
    let other = second_repo(&fx, "other");
    let state = fx.root.join("shared-state");
    let state_arg = state.to_str().unwrap();
    let (code, first) = fx.json_in(&fx.src, &["--state-dir", state_arg, "bind", "-s", "x"]);
    assert_eq!(code, 0, "{first}");
    let tree = worktree_of(&first);
    std::fs::write(tree.join("made.txt"), "first\n").unwrap();
    let record = std::fs::read(state.join("sessions/x.json")).unwrap();

    let (code, doc) = fx.json_in(&other, &["--state-dir", state_arg, "bind", "-s", "x"]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["error"]["code"], "session_exists", "{doc}");
    for args in [
        &["promote", "-s", "x"][..],
        &["capture", "-s", "x"],
        &["discard", "-s", "x"],
        &["bind", "-s", "x", "--resume"],
    ] {
        let mut all = vec!["--state-dir", state_arg];
        all.extend_from_slice(args);
        let (code, doc) = fx.json_in(&other, &all);
        assert_ne!(code, 0, "{args:?}: {doc}");
        assert!(
            ["session_not_found", "session_exists"]
                .contains(&doc["error"]["code"].as_str().unwrap()),
            "{args:?}: {doc}"
        );
    }
    assert_eq!(
        std::fs::read(state.join("sessions/x.json")).unwrap(),
        record
    );
    assert_eq!(std::fs::read(tree.join("made.txt")).unwrap(), b"first\n");
    assert!(!other.join("made.txt").exists());
    let (code, doc) = fx.json_in(&fx.src, &["--state-dir", state_arg, "promote", "-s", "x"]);
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("applied")),
        "{doc}"
    );
    assert_eq!(std::fs::read(fx.src.join("made.txt")).unwrap(), b"first\n");
}
