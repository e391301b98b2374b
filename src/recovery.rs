//! What a crash left, finished in one place. Three kinds of write-ahead records describe an
//! operation in progress: a promote's intent (`intent`: the checkout changes), a tree
//! operation's (`pending`: retain, sweep and discard move or remove an isolation) and a
//! rebase's (`rebase`: an isolation's files, index and HEAD change). Whoever
//! takes the repository lock ([`crate::context::Context::lock`]) finishes both kinds before it
//! does anything else, and every command looks for them when it locates its repository
//! ([`crate::context::Context::locate`]): one directory listing each when nothing is left,
//! and when something is, the lock is taken (briefly) to finish it. A command that cannot take
//! the lock in time reports what is in progress instead ([`Interrupted`]), never a half-done
//! checkout as a normal one.

use serde::Serialize;

use crate::git::Git;
use crate::repo::Repo;
use crate::state::Store;

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
    pub digest: Option<String>,
}

impl Interrupted {
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

/// Whether any record of an operation in progress is in the store: one directory listing of
/// each kind.
pub(crate) fn anything_left(store: &Store) -> bool {
    let listed = |dir: &str| {
        std::fs::read_dir(store.dir().join(dir)).is_ok_and(|mut entries| {
            entries.any(|e| {
                e.is_ok_and(|e| {
                    let name = e.file_name();
                    let name = name.as_encoded_bytes();
                    name.ends_with(b".json") && !name.starts_with(b".")
                })
            })
        })
    };
    listed("intents") || listed("pending") || listed("rebasing")
}

/// What the records say is in progress (read without the lock, to be reported).
pub(crate) fn left(store: &Store) -> Vec<Interrupted> {
    let promotes = crate::intent::pending(store)
        .into_iter()
        .flatten()
        .map(|intent| Interrupted {
            operation: Operation::Promote,
            session_id: intent.session_id,
            digest: Some(intent.digest),
        });
    let trees = crate::pending::left(store)
        .into_iter()
        .map(|intent| Interrupted {
            operation: intent.operation(),
            session_id: Some(intent.session_id().to_string()),
            digest: None,
        });
    let rebases = crate::rebase::intents(store)
        .into_iter()
        .map(|intent| Interrupted {
            operation: Operation::Rebase,
            session_id: Some(intent.session_id),
            digest: None,
        });
    promotes.chain(trees).chain(rebases).collect()
}

/// Finishes (or undoes) every interrupted operation of the store, promotes first; called with
/// the repository lock held, so their writers are gone. Returns what the user should be told.
pub(crate) fn finish(git: &Git, repo: &Repo, store: &Store) -> Vec<String> {
    let mut notices = crate::intent::recover(git, store);
    let repaired = crate::pending::repair_locked(git, repo, store);
    notices.extend(crate::rebase::recover(git, store));
    if repaired > 0 {
        notices.push(format!(
            "{repaired} interrupted tree operation{} (retain, sweep or discard) finished",
            if repaired == 1 { " was" } else { "s were" }
        ));
    }
    notices
}
