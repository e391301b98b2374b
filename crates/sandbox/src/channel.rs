//! How the helper talks to `run`: a unix socket pair whose helper end the command never holds.
//! The helper inherits its end across its own exec and marks it close-on-exec again at once,
//! so the command's exec closes it; no file the command could write carries the helper's word,
//! and a command that exits 125 is only ever its own exit 125.
//!
//! One message per datagram, helper to `run`: `F` and a [`HelperFailure`] as JSON; `T` with
//! the master of the command's pseudo-terminal attached (`SCM_RIGHTS`), which `run` answers
//! with `G` once it relays that terminal; `E` and the command's exit code once init is reaped
//! (nothing in the sandbox runs any more), before the helper's own exit tears its namespaces
//! down.

use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::process::Command;
use std::time::Duration;

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

use super::pair::HelperPair;
use super::status::{HelperCode, HelperFailure};
use super::sys;

const FAILURE: u8 = b'F';
const TERMINAL: u8 = b'T';
const GO: u8 = b'G';
const ENDED: u8 = b'E';

/// The largest message the helper sends (a failure's JSON).
const MAX_MESSAGE: usize = 64 * 1024;

/// `run`'s end of the channel to the sandbox helper.
#[derive(Debug)]
pub struct StatusChannel {
    pair: HelperPair,
    /// A failure read while waiting for something else.
    failure: Option<HelperFailure>,
    /// The helper and all it started let go of their end: nothing more will be said.
    closed: bool,
}

/// What the helper said of the command's end, so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Heard {
    /// Nothing yet.
    Nothing,
    /// The command exited with this code and nothing in the sandbox runs any more.
    Ended(i32),
    /// Nothing, and nothing will be: the channel is closed.
    Closed,
}

impl StatusChannel {
    /// A new channel; both ends are close-on-exec.
    pub fn new() -> io::Result<StatusChannel> {
        Ok(StatusChannel {
            pair: HelperPair::new()?,
            failure: None,
            closed: false,
        })
    }

    /// Hands the helper's end to `command` (the helper): `--status-fd N`, kept open across
    /// the helper's exec only.
    pub fn pass_to(&self, command: &mut Command) {
        self.pair.pass_to(command, "--status-fd");
    }

    /// Once the helper is started: closes `run`'s copy of the helper's end, so that the
    /// channel ends when the helper and everything it started have let go of it.
    pub fn spawned(&mut self) {
        self.pair.spawned();
    }

    /// Waits for the master of the command's terminal. `None` when the helper ended (or
    /// failed) without sending one; its failure is kept for [`StatusChannel::failure`].
    pub fn terminal(&mut self) -> Option<OwnedFd> {
        loop {
            let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
            let mut control = RecvAncillaryBuffer::new(&mut space);
            let mut buf = vec![0u8; MAX_MESSAGE];
            let received = rustix::net::recvmsg(
                &self.pair.ours,
                &mut [IoSliceMut::new(&mut buf)],
                &mut control,
                RecvFlags::CMSG_CLOEXEC,
            );
            let n = match received {
                Ok(msg) => msg.bytes,
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return None,
            };
            let mut fds: Vec<OwnedFd> = Vec::new();
            for message in control.drain() {
                if let RecvAncillaryMessage::ScmRights(rights) = message {
                    fds.extend(rights);
                }
            }
            match buf.first().filter(|_| n > 0) {
                None => return None,
                Some(&TERMINAL) if !fds.is_empty() => return fds.into_iter().next(),
                Some(&FAILURE) => self.failure = parse(&buf[1..n]),
                Some(_) => {}
            }
        }
    }

    /// Tells the helper that its terminal is relayed: the command may start.
    pub fn go(&self) {
        let _ = rustix::net::send(&self.pair.ours, &[GO], SendFlags::NOSIGNAL);
    }

    /// Waits up to `wait` (under a second) for the helper to say that the command ended; a
    /// failure read meanwhile is kept for [`StatusChannel::failure`].
    pub fn ended_within(&mut self, wait: Duration) -> Heard {
        if self.closed {
            return Heard::Closed;
        }
        let mut polled = [rustix::event::PollFd::new(
            &self.pair.ours,
            rustix::event::PollFlags::IN,
        )];
        let timeout = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: wait.subsec_nanos().into(),
        };
        let _ = rustix::event::poll(&mut polled, Some(&timeout));
        let mut buf = vec![0u8; MAX_MESSAGE];
        loop {
            match rustix::net::recv(&self.pair.ours, &mut buf, RecvFlags::DONTWAIT) {
                Ok((5.., _)) if buf[0] == ENDED => {
                    let code: [u8; 4] = buf[1..5].try_into().unwrap_or_default();
                    return Heard::Ended(i32::from_ne_bytes(code));
                }
                Ok((n @ 1.., _)) if buf[0] == FAILURE => {
                    self.failure = parse(&buf[1..n.min(buf.len())]).or(self.failure.take());
                }
                Ok((1.., _)) => {}
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::AGAIN) => return Heard::Nothing,
                Ok(_) | Err(_) => {
                    self.closed = true;
                    return Heard::Closed;
                }
            }
        }
    }

    /// Once the helper has ended: the failure it reported, if it did not become the command.
    pub fn failure(&mut self) -> Option<HelperFailure> {
        let mut buf = vec![0u8; MAX_MESSAGE];
        loop {
            match rustix::net::recv(&self.pair.ours, &mut buf, RecvFlags::DONTWAIT) {
                Ok((n @ 1.., _)) if buf[0] == FAILURE => {
                    self.failure = parse(&buf[1..n.min(buf.len())]).or(self.failure.take());
                }
                Ok((1.., _)) => {}
                Err(rustix::io::Errno::INTR) => {}
                Ok(_) | Err(_) => break,
            }
        }
        self.failure.take()
    }
}

fn parse(bytes: &[u8]) -> Option<HelperFailure> {
    serde_json::from_slice(bytes).ok()
}

/// The helper's end of the channel.
#[derive(Debug)]
pub struct Reporter {
    fd: Option<OwnedFd>,
}

impl Reporter {
    /// Takes the inherited descriptor `raw` and marks it close-on-exec, so that the command
    /// never inherits it. A descriptor that is not open gives a reporter that reports nothing.
    pub fn adopt(raw: i32) -> Reporter {
        Reporter {
            fd: sys::adopt_fd(raw).ok(),
        }
    }

    /// Reports why the helper did not become the command; returns the status to exit with.
    pub fn fail(&self, code: HelperCode, message: String, program: &str) -> i32 {
        let failure = HelperFailure {
            code,
            message,
            program: program.into(),
        };
        if let (Some(fd), Ok(json)) = (&self.fd, serde_json::to_vec(&failure)) {
            let mut message = vec![FAILURE];
            message.extend_from_slice(&json[..json.len().min(MAX_MESSAGE - 1)]);
            let _ = rustix::net::send(fd, &message, SendFlags::NOSIGNAL);
        }
        code.exit_status()
    }

    /// Says that the command exited with `code` and that nothing in the sandbox runs any more
    /// (init is reaped): `run` need not wait for the helper's exit.
    pub(super) fn ended(&self, code: i32) {
        if let Some(fd) = &self.fd {
            let mut message = vec![ENDED];
            message.extend_from_slice(&code.to_ne_bytes());
            let _ = rustix::net::send(fd, &message, SendFlags::NOSIGNAL);
        }
    }

    /// Sends the master of the command's terminal and waits until `run` relays it.
    pub(super) fn send_terminal(&self, master: &OwnedFd) -> io::Result<()> {
        let fd = self
            .fd
            .as_ref()
            .ok_or_else(|| io::Error::other("no channel to run"))?;
        let fds = [master.as_fd()];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        control.push(SendAncillaryMessage::ScmRights(&fds));
        rustix::net::sendmsg(
            fd,
            &[IoSlice::new(&[TERMINAL])],
            &mut control,
            SendFlags::NOSIGNAL,
        )?;
        let mut answer = [0u8; 1];
        loop {
            match rustix::net::recv(fd, &mut answer, RecvFlags::empty()) {
                Ok((1.., _)) if answer[0] == GO => return Ok(()),
                Ok((1.., _)) => {}
                Ok(_) => return Err(io::Error::other("run is gone")),
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}
