//! One thing a clean-up removes (or keeps), and how each kind is removed.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::base::error::{Error, Result};
use crate::context::Located;
use crate::git::{Git, RefUpdate};

/// What kind of thing an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A private ref (`refs/a3s-iso/…` or a tenant's).
    Ref,
    /// A retained branch (`refs/heads/a3s-iso/<id>` or a tenant's).
    Branch,
    /// Promote artifacts (`artifacts/<digest hex>/`).
    Artifacts,
    /// A session's change-set documents (`runs/<id>/`).
    Runs,
    /// A session's nested change sets (`nested/<id>/`).
    Nested,
    /// How a session's runs ended (`run-exits/<id>/`).
    RunExits,
    /// What git inside a session's runs made: its layers (`session-git/<id>/`).
    SessionGit,
    /// A seed index of an isolation (`seeds/<name>.index`).
    Seed,
    /// A session's lease file (`leases/<id>.lock`).
    Lease,
    /// A temporary file or quarantine dir a dead process left (`tmp/`, `quarantine/`).
    Temp,
    /// A promote journal entry (`promoted/<digest hex>.json`).
    JournalEntry,
    /// A session record (`sessions/<id>.json`).
    SessionRecord,
    /// An entry of the user-level registry of sources.
    RegistryEntry,
    /// The pool's settings, once it has no spare (`pool/settings.json`).
    PoolSettings,
    /// A directory left empty.
    EmptyDir,
    /// The mark a purge left of a session (`purged/<id>.json`).
    PurgeMark,
    /// A sandboxed run's layer left behind (`run-layers/<id>/`).
    RunLayer,
    /// A pool spare: its tree beside the source, its admin dir, its record and index.
    Spare,
    /// A pristine tree of a revision that copy-on-write binds clone
    /// (`<prefix>.pristine/<revision>/`), or one a dead process was building.
    Pristine,
}

/// Why an item goes (or stays).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Its session was discarded.
    Discarded,
    /// Its session was swept.
    Swept,
    /// Its session has no record any more.
    Gone,
    /// `discard --purge` of its session.
    Purged,
    /// Older than the retention window, and no live or retained session needs it.
    Expired,
    /// Its session's lease is held by no one and no live session needs it.
    DeadHolder,
    /// The process that made it is gone.
    DeadMaker,
    /// The source (or its git dir) no longer exists.
    SourceGone,
    /// `gc --all` of a source none of whose sessions is left.
    Uninstall,
    /// Kept: its session is live (bound).
    Live,
    /// Kept: its session is retained.
    Retained,
    /// Kept: newer than the retention window.
    InsideWindow,
    /// Kept: it makes a later promote of the same digest `idempotent`.
    Idempotence,
    /// Kept: the branch is checked out in the source.
    CheckedOut,
    /// Kept: someone holds it, or an operation on it is in progress.
    Busy,
    /// The isolation it speeds up (a seed index) no longer exists.
    IsolationGone,
    /// Kept: the isolation it speeds up exists (a seed index of a tree no session record
    /// names, such as one a bind is still building).
    IsolationExists,
    /// Kept: the pool's (a spare, or its settings); `pool --size 0` or `gc --all` removes it.
    Pool,
    /// A pristine tree of a revision no session or spare is bound at.
    Unused,
    /// Kept: a pristine tree of a revision a session or spare is bound at.
    InUse,
}

/// One thing removed (or kept), with why.
#[derive(Debug, Clone, Serialize)]
pub struct Item {
    /// What it is.
    pub kind: Kind,
    /// Its path, for a file or directory.
    #[serde(
        with = "crate::base::paths::fs_path_opt",
        skip_serializing_if = "Option::is_none"
    )]
    pub path: Option<PathBuf>,
    /// Its full name, for a ref or branch.
    #[serde(rename = "ref", skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The session it belongs to, when it belongs to one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Why it goes (or stays).
    pub reason: Reason,
    /// Its size in bytes, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

impl Item {
    /// A file or directory at `path`, its size read now.
    pub(crate) fn path(kind: Kind, path: PathBuf, reason: Reason) -> Item {
        let bytes = size_of(&path);
        Item {
            kind,
            path: Some(path),
            reference: None,
            session_id: None,
            reason,
            bytes,
        }
    }

    /// A ref or branch.
    pub(crate) fn reference(kind: Kind, name: String, reason: Reason) -> Item {
        Item {
            kind,
            path: None,
            reference: Some(name),
            session_id: None,
            reason,
            bytes: None,
        }
    }

    pub(crate) fn of(mut self, session_id: &str) -> Item {
        self.session_id = Some(session_id.to_string());
        self
    }

    /// Where it is, for a human: its path or its ref.
    pub fn location(&self) -> String {
        match (&self.reference, &self.path) {
            (Some(name), _) => name.clone(),
            (None, Some(path)) => path.display().to_string(),
            (None, None) => String::new(),
        }
    }
}

/// The bytes at `path` (a file, or every file under a directory); `None` when it is gone.
fn size_of(path: &Path) -> Option<u64> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some(if meta.is_dir() {
        crate::base::fsutil::tree_size(path)
    } else {
        meta.len()
    })
}

/// What a removal did: what went, and what stayed because someone took or filled it
/// meanwhile (a lease held again, a directory written into).
#[derive(Debug, Default)]
pub(crate) struct Removal {
    /// Gone now.
    pub removed: Vec<Item>,
    /// Still there; each item's reason is `busy`.
    pub stayed: Vec<Item>,
}

/// Removes `items`: every ref and branch in one transaction first, then the files (pool
/// spares before the pool's settings), the session records last, so that a crash in the
/// middle leaves a state the next clean-up finishes (the record still names the session whose
/// evidence is partly gone). Something already gone is not an error, and counts as gone.
pub(crate) fn remove_all(git: &Git, located: &Located, items: &[Item]) -> Result<Removal> {
    let updates: Vec<RefUpdate> = items
        .iter()
        .filter(|i| matches!(i.kind, Kind::Ref | Kind::Branch))
        .filter_map(|i| i.reference.clone())
        .map(|name| RefUpdate::Delete { name })
        .collect();
    git.update_refs(&located.repo.toplevel, &updates, "a3s-iso: clean up")?;
    crate::fault_point!("gc-after-refs");
    let mut removal = Removal {
        removed: items.iter().filter(|i| i.path.is_none()).cloned().collect(),
        stayed: Vec::new(),
    };
    let mut files: Vec<&Item> = items.iter().filter(|i| i.path.is_some()).collect();
    // Records after everything else of their sessions, empty directories after what was in
    // them (a stable sort keeps them deepest first).
    files.sort_by_key(|i| {
        (
            i.kind == Kind::EmptyDir,
            i.kind == Kind::SessionRecord,
            i.kind == Kind::PoolSettings,
        )
    });
    for item in files {
        let Some(path) = &item.path else { continue };
        if remove_path(located, item.kind, path)? {
            removal.removed.push(item.clone());
        } else {
            removal.stayed.push(Item {
                reason: Reason::Busy,
                ..item.clone()
            });
        }
    }
    Ok(removal)
}

/// Removes one file or directory; a lease only while this process holds it (unlinked under the
/// flock, so no holder is mid-use), a spare only while its record says ready. Whether it is gone.
fn remove_path(located: &Located, kind: Kind, path: &Path) -> Result<bool> {
    if kind == Kind::Spare {
        return crate::recovery::spares::destroy_ready_at(located, path);
    }
    if kind == Kind::Pristine {
        crate::model::pristine::remove_tree(path)?;
        return Ok(true);
    }
    let _held = match kind {
        Kind::Lease => match crate::store::lock::FileLock::try_acquire_noting(path, None)? {
            Some(lease) => Some(lease),
            None => return Ok(false),
        },
        _ => None,
    };
    let gone = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(true),
        Err(e) => Err(e),
        Ok(meta) if kind == Kind::EmptyDir => match std::fs::remove_dir(path) {
            // Something was written into it meanwhile: it stays.
            Err(_) if meta.is_dir() => return Ok(false),
            other => other,
        },
        Ok(_) => crate::base::beneath::remove_path(path).map(|_| ()),
    };
    match gone {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::io(format!("cannot remove {}", path.display()), e))
        }
        _ => Ok(true),
    }
}
