use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
pub use a3s_iso::interface::request::overlaps::OverlapsArgs;
use a3s_iso::services::overlaps::{ConflictCounts, Prediction, overlaps};

use super::{Output, Tone, inert, inert_joined};

/// The headline: every kind of conflict there is, or that there is none of any.
fn headline(counts: ConflictCounts) -> String {
    if counts.none() {
        return "no conflicts between live sessions, with HEAD, or with your uncommitted changes"
            .into();
    }
    let sessions = |n: usize| format!("{n} session{}", super::plural(n));
    let mut parts = Vec::new();
    if counts.pairs > 0 {
        let n = counts.pairs;
        parts.push(format!(
            "{n} pair{} of sessions would conflict",
            super::plural(n)
        ));
    }
    if counts.with_head > 0 {
        parts.push(format!(
            "{} would conflict with HEAD",
            sessions(counts.with_head)
        ));
    }
    if counts.with_your_changes > 0 {
        parts.push(format!(
            "{} would conflict with your uncommitted changes",
            sessions(counts.with_your_changes)
        ));
    }
    parts.join("; ")
}

/// Predicts which live sessions' work would conflict, and renders it.
pub fn run(ctx: &Context, _args: &OverlapsArgs, out: &Output) -> Result<i32> {
    let outcome = overlaps(ctx)?;
    if out.json_done("a3s-iso.overlaps.v1", &outcome) {
        return Ok(0);
    }
    let counts = outcome.counts();
    let tone = if counts.none() { Tone::Good } else { Tone::Bad };
    out.headline_toned(&headline(counts), tone);
    for session in &outcome.sessions {
        let shown = session.paths.len().min(5);
        let more = session.paths.len() - shown;
        let tail = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        out.line(&format!(
            "  {}: {} changed{}{}",
            inert(&session.session_id),
            session.paths.len(),
            if shown == 0 { "" } else { ": " },
            inert_joined(&session.paths[..shown]) + &tail
        ));
        for (against, with) in [
            (&session.with_head, "HEAD"),
            (&session.with_your_changes, "your uncommitted changes"),
        ] {
            if against.prediction == Prediction::Conflict {
                let paths = inert_joined(&against.conflicting_paths);
                out.line(&format!("    conflicts with {with}: {paths}"));
            }
        }
    }
    for pair in &outcome.pairs {
        let verdict = match pair.prediction {
            Prediction::Clean => "clean".to_string(),
            Prediction::Conflict => format!("conflict: {}", inert_joined(&pair.conflicting_paths)),
        };
        out.line(&format!(
            "  {} / {}: {verdict}",
            inert(&pair.a),
            inert(&pair.b)
        ));
    }
    for skipped in &outcome.skipped {
        out.line(&format!(
            "  {}: left out ({})",
            inert(&skipped.session_id),
            inert(&skipped.reason)
        ));
    }
    Ok(0)
}
