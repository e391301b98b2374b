//! The package managers' caches the presets bring: `npm ci`, `pip install` and `cargo fetch`
//! work inside `run` with only `@npm`, `@pypi` or `@crates` allowed, a second session reuses
//! what the first downloaded, and nothing of a cache is ever in a change set. The registries
//! are served on the host's loopback by the test (a test build routes a preset's hosts there:
//! `A3S_ISO_TEST_PRESET_HOSTS`); nothing reaches outside.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::fixture::{Fixture, json_of, patch_of, require_tool};

/// The loopback address the registries listen on: not in the run's `NO_PROXY`
/// (`127.0.0.1`), so clients inside go through the proxy, which reaches the host's loopback.
const REGISTRY_IP: &str = "127.0.0.2";

/// Writes an npm registry (a package document and its tarball), a PEP 503 simple index with
/// one wheel, and a sparse cargo index with one crate into SERVE (with `manifest.json`: URL
/// path → file, content type), and the projects that depend on them into SRC.
const GENERATE: &str = r#"
import base64, hashlib, io, json, os, sys, tarfile, zipfile
serve, src, base = sys.argv[1], sys.argv[2], sys.argv[3]
manifest = {}
def put(root, rel, data):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
def serve_at(url_path, data, kind):
    name = "f%d" % len(manifest)
    put(serve, name, data)
    manifest[url_path] = [name, kind]
def targz(files):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 1
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()
# npm
tgz = targz([("package/package.json", b'{"name":"a3s-demo","version":"1.0.0","main":"index.js"}'),
             ("package/index.js", b"module.exports = 42;\n")])
integrity = "sha512-" + base64.b64encode(hashlib.sha512(tgz).digest()).decode()
tarball = base + "/a3s-demo/-/a3s-demo-1.0.0.tgz"
serve_at("/a3s-demo/-/a3s-demo-1.0.0.tgz", tgz, "application/octet-stream")
serve_at("/a3s-demo", json.dumps({"name": "a3s-demo", "dist-tags": {"latest": "1.0.0"},
    "versions": {"1.0.0": {"name": "a3s-demo", "version": "1.0.0",
    "dist": {"tarball": tarball, "integrity": integrity, "shasum": hashlib.sha1(tgz).hexdigest()}}}}),
    "application/json")
put(src, "package.json", json.dumps({"name": "app", "version": "1.0.0",
    "dependencies": {"a3s-demo": "1.0.0"}}))
put(src, "package-lock.json", json.dumps({"name": "app", "version": "1.0.0", "lockfileVersion": 3,
    "requires": True, "packages": {"": {"name": "app", "version": "1.0.0",
    "dependencies": {"a3s-demo": "1.0.0"}}, "node_modules/a3s-demo": {"version": "1.0.0",
    "resolved": tarball, "integrity": integrity}}}, indent=2))
put(src, ".npmrc", "registry=%s/\naudit=false\nfund=false\nupdate-notifier=false\n" % base)
# pip
wheel_files = [("a3sdemo/__init__.py", b"VALUE = 42\n"),
    ("a3sdemo-1.0.dist-info/METADATA", b"Metadata-Version: 2.1\nName: a3sdemo\nVersion: 1.0\n"),
    ("a3sdemo-1.0.dist-info/WHEEL",
     b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")]
record = "".join("%s,sha256=%s,%d\n" % (n, base64.urlsafe_b64encode(hashlib.sha256(d).digest())
    .decode().rstrip("="), len(d)) for n, d in wheel_files) + "a3sdemo-1.0.dist-info/RECORD,,\n"
buf = io.BytesIO()
with zipfile.ZipFile(buf, "w") as whl:
    for name, data in wheel_files + [("a3sdemo-1.0.dist-info/RECORD", record.encode())]:
        whl.writestr(zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0)), data)
wheel = buf.getvalue()
wheel_name = "a3sdemo-1.0-py3-none-any.whl"
serve_at("/files/" + wheel_name, wheel, "application/octet-stream")
serve_at("/simple/a3sdemo/", '<html><body><a href="%s/files/%s#sha256=%s">%s</a></body></html>'
    % (base, wheel_name, hashlib.sha256(wheel).hexdigest(), wheel_name), "text/html")
# cargo
crate = targz([("a3sdemo-0.1.0/Cargo.toml",
    b'[package]\nname = "a3sdemo"\nversion = "0.1.0"\nedition = "2021"\n'),
    ("a3sdemo-0.1.0/src/lib.rs", b"pub const VALUE: u32 = 42;\n")])
serve_at("/index/config.json", json.dumps({"dl": base + "/crates/{crate}/{version}/download"}),
    "application/json")
serve_at("/index/a3/sd/a3sdemo", json.dumps({"name": "a3sdemo", "vers": "0.1.0", "deps": [],
    "cksum": hashlib.sha256(crate).hexdigest(), "features": {}, "yanked": False}) + "\n",
    "text/plain")
serve_at("/crates/a3sdemo/0.1.0/download", crate, "application/octet-stream")
put(src, "Cargo.toml", '[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n\n'
    '[dependencies]\na3sdemo = "0.1"\n')
put(src, "src/lib.rs", "pub use a3sdemo::VALUE;\n")
put(src, ".cargo/config.toml", '[source.crates-io]\nreplace-with = "loopback"\n\n'
    '[source.loopback]\nregistry = "sparse+%s/index/"\n' % base)
with open(os.path.join(serve, "manifest.json"), "w") as f:
    json.dump(manifest, f)
"#;

/// The three registries on `127.0.0.2`: each file by its URL path, and how often each path
/// was asked for.
struct Registries {
    port: u16,
    served: Arc<Mutex<BTreeMap<String, usize>>>,
}

impl Registries {
    /// Generates the registries and the projects (committed in the source), then serves.
    fn start(fx: &Fixture) -> Registries {
        let listener = TcpListener::bind((REGISTRY_IP, 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        let serve = fx.root.join("registries");
        let base = format!("http://{REGISTRY_IP}:{port}");
        let made = Command::new("python3")
            .args(["-c", GENERATE])
            .arg(&serve)
            .arg(&fx.src)
            .arg(&base)
            .output()
            .unwrap();
        assert!(made.status.success(), "{made:?}");
        fx.commit_all("projects that use the registries");
        let manifest: BTreeMap<String, (String, String)> =
            serde_json::from_slice(&std::fs::read(serve.join("manifest.json")).unwrap()).unwrap();
        let files: BTreeMap<String, (Vec<u8>, String)> = manifest
            .into_iter()
            .map(|(path, (file, kind))| (path, (std::fs::read(serve.join(file)).unwrap(), kind)))
            .collect();
        let files = Arc::new(files);
        let served = Arc::new(Mutex::new(BTreeMap::new()));
        let counts = served.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (files, counts) = (files.clone(), counts.clone());
                std::thread::spawn(move || answer(stream, &files, &counts));
            }
        });
        Registries { port, served }
    }

    /// How many times `path` was served.
    fn count(&self, path: &str) -> usize {
        self.served.lock().unwrap().get(path).copied().unwrap_or(0)
    }

    /// `A3S_ISO_TEST_PRESET_HOSTS`: every preset with a package manager routed here.
    fn presets(&self) -> String {
        let here = format!("{REGISTRY_IP}:{}", self.port);
        format!("@npm={here},@pypi={here},@crates={here}")
    }
}

/// Answers the requests of one connection (keep-alive) with the files, 404 otherwise; wheels
/// and tarballs may be cached for a year, as the real registries say.
fn answer(
    stream: TcpStream,
    files: &BTreeMap<String, (Vec<u8>, String)>,
    counts: &Mutex<BTreeMap<String, usize>>,
) {
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut stream = stream;
    loop {
        let mut first = String::new();
        if reader.read_line(&mut first).unwrap_or(0) == 0 {
            return;
        }
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                break;
            }
        }
        let mut words = first.split_whitespace();
        let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
        // A request in absolute form (never expected: the proxy sends origin form).
        let path = target.split('?').next().unwrap_or("").to_string();
        *counts.lock().unwrap().entry(path.clone()).or_default() += 1;
        let head_only = method == "HEAD";
        let written = match files.get(&path) {
            Some((body, kind)) => {
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\
                     Date: {}\r\nCache-Control: public, max-age=31536000, immutable\r\n\r\n",
                    body.len(),
                    http_date(std::time::SystemTime::now())
                );
                stream
                    .write_all(head.as_bytes())
                    .and_then(|_| match head_only {
                        true => Ok(()),
                        false => stream.write_all(body),
                    })
            }
            None => stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"),
        };
        if written.is_err() {
            return;
        }
    }
}

/// `Sun, 06 Dec 2026 05:47:00 GMT`: HTTP caches keep a response for its max-age only when
/// it says when it was sent.
fn http_date(at: std::time::SystemTime) -> String {
    let secs = at.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let weekday = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"][days.rem_euclid(7) as usize];
    let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{weekday}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        months[(month - 1) as usize],
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

/// A sandboxed run in a new session with `flags`, the presets routed to the registries;
/// returns the run's JSON.
fn run_in_new_session(
    fx: &Fixture,
    registries: &Registries,
    session: &str,
    flags: &[&str],
    script: &str,
) -> Value {
    fx.bind(session);
    let mut cmd = fx.cmd();
    cmd.args(["--json", "run", "-s", session])
        .args(flags)
        .args(["--", "bash", "-c", script])
        .env("A3S_ISO_TEST_PRESET_HOSTS", registries.presets());
    let out = cmd.output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    let (code, doc) = json_of(out);
    assert_eq!(
        (code, &doc["exit_code"]),
        (0, &Value::from(0)),
        "{doc}\n{said}"
    );
    doc
}

/// The paths a run's change set touches, from its stored document's patch.
fn change_set_paths(fx: &Fixture, run: &Value) -> Vec<String> {
    let session = run["session_id"].as_str().unwrap();
    let run_id = run["run_id"].as_str().unwrap();
    let stored = fx
        .src
        .join(".git/a3s-iso/runs")
        .join(session)
        .join(format!("{run_id}.json"));
    let doc: Value = serde_json::from_slice(&std::fs::read(stored).unwrap()).unwrap();
    let patch = String::from_utf8_lossy(&patch_of(&doc)).into_owned();
    patch
        .lines()
        .filter_map(|l| l.strip_prefix("diff --git a/"))
        .filter_map(|l| l.split(" b/").next())
        .map(String::from)
        .collect()
}

/// Every path of the change set is under one of `expected` (the tool's own output in the
/// project), and none is of a cache.
fn assert_only_project_paths(paths: &[String], expected: &[&str]) {
    assert!(!paths.is_empty());
    for path in paths {
        assert!(
            expected.iter().any(|e| path.starts_with(e)),
            "{path} in the change set: {paths:?}"
        );
        for cache in [
            "_cacache",
            "http-v2",
            "http/",
            "registry/",
            ".package-cache",
            "caches/",
        ] {
            assert!(!path.contains(cache), "{path} in the change set");
        }
    }
}

/// The run's one cache, as its JSON reports it: (preset, tool, mode, first writable dir).
fn reported_cache(run: &Value) -> (String, String, String, PathBuf) {
    let caches = run["sandbox"]["caches"].as_array().unwrap();
    assert_eq!(caches.len(), 1, "{run}");
    let c = &caches[0];
    let s = |k: &str| c[k].as_str().unwrap().to_string();
    let dir = PathBuf::from(c["writable"][0].as_str().unwrap());
    (s("preset"), s("tool"), s("mode"), dir)
}

/// Files beneath `dir`, recursively.
fn files_in(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .map(|e| match e.file_type().is_ok_and(|t| t.is_dir()) {
                true => files_in(&e.path()),
                false => 1,
            })
            .sum()
    })
}

macro_rules! require {
    ($($tool:literal),+) => {
        if !require_tool("sandbox") $(|| !require_tool($tool))+ {
            return;
        }
    };
}

#[test]
fn npm_ci_works_with_the_npm_preset_alone_and_a_second_session_reuses_its_cache() {
    require!("python3", "npm", "bash");
    let fx = Fixture::new();
    let registries = Registries::start(&fx);
    let tarball = "/a3s-demo/-/a3s-demo-1.0.0.tgz";
    let script = "npm ci --no-audit --no-fund && node -e 'process.exit(require(\"a3s-demo\") === 42 ? 0 : 1)'";
    let first = run_in_new_session(
        &fx,
        &registries,
        "npm-one",
        &["--allow-host", "@npm"],
        script,
    );
    assert_eq!(registries.count(tarball), 1);
    let (preset, tool, mode, cache) = reported_cache(&first);
    assert_eq!(
        (preset.as_str(), tool.as_str(), mode.as_str()),
        ("@npm", "npm", "private")
    );
    let data = std::fs::canonicalize(fx.home.join(".local/share/a3s-iso")).unwrap();
    assert_eq!(cache, data.join("caches/npm"));
    assert!(
        files_in(&cache.join("_cacache")) > 0,
        "nothing cached in {cache:?}"
    );
    let second = run_in_new_session(
        &fx,
        &registries,
        "npm-two",
        &["--allow-host", "@npm"],
        script,
    );
    // The tarball came from the cache the first session filled.
    assert_eq!(registries.count(tarball), 1, "{:?}", registries.served);
    for run in [&first, &second] {
        assert_only_project_paths(&change_set_paths(&fx, run), &["node_modules/"]);
        let passed = run["sandbox"]["env_passed"].as_array().unwrap();
        assert!(passed.iter().any(|n| n == "npm_config_cache"), "{passed:?}");
    }
    // A run that does not allow the preset cannot write its cache (nor poison it for others).
    let planted = format!(
        "! touch '{dir}/planted' 2>/dev/null && ! touch '{dir}/_cacache/planted' 2>/dev/null",
        dir = cache.display()
    );
    let other = run_in_new_session(
        &fx,
        &registries,
        "pip-only",
        &["--allow-host", "@pypi"],
        &planted,
    );
    assert_eq!(other["exit_code"], 0);
    assert!(!cache.join("planted").exists() && !cache.join("_cacache/planted").exists());
    // Without a cache, npm finds its default one read-only: what the preset's cache is for.
    let (code, none) = {
        fx.bind("npm-none");
        let mut cmd = fx.cmd();
        cmd.args([
            "--json",
            "run",
            "-s",
            "npm-none",
            "--allow-host",
            "@npm",
            "--cache",
            "none",
        ])
        .args(["--", "bash", "-c", script])
        .env("A3S_ISO_TEST_PRESET_HOSTS", registries.presets());
        json_of(cmd.output().unwrap())
    };
    assert_ne!(code, 0, "{none}");
    assert_eq!(none["state"], "failed", "{none}");
    assert_eq!(none["sandbox"]["caches"], serde_json::json!([]));
}

#[test]
fn pip_install_works_with_the_pypi_preset_alone_and_a_second_session_reuses_its_cache() {
    require!("python3", "pip", "bash");
    let fx = Fixture::new();
    let registries = Registries::start(&fx);
    let script = pip_script(&registries);
    let wheel = "/files/a3sdemo-1.0-py3-none-any.whl";
    let first = run_in_new_session(
        &fx,
        &registries,
        "pip-one",
        &["--allow-host", "@pypi"],
        &script,
    );
    assert_eq!(registries.count(wheel), 1);
    let (preset, tool, mode, cache) = reported_cache(&first);
    assert_eq!(
        (preset.as_str(), tool.as_str(), mode.as_str()),
        ("@pypi", "pip", "private")
    );
    assert!(files_in(&cache) > 0, "nothing cached in {cache:?}: {first}");
    let second = run_in_new_session(
        &fx,
        &registries,
        "pip-two",
        &["--allow-host", "@pypi"],
        &script,
    );
    assert_eq!(registries.count(wheel), 1, "{:?}", registries.served);
    assert_eq!(
        registries.count("/simple/a3sdemo/"),
        2,
        "{:?}",
        registries.served
    );
    for run in [&first, &second] {
        assert_only_project_paths(&change_set_paths(&fx, run), &["vendor/"]);
    }
}

#[test]
fn cargo_fetch_works_with_the_crates_preset_alone_and_a_second_session_reuses_its_cache() {
    require!("python3", "cargo", "bash");
    let fx = Fixture::new();
    let registries = Registries::start(&fx);
    let script = cargo_script();
    let download = "/crates/a3sdemo/0.1.0/download";
    let first = run_in_new_session(
        &fx,
        &registries,
        "cargo-one",
        &["--allow-host", "@crates"],
        &script,
    );
    assert_eq!(registries.count(download), 1);
    let (preset, tool, mode, cache) = reported_cache(&first);
    assert_eq!(
        (preset.as_str(), tool.as_str(), mode.as_str()),
        ("@crates", "cargo", "private")
    );
    assert!(
        files_in(&cache.join("registry/cache")) > 0,
        "nothing cached in {cache:?}"
    );
    let second = run_in_new_session(
        &fx,
        &registries,
        "cargo-two",
        &["--allow-host", "@crates"],
        &script,
    );
    assert_eq!(registries.count(download), 1, "{:?}", registries.served);
    for run in [&first, &second] {
        assert_only_project_paths(&change_set_paths(&fx, run), &["Cargo.lock"]);
    }
}

/// `pip install` of the test's package into `vendor/`, and a check that it imports.
fn pip_script(registries: &Registries) -> String {
    // The interpreter itself, not a shim that looks for its own files under HOME.
    let python = String::from_utf8(
        Command::new("python3")
            .args([
                "-c",
                "import os, sys; print(os.path.realpath(sys.executable))",
            ])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let python = python.trim();
    let index = format!("http://{REGISTRY_IP}:{}/simple/", registries.port);
    // pip caches what it gets over plain HTTP only from a host it is told to trust (the real
    // index is HTTPS).
    format!(
        "'{python}' -m pip install --disable-pip-version-check --no-compile --target vendor \
         --index-url {index} --trusted-host {REGISTRY_IP} a3sdemo \
         && PYTHONPATH=vendor '{python}' -c 'import a3sdemo; assert a3sdemo.VALUE == 42'"
    )
}

/// `cargo fetch` with the toolchain's own cargo.
fn cargo_script() -> String {
    let bin = toolchain_bin();
    format!(
        "RUSTC='{}' '{}' fetch && test -f Cargo.lock",
        bin.join("rustc").display(),
        bin.join("cargo").display()
    )
}

/// The toolchain's own cargo and rustc, not rustup's proxies (which look under HOME).
fn toolchain_bin() -> PathBuf {
    let sysroot = String::from_utf8(
        Command::new("rustc")
            .args(["--print", "sysroot"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    Path::new(sysroot.trim()).join("bin")
}

#[test]
fn with_the_user_cache_granted_the_tools_fill_the_users_own_caches_and_nothing_else() {
    require!("python3", "npm", "pip", "cargo", "bash");
    let fx = Fixture::new();
    let registries = Registries::start(&fx);
    let cargo_home = fx.home.join(".cargo");
    std::fs::create_dir_all(&cargo_home).unwrap();
    std::fs::write(cargo_home.join("config.toml"), "# the user's own\n").unwrap();
    // Granted its caches, never the rest of cargo's home: its binaries and configuration.
    let script = format!(
        "npm ci --no-audit --no-fund && {} && {} \
         && ! touch '{home}/planted' 2>/dev/null && ! echo x >> '{home}/config.toml' 2>/dev/null \
         && ! mkdir '{home}/bin' 2>/dev/null",
        pip_script(&registries),
        cargo_script(),
        home = cargo_home.display()
    );
    fx.bind("user-one");
    let mut cmd = fx.cmd();
    cmd.args(["--json", "run", "-s", "user-one", "--cache", "user"])
        .args([
            "--allow-host",
            "@npm",
            "--allow-host",
            "@pypi",
            "--allow-host",
            "@crates",
        ])
        .args(["--", "bash", "-c", &script])
        .env("A3S_ISO_TEST_PRESET_HOSTS", registries.presets())
        .env("CARGO_HOME", &cargo_home);
    let out = cmd.output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    let (code, run) = json_of(out);
    assert_eq!(
        (code, &run["exit_code"]),
        (0, &Value::from(0)),
        "{run}\n{said}"
    );
    let home = std::fs::canonicalize(&fx.home).unwrap();
    let caches = run["sandbox"]["caches"].as_array().unwrap();
    let writable: Vec<&str> = caches
        .iter()
        .flat_map(|c| c["writable"].as_array().unwrap())
        .map(|p| p.as_str().unwrap())
        .collect();
    let expected: Vec<PathBuf> = [".npm", ".cache/pip", ".cargo/registry", ".cargo/git"]
        .iter()
        .map(|rel| home.join(rel))
        .collect();
    assert_eq!(
        writable,
        expected
            .iter()
            .map(|p| p.to_str().unwrap())
            .collect::<Vec<_>>()
    );
    assert!(files_in(&home.join(".npm/_cacache")) > 0);
    assert!(files_in(&home.join(".cache/pip")) > 0);
    assert!(files_in(&home.join(".cargo/registry/cache")) > 0);
    // cargo's home beyond its caches stayed the user's: no CARGO_HOME moved, its configuration
    // untouched, no a3s-iso cache made.
    assert_eq!(
        std::fs::read_to_string(cargo_home.join("config.toml")).unwrap(),
        "# the user's own\n"
    );
    assert!(!home.join(".local/share/a3s-iso/caches").exists());
    assert_only_project_paths(
        &change_set_paths(&fx, &run),
        &["node_modules/", "vendor/", "Cargo.lock"],
    );
}

#[test]
fn the_documented_configuration_runs_as_written_and_run_cache_is_a_key_a_file_asks_trust_for() {
    require!("python3", "npm");
    let fx = Fixture::new();
    let registries = Registries::start(&fx);
    // docs/config.md's setup, as written.
    fx.write(
        ".a3s-iso.toml",
        "setup = [\"npm ci\"]\n[run]\nallow_host = [\"@npm\"]\n",
    );
    fx.commit_all("configuration");
    let (code, trusted) = fx.json(&["config", "trust"]);
    assert_eq!(code, 0, "{trusted}");
    assert_eq!(
        trusted["settings"]["run.cache"],
        serde_json::json!({"value": "private", "source": "default"})
    );
    let bind = |session: &str| {
        let mut cmd = fx.cmd();
        cmd.args(["--json", "bind", "-s", session])
            .env("A3S_ISO_TEST_PRESET_HOSTS", registries.presets());
        let (code, doc) = json_of(cmd.output().unwrap());
        assert_eq!(code, 0, "{doc}");
        assert_eq!(doc["setup"][0]["exit_code"], 0, "{doc}");
        assert!(
            fx.isolation(session)
                .join("node_modules/a3s-demo/index.js")
                .is_file()
        );
    };
    bind("setup-one");
    bind("setup-two");
    assert_eq!(registries.count("/a3s-demo/-/a3s-demo-1.0.0.tgz"), 1);
    // A file that asks for the user's own caches asks for a grant: shown before it is trusted.
    fx.write(
        ".a3s-iso.toml",
        "[run]\nallow_host = [\"@npm\"]\ncache = \"user\"\n",
    );
    fx.commit_all("the user's caches");
    let (code, config) = fx.json(&["config"]);
    assert_eq!(code, 0, "{config}");
    assert_eq!(config["repository_file"]["trust"], "changed");
    assert_eq!(
        config["repository_file"]["settings"]["run.cache"],
        serde_json::json!({"value": "user", "source": "repository"})
    );
    assert_eq!(config["settings"]["run.cache"]["value"], "private");
    let (_, human, _) = crate::fixture::human(&fx, &["config"]);
    assert!(
        human
            .lines()
            .any(|l| l.contains("run.cache") && l.contains("user (repository)")),
        "{human}"
    );
    fx.write(".a3s-iso.toml", "[run]\ncache = \"everything\"\n");
    let (code, refused) = fx.json(&["config"]);
    assert_eq!(
        (code, crate::fixture::error_code(&refused)),
        (5, "invalid_input"),
        "{refused}"
    );
}

#[test]
fn sessions_that_fill_a_private_cache_at_once_all_succeed_and_leave_it_whole() {
    require!("python3", "npm", "pip", "cargo", "bash");
    let fx = Fixture::new();
    let registries = Registries::start(&fx);
    let script = format!(
        "npm ci --no-audit --no-fund && {} && {}",
        pip_script(&registries),
        cargo_script()
    );
    let flags = [
        "--allow-host",
        "@npm",
        "--allow-host",
        "@pypi",
        "--allow-host",
        "@crates",
    ];
    let runs: Vec<Value> = std::thread::scope(|scope| {
        let started: Vec<_> = ["at-once-1", "at-once-2", "at-once-3"]
            .into_iter()
            .map(|session| {
                let (fx, registries, script) = (&fx, &registries, &script);
                scope.spawn(move || run_in_new_session(fx, registries, session, &flags, script))
            })
            .collect();
        started.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let downloads = [
        "/a3s-demo/-/a3s-demo-1.0.0.tgz",
        "/files/a3sdemo-1.0-py3-none-any.whl",
        "/crates/a3sdemo/0.1.0/download",
    ];
    let counts: Vec<usize> = downloads.iter().map(|d| registries.count(d)).collect();
    // What they wrote at once is whole: a later session takes all of it from the cache.
    let after = run_in_new_session(&fx, &registries, "after", &flags, &script);
    for (download, before) in downloads.iter().zip(&counts) {
        assert!((1..=3).contains(before), "{download}: {before}");
        assert_eq!(registries.count(download), *before, "{download}");
    }
    for run in runs.iter().chain([&after]) {
        assert_only_project_paths(
            &change_set_paths(&fx, run),
            &["node_modules/", "vendor/", "Cargo.lock"],
        );
    }
}
