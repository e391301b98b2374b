//! `land --push --mode branch`: a session's commits replayed onto the tip, one `merge-tree`
//! each, then its uncommitted work as one last commit, which carries the trailer (see
//! `land_push`) and whose tree is tested; the lease is on the tip the commits were built on.

use crate::base::error::{Error, Result};
use crate::base::invalid::Invalid;
use crate::context::{Context, Located};
use crate::git::{CommitInfo, Merged, ObjectView};
use crate::store::state::SessionRecord;

/// A session's commits since its base, to replay.
pub(super) struct Replay {
    /// Oldest first, along first parents.
    pub(super) commits: Vec<String>,
    /// The session's HEAD: the last of them, or its base.
    pub(super) head: String,
}

/// The session's commits since its bound revision, which its HEAD must descend from.
pub(super) fn replay_of(
    ctx: &Context,
    located: &Located,
    record: &SessionRecord,
) -> Result<Replay> {
    let isolation = crate::model::isolation::writable_isolation(record)?;
    let head = isolation.head(&ctx.git)?.to_string();
    let scratch = located.store.scratch_dir();
    let view = ObjectView::new(&ctx.git, &located.repo.common_dir, &[&head], &scratch)?;
    let bound = record.bound_revision.to_string();
    let commits = view
        .first_parent_chain(&bound, &head)?
        .ok_or_else(|| Error::InvalidInput {
            reason: Invalid::HeadNotDescendant {
                head: head.clone(),
                bound: bound.clone(),
            },
        })?;
    Ok(Replay { commits, head })
}

/// What replaying a session onto the tip made.
pub(super) enum Replayed {
    /// The last commit and its tree.
    Built { commit: String, tree: String },
    /// A merge conflicted.
    Conflict(Merged),
    /// Nothing new on the tip.
    Empty,
}

/// The session's commits replayed onto `tip`, then its uncommitted work; the last commit
/// carries `trailer`.
pub(super) fn replay_onto(
    ctx: &Context,
    located: &Located,
    replay: &Replay,
    (tip, result_tree): (&str, &str),
    (message, trailer): (&str, &str),
) -> Result<Replayed> {
    ctx.git.require_merge_tree()?;
    let scratch = located.store.scratch_dir();
    let view = ObjectView::new(&ctx.git, &located.repo.common_dir, &[tip], &scratch)?;
    let mut on = tip.to_string();
    // The last commit made (its parent, tree and model), to give it the trailer.
    let mut last: Option<(String, String, CommitInfo)> = None;
    for commit in &replay.commits {
        let info = view.commit_info(commit)?;
        let parent = info
            .parents
            .first()
            .cloned()
            .ok_or_else(|| Error::internal("a replayed commit without a parent"))?;
        let merged = view.merge(&parent, &on, commit)?;
        if !merged.conflicts.is_empty() {
            return Ok(Replayed::Conflict(merged));
        }
        if merged.tree == view.commit_info(&on)?.tree {
            continue; // nothing new on the tip: dropped, as rebase drops it
        }
        let made = view.commit_tree(&merged.tree, &on, Some(&info), b"")?;
        last = Some((on, merged.tree, info));
        on = made;
    }
    if view.commit_info(&replay.head)?.tree != result_tree {
        let work = view.commit_tree(result_tree, &replay.head, None, b"work")?;
        let merged = view.merge(&replay.head, &on, &work)?;
        if !merged.conflicts.is_empty() {
            return Ok(Replayed::Conflict(merged));
        }
        if merged.tree != view.commit_info(&on)?.tree {
            let dir = &located.repo.toplevel;
            let commit = ctx.git.commit_landing(dir, (&merged.tree, &on), message)?;
            let tree = merged.tree;
            return Ok(Replayed::Built { commit, tree });
        }
    }
    let Some((parent, tree, mut info)) = last else {
        return Ok(Replayed::Empty);
    };
    // The last replayed commit again, on the same parent, with the trailer.
    info.message = with_trailer(&info.message, trailer);
    let commit = view.commit_tree(&tree, &parent, Some(&info), b"")?;
    Ok(Replayed::Built { commit, tree })
}

/// `message` with the line `trailer` as its last paragraph (bytes kept as they are).
fn with_trailer(message: &[u8], trailer: &str) -> Vec<u8> {
    let end = message
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    let mut out = message[..end].to_vec();
    out.extend_from_slice(format!("\n\n{trailer}\n").as_bytes());
    out
}
