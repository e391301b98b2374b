//! How the helper tells `run` why it did not become the command: a small JSON file.

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// How the helper ended when it did not become the command.
#[derive(Debug, Serialize, Deserialize)]
pub struct HelperFailure {
    /// The error code (`sandbox_unavailable`, `command_not_found`, …).
    pub code: String,
    /// What went wrong.
    pub message: String,
    /// The command that was to run.
    pub program: String,
}

/// Writes the helper's failure for the parent and returns the exit status to use.
pub(super) fn report_failure(
    status_file: &Path,
    code: &str,
    message: String,
    program: &str,
) -> i32 {
    let failure = HelperFailure {
        code: code.into(),
        message,
        program: program.into(),
    };
    if let Ok(mut file) = std::fs::File::create(status_file) {
        let _ = file.write_all(
            serde_json::to_string(&failure)
                .unwrap_or_default()
                .as_bytes(),
        );
    }
    match code {
        "command_not_found" => 127,
        "command_not_executable" => 126,
        _ => 125,
    }
}

/// The error for a command that could not be started: not found (127) or not executable (126).
pub fn spawn_failure(program: &std::ffi::OsStr, err: &std::io::Error) -> Option<Error> {
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
pub fn read_failure(status_file: &Path) -> Option<Error> {
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
        "usage" => Error::Usage {
            message: failure.message,
        },
        _ => Error::internal(failure.message),
    })
}
