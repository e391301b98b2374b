//! Entering the sandbox's namespaces: a user namespace (also for root, so that the command
//! holds no capability over the host) that maps only the caller's own uid and gid, and with it
//! new mount, PID, UTS, IPC and — when the network is denied — network namespaces.

use rustix::thread::UnshareFlags;

use super::sys;

/// Enters the namespaces; this process then holds every capability inside them (and none
/// outside), which the mount setup uses and the command never gets.
pub(super) fn enter(deny_network: bool) -> std::result::Result<(), String> {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let mut flags = UnshareFlags::NEWUSER
        | UnshareFlags::NEWNS
        | UnshareFlags::NEWPID
        | UnshareFlags::NEWUTS
        | UnshareFlags::NEWIPC;
    if deny_network {
        flags |= UnshareFlags::NEWNET;
    }
    sys::unshare(flags).map_err(|e| format!("cannot create the sandbox's namespaces: {e}"))?;
    let write = |file: &str, text: String| {
        std::fs::write(file, text).map_err(|e| format!("cannot write {file}: {e}"))
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1\n"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1\n"))?;
    if deny_network {
        sys::loopback_up().map_err(|e| format!("cannot bring loopback up: {e}"))?;
    }
    Ok(())
}
