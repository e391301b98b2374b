//! `bind --copy-ignored`: ignored files of the source (build caches such as `target/` or
//! `node_modules/`) copied into a new isolation, each cloned (`FICLONE`: the copy shares the
//! source's blocks until either is written) where the file system can, else copied.

use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde::Serialize;

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
    for rel in crate::git::split_nul(&listed) {
        let rel = Path::new(std::ffi::OsStr::from_bytes(rel));
        let (from, to) = (source.join(rel), dest.join(rel));
        if fs::symlink_metadata(&to).is_ok() {
            report.skipped += 1;
            continue;
        }
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).ctx(|| format!("cannot create {}", parent.display()))?;
        }
        let (bytes, cloned) = copy_one(&from, &to)
            .map_err(|e| Error::io(format!("cannot copy {}", from.display()), e))?;
        report.files += 1;
        report.bytes += bytes;
        report.cloned += u64::from(cloned);
    }
    Ok(report)
}

/// Copies one file (cloned when it can be) or symbolic link; returns its size and whether it
/// was cloned. Anything else (a socket, a FIFO) is left out.
fn copy_one(from: &Path, to: &Path) -> io::Result<(u64, bool)> {
    let meta = fs::symlink_metadata(from)?;
    if meta.file_type().is_symlink() {
        std::os::unix::fs::symlink(fs::read_link(from)?, to)?;
        return Ok((0, false));
    }
    if !meta.is_file() {
        return Ok((0, false));
    }
    let mut src = fs::File::open(from)?;
    let mut dst = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)?;
    let cloned = rustix::fs::ioctl_ficlone(&dst, &src).is_ok();
    if !cloned {
        io::copy(&mut src, &mut dst)?;
    }
    dst.set_permissions(fs::Permissions::from_mode(
        meta.permissions().mode() & 0o7777,
    ))?;
    Ok((meta.len(), cloned))
}
