//! `run`: execute a command in a session's isolation (sandboxed by default), record its change set.
//! May call: base, git, store, context, model, recovery, services; no other verb.
//!
//! The change set is what the command did (base = before the command, result = after).
//! [`run`] takes its steps in this order:
//!
//! 1. **plan** (`plan`): checks the request, claims the session for the run (`target`: its
//!    isolation, a new run id, the lease, the run's TMPDIR and `quarantine`), prepares what the
//!    command may write and its sandbox (`sandbox`), binds its published ports and plans its
//!    working directory, terminal and environment;
//! 2. **launch** (`launch`): makes the tree ready (the session's git layers; the run's layer
//!    over the isolation, or the isolation's snapshot) and starts the command, its terminal
//!    relayed and its network served;
//! 3. **supervise** (`supervise`): waits for it, passing signals on and enforcing the timeout,
//!    and says how it ended;
//! 4. **record** (`record`): merges the run's layer, writes back what was allowed, settles the
//!    command's objects and git state, stores the evidence and the exit: the [`RunOutcome`].
//!
//! The front ends call [`run_requested`], which makes the sandbox from the caller's flags and
//! the configuration (`request`) before those steps.

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

/// Runs a command in the session's isolation and records its change set. The command's own
/// exit status is in the outcome; an `Err` is a3s-iso's own failure.
pub fn run(ctx: &Context, opts: &RunOptions) -> Result<RunOutcome> {
    let (mut planned, network) = plan::plan(ctx, opts)?;
    let staged = launch::stage(ctx, opts, &mut planned)?;
    let exited = launch::start(opts, &planned, network)
        .and_then(|started| supervise::wait(opts, &planned, started));
    record::record(ctx, opts, &planned, staged, exited)
}

/// A whole run as a front end asks for it: the sandbox made from what the caller asked and the
/// configuration ([`request::configure`]), then [`run`]. How the configuration was read is told
/// to `front.warn` before the command starts, or else leads the outcome's warnings.
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
