//! `gc`: remove what no live or retained session needs, past the retention window.
//! May call: base, git, store, context, model, recovery, services; no other verb.
//!
//! Only this source's and state dir's (`--all`: whatever its age); never a bound or retained
//! session, its refs or its evidence. Planned under the repository lock, then removed in an
//! order a crash can interrupt anywhere: the next `gc` finishes the job.

mod plan;

use std::time::Duration;

use serde::Serialize;

use crate::base::error::Result;
use crate::base::fsutil::now_ms;
use crate::context::Context;
pub use crate::services::purge_item::{Item, Kind, Reason};

/// How long what no session needs is kept when `--older-than` is not given: 30 days.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(30 * 24 * 60 * 60);

/// What `gc` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct GcOptions {
    /// Remove only what is older than this ([`DEFAULT_RETENTION`] when `None`).
    pub older_than: Option<Duration>,
    /// List what would go, change nothing.
    pub dry_run: bool,
    /// Remove everything no live or retained session needs, whatever its age.
    pub all: bool,
    /// Also delete the change sets on this remote dated before the window (`gc --remote`).
    pub remote: Option<RemoteTarget>,
}

/// The remote `gc --remote` cleans.
#[derive(Debug, Clone)]
pub struct RemoteTarget {
    /// A configured remote's name (or, with `allow_url`, a URL or path).
    pub name: String,
    /// Accept a URL or path that is not a configured remote.
    pub allow_url: bool,
}

/// What `gc` removed (or, with `--dry-run`, would remove) and what it kept.
#[derive(Debug, Clone, Serialize)]
pub struct GcOutcome {
    /// Nothing was changed: `removed` is what would go.
    pub dry_run: bool,
    /// `--all` was given.
    pub all: bool,
    /// The retention window, in milliseconds.
    pub older_than_ms: u64,
    /// What went (or would go).
    pub removed: Vec<Item>,
    /// What was kept of what a clean-up could have touched, with why.
    pub kept: Vec<Item>,
    /// The bytes of what went (where known).
    pub bytes: u64,
    /// The bytes of what was kept (where known).
    pub kept_bytes: u64,
    /// With `--remote`: the change sets deleted (or, with `--dry-run`, that would be) there.
    pub remote: Option<crate::services::remote::DeleteOutcome>,
}

/// Plans under the repository lock and, unless `dry_run`, removes what it planned.
pub fn gc(ctx: &Context, opts: &GcOptions) -> Result<GcOutcome> {
    let located = crate::recovery::locate(ctx)?;
    let window = opts.older_than.unwrap_or(DEFAULT_RETENTION);
    // The lock finishes interrupted operations first, so a dry run reports no half-done one.
    let lock = crate::recovery::lock(ctx, &located.repo)?;
    crate::recovery::spares::recover(&lock, &located)?;
    let mut planned = crate::ops::gc::plan::plan(
        &ctx.git,
        &located,
        crate::ops::gc::plan::Window {
            cutoff_ms: now_ms().saturating_sub(window.as_millis() as u64),
            all: opts.all,
        },
    )?;
    if !opts.dry_run {
        let removal = crate::services::purge_item::remove_all(&ctx.git, &located, &planned.remove)?;
        planned.remove = removal.removed;
        planned.keep.extend(removal.stayed);
    }
    // The remote is the network's: never wait on it holding the repository lock.
    drop(lock);
    let remote = (opts.remote.as_ref())
        .map(|target| clean_remote(ctx, target, window, opts))
        .transpose()?;
    Ok(GcOutcome {
        dry_run: opts.dry_run,
        all: opts.all,
        older_than_ms: window.as_millis() as u64,
        bytes: planned.remove.iter().filter_map(|i| i.bytes).sum(),
        kept_bytes: planned.keep.iter().filter_map(|i| i.bytes).sum(),
        removed: planned.remove,
        kept: planned.keep,
        remote,
    })
}

/// The remote's change sets dated before the window (`--all`: every one) are deleted.
fn clean_remote(
    ctx: &Context,
    target: &RemoteTarget,
    window: Duration,
    opts: &GcOptions,
) -> Result<crate::services::remote::DeleteOutcome> {
    let window = if opts.all { Duration::ZERO } else { window };
    crate::services::remote::delete_changes(
        ctx,
        Some(&target.name),
        target.allow_url,
        &crate::services::remote::DeleteSelection::OlderThan(window),
        opts.dry_run,
    )
}
