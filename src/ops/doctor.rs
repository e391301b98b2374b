//! `doctor`: whether a3s-iso can work here (git, the sandbox, the file system, the store), each
//! finding with a hint. Reads only, but for two reflink probe files and a sandboxed trial.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::base::owner::Liveness;
use crate::base::probe;
use crate::base::sandbox::{SIMULATE_NO_NAMESPACES, landlock_abi};
use crate::context::Context;
use crate::git::Git;
use crate::git::repo::Repo;
use crate::store::layout::StateDir;
use crate::store::lock::FileLock;
use crate::store::state::Store;

/// What was checked (stable codes, as in JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckName {
    /// The git binary: found, and new enough.
    Git,
    /// Landlock, the sandbox's second layer for writes.
    Landlock,
    /// User namespaces (the sandbox maps the caller's own ids in one).
    UserNamespace,
    /// Mount namespaces (the read-only view of the host).
    MountNamespace,
    /// PID namespaces (nothing a run starts outlives it).
    PidNamespace,
    /// Network namespaces (the default: loopback only).
    NetNamespace,
    /// Seccomp filters.
    Seccomp,
    /// Pseudo-terminals, for interactive runs.
    Pty,
    /// A sandboxed trial: the helper ran a command inside every layer.
    SandboxTrial,
    /// The repository of the directory doctor was started in.
    Repository,
    /// The file system of the source's parent directory, where isolations are made.
    Filesystem,
    /// Whether that file system clones files (FICLONE).
    Reflink,
    /// The state dir.
    StateDir,
    /// The repository lock.
    Lock,
    /// The user-level registry of sources.
    UserRegistry,
    /// Bind claims whose bind process is dead.
    StaleClaims,
    /// Promote intents a crash left (finished by the next command that takes the lock).
    UnfinishedIntents,
    /// Tree operations (retain, sweep) a crash left.
    PendingTreeOperations,
    /// Scratch and quarantine entries of dead processes.
    ScratchLeftovers,
    /// Whether a profile's agent (a program of the profile's name on `PATH`) lives where
    /// `run` shows an empty directory (`/tmp`, `/var/tmp`, the runtime dir).
    AgentTools,
}

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// Works.
    Ok,
    /// Works, with a limit or something to clean up.
    Warn,
    /// Does not work: what needs it is unavailable here.
    Fail,
}

/// One finding.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What was checked.
    pub name: CheckName,
    /// How it came out.
    pub status: CheckStatus,
    /// What was found.
    pub detail: String,
    /// What to do about it (`None` where there is nothing to do).
    pub hint: Option<String>,
}

impl Check {
    fn ok(name: CheckName, detail: impl Into<String>) -> Check {
        Check {
            name,
            status: CheckStatus::Ok,
            detail: detail.into(),
            hint: None,
        }
    }

    fn warn(name: CheckName, detail: impl Into<String>, hint: impl Into<String>) -> Check {
        Check {
            status: CheckStatus::Warn,
            hint: Some(hint.into()),
            ..Check::ok(name, detail)
        }
    }

    fn fail(name: CheckName, detail: impl Into<String>, hint: impl Into<String>) -> Check {
        Check {
            status: CheckStatus::Fail,
            ..Check::warn(name, detail, hint)
        }
    }
}

/// What `doctor` reports.
#[derive(Debug, Clone, Serialize)]
pub struct DoctorReport {
    /// Every check, in a fixed order.
    pub checks: Vec<Check>,
    /// The git version (`None` when git is not usable).
    pub git_version: Option<String>,
    /// The kernel release.
    pub kernel: String,
    /// The Landlock ABI `run` would use (`None` without Landlock).
    pub landlock_abi: Option<i64>,
    /// Whether `run` can sandbox a command here (no sandbox check failed).
    pub sandbox_available: bool,
    /// What every sandboxed run is kept from: credentials, agents' logins, profiles' copies.
    pub hidden: Vec<crate::services::profile::HiddenSecret>,
}

impl DoctorReport {
    /// 0 when everything needed works (warnings allowed); 4 (unavailable) when a check failed.
    pub fn exit_code(&self) -> i32 {
        if self.checks.iter().any(|c| c.status == CheckStatus::Fail) {
            4
        } else {
            0
        }
    }
}

/// What `doctor` is asked: the global options, not a context, since git may be missing.
#[derive(Debug, Clone)]
pub struct DoctorOptions {
    /// `--git`.
    pub git: Option<PathBuf>,
    /// `-C`, else the current directory.
    pub start_dir: PathBuf,
    /// `--state-dir`.
    pub state_dir: Option<PathBuf>,
    /// The a3s-iso executable that runs the sandbox helper (default: this one).
    pub helper: Option<PathBuf>,
    /// Count a kernel without Landlock (ABI 3 or later) as unable to sandbox, for hosts that
    /// want both layers; by default the mounts alone are enough and Landlock is a warning.
    pub require_landlock: bool,
}

/// Runs every check.
pub fn doctor(opts: &DoctorOptions) -> DoctorReport {
    let (git, git_check) = git_check(opts.git.as_deref());
    let mut checks = vec![git_check];
    checks.extend(sandbox_checks(opts));
    let sandbox_available = !checks.iter().any(|c| {
        c.status == CheckStatus::Fail && c.name != CheckName::Git && c.name != CheckName::Pty
    });
    if let Some(git) = &git {
        checks.extend(repository_checks(git, opts));
    }
    checks.push(registry_check());
    checks.push(agent_tools_check());
    DoctorReport {
        checks,
        git_version: git.as_ref().map(|g| g.version().to_string()),
        kernel: probe::kernel_release(),
        landlock_abi: landlock_abi(),
        sandbox_available,
        hidden: hidden_set(),
    }
}

/// The hidden set for this user; empty without a home or a readable user file.
fn hidden_set() -> Vec<crate::services::profile::HiddenSecret> {
    let Some(home) = std::env::var_os("HOME").map(PathBuf::from) else {
        return Vec::new();
    };
    let user = crate::services::config::user_profiles().ok().flatten();
    crate::services::profile::hidden_set(&home, user.as_ref()).unwrap_or_default()
}

/// Each profile's agent on `PATH` that resolves (or its `#!` interpreter) into a directory
/// `run` empties, with the `--allow-read` that lets it through.
fn agent_tools_check() -> Check {
    let user = crate::services::config::user_profiles().ok().flatten();
    let profiles = crate::services::profile::all(user.as_ref()).unwrap_or_default();
    // As `run` sees them: the private directories empty, the home directory back.
    let spec = crate::base::sandbox::SandboxSpec {
        private: crate::base::sandbox::private_dirs(true),
        visible: std::env::var_os("HOME")
            .map(PathBuf::from)
            .into_iter()
            .collect(),
        ..crate::base::sandbox::SandboxSpec::default()
    };
    let path = std::env::var_os("PATH");
    let mut hidden: Vec<String> = Vec::new();
    let mut flags: Vec<String> = Vec::new();
    for profile in &profiles {
        let program = std::ffi::OsStr::new(&profile.name);
        for tool in crate::services::hidden_tools::find(&spec, program, path.as_deref()) {
            hidden.push(format!(
                "profile {}: {} resolves to {}, under {}",
                profile.name,
                profile.name,
                tool.path.display(),
                tool.under.as_deref().unwrap_or(Path::new("/")).display()
            ));
            flags.push(format!("--allow-read {}", tool.allow_path.display()));
        }
    }
    if hidden.is_empty() {
        return Check::ok(
            CheckName::AgentTools,
            "no profile's agent on PATH lives where run shows an empty directory",
        );
    }
    Check::warn(
        CheckName::AgentTools,
        format!(
            "{}: run replaces that directory with an empty one, so the agent is not found inside",
            hidden.join("; ")
        ),
        format!("run it with {} (or install it elsewhere)", flags.join(" ")),
    )
}

fn git_check(explicit: Option<&Path>) -> (Option<Git>, Check) {
    match Git::locate(explicit) {
        Ok(git) => {
            let detail = format!(
                "git {} at {} (needs {})",
                git.version(),
                git.path().display(),
                Git::minimum_version()
            );
            (Some(git), Check::ok(CheckName::Git, detail))
        }
        Err(err) => (
            None,
            Check::fail(
                CheckName::Git,
                err.to_string(),
                format!(
                    "install git {} or newer, or name one with --git / A3S_ISO_GIT",
                    Git::minimum_version()
                ),
            ),
        ),
    }
}

/// The layers `run` enforces, each as this kernel offers it, then a trial of all of them.
fn sandbox_checks(opts: &DoctorOptions) -> Vec<Check> {
    let simulated = std::env::var_os(SIMULATE_NO_NAMESPACES).is_some_and(|v| !v.is_empty());
    let mut checks = vec![
        landlock_check(opts.require_landlock),
        user_namespace_check(simulated),
    ];
    for (name, kind, what) in [
        (
            CheckName::MountNamespace,
            "mnt",
            "the read-only view of the host",
        ),
        (
            CheckName::PidNamespace,
            "pid",
            "ending every process a run starts",
        ),
        (
            CheckName::NetNamespace,
            "net",
            "denying the network (the default)",
        ),
    ] {
        checks.push(if probe::has_namespace(kind) && !simulated {
            Check::ok(name, format!("{kind} namespaces available"))
        } else {
            Check::fail(
                name,
                format!("no {kind} namespaces: `run` needs them for {what}"),
                "use a kernel built with namespaces, or run with --no-sandbox where that is acceptable",
            )
        });
    }
    checks.push(match probe::seccomp_actions() {
        Some(actions) => Check::ok(CheckName::Seccomp, format!("filters available ({actions})")),
        None => Check::fail(
            CheckName::Seccomp,
            "the kernel offers no seccomp filters",
            "use a kernel built with CONFIG_SECCOMP_FILTER",
        ),
    });
    checks.push(match probe::pty_available() {
        Ok(()) => Check::ok(CheckName::Pty, "pseudo-terminals available"),
        Err(e) => Check::warn(
            CheckName::Pty,
            e,
            "interactive runs need /dev/ptmx (mount devpts); other runs are unaffected",
        ),
    });
    checks.push(trial_check(opts.helper.as_deref()));
    checks
}

fn landlock_check(required: bool) -> Check {
    let (detail, hint) = match landlock_abi() {
        Some(abi) if abi >= 3 => {
            return Check::ok(
                CheckName::Landlock,
                format!("ABI {abi}: writes confined by Landlock as a second layer"),
            );
        }
        Some(abi) => (
            format!("ABI {abi}: a second layer with fewer write rights than ABI 3"),
            "a kernel of 6.2 or later gives every write right; the mounts confine writes anyway",
        ),
        None => (
            "no Landlock: the read-only mounts alone confine a run's writes".to_string(),
            "enable Landlock (CONFIG_SECURITY_LANDLOCK, lsm=landlock) for a second layer",
        ),
    };
    if required {
        Check::fail(
            CheckName::Landlock,
            format!(
                "{detail} (both layers required; --landlock-optional accepts the mounts alone)"
            ),
            hint,
        )
    } else {
        Check::warn(CheckName::Landlock, detail, hint)
    }
}

fn user_namespace_check(simulated: bool) -> Check {
    let name = CheckName::UserNamespace;
    let hint = "allow unprivileged user namespaces (sysctl user.max_user_namespaces, \
                kernel.unprivileged_userns_clone=1), or run with --no-sandbox where acceptable";
    if simulated || !probe::has_namespace("user") {
        return Check::fail(name, "the kernel does not offer user namespaces", hint);
    }
    if probe::sysctl_number("/proc/sys/user/max_user_namespaces") == Some(0) {
        return Check::fail(name, "user.max_user_namespaces is 0", hint);
    }
    if !probe::is_root() {
        if probe::sysctl_number("/proc/sys/kernel/unprivileged_userns_clone") == Some(0) {
            return Check::fail(name, "kernel.unprivileged_userns_clone is 0", hint);
        }
        if probe::sysctl_number("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == Some(1)
        {
            return Check::warn(
                name,
                "AppArmor restricts unprivileged user namespaces",
                "the sandboxed trial below tells whether a3s-iso may create them; if not, \
                 give it an AppArmor profile that allows userns",
            );
        }
    }
    Check::ok(name, "user namespaces available")
}

fn trial_check(helper: Option<&Path>) -> Check {
    let helper = helper
        .map(Path::to_path_buf)
        .or_else(|| std::env::current_exe().ok());
    let Some(helper) = helper else {
        return Check::fail(
            CheckName::SandboxTrial,
            "cannot find the a3s-iso executable to run the sandbox helper",
            "run doctor from an installed a3s-iso",
        );
    };
    match probe::sandbox_trial(&helper) {
        Ok(()) => Check::ok(
            CheckName::SandboxTrial,
            "a command ran inside every layer (namespaces, read-only mounts, seccomp)",
        ),
        Err(err) => Check::fail(
            CheckName::SandboxTrial,
            format!("`run` cannot sandbox here: {err}"),
            "fix the failing layers above; `run --no-sandbox` runs unconfined",
        ),
    }
}

/// The source, where its isolations go, its state store and what crashes left there.
fn repository_checks(git: &Git, opts: &DoctorOptions) -> Vec<Check> {
    let ctx = Context::new(git.clone(), opts.start_dir.clone(), opts.state_dir.clone());
    let located = match crate::recovery::locate(&ctx) {
        Ok(located) => located,
        Err(err) => {
            return vec![Check::warn(
                CheckName::Repository,
                format!("not in a repository a3s-iso can isolate: {err}"),
                "run doctor in a source checkout (or with -C) to check its state too",
            )];
        }
    };
    let repo = &located.repo;
    let mut checks = vec![Check::ok(
        CheckName::Repository,
        format!("source {}", repo.toplevel.display()),
    )];
    checks.extend(filesystem_checks(&repo.toplevel));
    checks.extend(store_checks(repo, &located.store));
    checks
}

fn filesystem_checks(source: &Path) -> Vec<Check> {
    let parent = source.parent().unwrap_or(source);
    let fs = match probe::filesystem_name(parent) {
        Ok(name) => Check::ok(
            CheckName::Filesystem,
            format!("{name} at {} (where isolations are made)", parent.display()),
        ),
        Err(e) => Check::warn(
            CheckName::Filesystem,
            format!("cannot tell the file system: {e}"),
            "bind needs to create directories next to the source",
        ),
    };
    let reflink = match probe::reflink_available(parent) {
        Ok(true) => Check::ok(
            CheckName::Reflink,
            "files can be cloned (FICLONE): isolations are copy-on-write clones of a pristine tree",
        ),
        Ok(false) => Check {
            hint: Some("a file system with reflink (btrfs, xfs, bcachefs) shares unchanged blocks; nothing needs it".into()),
            ..Check::ok(
                CheckName::Reflink,
                "no reflink here: isolations are checkouts, copies take their own blocks",
            )
        },
        Err(e) => Check::warn(
            CheckName::Reflink,
            e,
            "bind creates isolations next to the source: that directory must be writable",
        ),
    };
    vec![fs, reflink]
}

fn store_checks(repo: &Repo, store: &Store) -> Vec<Check> {
    let dir = store.dir();
    let state = if !dir.exists() {
        Check::ok(
            CheckName::StateDir,
            format!("{} (created by the first bind)", dir.display()),
        )
    } else if rustix::fs::access(dir, rustix::fs::Access::WRITE_OK).is_ok() {
        Check::ok(CheckName::StateDir, dir.display().to_string())
    } else {
        Check::fail(
            CheckName::StateDir,
            format!("{} is not writable", dir.display()),
            "fix its permissions, or choose another with --state-dir / A3S_ISO_STATE_DIR",
        )
    };
    vec![
        state,
        lock_check(&repo.lock_path()),
        claims_check(store),
        count_check(
            CheckName::UnfinishedIntents,
            json_files(&StateDir::Intents.under(dir)),
            "interrupted promote(s) recorded",
            "the next command that takes the repository lock (bind, promote, sweep, …) \
             finishes or rolls each back",
        ),
        count_check(
            CheckName::PendingTreeOperations,
            store.pending_ids().map(|ids| ids.len()).unwrap_or(0),
            "interrupted retain or sweep tree move(s)",
            "the next `a3s-iso list` or command that changes state finishes or undoes them",
        ),
        count_check(
            CheckName::ScratchLeftovers,
            crate::store::scratch::leftovers(dir).len(),
            "scratch, quarantine, private TMPDIR or half-written record files left by dead processes",
            "the next command that changes state removes them",
        ),
    ]
}

fn lock_check(path: &Path) -> Check {
    match FileLock::is_held(path) {
        Ok(false) => Check::ok(CheckName::Lock, format!("{} is free", path.display())),
        Ok(true) => {
            let holder = std::fs::read_to_string(path).unwrap_or_default();
            Check::warn(
                CheckName::Lock,
                format!("held now: {}", holder.trim()),
                "another a3s-iso command is working; commands wait up to --lock-timeout",
            )
        }
        Err(err) => Check::warn(
            CheckName::Lock,
            err.to_string(),
            "commands that change state need to open the lock file",
        ),
    }
}

fn claims_check(store: &Store) -> Check {
    let stale = store
        .claims()
        .unwrap_or_default()
        .iter()
        .filter(|c| c.bind_process.liveness() == Liveness::Dead)
        .count();
    count_check(
        CheckName::StaleClaims,
        stale,
        "bind claim(s) whose bind process died",
        "any a3s-iso command clears them once they are 10 minutes old; `a3s-iso sweep --grace 0s` (or binding the same id again) clears them now",
    )
}

fn count_check(name: CheckName, count: usize, what: &str, hint: &str) -> Check {
    if count == 0 {
        Check::ok(name, "none")
    } else {
        Check::warn(name, format!("{count} {what}"), hint)
    }
}

fn json_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| {
                    let name = e.file_name();
                    let name = name.to_string_lossy();
                    name.ends_with(".json") && !name.starts_with('.')
                })
                .count()
        })
        .unwrap_or(0)
}

fn registry_check() -> Check {
    let Some(dir) = crate::store::state::user_data_dir() else {
        return Check::warn(
            CheckName::UserRegistry,
            "no user data directory (HOME is not set)",
            "set HOME so that `list --all` and `sweep --all` can find every source",
        );
    };
    let registered = match json_files(&dir.join("sources")) {
        0 => "no source registered".to_string(),
        1 => "1 source registered".to_string(),
        n => format!("{n} sources registered"),
    };
    Check::ok(
        CheckName::UserRegistry,
        format!("{} ({registered})", dir.display()),
    )
}
