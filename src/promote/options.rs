//! What a promote is asked to do, and the change set it works on.

use std::path::PathBuf;

use super::outcome::Mode;
use crate::snapshot::Patch;
use crate::state::SessionRecord;

/// What to promote and how.
#[derive(Debug, Clone, Default)]
pub struct PromoteOptions {
    /// The session to promote (default: the one `-s` resolution finds).
    pub session_id: Option<String>,
    /// A change-set document to promote instead of a session.
    pub change_set: Option<PathBuf>,
    /// How the work lands.
    pub mode: Mode,
    /// Write the artifacts and stop.
    pub no_apply: bool,
    /// Where the artifacts go (default: under the state dir).
    pub artifacts: Option<PathBuf>,
    /// `--note DIGEST`: record the digest as promoted by other means.
    pub note: Option<String>,
}

/// A change set ready to promote: its patch on disk and where it came from.
pub(crate) struct Candidate {
    pub(crate) patch: Patch,
    pub(crate) session: Option<SessionRecord>,
    /// What the patch applies to: the session's base tree (HEAD's, or the carried WIP's); none
    /// for a document.
    pub(crate) base_tree: Option<String>,
    /// What the patch makes of its base: the session's snapshot, or a document's result tree
    /// (which this repository may not have).
    pub(crate) result_tree: Option<String>,
    pub(crate) nested: Vec<String>,
    /// The nested change sets (submodules and nested repositories), landed after the root;
    /// none for a document, which carries the root only.
    pub(crate) nested_sets: Vec<crate::nested::Captured>,
    /// Where the isolation's submodules keep their objects: a gitlink bump copies its
    /// commits from there into the source's submodule.
    pub(crate) submodule_objects: Vec<(crate::paths::RepoPath, std::path::PathBuf)>,
    /// Nested repositories that could not be captured, and why.
    pub(crate) nested_skipped: Vec<crate::nested::Skipped>,
}
