//! Tree operations that a crash must not leave half done: `retain` moving an isolation aside,
//! and `sweep` reclaiming one. Each writes its intent first (`<state>/pending/<id>.json`,
//! fsynced), under the repository lock and the session's lease, and removes it as its last
//! step. The next command finds an intent whose writer died and finishes the operation, or
//! undoes it where the tree never moved, so that record, tree, admin dir and refs agree again:
//!
//! | intent | the tree is | the next command |
//! | --- | --- | --- |
//! | retain | at its new path | relinks the admin dir, locks it, records the session retained |
//! | retain | still at its old path | drops the intent: nothing moved |
//! | reclaim | still at its path | drops the intent: the session stands, the next sweep decides again |
//! | reclaim | renamed aside (or gone) | removes the admin dir, records the session `swept` (or forgets an unrecorded one), removes the renamed tree |
//! | merge run | anywhere | moves what the run's layer still holds into the tree, removes the layer |
//!
//! A tree moves in one `rename`, so it is always wholly at one path or the other. A session
//! whose lease is held (a run started on it meanwhile) is left for a later command.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::base::beneath::Dir;
use crate::base::error::{IoContext, Result};
use crate::base::fsutil::{
    Sync, now_ms, read_json, record_bytes, remove_file_if_exists, write_synced,
};
use crate::base::ids::SessionId;
use crate::git::Git;
use crate::git::repo::Repo;
use crate::store::lock::RepoLock;
use crate::store::state::{RecordStatus, SessionRecord, SessionState, Store, SweptInfo};

/// A tree operation in progress, as its intent records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "operation", rename_all = "snake_case")]
pub(crate) enum TreeMove {
    /// `retain` moves the isolation aside.
    Retain(RetainMove),
    /// `sweep` removes an isolation it has snapshotted.
    Reclaim(Reclaim),
    /// `discard` removes an isolation and keeps the session's record and evidence.
    Discard(Reclaim),
    /// `run` moves what git inside changed in the admin dir down into it (`session_git`).
    SettleGit(SettleGit),
    /// `run` merges its layer over the isolation into the tree (`run_layer`).
    MergeRun(MergeRun),
}

/// `run`: the run's layer `layer` (its `upper`) moves down into the isolation's tree `tree`
/// (or, `dropped`, is removed). Written before the command starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MergeRun {
    /// The session whose run it is.
    pub session_id: SessionId,
    /// The isolation's tree.
    #[serde(with = "crate::base::paths::fs_path")]
    pub tree: PathBuf,
    /// The run's layer directory (`upper`, `work`).
    #[serde(with = "crate::base::paths::fs_path")]
    pub layer: PathBuf,
    /// What the command writes is thrown away (`land`'s test): the layer is never merged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dropped: bool,
}

/// `run`: the session's layer over the admin dir `admin` moves down into it, `HEAD` detached,
/// and the session's refs are mirrored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SettleGit {
    /// The session whose run it was.
    pub session_id: SessionId,
    /// The isolation's admin dir.
    #[serde(with = "crate::base::paths::fs_path")]
    pub admin: PathBuf,
}

impl TreeMove {
    pub(crate) fn session_id(&self) -> &SessionId {
        match self {
            TreeMove::Retain(m) => &m.session_id,
            TreeMove::Reclaim(r) | TreeMove::Discard(r) => &r.session_id,
            TreeMove::SettleGit(s) => &s.session_id,
            TreeMove::MergeRun(m) => &m.session_id,
        }
    }
}

/// `retain`: the isolation moves from `from` to `to`, locked with `reason`, its record too.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RetainMove {
    /// The session retained.
    pub session_id: SessionId,
    /// Where the isolation was.
    #[serde(with = "crate::base::paths::fs_path")]
    pub from: PathBuf,
    /// Where it goes (`<from>.retained-<ms>`).
    #[serde(with = "crate::base::paths::fs_path")]
    pub to: PathBuf,
    /// Its admin dir, which stays where it is.
    #[serde(with = "crate::base::paths::fs_path")]
    pub admin: PathBuf,
    /// Why it is kept.
    pub reason: String,
    /// When it was retained.
    pub retained_at_ms: u64,
}

/// `sweep`: the isolation at `path` (snapshotted already, if asked) is renamed to `trash`; then
/// its admin dir goes, its session is recorded `swept` (a session with no usable record is
/// forgotten: its records and refs go, the swept snapshot stays), and the renamed tree goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Reclaim {
    /// The session reclaimed.
    pub session_id: SessionId,
    /// Where the isolation is.
    #[serde(with = "crate::base::paths::fs_path")]
    pub path: PathBuf,
    /// Its admin dir, where git knows it.
    #[serde(default, with = "crate::base::paths::fs_path_opt")]
    pub admin: Option<PathBuf>,
    /// Where it is renamed to before it is deleted: a sibling sweep never considers.
    #[serde(with = "crate::base::paths::fs_path")]
    pub trash: PathBuf,
    /// Where the sweep snapshotted it (`None`: not snapshotted, or a discard).
    #[serde(default)]
    pub swept_ref: Option<String>,
    /// When the sweep decided to reclaim it.
    #[serde(default)]
    pub at_ms: u64,
}

/// Where a reclaimed isolation is renamed to before it is deleted: beside it (the same file
/// system), under a name that is not an isolation's.
pub(crate) fn trash_path(path: &Path, id: &SessionId) -> PathBuf {
    let parent = path.parent().unwrap_or(Path::new("/"));
    parent.join(crate::base::maker::owned_name(&format!(
        ".a3s-reclaimed-{id}"
    )))
}

/// Writes an intent (atomically, fsynced) before the operation touches anything; one before a
/// tree is moved or removed is durable when this returns.
pub(crate) fn save(store: &Store, intent: &TreeMove) -> Result<()> {
    let sync = match intent {
        TreeMove::Retain(_) | TreeMove::Reclaim(_) | TreeMove::Discard(_) => Sync::Durable,
        TreeMove::SettleGit(_) | TreeMove::MergeRun(_) => Sync::Contents,
    };
    let bytes = record_bytes("a3s-iso.pending.v1", intent)?;
    write_synced(&store.pending_file(intent.session_id()), &bytes, sync)
}

/// Removes a session's intent: its operation is over (or was undone).
pub(crate) fn remove(store: &Store, id: &SessionId) -> Result<()> {
    remove_file_if_exists(&store.pending_file(id))
}

/// Points a moved isolation's admin dir at it again (`<admin>/gitdir` names `<tree>/.git`).
/// The tree's own `.git` file names the admin dir, which does not move.
pub(crate) fn relink(tree: &Path, admin: &Path) -> Result<()> {
    let gitdir = crate::model::isolation::link_contents(&tree.join(".git"));
    let file = admin.join("gitdir");
    let dir = Dir::open(admin).ctx(|| format!("cannot open {}", admin.display()))?;
    let name = Path::new("gitdir");
    if dir.read_small(name, GITDIR_LIMIT).ok().as_deref() != Some(gitdir.as_slice()) {
        dir.replace(name, &gitdir)
            .ctx(|| format!("cannot write {}", file.display()))?;
    }
    Ok(())
}

/// The most an admin dir's `gitdir` holds: one path.
const GITDIR_LIMIT: u64 = 64 * 1024;

/// A retain's last steps, after the move: the admin dir relinked, the tree locked against `git
/// worktree prune`, the record pointed at the new path, the intent removed. Called under the
/// repository lock and the session's lease.
pub(crate) fn complete_retain(
    _held: &RepoLock,
    git: &Git,
    repo: &Repo,
    store: &Store,
    m: &RetainMove,
) -> Result<()> {
    let record = store
        .load_session(&m.session_id)?
        .filter(|r| r.state.has_tree());
    if let Some(mut record) = record {
        relink(&m.to, &m.admin)?;
        lock_worktree(git, repo, m)?;
        crate::fault_point!("retain-after-lock");
        record.state = SessionState::Retained;
        record.worktree = Some(m.to.clone());
        record.admin_dir = Some(m.admin.clone());
        record.retained_reason = Some(m.reason.clone());
        record.retained_at_ms = Some(m.retained_at_ms);
        record.updated_at_ms = now_ms();
        store.save_session(&record)?;
    }
    remove(store, &m.session_id)
}

/// Locks the moved tree, unless the interrupted retain's git (which may outlive it) did.
fn lock_worktree(git: &Git, repo: &Repo, m: &RetainMove) -> Result<()> {
    let locked = || {
        Dir::open(&m.admin)
            .and_then(|dir| dir.kind(Path::new("locked")))
            .is_ok_and(|kind| kind == Some(crate::base::beneath::Kind::File))
    };
    if locked() {
        return Ok(());
    }
    match git.worktree_lock_shielded(&repo.toplevel, &m.to, &m.reason) {
        Err(_) if locked() => Ok(()),
        other => other.map(|_| ()),
    }
}

/// A reclaim's last steps, once the tree is renamed aside: its admin dir, the session's records
/// (when still this tree's), its refs but the swept snapshot, the renamed tree, and the intent.
/// Called under the repository lock and the session's lease; each step can be done again.
pub(crate) fn complete_reclaim(
    held: &RepoLock,
    git: &Git,
    repo: &Repo,
    store: &Store,
    r: &Reclaim,
) -> Result<()> {
    remove_admin(repo, r)?;
    crate::fault_point!("sweep-after-admin");
    let id = &r.session_id;
    match store.session_status(id) {
        RecordStatus::Found(record) => {
            if record.state.has_tree() && record.worktree.as_deref() == Some(&r.path) {
                let swept_ref = swept_ref_of(git, repo, store, r);
                mark_swept(store, *record, r, swept_ref)?;
            }
        }
        RecordStatus::Malformed(_) | RecordStatus::Missing => forget(held, git, repo, store, r)?,
        RecordStatus::Unreadable(_) => {}
    }
    crate::fault_point!("sweep-after-records");
    remove_trash(&r.trash)?;
    remove(store, id)
}

/// Where the reclaim's snapshot is. An intent written before intents recorded it (no time
/// either) names none: then the session's swept ref, if there is one.
fn swept_ref_of(git: &Git, repo: &Repo, store: &Store, r: &Reclaim) -> Option<String> {
    if r.at_ms > 0 {
        return r.swept_ref.clone();
    }
    let name = store.refs().swept(&r.session_id);
    let pinned = git.rev_parse(&repo.toplevel, &name).ok().flatten();
    pinned.map(|_| name)
}

/// The session stays, recorded `swept`: its refs, run documents and claims stay too, so that
/// `bind --resume` can bring its work back.
fn mark_swept(
    store: &Store,
    mut record: SessionRecord,
    r: &Reclaim,
    swept_ref: Option<String>,
) -> Result<()> {
    record.state = SessionState::Swept;
    record.swept = Some(SweptInfo {
        at_ms: if r.at_ms > 0 { r.at_ms } else { now_ms() },
        swept_ref,
        path: r.path.clone(),
    });
    record.worktree = None;
    record.admin_dir = None;
    record.updated_at_ms = now_ms();
    store.save_session(&record)
}

/// A tree with no usable record: what it may have left goes, but the swept snapshot.
fn forget(held: &RepoLock, git: &Git, repo: &Repo, store: &Store, r: &Reclaim) -> Result<()> {
    let id = &r.session_id;
    store.remove_session(id)?;
    if let Ok(Some(claim)) = store.load_claim(id)
        && claim.path == r.path
    {
        store.remove_claim(id)?;
    }
    store.remove_runs(id)?;
    let ns = store.refs();
    crate::model::refs::clear_stale_locks(held, &repo.common_dir, &ns, id);
    let refs = crate::model::refs::SessionRefs {
        git,
        dir: &repo.toplevel,
        ns: &ns,
        session_id: id,
    };
    refs.delete(crate::model::refs::Scope::KeepSwept)
}

/// A discard's last steps, after the tree was renamed aside: its admin dir, the session's
/// record marked `discarded` (its evidence stays), the renamed tree, and the intent. Called
/// under the repository lock and the session's lease; each step can be done again.
pub(crate) fn complete_discard(
    _held: &RepoLock,
    repo: &Repo,
    store: &Store,
    d: &Reclaim,
) -> Result<()> {
    remove_admin(repo, d)?;
    crate::fault_point!("discard-after-admin");
    if let Some(mut record) = store.load_session(&d.session_id)?
        && record.state != SessionState::Discarded
        && record.worktree.as_deref() == Some(&d.path)
    {
        record.state = SessionState::Discarded;
        record.updated_at_ms = now_ms();
        store.save_session(&record)?;
    }
    crate::recovery::rebase_apply::forget(store, &d.session_id)?;
    remove_trash(&d.trash)?;
    remove(store, &d.session_id)
}

fn remove_trash(trash: &Path) -> Result<()> {
    match crate::base::beneath::remove_path(trash) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other
            .map(drop)
            .ctx(|| format!("cannot remove {}", trash.display())),
    }
}

/// Removes the reclaimed isolation's admin dir while it still stands for it.
fn remove_admin(repo: &Repo, r: &Reclaim) -> Result<()> {
    match &r.admin {
        Some(admin) if admin_is_for(admin, &r.path) => {
            crate::model::isolation::remove_admin_dir(repo, admin).map(drop)
        }
        _ => Ok(()),
    }
}

/// Whether an admin dir still stands for the isolation at `path`: it names that path (or
/// nothing readable), and no tree is there any more.
fn admin_is_for(admin: &Path, path: &Path) -> bool {
    let Ok(dir) = Dir::open(admin) else {
        return false;
    };
    let names = match dir.read_small(Path::new("gitdir"), GITDIR_LIMIT) {
        Ok(bytes) => bytes.trim_ascii_end() == path.join(".git").as_os_str().as_encoded_bytes(),
        Err(_) => true,
    };
    names && std::fs::symlink_metadata(path).is_err()
}

/// Finishes one interrupted operation where the tree moved, or undoes it (drops the intent,
/// and anything renamed aside) where it never did. Called under the lock and the lease.
fn repair_one(
    held: &RepoLock,
    git: &Git,
    repo: &Repo,
    store: &Store,
    intent: &TreeMove,
) -> Result<()> {
    let is_dir = |p: &Path| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir());
    match intent {
        TreeMove::Retain(m) if is_dir(&m.to) => complete_retain(held, git, repo, store, m),
        TreeMove::Retain(m) => remove(store, &m.session_id),
        TreeMove::Reclaim(r) | TreeMove::Discard(r) if is_dir(&r.path) => {
            remove_trash(&r.trash)?;
            remove(store, &r.session_id)
        }
        TreeMove::Reclaim(r) => complete_reclaim(held, git, repo, store, r),
        TreeMove::Discard(d) => complete_discard(held, repo, store, d),
        // Finished first, by `session_git::recover` and `run_layer::recover`.
        TreeMove::SettleGit(_) | TreeMove::MergeRun(_) => Ok(()),
    }
}

/// The intents of tree operations in the store (read without the lock, to be reported).
pub(crate) fn left(store: &Store) -> Vec<TreeMove> {
    store
        .pending_ids()
        .unwrap_or_default()
        .iter()
        .filter_map(|id| {
            read_json::<TreeMove>(&store.pending_file(id))
                .ok()
                .flatten()
        })
        .collect()
}

/// Repairs every pending operation whose session's lease is free, under the repository lock
/// (so each intent's writer is gone). Best effort: one that fails stays pending.
pub(crate) fn repair_locked(held: &RepoLock, git: &Git, repo: &Repo, store: &Store) {
    for intent in left(store) {
        if !matches!(intent, TreeMove::SettleGit(_) | TreeMove::MergeRun(_))
            && let Ok(Some(_lease)) = store.try_lease(intent.session_id())
        {
            let _ = repair_one(held, git, repo, store, &intent);
        }
    }
}
