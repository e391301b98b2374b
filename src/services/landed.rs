//! Whether a session's work is in the source's history: the paths it changed since its base
//! hold, in the source's HEAD tree, exactly what they hold in the session now. Computed from
//! the trees alone, so a session promoted and then committed by hand counts as well as one
//! `land` committed; a session with work beyond what reached HEAD (a later step not promoted
//! yet, or a file written after the landing) is not landed, and neither is one that changed
//! nothing.

use crate::base::error::Result;
use crate::model::isolation::writable_isolation;
use crate::store::state::{SessionRecord, SessionState};
use crate::workspace::context::{Context, Located};

/// The tree of the source's HEAD (`None` on an unborn branch).
pub(crate) fn head_tree(ctx: &Context, located: &Located) -> Result<Option<String>> {
    ctx.git.rev_parse(&located.repo.toplevel, "HEAD^{tree}")
}

/// Whether work that changed `changed` and ends at `tree` is all in `head_tree`.
pub(crate) fn work_is_in(
    ctx: &Context,
    located: &Located,
    changed: &[Vec<u8>],
    tree: &str,
    head_tree: Option<&str>,
) -> Result<bool> {
    match head_tree {
        Some(head) if !changed.is_empty() => {
            ctx.git
                .tree_paths_match(&located.repo.common_dir, tree, head, changed)
        }
        _ => Ok(false),
    }
}

/// Whether the session is landed: bound with an isolation (not stopped at a conflict) whose
/// work, read as it is now, is all in HEAD's tree.
pub fn is_landed(ctx: &Context, located: &Located, record: &SessionRecord) -> Result<bool> {
    if record.state != SessionState::Bound
        || record.read_only
        || crate::services::rebase::conflicted_paths(&located.store, record).is_some()
        || !crate::model::isolation::is_healthy(record)
    {
        return Ok(false);
    }
    let isolation = writable_isolation(record)?;
    let snap = isolation.peek(ctx, located, &located.store.scratch_dir())?;
    let changed = ctx
        .git
        .diff_trees(&located.repo.common_dir, &record.base_tree, &snap.tree)?;
    let head = head_tree(ctx, located)?;
    work_is_in(ctx, located, &changed, &snap.tree, head.as_deref())
}
