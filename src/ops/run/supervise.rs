//! `run`'s third step, supervise: waits for the command, passing signals on and enforcing the
//! timeout, then says how it ended (`Ended`).

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

use crate::base::error::{Error, HiddenTool, Result};
use crate::base::pty::CommandTerminal;
use crate::base::sandbox::{self, StatusChannel};
use crate::base::signals::Signals;
use crate::model::changeset::RunState;
use crate::ops::run::launch::Started;
use crate::ops::run::plan::{Planned, command_path};
use crate::ops::run::request::RunOptions;
use crate::services::network::{NetworkReport, NetworkService};
use crate::store::state::{Ran, RunSandbox};

/// How long a timed-out command gets between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);

/// How the command ended.
pub(crate) struct Ended {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// A signal a3s-iso received and passed on (Ctrl-C, SIGTERM, SIGHUP).
    pub forwarded: Option<i32>,
    pub timed_out: bool,
}

impl Ended {
    /// The terminal state: any signal cancels the run; otherwise the exit code decides.
    pub(crate) fn state(&self) -> RunState {
        if self.forwarded.is_some() || self.timed_out || self.signal.is_some() {
            RunState::Cancelled
        } else if self.exit_code == Some(0) {
            RunState::Completed
        } else {
            RunState::Failed
        }
    }

    /// Like env(1) and timeout(1): the status, 128+signal (its or a3s-iso's), 124 on timeout.
    pub(crate) fn status(&self) -> i32 {
        if let Some(signal) = self.forwarded {
            128 + signal
        } else if self.timed_out {
            124
        } else if let Some(signal) = self.signal {
            128 + signal
        } else {
            self.exit_code.unwrap_or(125)
        }
    }

    /// How the command ended and what it ran, as recorded beside the run's document.
    pub(crate) fn exit(
        &self,
        ran: &Ran,
        settings: &RunSandbox,
        network: &NetworkReport,
    ) -> crate::store::state::RunExit {
        crate::store::state::RunExit {
            exit_code: self.exit_code,
            signal: self.signal,
            timed_out: self.timed_out,
            state: Some(self.state()),
            ran: ran.clone(),
            sandbox: Some(settings.clone()),
            network: Some(network.clone()),
        }
    }
}

/// How the command ended, and its network's report with what the proxy refused.
pub(crate) struct Exited {
    pub ended: Ended,
    pub network: NetworkReport,
    /// What it ran, where and when.
    pub ran: Ran,
}

/// Waits for the command ([`supervise`]), then ends its relay and network service; a helper
/// that never became the command is its failure.
pub(crate) fn wait(opts: &RunOptions, planned: &Planned, started: Started) -> Result<Exited> {
    let Started {
        signals,
        child,
        mut channel,
        terminal,
        service,
        allow,
        started_at_ms,
    } = started;
    let sandboxed = planned.spec.is_some();
    let watched = (channel.as_mut(), terminal.as_ref());
    let ended = supervise(child, opts.timeout, &signals, sandboxed, watched);
    if let Some(terminal) = terminal {
        terminal.finish();
    }
    let kept = service.map(NetworkService::finish).unwrap_or_default();
    let ended = ended?;
    // A helper that never became the command says why on its channel (never the command's).
    if matches!(ended.exit_code, Some(125..=127))
        && let Some(failure) = channel.as_mut().and_then(StatusChannel::failure)
    {
        return Err(with_hidden_tools(
            sandbox::failure_error(failure),
            planned,
            &opts.command[0],
        ));
    }
    let denied = crate::services::network::denied(&kept.lookups, &kept.refused, &allow);
    let network = NetworkReport {
        refused: kept.refused,
        denied,
        ..planned.network.clone()
    };
    let ran = ran_of(opts, planned, started_at_ms);
    Ok(Exited {
        ended,
        network,
        ran,
    })
}

/// What the run ran, where (relative to the isolation's root) and when.
fn ran_of(opts: &RunOptions, planned: &Planned, started_at_ms: u64) -> Ran {
    let tree = &planned.claimed.target.isolation.tree;
    let cwd = match planned.workdir.strip_prefix(tree) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ran {
        argv: Some(crate::base::argv::Argv(opts.command.clone())),
        cwd: Some(cwd),
        profile: opts
            .sandbox
            .as_ref()
            .and_then(|s| s.profile.as_ref())
            .map(|p| p.name.clone()),
        timeout_ms: opts
            .timeout
            .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        started_at_ms: Some(started_at_ms),
        ended_at_ms: Some(crate::base::fsutil::now_ms()),
    }
}

/// How long each look at the command waits.
const TICK: Duration = Duration::from_millis(20);

/// The command's exit code and signal once it ended (`None`: not yet): from its process, or
/// the helper's word (its process ends later, once the kernel has torn its namespaces down).
fn look(
    rx: &std::sync::mpsc::Receiver<std::io::Result<std::process::ExitStatus>>,
    channel: Option<&mut StatusChannel>,
) -> Result<Option<(Option<i32>, Option<i32>)>> {
    use std::os::unix::process::ExitStatusExt;
    use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
    let waited = match channel {
        Some(channel) => match channel.ended_within(TICK) {
            sandbox::Heard::Ended(code) => return Ok(Some((Some(code), None))),
            sandbox::Heard::Nothing => rx.try_recv().map_err(|e| e == TryRecvError::Empty),
            sandbox::Heard::Closed => rx
                .recv_timeout(TICK)
                .map_err(|e| e == RecvTimeoutError::Timeout),
        },
        None => rx
            .recv_timeout(TICK)
            .map_err(|e| e == RecvTimeoutError::Timeout),
    };
    match waited {
        Ok(status) => {
            let status = status.map_err(|e| Error::io("cannot wait for the command", e))?;
            Ok(Some((status.code(), status.signal())))
        }
        Err(true) => Ok(None),
        Err(false) => Err(Error::internal("lost track of the command")),
    }
}

/// Waits for the command, passing signals to its process group (and its terminal's foreground
/// group); at the timeout SIGTERM, then SIGKILL after [`KILL_GRACE`]. A cancelled command's
/// group is killed once it has ended, so nothing it started outlives the run.
fn supervise(
    mut child: Child,
    timeout: Option<Duration>,
    signals: &Signals,
    sandboxed: bool,
    (mut channel, terminal): (Option<&mut StatusChannel>, Option<&CommandTerminal>),
) -> Result<Ended> {
    let group = rustix::process::Pid::from_raw(child.id() as i32)
        .ok_or_else(|| Error::internal("a child without a pid"))?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let kill = |signal: rustix::process::Signal| {
        let _ = rustix::process::kill_process_group(group, signal);
        // In the sandbox, the command leads a session of its own, outside the helper's group.
        if let Some(foreground) = terminal.and_then(CommandTerminal::foreground)
            && foreground != group
        {
            let _ = rustix::process::kill_process_group(foreground, signal);
        }
    };
    let deadline = timeout.map(|t| Instant::now() + t);
    let mut forwarded = None;
    let mut timed_out = false;
    let mut kill_at: Option<Instant> = None;
    let (exit_code, signal) = loop {
        if let Some(ended) = look(&rx, channel.as_deref_mut())? {
            break ended;
        }
        if let Some(signal) = signals.take() {
            forwarded = Some(signal);
            if let Some(sig) = rustix::process::Signal::from_named_raw(signal) {
                kill(sig);
            }
        }
        if deadline.is_some_and(|d| Instant::now() >= d) && !timed_out {
            timed_out = true;
            kill(rustix::process::Signal::TERM);
            // A stopped command takes its SIGTERM once continued (as timeout(1) does).
            kill(rustix::process::Signal::CONT);
            kill_at = Some(Instant::now() + KILL_GRACE);
        }
        if kill_at.is_some_and(|k| Instant::now() >= k) {
            if sandboxed {
                // The helper ends the whole sandbox and waits until nothing in it runs.
                let _ = rustix::process::kill_process(group, rustix::process::Signal::USR1);
            } else {
                kill(rustix::process::Signal::KILL);
            }
            kill_at = None;
        }
    };
    if forwarded.is_some() || timed_out {
        // Cancelled: nothing it started may outlive the run.
        kill(rustix::process::Signal::KILL);
    }
    Ok(Ended {
        exit_code,
        signal,
        forwarded,
        timed_out,
    })
}

/// A program not found in the sandbox, with where it (or its interpreter) is hidden.
fn with_hidden_tools(err: Error, planned: &Planned, program: &OsStr) -> Error {
    match (err, planned.spec.as_ref()) {
        (Error::CommandNotFound { program: name, .. }, Some(spec)) => {
            let path = command_path(&planned.env);
            let hidden = crate::services::hidden_tools::find(spec, program, path.as_deref());
            Error::CommandNotFound {
                program: name,
                hidden: hidden.into_iter().map(hidden_tool).collect(),
            }
        }
        (err, _) => err,
    }
}

fn hidden_tool(hidden: crate::services::hidden_paths::HiddenPath) -> HiddenTool {
    HiddenTool {
        under: hidden.under.unwrap_or_default(),
        path: hidden.path,
        allow_read: hidden.allow_path,
    }
}
