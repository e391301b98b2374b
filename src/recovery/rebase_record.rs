//! What a rebase keeps on disk in the state dir:
//!
//! ```text
//! rebases/<id>.json     a conflicted rebase: where it stopped, what is left to do
//! rebases/<id>.index    the isolation's index before the rebase, byte for byte (absent: none)
//! rebases/<id>.HEAD     the isolation's HEAD file before the rebase, byte for byte
//! rebasing/<id>.json    the write-ahead intent of one change of the isolation
//! ```
//!
//! The intent names what the isolation is about to become (all in the object store already)
//! and what follows; the next command to take the lock finishes it, so a crash leaves the
//! pre-rebase, the rebased or the conflicted state.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::base::error::Result;
use crate::base::fsutil::{read_json, remove_file_if_exists, write_json_atomic};
use crate::base::ids::SessionId;
use crate::base::paths::RepoPath;
use crate::store::layout::StateDir;
use crate::store::state::Store;

/// The schema of a conflicted rebase's record (`rebases/<id>.json`).
pub(crate) const STATE_SCHEMA: &str = "a3s-iso.rebase-state.v1";
/// The schema of a rebase's intent (`rebasing/<id>.json`).
pub(crate) const INTENT_SCHEMA: &str = "a3s-iso.rebase-intent.v1";

/// One commit of the session, replayed onto the new base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replayed {
    /// The session's commit.
    pub commit: String,
    /// Its replay on the new base; `null` when it brought nothing new there (dropped).
    pub rebased: Option<String>,
    /// Its subject line.
    pub subject: String,
}

/// One index entry of a conflicted path: `update-index --index-info` takes it as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Stage {
    pub(crate) mode: String,
    pub(crate) oid: String,
    pub(crate) stage: u8,
    pub(crate) path: RepoPath,
}

/// The isolation as it was before the rebase, pinned under private refs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Pre {
    /// The commit its HEAD named.
    pub(crate) head: String,
    /// Its snapshot (tracked and untracked files).
    pub(crate) snapshot_tree: String,
    /// The snapshot as a commit on `head`: the side the uncommitted work is merged from.
    pub(crate) snapshot_commit: String,
    /// The tree of its index, when it had one without conflicts.
    pub(crate) index_tree: Option<String>,
}

/// A conflicted rebase (`rebases/<id>.json`): where it stopped, and what is left.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RebaseState {
    pub(crate) schema: String,
    pub(crate) session_id: SessionId,
    /// The binding of the session id this rebase belongs to.
    pub(crate) session_created_at_ms: u64,
    pub(crate) pre: Pre,
    /// The revision the session was bound at before.
    pub(crate) from_revision: String,
    /// The revision it moves onto.
    pub(crate) to_revision: String,
    /// The replayed chain so far (the isolation's HEAD while conflicted).
    pub(crate) tip: String,
    /// The commits replayed so far.
    pub(crate) replayed: Vec<Replayed>,
    /// The commit whose replay conflicted; `None` when the uncommitted work did.
    pub(crate) conflict_commit: Option<String>,
    /// The commits still to replay after it.
    pub(crate) remaining: Vec<String>,
    pub(crate) paths: Vec<RepoPath>,
}

/// What the isolation's index becomes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum IndexPlan {
    /// The tree, every entry at stage 0.
    Tree(String),
    /// The tree, with these paths replaced by their conflict stages.
    Conflict { tree: String, stages: Vec<Stage> },
    /// The index file saved before the rebase, byte for byte (none: no index).
    Saved,
}

/// What the isolation's HEAD becomes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum HeadPlan {
    /// Detached at this commit.
    Commit(String),
    /// The HEAD file saved before the rebase, byte for byte.
    Saved,
}

/// What follows once the isolation holds the target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Then {
    /// The session is bound at `revision` now; its steps so far are behind it.
    Clean {
        revision: String,
        base_tree: String,
        steps_before: u64,
    },
    /// The rebase stopped at a conflict: this record says where.
    Conflicted(Box<RebaseState>),
    /// The rebase was undone.
    Aborted,
}

/// One change of the isolation, recorded before it starts (`rebasing/<id>.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Applying {
    pub(crate) schema: String,
    pub(crate) session_id: SessionId,
    /// The working tree's content (tracked and untracked files).
    pub(crate) tree: String,
    pub(crate) index: IndexPlan,
    pub(crate) head: HeadPlan,
    pub(crate) then: Then,
}

/// Where a conflicted rebase's record is.
fn state_file(store: &Store, id: &SessionId) -> PathBuf {
    store.rebase_file(id, "json")
}

/// Where the pre-rebase index file is kept.
pub(crate) fn saved_index(store: &Store, id: &SessionId) -> PathBuf {
    store.rebase_file(id, "index")
}

/// Where the pre-rebase HEAD file is kept.
pub(crate) fn saved_head(store: &Store, id: &SessionId) -> PathBuf {
    store.rebase_file(id, "HEAD")
}

/// The conflicted rebase of a session, if any.
pub(crate) fn load_state(store: &Store, id: &SessionId) -> Result<Option<RebaseState>> {
    read_json(&state_file(store, id))
}

/// Records (or replaces) a conflicted rebase.
pub(crate) fn save_state(store: &Store, state: &RebaseState) -> Result<()> {
    write_json_atomic(&state_file(store, &state.session_id), state)
}

/// Drops a conflicted rebase's record and the saved pre-rebase files.
pub(crate) fn remove_state(store: &Store, id: &SessionId) -> Result<()> {
    remove_file_if_exists(&state_file(store, id))?;
    remove_file_if_exists(&saved_index(store, id))?;
    remove_file_if_exists(&saved_head(store, id))
}

/// Records an intent, fsynced.
pub(crate) fn save_intent(store: &Store, intent: &Applying) -> Result<()> {
    write_json_atomic(&store.rebase_intent_file(&intent.session_id), intent)
}

pub(crate) fn remove_intent(store: &Store, id: &SessionId) -> Result<()> {
    remove_file_if_exists(&store.rebase_intent_file(id))
}

/// Every intent left in the store (unreadable ones are skipped and kept).
pub(crate) fn intents(store: &Store) -> Vec<Applying> {
    let Ok(entries) = std::fs::read_dir(store.path(StateDir::Rebasing)) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter_map(|p| read_json::<Applying>(&p).ok().flatten())
        .collect()
}

/// The revision a session's rebase, waiting at a conflict (this binding's), moves it onto.
pub(crate) fn conflicted_onto(
    store: &Store,
    session: &crate::store::state::SessionRecord,
) -> Option<String> {
    let state = load_state(store, &session.session_id).ok()??;
    (state.session_created_at_ms == session.created_at_ms).then_some(state.to_revision)
}

/// The paths a session's rebase stopped at, when it waits at a conflict (this binding's).
pub(crate) fn conflicted_paths(
    store: &Store,
    session: &crate::store::state::SessionRecord,
) -> Option<Vec<String>> {
    let state = load_state(store, &session.session_id).ok()??;
    (state.session_created_at_ms == session.created_at_ms)
        .then(|| state.paths.iter().map(RepoPath::shown).collect())
}
