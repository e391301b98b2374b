//! The only unsafe code of a3s-iso: the few system calls that have no safe wrapper here.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

/// Leaves the current user and/or network namespace for new ones.
pub fn unshare(flags: rustix::thread::UnshareFlags) -> io::Result<()> {
    // SAFETY: the flags never include CLONE_FILES (the only flag whose effect on other threads'
    // file descriptors makes unshare unsafe); the sandbox helper calls this before it starts any
    // thread and then execs.
    unsafe { rustix::thread::unshare_unsafe(flags) }.map_err(io::Error::from)
}

/// The Landlock ABI version the kernel offers; `None` when Landlock is unavailable.
pub fn landlock_abi() -> Option<i64> {
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
pub fn loopback_up() -> io::Result<()> {
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
    if unsafe { libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut request) } < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: after SIOCGIFFLAGS the flags member of the union is the initialised one.
    unsafe {
        request.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    }
    // SAFETY: SIOCSIFFLAGS reads `request`, a valid ifreq, and sets the interface's flags.
    if unsafe { libc::ioctl(fd, libc::SIOCSIFFLAGS, &request) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
