//! `bind --submodules`: the isolation's submodules initialised from the source's own copies of
//! them. Each is cloned from the git dir the source keeps for it (`modules/<name>` of the
//! source's git dir, else the git dir of the source's submodule checkout), through the file
//! transport allowed for that one command, never from the URL `.gitmodules` names: a bind needs
//! no network, and no `protocol.file.allow` of the user's. Submodules of submodules follow,
//! each from the source's copy of it.
//!
//! The configuration ends as `git submodule update --init` leaves it: the superproject's
//! `submodule.<name>.url` is what it was or what `.gitmodules` says (the local git dir is only
//! given to the one command), and the clone's remote names that URL again, so relative URLs of
//! the submodules inside it resolve as they do in the source, and a `git fetch` there goes where
//! the user's would.
//!
//! A submodule the source has not initialised, or whose copy lacks the commit the gitlink
//! names, stays uninitialised in the isolation with a warning saying how to get it.

use std::path::{Path, PathBuf};

use crate::base::error::Result;
use crate::base::warning::{BindWarning, Warning};
use crate::git::{Git, Gitlink, HermeticGit, LocalClone};

/// How deep submodules of submodules are followed.
const MAX_DEPTH: usize = 16;

/// One repository whose submodules are initialised: its copy in the isolation and the
/// source's copy of it.
struct Level {
    /// Git on the isolation's copy, through its own git dir (nothing has run in it yet).
    iso: HermeticGit,
    /// The isolation's copy's git dir: its submodules' git dirs go to `modules/<name>` there.
    git_dir: PathBuf,
    /// The source's checkout of the same repository (it may not be checked out).
    source_tree: PathBuf,
    /// The source's git dir of it; `None` for the superproject (git says where its submodules'
    /// git dirs are: a linked worktree keeps its own).
    source_git_dir: Option<PathBuf>,
    /// Its path from the top of the isolation (empty for the superproject), for messages.
    prefix: Vec<u8>,
}

/// Initialises the submodules of the isolation `tree` (whose admin dir is `admin`), recursively,
/// from the source checkout `source`; returns the warnings for those left uninitialised.
pub(crate) fn initialise(
    git: &Git,
    (tree, admin, common_dir): (&Path, &Path, &Path),
    source: &Path,
) -> Result<Vec<Warning>> {
    let mut warnings = Vec::new();
    let mut todo = vec![(
        Level {
            iso: HermeticGit::own(git, tree, admin, common_dir),
            git_dir: admin.to_path_buf(),
            source_tree: source.to_path_buf(),
            source_git_dir: None,
            prefix: Vec::new(),
        },
        0,
    )];
    while let Some((level, depth)) = todo.pop() {
        let inner = initialise_level(git, &level, &mut warnings)?;
        if depth == MAX_DEPTH && !inner.is_empty() {
            let inside = String::from_utf8_lossy(&level.prefix).into_owned();
            let max = MAX_DEPTH;
            warnings.push(BindWarning::SubmodulesTooDeep { max, inside }.into());
            continue;
        }
        todo.extend(inner.into_iter().map(|level| (level, depth + 1)));
    }
    Ok(warnings)
}

/// Initialises the submodules of one repository that the source has copies of; returns the
/// repositories to go on with (the submodules it initialised).
fn initialise_level(git: &Git, level: &Level, warnings: &mut Vec<Warning>) -> Result<Vec<Level>> {
    let mut found: Vec<(Gitlink, PathBuf)> = Vec::new();
    for link in level.iso.head_submodules()? {
        match source_copy(git, level, &link) {
            Ok(from) => found.push((link, from)),
            Err(why) => warnings.push(
                BindWarning::SubmoduleUninitialised {
                    submodule: shown(level, &link),
                    why: why.to_string(),
                }
                .into(),
            ),
        }
    }
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let paths: Vec<_> = found.iter().map(|(link, _)| &link.path).collect();
    level.iso.submodule_init(&paths)?;
    let clones: Vec<LocalClone<'_>> = found
        .iter()
        .map(|(link, from)| LocalClone { link, from })
        .collect();
    level.iso.submodule_update_from(&clones)?;
    let mut inner = Vec::new();
    for (link, from) in found {
        let git_dir = level.git_dir.join("modules").join(link.name.as_os());
        // `update = none` in `.gitmodules`: git leaves it out, and so does a3s-iso.
        if !git_dir.join("HEAD").is_file() {
            continue;
        }
        let tree = link.path.under(level.iso.tree());
        let sub = HermeticGit::own(git, &tree, &git_dir, &git_dir);
        let key = [b"submodule.", &link.name.0[..], b".url"].concat();
        if let Some(url) = level.iso.config_value(&key)? {
            sub.replace_remote_url(&crate::git::file_url(&from), &url)?;
        }
        inner.push(Level {
            iso: sub,
            git_dir,
            source_tree: link.path.under(&level.source_tree),
            source_git_dir: Some(from),
            prefix: crate::git::index_file::reader::join_path(&level.prefix, &link.path.0),
        });
    }
    Ok(inner)
}

/// The source's git dir of the submodule `link` that holds its commit: `modules/<name>` of the
/// source's git dir, else the git dir of the source's checkout of it; why there is none
/// otherwise, with what to do.
fn source_copy(git: &Git, level: &Level, link: &Gitlink) -> std::result::Result<PathBuf, String> {
    if !sane_name(&link.name.0) {
        return Err(format!(
            "its name in .gitmodules ({:?}) is not one git accepts",
            link.name.shown()
        ));
    }
    let modules = match &level.source_git_dir {
        Some(dir) => Some(dir.join("modules").join(link.name.as_os())),
        None => git.module_git_dir(&level.source_tree, &link.name).ok(),
    };
    let candidates: Vec<PathBuf> = modules
        .into_iter()
        .filter(|dir| dir.is_dir())
        .chain(git.own_git_dir(&link.path.under(&level.source_tree)))
        .collect();
    if let Some(dir) = candidates
        .iter()
        .find(|dir| git.git_dir_has_commit(dir, &link.commit))
    {
        return Ok(dir.clone());
    }
    let run = format!(
        "run `git submodule update --init -- {}` in {}, then bind a new session (or initialise \
         it in the isolation yourself, which fetches from its URL)",
        link.path,
        level.source_tree.display()
    );
    Err(match candidates.first() {
        None => format!("the source has not initialised it; to have it, {run}"),
        Some(dir) => format!(
            "the source's copy of it ({}) does not have commit {}; to have it, {run}",
            dir.display(),
            link.commit
        ),
    })
}

/// A submodule name git accepts (`check_submodule_name`): not empty, no `..` component; and
/// one a configuration key can carry.
fn sane_name(name: &[u8]) -> bool {
    !name.is_empty()
        && !name.starts_with(b"/")
        && !name.contains(&b'\n')
        && !name.contains(&0)
        && name
            .split(|b| *b == b'/' || *b == b'\\')
            .all(|c| c != b"..")
}

/// The submodule's path from the top of the isolation.
fn shown(level: &Level, link: &Gitlink) -> String {
    if level.prefix.is_empty() {
        link.path.shown()
    } else {
        format!("{}/{}", String::from_utf8_lossy(&level.prefix), link.path)
    }
}
