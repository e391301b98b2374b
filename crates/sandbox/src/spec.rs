//! What the sandbox helper is asked to set up.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The device nodes a command may write to besides its allowed directories.
pub const DEVICE_NODES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// What the helper sets up before exec'ing the command. Paths are absolute.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxSpec {
    /// A network namespace with only loopback (also hides host sockets under `/run`).
    pub deny_network: bool,
    /// Paths that stay writable (the isolation, its admin dir and quarantine, the allowed
    /// paths, device nodes); everything else is read-only.
    #[serde(with = "crate::paths::fs_path_list")]
    pub writable: Vec<PathBuf>,
    /// Paths the command must still read when they lie under a private directory (the common
    /// git dir, the home directory, `--allow-read` paths).
    #[serde(with = "crate::paths::fs_path_list")]
    pub visible: Vec<PathBuf>,
    /// Directories replaced by a fresh, empty tmpfs (`/tmp`, `/dev/shm`, the runtime dir).
    #[serde(with = "crate::paths::fs_path_list")]
    pub private: Vec<PathBuf>,
    /// Files mounted read-only over themselves: the links that tie the isolation to its
    /// repository (`<tree>/.git`, `<admin>/commondir`, `<admin>/gitdir`).
    #[serde(with = "crate::paths::fs_path_list")]
    pub frozen: Vec<PathBuf>,
    /// Paths restored read-only in any case (the repository's `objects`, `refs` and `config`).
    #[serde(with = "crate::paths::fs_path_list")]
    pub sealed: Vec<PathBuf>,
    /// A directory whose view the command may change privately (the repository's git dir):
    /// writes there land in a throwaway layer, so git's own lock files work; what `sealed`
    /// names inside it stays read-only.
    #[serde(with = "crate::paths::fs_path_opt")]
    pub scratch_layer: Option<PathBuf>,
    /// Directories whose view the command may change privately, over a layer kept on the host
    /// that `run` reads back after the command (to write back the allowed files in them).
    #[serde(default)]
    pub layers: Vec<FileLayer>,
    /// Directories mounted writable at another path: a profile's copies over the home paths.
    #[serde(default)]
    pub mounted: Vec<MountedDir>,
    /// The session's own git layers (see [`GitLayers`]): when they can be mounted, the
    /// `scratch_layer` keeps what the command writes there for the session's later runs, and
    /// the isolation's admin dir is layered too; when not, today's throwaway layer and
    /// `GitLayers::sealed_otherwise` read-only.
    #[serde(default)]
    pub git_layers: Option<GitLayers>,
    /// The run's own layer over the isolation: what the command writes there lands in
    /// `base/upper` (on the host, beside the isolation), which `run` merges into the tree
    /// after the command; `base` itself is never reachable from inside. Best effort: when the
    /// overlay is refused, `base/work/work` is never made and `run` takes the full snapshot.
    #[serde(default)]
    pub tree_layer: Option<FileLayer>,
    /// Secrets covered with empty ones.
    #[serde(with = "crate::paths::fs_path_list")]
    pub hidden: Vec<PathBuf>,
    /// The directory the command starts in.
    #[serde(with = "crate::paths::fs_path")]
    pub workdir: PathBuf,
    /// The terminal the command gets; it always runs in a session of its own.
    pub terminal: TerminalSpec,
    /// With an allowlist: the port on the sandbox's loopback where the helper binds the
    /// proxy's listener for `run` (the network namespace is the command's own).
    #[serde(default)]
    pub proxy_port: Option<u16>,
    /// With the network denied: the helper binds a UDP socket on the sandbox's
    /// `127.0.0.1:53` for `run`'s name responder (which answers every query at once, and
    /// never forwards one) and points the sandbox's `/etc/resolv.conf` at it.
    #[serde(default)]
    pub dns: bool,
}

/// A directory covered by an overlay whose upper layer is on the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileLayer {
    /// The directory the command sees changed.
    #[serde(with = "crate::paths::fs_path")]
    pub dir: PathBuf,
    /// Holds the overlay's `upper` and `work` directories (writable in the sandbox).
    #[serde(with = "crate::paths::fs_path")]
    pub base: PathBuf,
    /// What is written in the layer is thrown away afterwards: the overlay is mounted
    /// `volatile` where the kernel takes it, so that its unmount does not sync the whole file
    /// system its upper directory is on.
    #[serde(default)]
    pub volatile: bool,
}

/// A host directory mounted writable at another path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountedDir {
    /// The host directory.
    #[serde(with = "crate::paths::fs_path")]
    pub from: PathBuf,
    /// Where the command sees it.
    #[serde(with = "crate::paths::fs_path")]
    pub to: PathBuf,
}

/// The session's persistent overlay layers over the repository's git dir and the isolation's
/// admin dir: what git inside writes there (branches, tags, the stash, a symbolic HEAD, the
/// index) lands in the session's own upper directories, never in the real ones.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitLayers {
    /// The session's layer directory: `common/{upper,work}` and `admin/{upper,work}`.
    #[serde(with = "crate::paths::fs_path")]
    pub dir: PathBuf,
    /// The isolation's admin dir (one of the writable paths), layered with `admin/`.
    #[serde(with = "crate::paths::fs_path")]
    pub admin: PathBuf,
    /// What stays read-only when the layers cannot be mounted (the repository's `refs`).
    #[serde(with = "crate::paths::fs_path_list")]
    pub sealed_otherwise: Vec<PathBuf>,
}

/// Which terminal a sandboxed command gets. It never gets one of the host's: the helper makes
/// a pseudo-terminal in the sandbox's own `devpts`, whose master `run` relays.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminalSpec {
    /// No terminal: no controlling terminal either.
    #[default]
    None,
    /// The caller's stdin is a terminal: stdin, stdout and stderr on the pty, which is the
    /// command's controlling terminal.
    Interactive,
    /// Only the caller's output is a terminal: those of stdout and stderr on the pty (which is
    /// no controlling terminal), relayed one way.
    Output {
        /// The command's stdout.
        stdout: bool,
        /// The command's stderr.
        stderr: bool,
    },
}
