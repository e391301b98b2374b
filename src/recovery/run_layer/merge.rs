//! The run's layer read (what the command created, changed or deleted) and merged into the
//! tree. Each entry leaves the layer as its last step, so merging again finishes a merge a
//! crash cut short.

use std::fs::{self, Metadata};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The paths a run touched, relative to the isolation's root.
#[derive(Debug, Default)]
pub(super) struct Changes {
    /// Each path whose content the command created, changed or deleted (a replaced or new
    /// directory as one path); a directory whose `.gitignore` changed is named whole.
    pub paths: Vec<PathBuf>,
    /// The root's `.gitignore` changed: every path may be ignored otherwise now.
    pub everything: bool,
    /// The run touched a `.git` or something inside a nested repository.
    pub nested: bool,
}

/// A whiteout: the command deleted what the tree has at this path.
pub(super) fn is_whiteout(meta: &Metadata) -> bool {
    meta.file_type().is_char_device() && meta.rdev() == 0
}

/// An opaque directory: it replaces what the tree has at its path, whole.
pub(super) fn is_opaque(path: &Path) -> bool {
    let mut value = [0u8; 4];
    rustix::fs::lgetxattr(path, "user.overlay.opaque", &mut value[..])
        .is_ok_and(|n| value[..n] == *b"y")
}

/// A directory itself, not a link to one.
fn real_dir(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// Reads what the layer `upper` over `tree` holds (the tree is as the command found it).
pub(super) fn changes(upper: &Path, tree: &Path) -> io::Result<Changes> {
    let mut changes = Changes::default();
    walk(upper, tree, Path::new(""), &mut changes)?;
    changes.paths.sort();
    changes.paths.dedup();
    Ok(changes)
}

fn walk(upper: &Path, tree: &Path, rel: &Path, out: &mut Changes) -> io::Result<()> {
    for entry in fs::read_dir(upper.join(rel))? {
        let entry = entry?;
        let name = entry.file_name();
        let path = rel.join(&name);
        let from = upper.join(&path);
        let meta = fs::symlink_metadata(&from)?;
        out.nested |= name.as_bytes() == b".git";
        if name.as_bytes() == b".gitignore" {
            match rel.as_os_str().is_empty() {
                true => out.everything = true,
                false => out.paths.push(rel.to_path_buf()),
            }
        }
        if meta.is_dir() && !is_opaque(&from) && real_dir(&tree.join(&path)) {
            out.nested |= fs::symlink_metadata(tree.join(&path).join(".git")).is_ok();
            walk(upper, tree, &path, out)?;
            continue;
        }
        if meta.is_dir() {
            out.nested |= holds_git(&from)?;
        }
        out.paths.push(path);
    }
    Ok(())
}

/// Whether a directory the command made holds a `.git` anywhere.
fn holds_git(dir: &Path) -> io::Result<bool> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_name().as_bytes() == b".git" {
            return Ok(true);
        }
        if entry.file_type()?.is_dir() && holds_git(&entry.path())? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Moves `upper` down into `tree`: a whiteout deletes, a directory both have (not opaque) is
/// merged and takes the layer's permissions, and any other entry replaces the tree's (renamed).
pub(super) fn merge(upper: &Path, tree: &Path) -> io::Result<()> {
    merge_dir(upper, tree, Path::new(""))
}

fn merge_dir(upper: &Path, tree: &Path, rel: &Path) -> io::Result<()> {
    for entry in fs::read_dir(upper.join(rel))? {
        let path = rel.join(entry?.file_name());
        let (from, to) = (upper.join(&path), tree.join(&path));
        let meta = fs::symlink_metadata(&from)?;
        if is_whiteout(&meta) {
            remove_any(&to)?;
            fs::remove_file(&from)?;
        } else if meta.is_dir() && !is_opaque(&from) && real_dir(&to) {
            merge_dir(upper, tree, &path)?;
            fs::set_permissions(&to, meta.permissions())?;
            strip_overlay_xattrs(&to);
            fs::remove_dir(&from)?;
        } else {
            clean(&from, &meta)?;
            if meta.is_dir() || real_dir(&to) {
                remove_any(&to)?;
            }
            fs::rename(&from, &to)?;
        }
        crate::fault_point!("run-layer-merge-entry");
    }
    Ok(())
}

/// Removes whatever is at `path` (a directory with everything in it, a link as a link).
fn remove_any(path: &Path) -> io::Result<()> {
    crate::base::beneath::remove_path(path).map(drop)
}

/// Strips the overlay's own from what moves into the tree: its `user.overlay.*` attributes,
/// and whiteouts in a directory that replaces the tree's whole.
fn clean(path: &Path, meta: &Metadata) -> io::Result<()> {
    if meta.is_symlink() {
        return Ok(());
    }
    strip_overlay_xattrs(path);
    if !meta.is_dir() {
        return Ok(());
    }
    for entry in fs::read_dir(path)? {
        let entry = entry?.path();
        let meta = fs::symlink_metadata(&entry)?;
        match is_whiteout(&meta) {
            true => fs::remove_file(&entry)?,
            false => clean(&entry, &meta)?,
        }
    }
    Ok(())
}

/// Removes the overlay's attributes from `path` (best effort).
fn strip_overlay_xattrs(path: &Path) {
    let mut names = vec![0u8; 4096];
    let Ok(len) = rustix::fs::llistxattr(path, &mut names[..]) else {
        return;
    };
    for name in names[..len].split(|b| *b == 0) {
        if name.starts_with(b"user.overlay.") {
            let name = std::ffi::OsStr::from_bytes(name);
            let _ = rustix::fs::lremovexattr(path, name);
        }
    }
}

/// Removes the merged layer, after opening up the `work/work` the overlay made without access.
pub(super) fn remove_layer(layer: &Path) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let work = layer.join("work").join("work");
    if real_dir(&work) {
        let _ = fs::set_permissions(&work, fs::Permissions::from_mode(0o700));
    }
    crate::base::beneath::remove_path(layer).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gitignore_names_its_directory_and_the_roots_names_everything() {
        let tmp = tempfile::tempdir().unwrap();
        let (upper, tree) = (tmp.path().join("u"), tmp.path().join("t"));
        fs::create_dir_all(upper.join("d")).unwrap();
        fs::create_dir_all(tree.join("d")).unwrap();
        fs::write(upper.join("d/.gitignore"), "x").unwrap();
        fs::write(upper.join("d/f"), "x").unwrap();
        let changes = changes(&upper, &tree).unwrap();
        let named = ["d", "d/.gitignore", "d/f"].map(PathBuf::from);
        assert_eq!(changes.paths, named);
        assert!(!changes.everything && !changes.nested);
        fs::write(upper.join(".gitignore"), "x").unwrap();
        fs::create_dir_all(upper.join("n/.git")).unwrap();
        let changes = super::changes(&upper, &tree).unwrap();
        assert!(changes.everything && changes.nested);
    }

    #[test]
    fn merging_twice_is_merging_once() {
        let tmp = tempfile::tempdir().unwrap();
        let (upper, tree) = (tmp.path().join("u"), tmp.path().join("t"));
        fs::create_dir_all(upper.join("d/new")).unwrap();
        fs::create_dir_all(tree.join("d")).unwrap();
        fs::write(upper.join("d/new/f"), "new").unwrap();
        fs::write(upper.join("d/g"), "changed").unwrap();
        fs::write(tree.join("d/g"), "old").unwrap();
        fs::write(tree.join("file-then-dir"), "old").unwrap();
        fs::create_dir_all(upper.join("file-then-dir")).unwrap();
        merge(&upper, &tree).unwrap();
        merge(&upper, &tree).unwrap();
        assert_eq!(fs::read(tree.join("d/new/f")).unwrap(), b"new");
        assert_eq!(fs::read(tree.join("d/g")).unwrap(), b"changed");
        assert!(real_dir(&tree.join("file-then-dir")));
        assert_eq!(fs::read_dir(&upper).unwrap().count(), 0);
    }
}
