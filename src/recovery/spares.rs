//! The pool's records under `<state>/pool/`, and the repair of what a crash left, under the
//! repository lock (by `recovery`, and before the pool is used).
//!
//! ```text
//! <state>/pool/settings.json      size and kept ignored paths
//! <state>/pool/spares/<slot>.json the spare in that slot: building (by a live process) or ready
//! <state>/pool/spares/<slot>.index a3s-iso's own index of a ready spare's tree
//! ```
//!
//! A spare is handed out only when its record says `ready`, its tree is a real directory at
//! the recorded path, its admin dir names that tree, and its index is there. Anything else is
//! removed, so a crash leaves either a ready spare or nothing.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::base::error::{IoContext, Result};
use crate::base::fsutil::{read_json, remove_file_if_exists, write_record_atomic};
use crate::base::owner::{Liveness, Owner};
use crate::base::wire::wire_enum;
use crate::context::Located;
use crate::model::isolation;
use crate::store::layout::StateDir;
use crate::store::lock::RepoLock;

/// The schema of the pool's settings (`pool/settings.json`).
const POOL_SETTINGS_SCHEMA: &str = "a3s-iso.pool-settings.v1";
/// The schema of a spare's record (`pool/spares/<slot>.json`).
const SPARE_SCHEMA: &str = "a3s-iso.spare.v1";

/// The pool of one source for one state store, as `pool` set it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolSettings {
    /// How many spares to keep; 0: no pool.
    pub size: usize,
    /// Ignored paths (gitignore patterns) that survive recycling.
    #[serde(default)]
    pub keep_ignored: Vec<String>,
}

wire_enum! {
    /// Where a spare is in its life.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    pub enum SpareState {
        /// Its tree is being checked out or cleaned by `maker`.
        Building = "building",
        /// Clean and at `head`: a bind may take it.
        Ready = "ready",
    }
}

/// One spare isolation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spare {
    /// Its slot: the number in its name.
    pub slot: u32,
    /// Building or ready.
    pub state: SpareState,
    /// Its tree (`<prefix>.pool-<slot>` beside the source).
    #[serde(with = "crate::base::paths::fs_path")]
    pub path: PathBuf,
    /// Its admin dir, once it has one.
    #[serde(with = "crate::base::paths::fs_path_opt")]
    pub admin: Option<PathBuf>,
    /// The commit its tree and index hold (empty while building).
    pub head: String,
    /// The process building it.
    pub maker: Owner,
    /// When the record was written.
    pub at_ms: u64,
    /// How its files were made (`clone`, `checkout`); `None` while building, and in old records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fill: Option<crate::base::reflink::Fill>,
}

fn pool_dir(located: &Located) -> PathBuf {
    located.store.path(StateDir::Pool)
}

fn spares_dir(located: &Located) -> PathBuf {
    pool_dir(located).join("spares")
}

/// The record file of slot `slot`.
fn record_path(located: &Located, slot: u32) -> PathBuf {
    spares_dir(located).join(format!("{slot}.json"))
}

/// Where a3s-iso keeps its own index of the spare in `slot`.
pub(crate) fn index_path(located: &Located, slot: u32) -> PathBuf {
    spares_dir(located).join(format!("{slot}.index"))
}

/// Where the pool's settings are recorded.
pub(crate) fn settings_file(located: &Located) -> PathBuf {
    pool_dir(located).join("settings.json")
}

/// The pool's settings (none yet: size 0).
pub(crate) fn settings(located: &Located) -> Result<PoolSettings> {
    Ok(read_json(&settings_file(located))?.unwrap_or_default())
}

pub(crate) fn save_settings(located: &Located, settings: &PoolSettings) -> Result<()> {
    let dir = pool_dir(located);
    fs::create_dir_all(&dir).ctx(|| format!("cannot create {}", dir.display()))?;
    write_record_atomic(&settings_file(located), POOL_SETTINGS_SCHEMA, settings)
}

/// Every spare's record, by slot.
pub(crate) fn spares(located: &Located) -> Result<Vec<Spare>> {
    let dir = spares_dir(located);
    let entries = match fs::read_dir(&dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        entries => entries.ctx(|| format!("cannot read {}", dir.display()))?,
    };
    let mut spares: Vec<Spare> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter_map(|p| read_json(&p).ok().flatten())
        .collect();
    spares.sort_by_key(|s| s.slot);
    Ok(spares)
}

pub(crate) fn save(located: &Located, spare: &Spare) -> Result<()> {
    let dir = spares_dir(located);
    fs::create_dir_all(&dir).ctx(|| format!("cannot create {}", dir.display()))?;
    write_record_atomic(&record_path(located, spare.slot), SPARE_SCHEMA, spare)
}

/// Drops a spare's record and index (its tree and admin dir are the caller's).
pub(crate) fn forget(located: &Located, slot: u32) -> Result<()> {
    remove_file_if_exists(&record_path(located, slot))?;
    remove_file_if_exists(&index_path(located, slot))
}

/// Where the spare of `slot` lives: beside the source.
pub(crate) fn spare_path(located: &Located, slot: u32) -> PathBuf {
    let names = located.store.isolation_names(&located.repo.toplevel);
    let parent = located.repo.toplevel.parent().unwrap_or(Path::new("/"));
    parent.join(names.spare_name(slot))
}

/// Whether a ready spare can be handed out as it is.
pub(crate) fn is_healthy(located: &Located, spare: &Spare) -> bool {
    let Some(admin) = &spare.admin else {
        return false;
    };
    let is_dir = fs::symlink_metadata(&spare.path).is_ok_and(|m| m.file_type().is_dir());
    // Read beneath the admin dir's handle: a link there (or at its path) is not followed.
    let names_tree = crate::base::beneath::Dir::open(admin)
        .and_then(|dir| dir.read_small(Path::new("gitdir"), 64 * 1024))
        .ok()
        .as_deref()
        == Some(isolation::link_contents(&spare.path.join(".git")).as_slice());
    spare.state == SpareState::Ready
        && is_dir
        && names_tree
        && !spare.head.is_empty()
        && index_path(located, spare.slot).is_file()
}

/// Removes a spare: its record first (so none names a tree that is gone; [`recover`] removes a
/// tree left without one), then its tree and every admin dir naming it.
pub(crate) fn destroy(located: &Located, spare: &Spare) -> Result<()> {
    forget(located, spare.slot)?;
    remove_tree(located, &spare.path, spare.admin.as_deref())
}

/// Removes the ready spare at `path` (`gc --all`), under the lock. One being built is its
/// builder's, and a tree no record names was taken by a bind: both stay. Returns whether no
/// spare is left there.
pub(crate) fn destroy_ready_at(located: &Located, path: &Path) -> Result<bool> {
    let found = spares(located)?.into_iter().find(|s| s.path == path);
    match found {
        Some(spare) if spare.state == SpareState::Ready => {
            destroy(located, &spare)?;
            Ok(true)
        }
        Some(_) => Ok(false),
        None => Ok(fs::symlink_metadata(path).is_err()),
    }
}

/// The bytes a spare holds: its tree, its admin dir, its record and index.
pub(crate) fn bytes_of(located: &Located, spare: &Spare) -> u64 {
    let file = |p: PathBuf| fs::symlink_metadata(p).map_or(0, |m| m.len());
    crate::base::fsutil::tree_size(&spare.path)
        + spare
            .admin
            .as_deref()
            .map_or(0, crate::base::fsutil::tree_size)
        + file(record_path(located, spare.slot))
        + file(index_path(located, spare.slot))
}

/// Removes a tree, the admin dir `admin` and any other admin dir that names the tree.
fn remove_tree(located: &Located, path: &Path, admin: Option<&Path>) -> Result<()> {
    let mut admins = isolation::admin_dirs_for(&located.repo, path);
    admins.extend(admin.map(Path::to_path_buf));
    isolation::remove(&located.repo, path, None)?;
    for admin in admins {
        if fs::symlink_metadata(&admin).is_ok() {
            isolation::remove_admin_dir(&located.repo, &admin)?;
        }
    }
    Ok(())
}

/// The spares still `building` whose maker died at least [`crate::base::owner::GRACE`] ago
/// (read without the lock). A broken ready spare is the pool's next user's to remove.
pub(crate) fn interrupted(located: &Located) -> Vec<Spare> {
    if !crate::base::owner::sees_host_processes() {
        return Vec::new();
    }
    let now = crate::base::fsutil::now_ms();
    let grace = crate::base::owner::GRACE.as_millis() as u64;
    spares(located)
        .unwrap_or_default()
        .into_iter()
        .filter(|s| {
            s.state == SpareState::Building
                && s.maker.liveness() == Liveness::Dead
                && now.saturating_sub(s.at_ms) >= grace
        })
        .collect()
}

/// Repairs the pool after a crash, under the lock: removes broken spares (but those a live
/// process builds), trees named like a spare no record claims, and admin dirs of lost spares.
pub(crate) fn recover(_held: &RepoLock, located: &Located) -> Result<()> {
    let spares = spares(located)?;
    for spare in &spares {
        let alive = spare.state == SpareState::Building && spare.maker.liveness() != Liveness::Dead;
        if !alive && !is_healthy(located, spare) {
            destroy(located, spare)?;
        }
    }
    let names = located.store.isolation_names(&located.repo.toplevel);
    let parent = located.repo.toplevel.parent().unwrap_or(Path::new("/"));
    let recorded = |slot: u32| spares.iter().any(|s| s.slot == slot);
    if let Ok(entries) = fs::read_dir(parent) {
        for entry in entries.flatten() {
            if let Some(slot) = names.spare_slot(&entry.file_name())
                && !recorded(slot)
            {
                remove_tree(located, &entry.path(), None)?;
            }
        }
    }
    for (gitdir, admin) in isolation::registered_admins(&located.repo) {
        let tree = gitdir.parent().unwrap_or(Path::new("/"));
        let is_spare_path = tree.parent() == Some(parent)
            && tree.file_name().and_then(|n| names.spare_slot(n)).is_some();
        if is_spare_path && fs::symlink_metadata(tree).is_err() {
            isolation::remove_admin_dir(&located.repo, &admin)?;
        }
    }
    Ok(())
}
