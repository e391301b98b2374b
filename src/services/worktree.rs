//! A session's worktree added to the source: registered under the repository lock (which
//! finishes what a crash left first), then filled beside any other bind.

use std::path::{Path, PathBuf};

use crate::base::error::Result;
use crate::base::reflink::Fill;
use crate::context::{Context, Located};

/// A new detached worktree of `revision` at `path`; returns its admin dir. git writes the admin
/// dir (`<common>/worktrees/<name>/`) file by file, and every `worktree add` reads all of them,
/// so two at once can read each other's half written (`failed to read …/commondir`): the
/// registration runs under the repository lock, and the checkout, which is most of the time,
/// after it, so any number of binds proceed side by side.
///
/// Where the file system clones files, the tree is filled by cloning the revision's pristine
/// tree (see `model::pristine`) instead; the fill says which.
pub(crate) fn add_worktree(
    ctx: &Context,
    located: &Located,
    path: &Path,
    revision: &str,
) -> Result<(PathBuf, Fill)> {
    let repo = &located.repo;
    {
        let held = crate::store::lock::FileLock::held_by_this_process(&repo.lock_path());
        let _lock = (!held)
            .then(|| crate::recovery::lock(ctx, repo))
            .transpose()?;
        ctx.git
            .worktree_add_detached(&repo.toplevel, path, revision)?;
    }
    let admin = crate::model::isolation::read_admin_dir(repo, path)?;
    let fill = crate::model::pristine::fill(ctx, located, (path, &admin), revision)?;
    if fill == Fill::Checkout {
        ctx.git.check_out_new_worktree(path)?;
    }
    Ok((admin, fill))
}
