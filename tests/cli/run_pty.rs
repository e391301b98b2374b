//! `run` with a terminal on stdin: the command gets a pseudo-terminal of its own. Each test
//! opens a pty of its own (the "outer" terminal), gives its slave to a3s-iso as stdin, types
//! on its master and reads there what a3s-iso wrote. Every wait is bounded.
//! `diff` on a terminal writes through the pager.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rustix::pty::OpenptFlags;
use rustix::termios::{self, LocalModes, OptionalActions, SpecialCodeIndex, Winsize};
use serde_json::Value;

use crate::fixture::sandbox_available;
use crate::fixture::{BIN, Fixture, isolate, json_of, kill_leftovers, processes_with};

/// util-linux `setsid`, to start a3s-iso as a session leader with a controlling terminal.
const SETSID: &str = "/usr/bin/setsid";

/// The longest any step may take before the test gives up (and kills what it started).
const PATIENCE: Duration = Duration::from_secs(60);

/// How long a `run --timeout 3s` may take in all, whatever its command does.
const TIMEOUT_BOUND: Duration = Duration::from_secs(6);

/// The outer terminal: the test types on its master; a3s-iso gets its slave.
struct Outer {
    master: OwnedFd,
    slave: OwnedFd,
    /// Everything read from the master so far.
    seen: Vec<u8>,
}

impl Outer {
    fn open() -> Outer {
        let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
        let master = rustix::pty::openpt(flags).unwrap();
        rustix::pty::grantpt(&master).unwrap();
        rustix::pty::unlockpt(&master).unwrap();
        let slave = rustix::pty::ioctl_tiocgptpeer(&master, flags).unwrap();
        termios::tcsetwinsize(&slave, size(33, 101)).unwrap();
        rustix::io::ioctl_fionbio(&master, true).unwrap();
        Outer {
            master,
            slave,
            seen: Vec::new(),
        }
    }

    fn stdio(&self) -> Stdio {
        Stdio::from(self.slave.try_clone().unwrap())
    }

    /// The slave's path, e.g. `/dev/pts/3`.
    fn name(&self) -> String {
        let name = rustix::pty::ptsname(&self.master, Vec::new()).unwrap();
        name.to_string_lossy().into_owned()
    }

    /// The outer terminal's settings, for comparing before and after.
    fn modes(&self) -> String {
        format!("{:?}", termios::tcgetattr(&self.slave).unwrap())
    }

    fn type_bytes(&self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let n = rustix::io::write(&self.master, bytes).unwrap();
            bytes = &bytes[n..];
        }
    }

    /// Reads what is on the master, waiting up to `wait` for something to come.
    fn read(&mut self, wait: Duration) {
        let mut fds = [rustix::event::PollFd::new(
            &self.master,
            rustix::event::PollFlags::IN,
        )];
        let timeout = rustix::event::Timespec::try_from(wait).unwrap();
        if !matches!(rustix::event::poll(&mut fds, Some(&timeout)), Ok(1..)) {
            return;
        }
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = rustix::io::read(&self.master, &mut buf) {
            self.seen.extend_from_slice(&buf[..n]);
        }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.seen).into_owned()
    }

    /// Reads until `text` shows up; panics (killing `child`) after [`PATIENCE`].
    fn wait_for(&mut self, text: &str, child: &mut Child) {
        let deadline = Instant::now() + PATIENCE;
        while !self.text().contains(text) {
            if Instant::now() >= deadline || child.try_wait().unwrap().is_some() {
                let _ = child.kill();
                let _ = child.wait();
                panic!("no {text:?} on the terminal; it shows:\n{}", self.text());
            }
            self.read(Duration::from_millis(50));
        }
    }

    /// Waits for `child` to end (reading the terminal meanwhile), then returns how it ended
    /// and what it wrote to its piped stdout and stderr.
    fn finish(&mut self, mut child: Child) -> Output {
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("a3s-iso did not end; the terminal shows:\n{}", self.text());
            }
            self.read(Duration::from_millis(20));
        };
        self.read(Duration::from_millis(50));
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        if let Some(mut pipe) = child.stdout.take() {
            pipe.read_to_end(&mut stdout).unwrap();
        }
        if let Some(mut pipe) = child.stderr.take() {
            pipe.read_to_end(&mut stderr).unwrap();
        }
        Output {
            status,
            stdout,
            stderr,
        }
    }

    /// What a process reading the outer terminal would get now (the terminal is switched to
    /// non-canonical mode so that a partial line counts too).
    fn pending_input(&self) -> Vec<u8> {
        let mut modes = termios::tcgetattr(&self.slave).unwrap();
        modes
            .local_modes
            .remove(LocalModes::ICANON | LocalModes::ECHO);
        modes.special_codes[SpecialCodeIndex::VMIN] = 0;
        modes.special_codes[SpecialCodeIndex::VTIME] = 0;
        termios::tcsetattr(&self.slave, OptionalActions::Now, &modes).unwrap();
        let mut fds = [rustix::event::PollFd::new(
            &self.slave,
            rustix::event::PollFlags::IN,
        )];
        let timeout = rustix::event::Timespec::try_from(Duration::from_millis(300)).unwrap();
        let mut pending = Vec::new();
        if matches!(rustix::event::poll(&mut fds, Some(&timeout)), Ok(1..)) {
            let mut buf = [0u8; 256];
            if let Ok(n) = rustix::io::read(&self.slave, &mut buf) {
                pending.extend_from_slice(&buf[..n]);
            }
        }
        pending
    }
}

fn size(rows: u16, cols: u16) -> Winsize {
    Winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

/// The sandbox where this machine has it, and always without.
fn modes() -> Vec<bool> {
    if sandbox_available() {
        vec![true, false]
    } else {
        vec![false]
    }
}

/// `run -s SESSION [--no-sandbox] REST...`.
fn run_args<'a>(session: &'a str, sandboxed: bool, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["run", "-s", session];
    if !sandboxed {
        args.push("--no-sandbox");
    }
    args.extend_from_slice(rest);
    args
}

/// a3s-iso in the source; with `ctty` (where `setsid` exists), as the leader of a session
/// whose controlling terminal is its stdin, like a program started from a shell.
fn a3s_iso(fx: &Fixture, ctty: bool) -> Command {
    if !ctty || !Path::new(SETSID).exists() {
        return fx.cmd();
    }
    let mut cmd = Command::new(SETSID);
    cmd.args(["--ctty", "--wait", BIN]).current_dir(&fx.src);
    isolate(&mut cmd, &fx.home);
    cmd
}

fn stored_doc(fx: &Fixture, session: &str, run: &str) -> Value {
    let path = fx
        .src
        .join(format!(".git/a3s-iso/runs/{session}/{run}.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn an_interactive_command_reads_its_own_terminal() {
    let fx = Fixture::new();
    for sandboxed in modes() {
        let session = if sandboxed {
            "tty-sandboxed"
        } else {
            "tty-host"
        };
        fx.bind(session);
        let mut outer = Outer::open();
        let before = outer.modes();
        let script = "echo ready; read x; echo got:$x; test -t 0 && test -t 1 && test -t 2 && echo tty; stty size";
        // The terminal both ways: as a3s-iso's controlling terminal, and as a plain stdin.
        let ctty = sandboxed;
        let mut child = a3s_iso(&fx, ctty)
            .args(run_args(session, sandboxed, &["--", "sh", "-c", script]))
            .stdin(outer.stdio())
            .stdout(outer.stdio())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        outer.wait_for("ready", &mut child);
        outer.type_bytes(b"hello\n");
        let out = outer.finish(child);
        let seen = outer.text();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{seen}\n{stderr}");
        assert!(seen.contains("got:hello\r\n"), "{seen}");
        assert!(seen.contains("tty\r\n"), "{seen}");
        assert!(seen.contains("33 101"), "the initial window size: {seen}");
        assert!(stderr.contains("completed"), "{stderr}");
        assert_eq!(outer.modes(), before, "the outer terminal is restored");
    }
}

#[test]
fn window_size_changes_reach_the_command() {
    if !Path::new(SETSID).exists() {
        eprintln!("skipped: no {SETSID} to give a3s-iso a controlling terminal (SIGWINCH)");
        return;
    }
    let fx = Fixture::new();
    fx.bind("winch");
    let sandboxed = sandbox_available();
    let mut outer = Outer::open();
    let script = "echo ready; while read x; do stty size; done";
    let mut child = a3s_iso(&fx, true)
        .args(run_args("winch", sandboxed, &["--", "sh", "-c", script]))
        .stdin(outer.stdio())
        .stdout(outer.stdio())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    outer.wait_for("ready", &mut child);
    // The kernel signals the outer terminal's foreground group (a3s-iso) of the change.
    termios::tcsetwinsize(&outer.master, size(40, 120)).unwrap();
    let deadline = Instant::now() + PATIENCE;
    while !outer.text().contains("40 120") && Instant::now() < deadline {
        outer.type_bytes(b"\n");
        outer.read(Duration::from_millis(200));
    }
    // Ctrl-D on an empty line: end of input, the loop ends.
    outer.type_bytes(b"\x04");
    let out = outer.finish(child);
    let seen = outer.text();
    assert!(seen.contains("40 120"), "{seen}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{seen}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn ctrl_c_on_the_terminal_cancels_the_command() {
    let fx = Fixture::new();
    for sandboxed in modes() {
        for ctty in [false, true] {
            let session = format!("int-{sandboxed}-{ctty}");
            eprintln!("sandboxed: {sandboxed}, a3s-iso's controlling terminal: {ctty}");
            fx.bind(&session);
            let mut outer = Outer::open();
            let before = outer.modes();
            // With --json, the command's output goes to stderr: here, the outer terminal. The
            // shell execs `sleep`: a Ctrl-C that lands while dash vforks a child is lost in
            // dash itself (the child's copy of its handler takes it), with or without a3s-iso.
            let mut args = vec!["--json"];
            args.extend(run_args(
                &session,
                sandboxed,
                &[
                    "--run-id",
                    "int",
                    "--",
                    "sh",
                    "-c",
                    "echo before > early.txt; echo ready; exec sleep 100",
                ],
            ));
            let mut child = a3s_iso(&fx, ctty)
                .args(&args)
                .stdin(outer.stdio())
                .stdout(Stdio::piped())
                .stderr(outer.stdio())
                .spawn()
                .unwrap();
            outer.wait_for("ready", &mut child);
            outer.type_bytes(b"\x03");
            let (code, doc) = json_of(outer.finish(child));
            assert_eq!(code, 130, "{doc}\n{}", outer.text());
            assert_eq!(doc["state"], "cancelled", "{doc}");
            assert_eq!(doc["signal"], 2, "{doc}");
            assert_eq!(doc["change_set"]["files_changed"], 1, "{doc}");
            let stored = stored_doc(&fx, &session, "int");
            assert_eq!(stored["state"], "cancelled");
            assert_eq!(outer.modes(), before, "the outer terminal is restored");
        }
    }
}

#[test]
fn ctrl_c_reaches_a_command_that_closed_its_terminal() {
    let fx = Fixture::new();
    for sandboxed in modes() {
        let session = if sandboxed {
            "closed-sandboxed"
        } else {
            "closed-host"
        };
        fx.bind(session);
        let mut outer = Outer::open();
        // The command lets go of its stdin, stdout and stderr, but the pty stays its
        // controlling terminal.
        let script = "echo ready; exec </dev/null >/dev/null 2>&1; touch closed; exec sleep 100";
        let mut child = fx
            .cmd()
            .args(run_args(session, sandboxed, &["--", "sh", "-c", script]))
            .stdin(outer.stdio())
            .stdout(outer.stdio())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        outer.wait_for("ready", &mut child);
        let deadline = Instant::now() + PATIENCE;
        while !fx.isolation(session).join("closed").exists() && Instant::now() < deadline {
            outer.read(Duration::from_millis(20));
        }
        outer.type_bytes(b"\x03");
        let out = outer.finish(child);
        assert_eq!(
            out.status.code(),
            Some(130),
            "{}\n{}",
            outer.text(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A real `python3` (a version manager's shim may not work with the tests' own HOME).
fn python() -> Option<&'static str> {
    ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .find(|p| Path::new(p).exists())
}

const INJECT: &str = r#"
import fcntl, sys, termios
try:
    for c in b"echo pwned\n":
        fcntl.ioctl(0, termios.TIOCSTI, bytes([c]))
except OSError as e:
    print("refused", e.errno)
    sys.exit(1)
print("injected")
"#;

#[test]
fn tiocsti_never_reaches_the_outer_terminal() {
    let Some(python) = python() else {
        eprintln!("skipped: no python3 to call TIOCSTI with");
        return;
    };
    let fx = Fixture::new();
    for sandboxed in modes() {
        let session = if sandboxed {
            "sti-sandboxed"
        } else {
            "sti-host"
        };
        fx.bind(session);
        let mut outer = Outer::open();
        let before = outer.modes();
        // Injected input, if the kernel allows it at all, lands in the command's own terminal.
        let script = r#"tty; "$1" -c "$2" && read line && echo "inner:$line"; echo end"#;
        let mut child = a3s_iso(&fx, true)
            .args(run_args(
                session,
                sandboxed,
                &["--", "sh", "-c", script, "sh", python, INJECT],
            ))
            .stdin(outer.stdio())
            .stdout(outer.stdio())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        outer.wait_for("end", &mut child);
        let out = outer.finish(child);
        let seen = outer.text();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{seen}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let inner = seen
            .lines()
            .find(|l| l.starts_with("/dev/pts/"))
            .unwrap_or_else(|| panic!("the command has a terminal: {seen}"))
            .trim_end();
        // In the sandbox the pty is in a devpts of its own, where names repeat the host's.
        if !sandboxed {
            assert_ne!(inner, outer.name(), "{seen}");
        }
        if sandboxed {
            assert!(seen.contains("refused 1"), "seccomp denies TIOCSTI: {seen}");
        } else {
            assert!(
                seen.contains("inner:echo pwned") || seen.contains("refused"),
                "{seen}"
            );
        }
        assert_eq!(outer.modes(), before, "the outer terminal is restored");
        let pending = outer.pending_input();
        assert!(
            pending.is_empty(),
            "input on the outer terminal: {:?}",
            String::from_utf8_lossy(&pending)
        );
    }
}

#[test]
fn without_a_terminal_the_command_gets_none() {
    let fx = Fixture::new();
    fx.bind("plain");
    let out = fx
        .cmd()
        .args(run_args(
            "plain",
            sandbox_available(),
            &[
                "--",
                "sh",
                "-c",
                "test -t 0 || echo no-tty; read x || echo eof",
            ],
        ))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "no-tty\neof\n");
}

#[test]
fn a_command_that_cannot_start_leaves_the_terminal_as_it_was() {
    let fx = Fixture::new();
    fx.bind("missing");
    let mut outer = Outer::open();
    let before = outer.modes();
    let child = fx
        .cmd()
        .arg("--json")
        .args(run_args(
            "missing",
            sandbox_available(),
            &["--", "no-such-command-here"],
        ))
        .stdin(outer.stdio())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (code, doc) = json_of(outer.finish(child));
    assert_eq!(code, 127, "{doc}");
    assert_eq!(outer.modes(), before);
}

#[test]
fn diff_on_a_terminal_goes_through_the_pager() {
    let fx = Fixture::new();
    fx.bind("pg");
    std::fs::write(fx.isolation("pg").join("README.md"), "hello\npaged\n").unwrap();
    let piped = fx.cmd().args(["diff", "-s", "pg"]).output().unwrap();
    assert!(piped.status.success());
    assert!(!piped.stdout.is_empty());
    let paged = fx.root.join("paged");
    let configured = fx.root.join("configured");
    fx.git(
        &fx.src,
        &[
            "config",
            "core.pager",
            &format!("cat > '{}'", configured.display()),
        ],
    );
    // GIT_PAGER first; without it (and PAGER), the source's core.pager.
    for (pager, file) in [(Some(&paged), &paged), (None, &configured)] {
        let mut outer = Outer::open();
        let mut cmd = a3s_iso(&fx, false);
        cmd.args(["diff", "-s", "pg"]).env_remove("PAGER");
        match pager {
            Some(path) => cmd.env("GIT_PAGER", format!("cat > '{}'", path.display())),
            None => cmd.env_remove("GIT_PAGER"),
        };
        let child = cmd
            .stdin(Stdio::null())
            .stdout(outer.stdio())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = outer.finish(child);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            std::fs::read(file).unwrap(),
            piped.stdout,
            "{}",
            file.display()
        );
        assert!(!outer.text().contains("paged"), "{}", outer.text());
    }
}

/// a3s-iso as the leader of a session whose controlling terminal is the one given as its
/// stdin, which it then swaps for /dev/null: a terminal it has but does not read (`run ...
/// < /dev/null` typed in a shell). `None` without `setsid`.
fn on_terminal_without_input(fx: &Fixture) -> Option<Command> {
    if !Path::new(SETSID).exists() {
        eprintln!("skipped: no {SETSID} to give a3s-iso a controlling terminal");
        return None;
    }
    let mut cmd = Command::new(SETSID);
    cmd.args([
        "--ctty",
        "--wait",
        "sh",
        "-c",
        "exec \"$0\" \"$@\" < /dev/null",
        BIN,
    ])
    .current_dir(&fx.src);
    isolate(&mut cmd, &fx.home);
    Some(cmd)
}

/// Reads a file the command wrote in its isolation (empty when it wrote none).
fn written(fx: &Fixture, session: &str, name: &str) -> String {
    std::fs::read_to_string(fx.isolation(session).join(name)).unwrap_or_default()
}

/// The attack run, on a terminal of its own or without one; it succeeds.
fn run_the_attack(fx: &Fixture, args: &[&str], with_terminal: bool) {
    if with_terminal {
        let mut own = Outer::open();
        let child = a3s_iso(fx, true)
            .args(args)
            .stdin(own.stdio())
            .stdout(own.stdio())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = own.finish(child);
        kill_leftovers("pts-out-of-reach");
        assert_eq!(out.status.code(), Some(0), "{}", own.text());
        assert!(own.text().contains("done"), "{}", own.text());
    } else {
        let out = fx.cmd().args(args).stdin(Stdio::null()).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Inside, /dev/pts is a fresh instance: its ptmx and the run's own pty only.
fn a_fresh_dev_pts_inside(fx: &Fixture, session: &str, with_terminal: bool, python: &str) {
    // Inside, /dev/pts is a fresh instance: its ptmx and the run's own pty only.
    let pts = written(fx, session, "pts.txt");
    let entries: Vec<&str> = pts.lines().filter(|l| *l != "ptmx").collect();
    assert!(pts.lines().any(|l| l == "ptmx"), "{pts}");
    assert_eq!(entries.len(), usize::from(with_terminal), "{pts}");
    if !python.is_empty() {
        let inner = written(fx, session, "inner.txt");
        assert!(
            inner.starts_with("/dev/pts/"),
            "a pty opened inside: {inner}"
        );
    }
}

#[test]
fn another_terminal_of_the_users_is_out_of_reach() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    // a3s-iso on a terminal of its own (the command gets a pty), and without one.
    for with_terminal in [false, true] {
        let session = format!("pts-{with_terminal}");
        fx.bind(&session);
        let mut victim = Outer::open();
        let before = victim.modes();
        // A password typed there, waiting for the program that asked for it.
        victim.type_bytes(b"hunter2\n");
        victim.read(Duration::from_millis(100));
        // (With a pty of its own, the name may be that of the run's pty inside: the test
        // looks at the other terminal itself.)
        let script = r#"t=$1
(exec 3<> "$t") 2>/dev/null && echo opened > report.txt
(timeout 2 head -c 8 < "$t") > stolen.txt 2>/dev/null
(printf 'pwned\033[2J' > "$t") 2>/dev/null
(stty -echo < "$t") 2>/dev/null
ls /dev/pts > pts.txt
if [ -n "$2" ]; then
  "$2" -c 'import os, pty; m, s = pty.openpty(); os.write(m, b"x\n"); print(os.ttyname(s), os.read(s, 1))' > inner.txt 2>&1
fi
echo done: pts-out-of-reach"#;
        let python = python().unwrap_or("");
        let victim_name = victim.name();
        let args = run_args(
            &session,
            true,
            &["--", "sh", "-c", script, "sh", &victim_name, python],
        );
        run_the_attack(&fx, &args, with_terminal);
        let stolen = written(&fx, &session, "stolen.txt");
        assert!(
            !stolen.contains("hunter2"),
            "the password was read: {stolen}"
        );
        if !with_terminal {
            let opened = written(&fx, &session, "report.txt");
            assert_eq!(opened, "", "{victim_name} opened inside");
        }
        victim.read(Duration::from_millis(100));
        assert!(!victim.text().contains("pwned"), "{}", victim.text());
        assert_eq!(
            victim.modes(),
            before,
            "the other terminal's settings changed"
        );
        a_fresh_dev_pts_inside(&fx, &session, with_terminal, python);
        let pending = victim.pending_input();
        assert_eq!(pending, b"hunter2\n", "the password is still there to read");
    }
}

#[test]
fn the_callers_terminal_is_reached_only_through_the_relay() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    let Some(mut cmd) = on_terminal_without_input(&fx) else {
        return;
    };
    fx.bind("relay");
    let mut own = Outer::open();
    let before = own.modes();
    own.type_bytes(b"hunter2\n");
    own.read(Duration::from_millis(100));
    // stdout and stderr are the caller's terminal; stdin is not, and no input is relayed.
    let script = r#"echo hello-through-the-relay
(timeout 2 head -c 8 <&1) > stolen.txt 2>/dev/null
(timeout 2 head -c 8 <&2) >> stolen.txt 2>/dev/null
(stty -echo <&1) 2>/dev/null
(stty -echo <&2) 2>/dev/null
(exec 3< /dev/tty) 2>/dev/null && echo has-tty >> report.txt
echo done: relay-only"#;
    let child = cmd
        .args(run_args("relay", true, &["--", "sh", "-c", script]))
        .stdin(own.stdio())
        .stdout(own.stdio())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = own.finish(child);
    kill_leftovers("relay-only");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        own.text(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        own.text().contains("hello-through-the-relay"),
        "{}",
        own.text()
    );
    assert!(own.text().contains("done: relay-only"), "{}", own.text());
    let stolen = written(&fx, "relay", "stolen.txt");
    assert!(
        !stolen.contains("hunter2"),
        "the password was read: {stolen}"
    );
    assert_eq!(
        written(&fx, "relay", "report.txt"),
        "",
        "/dev/tty was the caller's"
    );
    assert_eq!(
        own.modes(),
        before,
        "the caller's terminal settings changed"
    );
    assert_eq!(own.pending_input(), b"hunter2\n");
}

#[test]
fn a_timeout_ends_a_command_whatever_it_does_to_its_terminal() {
    let fx = Fixture::new();
    if on_terminal_without_input(&fx).is_none() {
        return;
    }
    let marker = "7654321";
    let scripts = [
        format!("stty -echo < /dev/tty; sleep {marker}"),
        format!("kill -STOP 0; sleep {marker}"),
    ];
    for sandboxed in modes() {
        for (n, script) in scripts.iter().enumerate() {
            eprintln!("sandboxed: {sandboxed}: {script}");
            let session = format!("stop-{sandboxed}-{n}");
            fx.bind(&session);
            let mut own = Outer::open();
            let before = own.modes();
            let mut args = vec!["--json"];
            args.extend(run_args(
                &session,
                sandboxed,
                &["--timeout", "3s", "--", "sh", "-c", script],
            ));
            let started = Instant::now();
            let mut child = on_terminal_without_input(&fx)
                .unwrap()
                .args(&args)
                .stdin(own.stdio())
                .stdout(Stdio::piped())
                .stderr(own.stdio())
                .spawn()
                .unwrap();
            // A stopped run would hang forever: it must end soon after its timeout.
            while child.try_wait().unwrap().is_none() && started.elapsed() < TIMEOUT_BOUND {
                own.read(Duration::from_millis(20));
            }
            if child.try_wait().unwrap().is_none() {
                let _ = child.kill();
                let _ = child.wait();
                kill_leftovers(marker);
                panic!("the run did not end at its timeout: {}", own.text());
            }
            let (code, doc) = json_of(own.finish(child));
            assert_eq!(code, 124, "{doc}\n{}", own.text());
            assert_eq!(doc["timed_out"], true, "{doc}");
            assert_eq!(doc["state"], "cancelled", "{doc}");
            let left = processes_with(marker);
            kill_leftovers(marker);
            assert_eq!(left, Vec::<i32>::new(), "processes of the run are left");
            assert_eq!(
                own.modes(),
                before,
                "the caller's terminal settings changed"
            );
        }
    }
}

/// Long operations show their progress on a terminal (here at once: the delay is set to 0),
/// and nothing when stderr is not a terminal or with `-q`.
#[test]
fn progress_shows_on_a_terminal_only() {
    let fx = Fixture::new();
    for id in ["p1", "p2", "p3"] {
        fx.bind(id);
    }
    // On the terminal: the spinner names the step.
    let mut outer = Outer::open();
    let child = fx
        .cmd()
        .env("A3S_ISO_PROGRESS_DELAY_MS", "0")
        .args(["discard", "-s", "p1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(outer.stdio())
        .spawn()
        .unwrap();
    let out = outer.finish(child);
    assert!(out.status.success());
    assert!(outer.text().contains("discarding"), "{}", outer.text());
    // Quiet on the terminal: nothing on it.
    let mut outer = Outer::open();
    let child = fx
        .cmd()
        .env("A3S_ISO_PROGRESS_DELAY_MS", "0")
        .args(["-q", "discard", "-s", "p2"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(outer.stdio())
        .spawn()
        .unwrap();
    let out = outer.finish(child);
    assert!(out.status.success());
    assert_eq!(outer.text(), "");
    // Piped: nothing but the answer.
    let out = fx
        .cmd()
        .env("A3S_ISO_PROGRESS_DELAY_MS", "0")
        .args(["discard", "-s", "p3"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

/// Asked on a terminal whether to trust a repository's file, the user sees every setting it
/// would grant before answering; no is no, and nothing is bound.
#[test]
fn the_trust_prompt_shows_every_grant_before_it_asks() {
    let fx = Fixture::new();
    fx.write(
        ".a3s-iso.toml",
        "setup = [\"npm ci\"]\ncopy_ignored = [\"node_modules\"]\n[run]\nallow_host = [\"@npm\"]\n\
         publish = [3000]\nallow_network = false\nprofile = \"generic\"\n[pool]\nsize = 1\n\
         keep_ignored = [\"target\"]\n",
    );
    fx.commit_all("configuration");
    let mut outer = Outer::open();
    let mut child = a3s_iso(&fx, false)
        .args(["bind", "-s", "asked", "--owner", "none"])
        .stdin(outer.stdio())
        .stdout(Stdio::piped())
        .stderr(outer.stdio())
        .spawn()
        .unwrap();
    outer.wait_for("trust it? [y/N]", &mut child);
    let asked = outer.text();
    for (key, value) in [
        ("setup", "npm ci"),
        ("copy_ignored", "node_modules"),
        ("run.allow_network", "false"),
        ("run.allow_host", "@npm"),
        ("run.publish", "3000"),
        ("run.profile", "generic"),
        ("pool.size", "1"),
        ("pool.keep_ignored", "target"),
    ] {
        assert!(
            asked
                .lines()
                .any(|l| l.split_whitespace().next() == Some(key)
                    && l.contains(&format!(" {value} (repository)"))),
            "{key} = {value} is not shown before the question:\n{asked}"
        );
    }
    outer.type_bytes(b"n\n");
    let out = outer.finish(child);
    assert_eq!(out.status.code(), Some(5), "{}", outer.text());
    assert!(!fx.isolation("asked").exists());
}
