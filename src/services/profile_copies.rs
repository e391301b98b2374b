//! A profile's copies of its home paths for one repository: made on first use from the real
//! home (never a hidden secret nor another profile's login), reviewed before a run (for a run
//! killed before its own review), and given to the run as mounts and written-back files.

use std::path::{Path, PathBuf};

use crate::base::error::{Error, Result};
use crate::base::invalid::Invalid;
use crate::base::warning::Warning;
use crate::services::profile::{Profile, store_dir};
use crate::services::profile_review::{Kept, make_private};

/// A profile's copies for the repository of `key`: `<data>/profiles/<name>/repos/<key>`.
pub fn kept_for(name: &str, key: &str) -> Option<Kept> {
    store_dir().map(|d| Kept {
        root: d.join(name).join("repos").join(key),
    })
}

/// What a profile gives a run inside the sandbox.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProfileMounts {
    /// Its copies of directories, mounted over the real ones.
    pub dirs: Vec<crate::base::sandbox::MountedDir>,
    /// Its files, seen over the real ones and written back to its copies.
    pub files: Vec<crate::services::writeback::FileGrant>,
    /// What the review held of a run killed before its own review.
    pub held: Vec<Warning>,
}

/// The profile's copies of its home paths for this repository and a user whose home is
/// `home`, each made on first use: from the real path when there is one (never a hidden
/// secret nor another profile's login), otherwise an empty directory, or no file until the
/// command writes one. What a killed run left unreviewed is reviewed first.
pub(crate) fn prepare(profile: &Profile, home: &Path, kept: &Kept) -> Result<ProfileMounts> {
    let mut mounts = ProfileMounts::default();
    if profile.writable.is_empty() {
        return Ok(mounts);
    }
    let kept_root = kept.home();
    make_private(&kept_root)?;
    let skip = not_copied(profile, home);
    let mut fresh = Vec::new();
    for entry in &profile.writable {
        let real = home.join(&entry.rel);
        let copy = kept_root.join(&entry.rel);
        no_link_on_the_way(&kept_root, &entry.rel)?;
        if seed(&real, &copy, entry.dir, &skip)? {
            fresh.push(entry.clone());
        }
        if entry.dir {
            let to = real;
            mounts
                .dirs
                .push(crate::base::sandbox::MountedDir { from: copy, to });
        } else {
            mounts.files.push(crate::services::writeback::FileGrant {
                at: real,
                kept: copy,
            });
        }
    }
    crate::services::profile_review::accept_seeded(kept, profile, &fresh)?;
    mounts.held = crate::services::profile_review::review(kept, profile)?;
    Ok(mounts)
}

/// The real paths a seed leaves out: every hidden secret and login but the profile's own.
fn not_copied(profile: &Profile, home: &Path) -> Vec<PathBuf> {
    let own: Vec<PathBuf> = profile.credentials.iter().map(|c| c.rel.clone()).collect();
    crate::base::sandbox::secrets::DEFAULT_HIDDEN
        .iter()
        .chain(crate::base::sandbox::secrets::AGENT_CREDENTIALS)
        .map(PathBuf::from)
        .filter(|rel| !own.contains(rel))
        .map(|rel| home.join(rel))
        .collect()
}

/// A kept copy is reached through no symbolic link: a run writes inside a kept directory, and a
/// link it left there (where a later profile keeps a path of its own) must never become what
/// is copied or mounted writable.
fn no_link_on_the_way(root: &Path, rel: &Path) -> Result<()> {
    let mut at = root.to_path_buf();
    for part in rel.components() {
        at.push(part);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Error::from(Invalid::LinkInProfile { path: at }));
        }
    }
    Ok(())
}

/// Makes the kept copy of one home path when there is none yet, copied aside from the real one and
/// renamed into place (a copy cut short is never taken for one); whether it copied anything.
fn seed(real: &Path, kept: &Path, dir: bool, skip: &[PathBuf]) -> Result<bool> {
    if std::fs::symlink_metadata(kept).is_ok() {
        return Ok(false);
    }
    let parent = kept.parent().unwrap_or(kept);
    make_private(parent)?;
    let real_meta = std::fs::metadata(real).ok();
    let fail = |e: std::io::Error| Error::io(format!("cannot copy {}", real.display()), e);
    let aside = parent.join(crate::base::maker::owned_name(".seeding"));
    match (dir, real_meta) {
        _ if skip.iter().any(|s| s == real) => return Ok(false),
        (true, Some(m)) if m.is_dir() => copy_tree(real, &aside, skip).map_err(fail)?,
        (true, _) => return make_private(kept).map(|()| false),
        (false, Some(m)) if m.is_file() => {
            std::fs::copy(real, &aside).map_err(fail)?;
        }
        (false, _) => return Ok(false),
    }
    match std::fs::rename(&aside, kept) {
        // Another run made the copy meanwhile: that one stands.
        Err(_) if std::fs::symlink_metadata(kept).is_ok() => {
            let _ = std::fs::remove_dir_all(&aside).or_else(|_| std::fs::remove_file(&aside));
            Ok(false)
        }
        done => done.map(|()| true).map_err(fail),
    }
}

/// Copies a directory tree: directories, regular files (with their modes) and links (as
/// links); anything else is left out, and so is each path of `skip`.
fn copy_tree(from: &Path, to: &Path, skip: &[PathBuf]) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if skip.contains(&source) {
            continue;
        }
        if kind.is_dir() {
            copy_tree(&source, &target, skip)?;
        } else if kind.is_file() {
            std::fs::copy(&source, &target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&source)?, &target)?;
        }
    }
    let mode = std::fs::metadata(from)?.permissions().mode();
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(mode))
}
