//! Whether a session's work is in the source's history: the paths it changed since its base
//! hold, in the source's HEAD tree, exactly what they hold in the session now. Computed from
//! the trees alone, so a session promoted and then committed by hand counts as well as one
//! `land` committed; a session with work beyond what reached HEAD (a later step not promoted
//! yet, or a file written after the landing) is not landed, and neither is one that changed
//! nothing. A session is landed too when it is exactly what its last promoted step landed and
//! that step's commit is in HEAD's history: later work of others on the same files does not
//! make it work to land again.

use crate::base::error::Result;
use crate::context::{Context, Located};
use crate::model::isolation::writable_isolation;
use crate::store::state::{SessionRecord, SessionState};

/// The tree of the source's HEAD (`None` on an unborn branch).
pub(crate) fn head_tree(ctx: &Context, located: &Located) -> Result<Option<String>> {
    ctx.git.rev_parse(&located.repo.toplevel, "HEAD^{tree}")
}

/// Whether the session's work (changing `changed`, ending at `tree`) is landed: all in `head_tree`
/// (the source's HEAD's), or its last promoted step's commit is in HEAD's history.
pub(crate) fn tree_is_landed(
    ctx: &Context,
    located: &Located,
    record: &SessionRecord,
    (changed, tree): (&[Vec<u8>], &str),
    head_tree: Option<&str>,
) -> Result<bool> {
    let common_dir = &located.repo.common_dir;
    let in_head = match head_tree {
        Some(head) if !changed.is_empty() => {
            (ctx.git).tree_paths_match(common_dir, tree, head, changed)?
        }
        _ => false,
    };
    Ok(in_head || landed_step(ctx, located, record, Some(tree))?)
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
    // A look only (`show` asks too): its scratch lies outside the state dir.
    let scratch = crate::store::scratch::ReadScratch::new()?;
    let snap = isolation.peek(ctx, located, scratch.path())?;
    let changed = ctx
        .git
        .diff_trees(&located.repo.common_dir, &record.base_tree, &snap.tree)?;
    let head = head_tree(ctx, located)?;
    tree_is_landed(
        ctx,
        located,
        record,
        (&changed, &snap.tree),
        head.as_deref(),
    )
}

/// Whether the session may be landed, from the last tree a3s-iso knows of its isolation (its
/// last full snapshot's, or the last run's result since) without reading the isolation:
/// `false` only when that tree has work beyond HEAD, which an edit since could take back only
/// by making the isolation match HEAD exactly. `true` when no tree is known. A queue asks
/// this first and reads the isolation ([`is_landed`]) only when it says `true`; a session
/// queued on its word is looked at whole before it lands. `head_tree` is the tree of the
/// source's HEAD (as [`head_tree`] reads it), read once by a caller that asks of many.
pub(crate) fn may_be_landed(
    ctx: &Context,
    located: &Located,
    record: &SessionRecord,
    head_tree: Option<&str>,
) -> Result<bool> {
    let Some(admin) = record.admin_dir.as_deref() else {
        return Ok(true);
    };
    let Some(tree) = crate::model::snapshot::noted_tree(&located.store.seed_index_path(admin))
    else {
        return Ok(true);
    };
    let changed = ctx
        .git
        .diff_trees(&located.repo.common_dir, &record.base_tree, &tree)?;
    tree_is_landed(ctx, located, record, (&changed, &tree), head_tree)
}

/// Whether a discarded session landed before it went: its last promoted step's commit is in HEAD's
/// history (a landing cleans up after itself, so `land -s ID` again finds it discarded).
pub(crate) fn landed_before_discard(
    ctx: &Context,
    located: &Located,
    record: &SessionRecord,
) -> Result<bool> {
    landed_step(ctx, located, record, None)
}

/// Whether the session's last promoted step was committed (and landed `tree`, when given) and
/// its commit is in HEAD's history.
fn landed_step(
    ctx: &Context,
    located: &Located,
    record: &SessionRecord,
    tree: Option<&str>,
) -> Result<bool> {
    let Some(previous) = crate::services::steps::last_step(&located.store, record, None)? else {
        return Ok(false);
    };
    // A patch step is uncommitted: in the checkout, not in its history.
    let committed = previous.mode == crate::store::state::PromoteMode::Branch;
    let (Some(after), Some(head)) = (previous.step.head_after, located.repo.head_commit(&ctx.git))
    else {
        return Ok(false);
    };
    if !committed || tree.is_some_and(|tree| *previous.step.result_tree != *tree) {
        return Ok(false);
    }
    Ok(after == head
        || ctx
            .git
            .is_ancestor(&located.repo.common_dir, &after, &head)?)
}
