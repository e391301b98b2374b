//! Who owns a session or an in-flight bind: pid, start identity and host, and whether it lives.

use serde::{Deserialize, Serialize};

/// A process that owns a session (or runs a bind), recorded so that its death can be proven.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// Its process id.
    pub pid: u32,
    /// `linux-proc-start-ticks:<n>`: tells a live owner from a reused pid.
    pub start_identity: Option<String>,
    /// The host it runs on.
    pub hostname: String,
}

/// An owner as every command's JSON shows it: the record and whether it runs.
#[derive(Debug, Clone, Serialize)]
pub struct OwnerView {
    /// The recorded owner.
    #[serde(flatten)]
    pub owner: Owner,
    /// Whether it still runs.
    pub liveness: OwnerLiveness,
    /// Its command name (`/proc/<pid>/comm`) while it runs on this host, else `null`.
    pub name: Option<String>,
}

impl OwnerView {
    /// The view of a recorded owner (`None` for an ownerless session).
    pub fn of(owner: Option<&Owner>) -> Option<OwnerView> {
        owner.map(|owner| {
            let liveness = owner.liveness();
            OwnerView {
                name: (liveness == OwnerLiveness::Alive)
                    .then(|| command_name(owner.pid))
                    .flatten(),
                liveness,
                owner: owner.clone(),
            }
        })
    }

    /// `pid <n> (<name>) on <host>`, for people.
    pub fn describe(&self) -> String {
        match &self.name {
            Some(name) => format!("pid {} ({name}) on {}", self.owner.pid, self.owner.hostname),
            None => self.owner.describe(),
        }
    }
}

/// Whether a recorded owner still runs (as commands report it, too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OwnerLiveness {
    /// Running, with the recorded start identity.
    Alive,
    /// Gone, a zombie, or the pid now belongs to another process.
    Dead,
    /// Recorded on another host: this one cannot tell.
    Foreign,
    /// No start identity to compare.
    Unknown,
}

/// How long a dead bind's or spare build's tree is left before recovery removes it (a git it
/// started may still be writing it); also `sweep`'s default grace.
pub(crate) const GRACE: std::time::Duration = std::time::Duration::from_secs(600);

/// Set for a run's command (see `run`): an a3s-iso it starts may be in the run's PID namespace.
const INSIDE_RUN: &str = "A3S_ISO_RUN_ID";

/// Whether this process can tell a dead process of this host from a live one: it reads its own
/// start identity, and no run's command started it (in the sandbox's PID namespace, every pid
/// of the host would look dead). Nothing is removed for a dead owner otherwise.
pub(crate) fn sees_host_processes() -> bool {
    start_identity(std::process::id()).is_some() && std::env::var_os(INSIDE_RUN).is_none()
}

pub(crate) use OwnerLiveness as Liveness;

impl Owner {
    /// The owner record for a process of this host, if it is running.
    pub(crate) fn of_pid(pid: u32) -> Option<Owner> {
        let start_identity = start_identity(pid)?;
        Some(Owner {
            pid,
            start_identity: Some(start_identity),
            hostname: hostname(),
        })
    }

    /// The owner record of a3s-iso's own process.
    pub(crate) fn this_process() -> Owner {
        Owner::of_pid(std::process::id()).unwrap_or_else(|| Owner {
            pid: std::process::id(),
            start_identity: None,
            hostname: hostname(),
        })
    }

    /// Whether the owner still runs; only a process of this host can be told.
    pub(crate) fn liveness(&self) -> Liveness {
        if self.hostname != hostname() {
            return Liveness::Foreign;
        }
        let Some(recorded) = &self.start_identity else {
            return Liveness::Unknown;
        };
        match start_identity(self.pid) {
            Some(current) if &current == recorded => Liveness::Alive,
            _ => Liveness::Dead,
        }
    }

    /// `pid <n> on <host>`, for messages.
    pub fn describe(&self) -> String {
        format!("pid {} on {}", self.pid, self.hostname)
    }
}

/// The parent of this process: the shell or harness that called a3s-iso.
pub(crate) fn parent_pid() -> u32 {
    rustix::process::getppid()
        .map(|p| p.as_raw_nonzero().get() as u32)
        .unwrap_or(1)
}

/// The process that should own what a command started by `pid`'s child binds: `pid`, or past the
/// `sh -c …` shells that exit once their string is done (a harness sends each command through
/// a fresh one) the first other process, never pid 1 (init outlives everything).
pub(crate) fn long_lived_ancestor(pid: u32) -> u32 {
    let mut current = pid;
    // A bound on the walk: shells nested deeper than this are not a harness's doing.
    for _ in 0..16 {
        let Some(parent) = parent_of(current) else {
            break;
        };
        if parent <= 1 || !runs_command_string(current) {
            break;
        }
        current = parent;
    }
    current
}

/// The Claude Code process this one was started under (a hook runs as its grandchild, through
/// a shell), if an ancestor is one.
pub(crate) fn claude_ancestor() -> Option<u32> {
    let mut pid = parent_pid();
    // A bound on the walk, as for shells.
    for _ in 0..32 {
        if pid <= 1 {
            return None;
        }
        if runs_claude(pid) {
            return Some(pid);
        }
        pid = parent_of(pid)?;
    }
    None
}

/// The process a Claude Code hook acts for: the Claude Code it runs under, else (as `bind`
/// picks an owner) the long-lived process that called it, else a3s-iso itself.
pub(crate) fn hook_process() -> Owner {
    claude_ancestor()
        .and_then(Owner::of_pid)
        .or_else(|| Owner::of_pid(long_lived_ancestor(parent_pid())))
        .unwrap_or_else(Owner::this_process)
}

/// Whether `pid` is Claude Code: named `claude` (its command name, or its `argv[0]`: the
/// native build runs from a file named after its version, through a link named `claude`), or
/// a JavaScript runtime whose script (one of its first arguments) has `claude` in its path.
fn runs_claude(pid: u32) -> bool {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let mut args = cmdline.split(|b| *b == 0);
    let program = args.next().unwrap_or_default();
    let program = program.rsplit(|b| *b == b'/').next().unwrap_or(program);
    match command_name(pid).as_deref() {
        Some("claude") => true,
        _ if program == b"claude" => true,
        Some("node" | "bun") => args
            .take(3)
            .any(|arg| arg.windows(6).any(|w| w == b"claude")),
        _ => false,
    }
}

/// Whether `pid` is a shell started with `-c` (and without `-i`): it runs one string and exits.
fn runs_command_string(pid: u32) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let mut args = cmdline.split(|b| *b == 0).filter(|a| !a.is_empty());
    let Some(program) = args.next() else {
        return false;
    };
    let name = program.rsplit(|b| *b == b'/').next().unwrap_or(program);
    let name = name.strip_prefix(b"-").unwrap_or(name);
    const SHELLS: &[&[u8]] = &[
        b"sh", b"bash", b"dash", b"zsh", b"ksh", b"mksh", b"ash", b"fish",
    ];
    if !SHELLS.contains(&name) {
        return false;
    }
    let options: Vec<&[u8]> = args
        .take_while(|a| a.starts_with(b"-") && *a != b"--")
        .filter(|a| !a.starts_with(b"--"))
        .collect();
    let has = |flag: u8| options.iter().any(|o| o[1..].contains(&flag));
    has(b'c') && !has(b'i')
}

/// Field 4 of `/proc/<pid>/stat`: the parent's pid.
fn parent_of(pid: u32) -> Option<u32> {
    stat_fields(pid)?.get(1)?.parse().ok()
}

/// The fields of `/proc/<pid>/stat` from field 3 (state) on: the command name (field 2) may
/// hold spaces and parentheses, so they resume after the last ')'.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    Some(rest.split_whitespace().map(str::to_string).collect())
}

/// A running process's command name, for messages.
pub(crate) fn command_name(pid: u32) -> Option<String> {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(comm.trim_end().to_string()).filter(|c| !c.is_empty())
}

/// This host's name (from `uname`).
pub fn hostname() -> String {
    let uname = rustix::system::uname();
    uname.nodename().to_string_lossy().into_owned()
}

/// Field 22 of `/proc/<pid>/stat` (start time in clock ticks since boot); `None` for a process
/// that does not exist or is a zombie (it has exited; only its exit status is left).
pub(crate) fn start_identity(pid: u32) -> Option<String> {
    let fields = stat_fields(pid)?;
    if matches!(fields.first().map(String::as_str), Some("Z" | "X")) {
        return None;
    }
    let ticks: u64 = fields.get(19)?.parse().ok()?;
    Some(format!("linux-proc-start-ticks:{ticks}"))
}

#[cfg(test)]
mod tests {
    use crate::base::owner::*;

    #[test]
    fn this_process_is_alive() {
        let me = Owner::this_process();
        assert_eq!(me.liveness(), Liveness::Alive);
        let reused = Owner {
            start_identity: Some("linux-proc-start-ticks:1".into()),
            ..me.clone()
        };
        assert_eq!(reused.liveness(), Liveness::Dead);
        let foreign = Owner {
            hostname: format!("{}-elsewhere", me.hostname),
            ..me
        };
        assert_eq!(foreign.liveness(), Liveness::Foreign);
    }
}
