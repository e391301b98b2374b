//! The socket factory: how `run` gets TCP sockets that live in the sandbox's network
//! namespace. A socket belongs to the namespace it was created in, whatever process holds it
//! later; so the helper (which stays in that namespace for the whole run) creates them and
//! passes them to `run` over a unix socket pair with `SCM_RIGHTS`. `run` then accepts on the
//! proxy's listener and connects to published ports inside, while its own connections out
//! are made from the host's namespace. The command never holds the helper's end (it is
//! close-on-exec, and init closes its copy), and a socket made there gives no more than the
//! command could make itself.
//!
//! Messages, one per datagram: helper to `run`, `L` with the proxy's listener (bound and
//! listening on the sandbox's loopback, sent before the command starts); `D` with the name
//! responder's UDP socket (bound on the sandbox's `127.0.0.1:53`, sent before the listener);
//! `run` to helper, `S`, answered by `S` with a fresh, unbound TCP/IPv4 socket.

use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::process::Command;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags};
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};

use super::pair::HelperPair;
use super::sys;

const LISTENER: u8 = b'L';
const SOCKET: u8 = b'S';
const DNS: u8 = b'D';

/// Where the name responder listens inside: the address `/etc/resolv.conf` names there.
pub const DNS_ADDRESS: ([u8; 4], u16) = ([127, 0, 0, 1], 53);

/// `run`'s end of the factory.
#[derive(Debug)]
pub struct SocketFactory {
    pair: HelperPair,
    /// What came while something else was awaited (a published port's first connection can
    /// ask for a socket before the proxy takes its listener): each with its kind, kept for
    /// whoever waits for it.
    early: Vec<(u8, OwnedFd)>,
}

impl SocketFactory {
    /// A new factory channel; both ends are close-on-exec.
    pub fn new() -> io::Result<SocketFactory> {
        Ok(SocketFactory {
            pair: HelperPair::new()?,
            early: Vec::new(),
        })
    }

    /// Hands the helper's end to `command` (the helper): `--socket-fd N`, kept open across
    /// the helper's exec only.
    pub fn pass_to(&self, command: &mut Command) {
        self.pair.pass_to(command, "--socket-fd");
    }

    /// Once the helper is started: closes `run`'s copy of its end, so that the channel ends
    /// with the helper.
    pub fn spawned(&mut self) {
        self.pair.spawned();
    }

    /// Waits for the proxy's listener; an error when the helper ended without sending it.
    pub fn listener(&mut self) -> io::Result<OwnedFd> {
        self.wait_for(LISTENER)
    }

    /// Waits for the name responder's UDP socket; an error when the helper ended without
    /// sending it.
    pub fn dns_socket(&mut self) -> io::Result<OwnedFd> {
        self.wait_for(DNS)
    }

    /// A fresh TCP socket in the sandbox's network namespace.
    pub fn socket(&mut self) -> io::Result<OwnedFd> {
        rustix::net::send(&self.pair.ours, &[SOCKET], SendFlags::NOSIGNAL)?;
        self.wait_for(SOCKET)
    }

    /// The next descriptor of `kind`: one that came early, or the next to come (keeping
    /// those of other kinds that come first).
    fn wait_for(&mut self, kind: u8) -> io::Result<OwnedFd> {
        if let Some(at) = self.early.iter().position(|(k, _)| *k == kind) {
            return Ok(self.early.swap_remove(at).1);
        }
        loop {
            let (received, fd) = receive(&self.pair.ours)?;
            if received == kind {
                return Ok(fd);
            }
            if matches!(received, LISTENER | DNS | SOCKET) {
                self.early.push((received, fd));
            }
        }
    }
}

/// Receives the next message that carries a descriptor: its kind and the descriptor.
fn receive(fd: &OwnedFd) -> io::Result<(u8, OwnedFd)> {
    loop {
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let mut buf = [0u8; 1];
        let received = rustix::net::recvmsg(
            fd,
            &mut [IoSliceMut::new(&mut buf)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        );
        let n = match received {
            Ok(msg) => msg.bytes,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        };
        if n == 0 {
            return Err(io::Error::other("the sandbox helper has ended"));
        }
        let mut fds: Vec<OwnedFd> = Vec::new();
        for message in control.drain() {
            if let RecvAncillaryMessage::ScmRights(rights) = message {
                fds.extend(rights);
            }
        }
        if let Some(received) = fds.into_iter().next() {
            return Ok((buf[0], received));
        }
    }
}

fn send_fd(fd: &OwnedFd, kind: u8, socket: &OwnedFd) -> io::Result<()> {
    let fds = [socket.as_fd()];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    control.push(SendAncillaryMessage::ScmRights(&fds));
    rustix::net::sendmsg(
        fd,
        &[IoSlice::new(&[kind])],
        &mut control,
        SendFlags::NOSIGNAL,
    )?;
    Ok(())
}

/// The helper's end of the factory.
#[derive(Debug)]
pub struct SocketServer {
    fd: OwnedFd,
    /// `run` has let go of its end: nothing more to serve.
    closed: std::cell::Cell<bool>,
}

impl SocketServer {
    /// Takes the inherited descriptor `raw` and marks it close-on-exec.
    pub fn adopt(raw: i32) -> Option<SocketServer> {
        sys::adopt_fd(raw).ok().map(|fd| SocketServer {
            fd,
            closed: std::cell::Cell::new(false),
        })
    }

    /// Binds and listens on `127.0.0.1:port` in this (the sandbox's) network namespace and
    /// sends the listener to `run`; the helper keeps no copy.
    pub(super) fn send_listener(&self, port: u16) -> io::Result<()> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
        send_fd(&self.fd, LISTENER, &OwnedFd::from(listener))
    }

    /// Binds a UDP socket on [`DNS_ADDRESS`] in this (the sandbox's) network namespace (the
    /// helper may bind port 53 there: it holds every capability in the namespace's owner)
    /// and sends it to `run`; the helper keeps no copy.
    pub(super) fn send_dns(&self) -> io::Result<()> {
        let (ip, port) = DNS_ADDRESS;
        let socket = std::net::UdpSocket::bind((std::net::Ipv4Addr::from(ip), port))?;
        send_fd(&self.fd, DNS, &OwnedFd::from(socket))
    }

    /// Answers `run`'s requests for up to `wait`, or until `ended` is readable; returns at
    /// once when there is none.
    pub(super) fn serve_for(&self, wait: Duration, ended: Option<&OwnedFd>) {
        if self.closed.get() {
            wait_for(ended, wait);
            return;
        }
        let mut polled = vec![PollFd::new(&self.fd, PollFlags::IN)];
        polled.extend(ended.map(|fd| PollFd::new(fd, PollFlags::IN)));
        let ready = rustix::event::poll(&mut polled, Some(&timespec(wait)));
        if !matches!(ready, Ok(1..)) || !polled[0].revents().contains(PollFlags::IN) {
            return;
        }
        let mut buf = [0u8; 1];
        match rustix::net::recv(&self.fd, &mut buf, RecvFlags::DONTWAIT) {
            Ok((1.., _)) if buf[0] == SOCKET => {
                // On failure the request goes unanswered and `run` sees the channel end.
                match new_socket() {
                    Ok(socket) => {
                        let _ = send_fd(&self.fd, SOCKET, &socket);
                    }
                    Err(_) => self.closed.set(true),
                }
            }
            Ok((1.., _)) | Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => {}
            Ok(_) | Err(_) => self.closed.set(true),
        }
    }
}

/// Sleeps for `wait`, or until `ended` (a process's pidfd) is readable.
pub(super) fn wait_for(ended: Option<&OwnedFd>, wait: Duration) {
    match ended {
        Some(fd) => {
            let mut polled = [PollFd::new(fd, PollFlags::IN)];
            let _ = rustix::event::poll(&mut polled, Some(&timespec(wait)));
        }
        None => std::thread::sleep(wait),
    }
}

/// `wait` (under a second) as poll's timeout.
fn timespec(wait: Duration) -> rustix::event::Timespec {
    rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: wait.subsec_nanos().into(),
    }
}

fn new_socket() -> io::Result<OwnedFd> {
    Ok(rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_asked_for_before_the_listener_leaves_the_listener_for_the_proxy() {
        let mut factory = SocketFactory::new().unwrap();
        // Nothing here waits forever: a lost message fails the test.
        rustix::net::sockopt::set_socket_timeout(
            &factory.pair.ours,
            rustix::net::sockopt::Timeout::Recv,
            Some(Duration::from_secs(5)),
        )
        .unwrap();
        let server = SocketServer {
            fd: factory.pair.take_theirs().unwrap(),
            closed: std::cell::Cell::new(false),
        };
        // The helper sends the listener first; a published port's connection asks for a socket
        // before the proxy has taken it.
        server.send_listener(0).unwrap();
        let helper = std::thread::spawn(move || {
            for _ in 0..500 {
                if server.closed.get() {
                    break;
                }
                server.serve_for(Duration::from_millis(10), None);
            }
        });
        let socket = factory.socket().unwrap();
        let listener = std::net::TcpListener::from(factory.listener().unwrap());
        assert!(listener.local_addr().unwrap().ip().is_loopback());
        let socket = std::net::TcpStream::from(socket);
        assert!(socket.local_addr().is_ok());
        drop(factory);
        helper.join().unwrap();
    }
}
