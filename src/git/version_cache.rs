//! What `git --version` said of a git binary, kept between commands in the user's cache dir
//! (`<cache>/a3s-iso/git-version/`): a command then starts no git only to learn the version.
//! The key is the binary's identity (its real path, device, inode, size and change times), so
//! a new binary at the same path (an upgrade) is asked again. Only a compiled program named
//! `git` is kept: a script or a multiplexing shim (asdf, mise) may run another git each time
//! with nothing of its own changed, so such a git is asked every time. The cache is an
//! optimisation: a file that cannot be read or written (a FIFO, a link, anything large) is
//! asked again, and never an error or a wait.

use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The most a cache file may hold: a key and a version line.
const ENTRY_LIMIT: u64 = 4096;

/// The version recorded for the binary `bin`, if it is still that binary.
pub(crate) fn recalled(bin: &Path) -> Option<String> {
    let (file, key) = entry(bin)?;
    let bytes = crate::base::fsutil::read_small_regular_file(&file, ENTRY_LIMIT).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (found, version) = text.split_once('\n')?;
    let version = version.strip_suffix('\n')?;
    (found == key && !version.is_empty() && !version.contains('\n')).then(|| version.to_string())
}

/// Records what `bin` reported, written whole by rename (a reader never sees half of it).
pub(crate) fn keep(bin: &Path, version: &str) {
    let Some((file, key)) = entry(bin) else {
        return;
    };
    let Some(dir) = file.parent() else {
        return;
    };
    let temp = dir.join(format!(".tmp-{}", crate::base::fsutil::unique_suffix()));
    let written = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&temp, format!("{key}\n{version}\n")))
        .and_then(|()| std::fs::rename(&temp, &file));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
}

/// The cache file of the binary's real path, and the key of its identity now; `None` for a
/// binary that is not kept.
fn entry(bin: &Path) -> Option<(PathBuf, String)> {
    let real = std::fs::canonicalize(bin).ok()?;
    let meta = compiled_git(&real)?;
    let dirs = directories::ProjectDirs::from("", "", "a3s-iso")?;
    let name = hex::encode(Sha256::digest(real.as_os_str().as_bytes()));
    let identity = format!(
        "{} {} {} {}.{} {}.{}",
        meta.dev(),
        meta.ino(),
        meta.size(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec()
    );
    let mut hasher = Sha256::new();
    hasher.update(real.as_os_str().as_bytes());
    hasher.update([0]);
    hasher.update(identity.as_bytes());
    let key = hex::encode(hasher.finalize());
    Some((dirs.cache_dir().join("git-version").join(&name[..32]), key))
}

/// The metadata of `real` when it is a regular file named `git` holding an ELF program (read
/// without waiting: a FIFO is not opened for a wait).
fn compiled_git(real: &Path) -> Option<std::fs::Metadata> {
    if real.file_name()? != "git" {
        return None;
    }
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(real)
        .ok()?;
    let meta = file.metadata().ok()?;
    let mut magic = [0u8; 4];
    (meta.is_file() && file.read_exact(&mut magic).is_ok() && magic == *b"\x7fELF").then_some(meta)
}
