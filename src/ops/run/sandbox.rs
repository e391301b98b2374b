//! A run's sandbox: what the command may write beyond its directories (`Granted`) and the
//! spec the helper enters, checked against this kernel before anything runs.

use std::path::{Path, PathBuf};

use crate::base::error::Result;
use crate::base::invalid::Invalid;
use crate::base::sandbox::{self, NetworkAccess, SandboxSpec, TerminalSpec};
use crate::base::warning::Warning;
use crate::ops::run::request::RunOptions;
use crate::ops::run::target::Claimed;
use crate::services::caches;
use crate::services::network::PROXY_PORT;
use crate::services::profile::Profile;
use crate::services::profile_review;
use crate::store::state::RunSandbox;

/// The sandbox a run gets (`None` with `--no-sandbox`), checked against this kernel. Writable:
/// the isolation, its admin dir, the run's quarantine and TMPDIR, the device nodes and what was
/// allowed; the git dir stays readable and the isolation's links to it frozen.
pub(crate) fn sandbox_for(
    opts: &RunOptions,
    settings: &RunSandbox,
    claimed: &Claimed,
    (workdir, granted): (&Path, &Granted),
    terminal: TerminalSpec,
) -> Result<Option<SandboxSpec>> {
    if !settings.enabled {
        return Ok(None);
    }
    let (located, isolation) = (&claimed.target.located, &claimed.target.isolation);
    let (private_tmp, quarantine) = (claimed.private_tmp.path(), claimed.quarantine.dir());
    let deny_network = settings.network != NetworkAccess::Allowed;
    let (allow_write, allow_read) = (&settings.allow_write, &settings.allow_read);
    let mut writable = vec![
        isolation.tree.clone(),
        isolation.admin.clone(),
        quarantine.to_path_buf(),
        private_tmp.to_path_buf(),
    ];
    writable.extend(sandbox::DEVICE_NODES.iter().map(PathBuf::from));
    writable.extend(
        allow_write
            .iter()
            .filter(|p| !granted.not_mounted.contains(p))
            .cloned(),
    );
    writable.extend(granted.layers.root().map(Path::to_path_buf));
    writable.extend(granted.caches.writable.iter().cloned());
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut visible = vec![located.repo.common_dir.clone()];
    visible.extend(home.iter().cloned());
    visible.extend(allow_read.iter().cloned());
    visible.extend(program_path(&opts.command[0]));
    // A layered directory under a private one comes back before its layer goes on.
    visible.extend(granted.layers.spec().into_iter().map(|l| l.dir));
    let spec = SandboxSpec {
        deny_network,
        writable,
        visible,
        private: sandbox::private_dirs(deny_network),
        frozen: ["commondir", "gitdir"]
            .iter()
            .map(|f| isolation.admin.join(f))
            .chain([isolation.tree.join(".git")])
            .filter(|p| p.is_file())
            .collect(),
        sealed: ["objects", "refs", "config"]
            .iter()
            .map(|d| located.repo.common_dir.join(d))
            .filter(|p| p.exists())
            .collect(),
        scratch_layer: Some(located.repo.common_dir.clone()),
        layers: granted.layers.spec(),
        mounted: granted.mounted.clone(),
        git_layers: None,
        tree_layer: None,
        hidden: hidden_paths(
            home.as_deref(),
            allow_read,
            deny_network,
            (&logins(opts), &granted.mounted),
        ),
        workdir: workdir.to_path_buf(),
        terminal,
        proxy_port: (settings.network == NetworkAccess::Allowlist).then_some(PROXY_PORT),
        dns: deny_network,
    };
    sandbox::probe(&spec)?;
    Ok(Some(spec))
}

/// What a run may write beyond its directories: layered allowed files, a profile's home paths.
pub(crate) struct Granted {
    /// The layers, read back once the command has ended.
    pub layers: crate::services::writeback::Layers,
    /// The profile's copies of directories, mounted over the real ones.
    pub mounted: Vec<sandbox::MountedDir>,
    /// The `--allow-write` files not mounted writable: layered, or in a writable directory.
    pub not_mounted: Vec<PathBuf>,
    /// The profile and its copies for this repository, reviewed after the command.
    pub kept: Option<(Profile, profile_review::Kept)>,
    /// What the review before the command held (of a run killed before its own review).
    pub held: Vec<Warning>,
    /// The caches of the presets' package managers: writable directories and variables.
    pub caches: caches::CachePlan,
}

impl Granted {
    /// Makes the layers and the profile's copies a sandboxed run needs: each `--allow-write`
    /// file whose directory is not writable already, and with a profile naming home paths,
    /// the home directory as a whole (where its mount points are made).
    pub(crate) fn prepare(
        opts: &RunOptions,
        settings: &mut RunSandbox,
        claimed: &Claimed,
    ) -> Result<Granted> {
        let run_id = claimed.run_id();
        let (located, isolation) = (&claimed.target.located, &claimed.target.isolation);
        let (private_tmp, quarantine) = (claimed.private_tmp.path(), claimed.quarantine.dir());
        let profile = opts.sandbox.as_ref().and_then(|s| s.profile.as_ref());
        let private = sandbox::private_dirs(settings.network == NetworkAccess::Denied);
        let mut writable: Vec<&Path> =
            vec![&isolation.tree, &isolation.admin, private_tmp, quarantine];
        let allowed = settings.allow_write.iter().filter(|_| settings.enabled);
        writable.extend(allowed.clone().filter(|p| p.is_dir()).map(PathBuf::as_path));
        // A file in a writable directory needs nothing: renaming there works already.
        let (unneeded, files): (Vec<PathBuf>, Vec<PathBuf>) =
            allowed.filter(|p| p.is_file()).cloned().partition(|p| {
                p.parent()
                    .is_some_and(|d| writable.iter().any(|w| d.starts_with(w)))
            });
        let layered: Vec<PathBuf> = files
            .into_iter()
            .filter(|p| crate::services::writeback::layerable(p, &private))
            .collect();
        let mut grants: Vec<crate::services::writeback::FileGrant> = layered
            .iter()
            .map(|p| crate::services::writeback::FileGrant {
                at: p.clone(),
                kept: p.clone(),
            })
            .collect();
        let mut granted = Granted {
            layers: crate::services::writeback::Layers::create(run_id, &[], Vec::new())?,
            mounted: Vec::new(),
            not_mounted: [layered, unneeded].concat(),
            kept: None,
            held: Vec::new(),
            caches: cache_plan(opts, settings)?,
        };
        let mut dirs = Vec::new();
        if let Some(profile) = profile.filter(|p| !p.writable.is_empty()) {
            let key = crate::services::profile::repo_key(&located.repo.common_dir);
            let kept = crate::services::profile_copies::kept_for(&profile.name, &key);
            if let Some(used) = settings.profile.as_mut() {
                used.kept_in = kept.as_ref().map(profile_review::Kept::home);
            }
            if settings.enabled {
                let kept = kept.ok_or_else(|| Invalid::ProfileNeedsDataDir {
                    name: profile.name.clone(),
                })?;
                let home = std::env::var_os("HOME")
                    .map(PathBuf::from)
                    .and_then(|h| std::fs::canonicalize(h).ok())
                    .ok_or_else(|| crate::services::writeback::no_home(&profile.name))?;
                let mounts = crate::services::profile_copies::prepare(profile, &home, &kept)?;
                dirs.push(home);
                grants.extend(mounts.files);
                granted.mounted = mounts.dirs;
                granted.held = mounts.held;
                granted.kept = Some((profile.clone(), kept));
            }
        }
        granted.layers = crate::services::writeback::Layers::create(run_id, &dirs, grants)?;
        Ok(granted)
    }
}

/// The caches a sandboxed run's presets bring (none without the sandbox).
fn cache_plan(opts: &RunOptions, settings: &RunSandbox) -> Result<caches::CachePlan> {
    match &opts.sandbox {
        Some(request) if settings.enabled => caches::prepare(
            &request.allow_hosts,
            request.cache,
            &caches::CacheRoots::of_user(),
        ),
        _ => Ok(caches::CachePlan::default()),
    }
}

/// The logins a run must not see: every profile's but the running one's, relative to home.
fn logins(opts: &RunOptions) -> Vec<PathBuf> {
    let request = opts.sandbox.as_ref();
    let own: Vec<PathBuf> = request
        .and_then(|s| s.profile.as_ref())
        .map(|p| p.credentials.iter().map(|c| c.rel.clone()).collect())
        .unwrap_or_default();
    let declared = request.map(|s| s.credentials.clone()).unwrap_or_default();
    let known = sandbox::secrets::AGENT_CREDENTIALS
        .iter()
        .map(PathBuf::from);
    let mut others: Vec<PathBuf> = known.chain(declared).filter(|l| !own.contains(l)).collect();
    others.sort();
    others.dedup();
    others
}

/// The secrets to cover: `others` (logins the run must not see), every profile's kept copies
/// (but the running profile's `mounted` ones), and with the network denied the ssh agent socket.
fn hidden_paths(
    home: Option<&Path>,
    allow_read: &[PathBuf],
    deny_network: bool,
    (others, mounted): (&[PathBuf], &[sandbox::MountedDir]),
) -> Vec<PathBuf> {
    let mut hidden = Vec::new();
    if let Some(home) = home {
        let own: Vec<PathBuf> = sandbox::secrets::AGENT_CREDENTIALS
            .iter()
            .map(PathBuf::from)
            .filter(|l| !others.contains(l))
            .collect();
        hidden = sandbox::secrets::to_hide(home, allow_read, &own);
        // A login seen at its real path, or in a copy mounted there.
        let seen = |real: &Path| {
            std::fs::symlink_metadata(real).is_ok()
                || mounted.iter().any(|m| {
                    real.strip_prefix(&m.to)
                        .is_ok_and(|rest| std::fs::symlink_metadata(m.from.join(rest)).is_ok())
                })
        };
        let logins = others.iter().map(|rel| home.join(rel));
        for login in logins.filter(|l| seen(l) && !sandbox::secrets::allowed_to_read(l, allow_read))
        {
            if !hidden.contains(&login) {
                hidden.push(login);
            }
        }
    }
    if let Some(store) = crate::services::profile::store_dir()
        && std::fs::symlink_metadata(&store).is_ok()
        && !sandbox::secrets::allowed_to_read(&store, allow_read)
    {
        hidden.push(store);
    }
    if deny_network
        && let Some(agent) = std::env::var_os("SSH_AUTH_SOCK").map(PathBuf::from)
        && agent.is_absolute()
        && std::fs::symlink_metadata(&agent).is_ok()
        && !allow_read.iter().any(|allowed| agent.starts_with(allowed))
    {
        hidden.push(agent);
    }
    hidden
}

/// The program, when named by an absolute path (it may live under a private directory).
fn program_path(program: &std::ffi::OsStr) -> Option<PathBuf> {
    let path = Path::new(program);
    path.is_absolute()
        .then(|| std::fs::canonicalize(path).ok())
        .flatten()
}
