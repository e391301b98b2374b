//! What a reclaim of a dead isolation reports: `sweep`'s `reclaimed[]`, and the `reclaimed`
//! of the commands that reclaim as they start (`bind`, `land`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::base::ids::SessionId;
use crate::base::wire::wire_enum;

wire_enum! {
    /// Why an isolation could be reclaimed (`reclaimed[].reason`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    pub enum ReclaimReason {
        /// Its owner is gone, or its pid now belongs to another process.
        OwnerDead = "owner_dead",
        /// An interrupted bind whose process is gone, older than the grace period.
        InFlightDead = "in_flight_dead",
        /// Its session record is corrupt, and it is older than the grace period.
        Malformed = "malformed",
        /// A worktree of this repository named like an isolation, with no record, older than the grace.
        Unrecorded = "unrecorded",
        /// Retained longer ago than `--retained-older-than`.
        RetainedExpired = "retained_expired",
        /// An ownerless session idle longer than the grace, with `--include-ownerless`.
        Ownerless = "ownerless",
    }
}

/// An isolation that was (or, with `--dry-run`, would be) removed.
#[derive(Debug, Clone, Serialize)]
pub struct Reclaimed {
    /// Its session id (empty when none could be told).
    pub session_id: SessionId,
    /// Where it was.
    #[serde(with = "crate::base::paths::fs_path")]
    pub path: PathBuf,
    /// Why it could go: `owner_dead`, `in_flight_dead`, `malformed`, `unrecorded`,
    /// `retained_expired`, `ownerless`.
    pub reason: ReclaimReason,
    /// The bytes of its regular files.
    pub bytes: u64,
    /// Where its last state was snapshotted (null with `--no-capture` or for an in-flight bind,
    /// which never held anyone's work).
    pub swept_ref: Option<String>,
}
