//! Why the helper did not become the command, as it tells `run` over its channel.

use serde::{Deserialize, Serialize};

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

/// Why a command could not be started, when that is the command's fault: not found (127) or
/// not executable (126); `None` for any other failure.
pub fn spawn_failure(program: &std::ffi::OsStr, err: &std::io::Error) -> Option<HelperFailure> {
    let code = match err.kind() {
        std::io::ErrorKind::NotFound => HelperCode::CommandNotFound,
        std::io::ErrorKind::PermissionDenied => HelperCode::CommandNotExecutable,
        _ if err.raw_os_error() == Some(libc::ENOEXEC)
            || err.raw_os_error() == Some(libc::EISDIR) =>
        {
            HelperCode::CommandNotExecutable
        }
        _ => return None,
    };
    Some(HelperFailure {
        code,
        message: err.to_string(),
        program: program.to_string_lossy().into_owned(),
    })
}
