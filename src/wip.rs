//! The source's own uncommitted work: snapshotting it (for `bind --carry-wip`) and telling
//! which paths of a patch it touches (for `promote`), without ever writing the source's index.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};
use crate::git::Git;
use crate::snapshot::{self, TempFile, Worktree};

/// The git dir of a checkout (for a linked worktree, its admin dir).
pub(crate) fn git_dir(git: &Git, checkout: &Path) -> Result<PathBuf> {
    Ok(PathBuf::from(
        git.at(checkout)
            .args(["rev-parse", "--absolute-git-dir"])
            .run_text()?,
    ))
}

/// The source's working state: `worktree_tree` is what is on disk (tracked plus untracked
/// non-ignored), `index_tree` what is staged.
pub(crate) struct WorkingState {
    pub worktree_tree: String,
    pub index_tree: String,
}

/// Snapshots the source's working state without touching its index (`bind --carry-wip`).
pub(crate) fn snapshot_source(git: &Git, source: &Path, scratch: &Path) -> Result<WorkingState> {
    let dir = git_dir(git, source)?;
    let worktree_tree = snapshot::snapshot(
        git,
        &Worktree {
            tree: source,
            admin_dir: &dir,
        },
        scratch,
    )?
    .tree;
    let index = TempFile::new(scratch, "index")?;
    let own = dir.join("index");
    if own.is_file() {
        fs::copy(&own, index.path()).ctx(|| format!("cannot copy {}", own.display()))?;
    }
    let index_tree = git
        .worktree(&dir, source)
        .env("GIT_INDEX_FILE", index.path())
        .arg("write-tree")
        .run_text()
        .map_err(|_| Error::DirtySource {
            paths: vec!["(unmerged entries: resolve the conflicts first)".into()],
            more: 0,
        })?;
    Ok(WorkingState {
        worktree_tree,
        index_tree,
    })
}

/// Which of `paths` differ in the source's working state (staged, unstaged or untracked) from
/// `base_tree`. Only those paths are looked at, through a throwaway copy of the index.
pub(crate) fn changed_since(
    git: &Git,
    source: &Path,
    base_tree: &str,
    paths: &[String],
    scratch: &Path,
) -> Result<Vec<String>> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let dir = git_dir(git, source)?;
    let index = TempFile::new(scratch, "index")?;
    let own = dir.join("index");
    if own.is_file() {
        fs::copy(&own, index.path()).ctx(|| format!("cannot copy {}", own.display()))?;
    }
    let on_index = || {
        git.worktree(&dir, source)
            .env("GIT_INDEX_FILE", index.path())
    };
    on_index()
        .args(["update-index", "--add", "--remove", "--"])
        .args(paths)
        .run()?;
    let out = on_index()
        .args([
            "--literal-pathspecs",
            "diff-index",
            "--cached",
            "--name-only",
            "-z",
            "--no-renames",
            base_tree,
            "--",
        ])
        .args(paths)
        .run()?;
    Ok(crate::git::split_nul(&out)
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect())
}
