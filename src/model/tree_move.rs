//! An isolation's files moved from the tree its own index describes to another by what differs
//! alone: the paths `diff-tree` names between the two are removed or written (by git's
//! `checkout-index`, with the target's attributes), and the index is edited for those paths only,
//! the other entries keeping their stat data. `read-tree -m -u` does the same job by walking every
//! entry of both trees and writing the index whole, which on a large checkout costs most of a
//! rebase; it remains for every case this does not take: a path whose file changed since the index
//! noted it, something in the way of a new path, a gitlink, an index git would have to read itself.
//!
//! A kill part way leaves the index as it was (describing the tree the move started from) and the
//! files part moved: the next snapshot, comparing stat data, sees every file written or removed, so
//! whoever finishes the move starts from what is there.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::base::beneath::Dir;
use crate::base::error::{Error, IoContext, Result};
use crate::git::HermeticGit;
use crate::git::index_file::edit::{Change, Keep, Stored, Subtrees, edit, stored_entries, subset};
use crate::git::index_file::reader::object_id;
use crate::git::index_file::recent::written_second;
use crate::git::index_file::writer::StatData;
use crate::model::snapshot::{TempFile, modified_of, note_tree, noted_tree};

/// The most of a file read to compare its content with what the index noted.
const COMPARE_LIMIT: u64 = 64 * 1024 * 1024;

/// What the move makes of the index: the changed paths, and the target's tree ids above them.
struct Target<'a> {
    changes: &'a BTreeMap<Vec<u8>, Change>,
    subtrees: &'a Subtrees,
}

/// What a move does, planned before anything is touched.
struct Plan {
    /// The paths whose files go.
    removed: Vec<Vec<u8>>,
    /// The paths written from the edited index (NUL-terminated): the `.gitattributes` files
    /// first, by a git of their own, as `checkout-index` takes each file's attributes from
    /// the files on disk (and keeps what it read once).
    written: [Vec<u8>; 2],
    index: Vec<u8>,
    /// The edited index's entries that `checkout-index` reads: those written.
    to_write: Vec<u8>,
}

/// Moves the files of the tree `top` from `now` to `to` when the index at `seed` (a3s-iso's own,
/// noted as describing `now`) can be edited for it; `false`, with nothing touched, when it cannot
/// and `read-tree -m -u` must. `known`: what differs from `now` to `to`, when the caller has it.
pub(crate) fn move_changed(
    wt: &HermeticGit,
    scratch: &Path,
    seed: &Path,
    (now, to): (&str, &str),
    known: Option<&crate::git::TreeDiff>,
) -> Result<bool> {
    if noted_tree(seed).as_deref() != Some(now) {
        return Ok(false);
    }
    let bytes = fs::read(seed).ctx(|| format!("cannot read {}", seed.display()))?;
    let asked;
    let crate::git::TreeDiff {
        changes, subtrees, ..
    } = match known {
        Some(known) => known,
        None => {
            asked = wt.tree_diff(now, to)?;
            &asked
        }
    };
    let target = Target { changes, subtrees };
    let Some(plan) = plan(
        wt.tree(),
        &bytes,
        now.len() / 2,
        &target,
        written_second(seed)?,
    ) else {
        return Ok(false);
    };
    // Both indexes are written before anything in the tree is touched.
    let index = TempFile::new(scratch, "index")?;
    fs::write(index.path(), &plan.index)
        .ctx(|| format!("cannot write {}", index.path().display()))?;
    let written = TempFile::new(scratch, "index")?;
    if !plan.to_write.is_empty() {
        fs::write(written.path(), &plan.to_write)
            .ctx(|| format!("cannot write {}", written.path().display()))?;
    }
    act(wt, &plan, written.path())?;
    // The edited index keeps the seed's date: what was noted in or after it stays distrusted.
    let modified = modified_of(seed)?;
    fs::File::options()
        .write(true)
        .open(index.path())
        .and_then(|f| f.set_modified(modified))
        .ctx(|| format!("cannot date {}", index.path().display()))?;
    fs::rename(index.path(), seed).ctx(|| format!("cannot keep {}", seed.display()))?;
    note_tree(seed, to);
    Ok(true)
}

/// What the move removes and writes, and the index after it; `None` when a path is not as the
/// index noted it, something unknown is in the way of a new path, or a gitlink takes part.
fn plan(
    top: &Path,
    bytes: &[u8],
    hash_len: usize,
    target: &Target<'_>,
    racy_from: u32,
) -> Option<Plan> {
    let changes = target.changes;
    let stored = stored_entries(bytes, hash_len, changes)?;
    let mut removed = Vec::new();
    let mut written = [Vec::new(), Vec::new()];
    for (path, change) in changes {
        let ready = match stored.get(path) {
            Some(entry) => unchanged(top, path, entry, racy_from, hash_len),
            None => clear_for(top, path, &stored, changes),
        };
        if !ready || stored.get(path).is_some_and(|e| e.mode() == GITLINK) {
            return None;
        }
        match change {
            Change::Set { mode, .. } if *mode == GITLINK => return None,
            Change::Set { .. } => {
                let list = &mut written[usize::from(!crate::base::paths::is_attributes_file(path))];
                list.extend_from_slice(path);
                list.push(0);
            }
            Change::Remove => removed.push(path.clone()),
        }
    }
    // The seed held exactly the tree the move starts from: it holds the target after it.
    let keep = Keep {
        racy_from: None,
        untracked_cache: true,
        subtrees: Some(target.subtrees),
        null_trailer: true,
    };
    let index = edit(bytes, hash_len, changes, keep)?;
    let to_write = match written.iter().all(Vec::is_empty) {
        true => Vec::new(),
        false => subset(&index, hash_len, |path| {
            changes
                .get(path)
                .is_some_and(|c| matches!(c, Change::Set { .. }))
        })?,
    };
    Some(Plan {
        removed,
        written,
        index,
        to_write,
    })
}

const GITLINK: u32 = 0o160000;

/// Whether the file at `path` is what the index noted: its stat data match (and were noted
/// before the racy second), or its kind, executable bit and content do.
fn unchanged(top: &Path, path: &[u8], entry: &Stored, racy_from: u32, hash_len: usize) -> bool {
    let full = top.join(OsStr::from_bytes(path));
    let Ok(meta) = fs::symlink_metadata(&full) else {
        return false;
    };
    let link = meta.file_type().is_symlink();
    let kind_matches = match entry.mode() & 0o170000 {
        0o120000 => link,
        0o100000 => {
            meta.is_file() && (meta.permissions().mode() & 0o100 != 0) == (entry.mode() == 0o100755)
        }
        _ => false,
    };
    if !kind_matches {
        return false;
    }
    if entry.mtime() < racy_from && StatData::of(&meta).matches(&entry.stat) {
        return true;
    }
    if meta.len() > COMPARE_LIMIT {
        return false;
    }
    let content = match link {
        true => fs::read_link(&full).map(|t| t.into_os_string().into_vec()),
        false => fs::read(&full),
    };
    content.is_ok_and(|bytes| object_id("blob", &bytes, hash_len) == entry.id)
}

/// Whether a new path is free: nothing is at it or on the way to it but directories and
/// entries the move removes first.
fn clear_for(
    top: &Path,
    path: &[u8],
    stored: &BTreeMap<Vec<u8>, Stored>,
    changes: &BTreeMap<Vec<u8>, Change>,
) -> bool {
    blocker(top, path).is_none_or(|on_the_way| {
        stored.contains_key(&on_the_way) && changes.get(&on_the_way) == Some(&Change::Remove)
    })
}

/// The path of what is not a directory at `path`, or at one of its leading directories, in
/// the tree at `top` (`None`: nothing is in the way).
pub(crate) fn blocker(top: &Path, path: &[u8]) -> Option<Vec<u8>> {
    let mut at = top.to_path_buf();
    let parts: Vec<&[u8]> = path.split(|b| *b == b'/').collect();
    for (n, part) in parts.iter().enumerate() {
        at.push(OsStr::from_bytes(part));
        match fs::symlink_metadata(&at) {
            Err(_) => return None,
            Ok(meta) if n + 1 == parts.len() || !meta.is_dir() => {
                return Some(parts[..=n].join(&b'/'));
            }
            Ok(_) => {}
        }
    }
    None
}

/// Removes what goes (and the directories it leaves empty), then has git write what comes
/// from the index at `index` (the plan's entries to write).
fn act(wt: &HermeticGit, plan: &Plan, index: &Path) -> Result<()> {
    let top = Dir::open(wt.tree()).ctx(|| format!("cannot open {}", wt.tree().display()))?;
    for path in &plan.removed {
        let rel = Path::new(OsStr::from_bytes(path));
        top.remove(rel)
            .and_then(|_| top.remove_empty_parents(rel))
            .map_err(|e| Error::io(format!("cannot remove {}", rel.display()), e))?;
    }
    crate::fault_point!("tree-move-after-removals");
    for listed in plan.written.iter().filter(|l| !l.is_empty()) {
        wt.on_index(index).write_listed(listed.clone())?;
    }
    Ok(())
}
