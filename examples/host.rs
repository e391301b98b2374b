//! A host that embeds a3s-iso as a library: it gives a task its own isolation of the
//! repository it is started in, runs a command there, captures the change set, lands it in
//! the checkout exactly once, and removes the isolation. Every step is one call with an
//! options struct, and every answer a typed outcome (the same one the CLI prints as JSON).
//!
//!   cargo run --example host -- [SESSION_ID] [COMMAND …]
//!
//! Without a command it writes `HOST.md` in the isolation. The command runs as a plain host
//! process here (`sandbox: None`): a host that wants the sandbox names the a3s-iso binary as
//! `RunOptions::helper` and passes a `SandboxRequest`.

use std::ffi::OsString;
use std::process::ExitCode;

use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
use a3s_iso::flows::setup::bind;
use a3s_iso::git::Git;
use a3s_iso::ops::bind::{BindOptions, OwnerChoice};
use a3s_iso::ops::capture::{CaptureOptions, capture};
use a3s_iso::ops::discard::{DiscardOptions, discard};
use a3s_iso::ops::promote::{Outcome, PromoteOptions, promote};
use a3s_iso::ops::run::{RunOptions, run};

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let session = args
        .next()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "host-task".into());
    let mut command: Vec<OsString> = args.collect();
    if command.is_empty() {
        command = ["sh", "-c", "echo 'written by the host example' > HOST.md"]
            .map(OsString::from)
            .to_vec();
    }
    match lifecycle(&session, command) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(3),
        Err(err) => {
            eprintln!("host: {err} ({})", err.code().as_str());
            ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(1))
        }
    }
}

/// bind → run → capture → promote → discard; whether the change set landed.
fn lifecycle(session: &str, command: Vec<OsString>) -> Result<bool> {
    let git = Git::locate(None)?;
    let here = std::env::current_dir()
        .map_err(|e| a3s_iso::base::error::Error::io("no working directory", e))?;
    let ctx = Context::new(git, here, None);
    let bound = bind(
        &ctx,
        &BindOptions {
            session_id: Some(session.to_string()),
            // The host process owns the session: sweep reclaims it if the host dies.
            owner: OwnerChoice::Pid(std::process::id()),
            ..BindOptions::default()
        },
    )?;
    println!("bound {} at {:?}", bound.session_id, bound.worktree);
    let ran = run(
        &ctx,
        &RunOptions {
            session_id: Some(session.to_string()),
            command,
            sandbox: None,
            ..RunOptions::default()
        },
    )?;
    println!(
        "ran {}: {:?}, exit {:?}",
        ran.run_id, ran.state, ran.exit_code
    );
    let captured = capture(
        &ctx,
        &CaptureOptions {
            session_id: Some(session.to_string()),
            ..CaptureOptions::default()
        },
    )?;
    println!("captured {}", captured.change_set.patch_digest);
    let promoted = promote(
        &ctx,
        &PromoteOptions {
            session_id: Some(session.to_string()),
            ..PromoteOptions::default()
        },
    )?;
    println!("promote: {:?}", promoted.outcome);
    discard(
        &ctx,
        &DiscardOptions {
            session_id: Some(session.to_string()),
            purge: false,
        },
    )?;
    Ok(matches!(
        promoted.outcome,
        Outcome::Applied | Outcome::Idempotent | Outcome::Empty
    ))
}
