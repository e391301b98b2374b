//! a3s-iso's own index of a tree, read for its entries' paths, modes and stat data (the
//! cleaning's walk compares every file it finds with them). Versions 2, 3 and 4 of git's index
//! format; a split index, a sparse index or unmerged entries are not read (the cleaning then
//! treats no file as untouched).

use std::path::Path;

use crate::base::error::{Error, IoContext, Result};

/// A time as the index keeps it: seconds and nanoseconds, 32 bits each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Time {
    pub(crate) secs: u32,
    pub(crate) nanos: u32,
}

/// One entry's stat data and mode.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// Its path, as the index spells it.
    pub(crate) path: Vec<u8>,
    /// `0o100644`, `0o100755`, `0o120000` (a link) or `0o160000` (a gitlink).
    pub(crate) mode: u32,
    pub(crate) ctime: Time,
    pub(crate) mtime: Time,
    pub(crate) ino: u32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    /// The size, truncated to 32 bits as git keeps it.
    pub(crate) size: u32,
}

/// The entries of an index file and when it was written.
#[derive(Debug)]
pub(crate) struct Index {
    pub(crate) entries: Vec<Entry>,
    /// The index file's modification time: an entry whose mtime is not older is "racy" (a
    /// change in the same instant would not show in its stat data).
    pub(crate) written: Time,
}

/// When the index file at `path` was written.
pub(crate) fn written(path: &Path) -> Result<Time> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ctx(|| format!("cannot read {}", path.display()))?;
    Ok(Time {
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
    Ok(parse(&bytes, id_len)
        .map_err(|()| bad())?
        .map(|entries| Index { entries, written }))
}

/// The entries that `git ls-files -s -z` lists, without stat data (so none looks untouched);
/// `None` when the listing is not one.
pub(crate) fn from_listing(listed: &[u8]) -> Option<Index> {
    let zero = Time { secs: 0, nanos: 0 };
    let entries = crate::git::split_nul(listed)
        .map(|record| {
            let tab = record.iter().position(|b| *b == b'\t')?;
            let mode = std::str::from_utf8(record.get(..6)?).ok()?;
            Some(Entry {
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

/// The entries, `Ok(None)` for a split or sparse index or unmerged entries (or a version this
/// does not read); `Err` for what is not an index at all.
fn parse(bytes: &[u8], id_len: usize) -> std::result::Result<Option<Vec<Entry>>, ()> {
    use crate::git::index_file::reader::IndexFile;
    if bytes.get(..4) != Some(b"DIRC".as_slice()) {
        return Err(());
    }
    let Some(file) = IndexFile::new(bytes, id_len) else {
        return Ok(None);
    };
    let time = |e: &crate::git::index_file::reader::EntryView<'_>, n: usize| Time {
        secs: e.stat(n),
        nanos: e.stat(n + 1),
    };
    let mut entries = Vec::new();
    let mut takeable = true;
    let extensions = file.walk(|e| {
        // Unmerged, or a sparse index's directory entry.
        takeable = e.stage() == 0 && e.mode() != 0o040000;
        // Skip-worktree (a sparse checkout's path outside its patterns): not in the tree.
        if takeable && !e.skip_worktree() {
            entries.push(Entry {
                path: e.path.to_vec(),
                mode: e.mode(),
                ctime: time(e, 0),
                mtime: time(e, 2),
                ino: e.stat(5),
                uid: e.stat(7),
                gid: e.stat(8),
                size: e.stat(9),
            });
        }
        takeable
    });
    let Some(extensions) = extensions else {
        return if takeable { Err(()) } else { Ok(None) };
    };
    let split_or_sparse = extensions
        .iter()
        .any(|e| &e.signature == b"link" || &e.signature == b"sdir");
    Ok((!split_or_sparse).then_some(entries))
}

#[cfg(test)]
mod tests {
    use crate::services::pool::index::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let status = Command::new("git")
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .args(args)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    }

    #[test]
    fn every_version_reads_the_same_entries() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q", "--object-format=sha1"]);
        for (path, body) in [("a.txt", "a"), ("dir/b.txt", "bb"), ("dir/sub/c", "ccc")] {
            let file = dir.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, body).unwrap();
        }
        std::os::unix::fs::symlink("a.txt", dir.join("link")).unwrap();
        git(dir, &["add", "-A"]);
        let mut seen = Vec::new();
        for version in ["2", "3", "4"] {
            git(dir, &["update-index", "--index-version", version]);
            let index = read(&dir.join(".git/index"), 20).unwrap().unwrap();
            let listed: Vec<(String, u32, u32)> = index
                .entries
                .iter()
                .map(|e| {
                    (
                        String::from_utf8_lossy(&e.path).into_owned(),
                        e.mode,
                        e.size,
                    )
                })
                .collect();
            seen.push(listed);
        }
        assert_eq!(seen[0], seen[1]);
        assert_eq!(seen[0], seen[2]);
        assert_eq!(
            seen[0],
            vec![
                ("a.txt".to_string(), 0o100644, 1),
                ("dir/b.txt".to_string(), 0o100644, 2),
                ("dir/sub/c".to_string(), 0o100644, 3),
                ("link".to_string(), 0o120000, 5),
            ]
        );
    }
}
