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

impl Interrupted {
    /// One line for a warning once recovery has finished (or undone) it.
    pub fn finished(&self) -> String {
        match (self.operation, &self.session_id) {
            (Operation::Pool, _) => {
                "an interrupted build or cleaning of a pool spare was finished".into()
            }
            (operation, Some(id)) => format!(
                "an interrupted {} of session {id} was finished",
                operation.command()
            ),
            (operation, None) => format!("an interrupted {} was finished", operation.command()),
        }
    }

    /// One line for a warning: what is unfinished and what finishes it.
    pub fn describe(&self) -> String {
        let what = match (&self.digest, &self.session_id) {
            (Some(digest), _) => format!("a {} of {digest}", self.operation.command()),
            (None, Some(id)) => format!("a {} of session {id}", self.operation.command()),
            (None, None) => format!("a {}", self.operation.command()),
        };
        format!(
            "{what} is in progress or was interrupted, and another a3s-iso holds the repository \
             lock; the next a3s-iso command that takes the lock (any command, `a3s-iso list` \
             say) finishes it"
        )
    }
}
