//! OS file locks (flock): the repository lock and a run's session lease. The kernel releases them
//! when their holder dies, so they cannot go stale.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustix::fs::{FlockOperation, flock};

use crate::base::error::{Error, IoContext, Result};
use crate::base::fsutil::{format_utc, now_ms};
use crate::base::owner::hostname;

/// A held exclusive lock; released on drop (or by the kernel if the process dies).
#[derive(Debug)]
pub struct FileLock {
    file: File,
    path: PathBuf,
    /// Lent by a [`KeptLock`] of this process: dropping it releases nothing.
    lent: bool,
}

/// A lock this process keeps across steps that each take it again (a land queue keeps the
/// lease of the session it snapshotted ahead until that session's landing ends): while it is
/// kept, this process's own takes of it are lent it, and no other process can take it.
#[derive(Debug)]
pub(crate) struct KeptLock {
    lock: Option<FileLock>,
}

/// The locks kept here ([`KeptLock`]), with a handle on each to lend.
static KEPT_HERE: Mutex<Vec<(PathBuf, File)>> = Mutex::new(Vec::new());

fn kept_here() -> std::sync::MutexGuard<'static, Vec<(PathBuf, File)>> {
    KEPT_HERE.lock().unwrap_or_else(|e| e.into_inner())
}

impl KeptLock {
    /// Keeps `lock` until this is dropped.
    pub(crate) fn keep(lock: FileLock) -> Result<KeptLock> {
        let handle = lock
            .file
            .try_clone()
            .ctx(|| format!("cannot keep the lock {}", lock.path.display()))?;
        kept_here().push((lock.path.clone(), handle));
        Ok(KeptLock { lock: Some(lock) })
    }
}

impl Drop for KeptLock {
    fn drop(&mut self) {
        if let Some(lock) = self.lock.take() {
            kept_here().retain(|(path, _)| *path != lock.path);
            drop(lock);
        }
    }
}

/// The repository lock, held until dropped. Its one constructor runs recovery right after the
/// lock is taken, so a function that takes `&RepoLock` runs under the lock and after every
/// interrupted operation was finished or undone.
#[derive(Debug)]
pub(crate) struct RepoLock {
    _file: FileLock,
}

impl RepoLock {
    /// Takes the repository lock at `path` (waiting up to `timeout`), then runs `recover`.
    pub(crate) fn acquire(
        path: &Path,
        timeout: Duration,
        recover: impl FnOnce(&RepoLock),
    ) -> Result<RepoLock> {
        let held = RepoLock {
            _file: FileLock::acquire(path, timeout)?,
        };
        recover(&held);
        Ok(held)
    }
}

/// The locks this process holds, by path: a second `flock` of one of them from this process
/// (another open file) would wait for itself.
static HELD_HERE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn held_here() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    HELD_HERE.lock().unwrap_or_else(|e| e.into_inner())
}

impl FileLock {
    fn open(path: &Path) -> Result<File> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).ctx(|| format!("cannot create {}", dir.display()))?;
        }
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .ctx(|| format!("cannot open lock {}", path.display()))
    }

    fn try_lock(file: &File) -> Result<bool> {
        match flock(file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(true),
            Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
            Err(e) => Err(Error::io("cannot take a file lock", e.into())),
        }
    }

    /// Takes the lock, waiting up to `timeout`; on timeout `lock_timeout` names the holder.
    pub fn acquire(path: &Path, timeout: Duration) -> Result<FileLock> {
        let mut file = Self::open(path)?;
        let deadline = Instant::now() + timeout;
        let mut pause = Duration::from_millis(2);
        loop {
            if Self::try_lock(&file)? {
                return Ok(Self::held(file, path, None));
            }
            if Instant::now() >= deadline {
                let mut holder = String::new();
                let _ = file.seek(SeekFrom::Start(0));
                let _ = file.read_to_string(&mut holder);
                let holder = match holder.trim() {
                    "" => "another process",
                    holder => holder,
                };
                return Err(Error::LockTimeout {
                    holder: format!("{holder} ({})", path.display()),
                });
            }
            std::thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())));
            pause = (pause * 2).min(Duration::from_millis(50));
        }
    }

    /// Takes the lock only if it is free right now; meanwhile its file holds `note` on a line of
    /// its own after the holder's.
    pub(crate) fn try_acquire_noting(path: &Path, note: Option<&str>) -> Result<Option<FileLock>> {
        if let Some(lent) = Self::lent(path, note) {
            return Ok(Some(lent));
        }
        let file = Self::open(path)?;
        Ok(Self::try_lock(&file)?.then(|| Self::held(file, path, note)))
    }

    /// The lock at `path` lent by a [`KeptLock`] of this process, noting `note` meanwhile.
    fn lent(path: &Path, note: Option<&str>) -> Option<FileLock> {
        let file = kept_here()
            .iter()
            .find(|(kept, _)| kept == path)
            .and_then(|(_, handle)| handle.try_clone().ok())?;
        let mut lock = FileLock {
            file,
            path: path.to_path_buf(),
            lent: true,
        };
        lock.record_holder(note);
        Some(lock)
    }

    fn held(file: File, path: &Path, note: Option<&str>) -> FileLock {
        let mut lock = FileLock {
            file,
            path: path.to_path_buf(),
            lent: false,
        };
        lock.record_holder(note);
        held_here().push(lock.path.clone());
        lock
    }

    /// True when this process holds the lock at `path` (through any [`FileLock`]).
    pub(crate) fn held_by_this_process(path: &Path) -> bool {
        held_here().iter().any(|p| p == path)
    }

    /// True when some process holds the lock at `path` now.
    pub(crate) fn is_held(path: &Path) -> Result<bool> {
        let file = match OpenOptions::new().read(true).open(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            opened => opened.ctx(|| format!("cannot open {}", path.display()))?,
        };
        let free = Self::try_lock(&file)?;
        if free {
            let _ = flock(&file, FlockOperation::Unlock);
        }
        Ok(!free)
    }

    // Who holds the lock (pid, command line, since when), for the `lock_timeout` message of
    // whoever waits, then the holder's note if any, in one write. Best effort.
    fn record_holder(&mut self, note: Option<&str>) {
        let mut line = format!(
            "pid {} ({}) on {} since {}\n",
            std::process::id(),
            own_command_line(),
            hostname(),
            format_utc(now_ms())
        );
        if let Some(note) = note {
            line.push_str(note);
            line.push('\n');
        }
        let _ = self.file.set_len(0);
        let _ = self.file.seek(SeekFrom::Start(0));
        let _ = self.file.write_all(line.as_bytes());
    }
}

/// This process's command line, one line, shortened for a message.
fn own_command_line() -> String {
    const LIMIT: usize = 200;
    let words: Vec<String> = match std::fs::read("/proc/self/cmdline") {
        Ok(raw) => raw
            .split(|b| *b == 0)
            .filter(|w| !w.is_empty())
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect(),
        Err(_) => std::env::args_os()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
    };
    // The program by its name only; a newline would end the record early.
    let mut words = words.into_iter();
    let program = words
        .next()
        .map(|p| p.rsplit('/').next().unwrap_or(&p).to_string())
        .unwrap_or_default();
    let line: String = std::iter::once(program)
        .chain(words)
        .collect::<Vec<_>>()
        .join(" ")
        .replace(['\n', '\r'], " ");
    if line.chars().count() > LIMIT {
        format!("{}…", line.chars().take(LIMIT).collect::<String>())
    } else {
        line
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        if self.lent {
            // Back with its keeper, no note of the borrower's left.
            self.record_holder(None);
            return;
        }
        let _ = self.file.set_len(0);
        let _ = flock(&self.file, FlockOperation::Unlock);
        let mut held = held_here();
        if let Some(i) = held.iter().position(|p| *p == self.path) {
            held.swap_remove(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::store::lock::*;

    #[test]
    fn second_holder_times_out_naming_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let held = FileLock::acquire(&path, Duration::ZERO).unwrap();
        assert!(FileLock::is_held(&path).unwrap());
        let err = FileLock::acquire(&path, Duration::from_millis(30)).unwrap_err();
        assert_eq!(err.code().as_str(), "lock_timeout");
        assert!(
            err.to_string()
                .contains(&format!("pid {}", std::process::id()))
        );
        drop(held);
        assert!(!FileLock::is_held(&path).unwrap());
        FileLock::acquire(&path, Duration::ZERO).unwrap();
    }
}
