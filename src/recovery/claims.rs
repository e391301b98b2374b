//! Binds that died before they published their isolation. A claim (`claims/<id>.json`) is a
//! bind's write-ahead record, written under the lock before the checkout: the path being built
//! and the process building it. Once that process is gone and the grace period has passed (a
//! git it started may go on writing the tree), the tree, any admin dir naming it and the claim
//! are removed, and a session without a record loses the refs and run documents it pinned.
//! `sweep` applies the same rule with its `--grace`; a bind of the same id clears it at once.

use std::time::Duration;

use crate::base::error::Result;
use crate::base::fsutil::now_ms;
use crate::base::ids::SessionId;
use crate::base::owner::{GRACE, Liveness};
use crate::context::Located;
use crate::git::Git;
use crate::model::{isolation, refs};
use crate::store::lock::RepoLock;
use crate::store::state::{ClaimRecord, RecordStatus, Store};

/// Whether a claim's bind was interrupted: its process is dead (gone, or its pid reused), and
/// the claim is at least `grace` old or no process of the bind's process group is left (the
/// whole group was killed: no git of the bind can still be writing the tree).
pub(crate) fn is_abandoned(claim: &ClaimRecord, now_ms: u64, grace: Duration) -> bool {
    claim.bind_process.liveness() == Liveness::Dead
        && (now_ms.saturating_sub(claim.created_at_ms) >= grace.as_millis() as u64
            || claim.process_group.is_some_and(group_is_gone))
}

/// Whether no running process is left in `group`: a signal 0 finds none, or every member is a
/// zombie (it writes nothing). A group that cannot be asked about, or reused, is still there.
fn group_is_gone(group: i32) -> bool {
    let Some(pid) = rustix::process::Pid::from_raw(group) else {
        return false;
    };
    match rustix::process::test_kill_process_group(pid) {
        Err(rustix::io::Errno::SRCH) => true,
        Ok(()) => only_zombies_in(group).unwrap_or(false),
        Err(_) => false,
    }
}

/// Whether every process of `group` is a zombie, read from `/proc` (`None`: it cannot be read).
fn only_zombies_in(group: i32) -> Option<bool> {
    let is_pid = |name: &str| name.bytes().all(|b| b.is_ascii_digit());
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        if !entry.file_name().to_str().is_some_and(is_pid) {
            continue;
        }
        // A process that exited meanwhile is no member.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // After the command's name (in parentheses, which may hold anything): state, ppid, pgrp.
        let mut fields = stat.get(stat.rfind(')')? + 1..)?.split_whitespace();
        let state = fields.next()?;
        let pgrp: i32 = fields.nth(1)?.parse().ok()?;
        if pgrp == group && state != "Z" && state != "X" {
            return Some(false);
        }
    }
    Some(true)
}

/// The claims of binds interrupted at least [`GRACE`] ago, if this process can tell.
pub(crate) fn abandoned(store: &Store) -> Vec<ClaimRecord> {
    if !crate::base::owner::sees_host_processes() {
        return Vec::new();
    }
    let now = now_ms();
    store
        .claims()
        .unwrap_or_default()
        .into_iter()
        .filter(|claim| is_abandoned(claim, now, GRACE))
        .collect()
}

/// Clears what an interrupted bind left: its tree and registrations (unless the session was
/// published there), its claim and, for a session with no record, what it pinned. Under the
/// lock, so no bind can claim the id meanwhile.
pub(crate) fn finish(
    _held: &RepoLock,
    git: &Git,
    located: &Located,
    claim: &ClaimRecord,
) -> Result<()> {
    isolation::clear_dead_claim(located, claim)?;
    forget_unrecorded(git, located, &claim.session_id)
}

/// Forgets the refs and run documents a session with no record may have pinned. One with a
/// record (a resume, a new bind of a discarded id) keeps them: the bind held none of its work.
fn forget_unrecorded(git: &Git, located: &Located, id: &SessionId) -> Result<()> {
    if !matches!(located.store.session_status(id), RecordStatus::Missing) {
        return Ok(());
    }
    refs::SessionRefs {
        git,
        dir: &located.repo.toplevel,
        ns: &located.store.refs(),
        session_id: id,
    }
    .delete(refs::Scope::KeepSwept)?;
    located.store.remove_runs(id)
}

/// Finishes every abandoned claim, each read again under the lock; best effort.
pub(crate) fn recover(held: &RepoLock, git: &Git, located: &Located) {
    let now = now_ms();
    for claim in abandoned(&located.store) {
        let still = located.store.load_claim(&claim.session_id).ok().flatten();
        if let Some(claim) = still.filter(|c| is_abandoned(c, now, GRACE)) {
            let _ = finish(held, git, located, &claim);
        }
    }
}
