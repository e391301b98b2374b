//! `discard`: remove a session's isolation; never touches the source. Idempotent.

use std::path::PathBuf;

use serde::Serialize;

use crate::base::error::Result;
use crate::base::fsutil::now_ms;
use crate::base::ids::SessionId;
use crate::context::{Context, Located};
use crate::model::isolation;
use crate::model::refs;
use crate::recovery::pending;
use crate::services::purge::SessionPlan;
use crate::services::purge_item::{Kind, Reason};
use crate::store::lock::RepoLock;
use crate::store::state::PurgedMark;
use crate::store::state::SessionState;

/// What `discard` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct DiscardOptions {
    /// The session; resolved as for every command when `None`.
    pub session_id: Option<String>,
    /// Also drop the session's refs and records (evidence included).
    pub purge: bool,
}

/// What `discard` did.
#[derive(Debug, Clone, Serialize)]
pub struct DiscardOutcome {
    /// The session discarded.
    pub session_id: SessionId,
    /// Whether an isolation tree (or its registration) was removed by this call.
    pub removed: bool,
    /// Where its isolation was.
    #[serde(with = "crate::base::paths::fs_path_opt")]
    pub worktree: Option<PathBuf>,
    /// Whether its refs and records went too (`--purge`).
    pub purged: bool,
    /// With `--purge`: what went (refs, branch, records, artifacts, lease…).
    pub purged_items: Vec<crate::services::purge_item::Item>,
    /// With `--purge`: what stayed, with why (journal entries, a checked-out retained branch).
    pub kept: Vec<crate::services::purge_item::Item>,
    /// Whether the tree was cleaned and returned to the pool instead of deleted.
    pub recycled: bool,
    /// `--purge` of a session an earlier purge removed: only `purged_items` was left.
    pub already_purged: bool,
}

/// Removes the isolation and marks the session discarded (`purge`: forgets it and its
/// evidence). Never touches the source; twice is no error; a running one is `session_busy`.
pub fn discard(ctx: &Context, opts: &DiscardOptions) -> Result<DiscardOutcome> {
    let located = crate::recovery::locate(ctx)?;
    if opts.purge
        && let Some(done) = purged_before(ctx, &located, opts.session_id.as_deref())?
    {
        return Ok(done);
    }
    let session = ctx.resolve_record(&located, opts.session_id.as_deref())?;
    // Under the lock and the lease until the tree is gone: no run can start in the middle.
    let lock = crate::recovery::lock(ctx, &located.repo)?;
    let _lease = located.store.lease_or_busy(&session.session_id)?;
    let mut record = located
        .store
        .load_session(&session.session_id)?
        .unwrap_or(session);
    let (mut removed, mut recycled) = (false, false);
    if record.state != SessionState::Discarded
        && let Some(tree) = &record.worktree
    {
        use crate::services::pool::{Return, Returned, recycle};
        // While the pool is below its size, the tree is cleaned and kept as a spare.
        let returned = recycle(&lock, ctx, &located, &record, Return::Discard)?;
        recycled = returned == Returned::ToPool;
        removed = match returned {
            Returned::ToPool | Returned::Removed => true,
            Returned::No => remove_tree(&lock, &located, &record, tree)?,
        };
        record = located
            .store
            .load_session(&record.session_id)?
            .unwrap_or(record);
    }
    let id = record.session_id.clone();
    // A rebase waiting at a conflict has no isolation to wait in any more.
    crate::services::rebase::forget(&located.store, &id)?;
    let mut purge = SessionPlan::default();
    if opts.purge {
        purge = purge_session(&lock, ctx, &located, &record)?;
    } else if record.state != SessionState::Discarded {
        record.state = SessionState::Discarded;
        record.updated_at_ms = now_ms();
        located.store.save_session(&record)?;
    }
    Ok(DiscardOutcome {
        session_id: id.clone(),
        removed,
        worktree: record.worktree,
        purged: opts.purge,
        purged_items: purge.remove,
        kept: purge.keep,
        recycled,
        already_purged: false,
    })
}

/// `--purge` of a recordless session an earlier purge marked: `already_purged`, removing what
/// that one left (its lease). `None` when the id has a record or no mark.
fn purged_before(
    ctx: &Context,
    located: &Located,
    id: Option<&str>,
) -> Result<Option<DiscardOutcome>> {
    let Some(id) = id else {
        return Ok(None);
    };
    let id = &SessionId::new(id)?;
    let store = &located.store;
    let recorded = || std::fs::symlink_metadata(store.session_file(id)).is_ok();
    let canonical = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or(p.to_path_buf());
    let here = canonical(&located.repo.common_dir);
    let mark = store.load_purged(id).ok().flatten();
    let Some(mark) = mark.filter(|m| !recorded() && canonical(&m.common_dir) == here) else {
        return Ok(None);
    };
    let lock = crate::recovery::lock(ctx, &located.repo)?;
    // A lease file this call makes by taking the lease is not a leftover.
    let had_lease = std::fs::symlink_metadata(store.lease_file(id)).is_ok();
    let _lease = store.lease_or_busy(id)?;
    if recorded() {
        // Bound again meanwhile: a session like any other.
        return Ok(None);
    }
    // A purge killed inside git's ref update leaves its lock files.
    refs::clear_stale_locks(&lock, &located.repo.common_dir, &store.refs(), id);
    let mut plan = crate::services::purge::plan_session_at(
        &ctx.git,
        located,
        id,
        mark.admin_dir.as_deref(),
        Reason::Purged,
    )?;
    if !had_lease {
        plan.remove.retain(|i| i.kind != Kind::Lease);
    }
    remove_planned(ctx, located, &plan)?;
    // The lease this call made goes too (unlinked while held, as a purge does).
    crate::base::fsutil::remove_file_if_exists(&store.lease_file(id))?;
    Ok(Some(DiscardOutcome {
        session_id: id.clone(),
        removed: false,
        worktree: mark.worktree,
        purged: true,
        purged_items: plan.remove,
        kept: plan.keep,
        recycled: false,
        already_purged: true,
    }))
}

/// One session `discard --all` could not discard, and why.
#[derive(Debug, Clone, Serialize)]
pub struct DiscardFailure {
    /// The session.
    pub session_id: SessionId,
    /// The error's stable code (`session_busy` for one whose command runs).
    pub code: crate::base::error::ErrorCode,
    /// What went wrong.
    pub message: String,
}

/// What `discard --all` did (`a3s-iso.discard-all.v1`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct DiscardAllOutcome {
    /// Each session discarded, in id order, as `discard` reports one.
    pub sessions: Vec<DiscardOutcome>,
    /// The sessions left as they were (a running command holds one), with why.
    pub failed: Vec<DiscardFailure>,
}

/// Discards (or purges) every session of this source and store the caller may act on, one at
/// a time; one that cannot be discarded now is reported and the rest go on.
pub fn discard_all(ctx: &Context, purge: bool) -> Result<DiscardAllOutcome> {
    let located = crate::recovery::locate(ctx)?;
    let canonical = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or(p.to_path_buf());
    let here = canonical(&located.repo.toplevel);
    let mut ids: Vec<SessionId> = located
        .store
        .sessions()?
        .into_iter()
        .flatten()
        .filter(|r| located.owns(r) && canonical(&r.source) == here)
        .filter(|r| ctx.may_act_on(&r.session_id))
        .filter(|r| purge || r.state != SessionState::Discarded)
        .map(|r| r.session_id)
        .collect();
    ids.sort();
    let mut outcome = DiscardAllOutcome::default();
    for id in ids {
        let opts = DiscardOptions {
            session_id: Some(id.to_string()),
            purge,
        };
        match discard(ctx, &opts) {
            Ok(done) => outcome.sessions.push(done),
            Err(err) => outcome.failed.push(DiscardFailure {
                session_id: id,
                code: err.code(),
                message: err.to_string(),
            }),
        }
    }
    Ok(outcome)
}

/// Removes everything of the session but its journal entries; its held lease file goes last.
fn purge_session(
    held: &RepoLock,
    ctx: &Context,
    located: &Located,
    record: &crate::store::state::SessionRecord,
) -> Result<SessionPlan> {
    let id = &record.session_id;
    let ns = located.store.refs();
    refs::clear_stale_locks(held, &located.repo.common_dir, &ns, id);
    let plan =
        crate::services::purge::plan_session(&ctx.git, located, id, Some(record), Reason::Purged)?;
    // Marked first: a purge cut short after the record went is `already_purged` when run again.
    located.store.save_purged(&PurgedMark {
        session_id: id.clone(),
        common_dir: located.repo.common_dir.clone(),
        admin_dir: record.admin_dir.clone(),
        worktree: record.worktree.clone(),
        purged_at_ms: now_ms(),
    })?;
    remove_planned(ctx, located, &plan)?;
    Ok(plan)
}

/// Removes what a purge planned, the session's lease last (while this command holds it).
fn remove_planned(ctx: &Context, located: &Located, plan: &SessionPlan) -> Result<()> {
    let (lease, rest): (Vec<_>, Vec<_>) = plan
        .remove
        .iter()
        .cloned()
        .partition(|i| i.kind == Kind::Lease);
    crate::services::purge_item::remove_all(&ctx.git, located, &rest)?;
    crate::fault_point!("purge-after-records");
    for path in lease.iter().filter_map(|i| i.path.as_ref()) {
        crate::base::fsutil::remove_file_if_exists(path)?;
    }
    Ok(())
}

/// Removes the isolation crash-consistently: an fsynced intent, the tree renamed aside, then
/// its registration and the tree; the next command finishes (or before the rename, undoes) a
/// kill.
fn remove_tree(
    held: &RepoLock,
    located: &crate::context::Located,
    record: &crate::store::state::SessionRecord,
    tree: &std::path::Path,
) -> Result<bool> {
    let is_dir = std::fs::symlink_metadata(tree).is_ok_and(|m| m.is_dir());
    if !is_dir {
        return isolation::remove(&located.repo, tree, record.admin_dir.as_deref());
    }
    let intent = pending::Reclaim {
        session_id: record.session_id.clone(),
        path: tree.to_path_buf(),
        admin: record.admin_dir.clone(),
        trash: pending::trash_path(tree, &record.session_id),
        swept_ref: None,
        at_ms: now_ms(),
    };
    pending::save(&located.store, &pending::TreeMove::Discard(intent.clone()))?;
    crate::fault_point!("discard-after-intent");
    if let Err(err) = std::fs::rename(tree, &intent.trash) {
        pending::remove(&located.store, &record.session_id)?;
        return Err(crate::base::error::Error::io(
            format!("cannot move {} aside to remove it", tree.display()),
            err,
        ));
    }
    crate::fault_point!("discard-after-move");
    pending::complete_discard(held, &located.repo, &located.store, &intent)?;
    Ok(true)
}
