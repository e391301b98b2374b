//! `retain`: pin a session's isolation for inspection. It moves to `<path>.retained-<ms>`, is
//! locked against `git worktree prune` with the reason, and `sweep` leaves it alone unless
//! asked explicitly (`--retained-older-than`).

use std::path::PathBuf;

use serde::Serialize;

use crate::context::Context;
use crate::error::{Error, Result};
use crate::fsutil::now_ms;
use crate::isolation;
use crate::state::SessionState;

#[derive(Debug, Clone, Serialize)]
pub struct RetainOutcome {
    pub session_id: String,
    /// The new path; the old one is no longer valid.
    pub worktree: PathBuf,
    pub previous_worktree: PathBuf,
    pub reason: String,
}

pub fn retain(ctx: &Context, session_id: Option<&str>, reason: &str) -> Result<RetainOutcome> {
    if reason.trim().is_empty() {
        return Err(Error::Usage {
            message: "--reason must say why the isolation is kept".into(),
        });
    }
    let located = ctx.locate()?;
    let session = ctx.resolve_session(&located, session_id)?;
    located.store.refuse_if_leased(&session.session_id)?;
    let _lock = ctx.lock(&located.repo)?;
    let mut record = located
        .store
        .load_session(&session.session_id)?
        .unwrap_or(session);
    if record.read_only {
        return Err(Error::ReadOnlySession {
            session_id: record.session_id.clone(),
        });
    }
    if record.state == SessionState::Discarded || !isolation::is_healthy(&record) {
        return Err(Error::SessionNotFound {
            message: format!("session {:?} has no isolation to retain", record.session_id),
            candidates: Vec::new(),
        });
    }
    let (Some(old), Some(admin)) = (record.worktree.clone(), record.admin_dir.clone()) else {
        return Err(Error::internal("a healthy isolation without paths"));
    };
    if record.state == SessionState::Retained {
        // Already retained: only the reason changes.
        ctx.git
            .at(&located.repo.toplevel)
            .args(["worktree", "unlock"])
            .arg(&old)
            .output()?;
        ctx.git
            .at(&located.repo.toplevel)
            .args(["worktree", "lock", "--reason", reason])
            .arg(&old)
            .run()?;
        record.retained_reason = Some(reason.to_string());
        located.store.save_session(&record)?;
        return Ok(RetainOutcome {
            session_id: record.session_id,
            worktree: old.clone(),
            previous_worktree: old,
            reason: reason.to_string(),
        });
    }
    let now = now_ms();
    let new = PathBuf::from(format!("{}.retained-{now}", old.display()));
    if std::fs::symlink_metadata(&new).is_ok() {
        return Err(Error::IsolationPathOccupied {
            path: new,
            found: "an entry".into(),
        });
    }
    // Moving, locking and recording go together: interrupts wait until the record is saved.
    let _interrupts = crate::signals::Signals::register()?;
    let moved = ctx
        .git
        .at(&located.repo.toplevel)
        .shielded()
        .args(["worktree", "move"])
        .arg(&old)
        .arg(&new)
        .output()?;
    if moved.exit_code != Some(0) {
        // git refuses to move trees with submodules: move it ourselves and repair the links.
        std::fs::rename(&old, &new).map_err(|e| {
            Error::io(
                format!("cannot move {} to {}", old.display(), new.display()),
                e,
            )
        })?;
        ctx.git
            .at(&located.repo.toplevel)
            .shielded()
            .args(["worktree", "repair"])
            .arg(&new)
            .run()?;
    }
    ctx.git
        .at(&located.repo.toplevel)
        .shielded()
        .args(["worktree", "lock", "--reason", reason])
        .arg(&new)
        .run()?;
    record.state = SessionState::Retained;
    record.worktree = Some(new.clone());
    record.admin_dir = Some(admin);
    record.retained_reason = Some(reason.to_string());
    record.retained_at_ms = Some(now);
    record.updated_at_ms = now;
    located.store.save_session(&record)?;
    Ok(RetainOutcome {
        session_id: record.session_id,
        worktree: new,
        previous_worktree: old,
        reason: reason.to_string(),
    })
}
