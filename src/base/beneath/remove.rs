//! A large tree removed by several threads at once: unlinking is mostly waiting on the file
//! system's metadata, and the file systems a3s-iso runs on unlink in different directories at
//! the same time. Each thread takes whole subtrees and removes them as [`super::remove_at`]
//! does, beneath the handle of the directory holding them, never through a link.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rustix::fs::AtFlags;
use rustix::io::Errno;

use super::{Dir, Kind, kind_of, open_to_empty, remove_known};

/// How many threads remove at once.
const REMOVERS: usize = 4;

/// Enough subtrees that the threads share the work evenly.
const UNITS_WANTED: usize = 4 * REMOVERS;

/// How many levels down the tree is split into subtrees at most.
const SPLIT_DEPTH: usize = 2;

/// A subtree to remove: the directory `name` of `parent`.
type Unit = (Arc<Dir>, OsString);

/// Removes the subdirectories of the directory `name` of `parent` (when it is one) in
/// parallel; what is left (its files and the emptied directories) is the caller's to remove.
pub(super) fn in_parallel(parent: BorrowedFd<'_>, name: &OsStr) -> io::Result<()> {
    match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if kind_of(st.st_mode) == Kind::Dir => {}
        Ok(_) | Err(Errno::NOENT) => return Ok(()),
        Err(e) => return Err(e.into()),
    }
    let Some(root) = open_to_empty(parent, name)? else {
        return Ok(());
    };
    let units = split(Arc::new(root))?;
    if units.len() < 2 {
        return Ok(());
    }
    let next = AtomicUsize::new(0);
    let failed: Mutex<Option<io::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..REMOVERS.min(units.len()) {
            scope.spawn(|| {
                while let Some((dir, name)) = units.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if let Err(err) = remove_known(dir.fd(), name, Some(Kind::Dir)) {
                        if let Ok(mut slot) = failed.lock() {
                            slot.get_or_insert(err);
                        }
                        return;
                    }
                }
            });
        }
    });
    match failed.into_inner() {
        Ok(Some(err)) => Err(err),
        _ => Ok(()),
    }
}

/// The subtrees of `root`: its subdirectories, each split into its own while there are too
/// few to share.
fn split(root: Arc<Dir>) -> io::Result<Vec<Unit>> {
    let mut units = subdirectories(&root)?;
    for _ in 1..SPLIT_DEPTH {
        if units.len() >= UNITS_WANTED {
            break;
        }
        let mut deeper = Vec::new();
        for (parent, name) in units {
            let below = match open_to_empty(parent.fd(), &name)? {
                Some(dir) => subdirectories(&Arc::new(dir))?,
                None => Vec::new(),
            };
            match below.is_empty() {
                true => deeper.push((parent, name)),
                false => deeper.extend(below),
            }
        }
        units = deeper;
    }
    Ok(units)
}

/// The directories directly in `dir`, as subtrees.
fn subdirectories(dir: &Arc<Dir>) -> io::Result<Vec<Unit>> {
    Ok(dir
        .entries()?
        .into_iter()
        .filter(|entry| entry.kind == Kind::Dir)
        .map(|entry| (Arc::clone(dir), entry.name))
        .collect())
}

#[cfg(test)]
mod tests {
    /// A tree of `dirs` × `dirs` directories with `files` files each, and a link to a
    /// directory outside it at every level.
    fn tree(root: &std::path::Path, outside: &std::path::Path, dirs: usize, files: usize) {
        for a in 0..dirs {
            for b in 0..dirs {
                let d = root.join(format!("d{a}/e{b}"));
                std::fs::create_dir_all(&d).unwrap();
                for f in 0..files {
                    std::fs::write(d.join(format!("f{f}")), b"x").unwrap();
                }
                std::os::unix::fs::symlink(outside, d.join("link")).unwrap();
            }
            std::os::unix::fs::symlink(outside, root.join(format!("d{a}/link"))).unwrap();
        }
        std::os::unix::fs::symlink(outside, root.join("link")).unwrap();
        std::fs::write(root.join("top"), b"x").unwrap();
    }

    #[test]
    fn a_wide_tree_goes_whole_and_nothing_a_link_names_goes_with_it() {
        let base = tempfile::tempdir().unwrap();
        let outside = base.path().join("outside");
        std::fs::create_dir_all(outside.join("keep/deeper")).unwrap();
        std::fs::write(outside.join("keep/deeper/file"), b"mine").unwrap();
        let root = base.path().join("trash");
        tree(&root, &outside, 6, 5);
        assert!(super::super::remove_path(&root).unwrap());
        assert!(!root.exists());
        assert_eq!(
            std::fs::read(outside.join("keep/deeper/file")).unwrap(),
            b"mine"
        );
    }

    #[test]
    fn a_narrow_or_flat_tree_goes_too() {
        let base = tempfile::tempdir().unwrap();
        let outside = base.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        for (dirs, files) in [(0, 0), (1, 3), (2, 0)] {
            let root = base.path().join(format!("t{dirs}{files}"));
            std::fs::create_dir_all(&root).unwrap();
            tree(&root, &outside, dirs, files);
            assert!(super::super::remove_path(&root).unwrap());
            assert!(!root.exists(), "{dirs} × {files}");
        }
        assert!(outside.is_dir());
    }

    #[test]
    fn a_directory_no_one_may_read_is_emptied_as_well() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("trash");
        for d in 0..5 {
            std::fs::create_dir_all(root.join(format!("d{d}/locked"))).unwrap();
            std::fs::write(root.join(format!("d{d}/locked/f")), b"x").unwrap();
            let locked = root.join(format!("d{d}/locked"));
            std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
        }
        assert!(super::super::remove_path(&root).unwrap());
        assert!(!root.exists());
    }
}
