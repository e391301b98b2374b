//! `show`'s request.

use clap::Args;

use crate::interface::request::verb::{Request, SessionArg};

/// `a3s-iso show`'s arguments.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// The session acted on.
    #[command(flatten)]
    pub session: SessionArg,

    /// For scripts: `key<TAB>value` records ended by NUL, paths as their exact bytes, no
    /// colour and no quoting (runs and promotions are in --json)
    #[arg(short = 'z')]
    pub nul: bool,
}

impl Request for ShowArgs {
    const VERB: &'static str = "show";
    const NOT_FOR_AGENTS: &'static [&'static str] = &["nul"];
}
