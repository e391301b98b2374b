//! The sandbox's process tree. The helper forks the PID namespace's init; init mounts `/proc`
//! and starts the command; when the command ends, init exits, and the kernel kills whatever
//! else is left in the namespace before init's exit completes. The helper reaps init, so
//! when the helper is gone, nothing the command started still runs.
//!
//! The command leads a session of its own, outside the helper's process group: without a
//! terminal it has no controlling terminal at all, so nothing it does to a terminal can stop
//! it (or the helper). The helper and init survive the interrupts that reach the helper's
//! process group; init passes them on to the command's process group (with an interactive
//! terminal, `run` signals the terminal's foreground group itself). The helper ends the
//! namespace at once on `SIGUSR1`: that is how `run` cancels a command that ignored its polite
//! signal.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rustix::io::Errno;
use rustix::mount::{MountFlags, mount, mount_bind};
use rustix::process::{Pid, PidfdFlags, Signal, WaitOptions, WaitStatus};

use super::channel::Reporter;
use super::landlock::confine_writes;
use super::mounts;
use super::seccomp;
use super::sockets::SocketServer;
use super::spec::{SandboxSpec, TerminalSpec};
use super::status::{HelperCode, spawn_failure};
use super::sys;

/// `/proc` files a process mapped to the host's root could otherwise write (sysctls).
const PROC_READ_ONLY: &[&str] = &["/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"];

/// Interrupts the helper and init outlive (init passes them on to the command).
const SURVIVED: &[i32] = &[libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// What init passes on to the command's process group when the command has no controlling
/// terminal: the interrupts, and `SIGCONT` (a timeout continues a stopped command so that its
/// `SIGTERM` lands).
const FORWARDED: &[i32] = &[
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGCONT,
];

/// Runs the command under a new init and returns the helper's exit status (the command's),
/// or ends this process with the signal that ended the command. `terminal` is the slave of
/// the command's pseudo-terminal, when it gets one.
pub(super) fn run(
    spec: &SandboxSpec,
    reporter: &Reporter,
    command: &[OsString],
    terminal: Option<OwnedFd>,
    sockets: Option<SocketServer>,
) -> i32 {
    let program = command[0].to_string_lossy().into_owned();
    let cancel = Arc::new(AtomicBool::new(false));
    for signal in SURVIVED {
        let _ = signal_hook::flag::register(*signal, Arc::new(AtomicBool::new(false)));
    }
    let _ = signal_hook::flag::register(libc::SIGUSR1, Arc::clone(&cancel));
    let (reader, writer) = match rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC) {
        Ok(pair) => pair,
        Err(e) => {
            return reporter.fail(
                HelperCode::SandboxUnavailable,
                format!("cannot make a pipe: {e}"),
                &program,
            );
        }
    };
    match sys::fork() {
        Err(e) => reporter.fail(
            HelperCode::SandboxUnavailable,
            format!("cannot start the sandbox's init: {e}"),
            &program,
        ),
        Ok(None) => {
            drop(reader);
            // Only the helper serves sockets: init and the command hold no end of `run`'s.
            drop(sockets);
            let status = be_init(spec, reporter, command, terminal);
            let _ = rustix::io::write(&writer, &status.signal.unwrap_or(0).to_ne_bytes());
            sys::exit(status.code)
        }
        Ok(Some(init)) => {
            drop(writer);
            // Only the command holds its terminal: the relay sees when it lets go.
            drop(terminal);
            let reaped = reap(init, &cancel, sockets.as_ref());
            let mut signal = [0u8; 4];
            let signal = match rustix::io::read(&reader, &mut signal) {
                Ok(4) => i32::from_ne_bytes(signal),
                _ => 0,
            };
            if signal > 0 {
                let _ = signal_hook::low_level::emulate_default_handler(signal);
            } else if let Some(code) = reaped {
                // Init is reaped, so nothing in the sandbox runs: `run` goes on while this
                // process's exit tears the namespaces down.
                reporter.ended(code);
            }
            reaped.unwrap_or(125)
        }
    }
}

/// Waits for init; on `SIGUSR1` kills it (and so the whole namespace) first. Meanwhile it
/// answers `run`'s requests for sockets. `None`: init could not be waited for.
fn reap(init: Pid, cancel: &AtomicBool, sockets: Option<&SocketServer>) -> Option<i32> {
    // Readable the moment init ends: the wait below wakes then, not at its next tick (a
    // kernel without pidfds ticks alone).
    let ended = rustix::process::pidfd_open(init, PidfdFlags::empty()).ok();
    loop {
        match rustix::process::waitpid(Some(init), WaitOptions::NOHANG) {
            Ok(Some((_, status))) => return Some(exit_code(status)),
            Ok(None) => {}
            Err(Errno::INTR) => continue,
            Err(_) => return None,
        }
        if cancel.swap(false, Ordering::SeqCst) {
            let _ = rustix::process::kill_process(init, Signal::KILL);
        }
        let tick = Duration::from_millis(5);
        match sockets {
            Some(sockets) => sockets.serve_for(tick, ended.as_ref()),
            None => super::sockets::wait_for(ended.as_ref(), tick),
        }
    }
}

fn exit_code(status: WaitStatus) -> i32 {
    match (status.exit_status(), status.terminating_signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        _ => 125,
    }
}

/// How the command ended, as init passes it on.
struct Ended {
    code: i32,
    signal: Option<i32>,
}

/// Init's life: `/proc`, the command, reaping until the command ends.
fn be_init(
    spec: &SandboxSpec,
    reporter: &Reporter,
    command: &[OsString],
    terminal: Option<OwnedFd>,
) -> Ended {
    let program = command[0].to_string_lossy().into_owned();
    let unavailable = |message: String| Ended {
        code: reporter.fail(HelperCode::SandboxUnavailable, message, &program),
        signal: None,
    };
    let _ = rustix::process::set_parent_process_death_signal(Some(Signal::KILL));
    if let Err(message) = mount_proc() {
        return unavailable(message);
    }
    let forward = spec.terminal != TerminalSpec::Interactive;
    if forward && let Err(e) = sys::forward_signals(FORWARDED) {
        return unavailable(format!("cannot pass signals on: {e}"));
    }
    let child = match sys::fork() {
        Err(e) => return unavailable(format!("cannot start the command: {e}")),
        Ok(None) => sys::exit(become_command(spec, reporter, command, terminal)),
        Ok(Some(child)) => child,
    };
    drop(terminal);
    if forward {
        // The command leads its own session, and so its own process group.
        sys::forward_to(child);
    }
    // Reap everything (orphans are reparented to init) until the command itself ends.
    loop {
        match rustix::process::wait(WaitOptions::empty()) {
            Ok(Some((pid, status))) if pid == child => {
                return Ended {
                    code: exit_code(status),
                    signal: status.terminating_signal(),
                };
            }
            Ok(_) | Err(Errno::INTR) => {}
            Err(_) => {
                return Ended {
                    code: 125,
                    signal: None,
                };
            }
        }
    }
}

fn mount_proc() -> std::result::Result<(), String> {
    mount(
        "proc",
        "/proc",
        "proc",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        None,
    )
    .map_err(|e| format!("cannot mount /proc: {e}"))?;
    for path in PROC_READ_ONLY.iter().map(Path::new).filter(|p| p.exists()) {
        mount_bind(path, path).map_err(|e| format!("cannot bind {}: {e}", path.display()))?;
        mounts::remount_read_only(path)
            .map_err(|e| format!("cannot make {} read-only: {e}", path.display()))?;
    }
    Ok(())
}

/// The command's session, and its pseudo-terminal on the streams the spec names (the
/// controlling terminal only for an interactive one).
fn take_terminal(spec: TerminalSpec, terminal: Option<OwnedFd>) -> rustix::io::Result<()> {
    rustix::process::setsid()?;
    let Some(pty) = terminal else {
        return Ok(());
    };
    let (stdin, stdout, stderr) = match spec {
        TerminalSpec::None => (false, false, false),
        TerminalSpec::Interactive => (true, true, true),
        TerminalSpec::Output { stdout, stderr } => (false, stdout, stderr),
    };
    if stdin {
        rustix::stdio::dup2_stdin(&pty)?;
        rustix::process::ioctl_tiocsctty(&pty)?;
    }
    if stdout {
        rustix::stdio::dup2_stdout(&pty)?;
    }
    if stderr {
        rustix::stdio::dup2_stderr(&pty)?;
    }
    Ok(())
}

/// In the command's process: terminal, directory, no capabilities, Landlock, seccomp, exec.
/// Returns only on failure, with the status to exit with.
fn become_command(
    spec: &SandboxSpec,
    reporter: &Reporter,
    command: &[OsString],
    terminal: Option<OwnedFd>,
) -> i32 {
    let program = command[0].to_string_lossy().into_owned();
    let fail = |message: String| reporter.fail(HelperCode::SandboxUnavailable, message, &program);
    if let Err(e) = take_terminal(spec.terminal, terminal) {
        return fail(format!(
            "cannot give the command its session and terminal: {e}"
        ));
    }
    if let Err(e) = std::env::set_current_dir(&spec.workdir) {
        return fail(format!("cannot enter {}: {e}", spec.workdir.display()));
    }
    if let Err(e) = sys::drop_capabilities() {
        return fail(format!("cannot drop capabilities: {e}"));
    }
    let mut writable: Vec<PathBuf> = spec.writable.clone();
    // Not the private /dev as a whole: only its device nodes (and pts) are written.
    writable.extend(
        spec.private
            .iter()
            .filter(|p| p.as_path() != Path::new("/dev"))
            .cloned(),
    );
    // The layered directories write to their throwaway layers; the mounted ones are the
    // profile's own copies.
    writable.extend(spec.layers.iter().map(|l| l.dir.clone()));
    writable.extend(spec.mounted.iter().map(|m| m.to.clone()));
    if let Err(message) = confine_writes(&writable).and_then(|()| seccomp::install()) {
        return fail(message);
    }
    let err = std::process::Command::new(&command[0])
        .args(&command[1..])
        .exec();
    match spawn_failure(&command[0], &err) {
        Some(failure) => reporter.fail(failure.code, failure.message, &program),
        None => reporter.fail(
            HelperCode::Internal,
            format!("cannot run {program}: {err}"),
            &program,
        ),
    }
}
