//! `path`: where a session's isolation is, for a shell to enter it (`shell-init`'s `cd`).

use std::path::PathBuf;

use serde::Serialize;

use crate::base::error::{Error, Result, Unavailable};
use crate::base::ids::SessionId;
use crate::context::Context;
use crate::store::state::SessionState;

/// A session's isolation, as `path` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PathOutcome {
    /// The session.
    pub session_id: SessionId,
    /// Its isolation (a directory that exists).
    #[serde(with = "crate::base::paths::fs_path")]
    pub worktree: PathBuf,
}

/// The isolation of the session; none is `isolation_unavailable`. Reads only.
pub fn isolation_path(ctx: &Context, session: Option<&str>) -> Result<PathOutcome> {
    let located = crate::recovery::locate(ctx)?;
    let record = ctx.resolve_session(&located, session)?;
    let id = &record.session_id;
    let session_id = id.to_string();
    if record.state == SessionState::Discarded {
        return Err(Error::from(Unavailable::Discarded { session_id }));
    }
    let Some(tree) = record.worktree.clone().filter(|_| !record.read_only) else {
        return Err(Error::from(Unavailable::ReadOnly { session_id }));
    };
    if !tree.is_dir() {
        return Err(Error::from(Unavailable::Gone { session_id, tree }));
    }
    Ok(PathOutcome {
        session_id: id.clone(),
        worktree: tree,
    })
}
