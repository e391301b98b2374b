//! The configuration's setup commands, run after a bind in the sandbox, each a recorded run.

use crate::base::error::{Error, IoContext, Result};
use crate::base::ids::{RunId, SessionId};
use crate::base::warning::Warning;
use crate::context::Context;
use crate::ops::bind::{BindOptions, BindOutcome};

pub use crate::services::setup::{Setup, SetupRun};

/// Binds a session, then runs the setup commands in a new isolation. Dead owners' sessions
/// are reclaimed first (never this one, nor one of a recorded `land` queue).
pub fn bind(ctx: &Context, opts: &BindOptions) -> Result<BindOutcome> {
    // A bind refused for its owner changes nothing, others' sessions included.
    crate::ops::bind::owner_for(opts)?;
    let (reclaimed, warning) = match crate::recovery::locate(ctx) {
        Ok(located) => {
            let spare = |id: &SessionId| {
                opts.session_id.as_deref() == Some(id.as_str())
                    || crate::flows::land::queued(&located, id)
            };
            crate::flows::autosweep::reclaim(ctx, &located, !opts.no_auto_sweep, &spare)
        }
        // Not in a repository: the bind says why.
        Err(_) => (Vec::new(), None),
    };
    let mut outcome = crate::ops::bind::bind_isolation(ctx, opts)?;
    outcome.reclaimed = reclaimed;
    outcome.warnings.extend(warning);
    if !outcome.reused && !outcome.read_only {
        let session = outcome.session_id.clone();
        outcome.setup = run_setup(ctx, &session, &opts.setup, &mut outcome.warnings)?;
    }
    Ok(outcome)
}

/// Runs the setup commands in order; the first that fails is `setup_failed` (still bound).
pub fn run_setup(
    ctx: &Context,
    session_id: &SessionId,
    setup: &Setup,
    warnings: &mut Vec<Warning>,
) -> Result<Vec<SetupRun>> {
    if setup.commands.is_empty() {
        return Ok(Vec::new());
    }
    let located = crate::recovery::locate(ctx)?;
    let dir = located.store.setup_output_dir(session_id);
    std::fs::create_dir_all(&dir).ctx(|| format!("cannot create {}", dir.display()))?;
    let mut ran = Vec::new();
    for command in &setup.commands {
        let run_id = RunId::generate();
        let output = dir.join(format!("{run_id}.log"));
        let outcome = crate::ops::run::run(
            ctx,
            &crate::ops::run::RunOptions {
                session_id: Some(session_id.to_string()),
                run_id: Some(run_id.to_string()),
                command: ["sh", "-c", command].iter().map(Into::into).collect(),
                sandbox: Some(crate::ops::run::SandboxRequest {
                    allow_network: setup.allow_network,
                    allow_hosts: setup.allow_hosts.clone(),
                    cache: setup.cache,
                    ..crate::ops::run::SandboxRequest::default()
                }),
                output: Some(output.clone()),
                ..crate::ops::run::RunOptions::default()
            },
        )?;
        warnings.extend(outcome.warnings);
        if outcome.exit_code != Some(0) {
            return Err(Error::SetupFailed {
                session_id: session_id.to_string(),
                command: command.clone(),
                exit_code: outcome.exit_code,
                output,
            });
        }
        ran.push(SetupRun {
            command: command.clone(),
            run_id,
            exit_code: outcome.exit_code,
            output,
        });
    }
    Ok(ran)
}
