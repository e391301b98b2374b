//! What a bind's setup is (the configuration's setup commands and the network they reach)
//! and what each command that ran left; the `bind` flow runs them.

use crate::base::ids::RunId;
use std::path::PathBuf;

use serde::Serialize;

/// The setup a bind runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Setup {
    /// The commands, each run as `sh -c COMMAND` in the isolation's root, in order.
    pub commands: Vec<String>,
    /// Whether they may reach the network.
    pub allow_network: bool,
    /// Otherwise, the hosts they reach through the proxy (`run.allow_host`).
    pub allow_hosts: Vec<String>,
    /// The cache their presets' package managers get (`run.cache`).
    pub cache: crate::services::caches::CacheMode,
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
            cache: settings.cache.value,
        }
    }
}

/// One setup command that ran.
#[derive(Debug, Clone, Serialize)]
pub struct SetupRun {
    /// The command.
    pub command: String,
    /// The run of the session it was recorded as.
    pub run_id: RunId,
    /// Its exit code; `null` when a signal ended it.
    pub exit_code: Option<i32>,
    /// The file holding its output (stdout and stderr).
    #[serde(with = "crate::base::paths::fs_path")]
    pub output: PathBuf,
}
