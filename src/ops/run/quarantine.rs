//! A run's quarantine object directory: the sandbox's git writes new objects here, the
//! read-only store an alternate. After the run each is checked as a push would be and only then
//! moved in, so nothing the command wrote can replace or delete an existing object.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::base::beneath::{Dir, Kind};
use crate::base::error::{IoContext, Result};
use crate::base::ids::RunId;
use crate::base::warning::{RunWarning, Warning};
use crate::git::repo::Repo;
use crate::git::{Git, Receiver};
use crate::store::layout::StateDir;
use crate::store::state::Store;

/// A run's quarantine: `<state>/quarantine/<run id>-<maker>/`, removed when dropped.
#[derive(Debug)]
pub struct Quarantine {
    dir: PathBuf,
    /// The object directories of the isolation's submodules (see [`Quarantine::environment`]).
    modules: Vec<PathBuf>,
    /// The isolation's admin dir, where the submodules' stores are found again after the run.
    admin: PathBuf,
    /// Scratch space for the private git dirs that copy objects into them.
    scratch: PathBuf,
}

impl Quarantine {
    /// An empty quarantine for a run in the isolation at `admin`, named after the run and this
    /// process (so the next command removes it if the run is killed).
    pub fn for_isolation(store: &Store, run_id: &RunId, admin: &Path) -> Result<Quarantine> {
        let (modules, _) = crate::services::nested::module_stores(admin);
        let dir = store
            .path(StateDir::Quarantine)
            .join(crate::base::maker::owned_name(run_id));
        std::fs::create_dir_all(dir.join("pack"))
            .ctx(|| format!("cannot create {}", dir.display()))?;
        Ok(Quarantine {
            dir,
            modules: usable(modules),
            admin: admin.to_path_buf(),
            scratch: store.scratch_dir(),
        })
    }

    /// The object directory the command writes to.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The variables that point git at the quarantine, the store (and the submodules' stores,
    /// so git there sees its history) as alternates, and keep it from packing.
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

    /// Checks and moves the quarantined objects into the store; returns how many moved, and
    /// warnings for what was left out. The command's `info/alternates` and every link, FIFO or
    /// socket are dropped first (never followed), so only objects it wrote count.
    ///
    /// The submodules' stores are alternates for the check, and get the objects too (through a
    /// private git dir). The command could write them, so they are found and checked again
    /// now, beneath the admin dir without a link: one that no longer passes is left out.
    pub fn migrate(&self, git: &Git, repo: &Repo) -> Result<(usize, Vec<Warning>)> {
        let mut warnings = Vec::new();
        let quarantine =
            Dir::open(&self.dir).ctx(|| format!("cannot open {}", self.dir.display()))?;
        quarantine
            .remove(Path::new("info"))
            .ctx(|| format!("cannot remove {}", self.dir.join("info").display()))?;
        let (files, count) =
            sweep_strays(&quarantine, 0).ctx(|| format!("cannot read {}", self.dir.display()))?;
        if count > 0 {
            warnings.push(RunWarning::QuarantineLinksRemoved { count }.into());
        }
        if files == 0 {
            return Ok((0, warnings));
        }
        let (found, skipped) = crate::services::nested::module_stores(&self.admin);
        warnings.extend(skipped);
        let modules = usable(
            found
                .into_iter()
                .filter(|m| self.modules.contains(m))
                .collect(),
        );
        let alternates = (!modules.is_empty())
            .then(|| std::env::join_paths(&modules))
            .transpose()
            .map_err(|e| crate::base::error::Error::internal(format!("{e}")))?;
        let receiver = Receiver::Repository { alternates };
        let count = git.copy_objects(&repo.toplevel, &self.dir, receiver)?;
        let root_objects = repo.common_dir.join("objects");
        for module in &modules {
            let view = crate::git::ObjectView::new(git, &repo.common_dir, &[], &self.scratch)?;
            let receiver = Receiver::Store {
                view: &view,
                objects: module,
                alternate: &root_objects,
            };
            git.copy_objects(&repo.toplevel, &self.dir, receiver)?;
        }
        Ok((count, warnings))
    }
}

/// The stores git can take as alternates: one with `:` in its path would need quoting.
fn usable(modules: Vec<PathBuf>) -> Vec<PathBuf> {
    modules
        .into_iter()
        .filter(|m| !m.as_os_str().as_bytes().contains(&b':'))
        .collect()
}

/// How deep the quarantine's folders go (`pack/`, `ab/`, git's `tmp_objdir` folders).
const QUARANTINE_DEPTH: usize = 3;

/// Removes every entry under `dir` but regular files and git's directories; returns how many
/// files remain and how many entries went.
fn sweep_strays(dir: &Dir, depth: usize) -> std::io::Result<(usize, usize)> {
    let (mut files, mut dropped) = (0, 0);
    for entry in dir.entries()? {
        let name = Path::new(&entry.name);
        match entry.kind {
            Kind::File => files += 1,
            Kind::Dir if depth < QUARANTINE_DEPTH => {
                let (f, d) = sweep_strays(&dir.dir(name)?, depth + 1)?;
                files += f;
                dropped += d;
            }
            Kind::Dir | Kind::Symlink | Kind::Special => {
                dir.remove(name)?;
                dropped += 1;
            }
        }
    }
    Ok((files, dropped))
}

impl Drop for Quarantine {
    fn drop(&mut self) {
        let _ = crate::base::beneath::remove_path(&self.dir);
    }
}
