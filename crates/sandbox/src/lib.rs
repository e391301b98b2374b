//! The `run` sandbox of a3s-iso, on its own: everything that asks the kernel for namespaces,
//! mounts, Landlock, seccomp and terminals, and all the `unsafe` that takes (in [`sys`]). It
//! knows nothing of a3s-iso: a3s-iso re-executes itself as a hidden helper (`sandbox-exec`)
//! that calls [`exec_sandboxed`], which:
//!
//! 1. enters new user, mount, PID, UTS and IPC namespaces (and a network namespace with only
//!    loopback unless the network is allowed), mapping the caller's own uid and gid;
//! 2. sets up the file system view of [`mounts`]: the host read-only, private `/tmp` and
//!    runtime dirs, the isolation and allowed paths writable, secrets hidden;
//! 3. with a terminal, makes the command's pseudo-terminal in the sandbox's own `devpts` and
//!    hands its master to `run` over the [`channel`], which also carries the helper's failures;
//! 4. forks the namespace's init, which mounts `/proc`, starts the command in a session of its
//!    own and, when the command ends, exits — and with it the kernel kills every process the
//!    command left;
//! 5. in the command's process: drops every capability, confines writes with Landlock where
//!    the kernel has it, installs the [`seccomp`] filter and execs the command.
//!
//! Any layer the kernel cannot give fails the run before the command starts (a3s-iso reports
//! it as `sandbox_unavailable`).

#![deny(missing_docs)]
// `unsafe` lives in `sys` alone (the one module allowed it), each block with the SAFETY
// comment that justifies it.
#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod channel;
mod init;
mod landlock;
mod mounts;
mod namespaces;
mod pair;
pub mod paths;
mod seccomp;
pub mod secrets;
mod sockets;
mod spec;
mod status;
#[allow(unsafe_code)]
mod sys;

pub use channel::{Heard, Reporter, StatusChannel};
pub use landlock::{SIMULATE_NO_LANDLOCK, landlock_abi};
pub use sockets::{DNS_ADDRESS, SocketFactory, SocketServer};
pub use spec::{DEVICE_NODES, FileLayer, GitLayers, MountedDir, SandboxSpec, TerminalSpec};
pub use status::{HelperCode, HelperFailure, spawn_failure};
pub use sys::{ExtentBytes, extent_bytes, new_session_on_exec, own_terminal_on_exec};

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::Path;

/// Setting this makes a3s-iso behave as on a kernel without user namespaces (for testing the
/// fail-closed path).
pub const SIMULATE_NO_NAMESPACES: &str = "A3S_ISO_SIMULATE_NO_NAMESPACES";

/// Checks, before anything runs, that this kernel can give the essential layers: user, mount
/// and PID namespaces (and a network namespace when the network is denied) and seccomp; the
/// error says which is missing.
pub fn probe(spec: &SandboxSpec) -> Result<(), String> {
    if std::env::var_os(SIMULATE_NO_NAMESPACES).is_some_and(|v| !v.is_empty())
        || !Path::new("/proc/self/ns/user").exists()
        || !Path::new("/proc/self/ns/mnt").exists()
        || !Path::new("/proc/self/ns/pid").exists()
    {
        return Err(String::from(
            "the kernel does not offer user, mount and PID namespaces",
        ));
    }
    if spec.deny_network && !Path::new("/proc/self/ns/net").exists() {
        return Err(String::from("the kernel does not offer network namespaces"));
    }
    if !Path::new("/proc/sys/kernel/seccomp/actions_avail").exists() {
        return Err(String::from("the kernel does not offer seccomp filters"));
    }
    Ok(())
}

/// The hidden helper: enters the namespaces, sets up the mounts, and runs the command under
/// the namespace's init. Returns the exit status to end with; the reason for a failure of its
/// own goes to `run` through `reporter`. With `sockets`, the helper serves `run` sockets made
/// in the sandbox's network namespace for as long as the command runs (and first the name
/// responder's socket and the proxy's listener, when the spec has them).
pub fn exec_sandboxed(
    spec: &SandboxSpec,
    reporter: &Reporter,
    sockets: Option<SocketServer>,
    command: &[OsString],
) -> i32 {
    // Nothing of the run outlives `run` itself (init follows the helper the same way).
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    let program = command
        .first()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let fail = |message: String| reporter.fail(HelperCode::SandboxUnavailable, message, &program);
    if command.is_empty() {
        return reporter.fail(HelperCode::Usage, "no command to run".into(), &program);
    }
    if let Err(err) = probe(spec) {
        return fail(err);
    }
    if let Err(message) = namespaces::enter(spec.deny_network) {
        return fail(message);
    }
    if spec.dns {
        let sent = match &sockets {
            Some(sockets) if spec.deny_network => sockets.send_dns(),
            _ => Err(std::io::Error::other("no socket channel to run")),
        };
        if let Err(e) = sent {
            return fail(format!("cannot listen for names inside: {e}"));
        }
    }
    if let Some(port) = spec.proxy_port {
        let sent = match &sockets {
            Some(sockets) if spec.deny_network => sockets.send_listener(port),
            _ => Err(std::io::Error::other("no socket channel to run")),
        };
        if let Err(e) = sent {
            return fail(format!("cannot listen for the proxy inside: {e}"));
        }
    }
    let steps = match mounts::mount_points() {
        Ok(points) => mounts::plan(spec, &points),
        Err(e) => return fail(format!("cannot read the mount table: {e}")),
    };
    let layered = match mounts::apply(&steps) {
        Ok(layered) => layered,
        Err(message) => return fail(message),
    };
    // Writes under a layer land in its upper directory, never in the real one: Landlock lets
    // them through (the read-only mounts over what is sealed in it still hold).
    let mut spec = spec.clone();
    spec.writable.extend(layered);
    let spec = &spec;
    let terminal = match spec.terminal {
        TerminalSpec::None => None,
        _ => match open_terminal(reporter) {
            Ok(slave) => Some(slave),
            Err(e) => return fail(format!("cannot give the command a terminal: {e}")),
        },
    };
    init::run(spec, reporter, command, terminal, sockets)
}

/// Makes the command's pseudo-terminal in the sandbox's own `devpts`, hands its master to
/// `run` and waits until `run` relays it; returns the slave.
fn open_terminal(reporter: &Reporter) -> std::io::Result<OwnedFd> {
    use rustix::pty::OpenptFlags;
    let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
    let master = rustix::pty::openpt(flags)?;
    rustix::pty::unlockpt(&master)?;
    let slave = rustix::pty::ioctl_tiocgptpeer(&master, flags)?;
    reporter.send_terminal(&master)?;
    Ok(slave)
}
