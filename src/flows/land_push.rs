//! `land --push REMOTE/BRANCH`: the landing queue across machines, whose lock is the git
//! server's atomic ref update. For each session, in order: fetch the branch, merge the
//! session's change set onto its tip (objects only; the user's checkout takes no part), run the
//! test in the session's isolation moved to exactly that tree (the gate's throwaway layer, then
//! moved back), make the landing commit on the tip, and push it with a lease on that tip
//! (`--force-with-lease`: a compare-and-swap). A push that finds the branch moved lost a race
//! to another machine: fetch, merge, test and push again, up to `attempts` pushes.
//!
//! Exactly once: the landing commit carries the change set's digest in the trailer
//! `A3S-Change-Set: sha256:…`, and before each attempt the branch's history since the change
//! set's base is searched for it: a change set another run already landed (a crash after the
//! push, another machine) is `idempotent`. The digest and base are recorded (`land-push/<id>`)
//! before the first push, so that a session whose cleanup a kill cut short is still known.
//! A push the server refuses for another reason (a hook, a protected branch) ends the session
//! with the server's words (`push_refused`), never retried; a remote that does not answer ends
//! it at once (`remote_unreachable`).

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::base::error::{Error, Result};
use crate::base::fsutil::{read_json, write_record_atomic};
use crate::base::ids::{CommitId, Digest, TreeId};
use crate::git::{LeasedPush, RefUpdate};
use crate::ops::promote::Reason;
use crate::store::state::SessionState;
use crate::workspace::context::{Context, Located};

use super::land::{
    Cleanup, LandError, LandMode, LandOptions, LandOutcome, LandResult, LandedSession, PushReport,
};

/// What `land --push` is asked beyond `land`'s options.
#[derive(Debug, Clone)]
pub struct PushOptions {
    /// The remote's branch to land onto.
    pub target: PushTarget,
    /// The most pushes of one landing (a lost race fetches and tries again).
    pub attempts: u32,
    /// Change-set documents to land after the sessions, in order (each verified first).
    pub change_sets: Vec<std::path::PathBuf>,
}

/// The trailer that names a landing commit's change set.
pub const TRAILER: &str = "A3S-Change-Set";

/// The schema of a session's record of what `land --push` pushes (`land-push/<id>.json`).
pub const PUSHING_SCHEMA: &str = "a3s-iso.land_push.v1";

/// How many pushes one landing makes at most, by default.
pub const DEFAULT_ATTEMPTS: u32 = 10;

/// Where `land --push` lands: a branch of a configured remote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushTarget {
    /// The remote's name.
    pub remote: String,
    /// The branch there (`refs/heads/<branch>`).
    pub branch: String,
}

impl PushTarget {
    /// `REMOTE/BRANCH`: the remote is what comes before the first `/`.
    pub fn parse(text: &str) -> Result<PushTarget> {
        let usage = || Error::Usage {
            message: format!(
                "--push {text:?}: expected REMOTE/BRANCH (a configured remote, then a branch on it)"
            ),
        };
        let (remote, branch) = text.split_once('/').ok_or_else(usage)?;
        let plain_branch = !branch.is_empty()
            && !branch.starts_with(['-', '/'])
            && !branch.ends_with(['/', '.'])
            && !branch.contains("..")
            && !branch.contains("//")
            && !branch.ends_with(".lock")
            && !branch.bytes().any(|b| {
                b <= b' ' || matches!(b, b'~' | b'^' | b':' | b'?' | b'*' | b'[' | b'\\' | 0x7f)
            })
            && !branch.contains("@{");
        if remote.is_empty() || remote.starts_with('-') || !plain_branch {
            return Err(usage());
        }
        Ok(PushTarget {
            remote: remote.to_string(),
            branch: branch.to_string(),
        })
    }
}

/// What a session's landing through the server pushes, recorded before its first push.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Pushing {
    pub(super) remote: String,
    pub(super) branch: String,
    /// The change set's digest: the trailer the branch is searched for.
    pub(super) digest: Digest,
    /// The commit the change set is based on: the search starts there (empty: unknown, the
    /// whole history is searched).
    pub(super) base: String,
}

/// Lands the sessions `opts` names onto `target`, one after the other.
pub fn land_push(ctx: &Context, opts: &LandOptions, push: &PushOptions) -> Result<LandOutcome> {
    let target = &push.target;
    if opts.mode != LandMode::Squash || opts.abort {
        return Err(Error::Usage {
            message: "land --push lands each session as one commit (squash mode); --abort, branch and patch modes are for a land onto the source's HEAD".into(),
        });
    }
    let located = ctx.locate()?;
    // Only a configured remote: its transport and credentials are the user's git's.
    crate::services::remote::choose_remote(
        &ctx.git,
        &located.repo.toplevel,
        Some(&target.remote),
        false,
    )?;
    crate::services::remote::drop_dead_fetches(ctx, &located)?;
    if opts.sessions.is_empty() && !opts.all && push.change_sets.is_empty() {
        return Err(Error::Usage {
            message: "name what to land: sessions (-s ID ... or --all) or change-set documents (--change-set FILE ...)".into(),
        });
    }
    let mut ids = super::land::sessions_asked(ctx, &located, opts)?;
    // A scratch session is no entry; one a killed landing left goes.
    ids.retain(|id| !is_scratch(id));
    for id in &ids {
        ctx.require_granted(id)?;
    }
    drop_dead_scratch(ctx, &located);
    let entries: Vec<Entry> = ids
        .iter()
        .map(|id| Entry::Session(id.clone()))
        .chain(push.change_sets.iter().cloned().map(Entry::Document))
        .collect();
    let mut out = LandOutcome {
        mode: LandMode::Squash,
        resumed: false,
        sessions: Vec::new(),
        stopped_at: None,
        hint: None,
        next_commands: Vec::new(),
        warnings: ctx.take_notices(),
        aborted: false,
        reclaimed: Vec::new(),
    };
    let mut stopped_index = None;
    for (index, entry) in entries.iter().enumerate() {
        if stopped_index.is_some() {
            out.sessions
                .push(LandedSession::new(&entry.label(), LandResult::NotReached));
            continue;
        }
        let landed = match entry {
            Entry::Session(id) => push_one(ctx, &located, opts, push, id),
            Entry::Document(path) => {
                super::land_push_doc::document_one(ctx, &located, (opts, push), path)
            }
        };
        if !landed.outcome.goes_on() && !opts.keep_going {
            out.stopped_at = Some(landed.session_id.clone());
            stopped_index = Some(index);
        }
        out.sessions.push(landed);
    }
    if let (Some(stopped), Some(index)) = (&out.stopped_at, stopped_index) {
        let rest: Vec<String> = entries[index..].iter().map(Entry::argument).collect();
        let again = format!(
            "a3s-iso land --push {}/{} {}",
            target.remote,
            target.branch,
            rest.join(" ")
        );
        out.hint = Some(format!(
            "session {stopped} did not land; deal with what stopped it, then `{again}` lands it and the rest (what landed is idempotent)"
        ));
        out.next_commands = vec![again];
    }
    Ok(out)
}

/// The prefix of the scratch sessions a change-set document's test runs in.
pub(super) const SCRATCH: &str = "landing";

/// One entry of the queue.
enum Entry {
    /// A session of this repository.
    Session(String),
    /// A change-set document.
    Document(std::path::PathBuf),
}

impl Entry {
    /// What the report calls it before it is read.
    fn label(&self) -> String {
        match self {
            Entry::Session(id) => id.clone(),
            Entry::Document(path) => path.display().to_string(),
        }
    }

    /// The command-line argument that names it.
    fn argument(&self) -> String {
        match self {
            Entry::Session(id) => format!("-s {}", crate::base::argv::shell_quote(id.as_ref())),
            Entry::Document(path) => format!(
                "--change-set {}",
                crate::base::argv::shell_quote(path.as_os_str())
            ),
        }
    }
}

/// Whether `id` is a scratch session a landing bound (its name says which process made it).
fn is_scratch(id: &str) -> bool {
    id.starts_with(&format!("{SCRATCH}-")) && crate::base::maker::maker_of(id).is_some()
}

/// Purges the scratch sessions of landings whose process died (best effort: one left waits
/// for the next landing).
fn drop_dead_scratch(ctx: &Context, located: &Located) {
    let Ok(live) = located.store.live_sessions() else {
        return;
    };
    for record in live {
        let id = record.session_id.to_string();
        if is_scratch(&id) && crate::base::maker::made_by_dead(&id) {
            let _ = crate::ops::discard::discard(
                ctx,
                &crate::ops::discard::DiscardOptions {
                    session_id: Some(id),
                    purge: true,
                },
            );
        }
    }
}

/// One session through the server; whatever stops it is its result, never the queue's error.
fn push_one(
    ctx: &Context,
    located: &Located,
    opts: &LandOptions,
    push: &PushOptions,
    id: &str,
) -> LandedSession {
    let target = &push.target;
    let started = Instant::now();
    let mut landed = LandedSession::new(id, LandResult::Failed);
    landed.push = Some(PushReport {
        remote: target.remote.clone(),
        branch: target.branch.clone(),
        attempts: 0,
        built_on: None,
        tested_tree: None,
    });
    let mut pins = Pins::new(ctx, located);
    let result = push_steps(ctx, located, (opts, push), id, &mut pins, &mut landed);
    pins.release();
    if let Err(err) = result {
        landed.outcome = LandResult::Failed;
        landed.error = Some(LandError {
            code: err.code().as_str().to_string(),
            message: err.to_string(),
        });
    }
    if matches!(landed.outcome, LandResult::Landed | LandResult::Idempotent) {
        clean_up(ctx, located, opts.keep, &mut landed);
    }
    landed.warnings.extend(ctx.take_notices());
    landed.duration_ms = started.elapsed().as_millis() as u64;
    landed
}

/// Before the work: a landing recorded earlier that is on the branch is `idempotent`; a
/// discarded session is `discarded`; an isolation a kill left on a landing's tree goes back.
/// Then [`attempts`].
fn push_steps(
    ctx: &Context,
    located: &Located,
    (opts, push): (&LandOptions, &PushOptions),
    id: &str,
    pins: &mut Pins,
    landed: &mut LandedSession,
) -> Result<()> {
    let target = &push.target;
    let record = ctx.resolve_record(located, Some(id))?;
    let file = located.store.land_push_file(id);
    let recorded: Option<Pushing> = read_json(&file)?;
    let recorded = recorded.filter(|p| p.remote == target.remote && p.branch == target.branch);
    if let Some(pushing) = &recorded {
        let tip = pins.fetch_tip(target)?;
        if let Some(commit) = pins.landed_in(&tip, pushing)? {
            landed.outcome = LandResult::Idempotent;
            landed.digest = Some(pushing.digest.clone());
            landed.commit = Some(CommitId::new(commit)?);
            return Ok(());
        }
    }
    if record.state == SessionState::Discarded {
        landed.outcome = LandResult::Discarded;
        return Ok(());
    }
    if super::land_gate::back_home(ctx, located, id)? {
        landed
            .warnings
            .push("an interrupted landing had moved the isolation to its tree: moved back".into());
    }
    let left = super::land_gate::drop_test_writes(ctx, located, id)?;
    if !left.is_empty() {
        landed.warnings.push(format!(
            "an interrupted test had written {}: dropped from the isolation before landing",
            left.join(", ")
        ));
    }
    let cs = crate::services::remote::session_change_set_now(ctx, id)?;
    landed.warnings.extend(cs.warnings.iter().cloned());
    landed.digest = Some(cs.digest.clone());
    if cs.base_tree == cs.result_tree {
        landed.outcome = LandResult::Empty;
        return Ok(());
    }
    let pushing = Pushing {
        remote: target.remote.clone(),
        branch: target.branch.clone(),
        digest: cs.digest.clone(),
        base: record.bound_revision.clone(),
    };
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
    }
    write_record_atomic(&file, PUSHING_SCHEMA, &pushing)?;
    let change = Change {
        id,
        tested_in: Some(id),
        pushing: &pushing,
        base_tree: cs.base_tree.as_str(),
        result_tree: cs.result_tree.as_str(),
    };
    attempts(ctx, located, (opts, push), &change, pins, landed)
}

/// The change set one entry lands.
pub(super) struct Change<'a> {
    /// What the landing commit's default message names (the session).
    pub(super) id: &'a str,
    /// The session whose isolation the test runs in (the session's own, or a scratch one).
    pub(super) tested_in: Option<&'a str>,
    pub(super) pushing: &'a Pushing,
    pub(super) base_tree: &'a str,
    pub(super) result_tree: &'a str,
}

/// Fetch, search, merge, commit, test, push — again after each lost race, up to
/// `push.attempts` pushes.
pub(super) fn attempts(
    ctx: &Context,
    located: &Located,
    (opts, push): (&LandOptions, &PushOptions),
    change: &Change<'_>,
    pins: &mut Pins,
    landed: &mut LandedSession,
) -> Result<()> {
    let (dir, target) = (&located.repo.toplevel, &push.target);
    let limit = push.attempts.max(1);
    for attempt in 1..=limit {
        let tip = pins.fetch_tip(target)?;
        if let Some(commit) = pins.landed_in(&tip, change.pushing)? {
            landed.outcome = LandResult::Idempotent;
            landed.commit = Some(CommitId::new(commit)?);
            return Ok(());
        }
        let Some(tree) = merge_onto(ctx, located, change, &tip, landed)? else {
            return Ok(());
        };
        let commit = ctx
            .git
            .commit_landing(dir, (&tree, &tip), &message(opts, change))?;
        pins.pin(&commit)?;
        if let (Some(test), Some(place)) = (opts.test.as_deref(), change.tested_in) {
            let tested = super::land_gate::test_on_tree(ctx, located, (place, &tree), || {
                super::land::test_passes(ctx, located, (test, opts.no_sandbox), place, landed)
            })?;
            landed.test_wrote = tested.wrote;
            report(landed).tested_tree = Some(TreeId::new(&tested.tested)?);
            if !tested.passed {
                landed.outcome = LandResult::TestFailed;
                return Ok(());
            }
        }
        report(landed).attempts = attempt;
        report(landed).built_on = Some(CommitId::new(&tip)?);
        crate::fault_point!("land-push-before-push");
        match ctx
            .git
            .push_leased(dir, &target.remote, (&commit, &target.branch), &tip)?
        {
            LeasedPush::Pushed => {
                crate::fault_point!("land-push-after-push");
                landed.outcome = LandResult::Landed;
                landed.commit = Some(CommitId::new(&commit)?);
                return Ok(());
            }
            LeasedPush::Moved => back_off(attempt),
            // Two pushes that passed the lease at once: the server's ref update refuses the
            // later one. A branch moved from the tip lost a race; one still there is refused.
            LeasedPush::Refused { .. } if moved_from(ctx, dir, target, &tip)? => back_off(attempt),
            LeasedPush::Refused { message } => {
                return Err(Error::PushRefused {
                    remote: target.remote.clone(),
                    branch: target.branch.clone(),
                    message,
                });
            }
        }
    }
    Err(Error::PushContended {
        remote: target.remote.clone(),
        branch: target.branch.clone(),
        attempts: limit,
    })
}

/// Whether the branch is no longer at `tip` on the remote (asked afresh).
fn moved_from(
    ctx: &Context,
    dir: &std::path::Path,
    target: &PushTarget,
    tip: &str,
) -> Result<bool> {
    let branch = format!("refs/heads/{}", target.branch);
    let listed = ctx
        .git
        .ls_remote(dir, &target.remote, std::slice::from_ref(&branch))?;
    Ok(!listed
        .iter()
        .any(|(oid, name)| *name == branch && oid == tip))
}

/// The change set merged onto the tip `tip` (its base as the merge base), objects only: the
/// landing's tree, or `None` with the session's result set (a conflict; nothing new).
fn merge_onto(
    ctx: &Context,
    located: &Located,
    change: &Change<'_>,
    tip: &str,
    landed: &mut LandedSession,
) -> Result<Option<String>> {
    ctx.git.require_merge_tree()?;
    let scratch = located.store.scratch_dir();
    let view = crate::git::ObjectView::new(&ctx.git, &located.repo.common_dir, &[tip], &scratch)?;
    // Commits only to carry the trees: a merge with its base given reads nothing else.
    let base = view.commit_tree(change.base_tree, tip, None, b"base")?;
    let work = view.commit_tree(change.result_tree, tip, None, b"work")?;
    let merged = view.merge(&base, tip, &work)?;
    if !merged.conflicts.is_empty() {
        landed.outcome = LandResult::Conflict;
        landed.reason = Some(Reason::PatchDoesNotApply);
        landed.conflicting_paths = merged
            .paths()
            .iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        return Ok(None);
    }
    let tip_tree = ctx
        .git
        .rev_parse_required(&located.repo.toplevel, &format!("{tip}^{{tree}}"))?;
    if merged.tree == tip_tree {
        landed.outcome = LandResult::Empty;
        landed
            .warnings
            .push("the branch holds these changes already (without this change set's trailer): nothing to land".into());
        return Ok(None);
    }
    Ok(Some(merged.tree))
}

/// The landing commit's message: the one given, or one naming the session; then the trailer.
fn message(opts: &LandOptions, change: &Change<'_>) -> String {
    let head = opts
        .message
        .clone()
        .unwrap_or_else(|| format!("a3s-iso: the work of session {}", change.id));
    format!(
        "{}\n\n{TRAILER}: {}\n",
        head.trim_end(),
        change.pushing.digest
    )
}

/// The session's push report (always set by [`push_one`]).
fn report(landed: &mut LandedSession) -> &mut PushReport {
    landed.push.get_or_insert(PushReport {
        remote: String::new(),
        branch: String::new(),
        attempts: 0,
        built_on: None,
        tested_tree: None,
    })
}

/// After a lost race: a pause that grows with the attempts, jittered so that the machines
/// that lost do not all come back at once.
fn back_off(attempt: u32) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let jitter = (nanos ^ std::process::id().wrapping_mul(2_654_435_761)) % 1000;
    let ceiling = 40 * u64::from(attempt.min(8));
    std::thread::sleep(Duration::from_millis(ceiling * u64::from(jitter) / 1000));
}

/// What becomes of a landed session's isolation: kept with `keep`, else discarded (through
/// the pool when there is one) with its evidence kept.
fn clean_up(ctx: &Context, located: &Located, keep: bool, landed: &mut LandedSession) {
    let id = landed.session_id.clone();
    let state = located
        .store
        .load_session(&id)
        .ok()
        .flatten()
        .map(|r| r.state);
    let done = match (keep, state) {
        (true, _) => Ok(Cleanup::Kept),
        (false, Some(SessionState::Discarded) | None) => Ok(Cleanup::Discarded),
        (false, Some(_)) => crate::ops::discard::discard(
            ctx,
            &crate::ops::discard::DiscardOptions {
                session_id: Some(id.clone()),
                purge: false,
            },
        )
        .map(|d| match d.recycled {
            true => Cleanup::Pooled,
            false => Cleanup::Discarded,
        }),
    };
    match done {
        Ok(done) => landed.cleanup = Some(done),
        Err(err) => landed.warnings.push(format!(
            "its isolation was not cleaned up: {err} (a3s-iso discard -s {id} does it; its work is landed)"
        )),
    }
}

/// The private refs one landing holds (the fetched tip, the landing commits), named for this
/// process so that a later run drops those of a killed one; deleted when it ends.
pub(super) struct Pins<'a> {
    ctx: &'a Context,
    located: &'a Located,
    refs: Vec<String>,
}

impl<'a> Pins<'a> {
    pub(super) fn new(ctx: &'a Context, located: &'a Located) -> Pins<'a> {
        Pins {
            ctx,
            located,
            refs: Vec::new(),
        }
    }

    fn fresh_ref(&mut self) -> String {
        let name = self
            .located
            .store
            .refs()
            .fetching(&crate::base::maker::owned_name("l"));
        self.refs.push(name.clone());
        name
    }

    /// Fetches the branch; its tip. A branch the remote does not have is a usage error.
    pub(super) fn fetch_tip(&mut self, target: &PushTarget) -> Result<String> {
        let into = self.fresh_ref();
        let dir = &self.located.repo.toplevel;
        self.ctx
            .git
            .fetch_branch(dir, &target.remote, &target.branch, &into)?
            .ok_or_else(|| Error::Usage {
                message: format!(
                    "{} has no branch {:?}: land --push lands onto a branch that exists there",
                    target.remote, target.branch
                ),
            })
    }

    /// Keeps `commit` reachable while the landing lasts.
    fn pin(&mut self, commit: &str) -> Result<()> {
        let name = self.fresh_ref();
        let update = RefUpdate::Set {
            name,
            target: commit.to_string(),
        };
        let dir = &self.located.repo.toplevel;
        self.ctx
            .git
            .update_refs(dir, &[update], "a3s-iso: land --push")
    }

    /// The commit of `tip`'s history since the change set's base that carries its trailer.
    pub(super) fn landed_in(&self, tip: &str, pushing: &Pushing) -> Result<Option<String>> {
        let dir = &self.located.repo.toplevel;
        let base = Some(pushing.base.as_str()).filter(|b| {
            self.ctx
                .git
                .rev_parse(dir, &format!("{b}^{{commit}}"))
                .is_ok_and(|c| c.is_some())
        });
        let found = self.ctx.git.commits_with_trailer(
            dir,
            (tip, base),
            (TRAILER, pushing.digest.as_str()),
        )?;
        Ok(found.into_iter().next())
    }

    pub(super) fn release(self) {
        let updates: Vec<RefUpdate> = self
            .refs
            .iter()
            .map(|name| RefUpdate::Delete { name: name.clone() })
            .collect();
        let dir = &self.located.repo.toplevel;
        let _ = self
            .ctx
            .git
            .update_refs(dir, &updates, "a3s-iso: land --push");
    }
}
