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

/// Whether a recorded owner is still running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Liveness {
    /// Running, with the recorded start identity.
    Alive,
    /// Gone, a zombie, or the pid now belongs to another process.
    Dead,
    /// Recorded on another host: this one cannot tell.
    Foreign,
    /// Nothing to compare against (no start identity recorded).
    Unknown,
}

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

/// This host's name (from `uname`).
pub fn hostname() -> String {
    let uname = rustix::system::uname();
    uname.nodename().to_string_lossy().into_owned()
}

/// Field 22 of `/proc/<pid>/stat` (start time in clock ticks since boot); `None` for a process
/// that does not exist or is a zombie (it has exited; only its exit status is left).
pub(crate) fn start_identity(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state); field 22 is at index 19.
    if fields.first() == Some(&"Z") || fields.first() == Some(&"X") {
        return None;
    }
    let ticks: u64 = fields.get(19)?.parse().ok()?;
    Some(format!("linux-proc-start-ticks:{ticks}"))
}

#[cfg(test)]
mod tests {
    use super::*;

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
