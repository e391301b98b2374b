//! Just enough of git's index file format to tell whether an index is split (names a shared
//! index, `sharedindex.<id>` in the git dir, that holds most of its entries: such a file
//! cannot be copied alone, so a3s-iso keeps its own indexes whole) and whether any entry is
//! marked skip-worktree (a sparse checkout's), so that the paths git needs to look at again
//! are listed only when there can be any (see `snapshot`).
//!
//! The layout (git's `gitformat-index`): a 12-byte header (`DIRC`, version 2 to 4, entry
//! count), the entries, the extensions (a 4-byte signature and a 4-byte big-endian size each),
//! and a trailing hash of the object format's length. The `link` extension names the shared
//! index. The hash length is not recorded in the file: a layout that ends exactly at the
//! trailer is looked for with SHA-1's length, then SHA-256's.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use crate::base::error::{IoContext, Result};

/// The split index's extension.
const LINK: [u8; 4] = *b"link";

/// The skip-worktree bit of an entry's extended flags (`CE_SKIP_WORKTREE >> 16`).
const SKIP_WORKTREE: u16 = 0x4000;

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
/// all, an unknown version) holds nothing of either.
pub(crate) fn summary(path: &Path) -> Result<Summary> {
    let len = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => meta.len(),
        _ => return Ok(Summary::default()),
    };
    for hash_len in [20, 32] {
        let file = File::open(path).ctx(|| format!("cannot open {}", path.display()))?;
        if let Some(summary) = read(BufReader::new(file), len, hash_len) {
            return Ok(summary);
        }
    }
    Ok(Summary::default())
}

/// Whether the index at `path` is split.
pub(crate) fn is_split(path: &Path) -> Result<bool> {
    summary(path).map(|s| s.split)
}

/// The summary of an index of `len` bytes read with `hash_len`-byte object ids; `None` when
/// the layout does not fit. A `link` extension of the null id names no shared index.
fn read(mut r: impl BufRead, len: u64, hash_len: u64) -> Option<Summary> {
    let mut header = [0u8; 12];
    r.read_exact(&mut header).ok()?;
    if &header[..4] != b"DIRC" {
        return None;
    }
    let version = u32::from_be_bytes(header[4..8].try_into().ok()?);
    let count = u32::from_be_bytes(header[8..12].try_into().ok()?);
    if !(2..=4).contains(&version) {
        return None;
    }
    let mut at = 12u64;
    let mut summary = Summary {
        parsed: true,
        ..Summary::default()
    };
    for _ in 0..count {
        let (size, skip, gitlink) = skip_entry(&mut r, version, hash_len)?;
        at += size;
        summary.skip_worktree |= skip;
        summary.gitlink |= gitlink;
        if at > len {
            return None;
        }
    }
    while at + hash_len < len {
        let mut head = [0u8; 8];
        r.read_exact(&mut head).ok()?;
        let size = u64::from(u32::from_be_bytes(head[4..8].try_into().ok()?));
        at += 8 + size;
        if at + hash_len > len {
            return None;
        }
        let mut data = vec![0u8; size.min(hash_len) as usize];
        r.read_exact(&mut data).ok()?;
        std::io::copy(
            &mut (&mut r).take(size - data.len() as u64),
            &mut std::io::sink(),
        )
        .ok()?;
        summary.split |= head[..4] == LINK && data.iter().any(|b| *b != 0);
    }
    (at + hash_len == len).then_some(summary)
}

/// Reads past one entry; returns its size on disk, whether it is marked skip-worktree and
/// whether it is a gitlink.
fn skip_entry(r: &mut impl BufRead, version: u32, hash_len: u64) -> Option<(u64, bool, bool)> {
    // Ten 32-bit stat fields, the object id, 16 bits of flags.
    let fixed = 40 + hash_len + 2;
    let mut head = vec![0u8; fixed as usize];
    r.read_exact(&mut head).ok()?;
    let flags = u16::from_be_bytes(head[head.len() - 2..].try_into().ok()?);
    // The seventh stat field is the mode.
    let mode = u32::from_be_bytes(head[24..28].try_into().ok()?);
    let gitlink = mode & 0o170000 == 0o160000;
    let mut size = fixed;
    let mut skip = false;
    // The extended bit of the flags: 16 more bits of flags follow (version 3 and later).
    if version >= 3 && flags & 0x4000 != 0 {
        let mut extended = [0u8; 2];
        r.read_exact(&mut extended).ok()?;
        skip = u16::from_be_bytes(extended) & SKIP_WORKTREE != 0;
        size += 2;
    }
    if version == 4 {
        // A varint (how much of the previous name to drop), then the rest of the name.
        loop {
            let mut byte = [0u8; 1];
            r.read_exact(&mut byte).ok()?;
            size += 1;
            if byte[0] & 0x80 == 0 {
                break;
            }
        }
        size += read_name(r)?;
        return Some((size, skip, gitlink));
    }
    // The name and 1 to 8 NULs, padding the entry to a multiple of eight bytes.
    let with_nul = read_name(r)?;
    let padded = (size + with_nul - 1 + 8) & !7;
    let rest = padded.checked_sub(size + with_nul)?;
    std::io::copy(&mut r.take(rest), &mut std::io::sink()).ok()?;
    Some((padded, skip, gitlink))
}

/// Reads a NUL-terminated name; returns its length with the NUL.
fn read_name(r: &mut impl BufRead) -> Option<u64> {
    let mut name = Vec::new();
    r.read_until(0, &mut name).ok()?;
    (name.last() == Some(&0)).then_some(name.len() as u64)
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
    let be32 = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    if bytes.get(..4)? != b"DIRC" || !(2..=4).contains(&be32(4)?) {
        return None;
    }
    let (version, count) = (be32(4)?, be32(8)?);
    let mut at = 12;
    let mut entries: Vec<Staged> = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let start = at;
        let mode = be32(at + 24)?;
        let id = hex::encode(bytes.get(at + 40..at + 40 + hash_len)?);
        at += 40 + hash_len;
        let flags = u16::from_be_bytes(bytes.get(at..at + 2)?.try_into().ok()?);
        at += 2;
        if flags & 0x3000 != 0 {
            return None;
        }
        if version >= 3 && flags & 0x4000 != 0 {
            at += 2;
        }
        let path = match version {
            4 => {
                let (strip, used) = decode_varint(bytes.get(at..)?)?;
                at += used;
                let previous = entries.last().map_or(&[][..], |e| e.path.as_slice());
                let kept = previous.len().checked_sub(strip as usize)?;
                let nul = bytes.get(at..)?.iter().position(|b| *b == 0)?;
                let path = [&previous[..kept], &bytes[at..at + nul]].concat();
                at += nul + 1;
                path
            }
            _ => {
                let nul = bytes.get(at..)?.iter().position(|b| *b == 0)?;
                let path = bytes[at..at + nul].to_vec();
                // The name and 1 to 8 NULs, padding the entry to a multiple of eight bytes.
                at = start + ((at + nul - start + 8) & !7);
                path
            }
        };
        entries.push(Staged { mode, id, path });
    }
    Some(entries)
}

/// Git's variable-length integer of index version 4 (each continuation adds one before the
/// shift); the value and how many bytes it took.
pub(crate) fn decode_varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut used = 0;
    let mut byte = *bytes.get(used)?;
    used += 1;
    let mut value = u64::from(byte & 127);
    while byte & 128 != 0 {
        value = value.checked_add(1)?.checked_mul(128)?;
        byte = *bytes.get(used)?;
        used += 1;
        value += u64::from(byte & 127);
    }
    Some((value, used))
}

#[cfg(test)]
mod tests {
    use crate::base::indexfile::*;

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
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .current_dir(dir.path())
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            out.stdout
        };
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
    fn tells_gitlinks_from_their_mode_and_knows_when_it_read_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .current_dir(dir.path())
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
        };
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
