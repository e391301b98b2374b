//! A socket pair between `run` and the helper it starts: `run` keeps its end, the helper
//! inherits the other across its own exec only (named on its command line by a flag).

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::Command;

use rustix::net::{AddressFamily, SocketFlags, SocketType};

use super::sys;

/// `run`'s end of a pair, and the helper's until the helper is started.
#[derive(Debug)]
pub(crate) struct HelperPair {
    pub(crate) ours: OwnedFd,
    theirs: Option<OwnedFd>,
}

impl HelperPair {
    /// A new pair of sequenced-packet sockets; both ends are close-on-exec.
    pub(crate) fn new() -> io::Result<HelperPair> {
        let (ours, theirs) = rustix::net::socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )?;
        Ok(HelperPair {
            ours,
            theirs: Some(theirs),
        })
    }

    /// Hands the helper's end to `command` (the helper): `FLAG N`, kept open across the
    /// helper's exec only.
    pub(crate) fn pass_to(&self, command: &mut Command, flag: &str) {
        if let Some(theirs) = &self.theirs {
            command.arg(flag).arg(theirs.as_raw_fd().to_string());
            sys::keep_open_on_exec(command, theirs.as_raw_fd());
        }
    }

    /// Once the helper is started: closes `run`'s copy of the helper's end, so that the pair
    /// ends when the helper and everything it started have let go of it.
    pub(crate) fn spawned(&mut self) {
        self.theirs = None;
    }

    /// The helper's end, taken (a test plays the helper itself).
    #[cfg(test)]
    pub(crate) fn take_theirs(&mut self) -> Option<OwnedFd> {
        self.theirs.take()
    }
}
