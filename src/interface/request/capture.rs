//! `capture`'s request.

use std::path::PathBuf;

use clap::Args;

use crate::interface::request::verb::{Request, SessionArg};

/// `a3s-iso capture`'s arguments.
#[derive(Debug, Args)]
pub struct CaptureArgs {
    /// The session acted on.
    #[command(flatten)]
    pub session: SessionArg,

    /// Name the capture; capturing the same run id again returns the stored document
    #[arg(long, value_name = "RID")]
    pub run_id: Option<String>,

    /// Also write the change-set document to FILE
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// The agent_release_identity recorded in the document (sha256:<64 hex>)
    #[arg(
        long,
        value_name = "SHA256",
        env = "A3S_ISO_RELEASE_IDENTITY",
        hide_env_values = true
    )]
    pub release_identity: Option<String>,
}

impl Request for CaptureArgs {
    const VERB: &'static str = "capture";
    const NOT_FOR_AGENTS: &'static [&'static str] = &[];
}
