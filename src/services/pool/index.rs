//! a3s-iso's own index of a tree, read for its entries' paths, modes and stat data (the
//! cleaning's walk compares every file it finds with them) through git's index reader
//! (`git::index_file::entries_with_stat`); a split index, a sparse index or unmerged entries
//! are not read (the cleaning then treats no file as untouched).

use std::path::Path;

use crate::base::error::{Error, IoContext, Result};
use crate::git::index_file::{StatEntry, StatTime, entries_with_stat};

/// The entries of an index file and when it was written.
#[derive(Debug)]
pub(crate) struct Index {
    pub(crate) entries: Vec<StatEntry>,
    /// The index file's modification time: an entry whose mtime is not older is "racy" (a
    /// change in the same instant would not show in its stat data).
    pub(crate) written: StatTime,
}

/// When the index file at `path` was written.
pub(crate) fn written(path: &Path) -> Result<StatTime> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ctx(|| format!("cannot read {}", path.display()))?;
    Ok(StatTime {
        secs: meta.mtime() as u32,
        nanos: meta.mtime_nsec() as u32,
    })
}

/// Reads the index at `path` for a repository whose object ids have `id_len` bytes; `None`
/// for a form this reader does not take.
pub(crate) fn read(path: &Path, id_len: usize) -> Result<Option<Index>> {
    let bytes = std::fs::read(path).ctx(|| format!("cannot read {}", path.display()))?;
    let written = written(path)?;
    let bad = || Error::internal(format!("{} is not an index git wrote", path.display()));
    Ok(entries_with_stat(&bytes, id_len)
        .map_err(|_| bad())?
        .map(|entries| Index { entries, written }))
}

/// The entries that `git ls-files -s -z` lists, without stat data (so none looks untouched);
/// `None` when the listing is not one.
pub(crate) fn from_listing(listed: &[u8]) -> Option<Index> {
    let zero = StatTime { secs: 0, nanos: 0 };
    let entries = crate::git::split_nul(listed)
        .map(|record| {
            let tab = record.iter().position(|b| *b == b'\t')?;
            let mode = std::str::from_utf8(record.get(..6)?).ok()?;
            Some(StatEntry {
                path: record[tab + 1..].to_vec(),
                mode: u32::from_str_radix(mode, 8).ok()?,
                ctime: zero,
                mtime: zero,
                ino: 0,
                uid: 0,
                gid: 0,
                size: 0,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Index {
        entries,
        written: zero,
    })
}
