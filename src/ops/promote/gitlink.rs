//! Gitlink bumps: git applies a submodule's move to the index only; a promote also checks the
//! source's submodule out at the new commit. That needs it initialised, clean and at the old
//! commit, and the new commit copied in; else a conflict, decided before anything is written.

use std::path::{Path, PathBuf};

use crate::base::error::Result;
use crate::base::paths::RepoPath;
use crate::context::Located;
use crate::git::Git;
use crate::ops::promote::options::Candidate;
use crate::recovery::intent::PatchPlan;

/// A submodule the patch moves, and from which commit to which.
#[derive(Debug, Clone)]
pub(crate) struct Bump {
    path: RepoPath,
    old: String,
    new: String,
}

impl Bump {
    /// The submodule at `path` moving from `old` to `new`.
    pub(crate) fn new(path: RepoPath, old: String, new: String) -> Bump {
        Bump { path, old, new }
    }
}

/// Why the source cannot take the gitlink changes: the submodules, and an explanation.
pub(crate) type Refusal = (Vec<RepoPath>, String);

/// Checks every gitlink change against the source's submodules and copies each new commit in;
/// or why they cannot be moved.
pub(crate) fn prepare_bumps(
    git: &Git,
    located: &Located,
    candidate: &Candidate,
    source: &Path,
    plan: &PatchPlan,
) -> Result<std::result::Result<(), Refusal>> {
    let mut refused = Vec::new();
    let mut why = Vec::new();
    let changes = plan
        .paths
        .iter()
        .filter(|c| c.is_gitlink() && c.pre != c.post);
    for change in changes {
        let moved = match (&change.pre, &change.post) {
            (Some(pre), Some(post)) if pre.is_gitlink() && post.is_gitlink() => {
                Bump::new(change.path.clone(), pre.oid.clone(), post.oid.clone())
            }
            _ => {
                why.push(format!(
                    "{} is added or removed as a submodule, which patch mode does not do",
                    change.path
                ));
                refused.push(change.path.clone());
                continue;
            }
        };
        let objects = objects_of(&candidate.nested_found.objects, &moved.path);
        if let Err(reason) = ready(git, located, source, &moved, objects)? {
            why.push(format!("{}: {reason}", moved.path));
            refused.push(moved.path);
        }
    }
    if refused.is_empty() {
        Ok(Ok(()))
    } else {
        Ok(Err((
            refused,
            format!("the source's submodules cannot follow: {}", why.join("; ")),
        )))
    }
}

/// Where the isolation's submodule at `path` keeps its objects, if it was captured.
pub(crate) fn objects_of<'a>(
    objects: &'a [(RepoPath, PathBuf)],
    path: &RepoPath,
) -> Option<&'a Path> {
    objects
        .iter()
        .find(|(p, _)| p == path)
        .map(|(_, dir)| dir.as_path())
}

/// Whether the source's submodule can move as `bump` says; copies in the new commit if needed.
pub(crate) fn ready(
    git: &Git,
    located: &Located,
    source: &Path,
    bump: &Bump,
    objects: Option<&Path>,
) -> Result<std::result::Result<(), String>> {
    let sub = bump.path.under(source);
    if !is_toplevel(git, &sub) {
        return Ok(Err("not initialised in the source".into()));
    }
    if git.rev_parse(&sub, "HEAD")?.as_deref() != Some(bump.old.as_str()) {
        return Ok(Err(format!(
            "not checked out at {}, the commit the superproject records",
            bump.old
        )));
    }
    let status = git.status_tracked(&sub)?;
    if !status.is_empty() {
        return Ok(Err("it has uncommitted changes".into()));
    }
    let has = |git: &Git| git.rev_parse(&sub, &format!("{}^{{commit}}", bump.new));
    if has(git)?.is_none() {
        if let Some(objects) = objects {
            let root_objects = located.repo.common_dir.join("objects");
            git.copy_reachable(
                &sub,
                (objects, &root_objects),
                &[bump.new.clone(), format!("^{}", bump.old)],
                false,
            )?;
        }
        if has(git)?.is_none() {
            return Ok(Err(format!("commit {} is not available to it", bump.new)));
        }
    }
    Ok(Ok(()))
}

/// `dir` is the top level of a repository of its own, not a superproject's directory.
pub(crate) fn is_toplevel(git: &Git, dir: &Path) -> bool {
    if std::fs::symlink_metadata(dir.join(".git")).is_err() {
        return false;
    }
    let top = git.toplevel(dir);
    match (top, std::fs::canonicalize(dir)) {
        (Ok(top), Ok(dir)) => std::fs::canonicalize(top).is_ok_and(|top| top == dir),
        _ => false,
    }
}

/// Moves each submodule and its index entry to the new commit; a failure puts them back.
pub(crate) fn move_submodules(git: &Git, source: &Path, bumps: &[Bump]) -> Result<()> {
    for (i, bump) in bumps.iter().enumerate() {
        if let Err(e) = move_one(git, source, bump, &bump.new) {
            for done in bumps[..=i].iter().rev() {
                let _ = move_one(git, source, done, &done.old);
            }
            return Err(e);
        }
    }
    Ok(())
}

fn move_one(git: &Git, source: &Path, bump: &Bump, to: &str) -> Result<()> {
    git.check_out_detached(&bump.path.under(source), to)?;
    let mut entry = format!("160000 {to}\t").into_bytes();
    entry.extend_from_slice(&bump.path.0);
    entry.push(0);
    git.index_info(source, entry)
}
