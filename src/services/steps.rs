//! A session's promoted steps, as the promote journal records them: where its next delta
//! starts (the result of its last promoted step, else its base), for the root and for each
//! nested repository. `promote` starts there; `diff` and `show` show from there.

use crate::base::error::Result;
use crate::base::ids::TreeId;
use crate::services::nested::NestedChangeSet;
use crate::store::state::{JournalEntry, PromoteMode as Mode, SessionRecord, Step, Store};

/// A session's last promoted step.
#[derive(Debug, Clone)]
pub(crate) struct Previous {
    /// The digest of the delta that step landed.
    pub(crate) digest: crate::base::ids::Digest,
    pub(crate) mode: Mode,
    /// The size of its patch.
    pub(crate) patch_bytes: u64,
    pub(crate) step: Step,
}

/// Where a session's delta starts: the result of its last promoted step, else its base tree.
pub(crate) fn delta_base(session: &SessionRecord, previous: Option<&Previous>) -> TreeId {
    previous.map_or(session.base_tree.clone(), |p| p.step.result_tree.clone())
}

/// The session's last promoted step, with its digest: the journal entry of this session (this
/// binding of its id) with the highest step number — of the root, or (`nested`) of the nested
/// repository at that path. Root steps from before the session's last rebase are behind its
/// new base: they are not where the next delta starts.
pub(crate) fn last_step(
    store: &Store,
    session: &SessionRecord,
    nested: Option<&crate::base::paths::RepoPath>,
) -> Result<Option<Previous>> {
    Ok(last_step_in(&store.journal_entries()?, session, nested))
}

/// Where the source's HEAD is expected for `session` (`journal`: the store's entries): where its
/// last root step left it, else its bound revision; anywhere else it moved (`head_moved`).
pub(crate) fn expected_head(journal: &[JournalEntry], session: &SessionRecord) -> String {
    last_step_in(journal, session, None)
        .and_then(|previous| previous.step.head_after)
        .map_or_else(|| session.bound_revision.clone(), |head| head.to_string())
}

/// [`last_step`] among `journal`'s entries.
fn last_step_in(
    journal: &[JournalEntry],
    session: &SessionRecord,
    nested: Option<&crate::base::paths::RepoPath>,
) -> Option<Previous> {
    journal
        .iter()
        .filter(|entry| entry.session_id.as_deref() == Some(session.session_id.as_str()))
        .filter_map(|entry| {
            let step = entry
                .step
                .as_ref()
                .filter(|step| step.nested.as_ref() == nested)?;
            if nested.is_none() && step.number <= session.steps_before_rebase() {
                return None;
            }
            (step.session_created_at_ms == session.created_at_ms).then(|| Previous {
                digest: entry.digest.clone(),
                mode: entry.mode,
                patch_bytes: entry.patch_bytes,
                step: step.clone(),
            })
        })
        .max_by_key(|previous| previous.step.number)
}

/// Where a promote now starts the nested change set `set` of `session`: the result of the
/// last step of this session that landed in its repository (with that step), else the set's
/// base tree. `None`: that step landed this very result, there is nothing new.
pub(crate) fn nested_delta_base(
    store: &Store,
    session: Option<&SessionRecord>,
    set: &NestedChangeSet,
) -> Result<Option<(TreeId, Option<Previous>)>> {
    let previous = match session {
        Some(session) => last_step(store, session, Some(&set.path_exact))?,
        None => None,
    };
    Ok(match previous {
        Some(p) if p.step.result_tree == set.result_tree => None,
        Some(p) => Some((p.step.result_tree.clone(), Some(p))),
        None => Some((set.base_tree.clone(), None)),
    })
}
