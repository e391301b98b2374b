//! A snapshot of a session's isolation taken ahead of its rebase: a land queue takes the next
//! session's while the one before it lands (its test, its promote), so that the snapshot's
//! reading of the isolation costs the queue nothing. It is what the rebase would have taken,
//! a little earlier: work the isolation gains after it is not tested and not landed, and
//! stays in the isolation for a later landing, as work gained during the rebase always did.
//!
//! The session's lease is taken before the snapshot and kept until the session's own landing
//! ends (a [`KeptLock`], lent to each of that landing's steps): no `run`, `discard` or sweep of
//! another process reaches the session meanwhile. The rebase uses the snapshot only while it
//! still describes the isolation as git and a3s-iso see it: nothing wrote the isolation's
//! `HEAD` or index since (a commit or `git add` made in the isolation directly), and the index
//! a3s-iso keeps of it is the one this snapshot left. The files the rebase then moves are each
//! checked against that index before they are written: one changed since is never written
//! over, one deleted since is never brought back, and a move refused so leaves no intent for
//! recovery to carry out over it.

use crate::base::fsutil::FileStamp;
use crate::base::ids::SessionId;
use crate::context::{Context, Located};
use crate::model::isolation::{Isolation, writable_isolation};
use crate::model::snapshot::Snapshot;
use crate::store::lock::KeptLock;
use crate::store::state::{SessionRecord, SessionState};

/// A snapshot taken ahead, with the stamps of what says it is still current, and the
/// session's lease, kept from before the snapshot until the session's landing ends.
pub(crate) struct Presnapshot {
    session_id: SessionId,
    lease: Option<KeptLock>,
    snapshot: Snapshot,
    /// The isolation's `HEAD` and index before the snapshot began.
    git_files: [Option<FileStamp>; 2],
    /// a3s-iso's index of the isolation, as the snapshot left it.
    seed: FileStamp,
}

impl Presnapshot {
    /// The snapshot of the isolation of `record`'s session now, taken under its lease, when it
    /// can be rebased (bound, writable, no work carried from the checkout). `None` whenever it
    /// cannot be taken so (the rebase then takes its own).
    pub(crate) fn take(
        ctx: &Context,
        located: &Located,
        record: &SessionRecord,
    ) -> Option<Presnapshot> {
        if record.state != SessionState::Bound || record.carried_wip {
            return None;
        }
        let id = &record.session_id;
        let isolation = writable_isolation(record).ok()?;
        let lease = KeptLock::keep(located.store.try_lease(id).ok()??).ok()?;
        let git_files = git_files(&isolation);
        let snapshot = isolation.snapshot(ctx, located).ok()?;
        let seed = FileStamp::of(&located.store.seed_index_path(&isolation.admin)).ok()?;
        Some(Presnapshot {
            session_id: id.clone(),
            lease: Some(lease),
            snapshot,
            git_files,
            seed,
        })
    }

    /// The session it was taken of.
    pub(crate) fn session_id(&self) -> &SessionId {
        &self.session_id
    }

    /// The session's lease, kept since before the snapshot: whoever holds it keeps every other
    /// process (a `run`, a `discard`) out of the session until it is dropped.
    pub(crate) fn take_lease(&mut self) -> Option<KeptLock> {
        self.lease.take()
    }

    /// The snapshot, if it still describes `isolation` (see the module).
    pub(crate) fn still_current(
        self,
        located: &Located,
        isolation: &Isolation,
    ) -> Option<Snapshot> {
        let seed = located.store.seed_index_path(&isolation.admin);
        let current =
            git_files(isolation) == self.git_files && FileStamp::of(&seed).ok() == Some(self.seed);
        current.then_some(self.snapshot)
    }
}

/// The stamps of the isolation's `HEAD` and index (`None`: not there).
fn git_files(isolation: &Isolation) -> [Option<FileStamp>; 2] {
    ["HEAD", "index"].map(|name| FileStamp::of(&isolation.admin.join(name)).ok())
}
