use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::fixture::{
    Fixture, checkout_listing, error_code, isolate, read_text, snapshot_settings,
};

/// Commits everything in `dir` as a given author at a given date (an agent's commit).
fn agent_commit(fx: &Fixture, dir: &Path, message: &str, author: &str, date: &str) {
    for args in [vec!["add", "-A"], vec!["commit", "-q", "-m", message]] {
        let mut cmd = Command::new("git");
        cmd.current_dir(dir).args(&args);
        isolate(&mut cmd, &fx.home);
        cmd.env("GIT_AUTHOR_NAME", author)
            .env(
                "GIT_AUTHOR_EMAIL",
                format!("{}@agents.example", author.to_lowercase()),
            )
            .env("GIT_AUTHOR_DATE", date);
        assert!(cmd.status().unwrap().success());
    }
}

fn log(fx: &Fixture, range: &str) -> Vec<String> {
    fx.git(
        &fx.src,
        &[
            "log",
            "--reverse",
            "--format=%s|%an|%ae|%ad",
            "--date=iso-strict",
            range,
        ],
    )
    .lines()
    .map(String::from)
    .collect()
}

fn promote_branch(fx: &Fixture, id: &str) -> (i32, Value) {
    fx.json(&["promote", "-s", id, "--mode", "branch"])
}

/// `promote --mode branch` of session `id`, a3s-iso calling `git` for git; its document.
fn promote_with_git(fx: &Fixture, id: &str, git: impl AsRef<Path>) -> (i32, Value) {
    let out = (fx
        .cmd()
        .args(["--json", "promote", "-s", id, "--mode", "branch"]))
    .env("A3S_ISO_GIT", git.as_ref())
    .output()
    .unwrap();
    crate::fixture::json_of(out)
}

/// Session `rc` whose agent commit edits README.md, which a commit of yours edits too (its
/// pick fails), with your WIP in src/lib.txt; your commit.
fn a_pick_that_conflicts(fx: &Fixture) -> String {
    fx.bind("rc");
    let iso = fx.isolation("rc");
    std::fs::write(iso.join("README.md"), "agent version\n").unwrap();
    agent_commit(
        fx,
        &iso,
        "agent edits README",
        "Agent",
        "2026-05-01T00:00:00Z",
    );
    fx.write("README.md", "user version\n");
    let user_tip = fx.commit_all("user edits README");
    fx.write("src/lib.txt", "one\ntwo\nuser wip\n");
    user_tip
}

/// Session `b` with two agent commits by different authors and uncommitted work after them.
fn two_agent_commits_and_leftovers(fx: &Fixture) {
    fx.bind("b");
    let iso = fx.isolation("b");
    std::fs::write(iso.join("one.txt"), "1\n").unwrap();
    agent_commit(
        fx,
        &iso,
        "first agent commit",
        "Alice",
        "2026-02-03T04:05:06Z",
    );
    std::fs::write(iso.join("two.txt"), "2\n").unwrap();
    agent_commit(
        fx,
        &iso,
        "second agent commit",
        "Bob",
        "2026-03-04T05:06:07Z",
    );
    std::fs::write(iso.join("left.txt"), "uncommitted\n").unwrap();
}

/// `promote --mode branch`'s document: the two commits and the leftovers' commit replayed.
fn the_branch_promote_document_snapshot(fx: &Fixture, doc: &Value) {
    snapshot_settings(fx).bind(|| {
        insta::assert_json_snapshot!(doc, @r#"
        {
          "artifacts": "[ROOT]/work/src/.git/a3s-iso/artifacts/[HASH]",
          "base_matches_head": null,
          "bound_revision": "[HASH]",
          "branch": {
            "failed_commit": null,
            "kept_stash": null,
            "replayed": [
              {
                "commit": "[HASH]",
                "replayed": "[HASH]",
                "subject": "first agent commit"
              },
              {
                "commit": "[HASH]",
                "replayed": "[HASH]",
                "subject": "second agent commit"
              },
              {
                "commit": "[HASH]",
                "replayed": "[HASH]",
                "subject": "a3s-iso: uncommitted changes of session b"
              }
            ],
            "retained_branch": "a3s-iso/b",
            "skipped": [],
            "target_branch": "refs/heads/main"
          },
          "conflicting_paths": [],
          "conflicting_paths_exact": [],
          "current_revision": "[HASH]",
          "detail": null,
          "digest": "sha256:[HASH]",
          "files_changed": 3,
          "from_tree": "git-tree:[HASH]",
          "mode": "branch",
          "nested_repositories": [],
          "outcome": "applied",
          "patch_bytes": "[PATCH_BYTES]",
          "reason": null,
          "schema": "a3s-iso.promote.v1",
          "session_id": "b",
          "step": 1,
          "warnings": []
        }
        "#)
    });
}

#[test]
fn agent_commits_land_as_commits_with_a_leftovers_commit() {
    let fx = Fixture::new();
    let old_tip = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    two_agent_commits_and_leftovers(&fx);
    let (code, doc) = promote_branch(&fx, "b");
    assert_eq!(code, 0, "{doc}");
    the_branch_promote_document_snapshot(&fx, &doc);
    let landed = log(&fx, &format!("{old_tip}..HEAD"));
    assert_eq!(landed.len(), 3, "{landed:?}");
    assert_eq!(
        landed[0],
        "first agent commit|Alice|alice@agents.example|2026-02-03T04:05:06Z"
    );
    assert_eq!(
        landed[1],
        "second agent commit|Bob|bob@agents.example|2026-03-04T05:06:07Z"
    );
    assert!(
        landed[2].starts_with("a3s-iso: uncommitted changes of session b|"),
        "{landed:?}"
    );
    for (file, content) in [
        ("one.txt", "1\n"),
        ("two.txt", "2\n"),
        ("left.txt", "uncommitted\n"),
    ] {
        assert_eq!(std::fs::read_to_string(fx.src.join(file)).unwrap(), content);
    }
    assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), "");
    fx.git(&fx.src, &["rev-parse", "--verify", "refs/heads/a3s-iso/b"]);
    // Again: idempotent, nothing changes.
    let before = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let (code, doc) = promote_branch(&fx, "b");
    assert_eq!(
        (code, doc["outcome"].as_str().unwrap()),
        (0, "idempotent"),
        "{doc}"
    );
    assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD"]), before);
}

/// `bind --carry-wip`: the carried state pinned, and the isolation starting from the user's
/// real working state, staging included.
fn bind_carrying_the_wip(fx: &Fixture, status_before: &str, binary: &[u8]) {
    let (code, doc) = fx.json(&["bind", "-s", "cw", "--carry-wip"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["carried_wip"], true);
    let iso = fx.isolation("cw");
    // The carried state is pinned, so git gc cannot take it.
    assert_eq!(
        fx.git(&fx.src, &["cat-file", "-t", "refs/a3s-iso/sessions/cw/wip"]),
        "tree"
    );
    assert_eq!(
        fx.git(
            &fx.src,
            &["cat-file", "-t", "refs/a3s-iso/sessions/cw/wip-index"]
        ),
        "tree"
    );
    // The isolation starts from the user's real working state, staging included.
    assert_eq!(fx.git(&iso, &["status", "--porcelain"]), status_before);
    assert_eq!(std::fs::read(iso.join("blob.bin")).unwrap(), binary);
}

/// The change set of patch mode holds only the agent's edit, none of the carried WIP.
fn the_change_set_holds_only_the_agents_edit(fx: &Fixture) {
    // Patch mode first, on a copy of the situation: only the agent's edit.
    let (_, captured) = fx.json(&["capture", "-s", "cw"]);
    use base64::Engine;
    let patch = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(captured["patch_base64"].as_str().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert!(patch.contains("agent.txt"), "{patch}");
    for wip in ["staged.txt", "tracked.txt", "blob.bin"] {
        assert!(
            !patch.contains(wip),
            "{wip} leaked into the change set:\n{patch}"
        );
    }
}

#[test]
fn carried_wip_is_never_committed_and_comes_back_exactly() {
    let fx = Fixture::new();
    fx.write("tracked.txt", "base\n");
    fx.commit_all("tracked");
    let old_tip = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    // The user's WIP: one staged, one unstaged, one untracked binary.
    fx.write("staged.txt", "staged by the user\n");
    fx.git(&fx.src, &["add", "staged.txt"]);
    fx.write("tracked.txt", "base\nunstaged user edit\n");
    let binary: Vec<u8> = (0..600u32).map(|i| (i * 37 % 256) as u8).collect();
    std::fs::write(fx.src.join("blob.bin"), &binary).unwrap();
    let wip_before = checkout_listing(&fx.src);
    let status_before = fx.git(&fx.src, &["status", "--porcelain"]);

    bind_carrying_the_wip(&fx, &status_before, &binary);
    let iso = fx.isolation("cw");

    // The agent works and commits everything with `git add -A`, WIP included.
    std::fs::write(iso.join("agent.txt"), "agent work\n").unwrap();
    agent_commit(&fx, &iso, "agent commit", "Agent", "2026-04-05T06:07:08Z");

    the_change_set_holds_only_the_agents_edit(&fx);

    let (code, doc) = promote_branch(&fx, "cw");
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "applied", "{doc}");
    let landed = fx.git(
        &fx.src,
        &["log", "--format=%H", &format!("{old_tip}..HEAD")],
    );
    assert_eq!(landed.lines().count(), 1);
    let files = fx.git(&fx.src, &["show", "--name-only", "--format=", "HEAD"]);
    assert_eq!(files, "agent.txt", "only the agent's change is committed");
    assert_eq!(
        fx.git(&fx.src, &["log", "-1", "--format=%an|%s", "HEAD"]),
        "Agent|agent commit"
    );
    // The user's WIP is back exactly: staged stays staged, bytes identical, untracked untracked.
    assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), status_before);
    let mut after = checkout_listing(&fx.src);
    after.remove("agent.txt");
    let mut expected = wip_before.clone();
    expected.remove(".git/index");
    after.remove(".git/index");
    expected.remove(".git/HEAD");
    after.remove(".git/HEAD");
    assert_eq!(after, expected);
    assert_eq!(
        fx.git(&fx.src, &["stash", "list"]),
        "",
        "no stash left behind"
    );
}

#[test]
fn patch_mode_on_carried_wip_lands_on_top_of_the_wip() {
    let fx = Fixture::new();
    fx.write("README.md", "hello\nuser wip\n");
    fx.write("notes.txt", "untracked user notes\n");
    fx.json(&["bind", "-s", "pw", "--carry-wip"]);
    let iso = fx.isolation("pw");
    std::fs::write(iso.join("README.md"), "hello\nuser wip\nagent line\n").unwrap();
    std::fs::write(iso.join("agent.txt"), "agent\n").unwrap();
    let (code, doc) = fx.json(&["promote", "-s", "pw"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "applied");
    assert_eq!(
        std::fs::read_to_string(fx.src.join("README.md")).unwrap(),
        "hello\nuser wip\nagent line\n"
    );
    assert_eq!(
        std::fs::read_to_string(fx.src.join("notes.txt")).unwrap(),
        "untracked user notes\n"
    );
    assert_eq!(
        std::fs::read_to_string(fx.src.join("agent.txt")).unwrap(),
        "agent\n"
    );
    assert_eq!(
        fx.git(&fx.src, &["log", "--format=%s"]),
        "initial",
        "nothing committed"
    );
}

#[test]
fn a_replay_conflict_restores_everything() {
    let fx = Fixture::new();
    fx.bind("rc");
    let iso = fx.isolation("rc");
    std::fs::write(iso.join("README.md"), "agent version\n").unwrap();
    agent_commit(
        &fx,
        &iso,
        "agent edits README",
        "Agent",
        "2026-05-01T00:00:00Z",
    );
    // Meanwhile the user commits a conflicting change and keeps some WIP and a stash.
    fx.write("README.md", "user version\n");
    let user_tip = fx.commit_all("user edits README");
    fx.write("keep.txt", "stashed by the user\n");
    fx.git(&fx.src, &["stash", "push", "-u", "-q", "-m", "user stash"]);
    let user_stash = fx.git(&fx.src, &["rev-parse", "refs/stash"]);
    fx.write("src/lib.txt", "one\ntwo\nuser wip\n");
    fx.write("untracked.txt", "u\n");
    let before = checkout_listing(&fx.src);

    let (code, doc) = promote_branch(&fx, "rc");
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["outcome"], "conflict");
    assert_eq!(doc["reason"], "replay_failed");
    // The replay was undone: no branch of it is left, and git's advice for a cherry-pick in
    // progress is not passed on.
    assert_eq!(doc["branch"]["retained_branch"], Value::Null, "{doc}");
    let detail = doc["detail"].as_str().unwrap();
    assert!(detail.contains("undone"), "{detail}");
    for advice in ["--continue", "--abort", "--skip", "hint:"] {
        assert!(!detail.contains(advice), "{detail}");
    }
    assert!(doc["branch"]["failed_commit"].is_string());
    assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD"]), user_tip);
    assert!(!fx.src.join(".git/CHERRY_PICK_HEAD").exists());
    assert_eq!(fx.git(&fx.src, &["ls-files", "-u"]), "");
    let mut after = checkout_listing(&fx.src);
    let mut expected = before;
    after.remove(".git/index");
    expected.remove(".git/index");
    assert_eq!(after, expected, "the user's WIP is restored");
    // The user's own stash is neither popped nor dropped.
    assert_eq!(fx.git(&fx.src, &["rev-parse", "refs/stash"]), user_stash);
    assert_eq!(fx.git(&fx.src, &["stash", "list"]).lines().count(), 1);
    assert_eq!(fx.git(&fx.src, &["branch", "--list", "a3s-iso/*"]), "");
    let human = fx
        .cmd()
        .args(["promote", "-s", "rc", "--mode", "branch"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&human.stderr);
    assert!(!stderr.contains("cherry-pick --continue"), "{stderr}");
    assert!(stderr.contains("a3s-iso rebase"), "{stderr}");
}

#[test]
fn a_user_stash_survives_a_successful_branch_promote() {
    let fx = Fixture::new();
    fx.write("stashed.txt", "mine\n");
    fx.git(&fx.src, &["stash", "push", "-u", "-q"]);
    let user_stash = fx.git(&fx.src, &["rev-parse", "refs/stash"]);
    fx.bind("s");
    std::fs::write(fx.isolation("s").join("a.txt"), "a\n").unwrap();
    fx.write("wip.txt", "wip\n");
    let (code, doc) = fx.json(&["promote", "-s", "s", "--mode", "branch"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        fx.git(&fx.src, &["stash", "list", "--format=%H"]),
        user_stash
    );
    assert_eq!(
        std::fs::read_to_string(fx.src.join("wip.txt")).unwrap(),
        "wip\n"
    );
}

#[test]
fn a_detached_source_is_refused_in_branch_mode() {
    let fx = Fixture::new();
    fx.bind("d");
    std::fs::write(fx.isolation("d").join("a.txt"), "a\n").unwrap();
    fx.git(&fx.src, &["checkout", "-q", "--detach"]);
    let before = checkout_listing(&fx.src);
    let (code, doc) = promote_branch(&fx, "d");
    assert_eq!((code, error_code(&doc)), (1, "detached_source"), "{doc}");
    assert!(
        doc["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("patch mode")
    );
    assert_eq!(checkout_listing(&fx.src), before);
}

#[test]
fn branch_mode_plans_without_applying() {
    let fx = Fixture::new();
    fx.bind("plan");
    let iso = fx.isolation("plan");
    std::fs::write(iso.join("p.txt"), "p\n").unwrap();
    agent_commit(&fx, &iso, "planned commit", "Agent", "2026-06-01T00:00:00Z");
    let before = checkout_listing(&fx.src);
    let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let (code, doc) = fx.json(&["promote", "-s", "plan", "--mode", "branch", "--no-apply"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "planned");
    assert_eq!(checkout_listing(&fx.src), before);
    assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD"]), head);
    let artifacts = std::path::PathBuf::from(doc["artifacts"].as_str().unwrap());
    assert!(
        std::fs::read_to_string(artifacts.join("change.patch"))
            .unwrap()
            .contains("p.txt")
    );
}

#[test]
fn a_commit_that_changes_carried_wip_further_is_refused_not_committed() {
    let fx = Fixture::new();
    fx.write("README.md", "hello\nuser wip\n");
    let (code, doc) = fx.json(&["bind", "-s", "mix", "--carry-wip"]);
    assert_eq!(code, 0, "{doc}");
    let iso = fx.isolation("mix");
    std::fs::write(iso.join("README.md"), "hello\nuser wip\nagent on top\n").unwrap();
    agent_commit(
        &fx,
        &iso,
        "agent edits a WIP file",
        "Agent",
        "2026-06-02T00:00:00Z",
    );
    let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let before = checkout_listing(&fx.src);
    let (code, doc) = promote_branch(&fx, "mix");
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["reason"], "replay_failed");
    assert!(
        doc["detail"].as_str().unwrap().contains("README.md"),
        "{doc}"
    );
    assert_eq!(
        fx.git(&fx.src, &["rev-parse", "HEAD"]),
        head,
        "nothing committed"
    );
    assert_eq!(checkout_listing(&fx.src), before);
    // Patch mode lands it on top of the WIP instead.
    let (code, doc) = fx.json(&["promote", "-s", "mix"]);
    assert_eq!(
        (code, doc["outcome"].as_str().unwrap()),
        (0, "applied"),
        "{doc}"
    );
    assert_eq!(
        std::fs::read_to_string(fx.src.join("README.md")).unwrap(),
        "hello\nuser wip\nagent on top\n"
    );
}

/// Carried WIP under a name that is not UTF-8 is filtered out of the replayed commits like any
/// other: it is never committed and comes back byte for byte.
#[test]
fn carried_wip_under_a_non_utf8_name_is_never_committed() {
    use std::os::unix::ffi::OsStrExt;
    let fx = Fixture::new();
    let name = std::ffi::OsStr::from_bytes(b"wip-\xff.txt");
    std::fs::write(fx.src.join(name), "the user's work\n").unwrap();
    let old_tip = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let (code, doc) = fx.json(&["bind", "-s", "nu", "--carry-wip"]);
    assert_eq!(code, 0, "{doc}");
    let iso = fx.isolation("nu");
    std::fs::write(iso.join("agent.txt"), "agent work\n").unwrap();
    agent_commit(&fx, &iso, "agent commit", "Agent", "2026-04-05T06:07:08Z");
    let (code, doc) = promote_branch(&fx, "nu");
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "applied", "{doc}");
    let files = fx.git(
        &fx.src,
        &[
            "log",
            "--name-only",
            "--format=",
            &format!("{old_tip}..HEAD"),
        ],
    );
    assert_eq!(files, "agent.txt", "only the agent's change is committed");
    assert_eq!(
        std::fs::read(fx.src.join(name)).unwrap(),
        b"the user's work\n"
    );
    assert_eq!(fx.git(&fx.src, &["stash", "list"]), "");
}

/// On a SHA-256 repository (whatever format the rest of this run uses): WIP carried with an
/// untracked file stays out of the replayed commits and comes back, and the object ids in the
/// result are SHA-256 ones.
#[test]
fn sha256_carried_wip_with_an_untracked_file_in_branch_mode() {
    let fx = Fixture::with_object_format("sha256");
    assert_eq!(
        fx.git(&fx.src, &["rev-parse", "--show-object-format"]),
        "sha256"
    );
    fx.write("README.md", "hello\nstaged by the user\n");
    fx.git(&fx.src, &["add", "README.md"]);
    fx.write("untracked.txt", "the user's untracked work\n");
    let old_tip = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let (code, doc) = fx.json(&["bind", "-s", "sha", "--carry-wip"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["bound_revision"].as_str().unwrap().len(), 64, "{doc}");
    let iso = fx.isolation("sha");
    std::fs::write(iso.join("agent.txt"), "agent work\n").unwrap();
    agent_commit(&fx, &iso, "agent commit", "Agent", "2026-04-05T06:07:08Z");
    std::fs::write(iso.join("leftover.txt"), "not committed by the agent\n").unwrap();
    let (code, doc) = promote_branch(&fx, "sha");
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "applied", "{doc}");
    let files = fx.git(
        &fx.src,
        &[
            "log",
            "--name-only",
            "--format=",
            &format!("{old_tip}..HEAD"),
        ],
    );
    let mut files: Vec<&str> = files.lines().filter(|l| !l.is_empty()).collect();
    files.sort_unstable();
    assert_eq!(
        files,
        ["agent.txt", "leftover.txt"],
        "only the agent's work is committed"
    );
    assert_eq!(
        std::fs::read(fx.src.join("untracked.txt")).unwrap(),
        b"the user's untracked work\n"
    );
    assert_eq!(
        fx.git(&fx.src, &["diff", "--cached", "--name-only"]),
        "README.md",
        "the user's staged change is staged again"
    );
    assert_eq!(fx.git(&fx.src, &["stash", "list"]), "");
}

/// A merge commit the agent made in its isolation lands in branch mode as one commit of what
/// it brought (as `rebase` replays it), on its first parent: nothing is left out, and nothing
/// of the user's branch moves but the replayed chain.
#[test]
fn a_merge_commit_in_the_isolation_is_replayed_on_its_first_parent() {
    let fx = Fixture::new();
    fx.bind("m");
    let iso = fx.isolation("m");
    let git = |args: &[&str]| fx.git(&iso, args);
    git(&["checkout", "-q", "-b", "side"]);
    std::fs::write(iso.join("side.txt"), "from the side branch\n").unwrap();
    git(&["add", "side.txt"]);
    git(&["commit", "-q", "-m", "side work"]);
    git(&["checkout", "-q", "--detach", "HEAD~1"]);
    std::fs::write(iso.join("main.txt"), "on the main line\n").unwrap();
    git(&["add", "main.txt"]);
    git(&["commit", "-q", "-m", "main-line work"]);
    git(&["merge", "-q", "--no-edit", "-m", "merge the side", "side"]);
    let before = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let (code, doc) = promote_branch(&fx, "m");
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("applied")),
        "{doc}"
    );
    let subjects = fx.git(
        &fx.src,
        &[
            "log",
            "--reverse",
            "--format=%s",
            &format!("{before}..HEAD"),
        ],
    );
    assert_eq!(subjects, "main-line work\nmerge the side", "{doc}");
    for (file, text) in [
        ("side.txt", "from the side branch\n"),
        ("main.txt", "on the main line\n"),
    ] {
        assert_eq!(std::fs::read_to_string(fx.src.join(file)).unwrap(), text);
    }
    assert_eq!(fx.git(&fx.src, &["rev-list", "--merges", "HEAD"]), "");
    assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), "");
}

/// The commit of uncommitted leftovers names the session, its runs and the change set by
/// default; `--message` and `-F FILE` (or `-F -`, standard input) name it instead, and an
/// empty message is refused with nothing applied.
#[test]
fn the_leftovers_commit_says_where_it_came_from_or_what_the_user_wrote() {
    let fx = Fixture::new();
    fx.bind("m");
    let (code, run) = fx.json(&[
        "run",
        "-s",
        "m",
        "--no-sandbox",
        "--",
        "sh",
        "-c",
        "echo one > one.txt",
    ]);
    assert_eq!(code, 0, "{run}");
    let run_id = run["run_id"].as_str().unwrap().to_string();
    let (code, doc) = promote_branch(&fx, "m");
    assert_eq!(code, 0, "{doc}");
    let digest = doc["digest"].as_str().unwrap();
    let message = fx.git(&fx.src, &["log", "-1", "--format=%B"]);
    assert_eq!(
        message.trim_end(),
        format!("a3s-iso: uncommitted changes of session m\n\nRun: {run_id}\nChange set: {digest}")
    );

    // From a file.
    std::fs::write(fx.isolation("m").join("two.txt"), "2\n").unwrap();
    let file = fx.root.join("msg.txt");
    std::fs::write(&file, "Add two\n\nWritten by hand.\n").unwrap();
    let (code, doc) = fx.json(&[
        "promote",
        "-s",
        "m",
        "--mode",
        "branch",
        "-F",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{doc}");
    let message = fx.git(&fx.src, &["log", "-1", "--format=%B"]);
    assert_eq!(message.trim_end(), "Add two\n\nWritten by hand.");

    // An empty message: refused, nothing applied.
    std::fs::write(fx.isolation("m").join("three.txt"), "3\n").unwrap();
    std::fs::write(&file, "\n  \n").unwrap();
    let before = checkout_listing(&fx.src);
    let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let args = ["promote", "-s", "m", "--mode", "branch", "-F"];
    let (code, doc) = fx.json(&[&args[..], &[file.to_str().unwrap()]].concat());
    assert_eq!(code, 5, "{doc}");
    assert_eq!(error_code(&doc), "invalid_input");
    assert_eq!(checkout_listing(&fx.src), before);
    assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD"]), head);

    // From standard input.
    let mut cmd = fx.cmd();
    cmd.args([
        "--json", "promote", "-s", "m", "--mode", "branch", "-F", "-",
    ])
    .stdin(std::process::Stdio::piped())
    .stdout(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"Add three\n")
        .unwrap();
    let (code, doc) = crate::fixture::json_of(child.wait_with_output().unwrap());
    assert_eq!(code, 0, "{doc}");
    assert_eq!(fx.git(&fx.src, &["log", "-1", "--format=%s"]), "Add three");
    // Patch mode has no commit to name.
    let out = fx
        .cmd()
        .args(["promote", "-s", "m", "-F", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Branch mode's first line says what the docs say it does: how many commits were replayed
/// onto which branch, where they are kept, and how many files changed.
#[test]
fn a_branch_promote_says_what_it_replayed_onto_which_branch() {
    let fx = Fixture::new();
    fx.bind("feature");
    let iso = fx.isolation("feature");
    std::fs::write(iso.join("feature.txt"), "feature\n").unwrap();
    agent_commit(
        &fx,
        &iso,
        "Add the feature",
        "Agent <agent@example.com>",
        "2026-01-01T00:00:00Z",
    );
    let (code, stdout, _) =
        crate::fixture::human(&fx, &["promote", "-s", "feature", "--mode", "branch"]);
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(
        stdout.lines().next(),
        Some(
            "applied: replayed 1 commit onto main (retained branch a3s-iso/feature); 1 file changed"
        )
    );
}

/// The user's untracked files (no tracked change beside them) are no WIP to set aside: they
/// stay where they are, the very same files, through a branch promote and through the
/// recovery of one a crash cut short; no stash is made.
#[cfg(feature = "fault-injection")]
#[test]
fn untracked_files_stay_in_place_through_a_branch_promote_and_its_recovery() {
    use std::os::unix::fs::MetadataExt;
    let fx = Fixture::new();
    fx.bind("u");
    let iso = fx.isolation("u");
    std::fs::write(iso.join("README.md"), "agent version\n").unwrap();
    std::fs::write(iso.join("agent.txt"), "agent\n").unwrap();
    fx.write("notes.txt", "the user's notes\n");
    fx.write("drafts/one.txt", "a draft\n");
    let inodes = || {
        ["notes.txt", "drafts/one.txt"].map(|p| std::fs::metadata(fx.src.join(p)).unwrap().ino())
    };
    let before = (
        inodes(),
        checkout_listing(&fx.src),
        fx.git(&fx.src, &["rev-parse", "HEAD"]),
    );
    crate::fixture::promote_killed_at(
        &fx,
        "promote-branch-after-intent",
        &["-s", "u", "--mode", "branch"],
    );
    let recovered = fx.cmd().args(["list"]).output().unwrap();
    assert!(recovered.status.success());
    let after = (
        inodes(),
        checkout_listing(&fx.src),
        fx.git(&fx.src, &["rev-parse", "HEAD"]),
    );
    assert_eq!(after, before, "the recovery left the checkout as it was");
    let (code, doc) = promote_branch(&fx, "u");
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("applied")),
        "{doc}"
    );
    assert_eq!(inodes(), before.0, "the untracked files were never moved");
    assert_eq!(read_text(&fx.src, "notes.txt"), "the user's notes\n");
    assert_eq!(read_text(&fx.src, "drafts/one.txt"), "a draft\n");
    assert_eq!(read_text(&fx.src, "agent.txt"), "agent\n");
    assert_eq!(fx.git(&fx.src, &["stash", "list"]), "", "no stash was made");
    assert_eq!(
        fx.git(&fx.src, &["status", "--porcelain"]),
        "?? drafts/\n?? notes.txt"
    );
}

/// A fast-forward's git (a two-way `read-tree`) would put back a file the user deleted, and
/// write a real directory over the link the user put in a tracked directory's place: both are
/// the user's work in the session's way, so the promote is a conflict that changes nothing.
/// A file sparse checkout keeps out of the tree is absent by design, and lands.
#[test]
fn a_fast_forward_refuses_over_your_deletions_and_links_and_lands_past_sparse_files() {
    for case in ["deleted", "linked dir", "sparse"] {
        let fx = Fixture::new();
        fx.write("kept/one.txt", "one\n");
        fx.write("kept/two.txt", "two\n");
        fx.commit_all("a directory");
        fx.bind("f");
        let iso = fx.isolation("f");
        std::fs::write(iso.join("kept/one.txt"), "the agent's one\n").unwrap();
        match case {
            "deleted" => std::fs::remove_file(fx.src.join("kept/one.txt")).unwrap(),
            "linked dir" => {
                std::fs::rename(fx.src.join("kept"), fx.src.join("elsewhere")).unwrap();
                std::os::unix::fs::symlink("elsewhere", fx.src.join("kept")).unwrap();
            }
            _ => {
                fx.git(
                    &fx.src,
                    &["sparse-checkout", "set", "--no-cone", "/README.md"],
                );
                assert!(!fx.src.join("kept/one.txt").exists());
            }
        }
        let before = crate::fixture::source_state(&fx);
        let (code, doc) = promote_branch(&fx, "f");
        if case == "sparse" {
            assert_eq!(
                (code, doc["outcome"].as_str()),
                (0, Some("applied")),
                "{doc}"
            );
            let landed = fx.git(&fx.src, &["show", "HEAD:kept/one.txt"]);
            assert_eq!(landed, "the agent's one");
            assert!(
                !fx.src.join("kept/one.txt").exists(),
                "still outside the sparse tree"
            );
            continue;
        }
        assert_eq!(
            (code, doc["outcome"].as_str()),
            (3, Some("conflict")),
            "{case}: {doc}"
        );
        assert_eq!(doc["reason"], "patch_does_not_apply", "{case}: {doc}");
        assert_eq!(doc["conflicting_paths"][0], "kept/one.txt", "{case}: {doc}");
        assert_eq!(
            crate::fixture::differences(&crate::fixture::source_state(&fx), &before),
            Vec::<String>::new(),
            "{case}: nothing changed"
        );
        assert!(
            std::fs::symlink_metadata(fx.src.join("kept"))
                .unwrap()
                .file_type()
                .is_symlink()
                || case != "linked dir"
        );
    }
}

/// A git wrapper that ends a promote's two-way `read-tree` as `mode` says: `killed` (a signal
/// ends it before it writes), or `stuck` (the fast-forward's branch update fails as if the
/// branch moved, and the move back is then refused).
fn failing_git(fx: &Fixture, mode: &str) -> std::path::PathBuf {
    let mark = fx.root.join("branch-update-failed");
    let body = format!(
        "case \" $* \" in\n  *' read-tree -m -u '*)\n    [ {mode} = killed ] && kill -KILL $$\n    [ -e '{mark}' ] && {{ echo 'error: refused by the wrapper' >&2; exit 128; }} ;;\n  *' update-ref -m a3s-iso: promote '*)\n    touch '{mark}'; echo 'fatal: cannot lock ref' >&2; exit 1 ;;\nesac",
        mark = mark.display(),
    );
    fx.git_wrapper(&format!("{mode}-git"), &body)
}

/// A fast-forward whose git fails while your checkout is mid-move (killed by a signal, or
/// refused when moving back after the branch moved) fails with `git_failed`, git's words in
/// `error.git` and the next step in the message; the next command finishes or rolls back,
/// and the promote then lands once.
#[test]
fn a_fast_forward_whose_git_fails_midway_says_git_failed_and_the_next_command_finishes() {
    for mode in ["killed", "stuck"] {
        let fx = Fixture::new();
        let old_tip = fx.git(&fx.src, &["rev-parse", "HEAD"]);
        fx.bind("f");
        std::fs::write(fx.isolation("f").join("README.md"), "the agent's\n").unwrap();
        fx.write("notes.txt", "the user's notes\n");
        let (code, doc) = promote_with_git(&fx, "f", failing_git(&fx, mode));
        assert_eq!((code, error_code(&doc)), (1, "git_failed"), "{doc}");
        let git = &doc["error"]["git"];
        assert_eq!(git["args"][0], "read-tree", "{doc}");
        let message = doc["error"]["message"].as_str().unwrap();
        assert!(message.contains("the next a3s-iso command"), "{message}");
        assert_eq!(git["exit_code"].is_null(), mode == "killed", "{doc}");
        let out = fx.cmd().args(["list"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(read_text(&fx.src, "notes.txt"), "the user's notes\n");
        if mode == "killed" {
            // Nothing was written: rolled back, the checkout as before.
            assert!(stderr.contains("rolled back"), "{stderr}");
            assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD"]), old_tip);
            assert_eq!(read_text(&fx.src, "README.md"), "hello\n");
            let (code, doc) = promote_branch(&fx, "f");
            assert_eq!(
                (code, doc["outcome"].as_str()),
                (0, Some("applied")),
                "{doc}"
            );
        } else {
            // The files moved and the branch did not: the next command moves the branch.
            assert!(stderr.contains("completed"), "{stderr}");
            let (code, doc) = promote_branch(&fx, "f");
            assert_eq!(
                (code, doc["outcome"].as_str()),
                (0, Some("idempotent")),
                "{doc}"
            );
        }
        assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD~1"]), old_tip);
        assert_eq!(fx.git(&fx.src, &["show", "HEAD:README.md"]), "the agent's");
        assert_eq!(read_text(&fx.src, "README.md"), "the agent's\n");
        assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), "?? notes.txt");
    }
}

/// A git wrapper that refuses `stash push`, `stash apply` and `reset --hard` twice each, as
/// git does while another git of yours holds the index's lock, and runs everything else;
/// `<root>/refusals/<step>` counts the refusals.
fn lock_held_twice_git(fx: &Fixture) -> std::path::PathBuf {
    let counts = fx.root.join("refusals");
    std::fs::create_dir_all(&counts).unwrap();
    let steps = [
        ("push", "stash push"),
        ("apply", "stash apply"),
        ("reset", "reset -q --hard"),
    ];
    let arms: String = steps
        .iter()
        .map(|(name, args)| {
            format!(
                "  *\" {args} \"*)\n    n=$(cat '{counts}/{name}' 2>/dev/null || echo 0)\n    if [ $n -lt 2 ]; then echo $((n+1)) > '{counts}/{name}'; echo \"fatal: Unable to create '$PWD/.git/index.lock': File exists.\" >&2; exit 128; fi ;;\n",
                counts = counts.display()
            )
        })
        .collect();
    fx.git_wrapper("locked-git", &format!("case \" $* \" in\n{arms}esac"))
}

/// Your own git holding the index's lock for a moment refuses a stash step before it
/// changes anything: the replay's stash and its restore are tried again, so the promote
/// lands, your WIP is back in its files and no stash is left.
#[test]
fn a_replay_waits_out_your_gits_index_lock_and_leaves_no_stash() {
    let fx = Fixture::new();
    two_agent_commits_and_leftovers(&fx);
    fx.write("user.txt", "the user's commit\n");
    fx.commit_all("the user moved HEAD");
    fx.write("README.md", "the user's WIP\n");
    let (counts, git) = (fx.root.join("refusals"), lock_held_twice_git(&fx));
    let (code, doc) = promote_with_git(&fx, "b", git);
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("applied")),
        "{doc}"
    );
    for step in ["push", "apply"] {
        assert_eq!(read_text(&counts, step), "2\n", "{step} was refused twice");
    }
    assert_eq!(read_text(&fx.src, "README.md"), "the user's WIP\n");
    assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), " M README.md");
    assert_eq!(fx.git(&fx.src, &["stash", "list"]), "", "no stash left");
    assert_eq!(read_text(&fx.src, "left.txt"), "uncommitted\n");
}

/// Session `id` with one commit of the agent's own (author Alice, committed by "Agent
/// Committer" at its own date) and an uncommitted leftover; the commit's id.
fn one_commit_of_the_agents_own(fx: &Fixture, id: &str) -> String {
    fx.bind(id);
    let iso = fx.isolation(id);
    std::fs::write(iso.join("one.txt"), "1\n").unwrap();
    fx.git(&iso, &["add", "-A"]);
    let mut commit = Command::new("git");
    commit
        .current_dir(&iso)
        .args(["commit", "-q", "-m", "agent: one"]);
    isolate(&mut commit, &fx.home);
    commit
        .env("GIT_AUTHOR_NAME", "Alice")
        .env("GIT_COMMITTER_NAME", "Agent Committer")
        .env("GIT_COMMITTER_DATE", "2026-05-06T07:08:09Z");
    assert!(commit.status().unwrap().success());
    std::fs::write(iso.join("left.txt"), "left\n").unwrap();
    fx.git(&iso, &["rev-parse", "HEAD"])
}

/// The session's own commits on your branch's tip land as a fast-forward to the commits a
/// cherry-pick of each would make (author and message kept, you the committer): your WIP
/// stays in its very files and nothing is stashed, the retained branch keeps the session's
/// commits as the agent made them, and the report pairs each with the commit that landed.
#[test]
fn agent_commits_on_your_tip_fast_forward_as_picked_and_stash_nothing() {
    let fx = Fixture::new();
    let agents = one_commit_of_the_agents_own(&fx, "b");
    fx.write("README.md", "the user's WIP\n");
    fx.write("notes.txt", "the user's notes\n");
    use std::os::unix::fs::MetadataExt;
    let inode = |rel: &str| std::fs::metadata(fx.src.join(rel)).unwrap().ino();
    let inodes = (inode("README.md"), inode("notes.txt"));
    let old_tip = fx.git(&fx.src, &["rev-parse", "HEAD"]);

    let (code, doc) = promote_branch(&fx, "b");
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("applied")),
        "{doc}"
    );
    assert!(
        fx.git(&fx.src, &["reflog", "-1", "--format=%gs", "main"])
            .ends_with("(fast-forward)"),
        "landed as a fast-forward"
    );
    assert_eq!(
        fx.git(&fx.src, &["for-each-ref", "refs/stash"]),
        "",
        "no stash"
    );
    let moves = fx.git(&fx.src, &["reflog", "--format=%gs", "HEAD"]);
    assert!(
        !moves.contains("reset:"),
        "a stash's reset never ran: {moves}"
    );
    assert_eq!((inode("README.md"), inode("notes.txt")), inodes);
    assert_eq!(read_text(&fx.src, "README.md"), "the user's WIP\n");
    assert_eq!(
        fx.git(&fx.src, &["status", "--porcelain"]),
        " M README.md\n?? notes.txt"
    );
    let landed = fx.git(
        &fx.src,
        &[
            "log",
            "--reverse",
            "--format=%an|%cn|%s",
            &format!("{old_tip}..HEAD"),
        ],
    );
    assert_eq!(
        landed,
        "Alice|Ada Agent|agent: one\nAda Agent|Ada Agent|a3s-iso: uncommitted changes of session b"
    );
    let picked = fx.git(&fx.src, &["rev-parse", "HEAD~1"]);
    assert_eq!(
        doc["branch"]["replayed"][0]["commit"],
        agents.as_str(),
        "{doc}"
    );
    assert_eq!(
        doc["branch"]["replayed"][0]["replayed"],
        picked.as_str(),
        "{doc}"
    );
    let retained = fx.git(&fx.src, &["log", "--format=%H|%cn", "-2", "a3s-iso/b"]);
    assert!(
        retained.ends_with(&format!("{agents}|Agent Committer")),
        "the retained branch keeps the agent's commit: {retained}"
    );
}

/// A git that moved the branch and then died (the OOM killer, say) leaves the fast-forward
/// done: the promote reads the branch back, reports `applied` and journals it, and never moves
/// your checkout back under a branch that holds the session's commit.
#[test]
fn a_fast_forward_whose_branch_git_dies_after_moving_it_is_applied() {
    let fx = Fixture::new();
    fx.bind("f");
    std::fs::write(fx.isolation("f").join("README.md"), "the agent's\n").unwrap();
    fx.write("notes.txt", "the user's notes\n");
    let git = fx.git_wrapper(
        "dying-git",
        "case \" $* \" in *' update-ref -m a3s-iso: promote '*) {real} \"$@\"; kill -KILL $$ ;; esac",
    );
    let (code, doc) = promote_with_git(&fx, "f", git);
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("applied")),
        "{doc}"
    );
    assert_eq!(fx.git(&fx.src, &["show", "HEAD:README.md"]), "the agent's");
    assert_eq!(read_text(&fx.src, "README.md"), "the agent's\n");
    assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), "?? notes.txt");
    let (code, doc) = promote_branch(&fx, "f");
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("idempotent")),
        "{doc}"
    );
}

/// Where a cherry-pick would do more than copy the session's commit (your `commit.cleanup`,
/// a commit hook of yours, an author line `commit-tree` would tidy), the commit is picked as
/// before: the hook runs, the author line lands as the agent wrote it.
#[test]
fn commits_a_pick_would_change_are_picked_as_before() {
    for case in ["cleanup", "hook", "author"] {
        let fx = Fixture::new();
        let agents = one_commit_of_the_agents_own(&fx, "b");
        let iso = fx.isolation("b");
        match case {
            "cleanup" => drop(fx.git(&fx.src, &["config", "commit.cleanup", "strip"])),
            "hook" => {
                let hook = fx.src.join(".git/hooks/post-commit");
                std::fs::write(
                    &hook,
                    format!(
                        "#!/bin/sh\necho ran >> {}\n",
                        fx.src.join("hook-ran").display()
                    ),
                )
                .unwrap();
                std::fs::set_permissions(
                    &hook,
                    std::os::unix::fs::PermissionsExt::from_mode(0o755),
                )
                .unwrap();
            }
            _ => {
                let raw = fx.git(&iso, &["cat-file", "commit", &agents]);
                let odd = raw.replacen("author Alice <", "author Alice, <", 1) + "\n";
                let mut write = Command::new("git");
                write
                    .current_dir(&iso)
                    .args(["hash-object", "-t", "commit", "-w", "--stdin"]);
                isolate(&mut write, &fx.home);
                let mut child = (write.stdin(std::process::Stdio::piped()))
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                std::io::Write::write_all(&mut child.stdin.take().unwrap(), odd.as_bytes())
                    .unwrap();
                let commit = String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap();
                fx.git(&iso, &["update-ref", "HEAD", commit.trim()]);
            }
        }
        let head = fx.git(&iso, &["rev-parse", "HEAD"]);
        let (code, doc) = promote_branch(&fx, "b");
        assert_eq!(
            (code, doc["outcome"].as_str()),
            (0, Some("applied")),
            "{case}: {doc}"
        );
        let moves = fx.git(&fx.src, &["reflog", "--format=%gs", "main"]);
        assert!(moves.contains("cherry-pick: agent: one"), "{case}: {moves}");
        let author = |dir: &Path, commit: &str| {
            let raw = fx.git(dir, &["cat-file", "commit", commit]);
            raw.lines()
                .find(|l| l.starts_with("author "))
                .unwrap()
                .to_string()
        };
        assert_eq!(author(&fx.src, "HEAD~1"), author(&iso, &head), "{case}");
        if case == "hook" {
            assert!(fx.src.join("hook-ran").exists(), "the hook ran");
        }
    }
}

/// The branch moved under the fast-forward's `update-ref` by a commit of yours: on top of the
/// session's commit (its git moved the branch, then failed), the promote is `applied`; one that
/// took the session's staged changes along (you committed between the move of the files and
/// of the branch) leaves your checkout as it is, with no revert of them staged under it.
#[test]
fn a_commit_of_yours_during_the_branch_move_never_gets_a_revert_staged_under_it() {
    for case in ["on top", "took them along", "took one along"] {
        let fx = Fixture::new();
        fx.bind("f");
        std::fs::write(fx.isolation("f").join("README.md"), "the agent's\n").unwrap();
        std::fs::write(fx.isolation("f").join("src/lib.txt"), "the agent's lib\n").unwrap();
        let commit = "{real} -c user.name=u -c user.email=u@x commit -q --allow-empty -m mine";
        let body = match case {
            "on top" => format!("{{real}} \"$@\"; {commit}; exit 1"),
            "took them along" => format!("{commit}; {{real}} \"$@\"; exit $?"),
            _ => format!("{commit} -- README.md; {{real}} \"$@\"; exit $?"),
        };
        let git = fx.git_wrapper(
            "racing-git",
            &format!("case \" $* \" in *' update-ref -m a3s-iso: promote '*) {body} ;; esac"),
        );
        let (code, doc) = promote_with_git(&fx, "f", git);
        let expected = match case {
            "on top" => (0, Some("applied")),
            _ => (3, Some("conflict")),
        };
        assert_eq!((code, doc["outcome"].as_str()), expected, "{case}: {doc}");
        let last = fx.git(&fx.src, &["log", "-1", "--format=%s"]);
        assert_eq!(last, "mine", "{case}");
        assert_eq!(fx.git(&fx.src, &["show", "HEAD:README.md"]), "the agent's");
        assert_eq!(read_text(&fx.src, "README.md"), "the agent's\n", "{case}");
        assert_eq!(
            read_text(&fx.src, "src/lib.txt"),
            "the agent's lib\n",
            "{case}"
        );
        // Nothing of your commit is reverted; what it did not take stays staged.
        let left = match case {
            "took one along" => "M  src/lib.txt",
            _ => "",
        };
        let status = fx.git(&fx.src, &["status", "--porcelain"]);
        assert_eq!(status, left, "{case}: no revert staged");
    }
}

/// A session that turns a directory into a file lands as a fast-forward when the directory
/// holds only the files it deletes; a file of yours left in it (untracked, or ignored, which
/// git would write over) makes the promote a conflict that changes nothing.
#[test]
fn a_directory_the_session_turns_into_a_file_lands_unless_yours_are_in_it() {
    for case in ["clean", "untracked", "ignored"] {
        let fx = Fixture::new();
        fx.write("sub/a.txt", "a\n");
        fx.write("sub/deep/b.txt", "b\n");
        fx.write(".gitignore", "*.log\n");
        fx.commit_all("a directory");
        fx.bind("d");
        let iso = fx.isolation("d");
        std::fs::remove_dir_all(iso.join("sub")).unwrap();
        std::fs::write(iso.join("sub"), "now a file\n").unwrap();
        match case {
            "untracked" => fx.write("sub/deep/mine.txt", "mine\n"),
            "ignored" => fx.write("sub/build.log", "a log of mine\n"),
            _ => {}
        }
        let before = crate::fixture::source_state(&fx);
        let (code, doc) = promote_branch(&fx, "d");
        if case == "clean" {
            assert_eq!(
                (code, doc["outcome"].as_str()),
                (0, Some("applied")),
                "{doc}"
            );
            assert_eq!(read_text(&fx.src, "sub"), "now a file\n");
            assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), "");
            continue;
        }
        assert_eq!(
            (code, doc["reason"].as_str()),
            (3, Some("patch_does_not_apply")),
            "{case}: {doc}"
        );
        assert_eq!(
            doc["conflicting_paths"],
            serde_json::json!(["sub"]),
            "{case}: {doc}"
        );
        assert_eq!(
            crate::fixture::source_state(&fx),
            before,
            "{case}: nothing changed"
        );
    }
}

/// A replay whose pick fails is undone by `reset --hard`, which your own git's index lock
/// refuses for a moment: it is tried again, so the branch is back at its tip, your WIP back
/// in its files, and no stash or pick is left.
#[test]
fn an_undone_replay_waits_out_your_gits_index_lock() {
    let fx = Fixture::new();
    let user_tip = a_pick_that_conflicts(&fx);
    let before = checkout_listing(&fx.src);
    let (counts, git) = (fx.root.join("refusals"), lock_held_twice_git(&fx));
    let (code, doc) = promote_with_git(&fx, "rc", git);
    assert_eq!(
        (code, doc["reason"].as_str()),
        (3, Some("replay_failed")),
        "{doc}"
    );
    for step in ["push", "apply", "reset"] {
        assert_eq!(read_text(&counts, step), "2\n", "{step} was refused twice");
    }
    assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD"]), user_tip);
    assert!(!fx.src.join(".git/CHERRY_PICK_HEAD").exists());
    let mut after = checkout_listing(&fx.src);
    let mut expected = before;
    after.remove(".git/index");
    expected.remove(".git/index");
    assert_eq!(after, expected, "the user's WIP is restored");
    assert_eq!(fx.git(&fx.src, &["stash", "list"]), "", "no stash left");
}

/// A replay whose undo your git's index lock refuses past the retries fails with
/// `git_failed`, saying where your WIP is meanwhile; the next command finishes the undo and
/// puts it back, leaving no stash.
#[test]
fn a_replay_whose_undo_stays_refused_says_where_your_wip_is() {
    let fx = Fixture::new();
    let user_tip = a_pick_that_conflicts(&fx);
    let git = fx.git_wrapper(
        "stuck-git",
        "case \" $* \" in *' reset -q --hard '*) echo \"fatal: Unable to create '$PWD/.git/index.lock': File exists.\" >&2; exit 128 ;; esac",
    );
    let (code, doc) = promote_with_git(&fx, "rc", git);
    assert_eq!((code, error_code(&doc)), (1, "git_failed"), "{doc}");
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(message.contains("kept in stash"), "{message}");
    let out = fx.cmd().args(["list"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("rolled back"), "{stderr}");
    assert_eq!(fx.git(&fx.src, &["rev-parse", "HEAD"]), user_tip);
    assert_eq!(read_text(&fx.src, "src/lib.txt"), "one\ntwo\nuser wip\n");
    assert_eq!(fx.git(&fx.src, &["stash", "list"]), "", "no stash left");
}
