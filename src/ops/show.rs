//! `show`: one session in full, its runs and its promotions. It reads only: no lock, no
//! repair, and a3s-iso's own index of the isolation is left as it was.

use std::path::PathBuf;

use serde::Serialize;

use crate::base::error::Result;
use crate::base::ids::SessionId;
use crate::base::owner::OwnerView;
use crate::base::paths::RepoPath;
use crate::base::wire::wire_enum;

use crate::context::{Context, Located};
use crate::recovery::session_git;
pub use crate::services::runs::RunView;
use crate::store::state::{Landing, PromoteMode, SessionRecord, SessionState};

wire_enum! {
    /// Whether the isolation is where the record says.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum TreeHealth {
        /// A real directory, registered with the source's repository.
        Healthy = "healthy",
        /// Recorded as bound or retained, but gone or damaged.
        Missing = "missing",
        /// A read-only session has no isolation.
        None = "none",
        /// Discarded or swept: the tree was removed on purpose.
        Removed = "removed",
    }
}

/// One promotion of the session, from the journal.
#[derive(Debug, Clone, Serialize)]
pub struct PromotionView {
    /// Which step of the session it was (`null` for an entry without one).
    pub step: Option<u64>,
    /// For a nested change set: its repository's path in the source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nested: Option<RepoPath>,
    /// The digest that landed.
    pub digest: crate::base::ids::Digest,
    /// When, in milliseconds since the epoch.
    pub promoted_at_ms: u64,
    /// How it landed: `applied`, `recovered` or `noted`.
    pub how: Landing,
    /// The promote mode.
    pub mode: PromoteMode,
    /// How many files the step changed.
    pub files_changed: Option<u64>,
    /// The patch's size.
    pub patch_bytes: u64,
}

wire_enum! {
    /// A session's state as `show` gives it: the recorded state, or `conflicted` for a bound
    /// session whose rebase stopped at a conflict.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum ShownState {
        /// Bound to its source.
        Bound = "bound",
        /// Retained for inspection.
        Retained = "retained",
        /// Discarded.
        Discarded = "discarded",
        /// Reclaimed by a sweep.
        Swept = "swept",
        /// Bound, with a rebase stopped at a conflict in its isolation.
        Conflicted = "conflicted",
        /// Bound, and its work is all in the source's history (nothing of it left to land).
        Landed = "landed",
    }
}

impl ShownState {
    fn of(state: SessionState, conflicted: bool) -> ShownState {
        match state {
            SessionState::Bound if conflicted => ShownState::Conflicted,
            SessionState::Bound => ShownState::Bound,
            SessionState::Retained => ShownState::Retained,
            SessionState::Discarded => ShownState::Discarded,
            SessionState::Swept => ShownState::Swept,
        }
    }
}

/// A session in full.
#[derive(Debug, Clone, Serialize)]
pub struct ShowOutcome {
    /// The session's id.
    pub session_id: SessionId,
    /// Its state as `show` gives it.
    pub state: ShownState,
    /// For a conflicted session: the paths its rebase stopped at (empty otherwise).
    pub conflicting_paths: Vec<String>,
    /// The source checkout.
    #[serde(with = "crate::base::paths::fs_path")]
    pub source: PathBuf,
    /// The isolation (`null` for a read-only session).
    #[serde(with = "crate::base::paths::fs_path_opt")]
    pub worktree: Option<PathBuf>,
    /// Whether the isolation is where the record says.
    pub tree: TreeHealth,
    /// The commit the session was bound at.
    pub bound_revision: String,
    /// The tree its change sets start from.
    pub base_tree: crate::base::ids::TreeId,
    /// Whether HEAD moved from where the bind or last step left it (`null`: unreadable).
    pub head_moved: Option<bool>,
    /// The owner and whether it runs (`null` when ownerless).
    pub owner: Option<OwnerView>,
    /// Whether the session was bound read-only.
    pub read_only: bool,
    /// Whether it started from the source's local changes.
    pub carried_wip: bool,
    /// How its isolation's files were made (`clone`, `checkout`), when known.
    pub fill: Option<crate::base::reflink::Fill>,
    /// What its healthy isolation costs on disk: apparent size and bytes held alone.
    pub disk: Option<crate::base::reflink::DiskUse>,
    /// When it was bound, in milliseconds since the epoch.
    pub created_at_ms: u64,
    /// Files that differ from the base tree now (`null` without a healthy isolation).
    pub files_changed: Option<u64>,
    /// Files a promote would change now: the delta since the last promoted step.
    pub files_to_promote: Option<u64>,
    /// The runs, oldest first.
    pub runs: Vec<RunView>,
    /// The promotions, oldest first.
    pub promotions: Vec<PromotionView>,
    /// Why it was retained.
    pub retained_reason: Option<String>,
    /// When it was retained.
    pub retained_at_ms: Option<u64>,
    /// For a swept session: where its last state is.
    pub swept_ref: Option<String>,
    /// For a swept session: when.
    pub swept_at_ms: Option<u64>,
    /// Operations left unfinished because another process holds the repository lock.
    pub interrupted: Vec<crate::recovery::Interrupted>,
    /// The run in progress, when it publishes ports: its id and its ports (`null` otherwise).
    pub live_run: Option<crate::store::state::LiveRun>,
    /// The branches, tags and stash git made inside its runs, and the branch HEAD was on.
    pub git: session_git::PrivateRefs,
}

/// The session `-s` names (or resolution finds), in full. Reads only.
pub fn show(ctx: &Context, session_id: Option<&str>) -> Result<ShowOutcome> {
    let located = crate::recovery::locate(ctx)?;
    let record = ctx.resolve_record(&located, session_id)?;
    let tree = tree_health(&record);
    let previous = crate::services::steps::last_step(&located.store, &record, None)?;
    let journal = located.store.journal_entries()?;
    let expected = crate::services::steps::expected_head(&journal, &record);
    let head_moved = located
        .repo
        .head_commit(&ctx.git)
        .map(|head| *head != expected);
    let (files_changed, files_to_promote) = if tree == TreeHealth::Healthy {
        let from = crate::services::steps::delta_base(&record, previous.as_ref());
        // Stopped at a conflict, the isolation holds the revision it moves onto: count from there.
        let onto = crate::services::rebase::conflicted_onto(&located.store, &record);
        let base = onto.clone().unwrap_or_else(|| record.base_tree.to_string());
        let from = match onto {
            Some(onto) if from == record.base_tree => onto,
            _ => from.to_string(),
        };
        counts(ctx, &located, &record, (&base, &from))
    } else {
        (None, None)
    };
    let conflicts = crate::services::rebase::conflicted_paths(&located.store, &record);
    let git =
        session_git::private_refs(&ctx.git, &located.repo, &located.store, &record.session_id)?;
    Ok(ShowOutcome {
        session_id: record.session_id.clone(),
        state: match crate::services::landed::is_landed(ctx, &located, &record)? {
            true => ShownState::Landed,
            false => ShownState::of(record.state, conflicts.is_some()),
        },
        conflicting_paths: conflicts.unwrap_or_default(),
        source: record.source.clone(),
        worktree: record.worktree.clone(),
        tree,
        bound_revision: record.bound_revision.clone(),
        base_tree: record.base_tree.clone(),
        head_moved,
        owner: OwnerView::of(record.owner.as_ref()),
        read_only: record.read_only,
        carried_wip: record.carried_wip,
        fill: record.fill,
        disk: record
            .worktree
            .as_deref()
            .filter(|_| tree == TreeHealth::Healthy)
            .and_then(|path| crate::base::reflink::disk_use(path).ok()),
        created_at_ms: record.created_at_ms,
        files_changed,
        files_to_promote,
        runs: crate::services::runs::runs(&located.store, &record.session_id)?,
        promotions: promotions(&located, &record)?,
        retained_reason: record.retained_reason.clone(),
        retained_at_ms: record.retained_at_ms,
        swept_ref: record.swept.as_ref().and_then(|s| s.swept_ref.clone()),
        swept_at_ms: record.swept.as_ref().map(|s| s.at_ms),
        interrupted: located
            .interrupted
            .iter()
            .filter(|i| {
                i.session_id
                    .as_ref()
                    .is_none_or(|id| *id == record.session_id)
            })
            .cloned()
            .collect(),
        live_run: located.store.live_run(&record.session_id),
        git,
    })
}

fn tree_health(record: &SessionRecord) -> TreeHealth {
    match record.state {
        SessionState::Discarded | SessionState::Swept => TreeHealth::Removed,
        _ if record.read_only => TreeHealth::None,
        _ if crate::model::isolation::is_healthy(record) => TreeHealth::Healthy,
        _ => TreeHealth::Missing,
    }
}

/// Files changed since `base` and since `from`, leaving the seed index as it was.
fn counts(
    ctx: &Context,
    located: &Located,
    record: &SessionRecord,
    (base, from): (&str, &str),
) -> (Option<u64>, Option<u64>) {
    let (Some(tree), Some(admin)) = (&record.worktree, &record.admin_dir) else {
        return (None, None);
    };
    let isolation = crate::model::isolation::Isolation {
        tree: tree.clone(),
        admin: admin.clone(),
        common_dir: record.common_dir.clone(),
        bound_revision: Some(record.bound_revision.clone()),
    };
    let Ok(scratch) = crate::store::scratch::ReadScratch::new() else {
        return (None, None);
    };
    let Ok(snap) = isolation.peek(ctx, located, scratch.path()) else {
        return (None, None);
    };
    let count = |base: &str| {
        ctx.git
            .diff_trees(&located.repo.common_dir, base, &snap.tree)
            .ok()
            .map(|paths| paths.len() as u64)
    };
    (count(base), count(from))
}

/// The journal entries of this binding of the session id, oldest first.
fn promotions(located: &Located, record: &SessionRecord) -> Result<Vec<PromotionView>> {
    let mut out: Vec<PromotionView> = located
        .store
        .journal_entries()?
        .into_iter()
        .filter(|e| e.session_id.as_deref() == Some(record.session_id.as_str()))
        .filter(|e| {
            e.step
                .as_ref()
                .is_none_or(|s| s.session_created_at_ms == record.created_at_ms)
        })
        .map(|e| PromotionView {
            step: e.step.as_ref().map(|s| s.number),
            nested: e.step.as_ref().and_then(|s| s.nested.clone()),
            files_changed: e.step.as_ref().map(|s| s.files_changed),
            digest: e.digest,
            promoted_at_ms: e.promoted_at_ms,
            how: e.how,
            mode: e.mode,
            patch_bytes: e.patch_bytes,
        })
        .collect();
    out.sort_by_key(|p| (p.promoted_at_ms, p.digest.clone()));
    Ok(out)
}
