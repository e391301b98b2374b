//! The sandbox's view of the file system, in its own mount namespace: every host mount
//! read-only; fresh, private `/tmp`, `/dev/shm`, `$XDG_RUNTIME_DIR` (and `/run` when the
//! network is denied, which hides host sockets there); a `/dev` of its own with only the usual
//! device nodes and a new `devpts` instance (no host terminal in it); when the network is
//! denied, a read-only `/sys` of its own network namespace (its interfaces only, the host's
//! mounts under it put back); the isolation, its quarantine and the allowed paths writable;
//! the links that locate the isolation's repository read-only; and the secrets covered.
//!
//! [`plan`] decides the steps from the spec and the mount table; [`apply`] performs them in
//! the sandbox helper, which holds every capability in its new user namespace.

use std::ffi::OsString;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use rustix::fs::{CWD, StatVfsMountFlags, statvfs};
use rustix::mount::{
    MountFlags, MountPropagationFlags, MoveMountFlags, OpenTreeFlags, mount, mount_bind,
    mount_change, mount_remount, move_mount, open_tree,
};

use super::spec::{GitLayers, SandboxSpec};

/// One step of the mount setup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    /// Take a detached copy of the tree at `path` before the host mounts change.
    Stage(PathBuf),
    /// Make a host mount read-only.
    ReadOnly(PathBuf),
    /// Cover a directory with a fresh, empty, writable tmpfs.
    Private { path: PathBuf, mode: u32 },
    /// Put a staged copy back at its path, writable or read-only.
    Restore { path: PathBuf, writable: bool },
    /// Mount the session's own layer over the isolation's admin dir, ready to be put back in
    /// its place, and keep the session's layer directory ready for [`Step::Layer`].
    PrepareGitLayers(GitLayers),
    /// Cover a directory with a writable layer over its current content: the session's own
    /// when [`Step::PrepareGitLayers`] succeeded, a throwaway one otherwise.
    Layer(PathBuf),
    /// Cover a directory with a writable layer whose upper is in `base` (on the host).
    FileLayer { dir: PathBuf, base: PathBuf },
    /// Cover the isolation with the run's layer, whose upper is in the staged copy of `base`
    /// (attached only while the overlay is mounted: the command never reaches it); `volatile`
    /// when what it holds is thrown away.
    TreeLayer {
        dir: PathBuf,
        base: PathBuf,
        volatile: bool,
    },
    /// Put a staged copy of `from` at `to`, writable.
    Mount { from: PathBuf, to: PathBuf },
    /// Put a staged copy back read-only, unless the session's layers are in place.
    RestoreUnlessLayered(PathBuf),
    /// Mount a file or directory read-only over itself.
    Freeze(PathBuf),
    /// Cover a secret: an empty read-only directory, or an empty file.
    Hide(PathBuf),
    /// Finish the private `/dev`: a new `devpts` instance, its links, then read-only.
    FreshDev,
    /// A read-only sysfs of the sandbox's own network namespace on `/sys`, with the host's
    /// mounts under it (these paths: cgroups…) put back on it as they are.
    FreshSys(Vec<PathBuf>),
    /// A read-only `/etc/resolv.conf` naming the name responder on the sandbox's loopback.
    Resolver,
}

/// The private `/dev`, when it is one of the spec's private directories.
const DEV: &str = "/dev";

/// Where sysfs is. The host's lists the host's network interfaces (`/sys/class/net`); a
/// sysfs mounted inside a new network namespace lists only that namespace's.
const SYS: &str = "/sys";

/// What the fresh `devpts` replaces in a private `/dev`: the host's are never put back.
const HOST_PTYS: [&str; 2] = ["/dev/pts", "/dev/ptmx"];

/// The links of a private `/dev`: the new instance's multiplexer and the descriptor aliases.
const DEV_LINKS: [(&str, &str); 5] = [
    ("/dev/ptmx", "pts/ptmx"),
    ("/dev/fd", "/proc/self/fd"),
    ("/dev/stdin", "/proc/self/fd/0"),
    ("/dev/stdout", "/proc/self/fd/1"),
    ("/dev/stderr", "/proc/self/fd/2"),
];

/// Decodes the octal escapes of `/proc/self/mountinfo` (`\040` for a space).
fn unescape(field: &str) -> PathBuf {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).filter(|_| bytes[i] == b'\\');
        match octal.and_then(|o| u8::from_str_radix(std::str::from_utf8(o).ok()?, 8).ok()) {
            Some(byte) => {
                out.push(byte);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    PathBuf::from(OsString::from_vec(out))
}

/// The mount points of this mount namespace, shallowest first.
pub(super) fn mount_points() -> std::io::Result<Vec<PathBuf>> {
    let table = std::fs::read_to_string("/proc/self/mountinfo")?;
    let mut points: Vec<PathBuf> = table
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(unescape)
        .collect();
    points.sort_by_key(|p| p.components().count());
    points.dedup();
    Ok(points)
}

/// How a staged copy is put back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Restore {
    Writable,
    ReadOnly,
    /// Read-only only when the session's git layers could not be mounted.
    UnlessLayered,
}

impl Restore {
    /// The step that puts `path` back this way.
    fn step(self, path: PathBuf) -> Step {
        match self {
            Restore::Writable => Step::Restore {
                path,
                writable: true,
            },
            Restore::ReadOnly => Step::Restore {
                path,
                writable: false,
            },
            Restore::UnlessLayered => Step::RestoreUnlessLayered(path),
        }
    }
}

/// Plans the mount setup. Pure: the caller passes the mount table and the spec.
pub(super) fn plan(spec: &SandboxSpec, host_mounts: &[PathBuf]) -> Vec<Step> {
    let under_private = |p: &Path| spec.private.iter().any(|private| p.starts_with(private));
    let fresh_dev = spec.private.iter().any(|p| p == Path::new(DEV));
    let host_pty = |p: &Path| fresh_dev && HOST_PTYS.iter().any(|h| p.starts_with(h));
    let mut restores: Vec<(PathBuf, Restore)> = Vec::new();
    restores.extend(
        spec.writable
            .iter()
            .filter(|p| !host_pty(p))
            .map(|p| (p.clone(), Restore::Writable)),
    );
    restores.extend(
        spec.visible
            .iter()
            .filter(|p| under_private(p))
            .map(|p| (p.clone(), Restore::ReadOnly)),
    );
    restores.extend(spec.sealed.iter().map(|p| (p.clone(), Restore::ReadOnly)));
    let otherwise = spec.git_layers.iter().flat_map(|l| &l.sealed_otherwise);
    restores.extend(otherwise.map(|p| (p.clone(), Restore::UnlessLayered)));
    restores.sort_by_key(|(p, _)| p.components().count());
    let mut steps: Vec<Step> = restores
        .iter()
        .map(|(p, _)| Step::Stage(p.clone()))
        .chain(spec.mounted.iter().map(|m| Step::Stage(m.from.clone())))
        .collect();
    steps.extend(spec.git_layers.iter().map(|l| Step::Stage(l.dir.clone())));
    steps.extend(spec.tree_layer.iter().map(|l| Step::Stage(l.base.clone())));
    steps.extend(
        host_mounts
            .iter()
            .filter(|p| !p.starts_with("/proc") && !under_private(p))
            .map(|p| Step::ReadOnly(p.clone())),
    );
    if spec.deny_network {
        steps.push(Step::FreshSys(mounts_under_sys(host_mounts)));
    }
    steps.extend(spec.private.iter().map(|p| Step::Private {
        path: p.clone(),
        mode: if p == Path::new("/tmp") || p == Path::new("/dev/shm") {
            0o1777
        } else if p == Path::new("/run") || p == Path::new(DEV) {
            0o755
        } else {
            0o700
        },
    }));
    steps.extend(ordered(spec, restores));
    if fresh_dev {
        steps.push(Step::FreshDev);
    }
    steps.extend(spec.frozen.iter().cloned().map(Step::Freeze));
    steps.extend(spec.hidden.iter().cloned().map(Step::Hide));
    if spec.dns {
        steps.push(Step::Resolver);
    }
    steps
}

/// The host's mounts below `/sys` that a fresh sysfs would cover, the outermost of each
/// nest only (a copy of it takes those inside along).
fn mounts_under_sys(host_mounts: &[PathBuf]) -> Vec<PathBuf> {
    let sys = Path::new(SYS);
    let mut outermost: Vec<PathBuf> = Vec::new();
    for path in host_mounts {
        let below = path.starts_with(sys) && path != sys;
        if below && !outermost.iter().any(|o| path.starts_with(o)) {
            outermost.push(path.clone());
        }
    }
    outermost
}

/// The restores, mounts and layers in the order they go on: the layers' upper layers first
/// (an overlay needs its upper in place), then by depth, a layer after what is back at its
/// own depth and before anything deeper (which then stays visible on top of it).
fn ordered(spec: &SandboxSpec, restores: Vec<(PathBuf, Restore)>) -> Vec<Step> {
    let depth = |p: &Path| p.components().count();
    let is_base = |p: &Path| spec.layers.iter().any(|l| l.base == p);
    let mut keyed: Vec<((usize, u8), Step)> = restores
        .into_iter()
        .map(|(path, how)| {
            let key = if is_base(&path) { 0 } else { depth(&path) };
            ((key, 0), how.step(path))
        })
        .collect();
    keyed.extend(spec.mounted.iter().map(|m| {
        let step = Step::Mount {
            from: m.from.clone(),
            to: m.to.clone(),
        };
        ((depth(&m.to), 0), step)
    }));
    keyed.extend(spec.layers.iter().map(|l| {
        let step = Step::FileLayer {
            dir: l.dir.clone(),
            base: l.base.clone(),
        };
        ((depth(&l.dir), 1), step)
    }));
    // Right after the isolation is back, before anything deeper goes on top of it.
    keyed.extend(spec.tree_layer.iter().map(|l| {
        let step = Step::TreeLayer {
            dir: l.dir.clone(),
            base: l.base.clone(),
            volatile: l.volatile,
        };
        ((depth(&l.dir), 1), step)
    }));
    if let Some(layer) = &spec.scratch_layer {
        // The session's git layers are made ready just before the layer that uses them (the
        // sort below is stable).
        let prepare = spec.git_layers.iter().cloned().map(Step::PrepareGitLayers);
        keyed.extend(prepare.map(|step| ((depth(layer), 1), step)));
        keyed.push(((depth(layer), 1), Step::Layer(layer.clone())));
    }
    keyed.sort_by_key(|(key, _)| *key);
    keyed.into_iter().map(|(_, step)| step).collect()
}

/// Why a step failed, naming the path.
fn failed(what: &str, path: &Path, err: impl std::fmt::Display) -> String {
    format!("cannot {what} {}: {err}", path.display())
}

/// The flags a remount must keep: a user namespace may add `ro` but not drop the others.
fn kept_flags(path: &Path) -> MountFlags {
    let Ok(stat) = statvfs(path) else {
        return MountFlags::empty();
    };
    let pairs = [
        (StatVfsMountFlags::NOSUID, MountFlags::NOSUID),
        (StatVfsMountFlags::NODEV, MountFlags::NODEV),
        (StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
        (StatVfsMountFlags::NOATIME, MountFlags::NOATIME),
        (StatVfsMountFlags::NODIRATIME, MountFlags::NODIRATIME),
        (StatVfsMountFlags::RELATIME, MountFlags::RELATIME),
    ];
    pairs
        .iter()
        .filter(|(stat_flag, _)| stat.f_flag.contains(*stat_flag))
        .fold(MountFlags::empty(), |acc, (_, flag)| acc | *flag)
}

/// Makes the topmost mount at `path` read-only.
pub(super) fn remount_read_only(path: &Path) -> std::io::Result<()> {
    let flags = MountFlags::BIND | MountFlags::RDONLY | kept_flags(path);
    mount_remount(path, flags, "").map_err(Into::into)
}

/// Applies the planned steps, in order. Staged copies are held as detached mounts until
/// they are put back. Returns the directory a writable layer covers, when one was mounted
/// (writes there never reach the real directory, so Landlock may let them through).
pub(super) fn apply(steps: &[Step]) -> std::result::Result<Option<PathBuf>, String> {
    mount_change(
        "/",
        MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
    )
    .map_err(|e| failed("make private", Path::new("/"), e))?;
    // Each copy with whether it is a directory (its place may have to be made again).
    let mut staged: Vec<(PathBuf, OwnedFd, bool)> = Vec::new();
    let mut git_layers: Option<GitLayers> = None;
    let mut layered = None;
    for step in steps {
        match step {
            Step::Stage(path) => {
                let flags = OpenTreeFlags::OPEN_TREE_CLONE
                    | OpenTreeFlags::AT_RECURSIVE
                    | OpenTreeFlags::OPEN_TREE_CLOEXEC;
                let copy = open_tree(CWD, path, flags).map_err(|e| failed("copy", path, e))?;
                staged.push((path.clone(), copy, path.is_dir()));
            }
            Step::ReadOnly(path) => read_only_host_mount(path)?,
            Step::Private { path, mode } => private_tmpfs(path, *mode)?,
            Step::Restore { path, writable } => {
                let (copy, is_dir) = take_staged(&mut staged, path)?;
                restore(path, copy.as_fd_borrowed(), is_dir, *writable)?;
            }
            Step::FileLayer { dir, base } => {
                // A directory only the layer above has (made inside another layer).
                let _ = std::fs::create_dir_all(dir);
                overlay(dir, &base.join("upper"), &base.join("work"), dir)
                    .map_err(|e| failed("layer", dir, e))?;
            }
            Step::TreeLayer {
                dir,
                base,
                volatile,
            } => {
                let (copy, _) = take_staged(&mut staged, base)?;
                tree_layer(dir, copy.as_fd_borrowed(), *volatile);
            }
            Step::Mount { from, to } => {
                let at = staged.iter().position(|(p, ..)| p == from);
                let at = at.ok_or_else(|| failed("find", from, "no copy"))?;
                let (_, copy, is_dir) = staged.swap_remove(at);
                restore(to, copy.as_fd_borrowed(), is_dir, true)?;
            }
            Step::PrepareGitLayers(layers) => {
                git_layers = prepare_git_layers(&mut staged, layers).then(|| layers.clone());
            }
            Step::Layer(path) => {
                if !layer_over(path, git_layers.as_ref(), &mut staged) {
                    git_layers = None;
                }
                if mounted_over(path) {
                    layered = Some(path.clone());
                }
            }
            Step::RestoreUnlessLayered(path) => {
                let (copy, is_dir) = take_staged(&mut staged, path)?;
                if git_layers.is_none() {
                    restore(path, copy.as_fd_borrowed(), is_dir, false)?;
                }
            }
            Step::Freeze(path) => {
                mount_bind(path, path).map_err(|e| failed("bind", path, e))?;
                remount_read_only(path).map_err(|e| failed("freeze", path, e))?;
            }
            Step::Hide(path) => hide(path)?,
            Step::FreshDev => fresh_dev()?,
            Step::FreshSys(submounts) => fresh_sys(submounts)?,
            Step::Resolver => point_resolver()?,
        }
    }
    Ok(layered)
}

/// The resolver's configuration inside: only the name responder, asked once.
const RESOLV_CONF: &str = "/etc/resolv.conf";

/// Where the new configuration is written before it is mounted (on the private /tmp; it is
/// removed again once mounted, the mount keeps it).
const RESOLV_STAGED: &str = "/tmp/.a3s-iso-resolv.conf";

/// Mounts a configuration naming the responder, read-only, over `/etc/resolv.conf` (over
/// the file it links to, which is made when it is missing, as under the private `/run`).
/// Without any `/etc/resolv.conf` there is nothing to do: the resolver then asks
/// `127.0.0.1:53` by itself.
fn point_resolver() -> std::result::Result<(), String> {
    let Some(target) = resolver_file() else {
        return Ok(());
    };
    let (ip, port) = super::sockets::DNS_ADDRESS;
    debug_assert_eq!(port, 53, "resolv.conf cannot name another port");
    let text = format!(
        "# a3s-iso: the network is denied; a3s-iso answers every name here, at once\n\
         nameserver {}\noptions attempts:1 timeout:1\n",
        std::net::Ipv4Addr::from(ip)
    );
    let staged = Path::new(RESOLV_STAGED);
    std::fs::write(staged, text).map_err(|e| failed("write", staged, e))?;
    let mounted = mount_bind(staged, &target)
        .map_err(|e| failed("bind", &target, e))
        .and_then(|()| remount_read_only(&target).map_err(|e| failed("freeze", &target, e)));
    let _ = std::fs::remove_file(staged);
    mounted
}

/// The file `/etc/resolv.conf` is, its links followed: `None` when there is none; made (on a
/// private tmpfs) when it links to a file that is missing there.
fn resolver_file() -> Option<PathBuf> {
    let mut path = PathBuf::from(RESOLV_CONF);
    for _ in 0..16 {
        match std::fs::read_link(&path) {
            Ok(link) => {
                let base = path.parent().unwrap_or(Path::new("/"));
                path = base.join(link);
            }
            Err(_) => break,
        }
    }
    if std::fs::symlink_metadata(RESOLV_CONF).is_err() {
        return None;
    }
    if !path.exists() {
        let made = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::File::create(&path).map(drop));
        made.ok()?;
    }
    std::fs::canonicalize(&path).ok().filter(|p| p.is_file())
}

/// Takes the staged copy of `path` out of the list.
fn take_staged(
    staged: &mut Vec<(PathBuf, OwnedFd, bool)>,
    path: &Path,
) -> std::result::Result<(OwnedFd, bool), String> {
    let at = staged.iter().position(|(p, ..)| p == path);
    let at = at.ok_or_else(|| failed("find", path, "no copy"))?;
    let (_, copy, is_dir) = staged.swap_remove(at);
    Ok((copy, is_dir))
}

/// Whether an overlay is mounted at `path` now (the layer took).
fn mounted_over(path: &Path) -> bool {
    rustix::fs::statfs(path).is_ok_and(|st| st.f_type as u64 == OVERLAY_MAGIC)
}

/// `OVERLAYFS_SUPER_MAGIC`.
const OVERLAY_MAGIC: u64 = 0x794c_7630;

/// A host mount that cannot be reached cannot be written through either; any other failure
/// leaves a hole, so it fails the sandbox.
fn read_only_host_mount(path: &Path) -> std::result::Result<(), String> {
    match remount_read_only(path) {
        Ok(()) => Ok(()),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ENOENT | libc::EACCES | libc::ENOTDIR)
            ) =>
        {
            Ok(())
        }
        Err(e) => Err(failed("make read-only", path, e)),
    }
}

fn private_tmpfs(path: &Path, mode: u32) -> std::result::Result<(), String> {
    if !path.is_dir() {
        // Under another private tmpfs (e.g. $XDG_RUNTIME_DIR under /run): make it there.
        std::fs::create_dir_all(path).map_err(|e| failed("create", path, e))?;
    }
    let options = std::ffi::CString::new(format!("mode={mode:o}"))
        .map_err(|e| failed("mount tmpfs on", path, e))?;
    mount(
        "tmpfs",
        path,
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NODEV,
        options.as_c_str(),
    )
    .map_err(|e| failed("mount tmpfs on", path, e))
}

fn restore(
    path: &Path,
    copy: BorrowedFd<'_>,
    is_dir: bool,
    writable: bool,
) -> std::result::Result<(), String> {
    if std::fs::symlink_metadata(path).is_err() {
        // Its place is on a private tmpfs now: make it again there.
        let made = match (is_dir, path.parent()) {
            (true, _) => std::fs::create_dir_all(path),
            (false, Some(parent)) => {
                std::fs::create_dir_all(parent).and_then(|()| std::fs::File::create(path).map(drop))
            }
            (false, None) => Ok(()),
        };
        made.map_err(|e| failed("create", path, e))?;
    }
    move_mount(copy, "", CWD, path, MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH)
        .map_err(|e| failed("put back", path, e))?;
    if !writable {
        remount_read_only(path).map_err(|e| failed("make read-only", path, e))?;
    }
    Ok(())
}

/// Where the layers live: on the private /tmp, which nothing outside sees.
const LAYER_DIR: &str = "/tmp/.a3s-iso-layer";

/// Where the session's layer directory, the admin dir as it is, and the admin dir's layer
/// are attached while the layers are built (all detached again once they are in place, so
/// the command never reaches an upper directory but through its overlay).
const SESSION_AT: &str = "/tmp/.a3s-iso-layer/session";
const ADMIN_LOWER_AT: &str = "/tmp/.a3s-iso-layer/admin-lower";
const ADMIN_LAYERED_AT: &str = "/tmp/.a3s-iso-layer/admin";

/// Attaches the session's layer directory and mounts its layer over a copy of the admin dir.
/// The staged copy of the admin dir is taken; [`layer_over`] stages the one to put back.
/// Whether the admin dir's layer took (otherwise the plain copy is staged again at once).
fn prepare_git_layers(staged: &mut Vec<(PathBuf, OwnedFd, bool)>, layers: &GitLayers) -> bool {
    // A copy that cannot be attached is staged again as it was.
    let attach = |staged: &mut Vec<(PathBuf, OwnedFd, bool)>, path: &Path, at: &str| {
        let Ok((copy, is_dir)) = take_staged(staged, path) else {
            return false;
        };
        let flags = MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH;
        let attached = std::fs::create_dir_all(at).is_ok()
            && move_mount(copy.as_fd_borrowed(), "", CWD, at, flags).is_ok();
        if !attached {
            staged.push((path.to_path_buf(), copy, is_dir));
        }
        attached
    };
    if !attach(staged, &layers.dir, SESSION_AT) {
        return false;
    }
    if !attach(staged, &layers.admin, ADMIN_LOWER_AT) {
        detach_layer_mounts();
        return false;
    }
    let session = Path::new(SESSION_AT).join("admin");
    let took = std::fs::create_dir_all(ADMIN_LAYERED_AT).is_ok()
        && overlay(
            Path::new(ADMIN_LOWER_AT),
            &session.join("upper"),
            &session.join("work"),
            Path::new(ADMIN_LAYERED_AT),
        )
        .is_ok();
    if !took {
        let _ = stage_admin(staged, &layers.admin, ADMIN_LOWER_AT);
        detach_layer_mounts();
    }
    took
}

/// Stages a copy of what is attached at `from` as the admin dir's copy to put back.
fn stage_admin(
    staged: &mut Vec<(PathBuf, OwnedFd, bool)>,
    admin: &Path,
    from: &str,
) -> std::io::Result<()> {
    let flags = OpenTreeFlags::OPEN_TREE_CLONE
        | OpenTreeFlags::AT_RECURSIVE
        | OpenTreeFlags::OPEN_TREE_CLOEXEC;
    let copy = open_tree(CWD, from, flags)?;
    staged.retain(|(p, ..)| p != admin);
    staged.push((admin.to_path_buf(), copy, true));
    Ok(())
}

/// Detaches what [`prepare_git_layers`] attached; the overlays keep their own references.
fn detach_layer_mounts() {
    for at in [ADMIN_LAYERED_AT, ADMIN_LOWER_AT, SESSION_AT] {
        while rustix::mount::unmount(at, rustix::mount::UnmountFlags::DETACH).is_ok() {}
    }
}

/// Covers `path` with a writable layer: the session's own when its layers are prepared (and
/// the admin dir's layer is staged to go back in its place), else a throwaway one (and the
/// admin dir as it is). Whether the session's layers are in place.
fn layer_over(
    path: &Path,
    layers: Option<&GitLayers>,
    staged: &mut Vec<(PathBuf, OwnedFd, bool)>,
) -> bool {
    let Some(layers) = layers else {
        scratch_layer(path);
        return false;
    };
    let session = Path::new(SESSION_AT).join("common");
    let took = overlay(path, &session.join("upper"), &session.join("work"), path).is_ok()
        && stage_admin(staged, &layers.admin, ADMIN_LAYERED_AT).is_ok();
    if !took {
        let _ = stage_admin(staged, &layers.admin, ADMIN_LOWER_AT);
        scratch_layer(path);
    }
    detach_layer_mounts();
    took
}

/// Where the run's layer directory is attached while its overlay is mounted.
const TREE_BASE_AT: &str = "/tmp/.a3s-iso-layer/tree";

/// Covers the isolation `dir` with the run's layer, whose directory `base` is attached on the
/// private /tmp only while the overlay is mounted. Best effort: `run` sees whether it took
/// (the overlay makes `work/work`) and otherwise snapshots the whole isolation. A `volatile`
/// layer (thrown away after) is mounted so where the kernel can (5.10 and later): its
/// unmount then skips the sync of the whole upper file system.
fn tree_layer(dir: &Path, base: BorrowedFd<'_>, volatile: bool) {
    let at = Path::new(TREE_BASE_AT);
    let flags = MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH;
    if std::fs::create_dir_all(at).is_err() || move_mount(base, "", CWD, at, flags).is_err() {
        return;
    }
    // Only with `userxattr`: then the kernel never writes redirects or metacopies, so the
    // upper holds whole files, whiteouts and opaque directories, and nothing else.
    let (upper, work) = (at.join("upper"), at.join("work"));
    let tries: &[&str] = match volatile {
        true => &[",userxattr,volatile", ",userxattr"],
        false => &[",userxattr"],
    };
    let _ = overlay_with(dir, &upper, &work, dir, tries);
    while rustix::mount::unmount(at, rustix::mount::UnmountFlags::DETACH).is_ok() {}
}

/// An overlay of a throwaway tmpfs layer over `path`. Best effort: without it git inside
/// only prints errors about locks it cannot take (kernels or file systems without overlays).
fn scratch_layer(path: &Path) {
    let base = Path::new(LAYER_DIR);
    let (upper, work) = (base.join("upper"), base.join("work"));
    if std::fs::create_dir_all(&upper).is_err() || std::fs::create_dir_all(&work).is_err() {
        return;
    }
    let _ = overlay(path, &upper, &work, path);
}

/// Mounts an overlay of `upper` over `lower` at `at` (in a user namespace the overlay keeps
/// its own attributes in `user.` extended attributes). A path the mount options cannot carry
/// (a comma, a colon or a backslash in it) is not tried.
fn overlay(lower: &Path, upper: &Path, work: &Path, at: &Path) -> std::result::Result<(), String> {
    overlay_with(lower, upper, work, at, &[",userxattr", ""])
}

/// [`overlay`], trying the mount options `tries` in turn after the layers'.
fn overlay_with(
    lower: &Path,
    upper: &Path,
    work: &Path,
    at: &Path,
    tries: &[&str],
) -> std::result::Result<(), String> {
    let plain = |p: &Path| {
        let text = p.to_string_lossy();
        match text.contains([',', ':', '\\']) {
            true => Err(format!(
                "{} has a character overlays cannot take",
                p.display()
            )),
            false => Ok(text.into_owned()),
        }
    };
    let (lower, upper, work) = (plain(lower)?, plain(upper)?, plain(work)?);
    let mut last = String::new();
    for extra in tries {
        let options = format!("lowerdir={lower},upperdir={upper},workdir={work}{extra}");
        let options = std::ffi::CString::new(options).map_err(|e| e.to_string())?;
        let flags = MountFlags::NOSUID | MountFlags::NODEV;
        match mount("overlay", at, "overlay", flags, options.as_c_str()) {
            Ok(()) => return Ok(()),
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!("no overlay: {last}"))
}

/// A new `devpts` instance on the private `/dev/pts` (ptys made inside are the only ones
/// there), the usual links, and the private `/dev` read-only.
fn fresh_dev() -> std::result::Result<(), String> {
    let pts = Path::new("/dev/pts");
    std::fs::create_dir_all(pts).map_err(|e| failed("create", pts, e))?;
    mount(
        "devpts",
        pts,
        "devpts",
        MountFlags::NOSUID | MountFlags::NOEXEC,
        c"newinstance,ptmxmode=0666,mode=0620",
    )
    .map_err(|e| failed("mount devpts on", pts, e))?;
    for (link, target) in DEV_LINKS {
        let link = Path::new(link);
        if std::fs::symlink_metadata(link).is_err() {
            std::os::unix::fs::symlink(target, link).map_err(|e| failed("link", link, e))?;
        }
    }
    let dev = Path::new(DEV);
    remount_read_only(dev).map_err(|e| failed("make read-only", dev, e))
}

/// Mounts a read-only sysfs of this network namespace on `/sys` and puts the host's mounts
/// that were under it back on top (copies taken after they turned read-only). Where the
/// kernel refuses a new sysfs, the host's interface directories are hidden instead: the
/// command sees none rather than the host's.
fn fresh_sys(submounts: &[PathBuf]) -> std::result::Result<(), String> {
    let flags = OpenTreeFlags::OPEN_TREE_CLONE
        | OpenTreeFlags::AT_RECURSIVE
        | OpenTreeFlags::OPEN_TREE_CLOEXEC;
    let copies: Vec<(&PathBuf, OwnedFd)> = submounts
        .iter()
        .filter_map(|p| open_tree(CWD, p, flags).ok().map(|copy| (p, copy)))
        .collect();
    let sys = Path::new(SYS);
    let read_only =
        MountFlags::RDONLY | MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
    if mount("sysfs", sys, "sysfs", read_only, c"").is_err() {
        for dir in ["/sys/class/net", "/sys/devices/virtual/net"] {
            hide(Path::new(dir))?;
        }
        return Ok(());
    }
    for (path, copy) in copies {
        // A mount point the new sysfs lacks (a subsystem of the host's only) stays away.
        if path.is_dir() {
            let _ = move_mount(
                copy.as_fd_borrowed(),
                "",
                CWD,
                path,
                MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
            );
        }
    }
    Ok(())
}

fn hide(path: &Path) -> std::result::Result<(), String> {
    // Under a private directory that was not put back, a secret is gone already.
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(());
    }
    let is_dir = std::fs::metadata(path).map(|m| m.is_dir()).unwrap_or(false);
    if is_dir {
        mount(
            "tmpfs",
            path,
            "tmpfs",
            MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
            c"mode=000,size=4k",
        )
        .map_err(|e| failed("hide", path, e))?;
    } else {
        mount_bind("/dev/null", path).map_err(|e| failed("hide", path, e))?;
    }
    remount_read_only(path).map_err(|e| failed("hide", path, e))
}

/// Borrowing an owned descriptor, named for what the mount calls take.
trait AsFdBorrowed {
    fn as_fd_borrowed(&self) -> BorrowedFd<'_>;
}

impl AsFdBorrowed for OwnedFd {
    fn as_fd_borrowed(&self) -> BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_escapes_are_decoded() {
        assert_eq!(unescape("/a\\040b"), PathBuf::from("/a b"));
        assert_eq!(unescape("/plain"), PathBuf::from("/plain"));
    }

    #[test]
    fn writable_paths_are_staged_before_the_host_turns_read_only() {
        let spec = SandboxSpec {
            writable: vec!["/tmp/w/iso".into()],
            visible: vec!["/tmp/w/src/.git".into(), "/home/u".into()],
            private: vec!["/tmp".into()],
            frozen: vec!["/tmp/w/iso/.git".into()],
            hidden: vec!["/home/u/.ssh".into()],
            ..SandboxSpec::default()
        };
        let steps = plan(&spec, &["/".into(), "/tmp".into(), "/proc".into()]);
        assert_eq!(
            steps,
            vec![
                Step::Stage("/tmp/w/iso".into()),
                Step::Stage("/tmp/w/src/.git".into()),
                Step::ReadOnly("/".into()),
                Step::Private {
                    path: "/tmp".into(),
                    mode: 0o1777
                },
                Step::Restore {
                    path: "/tmp/w/iso".into(),
                    writable: true
                },
                Step::Restore {
                    path: "/tmp/w/src/.git".into(),
                    writable: false
                },
                Step::Freeze("/tmp/w/iso/.git".into()),
                Step::Hide("/home/u/.ssh".into()),
            ]
        );
    }

    #[test]
    fn a_denied_network_gets_a_sysfs_of_its_own_with_the_hosts_mounts_under_it_put_back() {
        let host: Vec<PathBuf> = [
            "/",
            "/sys",
            "/sys/fs/cgroup",
            "/sys/fs/cgroup/cpu",
            "/sys/kernel/security",
            "/tmp",
            "/sysroot",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        let spec = SandboxSpec {
            private: vec!["/tmp".into()],
            deny_network: true,
            ..SandboxSpec::default()
        };
        let steps = plan(&spec, &host);
        let fresh = Step::FreshSys(vec!["/sys/fs/cgroup".into(), "/sys/kernel/security".into()]);
        let at = steps
            .iter()
            .position(|s| *s == fresh)
            .expect("a fresh sysfs");
        // After every host mount is read-only (the copies put back stay so), before the rest.
        assert_eq!(steps[at - 1], Step::ReadOnly("/sysroot".into()));
        assert!(matches!(steps[at + 1], Step::Private { .. }));
        let allowed = SandboxSpec {
            deny_network: false,
            ..spec
        };
        let steps = plan(&allowed, &host);
        assert!(!steps.iter().any(|s| matches!(s, Step::FreshSys(_))));
    }

    #[test]
    fn the_sessions_layers_go_in_before_anything_deeper_and_refs_are_sealed_only_without_them() {
        let layers = GitLayers {
            dir: "/w/src/.git/a3s-iso/session-git/s".into(),
            admin: "/w/src/.git/worktrees/iso".into(),
            sealed_otherwise: vec!["/w/src/.git/refs".into()],
        };
        let spec = SandboxSpec {
            writable: vec!["/w/src/.git/worktrees/iso".into()],
            visible: vec!["/w/src/.git".into()],
            sealed: vec!["/w/src/.git/objects".into()],
            scratch_layer: Some("/w/src/.git".into()),
            git_layers: Some(layers.clone()),
            ..SandboxSpec::default()
        };
        let steps = plan(&spec, &["/".into()]);
        assert_eq!(
            steps,
            vec![
                Step::Stage("/w/src/.git/objects".into()),
                Step::Stage("/w/src/.git/refs".into()),
                Step::Stage("/w/src/.git/worktrees/iso".into()),
                Step::Stage(layers.dir.clone()),
                Step::ReadOnly("/".into()),
                Step::PrepareGitLayers(layers),
                Step::Layer("/w/src/.git".into()),
                Step::Restore {
                    path: "/w/src/.git/objects".into(),
                    writable: false
                },
                Step::RestoreUnlessLayered("/w/src/.git/refs".into()),
                Step::Restore {
                    path: "/w/src/.git/worktrees/iso".into(),
                    writable: true
                },
            ]
        );
    }

    #[test]
    fn the_resolver_is_pointed_at_the_responder_last_and_only_when_asked() {
        let spec = SandboxSpec {
            deny_network: true,
            private: vec!["/tmp".into()],
            hidden: vec!["/h/.ssh".into()],
            dns: true,
            ..SandboxSpec::default()
        };
        let steps = plan(&spec, &["/".into()]);
        // After everything else: the private /tmp it is written on is in place by then.
        assert_eq!(steps.last(), Some(&Step::Resolver), "{steps:?}");
        let without = SandboxSpec { dns: false, ..spec };
        let steps = plan(&without, &["/".into()]);
        assert!(!steps.contains(&Step::Resolver), "{steps:?}");
    }

    #[test]
    fn the_runs_layer_covers_the_isolation_before_anything_deeper_and_its_base_is_never_put_back() {
        let layer = crate::spec::FileLayer {
            dir: "/w/iso".into(),
            base: "/w/src/.git/a3s-iso/overlays/r".into(),
            volatile: false,
        };
        let spec = SandboxSpec {
            writable: vec!["/w/iso".into(), "/w/iso/deeper".into()],
            frozen: vec!["/w/iso/.git".into()],
            tree_layer: Some(layer.clone()),
            ..SandboxSpec::default()
        };
        let steps = plan(&spec, &["/".into()]);
        assert_eq!(
            steps,
            vec![
                Step::Stage("/w/iso".into()),
                Step::Stage("/w/iso/deeper".into()),
                Step::Stage(layer.base.clone()),
                Step::ReadOnly("/".into()),
                Step::Restore {
                    path: "/w/iso".into(),
                    writable: true
                },
                Step::TreeLayer {
                    dir: layer.dir,
                    base: layer.base,
                    volatile: false,
                },
                Step::Restore {
                    path: "/w/iso/deeper".into(),
                    writable: true
                },
                Step::Freeze("/w/iso/.git".into()),
            ]
        );
    }

    #[test]
    fn a_private_dev_gets_the_device_nodes_back_but_never_the_hosts_ptys() {
        let spec = SandboxSpec {
            writable: ["/dev/null", "/dev/tty", "/dev/ptmx", "/dev/pts"]
                .map(PathBuf::from)
                .to_vec(),
            private: vec!["/dev".into(), "/dev/shm".into()],
            ..SandboxSpec::default()
        };
        let steps = plan(&spec, &["/".into(), "/dev".into(), "/dev/pts".into()]);
        assert_eq!(
            steps,
            vec![
                Step::Stage("/dev/null".into()),
                Step::Stage("/dev/tty".into()),
                Step::ReadOnly("/".into()),
                Step::Private {
                    path: "/dev".into(),
                    mode: 0o755
                },
                Step::Private {
                    path: "/dev/shm".into(),
                    mode: 0o1777
                },
                Step::Restore {
                    path: "/dev/null".into(),
                    writable: true
                },
                Step::Restore {
                    path: "/dev/tty".into(),
                    writable: true
                },
                Step::FreshDev,
            ]
        );
    }
}
