//! What this machine offers, read without changing anything: kernel features the sandbox
//! needs, the file system a directory is on, and whether it can clone files (reflink). Used
//! by `doctor` and `version`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::base::error::{Error, IoContext, Result};
use crate::base::sandbox::{self, SandboxSpec};

/// The kernel's release (`uname -r`).
pub fn kernel_release() -> String {
    rustix::system::uname()
        .release()
        .to_string_lossy()
        .into_owned()
}

/// Whether this process can see namespaces of `kind` (`user`, `mnt`, `pid`, `net`).
pub fn has_namespace(kind: &str) -> bool {
    Path::new("/proc/self/ns").join(kind).exists()
}

/// A number from a `/proc/sys` file (`None` where the file is not there).
pub fn sysctl_number(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The seccomp filter actions the kernel offers (`None` without seccomp filters).
pub fn seccomp_actions() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail")
        .ok()
        .map(|s| s.trim().to_string())
}

/// Whether a pseudo-terminal can be opened here (what `run` gives an interactive command).
pub fn pty_available() -> std::result::Result<(), String> {
    use rustix::pty::{OpenptFlags, openpt};
    openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY | OpenptFlags::CLOEXEC)
        .map(drop)
        .map_err(|e| format!("cannot open /dev/ptmx: {e}"))
}

/// Whether this process runs as root (uid 0).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The name of the file system `dir` is on (`ext4`, `btrfs`, …; hex magic when unknown).
pub fn filesystem_name(dir: &Path) -> std::result::Result<String, String> {
    let stat = rustix::fs::statfs(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    #[allow(clippy::unnecessary_cast)] // f_type's width differs between targets
    let magic = stat.f_type as u64;
    let name = match magic {
        0xEF53 => "ext4",
        0x9123_683E => "btrfs",
        0x5846_5342 => "xfs",
        0x0102_1994 => "tmpfs",
        0x794C_7630 => "overlay",
        0x2FC1_2FC1 => "zfs",
        0xF2F5_2010 => "f2fs",
        0xCA45_1A4E => "bcachefs",
        0x6969 => "nfs",
        0xFF53_4D42 | 0xFE53_4D42 => "cifs",
        0x6573_5546 => "fuse",
        0x0102_1997 => "9p",
        _ => return Ok(format!("0x{magic:x}")),
    };
    Ok(name.to_string())
}

/// Whether files in `dir` can be cloned (FICLONE), tried on two temporary files there.
pub fn reflink_available(dir: &Path) -> std::result::Result<bool, String> {
    let suffix = crate::base::fsutil::unique_suffix();
    let src = dir.join(format!(".a3s-iso-reflink-{suffix}.src"));
    let dst = dir.join(format!(".a3s-iso-reflink-{suffix}.dst"));
    let result = clone_probe(&src, &dst);
    let _ = std::fs::remove_file(&src);
    let _ = std::fs::remove_file(&dst);
    result
}

fn clone_probe(src: &Path, dst: &Path) -> std::result::Result<bool, String> {
    let create = |path: &Path| {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| format!("cannot create a probe file in {}: {e}", display_dir(path)))
    };
    let mut from = create(src)?;
    from.write_all(b"a3s-iso reflink probe\n")
        .and_then(|()| from.sync_all())
        .map_err(|e| format!("cannot write {}: {e}", src.display()))?;
    let to = create(dst)?;
    Ok(rustix::fs::ioctl_ficlone(&to, &from).is_ok())
}

fn display_dir(path: &Path) -> String {
    path.parent().unwrap_or(path).display().to_string()
}

/// How long a sandboxed trial may take before it counts as failed.
const TRIAL_PATIENCE: Duration = Duration::from_secs(20);

/// Runs the helper's own `--version` in a minimal sandbox (network denied, a fresh temporary
/// directory writable): `Ok` when it ran to success inside every layer, else the helper's report.
pub fn sandbox_trial(helper: &Path) -> Result<()> {
    let dir = TrialDir::new()?;
    let spec = SandboxSpec {
        deny_network: true,
        writable: vec![dir.0.clone()],
        workdir: dir.0.clone(),
        ..SandboxSpec::default()
    };
    sandbox::probe(&spec)?;
    let spec_json = serde_json::to_string(&spec).map_err(|e| Error::internal(e.to_string()))?;
    let mut channel = sandbox::StatusChannel::new()
        .map_err(|e| Error::io("cannot make the sandbox helper's channel", e))?;
    let mut command = Command::new(helper);
    command.arg("sandbox-exec");
    channel.pass_to(&mut command);
    let mut child = command
        .arg("--spec")
        .arg(spec_json)
        .arg("--")
        .arg(helper)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Error::io(format!("cannot start {}", helper.display()), e))?;
    channel.spawned();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| Error::io("cannot wait for the sandbox trial", e))?
        {
            break status;
        }
        if started.elapsed() > TRIAL_PATIENCE {
            let _ = child.kill();
            let _ = child.wait();
            return Err(unavailable("a sandboxed trial did not finish in 20 s"));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    if let Some(failure) = channel.failure() {
        return Err(crate::base::sandbox::failure_error(failure));
    }
    match status.success() {
        true => Ok(()),
        false => Err(unavailable(format!(
            "a sandboxed trial ended with {status}"
        ))),
    }
}

fn unavailable(message: impl Into<String>) -> Error {
    Error::SandboxUnavailable {
        message: message.into(),
    }
}

/// A private temporary directory, removed when dropped.
struct TrialDir(PathBuf);

impl TrialDir {
    fn new() -> Result<TrialDir> {
        let dir = std::env::temp_dir().join(format!(
            "a3s-iso-doctor-{}",
            crate::base::fsutil::unique_suffix()
        ));
        std::fs::create_dir(&dir).ctx(|| format!("cannot create {}", dir.display()))?;
        // Canonical, so the sandbox's mount plan sees the path the kernel reports.
        Ok(TrialDir(std::fs::canonicalize(&dir).unwrap_or(dir)))
    }
}

impl Drop for TrialDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The kernel features the sandbox relies on, as this process sees them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Features {
    /// The kernel release.
    pub kernel: String,
    /// The Landlock ABI (`None` without Landlock).
    pub landlock_abi: Option<i64>,
    /// User namespaces.
    pub user_namespaces: bool,
    /// Mount namespaces.
    pub mount_namespaces: bool,
    /// PID namespaces.
    pub pid_namespaces: bool,
    /// Network namespaces.
    pub net_namespaces: bool,
    /// Seccomp filters.
    pub seccomp: bool,
}

/// The kernel features, read without trying them (`doctor` tries them).
pub fn features() -> Features {
    let simulated =
        std::env::var_os(sandbox::SIMULATE_NO_NAMESPACES).is_some_and(|v| !v.is_empty());
    let ns = |kind: &str| !simulated && has_namespace(kind);
    Features {
        kernel: kernel_release(),
        landlock_abi: sandbox::landlock_abi(),
        user_namespaces: ns("user"),
        mount_namespaces: ns("mnt"),
        pid_namespaces: ns("pid"),
        net_namespaces: ns("net"),
        seccomp: seccomp_actions().is_some(),
    }
}
