//! `promote`: apply a change set to the source exactly once, with a typed outcome.
//! May call: base, git, store, context, model, recovery, services; no other verb.
//!
//! Outcomes: `applied`, `idempotent` (digest journaled), `conflict` (source moved or patch does
//! not apply; nothing applied), `empty`, or `planned` with `--no-apply`. The steps: (1) a
//! document is verified, or a session captured as the delta since its last promoted step; (2)
//! an empty change set stops; (3) a journaled digest is `idempotent`; (4) a session's moved
//! HEAD is `head_moved`, a document's unknown or other base `base_unknown` or `base_differs`;
//! (5) artifacts are written (`--no-apply` stops); (6) the patch is checked, an intent
//! recorded, and the checkout written and journaled with interrupts deferred. Branch mode
//! replays the session's commits instead of (6). The lock finishes any interrupted promote
//! first (`intent`), so "already promoted" is decided from records, never from the checkout.

mod artifacts;
mod as_picked;
mod branch;
mod gitlink;
mod journal;
mod nested;
mod options;
mod outcome;
mod patch;

pub(crate) use crate::ops::promote::branch::plan_ahead;
pub(crate) use crate::ops::promote::options::{Candidate, Known, PatchAhead};
pub use crate::ops::promote::options::{OpenedDir, PromoteOptions};
use crate::services::steps::last_step;

pub use crate::ops::promote::outcome::{
    BranchReport, Mode, NestedOutcome, NestedResult, Outcome, PromoteOutcome, Reason,
    ReplayedCommit, SkipReason, SkippedCommit,
};

use crate::base::error::{Error, Result};
use crate::base::ids::CommitId;
use crate::base::invalid::Invalid;
use crate::context::{Context, Located};
use crate::model::changeset;
use crate::model::snapshot::Patch;
use crate::services::rebase;
use crate::store::state::{JournalEntry, Landing};

/// Promotes a session, a change-set document or a remote's change set.
pub fn promote(ctx: &Context, opts: &PromoteOptions) -> Result<PromoteOutcome> {
    if let Some(digest) = &opts.note {
        return note(ctx, opts, digest);
    }
    if opts.reapply && opts.change_set.is_none() {
        return reapply(ctx, opts);
    }
    // A document is checked completely before anything else.
    let verified = (opts.change_set.as_ref())
        .map(|path| changeset::verify_file(&ctx.git, path))
        .transpose()?;
    let located = crate::recovery::locate(ctx)?;
    // A remote's change set is fetched and checked completely before the lock is taken.
    let fetched = (opts.from.as_ref())
        .map(|request| crate::services::remote::fetch_for_promote(ctx, &located, request))
        .transpose()?;
    if verified.is_none() && fetched.is_none() {
        let mut session = ctx.resolve_session(&located, opts.session_id.as_deref())?;
        if let Some(paths) = rebase::conflicted_paths(&located.store, &session) {
            return Err(rebase::conflicted_error(&session.session_id, paths));
        }
        if opts.rebase {
            let head = located.repo.head_commit(&ctx.git);
            if let Moved::Stopped(mut out) = rebase_if_moved(ctx, &located, &session, (head, None))?
            {
                out.mode = opts.mode;
                return Ok(*out);
            }
            session = ctx.resolve_session(&located, Some(&session.session_id))?;
        }
        return promote_session(ctx, &located, session, opts, None);
    }
    if opts.mode == Mode::Branch {
        return Err(Error::usage(
            "branch mode promotes a session (-s ID), not a change-set file or a remote's change set",
        ));
    }
    let mut report = None;
    let candidate = match (verified, fetched) {
        (Some(verified), _) => Candidate::of_trees(
            Patch::from_bytes(&verified.patch, &located.store.scratch_dir())?,
            Some(verified.change_set.base_tree),
            Some(verified.change_set.result_tree),
        ),
        (None, Some(fetched)) => {
            report = Some(fetched.report);
            Candidate::of_trees(
                fetched.patch,
                Some(fetched.base_tree),
                Some(fetched.result_tree),
            )
        }
        (None, None) => return Err(Error::internal("no change set to promote")),
    };
    let _lock = crate::recovery::lock(ctx, &located.repo)?;
    let mut out = promote_patch(ctx, &located, candidate, opts)?;
    out.fetched = report;
    Ok(out)
}

/// A session's promote, of what its isolation holds or of what the caller `known`s it holds.
pub(crate) fn promote_session(
    ctx: &Context,
    located: &Located,
    session: crate::store::state::SessionRecord,
    opts: &PromoteOptions,
    known: Option<Known<'_>>,
) -> Result<PromoteOutcome> {
    if opts.mode == Mode::Branch {
        return crate::ops::promote::branch::promote_branch(ctx, located, session, opts, known);
    }
    let _lock = crate::recovery::lock(ctx, &located.repo)?;
    let candidate = Candidate::of_session_beside_head(ctx, located, session, known)?;
    promote_patch(ctx, located, candidate, opts)
}

/// What a rebase before a promote did.
pub(crate) enum Moved {
    /// The source's HEAD is where the session expects it: nothing to rebase.
    Not,
    /// Rebased cleanly; the isolation's tree and HEAD when known to be all its work.
    Rebased { left: Option<(String, String)> },
    /// It stopped at a conflict, left in the isolation: the promote's answer, nothing applied.
    Stopped(Box<PromoteOutcome>),
}

/// Patch mode: the root change set, then each nested one; the artifacts' summary covers both.
fn promote_patch(
    ctx: &Context,
    located: &Located,
    candidate: Candidate,
    opts: &PromoteOptions,
) -> Result<PromoteOutcome> {
    let (mut out, artifacts) =
        crate::ops::promote::patch::promote_patch(ctx, located, &candidate, opts)?;
    crate::ops::promote::nested::land_nested(ctx, located, &candidate, opts, &mut out)?;
    if let Some(artifacts) = artifacts {
        artifacts.summarise(&out)?;
    }
    Ok(out)
}

/// `--rebase`: a session whose source HEAD moved is rebased onto `head` (`None`: unborn) first,
/// from the snapshot taken ahead (`pre`) while it is still current.
pub(crate) fn rebase_if_moved(
    ctx: &Context,
    located: &Located,
    session: &crate::store::state::SessionRecord,
    (head, pre): (Option<CommitId>, Option<rebase::Presnapshot>),
) -> Result<Moved> {
    let previous = last_step(&located.store, session, None)?;
    let expected = previous
        .as_ref()
        .and_then(|p| p.step.head_after.as_deref())
        .unwrap_or(&session.bound_revision);
    if head.is_none() || head.as_deref() == Some(expected) {
        return Ok(Moved::Not);
    }
    let rebased = rebase::rebase_ahead(
        ctx,
        &rebase::RebaseOptions {
            session_id: Some(session.session_id.to_string()),
            onto: head.as_ref().map(CommitId::to_string),
            action: rebase::Action::Start,
        },
        pre,
    )?;
    if rebased.outcome != rebase::RebaseResult::Conflicted {
        ctx.push_notices(rebased.warnings);
        let left = rebased.tree.zip(rebased.head);
        return Ok(Moved::Rebased { left });
    }
    let mut out = PromoteOutcome::new(Outcome::Conflict, Mode::Patch);
    out.session_id = Some(session.session_id.to_string());
    out.bound_revision = Some(session.bound_revision.clone());
    out.current_revision = head;
    out.warnings = rebased.warnings;
    out.conflict(
        Reason::RebaseConflicted,
        Some(format!(
            "rebasing the session onto {} stopped at a conflict, left in its isolation; your checkout is untouched",
            rebased.to_revision
        )),
    );
    out.set_conflicting_paths(
        rebased
            .conflicting_paths
            .iter()
            .map(|p| crate::base::paths::RepoPath(p.clone().into_bytes()))
            .collect(),
    );
    Ok(Moved::Stopped(Box::new(out)))
}

/// `--reapply`: lands a promoted change set again in patch mode (`--digest`, else the last step).
fn reapply(ctx: &Context, opts: &PromoteOptions) -> Result<PromoteOutcome> {
    if opts.mode == Mode::Branch {
        return Err(Error::usage(
            "--reapply lands a change set again as uncommitted changes: patch mode only",
        ));
    }
    let located = crate::recovery::locate(ctx)?;
    let digest = match &opts.digest {
        Some(given) => located
            .store
            .resolve_digest("--digest", given)?
            .ok_or_else(|| Invalid::NoPromote {
                digest: given.to_string(),
            })?,
        None => {
            let session = ctx.resolve_session(&located, opts.session_id.as_deref())?;
            last_step(&located.store, &session, None)?
                .map(|previous| previous.digest)
                .ok_or_else(|| Invalid::NothingToReapply {
                    session_id: session.session_id.to_string(),
                })?
        }
    };
    ctx.require_granted_digest(&located, digest.as_str())?;
    let _lock = crate::recovery::lock(ctx, &located.repo)?;
    let candidate = Candidate::of_journal(ctx, &located, &digest)?;
    promote_patch(ctx, &located, candidate, opts)
}

/// `--note DIGEST`: the host promoted this change set by its own means.
fn note(ctx: &Context, opts: &PromoteOptions, digest: &str) -> Result<PromoteOutcome> {
    if !changeset::is_sha256_digest(digest) {
        return Err(Error::usage(format!(
            "--note {digest:?} is not sha256: and 64 lowercase hex digits"
        )));
    }
    let located = crate::recovery::locate(ctx)?;
    let _lock = crate::recovery::lock(ctx, &located.repo)?;
    let mut out = PromoteOutcome::new(Outcome::Noted, opts.mode);
    out.warnings.extend(ctx.take_notices());
    let digest = &crate::base::ids::Digest::new(digest)?;
    out.digest = Some(digest.clone());
    out.session_id = opts.session_id.clone();
    if located.store.journal_entry(digest)?.is_some() {
        out.outcome = Outcome::Idempotent;
        return Ok(out);
    }
    located.store.record_promoted(&JournalEntry {
        digest: digest.clone(),
        session_id: opts.session_id.clone(),
        source_head: located.repo.head_commit(&ctx.git),
        promoted_at_ms: crate::base::fsutil::now_ms(),
        patch_bytes: 0,
        how: Landing::Noted,
        mode: opts.mode,
        step: None,
        earlier_landings: Vec::new(),
    })?;
    Ok(out)
}
