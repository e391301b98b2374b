//! The promote journal: one fsynced entry per landed digest, so a change set lands at most
//! once; a session's last step is where its next promote starts.

use crate::base::error::Result;
use crate::ops::promote::options::Candidate;
use crate::store::state::Store;

/// Whether the candidate's digest landed; not an earlier step of this session (a change undone
/// and made again repeats that delta, which has not landed this time).
pub(crate) fn landed_before(store: &Store, candidate: &Candidate) -> Result<bool> {
    let Some(entry) = store.journal_entry(&candidate.patch.digest)? else {
        return Ok(false);
    };
    Ok(match &candidate.session {
        Some(session) if candidate.previous.is_some() => {
            entry.session_id.as_deref() != Some(session.session_id.as_str())
                || entry
                    .step
                    .is_none_or(|s| s.session_created_at_ms != session.created_at_ms)
        }
        _ => true,
    })
}

/// Whether the source's HEAD holds what `step` landed at every path: the user committed it.
pub(crate) fn committed_since(
    git: &crate::git::Git,
    source: &std::path::Path,
    step: &crate::store::state::Step,
) -> Result<bool> {
    let paths = git.diff_trees(source, &step.from_tree, &step.result_tree)?;
    if paths.is_empty() {
        return Ok(false);
    }
    git.tree_paths_match(source, &step.result_tree, "HEAD^{tree}", &paths)
}
