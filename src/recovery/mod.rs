//! What a crash left, finished in one place: the write-ahead records and their finishing.
//! May call: base, git, store, context, model.
//!
//! Each kind of write-ahead record is one [`WriteAhead`]: a promote's intent (`intent`), a tree
//! operation's (`pending`: retain, sweep, discard; a run's git state, `session_git`), a
//! rebase's (`rebase_record`, carried out by `rebase_apply`), a bind's claim (`claims`) and a
//! pool spare's record (`spares`). The lock's one constructor ([`RepoLock::acquire`], through
//! [`lock`]) finishes every kind before the command does anything else, and [`locate`] looks
//! for them: one listing of each kind when nothing is left, else the lock is taken briefly to
//! finish it. A command that cannot take the lock in time reports what is in progress
//! ([`Interrupted`]), never a half-done checkout as a normal one.
//!
//! A claim or a spare record is also there while its operation runs: only one whose process is
//! dead and older than [`crate::base::owner::GRACE`] is finished here, and only by a process
//! that can tell (not one inside a run, whose PID namespace hides the host's). A bind of the
//! same id, `sweep` (with its `--grace`) and the pool's users clear them sooner.

pub(crate) mod claims;
pub mod intent;
pub mod pending;
pub(crate) mod rebase_apply;
pub(crate) mod rebase_record;
pub(crate) mod run_layer;
pub mod session_git;
pub(crate) mod spares;

use std::time::Duration;

pub use crate::base::interrupted::{Interrupted, Operation};

use crate::base::error::Result;
use crate::base::warning::{RecoveryWarning, Warning};
use crate::context::{Context, Located};
use crate::git::Git;
use crate::git::repo::Repo;
use crate::store::layout::StateDir;
use crate::store::lock::RepoLock;
use crate::store::state::Store;

/// One kind of write-ahead record.
trait WriteAhead {
    /// Whether a record of the kind waits to be finished (read without the lock).
    fn waiting(&self, located: &Located) -> bool;
    /// What the records say is in progress (read without the lock, to be reported).
    fn left(&self, located: &Located) -> Vec<Interrupted>;
    /// Finishes or undoes every record whose writer is gone; returns what to tell the user.
    fn finish(&self, held: &RepoLock, git: &Git, located: &Located) -> Vec<Warning>;
}

/// Promote intents: the checkout's changes, completed or rolled back from the records.
struct Promotes;

impl WriteAhead for Promotes {
    fn waiting(&self, located: &Located) -> bool {
        holds_a_record(&located.store.path(StateDir::Intents))
    }

    fn left(&self, located: &Located) -> Vec<Interrupted> {
        crate::recovery::intent::pending(&located.store)
            .into_iter()
            .flatten()
            .map(|intent| Interrupted {
                operation: Operation::Promote,
                session_id: intent.session_id,
                digest: Some(intent.digest),
            })
            .collect()
    }

    fn finish(&self, held: &RepoLock, git: &Git, located: &Located) -> Vec<Warning> {
        crate::recovery::intent::recover(held, git, &located.store)
    }
}

/// Tree operations: retain, sweep, discard, and a run's layer and git state (finished first:
/// the others may move its tree).
struct TreeMoves;

impl WriteAhead for TreeMoves {
    fn waiting(&self, located: &Located) -> bool {
        holds_a_record(&located.store.path(StateDir::Pending))
    }

    fn left(&self, located: &Located) -> Vec<Interrupted> {
        use crate::recovery::pending::TreeMove;
        let operation = |intent: &TreeMove| match intent {
            TreeMove::Retain(_) => Operation::Retain,
            TreeMove::Reclaim(_) => Operation::Sweep,
            TreeMove::Discard(_) => Operation::Discard,
            TreeMove::SettleGit(_) | TreeMove::MergeRun(_) => Operation::Run,
        };
        crate::recovery::pending::left(&located.store)
            .into_iter()
            .map(|intent| of_session(operation(&intent), intent.session_id()))
            .collect()
    }

    fn finish(&self, held: &RepoLock, git: &Git, located: &Located) -> Vec<Warning> {
        let (repo, store) = (&located.repo, &located.store);
        let before = self.left(located);
        // A run's layer merges into its isolation before its git state settles over it.
        crate::recovery::run_layer::recover(held, store);
        crate::recovery::session_git::recover(held, git, repo, store);
        crate::recovery::pending::repair_locked(held, git, repo, store);
        finished(before, self.left(located))
    }
}

/// Rebases: an isolation's files, index and HEAD moved to the rebased state.
struct Rebases;

impl WriteAhead for Rebases {
    fn waiting(&self, located: &Located) -> bool {
        holds_a_record(&located.store.path(StateDir::Rebasing))
    }

    fn left(&self, located: &Located) -> Vec<Interrupted> {
        crate::recovery::rebase_record::intents(&located.store)
            .into_iter()
            .map(|intent| of_session(Operation::Rebase, &intent.session_id))
            .collect()
    }

    fn finish(&self, held: &RepoLock, git: &Git, located: &Located) -> Vec<Warning> {
        crate::recovery::rebase_apply::recover(held, git, &located.store)
    }
}

/// Binds that died before publishing: their claims, once the grace period is over.
struct Binds;

impl WriteAhead for Binds {
    fn waiting(&self, located: &Located) -> bool {
        holds_a_record(&located.store.path(StateDir::Claims))
            && !crate::recovery::claims::abandoned(&located.store).is_empty()
    }

    fn left(&self, located: &Located) -> Vec<Interrupted> {
        crate::recovery::claims::abandoned(&located.store)
            .into_iter()
            .map(|claim| of_session(Operation::Bind, &claim.session_id))
            .collect()
    }

    fn finish(&self, held: &RepoLock, git: &Git, located: &Located) -> Vec<Warning> {
        let before = self.left(located);
        crate::recovery::claims::recover(held, git, located);
        finished(before, self.left(located))
    }
}

/// Pool spares whose build or cleaning died, with whatever else of the pool a crash left.
struct Spares;

impl WriteAhead for Spares {
    fn waiting(&self, located: &Located) -> bool {
        !crate::recovery::spares::interrupted(located).is_empty()
    }

    fn left(&self, located: &Located) -> Vec<Interrupted> {
        crate::recovery::spares::interrupted(located)
            .into_iter()
            .map(|_| Interrupted {
                operation: Operation::Pool,
                session_id: None,
                digest: None,
            })
            .collect()
    }

    fn finish(&self, held: &RepoLock, _git: &Git, located: &Located) -> Vec<Warning> {
        // A build that died within the grace is left alone here, as by `waiting`.
        let before = self.left(located);
        if before.is_empty() {
            return Vec::new();
        }
        match crate::recovery::spares::recover(held, located) {
            Ok(()) => finished(before, self.left(located)),
            Err(e) => vec![RecoveryWarning::PoolNotRepaired { why: e.to_string() }.into()],
        }
    }
}

/// An operation on one session, of no digest.
fn of_session(operation: Operation, session_id: impl ToString) -> Interrupted {
    Interrupted {
        operation,
        session_id: Some(session_id.to_string()),
        digest: None,
    }
}

/// Each operation of `before` that `after` no longer holds, named once as finished (a run's
/// layer and its git state are one run).
fn finished(before: Vec<Interrupted>, mut after: Vec<Interrupted>) -> Vec<Warning> {
    let mut told: Vec<Warning> = Vec::new();
    for operation in before {
        if let Some(still) = after.iter().position(|left| *left == operation) {
            after.swap_remove(still);
            continue;
        }
        let line = RecoveryWarning::Finished(operation).into();
        if !told.contains(&line) {
            told.push(line);
        }
    }
    told
}

/// Whether a directory holds a record (`<id>.json`, not a hidden temporary file).
fn holds_a_record(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut entries| {
        entries.any(|e| {
            e.is_ok_and(|e| {
                let name = e.file_name();
                let name = name.as_encoded_bytes();
                name.ends_with(b".json") && !name.starts_with(b".")
            })
        })
    })
}

/// Every kind of record, promotes first; `binds`: whether interrupted binds count (not for
/// `sweep`, which judges them itself).
fn kinds(binds: bool) -> Vec<&'static dyn WriteAhead> {
    let mut kinds: Vec<&'static dyn WriteAhead> = vec![&Promotes, &TreeMoves, &Rebases];
    if binds {
        kinds.push(&Binds);
    }
    kinds.push(&Spares);
    kinds
}

/// Whether any operation in progress waits to be finished.
pub(crate) fn anything_left(located: &Located, binds: bool) -> bool {
    kinds(binds).iter().any(|kind| kind.waiting(located))
}

/// What the records say is in progress (read without the lock, to be reported).
pub(crate) fn left(located: &Located, binds: bool) -> Vec<Interrupted> {
    kinds(binds)
        .iter()
        .flat_map(|kind| kind.left(located))
        .collect()
}

/// Finishes (or undoes) every interrupted operation, promotes first, under the repository
/// lock (so their writers are gone). Returns what to tell the user.
pub(crate) fn finish(held: &RepoLock, git: &Git, located: &Located, binds: bool) -> Vec<Warning> {
    kinds(binds)
        .iter()
        .flat_map(|kind| kind.finish(held, git, located))
        .collect()
}

/// How long locating a repository waits for the lock when a record says an operation is
/// unfinished: a process holding the lock that long is working, not crashed, and the command
/// reports the operation as in progress instead.
const RECOVERY_WAIT: Duration = Duration::from_secs(2);

/// Finds the command's source (inside an isolation: its session's) and [`recover`]s its store.
pub(crate) fn locate(ctx: &Context) -> Result<Located> {
    let mut located = ctx.find_source()?;
    recover(ctx, &mut located);
    Ok(located)
}

/// For a command that works on no repository (`verify FILE`): finishes what a crash left in
/// the repository it was started in, if any, like every other command.
pub fn settle(ctx: &Context) {
    let _ = locate(ctx);
}

/// Takes the repository lock and finishes every interrupted operation before the command goes
/// on; what recovery did is kept for `Context::take_notices`.
pub(crate) fn lock(ctx: &Context, repo: &Repo) -> Result<RepoLock> {
    let store = Store::new(&repo.common_dir, ctx.state_dir.as_deref());
    let located = Located::new(repo.clone(), store, None);
    let binds = !ctx.judges_claims();
    RepoLock::acquire(&repo.lock_path(), ctx.lock_timeout, |held| {
        if anything_left(&located, binds) {
            let notices = finish(held, &ctx.git, &located, binds);
            ctx.push_notices(notices);
        }
    })
}

/// Finishes every interrupted operation of a located store before a command reads it, taking
/// the lock briefly. If another process holds it that long, the operation is left to it and
/// recorded in `located.interrupted`, with a notice, so nothing half done is shown as normal.
pub(crate) fn recover(ctx: &Context, located: &mut Located) {
    let binds = !ctx.judges_claims();
    if !anything_left(located, binds) {
        return;
    }
    let path = located.repo.lock_path();
    if crate::store::lock::FileLock::held_by_this_process(&path) {
        return;
    }
    let view: &Located = located;
    let acquired = RepoLock::acquire(&path, ctx.lock_timeout.min(RECOVERY_WAIT), |held| {
        ctx.push_notices(finish(held, &ctx.git, view, binds));
    });
    if acquired.is_err() {
        located.interrupted = left(located, binds);
        let notices = (located.interrupted.iter())
            .map(|i| RecoveryWarning::InProgress(i.clone()).into())
            .collect();
        ctx.push_notices(notices);
    }
}
