//! Copy-on-write file clones (`FICLONE`: a clone shares the original's blocks until either is
//! written) and what a tree of clones costs on disk: its size and the extents it holds alone.

use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use serde::{Deserialize, Serialize};

/// How a new isolation's files were made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fill {
    /// Cloned from a pristine tree of the bound revision: they share its blocks.
    Clone,
    /// Checked out by git (or a spare of the pool moved to the revision): blocks of their own.
    Checkout,
}

/// Clones the regular file `from` to the new file `to`, made with `mode` (before the umask);
/// where the file system cannot clone, fails and leaves no file at `to`.
pub fn clone_new(from: &Path, to: &Path, mode: u32) -> io::Result<File> {
    let src = File::open(from)?;
    let dst = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(to)?;
    if let Err(err) = rustix::fs::ioctl_ficlone(&dst, &src) {
        drop(dst);
        let _ = fs::remove_file(to);
        return Err(err.into());
    }
    Ok(dst)
}

/// What a tree costs on disk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DiskUse {
    /// The sum of its files' sizes, as `du --apparent-size` counts them.
    pub apparent_bytes: u64,
    /// The blocks its files have allocated, shared or not (data stored inline with the file
    /// system's metadata counted at its size).
    pub allocated_bytes: u64,
    /// The bytes of its files' extents that no other file shares: what removing the tree
    /// would give back (where the file system has no extent map, the blocks allocated).
    pub own_bytes: u64,
    /// How many files (and symbolic links) it holds.
    pub files: u64,
}

impl DiskUse {
    /// Adds another tree's figures.
    pub fn add(&mut self, other: DiskUse) {
        self.apparent_bytes += other.apparent_bytes;
        self.allocated_bytes += other.allocated_bytes;
        self.own_bytes += other.own_bytes;
        self.files += other.files;
    }
}

/// What the tree at `dir` costs: every regular file and link beneath it, on its file system.
pub fn disk_use(dir: &Path) -> io::Result<DiskUse> {
    let top = fs::symlink_metadata(dir)?;
    let mut total = DiskUse::default();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        for entry in fs::read_dir(&at)? {
            let entry = entry?;
            let meta = entry.metadata()?;
            if meta.dev() != top.dev() {
                continue;
            }
            if meta.is_dir() {
                pending.push(entry.path());
            } else if meta.is_file() {
                total.add(file_use(&entry.path(), &meta));
            } else if meta.file_type().is_symlink() {
                total.add(DiskUse {
                    apparent_bytes: meta.len(),
                    allocated_bytes: meta.blocks() * 512,
                    own_bytes: meta.blocks() * 512,
                    files: 1,
                });
            }
        }
    }
    Ok(total)
}

/// One regular file's figures: its unshared extents (data stored inline with the file
/// system's metadata, as btrfs keeps small files, counted at its size: it is never shared),
/// else its allocated blocks.
fn file_use(path: &Path, meta: &fs::Metadata) -> DiskUse {
    let blocks = meta.blocks() * 512;
    let (allocated, own) = File::open(path)
        .and_then(|file| a3s_iso_sandbox::extent_bytes(&file))
        .map_or((blocks, blocks), |map| {
            let inline = if map.inline { meta.len() } else { 0 };
            (
                map.blocks + inline,
                map.blocks - map.shared.min(map.blocks) + inline,
            )
        });
    DiskUse {
        apparent_bytes: meta.len(),
        allocated_bytes: allocated,
        own_bytes: own,
        files: 1,
    }
}
