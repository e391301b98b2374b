//! What a run reports of its sandbox: which protections were in force, and what a profile
//! allowed (`sandbox` in `a3s-iso.run.v1`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use a3s_iso_sandbox::{SandboxSpec, landlock_abi};

/// What a run's profile allowed, as its JSON and exit record keep it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ProfileUsed {
    /// The profile's name.
    pub name: String,
    /// The home paths it made writable (`~/.claude/`, `~/.claude.json`).
    pub writable: Vec<String>,
    /// Where a3s-iso keeps its copies of them; `null` when it has none.
    #[serde(default, with = "crate::base::paths::fs_path_opt")]
    pub kept_in: Option<PathBuf>,
    /// The variables it passes (names or patterns).
    pub env: Vec<String>,
    /// The hosts the network allows.
    pub hosts: Vec<String>,
}

crate::base::wire::wire_enum! {
    /// Which cache a preset's package manager gets (`run --cache`, `run.cache`).
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub enum CacheMode {
        /// a3s-iso's own cache of the tool, shared by this user's runs: `<data>/caches/TOOL`.
        #[default]
        Private = "private",
        /// The user's own cache of the tool (`~/.npm`, `~/.cache/pip`, `~/.cargo/registry`),
        /// writable: a grant, since the user's own builds read it.
        User = "user",
        /// No cache: the tool's default location stays read-only.
        None = "none",
    }
}

/// One cache a run got.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CacheReport {
    /// The preset that brought it (`@npm`).
    pub preset: String,
    /// The package manager (`npm`, `pip`, `cargo`).
    pub tool: String,
    /// `private` or `user`.
    pub mode: CacheMode,
    /// The directories the command could write for it.
    #[serde(with = "crate::base::paths::fs_path_list")]
    pub writable: Vec<PathBuf>,
}

/// Whether a run's command could reach the network.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NetworkAccess {
    /// Its own network namespace: loopback only.
    Denied,
    /// Its own network namespace: loopback, and through a3s-iso's proxy the allowed hosts.
    Allowlist,
    /// The host's network.
    #[default]
    Allowed,
}

/// Whether a run's command could write outside its allowed paths.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FilesystemAccess {
    /// Writes only to the writable paths.
    Confined,
    /// Writes wherever the user may write.
    #[default]
    Unconfined,
}

/// Which protections were in force for a run (`sandbox` in `a3s-iso.run.v1`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SandboxReport {
    /// Whether the command ran sandboxed at all.
    pub enabled: bool,
    /// `denied` (loopback only), `allowlist` (and a3s-iso's proxy) or `allowed`.
    pub network: NetworkAccess,
    /// `confined` (writes only to `writable`) or `unconfined`.
    pub filesystem: FilesystemAccess,
    /// The paths the command could write.
    #[serde(with = "crate::base::paths::fs_path_list")]
    pub writable: Vec<PathBuf>,
    /// Of those, what `--allow-write` added (canonical).
    #[serde(with = "crate::base::paths::fs_path_list")]
    pub allow_write: Vec<PathBuf>,
    /// What `--allow-read` made readable (canonical).
    #[serde(with = "crate::base::paths::fs_path_list")]
    pub allow_read: Vec<PathBuf>,
    /// Own mount namespace with the host read-only and private `/tmp`.
    pub mounts: bool,
    /// Own PID namespace: nothing the command starts outlives it.
    pub pid: bool,
    /// The seccomp deny list was installed.
    pub seccomp: bool,
    /// The secrets that were hidden.
    #[serde(with = "crate::base::paths::fs_path_list")]
    pub secrets_hidden: Vec<PathBuf>,
    /// The kernel's Landlock ABI version, when Landlock was a second layer.
    pub landlock_abi: Option<i64>,
    /// The names of the variables the command got (never their values).
    pub env_passed: Vec<String>,
    /// The names of the caller's variables it did not get.
    pub env_dropped: Vec<String>,
    /// The profile it ran under and what that allowed; `null` without one.
    pub profile: Option<ProfileUsed>,
    /// The caches its presets' package managers got (`run --cache`).
    pub caches: Vec<CacheReport>,
}

impl SandboxReport {
    /// The report of an unsandboxed run (`--no-sandbox`).
    pub fn disabled() -> SandboxReport {
        SandboxReport::default()
    }

    /// The report of a run under `spec`, on this kernel.
    pub fn of(spec: &SandboxSpec) -> SandboxReport {
        SandboxReport {
            enabled: true,
            network: if spec.proxy_port.is_some() {
                NetworkAccess::Allowlist
            } else if spec.deny_network {
                NetworkAccess::Denied
            } else {
                NetworkAccess::Allowed
            },
            filesystem: FilesystemAccess::Confined,
            writable: spec.writable.clone(),
            mounts: true,
            pid: true,
            seccomp: true,
            secrets_hidden: spec.hidden.clone(),
            landlock_abi: landlock_abi(),
            ..SandboxReport::disabled()
        }
    }
}
