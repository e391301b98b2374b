//! A run's quarantine object directory. Inside the sandbox the repository's object store is
//! read-only; git writes the command's new objects (commits on the detached HEAD, `git add`)
//! here instead, with the real store as an alternate. After the run, a3s-iso checks every new
//! object as a push would be checked and only then moves them into the store. Nothing the
//! command wrote can replace or delete an existing object.

use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result};
use crate::git::Git;
use crate::repo::Repo;
use crate::state::Store;

/// A run's quarantine: `<state>/quarantine/<run id>-<maker>/` (see `scratch`), removed when
/// dropped.
#[derive(Debug)]
pub struct Quarantine {
    dir: PathBuf,
}

impl Quarantine {
    /// Creates an empty quarantine for a run, named after the run and this process (so that
    /// the next command removes it if the run is killed).
    pub fn create(store: &Store, run_id: &str) -> Result<Quarantine> {
        let dir = store
            .dir()
            .join("quarantine")
            .join(crate::scratch::owned_name(run_id));
        std::fs::create_dir_all(dir.join("pack"))
            .ctx(|| format!("cannot create {}", dir.display()))?;
        Ok(Quarantine { dir })
    }

    /// The object directory the command writes to.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The variables that point the command's git at the quarantine, with the repository's
    /// store as an alternate, and keep it from packing refs or objects (it cannot write them).
    pub fn environment(&self, repo: &Repo) -> Vec<(String, PathBuf)> {
        let mut vars = vec![
            ("GIT_OBJECT_DIRECTORY".to_string(), self.dir.clone()),
            (
                "GIT_ALTERNATE_OBJECT_DIRECTORIES".to_string(),
                repo.common_dir.join("objects"),
            ),
        ];
        let settings = [("gc.auto", "0"), ("maintenance.auto", "false")];
        vars.push(("GIT_CONFIG_COUNT".into(), settings.len().to_string().into()));
        for (i, (key, value)) in settings.iter().enumerate() {
            vars.push((format!("GIT_CONFIG_KEY_{i}"), PathBuf::from(key)));
            vars.push((format!("GIT_CONFIG_VALUE_{i}"), PathBuf::from(value)));
        }
        vars
    }

    /// Checks and moves the quarantined objects into the repository's store; returns how many
    /// moved. Anything the command pointed the quarantine at (`info/alternates`) is dropped
    /// first, so only objects it really wrote are considered.
    pub fn migrate(&self, git: &Git, repo: &Repo) -> Result<usize> {
        let info = self.dir.join("info");
        if std::fs::symlink_metadata(&info).is_ok() {
            std::fs::remove_dir_all(&info).ctx(|| format!("cannot remove {}", info.display()))?;
        }
        if !holds_files(&self.dir) {
            return Ok(0);
        }
        git.copy_objects(&repo.toplevel, &self.dir)
    }
}

/// Whether any file lies under `dir` (a run that wrote no object leaves only empty folders,
/// and git need not be asked).
fn holds_files(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|entry| match entry.file_type() {
        Ok(kind) if kind.is_dir() => holds_files(&entry.path()),
        Ok(_) => true,
        Err(_) => true,
    })
}

impl Drop for Quarantine {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
