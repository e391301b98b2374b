//! `run`: execute a command in a session's isolation (sandboxed by default), record its change set.
//! May call: base, git, store, context, model, recovery, services; no other verb.
//!
//! The change set is what the command did (base = before, result = after). [`run`]'s steps:
//! **plan** (claims the session via `target`, makes the `sandbox`), **launch** (the tree made
//! ready, the command started), **supervise** (signals, timeout, how it ended) and **record**
//! (layer merged, objects and git state settled, evidence stored: the [`RunOutcome`]).
//! [`run_requested`] first makes the sandbox from the caller's flags and the configuration.

pub mod quarantine;
pub mod request;

mod launch;
mod plan;
mod record;
mod sandbox;
mod supervise;
mod target;

use crate::base::error::Result;
use crate::context::Context;

pub use crate::ops::run::record::{ChangeSetSummary, RunOutcome};
pub use crate::ops::run::request::{FrontEnd, RunOptions, RunRequest, SandboxRequest};

/// Runs a command in the isolation and records its change set; an `Err` is a3s-iso's failure.
pub fn run(ctx: &Context, opts: &RunOptions) -> Result<RunOutcome> {
    let (mut planned, network) = plan::plan(ctx, opts)?;
    let staged = launch::stage(ctx, opts, &mut planned)?;
    let exited = launch::start(opts, &planned, network)
        .and_then(|started| supervise::wait(opts, &planned, started));
    record::record(ctx, opts, &planned, staged, exited)
}

/// A whole run as a front end asks for it: [`request::configure`], then [`run`]; how the
/// configuration was read goes to `front.warn`, or else leads the outcome's warnings.
pub fn run_requested(
    ctx: &Context,
    requested: RunRequest,
    front: FrontEnd<'_>,
) -> Result<RunOutcome> {
    let RunRequest { mut options, ask } = requested;
    let configured = request::configure(ctx, &ask, front.approve)?;
    options.sandbox = configured.request;
    let mut warnings = configured.warnings;
    if let Some(warn) = front.warn {
        warnings.iter().for_each(warn);
        warnings.clear();
    }
    let mut outcome = run(ctx, &options)?;
    outcome.warnings.splice(0..0, warnings);
    Ok(outcome)
}
