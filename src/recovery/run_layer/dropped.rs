//! A run whose writes are thrown away (`land`'s test): before its layer goes, the paths the
//! command wrote that a snapshot would have taken, read from the layer and the untouched tree
//! beneath alone. A path of the last tree deleted, or whose bytes, kind or mode changed,
//! counts; so does a created path no ignore rule matches; a file rewritten as it was does not.

use std::fs::{self, Metadata};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::base::error::{IoContext, Result};
use crate::git::{Git, HermeticGit};

use super::merge::{Changes, is_opaque, is_whiteout};

/// What the layer holds at a path of the tree beneath it.
#[derive(Debug, PartialEq, Eq)]
enum Above {
    /// Nothing: the tree's entry shows through.
    Nothing,
    /// Deleted: a whiteout on the way, missing in an opaque directory, or a kind changed.
    Deleted,
    /// A file or link of the command's.
    Written(PathBuf),
}

/// The paths the command wrote (see the module), sorted.
pub(super) fn wrote(
    git: &Git,
    wt: &HermeticGit,
    (tree_dir, upper): (&Path, &Path),
    tree: &str,
    changes: &Changes,
) -> Result<Vec<String>> {
    let touched: Vec<Vec<u8>> = (changes.paths.iter())
        .map(|p| p.as_os_str().as_bytes().to_vec())
        .collect();
    let listing = match touched.is_empty() {
        true => Default::default(),
        false => wt.listing_under(tree, &touched)?,
    };
    let mut wrote: Vec<Vec<u8>> = Vec::new();
    for entry in &listing.entries {
        let rel = Path::new(std::ffi::OsStr::from_bytes(&entry.path));
        let differs = match above(upper, rel) {
            Above::Nothing => false,
            Above::Deleted => true,
            Above::Written(file) => !same_entry(&file, &tree_dir.join(rel))?,
        };
        if differs {
            wrote.push(entry.path.clone());
        }
    }
    let known: std::collections::BTreeSet<&[u8]> =
        listing.entries.iter().map(|e| e.path.as_slice()).collect();
    let mut created = Vec::new();
    for path in &changes.paths {
        files_under(upper, path, &mut |rel| {
            let rel = rel.as_os_str().as_bytes();
            if !known.contains(rel) {
                created.extend_from_slice(rel);
                created.push(0);
            }
        })
        .ctx(|| format!("cannot read the run's layer {}", upper.display()))?;
    }
    if !created.is_empty() {
        let ignored = git.ignored_among(tree_dir, created.clone())?;
        let ignored: std::collections::BTreeSet<&[u8]> = crate::git::split_nul(&ignored).collect();
        let kept = crate::git::split_nul(&created).filter(|p| !ignored.contains(p));
        wrote.extend(kept.map(<[u8]>::to_vec));
    }
    wrote.sort();
    wrote.dedup();
    Ok(wrote
        .into_iter()
        .map(|p| String::from_utf8_lossy(&p).into_owned())
        .collect())
}

/// What the layer `upper` holds at `rel`, a file's path in the tree beneath it.
fn above(upper: &Path, rel: &Path) -> Above {
    let mut at = upper.to_path_buf();
    let mut opaque = false;
    let parts: Vec<_> = rel.components().collect();
    for (n, part) in parts.iter().enumerate() {
        at.push(part);
        let last = n + 1 == parts.len();
        let Ok(meta) = fs::symlink_metadata(&at) else {
            return match opaque {
                true => Above::Deleted,
                false => Above::Nothing,
            };
        };
        if is_whiteout(&meta) || meta.is_dir() == last {
            // Deleted, or a file where the tree has a directory (or the other way round).
            return Above::Deleted;
        }
        if last {
            return Above::Written(at);
        }
        opaque |= is_opaque(&at);
    }
    Above::Nothing
}

/// Whether `written` holds what `beneath` held: the same kind, mode and bytes (or target).
fn same_entry(written: &Path, beneath: &Path) -> Result<bool> {
    let read = |p: &Path| fs::symlink_metadata(p).ctx(|| format!("cannot read {}", p.display()));
    let (w, b) = (read(written)?, read(beneath)?);
    if w.file_type().is_symlink() || b.file_type().is_symlink() {
        let target = |p: &Path| fs::read_link(p).ctx(|| format!("cannot read {}", p.display()));
        return Ok(w.file_type() == b.file_type() && target(written)? == target(beneath)?);
    }
    let executable = |m: &Metadata| m.permissions().mode() & 0o111 != 0;
    if !w.is_file() || !b.is_file() || w.len() != b.len() || executable(&w) != executable(&b) {
        return Ok(false);
    }
    let bytes = |p: &Path| fs::read(p).ctx(|| format!("cannot read {}", p.display()));
    Ok(bytes(written)? == bytes(beneath)?)
}

/// Calls `found` with each file or link the layer holds at or under `rel`.
fn files_under(upper: &Path, rel: &Path, found: &mut dyn FnMut(&Path)) -> std::io::Result<()> {
    let meta = match fs::symlink_metadata(upper.join(rel)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        meta => meta?,
    };
    if meta.is_dir() {
        for entry in fs::read_dir(upper.join(rel))? {
            files_under(upper, &rel.join(entry?.file_name()), found)?;
        }
    } else if !is_whiteout(&meta) {
        found(rel);
    }
    Ok(())
}
