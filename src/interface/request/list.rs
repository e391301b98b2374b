//! `list`'s request.

use clap::Args;

use crate::interface::request::verb::Request;

/// `a3s-iso list`'s arguments.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Every session: discarded ones too, and those of every source this user has bound from
    #[arg(long)]
    pub all: bool,

    /// For scripts: one record per session ended by NUL, its fields (SESSION, STATE, REVISION,
    /// HEAD, OWNER, LAST RUN, PATH) separated by TAB, the path as its exact bytes; no header
    #[arg(short = 'z')]
    pub nul: bool,

    /// List the change sets pushed to REMOTE instead (refs/a3s-iso/changes/*)
    #[arg(long, value_name = "REMOTE", conflicts_with = "all")]
    pub remote: Option<String>,

    /// With --remote: accept a URL or path that is not a configured remote
    #[arg(long, requires = "remote")]
    pub allow_url: bool,

    /// Measure each isolation's disk use: its apparent size and the bytes it holds alone
    /// (blocks copy-on-write clones share with the pristine tree are not counted), and the
    /// total with the pristine trees
    #[arg(long, conflicts_with_all = ["remote", "nul"])]
    pub disk: bool,
}

impl Request for ListArgs {
    const VERB: &'static str = "list";
    const NOT_FOR_AGENTS: &'static [&'static str] = &["nul", "remote", "allow_url", "disk"];
}
