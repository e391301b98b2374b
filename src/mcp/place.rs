//! What every call of one server shares: where it acts, its sandbox helper, its grants.

use std::path::PathBuf;

use crate::mcp::grants::Grants;

/// Where relative paths start (the server's `-C` directory, else its working directory),
/// the executable `run` re-executes as its sandbox helper, and what the server was granted.
#[derive(Debug, Clone)]
pub struct Place {
    /// The directory the server acts from.
    pub start_dir: PathBuf,
    /// The a3s-iso executable for the sandbox helper (`None`: this process's own).
    pub helper: Option<PathBuf>,
    /// The most any call gets.
    pub grants: Grants,
}

impl Place {
    /// `path` as given when absolute, else under the start directory.
    pub(crate) fn path(&self, path: PathBuf) -> PathBuf {
        // Joining an absolute path gives that path.
        self.start_dir.join(path)
    }
}
