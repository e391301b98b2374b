//! What a command reports of an operation that is unfinished: in progress in another process,
//! or interrupted and waiting for the repository lock.

use serde::Serialize;

use crate::base::wire::wire_enum;

wire_enum! {
    /// The kind of an operation that a record says is in progress; its name is the command
    /// that was interrupted, as the user typed it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum Operation {
        /// A promote changing the checkout.
        Promote = "promote",
        /// A retain moving an isolation aside.
        Retain = "retain",
        /// A sweep reclaiming an isolation.
        Sweep = "sweep",
        /// A discard removing an isolation.
        Discard = "discard",
        /// A rebase changing an isolation.
        Rebase = "rebase",
        /// A run moving what git inside changed into the isolation's admin dir.
        Run = "run",
        /// A bind building an isolation it has not published yet.
        Bind = "bind",
        /// A pool spare being built or cleaned.
        Pool = "pool",
    }
}

/// An operation in progress or interrupted, as its record names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Interrupted {
    /// What it was doing.
    pub operation: Operation,
    /// The session it was about, when known.
    pub session_id: Option<String>,
    /// For a promote: the change set's digest.
    pub digest: Option<crate::base::ids::Digest>,
}
