//! Run profiles (`run --profile NAME`): what a known agent needs beyond the sandbox's
//! defaults. A profile names home paths the agent writes (its settings and logins), each
//! backed by a copy a3s-iso keeps per user and mounts over the real path inside the sandbox;
//! the variables it gets; and the hosts its network may reach. Built in: `claude`, `codex`,
//! `aider` and `generic`; the user's configuration file adds or replaces profiles with
//! `[profiles.NAME]` tables.

use crate::base::invalid::Invalid;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::base::command_env::EnvRequest;
use crate::base::error::{Error, Result};
use crate::base::sandbox::ProfileUsed;

/// A `[profiles.NAME]` table: what a run under that profile may do beyond the defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileLayer {
    /// Home paths made writable, each backed by the profile's own copy (`~/.tool/` for a
    /// directory, `~/.toolrc` for a file).
    #[serde(default)]
    pub writable: Vec<String>,
    /// Variables passed to the command (names or patterns, as `--env NAME`).
    #[serde(default)]
    pub env: Vec<String>,
    /// Hosts the network allows (`--allow-host` forms).
    #[serde(default)]
    pub hosts: Vec<String>,
}

/// The user's `[profiles.NAME]` tables, by name.
pub type UserProfiles = std::collections::BTreeMap<String, ProfileLayer>;

/// Where a profile is defined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileSource {
    /// Built into a3s-iso.
    BuiltIn,
    /// The user's configuration file.
    User,
}

/// One home path a profile makes writable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HomeEntry {
    /// Relative to the home directory; normal components only.
    pub rel: PathBuf,
    /// A directory (written `~/.tool/`) rather than a file (`~/.toolrc`).
    pub dir: bool,
}

impl HomeEntry {
    /// `~/REL` for a file, `~/REL/` for a directory, as the configuration spells it.
    pub fn spelled(&self) -> String {
        let rel = self.rel.to_string_lossy();
        if self.dir {
            format!("~/{rel}/")
        } else {
            format!("~/{rel}")
        }
    }
}

/// A profile, resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Profile {
    /// Its name.
    pub name: String,
    /// Built in or the user's.
    pub source: ProfileSource,
    /// The home paths it makes writable (`~/.claude/`, `~/.claude.json`).
    #[serde(serialize_with = "spelled_entries")]
    pub writable: Vec<HomeEntry>,
    /// The variables it passes (names or patterns, as `--env NAME`).
    pub env: Vec<String>,
    /// The hosts the network allows (`host[:port]`, `*.domain`, `@preset`).
    pub hosts: Vec<String>,
}

fn spelled_entries<S: serde::Serializer>(
    entries: &[HomeEntry],
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    serializer.collect_seq(entries.iter().map(HomeEntry::spelled))
}

/// The built-in profiles: name, writable home paths, variables, hosts.
type BuiltIn = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
    &'static [&'static str],
);

/// Claude Code keeps its settings and login in `~/.claude/` and `~/.claude.json`; Codex in
/// `~/.codex/`; aider its caches, analytics and OAuth keys in `~/.aider/`. A variable that
/// looks like a credential passes only when named exactly, so each key is listed by name
/// beside the patterns.
const BUILT_IN: &[BuiltIn] = &[
    (
        "claude",
        &["~/.claude/", "~/.claude.json"],
        &[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_*",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "CLAUDE_CODE_*",
            "DISABLE_AUTOUPDATER",
            "DISABLE_TELEMETRY",
        ],
        &["@anthropic"],
    ),
    (
        "codex",
        &["~/.codex/"],
        &["OPENAI_API_KEY", "OPENAI_*", "CODEX_API_KEY", "CODEX_*"],
        &["@openai"],
    ),
    (
        "aider",
        &["~/.aider/"],
        &[
            "OPENAI_API_KEY",
            "OPENAI_*",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_*",
            "AIDER_OPENAI_API_KEY",
            "AIDER_ANTHROPIC_API_KEY",
            "AIDER_*",
        ],
        &["@openai", "@anthropic"],
    ),
    ("generic", &[], &[], &[]),
];

/// Every profile: the built-in ones, then the user's (a user profile of a built-in name
/// replaces it), sorted by name.
pub fn all(user: Option<&UserProfiles>) -> Result<Vec<Profile>> {
    let mut profiles: Vec<Profile> = Vec::new();
    for (name, writable, env, hosts) in BUILT_IN {
        let layer = ProfileLayer {
            writable: writable.iter().map(|s| (*s).to_string()).collect(),
            env: env.iter().map(|s| (*s).to_string()).collect(),
            hosts: hosts.iter().map(|s| (*s).to_string()).collect(),
        };
        profiles.push(from_layer(name, &layer, ProfileSource::BuiltIn)?);
    }
    for (name, layer) in user.into_iter().flatten() {
        profiles.retain(|p| &p.name != name);
        profiles.push(from_layer(name, layer, ProfileSource::User)?);
    }
    profiles.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(profiles)
}

/// The profile called `name`; one that does not exist is `invalid_input`.
pub fn resolve(name: &str, user: Option<&UserProfiles>) -> Result<Profile> {
    let profiles = all(user)?;
    let known: Vec<String> = profiles.iter().map(|p| p.name.clone()).collect();
    profiles
        .into_iter()
        .find(|p| p.name == name)
        .ok_or_else(|| Error::InvalidInput {
            reason: Invalid::NoSuchProfile {
                name: name.to_string(),
                known,
            },
        })
}

impl Profile {
    /// What a run under this profile reports of it.
    pub fn used(&self) -> ProfileUsed {
        ProfileUsed {
            name: self.name.clone(),
            writable: self.writable.iter().map(HomeEntry::spelled).collect(),
            kept_in: (!self.writable.is_empty())
                .then(|| home_of(&self.name))
                .flatten(),
            env: self.env.clone(),
            hosts: self.hosts.clone(),
        }
    }

    /// What `--env NAME` would ask for each of the profile's variables.
    pub fn env_requests(&self) -> Vec<EnvRequest> {
        self.env.iter().cloned().map(EnvRequest::Pass).collect()
    }
}

/// A profile from its table, checked: every home path plain and none a secret a3s-iso
/// hides, every variable a name or a pattern, every host one word.
fn from_layer(name: &str, layer: &ProfileLayer, source: ProfileSource) -> Result<Profile> {
    let invalid = |why: String| Error::InvalidInput {
        reason: Invalid::Profile {
            name: name.to_string(),
            why,
        },
    };
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(invalid(
            "a profile's name is letters, digits, - and _".into(),
        ));
    }
    let writable = layer
        .writable
        .iter()
        .map(|spelled| home_entry(spelled).map_err(|why| invalid(format!("{spelled:?}: {why}"))))
        .collect::<Result<Vec<_>>>()?;
    for var in &layer.env {
        match EnvRequest::parse(std::ffi::OsStr::new(var)) {
            Ok(EnvRequest::Pass(_)) => {}
            _ => return Err(invalid(format!("env {var:?}: a name or a pattern"))),
        }
    }
    if let Some(host) = layer
        .hosts
        .iter()
        .find(|h| h.is_empty() || h.chars().any(|c| c.is_whitespace() || c == '/'))
    {
        return Err(invalid(format!(
            "hosts {host:?}: host[:port], *.domain or @preset"
        )));
    }
    Ok(Profile {
        name: name.to_string(),
        source,
        writable,
        env: layer.env.clone(),
        hosts: layer.hosts.clone(),
    })
}

/// `~/REL` or `~/REL/`: a path beneath the home directory that is not, holds nor lies in a
/// secret a3s-iso hides, nor holds a3s-iso's own directories under the home directory.
fn home_entry(spelled: &str) -> std::result::Result<HomeEntry, String> {
    let rest = spelled
        .strip_prefix("~/")
        .ok_or("a home path starts with ~/")?;
    let dir = rest.ends_with('/');
    let rel = PathBuf::from(rest.trim_end_matches('/'));
    let plain = rel.components().all(|c| matches!(c, Component::Normal(_)));
    if rel.as_os_str().is_empty() || !plain {
        return Err("a path beneath the home directory, without . or ..".into());
    }
    let secret = crate::base::sandbox::secrets::DEFAULT_HIDDEN
        .iter()
        .map(Path::new)
        .find(|hidden| hidden.starts_with(&rel) || rel.starts_with(hidden));
    if let Some(hidden) = secret {
        return Err(format!(
            "it would open ~/{}, which stays hidden",
            hidden.display()
        ));
    }
    let own = [".local", ".local/share", ".config", ".config/a3s-iso"];
    if own.iter().any(|o| Path::new(o).starts_with(&rel)) {
        return Err("it would hold a3s-iso's own directories".into());
    }
    Ok(HomeEntry { rel, dir })
}

/// Where a3s-iso keeps a profile's copies of its home paths: `<data>/profiles/<name>/home`.
pub fn home_of(name: &str) -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "a3s-iso")
        .map(|d| d.data_dir().join("profiles").join(name).join("home"))
}

/// What a profile gives a run inside the sandbox.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProfileMounts {
    /// Its copies of directories, mounted over the real ones.
    pub dirs: Vec<crate::base::sandbox::MountedDir>,
    /// Its files, seen over the real ones and written back to its copies.
    pub files: Vec<crate::services::writeback::FileGrant>,
}

/// The profile's copies of its home paths for a user whose home is `home`, each made on first
/// use: from the real path when there is one (never a hidden secret: no profile names one),
/// otherwise an empty directory, or no file until the command writes one.
pub(crate) fn prepare(profile: &Profile, home: &Path) -> Result<ProfileMounts> {
    let mut mounts = ProfileMounts::default();
    if profile.writable.is_empty() {
        return Ok(mounts);
    }
    let kept_root = home_of(&profile.name).ok_or_else(|| Error::InvalidInput {
        reason: Invalid::ProfileNeedsDataDir {
            name: profile.name.clone(),
        },
    })?;
    make_dirs(&kept_root)?;
    for entry in &profile.writable {
        let real = home.join(&entry.rel);
        let kept = kept_root.join(&entry.rel);
        no_link_on_the_way(&kept_root, &entry.rel)?;
        seed(&real, &kept, entry.dir)?;
        if entry.dir {
            let to = real;
            mounts
                .dirs
                .push(crate::base::sandbox::MountedDir { from: kept, to });
        } else {
            mounts
                .files
                .push(crate::services::writeback::FileGrant { at: real, kept });
        }
    }
    Ok(mounts)
}

/// A kept copy is reached through no symbolic link: a run writes inside a kept directory, and a
/// link it left there (where a later profile keeps a path of its own) must never become what
/// is copied or mounted writable.
fn no_link_on_the_way(root: &Path, rel: &Path) -> Result<()> {
    let mut at = root.to_path_buf();
    for part in rel.components() {
        at.push(part);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Error::InvalidInput {
                reason: Invalid::LinkInProfile { path: at },
            });
        }
    }
    Ok(())
}

/// Directories only the user reads.
fn make_dirs(path: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(path)
        .map_err(|e| Error::io(format!("cannot create {}", path.display()), e))
}

/// Makes the kept copy of one home path when there is none yet: the real one's content,
/// copied aside first and renamed into place (a copy cut short is never taken for one).
fn seed(real: &Path, kept: &Path, dir: bool) -> Result<()> {
    if std::fs::symlink_metadata(kept).is_ok() {
        return Ok(());
    }
    let parent = kept.parent().unwrap_or(kept);
    make_dirs(parent)?;
    let real_meta = std::fs::metadata(real).ok();
    let fail = |e: std::io::Error| Error::io(format!("cannot copy {}", real.display()), e);
    let aside = parent.join(crate::base::maker::owned_name(".seeding"));
    match (dir, real_meta) {
        (true, Some(m)) if m.is_dir() => copy_tree(real, &aside).map_err(fail)?,
        (true, _) => return make_dirs(kept),
        (false, Some(m)) if m.is_file() => {
            std::fs::copy(real, &aside).map_err(fail)?;
        }
        (false, _) => return Ok(()),
    }
    match std::fs::rename(&aside, kept) {
        // Another run made the copy meanwhile: that one stands.
        Err(_) if std::fs::symlink_metadata(kept).is_ok() => {
            let _ = std::fs::remove_dir_all(&aside).or_else(|_| std::fs::remove_file(&aside));
            Ok(())
        }
        done => done.map_err(fail),
    }
}

/// Copies a directory tree: directories, regular files (with their modes) and links (as
/// links); anything else is left out.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&source, &target)?;
        } else if kind.is_file() {
            std::fs::copy(&source, &target)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&source)?, &target)?;
        }
    }
    let mode = std::fs::metadata(from)?.permissions().mode();
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(mode))
}

#[cfg(test)]
mod tests {
    use crate::services::profile::*;

    #[test]
    fn home_paths_are_plain_and_never_a_secret() {
        assert_eq!(
            home_entry("~/.claude/").unwrap(),
            HomeEntry {
                rel: ".claude".into(),
                dir: true
            }
        );
        assert!(!home_entry("~/.claude.json").unwrap().dir);
        for bad in [
            "/etc/x",
            "~/",
            "~/../x",
            "~/.ssh/",
            "~/.ssh/id",
            "~/.config/",
            "~/.docker",
        ] {
            assert!(home_entry(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_user_profile_replaces_a_built_in_one() {
        let mine = ProfileLayer {
            env: vec!["MY_*".into()],
            ..ProfileLayer::default()
        };
        let user: UserProfiles = [("claude".to_string(), mine)].into_iter().collect();
        let user = Some(&user);
        let claude = resolve("claude", user).unwrap();
        assert_eq!(claude.source, ProfileSource::User);
        assert_eq!(claude.env, ["MY_*"]);
        assert!(resolve("nosuch", user).is_err());
        let names: Vec<String> = all(user).unwrap().into_iter().map(|p| p.name).collect();
        assert_eq!(names, ["aider", "claude", "codex", "generic"]);
    }
}
