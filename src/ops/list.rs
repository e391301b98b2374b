//! `list`: sessions with their state, owner liveness and whether the source moved on.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use serde::Serialize;

use crate::base::error::Result;
use crate::base::ids::SessionId;
use crate::base::owner::OwnerView;
use crate::base::reflink::DiskUse;
use crate::base::wire::wire_enum;
use crate::context::Context;
use crate::git::repo::Repo;
use crate::model::isolation;
use crate::store::state::{LastRun, SessionRecord, SessionState, Store, registered_sources};

wire_enum! {
    /// A session's state as `list` shows it: its recorded state, except that a session whose tree
    /// is gone is `missing`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum ListedState {
        /// Bound, with a healthy isolation (or read-only, with none).
        Bound = "bound",
        /// Retained for inspection, with a healthy isolation.
        Retained = "retained",
        /// Discarded: its isolation was removed.
        Discarded = "discarded",
        /// Recorded as bound or retained, but its isolation is gone or damaged.
        Missing = "missing",
        /// Reclaimed by a sweep: its work is in the swept snapshot; `bind -s ID --resume` brings
        /// it back.
        Swept = "swept",
        /// Bound, and its rebase stopped at a conflict that waits in its isolation
        /// (`rebase --continue` or `--abort`).
        Conflicted = "conflicted",
        /// Bound, and its work is all in the source's history: nothing of it left to land.
        Landed = "landed",
    }
}

impl ListedState {
    /// What `list` shows for a record: the recorded state, unless the tree is gone.
    pub(crate) fn of(record: &SessionRecord, conflicted: bool) -> ListedState {
        match record.state {
            SessionState::Bound if conflicted && isolation::is_healthy(record) => {
                ListedState::Conflicted
            }
            SessionState::Discarded => ListedState::Discarded,
            SessionState::Swept => ListedState::Swept,
            _ if !record.read_only && !isolation::is_healthy(record) => ListedState::Missing,
            SessionState::Retained => ListedState::Retained,
            SessionState::Bound => ListedState::Bound,
        }
    }
}

/// One row of `list`: a session, whether its source moved on, and its owner's liveness.
#[derive(Debug, Clone, Serialize)]
pub struct SessionView {
    /// The session's id.
    pub session_id: SessionId,
    /// Its state as `list` shows it.
    pub state: ListedState,
    /// The source checkout the session was bound from.
    #[serde(with = "crate::base::paths::fs_path")]
    pub source: PathBuf,
    /// The isolation's path; `null` for a read-only session.
    #[serde(with = "crate::base::paths::fs_path_opt")]
    pub worktree: Option<PathBuf>,
    /// The commit the session was bound at.
    pub bound_revision: String,
    /// Whether the source's HEAD moved from where the session expects it (as `show` says);
    /// `null` when the source cannot be read.
    pub head_moved: Option<bool>,
    /// The owner and whether it runs (`null` when ownerless).
    pub owner: Option<OwnerView>,
    /// The latest run or capture recorded for the session.
    pub last_run: Option<LastRun>,
    /// Whether the session was bound `--read-only` (no isolation).
    pub read_only: bool,
    /// For a swept session: where its last state is (null when swept with `--no-capture`).
    pub swept_ref: Option<String>,
    /// For a swept session: when it was swept, in milliseconds since the epoch.
    pub swept_at_ms: Option<u64>,
    /// For a conflicted session: the paths its rebase stopped at (empty otherwise).
    pub conflicting_paths: Vec<String>,
    /// The live sessions whose work this one's would conflict with, as `overlaps` predicts.
    pub conflicts_with: Vec<SessionId>,
    /// Where its work conflicts with the source's commits since its bind (`with_head`).
    pub conflicts_with_head: Vec<String>,
    /// Where its work conflicts with your uncommitted changes (`with_your_changes`).
    pub conflicts_with_your_changes: Vec<String>,
    /// How its isolation's files were made (`clone`, `checkout`), when known.
    pub fill: Option<crate::base::reflink::Fill>,
    /// With `--disk` and a healthy isolation: what it costs (apparent size, bytes held alone).
    pub disk: Option<DiskUse>,
}

impl SessionView {
    /// The conflicts `overlaps` predicts for the session.
    fn predicted(&mut self, predicted: Option<&crate::services::overlaps::OverlapsOutcome>) {
        let Some(predicted) = predicted else {
            return;
        };
        if self.state == ListedState::Bound && predicted.landed.contains(&self.session_id) {
            self.state = ListedState::Landed;
        }
        self.conflicts_with = predicted
            .conflicts_with()
            .remove(&self.session_id)
            .unwrap_or_default();
        if let Some(changed) = predicted
            .sessions
            .iter()
            .find(|c| c.session_id == self.session_id)
        {
            self.conflicts_with_head = changed.with_head.conflicting_paths.clone();
            self.conflicts_with_your_changes = changed.with_your_changes.conflicting_paths.clone();
        }
    }
}

/// What `list` found: the sessions of every store it looked at.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ListOutcome {
    /// The sessions, store by store, each sorted by id.
    pub sessions: Vec<SessionView>,
    /// Records that could not be read, by file.
    pub unreadable: Vec<String>,
    /// Operations left unfinished because another process holds the repository lock.
    pub interrupted: Vec<crate::recovery::Interrupted>,
    /// How many discarded sessions were left out (`list --all` shows them).
    pub hidden_discarded: usize,
    /// With `--disk`: the shared pristine trees (each counted once) and the fleet's total.
    pub disk: Option<DiskTotal>,
}

/// What the listed sessions cost on disk together.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DiskTotal {
    /// The pristine trees of the listed sessions' sources.
    pub pristine: DiskUse,
    /// Every listed isolation and pristine tree added up; `own_bytes` counts shared blocks once.
    pub total: DiskUse,
}

/// Lists this store's live sessions, or with `all` every session of every registered one;
/// with `disk`, each isolation's disk use measured.
pub fn list(ctx: &Context, all: bool, disk: bool) -> Result<ListOutcome> {
    let mut stores: BTreeMap<PathBuf, Store> = BTreeMap::new();
    let here = if all {
        crate::recovery::locate(ctx).ok()
    } else {
        Some(crate::recovery::locate(ctx)?)
    };
    if let Some(located) = &here {
        crate::store::scratch::clean(located.store.dir());
        stores.insert(located.store.dir().to_path_buf(), located.store.clone());
    }
    if all {
        for entry in registered_sources()? {
            stores
                .entry(entry.state_dir.clone())
                .or_insert_with(|| Store::new(&entry.common_dir, Some(&entry.state_dir)));
        }
    }
    let mut heads: HashMap<PathBuf, Option<crate::base::ids::CommitId>> = HashMap::new();
    let mut outcome = ListOutcome {
        interrupted: (here.as_ref())
            .map(|l| l.interrupted.clone())
            .unwrap_or_default(),
        ..ListOutcome::default()
    };
    // What `overlaps` predicts for this repository's live sessions (when there are any).
    let predicted = here
        .as_ref()
        .filter(|located| located.store.live_sessions().is_ok_and(|l| !l.is_empty()))
        .and_then(|located| crate::services::overlaps::predict(ctx, located).ok());
    let here_dir = here.as_ref().map(|l| l.store.dir().to_path_buf());
    for store in stores.values() {
        // Read once per store: where each session's steps left HEAD.
        let journal = store.journal_entries().unwrap_or_default();
        for record in store.sessions()? {
            // A scoped caller sees only its own sessions (an unreadable record neither).
            if !record.as_ref().is_ok_and(|r| ctx.may_act_on(&r.session_id)) && ctx.is_scoped() {
                continue;
            }
            match record {
                Ok(record) if !all && record.state == SessionState::Discarded => {
                    outcome.hidden_discarded += 1;
                }
                Ok(record) => {
                    let head = heads.entry(record.source.clone()).or_insert_with(|| {
                        Repo::new(&ctx.git, record.source.clone(), record.common_dir.clone())
                            .head_commit(&ctx.git)
                    });
                    let conflicts = crate::services::rebase::conflicted_paths(store, &record);
                    let expected = crate::services::steps::expected_head(&journal, &record);
                    let mut shown = view(&record, (head.as_deref(), expected), conflicts);
                    if here_dir.as_deref() == Some(store.dir()) {
                        shown.predicted(predicted.as_ref());
                    }
                    outcome.sessions.push(shown);
                }
                Err(unreadable) => outcome.unreadable.push(unreadable),
            }
        }
    }
    if disk {
        outcome.disk = Some(measure(&mut outcome.sessions));
    }
    Ok(outcome)
}

/// Measures each listed isolation, and the pristine trees beside them.
fn measure(sessions: &mut [SessionView]) -> DiskTotal {
    let mut total = DiskTotal::default();
    let mut roots: Vec<PathBuf> = Vec::new();
    for session in sessions.iter_mut() {
        let Some(tree) = &session.worktree else {
            continue;
        };
        if !matches!(
            session.state,
            ListedState::Missing | ListedState::Discarded | ListedState::Swept
        ) {
            session.disk = crate::base::reflink::disk_use(tree).ok();
        }
        if let Some(used) = session.disk {
            total.total.add(used);
        }
        if let Some(root) = crate::model::pristine::root_beside(tree)
            && !roots.contains(&root)
        {
            roots.push(root);
        }
    }
    for root in roots {
        if let Ok(used) = crate::base::reflink::disk_use(&root) {
            total.pristine.add(used);
            total.total.add(DiskUse {
                own_bytes: used.allocated_bytes,
                ..used
            });
        }
    }
    total
}

fn view(
    record: &SessionRecord,
    (source_head, expected): (Option<&str>, String),
    conflicts: Option<Vec<String>>,
) -> SessionView {
    SessionView {
        session_id: record.session_id.clone(),
        state: ListedState::of(record, conflicts.is_some()),
        conflicting_paths: conflicts.unwrap_or_default(),
        conflicts_with: Vec::new(),
        conflicts_with_head: Vec::new(),
        conflicts_with_your_changes: Vec::new(),
        source: record.source.clone(),
        worktree: record.worktree.clone(),
        bound_revision: record.bound_revision.clone(),
        head_moved: source_head.map(|head| head != expected),
        owner: OwnerView::of(record.owner.as_ref()),
        last_run: record.last_run.clone(),
        read_only: record.read_only,
        swept_ref: record.swept.as_ref().and_then(|s| s.swept_ref.clone()),
        swept_at_ms: record.swept.as_ref().map(|s| s.at_ms),
        fill: record.fill,
        disk: None,
    }
}
