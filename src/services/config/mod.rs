//! The configuration files: the repository's `.a3s-iso.toml` and the user's `config.toml`.
//! May call: base, git, store, context, model, recovery and the rest of services.
//!
//! The repository's file is checked in, so trusted only once the user approves it; the user's own
//! is always trusted. Command-line flags win over the repository file, which wins over the user
//! file, which wins over the built-in defaults.

mod trust;

use crate::base::invalid::Invalid;
use crate::base::warning::{RunWarning, Warning};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::base::beneath::Dir;
use crate::base::error::{Error, Result};
use crate::base::wire::wire_enum;
use crate::context::Context;

pub use crate::services::config::trust::{Trust, record_trust};

/// The repository's configuration file, at the top of the source.
pub const REPOSITORY_FILE: &str = ".a3s-iso.toml";

/// The largest configuration file read.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// One configuration file's settings, each `None` when the file does not set it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Layer {
    /// Commands run in the session's sandbox after each bind, in order.
    pub setup: Option<Vec<String>>,
    /// Gitignore patterns of ignored files copied into a new isolation.
    pub copy_ignored: Option<Vec<String>>,
    /// `[run]`.
    pub run: Option<RunLayer>,
    /// `[pool]`.
    pub pool: Option<PoolLayer>,
    /// `[sweep]`.
    pub sweep: Option<SweepLayer>,
    /// `[profiles.NAME]`: run profiles of the user's own (the user's file only).
    pub profiles: Option<crate::services::profile::UserProfiles>,
}

/// The `[run]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunLayer {
    /// The default of `run --allow-network` (and the network of setup commands).
    pub allow_network: Option<bool>,
    /// The default of `run --profile`.
    pub profile: Option<String>,
    /// Hosts every run allows through the proxy, as `--allow-host` takes them.
    pub allow_host: Option<Vec<String>>,
    /// Ports every run publishes, as `--publish` takes them: `3000` or `"8080:3000"`.
    pub publish: Option<Vec<PublishEntry>>,
    /// The cache a preset's package manager gets, as `run --cache` takes it.
    pub cache: Option<crate::services::caches::CacheMode>,
}

/// One `run.publish` entry: a port number, or `"HOST_PORT:PORT"` as `--publish` takes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum PublishEntry {
    /// `3000`.
    Port(u16),
    /// `"8080:3000"` (or `"3000"`).
    Spelled(String),
}

impl PublishEntry {
    /// The entry as `--publish` spells it.
    pub fn spelled(&self) -> String {
        match self {
            PublishEntry::Port(port) => port.to_string(),
            PublishEntry::Spelled(text) => text.clone(),
        }
    }
}

/// The `[pool]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PoolLayer {
    /// The pool size `pool` uses when none is given.
    pub size: Option<usize>,
    /// The ignored files spares keep through recycling, as `pool --keep-ignored` takes them,
    /// when `pool` is given none.
    pub keep_ignored: Option<Vec<String>>,
}

/// The `[sweep]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepLayer {
    /// Whether `bind` and `land` reclaim dead-owner isolations as they start, as `sweep` does.
    pub auto: Option<bool>,
}

wire_enum! {
    /// Where a setting's value came from.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum Origin {
        /// The built-in default.
        Default = "default",
        /// The user's configuration file.
        User = "user",
        /// The repository's `.a3s-iso.toml`.
        Repository = "repository",
        /// A command-line flag.
        Flag = "flag",
    }
}

/// A value and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Setting<T> {
    /// The value in effect.
    pub value: T,
    /// Where it came from.
    pub source: Origin,
}

impl<T> Setting<T> {
    fn default(value: T) -> Setting<T> {
        Setting {
            value,
            source: Origin::Default,
        }
    }

    /// This setting, unless `flag` gives a value: then that, from `flag`.
    pub fn or_flag(self, flag: Option<T>) -> Setting<T> {
        flag.map_or(self, |value| Setting {
            value,
            source: Origin::Flag,
        })
    }

    fn set(&mut self, value: Option<T>, source: Origin) {
        if let Some(value) = value {
            *self = Setting { value, source };
        }
    }
}

/// The configuration in effect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Effective {
    /// `setup`.
    pub setup: Setting<Vec<String>>,
    /// `copy_ignored`.
    pub copy_ignored: Setting<Vec<String>>,
    /// `run.allow_network`.
    #[serde(rename = "run.allow_network")]
    pub allow_network: Setting<bool>,
    /// `run.profile`; `null`: none.
    #[serde(rename = "run.profile")]
    pub profile: Setting<Option<String>>,
    /// `run.allow_host`.
    #[serde(rename = "run.allow_host")]
    pub allow_host: Setting<Vec<String>>,
    /// `run.publish`, each as `--publish` spells it.
    #[serde(rename = "run.publish")]
    pub publish: Setting<Vec<String>>,
    /// `run.cache`: `private` (a3s-iso's own), `user` (the user's own) or `none`.
    #[serde(rename = "run.cache")]
    pub cache: Setting<crate::services::caches::CacheMode>,
    /// `pool.size`; `null`: as `pool` last set it.
    #[serde(rename = "pool.size")]
    pub pool_size: Setting<Option<usize>>,
    /// `pool.keep_ignored`; `null`: as `pool` last set it.
    #[serde(rename = "pool.keep_ignored")]
    pub pool_keep_ignored: Setting<Option<Vec<String>>>,
    /// `sweep.auto`: `bind` and `land` reclaim dead isolations as they start.
    #[serde(rename = "sweep.auto")]
    pub sweep_auto: Setting<bool>,
}

/// The repository's configuration file as read.
#[derive(Debug, Clone)]
pub struct RepositoryFile {
    /// Where it is.
    pub path: PathBuf,
    /// Its content.
    pub text: String,
    /// `sha256:` and the hex digest of its bytes.
    pub sha256: String,
    /// Its settings.
    pub layer: Layer,
    /// Whether this user approved it as it is.
    pub trust: Trust,
}

impl RepositoryFile {
    /// What the file sets by itself, trusted or not (each key it sets from `repository`).
    pub fn settings(&self) -> Effective {
        let alone = Loaded {
            source: PathBuf::new(),
            user_path: None,
            user: Layer::default(),
            repository: Some(self.clone()),
        };
        alone.effective(true)
    }
}

/// The configuration of a repository as `a3s-iso config` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct ConfigReport {
    /// The source checkout.
    #[serde(with = "crate::base::paths::fs_path")]
    pub source: PathBuf,
    /// The repository's file and whether this user trusts it.
    pub repository_file: RepositoryFileReport,
    /// The user's file.
    pub user_file: UserFileReport,
    /// The settings in effect (an untrusted repository file's are not) and their origins.
    pub settings: Effective,
    /// The run profiles: the built-in ones and the user's, sorted by name.
    pub profiles: Vec<crate::services::profile::Profile>,
}

/// The repository's file in a [`ConfigReport`].
#[derive(Debug, Clone, Serialize)]
pub struct RepositoryFileReport {
    /// Where it is (or would be).
    #[serde(with = "crate::base::paths::fs_path")]
    pub path: PathBuf,
    /// `sha256:` and the hex digest of its bytes; `null` when there is none.
    pub sha256: Option<String>,
    /// `absent`, `trusted`, `untrusted` or `changed`.
    pub trust: Trust,
    /// What the file sets by itself, whether or not it is trusted (`null` without one): each
    /// key it sets has the source `repository`.
    pub settings: Option<Effective>,
}

/// The user's file in a [`ConfigReport`].
#[derive(Debug, Clone, Serialize)]
pub struct UserFileReport {
    /// Where it is (or would be); `null` without a per-user config directory.
    #[serde(with = "crate::base::paths::fs_path_opt")]
    pub path: Option<PathBuf>,
    /// Whether it exists.
    pub present: bool,
}

/// The configuration files of a repository and of the user.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The source checkout.
    pub source: PathBuf,
    /// The user's file (`None` when there is no per-user config directory).
    pub user_path: Option<PathBuf>,
    /// The user's settings (empty when the file does not exist).
    pub user: Layer,
    /// The repository's file, when there is one.
    pub repository: Option<RepositoryFile>,
}

impl Loaded {
    /// The configuration in effect: the defaults, then the user's file, then the repository's
    /// file when `with_repository` (an untrusted one is never applied by its callers).
    pub fn effective(&self, with_repository: bool) -> Effective {
        let mut effective = Effective {
            setup: Setting::default(Vec::new()),
            copy_ignored: Setting::default(Vec::new()),
            allow_network: Setting::default(false),
            profile: Setting::default(None),
            allow_host: Setting::default(Vec::new()),
            publish: Setting::default(Vec::new()),
            cache: Setting::default(crate::services::caches::CacheMode::Private),
            pool_size: Setting::default(None),
            pool_keep_ignored: Setting::default(None),
            sweep_auto: Setting::default(true),
        };
        let repository = self
            .repository
            .as_ref()
            .filter(|_| with_repository)
            .map(|file| file.layer.clone());
        let layers = [
            (Some(self.user.clone()), Origin::User),
            (repository, Origin::Repository),
        ];
        for (layer, origin) in layers {
            let Some(layer) = layer else { continue };
            let run = layer.run.unwrap_or_default();
            let pool = layer.pool.unwrap_or_default();
            let e = &mut effective;
            e.setup.set(layer.setup, origin);
            e.copy_ignored.set(layer.copy_ignored, origin);
            e.allow_network.set(run.allow_network, origin);
            e.profile.set(run.profile.map(Some), origin);
            e.allow_host.set(run.allow_host, origin);
            let spelled = (run.publish).map(|p| p.iter().map(PublishEntry::spelled).collect());
            e.publish.set(spelled, origin);
            e.cache.set(run.cache, origin);
            e.pool_size.set(pool.size.map(Some), origin);
            e.pool_keep_ignored.set(pool.keep_ignored.map(Some), origin);
            e.sweep_auto.set(layer.sweep.and_then(|s| s.auto), origin);
        }
        effective
    }

    /// What the repository's file sets by itself, trusted or not (`None` without one): what a
    /// user approves when they trust it, shown before they do.
    pub fn repository_settings(&self) -> Option<Effective> {
        self.repository.as_ref().map(RepositoryFile::settings)
    }

    /// The repository file's trust state (`Absent` when there is none).
    pub fn trust(&self) -> Trust {
        self.repository.as_ref().map_or(Trust::Absent, |f| f.trust)
    }

    /// The configuration a command that honours only approved files uses: the repository's
    /// file counts when trusted; otherwise it is left out with a warning in `warnings`.
    pub fn trusted_effective(&self, warnings: &mut Vec<Warning>) -> Effective {
        match &self.repository {
            Some(file) if file.trust != Trust::Trusted => {
                let (file, trust) = (file.path.clone(), file.trust.as_str().to_string());
                warnings.push(RunWarning::UntrustedConfig { file, trust }.into());
                self.effective(false)
            }
            _ => self.effective(true),
        }
    }

    /// `config_untrusted` unless the repository's file (if any) is trusted.
    pub fn require_trusted(&self) -> Result<()> {
        match &self.repository {
            Some(file) if file.trust != Trust::Trusted => Err(Error::ConfigUntrusted {
                path: file.path.clone(),
                changed: file.trust == Trust::Changed,
            }),
            _ => Ok(()),
        }
    }

    /// What `a3s-iso config` shows; an invalid profile of the user's is `invalid_input`.
    pub fn report(&self) -> Result<ConfigReport> {
        Ok(ConfigReport {
            source: self.source.clone(),
            repository_file: RepositoryFileReport {
                path: self.source.join(REPOSITORY_FILE),
                sha256: self.repository.as_ref().map(|f| f.sha256.clone()),
                trust: self.trust(),
                settings: self.repository_settings(),
            },
            user_file: UserFileReport {
                path: self.user_path.clone(),
                present: self.user_path.as_deref().is_some_and(Path::is_file),
            },
            settings: self.effective(matches!(self.trust(), Trust::Trusted)),
            profiles: crate::services::profile::all(self.user.profiles.as_ref())?,
        })
    }

    /// Records that this user trusts the repository's file as it is now.
    pub fn trust_repository_file(&self) -> Result<&RepositoryFile> {
        let file = self
            .repository
            .as_ref()
            .ok_or_else(|| Invalid::NothingToTrust {
                source_path: self.source.clone(),
                file: REPOSITORY_FILE.to_string(),
            })?;
        record_trust(&self.source, &file.sha256)?;
        Ok(file)
    }
}

/// The user's configuration file (`$XDG_CONFIG_HOME/a3s-iso/config.toml` on Linux).
pub fn user_file() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "a3s-iso").map(|d| d.config_dir().join("config.toml"))
}

/// Reads the configuration files of the repository the context is started in; with
/// `repository` false, the repository's file is not read at all (`bind --ignore-config`).
pub fn load(ctx: &Context, repository: bool) -> Result<Loaded> {
    let located = crate::recovery::locate(ctx)?;
    let source = located.repo.toplevel.clone();
    let user_path = user_file();
    let user = read_user_layer(user_path.as_deref())?;
    let repository = match repository {
        true => read_repository_file(&source)?,
        false => None,
    };
    Ok(Loaded {
        source,
        user_path,
        user,
        repository,
    })
}

/// `sweep.auto` as a command that reads no other setting sees it (`land`): the user's file,
/// then the repository's when it is trusted; on (the default) when a file cannot be read.
pub fn sweep_auto_at(source: &Path) -> bool {
    let loaded = Loaded {
        source: source.to_path_buf(),
        user_path: user_file(),
        user: read_user_layer(user_file().as_deref()).unwrap_or_default(),
        repository: read_repository_file(source).ok().flatten(),
    };
    let trusted = loaded.trust() == Trust::Trusted;
    loaded.effective(trusted).sweep_auto.value
}

/// The user's file, parsed (empty when there is none).
fn read_user_layer(path: Option<&Path>) -> Result<Layer> {
    match path.map(|path| (path, std::fs::read(path))) {
        Some((path, Ok(bytes))) => parse(path, &bytes),
        Some((path, Err(e))) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::io(format!("cannot read {}", path.display()), e))
        }
        _ => Ok(Layer::default()),
    }
}

/// The profiles the user's file defines, read without a repository.
pub fn user_profiles() -> Result<Option<crate::services::profile::UserProfiles>> {
    Ok(read_user_layer(user_file().as_deref())?.profiles)
}

/// The repository's `.a3s-iso.toml`, read beneath the source (a symbolic link there is
/// refused: its target could be anywhere).
fn read_repository_file(source: &Path) -> Result<Option<RepositoryFile>> {
    let path = source.join(REPOSITORY_FILE);
    let name = Path::new(REPOSITORY_FILE);
    let read = Dir::open(source).and_then(|dir| dir.read_small_file(name, MAX_FILE_BYTES));
    let Some(bytes) = read.map_err(|e| invalid(&path, e))? else {
        return Ok(None);
    };
    let layer = parse(&path, &bytes)?;
    if layer.profiles.is_some() {
        // A profile says which home paths and secrets a command gets: only the user defines one.
        return Err(Error::from(Invalid::ProfilesInRepository { path }));
    }
    let sha256 = crate::model::snapshot::digest_bytes(&bytes);
    let trust = crate::services::config::trust::state(source, &sha256)?;
    Ok(Some(RepositoryFile {
        text: String::from_utf8_lossy(&bytes).into_owned(),
        path,
        sha256,
        layer,
        trust,
    }))
}

/// A file's settings; a syntax error or an unknown key is `invalid_input`, naming the file
/// and the key.
fn parse(path: &Path, bytes: &[u8]) -> Result<Layer> {
    let text = std::str::from_utf8(bytes).map_err(|e| invalid(path, e))?;
    toml::from_str(text).map_err(|e| invalid(path, e))
}

/// `invalid_input` naming the configuration file at `path` and what is wrong with it.
fn invalid(path: &Path, detail: impl std::fmt::Display) -> Error {
    Error::from(Invalid::Config {
        path: path.to_path_buf(),
        detail: detail.to_string().trim_end().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use crate::services::config::*;

    #[test]
    fn unknown_keys_are_refused_by_name() {
        let err = parse(Path::new("c.toml"), b"[run]\nallowed_hosts = []\n").unwrap_err();
        assert!(err.to_string().contains("allowed_hosts"), "{err}");
        assert_eq!(err.exit_code(), 5);
        let layer = parse(
            Path::new("c.toml"),
            b"setup = [\"true\"]\n[pool]\nsize = 2\n",
        )
        .unwrap();
        assert_eq!(layer.pool.unwrap().size, Some(2));
    }

    #[test]
    fn the_repository_wins_over_the_user_and_flags_over_both() {
        let loaded = Loaded {
            source: PathBuf::from("/src"),
            user_path: None,
            user: parse(
                Path::new("u"),
                b"[run]\nallow_network = true\n[pool]\nsize = 3\n",
            )
            .unwrap(),
            repository: Some(RepositoryFile {
                path: PathBuf::from("/src/.a3s-iso.toml"),
                text: String::new(),
                sha256: String::new(),
                layer: parse(Path::new("r"), b"[pool]\nsize = 1\n").unwrap(),
                trust: Trust::Trusted,
            }),
        };
        let effective = loaded.effective(true);
        assert_eq!(effective.pool_size.value, Some(1));
        assert_eq!(effective.pool_size.source, Origin::Repository);
        assert_eq!(effective.allow_network.source, Origin::User);
        assert_eq!(effective.setup.source, Origin::Default);
        let flagged = effective.pool_size.or_flag(Some(Some(4)));
        assert_eq!((flagged.value, flagged.source), (Some(4), Origin::Flag));
    }
}
