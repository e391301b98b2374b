//! `land`: a queue of sessions landed one after the other onto the source's moving HEAD. Each
//! is rebased onto HEAD in its isolation (a conflict stays there), tested in its sandbox, and
//! promoted (`squash`, `branch`, or `patch` for one session); the queue stops at the first
//! that does not land unless `--keep-going`.
//!
//! Exactly once: promote's journal and intents make a second landing `idempotent` and finish
//! a killed one. The queue is recorded (`land.json`) after each session, so `land` with no
//! session named continues a stopped queue; `--abort` drops it and touches no session.
//!
//! A session whose work is all in HEAD's tree is landed (`services::landed`): never rebased or
//! landed again. Its isolation then goes (to the pool, else discarded with its evidence kept)
//! unless `--keep`; the result is recorded first, so the next `land` finishes a killed cleanup.

use std::path::PathBuf;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::base::error::{Error, ErrorCode, IoContext, Result};
use crate::base::fsutil::{read_json, remove_file_if_exists, write_record_atomic};
use crate::base::ids::{CommitId, RunId, SessionId};
use crate::base::warning::{LandWarning, Warning};
use crate::context::{Context, Located};
use crate::ops::promote::{Mode, Outcome, PromoteOptions, PromoteOutcome, Reason};
use crate::services::rebase::Presnapshot;
use crate::store::state::SessionState;

use super::land_gate::Tested;

/// The schema of the recorded queue (`land.json`).
pub const QUEUE_SCHEMA: &str = "a3s-iso.land_queue.v1";

/// How each session lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LandMode {
    /// One commit on the current branch with the session's whole work.
    #[default]
    Squash,
    /// The session's commits replayed, plus one for its uncommitted work.
    Branch,
    /// Uncommitted changes in the checkout (one session only).
    Patch,
}

/// What `land` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct LandOptions {
    /// The sessions, in the order to land them.
    pub sessions: Vec<String>,
    /// Every live session of the source, oldest bind first.
    pub all: bool,
    /// A shell command that must exit 0 in each session's sandbox on its rebased tree.
    pub test: Option<String>,
    /// How each session lands.
    pub mode: LandMode,
    /// The squashed commit's message (or branch mode's commit of uncommitted changes).
    pub message: Option<String>,
    /// Go on after a session that does not land.
    pub keep_going: bool,
    /// Run the test command as a plain host process.
    pub no_sandbox: bool,
    /// Keep each landed session's isolation (an agent that goes on working in steps).
    pub keep: bool,
    /// Drop the stopped queue instead of continuing it.
    pub abort: bool,
}

/// How one session's landing ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LandResult {
    /// Its work landed now.
    Landed,
    /// Its work had landed before: nothing new.
    Idempotent,
    /// It changed nothing.
    Empty,
    /// Its rebase or its promote met a conflict; nothing of it landed.
    Conflict,
    /// The test command failed on its rebased tree; nothing of it landed.
    TestFailed,
    /// The session landed, but not every nested change set did.
    Partial,
    /// An error stopped it (see `error`).
    Failed,
    /// The queue stopped before it.
    #[default]
    NotReached,
    /// It was discarded before it landed: nothing of it landed, nothing is left to do.
    Discarded,
}

impl LandResult {
    /// Whether the queue goes on after this one without `--keep-going`.
    pub(crate) fn goes_on(self) -> bool {
        matches!(
            self,
            LandResult::Landed | LandResult::Idempotent | LandResult::Empty | LandResult::Discarded
        )
    }
}

/// What became of a landed session's isolation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cleanup {
    /// Kept (`--keep`).
    Kept,
    /// Cleaned and returned to the pool; the session is discarded, its evidence kept.
    Pooled,
    /// Removed; the session is discarded, its evidence kept.
    Discarded,
}

impl Cleanup {
    /// A discarded isolation's: `Pooled` when it went back to the pool.
    pub(super) fn of(recycled: bool) -> Cleanup {
        match recycled {
            true => Cleanup::Pooled,
            false => Cleanup::Discarded,
        }
    }
}

/// An error that stopped one session, as data.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LandError {
    /// Its stable code.
    pub code: String,
    /// What it said.
    pub message: String,
}

/// One session of the queue.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LandedSession {
    /// The session.
    pub session_id: String,
    /// How it ended.
    pub outcome: LandResult,
    /// Why it did not land (`rebase_conflicted`, `patch_does_not_apply`, …).
    pub reason: Option<Reason>,
    /// The digest of what landed (or would have).
    pub digest: Option<crate::base::ids::Digest>,
    /// The source's HEAD once it landed (squash and branch: the new commit).
    pub commit: Option<crate::base::ids::CommitId>,
    /// The test command's exit code (`null`: not run, or ended by a signal).
    pub test_exit_code: Option<i32>,
    /// The test's run in the session (its change set is recorded with it).
    pub test_run_id: Option<RunId>,
    /// Where the test's output is kept.
    pub test_output: Option<PathBuf>,
    /// The tracked paths the test wrote in the rebased tree, dropped before the session landed.
    #[serde(default)]
    pub test_wrote: Vec<String>,
    /// The paths of a conflict.
    pub conflicting_paths: Vec<String>,
    /// What a failure said.
    pub error: Option<LandError>,
    /// How long this session took, in milliseconds.
    pub duration_ms: u64,
    /// What became of its isolation once it landed (`null`: not landed, or not in HEAD's history).
    #[serde(default)]
    pub cleanup: Option<Cleanup>,
    /// What the user should know.
    pub warnings: Vec<Warning>,
    /// With `--push`: where it went and how (`null` for a land onto the source's HEAD).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push: Option<PushReport>,
}

impl LandedSession {
    /// Ends the session's landing on `err`: `failed`, with the error's code and words.
    pub(super) fn fail(&mut self, err: &Error) {
        self.outcome = LandResult::Failed;
        self.error = Some(LandError {
            code: err.code().as_str().to_string(),
            message: err.to_string(),
        });
    }

    /// Notes that its isolation's cleanup after its landing failed, and why.
    pub(super) fn not_cleaned_up(&mut self, err: &Error) {
        let (session_id, why) = (self.session_id.clone(), err.to_string());
        self.warnings
            .push(LandWarning::NotCleanedUp { session_id, why }.into());
    }

    /// The landing is over: what the context noticed meanwhile, and how long it took.
    pub(super) fn finished(mut self, ctx: &Context, started: Instant) -> LandedSession {
        self.warnings.extend(ctx.take_notices());
        self.duration_ms = started.elapsed().as_millis() as u64;
        self
    }

    pub(super) fn new(session_id: &str, outcome: LandResult) -> LandedSession {
        LandedSession {
            session_id: session_id.to_string(),
            outcome,
            ..LandedSession::default()
        }
    }
}

/// How a session went to a remote's branch (`land --push`, see `land_push`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PushReport {
    /// The remote.
    pub remote: String,
    /// The branch.
    pub branch: String,
    /// The pushes attempted (0: none was needed, or none was reached).
    pub attempts: u32,
    /// The tip of the branch the landing commit was built on (its lease).
    pub built_on: Option<crate::base::ids::CommitId>,
    /// The tree the test started on, exactly the landing commit's (`null`: no test ran).
    pub tested_tree: Option<crate::base::ids::TreeId>,
}

/// What `land` did (`a3s-iso.land.v1`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct LandOutcome {
    /// How the sessions landed.
    pub mode: LandMode,
    /// Whether this continued a recorded queue.
    pub resumed: bool,
    /// Every session of the queue, in its order.
    pub sessions: Vec<LandedSession>,
    /// The session the queue stopped at (`null`: it went through).
    pub stopped_at: Option<String>,
    /// What to do where it stopped, then the commands that move the queue on (`null`: none).
    pub hint: Option<String>,
    /// The commands of `hint`, each a shell command line to run as it is, in order.
    pub next_commands: Vec<String>,
    /// What recovery wants the user to know.
    pub warnings: Vec<Warning>,
    /// Whether this dropped a stopped queue (`--abort`); `sessions` are what it held.
    pub aborted: bool,
    /// The dead-owner sessions (never the queue's) reclaimed as `land` started, as `sweep` says.
    pub reclaimed: Vec<crate::services::reclaimed::Reclaimed>,
}

impl LandOutcome {
    /// A queue's outcome before any session: what the context noticed until now.
    pub(super) fn begun(ctx: &Context, mode: LandMode, resumed: bool) -> LandOutcome {
        LandOutcome {
            mode,
            resumed,
            warnings: ctx.take_notices(),
            ..LandOutcome::default()
        }
    }

    /// 0 when every session landed (or had nothing new); 3 on a conflict or a failed test; 1
    /// on an error.
    pub fn exit_code(&self) -> i32 {
        if self.aborted {
            return 0;
        }
        let results = || self.sessions.iter().map(|s| s.outcome);
        if results().any(|r| r == LandResult::Failed) {
            1
        } else if results().any(|r| !r.goes_on() && r != LandResult::NotReached) {
            3
        } else {
            0
        }
    }
}

/// The recorded queue: what was asked and how far it went.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Queue {
    mode: LandMode,
    test: Option<String>,
    message: Option<String>,
    keep_going: bool,
    no_sandbox: bool,
    /// Keep landed sessions' isolations.
    #[serde(default)]
    keep: bool,
    /// The sessions in order, each with its result once it has one.
    sessions: Vec<(SessionId, Option<LandedSession>)>,
}

/// Lands the queue; see the module's order of steps.
pub fn land(ctx: &Context, opts: &LandOptions) -> Result<LandOutcome> {
    let located = crate::recovery::locate(ctx)?;
    let queue_file = located.store.land_queue_file();
    let recorded: Option<Queue> = read_json(&queue_file)?;
    if opts.abort {
        return abort(ctx, &queue_file, recorded);
    }
    let (mut queue, resumed) = queue_for(ctx, &located, opts, recorded)?;
    check_landable(ctx, &located, &queue)?;
    let mut out = LandOutcome::begun(ctx, queue.mode, resumed);
    save(&queue_file, &queue)?;
    // Recorded first: a concurrent command's reclaim spares what the queue holds.
    let in_queue =
        |id: &SessionId| queue.sessions.iter().any(|(q, _)| q == id) || queued(&located, id);
    let configured = crate::services::config::sweep_auto_at(&located.repo.toplevel);
    let (reclaimed, warning) =
        crate::flows::autosweep::reclaim(ctx, &located, configured, &in_queue);
    out.reclaimed = reclaimed;
    out.warnings.extend(warning);
    land_queue(ctx, &located, &queue_file, &mut queue, &mut out)?;
    if out.stopped_at.is_none() {
        remove_file_if_exists(&queue_file)?;
    }
    let stopped = out
        .sessions
        .iter()
        .find(|s| Some(&s.session_id) == out.stopped_at.as_ref());
    if let Some(step) = stopped.map(NextStep::after) {
        out.hint = Some(step.hint);
        out.next_commands = step.commands;
    }
    Ok(out)
}

/// Whether the queue may land at all: every session granted, patch mode with one session, a
/// branch to land on.
fn check_landable(ctx: &Context, located: &Located, queue: &Queue) -> Result<()> {
    // A stopped queue may hold sessions a scoped caller may not land: it lands none of it.
    for (id, _) in &queue.sessions {
        ctx.require_granted(id)?;
    }
    if queue.mode == LandMode::Patch && queue.sessions.len() > 1 {
        return Err(Error::usage(
            "patch mode lands uncommitted changes: one session only (squash or branch land a queue)",
        ));
    }
    if queue.mode != LandMode::Patch && ctx.git.current_branch(&located.repo.toplevel)?.is_none() {
        return Err(Error::DetachedSource {
            source_path: located.repo.toplevel.clone(),
        });
    }
    Ok(())
}

/// Lands each session in order, recording each result before its cleanup; after one that does
/// not land, the rest are not reached unless the queue keeps going.
fn land_queue(
    ctx: &Context,
    located: &Located,
    queue_file: &std::path::Path,
    queue: &mut Queue,
    out: &mut LandOutcome,
) -> Result<()> {
    let mut pre = None;
    for index in 0..queue.sessions.len() {
        let (id, done) = queue.sessions[index].clone();
        let mut landed = match done.filter(|d| d.outcome.goes_on()) {
            // Landed before a kill that came ahead of its cleanup.
            Some(done) => done,
            None if out.stopped_at.is_some() => {
                out.sessions
                    .push(LandedSession::new(&id, LandResult::NotReached));
                continue;
            }
            None => {
                let ahead = pre.take();
                let (mut landed, next) = land_one_ahead(ctx, located, queue, (&id, ahead), index);
                pre = next;
                if !landed.outcome.goes_on() && !queue.keep_going {
                    out.stopped_at = Some(id.to_string());
                }
                // Keeping the isolation does nothing to it: recorded with the landing itself.
                if queue.keep {
                    clean_up(ctx, located, &id, true, &mut landed);
                }
                // Recorded before the cleanup: the next `land` finishes a killed one.
                queue.sessions[index].1 = Some(landed.clone());
                save(queue_file, queue)?;
                landed
            }
        };
        if clean_up(ctx, located, &id, queue.keep, &mut landed) {
            queue.sessions[index].1 = Some(landed.clone());
            save(queue_file, queue)?;
        }
        out.sessions.push(landed);
    }
    Ok(())
}

/// Whether the recorded queue holds session `id`, read afresh; `true` when it cannot be read.
pub(crate) fn queued(located: &Located, id: &SessionId) -> bool {
    read_json::<Queue>(&located.store.land_queue_file()).map_or(true, |q| {
        q.is_some_and(|q| q.sessions.iter().any(|(queued, _)| queued == id))
    })
}

/// The recorded queue when no session is named, else a new one; and whether it continues.
fn queue_for(
    ctx: &Context,
    located: &Located,
    opts: &LandOptions,
    recorded: Option<Queue>,
) -> Result<(Queue, bool)> {
    Ok(match (opts.sessions.is_empty() && !opts.all, recorded) {
        (true, Some(queue)) => (queue, true),
        (true, None) => {
            return Err(Error::usage(
                "name the sessions to land (-s ID ...) or --all; no stopped queue to continue",
            ));
        }
        (false, recorded) => {
            // A queue this one replaces may hold landings a kill kept from being cleaned up.
            for (id, done) in recorded.iter().flat_map(|q| q.sessions.clone()) {
                if let Some(mut done) = done.filter(|_| ctx.may_act_on(&id)) {
                    clean_up(ctx, located, &id, opts.keep, &mut done);
                }
            }
            (new_queue(ctx, located, opts)?, false)
        }
    })
}

/// The sessions a command line names, as [`new_queue`] resolves them.
pub(super) fn sessions_asked(
    ctx: &Context,
    located: &Located,
    opts: &LandOptions,
) -> Result<Vec<SessionId>> {
    Ok(new_queue(ctx, located, opts)?
        .sessions
        .into_iter()
        .map(|(id, _)| id)
        .collect())
}

/// The sessions named (each must exist), or every live one the caller may act on, oldest first.
fn new_queue(ctx: &Context, located: &Located, opts: &LandOptions) -> Result<Queue> {
    let ids: Vec<SessionId> = match opts.all {
        false => {
            let mut ids: Vec<SessionId> = Vec::new();
            for given in &opts.sessions {
                let found = ctx.resolve_session(located, Some(given))?;
                if !ids.contains(&found.session_id) {
                    ids.push(found.session_id);
                }
            }
            ids
        }
        true => {
            let mut live = located.store.live_sessions()?;
            live.retain(|r| ctx.may_act_on(&r.session_id));
            // A landed session is left out (its isolation read only when its last tree may be).
            let mut unlanded = Vec::with_capacity(live.len());
            // HEAD's tree, read once for them all.
            let head = match live.is_empty() {
                true => None,
                false => crate::services::landed::head_tree(ctx, located)?,
            };
            let verdicts = two_at_a_time(&live, |record| {
                landed_already(ctx, located, record, head.as_deref())
            });
            for (record, verdict) in live.into_iter().zip(verdicts) {
                if verdict?.is_none() {
                    unlanded.push(record);
                }
            }
            unlanded.sort_by_key(|r| (r.created_at_ms, r.session_id.clone()));
            unlanded.into_iter().map(|r| r.session_id).collect()
        }
    };
    Ok(Queue {
        mode: opts.mode,
        test: opts.test.clone(),
        message: opts.message.clone(),
        keep_going: opts.keep_going,
        no_sandbox: opts.no_sandbox,
        keep: opts.keep,
        sessions: ids.into_iter().map(|id| (id, None)).collect(),
    })
}

/// `ask` of each item, in order, two items asked at a time (each question runs git).
fn two_at_a_time<T: Sync, R: Send>(items: &[T], ask: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let (first, second) = items.split_at(items.len().div_ceil(2));
    std::thread::scope(|scope| {
        let later = scope.spawn(|| second.iter().map(&ask).collect::<Vec<R>>());
        let mut answers: Vec<R> = first.iter().map(&ask).collect();
        answers.extend(
            later
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        );
        answers
    })
}

fn save(path: &std::path::Path, queue: &Queue) -> Result<()> {
    write_record_atomic(path, QUEUE_SCHEMA, queue)
}

/// `--abort`: drops the stopped queue and touches no session; what it held, as recorded.
fn abort(
    ctx: &Context,
    queue_file: &std::path::Path,
    recorded: Option<Queue>,
) -> Result<LandOutcome> {
    let Some(queue) = recorded else {
        return Err(Error::usage("no stopped queue to abort"));
    };
    // A scoped caller drops no queue that holds sessions it may not land.
    for (id, _) in &queue.sessions {
        ctx.require_granted(id)?;
    }
    remove_file_if_exists(queue_file)?;
    let sessions = (queue.sessions.into_iter())
        .map(|(id, done)| done.unwrap_or_else(|| LandedSession::new(&id, LandResult::NotReached)))
        .collect();
    let mut out = LandOutcome::begun(ctx, queue.mode, false);
    out.sessions = sessions;
    out.aborted = true;
    Ok(out)
}

/// The cleanup of a session that landed, once: whether `landed` changed.
fn clean_up(
    ctx: &Context,
    located: &Located,
    id: &SessionId,
    keep: bool,
    landed: &mut LandedSession,
) -> bool {
    let landing = matches!(landed.outcome, LandResult::Landed | LandResult::Idempotent);
    if !landing || landed.cleanup.is_some() {
        return false;
    }
    match after_landing(ctx, located, keep, id) {
        // Another `land` of the same queue cleaned it up meanwhile.
        Err(_) if discarded(located, id) => {
            landed.cleanup = Some(Cleanup::Discarded);
            true
        }
        Ok(None) => false,
        Ok(done) => {
            landed.cleanup = done;
            true
        }
        Err(err) => {
            landed.not_cleaned_up(&err);
            false
        }
    }
}

/// Discards session `id` as `discard -s ID` does (`purge`: `--purge`).
pub(super) fn discard(
    ctx: &Context,
    id: &str,
    purge: bool,
) -> Result<crate::ops::discard::DiscardOutcome> {
    let session_id = Some(id.to_string());
    crate::ops::discard::discard(
        ctx,
        &crate::ops::discard::DiscardOptions { session_id, purge },
    )
}

/// Whether the session's record says it is discarded now.
fn discarded(located: &Located, id: &SessionId) -> bool {
    matches!(
        located.store.load_session(id),
        Ok(Some(record)) if record.state == SessionState::Discarded
    )
}

/// Keeps or discards a landed session's isolation; `None` when its work is not all in HEAD.
fn after_landing(
    ctx: &Context,
    located: &Located,
    keep: bool,
    id: &SessionId,
) -> Result<Option<Cleanup>> {
    let Some(record) = located.store.load_session(id)? else {
        return Ok(None);
    };
    if record.state == SessionState::Discarded {
        return Ok(Some(Cleanup::Discarded));
    }
    // Kept as it is: nothing to read it for (a later landing finds what it gains since).
    if keep {
        return Ok(Some(Cleanup::Kept));
    }
    // A tree that a killed cleanup left half removed: this queue landed its work.
    let cut_short = record.state == SessionState::Bound
        && !record.read_only
        && !crate::model::isolation::is_healthy(&record);
    if !cut_short && !crate::services::landed::is_landed(ctx, located, &record)? {
        return Ok(None);
    }
    discard(ctx, id.as_str(), false).map(|done| Some(Cleanup::of(done.recycled)))
}

/// Lands the session at `index` ([`land_one`], from the snapshot taken ahead of it, `pre`)
/// while the next one to land is snapshotted beside it; the landing, and that snapshot.
fn land_one_ahead(
    ctx: &Context,
    located: &Located,
    queue: &Queue,
    (id, mut pre): (&SessionId, Option<Presnapshot>),
    index: usize,
) -> (LandedSession, Option<Presnapshot>) {
    // Kept until this landing ends: the session was snapshotted under it.
    let _lease = pre.as_mut().and_then(Presnapshot::take_lease);
    let next = queue.sessions[index + 1..]
        .iter()
        .find(|(_, done)| done.is_none())
        .map(|(next, _)| next);
    let Some(next) = next else {
        return (land_one(ctx, located, queue, id, pre), None);
    };
    std::thread::scope(|scope| {
        // A queue holds sessions with work to land (`--all` leaves landed ones out), so the
        // snapshot is seldom taken for nothing.
        let ahead = scope.spawn(|| {
            let record = located.store.load_session(next).ok()??;
            Presnapshot::take(ctx, located, &record)
        });
        let landed = land_one(ctx, located, queue, id, pre);
        (landed, ahead.join().ok().flatten())
    })
}

/// One session: rebase, test, promote; whatever stops it is its result, not the queue's error.
fn land_one(
    ctx: &Context,
    located: &Located,
    queue: &Queue,
    id: &SessionId,
    pre: Option<Presnapshot>,
) -> LandedSession {
    let started = Instant::now();
    let mut landed = LandedSession::new(id, LandResult::Failed);
    let result = steps(ctx, located, queue, (id, pre), &mut landed);
    if result.is_err() && discarded(located, id) {
        // Discarded under its feet (another `land` that landed it, or the user).
        landed = LandedSession::new(id, LandResult::Discarded);
    } else if let Err(err) = result {
        // Its tree was renamed aside by another command's cleanup that has not ended yet:
        // busy, not broken, whatever the step that met the missing tree said.
        let err = match located.store.pending_file(id).exists() {
            true => Error::SessionBusy {
                session_id: id.to_string(),
                holder: crate::base::error::Busy::TreeOperation,
            },
            false => err,
        };
        landed.fail(&err);
    }
    landed.finished(ctx, started)
}

/// Rebase onto HEAD when it moved, the test, then the promote.
fn steps(
    ctx: &Context,
    located: &Located,
    queue: &Queue,
    (id, pre): (&SessionId, Option<Presnapshot>),
    landed: &mut LandedSession,
) -> Result<()> {
    let record = ctx.resolve_record(located, Some(id))?;
    // Read once: whether its work is in HEAD's tree, and the commit a rebase moves it onto.
    let head = located.repo.head_commit_and_tree(&ctx.git);
    let head_tree = head.as_ref().map(|(_, tree)| tree.as_str());
    if let Some(outcome) = landed_already(ctx, located, &record, head_tree)? {
        landed.outcome = outcome;
        return Ok(());
    }
    let session = ctx.resolve_session(located, Some(id))?;
    // A test a kill ended left what it wrote in the isolation: none of it lands.
    super::land_gate::drop_left_writes(ctx, located, id, &mut landed.warnings)?;
    if let Some(paths) = crate::services::rebase::conflicted_paths(&located.store, &session) {
        return Err(crate::services::rebase::conflicted_error(id, paths));
    }
    use crate::ops::promote::Moved;
    // A rebase that knows the tree it left is what the test sees and what lands: work the
    // isolation gains meanwhile is not tested, so it stays there for a later landing.
    let head = head.map(|(commit, _)| commit);
    let moved = crate::ops::promote::rebase_if_moved(ctx, located, &session, (head.clone(), pre))?;
    let rebased = match moved {
        Moved::Stopped(stopped) => {
            take_promote(landed, *stopped);
            return Ok(());
        }
        Moved::Rebased { left } => left,
        Moved::Not => None,
    };
    crate::fault_point!("land-pause-after-rebase");
    // What the test runs on stands on `head`: it must still be HEAD once the test passed.
    let (tested_on, ahead) = match queue.test.as_deref() {
        Some(test) => {
            let gate = (test, queue.no_sandbox, queue.mode);
            let rebased = rebased
                .as_ref()
                .map(|(tree, head)| (tree.as_str(), head.as_str()));
            let (passed, ahead) = tested_with_promote_ahead(
                ctx,
                located,
                (queue, gate),
                (id, &head, rebased),
                landed,
            );
            if !passed? {
                return Ok(());
            }
            (head, ahead)
        }
        None => (None, None),
    };
    let known = rebased
        .as_ref()
        .map(|(tree, head)| crate::ops::promote::Known {
            tree,
            head,
            ahead: ahead.as_ref(),
        });
    promote_tested(ctx, located, queue, (id, known, tested_on), landed)
}

/// [`test_gate`], with the promote's work that needs no lock done beside it, from the tree and
/// HEAD the rebase left (`rebased`): the patch it lands, and in branch mode the commits it
/// plans on `head` ([`crate::ops::promote::plan_ahead`]). Only objects and a scratch
/// file are written; a failed test leaves them unused.
fn tested_with_promote_ahead(
    ctx: &Context,
    located: &Located,
    (queue, gate): (&Queue, (&str, bool, LandMode)),
    (id, head, rebased): (&SessionId, &Option<CommitId>, Option<(&str, &str)>),
    landed: &mut LandedSession,
) -> (Result<bool>, Option<crate::ops::promote::PatchAhead>) {
    std::thread::scope(|scope| {
        let ahead = rebased.map(|(tree, isolation_head)| {
            scope.spawn(move || {
                let session = located.store.load_session(id).ok()??;
                let known = crate::ops::promote::Known {
                    tree,
                    head: isolation_head,
                    ahead: None,
                };
                let opts = promote_options(queue, id, head.clone());
                let plan = |candidate: &crate::ops::promote::Candidate| {
                    if let (Mode::Branch, Some(tested_on)) = (opts.mode, head) {
                        let on = (&opts, tested_on);
                        let _ = crate::ops::promote::plan_ahead(ctx, located, candidate, on);
                    }
                };
                crate::ops::promote::PatchAhead::make(ctx, located, session, known, plan).ok()
            })
        });
        let passed = test_gate(ctx, located, gate, (id, head.clone()), landed);
        (passed, ahead.and_then(|made| made.join().ok().flatten()))
    })
}

/// The result of a session with nothing to land (discarded, or all in HEAD's history), else
/// `None`.
fn landed_already(
    ctx: &Context,
    located: &Located,
    record: &crate::store::state::SessionRecord,
    head_tree: Option<&str>,
) -> Result<Option<LandResult>> {
    use crate::services::landed::{is_landed, landed_before_discard, may_be_landed};
    if record.state == SessionState::Discarded {
        // A landing cleans up after itself: landed then, nothing to do now.
        return Ok(Some(match landed_before_discard(ctx, located, record)? {
            true => LandResult::Idempotent,
            false => LandResult::Discarded,
        }));
    }
    // Its isolation is read only when its last known tree says it may be landed (an edit
    // since that alone made it match HEAD is rebased to nothing and lands as `empty`).
    if may_be_landed(ctx, located, record, head_tree)? && is_landed(ctx, located, record)? {
        return Ok(Some(LandResult::Idempotent));
    }
    Ok(None)
}

/// Runs the test and drops what it wrote: whether it passed with HEAD still at `tested_on`.
fn test_gate(
    ctx: &Context,
    located: &Located,
    (test, no_sandbox, queue_mode): (&str, bool, LandMode),
    (id, tested_on): (&SessionId, Option<crate::base::ids::CommitId>),
    landed: &mut LandedSession,
) -> Result<bool> {
    let tested = test_passes(ctx, located, (test, no_sandbox), id, landed);
    crate::fault_point!("land-after-test");
    // A test on the run's layer wrote nothing to the isolation; one on the full path is
    // moved back to the tree it started from.
    landed.test_wrote = match tested.as_ref().ok().and_then(|t| t.dropped.clone()) {
        Some(wrote) => wrote,
        None => super::land_gate::drop_test_writes(ctx, located, id)?,
    };
    if !tested?.passed {
        landed.outcome = LandResult::TestFailed;
        return Ok(false);
    }
    // A branch promote reads HEAD under its lock and refuses another itself.
    let promote_checks = tested_on.is_some() && promote_mode(queue_mode) == Mode::Branch;
    if !promote_checks && located.repo.head_commit(&ctx.git) != tested_on {
        landed.outcome = LandResult::Conflict;
        landed.reason = Some(Reason::HeadMoved);
        landed
            .warnings
            .push(LandWarning::HeadMovedDuringTest.into());
        return Ok(false);
    }
    Ok(true)
}

/// Promotes the session under its lease: what its rebase left, if known, else its isolation.
fn promote_tested(
    ctx: &Context,
    located: &Located,
    queue: &Queue,
    (id, rebased, tested_on): (
        &SessionId,
        Option<crate::ops::promote::Known<'_>>,
        Option<crate::base::ids::CommitId>,
    ),
    landed: &mut LandedSession,
) -> Result<()> {
    // A run that holds the session's lease is still writing its work: none of it lands.
    let _lease = located.store.lease_or_busy(id)?;
    let session = ctx.resolve_session(located, Some(id))?;
    let opts = promote_options(queue, id, tested_on);
    let promoted = crate::ops::promote::promote_session(ctx, located, session, &opts, rebased)?;
    let replayed_head = promoted.replayed_head.clone();
    take_promote(landed, promoted);
    if landed.outcome == LandResult::Landed && queue.mode != LandMode::Patch {
        // The HEAD the replay left, read under the promote's lock; else HEAD now.
        landed.commit = replayed_head.or_else(|| located.repo.head_commit(&ctx.git));
    }
    Ok(())
}

/// How the queue promotes the session `id`, tested on `tested_on`.
fn promote_options(queue: &Queue, id: &SessionId, tested_on: Option<CommitId>) -> PromoteOptions {
    let mode = promote_mode(queue.mode);
    PromoteOptions {
        session_id: Some(id.to_string()),
        mode,
        squash: queue.mode == LandMode::Squash,
        message: queue.message.clone(),
        tested_on: tested_on.filter(|_| mode == Mode::Branch),
        ..PromoteOptions::default()
    }
}

/// How a queue's mode promotes.
fn promote_mode(mode: LandMode) -> Mode {
    match mode {
        LandMode::Patch => Mode::Patch,
        LandMode::Squash | LandMode::Branch => Mode::Branch,
    }
}

/// The session's result from a promote's outcome.
fn take_promote(landed: &mut LandedSession, promoted: PromoteOutcome) {
    landed.outcome = match promoted.outcome {
        Outcome::Applied => LandResult::Landed,
        Outcome::Idempotent | Outcome::Noted => LandResult::Idempotent,
        Outcome::Empty | Outcome::Planned => LandResult::Empty,
        Outcome::Conflict => LandResult::Conflict,
        Outcome::Partial => LandResult::Partial,
    };
    landed.reason = promoted.reason;
    landed.digest = promoted.digest;
    landed.conflicting_paths = promoted.conflicting_paths;
    landed.warnings.extend(promoted.warnings);
    if let Some(detail) = promoted.detail.filter(|_| !landed.outcome.goes_on()) {
        landed
            .warnings
            .push(LandWarning::PromoteStopped { detail }.into());
    }
}

/// The test's shell: as CI's `bash -e -o pipefail`, so the gate passes nothing CI would fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TestShell {
    /// `bash -e -o pipefail -c TEST`.
    Bash,
    /// No bash on `PATH`: `sh -e -c`, with `pipefail` where that sh has it.
    Sh,
}

impl TestShell {
    /// Bash when `PATH` (the one the command gets) holds it.
    fn find() -> TestShell {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let executable = |dir: PathBuf| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(dir.join("bash"))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        };
        match std::env::split_paths(&path).any(executable) {
            true => TestShell::Bash,
            false => TestShell::Sh,
        }
    }

    /// The command line that runs `test`.
    fn argv(self, test: &str) -> Vec<std::ffi::OsString> {
        match self {
            TestShell::Bash => ["bash", "-e", "-o", "pipefail", "-c", test]
                .map(Into::into)
                .to_vec(),
            // On the test's own line, so that the shell's messages keep its line numbers.
            TestShell::Sh => {
                let script =
                    format!("if (set -o pipefail) 2>/dev/null; then set -o pipefail; fi; {test}");
                vec!["sh".into(), "-e".into(), "-c".into(), script.into()]
            }
        }
    }

    /// What the landing says when the gate is weaker than CI's.
    fn warning(self) -> Option<Warning> {
        (self == TestShell::Sh).then(|| LandWarning::TestUnderSh.into())
    }
}

/// Runs the test command in the session under [`TestShell`], its output kept, what it writes
/// thrown away ([`super::land_gate`]).
pub(super) fn test_passes(
    ctx: &Context,
    located: &Located,
    (test, no_sandbox): (&str, bool),
    id: &SessionId,
    landed: &mut LandedSession,
) -> Result<Tested> {
    let shell = TestShell::find();
    landed.warnings.extend(shell.warning());
    let run_id = crate::base::ids::generate("r");
    let dir = located.store.land_tests_dir(id);
    std::fs::create_dir_all(&dir).ctx(|| format!("cannot create {}", dir.display()))?;
    let output = dir.join(format!("{run_id}.log"));
    let ran = crate::ops::run::run(
        ctx,
        &crate::ops::run::RunOptions {
            session_id: Some(id.to_string()),
            run_id: Some(run_id.clone()),
            run_id_fresh: true,
            command: shell.argv(test),
            sandbox: (!no_sandbox).then(crate::ops::run::SandboxRequest::default),
            output: Some(output.clone()),
            throwaway: Some(super::land_gate::record_of(located, id)),
            ..crate::ops::run::RunOptions::default()
        },
    )?;
    landed.test_exit_code = ran.exit_code;
    landed.test_run_id = Some(ran.run_id);
    landed.test_output = Some(output);
    landed.warnings.extend(ran.warnings);
    Ok(Tested {
        passed: ran.exit_code == Some(0),
        dropped: ran.dropped,
    })
}

/// What moves a stopped queue on: what the user deals with first, then the commands to run.
struct NextStep {
    hint: String,
    commands: Vec<String>,
}

impl NextStep {
    /// The step after the session the queue stopped at: a rebase conflict is resolved in the
    /// isolation, anything else dealt with and the queue continued.
    fn after(stopped: &LandedSession) -> NextStep {
        let id = crate::base::argv::shell_quote(std::ffi::OsStr::new(&stopped.session_id));
        let land = "a3s-iso land".to_string();
        let first = match (stopped.outcome, stopped.reason) {
            (LandResult::Conflict, Some(Reason::RebaseConflicted)) => {
                let rebase = format!("a3s-iso rebase -s {id} --continue");
                return NextStep {
                    hint: format!(
                        "a conflict waits in the isolation of session {id} ({}): resolve it there ($(a3s-iso path -s {id})) and git add the resolved paths, then `{rebase}`, then `{land}` continues the queue",
                        stopped.conflicting_paths.join(", ")
                    ),
                    commands: vec![rebase, land],
                };
            }
            (LandResult::Conflict, Some(Reason::HeadMoved)) => {
                format!("your HEAD moved while session {id} was tested: nothing to resolve")
            }
            (LandResult::Conflict, Some(Reason::PatchDoesNotApply)) => format!(
                "your uncommitted changes are in the way of session {id} ({}): commit, stash or move them",
                stopped.conflicting_paths.join(", ")
            ),
            (LandResult::TestFailed, _) => format!(
                "the test failed on session {id} (exit {}, output in {}): fix the session's work in $(a3s-iso path -s {id})",
                stopped
                    .test_exit_code
                    .map_or("by a signal".into(), |c| c.to_string()),
                stopped
                    .test_output
                    .as_ref()
                    .map_or("no file".into(), |p| p.display().to_string())
            ),
            (LandResult::Failed, _)
                if stopped
                    .error
                    .as_ref()
                    .is_some_and(|e| e.code == ErrorCode::SessionBusy.as_str()) =>
            {
                format!(
                    "another command holds session {id} (a run, or a cleanup): wait for it to end"
                )
            }
            (LandResult::Failed, _) => match &stopped.error {
                Some(e) => format!(
                    "session {id} stopped on an error ({}: {}): deal with that error first",
                    e.code, e.message
                ),
                None => format!("session {id} stopped on an error: deal with it first"),
            },
            _ => format!(
                "session {id} did not land ({}): deal with that first",
                stopped.reason.map_or("no reason", |r| r.as_str())
            ),
        };
        NextStep {
            hint: format!(
                "{first}; then `{land}` continues the queue (it rebases and tests the session anew)"
            ),
            commands: vec![land],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hint of a queue stopped on an error names the error and says, in plain words, what
    /// comes first and what continues the queue.
    #[test]
    fn the_hint_after_an_error_says_what_to_deal_with_first() {
        let mut failed = LandedSession::new("s1", LandResult::Failed);
        failed.error = Some(LandError {
            code: "git_failed".into(),
            message: "git update-ref failed".into(),
        });
        insta::assert_snapshot!(NextStep::after(&failed).hint, @"session s1 stopped on an error (git_failed: git update-ref failed): deal with that error first; then `a3s-iso land` continues the queue (it rebases and tests the session anew)");
        let partial = LandedSession::new("s2", LandResult::Partial);
        insta::assert_snapshot!(NextStep::after(&partial).hint, @"session s2 did not land (no reason): deal with that first; then `a3s-iso land` continues the queue (it rebases and tests the session anew)");
    }
}
