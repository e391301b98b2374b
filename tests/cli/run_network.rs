//! The network allowlist (`run --allow-host`, served by a3s-iso's proxy) and published ports
//! (`run --publish`): what gets through, what is refused and recorded, and what the kernel
//! refuses on its own.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::fixture::{Fixture, error_code, json_of, require_tool};

/// The fixed port of the proxy inside the sandbox.
const PROXY_PORT: u16 = 3128;

macro_rules! require_sandbox {
    () => {
        if !require_tool("sandbox") {
            return;
        }
    };
}

/// 1 MiB of pseudo-random bytes (xorshift), different for each seed.
fn random_body(seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..1 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A tiny HTTP server on the host's loopback (the "API host"): answers every request with
/// `body`; keeps the first line of what each connection sent.
struct ApiHost {
    port: u16,
    first_lines: Arc<Mutex<Vec<String>>>,
}

impl ApiHost {
    fn start(body: Vec<u8>) -> ApiHost {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let first_lines = Arc::new(Mutex::new(Vec::new()));
        let lines = first_lines.clone();
        let body = Arc::new(body);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (lines, body) = (lines.clone(), body.clone());
                std::thread::spawn(move || serve(stream, &lines, &body));
            }
        });
        ApiHost { port, first_lines }
    }

    fn first_lines(&self) -> Vec<String> {
        self.first_lines.lock().unwrap().clone()
    }
}

fn serve(stream: TcpStream, lines: &Mutex<Vec<String>>, body: &[u8]) {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut first = String::new();
    if reader.read_line(&mut first).unwrap_or(0) == 0 {
        return;
    }
    lines.lock().unwrap().push(first.trim_end().to_string());
    if !first.starts_with("GET ") {
        return;
    }
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
    }
    let mut stream = stream;
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}

/// A sandboxed run's JSON under `--allow-host`s and extra environment for a3s-iso.
fn run_script(
    fx: &Fixture,
    session: &str,
    flags: &[&str],
    env: &[(&str, &str)],
    script: &str,
) -> (i32, Value) {
    let mut cmd = fx.cmd();
    cmd.args(["--json", "run", "-s", session]).args(flags);
    cmd.args(["--", "bash", "-c", script]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    json_of(cmd.output().unwrap())
}

/// `(host:port, reason, address)` of each refusal the run recorded.
pub(crate) fn refusals(doc: &Value) -> Vec<(String, String, Option<String>)> {
    doc["network"]["refused"]
        .as_array()
        .unwrap_or_else(|| panic!("no refusals in {doc}"))
        .iter()
        .map(|r| {
            (
                format!("{}:{}", r["host"].as_str().unwrap(), r["port"]),
                r["reason"].as_str().unwrap().to_string(),
                r["address"].as_str().map(String::from),
            )
        })
        .collect()
}

#[test]
fn an_agent_reaches_its_allowed_api_host_through_the_proxy_byte_for_byte() {
    require_sandbox!();
    if !require_tool("curl") || !require_tool("bash") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("agent");
    let iso = fx.isolation("agent");
    let body = random_body(7);
    let api = ApiHost::start(body.clone());
    let allowed = format!("127.0.0.1:{}", api.port);
    let url = format!("http://127.0.0.1:{}/model", api.port);
    // NO_PROXY names 127.0.0.1 (the proxy's own address): --noproxy '' sends it to the proxy.
    let script = format!(
        "curl -sSf --noproxy '' -o plain.bin {url} && curl -sSf -p --noproxy '' -o tunnel.bin {url} \
         && printf '%s\\n' \"$HTTP_PROXY\" \"$HTTPS_PROXY\" \"$ALL_PROXY\" \"$NO_PROXY\" > proxy.env"
    );
    let (code, doc) = run_script(&fx, "agent", &["--allow-host", &allowed], &[], &script);
    assert_eq!(code, 0, "{doc}");
    for file in ["plain.bin", "tunnel.bin"] {
        let got = std::fs::read(iso.join(file)).unwrap();
        assert_eq!(sha(&got), sha(&body), "{file}");
    }
    let lines = api.first_lines();
    // Plain HTTP arrives in origin form, the tunnel carries curl's own request.
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines.iter().all(|l| l == "GET /model HTTP/1.1"),
        "{lines:?}"
    );
    let proxy = format!("http://127.0.0.1:{PROXY_PORT}");
    assert_eq!(
        std::fs::read_to_string(iso.join("proxy.env")).unwrap(),
        format!("{proxy}\n{proxy}\n{proxy}\nlocalhost,127.0.0.1,::1\n")
    );
    assert_eq!(doc["sandbox"]["network"], "allowlist", "{doc}");
    assert_eq!(doc["network"]["mode"], "allowlist", "{doc}");
    assert_eq!(doc["network"]["proxy"], format!("127.0.0.1:{PROXY_PORT}"));
    assert_eq!(doc["network"]["allowed"][0]["entry"], allowed.as_str());
    assert_eq!(doc["network"]["refused"], serde_json::json!([]));
    let passed = doc["sandbox"]["env_passed"].as_array().unwrap();
    for name in [
        "HTTP_PROXY",
        "https_proxy",
        "ALL_PROXY",
        "NO_PROXY",
        "no_proxy",
    ] {
        assert!(passed.iter().any(|n| n == name), "{name} in {passed:?}");
    }
}

/// A script that tries every way out: a host not allowed, names resolving to loopback,
/// private, metadata and v6 addresses, a port not allowed, a CONNECT inside an allowed tunnel,
/// a direct connection and UDP; each attempt appends `<name> <status>` to results.txt.
fn attack_script(p: u16) -> String {
    format!(
        "trap '' PIPE # the proxy closes a refused tunnel while bash may still write\n\
         t() {{ n=$1; shift; curl -sSf --max-time 10 --noproxy '' -o /dev/null \"$@\"; echo \"$n $?\" >> results.txt; }}\n\
         t not_allowed http://evil.example/\n\
         t localhost http://localhost/\n\
         t private http://ten.test/\n\
         t metadata http://meta.test/latest/meta-data/\n\
         t v6_loopback -p https://six.test/\n\
         t bad_port -p https://ok.test:8443/\n\
         t v6_literal http://[::1]:{p}/\n\
         exec 3<>/dev/tcp/127.0.0.1/{PROXY_PORT}\n\
         printf 'CONNECT 127.0.0.1:{p} HTTP/1.1\\r\\nHost: 127.0.0.1:{p}\\r\\n\\r\\n' >&3\n\
         read -r -t 10 status <&3; echo \"tunnel ${{status%$'\\r'}}\" >> results.txt\n\
         while read -r -t 10 line <&3 && [ \"${{line%$'\\r'}}\" != '' ]; do :; done\n\
         printf 'CONNECT evil.example:443 HTTP/1.1\\r\\nHost: evil.example:443\\r\\n\\r\\n' >&3\n\
         if read -r -t 10 reply <&3; then echo \"inner answered\" >> results.txt; else echo \"inner closed\" >> results.txt; fi\n\
         (exec 4<>/dev/tcp/127.0.0.1/{p}) 2>/dev/null; echo \"direct $?\" >> results.txt\n\
         (echo x > /dev/udp/8.8.8.8/53) 2>/dev/null; echo \"udp_dns $?\" >> results.txt\n"
    )
}

/// Every attempt but the allowed tunnel failed, and the CONNECT inside it was closed.
fn every_attempt_failed(iso: &std::path::Path) {
    let results = std::fs::read_to_string(iso.join("results.txt")).unwrap();
    let result = |name: &str| {
        results
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in {results}"))
            .to_string()
    };
    for name in [
        "not_allowed",
        "localhost",
        "private",
        "metadata",
        "v6_loopback",
        "bad_port",
        "v6_literal",
        "direct",
        "udp_dns",
    ] {
        assert_ne!(result(name), "0", "{name} got through: {results}");
    }
    assert_eq!(result("tunnel"), "HTTP/1.1 200 OK", "{results}");
    assert_eq!(result("inner"), "closed", "{results}");
}

/// The refusals the attack leaves, in order: target, reason, address.
fn expected_refusals(p: u16) -> Vec<(String, String, Option<String>)> {
    let own = |s: &str| s.to_string();
    let expected = vec![
        (own("evil.example:80"), own("host_not_allowed"), None),
        (
            own("localhost:80"),
            own("address_not_allowed"),
            Some(own("127.0.0.1")),
        ),
        (
            own("ten.test:80"),
            own("address_not_allowed"),
            Some(own("10.0.0.1")),
        ),
        (
            own("meta.test:80"),
            own("address_not_allowed"),
            Some(own("169.254.169.254")),
        ),
        (
            own("six.test:443"),
            own("address_not_allowed"),
            Some(own("::1")),
        ),
        (own("ok.test:8443"), own("port_not_allowed"), None),
        (format!("::1:{p}"), own("host_not_allowed"), None),
        (format!("127.0.0.1:{p}"), own("connect_in_tunnel"), None),
    ];
    expected
}

/// The exit record keeps the refusals, `show` gives the last run's, and `run` sums them up.
fn refusals_are_kept_and_shown(fx: &Fixture, expected: &Vec<(String, String, Option<String>)>) {
    // The exit record keeps them, and show gives the last run's.
    let (code, shown) = fx.json(&["show", "-s", "attack"]);
    assert_eq!(code, 0, "{shown}");
    let last = shown["runs"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(&refusals(&last), expected, "{shown}");
    let human = fx.cmd().args(["show", "-s", "attack"]).output().unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.contains("refused ten.test:80: address_not_allowed (10.0.0.1)"),
        "{text}"
    );
    // The human output of run sums them up on stderr.
    let out = fx
        .cmd()
        .args(["run", "-s", "attack", "--allow-host", "ok.test", "--"])
        .args(["curl", "-s", "--noproxy", "", "http://evil.example/"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("network: 1 connection refused (evil.example:80 host_not_allowed)"),
        "{stderr}"
    );
}

#[test]
fn attacks_through_the_proxy_are_refused_and_recorded() {
    require_sandbox!();
    if !require_tool("curl") || !require_tool("bash") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("attack");
    let iso = fx.isolation("attack");
    let api = ApiHost::start(b"secret".to_vec());
    let p = api.port;
    let allowed = format!("127.0.0.1:{p}");
    let script = attack_script(p);
    let resolve = "ten.test=10.0.0.1,meta.test=169.254.169.254,six.test=::1,ok.test=127.0.0.1";
    let (code, doc) = run_script(
        &fx,
        "attack",
        &[
            "--allow-host",
            &allowed,
            "--allow-host",
            "localhost",
            "--allow-host",
            "ten.test",
            "--allow-host",
            "meta.test",
            "--allow-host",
            "six.test",
            "--allow-host",
            "ok.test",
        ],
        &[("A3S_ISO_TEST_RESOLVE", resolve)],
        &script,
    );
    assert_eq!(code, 0, "{doc}");
    every_attempt_failed(&iso);
    // The allowed host never saw the CONNECT sent inside the tunnel.
    assert!(
        api.first_lines().iter().all(|l| !l.starts_with("CONNECT")),
        "{:?}",
        api.first_lines()
    );
    let expected = expected_refusals(p);
    assert_eq!(refusals(&doc), expected, "{doc}");
    refusals_are_kept_and_shown(&fx, &expected);
}

/// A server inside the sandbox on 127.0.0.1:3000 that answers each connection with `marker`
/// until the file `stop` appears in its directory.
const SERVER: &str = r#"import socket, os, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', 3000)); s.listen(8); s.settimeout(0.1)
while not os.path.exists('stop'):
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    c.sendall(sys.argv[1].encode()); c.close()
"#;

/// Starts `run --publish 3000` of the server in `session`; returns it and its host port (read
/// from the line on stderr).
fn publish(fx: &Fixture, session: &str) -> (Child, u16, BufReader<std::process::ChildStderr>) {
    std::fs::write(fx.isolation(session).join("server.py"), SERVER).unwrap();
    let mut child = fx
        .cmd()
        // Full path: the test watches the isolation while the command runs, and a layered
        // run's writes show there only when it ends.
        .env("A3S_ISO_TEST_FULL_RUN", "1")
        .args(["--json", "run", "-s", session, "--publish", "3000", "--"])
        .args(["python3", "server.py", session])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let Some(mut stderr) = child.stderr.take().map(BufReader::new) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("no stderr");
    };
    let mut line = String::new();
    let port = loop {
        line.clear();
        if stderr.read_line(&mut line).unwrap_or(0) == 0 {
            break None;
        }
        let port = line
            .trim_end()
            .strip_prefix("published 127.0.0.1:")
            .and_then(|rest| rest.strip_suffix(" -> 3000"))
            .and_then(|port| port.parse::<u16>().ok());
        if port.is_some() {
            break port;
        }
    };
    match port {
        Some(port) => (child, port, stderr),
        None => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no published line");
        }
    }
}

/// What a connection to the host's port gets, retried until the server inside answers.
fn fetch(port: u16) -> String {
    fetch_from("127.0.0.1", port)
}

/// What a connection to `ip:port` gets, retried until something answers.
pub(crate) fn fetch_from(ip: &str, port: u16) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(mut stream) = TcpStream::connect((ip, port)) {
            // A forward that never answers fails the test instead of hanging it.
            stream
                .set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            let mut got = String::new();
            let _ = stream.read_to_string(&mut got);
            if !got.is_empty() {
                return got;
            }
        }
        assert!(Instant::now() < deadline, "nothing answered on {ip}:{port}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn published_ports_reach_each_session_only_while_it_runs() {
    require_sandbox!();
    if !require_tool("python3") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("one");
    fx.bind("two");
    let (one, port_one, _e1) = publish(&fx, "one");
    let (two, port_two, _e2) = publish(&fx, "two");
    assert_ne!(port_one, port_two);
    assert_eq!(fetch(port_one), "one");
    assert_eq!(fetch(port_two), "two");
    let (code, shown) = fx.json(&["show", "-s", "one"]);
    assert_eq!(code, 0, "{shown}");
    assert_eq!(
        shown["live_run"]["published"][0]["host_port"], port_one,
        "{shown}"
    );
    assert_eq!(shown["live_run"]["published"][0]["port"], 3000, "{shown}");
    for (child, session, port) in [(one, "one", port_one), (two, "two", port_two)] {
        std::fs::write(fx.isolation(session).join("stop"), "").unwrap();
        let (code, doc) = json_of(child.wait_with_output().unwrap());
        assert_eq!(code, 0, "{doc}");
        assert_eq!(doc["sandbox"]["network"], "denied", "{doc}");
        assert_eq!(
            doc["network"]["published"],
            serde_json::json!([{"host": "127.0.0.1", "host_port": port, "port": 3000}])
        );
        // Gone with the run.
        assert!(
            TcpStream::connect(("127.0.0.1", port)).is_err(),
            "{session} still published"
        );
        let (_, shown) = fx.json(&["show", "-s", session]);
        assert_eq!(shown["live_run"], Value::Null, "{shown}");
    }
}

#[test]
fn a_host_port_in_use_fails_before_the_command_starts() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("busy");
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "busy",
        "--publish",
        &format!("{port}:3000"),
        "--",
        "touch",
        "ran",
    ]);
    assert_ne!(code, 0, "{doc}");
    assert_eq!(error_code(&doc), "invalid_input", "{doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&port.to_string()),
        "{doc}"
    );
    assert!(!fx.isolation("busy").join("ran").exists());
}

#[test]
fn allow_host_and_publish_refuse_what_cannot_hold() {
    let fx = Fixture::new();
    fx.bind("bad");
    let ran = fx.isolation("bad").join("ran");
    for flags in [
        &["--allow-host", "example.com", "--allow-network"][..],
        &["--allow-host", "example.com", "--no-sandbox"],
        &["--publish", "3000", "--allow-network"],
        &["--publish", "3000", "--no-sandbox"],
    ] {
        let (code, doc) =
            fx.json(&[&["run", "-s", "bad"][..], flags, &["--", "touch", "ran"]].concat());
        assert_eq!(code, 2, "{flags:?}: {doc}");
        assert_eq!(error_code(&doc), "usage", "{flags:?}: {doc}");
    }
    for flags in [
        &["--allow-host", "exa mple.com"][..],
        &["--allow-host", "*.com.*"],
        &["--allow-host", "example.com:0"],
        &["--allow-host", "example.com:99999"],
        &["--allow-host", "@nope"],
        &["--allow-host", ""],
        &["--allow-host", "[::1"],
        &["--publish", "0"],
        &["--publish", "x:3000"],
        &["--publish", "3128", "--allow-host", "example.com"],
    ] {
        let (code, doc) =
            fx.json(&[&["run", "-s", "bad"][..], flags, &["--", "touch", "ran"]].concat());
        assert_ne!(code, 0, "{flags:?}: {doc}");
        assert_eq!(error_code(&doc), "invalid_input", "{flags:?}: {doc}");
        assert!(!ran.exists(), "{flags:?} ran the command");
    }
}

#[test]
fn presets_and_wildcards_expand_as_documented() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("presets");
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "presets",
        "--allow-host",
        "@crates",
        "--allow-host",
        "*.example.org",
        "--allow-host",
        "[::1]:8080",
        "--",
        "true",
    ]);
    assert_eq!(code, 0, "{doc}");
    let allowed = &doc["network"]["allowed"];
    assert_eq!(allowed[0]["entry"], "@crates");
    let crates: Vec<&str> = allowed[0]["expanded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(crates.contains(&"index.crates.io:443"), "{crates:?}");
    assert!(crates.contains(&"static.crates.io:443"), "{crates:?}");
    assert_eq!(
        allowed[1]["expanded"],
        serde_json::json!(["*.example.org:80", "*.example.org:443"])
    );
    assert_eq!(allowed[2]["expanded"], serde_json::json!(["[::1]:8080"]));
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
