//! `a3s-iso hook`: the hooks an agent's harness runs. Their stdin and stdout follow the
//! harness's contract, so `--json` does not apply: errors go to stderr with the usual exit
//! statuses (which Claude Code reads as a failed hook).

use std::io::Write;
use std::os::unix::ffi::OsStrExt;

use clap::ValueEnum;

use a3s_iso::base::error::{Error, Result};
use a3s_iso::flows::claude::{CreatePayload, RemovePayload, worktree_create, worktree_remove};

use super::{Cli, Output};

/// The harness whose hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HookAgent {
    /// Claude Code (`a3s-iso init claude` configures its hooks)
    Claude,
}

/// The hook to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HookEvent {
    /// WorktreeCreate: bind a session for the payload on stdin; print its isolation's path
    WorktreeCreate,
    /// WorktreeRemove: capture the session at the payload's worktree_path, discard its isolation
    WorktreeRemove,
}

/// Runs a hook; its output is never JSON.
pub fn run(cli: &Cli, (agent, event): (HookAgent, HookEvent), plain: &Output) -> i32 {
    let HookAgent::Claude = agent;
    let result = match event {
        HookEvent::WorktreeCreate => create(cli, plain),
        HookEvent::WorktreeRemove => remove(cli, plain),
    };
    result.unwrap_or_else(|err| plain.error(&err))
}

fn create(cli: &Cli, out: &Output) -> Result<i32> {
    let payload = CreatePayload::read(std::io::stdin().lock())?;
    let ctx = super::context_in(cli, payload.cwd.as_deref())?;
    let outcome = worktree_create(&ctx, &payload);
    out.warnings(&ctx.take_notices());
    let outcome = outcome?;
    out.warnings(&outcome.warnings);
    let tree = outcome.worktree.ok_or_else(|| Error::Internal {
        message: "the bound session has no isolation".into(),
    })?;
    // The path's exact bytes, alone: Claude Code takes stdout as the worktree's path.
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(tree.as_os_str().as_bytes())
        .and_then(|()| stdout.write_all(b"\n"))
        .and_then(|()| stdout.flush());
    written.map_err(|e| Error::io("cannot write the worktree path to stdout", e))?;
    out.note(&format!(
        "session {} ({}) for Claude Code",
        outcome.session_id,
        if outcome.reused { "reused" } else { "bound" }
    ));
    Ok(0)
}

fn remove(cli: &Cli, out: &Output) -> Result<i32> {
    let payload = RemovePayload::read(std::io::stdin().lock())?;
    let ctx = super::context_in(cli, payload.cwd.as_deref())?;
    let outcome = worktree_remove(&ctx, &payload);
    out.warnings(&ctx.take_notices());
    let outcome = outcome?;
    match (&outcome.session_id, &outcome.run_id) {
        (Some(id), Some(run)) => out.note(&format!(
            "captured session {id} as run {run} ({} file{} changed) and discarded its isolation; \
             its work stays: a3s-iso show -s {id}",
            outcome.files_changed,
            super::plural(outcome.files_changed)
        )),
        _ => out.note(&format!(
            "no session has its isolation at {}: nothing was removed",
            outcome.worktree.display()
        )),
    }
    Ok(0)
}
