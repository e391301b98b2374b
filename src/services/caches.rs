//! The package managers' caches a run gets with the preset of their registry (`@npm`,
//! `@pypi`, `@crates`): a cache a3s-iso keeps per user outside every isolation (`private`,
//! the default), the user's own (`user`, only when granted) or none. A cache lives outside
//! the isolation, so what a tool keeps there never enters a change set.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::base::error::{Error, Result};

pub use crate::base::sandbox::{CacheMode, CacheReport};

/// A package manager a preset serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tool {
    Npm,
    Pip,
    Cargo,
}

/// The presets whose registry a package manager downloads from: that tool, its name, and the
/// variable that moves its cache (cargo: its whole home, where it keeps its registry index,
/// downloads and sources).
const PRESET_TOOLS: &[(&str, Tool, &str, &str)] = &[
    ("@npm", Tool::Npm, "npm", "npm_config_cache"),
    ("@pypi", Tool::Pip, "pip", "PIP_CACHE_DIR"),
    ("@crates", Tool::Cargo, "cargo", "CARGO_HOME"),
];

/// What a run's caches need: writable directories, variables, and what the run reports.
#[derive(Debug, Clone, Default)]
pub struct CachePlan {
    /// Directories made writable for the command.
    pub writable: Vec<PathBuf>,
    /// Variables set for the command.
    pub env: Vec<(String, OsString)>,
    /// One per cache.
    pub report: Vec<CacheReport>,
}

/// Where the caches of each tool are, for one user.
#[derive(Debug, Clone)]
pub struct CacheRoots {
    /// a3s-iso's caches (`<data>/caches`); `None` without a per-user data directory.
    pub private: Option<PathBuf>,
    /// The home directory.
    pub home: Option<PathBuf>,
    /// `$XDG_CACHE_HOME`, when absolute.
    pub xdg_cache: Option<PathBuf>,
    /// `$CARGO_HOME`, when absolute.
    pub cargo_home: Option<PathBuf>,
}

impl CacheRoots {
    /// This process's user: the data directory, `HOME`, `XDG_CACHE_HOME`, `CARGO_HOME`.
    pub fn of_user() -> CacheRoots {
        let absolute = |name: &str| {
            std::env::var_os(name)
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        CacheRoots {
            private: crate::store::state::user_data_dir().map(|d| d.join("caches")),
            home: absolute("HOME"),
            xdg_cache: absolute("XDG_CACHE_HOME"),
            cargo_home: absolute("CARGO_HOME"),
        }
    }
}

/// The caches of the presets among `given` (the `--allow-host` entries as given), under
/// `mode`; the directories are made here when missing.
pub fn prepare(given: &[String], mode: CacheMode, roots: &CacheRoots) -> Result<CachePlan> {
    let mut plan = CachePlan::default();
    if mode == CacheMode::None {
        return Ok(plan);
    }
    for (preset, tool, name, variable) in PRESET_TOOLS {
        if !given.iter().any(|g| g == preset) {
            continue;
        }
        let (dirs, env) = match (mode, &roots.private) {
            (CacheMode::User, _) => user_cache(*tool, roots),
            // a3s-iso's own: one directory, named after the tool.
            (_, Some(root)) => Some((vec![root.join(name)], true)),
            (_, None) => None,
        }
        .ok_or_else(|| no_place(name, mode))?;
        for dir in &dirs {
            make_dir(dir, mode == CacheMode::Private)?;
        }
        let dirs: Vec<PathBuf> = dirs
            .iter()
            .map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| d.clone()))
            .collect();
        if let Some(value) = env.then(|| dirs[0].clone()) {
            plan.env.push(((*variable).into(), value.into()));
        }
        plan.writable.extend(dirs.iter().cloned());
        plan.report.push(CacheReport {
            preset: (*preset).to_string(),
            tool: (*name).to_string(),
            mode,
            writable: dirs,
        });
    }
    Ok(plan)
}

/// The user's own cache of `tool`, where the tool looks by default. cargo's home holds more
/// than its cache (its binaries, configuration and logins): only the registry and git
/// checkouts are writable, with the lock files cargo takes in its home while it downloads.
fn user_cache(tool: Tool, roots: &CacheRoots) -> Option<(Vec<PathBuf>, bool)> {
    let home = roots.home.as_ref();
    match tool {
        Tool::Npm => Some((vec![home?.join(".npm")], true)),
        Tool::Pip => {
            let cache = roots.xdg_cache.clone().or(home.map(|h| h.join(".cache")));
            Some((vec![cache?.join("pip")], true))
        }
        Tool::Cargo => {
            let cargo = roots
                .cargo_home
                .clone()
                .or(home.map(|h| h.join(".cargo")))?;
            Some((vec![cargo.join("registry"), cargo.join("git")], false))
        }
    }
}

/// Makes a cache directory (only its owner may enter one a3s-iso makes). a3s-iso's own
/// (`own`) must be a directory, not a link: what a link leads to is never made writable.
fn make_dir(dir: &Path, own: bool) -> Result<()> {
    let link = std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink());
    if own && link {
        return Err(Error::io(
            format!("the cache {} is a link, not a directory", dir.display()),
            std::io::Error::from(std::io::ErrorKind::InvalidInput),
        ));
    }
    if dir.is_dir() {
        return Ok(());
    }
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| Error::io(format!("cannot create the cache {}", dir.display()), e))
}

fn no_place(tool: &str, mode: CacheMode) -> Error {
    Error::io(
        format!("no place for the {tool} cache ({mode}): no per-user data directory or HOME"),
        std::io::Error::from(std::io::ErrorKind::NotFound),
    )
}

#[cfg(test)]
mod tests {
    use crate::services::caches::*;

    fn roots(dir: &Path) -> CacheRoots {
        CacheRoots {
            private: Some(dir.join("data/caches")),
            home: Some(dir.join("home")),
            xdg_cache: None,
            cargo_home: None,
        }
    }

    fn given(entries: &[&str]) -> Vec<String> {
        entries.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn each_preset_with_a_package_manager_gets_its_cache() {
        let dir = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(dir.path()).unwrap();
        let all = given(&["@npm", "@pypi", "@crates", "@github", "example.com"]);
        let plan = prepare(&all, CacheMode::Private, &roots(&dir)).unwrap();
        let names: Vec<&str> = plan.env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["npm_config_cache", "PIP_CACHE_DIR", "CARGO_HOME"]);
        for tool in ["npm", "pip", "cargo"] {
            let cache = dir.join("data/caches").join(tool);
            assert!(cache.is_dir(), "{tool}");
            assert!(plan.writable.contains(&cache), "{tool}");
        }
        let user = prepare(&all, CacheMode::User, &roots(&dir)).unwrap();
        let home = dir.join("home");
        assert_eq!(
            user.writable,
            [
                home.join(".npm"),
                home.join(".cache/pip"),
                home.join(".cargo/registry"),
                home.join(".cargo/git")
            ]
        );
        // cargo keeps its own home: only its cache directories are writable.
        assert!(!user.env.iter().any(|(k, _)| k == "CARGO_HOME"));
        let none = prepare(&all, CacheMode::None, &roots(&dir)).unwrap();
        assert!(none.writable.is_empty() && none.env.is_empty());
        let plain = prepare(&given(&["@github"]), CacheMode::Private, &roots(&dir)).unwrap();
        assert!(plain.report.is_empty());
    }

    #[test]
    fn a_private_cache_that_is_a_link_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(dir.path()).unwrap();
        let secret = dir.join("home/.ssh");
        std::fs::create_dir_all(&secret).unwrap();
        std::fs::create_dir_all(dir.join("data/caches")).unwrap();
        std::os::unix::fs::symlink(&secret, dir.join("data/caches/npm")).unwrap();
        let err = prepare(&given(&["@npm"]), CacheMode::Private, &roots(&dir)).unwrap_err();
        assert!(err.to_string().contains("is a link"), "{err}");
    }
}
