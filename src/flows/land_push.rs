//! `land --push REMOTE/BRANCH`: the landing queue across machines, locked by the server's
//! atomic ref update. For each session: fetch the branch, merge the change set onto its tip
//! (objects only), test it in the isolation moved to that tree, commit, and push with a lease
//! on the tip (`--force-with-lease`, a compare-and-swap, so concurrent landings never write
//! over each other). A lost race goes round again, up to `attempts` pushes.
//!
//! Exactly once: the landing commit's `A3S-Change-Set: sha256:…` trailer is searched for in
//! the branch's history before each attempt, so one landed already is `idempotent`; digest
//! and base are recorded (`land-push/<id>`) before the first push, so that a session whose
//! cleanup a kill cut short is still known. Any other refusal ends the
//! session (`push_refused`, never retried), as does a silent remote (`remote_unreachable`).

use std::time::Instant;

use crate::base::error::{Error, Result};
use crate::base::fsutil::{read_json, write_record_atomic};
use crate::base::ids::CommitId;
use crate::base::ids::SessionId;
use crate::base::warning::LandWarning;
use crate::context::{Context, Located};
use crate::store::state::SessionState;

use super::land::{
    Cleanup, LandMode, LandOptions, LandOutcome, LandResult, LandedSession, PushReport,
};
use super::land_push_doc::Source;
use super::land_remote::{Change, Pins, Pushing, SCRATCH, attempts};
pub use super::land_remote::{
    DEFAULT_ATTEMPTS, FetchedEntries, PUSHING_SCHEMA, PushOptions, PushTarget, TRAILER,
};

/// Lands the sessions `opts` names onto `target`, one after the other.
pub fn land_push(ctx: &Context, opts: &LandOptions, push: &PushOptions) -> Result<LandOutcome> {
    let target = &push.target;
    if opts.abort {
        return Err(Error::usage(
            "land --push keeps no stopped queue: --abort is for a land onto the source's HEAD (name the entries again; what landed is idempotent)",
        ));
    }
    if opts.mode == LandMode::Patch {
        return Err(Error::usage(
            "land --push lands commits (--mode squash or branch): patch mode leaves the work uncommitted in your checkout, and nothing uncommitted travels through a server",
        ));
    }
    let located = crate::recovery::locate(ctx)?;
    // Only a configured remote: its transport and credentials are the user's git's.
    crate::services::remote::choose_remote(
        &ctx.git,
        &located.repo.toplevel,
        Some(&target.remote),
        false,
    )?;
    crate::services::remote::drop_dead_fetches(ctx, &located)?;
    let fetched = push.fetched.as_ref();
    if opts.sessions.is_empty()
        && !opts.all
        && push.change_sets.is_empty()
        && fetched.is_none_or(|f| f.digests.is_empty())
    {
        return Err(Error::usage(
            "name what to land: sessions (-s ID ... or --all), change-set documents (--change-set FILE ...) or pushed change sets (--from REMOTE --digest D ...)",
        ));
    }
    let mut ids = super::land::sessions_asked(ctx, &located, opts)?;
    // A scratch session is no entry; one a killed landing left goes.
    ids.retain(|id| !is_scratch(id));
    for id in &ids {
        ctx.require_granted(id)?;
    }
    drop_dead_scratch(ctx, &located);
    let entries = entries_of(ids, push);
    let mut out = LandOutcome::begun(ctx, opts.mode, false);
    let stopped_index = push_entries(ctx, &located, (opts, push), &entries, &mut out);
    if let (Some(stopped), Some(index)) = (&out.stopped_at, stopped_index) {
        let again = again_command(opts, push, &entries[index..]);
        out.hint = Some(format!(
            "session {stopped} did not land; deal with what stopped it, then `{again}` lands it and the rest (what landed is idempotent)"
        ));
        out.next_commands = vec![again];
    }
    Ok(out)
}

/// Lands each entry in order; after one that does not land, the rest are not reached unless
/// `--keep-going`. The index of the entry the queue stopped at.
fn push_entries(
    ctx: &Context,
    located: &Located,
    (opts, push): (&LandOptions, &PushOptions),
    entries: &[Entry],
    out: &mut LandOutcome,
) -> Option<usize> {
    let mut stopped_index = None;
    let document = |source| super::land_push_doc::document_one(ctx, located, (opts, push), source);
    for (index, entry) in entries.iter().enumerate() {
        if stopped_index.is_some() {
            out.sessions
                .push(LandedSession::new(&entry.label(), LandResult::NotReached));
            continue;
        }
        let landed = match entry {
            Entry::Session(id) => push_one(ctx, located, opts, push, id),
            Entry::Document(path) => document(Source::File(path)),
            Entry::Fetched { remote, digest } => document(Source::Remote { remote, digest }),
        };
        if !landed.outcome.goes_on() && !opts.keep_going {
            out.stopped_at = Some(landed.session_id.clone());
            stopped_index = Some(index);
        }
        out.sessions.push(landed);
    }
    stopped_index
}

/// The queue: the sessions, then the documents, then the pushed change sets.
fn entries_of(ids: Vec<SessionId>, push: &PushOptions) -> Vec<Entry> {
    let fetched = push.fetched.iter().flat_map(|f| {
        f.digests.iter().map(|digest| Entry::Fetched {
            remote: f.remote.clone(),
            digest: digest.clone(),
        })
    });
    ids.into_iter()
        .map(Entry::Session)
        .chain(push.change_sets.iter().cloned().map(Entry::Document))
        .chain(fetched)
        .collect()
}

/// The `land --push` that lands `rest` (the entry that stopped and those after it).
fn again_command(opts: &LandOptions, push: &PushOptions, rest: &[Entry]) -> String {
    let mut args: Vec<String> = rest.iter().map(Entry::argument).collect();
    // One --from names the remote of every --digest.
    if let Some(Entry::Fetched { remote, .. }) =
        rest.iter().find(|e| matches!(e, Entry::Fetched { .. }))
    {
        args.push(format!(
            "--from {}",
            crate::base::argv::shell_quote(remote.as_ref())
        ));
    }
    if opts.mode == LandMode::Branch {
        args.push("--mode branch".into());
    }
    format!(
        "a3s-iso land --push {}/{} {}",
        push.target.remote,
        push.target.branch,
        args.join(" ")
    )
}

/// One entry of the queue.
enum Entry {
    /// A session of this repository.
    Session(SessionId),
    /// A change-set document.
    Document(std::path::PathBuf),
    /// A change set pushed to a remote.
    Fetched { remote: String, digest: String },
}

impl Entry {
    /// What the report calls it before it is read.
    fn label(&self) -> String {
        match self {
            Entry::Session(id) => id.to_string(),
            Entry::Document(path) => Source::File(path).label(),
            Entry::Fetched { remote, digest } => Source::Remote { remote, digest }.label(),
        }
    }

    /// The command-line argument that names it.
    fn argument(&self) -> String {
        let (flag, value) = match self {
            Entry::Session(id) => ("-s", std::ffi::OsStr::new(id.as_str())),
            Entry::Document(path) => ("--change-set", path.as_os_str()),
            Entry::Fetched { digest, .. } => ("--digest", digest.as_ref()),
        };
        format!("{flag} {}", crate::base::argv::shell_quote(value))
    }
}

/// Whether `id` is a scratch session a landing bound (its name says which process made it).
fn is_scratch(id: &str) -> bool {
    id.starts_with(&format!("{SCRATCH}-")) && crate::base::maker::maker_of(id).is_some()
}

/// Purges the scratch sessions of landings whose process died (best effort).
fn drop_dead_scratch(ctx: &Context, located: &Located) {
    let Ok(live) = located.store.live_sessions() else {
        return;
    };
    for record in live {
        let id = record.session_id.to_string();
        if is_scratch(&id) && crate::base::maker::made_by_dead(&id) {
            let _ = super::land::discard(ctx, id.as_str(), true);
        }
    }
}

/// One session through the server; whatever stops it is its result, never the queue's error.
fn push_one(
    ctx: &Context,
    located: &Located,
    opts: &LandOptions,
    push: &PushOptions,
    id: &SessionId,
) -> LandedSession {
    let target = &push.target;
    let started = Instant::now();
    let mut landed = LandedSession::new(id, LandResult::Failed);
    landed.push = Some(PushReport {
        remote: target.remote.clone(),
        branch: target.branch.clone(),
        ..PushReport::default()
    });
    let mut pins = Pins::new(ctx, located);
    let result = push_steps(ctx, located, (opts, push), id, &mut pins, &mut landed);
    pins.release();
    if let Err(err) = result {
        landed.fail(&err);
    }
    if matches!(landed.outcome, LandResult::Landed | LandResult::Idempotent) {
        clean_up(ctx, located, id, opts.keep, &mut landed);
    }
    landed.finished(ctx, started)
}

/// A recorded landing on the branch is `idempotent`, a discarded session `discarded`, an
/// isolation a kill left on a landing's tree goes back; then [`attempts`].
fn push_steps(
    ctx: &Context,
    located: &Located,
    (opts, push): (&LandOptions, &PushOptions),
    id: &SessionId,
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
        landed.warnings.push(LandWarning::MovedBack.into());
    }
    super::land_gate::drop_left_writes(ctx, located, id, &mut landed.warnings)?;
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
    write_record_atomic(&file, PUSHING_SCHEMA, &pushing)?;
    let replay = match opts.mode {
        LandMode::Branch => Some(super::land_push_branch::replay_of(ctx, located, &record)?),
        LandMode::Squash | LandMode::Patch => None,
    };
    let change = Change {
        id,
        tested_in: Some(id),
        pushing: &pushing,
        base_tree: cs.base_tree.as_str(),
        result_tree: cs.result_tree.as_str(),
        replay: replay.as_ref(),
    };
    attempts(ctx, located, (opts, push), &change, pins, landed)
}

/// Keeps (`keep`) or discards a landed session's isolation, its evidence kept.
fn clean_up(
    ctx: &Context,
    located: &Located,
    id: &SessionId,
    keep: bool,
    landed: &mut LandedSession,
) {
    let state = located
        .store
        .load_session(id)
        .ok()
        .flatten()
        .map(|r| r.state);
    let done = match (keep, state) {
        (true, _) => Ok(Cleanup::Kept),
        (false, Some(SessionState::Discarded) | None) => Ok(Cleanup::Discarded),
        (false, Some(_)) => {
            super::land::discard(ctx, id.as_str(), false).map(|d| Cleanup::of(d.recycled))
        }
    };
    match done {
        Ok(done) => landed.cleanup = Some(done),
        Err(err) => landed.not_cleaned_up(&err),
    }
}
