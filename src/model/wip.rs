//! The source's own uncommitted work: snapshotting it (for `bind --carry-wip`) and telling
//! which paths of a patch it touches (for `promote`), without ever writing the source's index.

use std::fs;
use std::path::{Path, PathBuf};

use crate::base::error::{Error, IoContext, Result};
use crate::base::ids::TreeId;
use crate::base::paths::RepoPath;
use crate::git::{Git, HermeticGit};
use crate::model::snapshot::{self, TempFile};

/// Git on a checkout of the user's through its own git dir, with the git dir and the common
/// dir named explicitly (as git itself reports them for the checkout); also returns that git
/// dir (for a linked worktree, its admin dir).
pub(crate) fn checkout_git(git: &Git, checkout: &Path) -> Result<(HermeticGit, PathBuf)> {
    let out = git.git_dirs(checkout)?;
    let (git_dir, common_dir) = match crate::base::paths::path_lines(&out).as_slice() {
        [git_dir, common_dir] => (git_dir.clone(), common_dir.clone()),
        _ => {
            return Err(Error::internal(format!(
                "git named no git dir for {}",
                checkout.display()
            )));
        }
    };
    let wt = HermeticGit::own(git, checkout, &git_dir, &common_dir);
    Ok((wt, git_dir))
}

/// The source's working state: `worktree_tree` is what is on disk (tracked plus untracked
/// non-ignored), `index_tree` what is staged.
pub(crate) struct WorkingState {
    pub worktree_tree: TreeId,
    pub index_tree: TreeId,
}

/// Snapshots the source's working state without touching its index (`bind --carry-wip`).
pub(crate) fn snapshot_source(git: &Git, source: &Path, scratch: &Path) -> Result<WorkingState> {
    let (wt, dir) = checkout_git(git, source)?;
    let worktree_tree =
        snapshot::snapshot(&wt, snapshot::Seed::Trusted(&dir.join("index")), scratch)?.tree;
    let index = TempFile::new(scratch, "index")?;
    let own = dir.join("index");
    if own.is_file() {
        fs::copy(&own, index.path()).ctx(|| format!("cannot copy {}", own.display()))?;
    }
    let index_tree = wt
        .on_index(index.path())
        .write_tree()
        .map_err(|_| Error::DirtySource {
            paths: vec!["(unmerged entries: resolve the conflicts first)".into()],
            more: 0,
        })?;
    Ok(WorkingState {
        worktree_tree: TreeId::new(worktree_tree)?,
        index_tree: TreeId::new(index_tree)?,
    })
}

/// Which of `paths` differ in the source's working state (staged, unstaged or untracked) from
/// `base_tree`, read from the source's objects or else from `alternate` (the store it is
/// pinned in). Only those paths are looked at, through a throwaway copy of the index.
pub(crate) fn changed_since(
    git: &Git,
    source: &Path,
    (base_tree, alternate): (&str, Option<&Path>),
    paths: &[RepoPath],
    scratch: &Path,
) -> Result<Vec<RepoPath>> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let (wt, dir) = checkout_git(git, source)?;
    let index = TempFile::new(scratch, "index")?;
    let own = dir.join("index");
    if own.is_file() {
        fs::copy(&own, index.path()).ctx(|| format!("cannot copy {}", own.display()))?;
    }
    // The base tree may be pinned elsewhere (a nested repository's last step lives in
    // the superproject's store): read it from there, as data.
    let on_index = wt.on_index_with_alternate(index.path(), alternate);
    on_index.add_or_remove(paths.iter().map(RepoPath::as_os))?;
    let out = on_index.changed_among(base_tree, paths.iter().map(RepoPath::as_os))?;
    Ok(crate::git::split_nul(&out)
        .map(|p| RepoPath(p.to_vec()))
        .collect())
}
