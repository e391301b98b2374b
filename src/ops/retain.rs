//! `retain`: pin a session's isolation for inspection. It moves to `<path>.retained-<ms>`, is
//! locked against `git worktree prune` with the reason, and `sweep` leaves it alone unless
//! asked explicitly (`--retained-older-than`).

use std::path::PathBuf;

use serde::Serialize;

use crate::base::error::{Error, NoSession, Result};
use crate::base::fsutil::now_ms;
use crate::base::ids::SessionId;
use crate::context::{Context, Located};
use crate::model::isolation;
use crate::recovery::pending::{self, RetainMove, TreeMove};
use crate::store::lock::RepoLock;
use crate::store::state::{SessionRecord, SessionState};

/// A retained isolation: where it is now, where it was, and why it is kept.
#[derive(Debug, Clone, Serialize)]
pub struct RetainOutcome {
    /// The session whose isolation was retained.
    pub session_id: SessionId,
    /// The new path; the old one is no longer valid.
    #[serde(with = "crate::base::paths::fs_path")]
    pub worktree: PathBuf,
    /// Where the isolation was before (the same path when it was retained already).
    #[serde(with = "crate::base::paths::fs_path")]
    pub previous_worktree: PathBuf,
    /// Why it is kept, as given.
    pub reason: String,
}

/// Retains the isolation with `reason` (an already retained one only changes its reason).
pub fn retain(ctx: &Context, session_id: Option<&str>, reason: &str) -> Result<RetainOutcome> {
    if reason.trim().is_empty() {
        return Err(Error::usage("--reason must say why the isolation is kept"));
    }
    let located = crate::recovery::locate(ctx)?;
    let session = ctx.resolve_session(&located, session_id)?;
    // Under the lock and the lease until the record is saved: no run can start in the middle.
    let lock = crate::recovery::lock(ctx, &located.repo)?;
    let _lease = located.store.lease_or_busy(&session.session_id)?;
    let record = located
        .store
        .load_session(&session.session_id)?
        .unwrap_or(session);
    let (record, tree, admin) = retainable(record)?;
    if record.state == SessionState::Retained {
        return change_reason(ctx, &located, record, tree, reason);
    }
    move_aside(&lock, ctx, &located, (record, tree, admin), reason)
}

/// The session with its healthy isolation's path and admin dir.
fn retainable(record: SessionRecord) -> Result<(SessionRecord, PathBuf, PathBuf)> {
    if record.read_only {
        return Err(Error::ReadOnlySession {
            session_id: record.session_id.to_string(),
        });
    }
    if record.state == SessionState::Discarded || !isolation::is_healthy(&record) {
        return Err(Error::SessionNotFound {
            reason: NoSession::NoIsolation {
                session_id: record.session_id.to_string(),
            },
            candidates: Vec::new(),
        });
    }
    match (record.worktree.clone(), record.admin_dir.clone()) {
        (Some(tree), Some(admin)) => Ok((record, tree, admin)),
        _ => Err(Error::internal("a healthy isolation without paths")),
    }
}

/// Already retained: the tree stays where it is, locked again with the new reason.
fn change_reason(
    ctx: &Context,
    located: &Located,
    mut record: SessionRecord,
    path: PathBuf,
    reason: &str,
) -> Result<RetainOutcome> {
    ctx.git.worktree_unlock(&located.repo.toplevel, &path)?;
    ctx.git
        .worktree_lock(&located.repo.toplevel, &path, reason)?;
    record.retained_reason = Some(reason.to_string());
    located.store.save_session(&record)?;
    Ok(RetainOutcome {
        session_id: record.session_id,
        worktree: path.clone(),
        previous_worktree: path,
        reason: reason.to_string(),
    })
}

/// Moves the isolation to `<old>.retained-<ms>`, locks and records it, under the lock and
/// lease. The intent comes first and the tree moves in one rename, so the next command
/// finishes or undoes a crash (see `pending`).
fn move_aside(
    held: &RepoLock,
    ctx: &Context,
    located: &Located,
    (record, old, admin): (SessionRecord, PathBuf, PathBuf),
    reason: &str,
) -> Result<RetainOutcome> {
    let now = now_ms();
    let new = crate::base::names::retained_path(&old, now);
    if std::fs::symlink_metadata(&new).is_ok() {
        return Err(Error::IsolationPathOccupied {
            path: new,
            found: "an entry".into(),
        });
    }
    let intent = RetainMove {
        session_id: record.session_id.clone(),
        from: old.clone(),
        to: new.clone(),
        admin,
        reason: reason.to_string(),
        retained_at_ms: now,
    };
    // Moving, locking and recording go together: interrupts wait until the record is saved.
    let _interrupts = crate::base::signals::Signals::register()?;
    pending::save(&located.store, &TreeMove::Retain(intent.clone()))?;
    crate::fault_point!("retain-after-intent");
    if let Err(err) = std::fs::rename(&old, &new) {
        pending::remove(&located.store, &record.session_id)?;
        return Err(Error::io(
            format!("cannot move {} to {}", old.display(), new.display()),
            err,
        ));
    }
    crate::fault_point!("retain-after-move");
    pending::complete_retain(held, &ctx.git, &located.repo, &located.store, &intent)?;
    Ok(RetainOutcome {
        session_id: record.session_id,
        worktree: new,
        previous_worktree: old,
        reason: reason.to_string(),
    })
}
