//! A session's worktree added to the source: registered under the repository lock (which
//! finishes what a crash left first), then checked out beside any other bind.

use std::path::{Path, PathBuf};

use crate::base::error::Result;
use crate::context::Context;
use crate::git::repo::Repo;

/// A new detached worktree of `revision` at `path`; returns its admin dir. git writes the admin
/// dir (`<common>/worktrees/<name>/`) file by file, and every `worktree add` reads all of them,
/// so two at once can read each other's half written (`failed to read …/commondir`): the
/// registration runs under the repository lock, and the checkout, which is most of the time,
/// after it, so any number of binds proceed side by side.
pub(crate) fn add_worktree(
    ctx: &Context,
    repo: &Repo,
    path: &Path,
    revision: &str,
) -> Result<PathBuf> {
    {
        let held = crate::store::lock::FileLock::held_by_this_process(&repo.lock_path());
        let _lock = if held {
            None
        } else {
            Some(crate::recovery::lock(ctx, repo)?)
        };
        ctx.git
            .worktree_add_detached(&repo.toplevel, path, revision)?;
    }
    ctx.git.check_out_new_worktree(path)?;
    crate::model::isolation::read_admin_dir(repo, path)
}
