//! An index written from another: the same entries (object ids, modes, flags, paths, in the
//! same order and index version) with the stat data of other files of the same content, and
//! the cache tree (`TREE`) kept, other extensions dropped (they describe the first index's
//! checkout: an untracked cache, a file system monitor's token, offsets). The trailer is the
//! hash of what precedes it, in the object format's algorithm.

use sha1::Digest;

use crate::git::index_file::reader::{ENTRY_STAT, IndexFile};

/// The cache tree's extension.
const TREE: [u8; 4] = *b"TREE";

/// One entry of an index as [`restat`] offers it: its path and mode.
pub(crate) struct Listed {
    /// Its offset in the file.
    start: usize,
    pub path: Vec<u8>,
    pub mode: u32,
}

/// An index read for rewriting: its entries, where they end, and its cache tree.
pub(crate) struct Template<'a> {
    bytes: &'a [u8],
    hash_len: usize,
    pub entries: Vec<Listed>,
    entries_end: usize,
    tree: Option<&'a [u8]>,
}

/// The stat data of a file, as an index entry stores it (each field cut to 32 bits, as git
/// does).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StatData {
    pub ctime: (i64, u32),
    pub mtime: (i64, u32),
    pub dev: u64,
    pub ino: u64,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
}

impl StatData {
    /// From a file's metadata (`lstat`).
    pub(crate) fn of(meta: &std::fs::Metadata) -> StatData {
        use std::os::unix::fs::MetadataExt;
        StatData {
            ctime: (meta.ctime(), meta.ctime_nsec() as u32),
            mtime: (meta.mtime(), meta.mtime_nsec() as u32),
            dev: meta.dev(),
            ino: meta.ino(),
            uid: meta.uid(),
            gid: meta.gid(),
            size: meta.size(),
        }
    }

    /// Whether an entry's stored stat data is this (its mode field aside).
    pub(crate) fn matches(&self, stored: &[u8]) -> bool {
        let mut mine = [0u8; ENTRY_STAT];
        self.encode(&mut mine, 0);
        mine[..24] == stored[..24] && mine[28..] == stored[28..ENTRY_STAT]
    }

    /// Writes the fields into `out` (40 bytes), `mode` in its place.
    fn encode(&self, out: &mut [u8], mode: u32) {
        let fields = [
            self.ctime.0 as u32,
            self.ctime.1,
            self.mtime.0 as u32,
            self.mtime.1,
            self.dev as u32,
            self.ino as u32,
            mode,
            self.uid,
            self.gid,
            self.size as u32,
        ];
        for (n, field) in fields.iter().enumerate() {
            out[n * 4..n * 4 + 4].copy_from_slice(&field.to_be_bytes());
        }
    }
}

impl<'a> Template<'a> {
    /// `bytes` as an index whose object ids are `hash_len` bytes long; `None` unless every
    /// entry is a merged (stage 0) file or link that is not skip-worktree: an index with
    /// conflicts, a sparse checkout's or one with gitlinks is not a plain checkout's.
    pub(crate) fn read(bytes: &'a [u8], hash_len: usize) -> Option<Template<'a>> {
        let file = IndexFile::new(bytes, hash_len)?;
        let mut entries = Vec::new();
        let extensions = file.walk(|entry| {
            let kind = entry.mode() & 0o170000;
            entries.push(Listed {
                start: entry.start,
                path: entry.path.to_vec(),
                mode: entry.mode(),
            });
            entry.stage() == 0 && !entry.skip_worktree() && (kind == 0o100000 || kind == 0o120000)
        })?;
        let entries_end = extensions
            .first()
            .map_or(bytes.len() - hash_len, |e| e.start);
        let tree = extensions
            .iter()
            .find(|e| e.signature == TREE)
            .map(|e| &bytes[e.start..e.end()]);
        Some(Template {
            bytes,
            hash_len,
            entries,
            entries_end,
            tree,
        })
    }

    /// The stored stat data of entry `n`.
    pub(crate) fn stored_stat(&self, n: usize) -> &[u8] {
        let start = self.entries[n].start;
        &self.bytes[start..start + ENTRY_STAT]
    }

    /// The index with entry `n`'s stat data replaced by `stats[n]` (one for each entry).
    pub(crate) fn restat(&self, stats: &[StatData]) -> Vec<u8> {
        let mut out = self.bytes[..self.entries_end].to_vec();
        for (entry, stat) in self.entries.iter().zip(stats) {
            let at = entry.start;
            stat.encode(&mut out[at..at + ENTRY_STAT], entry.mode);
        }
        if let Some(tree) = self.tree {
            out.extend_from_slice(tree);
        }
        let trailer: Vec<u8> = match self.hash_len {
            32 => sha2::Sha256::digest(&out).to_vec(),
            _ => sha1::Sha1::digest(&out).to_vec(),
        };
        out.extend_from_slice(&trailer);
        out
    }
}
