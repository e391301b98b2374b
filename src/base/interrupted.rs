//! What a command reports of an operation that is unfinished: in progress in another process,
//! or interrupted and waiting for the repository lock.

use serde::Serialize;

/// The kind of an operation that a record says is in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Operation {
    /// A promote changing the checkout.
    Promote,
    /// A retain moving an isolation aside.
    Retain,
    /// A sweep reclaiming an isolation.
    Sweep,
    /// A discard removing an isolation.
    Discard,
    /// A rebase changing an isolation.
    Rebase,
    /// A run moving what git inside changed into the isolation's admin dir.
    Run,
    /// A bind building an isolation it has not published yet.
    Bind,
    /// A pool spare being built or cleaned.
    Pool,
}

impl Operation {
    /// The command that was interrupted, as the user typed it.
    pub fn command(self) -> &'static str {
        match self {
            Operation::Promote => "promote",
            Operation::Retain => "retain",
            Operation::Sweep => "sweep",
            Operation::Discard => "discard",
            Operation::Rebase => "rebase",
            Operation::Run => "run",
            Operation::Bind => "bind",
            Operation::Pool => "pool",
        }
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
