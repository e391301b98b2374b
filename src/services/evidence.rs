//! The evidence of a session's work: its isolation snapshotted (with its nested change sets)
//! into a pinned tree and a change-set document, recorded as a run of the session; what
//! `capture`, `run`, `promote` and `push` record or reuse.

use std::path::Path;

use serde::Serialize;

use crate::base::error::{Error, Held, Result};
use crate::base::fsutil::now_ms;
use crate::base::ids::{Digest, RunId, SessionId, TreeId};
use crate::base::warning::Warning;
use crate::context::{Context, Located};
use crate::model::changeset::{self, ChangeSet, MAX_PATCH_BYTES, NewChangeSet, RunState};
use crate::model::isolation::{Isolation, writable_isolation};
use crate::model::snapshot;
pub(crate) use crate::services::nested::record as record_nested;
use crate::services::nested::{self, Look, Nested, NestedChangeSet};
use crate::store::state::{LastRun, SessionRecord};

/// A capture: the change-set document and where its result tree is pinned.
#[derive(Debug, Clone, Serialize)]
pub struct CaptureOutcome {
    /// The document (the stored one, on a replay).
    pub change_set: ChangeSet,
    /// The ref that pins the result tree.
    pub result_ref: String,
    /// How many files the patch touches.
    pub files_changed: u64,
    /// The run id was captured before with the same result: this is the stored document.
    pub replayed: bool,
    /// Nothing changed since the last capture: that run is returned (no new run, ref or record).
    pub reused: bool,
    /// Nested repositories left out of the snapshot (never folded in as gitlinks).
    pub nested_repositories: Vec<String>,
    /// The nested change sets (submodules and nested repositories with uncommitted work),
    /// kept beside the document, which carries the root only.
    pub nested: Vec<NestedChangeSet>,
    /// What the user should know (nested repositories that could not be captured).
    pub warnings: Vec<Warning>,
    /// The first paths the patch touches (at most [`snapshot::LISTED_PATHS`]), for human output.
    #[serde(skip)]
    pub files: Vec<String>,
}

impl CaptureOutcome {
    /// A fresh capture of `change_set` at `result_ref`, touching `files` (count, first paths).
    fn of(change_set: ChangeSet, result_ref: String, files: (u64, Vec<String>)) -> Self {
        CaptureOutcome {
            change_set,
            result_ref,
            files_changed: files.0,
            replayed: false,
            reused: false,
            nested_repositories: Vec::new(),
            nested: Vec::new(),
            warnings: Vec::new(),
            files: files.1,
        }
    }

    /// A stored document (verified) pinned at `result_ref`, as reported again.
    fn stored(verified: changeset::Verified, result_ref: String) -> Self {
        let files = (
            snapshot::count_files(&verified.patch),
            snapshot::patch_paths(&verified.patch[..], snapshot::LISTED_PATHS),
        );
        CaptureOutcome::of(verified.change_set, result_ref, files)
    }
}

/// Checks a `--release-identity` value.
pub(crate) fn release_identity(given: Option<&str>) -> Result<String> {
    match given {
        None => Ok(changeset::default_release_identity()),
        Some(value) if changeset::is_sha256_digest(value) => Ok(value.to_string()),
        Some(value) => Err(Error::usage(format!(
            "--release-identity {value:?} is not sha256: and 64 lowercase hex digits"
        ))),
    }
}

/// The session's last run when a capture now would record exactly it again (a generated run id, the
/// same trees, completed, the same release identity and nested change sets): its stored document as
/// it is (`reused`), so capturing an unchanged session adds no run, ref or record.
pub(crate) fn reusable(
    ctx: &Context,
    target: &Target,
    result_tree: &str,
    nested: &[NestedChangeSet],
) -> Result<Option<CaptureOutcome>> {
    let Some(last) = target.record.last_run.as_ref() else {
        return Ok(None);
    };
    if last.result_tree != result_tree || last.state != RunState::Completed {
        return Ok(None);
    }
    let (store, id) = (&target.located.store, &target.record.session_id);
    let Some(bytes) = store.load_run_doc(id, &last.run_id)? else {
        return Ok(None);
    };
    let Ok(verified) = changeset::verify(&bytes) else {
        return Ok(None);
    };
    let doc = &verified.change_set;
    let same = doc.base_tree == target.record.base_tree
        && doc.result_tree == *result_tree
        && doc.state == RunState::Completed
        && doc.identity.agent_release_identity == target.identity
        && nested::stored(store, id, &last.run_id).as_deref() == Some(nested);
    let reference = store.refs().run_result(id, &last.run_id);
    let pinned = ctx
        .git
        .rev_parse(&target.located.repo.toplevel, &reference)?;
    if !same || pinned.as_deref() != Some(result_tree) {
        return Ok(None);
    }
    Ok(Some(CaptureOutcome {
        reused: true,
        ..CaptureOutcome::stored(verified, reference)
    }))
}

/// The isolation's snapshot and its nested change sets; the snapshot's `nested` keeps only the
/// nested repositories that were not captured.
pub(crate) fn snapshot_all(
    ctx: &Context,
    located: &Located,
    isolation: &Isolation,
) -> Result<(snapshot::Snapshot, Nested)> {
    let mut snap = isolation.snapshot(ctx, located)?;
    let nested = nested::capture_isolation(&ctx.git, located, isolation, &mut snap, Look::Capture)?;
    let flat = snap.nested.is_empty()
        && snap.gitlinks.is_empty()
        && nested.covered.is_empty()
        && nested.skipped.is_empty();
    let seed = located.store.seed_index_path(&isolation.admin);
    crate::recovery::run_layer::note_full_snapshot(&seed, flat);
    Ok((snap, nested))
}

/// What `capture` and `run` start from: the session, its isolation, the run id (given or
/// generated) and the release identity, all checked.
pub(crate) struct Target {
    pub located: Located,
    pub record: SessionRecord,
    pub isolation: Isolation,
    /// The run id given, or a generated one.
    pub run_id: RunId,
    /// The checked `agent_release_identity`.
    pub identity: String,
}

impl Target {
    /// Checks the ids and the release identity, then finds the session and its isolation.
    pub(crate) fn prepare(
        ctx: &Context,
        session_id: Option<&str>,
        run_id: Option<&str>,
        release: Option<&str>,
    ) -> Result<Target> {
        let run_id = run_id.map(RunId::new).transpose()?;
        let identity = release_identity(release)?;
        let located = crate::recovery::locate(ctx)?;
        let record = ctx.resolve_session(&located, session_id)?;
        let isolation = writable_isolation(&record)?;
        Ok(Target {
            located,
            record,
            isolation,
            run_id: run_id.unwrap_or_else(RunId::generate),
            identity,
        })
    }

    /// The evidence of a completed capture of this target with `result_tree`.
    pub(crate) fn completed<'a>(&'a self, result_tree: &'a TreeId) -> Evidence<'a> {
        Evidence {
            session_id: &self.record.session_id,
            run_id: &self.run_id,
            state: RunState::Completed,
            base_tree: &self.record.base_tree,
            result_tree,
            release_identity: &self.identity,
        }
    }
}

/// What one run (or capture) produced.
pub(crate) struct Evidence<'a> {
    pub session_id: &'a SessionId,
    pub run_id: &'a RunId,
    pub state: RunState,
    pub base_tree: &'a TreeId,
    pub result_tree: &'a TreeId,
    pub release_identity: &'a str,
}

/// Pins the result tree, builds and stores the change-set document, and records the session's
/// last run. A run id is immutable evidence: the same result again returns the stored document;
/// a different one is `capture_conflict` and changes nothing.
pub(crate) fn record_evidence(
    ctx: &Context,
    located: &Located,
    ev: &Evidence<'_>,
) -> Result<CaptureOutcome> {
    let store = &located.store;
    let reference = store.refs().run_result(ev.session_id, ev.run_id);
    let conflict = |pinned: &str| conflict(ev, pinned, Some(ev.result_tree.to_string()));
    let stored = || {
        replay(
            store.load_run_doc(ev.session_id, ev.run_id)?,
            ev,
            &reference,
            &conflict,
        )
    };
    // Fast path for a replay, without the lock: the stored document decides.
    if let Some(outcome) = stored()? {
        return Ok(outcome);
    }
    let patch = patch_of(ctx, located, ev)?;
    let _lock = crate::recovery::lock(ctx, &located.repo)?;
    if let Some(outcome) = stored()? {
        return Ok(outcome);
    }
    let observed_at_ms = pin_and_note(ctx, located, ev, &conflict)?;
    if patch.bytes > MAX_PATCH_BYTES {
        return Err(Error::ChangeSetTooLarge {
            bytes: patch.bytes,
            limit: MAX_PATCH_BYTES,
        });
    }
    let change_set = document(ev, &patch.read()?, &patch, observed_at_ms)?;
    store.save_run_doc(ev.session_id, ev.run_id, &change_set.to_json()?)?;
    let files = (patch.files_changed, patch.listed_paths());
    Ok(CaptureOutcome::of(change_set, reference, files))
}

/// Records a fresh run's result for a change set that travels as a commit (no document size
/// limit): pins the result tree, records the session's last run, and returns the patch and the
/// detached document (the full document is stored too when it fits one).
pub(crate) fn record_run(
    ctx: &Context,
    located: &Located,
    ev: &Evidence<'_>,
) -> Result<(snapshot::Patch, ChangeSet)> {
    let store = &located.store;
    let patch = patch_of(ctx, located, ev)?;
    let _lock = crate::recovery::lock(ctx, &located.repo)?;
    let observed_at_ms = pin_and_note(ctx, located, ev, &|pinned| conflict(ev, pinned, None))?;
    let fits = patch.bytes <= MAX_PATCH_BYTES;
    let body = if fits { patch.read()? } else { Vec::new() };
    let mut change_set = document(ev, &body, &patch, observed_at_ms)?;
    if fits {
        store.save_run_doc(ev.session_id, ev.run_id, &change_set.to_json()?)?;
    }
    change_set.patch_bytes = patch.bytes;
    Ok((patch, change_set.detached()))
}

/// The binary diff from the evidence's base tree to its result, in a scratch file.
fn patch_of(ctx: &Context, located: &Located, ev: &Evidence<'_>) -> Result<snapshot::Patch> {
    snapshot::patch(
        &ctx.git,
        &located.repo.common_dir,
        ev.base_tree,
        ev.result_tree,
        &located.store.scratch_dir(),
    )
}

/// `capture_conflict`: the run id holds the tree `pinned` already.
fn conflict(ev: &Evidence<'_>, pinned: &str, now: Option<String>) -> Error {
    Error::CaptureConflict {
        session_id: ev.session_id.to_string(),
        run_id: ev.run_id.to_string(),
        held: Held::ResultTree {
            pinned: pinned.to_string(),
            now,
        },
    }
}

/// Pins the result tree under the run's ref (`conflict` when the run id holds another tree
/// already) and records the session's last run; returns when the result was observed.
fn pin_and_note(
    ctx: &Context,
    located: &Located,
    ev: &Evidence<'_>,
    conflict: &dyn Fn(&str) -> Error,
) -> Result<u64> {
    let pinned = crate::model::refs::SessionRefs {
        git: &ctx.git,
        dir: &located.repo.toplevel,
        ns: &located.store.refs(),
        session_id: ev.session_id,
    }
    .pin_run(ev.run_id, ev.result_tree)?;
    if let crate::model::refs::Pinned::Other(pinned) = pinned {
        return Err(conflict(&pinned));
    }
    let observed_at_ms = now_ms();
    update_last_run(located, ev, observed_at_ms)?;
    Ok(observed_at_ms)
}

/// The change-set document of the evidence, holding `body` (the patch, or nothing when it
/// travels as a commit) and the patch's digest.
fn document(
    ev: &Evidence<'_>,
    body: &[u8],
    patch: &snapshot::Patch,
    observed_at_ms: u64,
) -> Result<ChangeSet> {
    Ok(ChangeSet::new(NewChangeSet {
        release_identity: ev.release_identity,
        session_id: ev.session_id,
        run_id: ev.run_id,
        state: ev.state,
        base_tree: ev.base_tree,
        result_tree: ev.result_tree,
        patch: body,
        patch_digest: &Digest::new(&patch.digest)?,
        observed_at_ms,
    }))
}

fn replay(
    stored: Option<Vec<u8>>,
    ev: &Evidence<'_>,
    reference: &str,
    conflict: &dyn Fn(&str) -> Error,
) -> Result<Option<CaptureOutcome>> {
    let Some(bytes) = stored else {
        return Ok(None);
    };
    let verified = changeset::verify(&bytes)?;
    let pinned = &verified.change_set.result_tree;
    if pinned != ev.result_tree {
        return Err(conflict(pinned));
    }
    Ok(Some(CaptureOutcome {
        replayed: true,
        ..CaptureOutcome::stored(verified, reference.to_string())
    }))
}

fn update_last_run(located: &Located, ev: &Evidence<'_>, observed_at_ms: u64) -> Result<()> {
    if let Some(mut record) = located.store.load_session(ev.session_id)? {
        let newer = record
            .last_run
            .as_ref()
            .is_none_or(|last| last.observed_at_ms <= observed_at_ms);
        if newer {
            record.last_run = Some(LastRun {
                run_id: ev.run_id.clone(),
                state: ev.state,
                observed_at_ms,
                result_tree: ev.result_tree.clone(),
            });
            record.updated_at_ms = observed_at_ms;
            located.store.save_session(&record)?;
        }
    }
    Ok(())
}

/// Writes a document to `path` atomically.
pub fn write_document(path: &Path, change_set: &ChangeSet) -> Result<()> {
    crate::base::fsutil::write_atomic(path, &change_set.to_json()?)
}
