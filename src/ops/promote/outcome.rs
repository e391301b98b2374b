//! What a promote reports: the outcome, the reason for a conflict, and the details, serialised
//! with the stable codes of `a3s-iso.promote.v1`.

use std::path::PathBuf;

use serde::Serialize;

use crate::base::paths::RepoPath;
use crate::base::warning::Warning;
use crate::base::wire::wire_enum;

pub use crate::store::state::PromoteMode as Mode;

wire_enum! {
    /// The outcome of a promote.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
    pub enum Outcome {
        /// The change set landed in the source, now.
        Applied = "applied",
        /// The change set had landed before (its digest is in the journal); nothing applied.
        Idempotent = "idempotent",
        /// It cannot land as it stands; nothing applied.
        Conflict = "conflict",
        /// The change set is empty; nothing to apply.
        #[default]
        Empty = "empty",
        /// `--no-apply`: artifacts written, the source untouched.
        Planned = "planned",
        /// `--note`: recorded as promoted by other means.
        Noted = "noted",
        /// The root change set landed (now or before) but a nested one did not: each nested
        /// result says which and why. A promote again after the blocker is gone lands the rest.
        Partial = "partial",
    }
}

wire_enum! {
    /// Why a promote is a conflict.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
    pub enum Reason {
        /// The source's HEAD is not the session's bound revision.
        HeadMoved = "head_moved",
        /// The patch does not apply, or touches paths with uncommitted changes in the source.
        PatchDoesNotApply = "patch_does_not_apply",
        /// Branch mode: a commit could not be replayed (or separated from carried WIP).
        ReplayFailed = "replay_failed",
        /// A document's `base_tree` is not an object of this repository: it was taken elsewhere.
        BaseUnknown = "base_unknown",
        /// A document's `base_tree` is not the tree of the source's HEAD (`--onto-head` applies
        /// it onto the checkout anyway, when it applies).
        BaseDiffers = "base_differs",
        /// Branch mode after a step promoted in patch mode: that step is uncommitted work in the
        /// source, which a replay would have to commit; the session continues in patch mode.
        ModeChanged = "mode_changed",
        /// The patch moves a submodule (a gitlink) that the source's submodule cannot follow:
        /// not initialised, not at the change set's base commit, dirty, or without the commit.
        SubmoduleNotUpdated = "submodule_not_updated",
        /// A nested change set has no repository to land in: the source's submodule is not
        /// initialised, or the source has no repository at that path.
        NestedUnavailable = "nested_unavailable",
        /// `promote --rebase`: rebasing the session onto the moved HEAD stopped at a conflict,
        /// which waits in its isolation (the session is `conflicted`).
        RebaseConflicted = "rebase_conflicted",
    }
}

/// The schema of a promote's report, on stdout and in `summary.json`.
pub const SCHEMA: &str = "a3s-iso.promote.v1";

/// The report of a promote (`a3s-iso.promote.v1`, also `summary.json` in the artifacts).
#[derive(Debug, Clone, Default, Serialize)]
pub struct PromoteOutcome {
    /// What happened.
    pub outcome: Outcome,
    /// The change set's `sha256:` digest (none for an empty one).
    pub digest: Option<crate::base::ids::Digest>,
    /// The promoted session, if a session was promoted.
    pub session_id: Option<String>,
    /// How the change set lands.
    pub mode: Mode,
    /// For `conflict`: why.
    pub reason: Option<Reason>,
    /// The revision the session was bound at.
    pub bound_revision: Option<String>,
    /// The source's HEAD when the promote looked.
    pub current_revision: Option<crate::base::ids::CommitId>,
    /// Where the patch and `summary.json` were written.
    #[serde(with = "crate::base::paths::fs_path_opt")]
    pub artifacts: Option<PathBuf>,
    /// The patch's size in bytes.
    pub patch_bytes: u64,
    /// How many files the patch touches.
    pub files_changed: u64,
    /// Paths of the patch that collide with the source's uncommitted work (for `conflict`).
    pub conflicting_paths: Vec<String>,
    /// The same paths exactly, as bytes: a string, or `{"bytes_base64": …}` for a name that is
    /// not UTF-8 (which `conflicting_paths` shows with replacement characters).
    pub conflicting_paths_exact: Vec<RepoPath>,
    /// Nested repositories left out of the change set.
    pub nested_repositories: Vec<String>,
    /// What git said, or what collided.
    pub detail: Option<String>,
    /// Things the user should know that did not stop the promote.
    pub warnings: Vec<Warning>,
    /// A session's promote: which step of the session this is (1, 2, …); for `idempotent`
    /// with nothing new, the step that landed last. Null for a document.
    pub step: Option<u64>,
    /// A session's promote: the tree the delta starts from (the session's base tree for step
    /// 1, the previous step's result after that).
    pub from_tree: Option<crate::base::ids::TreeId>,
    /// A document's promote: whether its `base_tree` is the tree of the source's HEAD (null
    /// for a session, or when the base is not in this repository).
    pub base_matches_head: Option<bool>,
    /// Branch mode: the retained branch, the commits replayed and skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<BranchReport>,
    /// What became of each nested change set (absent when there were none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nested: Vec<NestedResult>,
    /// `promote --from`: the change set as fetched and verified (its commit, the private ref
    /// that keeps it, its session and run); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fetched: Option<crate::services::remote::FetchedChangeSet>,
    /// The first paths the patch touches, for human output; not part of the JSON.
    #[serde(skip)]
    pub files: Vec<String>,
    /// The result is in the checkout with no promote recorded (for the hint).
    #[serde(skip)]
    pub already_present: bool,
    /// Branch mode: HEAD as the root's replay left it, read under the lock; not in the JSON.
    #[serde(skip)]
    pub(crate) replayed_head: Option<crate::base::ids::CommitId>,
}

impl PromoteOutcome {
    /// A report with only an outcome and a mode; the rest is filled in as the promote goes.
    pub fn new(outcome: Outcome, mode: Mode) -> PromoteOutcome {
        PromoteOutcome {
            outcome,
            mode,
            ..PromoteOutcome::default()
        }
    }

    /// Marks the report a conflict for `reason`, with git's or a3s-iso's explanation.
    pub fn conflict(&mut self, reason: Reason, detail: Option<String>) {
        self.outcome = Outcome::Conflict;
        self.reason = Some(reason);
        self.detail = detail;
    }

    /// Records the paths that stop the promote, shown and exact.
    pub fn set_conflicting_paths(&mut self, paths: Vec<RepoPath>) {
        self.conflicting_paths = paths.iter().map(RepoPath::shown).collect();
        self.conflicting_paths_exact = paths;
    }

    /// 0 for every outcome but `conflict` and `partial` (3: not everything landed).
    pub fn exit_code(&self) -> i32 {
        if matches!(self.outcome, Outcome::Conflict | Outcome::Partial) {
            3
        } else {
            0
        }
    }
}

/// A commit replayed onto the source's branch.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayedCommit {
    /// The commit on the retained branch.
    pub commit: String,
    /// The commit it became on the source's branch.
    pub replayed: String,
    /// Its subject line.
    pub subject: String,
}

/// Why a commit of the chain was not replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Its change is already on the branch.
    Empty,
}

/// A commit of the chain that was not replayed.
#[derive(Debug, Clone, Serialize)]
pub struct SkippedCommit {
    /// The commit on the retained branch.
    pub commit: String,
    /// Its subject line.
    pub subject: String,
    /// Why it was skipped.
    pub reason: SkipReason,
}

/// What branch mode did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct BranchReport {
    /// `a3s-iso/<id>`: the session's commits (WIP filtered out), kept whatever happens; null
    /// when the commits could not be rebuilt without the WIP.
    pub retained_branch: Option<String>,
    /// The source's branch the commits were replayed onto.
    pub target_branch: String,
    /// The commits replayed, in order.
    pub replayed: Vec<ReplayedCommit>,
    /// The commits skipped, in order.
    pub skipped: Vec<SkippedCommit>,
    /// For `replay_failed`: the commit that could not be replayed.
    pub failed_commit: Option<String>,
    /// A stash of the source's WIP that could not be restored (kept, see warnings).
    pub kept_stash: Option<String>,
}

impl BranchReport {
    /// A report of a replay onto `target_branch` that has not started.
    pub fn new(target_branch: &str, retained_branch: Option<String>) -> BranchReport {
        BranchReport {
            retained_branch,
            target_branch: target_branch.to_string(),
            ..BranchReport::default()
        }
    }
}

wire_enum! {
    /// What became of one nested change set.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum NestedOutcome {
        /// It landed in its repository, now.
        Applied = "applied",
        /// It had landed before (its key is in the journal).
        Idempotent = "idempotent",
        /// It cannot land as it stands; nothing of it applied.
        Conflict = "conflict",
        /// `--no-apply`: nothing applied; its patch is in the artifacts (`nested/`) when the root
        /// wrote artifacts.
        Planned = "planned",
        /// The root change set did not land, so it was not tried.
        NotAttempted = "not_attempted",
    }
}

/// One nested change set's result, in `nested` of the report.
#[derive(Debug, Clone, Serialize)]
pub struct NestedResult {
    /// The repository's path in the source, for people.
    pub path: String,
    /// The same path exactly, as bytes.
    pub path_exact: RepoPath,
    /// Submodule or nested repository.
    pub kind: crate::services::nested::NestedKind,
    /// What happened to it.
    pub outcome: NestedOutcome,
    /// For `conflict`: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
    /// The nested patch's `sha256:` digest (null when it could not be captured).
    pub digest: Option<crate::base::ids::Digest>,
    /// The journal's key for it: the digest of the path and the nested digest (null when it
    /// could not be captured).
    pub journal_key: Option<String>,
    /// Its paths that collide with the repository's uncommitted work (for `conflict`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conflicting_paths: Vec<String>,
    /// What git said, or what stopped it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}
