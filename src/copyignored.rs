//! `bind --copy-ignored`: ignored files of the source (build caches such as `target/` or
//! `node_modules/`) copied into a new isolation, each cloned (`FICLONE`: the copy shares the
//! source's blocks until either is written) where the file system can, else copied.

use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde::Serialize;

use crate::beneath::Dir;
use crate::error::{Error, IoContext, Result};
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
    /// Paths already in the isolation (tracked there), left as they were.
    pub skipped: u64,
}

/// Copies the source's ignored files under `specs` (pathspecs) into `dest`.
pub(crate) fn copy(git: &Git, source: &Path, dest: &Path, specs: &[String]) -> Result<CopyReport> {
    let listed = git
        .at(source)
        .args([
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--",
        ])
        .args(specs)
        .run()?;
    let mut report = CopyReport::default();
    // Written beneath the new isolation's handle: a link on the way (a tracked symbolic link
    // where the source has a directory) is never followed; that path is skipped.
    let into = Dir::open(dest).ctx(|| format!("cannot open {}", dest.display()))?;
    for rel in crate::git::split_nul(&listed) {
        let rel = Path::new(std::ffi::OsStr::from_bytes(rel));
        let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
            continue;
        };
        if !matches!(into.kind(rel), Ok(None)) {
            report.skipped += 1;
            continue;
        }
        let parent = match into.create_dirs(parent) {
            Ok(parent) => parent,
            Err(e) if crate::beneath::is_link_error(&e) => {
                report.skipped += 1;
                continue;
            }
            Err(e) => {
                return Err(Error::io(
                    format!("cannot create {}", dest.join(rel).display()),
                    e,
                ));
            }
        };
        let from = source.join(rel);
        let (bytes, cloned) = copy_one(&from, &parent, Path::new(name))
            .map_err(|e| Error::io(format!("cannot copy {}", from.display()), e))?;
        report.files += 1;
        report.bytes += bytes;
        report.cloned += u64::from(cloned);
    }
    Ok(report)
}

/// Copies one file (cloned when it can be) or symbolic link to `name` in `to`; returns its
/// size and whether it was cloned. Anything else (a socket, a FIFO) is left out, and so are
/// setuid, setgid and sticky bits.
fn copy_one(from: &Path, to: &Dir, name: &Path) -> io::Result<(u64, bool)> {
    use std::os::unix::fs::OpenOptionsExt;
    let meta = fs::symlink_metadata(from)?;
    if meta.file_type().is_symlink() {
        rustix::fs::symlinkat(fs::read_link(from)?, to.fd(), name)?;
        return Ok((0, false));
    }
    if !meta.is_file() {
        return Ok((0, false));
    }
    let mut src = fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(from)?;
    let mut dst = to.create_new(name, 0o600)?;
    let cloned = rustix::fs::ioctl_ficlone(&dst, &src).is_ok();
    if !cloned {
        io::copy(&mut src, &mut dst)?;
    }
    dst.set_permissions(fs::Permissions::from_mode(
        meta.permissions().mode() & 0o777,
    ))?;
    Ok((meta.len(), cloned))
}
