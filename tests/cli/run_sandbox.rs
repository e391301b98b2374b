use std::io::Read;
use std::net::TcpListener;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::fixture::{Fixture, error_code, read_path, require_tool};

/// Fails where the machine lacks Landlock or namespaces, unless that is allowed (then skips).
macro_rules! require_sandbox {
    () => {
        if !require_tool("sandbox") {
            return;
        }
    };
}

/// A server on the host's loopback that counts the connections it accepts.
fn host_server() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counter = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            counter.fetch_add(1, Ordering::SeqCst);
            let mut stream = stream;
            let _ = stream.read(&mut [0u8; 1]);
        }
    });
    (port, accepted)
}

fn connect_script(port: u16) -> String {
    format!(
        "if (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null; then echo connected; else echo refused; fi > net.txt"
    )
}

#[test]
fn the_network_is_denied_but_loopback_works_inside() {
    require_sandbox!();
    if !require_tool("bash") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("net");
    let iso = fx.isolation("net");
    let (port, accepted) = host_server();
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "net",
        "--",
        "bash",
        "-c",
        &connect_script(port),
    ]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["sandbox"]["network"], "denied");
    assert_eq!(
        std::fs::read_to_string(iso.join("net.txt")).unwrap().trim(),
        "refused"
    );
    assert_eq!(accepted.load(Ordering::SeqCst), 0);

    // A server started inside the command on 127.0.0.1 is reachable from inside.
    if require_tool("python3") {
        let script = "import socket\ns=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(1)\n\
                      c=socket.create_connection(s.getsockname()); a,_=s.accept(); a.sendall(b'ok')\n\
                      open('inside.txt','w').write(c.recv(2).decode())\n";
        let (code, doc) = fx.json(&["run", "-s", "net", "--", "python3", "-c", script]);
        assert_eq!(code, 0, "{doc}");
        assert_eq!(
            std::fs::read_to_string(iso.join("inside.txt")).unwrap(),
            "ok"
        );
    }

    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "net",
        "--allow-network",
        "--",
        "bash",
        "-c",
        &connect_script(port),
    ]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["sandbox"]["network"], "allowed");
    assert_eq!(doc["sandbox"]["filesystem"], "confined");
    assert_eq!(
        std::fs::read_to_string(iso.join("net.txt")).unwrap().trim(),
        "connected"
    );
    assert!(accepted.load(Ordering::SeqCst) >= 1);
}

#[test]
fn writes_outside_the_isolation_fail() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("w");
    let outside_tmp = std::env::temp_dir().join(format!("a3s-iso-escape-{}", std::process::id()));
    let script = format!(
        "for f in '{}' '{}' '{}' '{}'; do if echo x > \"$f\" 2>/dev/null; then echo \"wrote $f\"; fi; done > attempts.txt; \
         echo ok > \"$TMPDIR/private.txt\" && cat \"$TMPDIR/private.txt\" > tmpdir.txt",
        fx.src.join("escape.txt").display(),
        fx.home.join("escape.txt").display(),
        outside_tmp.display(),
        fx.root.join("escape.txt").display(),
    );
    let (code, doc) = fx.json(&["run", "-s", "w", "--", "sh", "-c", &script]);
    assert_eq!(code, 0, "{doc}");
    let iso = fx.isolation("w");
    // Writes under the private /tmp land in the sandbox's own tmpfs; none reaches the host.
    for outside in [
        fx.src.join("escape.txt"),
        fx.home.join("escape.txt"),
        outside_tmp.clone(),
        fx.root.join("escape.txt"),
    ] {
        assert!(!outside.exists(), "{} was written", outside.display());
    }
    assert!(iso.join("attempts.txt").is_file());
    assert_eq!(
        std::fs::read_to_string(iso.join("tmpdir.txt"))
            .unwrap()
            .trim(),
        "ok"
    );
    for path in [
        fx.src.join("escape.txt"),
        fx.home.join("escape.txt"),
        outside_tmp,
        fx.root.join("escape.txt"),
    ] {
        assert!(!path.exists(), "{} was written", path.display());
    }
    // The private TMPDIR is gone afterwards.
    let writable: Vec<String> = doc["sandbox"]["writable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    let private = writable.iter().find(|p| p.contains("/a3s-iso-r-")).unwrap();
    assert!(!std::path::Path::new(private).exists());
}

#[test]
fn branches_made_inside_stay_the_sessions_and_commits_on_the_detached_head_work() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("g");
    let branches = fx.git(&fx.src, &["for-each-ref", "refs/heads/"]);
    let config = std::fs::read(fx.src.join(".git/config")).unwrap();
    let script = "git update-ref refs/heads/main HEAD~0 && echo update-ref >> private.txt; \
                  git branch x && echo branch >> private.txt; \
                  git config user.name intruder && echo config >> escaped.txt; \
                  echo work > work.txt && git add work.txt && git commit -q -m 'agent commit' && echo ok > committed.txt";
    let (code, doc) = fx.json(&["run", "-s", "g", "--", "sh", "-c", script]);
    assert_eq!(code, 0, "{doc}");
    let iso = fx.isolation("g");
    assert!(
        !iso.join("escaped.txt").exists(),
        "{}",
        std::fs::read_to_string(iso.join("escaped.txt")).unwrap_or_default()
    );
    // Inside, refs can be written: into the session's own layer, never the repository's.
    assert_eq!(
        std::fs::read_to_string(iso.join("private.txt")).unwrap_or_default(),
        "update-ref\nbranch\n"
    );
    assert!(
        iso.join("committed.txt").exists(),
        "the commit on the detached HEAD failed"
    );
    assert_eq!(fx.git(&iso, &["log", "-1", "--format=%s"]), "agent commit");
    assert_eq!(fx.git(&fx.src, &["for-each-ref", "refs/heads/"]), branches);
    let mirrored = fx.git(&fx.src, &["for-each-ref", "refs/a3s-iso/sessions/g/git/"]);
    assert!(
        mirrored.contains("refs/a3s-iso/sessions/g/git/heads/x"),
        "{mirrored}"
    );
    assert_eq!(std::fs::read(fx.src.join(".git/config")).unwrap(), config);
}

#[test]
fn allow_write_opens_exactly_that_directory() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("aw");
    let cache = fx.root.join("cache");
    let other = fx.root.join("other");
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    let script = format!(
        "echo c > '{}/c.txt'; echo o > '{}/o.txt'; true",
        cache.display(),
        other.display()
    );
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "aw",
        "--allow-write",
        cache.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &script,
    ]);
    assert_eq!(code, 0, "{doc}");
    assert!(cache.join("c.txt").is_file());
    assert!(!other.join("o.txt").exists());
    assert!(
        doc["sandbox"]["writable"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == cache.to_str().unwrap())
    );
    // A path that does not exist is refused before anything runs.
    let missing = fx.root.join("missing");
    let out = fx
        .cmd()
        .env(
            "A3S_ISO_ALLOW_WRITE",
            format!("{}:{}", other.display(), missing.display()),
        )
        .args(["--json", "run", "-s", "aw", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    let (code, doc) = crate::fixture::json_of(out);
    assert_eq!(code, 5, "{doc}");
    assert_eq!(error_code(&doc), "invalid_input");
    assert!(!other.join("o.txt").exists());
    // Also through the environment, colon-separated.
    let out = fx
        .cmd()
        .env("A3S_ISO_ALLOW_WRITE", format!("{}:", other.display()))
        .args(["run", "-s", "aw", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(other.join("o.txt").is_file());
}

#[test]
fn without_namespaces_run_fails_closed_unless_no_sandbox() {
    let fx = Fixture::new();
    fx.bind("nl");
    let out = fx
        .cmd()
        .env("A3S_ISO_SIMULATE_NO_NAMESPACES", "1")
        .args(["--json", "run", "-s", "nl", "--", "touch", "ran.txt"])
        .output()
        .unwrap();
    let (code, doc) = crate::fixture::json_of(out);
    assert_eq!(code, 4, "{doc}");
    assert_eq!(error_code(&doc), "sandbox_unavailable");
    assert!(
        doc["error"]["hint"]
            .as_str()
            .unwrap()
            .contains("--no-sandbox")
    );
    assert!(
        !fx.isolation("nl").join("ran.txt").exists(),
        "nothing may run"
    );
    assert_eq!(fx.git(&fx.src, &["for-each-ref", "refs/a3s-iso/runs/"]), "");

    let out = fx
        .cmd()
        .env("A3S_ISO_SIMULATE_NO_NAMESPACES", "1")
        .args([
            "--json",
            "run",
            "-s",
            "nl",
            "--no-sandbox",
            "--",
            "touch",
            "ran.txt",
        ])
        .output()
        .unwrap();
    let (code, doc) = crate::fixture::json_of(out);
    assert_eq!(code, 0, "{doc}");
    assert!(fx.isolation("nl").join("ran.txt").exists());
    assert_eq!(doc["sandbox"]["enabled"], false);
    assert_eq!(doc["sandbox"]["network"], "allowed");
    assert_eq!(doc["sandbox"]["filesystem"], "unconfined");
}

/// The unprivileged path: a user namespace gives the caller its own network namespace.
#[test]
fn the_sandbox_works_for_an_unprivileged_user() {
    require_sandbox!();
    // Root hands the test files to an unprivileged user and becomes it with setpriv.
    if !require_tool("root") || !require_tool("setpriv") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::copy(crate::fixture::BIN, root.join("a3s-iso")).unwrap();
    // Inside: an escape, a secret, the object store, a commit, a detached writer, capabilities.
    let inside = "echo x > ../escape.txt 2>/dev/null; cat ~/.ssh/key > seen.txt 2>/dev/null; \
                  rm -rf \"$(git rev-parse --git-common-dir)\"/objects/?? 2>/dev/null; \
                  echo c > c.txt; git add c.txt; git -c user.name=u -c user.email=u@example.com commit -qm inside 2> commit.err; \
                  setsid sh -c 'while :; do echo t >> ticks.txt; sleep 0.02; done' </dev/null >/dev/null 2>&1 & \
                  grep CapEff /proc/self/status | tr -d '\\t' > caps.txt; sleep 0.2; echo ok > inside.txt";
    let script = format!(
        "set -e; mkdir -p home/.ssh; echo SECRET > home/.ssh/key; git init -q src; cd src; echo a > a; git add a; \
         git -c user.name=u -c user.email=u@example.com commit -qm init; \
         ../a3s-iso bind -q -s u >/dev/null; \
         ../a3s-iso --json run -s u -- sh -c \"{inside}\" > ../run.json"
    );
    assert!(
        Command::new("chown")
            .args(["-R", "65534:65534"])
            .arg(&root)
            .status()
            .unwrap()
            .success()
    );
    let mut cmd = Command::new("setpriv");
    cmd.args([
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "sh",
        "-c",
        &script,
    ])
    .current_dir(&root);
    crate::fixture::isolate(&mut cmd, &root.join("home"));
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["sandbox"]["network"], "denied", "{run}");
    assert_eq!(run["sandbox"]["filesystem"], "confined");
    assert_eq!(
        std::fs::read_to_string(root.join(".src.a3s-isolate-u/inside.txt")).unwrap(),
        "ok\n"
    );
    assert!(!root.join("escape.txt").exists());
    let iso = root.join(".src.a3s-isolate-u");
    let read = |name: &str| std::fs::read_to_string(iso.join(name)).unwrap_or_default();
    assert_eq!(read("seen.txt"), "", "a secret was readable");
    assert_eq!(read("commit.err"), "", "git commit printed errors");
    assert_eq!(read("caps.txt").trim(), "CapEff:0000000000000000");
    let ticks = read("ticks.txt").len();
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(
        read("ticks.txt").len(),
        ticks,
        "a detached writer outlived the run"
    );
    let fsck = Command::new("git")
        .args(["-c", "safe.directory=*", "fsck", "--no-dangling"])
        .current_dir(root.join("src"))
        .output()
        .unwrap();
    assert!(
        fsck.status.success(),
        "{}",
        String::from_utf8_lossy(&fsck.stderr)
    );
}

/// Landlock is the second layer: without it the mounts still confine writes, and the report
/// says Landlock was not in force.
#[test]
fn without_landlock_the_mounts_still_confine_writes() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("ll");
    let outside = fx.home.join("ll-escape.txt");
    let script = format!("echo x > '{}'; echo inside > inside.txt", outside.display());
    let out = fx
        .cmd()
        .env("A3S_ISO_SIMULATE_NO_LANDLOCK", "1")
        .args(["--json", "run", "-s", "ll", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    let (code, doc) = crate::fixture::json_of(out);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["sandbox"]["landlock_abi"], serde_json::Value::Null);
    assert_eq!(doc["sandbox"]["mounts"], true);
    assert!(!outside.exists());
    assert!(fx.isolation("ll").join("inside.txt").is_file());
}

/// Variables that hold credentials, each with a value the test looks for everywhere.
const CREDENTIALS: [(&str, &str); 7] = [
    ("GITHUB_TOKEN", "ghp-value-one"),
    ("AWS_SECRET_ACCESS_KEY", "aws-value-two"),
    ("OPENAI_API_KEY", "sk-value-three"),
    ("ANTHROPIC_API_KEY", "sk-ant-value-four"),
    ("NPM_TOKEN", "npm-value-five"),
    ("FOO_API_KEY", "foo-value-six"),
    ("DB_PASSWORD", "db-value-seven"),
];

/// Runs `printenv` for `names` inside `run` with `flags`; returns the exit status, the JSON
/// document, everything a3s-iso printed, and what the command saw (`NAME=value` or `NAME=-`).
fn env_inside(
    fx: &Fixture,
    sandboxed: bool,
    flags: &[&str],
    names: &[&str],
) -> (i32, serde_json::Value, String, String) {
    let mut args = vec!["--json", "run", "-s", "env"];
    if !sandboxed {
        args.push("--no-sandbox");
    }
    args.extend_from_slice(flags);
    let script = "for n in \"$@\"; do printf '%s=%s\\n' \"$n\" \"$(printenv \"$n\" || echo -)\"; done > env.txt";
    args.extend_from_slice(&["--", "sh", "-c", script, "sh"]);
    args.extend_from_slice(names);
    let mut cmd = fx.cmd();
    cmd.args(&args)
        .env("LANG", "C.UTF-8")
        .env("LC_MESSAGES", "C")
        .env("PLAIN_SETTING", "plain-value");
    for (name, value) in CREDENTIALS {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, doc) = crate::fixture::json_of(out);
    let seen = std::fs::read_to_string(fx.isolation("env").join("env.txt")).unwrap_or_default();
    (code, doc, printed, seen)
}

fn names_in(doc: &serde_json::Value, key: &str) -> Vec<String> {
    doc["sandbox"][key]
        .as_array()
        .unwrap_or_else(|| panic!("no sandbox.{key}: {doc}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

/// What a command printed holds no credential's value, nor any other value not passed.
fn no_value_printed(printed: &str) {
    for (name, value) in CREDENTIALS {
        assert!(
            !printed.contains(value),
            "{name}'s value printed: {printed}"
        );
    }
    assert!(!printed.contains("plain-value"), "{printed}");
    assert!(!printed.contains("given-here"), "{printed}");
}

/// By default: the allowlist and run's own variables only, every credential dropped.
fn by_default_only_the_allowlist(
    fx: &Fixture,
    sandboxed: bool,
    credentials: &[&str],
    names: &[&str],
) {
    // By default: the allowlist and run's own variables only.
    let (code, doc, printed, seen) = env_inside(fx, sandboxed, &[], names);
    assert_eq!(code, 0, "{doc}");
    for name in credentials {
        assert!(seen.contains(&format!("{name}=-\n")), "{name}: {seen}");
    }
    assert!(seen.contains("PLAIN_SETTING=-\n"), "{seen}");
    assert!(seen.contains("LANG=C.UTF-8\n"), "{seen}");
    assert!(seen.contains("LC_MESSAGES=C\n"), "{seen}");
    assert!(seen.contains("A3S_ISO_SESSION_ID=env\n"), "{seen}");
    let dropped = names_in(&doc, "env_dropped");
    let passed = names_in(&doc, "env_passed");
    for name in credentials.iter().chain(&["PLAIN_SETTING"]) {
        assert!(dropped.iter().any(|d| d == name), "{name}: {doc}");
        assert!(!passed.iter().any(|p| p == name), "{name}: {doc}");
    }
    for name in ["PATH", "HOME", "LANG", "LC_MESSAGES", "TMPDIR"] {
        assert!(passed.iter().any(|p| p == name), "{name}: {doc}");
    }
    no_value_printed(&printed);
}

/// Named exactly, each credential passes; NAME=VALUE sets one.
fn named_exactly_each_passes(fx: &Fixture, sandboxed: bool, credentials: &[&str], names: &[&str]) {
    // Named exactly, each passes; NAME=VALUE sets one.
    let mut flags: Vec<&str> = credentials.iter().flat_map(|n| ["--env", n]).collect();
    flags.extend(["--env", "SET_HERE=given-here"]);
    let (code, doc, printed, seen) = env_inside(fx, sandboxed, &flags, names);
    assert_eq!(code, 0, "{doc}");
    for (name, value) in CREDENTIALS {
        assert!(
            seen.contains(&format!("{name}={value}\n")),
            "{name}: {seen}"
        );
    }
    assert!(seen.contains("SET_HERE=given-here\n"), "{seen}");
    let passed = names_in(&doc, "env_passed");
    for name in credentials.iter().chain(&["SET_HERE"]) {
        assert!(passed.iter().any(|p| p == name), "{name}: {doc}");
    }
    assert!(
        names_in(&doc, "env_dropped").contains(&"PLAIN_SETTING".to_string()),
        "{doc}"
    );
    no_value_printed(&printed);
}

#[test]
fn credentials_in_the_environment_reach_the_command_only_when_named() {
    let fx = Fixture::new();
    fx.bind("env");
    let modes = if crate::fixture::sandbox_available() {
        vec![true, false]
    } else {
        vec![false]
    };
    let credentials: Vec<&str> = CREDENTIALS.iter().map(|(name, _)| *name).collect();
    let mut names = credentials.clone();
    names.extend([
        "PLAIN_SETTING",
        "LANG",
        "LC_MESSAGES",
        "SET_HERE",
        "A3S_ISO_SESSION_ID",
    ]);
    for sandboxed in modes {
        eprintln!("sandboxed: {sandboxed}");
        by_default_only_the_allowlist(&fx, sandboxed, &credentials, &names);

        // A glob never passes a credential; only its exact name does.
        let globs = [
            "--env",
            "*_API_KEY",
            "--env",
            "GITHUB_*",
            "--env",
            "PLAIN_*",
        ];
        let (code, doc, printed, seen) = env_inside(&fx, sandboxed, &globs, &names);
        assert_eq!(code, 0, "{doc}");
        for name in &credentials {
            assert!(seen.contains(&format!("{name}=-\n")), "{name}: {seen}");
        }
        assert!(seen.contains("PLAIN_SETTING=plain-value\n"), "{seen}");
        no_value_printed(&printed);

        named_exactly_each_passes(&fx, sandboxed, &credentials, &names);
    }
}

#[test]
fn dev_holds_only_the_usual_nodes_unless_a_device_is_allowed() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("dev");
    let iso = fx.isolation("dev");
    let (code, doc) = fx.json(&["run", "-s", "dev", "--", "sh", "-c", "ls /dev > dev.txt"]);
    assert_eq!(code, 0, "{doc}");
    let listed = std::fs::read_to_string(iso.join("dev.txt")).unwrap();
    let usual = "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero";
    assert_eq!(
        listed.split_whitespace().collect::<Vec<_>>().join(" "),
        usual
    );
    // A host device the command needs comes back when allowed.
    let Some(device) = ["/dev/kvm", "/dev/fuse", "/dev/loop-control", "/dev/kmsg"]
        .into_iter()
        .find(|d| std::path::Path::new(d).exists())
    else {
        return;
    };
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "dev",
        "--allow-read",
        device,
        "--",
        "sh",
        "-c",
        "ls /dev > dev.txt",
    ]);
    assert_eq!(code, 0, "{doc}");
    let listed = std::fs::read_to_string(iso.join("dev.txt")).unwrap();
    let name = device.trim_start_matches("/dev/");
    assert!(listed.lines().any(|l| l == name), "{device}: {listed}");
}

/// The host's directory listing of `dir`, one name a line, sorted as `ls` sorts in the C locale.
fn host_listing(dir: &str) -> String {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names.iter().map(|n| format!("{n}\n")).collect()
}

/// With the network denied, `/sys` is a sysfs of the command's own network namespace: its
/// interfaces (loopback) are all `/sys/class/net` and `/sys/devices/virtual/net` list, never
/// the host's, and the host's mounts under `/sys` (cgroups) are still there, read-only. With
/// `--allow-network` the host's network is the command's, and so are its interfaces.
#[test]
fn the_sandboxs_sys_shows_only_its_own_network_interfaces() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("sys");
    let iso = fx.isolation("sys");
    let script = "LC_ALL=C ls /sys/class/net > class.txt; LC_ALL=C ls /sys/devices/virtual/net > virtual.txt; \
                  LC_ALL=C ls /sys/fs/cgroup > cgroup.txt; \
                  if (echo 1500 > /sys/class/net/lo/mtu) 2>/dev/null; then echo wrote > wrote.txt; fi";
    let (code, doc) = fx.json(&["run", "-s", "sys", "--", "sh", "-c", script]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        read_path(iso.join("class.txt")),
        "lo\n",
        "host: {}",
        host_listing("/sys/class/net")
    );
    assert_eq!(read_path(iso.join("virtual.txt")), "lo\n");
    assert_eq!(
        read_path(iso.join("cgroup.txt")),
        host_listing("/sys/fs/cgroup")
    );
    assert!(!iso.join("wrote.txt").exists());
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "sys",
        "--allow-network",
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        read_path(iso.join("class.txt")),
        host_listing("/sys/class/net")
    );
}
