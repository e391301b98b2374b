//! `land --push --mode branch`: a session's own commits replayed onto the branch's tip, one
//! `merge-tree` each (objects only, as `rebase` replays them), then its uncommitted work as one
//! last commit when it has any. The last commit pushed carries the change set's trailer, so
//! the exactly-once search (see `land_push`) is the squash mode's; the test runs on the last
//! commit's tree, and the lease is on the tip the commits were built on.

use crate::base::error::{Error, Result};
use crate::base::invalid::Invalid;
use crate::git::{CommitInfo, Merged, ObjectView};
use crate::store::state::SessionRecord;
use crate::workspace::context::{Context, Located};

use super::land::{LandOptions, LandResult, LandedSession};
use super::land_remote::{Change, TRAILER, landing_message, record_conflict, record_empty};

/// A session's commits since its base, to replay.
pub(super) struct Replay {
    /// Oldest first, along first parents.
    pub(super) commits: Vec<String>,
    /// The session's HEAD: the last of them, or its base.
    pub(super) head: String,
}

/// The commits of `record`'s session since its bound revision (its isolation's HEAD must
/// descend from it).
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

/// The session's commits replayed onto `tip`, then its uncommitted work: the last commit and
/// its tree, or `None` with the entry's result set (a conflict, or nothing new on the tip).
pub(super) fn replay_onto(
    ctx: &Context,
    located: &Located,
    (opts, change, replay): (&LandOptions, &Change<'_>, &Replay),
    tip: &str,
    landed: &mut LandedSession,
) -> Result<Option<(String, String)>> {
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
        if stopped(&merged, landed) {
            return Ok(None);
        }
        if merged.tree == view.commit_info(&on)?.tree {
            continue; // nothing new on the tip: dropped, as rebase drops it
        }
        let made = view.commit_tree(&merged.tree, &on, Some(&info), b"")?;
        last = Some((on, merged.tree, info));
        on = made;
    }
    if view.commit_info(&replay.head)?.tree != change.result_tree {
        let work = view.commit_tree(change.result_tree, &replay.head, None, b"work")?;
        let merged = view.merge(&replay.head, &on, &work)?;
        if stopped(&merged, landed) {
            return Ok(None);
        }
        if merged.tree != view.commit_info(&on)?.tree {
            let dir = &located.repo.toplevel;
            let message = landing_message(opts, change);
            let commit = ctx.git.commit_landing(dir, (&merged.tree, &on), &message)?;
            return Ok(Some((commit, merged.tree)));
        }
    }
    let Some((parent, tree, mut info)) = last else {
        record_empty(landed);
        return Ok(None);
    };
    // The last replayed commit again, on the same parent, with the trailer.
    info.message = with_trailer(&info.message, change.pushing.digest.as_str());
    let commit = view.commit_tree(&tree, &parent, Some(&info), b"")?;
    Ok(Some((commit, tree)))
}

/// Whether `merged` conflicts (then the entry is `conflict`).
fn stopped(merged: &Merged, landed: &mut LandedSession) -> bool {
    if merged.conflicts.is_empty() {
        return false;
    }
    record_conflict(merged, landed);
    debug_assert_eq!(landed.outcome, LandResult::Conflict);
    true
}

/// `message` with the trailer naming `digest` as its last paragraph (bytes kept as they are).
fn with_trailer(message: &[u8], digest: &str) -> Vec<u8> {
    let end = message
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    let mut out = message[..end].to_vec();
    out.extend_from_slice(format!("\n\n{TRAILER}: {digest}\n").as_bytes());
    out
}
