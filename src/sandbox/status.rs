//! How the helper tells `run` why it did not become the command: a small JSON file.

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// Why the helper did not become the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HelperCode {
    /// A layer of the sandbox could not be set up.
    SandboxUnavailable,
    /// The command does not exist.
    CommandNotFound,
    /// The command cannot be executed.
    CommandNotExecutable,
    /// The helper was called wrongly.
    Usage,
    /// Anything else.
    Internal,
}

impl HelperCode {
    /// The helper's exit status: like `env`, 127 and 126 for a command that could not start,
    /// 125 for a failure of its own.
    fn exit_status(self) -> i32 {
        match self {
            HelperCode::CommandNotFound => 127,
            HelperCode::CommandNotExecutable => 126,
            _ => 125,
        }
    }

    /// The code of a failure to start the command.
    pub(super) fn of(err: &Error) -> HelperCode {
        match err {
            Error::CommandNotFound { .. } => HelperCode::CommandNotFound,
            Error::CommandNotExecutable { .. } => HelperCode::CommandNotExecutable,
            _ => HelperCode::Internal,
        }
    }
}

/// How the helper ended when it did not become the command.
#[derive(Debug, Serialize, Deserialize)]
pub struct HelperFailure {
    /// Why.
    pub code: HelperCode,
    /// What went wrong.
    pub message: String,
    /// The command that was to run.
    pub program: String,
}

/// Writes the helper's failure for the parent and returns the exit status to use.
pub(super) fn report_failure(
    status_file: &Path,
    code: HelperCode,
    message: String,
    program: &str,
) -> i32 {
    let failure = HelperFailure {
        code,
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
    code.exit_status()
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
    // The command can write the directory the file is in: a link or a FIFO there is not
    // followed or waited on.
    let bytes = crate::fsutil::read_small_regular_file(status_file, 1 << 20).ok()?;
    let failure: HelperFailure = serde_json::from_slice(&bytes).ok()?;
    Some(match failure.code {
        HelperCode::CommandNotFound => Error::CommandNotFound {
            program: failure.program,
        },
        HelperCode::CommandNotExecutable => Error::CommandNotExecutable {
            program: failure.program,
            reason: "permission denied or not an executable".into(),
        },
        HelperCode::SandboxUnavailable => Error::SandboxUnavailable {
            message: failure.message,
        },
        HelperCode::Usage => Error::Usage {
            message: failure.message,
        },
        HelperCode::Internal => Error::internal(failure.message),
    })
}
