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

use crate::beneath::{Dir, Kind};
use crate::error::{Error, IoContext, Result};
use crate::git::Git;
use crate::include::{PatternOrigin, PatternSet};

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

/// Copies the source's ignored files that `sets` select into `dest`, a new isolation at
/// `revision`. A path the isolation has already is left as it is, unless it is a file or link
/// that `revision` does not track (kept in the pool's spare the isolation was made from) and
/// differs from the source's in kind, size, modification time, mode or link target: then the
/// source's is copied over it.
pub(crate) fn copy(
    git: &Git,
    (source, dest): (&Path, &Path),
    revision: &str,
    sets: &[PatternSet],
) -> Result<CopyReport> {
    let selected = select(git, source, sets)?;
    let mut report = CopyReport {
        sources: sets
            .iter()
            .map(|set| CopySource {
                from: set.origin,
                files: 0,
            })
            .collect(),
        ..CopyReport::default()
    };
    let from = Dir::open(source).ctx(|| format!("cannot open {}", source.display()))?;
    let into = Dir::open(dest).ctx(|| format!("cannot open {}", dest.display()))?;
    let mut tracked = None;
    for (path, selected_by) in selected {
        let rel = Path::new(OsStr::from_bytes(&path));
        let stale = match into.kind(rel) {
            Ok(None) => false,
            Ok(Some(Kind::File | Kind::Symlink)) => {
                let tracked = match &tracked {
                    Some(tracked) => tracked,
                    None => tracked.insert(tracked_paths(git, source, revision)?),
                };
                !tracked.contains(path.as_slice()) && differs(&from, &into, rel)
            }
            _ => false,
        };
        if stale {
            into.remove(rel)
                .ctx(|| format!("cannot replace {}", dest.join(rel).display()))?;
        } else if !matches!(into.kind(rel), Ok(None)) {
            report.skipped += 1;
            continue;
        }
        let copied = copy_entry(&from, &into, rel)
            .map_err(|e| Error::io(format!("cannot copy {}", source.join(rel).display()), e))?;
        let Some((bytes, cloned)) = copied else {
            continue;
        };
        report.files += 1;
        report.bytes += bytes;
        report.cloned += u64::from(cloned);
        for (source, chosen) in report.sources.iter_mut().zip(selected_by) {
            source.files += u64::from(chosen);
        }
    }
    Ok(report)
}

/// The paths `revision` tracks.
fn tracked_paths(git: &Git, source: &Path, revision: &str) -> Result<HashSet<Vec<u8>>> {
    let listed = git
        .at(source)
        .args([
            "ls-tree",
            "-r",
            "-z",
            "--name-only",
            "--full-tree",
            revision,
        ])
        .run()?;
    Ok(crate::git::split_nul(&listed).map(<[u8]>::to_vec).collect())
}

/// Whether the entries at `rel` beneath `from` and `into` differ in kind, size, modification
/// time, permission bits or link target (`false` when either cannot be looked at).
fn differs(from: &Dir, into: &Dir, rel: &Path) -> bool {
    let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
        return false;
    };
    let look = |dir: &Dir| -> io::Result<(rustix::fs::Stat, Option<std::ffi::CString>)> {
        let dir = dir.dir(parent)?;
        let st = rustix::fs::statat(dir.fd(), name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)?;
        let target = (crate::beneath::kind_of(st.st_mode) == Kind::Symlink)
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

/// The source's untracked files that some set matches and its ignore rules ignore, each with
/// which sets matched it, in path order. Directories listed whole (nested repositories) are
/// never copied, so they are left out here.
fn select(git: &Git, source: &Path, sets: &[PatternSet]) -> Result<BTreeMap<Vec<u8>, Vec<bool>>> {
    let mut matched: BTreeMap<Vec<u8>, Vec<bool>> = BTreeMap::new();
    for (n, set) in sets.iter().enumerate() {
        let mut list = git
            .at(source)
            .args(["ls-files", "-z", "--others", "--ignored"]);
        for pattern in &set.patterns {
            list = list.arg(format!("--exclude={pattern}"));
        }
        for path in crate::git::split_nul(&list.run()?) {
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
    let out = git
        .at(source)
        .args(["check-ignore", "--stdin", "-z"])
        .stdin(candidates.join(&0u8))
        .output()?;
    // Exit 1: none of them is ignored.
    if !matches!(out.exit_code, Some(0 | 1)) {
        return Err(crate::git::failure_of(
            vec!["check-ignore".into(), "--stdin".into(), "-z".into()],
            out.exit_code,
            out.stderr,
        ));
    }
    let ignored: HashSet<&[u8]> = crate::git::split_nul(&out.stdout).collect();
    Ok(matched
        .into_iter()
        .filter(|(path, _)| ignored.contains(path.as_slice()))
        .collect())
}

/// Copies the file or symbolic link at `rel` beneath `from` to the same place beneath `into`
/// (creating the directories on the way); returns its size and whether it was cloned, or
/// `None` when it was left out: gone, not a file or a link, or reached through a link on
/// either side.
fn copy_entry(from: &Dir, into: &Dir, rel: &Path) -> io::Result<Option<(u64, bool)>> {
    let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
        return Ok(None);
    };
    let name = Path::new(name);
    let left_out =
        |e: &io::Error| crate::beneath::is_link_error(e) || e.kind() == io::ErrorKind::NotFound;
    let src_dir = match from.dir(parent) {
        Ok(dir) => dir,
        Err(e) if left_out(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    let kind = src_dir.kind(name)?;
    if !matches!(kind, Some(Kind::File | Kind::Symlink)) {
        return Ok(None);
    }
    let to = match into.create_dirs(parent) {
        Ok(dir) => dir,
        Err(e) if crate::beneath::is_link_error(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    match copy_one(&src_dir, &to, name, kind == Some(Kind::Symlink)) {
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
