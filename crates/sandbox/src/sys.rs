//! The only unsafe code of a3s-iso: the few system calls that have no safe wrapper here
//! (the sandbox's, and the one ioctl that maps a file's extents for `disk` reports). The crate
//! denies `unsafe_code` everywhere else; `lib.rs` allows it on this module alone.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

/// Leaves the current user and/or network namespace for new ones.
pub(super) fn unshare(flags: rustix::thread::UnshareFlags) -> io::Result<()> {
    // SAFETY: the flags never include CLONE_FILES (the only flag whose effect on other threads'
    // file descriptors makes unshare unsafe); the sandbox helper calls this before it starts any
    // thread and then execs.
    unsafe { rustix::thread::unshare_unsafe(flags) }.map_err(io::Error::from)
}

/// The Landlock ABI version the kernel offers; `None` when Landlock is unavailable.
pub(super) fn landlock_abi() -> Option<i64> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: landlock_create_ruleset with a null attribute pointer, size 0 and the VERSION flag
    // only returns the ABI version (or -1 with errno); it touches no memory of ours.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    (abi > 0).then_some(abi)
}

/// Brings the loopback interface of the current network namespace up.
pub(super) fn loopback_up() -> io::Result<()> {
    // SAFETY: socket(2) with constant arguments; the returned descriptor is owned below.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh descriptor that nothing else owns.
    let socket = unsafe { OwnedFd::from_raw_fd(raw) };
    let fd = std::os::fd::AsRawFd::as_raw_fd(&socket);
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *slot = *byte as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS reads the flags of the interface named in `request` into it;
    // `request` is a valid, initialised ifreq that outlives the call.
    if unsafe { libc::ioctl(fd, ioctl_request(libc::SIOCGIFFLAGS), &mut request) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: after SIOCGIFFLAGS the flags member of the union is the initialised one.
    unsafe {
        request.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    }
    // SAFETY: SIOCSIFFLAGS reads `request`, a valid ifreq, and sets the interface's flags.
    if unsafe { libc::ioctl(fd, ioctl_request(libc::SIOCSIFFLAGS), &request) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Forks this process: `None` in the child, the child's pid in the parent.
pub(super) fn fork() -> io::Result<Option<rustix::process::Pid>> {
    // SAFETY: the sandbox helper is single-threaded when it forks (it starts no thread, and
    // signal-hook's flag handlers start none), so the child's state is consistent; the child
    // only sets up its namespace and execs or exits.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(io::Error::last_os_error()),
        0 => Ok(None),
        pid => Ok(rustix::process::Pid::from_raw(pid)),
    }
}

/// Ends this process at once with `code`, without running destructors or atexit handlers
/// (a forked child must not flush its parent's buffers twice).
pub(super) fn exit(code: i32) -> ! {
    // SAFETY: _exit only ends the process.
    unsafe { libc::_exit(code) }
}

/// Drops every capability for good: the bounding set, the ambient set, and the effective,
/// permitted and inheritable sets; a later exec (even of a set-uid program, or as uid 0) gains
/// none back.
pub(super) fn drop_capabilities() -> io::Result<()> {
    let last: libc::c_ulong = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(63);
    for cap in 0..=last {
        // SAFETY: PR_CAPBSET_DROP takes a capability number and touches no memory of ours.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EINVAL) {
                return Err(err);
            }
        }
    }
    rustix::thread::clear_ambient_capability_set()?;
    let none = rustix::thread::CapabilitySet::empty();
    rustix::thread::set_capabilities(
        None,
        rustix::thread::CapabilitySets {
            effective: none,
            permitted: none,
            inheritable: none,
        },
    )?;
    rustix::thread::set_no_new_privs(true)?;
    Ok(())
}

/// Makes `command`'s process, just before it execs, the leader of a new session with its stdin
/// (a pseudo-terminal) as its controlling terminal. The command must not be given a process
/// group of its own (`setsid` makes one; it fails in a process group leader).
pub fn own_terminal_on_exec(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child between fork and exec. It only makes two
    // system calls through rustix (setsid, and ioctl TIOCSCTTY on fd 0), both async-signal-safe;
    // it allocates nothing (an errno becomes an io::Error without allocating) and takes no lock.
    unsafe {
        command.pre_exec(|| {
            rustix::process::setsid()?;
            rustix::process::ioctl_tiocsctty(rustix::stdio::stdin())?;
            Ok(())
        });
    }
}

/// Makes `command`'s process, just before it execs, the leader of a new session without a
/// controlling terminal: nothing it does to a terminal can stop it or reach the caller's.
pub fn new_session_on_exec(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child between fork and exec and only calls
    // setsid through rustix, which is async-signal-safe; it allocates nothing and takes no lock.
    unsafe {
        command.pre_exec(|| {
            rustix::process::setsid()?;
            Ok(())
        });
    }
}

/// Keeps descriptor `fd` (close-on-exec in this process) open across `command`'s exec.
pub(super) fn keep_open_on_exec(command: &mut std::process::Command, fd: std::os::fd::RawFd) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child between fork and exec, where `fd` is still
    // open (the parent keeps it open until the child is started); it only calls fcntl through
    // rustix, which is async-signal-safe, and allocates nothing.
    unsafe {
        command.pre_exec(move || {
            let borrowed = std::os::fd::BorrowedFd::borrow_raw(fd);
            rustix::io::fcntl_setfd(borrowed, rustix::io::FdFlags::empty())?;
            Ok(())
        });
    }
}

/// Takes ownership of the inherited descriptor `raw`, marked close-on-exec from now on.
pub(super) fn adopt_fd(raw: std::os::fd::RawFd) -> io::Result<OwnedFd> {
    if raw < 3 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    // SAFETY: F_GETFD on any number touches no memory; it fails with EBADF if `raw` is not open.
    if unsafe { libc::fcntl(raw, libc::F_GETFD) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is open (checked above) and was handed to this process to own: nothing else
    // in the helper uses that number.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC)?;
    Ok(fd)
}

/// The process group init passes interrupts on to (the command's), 0 until it exists.
static COMMAND_GROUP: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// In init: from now on, each of `signals` is passed on to the command's process group once
/// [`forward_to`] names it.
pub(super) fn forward_signals(signals: &[i32]) -> io::Result<()> {
    for &signal in signals {
        let action = move || {
            let group = COMMAND_GROUP.load(std::sync::atomic::Ordering::SeqCst);
            if group > 0 {
                // SAFETY: kill(2) is async-signal-safe and touches no memory.
                unsafe { libc::kill(-group, signal) };
            }
        };
        // SAFETY: the action only loads an atomic and calls kill(2), both async-signal-safe;
        // it allocates nothing and takes no lock.
        unsafe { signal_hook::low_level::register(signal, action) }?;
    }
    Ok(())
}

/// Names the command's process group for [`forward_signals`].
pub(super) fn forward_to(group: rustix::process::Pid) {
    COMMAND_GROUP.store(
        group.as_raw_nonzero().get(),
        std::sync::atomic::Ordering::SeqCst,
    );
}

/// A socket ioctl's request number as `ioctl` takes it: an unsigned long with glibc, an int
/// with musl (the static build); the numbers fit either.
#[allow(clippy::unnecessary_cast)]
fn ioctl_request(number: libc::c_ulong) -> libc::Ioctl {
    number as libc::Ioctl
}

/// What a file's extent map holds ([`extent_bytes`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExtentBytes {
    /// The bytes of its extents in blocks.
    pub blocks: u64,
    /// How many of those are shared with another file.
    pub shared: u64,
    /// Some of its data is stored inline, with the file system's metadata.
    pub inline: bool,
}

/// How many extents one `FS_IOC_FIEMAP` call asks for.
const FIEMAP_BATCH: usize = 64;

/// `_IOWR('f', 11, struct fiemap)` (the request's type differs between C libraries).
const FS_IOC_FIEMAP: u32 = 0xC020_660B;

/// The extent is the last of the file.
const FIEMAP_EXTENT_LAST: u32 = 0x1;

/// The extent's blocks are shared with another file (a clone, a snapshot).
const FIEMAP_EXTENT_SHARED: u32 = 0x2000;

/// The extent's data is stored with the file system's metadata (btrfs's small files).
const FIEMAP_EXTENT_DATA_INLINE: u32 = 0x200;

/// `struct fiemap_extent` of `linux/fiemap.h`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FiemapExtent {
    logical: u64,
    physical: u64,
    length: u64,
    reserved64: [u64; 2],
    flags: u32,
    reserved: [u32; 3],
}

/// `struct fiemap` of `linux/fiemap.h` with room for [`FIEMAP_BATCH`] extents after it.
#[repr(C)]
struct Fiemap {
    start: u64,
    length: u64,
    flags: u32,
    mapped_extents: u32,
    extent_count: u32,
    reserved: u32,
    extents: [FiemapExtent; FIEMAP_BATCH],
}

/// What the open regular file `file`'s extents hold, as the file system maps them now
/// (`FS_IOC_FIEMAP`): the bytes of its block extents, how many of those are shared with
/// another file (`FIEMAP_EXTENT_SHARED`), and whether any of its data is stored inline with the
/// file system's metadata (then not in blocks of its own, and never shared). Fails where the
/// file system has no extent map (tmpfs, some network file systems).
pub fn extent_bytes(file: &std::fs::File) -> io::Result<ExtentBytes> {
    use std::os::fd::AsRawFd;
    let mut found = ExtentBytes::default();
    let mut start = 0u64;
    loop {
        let mut map = Fiemap {
            start,
            length: u64::MAX - start,
            flags: 0,
            mapped_extents: 0,
            extent_count: FIEMAP_BATCH as u32,
            reserved: 0,
            extents: [FiemapExtent::default(); FIEMAP_BATCH],
        };
        // SAFETY: FS_IOC_FIEMAP reads the header of `map` and writes at most `extent_count`
        // extents into the array that follows it, all inside `map`, which outlives the call;
        // the descriptor is open for as long as `file` is borrowed.
        let done = unsafe { libc::ioctl(file.as_raw_fd(), FS_IOC_FIEMAP as _, &mut map) };
        if done < 0 {
            return Err(io::Error::last_os_error());
        }
        let mapped = (map.mapped_extents as usize).min(FIEMAP_BATCH);
        if mapped == 0 {
            return Ok(found);
        }
        for extent in &map.extents[..mapped] {
            if extent.flags & FIEMAP_EXTENT_DATA_INLINE != 0 {
                found.inline = true;
            } else {
                found.blocks += extent.length;
                if extent.flags & FIEMAP_EXTENT_SHARED != 0 {
                    found.shared += extent.length;
                }
            }
            if extent.flags & FIEMAP_EXTENT_LAST != 0 {
                return Ok(found);
            }
        }
        let last = &map.extents[mapped - 1];
        start = last.logical.saturating_add(last.length);
    }
}
