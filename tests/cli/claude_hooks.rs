//! Claude Code's worktree hooks (`hook claude worktree-create` / `worktree-remove`) fed the
//! payload shapes Claude Code versions send, and `init claude`'s merge into
//! `.claude/settings.local.json`.

use std::io::Write;

use base64::Engine;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::{Value, json};

use crate::fixture::{BIN, Fixture, error_code};

/// `WorktreeCreate` as current Claude Code sends it: the proposed name in `name`.
const CREATE_NAME: &str = r#"{
  "session_id": "9f1c2d3e-0000-4000-8000-000000000001",
  "transcript_path": "/home/ada/.claude/projects/src/9f1c2d3e.jsonl",
  "cwd": "@SRC@",
  "hook_event_name": "WorktreeCreate",
  "name": "agent-a1b2c3"
}"#;

/// `WorktreeCreate` in the documented shape: `worktree_name`, a base path and a source ref,
/// and a field this version does not know.
const CREATE_DOCUMENTED: &str = r#"{
  "session_id": "9f1c2d3e-0000-4000-8000-000000000002",
  "transcript_path": "/home/ada/.claude/projects/src/9f1c2d3e.jsonl",
  "cwd": "@SRC@",
  "hook_event_name": "WorktreeCreate",
  "worktree_name": "feat/auth flow",
  "base_path": "@SRC@/.claude/worktrees",
  "source_ref": "HEAD",
  "isolation": {"type": "worktree"}
}"#;

/// `WorktreeCreate` in an older shape: only the proposed path.
const CREATE_PATH: &str = r#"{
  "session_id": "9f1c2d3e-0000-4000-8000-000000000003",
  "cwd": "@SRC@",
  "hook_event_name": "WorktreeCreate",
  "worktree_path": "@SRC@/.claude/worktrees/bugfix-9"
}"#;

/// `WorktreeRemove`: the path the create hook printed.
const REMOVE: &str = r#"{
  "session_id": "9f1c2d3e-0000-4000-8000-000000000001",
  "transcript_path": "/home/ada/.claude/projects/src/9f1c2d3e.jsonl",
  "cwd": "@SRC@",
  "hook_event_name": "WorktreeRemove",
  "worktree_path": "@PATH@"
}"#;

/// A source that ignores `.env`, names it in `.worktreeinclude`, and has one.
fn source() -> Fixture {
    let fx = Fixture::new();
    fx.write(".gitignore", ".env\n.claude/settings.local.json\n");
    fx.write(".worktreeinclude", ".env\n");
    fx.commit_all("worktree files");
    fx.write(".env", "TOKEN=1\n");
    fx
}

fn payload(fx: &Fixture, template: &str, path: &Path) -> String {
    template
        .replace("@SRC@", fx.src.to_str().unwrap())
        .replace("@PATH@", path.to_str().unwrap())
}

/// Runs `a3s-iso hook claude EVENT` in `dir` with `stdin`.
fn hook(fx: &Fixture, dir: &Path, event: &str, stdin: &str) -> Output {
    let mut child = fx
        .cmd_in(dir)
        .args(["hook", "claude", event])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// The path a successful create printed: stdout is that line and nothing else.
fn created(out: &Output) -> PathBuf {
    let stdout = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let path = stdout.strip_suffix('\n').expect("one line");
    assert!(!path.contains('\n'), "{stdout:?}");
    let path = PathBuf::from(path);
    assert!(path.is_absolute() && path.is_dir(), "{path:?}");
    path
}

fn session(fx: &Fixture, id: &str) -> Value {
    let (code, list) = fx.json(&["list", "--all"]);
    assert_eq!(code, 0, "{list}");
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no session {id} in {list}"))
}

#[test]
fn claude_worktree_create_prints_the_isolation_and_binds_a_session() {
    let fx = source();
    let shapes = [
        (CREATE_NAME, "agent-a1b2c3"),
        (CREATE_DOCUMENTED, "feat-auth-flow"),
        (CREATE_PATH, "bugfix-9"),
    ];
    for (template, id) in shapes {
        let out = hook(
            &fx,
            &fx.src,
            "worktree-create",
            &payload(&fx, template, &fx.src),
        );
        let path = created(&out);
        assert_eq!(path, fx.isolation(id));
        let listed = session(&fx, id);
        assert_eq!(listed["state"], "bound", "{listed}");
        assert_eq!(listed["worktree"], path.to_str().unwrap(), "{listed}");
        // The source's .worktreeinclude applies.
        assert_eq!(
            std::fs::read_to_string(path.join(".env")).unwrap(),
            "TOKEN=1\n"
        );
        assert_eq!(fx.git(&path, &["status", "--porcelain"]), "");
    }
    // Run from elsewhere, the payload's cwd says which repository.
    let elsewhere = fx.root.join("home");
    let again = hook(
        &fx,
        &elsewhere,
        "worktree-create",
        &payload(&fx, CREATE_NAME, &fx.src),
    );
    let path = created(&again);
    assert!(path.starts_with(fx.root.join("work")), "{path:?}");
}

#[test]
fn claude_worktree_create_refuses_a_payload_it_cannot_use() {
    let fx = source();
    for (stdin, why) in [
        ("not json", "not JSON"),
        ("[1, 2]", "not a JSON object"),
        (
            r#"{"hook_event_name": "WorktreeRemove", "name": "x"}"#,
            "WorktreeRemove",
        ),
        (
            r#"{"hook_event_name": "WorktreeCreate", "name": 7}"#,
            "not a string",
        ),
    ] {
        let out = hook(&fx, &fx.src, "worktree-create", stdin);
        assert_eq!(out.status.code(), Some(5), "{stdin}");
        assert!(out.stdout.is_empty(), "{stdin}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(why), "{stdin}: {stderr}");
    }
    let (code, list) = fx.json(&["list"]);
    assert_eq!(code, 0, "{list}");
    assert_eq!(list["sessions"], json!([]), "{list}");
}

/// The session belongs to the Claude Code process the hook runs under (through its shell),
/// not to the shell.
#[test]
fn claude_worktree_create_makes_claude_code_the_owner() {
    let fx = source();
    let bin = fx.root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let claude = bin.join("claude");
    let pid_file = fx.root.join("claude.pid");
    std::fs::write(
        &claude,
        format!(
            "#!/bin/sh\necho $$ > '{}'\nsh -c \"'{}' hook claude worktree-create; true\"\n",
            pid_file.display(),
            BIN
        ),
    )
    .unwrap();
    std::fs::set_permissions(&claude, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut child = std::process::Command::new(&claude);
    crate::fixture::isolate(&mut child, &fx.home);
    let mut child = child
        .current_dir(&fx.src)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = payload(&fx, CREATE_NAME, &fx.src);
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    created(&out);
    let pid: u64 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let listed = session(&fx, "agent-a1b2c3");
    assert_eq!(listed["owner"]["pid"], pid, "{listed}");
}

#[test]
fn claude_worktree_remove_captures_the_work_and_discards_the_isolation() {
    let fx = source();
    let path = created(&hook(
        &fx,
        &fx.src,
        "worktree-create",
        &payload(&fx, CREATE_NAME, &fx.src),
    ));
    std::fs::write(path.join("feature.txt"), "the agent's work\n").unwrap();
    let out = hook(
        &fx,
        &fx.src,
        "worktree-remove",
        &payload(&fx, REMOVE, &path),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(out.stdout.is_empty(), "{stderr}");
    assert!(!path.exists(), "{stderr}");
    // The work is captured: a run document holds it, and show lists the run.
    let (code, show) = fx.json(&["show", "-s", "agent-a1b2c3"]);
    assert_eq!(code, 0, "{show}");
    assert_eq!(show["state"], "discarded", "{show}");
    let runs = show["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{show}");
    let run_id = runs[0]["run_id"].as_str().unwrap();
    let doc = fx
        .src
        .join(".git/a3s-iso/runs/agent-a1b2c3")
        .join(format!("{run_id}.json"));
    let doc: Value = serde_json::from_slice(&std::fs::read(&doc).unwrap()).unwrap();
    assert_eq!(doc["identity"]["run_id"], run_id, "{doc}");
    let patch = base64::engine::general_purpose::STANDARD
        .decode(doc["patch_base64"].as_str().unwrap())
        .unwrap();
    let patch = String::from_utf8(patch).unwrap();
    assert!(
        patch.contains("+++ b/feature.txt") && patch.contains("+the agent's work"),
        "{patch}"
    );
    assert!(stderr.contains(run_id), "{stderr}");

    // A path no session has: left alone, exit 0, a note on stderr.
    let unknown = fx.root.join("work/not-an-isolation");
    std::fs::create_dir_all(&unknown).unwrap();
    let out = hook(
        &fx,
        &fx.src,
        "worktree-remove",
        &payload(&fx, REMOVE, &unknown),
    );
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session"));
    assert!(unknown.is_dir());
    // No path at all: the payload is refused.
    let out = hook(
        &fx,
        &fx.src,
        "worktree-remove",
        r#"{"hook_event_name":"WorktreeRemove"}"#,
    );
    assert_eq!(out.status.code(), Some(5));
}

/// Settings with other keys and hooks of their own, one of them a `WorktreeCreate` hook.
const SETTINGS: &str = r#"{
  "permissions": {"allow": ["Bash(npm test)"], "deny": []},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}
    ],
    "WorktreeCreate": [
      {"hooks": [{"type": "command", "command": "echo other >&2"}]}
    ]
  },
  "env": {"NODE_ENV": "test"},
  "model": "sonnet"
}
"#;

fn settings_path(fx: &Fixture) -> PathBuf {
    fx.src.join(".claude/settings.local.json")
}

fn read_settings(fx: &Fixture) -> Value {
    serde_json::from_slice(&std::fs::read(settings_path(fx)).unwrap()).unwrap()
}

fn ours(event: &str) -> Value {
    json!({"hooks": [{
        "type": "command",
        "command": format!("a3s-iso hook claude {event}"),
        "timeout": 600
    }]})
}

#[test]
fn claude_init_merges_the_hooks_and_keeps_everything_else() {
    let fx = source();
    std::fs::create_dir_all(fx.src.join(".claude")).unwrap();
    std::fs::write(settings_path(&fx), SETTINGS).unwrap();
    let before: Value = serde_json::from_str(SETTINGS).unwrap();
    let (code, doc) = fx.json(&["init", "claude"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        (&doc["changed"], &doc["created"]),
        (&json!(true), &json!(false))
    );
    assert_eq!(doc["hooks"][0]["other_hooks"], 1, "{doc}");
    let after = read_settings(&fx);
    let mut expected = before.clone();
    expected["hooks"]["WorktreeCreate"]
        .as_array_mut()
        .unwrap()
        .push(ours("worktree-create"));
    expected["hooks"]["WorktreeRemove"] = json!([ours("worktree-remove")]);
    assert_eq!(after, expected);
    // The keys keep their order.
    let text = std::fs::read_to_string(settings_path(&fx)).unwrap();
    let at = |key: &str| text.find(&format!("\"{key}\"")).unwrap();
    assert!(at("permissions") < at("hooks") && at("hooks") < at("env") && at("env") < at("model"));
    // Twice changes nothing, not a byte.
    let bytes = std::fs::read(settings_path(&fx)).unwrap();
    let (code, doc) = fx.json(&["init", "claude"]);
    assert_eq!((code, &doc["changed"]), (0, &json!(false)), "{doc}");
    assert_eq!(std::fs::read(settings_path(&fx)).unwrap(), bytes);
}

#[test]
fn claude_init_creates_the_settings_and_refuses_what_it_cannot_read() {
    let fx = source();
    let (code, doc) = fx.json(&["init", "claude"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        (&doc["changed"], &doc["created"]),
        (&json!(true), &json!(true))
    );
    assert_eq!(doc["warnings"], json!([]), "{doc}");
    assert_eq!(
        read_settings(&fx),
        json!({"hooks": {
            "WorktreeCreate": [ours("worktree-create")],
            "WorktreeRemove": [ours("worktree-remove")]
        }})
    );
    for broken in [
        "{\"hooks\": ",
        "[]",
        "{\"hooks\": []}",
        "{\"hooks\": {\"WorktreeRemove\": {}}}",
    ] {
        std::fs::write(settings_path(&fx), broken).unwrap();
        let (code, doc) = fx.json(&["init", "claude"]);
        assert_eq!(
            (code, error_code(&doc)),
            (5, "invalid_input"),
            "{broken}: {doc}"
        );
        assert_eq!(std::fs::read_to_string(settings_path(&fx)).unwrap(), broken);
    }
}

/// The repository's configuration applies to the hook as to a `bind` without a terminal: an
/// untrusted file is refused with nothing bound; once trusted, its setup runs in the new
/// isolation before the path is printed.
#[test]
fn claude_worktree_create_applies_the_trusted_configuration() {
    if !crate::fixture::sandbox_available() {
        eprintln!(
            "skipping claude_worktree_create_applies_the_trusted_configuration: the sandbox is unavailable on this machine (setup runs in it)"
        );
        return;
    }
    let fx = source();
    fx.write(
        ".a3s-iso.toml",
        "setup = [\"echo ready > SETUP_DONE\"]\ncopy_ignored = [\".env\"]\n",
    );
    fx.write(
        ".gitignore",
        ".env\n.claude/settings.local.json\nSETUP_DONE\n",
    );
    fx.commit_all("configuration");
    let stdin = payload(&fx, CREATE_NAME, &fx.src);
    let out = hook(&fx, &fx.src, "worktree-create", &stdin);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("config trust"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!fx.isolation("agent-a1b2c3").exists(), "nothing bound");
    let (code, doc) = fx.json(&["config", "trust"]);
    assert_eq!(code, 0, "{doc}");
    let out = hook(&fx, &fx.src, "worktree-create", &stdin);
    let path = created(&out);
    assert_eq!(std::fs::read(path.join("SETUP_DONE")).unwrap(), b"ready\n");
    assert_eq!(std::fs::read(path.join(".env")).unwrap(), b"TOKEN=1\n");
}

/// What a refused hook call must leave as it was: the session's record, its isolation tree
/// file by file, its refs and the source's worktree registrations.
fn session_bytes(fx: &Fixture, src: &Path, id: &str, tree: &Path) -> Vec<String> {
    let record = src.join(".git/a3s-iso/sessions").join(format!("{id}.json"));
    let registration = fx
        .git(src, &["worktree", "list", "--porcelain"])
        .split("\n\n")
        .find(|entry| entry.starts_with(&format!("worktree {}\n", tree.display())))
        .map(str::to_string);
    vec![
        String::from_utf8(std::fs::read(&record).unwrap()).unwrap(),
        format!("{:?}", crate::fixture::listing(tree)),
        fx.git(
            src,
            &[
                "for-each-ref",
                &format!("refs/a3s-iso/sessions/{id}/"),
                &format!("refs/a3s-iso/runs/{id}/"),
            ],
        ),
        format!("{registration:?}"),
    ]
}

/// A session the user bound (not a hook), holding work of theirs.
fn users_session(fx: &Fixture, args: &[&str]) -> PathBuf {
    let mut all = vec!["bind"];
    all.extend_from_slice(args);
    let (code, doc) = fx.json(&all);
    assert_eq!(code, 0, "{doc}");
    let tree = crate::fixture::worktree_of(&doc);
    std::fs::write(tree.join("mine.txt"), "the user's own work\n").unwrap();
    tree
}

/// A stand-in for Claude Code: a process named `claude` that runs the create hook through a
/// shell, as Claude Code does, with `stdin` as its payload. With `stay`, it lives on (as a
/// Claude Code still running) until the test kills it. Returns the process and the path the
/// hook printed.
fn fake_claude(fx: &Fixture, stdin: &str, stay: bool) -> (std::process::Child, PathBuf) {
    let dir = tempfile::tempdir_in(&fx.root).unwrap().keep();
    let (input, output, done) = (dir.join("in"), dir.join("out"), dir.join("done"));
    std::fs::write(&input, stdin).unwrap();
    let claude = dir.join("claude");
    let tail = if stay { "exec sleep 300\n" } else { "" };
    std::fs::write(
        &claude,
        format!(
            "#!/bin/sh\nsh -c \"'{BIN}' hook claude worktree-create < '{}' > '{}'; true\"\necho > '{}'\n{tail}",
            input.display(),
            output.display(),
            done.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&claude, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut cmd = std::process::Command::new(&claude);
    crate::fixture::isolate(&mut cmd, &fx.home);
    let child = cmd
        .current_dir(&fx.src)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    crate::fixture::wait_for(&done, std::time::Duration::from_secs(60));
    let printed = std::fs::read_to_string(&output).unwrap();
    let path = PathBuf::from(printed.trim_end_matches('\n'));
    assert!(path.is_dir(), "{printed:?}");
    (child, path)
}

/// The proposed name of a session the user bound (ownerless, or owned by a process that has
/// exited, or discarded) is never handed to Claude Code: the hook binds a new id beside it,
/// and the user's session, its tree and its records stay as they were, byte for byte. The
/// hook's own session, proposed again by the same Claude Code, is the same isolation.
#[test]
fn claude_worktree_create_never_adopts_a_session_it_did_not_create() {
    let fx = source();
    // Reclaiming as a bind starts is off: the user's session whose owner exited is a row this
    // test keeps around, to show the hook leaves it byte for byte (`sweep_auto` covers the
    // reclaim).
    let config = fx.home.join(".config/a3s-iso");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "[sweep]\nauto = false\n").unwrap();
    let ownerless = users_session(&fx, &["-s", "agent-a1b2c3", "--owner", "none"]);
    let mut owner = crate::fixture::sleeper();
    let pid = owner.id().to_string();
    let orphaned = users_session(&fx, &["-s", "feat-auth-flow", "--owner-pid", &pid]);
    owner.kill().unwrap();
    owner.wait().unwrap();
    let discarded = users_session(&fx, &["-s", "bugfix-9", "--owner", "none"]);
    let (code, doc) = fx.json(&["discard", "-s", "bugfix-9"]);
    assert_eq!(code, 0, "{doc}");
    let users = [
        ("agent-a1b2c3", &ownerless, CREATE_NAME),
        ("feat-auth-flow", &orphaned, CREATE_DOCUMENTED),
    ];
    let before: Vec<_> = users
        .iter()
        .map(|(id, tree, _)| session_bytes(&fx, &fx.src, id, tree))
        .collect();
    let discarded_record = fx.src.join(".git/a3s-iso/sessions/bugfix-9.json");
    let discarded_before = std::fs::read(&discarded_record).unwrap();
    for (id, _, template) in users {
        let out = hook(
            &fx,
            &fx.src,
            "worktree-create",
            &payload(&fx, template, &fx.src),
        );
        assert_eq!(created(&out), fx.isolation(&format!("{id}-2")), "{id}");
    }
    let out = hook(
        &fx,
        &fx.src,
        "worktree-create",
        &payload(&fx, CREATE_PATH, &fx.src),
    );
    assert_eq!(created(&out), fx.isolation("bugfix-9-2"));
    let after: Vec<_> = users
        .iter()
        .map(|(id, tree, _)| session_bytes(&fx, &fx.src, id, tree))
        .collect();
    assert_eq!(before, after);
    assert_eq!(std::fs::read(&discarded_record).unwrap(), discarded_before);
    assert!(!discarded.exists());
    assert_eq!(
        std::fs::read_to_string(ownerless.join("mine.txt")).unwrap(),
        "the user's own work\n"
    );
    // The hook's own session, proposed again by the same process: the same isolation.
    let again = hook(
        &fx,
        &fx.src,
        "worktree-create",
        &payload(&fx, CREATE_NAME, &fx.src),
    );
    assert_eq!(created(&again), fx.isolation("agent-a1b2c3-2"));
    // Another Claude Code proposing the name the first one's session holds gets a new id.
    let (mut other, path) = fake_claude(&fx, &payload(&fx, CREATE_NAME, &fx.src), false);
    other.wait().unwrap();
    assert_eq!(path, fx.isolation("agent-a1b2c3-3"));
}

/// `worktree-remove` of the isolation of a session the user bound is refused
/// (`session_not_granted`): nothing is captured or removed, byte for byte.
#[test]
fn claude_worktree_remove_refuses_a_session_no_hook_created() {
    let fx = source();
    let tree = users_session(&fx, &["-s", "mine", "--owner", "none"]);
    let before = session_bytes(&fx, &fx.src, "mine", &tree);
    let out = hook(
        &fx,
        &fx.src,
        "worktree-remove",
        &payload(&fx, REMOVE, &tree),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error[session_not_granted]"), "{stderr}");
    assert!(stderr.contains("mine"), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(session_bytes(&fx, &fx.src, "mine", &tree), before);
    assert_eq!(session(&fx, "mine")["state"], "bound");
    let runs = fx.src.join(".git/a3s-iso/runs/mine");
    assert!(!runs.exists(), "nothing was captured");
}

/// `worktree-remove` acts only in the repository its `cwd` names: another repository's
/// isolation (a hook's own, even) is refused with nothing removed; from its own repository it
/// is removed. While another Claude Code that created a session still runs, its isolation is
/// refused too; once that Claude Code has exited, a later one removes it (work captured).
#[test]
fn claude_worktree_remove_acts_only_in_the_repository_of_its_cwd() {
    let fx = source();
    let other = fx.other_repository("other", "OTHER.md");
    let create = CREATE_NAME.replace("@SRC@", other.to_str().unwrap());
    let tree = created(&hook(&fx, &other, "worktree-create", &create));
    assert_eq!(tree, fx.root.join("work/.other.a3s-isolate-agent-a1b2c3"));
    std::fs::write(tree.join("work.txt"), "work in the other repository\n").unwrap();
    let before = session_bytes(&fx, &other, "agent-a1b2c3", &tree);
    let out = hook(
        &fx,
        &fx.src,
        "worktree-remove",
        &payload(&fx, REMOVE, &tree),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error[session_not_granted]"), "{stderr}");
    assert_eq!(session_bytes(&fx, &other, "agent-a1b2c3", &tree), before);
    // From its own repository, the same call removes it.
    let remove = REMOVE
        .replace("@SRC@", other.to_str().unwrap())
        .replace("@PATH@", tree.to_str().unwrap());
    let out = hook(&fx, &fx.src, "worktree-remove", &remove);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!tree.exists());

    // A live Claude Code's isolation is not another's to remove; once it exited, it is.
    let (mut live, path) = fake_claude(&fx, &payload(&fx, CREATE_NAME, &fx.src), true);
    std::fs::write(path.join("feature.txt"), "the first agent's work\n").unwrap();
    let before = session_bytes(&fx, &fx.src, "agent-a1b2c3", &path);
    let out = hook(
        &fx,
        &fx.src,
        "worktree-remove",
        &payload(&fx, REMOVE, &path),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error[session_not_granted]"), "{stderr}");
    assert_eq!(session_bytes(&fx, &fx.src, "agent-a1b2c3", &path), before);
    live.kill().unwrap();
    live.wait().unwrap();
    let out = hook(
        &fx,
        &fx.src,
        "worktree-remove",
        &payload(&fx, REMOVE, &path),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!path.exists());
    let (code, show) = fx.json(&["show", "-s", "agent-a1b2c3"]);
    assert_eq!(code, 0, "{show}");
    assert_eq!(show["runs"].as_array().unwrap().len(), 1, "{show}");
}

/// A hook's session that you bring back with `bind --resume` is yours from then on: the hooks
/// neither remove its new isolation nor hand it to Claude Code again.
#[test]
fn claude_a_resumed_hook_session_is_the_users() {
    let fx = source();
    let path = created(&hook(
        &fx,
        &fx.src,
        "worktree-create",
        &payload(&fx, CREATE_NAME, &fx.src),
    ));
    std::fs::write(path.join("feature.txt"), "the agent's work\n").unwrap();
    let out = hook(
        &fx,
        &fx.src,
        "worktree-remove",
        &payload(&fx, REMOVE, &path),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, doc) = fx.json(&["bind", "-s", "agent-a1b2c3", "--resume", "--owner", "none"]);
    assert_eq!(code, 0, "{doc}");
    let resumed = crate::fixture::worktree_of(&doc);
    assert_eq!(
        std::fs::read_to_string(resumed.join("feature.txt")).unwrap(),
        "the agent's work\n"
    );
    let before = session_bytes(&fx, &fx.src, "agent-a1b2c3", &resumed);
    let out = hook(
        &fx,
        &fx.src,
        "worktree-remove",
        &payload(&fx, REMOVE, &resumed),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error[session_not_granted]"), "{stderr}");
    let again = hook(
        &fx,
        &fx.src,
        "worktree-create",
        &payload(&fx, CREATE_NAME, &fx.src),
    );
    assert_eq!(created(&again), fx.isolation("agent-a1b2c3-2"));
    assert_eq!(
        session_bytes(&fx, &fx.src, "agent-a1b2c3", &resumed),
        before
    );
}

/// Headless Claude Code (`claude -w NAME -p …`) runs the create hook and exits without the
/// remove hook: the next create hook (of another Claude Code) reclaims the session as `sweep`
/// would, its work snapshotted first, and `bind --resume` brings the work back.
#[test]
fn claude_headless_runs_do_not_pile_up() {
    let fx = source();
    let (mut first, tree) = fake_claude(&fx, &payload(&fx, CREATE_NAME, &fx.src), false);
    first.wait().unwrap();
    assert_eq!(tree, fx.isolation("agent-a1b2c3"));
    std::fs::write(tree.join("headless.txt"), "what the headless run wrote\n").unwrap();
    let (mut second, other) = fake_claude(&fx, &payload(&fx, CREATE_DOCUMENTED, &fx.src), false);
    second.wait().unwrap();
    assert!(other.is_dir());
    assert!(
        !tree.exists(),
        "the exited Claude Code's isolation piled up"
    );
    assert_eq!(session(&fx, "agent-a1b2c3")["state"], "swept");
    assert_eq!(
        fx.git(
            &fx.src,
            &["show", "refs/a3s-iso/swept/agent-a1b2c3:headless.txt"]
        ),
        "what the headless run wrote"
    );
    let (code, doc) = fx.json(&["bind", "-s", "agent-a1b2c3", "--resume"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        std::fs::read_to_string(crate::fixture::worktree_of(&doc).join("headless.txt")).unwrap(),
        "what the headless run wrote\n"
    );
}
