//! The `run` sandbox as a3s-iso uses it: its failures as errors, what a run reports.
//! May call: the rest of base, and the `a3s-iso-sandbox` crate.
//!
//! The sandbox itself (namespaces, mounts, Landlock, seccomp, terminals and all the `unsafe`
//! they take) is the `a3s-iso-sandbox` crate, which knows nothing of a3s-iso.

mod report;

pub use crate::base::sandbox::report::{
    CacheMode, CacheReport, FilesystemAccess, NetworkAccess, ProfileUsed, SandboxReport,
};
pub use a3s_iso_sandbox::{
    DEVICE_NODES, FileLayer, GitLayers, Heard, HelperCode, HelperFailure, MountedDir, Reporter,
    SIMULATE_NO_LANDLOCK, SIMULATE_NO_NAMESPACES, SandboxSpec, SocketFactory, SocketServer,
    StatusChannel, TerminalSpec, exec_sandboxed, landlock_abi, new_session_on_exec,
    own_terminal_on_exec, secrets,
};

use std::path::PathBuf;

use crate::base::error::{Error, Result};

/// Checks, before anything runs, that this kernel can give the essential layers; one it
/// cannot is `sandbox_unavailable`.
pub fn probe(spec: &SandboxSpec) -> Result<()> {
    a3s_iso_sandbox::probe(spec).map_err(|message| Error::SandboxUnavailable { message })
}

/// The error for a command that could not be started: not found (127) or not executable (126).
pub fn spawn_failure(program: &std::ffi::OsStr, err: &std::io::Error) -> Option<Error> {
    let failure = a3s_iso_sandbox::spawn_failure(program, err)?;
    Some(match failure.code {
        HelperCode::CommandNotFound => failure_error(failure),
        _ => Error::CommandNotExecutable {
            program: failure.program,
            reason: failure.message,
        },
    })
}

/// The error `run` reports for a helper that did not become the command.
pub fn failure_error(failure: HelperFailure) -> Error {
    match failure.code {
        HelperCode::CommandNotFound => Error::CommandNotFound {
            program: failure.program,
            hidden: Vec::new(),
        },
        HelperCode::CommandNotExecutable => Error::CommandNotExecutable {
            program: failure.program,
            reason: "permission denied or not an executable".into(),
        },
        HelperCode::SandboxUnavailable => Error::SandboxUnavailable {
            message: failure.message,
        },
        HelperCode::Usage => Error::usage(failure.message),
        HelperCode::Internal => Error::internal(failure.message),
    }
}

/// The directories a sandboxed command gets fresh and empty: `/tmp`, `/var/tmp`, `/dev` (where
/// only the device nodes and a new `devpts` come back), `/dev/shm`, the runtime dir, and with
/// the network denied `/run` (host sockets live there).
pub fn private_dirs(deny_network: bool) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = ["/tmp", "/var/tmp", "/dev", "/dev/shm"]
        .map(PathBuf::from)
        .to_vec();
    if deny_network {
        dirs.push(PathBuf::from("/run"));
    }
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from)
        && runtime.is_absolute()
        && !dirs.iter().any(|d| runtime.starts_with(d))
    {
        dirs.push(runtime);
    }
    dirs.retain(|d| {
        std::fs::symlink_metadata(d).is_ok_and(|m| m.is_dir())
            && std::fs::canonicalize(d).ok().as_deref() == Some(d.as_path())
    });
    dirs
}
