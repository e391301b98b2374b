//! `diff`'s request.

use std::path::PathBuf;

use clap::Args;

use crate::interface::request::verb::{AgentOnly, Request, SessionArg};

/// `a3s-iso diff`'s arguments.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The session acted on.
    #[command(flatten)]
    pub session: SessionArg,

    /// Show a change-set document's patch (verified first) instead of a session's
    #[arg(long, value_name = "FILE", conflicts_with = "digest")]
    pub change_set: Option<PathBuf>,

    /// Show a promoted change set from its artifacts (<state>/artifacts/<hex>/change.patch):
    /// sha256:<hex>, or a unique prefix of at least 8 hex digits
    #[arg(long, value_name = "DIGEST")]
    pub digest: Option<String>,

    /// Only the files, with lines added and removed
    #[arg(long, conflicts_with = "name_only")]
    pub stat: bool,

    /// Only the paths, one a line (quoted as git quotes unusual names)
    #[arg(long)]
    pub name_only: bool,

    /// With --name-only: each path exactly as its bytes, ended by NUL, never quoted
    #[arg(short = 'z', requires = "name_only")]
    pub nul: bool,

    /// What promote would apply now: the delta since the session's last promoted step (the
    /// default)
    #[arg(long, conflicts_with_all = ["cumulative", "change_set", "digest"])]
    pub since_promote: bool,

    /// The session's whole work since its base tree, promoted steps included
    #[arg(long, conflicts_with_all = ["change_set", "digest"])]
    pub cumulative: bool,
}

impl Request for DiffArgs {
    const VERB: &'static str = "diff";
    const NOT_FOR_AGENTS: &'static [&'static str] = &["stat", "name_only", "nul", "since_promote"];
    const AGENT_ONLY: &'static [AgentOnly] = &[AgentOnly {
        name: "patch",
        flag: true,
        description: "Also return the patch itself (its first 64 KiB) after the document",
    }];
}
