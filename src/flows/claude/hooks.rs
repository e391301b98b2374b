//! The worktree hooks: `WorktreeCreate` binds a session and hands Claude Code its isolation;
//! `WorktreeRemove` captures the session's work and discards the isolation.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::base::error::{Error, NotGranted, Result};
use crate::base::ids::{RunId, SessionId};
use crate::base::owner::{Liveness, hook_process};
use crate::base::warning::{LandWarning, Warning};
use crate::context::Context;
use crate::flows::claude::payload::{CreatePayload, RemovePayload, session_id_from};
use crate::flows::setup::bind;
use crate::ops::bind::{BindOptions, BindOutcome, OwnerChoice};
use crate::ops::capture::{CaptureOptions, capture};
use crate::store::state::{CreatedBy, Creator, SessionRecord};

/// How many ids (the name, then `-2`, `-3`, …) a create tries while another Claude Code holds one.
const ID_ATTEMPTS: u32 = 20;

/// `WorktreeCreate`: binds a session named after the proposed worktree, owned by the Claude
/// Code process, at HEAD without local changes, with `.worktreeinclude`'s files copied in. The
/// same name from the same Claude Code returns the same isolation; a name another session
/// holds is never taken over: the id gets a `-2`, `-3`, … suffix.
pub fn worktree_create(ctx: &Context, payload: &CreatePayload) -> Result<BindOutcome> {
    // Recorded in the session: what the remove hook may act on is decided from it.
    let process = hook_process();
    let created_by = CreatedBy {
        tool: Creator::ClaudeHook,
        process: process.clone(),
    };
    let base = payload
        .name
        .as_deref()
        .and_then(session_id_from)
        .unwrap_or_else(|| crate::base::ids::generate("claude"));
    // As `bind` without a terminal: an untrusted file is refused (`config_untrusted`).
    let loaded = crate::services::config::load(ctx, true)?;
    loaded.require_trusted()?;
    let settings = loaded.effective(true);
    let setup = crate::flows::setup::Setup::configured(&settings);
    let mut attempt = 1;
    let mut outcome = loop {
        let opts = BindOptions {
            session_id: Some(attempt_id(&base, attempt)),
            allow_dirty: true,
            owner: OwnerChoice::Pid(process.pid),
            created_by: Some(created_by.clone()),
            copy_ignored: settings.copy_ignored.value.clone(),
            setup: setup.clone(),
            no_auto_sweep: !settings.sweep_auto.value,
            ..BindOptions::default()
        };
        match bind(ctx, &opts) {
            Err(Error::SessionExists { .. } | Error::IsolationPathOccupied { .. })
                if attempt < ID_ATTEMPTS =>
            {
                attempt += 1;
            }
            other => break other?,
        }
    };
    if let Some(warning) = base_left_out(ctx, payload, &outcome) {
        outcome.warnings.insert(0, warning);
    }
    Ok(outcome)
}

/// The id of the `attempt`-th try: `base`, then `base-2`, `base-3`, … (cut to an id's length).
fn attempt_id(base: &str, attempt: u32) -> String {
    if attempt == 1 {
        return base.to_string();
    }
    let suffix = format!("-{attempt}");
    let mut id = base.to_string();
    id.truncate(crate::base::ids::MAX_ID_LEN - suffix.len());
    id.push_str(&suffix);
    session_id_from(&id).unwrap_or(id)
}

/// A warning when Claude Code proposed a base other than HEAD, where a3s-iso binds.
fn base_left_out(ctx: &Context, payload: &CreatePayload, outcome: &BindOutcome) -> Option<Warning> {
    let base = payload.base.as_deref()?;
    let named = ctx
        .git
        .rev_parse(&outcome.source, &format!("{base}^{{commit}}"))
        .ok()
        .flatten();
    (named.as_deref() != Some(outcome.bound_revision.as_str()) && !outcome.reused).then(|| {
        LandWarning::BaseNotTaken {
            base: base.to_string(),
            head: outcome.bound_revision.clone(),
        }
        .into()
    })
}

/// What `WorktreeRemove` did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RemoveOutcome {
    /// The worktree Claude Code named.
    #[serde(with = "crate::base::paths::fs_path")]
    pub worktree: PathBuf,
    /// The session whose isolation it is; `None` when none (nothing was done).
    pub session_id: Option<SessionId>,
    /// The run its final capture was recorded under (the one before, when nothing changed).
    pub run_id: Option<RunId>,
    /// How many files the session's change set touches.
    pub files_changed: u64,
    /// Whether the isolation went back to the pool instead of being deleted.
    pub recycled: bool,
}

/// `WorktreeRemove`: captures the session at the payload's path (its work stays as evidence)
/// and discards the isolation. Only a hook's session of `cwd`'s repository, for this Claude
/// Code or an exited one; else `session_not_granted`. A path no isolation is at is left alone.
pub fn worktree_remove(ctx: &Context, payload: &RemovePayload) -> Result<RemoveOutcome> {
    let path = match &payload.worktree_path {
        path if path.is_absolute() => path.clone(),
        relative => payload
            .cwd
            .as_deref()
            .unwrap_or(&ctx.start_dir)
            .join(relative),
    };
    let mut outcome = RemoveOutcome {
        worktree: path.clone(),
        ..RemoveOutcome::default()
    };
    let Some(session_id) = granted_session(ctx, &path)? else {
        return Ok(outcome);
    };
    let captured = capture(
        ctx,
        &CaptureOptions {
            session_id: Some(session_id.to_string()),
            ..CaptureOptions::default()
        },
    )?;
    outcome.session_id = Some(session_id.clone());
    outcome.run_id = Some(RunId::new(captured.change_set.identity.run_id.as_str())?);
    outcome.files_changed = captured.files_changed;
    // Decided again just before the isolation goes: it may have changed hands or gone.
    match granted_session(ctx, &path)? {
        None => return Ok(outcome),
        Some(now) if now == session_id => {}
        Some(now) => {
            return Err(Error::internal(format!(
                "the isolation at {} changed from session {session_id:?} to {now:?} while it was captured; nothing was removed",
                path.display()
            )));
        }
    }
    outcome.recycled = crate::flows::land::discard(ctx, session_id.as_str(), false)?.recycled;
    Ok(outcome)
}

fn same_dir(a: &Path, b: &Path) -> bool {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    canonical(a) == canonical(b)
}

/// The session whose live isolation is at `path`, if any, when the hook may act on it (else
/// `session_not_granted`).
fn granted_session(ctx: &Context, path: &Path) -> Result<Option<SessionId>> {
    let located = match crate::recovery::locate(ctx) {
        Ok(located) => Some(located),
        Err(Error::IsolationUnavailable { .. }) => None,
        Err(err) => return Err(err),
    };
    let found = match &located {
        Some(located) => located.store.sessions()?.into_iter().flatten().find(|s| {
            s.state.has_tree()
                && located.owns(s)
                && s.worktree.as_deref().is_some_and(|t| same_dir(t, path))
        }),
        None => None,
    };
    match found {
        Some(record) => {
            grant(&record, path)?;
            Ok(Some(record.session_id))
        }
        None => {
            refuse_elsewhere(ctx, located.as_ref(), path)?;
            Ok(None)
        }
    }
}

/// Only the Claude Code a hook's session was created for removes it, or any once that exited.
fn grant(record: &SessionRecord, path: &Path) -> Result<()> {
    let session_id = record.session_id.to_string();
    let reason = match &record.created_by {
        Some(made) if made.tool == Creator::ClaudeHook => {
            if made.process == hook_process() || made.process.liveness() == Liveness::Dead {
                return Ok(());
            }
            NotGranted::AnotherClaude {
                path: path.to_path_buf(),
                session_id,
                process: made.process.describe(),
            }
        }
        _ => NotGranted::NotAHooks {
            path: path.to_path_buf(),
            session_id,
        },
    };
    Err(Error::SessionNotGranted { reason })
}

/// Refuses another repository's session's isolation (found only to say so).
fn refuse_elsewhere(
    ctx: &Context,
    located: Option<&crate::context::Located>,
    path: &Path,
) -> Result<()> {
    if !path.is_dir() {
        return Ok(());
    }
    let Ok(theirs) = crate::recovery::locate(&ctx.started_in(path.to_path_buf())) else {
        return Ok(());
    };
    let Some(session) = theirs
        .inside
        .filter(|s| s.worktree.as_deref().is_some_and(|t| same_dir(t, path)))
    else {
        return Ok(());
    };
    Err(Error::SessionNotGranted {
        reason: NotGranted::OtherRepository {
            path: path.to_path_buf(),
            session_id: session.session_id.into(),
            repository: session.source,
            cwd_repository: located
                .map_or_else(|| ctx.start_dir.clone(), |l| l.repo.toplevel.clone()),
        },
    })
}
