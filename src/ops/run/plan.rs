//! `run`'s first step, plan: what the run is before anything starts.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::base::command_env::{CommandEnv, EnvRequest};
use crate::base::error::{Error, Result};
use crate::base::pty::Stream;
use crate::base::sandbox::{NetworkAccess, SandboxSpec, TerminalSpec};
use crate::context::Context;
use crate::git::REPO_SELECTING_VARS;
use crate::ops::run::request::RunOptions;
use crate::ops::run::sandbox::{Granted, sandbox_for};
use crate::ops::run::target::Claimed;
use crate::services::network::{Allowlist, NetworkPlan, NetworkReport, PublishRequest};
use crate::store::state::{LiveRunFile, RunSandbox};

/// A run planned: what the command starts with, and what holds the run's places until it is
/// recorded (fields drop in order: live file, grants' layers, claimed places, lease last).
pub(crate) struct Planned {
    /// The sandbox (`None`: a plain host process); its layers are added when they are ready.
    pub spec: Option<SandboxSpec>,
    /// The command's environment.
    pub env: CommandEnv,
    /// Where `show` finds the run's published ports while it lives.
    _live: Option<LiveRunFile>,
    /// What the run reports of its network before anything is refused.
    pub network: NetworkReport,
    /// The terminal the command gets.
    pub terminal: TerminalSpec,
    /// What the command may write beyond its directories.
    pub granted: Granted,
    /// The sandbox settings the run records.
    pub settings: RunSandbox,
    /// The command's working directory, inside the isolation.
    pub workdir: PathBuf,
    /// The session, its isolation and the run's own places.
    pub claimed: Claimed,
}

/// The run's network: what serves it, what it reports, and the file `show` reads.
struct Network {
    plan: NetworkPlan,
    planned: NetworkReport,
    live: Option<LiveRunFile>,
}

/// Plans the run, and the network `launch` serves the command.
pub(crate) fn plan(ctx: &Context, opts: &RunOptions) -> Result<(Planned, NetworkPlan)> {
    if opts.command.is_empty() {
        return Err(Error::usage(
            "no command given: a3s-iso run -- CMD [ARGS...]",
        ));
    }
    let (allow, publish) = network_request(opts)?;
    let claimed = Claimed::take(ctx, opts)?;
    let workdir = claimed.counterpart(ctx);
    let mut settings = settings_of(opts, !allow.is_empty())?;
    let granted = Granted::prepare(opts, &mut settings, &claimed)?;
    let network = network_for(opts, &settings, &claimed, (allow, &publish))?;
    let terminal = terminal_for(opts);
    let spec = sandbox_for(opts, &settings, &claimed, (&workdir, &granted), terminal)?;
    let extra_env = sandboxed_env(spec.as_ref(), &claimed, &granted);
    let env = command_env(opts, &claimed, &workdir, extra_env, &settings);
    settings.env_passed = env.passed.clone();
    let planned = Planned {
        spec,
        env,
        _live: network.live,
        network: network.planned,
        terminal,
        granted,
        settings,
        workdir,
        claimed,
    };
    Ok((planned, network.plan))
}

/// The `--allow-host` entries and `--publish` requests, parsed.
fn network_request(opts: &RunOptions) -> Result<(Allowlist, Vec<PublishRequest>)> {
    let Some(request) = &opts.sandbox else {
        return Ok((Allowlist::default(), Vec::new()));
    };
    if request.allow_network && !(request.allow_hosts.is_empty() && request.publish.is_empty()) {
        return Err(Error::usage(
            "--allow-host and --publish need the sandbox's own network: not with --allow-network",
        ));
    }
    let allow = Allowlist::parse(&request.allow_hosts)?;
    let publish = request
        .publish
        .iter()
        .map(|p| PublishRequest::parse(p))
        .collect::<Result<_>>()?;
    Ok((allow, publish))
}

/// The sandbox settings asked for, with canonical `--allow-write` and `--allow-read` paths.
fn settings_of(opts: &RunOptions, allowlist: bool) -> Result<RunSandbox> {
    let Some(request) = &opts.sandbox else {
        return Ok(RunSandbox {
            enabled: false,
            network: NetworkAccess::Allowed,
            allow_write: Vec::new(),
            allow_read: Vec::new(),
            env_passed: Vec::new(),
            profile: None,
        });
    };
    Ok(RunSandbox {
        enabled: true,
        network: if request.allow_network {
            NetworkAccess::Allowed
        } else if allowlist {
            NetworkAccess::Allowlist
        } else {
            NetworkAccess::Denied
        },
        allow_write: existing("--allow-write", &request.allow_write)?,
        allow_read: existing("--allow-read", &request.allow_read)?,
        env_passed: Vec::new(),
        profile: request.profile.as_ref().map(|p| p.used(None)),
    })
}

/// Canonical forms of paths a caller named; a path that does not exist is `invalid_input`.
fn existing(flag: &str, paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    paths
        .iter()
        .map(|path| {
            std::fs::canonicalize(path).map_err(|e| Error::InvalidInput {
                reason: crate::base::invalid::Invalid::FlagPath {
                    flag: flag.to_string(),
                    path: path.to_path_buf(),
                    error: e.to_string(),
                },
            })
        })
        .collect()
}

/// The run's network: published ports bound now (so one in use fails before the command
/// starts) and written where `show` finds them; and what the run reports of it.
fn network_for(
    opts: &RunOptions,
    settings: &RunSandbox,
    claimed: &Claimed,
    (allow, publish): (Allowlist, &[PublishRequest]),
) -> Result<Network> {
    let plan = NetworkPlan::bind(allow, publish)?;
    let planned = NetworkReport::planned(settings.network, plan.allow.report(), plan.published());
    let (store, session_id) = (&claimed.target.located.store, claimed.session_id());
    let live = LiveRunFile::write(store, session_id, claimed.run_id(), &planned.published)?;
    for published in &planned.published {
        if let Some(announce) = opts.on_published {
            announce(published);
        }
    }
    Ok(Network {
        plan,
        planned,
        live,
    })
}

/// An interactive pty when stdin is a terminal in the foreground; sandboxed, a pty for output
/// that goes to one (the command never holds the caller's terminal).
fn terminal_for(opts: &RunOptions) -> TerminalSpec {
    if opts.output.is_some() {
        return TerminalSpec::None;
    }
    if crate::base::pty::stdin_is_terminal() {
        return TerminalSpec::Interactive;
    }
    if opts.sandbox.is_none() {
        return TerminalSpec::None;
    }
    let stdout = output_target(opts).is_terminal();
    let stderr = Stream::Stderr.is_terminal();
    if stdout || stderr {
        TerminalSpec::Output { stdout, stderr }
    } else {
        TerminalSpec::None
    }
}

/// Where the command's stdout goes: a3s-iso's stdout, or its stderr with `--json`.
pub(crate) fn output_target(opts: &RunOptions) -> Stream {
    if opts.stdout_to_stderr {
        Stream::Stderr
    } else {
        Stream::Stdout
    }
}

/// The command's environment: the caller's allowed and named variables, `--env`, and run's own
/// (never a repository-selecting `GIT_*` of the caller's); the proxy's, the caches', and with
/// the network denied, those that keep package managers from retrying.
fn command_env(
    opts: &RunOptions,
    claimed: &Claimed,
    workdir: &Path,
    extra: Vec<(String, OsString)>,
    settings: &RunSandbox,
) -> CommandEnv {
    let (record, run_id) = (&claimed.target.record, claimed.run_id());
    let private_tmp = claimed.private_tmp.path();
    let worktree = record.worktree.as_deref().unwrap_or(workdir);
    let mut own: Vec<(String, OsString)> = vec![
        (
            "A3S_ISO_SESSION_ID".into(),
            record.session_id.as_str().into(),
        ),
        ("A3S_ISO_RUN_ID".into(), run_id.as_str().into()),
        ("A3S_ISO_WORKTREE".into(), worktree.into()),
        ("A3S_ISO_SOURCE".into(), record.source.clone().into()),
        ("TMPDIR".into(), private_tmp.into()),
    ];
    own.extend(extra);
    if settings.network == NetworkAccess::Allowlist {
        let vars = crate::services::network::proxy_env();
        own.extend(vars.into_iter().map(|(k, v)| (k, v.into())));
    }
    // The profile's variables pass as if named with --env.
    let mut requests: Vec<EnvRequest> = opts
        .sandbox
        .as_ref()
        .and_then(|s| s.profile.as_ref())
        .map(crate::services::profile::Profile::env_requests)
        .unwrap_or_default();
    requests.extend(opts.env.iter().cloned());
    let mut env =
        crate::base::command_env::plan(std::env::vars_os(), &requests, &own, REPO_SELECTING_VARS);
    if settings.enabled && settings.network == NetworkAccess::Denied {
        add_unless_given(&mut env, crate::services::network::no_retry_env());
    }
    env
}

/// Adds each variable the command does not get already (what the caller passes wins).
fn add_unless_given(env: &mut CommandEnv, defaults: Vec<(String, String)>) {
    for (name, value) in defaults {
        if !env.passed.contains(&name) {
            env.vars.push((name.clone().into(), value.into()));
            env.dropped.retain(|dropped| *dropped != name);
            env.passed.push(name);
        }
    }
    env.passed.sort();
}

/// What a sandboxed command's environment adds: git's quarantine, and the caches.
fn sandboxed_env(
    spec: Option<&SandboxSpec>,
    claimed: &Claimed,
    granted: &Granted,
) -> Vec<(String, OsString)> {
    let Some(_) = spec else {
        return Vec::new();
    };
    let repo = &claimed.target.located.repo;
    let git = claimed.quarantine.environment(repo).into_iter();
    git.map(|(k, v)| (k, v.into()))
        .chain(granted.caches.env.iter().cloned())
        .collect()
}

/// The `PATH` the command gets.
pub(crate) fn command_path(env: &CommandEnv) -> Option<OsString> {
    env.vars
        .iter()
        .rev()
        .find(|(name, _)| name == "PATH")
        .map(|(_, value)| value.clone())
}
