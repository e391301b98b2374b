//! Why the helper did not become the command, as it tells `run` over its channel.

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
    pub(super) fn exit_status(self) -> i32 {
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

impl HelperFailure {
    /// The error `run` reports for it.
    pub fn into_error(self) -> Error {
        match self.code {
            HelperCode::CommandNotFound => Error::CommandNotFound {
                program: self.program,
            },
            HelperCode::CommandNotExecutable => Error::CommandNotExecutable {
                program: self.program,
                reason: "permission denied or not an executable".into(),
            },
            HelperCode::SandboxUnavailable => Error::SandboxUnavailable {
                message: self.message,
            },
            HelperCode::Usage => Error::Usage {
                message: self.message,
            },
            HelperCode::Internal => Error::internal(self.message),
        }
    }
}
