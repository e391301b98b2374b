//! `discard`'s request.

use clap::Args;

use crate::interface::request::verb::{Request, SessionArg};
use crate::ops::discard::DiscardOptions;

/// `a3s-iso discard`'s arguments.
#[derive(Debug, Args)]
pub struct DiscardArgs {
    /// The session acted on.
    #[command(flatten)]
    pub session: SessionArg,

    /// Every session bound from this checkout in this store, one after the other
    #[arg(long, conflicts_with = "session")]
    pub all: bool,

    /// Also delete everything of the session: record, refs, retained branch, change sets, artifacts (its journal entries stay)
    #[arg(long)]
    pub purge: bool,
}

impl DiscardArgs {
    /// One session's discard, as the arguments give it.
    pub fn options(&self) -> DiscardOptions {
        DiscardOptions {
            session_id: self.session.session.clone(),
            purge: self.purge,
        }
    }
}

impl Request for DiscardArgs {
    const VERB: &'static str = "discard";
    const NOT_FOR_AGENTS: &'static [&'static str] = &[];
}
