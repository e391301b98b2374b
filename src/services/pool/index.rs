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

/// The entries, `Ok(None)` for a split or sparse index or unmerged entries.
fn parse(bytes: &[u8], id_len: usize) -> std::result::Result<Option<Vec<Entry>>, ()> {
    let mut r = Reader { bytes, at: 0 };
    if r.take(4)? != b"DIRC" {
        return Err(());
    }
    let version = r.u32()?;
    if !(2..=4).contains(&version) {
        return Ok(None);
    }
    let count = r.u32()? as usize;
    let mut entries = Vec::with_capacity(count);
    let mut previous: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = r.at;
        let (ctime, mtime) = (r.time()?, r.time()?);
        let _dev = r.u32()?;
        let (ino, mode, uid, gid, size) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?, r.u32()?);
        r.take(id_len)?;
        let flags = r.u16()?;
        // Skip-worktree (a sparse checkout's path outside its patterns): not in the tree.
        let skip_worktree = flags & 0x4000 != 0 && r.u16()? & 0x4000 != 0;
        if (flags >> 12) & 3 != 0 || mode == 0o040000 {
            // Unmerged, or a sparse index's directory entry.
            return Ok(None);
        }
        let path = if version == 4 {
            let strip = r.varint()?;
            let keep = previous.len().checked_sub(strip).ok_or(())?;
            let mut path = previous[..keep].to_vec();
            path.extend_from_slice(r.until_nul()?);
            path
        } else {
            let name = r.until_nul()?.to_vec();
            // Entries are padded with NULs to a multiple of eight bytes.
            let len = r.at - start;
            r.take((8 - len % 8) % 8)?;
            name
        };
        previous.clone_from(&path);
        if skip_worktree {
            continue;
        }
        entries.push(Entry {
            path,
            mode,
            ctime,
            mtime,
            ino,
            uid,
            gid,
            size,
        });
    }
    // Extensions, up to the trailing checksum.
    while r.bytes.len() - r.at > id_len {
        let signature = r.take(4)?;
        if signature == b"link" || signature == b"sdir" {
            return Ok(None);
        }
        let len = r.u32()? as usize;
        r.take(len)?;
    }
    Ok(Some(entries))
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> std::result::Result<&'a [u8], ()> {
        let end = self.at.checked_add(n).ok_or(())?;
        let slice = self.bytes.get(self.at..end).ok_or(())?;
        self.at = end;
        Ok(slice)
    }

    fn u32(&mut self) -> std::result::Result<u32, ()> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u16(&mut self) -> std::result::Result<u16, ()> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn time(&mut self) -> std::result::Result<Time, ()> {
        Ok(Time {
            secs: self.u32()?,
            nanos: self.u32()?,
        })
    }

    fn until_nul(&mut self) -> std::result::Result<&'a [u8], ()> {
        let rest = self.bytes.get(self.at..).ok_or(())?;
        let len = rest.iter().position(|b| *b == 0).ok_or(())?;
        self.at += len + 1;
        Ok(&rest[..len])
    }

    /// Git's offset varint (index version 4's prefix lengths).
    fn varint(&mut self) -> std::result::Result<usize, ()> {
        let mut byte = self.take(1)?[0];
        let mut value = usize::from(byte & 0x7f);
        while byte & 0x80 != 0 {
            byte = self.take(1)?[0];
            value = value
                .checked_add(1)
                .and_then(|v| v.checked_mul(128))
                .and_then(|v| v.checked_add(usize::from(byte & 0x7f)))
                .ok_or(())?;
        }
        Ok(value)
    }
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
