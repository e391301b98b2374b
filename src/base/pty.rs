//! The pseudo-terminal a `run` command gets when a3s-iso's stdin is a terminal (and, in the
//! sandbox, when only its output is one).
//!
//! Interactive: the command's stdin, stdout and stderr are the slave of a new pty, its
//! controlling terminal in a session of its own: Ctrl-C reaches it through its own line
//! discipline, and nothing it does to its terminal (`TIOCSTI` included) reaches the caller's.
//! Meanwhile the caller's terminal is raw (until [`RawMode`] is dropped) and a relay thread
//! copies bytes both ways and passes window-size changes on.
//!
//! Output only (sandboxed, stdin not a terminal): the relay copies what the command writes to
//! the caller's terminal, whose settings are never touched. A sandboxed command's pty lives in
//! the sandbox's own `devpts`: the helper makes it and hands its master over.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use rustix::process::Pid;
use rustix::pty::OpenptFlags;
use rustix::termios::{OptionalActions, Termios};
use signal_hook::SigId;

/// Once the command has ended: how long the relay waits for more output before it stops.
const DRAIN_QUIET: Duration = Duration::from_millis(100);

/// Once the command has ended: the longest the relay drains (what it left may keep writing).
const DRAIN_MAX: Duration = Duration::from_secs(1);

/// How long a blocked write to the caller's terminal may wait before the output is dropped.
const WRITE_PATIENCE: Duration = Duration::from_secs(1);

/// Whether a command should get a pty: a3s-iso's stdin is a terminal, and a3s-iso is not in
/// the background of it (a background job must not take the terminal's input or settings).
pub(crate) fn stdin_is_terminal() -> bool {
    let stdin = rustix::stdio::stdin();
    if !rustix::termios::isatty(stdin) {
        return false;
    }
    match rustix::termios::tcgetpgrp(stdin) {
        Ok(foreground) => foreground == rustix::process::getpgrp(),
        // Not a3s-iso's controlling terminal: no job control to respect.
        Err(_) => true,
    }
}

/// The caller's terminal settings, put back when this is dropped.
struct RawMode {
    saved: Termios,
}

impl RawMode {
    /// Puts the caller's terminal (stdin) in raw mode; returns the settings it had.
    fn enter() -> io::Result<RawMode> {
        let stdin = rustix::stdio::stdin();
        let saved = rustix::termios::tcgetattr(stdin)?;
        let mut raw = saved.clone();
        raw.make_raw();
        rustix::termios::tcsetattr(stdin, OptionalActions::Now, &raw)?;
        Ok(RawMode { saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        // `Now`, not `Drain`: restoring must never wait for a reader of the terminal.
        let _ =
            rustix::termios::tcsetattr(rustix::stdio::stdin(), OptionalActions::Now, &self.saved);
    }
}

/// One of a3s-iso's own standard streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Stdin,
    Stdout,
    Stderr,
}

impl Stream {
    fn fd(self) -> BorrowedFd<'static> {
        match self {
            Stream::Stdin => rustix::stdio::stdin(),
            Stream::Stdout => rustix::stdio::stdout(),
            Stream::Stderr => rustix::stdio::stderr(),
        }
    }

    /// Whether this stream is a terminal.
    pub(crate) fn is_terminal(self) -> bool {
        rustix::termios::isatty(self.fd())
    }
}

/// How the command uses its pty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    /// Both ways: the caller's stdin (a terminal, raw meanwhile) in, the output to `to`.
    Interactive { to: Stream },
    /// Output only, to `to` (a terminal the caller's settings of which stay as they are).
    Output { to: Stream },
}

/// A pty for the command and the relay between it and the caller's terminal. Dropping it drains
/// what the command left, stops the relay and only then restores the caller's terminal.
pub(crate) struct CommandTerminal {
    master: Arc<OwnedFd>,
    /// a3s-iso's copy of the slave, closed once the command has started (so that the relay
    /// sees the command's side go).
    slave: Option<OwnedFd>,
    /// Wakes the relay thread up.
    wake: OwnedFd,
    stop: Arc<AtomicBool>,
    signals: Vec<SigId>,
    thread: Option<JoinHandle<()>>,
    /// `None` for output only.
    raw: Option<RawMode>,
}

impl CommandTerminal {
    /// Opens and relays a pty pair on the host for an interactive command, its output to `to`.
    pub(crate) fn open(to: Stream) -> io::Result<CommandTerminal> {
        let flags = OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC;
        let master = rustix::pty::openpt(flags)?;
        rustix::pty::grantpt(&master)?;
        rustix::pty::unlockpt(&master)?;
        let slave = open_slave(&master, flags)?;
        CommandTerminal::relay(master, Some(slave), Use::Interactive { to })
    }

    /// Relays the pty whose master is `master`, its slave set as the caller's terminal (without
    /// output processing, for output only: the caller's terminal does that).
    pub(crate) fn relay(
        master: OwnedFd,
        slave: Option<OwnedFd>,
        usage: Use,
    ) -> io::Result<CommandTerminal> {
        let (outer, to) = match usage {
            Use::Interactive { to } => (Stream::Stdin, to),
            Use::Output { to } => (to, to),
        };
        // Through the master, the kernel sets the slave's window size and settings.
        copy_window_size(outer, &master);
        rustix::io::ioctl_fionbio(&master, true)?;
        let (wake_reader, wake) = rustix::pipe::pipe_with(
            rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK,
        )?;
        let raw = match usage {
            Use::Interactive { .. } => {
                let raw = RawMode::enter()?;
                rustix::termios::tcsetattr(&master, OptionalActions::Now, &raw.saved)?;
                Some(raw)
            }
            Use::Output { .. } => {
                let mut modes = rustix::termios::tcgetattr(outer.fd())?;
                modes
                    .output_modes
                    .remove(rustix::termios::OutputModes::OPOST);
                rustix::termios::tcsetattr(&master, OptionalActions::Now, &modes)?;
                None
            }
        };
        // From here on, dropping `terminal` puts everything back.
        let mut terminal = CommandTerminal {
            master: Arc::new(master),
            slave,
            wake,
            stop: Arc::new(AtomicBool::new(false)),
            signals: Vec::new(),
            thread: None,
            raw,
        };
        let winch = terminal.watch(libc::SIGWINCH)?;
        let cont = terminal.watch(libc::SIGCONT)?;
        let copier = Copier {
            master: Arc::clone(&terminal.master),
            wake: wake_reader,
            stop: Arc::clone(&terminal.stop),
            winch,
            cont,
            raw: terminal.raw.as_ref().map(|raw| raw.saved.clone()),
            outer,
            to,
        };
        let thread = std::thread::Builder::new()
            .name("a3s-iso-pty".into())
            .spawn(move || copier.run())?;
        terminal.thread = Some(thread);
        Ok(terminal)
    }

    /// A flag `signal` sets, and a wake-up of the relay thread when it arrives.
    fn watch(&mut self, signal: i32) -> io::Result<Arc<AtomicBool>> {
        let flag = Arc::new(AtomicBool::new(false));
        self.signals
            .push(signal_hook::flag::register(signal, Arc::clone(&flag))?);
        let writer = self.wake.try_clone()?;
        self.signals
            .push(signal_hook::low_level::pipe::register(signal, writer)?);
        Ok(flag)
    }

    /// Makes the slave `command`'s stdin, stdout and stderr, and with `new_session` its
    /// controlling terminal in a new session (the sandbox helper does that itself).
    pub(crate) fn attach(&self, command: &mut Command, new_session: bool) -> io::Result<()> {
        let slave = self
            .slave
            .as_ref()
            .ok_or_else(|| io::Error::other("the pty is already given away"))?;
        command
            .stdin(Stdio::from(slave.try_clone()?))
            .stdout(Stdio::from(slave.try_clone()?))
            .stderr(Stdio::from(slave.try_clone()?));
        if new_session {
            crate::base::sandbox::own_terminal_on_exec(command);
        }
        Ok(())
    }

    /// Once the command has started: closes a3s-iso's copy of the slave.
    pub(crate) fn started(&mut self) {
        self.slave = None;
    }

    /// The foreground process group of the command's terminal (where Ctrl-C goes), if any.
    pub(crate) fn foreground(&self) -> Option<Pid> {
        rustix::termios::tcgetpgrp(self.master.as_fd()).ok()
    }

    /// Once the command has ended: drops the terminal, draining and restoring as it does.
    pub(crate) fn finish(self) {
        drop(self);
    }
}

impl Drop for CommandTerminal {
    fn drop(&mut self) {
        self.slave = None;
        self.stop.store(true, Ordering::SeqCst);
        let _ = rustix::io::write(&self.wake, &[0]);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        for id in self.signals.drain(..) {
            signal_hook::low_level::unregister(id);
        }
        // `raw` is dropped after this: the caller's terminal comes back last.
    }
}

/// The relay thread's state.
struct Copier {
    master: Arc<OwnedFd>,
    /// Readable when a signal arrived or the relay is asked to stop.
    wake: OwnedFd,
    stop: Arc<AtomicBool>,
    winch: Arc<AtomicBool>,
    cont: Arc<AtomicBool>,
    /// The caller's settings, to put raw mode back after a stop and continue (interactive use).
    raw: Option<Termios>,
    /// The caller's terminal whose window size the command's follows.
    outer: Stream,
    /// Where the command's output goes.
    to: Stream,
}

/// What one pass of the relay loop found.
#[derive(PartialEq)]
enum Step {
    /// Keep relaying.
    More,
    /// Nothing came within the quiet time while draining.
    Quiet,
    /// Draining, and the command's side of the terminal is closed (or the relay cannot go on).
    Closed,
}

impl Copier {
    fn run(self) {
        let out = Output {
            fd: self.to.fd(),
            broken: false,
        };
        let mut io = Streams {
            stdin: self.raw.as_ref().map(|_| rustix::stdio::stdin()),
            pending: Vec::new(),
            output_open: true,
            out,
        };
        let mut draining_since: Option<Instant> = None;
        loop {
            if draining_since.is_none() && self.stop.load(Ordering::SeqCst) {
                draining_since = Some(Instant::now());
                // No more input once the command has ended.
                io.stdin = None;
                io.pending.clear();
            }
            if draining_since.is_some_and(|since| since.elapsed() >= DRAIN_MAX) {
                break;
            }
            if self.pass(&mut io, draining_since.is_some()) != Step::More {
                break;
            }
        }
    }

    /// Passes a window-size change on; puts raw mode back after a stop and continue.
    fn on_signals(&self) {
        if self.cont.swap(false, Ordering::SeqCst) {
            if let Some(saved) = &self.raw {
                let mut raw = saved.clone();
                raw.make_raw();
                let _ =
                    rustix::termios::tcsetattr(rustix::stdio::stdin(), OptionalActions::Now, &raw);
            }
            copy_window_size(self.outer, self.master.as_fd());
        }
        if self.winch.swap(false, Ordering::SeqCst) {
            copy_window_size(self.outer, self.master.as_fd());
        }
    }

    /// Waits for something to do and does it.
    fn pass(&self, io: &mut Streams<'_>, draining: bool) -> Step {
        if draining && !io.output_open {
            return Step::Closed;
        }
        let master = self.master.as_fd();
        let mut master_events = PollFlags::empty();
        if io.output_open {
            master_events |= PollFlags::IN;
        }
        if !io.pending.is_empty() {
            master_events |= PollFlags::OUT;
        }
        // A closed side reports HUP whatever is asked: poll the master only for what is due.
        let mut fds = vec![PollFd::from_borrowed_fd(self.wake.as_fd(), PollFlags::IN)];
        let master_at = (!master_events.is_empty()).then(|| {
            fds.push(PollFd::from_borrowed_fd(master, master_events));
            fds.len() - 1
        });
        let stdin_at = io.stdin.filter(|_| io.pending.is_empty()).map(|stdin| {
            fds.push(PollFd::from_borrowed_fd(stdin, PollFlags::IN));
            fds.len() - 1
        });
        let quiet = timespec(DRAIN_QUIET);
        let polled = poll(&mut fds, draining.then_some(&quiet));
        // Before any input goes on: a resize typed before a key applies before that key.
        self.on_signals();
        match polled {
            Ok(0) if draining => return Step::Quiet,
            Ok(_) => {}
            Err(Errno::INTR) => return Step::More,
            Err(_) => return Step::Closed,
        }
        let ready = |at: Option<usize>| at.map_or(PollFlags::empty(), |i| fds[i].revents());
        let (wake_ready, master_ready, stdin_ready) =
            (ready(Some(0)), ready(master_at), ready(stdin_at));
        drop(fds);
        if !wake_ready.is_empty() {
            drain_pipe(self.wake.as_fd());
        }
        if master_ready.intersects(PollFlags::OUT | PollFlags::HUP | PollFlags::ERR) {
            io.send_pending(master);
        }
        if io.output_open
            && master_ready.intersects(PollFlags::IN | PollFlags::HUP | PollFlags::ERR)
        {
            io.copy_output(master, master_ready.contains(PollFlags::HUP));
        }
        if !stdin_ready.is_empty() {
            io.take_input(stdin_ready);
            io.send_pending(master);
        }
        Step::More
    }
}

/// The relay's two directions.
struct Streams<'a> {
    /// `None` once the caller's stdin is closed or the relay drains.
    stdin: Option<BorrowedFd<'a>>,
    /// Input read from the caller that the command's terminal has not taken yet.
    pending: Vec<u8>,
    /// Whether a process still holds the command's side of the terminal. Once none does,
    /// input still goes on (Ctrl-C reaches the command's foreground group all the same).
    output_open: bool,
    out: Output<'a>,
}

impl Streams<'_> {
    /// Copies what the command wrote to the caller; notes when its side is closed.
    fn copy_output(&mut self, master: BorrowedFd<'_>, hung_up: bool) {
        let mut buf = [0u8; 8192];
        match rustix::io::read(master, &mut buf) {
            Ok(0) => self.output_open = false,
            Ok(n) => self.out.write_all(&buf[..n]),
            Err(Errno::INTR) => {}
            Err(Errno::AGAIN) => self.output_open = !hung_up,
            // EIO: no process holds the slave any more and its output is all read.
            Err(_) => self.output_open = false,
        }
    }

    /// Reads what the caller typed (only when the command has taken all earlier input).
    fn take_input(&mut self, ready: PollFlags) {
        let Some(stdin) = self.stdin else { return };
        let mut buf = [0u8; 4096];
        match rustix::io::read(stdin, &mut buf) {
            Ok(0) => self.stdin = None,
            Ok(n) => self.pending.extend_from_slice(&buf[..n]),
            Err(Errno::INTR | Errno::AGAIN) => {
                if !ready.intersects(PollFlags::IN) {
                    self.stdin = None;
                }
            }
            Err(_) => self.stdin = None,
        }
    }

    /// Gives the command's terminal as much of the pending input as it takes now.
    fn send_pending(&mut self, master: BorrowedFd<'_>) {
        while !self.pending.is_empty() {
            match rustix::io::write(master, &self.pending) {
                Ok(n) => {
                    self.pending.drain(..n);
                }
                Err(Errno::INTR) => {}
                // Full: the command takes it later, unless nothing can read it any more.
                Err(Errno::AGAIN) if self.output_open => return,
                Err(_) => {
                    self.pending.clear();
                    return;
                }
            }
        }
    }
}

/// Where the command's output goes, unbuffered; dropped after a write error or a stalled
/// reader, so the command never blocks on its terminal.
struct Output<'a> {
    fd: BorrowedFd<'a>,
    broken: bool,
}

impl Output<'_> {
    fn write_all(&mut self, mut bytes: &[u8]) {
        while !self.broken && !bytes.is_empty() {
            match rustix::io::write(self.fd, bytes) {
                Ok(0) => self.broken = true,
                Ok(n) => bytes = &bytes[n..],
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => {
                    let mut fds = [PollFd::from_borrowed_fd(self.fd, PollFlags::OUT)];
                    let patience = timespec(WRITE_PATIENCE);
                    if !matches!(poll(&mut fds, Some(&patience)), Ok(1..) | Err(Errno::INTR)) {
                        self.broken = true;
                    }
                }
                Err(_) => self.broken = true,
            }
        }
    }
}

/// The slave side of `master`: straight from the master where the kernel can (no path to look
/// up), else by its name.
fn open_slave(master: &OwnedFd, flags: OpenptFlags) -> io::Result<OwnedFd> {
    if let Ok(slave) = rustix::pty::ioctl_tiocgptpeer(master, flags) {
        return Ok(slave);
    }
    let name = rustix::pty::ptsname(master, Vec::new())?;
    let mode = OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC;
    Ok(rustix::fs::open(name.as_c_str(), mode, Mode::empty())?)
}

/// Gives `terminal` the window size of the caller's `outer` terminal (when it is one).
fn copy_window_size(outer: Stream, terminal: impl AsFd) {
    if let Ok(size) = rustix::termios::tcgetwinsize(outer.fd()) {
        let _ = rustix::termios::tcsetwinsize(terminal, size);
    }
}

/// Empties the wake-up pipe (non-blocking).
fn drain_pipe(pipe: BorrowedFd<'_>) {
    let mut buf = [0u8; 64];
    while matches!(rustix::io::read(pipe, &mut buf), Ok(1..) | Err(Errno::INTR)) {}
}

/// `duration` for poll (a second where it does not fit).
fn timespec(duration: Duration) -> Timespec {
    Timespec::try_from(duration).unwrap_or(Timespec {
        tv_sec: 1,
        tv_nsec: 0,
    })
}
