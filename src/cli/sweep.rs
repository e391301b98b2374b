use std::time::Duration;

use clap::Args;

use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
use a3s_iso::ops::sweep::{SweepOptions, SweepOutcome, reasons, sweep};

use super::progress::Bar;
use super::{Output, human_bytes, parse_duration};

/// `a3s-iso sweep`'s arguments.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Sweep every source this user has bound from, not only this repository
    #[arg(long)]
    pub all: bool,

    /// Report what a sweep would do, and change nothing
    #[arg(long)]
    pub dry_run: bool,

    /// Keep in-flight, malformed and unrecorded isolations younger than DUR
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "10m")]
    pub grace: Duration,

    /// Do not snapshot an isolation into its swept ref (refs/a3s-iso/swept/<id>) before removing it
    #[arg(long)]
    pub no_capture: bool,

    /// Also reclaim retained isolations retained longer than DUR ago
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub retained_older_than: Option<Duration>,

    /// Also reclaim ownerless sessions (bind --owner none) idle for longer than the grace
    #[arg(long)]
    pub include_ownerless: bool,
}

/// Sweeps and renders the report.
pub fn run(ctx: &Context, args: &SweepArgs, out: &Output) -> Result<i32> {
    let bar = Bar::new(!out.json && !out.quiet, "sweeping");
    let outcome = sweep(
        ctx,
        &SweepOptions {
            all: args.all,
            dry_run: args.dry_run,
            grace: args.grace,
            no_capture: args.no_capture,
            retained_older_than: args.retained_older_than,
            include_ownerless: args.include_ownerless,
        },
        &bar,
    )?;
    out.answer("a3s-iso.sweep.v1", &outcome, || render(out, &outcome));
    Ok(0)
}

/// A headline, then (unless `-q`) a line per isolation and how many were kept why.
fn render(out: &Output, outcome: &SweepOutcome) {
    let verb = if outcome.dry_run {
        "would reclaim"
    } else {
        "reclaimed"
    };
    out.headline(&format!(
        "{verb} {} isolation{} ({}), kept {}, skipped {}",
        outcome.reclaimed.len(),
        super::plural(outcome.reclaimed.len()),
        human_bytes(outcome.bytes_freed),
        outcome.kept.len(),
        outcome.skipped.len()
    ));
    if out.quiet {
        return;
    }
    for item in &outcome.reclaimed {
        out.line(&format!(
            "  reclaim  {}  ({}: {}, {})",
            item.path.display(),
            item.reason,
            why_reclaimed(item.reason),
            human_bytes(item.bytes)
        ));
    }
    for item in &outcome.kept {
        let path = item.path.display();
        out.line(&format!(
            "  keep     {path}  ({}: {})",
            item.reason, item.detail
        ));
    }
    for item in &outcome.skipped {
        let path = item.path.display();
        out.line(&format!("  skip     {path}  ({})", item.reason));
    }
    if !outcome.kept.is_empty() {
        let summary: Vec<String> = reasons(outcome)
            .into_iter()
            .map(|(r, n)| format!("{n} {r}"))
            .collect();
        // After the list, apart from it, on the same stream.
        out.line("");
        out.line(&format!("kept: {}", summary.join(", ")));
    }
}

/// A reclaim's reason in words, as a kept isolation's detail says why it stays.
fn why_reclaimed(reason: a3s_iso::services::reclaimed::ReclaimReason) -> &'static str {
    use a3s_iso::services::reclaimed::ReclaimReason;
    match reason {
        ReclaimReason::OwnerDead => "its owner is gone",
        ReclaimReason::InFlightDead => "a bind whose process is gone left it half made",
        ReclaimReason::Malformed => "its record cannot be read",
        ReclaimReason::Unrecorded => "named like an isolation, with no record",
        ReclaimReason::RetainedExpired => "retained longer than --retained-older-than",
        ReclaimReason::Ownerless => "ownerless, idle longer than the grace",
    }
}

/// What `bind` or `land` reclaimed as it started, on stderr, each with where its work went.
pub fn note_reclaimed(reclaimed: &[a3s_iso::ops::sweep::Reclaimed], out: &Output) {
    for item in reclaimed {
        let kept = item.swept_ref.as_deref().map_or(String::new(), |r| {
            format!(
                "; its work is in {r}: `a3s-iso bind --resume -s {}`",
                item.session_id
            )
        });
        out.info(&format!(
            "reclaimed {} ({}, session {}){kept}",
            item.path.display(),
            item.reason,
            item.session_id
        ));
    }
}
