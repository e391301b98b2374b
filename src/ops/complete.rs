//! What the shell completions ask the binary for at completion time (`__complete`).

use crate::base::error::Result;
use crate::context::Context;
use crate::store::state::SessionState;

/// The ids of the sessions of the repository the context is in that a command can still name:
/// bound and retained ones, not discarded ones; sorted. Reads the records only: no git call
/// besides finding the repository, no lock, no repair, so it stays fast with many sessions.
pub fn session_ids(ctx: &Context) -> Result<Vec<String>> {
    let located = crate::recovery::locate(ctx)?;
    let mut ids: Vec<String> = located
        .store
        .sessions()?
        .into_iter()
        .flatten()
        .filter(|s| s.state != SessionState::Discarded)
        .map(|s| s.session_id.into())
        .collect();
    ids.sort();
    Ok(ids)
}
