//! `bind`'s request.

use std::path::PathBuf;

use clap::Args;

use crate::interface::request::verb::Request;
use crate::ops::bind::OwnerChoice;

/// `a3s-iso bind`'s arguments.
#[derive(Debug, Args)]
pub struct BindArgs {
    /// The session id (generated when omitted); letters, digits, '.', '_' and '-'
    #[arg(
        short = 's',
        long = "session",
        value_name = "ID",
        env = "A3S_ISO_SESSION_ID",
        hide_env_values = true
    )]
    pub session: Option<String>,

    /// Bind at HEAD even though the source has local changes (they stay out of the isolation)
    #[arg(long)]
    pub allow_dirty: bool,

    /// Start from the source's working state: HEAD plus staged, unstaged and untracked changes
    /// (that state becomes the session's base, so change sets hold only the session's own work)
    #[arg(long, conflicts_with_all = ["allow_dirty", "read_only", "resume"])]
    pub carry_wip: bool,

    /// Initialise submodules (recursively) in the isolation, each cloned from the source's own
    /// copy of it (no network)
    #[arg(long, conflicts_with = "read_only")]
    pub submodules: bool,

    /// Record a session without an isolation tree; writing commands then refuse it
    #[arg(long)]
    pub read_only: bool,

    /// Create the isolation in DIR instead of next to the source
    #[arg(long, value_name = "DIR")]
    pub base_dir: Option<PathBuf>,

    /// Rebuild a swept, discarded or missing isolation at the bound revision and restore its work
    /// into it as uncommitted changes (a swept session's snapshot, else the latest capture)
    #[arg(long, requires = "session", conflicts_with = "read_only")]
    pub resume: bool,

    /// Who owns the session: `none` (no owner process: for scripts and CI; sweep keeps it
    /// unless --include-ownerless) or `pid:N` (default: the parent of a3s-iso, e.g. your shell)
    #[arg(long, value_name = "none|pid:N", value_parser = parse_owner, conflicts_with = "owner_pid")]
    pub owner: Option<OwnerChoice>,

    /// Copy the source's ignored files that the gitignore PATTERNs match (build caches such as
    /// target, node_modules/) into the new isolation, cloned where the file system can; the
    /// session then builds on them. The ignored files the source's .worktreeinclude names are
    /// copied too, without this option
    #[arg(long, value_name = "PATTERN", num_args = 1.., conflicts_with = "read_only")]
    pub copy_ignored: Vec<String>,

    /// The process that owns the session (the same as --owner pid:PID)
    #[arg(long, value_name = "PID")]
    pub owner_pid: Option<u32>,

    /// Do not run the configuration's setup commands in the new isolation
    #[arg(long)]
    pub no_setup: bool,

    /// Bind without reading the repository's .a3s-iso.toml at all (trusted or not)
    #[arg(long)]
    pub ignore_config: bool,
}

/// `none` or `pid:N`.
fn parse_owner(text: &str) -> std::result::Result<OwnerChoice, String> {
    OwnerChoice::parse(text).ok_or_else(|| format!("{text:?}: expected none or pid:N"))
}

impl Request for BindArgs {
    const VERB: &'static str = "bind";
    const NOT_FOR_AGENTS: &'static [&'static str] = &["owner_pid", "no_setup", "ignore_config"];
}
