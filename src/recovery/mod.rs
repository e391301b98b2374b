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

pub(crate) mod report;

use std::time::Duration;

pub use report::{Interrupted, Operation};

use crate::context::{Context, Located};
use crate::error::Result;
use crate::git::Git;
use crate::layout::StateDir;
use crate::lock::FileLock;
use crate::repo::Repo;
use crate::state::Store;

/// Whether any record of an operation in progress is in the store: one directory listing of
/// each kind.
pub(crate) fn anything_left(store: &Store) -> bool {
    let listed = |dir: StateDir| {
        std::fs::read_dir(store.path(dir)).is_ok_and(|mut entries| {
            entries.any(|e| {
                e.is_ok_and(|e| {
                    let name = e.file_name();
                    let name = name.as_encoded_bytes();
                    name.ends_with(b".json") && !name.starts_with(b".")
                })
            })
        })
    };
    [StateDir::Intents, StateDir::Pending, StateDir::Rebasing]
        .into_iter()
        .any(listed)
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
            operation: match intent {
                crate::pending::Intent::Retain(_) => Operation::Retain,
                crate::pending::Intent::Reclaim(_) => Operation::Sweep,
                crate::pending::Intent::Discard(_) => Operation::Discard,
                crate::pending::Intent::SettleGit(_) | crate::pending::Intent::MergeRun(_) => {
                    Operation::Run
                }
            },
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
    let repaired = crate::run_layer::recover(store)
        + crate::session_git::recover(git, repo, store)
        + crate::pending::repair_locked(git, repo, store);
    notices.extend(crate::rebase::recover(git, store));
    if repaired > 0 {
        notices.push(format!(
            "{repaired} interrupted operation{} finished (retain, sweep, discard, or a run moving its git state or its files into the isolation)",
            if repaired == 1 { " was" } else { "s were" }
        ));
    }
    notices
}

/// How long locating a repository waits for the lock when a record says an operation is
/// unfinished: a process holding the lock that long is working, not crashed, and the command
/// reports the operation as in progress instead.
const RECOVERY_WAIT: Duration = Duration::from_secs(2);

// The repository lock's acquisition is where recovery runs, so the lock is taken here.
impl Context {
    /// Takes the repository lock, waiting up to the lock timeout, then finishes every
    /// operation a crash interrupted (`recovery`: promotes, retains, sweeps, discards) before
    /// the command goes on; what recovery did is kept for [`Context::take_notices`].
    pub(crate) fn lock(&self, repo: &Repo) -> Result<FileLock> {
        let lock = FileLock::acquire(&repo.lock_path(), self.lock_timeout)?;
        let store = Store::new(&repo.common_dir, self.state_dir.as_deref());
        if crate::recovery::anything_left(&store) {
            let notices = crate::recovery::finish(&self.git, repo, &store);
            self.push_notices(notices);
        }
        Ok(lock)
    }

    /// Finishes every interrupted operation of a located store before a command reads it: when
    /// a record of one is there, takes the repository lock (waiting briefly), whose acquisition
    /// finishes it. If another process holds the lock that long, the operation is left to it
    /// (or to the next command) and recorded in `located.interrupted`, with a notice, so that
    /// nothing half done is shown as normal. One listing of each record directory when nothing
    /// is left.
    pub(crate) fn recover(&self, located: &mut Located) {
        if !crate::recovery::anything_left(&located.store) {
            return;
        }
        let path = located.repo.lock_path();
        if crate::lock::FileLock::held_by_this_process(&path) {
            return;
        }
        match FileLock::acquire(&path, self.lock_timeout.min(RECOVERY_WAIT)) {
            Ok(_lock) => {
                let notices = crate::recovery::finish(&self.git, &located.repo, &located.store);
                self.push_notices(notices);
            }
            Err(_) => {
                located.interrupted = crate::recovery::left(&located.store);
                let notices = located.interrupted.iter().map(|i| i.describe()).collect();
                self.push_notices(notices);
            }
        }
    }
}
