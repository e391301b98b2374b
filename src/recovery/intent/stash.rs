//! The user's WIP set aside during a branch promote: stashed under a message carrying the
//! intent's token (so that a crash before the intent names it cannot lose it), restored with
//! its index, and found and dropped by identity.

use std::path::Path;

use crate::base::error::Result;
use crate::git::{Git, Identity, LOCK_PAUSE, LOCK_TRIES, split_nul};
use crate::recovery::intent::checkout::{Checkout, PathState};
use crate::recovery::intent::record::{Entry, RepoPath};

/// Carries the token in every git a branch promote starts, for recovery to wait for them.
pub(crate) use crate::git::TOKEN_VAR;

/// Whether the checkout has staged or unstaged changes to tracked files to set aside.
/// Untracked files stay: the replay refuses one at a path it changes, and neither a
/// cherry-pick nor a reset touches the others, so `git status` need not read every directory.
pub(crate) fn has_wip(git: &Git, source: &Path) -> Result<bool> {
    Ok(!git.status_tracked(source)?.is_empty())
}

/// Stashes the WIP (untracked too) under a message carrying `token`; returns its commit, found
/// by that token, never by position.
pub(crate) fn push(
    git: &Git,
    source: &Path,
    ident: &Identity,
    token: &str,
    session_id: &str,
) -> Result<Option<String>> {
    let message =
        format!("a3s-iso: your WIP, set aside while promoting session {session_id} ({token})");
    let marked = git.marked(source, token);
    // Another git of yours holding the index's lock refuses the stash before it is stored:
    // nothing changed, so it is tried again. One stored, then refused, is the intent's.
    for _ in 1..LOCK_TRIES {
        let out = marked.stash_push(ident, &message, true)?;
        if !(out.index_lock_held() && find(git, source, token).is_none()) {
            break;
        }
        std::thread::sleep(LOCK_PAUSE);
    }
    if find(git, source, token).is_none() {
        marked.stash_push(ident, &message, false)?;
    }
    Ok(find(git, source, token).map(|(_, commit)| commit))
}

/// The stash list: commit and message, newest first.
fn list(git: &Git, source: &Path) -> Vec<(String, String)> {
    let Ok(listed) = git.stash_reflog(source) else {
        return Vec::new();
    };
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(oid, subject)| (oid.to_string(), subject.to_string()))
        .collect()
}

/// The stash whose message carries `token`: its position and commit.
pub(crate) fn find(git: &Git, source: &Path, token: &str) -> Option<(usize, String)> {
    list(git, source)
        .into_iter()
        .enumerate()
        .find(|(_, (_, subject))| subject.ends_with(&format!("({token})")))
        .map(|(position, (oid, _))| (position, oid))
}

/// Where `stash` sits in the stash list, if it is still there.
pub(crate) fn position(git: &Git, source: &Path, stash: &str) -> Option<usize> {
    list(git, source).iter().position(|(oid, _)| oid == stash)
}

/// Restores a stash with its index and drops it; on failure (`false`) the stash is kept and
/// no unmerged entries are left behind.
pub(crate) fn restore(git: &Git, source: &Path, token: &str, stash: &str) -> bool {
    let marked = git.marked(source, token);
    let mut applied = marked.stash_apply(stash);
    for _ in 1..LOCK_TRIES {
        // Refused before it changed anything: your own git held the index's lock.
        if !matches!(&applied, Ok(out) if out.index_lock_held()) {
            break;
        }
        std::thread::sleep(LOCK_PAUSE);
        applied = marked.stash_apply(stash);
    }
    if !matches!(&applied, Ok(out) if out.exit_code == Some(0)) {
        if !git.unmerged(source).unwrap_or_default().is_empty() {
            let _ = marked.reset_index();
        }
        return false;
    }
    if let Some(position) = position(git, source, stash) {
        let _ = marked.stash_drop(position);
    }
    true
}

/// Before a stash is restored onto a checkout a crash left: removes the untracked files it
/// holds byte for byte (a `stash push` killed before cleaning them up), which would stop the
/// restore. Tracked paths are never touched.
pub(crate) fn clear_stashed_untracked(git: &Git, source: &Path, stash: &str) -> Result<()> {
    let untracked = format!("{stash}^3");
    if git.rev_parse(source, &untracked)?.is_none() {
        return Ok(());
    }
    let listed = git.ls_tree_full(source, &untracked)?;
    let (paths, oids): (Vec<RepoPath>, Vec<String>) = Entry::listed(&listed, 2)
        .map(|(path, entry)| (RepoPath(path.to_vec()), entry.oid))
        .unzip();
    let tracked = git.tracked_among(source, paths.iter().map(RepoPath::as_os))?;
    let tracked: Vec<&[u8]> = split_nul(&tracked).collect();
    let checkout = Checkout::open(git, source)?;
    let states = checkout.states(&paths, false)?;
    for ((path, oid), state) in paths.iter().zip(oids).zip(states) {
        if matches!(&state, PathState::Held(entry) if entry.oid == oid)
            && !tracked.contains(&path.0.as_slice())
        {
            let _ = std::fs::remove_file(path.under(source));
        }
    }
    Ok(())
}
