//! A sandboxed command trying to act outside its isolation, one attack per test. Each test
//! checks the outside afterwards (bytes, modes, times, processes), not only what the command
//! saw.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::fixture::{Fixture, require_tool};

/// Fails where the machine cannot give the sandbox, unless that is allowed (then skips).
macro_rules! require {
    ($($tool:expr),+) => {
        if $(!require_tool($tool))||+ {
            return;
        }
    };
}

/// A directory on the host's own file system (not under the sandbox's private /tmp).
fn host_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("escape-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn the_object_store_is_read_only_and_commits_still_work() {
    require!("sandbox");
    let fx = Fixture::new();
    fx.bind("obj");
    let readme = fx.git(&fx.src, &["show", "HEAD:README.md"]);
    let script = "common=$(git rev-parse --git-common-dir); \
                  rm -rf \"$common\"/objects/?? 2>/dev/null; \
                  for f in $(find \"$common/objects\" -type f | head -5); do echo junk > \"$f\" 2>/dev/null; done; \
                  echo new > n.txt; git add n.txt; git commit -q -m inside 2> commit.err; echo $? > commit.rc";
    let out = fx
        .cmd()
        .args(["--json", "run", "-s", "obj", "--", "sh", "-c", script])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let (code, doc) = crate::fixture::json_of(out);
    assert_eq!(code, 0, "{doc}");
    let iso = fx.isolation("obj");
    assert_eq!(read(&iso.join("commit.rc")).trim(), "0");
    assert_eq!(
        read(&iso.join("commit.err")),
        "",
        "git commit printed errors"
    );
    assert!(!stderr.contains("error:"), "{stderr}");
    // The source's history is whole, and the commit made inside is in its store now.
    fx.git(&fx.src, &["fsck", "--no-dangling"]);
    assert_eq!(fx.git(&fx.src, &["show", "HEAD:README.md"]), readme);
    let inside = fx.git(&iso, &["rev-parse", "HEAD"]);
    fx.git(
        &fx.src,
        &["cat-file", "-e", &format!("{inside}^{{commit}}")],
    );
    assert_eq!(fx.git(&iso, &["log", "-1", "--format=%s"]), "inside");
}

#[test]
fn terminal_injection_is_denied() {
    require!("sandbox", "python3");
    let fx = Fixture::new();
    fx.bind("sti");
    let inject = "import errno, fcntl, termios\n\
                  try:\n    fcntl.ioctl(0, termios.TIOCSTI, b'x')\n    print('injected')\n\
                  except OSError as e:\n    print(errno.errorcode[e.errno])\n";
    // seccomp answers before the kernel looks at the descriptor: EPERM, whatever stdin is.
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "sti",
        "--",
        "sh",
        "-c",
        "python3 -c \"$1\" > sti.txt",
        "sh",
        inject,
    ]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(read(&fx.isolation("sti").join("sti.txt")).trim(), "EPERM");
}

#[test]
fn metadata_outside_cannot_change() {
    require!("sandbox", "python3");
    let fx = Fixture::new();
    fx.bind("meta");
    let dir = host_dir("meta");
    let victim = dir.join("victim.txt");
    std::fs::write(&victim, "mine\n").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
    let config = fx.src.join(".git/config");
    let before: Vec<(u32, i64)> = [&victim, &config, &fx.src.join("README.md")]
        .iter()
        .map(|p| {
            let m = std::fs::metadata(p).unwrap();
            (m.mode(), m.mtime())
        })
        .collect();
    let script = format!(
        "for f in '{v}' '{c}' '{r}'; do chmod 777 \"$f\"; touch -d 2001-01-01 \"$f\"; chown 65534 \"$f\"; \
         python3 -c \"import os,sys; os.setxattr(sys.argv[1], 'user.x', b'1')\" \"$f\"; done 2>/dev/null; true",
        v = victim.display(),
        c = config.display(),
        r = fx.src.join("README.md").display(),
    );
    let (code, doc) = fx.json(&["run", "-s", "meta", "--", "sh", "-c", &script]);
    assert_eq!(code, 0, "{doc}");
    let after: Vec<(u32, i64)> = [&victim, &config, &fx.src.join("README.md")]
        .iter()
        .map(|p| {
            let m = std::fs::metadata(p).unwrap();
            (m.mode(), m.mtime())
        })
        .collect();
    assert_eq!(before, after);
    let xattr = std::process::Command::new("python3")
        .args(["-c", "import os,sys; print(os.listxattr(sys.argv[1]))"])
        .arg(&victim)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&xattr.stdout).trim(), "[]");
    assert_eq!(read(&victim), "mine\n");
}

#[test]
fn a_detached_daemon_is_gone_when_run_returns() {
    require!("sandbox");
    let fx = Fixture::new();
    fx.bind("daemon");
    let iso = fx.isolation("daemon");
    let script = "setsid sh -c 'while :; do echo t >> ticks.txt; sleep 0.02; done' \
                  </dev/null >/dev/null 2>&1 & sleep 0.3";
    let (code, doc) = fx.json(&["run", "-s", "daemon", "--", "sh", "-c", script]);
    assert_eq!(code, 0, "{doc}");
    let ticks = std::fs::read(iso.join("ticks.txt")).unwrap().len();
    assert!(ticks > 0);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(std::fs::read(iso.join("ticks.txt")).unwrap().len(), ticks);
    // What is captured now is what the run captured: nothing was written after it.
    let (code, captured) = fx.json(&["capture", "-s", "daemon"]);
    assert_eq!(code, 0, "{captured}");
    assert_eq!(
        captured["result_tree"].as_str().unwrap(),
        doc["result_tree"].as_str().unwrap()
    );
}

#[test]
fn no_capabilities_no_host_name_no_devices() {
    require!("sandbox");
    let fx = Fixture::new();
    fx.bind("caps");
    let host_name = read(Path::new("/proc/sys/kernel/hostname"));
    let script = "grep CapEff /proc/self/status | tr -d '\\t' > caps.txt; \
                  hostname evil 2>/dev/null; echo $? > hostname.rc; \
                  mknod node c 1 3 2>/dev/null; echo $? > mknod.rc";
    let (code, doc) = fx.json(&["run", "-s", "caps", "--", "sh", "-c", script]);
    assert_eq!(code, 0, "{doc}");
    let iso = fx.isolation("caps");
    assert_eq!(
        read(&iso.join("caps.txt")).trim(),
        "CapEff:0000000000000000"
    );
    assert_ne!(read(&iso.join("hostname.rc")).trim(), "0");
    assert_ne!(read(&iso.join("mknod.rc")).trim(), "0");
    assert!(!iso.join("node").exists());
    assert_eq!(read(Path::new("/proc/sys/kernel/hostname")), host_name);
}

/// Serves a unix socket at `path` until the test ends; returns whether anyone connected.
fn serve(path: &Path) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    let listener = UnixListener::bind(path).unwrap();
    let reached = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = reached.clone();
    std::thread::spawn(move || {
        for _ in listener.incoming().flatten() {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    });
    reached
}

#[test]
fn host_unix_sockets_are_unreachable() {
    require!("sandbox", "python3");
    let fx = Fixture::new();
    fx.bind("sock");
    let runtime = host_dir("runtime");
    let agent_dir = host_dir("agent");
    let sockets = [
        fx.root.join("tmp.sock"),
        runtime.join("bus"),
        agent_dir.join("agent.sock"),
    ];
    let reached: Vec<_> = sockets.iter().map(|s| serve(s)).collect();
    let script = format!(
        "for s in {}; do python3 -c \"import socket,sys; c=socket.socket(socket.AF_UNIX); c.connect(sys.argv[1]); print('reached', sys.argv[1])\" \"$s\" 2>/dev/null; done > reached.txt; true",
        sockets
            .iter()
            .map(|s| format!("'{}'", s.display()))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let out = fx
        .cmd()
        .env("XDG_RUNTIME_DIR", &runtime)
        .env("SSH_AUTH_SOCK", &sockets[2])
        .args(["--json", "run", "-s", "sock", "--", "sh", "-c", &script])
        .output()
        .unwrap();
    let (code, doc) = crate::fixture::json_of(out);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(read(&fx.isolation("sock").join("reached.txt")), "");
    for (socket, flag) in sockets.iter().zip(&reached) {
        assert!(
            !flag.load(std::sync::atomic::Ordering::SeqCst),
            "{} was reached",
            socket.display()
        );
    }
}

#[test]
fn secrets_are_hidden_unless_allowed() {
    require!("sandbox");
    let fx = Fixture::new();
    fx.bind("sec");
    for (rel, content) in [
        (".ssh/id_ed25519", "SSH-SECRET"),
        (".netrc", "NETRC-SECRET"),
        (".aws/credentials", "AWS-SECRET"),
        (".git-credentials", "GIT-SECRET"),
    ] {
        let path = fx.home.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    let script = "cat ~/.ssh/id_ed25519 ~/.netrc ~/.aws/credentials ~/.git-credentials > seen.txt 2>/dev/null; true";
    let (code, doc) = fx.json(&["run", "-s", "sec", "--", "sh", "-c", script]);
    assert_eq!(code, 0, "{doc}");
    let iso = fx.isolation("sec");
    assert_eq!(read(&iso.join("seen.txt")), "");
    let hidden = doc["sandbox"]["secrets_hidden"].as_array().unwrap();
    assert_eq!(hidden.len(), 4, "{doc}");
    // One unhidden: only it is readable.
    let ssh = fx.home.join(".ssh");
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "sec",
        "--allow-read",
        ssh.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(read(&iso.join("seen.txt")), "SSH-SECRET");
    // The host's files are untouched.
    assert_eq!(read(&fx.home.join(".netrc")), "NETRC-SECRET");
}

/// The command line is no door out of a run: an a3s-iso the command starts acts with the
/// command's rights, so it discards, purges, promotes and unsandboxes nothing of yours.
#[test]
fn attack_a3s_iso_started_inside_a_run_gets_no_more_than_the_run() {
    if !require_tool("sandbox") {
        return;
    }
    // Under /tmp the run sees no source at all; elsewhere it sees it read-only.
    a3s_iso_inside_a_run_reaches_nothing(Fixture::new());
    a3s_iso_inside_a_run_reaches_nothing(Fixture::outside_tmp());
}

fn a3s_iso_inside_a_run_reaches_nothing(fx: Fixture) {
    fx.bind("mine");
    std::fs::write(fx.isolation("mine").join("WORK.txt"), "the user's work\n").unwrap();
    fx.bind("agent");
    std::fs::write(
        fx.isolation("agent").join("AGENT.txt"),
        "the agent's work\n",
    )
    .unwrap();
    let state = crate::fixture::state_dir(&fx);
    let users = |fx: &Fixture| {
        (
            crate::fixture::listing(&fx.isolation("mine")),
            std::fs::read(state.join("sessions/mine.json")).unwrap(),
            fx.git(
                &fx.src,
                &[
                    "for-each-ref",
                    "--format=%(refname) %(objectname)",
                    "refs/heads",
                    "refs/tags",
                ],
            ),
            crate::fixture::checkout_listing(&fx.src),
        )
    };
    let before = users(&fx);
    let bin = crate::fixture::BIN;
    let script = format!(
        "echo started > STARTED; \
         {bin} discard -s mine --purge; {bin} discard -s mine; {bin} promote -s agent; \
         {bin} run -s agent --no-sandbox -- sh -c 'cd \"$A3S_ISO_SOURCE\" && echo x > PWNED && \
         git add PWNED && git commit -qm pwned'; \
         {bin} --state-dir \"$A3S_ISO_SOURCE/.git/a3s-iso\" discard -s mine --purge; true"
    );
    let (code, doc) = fx.json(&["run", "-s", "agent", "--", "sh", "-c", &script]);
    assert_eq!(code, 0, "{doc}");
    assert!(
        fx.isolation("agent").join("STARTED").is_file(),
        "the script did not run"
    );
    assert_eq!(
        users(&fx),
        before,
        "a3s-iso inside the run reached the user's session"
    );
    assert!(!fx.src.join("PWNED").exists() && !fx.src.join("AGENT.txt").exists());
    // The user's session is whole: its work comes out as before.
    let (code, diff) = fx.json(&["diff", "-s", "mine"]);
    assert_eq!(code, 0, "{diff}");
    assert_eq!(diff["files"][0]["path"], "WORK.txt", "{diff}");
}
