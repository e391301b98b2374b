//! `land`'s request.

use clap::{Args, ValueEnum};

use crate::flows::land::{LandMode, LandOptions};
use crate::flows::land_push::{DEFAULT_ATTEMPTS, PushTarget};
use crate::interface::request::verb::{Request, parse_bytes};
use crate::services::remote::DEFAULT_MAX_BYTES;

/// How `land` lands each session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LandModeArg {
    /// One commit per session on the current branch, its message naming the session
    Squash,
    /// The session's commits replayed, plus one for its uncommitted changes
    Branch,
    /// Uncommitted changes in the checkout (one session only)
    Patch,
}

/// `a3s-iso land`'s arguments.
#[derive(Debug, Args)]
pub struct LandArgs {
    /// A session to land, in this order (repeatable)
    #[arg(
        short = 's',
        long = "session",
        value_name = "ID",
        conflicts_with = "all"
    )]
    pub sessions: Vec<String>,

    /// Every live session of the source, oldest bind first
    #[arg(long)]
    pub all: bool,

    /// A shell command that must exit 0 in each session's sandbox on its rebased tree, run by
    /// `bash -e -o pipefail -c` as CI runs a step (a failure anywhere in a pipeline fails it)
    #[arg(long, value_name = "CMD")]
    pub test: Option<String>,

    /// How each session lands
    #[arg(long, value_enum, default_value_t = LandModeArg::Squash)]
    pub mode: LandModeArg,

    /// The message of the squashed commit (branch mode: of the commit of uncommitted changes)
    #[arg(long, short = 'm', value_name = "MSG")]
    pub message: Option<String>,

    /// Go on with the rest after a session that does not land
    #[arg(long)]
    pub keep_going: bool,

    /// Run the test command as a plain host process, without the sandbox
    #[arg(long, requires = "test")]
    pub no_sandbox: bool,

    /// Keep each landed session's isolation (to go on working in steps); by default it goes
    /// back to the pool, or is discarded with its evidence kept
    #[arg(long)]
    pub keep: bool,

    /// Drop the stopped queue; no session is touched
    #[arg(
        long,
        conflicts_with_all = ["sessions", "all", "test", "message", "keep_going", "keep", "push"]
    )]
    pub abort: bool,

    /// Land onto BRANCH of the configured remote REMOTE through the server, not onto your
    /// checkout: each landing commit is pushed with a lease on the tip it was built on and
    /// carries its change set's digest (A3S-Change-Set), so that it lands once from any machine
    #[arg(long, value_name = "REMOTE/BRANCH", value_parser = parse_push_target)]
    pub push: Option<PushTarget>,

    /// With --push: the most pushes of one landing; a push another machine's beat is fetched,
    /// merged, tested and pushed again, up to this many times
    #[arg(long, value_name = "N", requires = "push", default_value_t = DEFAULT_ATTEMPTS,
        value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub attempts: u32,

    /// With --push: a change-set document to land after the sessions (repeatable), as
    /// `capture -o` wrote it; verified first, its test run in a scratch isolation
    #[arg(long = "change-set", value_name = "FILE", requires = "push")]
    pub change_sets: Vec<std::path::PathBuf>,

    /// With --push: land the change sets pushed to this configured remote (`a3s-iso push`)
    /// that --digest names, after the documents; each fetched and verified first, its test
    /// run in a scratch isolation
    #[arg(long, value_name = "REMOTE", requires_all = ["push", "digests"])]
    pub from: Option<String>,

    /// With --from: a change set's digest (repeatable; sha256:<hex>, or a unique prefix of at
    /// least 8 hex digits)
    #[arg(long = "digest", value_name = "DIGEST", requires = "from")]
    pub digests: Vec<String>,

    /// With --from: the largest patch to read, in bytes (K, M, G suffixes)
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes,
        default_value_t = DEFAULT_MAX_BYTES, requires = "from")]
    pub max_bytes: u64,
}

fn parse_push_target(text: &str) -> std::result::Result<PushTarget, String> {
    PushTarget::parse(text).map_err(|e| e.to_string())
}

impl Request for LandArgs {
    const VERB: &'static str = "land";
    const NOT_FOR_AGENTS: &'static [&'static str] = &[
        "abort",
        "push",
        "attempts",
        "change_sets",
        "from",
        "digests",
        "max_bytes",
    ];
}

impl LandArgs {
    /// The landing's options, as the arguments give them.
    pub fn options(&self) -> LandOptions {
        LandOptions {
            sessions: self.sessions.clone(),
            all: self.all,
            test: self.test.clone(),
            mode: self.mode.into(),
            message: self.message.clone(),
            keep_going: self.keep_going,
            no_sandbox: self.no_sandbox,
            keep: self.keep,
            abort: self.abort,
        }
    }
}

impl From<LandModeArg> for LandMode {
    fn from(mode: LandModeArg) -> LandMode {
        match mode {
            LandModeArg::Squash => LandMode::Squash,
            LandModeArg::Branch => LandMode::Branch,
            LandModeArg::Patch => LandMode::Patch,
        }
    }
}
