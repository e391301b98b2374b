//! A run's quarantine object directory. Inside the sandbox the repository's object store is
//! read-only; git writes the command's new objects (commits on the detached HEAD, `git add`)
//! here instead, with the real store as an alternate. After the run, a3s-iso checks every new
//! object as a push would be checked and only then moves them into the store. Nothing the
//! command wrote can replace or delete an existing object.

use std::os::unix::ffi::OsStrExt;
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
    /// The object directories of the isolation's submodules (see [`Quarantine::environment`]).
    modules: Vec<PathBuf>,
    /// Scratch space for the private git dirs that copy objects into them.
    scratch: PathBuf,
}

impl Quarantine {
    /// Creates an empty quarantine for a run, named after the run and this process (so that
    /// the next command removes it if the run is killed).
    /// `modules`: the object directories of the isolation's submodules.
    pub fn create(store: &Store, run_id: &str, modules: Vec<PathBuf>) -> Result<Quarantine> {
        let dir = store
            .dir()
            .join("quarantine")
            .join(crate::scratch::owned_name(run_id));
        std::fs::create_dir_all(dir.join("pack"))
            .ctx(|| format!("cannot create {}", dir.display()))?;
        let modules = modules
            .into_iter()
            .filter(|m| !m.as_os_str().as_bytes().contains(&b':'))
            .collect();
        Ok(Quarantine {
            dir,
            modules,
            scratch: store.scratch_dir(),
        })
    }

    /// A quarantine for a run in the isolation whose admin dir is `admin`, with its
    /// submodules' object directories.
    pub fn for_isolation(store: &Store, run_id: &str, admin: &Path) -> Result<Quarantine> {
        Quarantine::create(store, run_id, crate::nested::module_stores(admin))
    }

    /// The object directory the command writes to.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The variables that point the command's git at the quarantine, with the repository's
    /// store as an alternate, and keep it from packing refs or objects (it cannot write them).
    ///
    /// The isolation's submodules' object directories are alternates too, so that git in a
    /// submodule still sees its own history (its new objects land here as well). A path with
    /// the separator `:` in it would need quoting: such a submodule goes without.
    pub fn environment(&self, repo: &Repo) -> Vec<(String, PathBuf)> {
        let mut alternates = std::ffi::OsString::from(repo.common_dir.join("objects"));
        for module in &self.modules {
            alternates.push(":");
            alternates.push(module);
        }
        let mut vars = vec![
            ("GIT_OBJECT_DIRECTORY".to_string(), self.dir.clone()),
            (
                "GIT_ALTERNATE_OBJECT_DIRECTORIES".to_string(),
                PathBuf::from(alternates),
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
    ///
    /// Objects of the submodules' commits link to their history in the submodules' own stores
    /// (`modules` of [`Quarantine::create`]): those are the superproject's alternates for the
    /// check, and the objects
    /// are copied into each submodule's store too (through a private git dir: nothing of the
    /// submodule's git dir is read but objects), so its git finds its new commits.
    pub fn migrate(&self, git: &Git, repo: &Repo) -> Result<usize> {
        let info = self.dir.join("info");
        if std::fs::symlink_metadata(&info).is_ok() {
            std::fs::remove_dir_all(&info).ctx(|| format!("cannot remove {}", info.display()))?;
        }
        if !holds_files(&self.dir) {
            return Ok(0);
        }
        let mut receiver = git.at(&repo.toplevel);
        if !self.modules.is_empty() {
            let joined = std::env::join_paths(&self.modules)
                .map_err(|e| crate::error::Error::internal(format!("{e}")))?;
            receiver = receiver.env("GIT_ALTERNATE_OBJECT_DIRECTORIES", joined);
        }
        let count = git.copy_objects(&repo.toplevel, &self.dir, receiver)?;
        let root_objects = repo.common_dir.join("objects");
        for module in &self.modules {
            let view = crate::git::ObjectView::new(git, &repo.common_dir, &[], &self.scratch)?;
            let receiver = view
                .cmd()
                .env("GIT_OBJECT_DIRECTORY", module)
                .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", &root_objects);
            git.copy_objects(&repo.toplevel, &self.dir, receiver)?;
        }
        Ok(count)
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
