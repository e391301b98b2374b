//! With the network denied, name lookups inside are answered at once by a3s-iso's own name
//! responder, which records them; a run that fails after the sandbox kept hosts from it lists
//! them (`network.denied`) and names the `--allow-host` grant for each. Real package managers
//! fail at once instead of retrying into a timeout.

use std::process::Output;
use std::time::Instant;

use serde_json::Value;

use crate::fixture::{Fixture, json_of, require_tool};

macro_rules! require_sandbox {
    () => {
        if !require_tool("sandbox") {
            return;
        }
    };
}

/// `(host, port, how, allow_host)` of each entry of `network.denied`.
fn denied(doc: &Value) -> Vec<(String, Option<u64>, String, String)> {
    doc["network"]["denied"]
        .as_array()
        .unwrap_or_else(|| panic!("no network.denied in {doc}"))
        .iter()
        .map(|d| {
            (
                d["host"].as_str().unwrap().to_string(),
                d["port"].as_u64(),
                d["how"].as_str().unwrap().to_string(),
                d["allow_host"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The network hint of a human run's stderr.
fn network_hint(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    stderr
        .lines()
        .find(|l| l.contains("hint: the sandbox kept the command from the network"))
        .unwrap_or_else(|| panic!("no network hint in:\n{stderr}"))
        .trim()
        .to_string()
}

/// Runs `script` with bash in the session, once with `--json` and once for a human; returns
/// the JSON run's exit code and document, the human run's output, and how long the JSON run
/// took (reported, never asserted).
fn run_twice(fx: &Fixture, session: &str, flags: &[&str], script: &str) -> (i32, Value, Output) {
    let started = Instant::now();
    let mut cmd = fx.cmd();
    cmd.args(["--json", "run", "-s", session]).args(flags);
    let (code, doc) = json_of(cmd.args(["--", "bash", "-c", script]).output().unwrap());
    eprintln!("{script}: failed after {:?}", started.elapsed());
    let mut cmd = fx.cmd();
    cmd.args(["run", "-s", session]).args(flags);
    let human = cmd.args(["--", "bash", "-c", script]).output().unwrap();
    (code, doc, human)
}

const PACKAGE_JSON: &str = r#"{"name":"offline","version":"1.0.0","dependencies":{"left-pad":"1.3.0"}}
"#;

const PACKAGE_LOCK: &str = r#"{"name":"offline","version":"1.0.0","lockfileVersion":3,"requires":true,
"packages":{"":{"name":"offline","version":"1.0.0","dependencies":{"left-pad":"1.3.0"}},
"node_modules/left-pad":{"version":"1.3.0",
"resolved":"https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz",
"integrity":"sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4LdyK24iZeQxV+Ao+E3ZGf9Ygl4cOJ+aO9HqLgTdaEHp9bYIaQ7QJtdQA=="}}}
"#;

#[test]
fn npm_ci_with_the_network_denied_fails_at_once_and_names_the_npm_preset() {
    require_sandbox!();
    if !require_tool("npm") || !require_tool("node") || !require_tool("bash") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("npm");
    let iso = fx.isolation("npm");
    std::fs::write(iso.join("package.json"), PACKAGE_JSON).unwrap();
    std::fs::write(iso.join("package-lock.json"), PACKAGE_LOCK).unwrap();
    let script = r#"npm ci --cache "$TMPDIR/npm-cache" --no-audit --no-fund"#;
    let (code, doc, human) = run_twice(&fx, "npm", &[], script);
    assert_ne!(code, 0, "{doc}");
    assert_eq!(doc["network"]["mode"], "denied", "{doc}");
    assert_eq!(
        denied(&doc),
        vec![(
            "registry.npmjs.org".to_string(),
            None,
            "lookup".to_string(),
            "@npm".to_string()
        )]
    );
    insta::assert_snapshot!(network_hint(&human), @"hint: the sandbox kept the command from the network: registry.npmjs.org (name lookup); to let it through: --allow-host @npm");
    // npm is told not to retry (what the caller passes would win).
    let passed = doc["sandbox"]["env_passed"].as_array().unwrap();
    assert!(
        passed.iter().any(|n| n == "npm_config_fetch_retries"),
        "{passed:?}"
    );
    assert!(!iso.join("node_modules/left-pad").exists());
}

#[test]
fn pip_install_with_the_network_denied_fails_at_once_and_names_the_pypi_preset() {
    require_sandbox!();
    if !require_tool("python3") || !require_tool("pip") || !require_tool("bash") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("pip");
    let script = "python3 -m pip install --no-cache-dir --disable-pip-version-check \
                  --target \"$TMPDIR/site\" a3s-iso-offline-probe";
    let (code, doc, human) = run_twice(&fx, "pip", &[], script);
    assert_ne!(code, 0, "{doc}");
    assert_eq!(
        denied(&doc),
        vec![(
            "pypi.org".to_string(),
            None,
            "lookup".to_string(),
            "@pypi".to_string()
        )]
    );
    insta::assert_snapshot!(network_hint(&human), @"hint: the sandbox kept the command from the network: pypi.org (name lookup); to let it through: --allow-host @pypi");
}

#[test]
fn with_an_allowlist_the_hosts_the_proxy_refuses_are_listed_with_their_grants() {
    require_sandbox!();
    if !require_tool("curl") || !require_tool("bash") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("proxy");
    // Through the proxy: github.com on 443 (a preset's), example.org on 8443 (no entry's);
    // a lookup of an allowed name is not listed (the proxy reaches it), one of another is.
    let script = "getent hosts api.anthropic.com; getent hosts static.crates.io; \
                  curl -sS -o /dev/null https://github.com/; \
                  curl -sS -o /dev/null https://example.org:8443/; exit 7";
    let flags = ["--allow-host", "@anthropic"];
    let (code, doc, human) = run_twice(&fx, "proxy", &flags, script);
    assert_eq!(code, 7, "{doc}");
    let listed = denied(&doc);
    let expected = vec![
        (
            "static.crates.io".to_string(),
            None,
            "lookup".to_string(),
            "@crates".to_string(),
        ),
        (
            "github.com".to_string(),
            Some(443),
            "proxy".to_string(),
            "@github".to_string(),
        ),
        (
            "example.org".to_string(),
            Some(8443),
            "proxy".to_string(),
            "example.org:8443".to_string(),
        ),
    ];
    assert_eq!(listed, expected, "{doc}");
    insta::assert_snapshot!(network_hint(&human), @"hint: the sandbox kept the command from the network: static.crates.io (name lookup), github.com:443 (proxy), example.org:8443 (proxy); to let them through: --allow-host @crates --allow-host @github --allow-host example.org:8443");
}

#[test]
fn a_run_that_succeeds_lists_its_lookups_but_gets_no_hint() {
    require_sandbox!();
    if !require_tool("bash") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("ok");
    let (code, doc, human) = run_twice(&fx, "ok", &[], "getent hosts pypi.org; true");
    assert_eq!(code, 0, "{doc}");
    assert_eq!(denied(&doc).len(), 1, "{doc}");
    let stderr = String::from_utf8_lossy(&human.stderr);
    assert!(!stderr.contains("hint:"), "{stderr}");
}

/// A python script that throws garbage at the responder inside, then asks one real query and
/// prints the answer's id and response code (or `none` when nothing came back).
const GARBAGE: &str = r#"
import random, socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
rng = random.Random(7)
for i in range(3000):
    n = rng.randrange(0, 700)
    s.sendto(bytes(rng.randrange(256) for _ in range(n)), ("127.0.0.1", 53))
# Queries whose names are no host names: answered, never recorded.
def query(qid, labels):
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for l in labels:
        q += bytes([len(l)]) + l
    return q + b"\0" + struct.pack(">HH", 1, 1)
s.sendto(query(1, [b"$(touch pwned)", b"example"]), ("127.0.0.1", 53))
s.sendto(query(2, [b"a\nb", b"example"]), ("127.0.0.1", 53))
# UDP drops what overflows a socket's buffer: the real query is asked again, as a resolver
# would, until it is answered (or 20 times).
s.settimeout(0.5)
answer = "none"
for attempt in range(20):
    s.sendto(query(0x4242, [b"after-garbage", b"example"]), ("127.0.0.1", 53))
    try:
        while True:
            data, _ = s.recvfrom(4096)
            qid, flags = struct.unpack(">HH", data[:4])
            if qid == 0x4242 and flags & 0x8000:
                answer = "%s %d" % (hex(qid), flags & 0xf)
                break
    except socket.timeout:
        continue
    break
print(answer)
"#;

#[test]
fn garbage_at_the_name_responder_gets_it_nowhere_and_it_still_answers() {
    require_sandbox!();
    if !require_tool("python3") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("garbage");
    let iso = fx.isolation("garbage");
    std::fs::write(iso.join("garbage.py"), GARBAGE).unwrap();
    let mut cmd = fx.cmd();
    cmd.args(["--json", "run", "-s", "garbage", "--"]);
    let output = cmd.args(["python3", "garbage.py"]).output().unwrap();
    // With --json the command's output goes to stderr.
    let printed = String::from_utf8_lossy(&output.stderr).into_owned();
    let (code, doc) = json_of(output);
    assert_eq!(code, 0, "{doc}");
    // Still answering after the garbage: no such name (3), to the query's own id.
    assert!(printed.contains("0x4242 3"), "{printed}");
    let hosts: Vec<String> = denied(&doc).into_iter().map(|d| d.0).collect();
    assert!(
        hosts.contains(&"after-garbage.example".to_string()),
        "{hosts:?}"
    );
    for host in &hosts {
        assert!(
            host.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b)),
            "{host:?} recorded"
        );
    }
    assert!(!iso.join("pwned").exists());
}

#[test]
fn the_responder_never_forwards_even_a_name_the_allowlist_names() {
    require_sandbox!();
    if !require_tool("bash") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("forward");
    // `localhost.` style names aside, the host's resolver would answer these; inside they
    // are no such name, allowed or not.
    let script = "getent hosts registry.npmjs.org; echo \"npm $?\"; \
                  getent hosts pypi.org; echo \"pypi $?\"";
    let mut cmd = fx.cmd();
    cmd.args(["run", "-s", "forward", "--allow-host", "@npm", "--"]);
    let output = cmd.args(["bash", "-c", script]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout, "npm 2\npypi 2\n", "{output:?}");
}

#[test]
fn the_no_retry_variables_come_only_with_the_network_denied_and_yours_win() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("retries");
    let script = "echo \"[$PIP_RETRIES] [$npm_config_fetch_retries] [$CARGO_NET_RETRY]\"";
    let printed = |flags: &[&str]| {
        let mut cmd = fx.cmd();
        cmd.args(["run", "-s", "retries"]).args(flags);
        let output = cmd.args(["--", "sh", "-c", script]).output().unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    assert_eq!(printed(&[]), "[0] [0] [0]\n");
    assert_eq!(printed(&["--env", "PIP_RETRIES=3"]), "[3] [0] [0]\n");
    // With an allowlist the network is real: retries are the tools' own business.
    assert_eq!(printed(&["--allow-host", "@npm"]), "[] [] []\n");
}
