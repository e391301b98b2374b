use clap::Args;

use a3s_iso::base::error::Result;
use a3s_iso::services::overlaps::{Prediction, overlaps};
use a3s_iso::workspace::context::Context;

use super::{Output, Tone, inert};

/// `a3s-iso overlaps`' arguments (none but the global ones).
#[derive(Debug, Args)]
pub struct OverlapsArgs {}

/// Predicts which live sessions' work would conflict, and renders it.
pub fn run(ctx: &Context, _args: &OverlapsArgs, out: &Output) -> Result<i32> {
    let outcome = overlaps(ctx)?;
    if out.json {
        out.document("a3s-iso.overlaps.v1", &outcome);
        return Ok(0);
    }
    let conflicts = outcome
        .pairs
        .iter()
        .filter(|p| p.prediction == Prediction::Conflict)
        .count();
    let headline = match conflicts {
        0 => "no conflicts between live sessions".to_string(),
        1 => "1 pair of sessions would conflict".to_string(),
        n => format!("{n} pairs of sessions would conflict"),
    };
    let tone = if conflicts == 0 {
        Tone::Good
    } else {
        Tone::Bad
    };
    out.headline_toned(&headline, tone);
    for session in &outcome.sessions {
        let shown: Vec<String> = session
            .paths
            .iter()
            .take(5)
            .map(|p| inert(p).into_owned())
            .collect();
        let more = session.paths.len().saturating_sub(shown.len());
        let tail = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        out.line(&format!(
            "  {}: {} changed{}{}",
            inert(&session.session_id),
            session.paths.len(),
            if shown.is_empty() { "" } else { ": " },
            shown.join(", ") + &tail
        ));
    }
    for pair in &outcome.pairs {
        let verdict = match pair.prediction {
            Prediction::Clean => "clean".to_string(),
            Prediction::Conflict => {
                let paths: Vec<String> = pair
                    .conflicting_paths
                    .iter()
                    .map(|p| inert(p).into_owned())
                    .collect();
                format!("conflict: {}", paths.join(", "))
            }
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
