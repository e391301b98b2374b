//! A large tree removed by several threads at once: unlinking is mostly waiting on the file
//! system's metadata, and the file systems a3s-iso runs on unlink in different directories at
//! the same time. Each thread takes whole subtrees and removes them with the function it is
//! given, beneath the handle of the directory holding them; directories are opened here
//! without following a link.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// How many threads remove at once.
const REMOVERS: usize = 4;

/// Enough subtrees that the threads share the work evenly.
const UNITS_WANTED: usize = 4 * REMOVERS;

/// How many levels down the tree is split into subtrees at most.
const SPLIT_DEPTH: usize = 2;

/// A subtree to remove: the directory `name` of the directory `parent`.
type Unit = (Arc<OwnedFd>, OsString);

/// What removes one subtree: the directory `name` of `parent`, with everything in it.
pub(super) type RemoveSubtree = dyn Fn(BorrowedFd<'_>, &OsStr) -> io::Result<bool> + Sync;

/// Removes the subdirectories of the directory `name` of `parent` in parallel with `remove`;
/// its files and the emptied directories are left for the caller.
pub(super) fn in_parallel(
    parent: BorrowedFd<'_>,
    name: &OsStr,
    remove: &RemoveSubtree,
) -> io::Result<()> {
    let Some(root) = open_dir(parent, name) else {
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
                    if let Err(err) = remove(dir.as_fd(), name) {
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

/// The directory `name` of `dir`, never through a link; `None` when it is not one (or cannot
/// be read: the serial removal after this deals with it).
fn open_dir(dir: BorrowedFd<'_>, name: &OsStr) -> Option<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rustix::fs::openat(dir, name, flags, Mode::empty()).ok()
}

/// The subtrees of `root`: its subdirectories, each split into its own while there are too
/// few to share.
fn split(root: Arc<OwnedFd>) -> io::Result<Vec<Unit>> {
    let mut units = subdirectories(&root)?;
    for _ in 1..SPLIT_DEPTH {
        if units.len() >= UNITS_WANTED {
            break;
        }
        let mut deeper = Vec::new();
        for (parent, name) in units {
            let below = match open_dir(parent.as_fd(), &name) {
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

/// The directories directly in `dir` (as its listing says; a link is never one), as subtrees.
fn subdirectories(dir: &Arc<OwnedFd>) -> io::Result<Vec<Unit>> {
    let mut stream = rustix::fs::Dir::read_from(dir.as_fd())?;
    let mut out = Vec::new();
    while let Some(entry) = stream.read() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        let is_dir = match entry.file_type() {
            FileType::Directory => true,
            FileType::Unknown => {
                rustix::fs::statat(dir.as_fd(), entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Directory)
            }
            _ => false,
        };
        if is_dir && name != b"." && name != b".." {
            use std::os::unix::ffi::OsStrExt;
            out.push((Arc::clone(dir), OsStr::from_bytes(name).to_os_string()));
        }
    }
    Ok(out)
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
