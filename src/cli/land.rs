use clap::{Args, ValueEnum};

use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
use a3s_iso::flows::land::{Cleanup, LandMode, LandOptions, LandOutcome, LandResult, land};
use a3s_iso::flows::land_push::{
    DEFAULT_ATTEMPTS, FetchedEntries, PushOptions, PushTarget, land_push,
};
use a3s_iso::services::remote::DEFAULT_MAX_BYTES;

use super::{Output, Tone, inert};

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
    #[arg(long, value_name = "BYTES", value_parser = super::fetch::parse_bytes,
        default_value_t = DEFAULT_MAX_BYTES, requires = "from")]
    pub max_bytes: u64,
}

fn parse_push_target(text: &str) -> std::result::Result<PushTarget, String> {
    PushTarget::parse(text).map_err(|e| e.to_string())
}

/// Lands the queue and renders a line per session.
pub fn run(ctx: &Context, args: &LandArgs, out: &Output) -> Result<i32> {
    let spinner = super::progress::Spinner::start(!out.json && !out.quiet, "landing");
    let opts = LandOptions {
        sessions: args.sessions.clone(),
        all: args.all,
        test: args.test.clone(),
        mode: match args.mode {
            LandModeArg::Squash => LandMode::Squash,
            LandModeArg::Branch => LandMode::Branch,
            LandModeArg::Patch => LandMode::Patch,
        },
        message: args.message.clone(),
        keep_going: args.keep_going,
        no_sandbox: args.no_sandbox,
        keep: args.keep,
        abort: args.abort,
    };
    let outcome = match &args.push {
        Some(target) => land_push(
            ctx,
            &opts,
            &PushOptions {
                target: target.clone(),
                attempts: args.attempts,
                change_sets: args.change_sets.clone(),
                fetched: args.from.as_ref().map(|remote| FetchedEntries {
                    remote: remote.clone(),
                    digests: args.digests.clone(),
                    max_bytes: args.max_bytes,
                }),
            },
        )?,
        None => land(ctx, &opts)?,
    };
    drop(spinner);
    for warning in outcome
        .warnings
        .iter()
        .chain(outcome.sessions.iter().flat_map(|s| &s.warnings))
    {
        out.warn(warning);
    }
    super::sweep::note_reclaimed(&outcome.reclaimed, out);
    if out.json {
        out.document("a3s-iso.land.v1", &outcome);
        return Ok(outcome.exit_code());
    }
    render(&outcome, out);
    Ok(outcome.exit_code())
}

fn render(outcome: &LandOutcome, out: &Output) {
    let landed = outcome
        .sessions
        .iter()
        .filter(|s| s.outcome == LandResult::Landed)
        .count();
    let headline = match (&outcome.stopped_at, landed) {
        _ if outcome.aborted => format!(
            "dropped the stopped queue of {} sessions; no session was touched",
            outcome.sessions.len()
        ),
        _ if outcome.sessions.is_empty() => "nothing to land".to_string(),
        (Some(id), n) => format!("stopped at session {}: {n} landed", inert(id)),
        (None, n) => format!("{n} of {} sessions landed", outcome.sessions.len()),
    };
    let tone = match outcome.exit_code() {
        0 => Tone::Good,
        _ => Tone::Bad,
    };
    out.headline_toned(&headline, tone);
    for session in &outcome.sessions {
        out.line(&format!("  {}", line(session)));
    }
    if let Some(hint) = &outcome.hint {
        out.hint(hint);
    }
}

fn line(session: &a3s_iso::flows::land::LandedSession) -> String {
    let what = match session.outcome {
        LandResult::Landed => "landed",
        LandResult::Idempotent => "landed before",
        LandResult::Empty => "nothing to land",
        LandResult::Conflict => "conflict",
        LandResult::TestFailed => "test failed",
        LandResult::Partial => "partial",
        LandResult::Failed => "failed",
        LandResult::NotReached => "not reached",
        LandResult::Discarded => "discarded before it landed",
    };
    let mut text = format!("{}: {what}", inert(&session.session_id));
    if let Some(commit) = &session.commit {
        text.push_str(&format!(" as {}", &commit[..commit.len().min(12)]));
    }
    if let Some(push) = session.push.as_ref().filter(|p| p.attempts > 0) {
        let plural = if push.attempts == 1 { "" } else { "s" };
        text.push_str(&format!(
            " on {}/{} ({} push{plural})",
            inert(&push.remote),
            inert(&push.branch),
            push.attempts
        ));
    }
    match session.cleanup {
        Some(Cleanup::Pooled) => text.push_str(", isolation back to the pool"),
        Some(Cleanup::Discarded) => text.push_str(", isolation removed (evidence kept)"),
        Some(Cleanup::Kept) | None => {}
    }
    if let Some(reason) = session.reason {
        text.push_str(&format!(" ({})", reason.as_str()));
    }
    if !session.conflicting_paths.is_empty() {
        let paths: Vec<String> = session
            .conflicting_paths
            .iter()
            .map(|p| inert(p).into_owned())
            .collect();
        text.push_str(&format!(": {}", paths.join(", ")));
    }
    if let Some(code) = session.test_exit_code {
        text.push_str(&format!(", test exit {code}"));
    }
    if let Some(output) = &session.test_output
        && session.outcome == LandResult::TestFailed
    {
        text.push_str(&format!(
            ", output in {}",
            inert(&output.display().to_string())
        ));
    }
    if let Some(error) = &session.error {
        text.push_str(&format!(": {} ({})", inert(&error.message), error.code));
    }
    if session.outcome != LandResult::NotReached {
        text.push_str(&format!(", {:.1}s", session.duration_ms as f64 / 1000.0));
    }
    text
}
