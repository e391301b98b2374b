//! The sandbox's process tree. The helper forks the PID namespace's init; init mounts `/proc`
//! and starts the command; when the command ends, init exits, and the kernel kills whatever
//! else is left in the namespace before init's exit completes. The helper reaps init, so
//! when the helper is gone, nothing the command started still runs.
//!
//! The helper survives the interrupts that reach its process group (the command gets them)
//! and ends the namespace at once on `SIGUSR1`: that is how `run` cancels a command that
//! ignored its polite signal.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rustix::io::Errno;
use rustix::mount::{MountFlags, mount, mount_bind};
use rustix::process::{Pid, Signal, WaitOptions, WaitStatus};

use super::landlock::confine_writes;
use super::mounts;
use super::seccomp;
use super::spec::SandboxSpec;
use super::status::{HelperCode, report_failure, spawn_failure};
use super::sys;

/// `/proc` files a process mapped to the host's root could otherwise write (sysctls).
const PROC_READ_ONLY: &[&str] = &["/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"];

/// Interrupts the helper and init outlive (their process group's command gets them).
const SURVIVED: &[i32] = &[libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Runs the command under a new init and returns the helper's exit status (the command's),
/// or ends this process with the signal that ended the command.
pub(super) fn run(spec: &SandboxSpec, status_file: &Path, command: &[OsString]) -> i32 {
    let program = command[0].to_string_lossy().into_owned();
    let cancel = Arc::new(AtomicBool::new(false));
    for signal in SURVIVED {
        let _ = signal_hook::flag::register(*signal, Arc::new(AtomicBool::new(false)));
    }
    let _ = signal_hook::flag::register(libc::SIGUSR1, Arc::clone(&cancel));
    let (reader, writer) = match rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC) {
        Ok(pair) => pair,
        Err(e) => {
            return report_failure(
                status_file,
                HelperCode::SandboxUnavailable,
                format!("cannot make a pipe: {e}"),
                &program,
            );
        }
    };
    match sys::fork() {
        Err(e) => report_failure(
            status_file,
            HelperCode::SandboxUnavailable,
            format!("cannot start the sandbox's init: {e}"),
            &program,
        ),
        Ok(None) => {
            drop(reader);
            let status = be_init(spec, status_file, command);
            let _ = rustix::io::write(&writer, &status.signal.unwrap_or(0).to_ne_bytes());
            sys::exit(status.code)
        }
        Ok(Some(init)) => {
            drop(writer);
            let code = reap(init, &cancel);
            let mut signal = [0u8; 4];
            if rustix::io::read(&reader, &mut signal).is_ok_and(|n| n == 4) {
                let signal = i32::from_ne_bytes(signal);
                if signal > 0 {
                    let _ = signal_hook::low_level::emulate_default_handler(signal);
                }
            }
            code
        }
    }
}

/// Waits for init; on `SIGUSR1` kills it (and so the whole namespace) first.
fn reap(init: Pid, cancel: &AtomicBool) -> i32 {
    loop {
        match rustix::process::waitpid(Some(init), WaitOptions::NOHANG) {
            Ok(Some((_, status))) => return exit_code(status),
            Ok(None) => {}
            Err(Errno::INTR) => continue,
            Err(_) => return 125,
        }
        if cancel.swap(false, Ordering::SeqCst) {
            let _ = rustix::process::kill_process(init, Signal::KILL);
        }
        std::thread::sleep(Duration::from_millis(5));
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
fn be_init(spec: &SandboxSpec, status_file: &Path, command: &[OsString]) -> Ended {
    let program = command[0].to_string_lossy().into_owned();
    let unavailable = |message: String| Ended {
        code: report_failure(
            status_file,
            HelperCode::SandboxUnavailable,
            message,
            &program,
        ),
        signal: None,
    };
    let _ = rustix::process::set_parent_process_death_signal(Some(Signal::KILL));
    if let Err(message) = mount_proc() {
        return unavailable(message);
    }
    let child = match sys::fork() {
        Err(e) => return unavailable(format!("cannot start the command: {e}")),
        Ok(None) => sys::exit(become_command(spec, status_file, command)),
        Ok(Some(child)) => child,
    };
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

/// In the command's process: terminal, directory, no capabilities, Landlock, seccomp, exec.
/// Returns only on failure, with the status to exit with.
fn become_command(spec: &SandboxSpec, status_file: &Path, command: &[OsString]) -> i32 {
    let program = command[0].to_string_lossy().into_owned();
    let fail = |message: String| {
        report_failure(
            status_file,
            HelperCode::SandboxUnavailable,
            message,
            &program,
        )
    };
    if spec.own_terminal {
        if let Err(e) = rustix::process::setsid() {
            return fail(format!("cannot start a session: {e}"));
        }
        let stdin = rustix::stdio::stdin();
        if let Err(e) = rustix::process::ioctl_tiocsctty(stdin) {
            return fail(format!("cannot take the terminal: {e}"));
        }
    }
    if let Err(e) = std::env::set_current_dir(&spec.workdir) {
        return fail(format!("cannot enter {}: {e}", spec.workdir.display()));
    }
    if let Err(e) = sys::drop_capabilities() {
        return fail(format!("cannot drop capabilities: {e}"));
    }
    let mut writable: Vec<PathBuf> = spec.writable.clone();
    writable.extend(spec.private.iter().cloned());
    if let Err(message) = confine_writes(&writable).and_then(|()| seccomp::install()) {
        return fail(message);
    }
    let err = std::process::Command::new(&command[0])
        .args(&command[1..])
        .exec();
    match spawn_failure(&command[0], &err) {
        Some(e) => report_failure(status_file, HelperCode::of(&e), e.to_string(), &program),
        None => report_failure(
            status_file,
            HelperCode::Internal,
            format!("cannot run {program}: {err}"),
            &program,
        ),
    }
}
