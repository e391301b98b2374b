//! Attacks on the network allowlist proxy and on published ports, from a hostile command: each
//! attempt must reach nothing but the hosts and ports allowed, never the host's loopback or a
//! second hop, and be recorded with the run.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fixture::{Fixture, json_of, kill_leftovers, processes_with, require_tool};

macro_rules! require_sandbox_and_python {
    () => {
        if !require_tool("sandbox") || !require_tool("python3") {
            return;
        }
    };
}

/// A host on the host's loopback that keeps every byte each connection sent it, and answers
/// `200 ok` once a request head is complete: the host an allowed entry names, or a trap no
/// connection must reach.
struct Recorder {
    port: u16,
    received: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Recorder {
    fn start(ip: Ipv4Addr, port: u16) -> Recorder {
        let listener = TcpListener::bind((ip, port)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let all = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let all = all.clone();
                std::thread::spawn(move || record(stream, &all));
            }
        });
        Recorder { port, received }
    }

    fn connections(&self) -> Vec<String> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
            .collect()
    }
}

fn record(mut stream: TcpStream, all: &Mutex<Vec<Vec<u8>>>) {
    let index = {
        let mut all = all.lock().unwrap();
        all.push(Vec::new());
        all.len() - 1
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    let mut answered = false;
    let mut buf = [0u8; 64 * 1024];
    while let Ok(n @ 1..) = stream.read(&mut buf) {
        let mut all = all.lock().unwrap();
        all[index].extend_from_slice(&buf[..n]);
        if !answered && all[index].windows(4).any(|w| w == b"\r\n\r\n") {
            answered = true;
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        }
    }
}

/// Python helpers the attack scripts start with: `exchange` sends bytes (or chunks, with a
/// pause between them) to the proxy and returns what came back until it closed, `status` the
/// first line of that, `done` writes the results.
const PRELUDE: &str = r#"import json, socket, sys, time
PROXY = ('127.0.0.1', 3128)
results = {}
def exchange(data, pause=0.0, half_close=True, wait=5):
    s = socket.create_connection(PROXY, timeout=wait)
    try:
        for chunk in (data if isinstance(data, list) else [data]):
            s.sendall(chunk)
            if pause:
                time.sleep(pause)
        if half_close:
            s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    got = b''
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except OSError:
        pass
    s.close()
    return got.decode('latin-1')
def status(text):
    return text.split('\r\n', 1)[0] if text else 'closed'
def get(host, port=None, extra=''):
    authority = host if port is None else f'{host}:{port}'
    return (f'GET http://{authority}/ HTTP/1.1\r\nHost: {authority}\r\n{extra}'
            'Connection: close\r\n\r\n').encode()
def connect(host, port):
    return (f'CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n'
            'Connection: close\r\n\r\n').encode()
def done():
    with open('results.json', 'w') as f:
        json.dump(results, f)
"#;

/// Runs `script` (after [`PRELUDE`]) with python3 in a sandboxed run of `session` under
/// `flags`; returns the exit code, the run's JSON and the script's results.
fn attack(
    fx: &Fixture,
    session: &str,
    flags: &[String],
    resolve: &str,
    script: &str,
) -> (i32, Value, Value) {
    attack_limited(fx, session, flags, resolve, script, None)
}

/// [`attack`], with `run` (and so its command) limited to `files` descriptors when given.
fn attack_limited(
    fx: &Fixture,
    session: &str,
    flags: &[String],
    resolve: &str,
    script: &str,
    files: Option<u64>,
) -> (i32, Value, Value) {
    attack_with(
        fx,
        session,
        flags,
        &[("A3S_ISO_TEST_RESOLVE", resolve)],
        script,
        files,
    )
}

/// [`attack`], with more environment for a3s-iso and an optional descriptor limit.
fn attack_with(
    fx: &Fixture,
    session: &str,
    flags: &[String],
    env: &[(&str, &str)],
    script: &str,
    files: Option<u64>,
) -> (i32, Value, Value) {
    let iso = fx.isolation(session);
    std::fs::write(
        iso.join("attack.py"),
        format!("{PRELUDE}{script}\ndone()\n"),
    )
    .unwrap();
    let mut cmd = fx.cmd();
    cmd.args(["--json", "run", "-s", session, "--timeout", "240"])
        .args(flags)
        .args(["--", "python3", "attack.py"])
        .envs(env.iter().copied());
    if let Some(files) = files {
        use std::os::unix::process::CommandExt;
        let limit = rustix::process::Rlimit {
            current: Some(files),
            maximum: Some(files),
        };
        // SAFETY: setrlimit is async-signal-safe and touches nothing of the parent's.
        unsafe {
            cmd.pre_exec(move || {
                rustix::process::setrlimit(rustix::process::Resource::Nofile, limit)
                    .map_err(std::io::Error::from)
            });
        }
    }
    let (code, doc) = json_of(cmd.output().unwrap());
    let results = std::fs::read_to_string(iso.join("results.json"))
        .map(|text| serde_json::from_str(&text).unwrap())
        .unwrap_or(Value::Null);
    (code, doc, results)
}

fn allow(entries: &[String]) -> Vec<String> {
    entries
        .iter()
        .flat_map(|e| ["--allow-host".to_string(), e.clone()])
        .collect()
}

fn refusal(
    host_port: &str,
    reason: &str,
    address: Option<&str>,
) -> (String, String, Option<String>) {
    (
        host_port.to_string(),
        reason.to_string(),
        address.map(String::from),
    )
}

/// Python trying each name and literal by GET and CONNECT, and the malformed requests.
fn spelling_script(names: &[&str], literals: &[&str], p: u16) -> String {
    format!(
        "names = {names:?}\nliterals = {literals:?}\np = {p}\n\
         for h in names + literals:\n\
         \x20   results['get ' + h] = status(exchange(get(h, p)))\n\
         \x20   results['connect ' + h] = status(exchange(connect(h, p), half_close=False))\n\
         results['zone'] = status(exchange(get('[fe80::1%25lo]', p)))\n\
         results['percent'] = status(exchange(get('%31%32%37.0.0.1', p)))\n\
         results['userinfo'] = status(exchange(get('localhost.@127.0.0.1', p)))\n\
         results['connect_path'] = status(exchange(f'CONNECT localhost:{{p}}/x HTTP/1.1\\r\\nConnection: close\\r\\n\\r\\n'.encode(), half_close=False))\n\
         results['connect_no_port'] = status(exchange(b'CONNECT localhost HTTP/1.1\\r\\nConnection: close\\r\\n\\r\\n', half_close=False))\n"
    )
}

/// The refusals recorded, in order: each name by the address it resolved to, each literal as
/// not allowed, the malformed requests as bad.
fn expected_spelling_refusals(
    names: &[&str],
    literals: &[&str],
    p: u16,
) -> Vec<(String, String, Option<String>)> {
    let mut expected = Vec::new();
    for &name in names {
        let shown = name;
        let first = match name {
            "multi.test" => "10.0.0.1",
            "bench.test" => "198.18.0.1",
            _ => "127.0.0.1",
        };
        for _ in 0..2 {
            expected.push(refusal(
                &format!("{shown}:{p}"),
                "address_not_allowed",
                Some(first),
            ));
        }
    }
    for &literal in literals {
        let bare = literal.trim_start_matches('[').trim_end_matches(']');
        for _ in 0..2 {
            expected.push(refusal(&format!("{bare}:{p}"), "host_not_allowed", None));
        }
    }
    expected.push(refusal(&format!("fe80::1%25lo:{p}"), "bad_request", None));
    // hyper itself refuses a host it cannot parse: recorded without a host.
    expected.push(refusal(":0", "bad_request", None));
    expected.push(refusal(&format!("127.0.0.1:{p}"), "host_not_allowed", None));
    // CONNECT with a path (hyper's parse refusal) and without a port.
    expected.push(refusal(":0", "bad_request", None));
    expected.push(refusal("localhost:0", "bad_request", None));
    expected
}

#[test]
fn spellings_of_the_hosts_loopback_reach_nothing_and_are_recorded() {
    require_sandbox_and_python!();
    let fx = Fixture::new();
    fx.bind("spell");
    let trap = Recorder::start(Ipv4Addr::LOCALHOST, 0);
    let p = trap.port;
    // Names that resolve to the host's loopback are allowed by name: the addresses still are not.
    let names = [
        "127.1",
        "2130706433",
        "0x7f.0.0.1",
        "0177.0.0.1",
        "localhost.",
        "LOCALHOST",
        "127.0.0.1.nip.test",
        "multi.test",
        "bench.test",
    ];
    let mut entries: Vec<String> = names.iter().map(|n| format!("{n}:{p}")).collect();
    entries.push(format!("*.nip.test:{p}"));
    let literals = [
        "127.0.0.1",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[0:0:0:0:0:ffff:127.0.0.1]",
        "[::127.0.0.1]",
        "0.0.0.0",
        "[::]",
        "[::1]",
        "127.0.0.2",
    ];
    let script = spelling_script(&names, &literals, p);
    let resolve = "127.0.0.1.nip.test=127.0.0.1,multi.test=10.0.0.1|::ffff:127.0.0.1|169.254.169.254,\
         bench.test=198.18.0.1|192.0.0.2|64:ff9b:1::a00:1";
    let (code, doc, results) = attack(&fx, "spell", &allow(&entries), resolve, &script);
    assert_eq!(code, 0, "{doc}");
    let results = results.as_object().unwrap_or_else(|| panic!("{doc}"));
    for (attempt, status) in results {
        assert!(
            !status.as_str().unwrap().contains(" 200 "),
            "{attempt} got through: {results:?}"
        );
    }
    assert_eq!(trap.connections(), Vec::<String>::new(), "{results:?}");
    let expected = expected_spelling_refusals(&names, &literals, p);
    assert_eq!(crate::run_network::refusals(&doc), expected, "{results:?}");
}

#[test]
fn a_tunnel_never_carries_a_request_for_another_hop_however_it_is_spelled() {
    require_sandbox_and_python!();
    let fx = Fixture::new();
    fx.bind("hop");
    let host = Recorder::start(Ipv4Addr::LOCALHOST, 0);
    let p = host.port;
    // Each inner request names evil.example, as a request to the next proxy would; each comes
    // first through a tunnel to the allowed host.
    let script = format!(
        r#"p = {p}
inner = {{
    'crlf_first': [b'\r\nCONNECT evil.example:443 HTTP/1.1\r\n\r\n'],
    'lf_first': [b'\n\nGET http://evil.example/ HTTP/1.1\r\n\r\n'],
    'lower_case': [b'connect evil.example:443 HTTP/1.1\r\n\r\n'],
    'tab': [b'GET\thttp://evil.example/ HTTP/1.1\r\n\r\n'],
    'two_spaces': [b'GET  http://evil.example/ HTTP/1.1\r\n\r\n'],
    'long_method': [b'PROPFINDPROPFINDPROPFIND http://evil.example/ HTTP/1.1\r\n\r\n'],
    'split': [b'C', b'ON', b'NEC', b'T evil.', b'example:443 HTTP/1.1\r\n\r\n'],
    'split_uri': [b'GET ht', b'tp:/', b'/evil.example/ HTTP/1.1\r\n\r\n'],
    'blank_lines': [b'\r\n' * 5000 + b'CONNECT evil.example:443 HTTP/1.1\r\n\r\n'],
    'many_spaces': [b'GET' + b' ' * 9000 + b'http://evil.example/ HTTP/1.1\r\n\r\n'],
}}
for name, chunks in inner.items():
    # The CONNECT's head, itself in pieces, and the inner request in the same stream.
    head = f'CONNECT 127.0.0.1:{{p}} HTTP/1.1\r\nHost: 127.0.0.1:{{p}}\r\n\r\n'.encode()
    results[name] = exchange([head[:9], head[9:20], head[20:]] + chunks, pause=0.05)
# What still passes: an origin-form request through the tunnel.
results['origin_form'] = exchange(
    f'CONNECT 127.0.0.1:{{p}} HTTP/1.1\r\n\r\nGET /model HTTP/1.1\r\nHost: x\r\n\r\n'.encode())
"#
    );
    let (code, doc, results) = attack(&fx, "hop", &allow(&[format!("127.0.0.1:{p}")]), "", &script);
    assert_eq!(code, 0, "{doc}");
    let results = results.as_object().unwrap_or_else(|| panic!("{doc}"));
    let connections = host.connections();
    assert!(
        connections.iter().all(|c| !c.contains("evil")),
        "another hop reached the allowed host: {connections:?} {results:?}"
    );
    for (name, reply) in results {
        let reply = reply.as_str().unwrap();
        assert!(
            reply.starts_with("HTTP/1.1 200 OK\r\n"),
            "{name}: {reply:?}"
        );
        let through = reply.contains("\r\n\r\nHTTP/1.1 200 OK");
        assert_eq!(through, name == "origin_form", "{name}: {reply:?}");
    }
    assert!(
        connections
            .iter()
            .any(|c| c.starts_with("GET /model HTTP/1.1")),
        "{connections:?}"
    );
    let hops = vec![refusal(&format!("127.0.0.1:{p}"), "connect_in_tunnel", None); 10];
    assert_eq!(crate::run_network::refusals(&doc), hops, "{results:?}");
}

#[test]
fn a_plain_request_reaches_the_checked_host_under_its_checked_name_only() {
    require_sandbox_and_python!();
    let fx = Fixture::new();
    fx.bind("host");
    let host = Recorder::start(Ipv4Addr::LOCALHOST, 0);
    let p = host.port;
    // multi.test resolves first to a loopback address no entry names, then to the allowed one.
    let trap = Recorder::start(Ipv4Addr::new(127, 0, 0, 2), p);
    let script = format!(
        r#"p = {p}
results['host_header'] = exchange(
    f'GET http://127.0.0.1:{{p}}/h HTTP/1.1\r\nHost: evil.example:80\r\nConnection: close\r\n\r\n'.encode())
results['userinfo'] = exchange(
    f'GET http://evil.example@127.0.0.1:{{p}}/u HTTP/1.1\r\nConnection: close\r\n\r\n'.encode())
results['two_hosts'] = exchange(
    f'GET http://127.0.0.1:{{p}}/t HTTP/1.1\r\nHost: 127.0.0.1:{{p}}\r\nHost: evil.example\r\nConnection: close\r\n\r\n'.encode())
results['multi'] = exchange(get('multi.test', p))
results['mapped_entry'] = exchange(get('[::ffff:127.0.0.1]', p))
"#
    );
    let entries = [format!("[::ffff:127.0.0.1]:{p}"), format!("multi.test:{p}")];
    let resolve = "multi.test=127.0.0.2|127.0.0.1";
    let (code, doc, results) = attack(&fx, "host", &allow(&entries), resolve, &script);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(trap.connections(), Vec::<String>::new(), "{results}");
    let connections = host.connections();
    assert_eq!(connections.len(), 5, "{connections:?} {results}");
    for connection in &connections {
        let hosts: Vec<&str> = connection
            .lines()
            .filter(|l| l.to_ascii_lowercase().starts_with("host:"))
            .collect();
        assert!(!connection.contains("evil"), "{connection:?}");
        assert_eq!(hosts.len(), 1, "{connection:?}");
        assert!(
            [
                format!("host: 127.0.0.1:{p}"),
                format!("host: multi.test:{p}"),
                format!("host: [::ffff:127.0.0.1]:{p}"),
            ]
            .contains(&hosts[0].to_ascii_lowercase()),
            "{connection:?}"
        );
    }
    assert_eq!(crate::run_network::refusals(&doc), vec![], "{results}");
}

#[test]
fn plain_requests_are_checked_one_by_one_and_malformed_ones_are_refused_and_recorded() {
    require_sandbox_and_python!();
    let fx = Fixture::new();
    fx.bind("smuggle");
    let host = Recorder::start(Ipv4Addr::LOCALHOST, 0);
    let p = host.port;
    let script = format!(
        r#"p = {p}
ok = f'GET http://127.0.0.1:{{p}}/ok HTTP/1.1\r\nHost: 127.0.0.1:{{p}}\r\n\r\n'.encode()
evil = b'GET http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n'
# Two requests on one kept-alive connection, in one segment: the second is checked too.
results['pipelined'] = exchange(ok + evil)
# Content-Length and Transfer-Encoding both: the chunked body ends at once, and what follows
# is a request of its own, checked as such.
hidden = b'GET http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n'
body = b'0\r\n\r\n' + hidden
results['cl_te'] = exchange(
    f'POST http://127.0.0.1:{{p}}/cl HTTP/1.1\r\nHost: 127.0.0.1:{{p}}\r\nContent-Length: {{len(body)}}\r\n'
    'Transfer-Encoding: chunked\r\n\r\n'.encode() + body)
# A head of 1 MiB: refused, and the proxy goes on serving.
results['huge_head'] = status(exchange(
    f'GET http://127.0.0.1:{{p}}/big HTTP/1.1\r\nX-Big: {{"a" * (1 << 20)}}\r\n\r\n'.encode()))
results['after'] = status(exchange(get('127.0.0.1', p)))
"#
    );
    let (code, doc, results) = attack(
        &fx,
        "smuggle",
        &allow(&[format!("127.0.0.1:{p}")]),
        "",
        &script,
    );
    assert_eq!(code, 0, "{doc}");
    let connections = host.connections();
    assert!(
        connections.iter().all(|c| !c.contains("evil")),
        "{connections:?} {results}"
    );
    assert!(
        results["pipelined"]
            .as_str()
            .unwrap()
            .contains("403 Forbidden"),
        "{results}"
    );
    assert!(
        results["huge_head"]
            .as_str()
            .unwrap()
            .starts_with("HTTP/1.1 431"),
        "{results}"
    );
    assert_eq!(results["after"], "HTTP/1.1 200 OK", "{results}");
    let refused = crate::run_network::refusals(&doc);
    assert!(
        refused.contains(&refusal("evil.example:80", "host_not_allowed", None)),
        "{refused:?} {results}"
    );
    assert!(
        refused.contains(&refusal(":0", "bad_request", None)),
        "the huge head went unrecorded: {refused:?}"
    );
    for (host_port, reason, _) in &refused {
        assert!(
            host_port == "evil.example:80" || (host_port == ":0" && reason == "bad_request"),
            "{refused:?}"
        );
    }
}

/// The exit records a3s-iso keeps under `dir`, with their sizes.
fn exit_records(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.is_dir() {
            found.extend(exit_records(&path));
        } else if path.components().any(|c| c.as_os_str() == "run-exits") {
            found.push((path, meta.len()));
        }
    }
    found
}

#[test]
fn a_flood_of_refusals_keeps_the_run_record_bounded() {
    require_sandbox_and_python!();
    let fx = Fixture::new();
    fx.bind("flood");
    // 1100 refusals of hosts of 60000 characters, on kept-alive connections.
    let script = r#"
host = 'a' * 60000
request = f'GET http://{host}/ HTTP/1.1\r\nHost: x\r\n\r\n'.encode()
answered = 0
for _ in range(11):
    s = socket.create_connection(PROXY, timeout=30)
    for _ in range(100):
        s.sendall(request)
        got = b''
        while not got.endswith(b'bad_request\n'):
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            got += chunk
        answered += got.startswith(b'HTTP/1.1 400')
    s.close()
results['answered'] = answered
"#;
    let (code, doc, results) = attack(&fx, "flood", &allow(&["example.org".into()]), "", script);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(results["answered"], 1100, "{results}");
    let refused = doc["network"]["refused"].as_array().unwrap();
    assert_eq!(refused.len(), 1000);
    assert!(refused.iter().all(|r| r["reason"] == "bad_request"));
    let json_size = serde_json::to_string(&doc).unwrap().len();
    assert!(json_size < 1 << 20, "the run's JSON is {json_size} bytes");
    let root = fx.home.parent().unwrap();
    let records = exit_records(root);
    assert!(!records.is_empty(), "no exit record under {root:?}");
    for (path, size) in records {
        assert!(size < 1 << 20, "{path:?} is {size} bytes");
    }
    let (_, shown) = fx.json(&["show", "-s", "flood"]);
    let last = shown["runs"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["network"]["refused"].as_array().unwrap().len(), 1000);
}

/// A server inside on 127.0.0.1:3000 answering each connection with its session's name until
/// `stop` appears; and, in the same run, what the command finds of sockets that are not its
/// own (results in `sockets.json`).
const PUBLISHED_SERVER: &str = r#"import ctypes, json, os, socket, stat, sys
libc = ctypes.CDLL(None, use_errno=True)
found = {'unix': open('/proc/net/unix').read().splitlines()[1:], 'pids': [], 'taken': []}
me = os.getpid()
for pid in filter(str.isdigit, os.listdir('/proc')):
    if int(pid) == me:
        continue
    found['pids'].append(int(pid))
    # pidfd_open (434) and pidfd_getfd (438): another process's descriptors, if allowed.
    pidfd = libc.syscall(434, int(pid), 0)
    for fd in range(64):
        taken = libc.syscall(438, pidfd, fd, 0) if pidfd >= 0 else -1
        if taken >= 0:
            if stat.S_ISSOCK(os.fstat(taken).st_mode):
                found['taken'].append(f'{pid}/{fd}')
            os.close(taken)
json.dump(found, open('sockets.json', 'w'))
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', 3000)); s.listen(8); s.settimeout(0.1)
while not os.path.exists('stop'):
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    c.sendall(sys.argv[1].encode()); c.close()
"#;

/// Starts `run --publish 3000` of [`PUBLISHED_SERVER`] in `session` with `flags`; returns it
/// and the host port it printed.
fn serve_published(fx: &Fixture, session: &str, flags: &[&str]) -> (Child, u16) {
    std::fs::write(
        fx.isolation(session).join("published_server.py"),
        PUBLISHED_SERVER,
    )
    .unwrap();
    let mut child = fx
        .cmd()
        // Full path: the test watches the isolation while the command runs, and a layered
        // run's writes show there only when it ends.
        .env("A3S_ISO_TEST_FULL_RUN", "1")
        .args(["--json", "run", "-s", session, "--publish", "3000"])
        .args(flags)
        .args(["--", "python3", "published_server.py", session])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap_or(0) > 0 {
        let port = line
            .trim_end()
            .strip_prefix("published 127.0.0.1:")
            .and_then(|rest| rest.strip_suffix(" -> 3000"))
            .and_then(|port| port.parse::<u16>().ok());
        if let Some(port) = port {
            // The rest of stderr is drained so that the run never blocks on it.
            std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
            return (child, port);
        }
        line.clear();
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("no published line");
}

/// This machine's address on its default route, if it has one that is not loopback.
fn non_loopback_address() -> Option<std::net::IpAddr> {
    let socket = UdpSocket::bind("0.0.0.0:0").ok()?;
    // No packet is sent: connecting a UDP socket only picks the route and source address.
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// Only 127.0.0.1 listens (not the IPv6 loopback, another loopback address, nor the machine's
/// address on its network), and the command holds no socket of the helper's.
fn only_the_hosts_loopback_listens(fx: &Fixture, port: u16) {
    // Only 127.0.0.1 listens: not the IPv6 loopback, not another loopback address, not
    // the machine's address on its network.
    assert!(TcpStream::connect(("::1", port)).is_err());
    // Another loopback address: not 127.0.0.2, where the registries of `run_caches` listen
    // on ports of their own, which may have this one's number.
    assert!(TcpStream::connect(("127.0.0.9", port)).is_err());
    match non_loopback_address() {
        Some(ip) => assert!(TcpStream::connect((ip, port)).is_err(), "reached on {ip}"),
        None => eprintln!("no address but loopback here: the network side is not tried"),
    }
    // The command holds no socket of the helper's and can take none from another process.
    let found: Value = serde_json::from_str(
        &std::fs::read_to_string(fx.isolation("served").join("sockets.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(found["taken"], serde_json::json!([]), "{found}");
    // Init is there to try, the helper (outside the PID namespace) is not.
    assert_eq!(found["pids"], serde_json::json!([1]), "{found}");
    assert_eq!(found["unix"], serde_json::json!([]), "{found}");
}

/// Another session's sandbox reaches the published port neither directly nor through its
/// proxy, even with the host's loopback named; nor a unix socket of the host's.
fn another_sandbox_reaches_it_no_way(fx: &Fixture, port: u16) {
    // Another session's sandbox reaches it neither directly nor through its proxy, even
    // with the host's loopback named; nor a unix socket of the host's.
    let host_socket =
        std::env::temp_dir().join(format!("a3s-iso-attack-{}-{port}.sock", std::process::id()));
    let _listening = std::os::unix::net::UnixListener::bind(&host_socket).unwrap();
    let abstract_name = format!("a3s-iso-attack-{}-{port}", std::process::id());
    let _abstract = {
        use std::os::linux::net::SocketAddrExt;
        let address = std::os::unix::net::SocketAddr::from_abstract_name(&abstract_name);
        std::os::unix::net::UnixListener::bind_addr(&address.unwrap()).unwrap()
    };
    let script = format!(
        r#"port = {port}
try:
    socket.create_connection(('127.0.0.1', port), timeout=5).close()
    results['direct'] = 'connected'
except OSError as e:
    results['direct'] = 'refused'
results['literal'] = exchange(get('127.0.0.1', port))
results['name'] = exchange(get('localhost', port))
results['tunnel'] = exchange(connect('localhost', port), half_close=False)
# Unix sockets of the host's: one at a path in its /tmp, one abstract.
for name, address in [('unix_path', {path:?}), ('unix_abstract', '\0' + {abstract_name:?})]:
    u = socket.socket(socket.AF_UNIX)
    try:
        u.connect(address)
        results[name] = 'connected'
    except OSError:
        results[name] = 'refused'
"#,
        path = host_socket.to_str().unwrap(),
    );
    let entries = [format!("localhost:{port}")];
    let (code, doc, results) = attack(fx, "other", &allow(&entries), "", &script);
    assert_eq!(code, 0, "{doc}");
    let _ = std::fs::remove_file(&host_socket);
    assert_eq!(results["direct"], "refused", "{results}");
    assert_eq!(results["unix_path"], "refused", "{results}");
    assert_eq!(results["unix_abstract"], "refused", "{results}");
    for name in ["literal", "name", "tunnel"] {
        let reply = results[name].as_str().unwrap();
        assert!(reply.starts_with("HTTP/1.1 403"), "{name}: {reply:?}");
        assert!(!reply.contains("served"), "{name}: {reply:?}");
    }
}

#[test]
fn a_published_port_stays_on_the_hosts_loopback_and_goes_with_a_killed_run() {
    require_sandbox_and_python!();
    let fx = Fixture::new();
    fx.bind("served");
    fx.bind("other");
    let (mut served, port) = serve_published(&fx, "served", &["--allow-host", "example.org"]);
    let result = std::panic::catch_unwind(|| {
        assert_eq!(crate::run_network::fetch_from("127.0.0.1", port), "served");
        only_the_hosts_loopback_listens(&fx, port);
        another_sandbox_reaches_it_no_way(&fx, port);
    });
    // `run` killed outright: the port closes with it, and the server inside goes too.
    served.kill().unwrap();
    served.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while (TcpStream::connect(("127.0.0.1", port)).is_ok()
        || !processes_with("published_server.py").is_empty())
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left = processes_with("published_server.py");
    kill_leftovers("published_server.py");
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "still published after run was killed"
    );
    assert_eq!(left, Vec::<i32>::new(), "the server outlived its run");
}

#[test]
fn a_flood_of_connections_to_the_proxy_leaves_the_run_able_to_serve_end_and_record() {
    require_sandbox_and_python!();
    let fx = Fixture::new();
    fx.bind("conns");
    // `run` gets 256 descriptors, and the command as many: it holds more connections to the
    // proxy than `run` can accept, then lets them go; the proxy serves again, and the run
    // ends and is recorded as usual.
    let script = r#"
import resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = []
while len(held) < 50000:
    try:
        held.append(socket.create_connection(PROXY, timeout=2))
    except OSError:
        break
results['opened'] = len(held)
time.sleep(1)
for s in held:
    s.close()
held = []
deadline = time.time() + 30
while time.time() < deadline:
    reply = status(exchange(get('evil.example')))
    if reply != 'closed':
        break
    time.sleep(0.2)
results['after'] = reply
"#;
    let allowed = allow(&["example.org".into()]);
    let (code, doc, results) = attack_limited(&fx, "conns", &allowed, "", script, Some(256));
    assert_eq!(code, 0, "{doc}");
    assert!(results["opened"].as_u64().unwrap() > 200, "{results}");
    assert_eq!(results["after"], "HTTP/1.1 403 Forbidden", "{results}");
    assert_eq!(
        crate::run_network::refusals(&doc),
        vec![refusal("evil.example:80", "host_not_allowed", None)],
        "{results}"
    );
    let (_, shown) = fx.json(&["show", "-s", "conns"]);
    let last = shown["runs"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(crate::run_network::refusals(&last).len(), 1, "{shown}");
}

#[test]
fn attempts_the_command_makes_just_before_it_ends_are_recorded() {
    require_sandbox_and_python!();
    let fx = Fixture::new();
    fx.bind("last");
    let host = Recorder::start(Ipv4Addr::LOCALHOST, 0);
    let p = host.port;
    // Requests sent without waiting for any answer, the last one just before the command ends:
    // each is still decided and recorded.
    let script = format!(
        r#"
held = []
for i in range(40):
    s = socket.create_connection(PROXY, timeout=5)
    # Odd ones are allowed by name, and resolved (slowly) before they are refused.
    s.sendall(get(f'evil{{i}}.example' if i % 2 == 0 else 'slow.test'))
    held.append(s)
for i in range(10):
    s = socket.create_connection(PROXY, timeout=5)
    s.sendall(connect('127.0.0.1', {p}) + b'CONNECT evil.example:443 HTTP/1.1\r\n\r\n')
    held.append(s)
results['sent'] = len(held)
"#
    );
    for round in 0..3 {
        let allowed = allow(&["slow.test".into(), format!("127.0.0.1:{p}")]);
        let env = [
            ("A3S_ISO_TEST_RESOLVE", "slow.test=127.0.0.1"),
            ("A3S_ISO_TEST_RESOLVE_DELAY_MS", "200"),
        ];
        let (code, doc, results) = attack_with(&fx, "last", &allowed, &env, &script, None);
        assert_eq!(code, 0, "{doc}");
        assert_eq!(results["sent"], 50, "{results}");
        let expected: Vec<_> = (0..40)
            .map(|i| match i % 2 {
                0 => refusal(&format!("evil{i}.example:80"), "host_not_allowed", None),
                _ => refusal("slow.test:80", "address_not_allowed", Some("127.0.0.1")),
            })
            .chain((0..10).map(|_| refusal(&format!("127.0.0.1:{p}"), "connect_in_tunnel", None)))
            .collect();
        let mut got = crate::run_network::refusals(&doc);
        got.sort();
        let mut want = expected;
        want.sort();
        assert_eq!(got, want, "round {round}");
    }
}

#[test]
fn ipv6_forms_that_embed_a_forbidden_ipv4_reach_nothing_and_are_recorded() {
    require_sandbox_and_python!();
    let fx = Fixture::new();
    fx.bind("embed");
    let trap = Recorder::start(Ipv4Addr::LOCALHOST, 0);
    let p = trap.port;
    // Each name is allowed by name and resolves to one IPv6 form that carries the host's
    // loopback, a private network or the metadata service in it.
    let forms = [
        ("sixtofour.test", "2002:7f00:1::1"),
        ("sixtofour-private.test", "2002:a00:1:ffff::1"),
        ("teredo-client.test", "2001:0:101:101::80ff:fffe"),
        ("teredo-server.test", "2001:0:a9fe:a9fe::fefe:fefe"),
        ("nat64.test", "64:ff9b::7f00:1"),
        ("isatap.test", "2606:4700::5efe:a9fe:a9fe"),
        ("isatap-global.test", "2606:4700::200:5efe:a00:1"),
        ("mapped.test", "::ffff:169.254.169.254"),
        ("compatible.test", "::a9fe:a9fe"),
    ];
    let names: Vec<&str> = forms.iter().map(|(name, _)| *name).collect();
    let entries: Vec<String> = names.iter().map(|n| format!("{n}:{p}")).collect();
    let resolve = forms
        .iter()
        .map(|(name, address)| format!("{name}={address}"))
        .collect::<Vec<_>>()
        .join(",");
    let script = format!(
        "names = {names:?}\np = {p}\n\
         for h in names:\n\
         \x20   results['get ' + h] = status(exchange(get(h, p)))\n\
         \x20   results['connect ' + h] = status(exchange(connect(h, p), half_close=False))\n"
    );
    let (code, doc, results) = attack(&fx, "embed", &allow(&entries), &resolve, &script);
    assert_eq!(code, 0, "{doc}");
    let results = results.as_object().unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(results.len(), 2 * forms.len(), "{results:?}");
    for (attempt, status) in results {
        let status = status.as_str().unwrap();
        assert!(
            status.contains(" 403 "),
            "{attempt} was not refused: {status}"
        );
    }
    assert_eq!(trap.connections(), Vec::<String>::new(), "{results:?}");
    let expected: Vec<_> = forms
        .iter()
        .flat_map(|(name, address)| {
            let one = refusal(&format!("{name}:{p}"), "address_not_allowed", Some(address));
            [one.clone(), one]
        })
        .collect();
    assert_eq!(crate::run_network::refusals(&doc), expected, "{results:?}");
}
