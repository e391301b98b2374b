//! `init claude`: the two worktree hooks merged into `.claude/settings.local.json`, the rest
//! kept in its order. Running it again changes nothing; a file that is not JSON, or whose
//! `hooks` Claude Code would not read, is refused and left untouched.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::base::error::{Error, IoContext, Result};
use crate::base::warning::{LandWarning, Warning};
use crate::context::Context;
use crate::flows::claude::payload::WorktreeEvent;
use crate::model::json::{Json, member_or_insert};

/// Where the hooks go, relative to the top of the source.
pub const SETTINGS_FILE: &str = ".claude/settings.local.json";

/// The largest settings file read.
const MAX_SETTINGS_BYTES: u64 = 16 << 20;

/// How long Claude Code lets each hook run, in seconds (a first bind can exceed its default).
const HOOK_TIMEOUT_SECS: u64 = 600;

/// One hook as `init claude` left it.
#[derive(Debug, Clone, Serialize)]
pub struct InitHook {
    /// `WorktreeCreate` or `WorktreeRemove`.
    pub event: WorktreeEvent,
    /// The command Claude Code runs.
    pub command: String,
    /// Added by this call (`false`: it was there already).
    pub added: bool,
    /// Other command hooks of the same event in the file (Claude Code runs them too).
    pub other_hooks: usize,
}

/// What `init claude` did.
#[derive(Debug, Clone, Serialize)]
pub struct InitOutcome {
    /// The settings file.
    #[serde(with = "crate::base::paths::fs_path")]
    pub settings: PathBuf,
    /// The file did not exist and was created.
    pub created: bool,
    /// The file was written (`false`: both hooks were there already).
    pub changed: bool,
    /// The two hooks.
    pub hooks: Vec<InitHook>,
    /// What the user should know.
    pub warnings: Vec<Warning>,
}

/// The command of the hook for `event`.
pub fn hook_command(event: WorktreeEvent) -> String {
    format!("a3s-iso hook claude {}", event.subcommand())
}

/// Adds both worktree hooks to `.claude/settings.local.json`, creating it if need be.
pub fn init(ctx: &Context) -> Result<InitOutcome> {
    let located = crate::recovery::locate(ctx)?;
    let top = &located.repo.toplevel;
    let path = top.join(SETTINGS_FILE);
    let existing = read_settings(&path)?;
    let mut root = existing
        .as_ref()
        .map_or_else(|| Json::Object(Vec::new()), |(json, _)| json.clone());
    let mut hooks = Vec::new();
    for event in [WorktreeEvent::Create, WorktreeEvent::Remove] {
        let (added, other_hooks) =
            add_hook(&mut root, event).map_err(|why| refused(&path, &why))?;
        hooks.push(InitHook {
            event,
            command: hook_command(event),
            added,
            other_hooks,
        });
    }
    let changed = hooks.iter().any(|h| h.added);
    let created = existing.is_none();
    if changed {
        write_settings(&path, &root, existing.map(|(_, mode)| mode))?;
    }
    let mut warnings = Vec::new();
    for hook in hooks.iter().filter(|h| h.other_hooks > 0) {
        let other = LandWarning::OtherHooks {
            settings: path.clone(),
            count: hook.other_hooks,
            event: hook.event.name().to_string(),
        };
        warnings.push(other.into());
    }
    if !ctx.git.is_ignored(top, SETTINGS_FILE)? {
        let file = SETTINGS_FILE.to_string();
        warnings.push(LandWarning::SettingsNotIgnored { file }.into());
    }
    Ok(InitOutcome {
        settings: path,
        created,
        changed,
        hooks,
        warnings,
    })
}

/// The settings file's content and mode, if any; a link, a directory or not JSON is refused.
fn read_settings(path: &Path) -> Result<Option<(Json, u32)>> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(format!("cannot inspect {}", path.display()), e)),
    };
    if meta.file_type().is_symlink() {
        return Err(refused(
            path,
            "it is a symbolic link, which a3s-iso does not write through",
        ));
    }
    if !meta.is_file() {
        return Err(refused(path, "it is not a regular file"));
    }
    let bytes = crate::base::fsutil::read_small_regular_file(path, MAX_SETTINGS_BYTES)
        .ctx(|| format!("cannot read {}", path.display()))?;
    let mode = meta.permissions().mode() & 0o7777;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Some((Json::Object(Vec::new()), mode)));
    }
    let json = serde_json::from_slice::<Json>(&bytes)
        .map_err(|e| refused(path, &format!("it is not JSON ({e})")))?;
    Ok(Some((json, mode)))
}

/// The error for a settings file a3s-iso will not change.
fn refused(path: &Path, why: &str) -> Error {
    Error::InvalidInput {
        reason: crate::base::invalid::Invalid::AgentSettings {
            path: path.to_path_buf(),
            why: why.to_string(),
        },
    }
}

/// Adds the hook for `event` unless there; whether it was, and how many other hooks it has.
fn add_hook(root: &mut Json, event: WorktreeEvent) -> std::result::Result<(bool, usize), String> {
    let Json::Object(members) = root else {
        return Err("it is not a JSON object".into());
    };
    let Json::Object(events) = member_or_insert(members, "hooks", Json::Object(Vec::new())) else {
        return Err("its \"hooks\" is not an object".into());
    };
    let Json::Array(groups) = member_or_insert(events, event.name(), Json::Array(Vec::new()))
    else {
        return Err(format!(
            "its \"hooks\".\"{}\" is not an array",
            event.name()
        ));
    };
    let commands: Vec<&str> = groups
        .iter()
        .filter_map(|group| match group.get("hooks") {
            Some(Json::Array(hooks)) => Some(hooks),
            _ => None,
        })
        .flatten()
        .filter_map(|hook| match hook.get("command") {
            Some(Json::String(command)) => Some(command.as_str()),
            _ => None,
        })
        .collect();
    let ours = commands.iter().any(|c| is_ours(c, event));
    let others = commands.iter().filter(|c| !is_ours(c, event)).count();
    if !ours {
        groups.push(entry(event));
    }
    Ok((!ours, others))
}

/// Whether a hook's command is `a3s-iso … hook claude <event's subcommand>`.
fn is_ours(command: &str, event: WorktreeEvent) -> bool {
    let words: Vec<&str> = command
        .split_whitespace()
        .map(|w| w.trim_matches(|c| c == '\'' || c == '"'))
        .collect();
    let program = words.first().map(|w| w.rsplit('/').next().unwrap_or(w));
    program == Some("a3s-iso") && words.ends_with(&["hook", "claude", event.subcommand()])
}

/// The settings entry of a3s-iso's hook for `event`.
fn entry(event: WorktreeEvent) -> Json {
    let hook = Json::Object(vec![
        ("type".into(), Json::String("command".into())),
        ("command".into(), Json::String(hook_command(event))),
        ("timeout".into(), Json::Number(HOOK_TIMEOUT_SECS.into())),
    ]);
    Json::Object(vec![("hooks".into(), Json::Array(vec![hook]))])
}

/// Writes the settings atomically, with the old file's mode.
fn write_settings(path: &Path, root: &Json, mode: Option<u32>) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(root)
        .map_err(|e| Error::internal(format!("cannot serialise the settings: {e}")))?;
    bytes.push(b'\n');
    crate::base::fsutil::write_atomic(path, &bytes)?;
    if let Some(mode) = mode {
        fs::set_permissions(path, fs::Permissions::from_mode(mode))
            .ctx(|| format!("cannot set the mode of {}", path.display()))?;
    }
    Ok(())
}
