//! Ignored files of the source (build caches such as `target/` or `node_modules/`, local
//! settings such as `.env`) copied into a new isolation: those named by `bind --copy-ignored`
//! and by the source's `.worktreeinclude` (see `include`). Each is cloned (`FICLONE`: the copy
//! shares the source's blocks until either is written) where the file system can, else copied.
//!
//! Git selects them: `git ls-files --others --ignored --exclude=<pattern>…` lists the untracked
//! files the patterns match, and `git check-ignore` keeps those that the source's own ignore
//! rules ignore. So a path is copied only when it is ignored *and* matched; a pattern can only
//! ever match paths inside the source. Both sides are reached beneath their directory handles:
//! a symbolic link is copied as a link, never followed, and a link on the way to a path (in the
//! source or in the isolation) leaves that path out.

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde::Serialize;

use crate::base::beneath::{Dir, Kind};
use crate::base::error::{Error, IoContext, Result};
use crate::base::include::{PatternOrigin, PatternSet};
use crate::git::Git;

/// What was copied.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CopyReport {
    /// Files (and symbolic links) copied in.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// How many of the files were cloned (reflink) rather than copied.
    pub cloned: u64,
    /// Paths already in the isolation (tracked there, or kept in the pool's spare it was
    /// made from), left as they were.
    pub skipped: u64,
    /// Where the patterns came from, and how many of the files copied each one selected (a
    /// file two of them select counts in both).
    pub sources: Vec<CopySource>,
}

/// One set of patterns, and what it brought.
#[derive(Debug, Clone, Serialize)]
pub struct CopySource {
    /// `copy_ignored` (the command line) or `worktreeinclude` (the source's file).
    pub from: PatternOrigin,
    /// Files (and symbolic links) it selected that were copied.
    pub files: u64,
}

/// Copies the source's ignored files that `sets` select into `dest`, a new isolation at `revision`.
/// A path already there stays, unless it is a file or link `revision` does not track (left in the
/// pool's spare the isolation came from) that differs from the source's in kind, size, modification
/// time, mode or link target: then the source's is copied over it.
pub(crate) fn copy(
    git: &Git,
    (source, dest): (&Path, &Path),
    revision: &str,
    sets: &[PatternSet],
) -> Result<CopyReport> {
    let selected: Vec<(Vec<u8>, Vec<bool>)> = select(git, source, sets)?.into_iter().collect();
    let shared = Shared {
        git,
        source,
        dest,
        revision,
        from: Dir::open(source).ctx(|| format!("cannot open {}", source.display()))?,
        into: Dir::open(dest).ctx(|| format!("cannot open {}", dest.display()))?,
        tracked: std::sync::OnceLock::new(),
    };
    // Copying many small files costs system time, not disk bandwidth: a few threads, each
    // with a run of consecutive paths (whole directories, mostly), share the work.
    let workers = match selected.len() {
        0..=255 => 1,
        _ => std::thread::available_parallelism().map_or(2, |n| n.get().clamp(1, 4)),
    };
    let chunk = selected.len().div_ceil(workers).max(1);
    let parts: Vec<Result<CopyReport>> = std::thread::scope(|scope| {
        let handles: Vec<_> = selected
            .chunks(chunk)
            .map(|part| scope.spawn(|| shared.copy_all(part, sets)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::internal("a copy thread panicked")))
            })
            .collect()
    });
    let mut report = CopyReport::of(sets);
    for part in parts {
        report.add(&part?);
    }
    Ok(report)
}

impl CopyReport {
    /// Nothing copied yet by any of `sets`.
    fn of(sets: &[PatternSet]) -> CopyReport {
        let source = |set: &PatternSet| CopySource {
            from: set.origin,
            files: 0,
        };
        CopyReport {
            sources: sets.iter().map(source).collect(),
            ..CopyReport::default()
        }
    }

    fn add(&mut self, other: &CopyReport) {
        self.files += other.files;
        self.bytes += other.bytes;
        self.cloned += other.cloned;
        self.skipped += other.skipped;
        for (mine, theirs) in self.sources.iter_mut().zip(&other.sources) {
            mine.files += theirs.files;
        }
    }
}

/// What every copying thread reads: both trees' handles, and the paths the bound revision
/// tracks (listed once, by the first thread that needs them).
struct Shared<'a> {
    git: &'a Git,
    source: &'a Path,
    dest: &'a Path,
    revision: &'a str,
    from: Dir,
    into: Dir,
    tracked: std::sync::OnceLock<HashSet<Vec<u8>>>,
}

impl Shared<'_> {
    fn tracked(&self) -> Result<&HashSet<Vec<u8>>> {
        if let Some(tracked) = self.tracked.get() {
            return Ok(tracked);
        }
        let listed = tracked_paths(self.git, self.source, self.revision)?;
        Ok(self.tracked.get_or_init(|| listed))
    }

    /// Copies `selected` (sorted paths, each with the sets that chose it) in order.
    fn copy_all(
        &self,
        selected: &[(Vec<u8>, Vec<bool>)],
        sets: &[PatternSet],
    ) -> Result<CopyReport> {
        let mut report = CopyReport::of(sets);
        // The paths come sorted, so the files of one directory follow each other: its
        // handles on both sides are opened once for all of them.
        let mut at = Parent::default();
        for (path, selected_by) in selected {
            let rel = Path::new(OsStr::from_bytes(path));
            let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
                continue;
            };
            if at.rel.as_deref() != Some(parent) {
                at = Parent::open(&self.from, &self.into, parent)
                    .ctx(|| format!("cannot open {}", self.source.join(parent).display()))?;
            }
            if !self.make_way(&at, path, Path::new(name), &mut report)? {
                continue;
            }
            let copied = copy_entry(&self.into, &mut at, Path::new(name))
                .ctx(|| format!("cannot copy {}", self.source.join(rel).display()))?;
            let Some((bytes, cloned)) = copied else {
                continue;
            };
            report.files += 1;
            report.bytes += bytes;
            report.cloned += u64::from(cloned);
            for (source, chosen) in report.sources.iter_mut().zip(selected_by) {
                source.files += u64::from(*chosen);
            }
        }
        Ok(report)
    }

    /// Whether `name` can be copied into the isolation's directory of `at`: nothing there, or a
    /// stale copy (untracked, and different from the source's), which is removed. What else is
    /// there stays, counted as skipped.
    fn make_way(
        &self,
        at: &Parent,
        path: &[u8],
        name: &Path,
        report: &mut CopyReport,
    ) -> Result<bool> {
        let Some(src_dir) = &at.from else {
            return Ok(false);
        };
        let existing =
            (at.into.as_ref()).and_then(|dir| dir.kind(name).unwrap_or(Some(Kind::Special)));
        let into_dir = at.into.as_ref().unwrap_or(&self.into);
        match existing {
            None => Ok(true),
            Some(Kind::File | Kind::Symlink)
                if !self.tracked()?.contains(path) && differs(src_dir, into_dir, name) =>
            {
                let stale = self.dest.join(OsStr::from_bytes(path));
                into_dir
                    .remove(name)
                    .ctx(|| format!("cannot replace {}", stale.display()))?;
                Ok(true)
            }
            Some(_) => {
                report.skipped += 1;
                Ok(false)
            }
        }
    }
}

/// One directory's handles: the source's (`None` when it is gone or reached through a link:
/// its files are left out) and the isolation's (`None` until it exists).
#[derive(Default)]
struct Parent {
    rel: Option<std::path::PathBuf>,
    from: Option<Dir>,
    into: Option<Dir>,
    /// The isolation has a link (or no directory) on the way: nothing goes there.
    blocked: bool,
}

impl Parent {
    fn open(from: &Dir, into: &Dir, rel: &Path) -> io::Result<Parent> {
        let left_out = |e: &io::Error| {
            crate::base::beneath::is_link_error(e) || e.kind() == io::ErrorKind::NotFound
        };
        let from_dir = match from.dir(rel) {
            Ok(dir) => Some(dir),
            Err(e) if left_out(&e) => None,
            Err(e) => return Err(e),
        };
        let (into_dir, blocked) = match into.dir_if_any(rel) {
            Ok(dir) => (dir, false),
            Err(e) if crate::base::beneath::is_link_error(&e) => (None, true),
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error()) => {
                (None, true)
            }
            Err(e) => return Err(e),
        };
        Ok(Parent {
            rel: Some(rel.to_path_buf()),
            from: from_dir,
            into: into_dir,
            blocked,
        })
    }
}

fn tracked_paths(git: &Git, source: &Path, revision: &str) -> Result<HashSet<Vec<u8>>> {
    let listed = git.tracked_names(source, revision)?;
    Ok(crate::git::split_nul(&listed).map(<[u8]>::to_vec).collect())
}

/// Whether the entries `name` of `from` and `into` differ in kind, size, modification time,
/// permission bits or link target (`false` when either cannot be looked at).
fn differs(from: &Dir, into: &Dir, name: &Path) -> bool {
    let look = |dir: &Dir| -> io::Result<(rustix::fs::Stat, Option<std::ffi::CString>)> {
        let st = rustix::fs::statat(dir.fd(), name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)?;
        let target = (crate::base::beneath::kind_of(st.st_mode) == Kind::Symlink)
            .then(|| rustix::fs::readlinkat(dir.fd(), name, Vec::new()))
            .transpose()?;
        Ok((st, target))
    };
    let (Ok((a, a_target)), Ok((b, b_target))) = (look(from), look(into)) else {
        return false;
    };
    a.st_mode & 0o170777 != b.st_mode & 0o170777
        || a_target != b_target
        || (a_target.is_none()
            && (a.st_size, a.st_mtime, a.st_mtime_nsec) != (b.st_size, b.st_mtime, b.st_mtime_nsec))
}

/// The source's untracked files that some set matches and its ignore rules ignore, with the sets
/// that matched each, in path order; directories listed whole (nested repositories) are left out.
fn select(git: &Git, source: &Path, sets: &[PatternSet]) -> Result<BTreeMap<Vec<u8>, Vec<bool>>> {
    let mut matched: BTreeMap<Vec<u8>, Vec<bool>> = BTreeMap::new();
    for (n, set) in sets.iter().enumerate() {
        let listed = git.others_matching(source, &set.patterns)?;
        for path in crate::git::split_nul(&listed) {
            if !path.ends_with(b"/") {
                matched
                    .entry(path.to_vec())
                    .or_insert_with(|| vec![false; sets.len()])[n] = true;
            }
        }
    }
    if matched.is_empty() {
        return Ok(matched);
    }
    let candidates: Vec<&[u8]> = matched.keys().map(Vec::as_slice).collect();
    let out = git.ignored_among(source, candidates.join(&0u8))?;
    let ignored: HashSet<&[u8]> = crate::git::split_nul(&out).collect();
    Ok(matched
        .into_iter()
        .filter(|(path, _)| ignored.contains(path.as_slice()))
        .collect())
}

/// Copies the file or link `name` of the source's directory of `at` into the isolation's (made on
/// the way, beneath `into`): its size and whether it was cloned, or `None` when left out (gone,
/// neither file nor link, or reached through a link on either side).
fn copy_entry(into: &Dir, at: &mut Parent, name: &Path) -> io::Result<Option<(u64, bool)>> {
    if at.blocked {
        return Ok(None);
    }
    let Some(kind) = at.from.as_ref().map(|dir| dir.kind(name)).transpose()? else {
        return Ok(None);
    };
    if !matches!(kind, Some(Kind::File | Kind::Symlink)) {
        return Ok(None);
    }
    if at.into.is_none() {
        let rel = at.rel.clone().unwrap_or_default();
        match into.create_dirs(&rel) {
            Ok(dir) => at.into = Some(dir),
            Err(e) if crate::base::beneath::is_link_error(&e) => {
                at.blocked = true;
                return Ok(None);
            }
            Err(e) => return Err(e),
        }
    }
    let (Some(src_dir), Some(to)) = (&at.from, &at.into) else {
        return Ok(None);
    };
    match copy_one(src_dir, to, name, kind == Some(Kind::Symlink)) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        other => other.map(Some),
    }
}

/// Copies one file (cloned when it can be) or symbolic link `name` of `from` to `to`; returns
/// its size and whether it was cloned. Setuid, setgid and sticky bits are left out.
fn copy_one(from: &Dir, to: &Dir, name: &Path, link: bool) -> io::Result<(u64, bool)> {
    if link {
        let target = rustix::fs::readlinkat(from.fd(), name, Vec::new())?;
        rustix::fs::symlinkat(target.as_c_str(), to.fd(), name)?;
        return Ok((0, false));
    }
    let mut src = from.open_file(name)?;
    let meta = src.metadata()?;
    let mut dst = to.create_new(name, 0o600)?;
    let cloned = rustix::fs::ioctl_ficlone(&dst, &src).is_ok();
    if !cloned {
        io::copy(&mut src, &mut dst)?;
    }
    // The source's times, so that the next bind can tell a kept copy that is still the same.
    dst.set_times(
        fs::FileTimes::new()
            .set_accessed(meta.accessed()?)
            .set_modified(meta.modified()?),
    )?;
    dst.set_permissions(fs::Permissions::from_mode(
        meta.permissions().mode() & 0o777,
    ))?;
    Ok((meta.len(), cloned))
}
