//! Small file-system helpers: atomic writes, time, emptiness checks.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

use crate::base::error::{IoContext, Result};

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A time in milliseconds since the epoch as its UTC calendar parts: year, month, day, hour,
/// minute, second (Howard Hinnant's civil-from-days algorithm).
pub fn utc_parts(ms: u64) -> [u64; 6] {
    let secs = ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    [year, month, day, rest / 3600, rest % 3600 / 60, rest % 60]
}

/// Milliseconds since the epoch as an RFC 3339 time in UTC (`2026-01-02T03:04:05Z`).
pub(crate) fn format_utc(ms: u64) -> String {
    let [year, month, day, hour, minute, second] = utc_parts(ms);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z")
}

pub(crate) use crate::base::beneath::unique_suffix;

/// The directory a file lives in; a bare file name (`cs.json`) lives in the current directory,
/// which `Path::parent` spells as an empty path that cannot be opened.
fn parent_dir(path: &Path) -> Result<&Path> {
    match path.parent() {
        Some(dir) if dir.as_os_str().is_empty() => Ok(Path::new(".")),
        Some(dir) => Ok(dir),
        None => Err(crate::base::error::Error::internal(format!(
            "{} has no parent",
            path.display()
        ))),
    }
}

/// How far an atomic write is synced before it returns. Every level renames a whole temporary
/// file into place, so a reader (and a killed process) sees the old file or the new, never part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sync {
    /// Nothing synced, as git writes its own index, `HEAD` and loose refs: a file of git's that
    /// a3s-iso writes in git's place is no more durable than git makes it.
    AsGit,
    /// The contents synced before the rename (a state file: a crash of the machine leaves the
    /// old file or the whole new one). On a journaling file system the rename is durable before
    /// any change made after it.
    Contents,
    /// The contents and then the directory synced: the new name is durable when this returns.
    /// For what recovery must find after a change it cannot undo otherwise (a promote's intent
    /// and journal, a purge's mark, a tree's removal).
    Durable,
}

/// Writes `bytes` to `path` atomically, its contents synced ([`Sync::Contents`]).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_synced(path, bytes, Sync::Contents)
}

/// Writes `bytes` to `path` atomically, synced as far as `sync` says.
pub(crate) fn write_synced(path: &Path, bytes: &[u8], sync: Sync) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    via_temp(path, &name, sync, |file| file.write_all(bytes))?
        .ctx(|| format!("cannot write {}", path.display()))
}

/// Copies the file at `from` to `path` atomically, streaming (never whole in memory).
pub fn copy_atomic(from: &Path, path: &Path) -> Result<()> {
    copy_synced(from, path, Sync::Contents)
}

/// [`copy_atomic`], synced as far as `sync` says.
pub(crate) fn copy_synced(from: &Path, path: &Path, sync: Sync) -> Result<()> {
    via_temp(path, "copy", sync, |file| {
        io::copy(&mut File::open(from)?, file).map(drop)
    })?
    .ctx(|| format!("cannot copy {} to {}", from.display(), path.display()))
}

/// A new temporary file `.<stem>.tmp-…` beside `path` (its directory created), written by
/// `fill`, renamed over `path`, synced as `sync` says; removed if any step fails.
fn via_temp(
    path: &Path,
    stem: &str,
    sync: Sync,
    fill: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<io::Result<()>> {
    let dir = parent_dir(path)?;
    fs::create_dir_all(dir).ctx(|| format!("cannot create {}", dir.display()))?;
    let tmp = dir.join(format!(".{stem}.tmp-{}", unique_suffix()));
    let result = (|| -> io::Result<()> {
        let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        fill(&mut file)?;
        if sync != Sync::AsGit {
            file.sync_all()?;
        }
        fs::rename(&tmp, path)?;
        match sync {
            Sync::Durable => File::open(dir)?.sync_all(),
            Sync::AsGit | Sync::Contents => Ok(()),
        }
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    Ok(result)
}

/// A file's identity and the marks every write leaves on it (device, inode, size, times): equal
/// stamps taken apart mean nothing wrote or replaced the file between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileStamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileStamp {
    /// Whether the two stamps are of the same file, whatever was written to it between.
    pub(crate) fn same_file(&self, other: &FileStamp) -> bool {
        (self.dev, self.ino) == (other.dev, other.ino)
    }

    /// The stamp of the file at `path` (a link is not followed).
    pub(crate) fn of(path: &Path) -> Result<FileStamp> {
        use std::os::unix::fs::MetadataExt;
        let meta = fs::symlink_metadata(path).ctx(|| format!("cannot read {}", path.display()))?;
        Ok(FileStamp {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        })
    }
}

/// Keeps the file at `from` as it is now at `path`: a second link to it where one can be made
/// (its bytes stay as they are while writers replace `from` by rename, as git writes its
/// index), else an atomic copy. The stamp of `from` once kept.
pub(crate) fn keep_as_is(from: &Path, path: &Path) -> Result<FileStamp> {
    let dir = parent_dir(path)?;
    fs::create_dir_all(dir).ctx(|| format!("cannot create {}", dir.display()))?;
    remove_file_if_exists(path)?;
    if fs::hard_link(from, path).is_ok() {
        return FileStamp::of(from);
    }
    let stamp = FileStamp::of(from)?;
    copy_atomic(from, path)?;
    Ok(stamp)
}

/// Serialises `value` as pretty JSON and writes it atomically.
pub(crate) fn write_json_atomic<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    write_atomic(path, &pretty_json(value)?)
}

/// [`write_json_atomic`], its directory synced too ([`Sync::Durable`]).
pub(crate) fn write_json_durable<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    write_synced(path, &pretty_json(value)?, Sync::Durable)
}

/// `value` as pretty JSON and a final newline.
fn pretty_json<T: serde::Serialize>(value: &T) -> Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(value)
        .map_err(|e| crate::base::error::Error::internal(format!("cannot serialise: {e}")))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Writes a record a3s-iso keeps on disk as `{"schema": "a3s-iso.<kind>.v1", ...value}`
/// (atomically). Readers accept a record without `schema`: older ones have none.
pub(crate) fn write_record_atomic<T: serde::Serialize>(
    path: &Path,
    schema: &str,
    value: &T,
) -> Result<()> {
    write_atomic(path, &record_bytes(schema, value)?)
}

/// [`write_record_atomic`], its directory synced too ([`Sync::Durable`]).
pub(crate) fn write_record_durable<T: serde::Serialize>(
    path: &Path,
    schema: &str,
    value: &T,
) -> Result<()> {
    write_synced(path, &record_bytes(schema, value)?, Sync::Durable)
}

/// The bytes [`write_record_atomic`] writes.
pub(crate) fn record_bytes<T: serde::Serialize>(schema: &str, value: &T) -> Result<Vec<u8>> {
    #[derive(serde::Serialize)]
    struct Tagged<'a, T: serde::Serialize> {
        schema: &'a str,
        #[serde(flatten)]
        body: &'a T,
    }
    pretty_json(&Tagged {
        schema,
        body: value,
    })
}

/// Reads a JSON file; `Ok(None)` when it does not exist.
pub(crate) fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    let bytes = match fs::read(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        read => read.ctx(|| format!("cannot read {}", path.display()))?,
    };
    serde_json::from_slice(&bytes).map(Some).map_err(|e| {
        crate::base::error::Error::io(
            format!("cannot parse {}", path.display()),
            io::Error::new(io::ErrorKind::InvalidData, e),
        )
    })
}

/// True when `dir` is a directory (not a symlink to one) with no entries.
pub(crate) fn is_empty_dir(dir: &Path) -> io::Result<bool> {
    Ok(fs::read_dir(dir)?.next().is_none())
}

/// Removes a file if present; absence is not an error.
pub(crate) fn remove_file_if_exists(path: &Path) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        removed => removed.ctx(|| format!("cannot remove {}", path.display())),
    }
}

/// A short stable hex name for a path, for file names derived from paths.
pub(crate) fn path_key(parts: &[&Path]) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_os_str().as_encoded_bytes());
        hasher.update([0u8]);
    }
    hex::encode(&hasher.finalize()[..8])
}

/// A path's modification time in milliseconds since the epoch (symlinks not followed).
pub(crate) fn modified_ms(path: &Path) -> Option<u64> {
    let modified = fs::symlink_metadata(path).ok()?.modified().ok()?;
    modified
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_millis() as u64)
}

/// The bytes of the regular files under `dir` (symlinks are not followed).
pub(crate) fn tree_size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() {
                total += meta.len();
            }
        }
    }
    total
}

/// The bytes of a small regular file that someone else may have planted: a symbolic link at
/// `path` (or at its directory) is not followed, a FIFO or device is not waited on, and more
/// than `limit` bytes is an error, so reading it can neither hang nor grow without bound.
pub(crate) fn read_small_regular_file(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        ));
    };
    let dir = Some(dir).filter(|d| !d.as_os_str().is_empty());
    crate::base::beneath::Dir::open(dir.unwrap_or(Path::new(".")))?
        .read_small(Path::new(name), limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `keep_as_is` keeps holds the bytes of then whatever replaces the original by
    /// rename; any write or replacement of the original changes its stamp.
    #[test]
    fn a_kept_file_keeps_its_bytes_and_a_stamp_sees_every_write() {
        let tmp = tempfile::tempdir().unwrap();
        let (from, kept) = (tmp.path().join("index"), tmp.path().join("saved/index"));
        fs::write(&from, b"before").unwrap();
        let stamp = keep_as_is(&from, &kept).unwrap();
        assert_eq!(FileStamp::of(&from).unwrap(), stamp);
        // Replaced by rename, as git writes its index: the kept bytes stay.
        let next = tmp.path().join("index.lock");
        fs::write(&next, b"after!").unwrap();
        fs::rename(&next, &from).unwrap();
        assert_eq!(fs::read(&kept).unwrap(), b"before");
        assert_ne!(FileStamp::of(&from).unwrap(), stamp);
        // Written in place, same size: the stamp still moves.
        let stamp = keep_as_is(&from, &kept).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(&from, b"AFTER!").unwrap();
        assert_ne!(FileStamp::of(&from).unwrap(), stamp);
        // Kept again over an older keep.
        let stamp = keep_as_is(&from, &kept).unwrap();
        assert_eq!(fs::read(&kept).unwrap(), b"AFTER!");
        assert_eq!(FileStamp::of(&from).unwrap(), stamp);
    }
}
