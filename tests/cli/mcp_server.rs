//! `a3s-iso mcp`: a real client's handshake and tool calls over the binary's stdio, every read
//! bounded by a timeout.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::fixture::{Fixture, sandbox_available};

/// How long any one answer may take (a sandboxed run included).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(90);

/// The tools a server offers without `--allow-promote`.
const TOOLS: [&str; 8] = [
    "bind", "run", "diff", "show", "list", "overlaps", "capture", "discard",
];

/// An MCP client of one `a3s-iso mcp` process.
struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: PathBuf,
    next_id: u64,
}

impl Client {
    /// Starts `a3s-iso mcp ARGS` in the fixture's source (with `--allow-no-sandbox` where this
    /// machine has no sandbox, so that [`run_args`] can run unsandboxed).
    fn start(fx: &Fixture, args: &[&str]) -> Client {
        Client::start_with(fx, args, &[])
    }

    /// [`Client::start`] with variables set in the server's environment.
    fn start_with(fx: &Fixture, args: &[&str], vars: &[(&str, &str)]) -> Client {
        Client::start_at(fx, &fx.src, args, vars)
    }

    /// `a3s-iso mcp` started in `dir`.
    fn start_in(fx: &Fixture, dir: &std::path::Path) -> Client {
        Client::start_at(fx, dir, &[], &[])
    }

    fn start_at(
        fx: &Fixture,
        dir: &std::path::Path,
        args: &[&str],
        vars: &[(&str, &str)],
    ) -> Client {
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let stderr = fx.root.join(format!("mcp-stderr-{n}.txt"));
        let mut command = fx.cmd_in(dir);
        command.arg("mcp").args(args);
        if !sandbox_available() {
            command.arg("--allow-no-sandbox");
        }
        command.envs(vars.iter().copied());
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Client {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
            next_id: 1,
        }
    }

    fn send_line(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{text}").unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, message: &Value) {
        self.send_line(&message.to_string());
    }

    /// The next message from the server: every line it writes is one JSON document.
    fn receive(&self) -> Value {
        match self.lines.recv_timeout(ANSWER_TIMEOUT) {
            Ok(line) => serde_json::from_str(&line).unwrap_or_else(|e| {
                panic!("the server wrote a line that is not JSON ({e}): {line}")
            }),
            Err(RecvTimeoutError::Timeout) => panic!(
                "no answer within {ANSWER_TIMEOUT:?}; stderr:\n{}",
                self.stderr_text()
            ),
            Err(RecvTimeoutError::Disconnected) => {
                panic!("the server closed stdout; stderr:\n{}", self.stderr_text())
            }
        }
    }

    fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Sends a request and returns its response (the whole message).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let response = self.receive();
        assert_eq!(response["jsonrpc"], "2.0", "{response}");
        assert_eq!(response["id"], id, "{response}");
        response
    }

    /// A request that must succeed; its result.
    fn result(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        assert!(response.get("error").is_none(), "{response}");
        response["result"].clone()
    }

    /// A tool call's result (a success or a tool error, never a protocol error).
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.result("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// A tool call that must give a document (not an error document); the document, read
    /// from the text content, which must equal the structured content when there is one.
    fn document(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments);
        assert_eq!(result["isError"], false, "{tool}: {result}");
        let document = text_document(&result);
        if let Some(structured) = result.get("structuredContent") {
            assert_eq!(structured, &document, "{tool}");
        }
        document
    }

    /// `initialize` at `version`, then `notifications/initialized`; the initialize result.
    fn handshake(&mut self, version: &str) -> Value {
        let result = self.result(
            "initialize",
            json!({
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "a3s-iso-tests", "version": "0"},
            }),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        result
    }

    fn tool_names(&mut self) -> Vec<String> {
        let listed = self.result("tools/list", json!({}));
        listed["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    }

    /// Closes stdin; the server must exit 0 by itself, soon.
    fn close(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(
                    status.success(),
                    "{status}; stderr:\n{}",
                    self.stderr_text()
                );
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not exit at the end of stdin"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The document of a tool result's first text content.
fn text_document(result: &Value) -> Value {
    let content = &result["content"][0];
    assert_eq!(content["type"], "text", "{result}");
    serde_json::from_str(content["text"].as_str().unwrap()).unwrap()
}

/// The `run` arguments for `command` in session `id`, unsandboxed where this machine has no
/// sandbox.
fn run_args(id: &str, command: &str) -> Value {
    let mut args = json!({"session_id": id, "command": ["sh", "-c", command]});
    if !sandbox_available() {
        args["no_sandbox"] = json!(true);
    }
    args
}

#[test]
fn an_agent_binds_runs_and_reviews_through_mcp() {
    let fx = Fixture::new();
    let mut client = Client::start(&fx, &[]);
    let init = client.handshake("2025-06-18");
    assert_eq!(init["protocolVersion"], "2025-06-18");
    assert_eq!(init["serverInfo"]["name"], "a3s-iso");
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    assert_eq!(client.tool_names(), TOOLS);
    let listed = client.result("tools/list", json!({}));
    for tool in listed["tools"].as_array().unwrap() {
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }

    let bound = client.document("bind", json!({"session_id": "t1", "owner": "none"}));
    assert_eq!(bound["schema"], "a3s-iso.bind.v1");
    assert!(std::path::Path::new(bound["worktree"].as_str().unwrap()).is_dir());

    // The command writes a file, prints on stdout and stderr, and reads stdin: its stdin is
    // /dev/null (never the client's messages) and its output comes back after the document.
    let command = "cat; echo from mcp > MCP.txt; echo to-stdout; echo to-stderr >&2";
    let result = client.call("run", run_args("t1", command));
    assert_eq!(result["isError"], false, "{result}");
    let ran = text_document(&result);
    assert_eq!(ran["schema"], "a3s-iso.run.v1");
    assert_eq!(ran["state"], "completed", "{ran}");
    assert_eq!(ran["change_set"]["files_changed"], 1, "{ran}");
    let output = result["content"][1]["text"].as_str().unwrap();
    assert!(
        output.contains("to-stdout") && output.contains("to-stderr"),
        "{output}"
    );

    let diff = client.document("diff", json!({"session_id": "t1", "patch": true}));
    assert_eq!(diff["schema"], "a3s-iso.diff.v1");
    let paths: Vec<&str> = diff["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["MCP.txt"]);
    let patch = client.call("diff", json!({"session_id": "t1", "patch": true}));
    assert!(
        patch["content"][1]["text"]
            .as_str()
            .unwrap()
            .contains("+from mcp"),
        "{patch}"
    );

    // show's document is the one `--json show` prints, byte for byte.
    let shown = client.call("show", json!({"session_id": "t1"}));
    let (code, cli) = fx.json(&["show", "-s", "t1"]);
    assert_eq!(code, 0);
    assert_eq!(text_document(&shown), cli);
    assert_eq!(cli["runs"].as_array().unwrap().len(), 1, "{cli}");
    let cli_text = fx
        .cmd()
        .args(["--json", "show", "-s", "t1"])
        .output()
        .unwrap();
    assert_eq!(
        shown["content"][0]["text"].as_str().unwrap(),
        String::from_utf8(cli_text.stdout).unwrap().trim_end()
    );
    client.close();
    // The source was never touched.
    assert!(!fx.src.join("MCP.txt").exists());
}

#[test]
fn failures_are_tool_errors_and_misuse_is_a_protocol_error() {
    let fx = Fixture::new();
    let mut client = Client::start(&fx, &[]);
    client.handshake("2025-06-18");

    // a3s-iso's own failure: a tool result with isError and the error document. With no
    // session bound, there is none to choose.
    let missing = client.call("show", json!({}));
    assert_eq!(missing["isError"], true, "{missing}");
    let error = text_document(&missing);
    assert_eq!(error["schema"], "a3s-iso.error.v1");
    assert_eq!(error["error"]["code"], "session_not_found", "{error}");
    assert_eq!(missing["structuredContent"], error);

    // promote is not offered without --allow-promote: calling it is a protocol error that
    // names the grant.
    let refused = client.request("tools/call", json!({"name": "promote", "arguments": {}}));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(refused["error"]["data"]["code"], "not_granted", "{refused}");
    assert_eq!(
        refused["error"]["data"]["grant"], "--allow-promote",
        "{refused}"
    );
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--allow-promote"),
        "{refused}"
    );

    // Arguments a tool does not take, an unknown tool, an unknown method.
    for (method, params, code) in [
        (
            "tools/call",
            json!({"name": "run", "arguments": {"command": "make test"}}),
            -32602,
        ),
        (
            "tools/call",
            json!({"name": "bind", "arguments": {"colour": "red"}}),
            -32602,
        ),
        (
            "tools/call",
            json!({"name": "sweep", "arguments": {}}),
            -32602,
        ),
        ("resources/list", json!({}), -32601),
    ] {
        let response = client.request(method, params.clone());
        assert_eq!(response["error"]["code"], code, "{params}: {response}");
    }

    // A line that is not JSON: a parse error with a null id, and the server goes on.
    client.send_line("{\"jsonrpc\": \"2.0\", \"id\": 99, \"method\":");
    let parse = client.receive();
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    assert_eq!(parse["id"], Value::Null);
    assert_eq!(client.result("ping", json!({})), json!({}));
    assert_eq!(client.tool_names(), TOOLS);
    client.close();
}

#[test]
fn promote_and_land_are_offered_with_allow_promote() {
    let fx = Fixture::new();
    let mut client = Client::start(&fx, &["--allow-promote"]);
    // An older revision is spoken too, without structured content.
    let init = client.handshake("2024-11-05");
    assert_eq!(init["protocolVersion"], "2024-11-05");
    let mut expected: Vec<&str> = TOOLS.to_vec();
    expected.extend(["promote", "land"]);
    assert_eq!(client.tool_names(), expected);

    client.document("bind", json!({"session_id": "p1", "owner": "none"}));
    let ran = client.call(
        "run",
        run_args("p1", "printf 'promoted bytes\\n' > PROMOTED.txt"),
    );
    assert_eq!(text_document(&ran)["state"], "completed", "{ran}");
    assert!(ran.get("structuredContent").is_none(), "{ran}");

    let promoted = client.document("promote", json!({"session_id": "p1"}));
    assert_eq!(promoted["schema"], "a3s-iso.promote.v1");
    assert_eq!(promoted["outcome"], "applied", "{promoted}");
    assert_eq!(
        std::fs::read(fx.src.join("PROMOTED.txt")).unwrap(),
        b"promoted bytes\n"
    );
    let again = client.document("promote", json!({"session_id": "p1"}));
    assert_eq!(again["outcome"], "idempotent", "{again}");
    client.close();
}

#[test]
fn a_client_asking_for_an_unknown_revision_gets_the_newest() {
    let fx = Fixture::new();
    let mut client = Client::start(&fx, &[]);
    let init = client.handshake("1999-01-01");
    assert_eq!(init["protocolVersion"], "2025-06-18");
    client.close();
}

#[test]
fn sigterm_ends_the_server_also_after_a_run() {
    let fx = Fixture::new();
    let mut client = Client::start(&fx, &[]);
    client.handshake("2025-06-18");
    client.document("bind", json!({"session_id": "s1", "owner": "none"}));
    let ran = client.call("run", run_args("s1", "true"));
    assert_eq!(text_document(&ran)["state"], "completed", "{ran}");
    let pid = i32::try_from(client.child.id()).unwrap();
    // SAFETY: signalling the server this test started.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    let status = loop {
        if let Some(status) = client.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "SIGTERM did not end the server");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status}");
}

/// `bind` through MCP applies the repository's configuration as `bind` does without a
/// terminal: an untrusted file is `config_untrusted` with nothing bound; a trusted one's setup
/// runs in the new isolation.
#[test]
fn bind_through_mcp_applies_the_trusted_configuration() {
    if !crate::fixture::sandbox_available() {
        eprintln!(
            "skipping bind_through_mcp_applies_the_trusted_configuration: the sandbox is unavailable on this machine (setup runs in it)"
        );
        return;
    }
    let fx = Fixture::new();
    fx.write(".a3s-iso.toml", "setup = [\"echo ready > SETUP_DONE\"]\n");
    fx.write(".gitignore", "SETUP_DONE\n");
    fx.commit_all("configuration");
    let mut client = Client::start(&fx, &[]);
    client.handshake("2025-06-18");
    let refused = client.call("bind", json!({"session_id": "c1", "owner": "none"}));
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(text_document(&refused)["error"]["code"], "config_untrusted");
    assert!(!fx.isolation("c1").exists());
    let (code, doc) = fx.json(&["config", "trust"]);
    assert_eq!(code, 0, "{doc}");
    let bound = client.document("bind", json!({"session_id": "c1", "owner": "none"}));
    assert_eq!(bound["setup"][0]["exit_code"], 0, "{bound}");
    assert_eq!(
        std::fs::read(fx.isolation("c1").join("SETUP_DONE")).unwrap(),
        b"ready\n"
    );
    client.close();
}

/// `run` through MCP reads the configuration as `run` does: a `[run]` table of an untrusted
/// repository file refuses the call (a tool call cannot approve it), nothing runs; trusted,
/// its profile and hosts apply, and the server's granted hosts add to them; the server's
/// `--cache` wins over the configuration's.
#[test]
fn run_through_mcp_applies_the_trusted_run_configuration() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("r1");
    fx.write(
        ".a3s-iso.toml",
        "[run]\nprofile = \"generic\"\nallow_host = [\"@npm\"]\n",
    );
    fx.commit_all("configuration");
    let mut client = Client::start(&fx, &["--session", "r1", "--allow-host", "127.0.0.1:9"]);
    client.handshake("2025-06-18");
    let args = json!({"session_id": "r1", "command": ["true"]});
    let refused = client.call("run", args.clone());
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(text_document(&refused)["error"]["code"], "config_untrusted");
    assert!(!fx.src.join(".git/a3s-iso/run-exits/r1").exists());
    let (code, doc) = fx.json(&["config", "trust"]);
    assert_eq!(code, 0, "{doc}");
    let ran = client.document("run", args);
    assert_eq!(ran["profile"], "generic", "{ran}");
    assert_eq!(ran["sandbox"]["network"], "allowlist", "{ran}");
    let entries: Vec<&str> = ran["network"]["allowed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["entry"].as_str().unwrap())
        .collect();
    assert_eq!(entries, ["127.0.0.1:9", "@npm"], "{ran}");
    // The configuration's preset brings its cache; a server started with --cache none gives
    // its runs none, whatever the configuration says.
    assert_eq!(ran["sandbox"]["caches"][0]["tool"], "npm", "{ran}");
    assert_eq!(ran["sandbox"]["caches"][0]["mode"], "private", "{ran}");
    client.close();
    let mut client = Client::start(&fx, &["--session", "r1", "--cache", "none"]);
    client.handshake("2025-06-18");
    let ran = client.document("run", json!({"session_id": "r1", "command": ["true"]}));
    assert_eq!(ran["sandbox"]["caches"], json!([]), "{ran}");
    client.close();
}

/// How the configuration was read travels with the run through MCP: a trusted file's hosts
/// left out of a run with the whole network lead the run document's warnings (the command
/// line says it on stderr instead, before the command starts: `config_files`).
#[test]
fn a_run_through_mcp_carries_the_configurations_warnings_in_its_document() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("w1");
    fx.write(".a3s-iso.toml", "[run]\nallow_host = [\"@npm\"]\n");
    fx.commit_all("configuration");
    let (code, doc) = fx.json(&["config", "trust"]);
    assert_eq!(code, 0, "{doc}");
    let mut client = Client::start(&fx, &["--session", "w1", "--allow-network"]);
    client.handshake("2025-06-18");
    let args = json!({"session_id": "w1", "allow_network": true, "command": ["sh", "-c", "echo said >&2"]});
    let ran = client.document("run", args);
    assert_eq!(ran["sandbox"]["network"], "allowed", "{ran}");
    assert_eq!(
        ran["warnings"][0],
        "run.allow_host and run.publish are not applied: the run has the whole network",
        "{ran}"
    );
    client.close();
}

/// A protocol error refusing a call for want of a grant: its `data` (the grant named).
fn not_granted(client: &mut Client, tool: &str, arguments: Value) -> Value {
    let response = client.request(
        "tools/call",
        json!({"name": tool, "arguments": arguments.clone()}),
    );
    let error = &response["error"];
    assert_eq!(error["code"], -32602, "{tool} {arguments}: {response}");
    assert_eq!(
        error["data"]["code"], "not_granted",
        "{tool} {arguments}: {response}"
    );
    let grant = error["data"]["grant"].as_str().unwrap();
    assert!(
        error["message"].as_str().unwrap().contains(grant),
        "the message names the grant: {response}"
    );
    error["data"].clone()
}

/// What the user's repository is: its branches, tags and stash, HEAD, index and every file of
/// the checkout.
fn source_state(fx: &Fixture) -> (String, std::collections::BTreeMap<String, String>) {
    let refs = fx.git(
        &fx.src,
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/heads",
            "refs/tags",
            "refs/stash",
        ],
    );
    (refs, crate::fixture::checkout_listing(&fx.src))
}

/// Every way out of the sandbox a `run` call could ask for is refused by a server that was
/// not granted it, before anything runs: nothing is committed on the user's branch, no
/// secret reaches the isolation or its change set, no host file is written.
/// A run call for each opt-out the server was not started with, and the grant it needs.
fn ungranted_run_calls(home: &str, steal: &str) -> Vec<(Value, &'static str)> {
    let commit =
        "cd \"$A3S_ISO_SOURCE\" && echo pwned > PWNED && git add PWNED && git commit -qm pwned";
    let attempts = vec![
        (
            json!({"no_sandbox": true, "command": ["sh", "-c", commit]}),
            "--allow-no-sandbox",
        ),
        (
            json!({"allow_read": [format!("{home}/.ssh")], "command": ["sh", "-c", steal]}),
            "--allow-read",
        ),
        (
            json!({"output": format!("{home}/.bashrc"), "command": ["echo", "alias ls=rm"]}),
            "--allow-output",
        ),
        (
            json!({"allow_network": true, "command": ["true"]}),
            "--allow-network",
        ),
        (
            json!({"allow_host": ["example.com"], "command": ["true"]}),
            "--allow-host",
        ),
        (
            json!({"publish": ["8080"], "command": ["true"]}),
            "--publish",
        ),
        (
            json!({"allow_write": [home], "command": ["true"]}),
            "--allow-write",
        ),
        (
            json!({"profile": "claude", "command": ["true"]}),
            "--profile",
        ),
        (
            json!({"env": ["GITHUB_TOKEN"], "command": ["sh", "-c", steal]}),
            "--env GITHUB_TOKEN",
        ),
        (
            json!({"env": ["GITHUB_*"], "command": ["sh", "-c", steal]}),
            "--env GITHUB_*",
        ),
        (
            json!({"timeout": "1h", "command": ["true"]}),
            "--timeout 1h",
        ),
    ];
    attempts
}

/// A run with what the server grants still works, and gets none of what was refused.
fn a_granted_run_gets_none_of_it(client: &mut Client, fx: &Fixture, steal: &str) {
    // A run with what the server grants still works, and gets none of it.
    let ran = client.document(
        "run",
        json!({"session_id": "agent", "command": ["sh", "-c", steal], "env": ["A=b"]}),
    );
    assert_eq!(ran["state"], "completed", "{ran}");
    let captured = client.document("diff", json!({"session_id": "agent", "patch": true}));
    assert_eq!(captured["schema"], "a3s-iso.diff.v1", "{captured}");
    let patch = client.call("diff", json!({"session_id": "agent", "patch": true}));
    let text = patch["content"][1]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        !text.contains("PRIVATE KEY") && !text.contains("gh-secret"),
        "{text}"
    );
    let isolation = fx.isolation("agent");
    assert!(
        !std::fs::read_to_string(isolation.join("stolen"))
            .unwrap()
            .contains("PRIVATE")
    );
    assert_eq!(
        std::fs::read_to_string(isolation.join("token")).unwrap(),
        "\n"
    );
}

#[test]
fn attack_a_run_call_gets_no_opt_out_the_server_was_not_granted() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    let ssh = fx.home.join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_rsa"), "PRIVATE KEY LINE\n").unwrap();
    std::fs::write(fx.home.join(".bashrc"), "# the user's shell\n").unwrap();
    let bashrc = std::fs::read(fx.home.join(".bashrc")).unwrap();
    let before = source_state(&fx);
    let mut client =
        Client::start_with(&fx, &["--timeout", "60s"], &[("GITHUB_TOKEN", "gh-secret")]);
    client.handshake("2025-06-18");
    client.document("bind", json!({"session_id": "agent", "owner": "none"}));
    let home = fx.home.display().to_string();
    let steal = "cat ~/.ssh/id_rsa > stolen; echo \"$GITHUB_TOKEN\" > token";
    let attempts = ungranted_run_calls(&home, steal);
    for (mut args, grant) in attempts {
        args["session_id"] = json!("agent");
        let data = not_granted(&mut client, "run", args.clone());
        assert!(
            grant.starts_with(data["grant"].as_str().unwrap()),
            "{args}: {data}"
        );
    }
    a_granted_run_gets_none_of_it(&mut client, &fx, steal);
    client.close();
    assert_eq!(source_state(&fx), before, "the user's repository changed");
    assert!(!fx.src.join("PWNED").exists());
    assert_eq!(std::fs::read(fx.home.join(".bashrc")).unwrap(), bashrc);
}

/// The grants a user gives the server are what runs get, and a call may ask for less, never
/// more: the secret the user granted is read, a path beneath a granted one too, but not a
/// granted directory's link that leads out of it.
/// Beyond the grant: a sibling of it, a link out of the output directory, `..`, an
/// environment variable not granted; each refused.
fn calls_beyond_the_grants_are_refused(client: &mut Client, fx: &Fixture, out: &std::path::Path) {
    let out_grant = out.display().to_string();
    // Beyond the grant: a sibling of it, a link out of the output directory, `..`.
    let home = fx.home.display().to_string();
    for (args, grant) in [
        (
            json!({"allow_read": [format!("{home}/.gnupg")]}),
            "--allow-read",
        ),
        (
            json!({"output": out.join("bashrc-link").display().to_string()}),
            "--allow-output",
        ),
        (
            json!({"output": format!("{out_grant}/../escape.log")}),
            "--allow-output",
        ),
        (json!({"env": ["OTHER_TOKEN"]}), "--env"),
    ] {
        let mut args = args;
        args["session_id"] = json!("agent");
        args["command"] = json!(["true"]);
        let data = not_granted(client, "run", args.clone());
        assert!(
            data["grant"].as_str().unwrap().starts_with(grant),
            "{args}: {data}"
        );
    }
}

#[test]
fn a_run_gets_the_servers_grants_and_may_narrow_them() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    let ssh = fx.home.join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_rsa"), "PRIVATE KEY LINE\n").unwrap();
    let out = fx.root.join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::os::unix::fs::symlink(fx.home.join(".bashrc"), out.join("bashrc-link")).unwrap();
    let ssh_grant = ssh.display().to_string();
    let out_grant = out.display().to_string();
    let mut client = Client::start_with(
        &fx,
        &[
            "--allow-read",
            &ssh_grant,
            "--allow-output",
            &out_grant,
            "--env",
            "DEPLOY_TOKEN",
        ],
        &[
            ("DEPLOY_TOKEN", "granted-token"),
            ("OTHER_TOKEN", "not-granted"),
        ],
    );
    client.handshake("2025-06-18");
    client.document("bind", json!({"session_id": "agent", "owner": "none"}));
    let read =
        "cat ~/.ssh/id_rsa > granted.txt; echo \"$DEPLOY_TOKEN${OTHER_TOKEN:-}\" >> granted.txt";
    let log = out.join("run.log").display().to_string();
    let ran = client.document(
        "run",
        json!({"session_id": "agent", "command": ["sh", "-c", read], "output": log}),
    );
    assert_eq!(ran["state"], "completed", "{ran}");
    assert_eq!(
        std::fs::read_to_string(fx.isolation("agent").join("granted.txt")).unwrap(),
        "PRIVATE KEY LINE\ngranted-token\n"
    );
    assert!(out.join("run.log").is_file());
    // Narrowed: the call names the granted file only; still readable.
    let narrowed = json!({"session_id": "agent", "allow_read": [format!("{ssh_grant}/id_rsa")],
        "command": ["sh", "-c", "cat ~/.ssh/id_rsa > narrowed.txt"], "env": []});
    assert_eq!(client.document("run", narrowed)["state"], "completed");
    assert_eq!(
        std::fs::read_to_string(fx.isolation("agent").join("narrowed.txt")).unwrap(),
        "PRIVATE KEY LINE\n"
    );
    calls_beyond_the_grants_are_refused(&mut client, &fx, &out);
    assert!(!fx.home.join(".bashrc").exists());
    assert!(!fx.root.join("escape.log").exists());
    client.close();
}

/// The server acts on the sessions it bound (and those named at its start): another session
/// of the user's is refused by every tool, whether or not it exists, and `discard` of all
/// with `purge` removes the agent's own sessions only, the user's kept byte for byte.
/// Every tool called on the user's session (or one that does not exist) is refused as not
/// granted, with a hint naming `--session`.
fn every_tool_on_anothers_session_is_refused(client: &mut Client) {
    for (tool, args) in [
        ("show", json!({"session_id": "mine"})),
        ("diff", json!({"session_id": "mine"})),
        ("capture", json!({"session_id": "mine"})),
        ("run", run_args("mine", "echo planted > PLANTED")),
        ("discard", json!({"session_id": "mine", "purge": true})),
        ("bind", json!({"session_id": "mine", "owner": "none"})),
        ("bind", json!({"session_id": "mine", "resume": true})),
        ("promote", json!({"session_id": "mine"})),
        ("land", json!({"sessions": ["mine"]})),
        ("show", json!({"session_id": "no-such-session"})),
    ] {
        let refused = client.call(tool, args.clone());
        assert_eq!(refused["isError"], true, "{tool} {args}: {refused}");
        let error = text_document(&refused);
        assert_eq!(
            error["error"]["code"], "session_not_granted",
            "{tool} {args}: {error}"
        );
        assert!(
            error["error"]["hint"]
                .as_str()
                .unwrap()
                .contains("--session"),
            "{error}"
        );
    }
}

/// What it lists, predicts, shows or discards without an id is its own session only.
fn it_lists_and_chooses_only_its_own(client: &mut Client) {
    // What it lists and predicts is its own.
    let listed = client.document("list", json!({"all": true}));
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["agent"], "{listed}");
    let predicted = client.document("overlaps", json!({}));
    assert!(!predicted.to_string().contains("\"mine\""), "{predicted}");
    // Without an id, the only session it may choose is its own.
    assert_eq!(client.document("show", json!({}))["session_id"], "agent");
    let discarded = client.document("discard", json!({"all": true, "purge": true}));
    let ids: Vec<&str> = discarded["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["agent"], "{discarded}");
}

#[test]
fn attack_an_agent_acts_only_on_its_own_sessions() {
    let fx = Fixture::new();
    fx.bind("mine");
    std::fs::write(fx.isolation("mine").join("WORK.txt"), "the user's work\n").unwrap();
    let (code, doc) = fx.json(&["capture", "-s", "mine", "--run-id", "r1"]);
    assert_eq!(code, 0, "{doc}");
    let state = crate::fixture::state_dir(&fx);
    let before = (
        crate::fixture::listing(&fx.isolation("mine")),
        std::fs::read(state.join("sessions/mine.json")).unwrap(),
        fx.git(
            &fx.src,
            &["for-each-ref", "--format=%(refname) %(objectname)"],
        ),
    );
    let mut client = Client::start(&fx, &["--allow-promote"]);
    client.handshake("2025-06-18");
    client.document("bind", json!({"session_id": "agent", "owner": "none"}));
    every_tool_on_anothers_session_is_refused(&mut client);
    it_lists_and_chooses_only_its_own(&mut client);
    client.close();
    let after = (
        crate::fixture::listing(&fx.isolation("mine")),
        std::fs::read(state.join("sessions/mine.json")).unwrap(),
        fx.git(
            &fx.src,
            &["for-each-ref", "--format=%(refname) %(objectname)"],
        )
        .lines()
        .filter(|l| !l.contains("/agent/") && !l.contains("/agent "))
        .collect::<Vec<_>>()
        .join("\n"),
    );
    assert_eq!(after, before, "the user's session changed");
    assert!(!fx.src.join("WORK.txt").exists());

    // Named at the start, the user's session is the server's to act on.
    let mut client = Client::start(&fx, &["--session", "mine"]);
    client.handshake("2025-06-18");
    let shown = client.document("show", json!({"session_id": "mine"}));
    assert_eq!(shown["session_id"], "mine");
    client.close();
}

/// A server started inside an isolation acts on that session without naming it.
#[test]
fn a_server_started_in_an_isolation_acts_on_its_session() {
    let fx = Fixture::new();
    fx.bind("mine");
    fx.bind("other");
    let mut client = Client::start_in(&fx, &fx.isolation("mine"));
    client.handshake("2025-06-18");
    assert_eq!(client.document("show", json!({}))["session_id"], "mine");
    let refused = client.call("show", json!({"session_id": "other"}));
    assert_eq!(
        text_document(&refused)["error"]["code"],
        "session_not_granted"
    );
    client.close();
}

/// An agent's `bind` and `land` reclaim no session outside the server's scope: the user's
/// dead owner's session stays byte for byte (record, tree, refs); the user's own `bind` then
/// reclaims it, so the check could fail.
#[test]
fn attack_an_agents_bind_never_reclaims_the_users_dead_owner_session() {
    let fx = Fixture::new();
    crate::sweep_races::dead_owner_session(&fx, "users");
    crate::sweep_races::with_work(&fx, "users");
    let state = crate::fixture::state_dir(&fx);
    let snapshot = || {
        (
            crate::fixture::listing(&fx.isolation("users")),
            std::fs::read(state.join("sessions/users.json")).unwrap(),
            fx.git(
                &fx.src,
                &[
                    "for-each-ref",
                    "--format=%(refname) %(objectname)",
                    "refs/a3s-iso/sessions/users/",
                ],
            ),
        )
    };
    let before = snapshot();
    let mut client = Client::start(&fx, &["--allow-promote"]);
    client.handshake("2025-06-18");
    let bound = client.document("bind", json!({"session_id": "agent"}));
    assert_eq!(bound["reclaimed"], json!([]), "{bound}");
    std::fs::write(fx.isolation("agent").join("agent.txt"), "agent\n").unwrap();
    let landed = client.document("land", json!({"sessions": ["agent"]}));
    assert_eq!(landed["sessions"][0]["outcome"], "landed", "{landed}");
    assert_eq!(landed["reclaimed"], json!([]), "{landed}");
    client.close();
    assert_eq!(snapshot(), before, "the agent reclaimed the user's session");

    let (code, doc) = fx.json(&["bind", "-s", "next"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["reclaimed"][0]["session_id"], "users", "{doc}");
    assert!(!fx.isolation("users").exists());
}

/// What a call writes or reads on the host lands where it named, inside its grant: the
/// captured document, the change set read back by `diff`, and `promote`'s artifacts (their
/// reported place and their summary name the call's path, not the descriptor the server
/// wrote through).
#[test]
fn granted_files_are_written_and_read_where_the_call_named_them() {
    let fx = Fixture::new();
    let out = fx.root.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let grant = out.display().to_string();
    let flags = ["--allow-output", &grant, "--allow-input", &grant];
    let mut client = Client::start(&fx, &[&flags[..], &["--allow-promote"]].concat());
    client.handshake("2025-06-18");
    client.document("bind", json!({"session_id": "agent", "owner": "none"}));
    std::fs::write(fx.isolation("agent").join("new.txt"), "agent's work\n").unwrap();
    let doc = out.join("docs/cs.json");
    let shown = doc.display().to_string();
    let captured = client.document("capture", json!({"session_id": "agent", "output": shown}));
    let written: Value = serde_json::from_slice(&std::fs::read(&doc).unwrap()).unwrap();
    assert_eq!(written, captured);
    let diffed = client.document("diff", json!({"change_set": shown}));
    assert_eq!(diffed["files"][0]["path"], "new.txt", "{diffed}");
    let before = source_state(&fx);
    let art = out.join("art");
    let asked = json!({"session_id": "agent", "artifacts": art.display().to_string(),
        "no_apply": true});
    let promoted = client.document("promote", asked);
    assert_eq!(
        promoted["artifacts"],
        art.display().to_string(),
        "{promoted}"
    );
    let summary: Value =
        serde_json::from_slice(&std::fs::read(art.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["artifacts"], art.display().to_string());
    let patch = std::fs::read_to_string(art.join("change.patch")).unwrap();
    assert!(patch.contains("+agent's work"), "{patch}");
    assert_eq!(
        source_state(&fx),
        before,
        "no_apply leaves the source alone"
    );
    client.close();
}
