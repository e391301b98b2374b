//! Files reached beneath a directory handle, never through a symbolic link on the way.
//! May call: the rest of base.
//!
//! Those are the places a sandboxed command can write (an isolation's tree, its admin dir, a
//! run's quarantine and TMPDIR) and what they become (a tree renamed aside, a spare).
//!
//! a3s-iso acts on those places outside the sandbox, with the user's rights. A link the command
//! left there (`<admin>/modules` naming another repository, a `pack` directory in the
//! quarantine naming another object store) must never carry a listing, a read, a write, a move
//! or a removal somewhere else. So every path below such a root is resolved with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` (where the kernel lacks `openat2`, one
//! `O_NOFOLLOW | O_DIRECTORY` step per component), and a link on the way is an error that
//! [`is_link`] recognises. The root itself must be a real directory; the path to it is
//! a3s-iso's own (the state dir, the repository's common dir, the source's parent).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

mod remove;

/// A directory opened without following a link, and the path it was reached by (for messages, git).
#[derive(Debug)]
pub(crate) struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

/// What an entry is, as `lstat` says (a link is never followed to say more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link.
    Symlink,
    /// A FIFO, a socket or a device.
    Special,
}

/// One entry of a directory.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// Its name.
    pub(crate) name: OsString,
    /// Its kind.
    pub(crate) kind: Kind,
}

/// Whether an error says a link (or a non-directory) stood where a directory was passed through.
pub(crate) fn is_link(err: &io::Error) -> bool {
    err.raw_os_error() == Some(Errno::LOOP.raw_os_error())
}

/// The error for a path that runs through a link.
fn through_link(path: &Path) -> io::Error {
    io::Error::other(LinkOnTheWay(format!(
        "{} is reached through a symbolic link, which a3s-iso does not follow",
        path.display()
    )))
}

/// The message of a link on the way, kept apart from the raw `ELOOP`.
#[derive(Debug)]
struct LinkOnTheWay(String);

impl std::fmt::Display for LinkOnTheWay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LinkOnTheWay {}

/// Whether an error is a link on the way (raw from the kernel, or as this module words it).
pub(crate) fn is_link_error(err: &io::Error) -> bool {
    is_link(err) || err.get_ref().is_some_and(|e| e.is::<LinkOnTheWay>())
}

/// Set once `openat2` turned out to be missing (an old kernel, or a seccomp policy that does
/// not know it): then every path is walked one component at a time.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// The relative path's components, each a plain name (no `..`, no root, nothing empty).
fn names(rel: &Path) -> io::Result<Vec<&OsStr>> {
    rel.components()
        .filter(|component| *component != Component::CurDir)
        .map(|component| match component {
            Component::Normal(name) => Ok(name),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a path beneath a directory", rel.display()),
            )),
        })
        .collect()
}

/// Opens `rel` beneath `dir` with `flags`, following no link on the way or at the end.
fn open_at(dir: BorrowedFd<'_>, rel: &Path, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    let parts = names(rel)?;
    let flags = flags | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    if parts.is_empty() {
        return Ok(rustix::fs::openat(dir, ".", flags, mode)?);
    }
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        let resolve =
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        for _ in 0..8 {
            match rustix::fs::openat2(dir, rel, flags, mode, resolve) {
                // A rename elsewhere on the file system raced with the lookup: try again.
                Err(Errno::AGAIN) => continue,
                // A link, or a file, where a directory was asked for: the steps say which.
                Err(Errno::NOTDIR) => break,
                Err(Errno::NOSYS) => {
                    NO_OPENAT2.store(true, Ordering::Relaxed);
                    break;
                }
                other => return Ok(other?),
            }
        }
    }
    step_by_step(dir, &parts, flags, mode)
}

/// [`open_at`] without `openat2`: each directory on the way opened with `O_NOFOLLOW`.
fn step_by_step(
    dir: BorrowedFd<'_>,
    parts: &[&OsStr],
    flags: OFlags,
    mode: Mode,
) -> io::Result<OwnedFd> {
    let (last, on_the_way) = parts.split_last().expect("at least one component");
    let mut held: Option<OwnedFd> = None;
    for name in on_the_way {
        let at = held.as_ref().map_or(dir, |fd| fd.as_fd());
        let step = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match rustix::fs::openat(at, *name, step, Mode::empty()) {
            Ok(fd) => held = Some(fd),
            // A link (or a file) where a directory should be.
            Err(Errno::NOTDIR) if is_symlink_at(at, name) => return Err(Errno::LOOP.into()),
            Err(e) => return Err(e.into()),
        }
    }
    let at = held.as_ref().map_or(dir, |fd| fd.as_fd());
    match rustix::fs::openat(at, *last, flags, mode) {
        Err(Errno::NOTDIR) if is_symlink_at(at, last) => Err(Errno::LOOP.into()),
        other => Ok(other?),
    }
}

fn is_symlink_at(dir: BorrowedFd<'_>, name: &OsStr) -> bool {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink)
}

/// The kind of a raw mode.
pub(crate) fn kind_of(mode: u32) -> Kind {
    match FileType::from_raw_mode(mode as _) {
        FileType::Directory => Kind::Dir,
        FileType::RegularFile => Kind::File,
        FileType::Symlink => Kind::Symlink,
        _ => Kind::Special,
    }
}

/// Adds a path to an error's message.
fn with_path(err: io::Error, path: &Path) -> io::Error {
    if is_link(&err) {
        return through_link(path);
    }
    io::Error::new(err.kind(), format!("{}: {err}", path.display()))
}

/// What `found` found; `None` when nothing was there.
fn if_any<T>(found: io::Result<T>) -> io::Result<Option<T>> {
    match found {
        Ok(found) => Ok(Some(found)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// `file` if it is a regular file (at `path`, for the error).
fn regular(file: File, path: &Path) -> io::Result<File> {
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is not a regular file", path.display()),
        ));
    }
    Ok(file)
}

/// The directory that holds `rel`'s last component, and that component.
fn split(rel: &Path) -> io::Result<(&Path, &OsStr)> {
    match (rel.parent(), rel.file_name()) {
        (Some(parent), Some(name)) => Ok((parent, name)),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no entry", rel.display()),
        )),
    }
}

impl Dir {
    /// Opens the directory at `path`, which must be a real directory (a link there is not
    /// followed); the directories on the way to it are a3s-iso's own.
    pub(crate) fn open(path: &Path) -> io::Result<Dir> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        match rustix::fs::open(path, flags, Mode::empty()) {
            Ok(fd) => Ok(Dir {
                fd,
                path: path.to_path_buf(),
            }),
            Err(Errno::LOOP | Errno::NOTDIR) if is_symlink_path(path) => Err(through_link(path)),
            Err(e) => Err(with_path(e.into(), path)),
        }
    }

    /// Like [`Dir::open`]; `None` when nothing is at `path`.
    pub(crate) fn open_if_any(path: &Path) -> io::Result<Option<Dir>> {
        if_any(Dir::open(path))
    }

    /// The path this directory was reached by.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The handle, for `*at` calls.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The directory `rel` beneath this one, reached without a link.
    pub(crate) fn dir(&self, rel: &Path) -> io::Result<Dir> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY;
        let path = self.path.join(rel);
        open_at(self.fd(), rel, flags, Mode::empty())
            .map(|fd| Dir {
                fd,
                path: path.clone(),
            })
            .map_err(|e| with_path(e, &path))
    }

    /// Like [`Dir::dir`]; `None` when nothing is there.
    pub(crate) fn dir_if_any(&self, rel: &Path) -> io::Result<Option<Dir>> {
        if_any(self.dir(rel))
    }

    /// The parent of `rel` (this directory for a bare name) and `rel`'s name.
    fn parent<'a>(&self, rel: &'a Path) -> io::Result<(Option<Dir>, &'a OsStr)> {
        let (parent, name) = split(rel)?;
        if names(parent)?.is_empty() {
            return Ok((None, name));
        }
        Ok((Some(self.dir(parent)?), name))
    }

    /// What is at `rel` (`lstat`), `None` when nothing is; a link on the way is an error.
    pub(crate) fn kind(&self, rel: &Path) -> io::Result<Option<Kind>> {
        let Some((parent, name)) = if_any(self.parent(rel))? else {
            return Ok(None);
        };
        let at = parent.as_ref().map_or(self.fd(), Dir::fd);
        match rustix::fs::statat(at, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(kind_of(st.st_mode))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(with_path(e.into(), &self.path.join(rel))),
        }
    }

    /// The entries of this directory (`.` and `..` left out).
    pub(crate) fn entries(&self) -> io::Result<Vec<Entry>> {
        let mut stream =
            rustix::fs::Dir::read_from(self.fd()).map_err(|e| with_path(e.into(), &self.path))?;
        let mut out = Vec::new();
        while let Some(entry) = stream.read() {
            let entry = entry.map_err(|e| with_path(e.into(), &self.path))?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let name = OsStr::from_bytes(name).to_os_string();
            let kind = match entry.file_type() {
                FileType::Unknown => {
                    match rustix::fs::statat(self.fd(), name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
                    {
                        Ok(st) => kind_of(st.st_mode),
                        Err(Errno::NOENT) => continue,
                        Err(e) => return Err(with_path(e.into(), &self.path.join(&name))),
                    }
                }
                listed => kind_of(listed.as_raw_mode()),
            };
            out.push(Entry { name, kind });
        }
        Ok(out)
    }

    /// Opens the regular file at `rel` for reading (never a link; a FIFO is not waited on).
    pub(crate) fn open_file(&self, rel: &Path) -> io::Result<File> {
        let file = self.open_beneath(rel, OFlags::RDONLY | OFlags::NONBLOCK, 0)?;
        regular(file, &self.path.join(rel))
    }

    /// The file `rel` opened with `flags` (made with `mode` where they create it).
    fn open_beneath(&self, rel: &Path, flags: OFlags, mode: u32) -> io::Result<File> {
        open_at(self.fd(), rel, flags, Mode::from_raw_mode(mode as _))
            .map(File::from)
            .map_err(|e| with_path(e, &self.path.join(rel)))
    }

    /// The bytes of the small regular file at `rel`: more than `limit` is an error.
    pub(crate) fn read_small(&self, rel: &Path, limit: u64) -> io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.open_file(rel)?
            .take(limit + 1)
            .read_to_end(&mut bytes)?;
        if bytes.len() as u64 > limit {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} is larger than {limit} bytes",
                    self.path.join(rel).display()
                ),
            ));
        }
        Ok(bytes)
    }

    /// The small regular file `rel`, `None` if absent; a link (to anywhere) or non-file is refused.
    pub(crate) fn read_small_file(&self, rel: &Path, limit: u64) -> io::Result<Option<Vec<u8>>> {
        match self.kind(rel)? {
            None => Ok(None),
            Some(Kind::File) => self.read_small(rel, limit).map(Some),
            Some(Kind::Symlink) => Err(io::Error::other(
                "it is a symbolic link, which a3s-iso does not follow",
            )),
            Some(_) => Err(io::Error::other("it is not a regular file")),
        }
    }

    /// Creates the new file `rel` for writing, with `mode` (before the umask).
    pub(crate) fn create_new(&self, rel: &Path, mode: u32) -> io::Result<File> {
        self.open_beneath(rel, OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL, mode)
    }

    /// Opens the regular file `rel` for appending, made with `mode` if absent; a link is refused.
    pub(crate) fn append(&self, rel: &Path, mode: u32) -> io::Result<File> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::APPEND | OFlags::NONBLOCK;
        regular(self.open_beneath(rel, flags, mode)?, &self.path.join(rel))
    }

    /// Replaces what is at `rel` (a link is not followed) with `bytes`, atomically and durably.
    pub(crate) fn replace(&self, rel: &Path, bytes: &[u8]) -> io::Result<()> {
        self.via_temp(rel, true, |file| file.write_all(bytes))
    }

    /// Like [`Dir::replace`], the new file written by `fill`.
    pub(crate) fn replace_with(
        &self,
        rel: &Path,
        fill: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> io::Result<()> {
        self.via_temp(rel, true, fill)
    }

    /// Like [`Dir::replace_with`], unsynced: a reader sees the old file or the new (as git writes).
    pub(crate) fn put_with(
        &self,
        rel: &Path,
        fill: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> io::Result<()> {
        self.via_temp(rel, false, fill)
    }

    /// Like [`Dir::put_with`], the new file holding `bytes`.
    pub(crate) fn put(&self, rel: &Path, bytes: &[u8]) -> io::Result<()> {
        self.via_temp(rel, false, |file| file.write_all(bytes))
    }

    /// A temporary file beside `rel`, written by `fill`, renamed over `rel`; with `durable`,
    /// its contents and its directory are synced (else a machine's crash may lose it).
    fn via_temp(
        &self,
        rel: &Path,
        durable: bool,
        fill: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> io::Result<()> {
        let (parent, name) = self.parent(rel)?;
        let at = parent.as_ref().unwrap_or(self);
        let mut tmp_name = OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".tmp-{}", unique_suffix()));
        let tmp = Path::new(&tmp_name);
        let result = (|| {
            let mut file = at.create_new(tmp, 0o666)?;
            fill(&mut file)?;
            if durable {
                file.sync_all()?;
            }
            rustix::fs::renameat(at.fd(), tmp, at.fd(), name)?;
            if durable {
                rustix::fs::fsync(at.fd())?;
            }
            Ok(())
        })();
        if result.is_err() {
            let _ = rustix::fs::unlinkat(at.fd(), tmp, AtFlags::empty());
        }
        result.map_err(|e: io::Error| with_path(e, &self.path.join(rel)))
    }

    /// Creates the directory `rel` (its parent must exist).
    pub(crate) fn mkdir(&self, rel: &Path, mode: u32) -> io::Result<()> {
        let (parent, name) = self.parent(rel)?;
        let at = parent.as_ref().map_or(self.fd(), Dir::fd);
        rustix::fs::mkdirat(at, name, Mode::from_raw_mode(mode as _))
            .map_err(|e| with_path(e.into(), &self.path.join(rel)))
    }

    /// The directory `rel`, made with its missing parents; each existing one must be a real one.
    pub(crate) fn create_dirs(&self, rel: &Path) -> io::Result<Dir> {
        let mut dir = Dir {
            fd: rustix::fs::openat(
                self.fd(),
                ".",
                OFlags::RDONLY | OFlags::CLOEXEC,
                Mode::empty(),
            )?,
            path: self.path.clone(),
        };
        for name in names(rel)? {
            match rustix::fs::mkdirat(dir.fd(), name, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(with_path(e.into(), &dir.path.join(name))),
            }
            dir = dir.dir(Path::new(name))?;
        }
        Ok(dir)
    }

    /// Removes whatever is at `rel` (a directory with everything in it); whether anything was. A
    /// link on the way is an error: nothing is removed through it.
    pub(crate) fn remove(&self, rel: &Path) -> io::Result<bool> {
        let Some((parent, name)) = if_any(self.parent(rel))? else {
            return Ok(false);
        };
        let at = parent.as_ref().map_or(self.fd(), Dir::fd);
        remove_at(at, name).map_err(|e| with_path(e, &self.path.join(rel)))
    }

    /// Removes the directories `rel` is in, deepest first, while each is empty (as git does
    /// once it removed the last file of a directory); never `self` itself.
    pub(crate) fn remove_empty_parents(&self, rel: &Path) -> io::Result<()> {
        let mut dir = rel.parent();
        while let Some(at) = dir.filter(|d| !names(d).is_ok_and(|n| n.is_empty())) {
            let (parent, name) = self.parent(at)?;
            let fd = parent.as_ref().map_or(self.fd(), Dir::fd);
            match rustix::fs::unlinkat(fd, name, AtFlags::REMOVEDIR) {
                Ok(()) => dir = at.parent(),
                Err(Errno::NOTEMPTY | Errno::EXIST | Errno::NOENT | Errno::NOTDIR) => return Ok(()),
                Err(e) => return Err(with_path(e.into(), &self.path.join(at))),
            }
        }
        Ok(())
    }

    /// Removes what blocks `rel` from being a path of real directories ending in nothing: the
    /// entry at `rel`, or the first component on the way that is not a real directory (a
    /// link, a file), which goes instead, so nothing is removed through a link.
    pub(crate) fn clear_way(&self, rel: &Path) -> io::Result<()> {
        let parts = names(rel)?;
        let mut held: Option<Dir> = None;
        for (i, name) in parts.iter().enumerate() {
            let at = held.as_ref().unwrap_or(self);
            let last = i + 1 == parts.len();
            let kind = match rustix::fs::statat(at.fd(), *name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => kind_of(st.st_mode),
                Err(Errno::NOENT) => return Ok(()),
                Err(e) => return Err(with_path(e.into(), &at.path.join(name))),
            };
            if last || kind != Kind::Dir {
                remove_at(at.fd(), name).map_err(|e| with_path(e, &at.path.join(name)))?;
                return Ok(());
            }
            held = Some(at.dir(Path::new(name))?);
        }
        Ok(())
    }

    /// Removes every entry of this directory.
    pub(crate) fn empty(&self) -> io::Result<()> {
        for entry in self.entries()? {
            remove_at(self.fd(), &entry.name)
                .map_err(|e| with_path(e, &self.path.join(&entry.name)))?;
        }
        Ok(())
    }
}

fn is_symlink_path(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Removes the entry `name` of `dir`, a directory with everything in it; whether it was there.
fn remove_at(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<bool> {
    remove_known(dir, name, None)
}

/// [`remove_at`] of an entry whose kind a listing gave: a file, link or special entry is
/// unlinked without a `stat` first (a directory found there instead is removed as one).
fn remove_known(dir: BorrowedFd<'_>, name: &OsStr, listed: Option<Kind>) -> io::Result<bool> {
    if listed.is_some_and(|kind| kind != Kind::Dir) {
        match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
            Ok(()) => return Ok(true),
            Err(Errno::NOENT) => return Ok(false),
            // Replaced by a directory since the listing: looked at below.
            Err(Errno::ISDIR | Errno::PERM) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let st = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    if kind_of(st.st_mode) != Kind::Dir {
        return match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(true),
            Err(e) => Err(e.into()),
        };
    }
    let Some(inner) = open_to_empty(dir, name)? else {
        return Ok(false);
    };
    for entry in inner.entries()? {
        remove_known(inner.fd(), &entry.name, Some(entry.kind))?;
    }
    match rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::NOENT) => Ok(true),
        Err(e) => Err(e.into()),
    }
}

/// The directory `name` of `dir`, opened to be emptied (never through a link); `None` if gone.
fn open_to_empty(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<Option<Dir>> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        // A directory its owner may not read (mode 000): made readable, then emptied.
        Err(Errno::ACCESS) => {
            rustix::fs::chmodat(dir, name, Mode::from_raw_mode(0o700), AtFlags::empty())?;
            rustix::fs::openat(dir, name, flags, Mode::empty())?
        }
        // Removed meanwhile (by `git clean` beside the pool's walk, say).
        Err(Errno::NOENT) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    Ok(Some(Dir {
        fd,
        path: PathBuf::from(name),
    }))
}

/// Removes whatever is at `path` (a directory with everything in it, a link as a link); whether
/// anything was. The directories on the way to `path` are a3s-iso's own.
pub(crate) fn remove_path(path: &Path) -> io::Result<bool> {
    let (parent, name) = split(path)?;
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    let Some(dir) = Dir::open_if_any(parent)? else {
        return Ok(false);
    };
    let subtree = |at: BorrowedFd<'_>, name: &OsStr| remove_known(at, name, Some(Kind::Dir));
    remove::in_parallel(dir.fd(), name, &subtree).map_err(|e| with_path(e, path))?;
    remove_at(dir.fd(), name).map_err(|e| with_path(e, path))
}

/// A suffix no other temp file of any process uses: pid, a per-process counter and the clock.
pub(crate) fn unique_suffix() -> String {
    format!("{}-{}", std::process::id(), count_and_clock())
}

/// `<n>-<nanos>`: a per-process counter and the clock's nanoseconds (8 hex), ending unique names.
pub(crate) fn count_and_clock() -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{n}-{nanos:08x}")
}

#[cfg(test)]
mod tests {
    use crate::base::beneath::*;

    #[test]
    fn links_on_the_way_are_refused_and_never_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let (inside, outside) = (tmp.path().join("inside"), tmp.path().join("outside"));
        std::fs::create_dir_all(inside.join("real")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("file"), "outside\n").unwrap();
        std::os::unix::fs::symlink(&outside, inside.join("link")).unwrap();
        let dir = Dir::open(&inside).unwrap();
        let err = dir.dir(Path::new("link")).unwrap_err();
        assert!(is_link_error(&err), "{err}");
        let err = dir.read_small(Path::new("link/file"), 100).unwrap_err();
        assert!(is_link_error(&err), "{err}");
        assert!(dir.put(Path::new("link/new"), b"x").is_err());
        assert!(dir.create_new(Path::new("link/new"), 0o600).is_err());
        assert!(dir.remove(Path::new("link/file")).is_err());
        assert_eq!(dir.kind(Path::new("link")).unwrap(), Some(Kind::Symlink));
        assert!(dir.kind(Path::new("link/file")).is_err());
        // Clearing the way removes the link, not what it names.
        dir.clear_way(Path::new("link/file")).unwrap();
        assert!(!inside.join("link").exists());
        std::os::unix::fs::symlink(&outside, inside.join("link")).unwrap();
        assert!(Dir::open(&inside.join("link")).is_err());
        assert!(remove_path(&inside).unwrap());
        assert_eq!(std::fs::read(outside.join("file")).unwrap(), b"outside\n");
        assert!(!inside.exists());
    }

    #[test]
    fn the_walk_without_openat2_refuses_links_too() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("a/b")).unwrap();
        std::fs::write(tmp.path().join("a/b/f"), "f").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("a"), tmp.path().join("l")).unwrap();
        let dir = Dir::open(tmp.path()).unwrap();
        let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let parts = [OsStr::new("l"), OsStr::new("b"), OsStr::new("f")];
        let err: io::Error = step_by_step(dir.fd(), &parts, flags, Mode::empty()).unwrap_err();
        assert!(is_link(&err), "{err}");
        let parts = [OsStr::new("a"), OsStr::new("b"), OsStr::new("f")];
        assert!(step_by_step(dir.fd(), &parts, flags, Mode::empty()).is_ok());
    }
}
