//! The configuration files: the repository's `.a3s-iso.toml` (trusted per user), the user's
//! own file, precedence, and the setup commands a bind runs in the session's sandbox.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::fixture::{Fixture, error_code, sandbox_available};

/// Writes the user's configuration file.
fn user_config(fx: &Fixture, text: &str) -> PathBuf {
    let path = fx.home.join(".config/a3s-iso/config.toml");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

/// Commits the repository's configuration file.
fn repository_config(fx: &Fixture, text: &str) {
    fx.write(".a3s-iso.toml", text);
    fx.commit_all("configuration");
}

fn sessions(fx: &Fixture) -> Vec<Value> {
    let (code, doc) = fx.json(&["list"]);
    assert_eq!(code, 0, "{doc}");
    doc["sessions"].as_array().unwrap().clone()
}

fn skip_without_sandbox(test: &str) -> bool {
    if sandbox_available() {
        return false;
    }
    eprintln!("skipping {test}: the sandbox is unavailable on this machine (setup runs in it)");
    true
}

/// Bound without the file, a run of the repository is refused while the file asks for the
/// network, and gets none from it without the file.
fn without_the_file_a_run_gets_no_network(fx: &Fixture) {
    // Bound without the file, a run of the repository is refused while the file asks for
    // the network, and gets none from it without the file.
    let (code, doc) = fx.json(&["bind", "-s", "plain", "--ignore-config", "--owner", "none"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["setup"], json!([]), "{doc}");
    let (code, run) = fx.json(&["run", "-s", "plain", "--", "true"]);
    assert_eq!((code, error_code(&run)), (5, "config_untrusted"), "{run}");
    let (code, run) = fx.json(&["run", "-s", "plain", "--ignore-config", "--", "true"]);
    assert_eq!(code, 0, "{run}");
    assert_eq!(run["sandbox"]["network"], "denied", "{run}");
    assert!(!fx.isolation("plain").join("setup.txt").exists());
}

/// A changed file is untrusted again.
fn a_changed_file_is_untrusted_again(fx: &Fixture) {
    repository_config(fx, "setup = [\"echo other > setup.txt\"]\n");
    let (code, doc) = fx.json(&["bind", "-s", "u", "--owner", "none"]);
    assert_eq!((code, error_code(&doc)), (5, "config_untrusted"), "{doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("changed since you trusted it")
    );
    assert!(!fx.isolation("u").exists());
    let (_, shown) = fx.json(&["config"]);
    assert_eq!(shown["repository_file"]["trust"], "changed", "{shown}");
}

#[test]
fn an_untrusted_repository_file_never_runs_commands_or_opens_the_network() {
    let fx = Fixture::new();
    repository_config(
        &fx,
        "setup = [\"echo ran > setup.txt\"]\n[run]\nallow_network = true\n",
    );
    let (code, doc) = fx.json(&["bind", "-s", "t", "--owner", "none"]);
    assert_eq!((code, error_code(&doc)), (5, "config_untrusted"), "{doc}");
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(
        message.ends_with(
            ".a3s-iso.toml is not trusted by you: it can run commands and open the network"
        ),
        "{doc}"
    );
    assert!(
        doc["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("a3s-iso config trust")
    );
    assert!(!fx.isolation("t").exists());
    assert!(sessions(&fx).is_empty());
    let (_, shown) = fx.json(&["config"]);
    assert_eq!(shown["repository_file"]["trust"], "untrusted", "{shown}");
    assert_eq!(
        shown["settings"]["run.allow_network"],
        json!({"value": false, "source": "default"})
    );
    if !skip_without_sandbox("the network part of the untrusted-file test") {
        without_the_file_a_run_gets_no_network(&fx);
    }
    if skip_without_sandbox("the trusted part of the untrusted-file test") {
        return;
    }
    let (code, trusted) = fx.json(&["config", "trust"]);
    assert_eq!(code, 0, "{trusted}");
    assert_eq!(trusted["repository_file"]["trust"], "trusted", "{trusted}");
    let (code, doc) = fx.json(&["bind", "-s", "t", "--owner", "none"]);
    assert_eq!(code, 0, "{doc}");
    let ran = &doc["setup"][0];
    assert_eq!(ran["command"], "echo ran > setup.txt", "{doc}");
    assert_eq!(ran["exit_code"], 0, "{doc}");
    assert_eq!(
        std::fs::read(fx.isolation("t").join("setup.txt")).unwrap(),
        b"ran\n"
    );
    let (_, log) = fx.json(&["log", "--runs", "-s", "t"]);
    assert!(
        log.to_string().contains(ran["run_id"].as_str().unwrap()),
        "{log}"
    );

    a_changed_file_is_untrusted_again(&fx);
    // The setup's output is the session's: kept with it, purged with it.
    let output = std::path::PathBuf::from(ran["output"].as_str().unwrap());
    assert!(output.is_file(), "{}", output.display());
    let (code, doc) = fx.json(&["discard", "-s", "t", "--purge"]);
    assert_eq!(code, 0, "{doc}");
    assert!(!output.exists() && !output.parent().unwrap().exists());
}

/// A loopback server on the host; whether anything connected to it.
fn host_server() -> (u16, std::sync::mpsc::Receiver<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for _ in listener.incoming().flatten() {
            let _ = tx.send(());
        }
    });
    (port, rx)
}

#[test]
fn setup_runs_in_the_sandbox_without_network_unless_allowed() {
    if skip_without_sandbox("setup_runs_in_the_sandbox_without_network_unless_allowed")
        || !crate::fixture::require_tool("bash")
    {
        return;
    }
    let fx = Fixture::new();
    let outside = fx.root.join("outside.txt");
    let (port, connections) = host_server();
    let setup = format!(
        "setup = [\"(echo x > {}) 2>/dev/null; bash -c 'if (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null; then echo connected; else echo refused; fi > net.txt'\"]\n",
        outside.display()
    );
    user_config(&fx, &setup);
    let (code, doc) = fx.json(&["bind", "-s", "a", "--owner", "none"]);
    assert_eq!(code, 0, "{doc}");
    assert!(!outside.exists(), "setup wrote outside the isolation");
    assert_eq!(
        std::fs::read(fx.isolation("a").join("net.txt")).unwrap(),
        b"refused\n"
    );
    assert!(connections.try_recv().is_err());

    user_config(&fx, &format!("{setup}[run]\nallow_network = true\n"));
    let (code, doc) = fx.json(&["bind", "-s", "b", "--owner", "none"]);
    assert_eq!(code, 0, "{doc}");
    assert!(!outside.exists());
    assert_eq!(
        std::fs::read(fx.isolation("b").join("net.txt")).unwrap(),
        b"connected\n"
    );
}

#[test]
fn a_failing_setup_is_setup_failed_and_keeps_the_isolation() {
    if skip_without_sandbox("a_failing_setup_is_setup_failed_and_keeps_the_isolation") {
        return;
    }
    let fx = Fixture::new();
    user_config(
        &fx,
        "setup = [\"echo before > before.txt\", \"echo oops; exit 3\", \"echo never > never.txt\"]\n",
    );
    let (code, doc) = fx.json(&["bind", "-s", "f", "--owner", "none"]);
    assert_eq!((code, error_code(&doc)), (1, "setup_failed"), "{doc}");
    let error = &doc["error"];
    assert_eq!(error["command"], "echo oops; exit 3", "{doc}");
    assert_eq!(error["exit_code"], 3, "{doc}");
    assert_eq!(error["session_id"], "f", "{doc}");
    let output = PathBuf::from(error["output"].as_str().unwrap());
    assert_eq!(std::fs::read(&output).unwrap(), b"oops\n");
    let tree = fx.isolation("f");
    assert_eq!(std::fs::read(tree.join("before.txt")).unwrap(), b"before\n");
    assert!(!tree.join("never.txt").exists());
    assert_eq!(sessions(&fx).len(), 1);

    let (code, doc) = fx.json(&["bind", "-s", "g", "--no-setup", "--owner", "none"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["setup"], json!([]), "{doc}");
    assert!(!fx.isolation("g").join("before.txt").exists());
}

#[test]
fn unknown_keys_are_refused_with_the_key_named() {
    let fx = Fixture::new();
    user_config(&fx, "[run]\nallowed_hosts = [\"example.com\"]\n");
    let (code, doc) = fx.json(&["config"]);
    assert_eq!((code, error_code(&doc)), (5, "invalid_input"), "{doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("allowed_hosts"),
        "{doc}"
    );
    std::fs::remove_file(fx.home.join(".config/a3s-iso/config.toml")).unwrap();
    repository_config(&fx, "profile = \"strict\"\n");
    let (code, doc) = fx.json(&["bind", "-s", "k"]);
    assert_eq!((code, error_code(&doc)), (5, "invalid_input"), "{doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("profile"),
        "{doc}"
    );
    assert!(!fx.isolation("k").exists());
}

#[test]
fn config_json_shows_where_each_value_came_from() {
    let fx = Fixture::new();
    let user = user_config(&fx, "[run]\nallow_network = true\n[pool]\nsize = 3\n");
    repository_config(&fx, "copy_ignored = [\".env\"]\n[pool]\nsize = 1\n");
    let (code, before) = fx.json(&["config"]);
    assert_eq!(code, 0, "{before}");
    assert_eq!(
        before["settings"]["pool.size"],
        json!({"value": 3, "source": "user"})
    );
    // Untrusted, what the file would set is shown beside what is in effect.
    assert_eq!(
        before["repository_file"]["settings"]["pool.size"],
        json!({"value": 1, "source": "repository"})
    );
    let (code, mut doc) = fx.json(&["config", "trust"]);
    assert_eq!(code, 0, "{doc}");
    // The profiles are checked in profiles.rs.
    assert!(doc.as_object_mut().unwrap().remove("profiles").is_some());
    let file = fx.src.join(".a3s-iso.toml");
    let digest = {
        use sha2::Digest;
        format!(
            "sha256:{}",
            hex_of(&sha2::Sha256::digest(std::fs::read(&file).unwrap()))
        )
    };
    assert_eq!(
        doc,
        json!({
            "schema": "a3s-iso.config.v1",
            "source": fx.src,
            "repository_file": {"path": file, "sha256": digest, "trust": "trusted",
                "settings": {
                    "setup": {"value": [], "source": "default"},
                    "copy_ignored": {"value": [".env"], "source": "repository"},
                    "run.allow_network": {"value": false, "source": "default"},
                    "run.profile": {"value": null, "source": "default"},
                    "run.allow_host": {"value": [], "source": "default"},
                    "run.publish": {"value": [], "source": "default"},
                    "run.cache": {"value": "private", "source": "default"},
                    "pool.size": {"value": 1, "source": "repository"},
                    "pool.keep_ignored": {"value": null, "source": "default"},
                    "sweep.auto": {"value": true, "source": "default"},
                }},
            "user_file": {"path": user, "present": true},
            "settings": {
                "setup": {"value": [], "source": "default"},
                "copy_ignored": {"value": [".env"], "source": "repository"},
                "run.allow_network": {"value": true, "source": "user"},
                "run.profile": {"value": null, "source": "default"},
                "run.allow_host": {"value": [], "source": "default"},
                "run.publish": {"value": [], "source": "default"},
                "run.cache": {"value": "private", "source": "default"},
                "pool.size": {"value": 1, "source": "repository"},
                "pool.keep_ignored": {"value": null, "source": "default"},
                "sweep.auto": {"value": true, "source": "default"},
            },
        })
    );
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn the_user_files_pool_size_is_used_when_none_is_given() {
    let fx = Fixture::new();
    user_config(&fx, "[pool]\nsize = 2\n");
    let (code, doc) = fx.json(&["pool", "--no-fill"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["size"], 2, "{doc}");
    let (code, doc) = fx.json(&["pool", "--size", "0"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["size"], 0, "{doc}");
}

#[test]
fn copy_ignored_from_the_configuration_copies_the_ignored_file() {
    let fx = Fixture::new();
    fx.write(".gitignore", ".env\n");
    fx.commit_all("ignore .env");
    fx.write(".env", "TOKEN=local\n");
    user_config(&fx, "copy_ignored = [\".env\"]\n");
    let (code, doc) = fx.json(&["bind", "-s", "c", "--owner", "none"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        std::fs::read(fx.isolation("c").join(".env")).unwrap(),
        b"TOKEN=local\n"
    );
    assert_eq!(
        doc["copied_ignored"]["sources"][0]["from"], "copy_ignored",
        "{doc}"
    );
}

/// `run.allow_host` and `run.publish` of a repository's file: refused while the file is
/// untrusted (nothing runs), honoured once it is trusted, and added to the flags'.
#[test]
fn a_repository_file_asking_for_hosts_and_ports_is_refused_until_trusted() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("n");
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let allowed = format!("127.0.0.1:{}", server.local_addr().unwrap().port());
    repository_config(
        &fx,
        &format!("[run]\nallow_host = [\"{allowed}\"]\npublish = [3000, \"0:5173\"]\n"),
    );
    let exits = fx.src.join(".git/a3s-iso/run-exits/n");
    let (code, doc) = fx.json(&["run", "-s", "n", "--", "true"]);
    assert_eq!((code, error_code(&doc)), (5, "config_untrusted"), "{doc}");
    assert!(!exits.exists(), "a refused run was recorded");

    let (code, trusted) = fx.json(&["config", "trust"]);
    assert_eq!(code, 0, "{trusted}");
    assert_eq!(
        trusted["settings"]["run.publish"],
        json!({"value": ["3000", "0:5173"], "source": "repository"})
    );
    let (code, run) = fx.json(&["run", "-s", "n", "--publish", "0:5173", "--", "true"]);
    assert_eq!(code, 0, "{run}");
    assert_eq!(run["sandbox"]["network"], "allowlist", "{run}");
    let entries: Vec<&str> = run["network"]["allowed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["entry"].as_str().unwrap())
        .collect();
    assert_eq!(entries, [allowed.as_str()], "{run}");
    let mut inside: Vec<u64> = run["network"]["published"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["port"].as_u64().unwrap())
        .collect();
    inside.sort_unstable();
    // 5173 once: the flag's, not the file's again.
    assert_eq!(inside, [3000, 5173], "{run}");

    // With the whole network, the file's hosts and ports are left out, and said so.
    let (code, run) = fx.json(&["run", "-s", "n", "--allow-network", "--", "true"]);
    assert_eq!(code, 0, "{run}");
    assert_eq!(run["sandbox"]["network"], "allowed", "{run}");
    assert_eq!(run["network"]["published"], json!([]), "{run}");
}

/// The command line says how the configuration was read on stderr before the command
/// starts, and leaves it out of the run's document (MCP, with no stderr to read, puts it in
/// the document: `mcp_server`).
#[test]
fn run_warns_of_the_configuration_before_the_command_and_outside_its_document() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("w");
    repository_config(&fx, "[run]\nallow_host = [\"@npm\"]\npublish = [3000]\n");
    let (code, trusted) = fx.json(&["config", "trust"]);
    assert_eq!(code, 0, "{trusted}");
    let out = fx
        .cmd()
        .args(["--json", "run", "-s", "w", "--allow-network", "--"])
        .args(["sh", "-c", "echo the-command-said"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let warning = "run.allow_host and run.publish are not applied: the run has the whole network";
    assert!(
        !doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w == warning),
        "{doc}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let (warned, said) = (stderr.find(warning), stderr.find("the-command-said"));
    assert!(
        warned.is_some() && said.is_some() && warned < said,
        "the warning comes before the command's output: {stderr}"
    );
}

/// Setup commands get the configured network: `run.allow_host`'s hosts through the proxy.
#[test]
fn setup_reaches_the_configured_hosts_through_the_proxy() {
    if !crate::fixture::require_tool("sandbox") || !crate::fixture::require_tool("curl") {
        return;
    }
    use std::io::{Read, Write};
    let fx = Fixture::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        if let Ok((mut stream, _)) = listener.accept() {
            let _ = stream.read(&mut [0u8; 4096]);
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\npackages");
        }
    });
    // The registry stands in on loopback, which NO_PROXY sends straight: --noproxy '' sends
    // it through the proxy as a registry's name goes.
    user_config(
        &fx,
        &format!(
            "setup = [\"curl -sf --noproxy '' http://127.0.0.1:{port}/ > fetched.txt\"]\n\
             [run]\nallow_host = [\"127.0.0.1:{port}\"]\n"
        ),
    );
    let (code, doc) = fx.json(&["bind", "-s", "s", "--owner", "none"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["setup"][0]["exit_code"], 0, "{doc}");
    assert_eq!(
        std::fs::read_to_string(fx.isolation("s").join("fetched.txt")).unwrap(),
        "packages"
    );
}

/// `pool.keep_ignored` is what `pool` keeps when it is given no `--keep-ignored`.
#[test]
fn the_user_files_keep_patterns_are_used_when_none_are_given() {
    let fx = Fixture::new();
    user_config(
        &fx,
        "[pool]\nsize = 0\nkeep_ignored = [\"target/\", \"*.cache\"]\n",
    );
    let (code, doc) = fx.json(&["pool", "--no-fill"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["keep_ignored"], json!(["target/", "*.cache"]), "{doc}");
    let (code, doc) = fx.json(&["pool", "--no-fill", "--keep-ignored", "node_modules/"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["keep_ignored"], json!(["node_modules/"]), "{doc}");
}

/// `config` of an untrusted file and `config trust` show every key that grants or runs
/// something, with its value, before and when the user trusts it.
#[test]
fn config_and_config_trust_show_every_granting_key() {
    let fx = Fixture::new();
    repository_config(
        &fx,
        "setup = [\"npm ci\"]\ncopy_ignored = [\"node_modules\"]\n[run]\nallow_host = [\"@npm\"]\n\
         publish = [3000]\nallow_network = false\nprofile = \"generic\"\n[pool]\nsize = 1\n\
         keep_ignored = [\"target\"]\n",
    );
    let granted = [
        ("setup", "npm ci"),
        ("copy_ignored", "node_modules"),
        ("run.allow_network", "false"),
        ("run.allow_host", "@npm"),
        ("run.publish", "3000"),
        ("run.profile", "generic"),
        ("pool.size", "1"),
        ("pool.keep_ignored", "target"),
    ];
    let shown = |text: &str| {
        for (key, value) in granted {
            assert!(
                text.lines()
                    .any(|l| l.split_whitespace().next() == Some(key)
                        && l.contains(&format!(" {value} (repository)"))),
                "{key} = {value} not shown:\n{text}"
            );
        }
    };
    let (code, untrusted, _) = crate::fixture::human(&fx, &["config"]);
    assert_eq!(code, 0, "{untrusted}");
    let asked = untrusted
        .split("the repository file asks for (not applied until you trust it):")
        .nth(1)
        .unwrap_or_else(|| panic!("no list of what the file asks for:\n{untrusted}"));
    shown(asked);
    let (code, trusted, _) = crate::fixture::human(&fx, &["config", "trust"]);
    assert_eq!(code, 0, "{trusted}");
    shown(&trusted);
}
