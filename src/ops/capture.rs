//! `capture`: snapshot a session into a pinned tree and a change-set document.

use crate::base::error::Result;
use crate::base::ids::TreeId;
use crate::context::Context;
use crate::services::evidence::{Target, record_evidence, record_nested, reusable, snapshot_all};

pub use crate::services::evidence::{CaptureOutcome, write_document};

/// What `capture` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct CaptureOptions {
    /// The session; resolved as for every command when `None`.
    pub session_id: Option<String>,
    /// The run id to record the capture under; generated when `None` (a cumulative capture).
    pub run_id: Option<String>,
    /// `sha256:<64 hex>`; default: the sha256 of `a3s-iso/<version>`.
    pub release_identity: Option<String>,
}

/// Captures the isolation against its base tree, pinning the result and storing the document.
pub fn capture(ctx: &Context, opts: &CaptureOptions) -> Result<CaptureOutcome> {
    let target = Target::prepare(
        ctx,
        opts.session_id.as_deref(),
        opts.run_id.as_deref(),
        opts.release_identity.as_deref(),
    )?;
    let (snap, nested) = snapshot_all(ctx, &target.located, &target.isolation)?;
    let reused = match opts.run_id {
        None => reusable(ctx, &target, &snap.tree, &nested.sets())?,
        Some(_) => None,
    };
    let mut outcome = match reused {
        Some(outcome) => outcome,
        None => {
            let located = &target.located;
            let tree = TreeId::new(&snap.tree)?;
            let outcome = record_evidence(ctx, located, &target.completed(&tree))?;
            let (session_id, run_id) = (&target.record.session_id, &target.run_id);
            record_nested(ctx, located, session_id, run_id, &nested)?;
            outcome
        }
    };
    outcome.nested_repositories = snap.nested;
    outcome.nested = nested.sets();
    outcome.warnings = nested.warnings();
    Ok(outcome)
}
