use std::time::Duration;

use clap::Args;

use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
use a3s_iso::ops::gc::{GcOptions, GcOutcome, Item, Kind, Reason, RemoteTarget, gc};

use super::{Output, human_bytes, parse_duration};

/// `a3s-iso gc`'s arguments.
#[derive(Debug, Args)]
pub struct GcArgs {
    /// Remove only what is older than DUR (default: 30d; 0s: everything no session needs)
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub older_than: Option<Duration>,

    /// List what would be removed, and change nothing
    #[arg(long)]
    pub dry_run: bool,

    /// Remove everything stored for this source and state dir that no live or retained session needs, whatever its age, pool spares included (the uninstall path)
    #[arg(long)]
    pub all: bool,

    /// Also delete the change sets on REMOTE dated before the window (with --all: every one)
    #[arg(long, value_name = "REMOTE")]
    pub remote: Option<String>,

    /// With --remote: accept a URL or path that is not a configured remote
    #[arg(long, requires = "remote")]
    pub allow_url: bool,
}

pub fn run(ctx: &Context, args: &GcArgs, out: &Output) -> Result<i32> {
    let options = GcOptions {
        older_than: args.older_than,
        dry_run: args.dry_run,
        all: args.all,
        remote: args.remote.as_ref().map(|name| RemoteTarget {
            name: name.clone(),
            allow_url: args.allow_url,
        }),
    };
    let outcome = out.spinning("collecting", || gc(ctx, &options))?;
    out.answer("a3s-iso.gc.v1", &outcome, || render(out, &outcome));
    Ok(0)
}

fn render(out: &Output, outcome: &GcOutcome) {
    let verb = if outcome.dry_run {
        "would remove"
    } else {
        "removed"
    };
    let shown: Vec<&Item> = outcome
        .removed
        .iter()
        .filter(|i| i.kind != Kind::EmptyDir)
        .collect();
    out.headline(&format!(
        "{verb} {} item{} ({}), kept {} ({})",
        shown.len(),
        super::plural(shown.len()),
        human_bytes(outcome.bytes),
        outcome.kept.len(),
        human_bytes(outcome.kept_bytes)
    ));
    if out.quiet {
        return;
    }
    // Tagged alike, so that the kinds and paths of both lists stand in the same columns.
    for item in shown {
        out.line(&format!("  remove {}", describe(item)));
    }
    for item in &outcome.kept {
        out.line(&format!("  keep   {}", describe(item)));
    }
    if let Some(remote) = &outcome.remote {
        out.line(&format!(
            "{verb} {} change set{} from {}",
            remote.deleted.len(),
            super::plural(remote.deleted.len()),
            remote.remote.name
        ));
        for digest in &remote.deleted {
            out.line(&format!("  {digest}"));
        }
    }
}

/// One line for an item: kind, where, why.
pub fn describe(item: &Item) -> String {
    let kind = serde_json::to_value(item.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    format!("{kind:<14} {}  ({})", item.location(), why(item.reason))
}

fn why(reason: Reason) -> &'static str {
    match reason {
        Reason::Discarded => "session discarded",
        Reason::Swept => "session swept",
        Reason::Gone => "session has no record",
        Reason::Purged => "session purged",
        Reason::Expired => "older than the retention window",
        Reason::DeadHolder => "no one holds it",
        Reason::DeadMaker => "its process is gone",
        Reason::SourceGone => "source no longer exists",
        Reason::Uninstall => "gc --all",
        Reason::Live => "live session",
        Reason::Retained => "retained session",
        Reason::InsideWindow => "inside the retention window: gc --older-than 0s removes it",
        Reason::Idempotence => "keeps a later promote of this digest idempotent",
        Reason::CheckedOut => "checked out in the source",
        Reason::Busy => "in use",
        Reason::IsolationGone => "its isolation is gone",
        Reason::IsolationExists => "its isolation exists",
        Reason::Pool => "the pool's: pool --size 0 or gc --all removes it",
        Reason::Unused => "no session or spare is bound at its revision",
        Reason::InUse => "sessions or spares are bound at its revision",
    }
}
