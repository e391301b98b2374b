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
#[serde(deny_unknown_fields, default)]
pub struct ProfileLayer {
    /// Home paths made writable, each backed by the profile's own copy (`~/.tool/` for a
    /// directory, `~/.toolrc` for a file).
    pub writable: Vec<String>,
    /// Variables passed to the command (names or patterns, as `--env NAME`).
    pub env: Vec<String>,
    /// Hosts the network allows (`--allow-host` forms).
    pub hosts: Vec<String>,
    /// The agent's own login files, within its writable paths: hidden from every other run.
    pub credentials: Vec<String>,
    /// Paths within its writable ones that are the agent's state (history, caches): what a run
    /// changes there is kept for the next one; a change anywhere else waits for review.
    pub state: Vec<String>,
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
        let slash = if self.dir { "/" } else { "" };
        format!("~/{}{slash}", self.rel.to_string_lossy())
    }
}

/// A JSON settings file of a profile reviewed key by key: a change to one of `keys` (each a
/// dotted path, `*` for any one key) waits for review; any other change is state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyedFile {
    /// The file, `~/REL`.
    #[serde(serialize_with = "spelled_entry")]
    pub file: HomeEntry,
    /// The keys that make code run or instruct the agent.
    pub keys: Vec<String>,
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
    /// Its own login files: seen by its runs only.
    #[serde(serialize_with = "spelled_entries")]
    pub credentials: Vec<HomeEntry>,
    /// Its state: written back after a run without review (its logins are state too).
    #[serde(serialize_with = "spelled_entries")]
    pub state: Vec<HomeEntry>,
    /// Its JSON settings files reviewed key by key.
    pub reviewed_keys: Vec<KeyedFile>,
    /// Paths within its state that are reviewed all the same (relative to the home directory,
    /// `*` for any one name): what the agent reads as instructions there.
    #[serde(skip)]
    pub reviewed_in_state: Vec<PathBuf>,
}

fn spelled_entries<S: serde::Serializer>(
    entries: &[HomeEntry],
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    serializer.collect_seq(entries.iter().map(HomeEntry::spelled))
}

fn spelled_entry<S: serde::Serializer>(
    entry: &HomeEntry,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    serializer.serialize_str(&entry.spelled())
}

/// A built-in profile.
struct BuiltIn {
    name: &'static str,
    writable: &'static [&'static str],
    env: &'static [&'static str],
    hosts: &'static [&'static str],
    credentials: &'static [&'static str],
    state: &'static [&'static str],
    keyed: &'static [(&'static str, &'static [&'static str])],
    reviewed_in_state: &'static [&'static str],
}

/// Claude Code's settings keys that run code (hooks, MCP servers, helpers, the status line),
/// grant it (permissions, the environment its commands get) or instruct it.
const CLAUDE_CODE_KEYS: &[&str] = &[
    "hooks",
    "mcpServers",
    "enableAllProjectMcpServers",
    "enabledMcpjsonServers",
    "disabledMcpjsonServers",
    "statusLine",
    "apiKeyHelper",
    "awsAuthRefresh",
    "awsCredentialExport",
    "otelHeadersHelper",
    "env",
    "permissions",
    "enabledPlugins",
    "extraKnownMarketplaces",
    "outputStyle",
    "disableAllHooks",
    "projects.*.mcpServers",
    "projects.*.enabledMcpjsonServers",
    "projects.*.disabledMcpjsonServers",
    "projects.*.enableAllProjectMcpServers",
    "projects.*.allowedTools",
    "projects.*.hasTrustDialogAccepted",
];

/// Claude Code keeps its settings and login in `~/.claude/` and `~/.claude.json`; Codex in
/// `~/.codex/`; aider its caches, analytics and OAuth keys in `~/.aider/`. A variable that
/// looks like a credential passes only when named exactly, so each key is listed by name
/// beside the patterns.
const BUILT_IN: &[BuiltIn] = &[
    BuiltIn {
        name: "claude",
        writable: &["~/.claude/", "~/.claude.json"],
        env: &[
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_*",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "CLAUDE_CODE_*",
            "DISABLE_AUTOUPDATER",
            "DISABLE_TELEMETRY",
        ],
        hosts: &["@anthropic"],
        credentials: &["~/.claude/.credentials.json"],
        state: &[
            "~/.claude/projects/",
            "~/.claude/todos/",
            "~/.claude/statsig/",
            "~/.claude/history.jsonl",
            "~/.claude/file-history/",
            "~/.claude/session-env/",
            "~/.claude/debug/",
            "~/.claude/ide/",
            "~/.claude/plans/",
            "~/.claude/cache/",
            "~/.claude/telemetry/",
        ],
        keyed: &[
            ("~/.claude/settings.json", CLAUDE_CODE_KEYS),
            ("~/.claude/settings.local.json", CLAUDE_CODE_KEYS),
            ("~/.claude.json", CLAUDE_CODE_KEYS),
        ],
        // Claude Code's memory of a project is instructions, kept beside its transcripts.
        reviewed_in_state: &[".claude/projects/*/memory"],
    },
    BuiltIn {
        name: "codex",
        writable: &["~/.codex/"],
        env: &["OPENAI_API_KEY", "OPENAI_*", "CODEX_API_KEY", "CODEX_*"],
        hosts: &["@openai"],
        credentials: &["~/.codex/auth.json"],
        state: &[
            "~/.codex/sessions/",
            "~/.codex/history.jsonl",
            "~/.codex/log/",
            "~/.codex/version.json",
        ],
        keyed: &[],
        reviewed_in_state: &[],
    },
    BuiltIn {
        name: "aider",
        writable: &["~/.aider/"],
        env: &[
            "OPENAI_API_KEY",
            "OPENAI_*",
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_*",
            "AIDER_OPENAI_API_KEY",
            "AIDER_ANTHROPIC_API_KEY",
            "AIDER_*",
        ],
        hosts: &["@openai", "@anthropic"],
        credentials: &["~/.aider/oauth-keys.env"],
        state: &[
            "~/.aider/caches/",
            "~/.aider/analytics.json",
            "~/.aider/installs.json",
        ],
        keyed: &[],
        reviewed_in_state: &[],
    },
    BuiltIn {
        name: "generic",
        writable: &[],
        env: &[],
        hosts: &[],
        credentials: &[],
        state: &[],
        keyed: &[],
        reviewed_in_state: &[],
    },
];

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_string()).collect()
}

/// Every profile: the built-in ones, then the user's (a user profile of a built-in name
/// replaces it), sorted by name.
pub fn all(user: Option<&UserProfiles>) -> Result<Vec<Profile>> {
    let mut profiles: Vec<Profile> = Vec::new();
    for built in BUILT_IN {
        let layer = ProfileLayer {
            writable: strings(built.writable),
            env: strings(built.env),
            hosts: strings(built.hosts),
            credentials: strings(built.credentials),
            state: strings(built.state),
        };
        let mut profile = from_layer(built.name, &layer, ProfileSource::BuiltIn)?;
        profile.reviewed_in_state = built.reviewed_in_state.iter().map(PathBuf::from).collect();
        profile.reviewed_keys = built
            .keyed
            .iter()
            .map(|(file, keys)| KeyedFile {
                file: home_entry(file).expect("a built-in keyed file is a plain home path"),
                keys: strings(keys),
            })
            .collect();
        profiles.push(profile);
    }
    for (name, layer) in user.into_iter().flatten() {
        profiles.retain(|p| &p.name != name);
        profiles.push(from_layer(name, layer, ProfileSource::User)?);
    }
    profiles.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(profiles)
}

/// The login files every profile declares (relative to the home directory), beyond the
/// agents' logins a3s-iso knows: each hidden from a run under any other profile.
pub fn every_credential(user: Option<&UserProfiles>) -> Result<Vec<PathBuf>> {
    let mut rels: Vec<PathBuf> = all(user)?
        .into_iter()
        .flat_map(|p| p.credentials.into_iter().map(|c| c.rel))
        .collect();
    rels.sort();
    rels.dedup();
    Ok(rels)
}

/// The profile called `name`; one that does not exist is `invalid_input`.
pub fn resolve(name: &str, user: Option<&UserProfiles>) -> Result<Profile> {
    let profiles = all(user)?;
    let known: Vec<String> = profiles.iter().map(|p| p.name.clone()).collect();
    profiles
        .into_iter()
        .find(|p| p.name == name)
        .ok_or_else(|| {
            Error::from(Invalid::NoSuchProfile {
                name: name.to_string(),
                known,
            })
        })
}

impl Profile {
    /// What a run under this profile reports of it; `kept_in` is where its copies for the
    /// run's repository are.
    pub fn used(&self, kept_in: Option<PathBuf>) -> ProfileUsed {
        ProfileUsed {
            name: self.name.clone(),
            writable: self.writable.iter().map(HomeEntry::spelled).collect(),
            kept_in: kept_in.filter(|_| !self.writable.is_empty()),
            env: self.env.clone(),
            hosts: self.hosts.clone(),
        }
    }

    /// What `--env NAME` would ask for each of the profile's variables.
    pub fn env_requests(&self) -> Vec<EnvRequest> {
        self.env.iter().cloned().map(EnvRequest::Pass).collect()
    }

    /// Whether `rel` (relative to the home directory) is this profile's state: one of its
    /// logins, or in one of its state paths.
    pub fn is_state(&self, rel: &Path) -> bool {
        let depth = rel.components().count();
        let reviewed = (self.reviewed_in_state.iter())
            .any(|pattern| matches_start(pattern, rel) && pattern.components().count() <= depth);
        !reviewed
            && self
                .credentials
                .iter()
                .chain(&self.state)
                .any(|entry| rel.starts_with(&entry.rel))
    }

    /// Whether a path reviewed within the state may lie beneath the directory `rel`.
    pub fn reviews_below(&self, rel: &Path) -> bool {
        let depth = rel.components().count();
        (self.reviewed_in_state.iter())
            .any(|pattern| pattern.components().count() > depth && matches_start(pattern, rel))
    }

    /// The key-by-key review of `rel`, when it is one of the profile's JSON settings files.
    pub fn keyed(&self, rel: &Path) -> Option<&KeyedFile> {
        self.reviewed_keys.iter().find(|k| k.file.rel == rel)
    }
}

/// Whether `rel` and `pattern` (`*` for any one name) agree on their common first names.
fn matches_start(pattern: &Path, rel: &Path) -> bool {
    pattern
        .components()
        .zip(rel.components())
        .all(|(p, c)| p.as_os_str() == "*" || p == c)
}

/// A profile from its table, checked: every home path plain and none a secret a3s-iso
/// hides (an agent's login only when the profile declares it), every variable a name or a
/// pattern, every host one word, its logins and state within its writable paths.
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
    let entries = |list: &[String]| {
        list.iter()
            .map(|spelled| {
                home_entry(spelled).map_err(|why| invalid(format!("{spelled:?}: {why}")))
            })
            .collect::<Result<Vec<_>>>()
    };
    let (writable, credentials, state) = (
        entries(&layer.writable)?,
        entries(&layer.credentials)?,
        entries(&layer.state)?,
    );
    check_logins(&writable, &credentials, &state).map_err(invalid)?;
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
        credentials,
        state,
        reviewed_keys: Vec::new(),
        reviewed_in_state: Vec::new(),
    })
}

/// Logins are files and, like state, lie within the writable paths; a writable path that is
/// or lies in an agent's login is one the profile declares its own.
fn check_logins(
    writable: &[HomeEntry],
    credentials: &[HomeEntry],
    state: &[HomeEntry],
) -> std::result::Result<(), String> {
    let within = |e: &HomeEntry| writable.iter().any(|w| e.rel.starts_with(&w.rel));
    if let Some(login) = credentials.iter().find(|c| c.dir || !within(c)) {
        return Err(format!(
            "credentials {:?}: a file within the writable paths",
            login.spelled()
        ));
    }
    if let Some(outside) = state.iter().find(|s| !within(s)) {
        return Err(format!(
            "state {:?}: a path within the writable paths",
            outside.spelled()
        ));
    }
    let agents = crate::base::sandbox::secrets::AGENT_CREDENTIALS;
    for entry in writable {
        let login = agents
            .iter()
            .map(Path::new)
            .find(|a| entry.rel.starts_with(a));
        if let Some(login) = login.filter(|l| !credentials.iter().any(|c| c.rel == *l)) {
            return Err(format!(
                "{:?} is the login ~/{}, which only a profile that declares it in credentials may keep",
                entry.spelled(),
                login.display()
            ));
        }
    }
    Ok(())
}

/// `~/REL` or `~/REL/`: a path beneath home that is not, holds nor lies in a secret a3s-iso hides
/// (an agent's login it may: see [`check_logins`]), nor holds a3s-iso's own directories there.
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

/// Where a3s-iso keeps every profile's copies: `<data>/profiles`. Hidden from every run (a
/// run sees only its own profile's copies, at the real home paths).
pub fn store_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "a3s-iso").map(|d| d.data_dir().join("profiles"))
}

/// A repository's key among a profile's copies: the first 16 hex digits of the sha256 of its
/// canonical git common dir, the same from every worktree of it.
pub fn repo_key(common_dir: &Path) -> String {
    use sha2::Digest;
    let canonical = std::fs::canonicalize(common_dir).unwrap_or_else(|_| common_dir.into());
    let digest = sha2::Sha256::digest(canonical.as_os_str().as_encoded_bytes());
    hex::encode(digest)[..16].to_string()
}

/// What a hidden path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretKind {
    /// A credential of the user's (`~/.ssh`, `~/.aws`, …): hidden from every run.
    Secret,
    /// An agent's login: seen only by a run under the profile that declares it.
    AgentLogin,
    /// a3s-iso's store of every profile's copies: a run sees its own profile's copies at the
    /// real home paths, never the store.
    ProfileStore,
}

/// One path every sandboxed run is kept from (unless `--allow-read` names it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HiddenSecret {
    /// The path.
    #[serde(with = "crate::base::paths::fs_path")]
    pub path: PathBuf,
    /// What it is.
    pub kind: SecretKind,
    /// The profiles whose runs see it (an agent's login), else empty.
    pub visible_to: Vec<String>,
    /// Whether it is there now (a run hides what is there when it starts).
    pub present: bool,
}

/// Everything a sandboxed run is kept from, for a user whose home is `home`.
pub fn hidden_set(home: &Path, user: Option<&UserProfiles>) -> Result<Vec<HiddenSecret>> {
    let profiles = all(user)?;
    let entry = |path: PathBuf, kind, visible_to| HiddenSecret {
        present: std::fs::symlink_metadata(&path).is_ok(),
        path,
        kind,
        visible_to,
    };
    let mut set: Vec<HiddenSecret> = crate::base::sandbox::secrets::DEFAULT_HIDDEN
        .iter()
        .map(|rel| entry(home.join(rel), SecretKind::Secret, Vec::new()))
        .collect();
    let known = crate::base::sandbox::secrets::AGENT_CREDENTIALS
        .iter()
        .map(PathBuf::from);
    let mut logins: Vec<PathBuf> = known.chain(every_credential(user)?).collect();
    logins.sort();
    logins.dedup();
    for rel in logins {
        let owners = profiles
            .iter()
            .filter(|p| p.credentials.iter().any(|c| c.rel == rel))
            .map(|p| p.name.clone())
            .collect();
        set.push(entry(home.join(rel), SecretKind::AgentLogin, owners));
    }
    set.extend(store_dir().map(|d| entry(d, SecretKind::ProfileStore, Vec::new())));
    Ok(set)
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
    fn a_profile_keeps_a_login_only_when_it_declares_it() {
        let layer = |writable: &[&str], credentials: &[&str], state: &[&str]| ProfileLayer {
            writable: strings(writable),
            credentials: strings(credentials),
            state: strings(state),
            ..ProfileLayer::default()
        };
        let made = |l: &ProfileLayer| from_layer("p", l, ProfileSource::User);
        // Keeping the directory that holds another agent's login: allowed, the login hidden.
        assert!(made(&layer(&["~/.claude/"], &[], &[])).is_ok());
        for bad in [
            layer(&["~/.claude/.credentials.json"], &[], &[]),
            layer(
                &["~/.codex/auth.json"],
                &["~/.claude/.credentials.json"],
                &[],
            ),
            layer(&["~/.tool/"], &["~/.tool/"], &[]),
            layer(&["~/.tool/"], &[], &["~/.other/"]),
            layer(&["~/.tool/"], &["~/.ssh/id_ed25519"], &[]),
        ] {
            assert!(made(&bad).is_err(), "{bad:?}");
        }
        let own = made(&layer(
            &["~/.codex/auth.json"],
            &["~/.codex/auth.json"],
            &[],
        ))
        .unwrap();
        assert!(own.is_state(Path::new(".codex/auth.json")));
        let claude = resolve("claude", None).unwrap();
        assert!(claude.is_state(Path::new(".claude/projects/x.jsonl")));
        assert!(claude.is_state(Path::new(".claude/projects/-src/s.jsonl")));
        assert!(!claude.is_state(Path::new(".claude/projects/-src/memory/MEMORY.md")));
        assert!(claude.reviews_below(Path::new(".claude/projects/-src")));
        assert!(!claude.reviews_below(Path::new(".claude/todos")));
        assert!(claude.reviews_below(Path::new(".claude/projects/-src")));
        assert!(!claude.reviews_below(Path::new(".claude/todos")));
        assert!(!claude.is_state(Path::new(".claude/CLAUDE.md")));
        assert!(claude.keyed(Path::new(".claude/settings.json")).is_some());
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
