//! `promote`'s request.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use crate::base::error::Error;
use crate::interface::request::verb::{Request, SessionArg, parse_bytes};
use crate::ops::promote::{Mode, PromoteOptions};
use crate::services::remote::{DEFAULT_MAX_BYTES, FetchRequest};

/// How `promote` lands the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// Apply the session's change set as uncommitted changes
    Patch,
    /// Replay the session's commits (plus one for uncommitted leftovers) onto the current branch
    Branch,
}

/// `a3s-iso promote`'s arguments.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("document").args(["change_set", "from"])))]
pub struct PromoteArgs {
    /// The session acted on.
    #[command(flatten)]
    pub session: SessionArg,

    /// Promote a change-set document instead of a session (validated completely first)
    #[arg(long, value_name = "FILE", conflicts_with = "session")]
    pub change_set: Option<PathBuf>,

    /// Promote a change set pushed to this remote (with --digest), fetched and verified first
    #[arg(long, value_name = "REMOTE", conflicts_with_all = ["session", "change_set", "note"],
        requires = "digest")]
    pub from: Option<String>,

    /// With --from: the change set's digest; with --reapply: the promoted change set to land
    /// again (sha256:<hex>, or a unique prefix of at least 8 hex digits)
    #[arg(long, value_name = "DIGEST", conflicts_with = "change_set")]
    pub digest: Option<String>,

    /// With --from: the largest patch to read, in bytes (K, M, G suffixes)
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes,
        default_value_t = DEFAULT_MAX_BYTES, requires = "from")]
    pub max_bytes: u64,

    /// With --from: accept a URL or path that is not a configured remote
    #[arg(long, requires = "from")]
    pub allow_url: bool,

    /// How the work lands in the source
    #[arg(long, value_enum, default_value_t = ModeArg::Patch)]
    pub mode: ModeArg,

    /// Write the artifacts (patch, summary.json) and stop: the source is left untouched
    #[arg(long)]
    pub no_apply: bool,

    /// Where to write the patch and summary.json (default: under the state dir)
    #[arg(long, value_name = "DIR")]
    pub artifacts: Option<PathBuf>,

    /// Record DIGEST as promoted by other means, so that promoting it later is idempotent
    #[arg(long, value_name = "DIGEST", conflicts_with_all = ["change_set", "no_apply"])]
    pub note: Option<String>,

    /// When the source's HEAD moved since the bind (or the last step): rebase the session onto
    /// it first, and promote only if that was clean
    #[arg(long, conflicts_with_all = ["change_set", "from", "note"])]
    pub rebase: bool,

    /// Branch mode: the message of the commit that holds the session's uncommitted changes
    /// (default: one that names the session)
    #[arg(long, short = 'm', value_name = "MSG")]
    pub message: Option<String>,

    /// Branch mode: take that commit's message from FILE (`-` reads standard input)
    #[arg(
        long = "file",
        short = 'F',
        value_name = "FILE",
        conflicts_with = "message"
    )]
    pub message_file: Option<std::path::PathBuf>,

    /// Land again a promoted change set whose landing is no longer in the checkout (you undid
    /// it): the session's last step, --digest's, or --change-set's; recorded as a new landing
    #[arg(long, conflicts_with_all = ["from", "note", "rebase", "no_apply"])]
    pub reapply: bool,

    /// Apply a change-set document onto the checkout even though its base tree is not HEAD's
    /// (when it applies cleanly)
    #[arg(long, requires = "document")]
    pub onto_head: bool,
}

impl Request for PromoteArgs {
    const VERB: &'static str = "promote";
    const NOT_FOR_AGENTS: &'static [&'static str] =
        &["from", "max_bytes", "allow_url", "message_file"];
}

impl PromoteArgs {
    /// What clap cannot check: a message names branch mode's commit, and `--digest` names the
    /// change set `--from` fetches or `--reapply` lands again.
    pub fn check(&self) -> Result<(), Error> {
        let flag = match (&self.message, &self.message_file) {
            (_, Some(_)) => Some("--file"),
            (Some(_), None) => Some("--message"),
            (None, None) => None,
        };
        if let Some(flag) = flag
            && self.mode != ModeArg::Branch
        {
            return Err(Error::Usage {
                message: format!("{flag} names a commit: it goes with --mode branch"),
            });
        }
        if self.digest.is_some() && self.from.is_none() && !self.reapply {
            return Err(Error::Usage {
                message: "--digest goes with --from REMOTE (a pushed change set) or --reapply \
                          (a promoted one)"
                    .into(),
            });
        }
        Ok(())
    }

    /// The promote's options, as the arguments give them, with `message` for the commit's
    /// (`--message`'s, or what the caller read from `--file`).
    pub fn options(&self, message: Option<String>) -> PromoteOptions {
        PromoteOptions {
            session_id: self.session.session.clone(),
            change_set: self.change_set.clone(),
            mode: self.mode.into(),
            no_apply: self.no_apply,
            artifacts: self.artifacts.clone(),
            note: self.note.clone(),
            onto_head: self.onto_head,
            rebase: self.rebase,
            reapply: self.reapply,
            squash: false,
            message,
            digest: self.digest.clone().filter(|_| self.reapply),
            from: self.from.as_ref().map(|remote| FetchRequest {
                remote: remote.clone(),
                digest: self.digest.clone(),
                allow_url: self.allow_url,
                max_bytes: self.max_bytes,
            }),
            artifacts_opened: None,
            tested_on: None,
        }
    }
}

impl From<ModeArg> for Mode {
    fn from(mode: ModeArg) -> Mode {
        match mode {
            ModeArg::Patch => Mode::Patch,
            ModeArg::Branch => Mode::Branch,
        }
    }
}
