//! `run`'s second step, launch: the tree made ready, then the command started (sandboxed
//! through the re-executed helper, or as a host process), its terminal relayed and its network
//! served. `Before` also owns what becomes of that tree once the command has ended.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use crate::base::error::{Error, IoContext, Result};
use crate::base::ids::TreeId;
use crate::base::pty::{CommandTerminal, Stream, Use};
use crate::base::sandbox::{self, SandboxSpec, SocketFactory, StatusChannel, TerminalSpec};
use crate::base::signals::Signals;
use crate::base::warning::{RunWarning, Warning};
use crate::context::Context;
use crate::model::snapshot::Snapshot;
use crate::ops::run::plan::{Planned, output_target};
use crate::ops::run::request::RunOptions;
use crate::ops::run::target::Claimed;
use crate::services::evidence::Target;
use crate::services::nested::Nested;
use crate::services::network::{Allowlist, NetworkPlan, NetworkService};

/// The tree the command starts on, ready, and the session's git state across the command.
pub(crate) struct Staged {
    /// The run's layer over the isolation, or the isolation's snapshot.
    pub before: Before,
    /// What `run` keeps of the session's git state across the command.
    pub git: GitState,
}

/// The run's base tree, its result's snapshot and its nested change sets.
pub(crate) struct RunResult {
    pub base_tree: TreeId,
    pub result: Snapshot,
    pub nested: Nested,
}

/// A command started, with what relays its terminal and serves its network until it ends.
pub(crate) struct Started {
    /// The signals a3s-iso receives, passed on to the command.
    pub signals: Signals,
    /// The command, or the sandbox helper that becomes it.
    pub child: Child,
    /// The helper's channel (sandboxed only): where it says why it never became the command.
    pub channel: Option<StatusChannel>,
    /// The command's pty, relayed to the caller's terminal.
    pub terminal: Option<CommandTerminal>,
    /// The run's proxy and published ports.
    pub service: Option<NetworkService>,
    /// The hosts the run may reach through the proxy.
    pub allow: Allowlist,
    /// When it started (just before a3s-iso took its signals).
    pub started_at_ms: u64,
}

/// Makes the tree ready: the session's git layers when sandboxed, then the run's base.
pub(crate) fn stage(ctx: &Context, opts: &RunOptions, planned: &mut Planned) -> Result<Staged> {
    let git = attach_layers(ctx, &planned.claimed, &mut planned.spec)?;
    let throwaway = opts.throwaway.as_deref();
    let before = before_command(ctx, &planned.claimed, &mut planned.spec, throwaway)?;
    Ok(Staged { before, git })
}

/// Starts the command. With an interactive pty the caller's terminal is raw until its output is
/// drained (`supervise`), restored on every way out; the network is served from the start.
pub(crate) fn start(
    opts: &RunOptions,
    planned: &Planned,
    mut plan: NetworkPlan,
) -> Result<Started> {
    let started_at_ms = crate::base::fsutil::now_ms();
    let signals = Signals::register()?;
    let spec = planned.spec.as_ref();
    plan.dns = spec.is_some_and(|spec| spec.dns);
    let allow = plan.allow.clone();
    let mut channel = (spec.map(|_| StatusChannel::new()).transpose())
        .map_err(|e| Error::io("cannot make the sandbox helper's channel", e))?;
    let mut factory = (spec.filter(|_| plan.is_needed()))
        .map(|_| SocketFactory::new())
        .transpose()
        .map_err(|e| Error::io("cannot make the sandbox helper's socket channel", e))?;
    let mut command = command_for(opts, spec, channel.as_ref(), factory.as_ref())?;
    set_up(&mut command, opts, planned)?;
    let mut terminal = match (spec, planned.terminal) {
        (None, TerminalSpec::Interactive) => Some(host_pty_for(&mut command, opts)?),
        _ => None,
    };
    let mut child = spawn(command, &opts.command[0])?;
    if let Some(terminal) = &mut terminal {
        terminal.started();
    }
    let service = serve_network(factory.take(), plan, &mut child)?;
    if let Some(channel) = &mut channel {
        channel.spawned();
        if planned.terminal != TerminalSpec::None {
            terminal = relay_sandbox_terminal(channel, opts, planned.terminal, &mut child)?;
        }
    }
    Ok(Started {
        signals,
        child,
        channel,
        terminal,
        service,
        allow,
        started_at_ms,
    })
}

/// Where the run's base comes from, and then its result.
pub(crate) enum Before {
    /// The full path: the isolation's snapshot before the command.
    Snapshot(String),
    /// The fast path: the run's layer over the isolation, merged after the command.
    Layer(crate::recovery::run_layer::RunLayer),
    /// The layer merged: the run's base and result from the paths it held.
    Merged { base: String, result: Snapshot },
    /// The layer thrown away: the isolation is still at `tree`; `wrote`: what the command wrote.
    Dropped { tree: String, wrote: Vec<String> },
}

/// A sandboxed run whose fast path can be proven gets a layer over the isolation; any other
/// takes the isolation's snapshot (its tree noted at `throwaway` first, if asked).
fn before_command(
    ctx: &Context,
    claimed: &Claimed,
    spec: &mut Option<SandboxSpec>,
    throwaway: Option<&Path>,
) -> Result<Before> {
    let (located, isolation) = (&claimed.target.located, &claimed.target.isolation);
    let ids = (claimed.session_id(), claimed.run_id());
    use crate::recovery::run_layer::{Writes, prepare};
    let writes = match throwaway {
        Some(_) => Writes::Dropped,
        None => Writes::Kept,
    };
    if let Some(spec) = spec
        && let Some(layer) = prepare(located, isolation, ids, spec, writes)?
    {
        spec.tree_layer = Some(layer.spec());
        return Ok(Before::Layer(layer));
    }
    let tree = isolation.snapshot(ctx, located)?.tree;
    if let Some(record) = throwaway {
        if let Some(dir) = record.parent() {
            std::fs::create_dir_all(dir).ctx(|| format!("cannot create {}", dir.display()))?;
        }
        crate::base::fsutil::write_atomic(record, format!("{tree}\n").as_bytes())?;
    }
    Ok(Before::Snapshot(tree))
}

impl Before {
    /// Once the command has ended or never started: the layer merged now, or the next command
    /// takes it for an interrupted run. One a3s-iso lost track of waits for recovery.
    pub(crate) fn after<T>(
        self,
        ctx: &Context,
        at: &Target,
        executed: Result<T>,
    ) -> Result<(Before, T)> {
        match executed {
            Err(e) if e.code() == crate::base::error::ErrorCode::Internal => Err(e),
            // The command's error is reported; a failed merge leaves its record for recovery.
            Err(e) => {
                let _ = self.merge(ctx, at);
                Err(e)
            }
            Ok(done) => Ok((self.merge(ctx, at)?, done)),
        }
    }

    /// Once the command has ended: the run's layer, if any, merged into the tree.
    fn merge(self, ctx: &Context, at: &Target) -> Result<Before> {
        let Before::Layer(layer) = self else {
            return Ok(self);
        };
        use crate::recovery::run_layer::{Finished, finish};
        Ok(match finish(&ctx.git, &at.located, &at.isolation, layer)? {
            Finished::Fast { base, result } => Before::Merged { base, result },
            Finished::Full { base } => Before::Snapshot(base),
            Finished::Dropped { tree, wrote } => Before::Dropped { tree, wrote },
        })
    }

    /// What a thrown-away layer held (see [`RunOutcome::dropped`]).
    pub(crate) fn dropped(&self) -> Option<Vec<String>> {
        match self {
            Before::Dropped { wrote, .. } => Some(wrote.clone()),
            _ => None,
        }
    }

    /// The run's base tree, result snapshot and nested change sets.
    pub(crate) fn result(self, ctx: &Context, at: &Target) -> Result<RunResult> {
        let (base, result, nested) = match self {
            Before::Merged { base, result } => (base, result, Nested::default()),
            Before::Dropped { tree, .. } => {
                (tree.clone(), Snapshot::flat(&tree), Nested::default())
            }
            Before::Snapshot(base) => {
                let (result, nested) =
                    crate::services::evidence::snapshot_all(ctx, &at.located, &at.isolation)?;
                (base, result, nested)
            }
            Before::Layer(_) => return Err(Error::internal("the run's layer was never merged")),
        };
        let base_tree = TreeId::new(base)?;
        Ok(RunResult {
            base_tree,
            result,
            nested,
        })
    }
}

/// What `run` keeps of the session's git state across the command.
#[derive(Default)]
pub(crate) struct GitState {
    /// The session's layers were given to the sandbox.
    pub layered: bool,
    /// The isolation's HEAD before the command, as its file held it.
    pub head_before: Vec<u8>,
    /// What the user should know so far.
    pub warnings: Vec<Warning>,
}

/// Gives a sandboxed run the session's git layers; a reftable repository gets none (its refs
/// are not files a layer holds).
fn attach_layers(
    ctx: &Context,
    claimed: &Claimed,
    spec: &mut Option<SandboxSpec>,
) -> Result<GitState> {
    let Some(spec) = spec else {
        return Ok(GitState::default());
    };
    let (located, isolation) = (&claimed.target.located, &claimed.target.isolation);
    let session_id = claimed.session_id();
    let mut state = GitState {
        head_before: crate::recovery::session_git::read_head(&isolation.admin),
        ..GitState::default()
    };
    if located.repo.common_dir.join("reftable").is_dir() {
        state.warnings.push(RunWarning::Reftable.into());
        return Ok(state);
    }
    let prepared = crate::recovery::session_git::prepare(
        &ctx.git,
        &located.repo,
        &located.store,
        session_id,
        &isolation.admin,
    );
    let (layers, warnings) = match prepared {
        Ok(prepared) => prepared,
        // As where the layers cannot be mounted: the run goes on without them.
        Err(e) => {
            let why = e.to_string();
            state
                .warnings
                .push(RunWarning::GitLayersNotReady { why }.into());
            return Ok(state);
        }
    };
    spec.sealed.retain(|p| !layers.sealed_otherwise.contains(p));
    spec.git_layers = Some(layers);
    state.layered = true;
    state.warnings = warnings;
    Ok(state)
}

/// Starts the run's network service once the helper runs; if it cannot, the helper is ended.
fn serve_network(
    factory: Option<SocketFactory>,
    plan: NetworkPlan,
    helper: &mut Child,
) -> Result<Option<NetworkService>> {
    let Some(mut factory) = factory else {
        return Ok(None);
    };
    factory.spawned();
    match NetworkService::start(plan, factory) {
        Ok(service) => Ok(Some(service)),
        Err(e) => {
            let _ = helper.kill();
            let _ = helper.wait();
            Err(Error::io("cannot serve the run's network", e))
        }
    }
}

/// A host pty for an unsandboxed interactive command, relayed to the caller's (raw) terminal.
fn host_pty_for(command: &mut Command, opts: &RunOptions) -> Result<CommandTerminal> {
    let terminal = CommandTerminal::open(output_target(opts))
        .map_err(|e| Error::io("cannot open a pty for the command", e))?;
    terminal
        .attach(command, true)
        .map_err(|e| Error::io("cannot give the command its pty", e))?;
    Ok(terminal)
}

/// Relays the sandbox helper's pty and lets the helper go on; `None` when the helper ended
/// first. If the relay cannot start, the helper is ended.
fn relay_sandbox_terminal(
    channel: &mut StatusChannel,
    opts: &RunOptions,
    terminal: TerminalSpec,
    helper: &mut Child,
) -> Result<Option<CommandTerminal>> {
    let Some(master) = channel.terminal() else {
        return Ok(None);
    };
    let usage = match terminal {
        TerminalSpec::Output {
            stdout: false,
            stderr: true,
        } => Use::Output { to: Stream::Stderr },
        TerminalSpec::Output { .. } => Use::Output {
            to: output_target(opts),
        },
        _ => Use::Interactive {
            to: output_target(opts),
        },
    };
    match CommandTerminal::relay(master, None, usage) {
        Ok(relayed) => {
            channel.go();
            Ok(Some(relayed))
        }
        Err(e) => {
            let _ = helper.kill();
            let _ = helper.wait();
            Err(Error::io("cannot relay the command's pty", e))
        }
    }
}

/// Starts `command` and lets go of it (its copies of the command's stdio are closed).
fn spawn(mut command: Command, program: &std::ffi::OsStr) -> Result<Child> {
    command.spawn().map_err(|err| {
        sandbox::spawn_failure(program, &err)
            .unwrap_or_else(|| Error::io(format!("cannot run {}", program.to_string_lossy()), err))
    })
}

/// The command itself, or (sandboxed) a3s-iso re-executed as the helper that enters the sandbox.
fn command_for(
    opts: &RunOptions,
    spec: Option<&SandboxSpec>,
    channel: Option<&StatusChannel>,
    factory: Option<&SocketFactory>,
) -> Result<Command> {
    let (Some(spec), Some(channel)) = (spec, channel) else {
        let mut command = Command::new(&opts.command[0]);
        command.args(&opts.command[1..]);
        return Ok(command);
    };
    let helper = opts
        .helper
        .clone()
        .or_else(|| std::env::current_exe().ok())
        .ok_or_else(|| {
            Error::internal("cannot find the a3s-iso executable for the sandbox helper")
        })?;
    let mut command = Command::new(helper);
    command.arg("sandbox-exec");
    channel.pass_to(&mut command);
    if let Some(factory) = factory {
        factory.pass_to(&mut command);
    }
    command
        .arg("--spec")
        .arg(serde_json::to_string(spec).map_err(|e| Error::internal(e.to_string()))?)
        .arg("--")
        .args(&opts.command);
    Ok(command)
}

/// The command's environment, working directory, session or process group, and stdio.
/// Sandboxed, the helper leads a process group and gets `/dev/null` for every terminal stream:
/// the command's terminal is the sandbox's pty, never the caller's. Unsandboxed, the command
/// leads a session, except as a background job where a3s-iso itself is one.
fn set_up(command: &mut Command, opts: &RunOptions, planned: &Planned) -> Result<()> {
    use std::os::unix::process::CommandExt;
    command
        .current_dir(&planned.workdir)
        .env_clear()
        .envs(planned.env.vars.iter().map(|(k, v)| (k, v)));
    let stdout_to_stderr = || -> Result<Stdio> {
        use std::os::fd::AsFd;
        let stderr = std::io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| Error::io("cannot duplicate stderr", e))?;
        Ok(Stdio::from(stderr))
    };
    if let Some(path) = &opts.output {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ctx(|| format!("cannot open {}", path.display()))?;
        let copy = file
            .try_clone()
            .ctx(|| format!("cannot open {}", path.display()))?;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::from(file))
            .stderr(Stdio::from(copy));
        match planned.spec {
            Some(_) => {
                command.process_group(0);
            }
            None => sandbox::new_session_on_exec(command),
        }
        return Ok(());
    }
    if planned.spec.is_none() {
        match planned.terminal {
            // The pty's own session: host_pty_for makes it.
            TerminalSpec::Interactive => {}
            // A background job of that terminal, whose job control applies as to any other.
            _ if Stream::Stdin.is_terminal() => {
                command.process_group(0);
            }
            _ => sandbox::new_session_on_exec(command),
        }
        if opts.stdout_to_stderr {
            command.stdout(stdout_to_stderr()?);
        }
        return Ok(());
    }
    // Its own process group, so that signals reach the helper and init, which pass them on.
    command.process_group(0);
    let (stdout_pty, stderr_pty) = match planned.terminal {
        TerminalSpec::None => (false, false),
        TerminalSpec::Interactive => (true, true),
        TerminalSpec::Output { stdout, stderr } => (stdout, stderr),
    };
    if planned.terminal == TerminalSpec::Interactive || Stream::Stdin.is_terminal() {
        command.stdin(Stdio::null());
    }
    if stdout_pty {
        command.stdout(Stdio::null());
    } else if opts.stdout_to_stderr {
        command.stdout(stdout_to_stderr()?);
    }
    if stderr_pty {
        command.stderr(Stdio::null());
    }
    Ok(())
}
