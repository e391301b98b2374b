use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
use a3s_iso::flows::land::{Cleanup, LandOutcome, LandResult, land};
use a3s_iso::flows::land_push::{FetchedEntries, PushOptions, land_push};
pub use a3s_iso::interface::request::land::LandArgs;

use super::{Output, Tone, inert};

/// Lands the queue and renders a line per session.
pub fn run(ctx: &Context, args: &LandArgs, out: &Output) -> Result<i32> {
    let opts = args.options();
    let pushed = args.push.as_ref().map(|target| PushOptions {
        target: target.clone(),
        attempts: args.attempts,
        change_sets: args.change_sets.clone(),
        fetched: args.from.as_ref().map(|remote| FetchedEntries {
            remote: remote.clone(),
            digests: args.digests.clone(),
            max_bytes: args.max_bytes,
        }),
    });
    let outcome = out.spinning("landing", || match &pushed {
        Some(push) => land_push(ctx, &opts, push),
        None => land(ctx, &opts),
    })?;
    let sessions = outcome.sessions.iter().flat_map(|s| &s.warnings);
    out.warnings(outcome.warnings.iter().chain(sessions));
    super::sweep::note_reclaimed(&outcome.reclaimed, out);
    out.answer("a3s-iso.land.v1", &outcome, || render(&outcome, out));
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
        let plural = super::plural(push.attempts);
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
        text.push_str(&format!(
            ": {}",
            super::inert_joined(&session.conflicting_paths)
        ));
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
