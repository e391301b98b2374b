//! The cleaning's one pass over a returned tree: every entry is looked at once (`statx`
//! beneath its directory's handle, a link never followed) and made what a cold bind of the
//! commit makes of it, or marked for git to write again.
//!
//! - A FIFO, a socket or a device goes (git never checks one out, and ignores them).
//! - A tracked file or link whose stat data is exactly what a3s-iso's index recorded when the
//!   tree was last written (and not "racy") is untouched since: its content, mode, owner and
//!   extended attributes are as git left them (each change moves the inode's ctime). Any
//!   other tracked path is removed here and written again by `git checkout-index`.
//! - Directories, and the untracked entries that survive `git clean` (`--keep-ignored`
//!   caches), get a cold bind's owner and modes: directories `0777`, files `0666` or `0777`
//!   when their owner could execute them, under the umask; setuid, setgid and sticky bits go
//!   (but the setgid bit a directory inherits from where the tree lives, as a cold bind's do).
//!   Their extended attributes go too (`user.*`, `trusted.*`, ACLs, file capabilities; the
//!   security module's own labels stay), read for entries changed since the tree was last
//!   written.
//! - An immutable or append-only entry cannot be made clean: the tree is not recycled.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, Gid, Mode, StatxAttributes, StatxFlags, Uid};
use rustix::io::Errno;

use crate::base::beneath::{Dir, Kind, kind_of};
use crate::base::error::{Error, IoContext, Result};
use crate::git::index_file::{StatEntry, StatTime};
use crate::services::pool::index::Index;

/// What a cold bind at the tree's place gives every entry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Expected {
    uid: u32,
    gid: u32,
    /// A directory's mode (with the setgid bit when the tree's parent passes it on).
    dir_mode: u32,
    umask: u32,
}

impl Expected {
    /// What git, run by this process, gives the entries of a tree made in `parent`.
    pub(crate) fn in_parent(parent: &Path) -> Result<Expected> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(parent).ctx(|| format!("cannot read {}", parent.display()))?;
        let umask = umask();
        let inherits = meta.mode() & 0o2000 != 0;
        if has_default_acl(parent) {
            return Err(Error::internal(format!(
                "{} has a default ACL, which a recycled tree would not reproduce",
                parent.display()
            )));
        }
        Ok(Expected {
            uid: rustix::process::geteuid().as_raw(),
            gid: if inherits {
                meta.gid()
            } else {
                rustix::process::getegid().as_raw()
            },
            dir_mode: (0o777 & !umask) | if inherits { 0o2000 } else { 0 },
            umask,
        })
    }

    /// A regular file's mode, as git writes one (executable when its owner could run it).
    fn file_mode(&self, executable: bool) -> u32 {
        (if executable { 0o777 } else { 0o666 }) & !self.umask
    }
}

/// This process's umask, read without changing it (`/proc/self/status`), else set and put
/// back (before any thread is started).
fn umask() -> u32 {
    let from_proc = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|l| l.starts_with("Umask:"))?;
            u32::from_str_radix(line["Umask:".len()..].trim(), 8).ok()
        });
    from_proc.unwrap_or_else(|| {
        let old = rustix::process::umask(Mode::from_raw_mode(0o022));
        rustix::process::umask(old);
        old.as_raw_mode()
    })
}

fn has_default_acl(path: &Path) -> bool {
    let mut buf = vec![0u8; 4096];
    rustix::fs::llistxattr(path, &mut buf[..]).is_ok_and(|len| {
        buf[..len]
            .split(|b| *b == 0)
            .any(|name| name == b"system.posix_acl_default")
    })
}

/// What the stat data says of a tracked file or link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Judged {
    /// Exactly as the index recorded it, before the index was written.
    Untouched,
    /// As the index recorded it, in the instant the index was written (or the index is not
    /// the one written at bind): only git's comparison of the content can tell.
    Racy,
    /// Anything else.
    Changed,
}

#[derive(Debug, Default)]
pub(crate) struct Found {
    /// Tracked paths to write again (missing, changed, or removed by the walk).
    pub(crate) differing: Vec<Vec<u8>>,
    /// A directory could not be read before the walk fixed its mode: `git clean` may have
    /// skipped it, and runs again.
    pub(crate) unreadable: bool,
}

/// How the walk judges entries.
struct Walk<'a> {
    tracked: HashMap<&'a [u8], usize>,
    entries: &'a [StatEntry],
    untouched: Vec<bool>,
    /// The index's stat data is from when a3s-iso last wrote the tree (else every entry's
    /// attributes are read).
    pristine: bool,
    written: StatTime,
    expected: Expected,
    /// `--keep-ignored` patterns are set: untracked directories may survive `git clean`.
    keeps: bool,
    unreadable: bool,
    /// `/proc/self/fd/<dir>/<name>`, reused for every attribute call.
    proc_path: Vec<u8>,
}

/// Walks the tree whose index (read after the captured entries were reset) is `index`; `pristine`:
/// its stat data is from a3s-iso's last write of the tree; `keeps`: some untracked paths are kept
/// (untracked directories without any are left to `git clean`, which removes them whole).
pub(crate) fn walk(
    tree: &Dir,
    index: &Index,
    pristine: bool,
    expected: Expected,
    keeps: bool,
) -> Result<Found> {
    let mut walk = Walk {
        tracked: index
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.path.as_slice(), i))
            .collect(),
        entries: &index.entries,
        untouched: vec![false; index.entries.len()],
        pristine,
        written: index.written,
        expected,
        keeps,
        unreadable: false,
        proc_path: Vec::new(),
    };
    walk.root(tree)?;
    let mut todo: Vec<(Dir, Vec<u8>)> = vec![(reopen(tree)?, Vec::new())];
    while let Some((dir, rel)) = todo.pop() {
        for entry in dir.entries().map_err(|e| io_error(&dir, e))? {
            let mut path = rel.clone();
            if !path.is_empty() {
                path.push(b'/');
            }
            path.extend_from_slice(entry.name.as_bytes());
            if path == b".git" {
                continue;
            }
            if let Some(next) = walk.one(&dir, &entry.name, &path)? {
                todo.push(next);
            }
        }
    }
    let differing = index
        .entries
        .iter()
        .zip(&walk.untouched)
        .filter(|(_, untouched)| !**untouched)
        .map(|(e, _)| e.path.clone())
        .collect();
    Ok(Found {
        differing,
        unreadable: walk.unreadable,
    })
}

fn reopen(dir: &Dir) -> Result<Dir> {
    dir.dir(Path::new(".")).map_err(|e| io_error(dir, e))
}

fn io_error(dir: &Dir, e: std::io::Error) -> Error {
    Error::io(format!("cannot clean {}", dir.path().display()), e)
}

/// The stat data the walk reads.
fn statx_at(dir: BorrowedFd<'_>, name: &OsStr) -> rustix::io::Result<rustix::fs::Statx> {
    rustix::fs::statx(
        dir,
        name,
        AtFlags::SYMLINK_NOFOLLOW | AtFlags::STATX_DONT_SYNC,
        StatxFlags::BASIC_STATS,
    )
}

impl Walk<'_> {
    /// The tree's own directory: a cold bind's owner, mode and attributes.
    fn root(&mut self, tree: &Dir) -> Result<()> {
        let st = statx_at(tree.fd(), OsStr::new(".")).map_err(|e| io_error(tree, e.into()))?;
        refuse_frozen(tree, OsStr::new("."), &st)?;
        self.fix_attributes(tree.fd(), OsStr::new("."))
            .map_err(|e| io_error(tree, e.into()))?;
        self.fix_owner_and_mode(tree.fd(), OsStr::new("."), &st, self.expected.dir_mode)
            .map_err(|e| io_error(tree, e.into()))
    }

    /// Judges one entry; returns a directory to walk next.
    fn one(&mut self, dir: &Dir, name: &OsStr, path: &[u8]) -> Result<Option<(Dir, Vec<u8>)>> {
        let fail = |e: Errno| {
            Error::io(
                format!("cannot clean {}", dir.path().join(name).display()),
                e.into(),
            )
        };
        let st = match statx_at(dir.fd(), name) {
            Ok(st) => st,
            // `git clean` removed it meanwhile.
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(fail(e)),
        };
        refuse_frozen(dir, name, &st)?;
        let kind = kind_of(u32::from(st.stx_mode));
        let tracked = self.tracked.get(path).copied();
        let entry = tracked.map(|i| &self.entries[i]);
        match (kind, entry) {
            (Kind::Special, _) => {
                rustix::fs::unlinkat(dir.fd(), name, AtFlags::empty())
                    .or_else(gone)
                    .map_err(fail)?;
            }
            (Kind::Dir, Some(e)) if e.mode == 0o160000 => {
                // An uninitialised submodule: an empty directory, as a cold bind makes it.
                self.fix_dir(dir, name, &st).map_err(fail)?;
                let inner = dir.dir(Path::new(name)).map_err(|e| io_error(dir, e))?;
                inner.empty().map_err(|e| io_error(&inner, e))?;
                self.untouched[tracked.unwrap_or_default()] = true;
            }
            (Kind::Dir, Some(_))
            | (Kind::File | Kind::Symlink, Some(StatEntry { mode: 0o160000, .. })) => {
                // Not what the index has there: it goes, and git writes the entry.
                dir.remove(Path::new(name)).map_err(|e| io_error(dir, e))?;
            }
            (Kind::Dir, None) => {
                self.fix_dir(dir, name, &st).map_err(fail)?;
                // Untracked, it is `git clean`'s to remove whole, unless kept paths may be in it.
                if self.keeps || self.is_tracked_dir(path) {
                    return match dir.dir(Path::new(name)) {
                        Ok(inner) => Ok(Some((inner, path.to_vec()))),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                        Err(e) => Err(io_error(dir, e)),
                    };
                }
            }
            (Kind::File | Kind::Symlink, Some(e)) => match self.judge(e, kind, &st) {
                Judged::Untouched => self.untouched[tracked.unwrap_or_default()] = true,
                // Its stat data cannot tell a change made in the instant the index was
                // written: git compares its content (and writes it again if it differs), and
                // its attributes are read here.
                Judged::Racy => self.fix_attributes(dir.fd(), name).map_err(fail)?,
                Judged::Changed => rustix::fs::unlinkat(dir.fd(), name, AtFlags::empty())
                    .or_else(gone)
                    .map_err(fail)?,
            },
            (Kind::File | Kind::Symlink, None) => {
                // Untracked: `git clean` removes it unless it is kept; a kept one is made sane.
                if self.keeps {
                    self.fix_kept(dir, name, kind, &st).map_err(fail)?;
                }
            }
        }
        Ok(None)
    }

    /// Whether `path` is a directory some tracked path lies in.
    fn is_tracked_dir(&self, path: &[u8]) -> bool {
        let mut prefix = path.to_vec();
        prefix.push(b'/');
        let at = self
            .entries
            .partition_point(|e| e.path.as_slice() < prefix.as_slice());
        self.entries
            .get(at)
            .is_some_and(|e| e.path.starts_with(&prefix))
    }

    /// Whether a tracked file or link is untouched since the index recorded it.
    fn judge(&self, e: &StatEntry, kind: Kind, st: &rustix::fs::Statx) -> Judged {
        let perms = u32::from(st.stx_mode) & 0o7777;
        let right_kind = match kind {
            Kind::File => {
                let executable = e.mode == 0o100755;
                (e.mode == 0o100644 || executable)
                    && perms == self.expected.file_mode(executable)
                    && st.stx_nlink == 1
            }
            Kind::Symlink => e.mode == 0o120000,
            _ => false,
        };
        let matches = right_kind
            && stat_time(st.stx_ctime) == e.ctime
            && stat_time(st.stx_mtime) == e.mtime
            && st.stx_ino as u32 == e.ino
            && st.stx_uid == e.uid
            && st.stx_gid == e.gid
            && st.stx_uid == self.expected.uid
            && st.stx_gid == self.expected.gid
            && st.stx_size as u32 == e.size;
        let before_written = stat_time(st.stx_mtime) < self.written && self.pristine;
        match (matches, before_written) {
            (false, _) => Judged::Changed,
            (true, true) => Judged::Untouched,
            (true, false) => Judged::Racy,
        }
    }

    /// A directory: a cold bind's attributes, owner and mode.
    fn fix_dir(
        &mut self,
        dir: &Dir,
        name: &OsStr,
        st: &rustix::fs::Statx,
    ) -> rustix::io::Result<()> {
        if u32::from(st.stx_mode) & 0o500 != 0o500 {
            self.unreadable = true;
        }
        self.fix_attributes(dir.fd(), name)?;
        self.fix_owner_and_mode(dir.fd(), name, st, self.expected.dir_mode)
    }

    /// A kept untracked file or link: a cold bind's owner and mode, and no attributes (read
    /// only when it changed since the tree was last written).
    fn fix_kept(
        &mut self,
        dir: &Dir,
        name: &OsStr,
        kind: Kind,
        st: &rustix::fs::Statx,
    ) -> rustix::io::Result<()> {
        if !self.pristine || stat_time(st.stx_ctime) >= self.written {
            self.fix_attributes(dir.fd(), name)?;
        }
        let mode = match kind {
            Kind::File => self.expected.file_mode(u32::from(st.stx_mode) & 0o100 != 0),
            // A link's mode is always 0777 and cannot be changed.
            _ => u32::from(st.stx_mode) & 0o7777,
        };
        self.fix_owner_and_mode(dir.fd(), name, st, mode)
    }

    /// Owner first (a change of owner clears setuid and setgid bits), then the mode.
    fn fix_owner_and_mode(
        &self,
        dir: BorrowedFd<'_>,
        name: &OsStr,
        st: &rustix::fs::Statx,
        mode: u32,
    ) -> rustix::io::Result<()> {
        let (uid, gid) = (self.expected.uid, self.expected.gid);
        let mut current = u32::from(st.stx_mode) & 0o7777;
        if st.stx_uid != uid || st.stx_gid != gid {
            let (owner, group) = (Uid::from_raw(uid), Gid::from_raw(gid));
            rustix::fs::chownat(
                dir,
                name,
                Some(owner),
                Some(group),
                AtFlags::SYMLINK_NOFOLLOW,
            )
            .or_else(gone)?;
            current = !mode;
        }
        if kind_of(u32::from(st.stx_mode)) != Kind::Symlink && current != mode {
            // The entry was just seen not to be a link, and nothing else writes the tree now:
            // `fchmodat` (which would follow a link at the name) changes this entry.
            rustix::fs::chmodat(dir, name, Mode::from_raw_mode(mode as _), AtFlags::empty())
                .or_else(gone)?;
        }
        Ok(())
    }

    /// Removes the extended attributes a cold bind would not have: everything but the
    /// security module's labels (file capabilities go too). Reached as
    /// `/proc/self/fd/<dir>/<name>` without following a link at the name.
    fn fix_attributes(&mut self, dir: BorrowedFd<'_>, name: &OsStr) -> rustix::io::Result<()> {
        self.proc_path.clear();
        self.proc_path
            .extend_from_slice(format!("/proc/self/fd/{}/", dir.as_raw_fd()).as_bytes());
        self.proc_path.extend_from_slice(name.as_bytes());
        let path = OsStr::from_bytes(&self.proc_path);
        let mut buf = vec![0u8; 256];
        let len = loop {
            match rustix::fs::llistxattr(path, &mut buf[..]) {
                Ok(len) => break len,
                Err(Errno::RANGE) => {
                    let needed = rustix::fs::llistxattr_query(path)?;
                    buf.resize(needed.max(buf.len() * 2), 0);
                }
                Err(Errno::NOTSUP | Errno::NOENT) => return Ok(()),
                Err(e) => return Err(e),
            }
        };
        for attr in buf[..len].split(|b| *b == 0).filter(|a| !a.is_empty()) {
            let keep = attr.starts_with(b"security.") && attr != b"security.capability";
            if !keep {
                match rustix::fs::lremovexattr(path, OsStr::from_bytes(attr)) {
                    Ok(()) | Err(Errno::NODATA | Errno::NOENT) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }
}

/// An entry gone meanwhile is no error.
fn gone(e: Errno) -> rustix::io::Result<()> {
    if e == Errno::NOENT { Ok(()) } else { Err(e) }
}

/// A statx time as the index records one.
fn stat_time(t: rustix::fs::StatxTimestamp) -> StatTime {
    StatTime {
        secs: t.tv_sec as u32,
        nanos: t.tv_nsec,
    }
}

/// An immutable or append-only entry (only root can set those) cannot be cleaned.
fn refuse_frozen(dir: &Dir, name: &OsStr, st: &rustix::fs::Statx) -> Result<()> {
    let frozen = StatxAttributes::IMMUTABLE | StatxAttributes::APPEND;
    if st.stx_attributes_mask.intersects(frozen) && st.stx_attributes.intersects(frozen) {
        return Err(Error::internal(format!(
            "{} is immutable or append-only: the tree cannot be made clean",
            dir.path().join(name).display()
        )));
    }
    Ok(())
}
