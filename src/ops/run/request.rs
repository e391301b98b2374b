//! What `run` is asked to do ([`RunOptions`]), and its sandbox from the flags and the
//! configuration ([`RunRequest`]). Flags win; an untrusted `.a3s-iso.toml` with a `[run]`
//! table refuses the run (`config_untrusted`) unless `approve` says yes.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::base::command_env::EnvRequest;
use crate::base::error::Result;
use crate::base::warning::{RunWarning, Warning};
use crate::context::Context;
use crate::services::config::{Loaded, RepositoryFile, Trust};
use crate::services::network::Published;

/// What `run` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The session; resolved as for every command when `None`.
    pub session_id: Option<String>,
    /// The run id; generated when `None`. A run id is never reused.
    pub run_id: Option<String>,
    /// `run_id` was just generated: no result can be pinned under it yet.
    pub run_id_fresh: bool,
    /// Stop the command after this long (SIGTERM, then SIGKILL).
    pub timeout: Option<Duration>,
    /// The command and its arguments.
    pub command: Vec<OsString>,
    /// Send the command's stdout to stderr (so stdout can carry one JSON document).
    pub stdout_to_stderr: bool,
    /// `None`: `--no-sandbox`, a plain host process.
    pub sandbox: Option<SandboxRequest>,
    /// The `agent_release_identity` of the run's change set; default: a3s-iso's own.
    pub release_identity: Option<String>,
    /// The a3s-iso executable, re-executed as the sandbox helper.
    pub helper: Option<PathBuf>,
    /// What of the caller's environment the command gets beyond the allowlist
    /// ([`crate::base::command_env::ALLOWED`]), and what it is given.
    pub env: Vec<EnvRequest>,
    /// Where stdout and stderr go instead (appended); stdin is then `/dev/null`.
    pub output: Option<PathBuf>,
    /// Told of each published port once it is bound, before the command starts.
    pub on_published: Option<fn(&Published)>,
    /// What the command writes is thrown away (`land`'s test): its layer removed, or the tree
    /// it starts from written to this file for the caller to move the isolation back to.
    pub throwaway: Option<PathBuf>,
}

/// What a front end asks of a whole run (`options.sandbox` is made from `ask`).
#[derive(Debug, Clone, Default)]
pub struct RunRequest {
    /// What to run, where and how; its `sandbox` is replaced by what `ask` configures.
    pub options: RunOptions,
    /// What the caller asked of the sandbox.
    pub ask: SandboxAsk,
}

/// What only the front end can do for a run.
pub struct FrontEnd<'a> {
    /// Asked about an untrusted repository file that sets `[run]` keys (MCP never approves).
    pub approve: &'a mut dyn FnMut(&RepositoryFile) -> bool,
    /// Told how the configuration was read, before the command starts (`None`: in the outcome).
    pub warn: Option<&'a mut dyn FnMut(&Warning)>,
}

/// What the caller lets a sandboxed command do beyond the defaults.
#[derive(Debug, Clone, Default)]
pub struct SandboxRequest {
    /// Reach the network (and the host's sockets under `/run`).
    pub allow_network: bool,
    /// Reach these hosts through a3s-iso's proxy (`--allow-host` forms: `host[:port]`,
    /// `*.domain`, `@preset`; not with `allow_network`).
    pub allow_hosts: Vec<String>,
    /// Also write these paths (each must exist).
    pub allow_write: Vec<PathBuf>,
    /// Also read these hidden or private paths (each must exist).
    pub allow_read: Vec<PathBuf>,
    /// Publish these ports inside on the host's loopback (`--publish [HOST_PORT:]PORT`; not
    /// with `allow_network`).
    pub publish: Vec<String>,
    /// The profile the command runs under: its home paths, variables and hosts.
    pub profile: Option<crate::services::profile::Profile>,
    /// Every profile's login files (relative to home): hidden, but the running profile's.
    pub credentials: Vec<PathBuf>,
    /// The cache the package manager of each preset among `allow_hosts` gets.
    pub cache: crate::services::caches::CacheMode,
}

/// What the caller of `run` asked of the sandbox, before the configuration fills it in.
#[derive(Debug, Clone, Default)]
pub struct SandboxAsk {
    /// `--no-sandbox`: a plain host process; the configuration is not read.
    pub no_sandbox: bool,
    /// `--ignore-config`: the repository's file is not read.
    pub ignore_config: bool,
    /// `--allow-network`.
    pub allow_network: bool,
    /// `--allow-host`, as given.
    pub allow_hosts: Vec<String>,
    /// `--publish`, as given.
    pub publish: Vec<String>,
    /// `--allow-write`.
    pub allow_write: Vec<PathBuf>,
    /// `--allow-read`.
    pub allow_read: Vec<PathBuf>,
    /// `--profile`.
    pub profile: Option<String>,
    /// `--cache`.
    pub cache: Option<crate::services::caches::CacheMode>,
}

/// The sandbox a run gets (`None` without one), and how the configuration was read.
#[derive(Debug, Clone)]
pub struct ConfiguredSandbox {
    /// The request for `run`.
    pub request: Option<SandboxRequest>,
    /// Settings left out, and why.
    pub warnings: Vec<Warning>,
}

/// Makes the sandbox request from `ask` and the configuration; `approve`'s yes records trust
/// as `config trust` does.
pub fn configure(
    ctx: &Context,
    ask: &SandboxAsk,
    approve: &mut dyn FnMut(&RepositoryFile) -> bool,
) -> Result<ConfiguredSandbox> {
    let mut warnings = Vec::new();
    if ask.no_sandbox {
        return Ok(ConfiguredSandbox {
            request: None,
            warnings,
        });
    }
    let loaded = trusted(ctx, ask.ignore_config, approve)?;
    let settings = loaded.trusted_effective(&mut warnings);
    // An allowlist or a published port asks for the sandbox's own network, whatever the config.
    let own_network = !ask.allow_hosts.is_empty() || !ask.publish.is_empty();
    let allow_network = ask.allow_network || (!own_network && settings.allow_network.value);
    let name = ask.profile.clone().or(settings.profile.value);
    let cache = settings.cache.or_flag(ask.cache).value;
    let profile = name
        .map(|name| crate::services::profile::resolve(&name, loaded.user.profiles.as_ref()))
        .transpose()?;
    let mut allow_hosts = ask.allow_hosts.clone();
    let mut publish = ask.publish.clone();
    let (hosts, ports) = (settings.allow_host.value, settings.publish.value);
    if allow_network {
        if !hosts.is_empty() || !ports.is_empty() {
            warnings.push(RunWarning::HostsNotApplied.into());
        }
    } else {
        // With the whole network open, no configured or profile host adds anything.
        allow_hosts.extend(hosts);
        allow_hosts.extend(profile.iter().flat_map(|p| p.hosts.iter().cloned()));
        publish.extend(unpublished(&publish, ports));
    }
    Ok(ConfiguredSandbox {
        request: Some(SandboxRequest {
            allow_network,
            allow_hosts,
            allow_write: ask.allow_write.clone(),
            allow_read: ask.allow_read.clone(),
            publish,
            profile,
            credentials: crate::services::profile::every_credential(loaded.user.profiles.as_ref())?,
            cache,
        }),
        warnings,
    })
}

/// The configuration files; an untrusted repository file setting `[run]` keys needs `approve`.
fn trusted(
    ctx: &Context,
    ignore_repository: bool,
    approve: &mut dyn FnMut(&RepositoryFile) -> bool,
) -> Result<Loaded> {
    let loaded = crate::services::config::load(ctx, !ignore_repository)?;
    let Some(file) = &loaded.repository else {
        return Ok(loaded);
    };
    if file.trust == Trust::Trusted || file.layer.run.is_none() {
        return Ok(loaded);
    }
    if !approve(file) {
        loaded.require_trusted()?;
    }
    loaded.trust_repository_file()?;
    crate::services::config::load(ctx, true)
}

/// The configuration's published ports whose port inside the flags do not publish already.
fn unpublished(given: &[String], configured: Vec<String>) -> Vec<String> {
    let inside = |entry: &str| entry.rsplit(':').next().unwrap_or(entry).trim().to_string();
    let taken: Vec<String> = given.iter().map(|e| inside(e)).collect();
    configured
        .into_iter()
        .filter(|entry| !taken.contains(&inside(entry)))
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::ops::run::request::*;

    #[test]
    fn a_port_the_flags_publish_is_not_published_again_from_the_configuration() {
        let given = vec!["8080:3000".to_string()];
        let configured = vec!["3000".to_string(), "0:5173".to_string()];
        assert_eq!(unpublished(&given, configured), vec!["0:5173".to_string()]);
    }
}
