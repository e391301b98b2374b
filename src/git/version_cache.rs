//! What `git --version` said of a git binary, kept between commands in the user's cache dir
//! (`<cache>/a3s-iso/git-version/`): a command then starts no git only to learn the version.
//! The key is the binary's identity (its real path, device, inode, size and change times), so
//! a new binary at the same path (an upgrade) is asked again. The cache is an optimisation: a
//! file that cannot be read or written is asked again, and never an error.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The version recorded for the binary `bin`, if it is still that binary.
pub(crate) fn recalled(bin: &Path) -> Option<String> {
    let (file, key) = entry(bin)?;
    let text = std::fs::read_to_string(file).ok()?;
    let (found, version) = text.split_once('\n')?;
    let version = version.trim_end_matches('\n');
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

/// The cache file of the binary's real path, and the key of its identity now.
fn entry(bin: &Path) -> Option<(PathBuf, String)> {
    let real = std::fs::canonicalize(bin).ok()?;
    let meta = std::fs::metadata(&real).ok()?;
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
