//! git's index file format, read in one place, and the indexes a3s-iso writes itself.
//! May call: base and the rest of git.
//!
//! git's index file format, read in one place (`reader`): whether an index is split (names a
//! shared index, `sharedindex.<id>` in the git dir, that holds most of its entries: such a
//! file cannot be copied alone, so a3s-iso keeps its own indexes whole), whether any entry is
//! marked skip-worktree (a sparse checkout's) or is a gitlink, so that the paths git needs to
//! look at again are listed only when there can be any (see `snapshot`); the entries of a
//! small index; every entry with its stat data (`entries_with_stat`, which the pool's cleaning
//! compares the files it finds with); (`recent`) the stat data a snapshot must not trust; and
//! (`edit`) a plain index with a few paths' entries set or removed, the rest kept with their
//! stat data.

pub(crate) mod edit;
pub(crate) mod reader;
pub(crate) mod recent;
pub(crate) mod writer;

use std::path::Path;

use crate::base::error::{IoContext, Result};
use reader::IndexFile;

/// The split index's extension.
const LINK: [u8; 4] = *b"link";

/// What an index file holds, as far as a3s-iso asks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Summary {
    /// It names a shared index.
    pub split: bool,
    /// Some entry is marked skip-worktree.
    pub skip_worktree: bool,
    /// Some entry is a gitlink (mode `160000`).
    pub gitlink: bool,
    /// The file was read as an index (otherwise nothing above is known).
    pub parsed: bool,
}

/// What the index at `path` holds. An index that cannot be read as one of git's (none at
/// all, an unknown version, a layout that does not fit) holds nothing of either. A `link`
/// extension of the null id names no shared index.
pub(crate) fn summary(path: &Path) -> Result<Summary> {
    if !std::fs::symlink_metadata(path).is_ok_and(|meta| meta.is_file()) {
        return Ok(Summary::default());
    }
    let bytes = std::fs::read(path).ctx(|| format!("cannot read {}", path.display()))?;
    Ok(summary_of(&bytes))
}

/// What the index `bytes` hold (see [`summary`]).
pub(crate) fn summary_of(bytes: &[u8]) -> Summary {
    let mut summary = Summary {
        parsed: true,
        ..Summary::default()
    };
    let Some((_, extensions)) = IndexFile::detect(bytes, |entry| {
        summary.skip_worktree |= entry.skip_worktree();
        summary.gitlink |= entry.gitlink();
    }) else {
        return Summary::default();
    };
    summary.split = extensions
        .iter()
        .any(|e| e.signature == LINK && e.data.iter().any(|b| *b != 0));
    summary
}

/// The tree `write-tree` would write for the index `bytes`, known without asking git: the id
/// its cache tree holds for the whole tree, when that node is valid, covers every entry, and
/// no entry is in conflict. `None` otherwise. Like git's `write-tree`, the caller still makes
/// sure the tree exists.
pub(crate) fn cached_tree(bytes: &[u8]) -> Option<String> {
    let (mut entries, mut staged) = (0usize, false);
    let (file, extensions) = IndexFile::detect(bytes, |entry| {
        entries += 1;
        staged |= entry.stage() != 0;
    })?;
    let tree = extensions.iter().find(|e| e.signature == *b"TREE")?;
    let (count, id) = edit::cached_root(tree.data, file.hash_len)?;
    (!staged && count == entries).then(|| hex::encode(id))
}

/// Whether the index at `path` is split.
pub(crate) fn is_split(path: &Path) -> Result<bool> {
    summary(path).map(|s| s.split)
}

/// One entry of an index: its mode, object id (hex) and path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Staged {
    pub mode: u32,
    pub id: String,
    pub path: Vec<u8>,
}

/// Every entry of the small index at `path`, read whole, its object ids `hash_len` bytes
/// long; `None` when it is not an index of version 2 to 4 or an entry is not at stage 0 (an
/// index a3s-iso itself wrote for a few paths, so that git need not be asked to list it); no
/// file is an empty index.
pub(crate) fn entries(path: &Path, hash_len: usize) -> Result<Option<Vec<Staged>>> {
    match std::fs::read(path) {
        // Git writes no index where nothing was ever staged.
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(Some(Vec::new())),
        read => Ok(parse_entries(
            &read.ctx(|| format!("cannot read {}", path.display()))?,
            hash_len,
        )),
    }
}

fn parse_entries(bytes: &[u8], hash_len: usize) -> Option<Vec<Staged>> {
    let mut entries = Vec::new();
    IndexFile::new(bytes, hash_len)?.walk(|entry| {
        entries.push(Staged {
            mode: entry.mode(),
            id: hex::encode(entry.id()),
            path: entry.path.to_vec(),
        });
        entry.stage() == 0
    })?;
    Some(entries)
}

/// A time as the index keeps it: seconds and nanoseconds, 32 bits each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct StatTime {
    pub(crate) secs: u32,
    pub(crate) nanos: u32,
}

/// One entry's path, mode and stat data.
#[derive(Debug, Clone)]
pub(crate) struct StatEntry {
    /// Its path, as the index spells it.
    pub(crate) path: Vec<u8>,
    /// `0o100644`, `0o100755`, `0o120000` (a link) or `0o160000` (a gitlink).
    pub(crate) mode: u32,
    pub(crate) ctime: StatTime,
    pub(crate) mtime: StatTime,
    pub(crate) ino: u32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    /// The size, truncated to 32 bits as git keeps it.
    pub(crate) size: u32,
}

/// Bytes that are not an index git wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NotAnIndex;

/// Every entry of the index `bytes` (object ids `hash_len` bytes long) with its stat data, in
/// the index's order; entries marked skip-worktree (a sparse checkout's paths outside its
/// patterns) are not in the tree and are left out. `Ok(None)` for a split or sparse index or
/// unmerged entries (or a version this does not read); `Err` for what is not an index at all.
pub(crate) fn entries_with_stat(
    bytes: &[u8],
    hash_len: usize,
) -> std::result::Result<Option<Vec<StatEntry>>, NotAnIndex> {
    if bytes.get(..4) != Some(b"DIRC".as_slice()) {
        return Err(NotAnIndex);
    }
    let Some(file) = IndexFile::new(bytes, hash_len) else {
        return Ok(None);
    };
    let time = |e: &reader::EntryView<'_>, n: usize| StatTime {
        secs: e.stat(n),
        nanos: e.stat(n + 1),
    };
    let mut entries = Vec::new();
    let mut takeable = true;
    let extensions = file.walk(|e| {
        // Unmerged, or a sparse index's directory entry.
        takeable = e.stage() == 0 && e.mode() != 0o040000;
        if takeable && !e.skip_worktree() {
            entries.push(StatEntry {
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
        return if takeable { Err(NotAnIndex) } else { Ok(None) };
    };
    let split_or_sparse = extensions
        .iter()
        .any(|e| e.signature == LINK || &e.signature == b"sdir");
    Ok((!split_or_sparse).then_some(entries))
}

#[cfg(test)]
mod tests {
    use crate::git::index_file::reader::SKIP_WORKTREE;
    use crate::git::index_file::*;

    /// An index of one entry named `name`, with the given extensions, ids of `hash_len` bytes.
    fn index(version: u32, hash_len: usize, name: &[u8], exts: &[(&[u8; 4], Vec<u8>)]) -> Vec<u8> {
        entry_index(version, hash_len, name, None, exts)
    }

    /// Like `index`, with extended flags on the entry (version 3 and later).
    fn entry_index(
        version: u32,
        hash_len: usize,
        name: &[u8],
        extended: Option<u16>,
        exts: &[(&[u8; 4], Vec<u8>)],
    ) -> Vec<u8> {
        let mut bytes = b"DIRC".to_vec();
        bytes.extend(version.to_be_bytes());
        bytes.extend(1u32.to_be_bytes());
        let start = bytes.len();
        bytes.extend([0u8; 40]);
        bytes.extend(vec![7u8; hash_len]);
        let flags = name.len() as u16 | if extended.is_some() { 0x4000 } else { 0 };
        bytes.extend(flags.to_be_bytes());
        let mut fixed = 40 + hash_len + 2;
        if let Some(extended) = extended {
            bytes.extend(extended.to_be_bytes());
            fixed += 2;
        }
        if version == 4 {
            bytes.push(0);
            bytes.extend(name);
            bytes.push(0);
        } else {
            bytes.extend(name);
            let entry = fixed + name.len();
            let padded = (entry + 8) & !7;
            bytes.extend(vec![0u8; padded - entry]);
            assert_eq!((bytes.len() - start) % 8, 0);
        }
        for (sig, data) in exts {
            bytes.extend(sig.iter());
            bytes.extend((data.len() as u32).to_be_bytes());
            bytes.extend(data);
        }
        bytes.extend(vec![0u8; hash_len]);
        bytes
    }

    fn summarise(bytes: &[u8]) -> Summary {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("index");
        std::fs::write(&path, bytes).unwrap();
        summary(&path).unwrap()
    }

    fn split(bytes: &[u8]) -> bool {
        summarise(bytes).split
    }

    #[test]
    fn tells_a_split_index_by_its_link_extension() {
        for version in [2, 3, 4] {
            for hash_len in [20, 32] {
                for name in [&b"a"[..], b"src/link.rs", b"exactly8"] {
                    let link = vec![9u8; hash_len + 8];
                    let tree = b"\0-1 0\n".to_vec();
                    let with = index(
                        version,
                        hash_len,
                        name,
                        &[(b"TREE", tree.clone()), (b"link", link)],
                    );
                    let without = index(version, hash_len, name, &[(b"TREE", tree)]);
                    assert!(split(&with), "v{version} {hash_len} {name:?}");
                    assert!(!split(&without), "v{version} {hash_len} {name:?}");
                }
            }
        }
        let null_link = index(2, 20, b"a", &[(b"link", vec![0u8; 28])]);
        assert!(!split(&null_link));
        assert!(!split(b"not an index"));
    }

    #[test]
    fn tells_skip_worktree_entries() {
        for version in [3, 4] {
            for hash_len in [20, 32] {
                for name in [&b"a"[..], b"docs/guide.txt", b"1234567"] {
                    let skip = entry_index(version, hash_len, name, Some(SKIP_WORKTREE), &[]);
                    let intent = entry_index(version, hash_len, name, Some(0x2000), &[]);
                    assert!(summarise(&skip).skip_worktree, "v{version} {name:?}");
                    assert!(!summarise(&intent).skip_worktree, "v{version} {name:?}");
                    assert!(!summarise(&intent).split);
                }
            }
        }
        assert!(!summarise(&index(2, 20, b"a", &[])).skip_worktree);
    }

    #[test]
    fn reads_the_entries_git_wrote_in_every_index_version() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| crate::git::testing::git(dir.path(), args);
        git(&["init", "-q"]);
        let names = [
            "a",
            "dir/deep/file.txt",
            "dir/deep/file2.txt",
            "dir/x",
            "long-name-1234",
        ];
        for name in names {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, name).unwrap();
        }
        git(&["add", "-A"]);
        git(&["update-index", "--chmod=+x", "a"]);
        let index = dir.path().join(".git/index");
        let hash_len = match std::env::var("GIT_DEFAULT_HASH").as_deref() {
            Ok("sha256") => 32,
            _ => 20,
        };
        for version in ["2", "3", "4"] {
            git(&["update-index", "--index-version", version]);
            let listed = git(&["ls-files", "-s", "-z"]);
            let expected: Vec<Staged> = listed
                .split(|b| *b == 0)
                .filter(|r| !r.is_empty())
                .map(|r| {
                    let tab = r.iter().position(|b| *b == b'\t').unwrap();
                    let head = std::str::from_utf8(&r[..tab]).unwrap();
                    let mut fields = head.split(' ');
                    Staged {
                        mode: u32::from_str_radix(fields.next().unwrap(), 8).unwrap(),
                        id: fields.next().unwrap().to_string(),
                        path: r[tab + 1..].to_vec(),
                    }
                })
                .collect();
            assert_eq!(
                entries(&index, hash_len).unwrap().unwrap(),
                expected,
                "v{version}"
            );
        }
        assert!(parse_entries(b"not an index", 20).is_none());
    }

    #[test]
    fn every_version_reads_the_same_entries_with_their_stat_data() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let git = |args: &[&str]| crate::git::testing::git(dir, args);
        git(&["init", "-q", "--object-format=sha1"]);
        for (path, body) in [("a.txt", "a"), ("dir/b.txt", "bb"), ("dir/sub/c", "ccc")] {
            let file = dir.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, body).unwrap();
        }
        std::os::unix::fs::symlink("a.txt", dir.join("link")).unwrap();
        git(&["add", "-A"]);
        let mut seen = Vec::new();
        for version in ["2", "3", "4"] {
            git(&["update-index", "--index-version", version]);
            let bytes = std::fs::read(dir.join(".git/index")).unwrap();
            let entries = entries_with_stat(&bytes, 20).unwrap().unwrap();
            let listed: Vec<(String, u32, u32, StatTime)> = entries
                .iter()
                .map(|e| {
                    let path = String::from_utf8_lossy(&e.path).into_owned();
                    (path, e.mode, e.size, e.mtime)
                })
                .collect();
            seen.push(listed);
        }
        assert_eq!(seen[0], seen[1]);
        assert_eq!(seen[0], seen[2]);
        let kept: Vec<(&str, u32, u32)> = seen[0]
            .iter()
            .map(|(path, mode, size, _)| (path.as_str(), *mode, *size))
            .collect();
        assert_eq!(
            kept,
            [
                ("a.txt", 0o100644, 1),
                ("dir/b.txt", 0o100644, 2),
                ("dir/sub/c", 0o100644, 3),
                ("link", 0o120000, 5),
            ]
        );
        // The stat data is the file's own, as git recorded it.
        let meta = std::fs::symlink_metadata(dir.join("dir/sub/c")).unwrap();
        let c = &entries_with_stat(&std::fs::read(dir.join(".git/index")).unwrap(), 20)
            .unwrap()
            .unwrap()[2];
        use std::os::unix::fs::MetadataExt;
        assert_eq!(c.mtime.secs, meta.mtime() as u32);
        assert_eq!(c.ino, meta.ino() as u32);
        assert_eq!(
            entries_with_stat(b"not an index", 20).unwrap_err(),
            NotAnIndex
        );
    }

    #[test]
    fn tells_gitlinks_from_their_mode_and_knows_when_it_read_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| crate::git::testing::git(dir.path(), args);
        git(&["init", "-q"]);
        std::fs::write(dir.path().join("f"), "x").unwrap();
        git(&["add", "f"]);
        let index = dir.path().join(".git/index");
        let plain = summary(&index).unwrap();
        assert!(plain.parsed && !plain.gitlink);
        let id = "1111111111111111111111111111111111111111";
        let id = match std::env::var("GIT_DEFAULT_HASH").as_deref() {
            Ok("sha256") => id.repeat(2)[..64].to_string(),
            _ => id.to_string(),
        };
        git(&[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{id},sub"),
        ]);
        assert!(summary(&index).unwrap().gitlink);
        assert!(!summarise(b"not an index").parsed);
    }
}
