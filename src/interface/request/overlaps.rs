//! `overlaps`' request.

use clap::Args;

use crate::interface::request::verb::Request;

/// `a3s-iso overlaps`' arguments (none but the global ones).
/// `a3s-iso overlaps`'s arguments.
#[derive(Debug, Args)]
pub struct OverlapsArgs {}

impl Request for OverlapsArgs {
    const VERB: &'static str = "overlaps";
    const NOT_FOR_AGENTS: &'static [&'static str] = &[];
}
