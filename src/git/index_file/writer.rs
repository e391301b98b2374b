//! An index written from another: the same entries (object ids, modes, flags, paths, in the
//! same order and index version) with the stat data of other files of the same content, and
//! the cache tree (`TREE`) kept, other extensions dropped (they describe the first index's
//! checkout: an untracked cache, a file system monitor's token, offsets). The trailer is the
//! hash of what precedes it, in the object format's algorithm.

use crate::git::index_file::reader::{ENTRY_STAT, IndexFile, trailer};

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

/// The stat data of a file, as an index entry stores it (each field cut to 32 bits, as git does).
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

    /// From a file's `stat` as the C library lays it out (its fields' types vary by target).
    #[allow(clippy::unnecessary_cast)]
    pub(crate) fn of_stat(stat: &rustix::fs::Stat) -> StatData {
        StatData {
            ctime: (stat.st_ctime as i64, stat.st_ctime_nsec as u32),
            mtime: (stat.st_mtime as i64, stat.st_mtime_nsec as u32),
            dev: stat.st_dev as u64,
            ino: stat.st_ino as u64,
            uid: stat.st_uid as u32,
            gid: stat.st_gid as u32,
            size: stat.st_size as u64,
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
        let entries_end = file.entries_end(&extensions);
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
        out.extend(trailer(&out, self.hash_len));
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::git::index_file::writer::*;

    use crate::git::testing::git;

    /// An index git wrote, rewritten with the stat data of copies of its files made elsewhere,
    /// is one git reads (its trailer checks out) and finds clean there; a gitlink makes it no
    /// template.
    #[test]
    fn an_index_restated_for_copies_is_clean_for_git_in_every_format() {
        let dir = tempfile::tempdir().unwrap();
        let (src, copy) = (dir.path().join("src"), dir.path().join("copy"));
        for format in ["sha1", "sha256"] {
            let _ = std::fs::remove_dir_all(&src);
            let _ = std::fs::remove_dir_all(&copy);
            std::fs::create_dir_all(src.join("d")).unwrap();
            git(&src, &["init", "-q", &format!("--object-format={format}")]);
            std::fs::write(src.join("a.txt"), "a\n").unwrap();
            std::fs::write(src.join("d/b.txt"), "b\n").unwrap();
            git(&src, &["add", "-A"]);
            git(&src, &["write-tree"]);
            let index = src.join(".git/index");
            let bytes = std::fs::read(&index).unwrap();
            let hash_len = if format == "sha1" { 20 } else { 32 };
            let template = Template::read(&bytes, hash_len).unwrap();
            // The copies, older than the index written after them.
            std::fs::create_dir_all(copy.join("d")).unwrap();
            let old = std::time::SystemTime::now() - std::time::Duration::from_secs(5);
            let stats: Vec<StatData> = template
                .entries
                .iter()
                .map(|e| {
                    let rel = std::str::from_utf8(&e.path).unwrap();
                    std::fs::copy(src.join(rel), copy.join(rel)).unwrap();
                    let file = std::fs::File::options()
                        .write(true)
                        .open(copy.join(rel))
                        .unwrap();
                    file.set_modified(old).unwrap();
                    StatData::of(&std::fs::symlink_metadata(copy.join(rel)).unwrap())
                })
                .collect();
            let written = template.restat(&stats);
            std::fs::write(&index, &written).unwrap();
            // git takes the copy as that index's work tree and trusts the stat data: a
            // same-size rewrite with the time set back is not even read when git compares
            // only times and sizes.
            std::fs::write(copy.join("a.txt"), "A\n").unwrap();
            let file = std::fs::File::options()
                .write(true)
                .open(copy.join("a.txt"))
                .unwrap();
            file.set_modified(old).unwrap();
            let diff = |check: &str, ctime: bool| {
                std::process::Command::new("git")
                    .current_dir(&copy)
                    .env("GIT_CONFIG_GLOBAL", "/dev/null")
                    .env("GIT_CONFIG_NOSYSTEM", "1")
                    .env("GIT_DIR", src.join(".git"))
                    .env("GIT_WORK_TREE", &copy)
                    .args(["-c", &format!("core.checkStat={check}")])
                    .args(["-c", &format!("core.trustctime={ctime}")])
                    .args(["diff-files", "--quiet"])
                    .status()
                    .unwrap()
                    .success()
            };
            assert!(
                diff("minimal", false),
                "{format}: git read a file it had the stat data of"
            );
            // The source's own index (the source's stat data) makes git read it, and see it.
            std::fs::write(&index, &bytes).unwrap();
            assert!(!diff("minimal", false), "{format}: the rewrite went unseen");
            std::fs::write(&index, &written).unwrap();
            let listed = git(&src, &["ls-files", "-s"]);
            assert_eq!(String::from_utf8_lossy(&listed).lines().count(), 2);
            // Stat data of the source's files is not the copies'.
            let a = StatData::of(&std::fs::symlink_metadata(src.join("a.txt")).unwrap());
            assert!(!a.matches(&written[12..12 + 40]), "{format}");
            assert!(stats[0].matches(&written[12..12 + 40]), "{format}");
            // A gitlink is no plain checkout's entry.
            let id = "1".repeat(hash_len * 2);
            git(
                &src,
                &[
                    "update-index",
                    "--add",
                    "--cacheinfo",
                    &format!("160000,{id},sub"),
                ],
            );
            assert!(Template::read(&std::fs::read(&index).unwrap(), hash_len).is_none());
        }
    }
}
