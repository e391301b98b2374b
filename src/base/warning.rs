//! What a command tells beside its result, as data: what happened and to what. The words are
//! the interface's (`interface::warnings`), as an error's hint is; JSON carries them as text.
//! A warning's fields are what its variant names them, so they go without docs.

use std::path::PathBuf;

use crate::base::ids::SessionId;
use crate::base::interrupted::Interrupted;

/// Something a command did or left that the user should know, though the command succeeded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// What recovery under the repository lock did, or could not do.
    Recovery(RecoveryWarning),
    /// What a bind did beside building the isolation.
    Bind(BindWarning),
    /// What a run did beside running its command.
    Run(RunWarning),
    /// What a capture, promote or push left out or kept.
    Promote(PromoteWarning),
    /// What a landing did beside landing.
    Land(LandWarning),
    /// A warning as an earlier command worded it, read back from its record (a `land` queue's).
    Recorded(String),
}

/// Each group's warnings are warnings.
macro_rules! grouped {
    ($($group:ident => $variant:ident),*) => {
        $(impl From<$group> for Warning {
            fn from(warning: $group) -> Warning {
                Warning::$variant(warning)
            }
        })*
    };
}

grouped!(
    RecoveryWarning => Recovery,
    BindWarning => Bind,
    RunWarning => Run,
    PromoteWarning => Promote,
    LandWarning => Land
);

/// What recovery under the repository lock did, or could not do.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum RecoveryWarning {
    /// An operation an earlier command left unfinished was finished (or undone).
    Finished(Interrupted),
    /// An operation is in progress, or was interrupted, and another command holds the lock.
    InProgress(Interrupted),
    /// The pool's records could not be repaired.
    PoolNotRepaired { why: String },
    /// A promote intent that cannot be read stays where it is.
    UnreadablePromoteIntent { why: String },
    /// An interrupted promote could not be finished now.
    PromoteNotFinishedNow { digest: String, why: String },
    /// An interrupted promote waits: its checkout is not there.
    PromoteCheckoutMissing { digest: String, checkout: PathBuf },
    /// An interrupted promote in patch mode was completed: it had all landed.
    PromoteCompletedLanded { digest: String },
    /// An interrupted promote in patch mode was rolled back: none of it had landed.
    PromoteRolledBack { digest: String },
    /// An interrupted promote in patch mode was completed: some files were still to write.
    PromoteCompletedHalfway {
        digest: String,
        to_write: usize,
        of: usize,
    },
    /// An interrupted promote cannot be completed: paths it writes changed since.
    PromoteCannotComplete { digest: String, paths: Vec<String> },
    /// An interrupted promote still has git running.
    PromoteGitRunning { digest: String, pids: Vec<u32> },
    /// An interrupted branch promote was completed: its commits are on the branch.
    BranchPromoteCompleted {
        digest: String,
        branch: String,
        work: YourWork,
    },
    /// An interrupted branch promote was rolled back to the old tip.
    BranchPromoteRolledBack {
        digest: String,
        branch: String,
        old_tip: String,
        work: YourWork,
    },
    /// An interrupted branch promote was left as it is, for the reason given.
    BranchPromoteLeft {
        digest: String,
        why: String,
        work: YourWork,
    },
    /// An interrupted rebase was dropped: the session has no isolation any more.
    RebaseDropped { session_id: SessionId },
    /// An interrupted rebase was finished as its intent said.
    RebaseFinished {
        session_id: SessionId,
        end: RebaseEnd,
    },
    /// An interrupted rebase could not be finished.
    RebaseNotFinished { session_id: SessionId, why: String },
}

/// What a bind did beside building the isolation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum BindWarning {
    /// The source's local changes are left out of the isolation (`--allow-dirty`).
    DirtyLeftOut { paths: usize },
    /// A swept session's work came back as uncommitted changes.
    RestoredUncommitted { summary: String },
    /// Nothing was captured in the session: the isolation starts as the session did.
    NothingCaptured,
    /// An ownerless session got an owner.
    OwnerGiven,
    /// The session was taken over from an owner that has exited.
    TakenOver { previous: String },
    /// The isolation's parent directory is not writable: it lives under `fallback`.
    FallbackParent { parent: PathBuf, fallback: PathBuf },
    /// An empty leftover directory at the isolation's path was removed.
    ClearedLeftover { path: PathBuf },
    /// The source could not be added to the user registry.
    NotRegistered { why: String },
    /// A `.worktreeinclude` (or other include file) could not be read.
    IncludeUnreadable { path: PathBuf, why: String },
    /// Lines of an include file that are not UTF-8 were left out.
    IncludeLinesNotUtf8 { path: PathBuf, lines: usize },
    /// Submodules nested deeper than the limit are left uninitialised.
    SubmodulesTooDeep { max: usize, inside: String },
    /// A submodule is left uninitialised in the isolation.
    SubmoduleUninitialised { submodule: String, why: String },
}

/// What a run did beside running its command.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum RunWarning {
    /// A configuration file is not trusted: its settings are ignored.
    UntrustedConfig { file: PathBuf, trust: String },
    /// The whole network is open, so the configured hosts and ports are not applied.
    HostsNotApplied,
    /// The repository keeps its refs in reftable: git inside cannot keep refs between runs.
    Reftable,
    /// Code-running git configuration was taken away where the user's own git would run it.
    GitCodeTakenAway { place: PathBuf, took: Vec<String> },
    /// The session's git layers could not be mounted for the run.
    GitLayersNotMounted,
    /// The session's git layers could not be made ready for this run.
    GitLayersNotReady { why: String },
    /// Links or special files in the run's new objects were removed.
    QuarantineLinksRemoved { count: usize },
    /// No submodule's objects were taken from the run.
    ModuleObjectsNotUsed { why: String },
    /// A submodule git dir's objects were not taken from the run.
    ModuleGitDirNotUsed { git_dir: PathBuf, why: String },
    /// A granted file was not written back.
    NotWrittenBack { path: PathBuf, why: String },
    /// The profile's copies were not reviewed after the run.
    ProfileNotReviewed { home: PathBuf, why: String },
    /// The run's git state is not settled yet.
    GitNotSettled { why: String },
    /// The run's evidence could not be recorded in full; the result tree is pinned.
    TreePinnedOnly { why: String },
    /// A link or special file git inside the run left in the admin dir was not kept.
    AdminLinkNotKept { path: PathBuf },
    /// The command left the isolation's HEAD on a branch; it is detached again.
    HeadDetachedAgain { branch: String, at: Option<String> },
    /// The command left HEAD on a branch, and it could not be detached again.
    HeadNotDetached { branch: String },
    /// HEAD inside the run named no commit: the isolation's HEAD stays.
    HeadUnborn { head: String },
    /// The session's own refs are not mirrored.
    RefsNotMirrored { why: String },
    /// A ref git inside wrote names an object the repository does not hold.
    RefNotKept { name: String, id: String },
    /// A ref a killed run left names an object it never kept.
    DanglingRefDropped { name: String, id: String },
    /// What a run left in the profile's copies that is no regular file within the limit
    /// was taken out.
    ProfileEntryTakenOut {
        path: PathBuf,
        what: String,
        max_bytes: u64,
    },
    /// A run's change to the profile's copies is held for review.
    ProfileChangeHeld { path: PathBuf, profile: String },
}

/// What a capture, promote or push left out or kept.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum PromoteWarning {
    /// A nested repository is not part of the change set.
    NestedLeftOut { path: String },
    /// A nested repository is not part of the change set: the source has none there.
    NestedNotInSource { path: String },
    /// A nested repository could not be captured.
    NestedNotCaptured { path: String, why: String },
    /// A nested change set does not travel with a push.
    NestedNotPushed { path: String },
    /// A nested repository is not part of the change set: it is promoted on its own.
    NestedOnItsOwn { path: String },
    /// An interrupt arrived while the patch was applied; the promote finished first.
    InterruptedWhileApplying,
    /// An interrupt arrived during a branch replay; the promote finished first.
    InterruptedDuringReplay,
    /// A submodule stays at its commit.
    SubmoduleStays { path: String, why: String },
    /// The branch that keeps the session's commits could not be made.
    RetainedBranchNotMade { branch: String, why: String },
    /// The user's uncommitted work stays in its stash: a branch promote could not restore it.
    StashKept { stash: String },
}

/// What a landing did beside landing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum LandWarning {
    /// An interrupted test had written files, dropped before landing.
    TestWritesDropped { paths: Vec<String> },
    /// An interrupted landing had moved the isolation to its tree: it was moved back.
    MovedBack,
    /// Claude Code proposed another base than the isolation's.
    BaseNotTaken { base: String, head: String },
    /// The isolation was not cleaned up after its landing.
    NotCleanedUp { session_id: String, why: String },
    /// The branch already holds the changes: nothing to land.
    AlreadyOnBranch,
    /// The source's HEAD moved while the test ran.
    HeadMovedDuringTest,
    /// No bash: the test ran under `sh -e`.
    TestUnderSh,
    /// Why a landing's promote stopped, as its `detail` says.
    PromoteStopped { detail: String },
    /// Sessions whose owner is gone could not be reclaimed.
    NotReclaimed { why: String },
    /// Claude Code's settings have other hooks of the same event.
    OtherHooks {
        settings: PathBuf,
        count: usize,
        event: String,
    },
    /// Claude Code's settings file is not ignored by git.
    SettingsNotIgnored { file: String },
}

/// Where the user's uncommitted work is after an interrupted branch promote was dealt with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum YourWork {
    /// Set aside for the promote and put back.
    Restored,
    /// Never set aside.
    InPlace,
    /// Set aside and not put back: it stays in this stash.
    KeptInStash(String),
}

/// How far an interrupted rebase was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RebaseEnd {
    /// To its end.
    Completed,
    /// Up to the conflict it stopped at.
    CompletedToConflict,
    /// Back to where it started (an abort).
    Undone,
}
