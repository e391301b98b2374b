//! What every verb's request is: its clap arguments, what of them an agent may set, and the
//! options and value parsers several verbs share.

use clap::{Args, FromArgMatches};

pub use crate::base::duration::parse_duration;

/// A verb's request: its clap arguments and what of them an agent may set.
pub trait Request: Args + FromArgMatches {
    /// The verb.
    const VERB: &'static str;
    /// The clap ids of the options an agent may not set (output forms, the terminal's, the
    /// operator's: reading files or the network, skipping the configuration).
    const NOT_FOR_AGENTS: &'static [&'static str];
    /// Parameters of the tool that no option stands for (what a tool result carries).
    const AGENT_ONLY: &'static [AgentOnly] = &[];
    /// What an agent must know of an option beyond its help (the command line's shell and
    /// conventions are not an agent's): a sentence added to its parameter's description.
    const AGENT_NOTES: &'static [(&'static str, &'static str)] = &[];
}

/// A parameter only the verb's tool has.
#[derive(Debug, Clone, Copy)]
pub struct AgentOnly {
    /// Its name in `arguments`.
    pub name: &'static str,
    /// Whether it is a flag (else a string).
    pub flag: bool,
    /// What it does.
    pub description: &'static str,
}

/// `-s/--session`, shared by the commands that act on one session.
#[derive(Debug, Clone, Args)]
pub struct SessionArg {
    /// The session (default: the isolation you are in, or the source's only live session)
    #[arg(
        short = 's',
        long = "session",
        value_name = "ID",
        env = "A3S_ISO_SESSION_ID",
        hide_env_values = true
    )]
    pub session: Option<String>,
}

/// `N`, `NK`, `NM`, `NG` (powers of 1024; `KiB`, `MiB`, `GiB` too).
pub fn parse_bytes(text: &str) -> std::result::Result<u64, String> {
    let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
    let unit = match text[digits.len()..].trim() {
        "" => 1,
        "K" | "KiB" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        other => return Err(format!("unknown unit {other:?}: use K, M or G")),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| format!("{text:?} is not a size in bytes"))
}
