//! Git's version, kept between commands beside a3s-iso's other caches
//! (`$XDG_CACHE_HOME/a3s-iso/git-versions`), so that a command does not start `git --version`
//! every time. An answer is used only for the very same binary: the same path, device,
//! inode, size, modification and change time (replacing or rewriting the file moves the change
//! time). A script (anything but a native executable) is asked every time, since the git it
//! runs can change without it. Best effort throughout: a cache that cannot be read or written
//! costs one `git --version`.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The most entries kept: one per git binary a user runs a3s-iso with.
const MAX_ENTRIES: usize = 16;

fn cache_file() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "a3s-iso").map(|d| d.cache_dir().join("git-versions"))
}

/// What identifies one version of the binary at `bin`, or `None` for a script.
fn identity(bin: &Path) -> Option<String> {
    let meta = std::fs::metadata(bin).ok()?;
    let mut magic = [0u8; 4];
    std::io::Read::read_exact(&mut std::fs::File::open(bin).ok()?, &mut magic).ok()?;
    if &magic != b"\x7fELF" {
        return None;
    }
    Some(format!(
        "{} {} {} {} {}.{} {}.{}",
        hex::encode(bin.as_os_str().as_bytes()),
        meta.dev(),
        meta.ino(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec()
    ))
}

/// The version noted for this very binary.
pub(crate) fn recall(bin: &Path) -> Option<String> {
    let identity = identity(bin)?;
    let kept = std::fs::read_to_string(cache_file()?).ok()?;
    kept.lines().find_map(|line| {
        let (id, version) = line.split_once('\t')?;
        (id == identity).then(|| version.to_string())
    })
}

/// Notes `version` for this binary (written whole, then renamed into place).
pub(crate) fn keep(bin: &Path, version: &str) {
    let (Some(identity), Some(file)) = (identity(bin), cache_file()) else {
        return;
    };
    if version.contains(['\t', '\n']) {
        return;
    }
    let kept = std::fs::read_to_string(&file).unwrap_or_default();
    let mut lines: Vec<&str> = kept
        .lines()
        .filter(|line| line.split_once('\t').is_some_and(|(id, _)| id != identity))
        .collect();
    let entry = format!("{identity}\t{version}");
    lines.insert(0, &entry);
    lines.truncate(MAX_ENTRIES);
    let Some(dir) = file.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let temp = dir.join(crate::base::maker::owned_name("git-versions"));
    let written = std::fs::write(&temp, lines.join("\n") + "\n").is_ok();
    if !written || std::fs::rename(&temp, &file).is_err() {
        let _ = std::fs::remove_file(&temp);
    }
}
