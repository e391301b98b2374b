//! The promote journal: one fsynced entry per digest that landed, so a change set lands at
//! most once.

use super::outcome::Mode;
use crate::context::Located;
use crate::error::Result;
use crate::fsutil::now_ms;
use crate::state::{JournalEntry, Landing};

/// Records that `digest` landed: the promote journal's entry, fsynced.
pub(super) fn journal(
    located: &Located,
    digest: &str,
    session_id: Option<&str>,
    head: Option<&str>,
    patch_bytes: u64,
    how: Landing,
    mode: Mode,
) -> Result<()> {
    located.store.record_promoted(&JournalEntry {
        digest: digest.to_string(),
        session_id: session_id.map(str::to_string),
        promoted_at_ms: now_ms(),
        source_head: head.map(str::to_string),
        patch_bytes,
        how,
        mode,
    })
}
