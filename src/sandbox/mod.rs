//! The `run` sandbox: a new network namespace (loopback only) and Landlock write confinement,
//! entered by a3s-iso itself re-executed as a hidden helper, which then execs the command.

mod sys;

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, path_beneath_rules,
};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Setting this makes a3s-iso behave as on a kernel without Landlock (for testing the
/// fail-closed path).
pub(crate) const SIMULATE_NO_LANDLOCK: &str = "A3S_ISO_SIMULATE_NO_LANDLOCK";

/// The device nodes a command may write to besides its allowed directories.
const DEVICE_NODES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// What the helper sets up before exec'ing the command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxSpec {
    /// Run in a network namespace of its own (loopback only).
    pub deny_network: bool,
    /// Directories (and files) that stay writable; everything else is read-only.
    pub writable: Vec<PathBuf>,
}

/// Whether a run's command could reach the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkAccess {
    /// Its own network namespace: loopback only.
    Denied,
    /// The host's network.
    Allowed,
}

/// Whether a run's command could write outside its allowed paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FilesystemAccess {
    /// Landlock: writes only to the writable paths.
    Confined,
    /// Writes wherever the user may write.
    Unconfined,
}

/// Which protections were in force for a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SandboxReport {
    /// Whether the command ran in the sandbox at all (`false` with `--no-sandbox`).
    pub enabled: bool,
    /// `denied` (own network namespace, loopback only) or `allowed`.
    pub network: NetworkAccess,
    /// `confined` (Landlock: writes only to `writable`) or `unconfined`.
    pub filesystem: FilesystemAccess,
    /// What the command could write to (empty when unconfined).
    pub writable: Vec<PathBuf>,
}

impl SandboxReport {
    /// `--no-sandbox`: a plain host process.
    pub(crate) fn disabled() -> SandboxReport {
        SandboxReport {
            enabled: false,
            network: NetworkAccess::Allowed,
            filesystem: FilesystemAccess::Unconfined,
            writable: Vec::new(),
        }
    }

    /// What a run under `spec` gets.
    pub(crate) fn of(spec: &SandboxSpec) -> SandboxReport {
        SandboxReport {
            enabled: true,
            network: if spec.deny_network {
                NetworkAccess::Denied
            } else {
                NetworkAccess::Allowed
            },
            filesystem: FilesystemAccess::Confined,
            writable: spec.writable.clone(),
        }
    }
}

impl SandboxSpec {
    /// The writable set of a run: the isolation, its admin dir, the common object store, the
    /// private TMPDIR, the usual device nodes, and what the caller allowed.
    pub(crate) fn for_run(deny_network: bool, own: &[&Path], allowed: &[PathBuf]) -> SandboxSpec {
        let mut writable: Vec<PathBuf> = own.iter().map(|p| p.to_path_buf()).collect();
        writable.extend(DEVICE_NODES.iter().map(PathBuf::from));
        writable.extend(allowed.iter().cloned());
        SandboxSpec {
            deny_network,
            writable,
        }
    }
}

fn unavailable(message: impl Into<String>) -> Error {
    Error::SandboxUnavailable {
        message: message.into(),
    }
}

/// Checks, before anything runs, that this kernel can give the sandbox.
pub(crate) fn probe(spec: &SandboxSpec) -> Result<()> {
    if std::env::var_os(SIMULATE_NO_LANDLOCK).is_some_and(|v| !v.is_empty())
        || sys::landlock_abi().is_none()
    {
        return Err(unavailable(
            "the kernel does not offer Landlock, so writes cannot be confined",
        ));
    }
    if spec.deny_network && !Path::new("/proc/self/ns/net").exists() {
        return Err(unavailable("the kernel does not offer network namespaces"));
    }
    Ok(())
}

/// Enters the sandbox in this process (the helper): namespaces first, then Landlock.
pub(crate) fn enter(spec: &SandboxSpec) -> Result<()> {
    probe(spec)?;
    if spec.deny_network {
        enter_network_namespace()?;
    }
    confine_writes(&spec.writable)
}

fn enter_network_namespace() -> Result<()> {
    use rustix::thread::UnshareFlags;
    let uid = rustix::process::getuid();
    let gid = rustix::process::getgid();
    if uid.is_root() {
        sys::unshare(UnshareFlags::NEWNET)
            .map_err(|e| unavailable(format!("cannot create a network namespace: {e}")))?;
    } else {
        // An unprivileged caller gets the capability for its own network namespace from a new
        // user namespace in which it keeps its own uid and gid.
        sys::unshare(UnshareFlags::NEWUSER | UnshareFlags::NEWNET)
            .map_err(|e| unavailable(format!("cannot create user and network namespaces: {e}")))?;
        let write = |file: &str, text: String| {
            std::fs::write(file, text).map_err(|e| unavailable(format!("cannot write {file}: {e}")))
        };
        write("/proc/self/setgroups", "deny".into())?;
        write("/proc/self/uid_map", format!("{0} {0} 1\n", uid.as_raw()))?;
        write("/proc/self/gid_map", format!("{0} {0} 1\n", gid.as_raw()))?;
    }
    sys::loopback_up().map_err(|e| unavailable(format!("cannot bring loopback up: {e}")))
}

fn confine_writes(writable: &[PathBuf]) -> Result<()> {
    // ABI 3 write rights: everything that creates, changes, renames, truncates or removes.
    let abi = ABI::V3;
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_write(abi))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(writable, AccessFs::from_write(abi))))
        .and_then(|r| r.restrict_self())
        .map_err(|e| unavailable(format!("cannot set up Landlock: {e}")))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(unavailable("Landlock is not enforced on this kernel"));
    }
    Ok(())
}

/// How the helper ended when it did not become the command.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct HelperFailure {
    pub code: String,
    pub message: String,
    pub program: String,
}

/// The hidden helper: enter the sandbox, then exec the command. Returns only on failure, with
/// the exit status to use; the reason is written to `status_file` for the parent.
pub fn exec_sandboxed(spec: &SandboxSpec, status_file: &Path, command: &[OsString]) -> i32 {
    use std::os::unix::process::CommandExt;
    let program_name = command
        .first()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default();
    let fail = |code: &str, message: String, status: i32| {
        let failure = HelperFailure {
            code: code.into(),
            message: message.clone(),
            program: program_name.clone(),
        };
        if let Ok(mut file) = std::fs::File::create(status_file) {
            let _ = file.write_all(
                serde_json::to_string(&failure)
                    .unwrap_or_default()
                    .as_bytes(),
            );
        }
        status
    };
    if let Err(err) = enter(spec) {
        return fail("sandbox_unavailable", err.to_string(), 125);
    }
    let Some((program, args)) = command.split_first() else {
        return fail("usage", "no command to run".into(), 125);
    };
    let err = std::process::Command::new(program).args(args).exec();
    spawn_failure(program, &err)
        .map(|e| fail(e.code().as_str(), e.to_string(), e.exit_code()))
        .unwrap_or_else(|| {
            fail(
                "internal",
                format!("cannot run {}: {err}", program.to_string_lossy()),
                125,
            )
        })
}

/// The error for a command that could not be started: not found (127) or not executable (126).
pub(crate) fn spawn_failure(program: &std::ffi::OsStr, err: &std::io::Error) -> Option<Error> {
    let program = program.to_string_lossy().into_owned();
    match err.kind() {
        std::io::ErrorKind::NotFound => Some(Error::CommandNotFound { program }),
        std::io::ErrorKind::PermissionDenied => Some(Error::CommandNotExecutable {
            program,
            reason: err.to_string(),
        }),
        _ if err.raw_os_error() == Some(libc::ENOEXEC)
            || err.raw_os_error() == Some(libc::EISDIR) =>
        {
            Some(Error::CommandNotExecutable {
                program,
                reason: err.to_string(),
            })
        }
        _ => None,
    }
}

/// Reads what a failed helper left for the parent.
pub(crate) fn read_failure(status_file: &Path) -> Option<Error> {
    let bytes = std::fs::read(status_file).ok()?;
    let failure: HelperFailure = serde_json::from_slice(&bytes).ok()?;
    Some(match failure.code.as_str() {
        "command_not_found" => Error::CommandNotFound {
            program: failure.program,
        },
        "command_not_executable" => Error::CommandNotExecutable {
            program: failure.program,
            reason: "permission denied or not an executable".into(),
        },
        "sandbox_unavailable" => Error::SandboxUnavailable {
            message: failure.message,
        },
        _ => Error::internal(failure.message),
    })
}
