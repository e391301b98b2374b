//! What the shell completions ask the binary for at completion time (`__complete`).

use crate::base::error::Result;
use crate::context::Context;
use crate::store::state::SessionState;

/// The sorted ids of bound and retained sessions, from the records alone (fast with many).
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
