//! The configuration's setup commands: run in order after a bind, inside the session's
//! sandbox, each recorded as a run of the session with its output kept in the state dir.

use std::path::PathBuf;

use serde::Serialize;

use crate::base::error::{Error, Result};
use crate::workspace::context::Context;

/// The setup a bind runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Setup {
    /// The commands, each run as `sh -c COMMAND` in the isolation's root, in order.
    pub commands: Vec<String>,
    /// Whether they may reach the network.
    pub allow_network: bool,
    /// Otherwise, the hosts they reach through the proxy (`run.allow_host`).
    pub allow_hosts: Vec<String>,
}

impl Setup {
    /// The setup of the configuration in effect: its commands, with the network its `run`
    /// table gives (the whole network, or its allowed hosts).
    pub fn configured(settings: &crate::services::config::Effective) -> Setup {
        let allow_network = settings.allow_network.value;
        Setup {
            commands: settings.setup.value.clone(),
            allow_network,
            allow_hosts: match allow_network {
                true => Vec::new(),
                false => settings.allow_host.value.clone(),
            },
        }
    }
}

/// One setup command that ran.
#[derive(Debug, Clone, Serialize)]
pub struct SetupRun {
    /// The command.
    pub command: String,
    /// The run of the session it was recorded as.
    pub run_id: String,
    /// Its exit code; `null` when a signal ended it.
    pub exit_code: Option<i32>,
    /// The file holding its output (stdout and stderr).
    #[serde(with = "crate::base::paths::fs_path")]
    pub output: PathBuf,
}

/// Runs the setup commands in the session, in order; the first that fails stops them, as
/// `setup_failed` (the session stays bound).
pub fn run_setup(
    ctx: &Context,
    session_id: &str,
    setup: &Setup,
    warnings: &mut Vec<String>,
) -> Result<Vec<SetupRun>> {
    if setup.commands.is_empty() {
        return Ok(Vec::new());
    }
    let located = ctx.locate()?;
    let dir = located.store.setup_output_dir(session_id);
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
    let mut ran = Vec::new();
    for command in &setup.commands {
        let run_id = crate::base::ids::generate("r");
        let output = dir.join(format!("{run_id}.log"));
        let outcome = crate::ops::run::run(
            ctx,
            &crate::ops::run::RunOptions {
                session_id: Some(session_id.to_string()),
                run_id: Some(run_id.clone()),
                command: ["sh", "-c", command].iter().map(Into::into).collect(),
                sandbox: Some(crate::ops::run::SandboxRequest {
                    allow_network: setup.allow_network,
                    allow_hosts: setup.allow_hosts.clone(),
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
