//! Moving what git inside a run changed in the admin dir's layer down into the admin dir,
//! where git outside sees it: files copied, whiteouts deleting, opaque directories replacing.
//! `HEAD`, `commondir` and `gitdir` are the caller's. Each entry leaves the layer once down, so
//! moving down again after a crash finishes what is left.

use std::ffi::OsStr;
use std::io;
use std::path::Path;

use crate::base::beneath::{Dir, Kind};
use crate::base::warning::{RunWarning, Warning};

use crate::recovery::session_git::view::{is_opaque, is_whiteout};

/// The entries of the admin dir's top level that never move down.
const KEPT: [&str; 3] = ["HEAD", "commondir", "gitdir"];

/// Moves the layer `upper` down into `real`; a link or special file is dropped, with a warning.
pub(crate) fn move_down(upper: &Dir, real: &Dir, warnings: &mut Vec<Warning>) -> io::Result<()> {
    merge(upper, real, true, warnings)
}

fn merge(upper: &Dir, real: &Dir, top: bool, warnings: &mut Vec<Warning>) -> io::Result<()> {
    for entry in upper.entries()? {
        let name = Path::new(&entry.name);
        if top && KEPT.iter().any(|k| OsStr::new(k) == entry.name) {
            continue;
        }
        match entry.kind {
            Kind::Special if is_whiteout(upper, name) => {
                real.remove(name)?;
            }
            Kind::Dir => {
                let sub = upper.dir(name)?;
                if is_opaque(&sub) {
                    real.remove(name)?;
                    clear_opaque(&sub);
                } else if real.kind(name)?.is_some_and(|k| k != Kind::Dir) {
                    real.remove(name)?;
                }
                let real_sub = real.create_dirs(name)?;
                merge(&sub, &real_sub, false, warnings)?;
            }
            Kind::File => {
                if real.kind(name)? == Some(Kind::Dir) {
                    real.remove(name)?;
                }
                let mut from = upper.open_file(name)?;
                real.put_with(name, |to| io::copy(&mut from, to).map(drop))?;
            }
            Kind::Symlink | Kind::Special => warnings.push(
                RunWarning::AdminLinkNotKept {
                    path: real.path().join(name),
                }
                .into(),
            ),
        }
        upper.remove(name)?;
    }
    Ok(())
}

/// Drops a directory's opaque mark once what it hid is gone, so moving down again keeps it.
fn clear_opaque(dir: &Dir) {
    for name in ["user.overlay.opaque", "trusted.overlay.opaque"] {
        let _ = rustix::fs::fremovexattr(dir.fd(), name);
    }
}

#[cfg(test)]
mod tests {
    use crate::recovery::session_git::movedown::*;

    fn whiteout(dir: &Path, name: &str) -> bool {
        use rustix::fs::{FileType, Mode, mknodat};
        let at = std::fs::File::open(dir).unwrap();
        let kind = FileType::CharacterDevice;
        mknodat(&at, name, kind, Mode::empty(), 0).is_ok()
    }

    #[test]
    fn files_move_down_whiteouts_delete_and_opaque_directories_replace() {
        let tmp = tempfile::tempdir().unwrap();
        let (upper, real) = (tmp.path().join("upper"), tmp.path().join("real"));
        for dir in [&upper, &real] {
            std::fs::create_dir_all(dir.join("rebase-merge")).unwrap();
        }
        std::fs::write(real.join("ORIG_HEAD"), "old\n").unwrap();
        std::fs::write(real.join("index"), "old index").unwrap();
        std::fs::write(real.join("rebase-merge/stale"), "stale").unwrap();
        std::fs::write(real.join("HEAD"), "outside\n").unwrap();
        std::fs::write(upper.join("index"), "new index").unwrap();
        std::fs::write(upper.join("HEAD"), "ref: refs/heads/feature\n").unwrap();
        std::fs::write(upper.join("rebase-merge/head-name"), "refs/heads/feature").unwrap();
        std::os::unix::fs::symlink("/etc", upper.join("planted")).unwrap();
        if !whiteout(&upper, "ORIG_HEAD") {
            // No whiteouts without privileges on this kernel: nothing more to check here.
            return;
        }
        let opaque = rustix::fs::setxattr(
            upper.join("rebase-merge").as_path(),
            "user.overlay.opaque",
            b"y",
            rustix::fs::XattrFlags::empty(),
        )
        .is_ok();
        let mut warnings = Vec::new();
        let (u, r) = (Dir::open(&upper).unwrap(), Dir::open(&real).unwrap());
        move_down(&u, &r, &mut warnings).unwrap();
        assert_eq!(
            std::fs::read_to_string(real.join("index")).unwrap(),
            "new index"
        );
        assert!(!real.join("ORIG_HEAD").exists());
        assert_eq!(
            std::fs::read_to_string(real.join("HEAD")).unwrap(),
            "outside\n"
        );
        assert_eq!(
            std::fs::read_to_string(real.join("rebase-merge/head-name")).unwrap(),
            "refs/heads/feature"
        );
        assert_eq!(real.join("rebase-merge/stale").exists(), !opaque);
        assert!(std::fs::symlink_metadata(real.join("planted")).is_err());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        // Everything moved left the layer; HEAD is the caller's.
        let left: Vec<_> = std::fs::read_dir(&upper).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }
}
