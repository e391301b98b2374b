//! What Claude Code sends a worktree hook on stdin: one JSON object, for `WorktreeCreate` with
//! the proposed worktree's name (in one of its shapes) and sometimes a base; for
//! `WorktreeRemove`, the `worktree_path`. Unused fields are ignored, so a newer Claude Code
//! keeps working; a used one must have the right type, and the event name must be the hook's.

use crate::base::invalid::Invalid;
use std::io::Read;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::base::error::{Error, Result};

/// The largest payload read.
const MAX_PAYLOAD_BYTES: u64 = 1 << 20;

/// The worktree events a3s-iso handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum WorktreeEvent {
    /// `WorktreeCreate`: Claude Code wants a worktree and reads its path from stdout.
    #[serde(rename = "WorktreeCreate")]
    Create,
    /// `WorktreeRemove`: Claude Code is done with a worktree.
    #[serde(rename = "WorktreeRemove")]
    Remove,
}

impl WorktreeEvent {
    /// The event's name in Claude Code's settings and payloads.
    pub fn name(self) -> &'static str {
        match self {
            WorktreeEvent::Create => "WorktreeCreate",
            WorktreeEvent::Remove => "WorktreeRemove",
        }
    }

    /// The event argument of `a3s-iso hook claude` that runs its hook.
    pub fn subcommand(self) -> &'static str {
        match self {
            WorktreeEvent::Create => "worktree-create",
            WorktreeEvent::Remove => "worktree-remove",
        }
    }
}

/// A `WorktreeCreate` payload.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CreatePayload {
    /// The proposed name (or the last component of the proposed path), when one was sent.
    pub name: Option<String>,
    /// The directory Claude Code runs in.
    pub cwd: Option<PathBuf>,
    /// The commit or ref Claude Code proposed to start from.
    pub base: Option<String>,
    /// Claude Code's own session id.
    pub claude_session: Option<String>,
}

/// A `WorktreeRemove` payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemovePayload {
    /// The worktree to remove (the path the create hook printed).
    pub worktree_path: PathBuf,
    /// The directory Claude Code runs in.
    pub cwd: Option<PathBuf>,
}

/// Reads one JSON object from `input`, and nothing after it (stdin may stay open).
fn read_object(input: impl Read, event: WorktreeEvent) -> Result<Map<String, Value>> {
    let mut de = serde_json::Deserializer::from_reader(input.take(MAX_PAYLOAD_BYTES));
    let value = Value::deserialize(&mut de).map_err(|e| Error::InvalidInput {
        reason: Invalid::PayloadNotJson {
            event: event.name().to_string(),
            error: e.to_string(),
        },
    })?;
    let Value::Object(object) = value else {
        return Err(Error::InvalidInput {
            reason: Invalid::PayloadNotObject {
                event: event.name().to_string(),
            },
        });
    };
    match text(&object, &["hook_event_name"], event)? {
        Some(found) if found != event.name() => Err(Error::InvalidInput {
            reason: Invalid::PayloadForAnotherEvent {
                found,
                event: event.name().to_string(),
            },
        }),
        _ => Ok(object),
    }
}

/// The first of `keys` the object has as a string (`null`: absent; another type: an error).
fn text(
    object: &Map<String, Value>,
    keys: &[&str],
    event: WorktreeEvent,
) -> Result<Option<String>> {
    for key in keys {
        match object.get(*key) {
            None | Some(Value::Null) => continue,
            Some(Value::String(text)) => return Ok(Some(text.clone())),
            Some(other) => {
                return Err(Error::InvalidInput {
                    reason: Invalid::PayloadField {
                        event: event.name().to_string(),
                        key: key.to_string(),
                        found: other.to_string(),
                    },
                });
            }
        }
    }
    Ok(None)
}

impl CreatePayload {
    /// Reads a `WorktreeCreate` payload.
    pub fn read(input: impl Read) -> Result<CreatePayload> {
        let event = WorktreeEvent::Create;
        let object = read_object(input, event)?;
        let named = text(
            &object,
            &["name", "worktree_name", "branch_name", "branch"],
            event,
        )?;
        let from_path = text(&object, &["worktree_path", "path"], event)?.and_then(|path| {
            PathBuf::from(path)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        });
        Ok(CreatePayload {
            name: named.or(from_path).filter(|n| !n.is_empty()),
            cwd: text(&object, &["cwd"], event)?.map(PathBuf::from),
            base: text(
                &object,
                &["base_commit", "base_ref", "source_ref", "base"],
                event,
            )?
            .filter(|b| !b.is_empty()),
            claude_session: text(&object, &["session_id"], event)?,
        })
    }
}

impl RemovePayload {
    /// Reads a `WorktreeRemove` payload; the worktree's path is required.
    pub fn read(input: impl Read) -> Result<RemovePayload> {
        let event = WorktreeEvent::Remove;
        let object = read_object(input, event)?;
        let path = text(&object, &["worktree_path", "path", "worktreePath"], event)?
            .filter(|p| !p.is_empty())
            .ok_or(Error::InvalidInput {
                reason: Invalid::PayloadNoWorktree,
            })?;
        Ok(RemovePayload {
            worktree_path: PathBuf::from(path),
            cwd: text(&object, &["cwd"], event)?.map(PathBuf::from),
        })
    }
}

/// A session id made of a proposed worktree name, or `None` when nothing of it is left.
pub fn session_id_from(name: &str) -> Option<String> {
    let mut id: String = name
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '-' => c,
            _ => '-',
        })
        .collect();
    while id.contains("..") {
        id = id.replace("..", ".");
    }
    let mut id = id
        .trim_start_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string();
    id.truncate(crate::base::ids::MAX_ID_LEN);
    loop {
        if let Some(rest) = id.strip_suffix(".lock") {
            id.truncate(rest.len());
        } else if id.ends_with('.') {
            id.pop();
        } else {
            break;
        }
    }
    crate::base::ids::validate(&id).ok().map(|()| id)
}

#[cfg(test)]
mod tests {
    use crate::flows::claude::payload::*;

    #[test]
    fn names_become_valid_session_ids() {
        assert_eq!(session_id_from("agent-a1b2").as_deref(), Some("agent-a1b2"));
        assert_eq!(
            session_id_from("claude/feat x").as_deref(),
            Some("claude-feat-x")
        );
        assert_eq!(
            session_id_from("..hidden..x.lock.").as_deref(),
            Some("hidden.x")
        );
        assert_eq!(session_id_from("Ünïcode").as_deref(), Some("n-code"));
        assert_eq!(session_id_from("///"), None);
        assert_eq!(
            session_id_from(&"a".repeat(300)).map(|s| s.len()),
            Some(128)
        );
    }

    #[test]
    fn payload_shapes_are_read_leniently_but_typed() {
        let shapes: [&[u8]; 4] = [
            br#"{"session_id":"s","cwd":"/r","hook_event_name":"WorktreeCreate","name":"agent-1"}"#,
            br#"{"hook_event_name":"WorktreeCreate","worktree_name":"agent-1","base_path":"/r/.w","extra":{"x":1}}"#,
            br#"{"branch_name":"agent-1","base_ref":"main"}"#,
            br#"{"worktree_path":"/r/.claude/worktrees/agent-1"} trailing"#,
        ];
        for shape in shapes {
            let payload = CreatePayload::read(shape).unwrap();
            assert_eq!(payload.name.as_deref(), Some("agent-1"), "{shape:?}");
        }
        assert!(CreatePayload::read(&br#"{"name":7}"#[..]).is_err());
        assert!(CreatePayload::read(&br#"{"hook_event_name":"WorktreeRemove"}"#[..]).is_err());
        assert!(CreatePayload::read(&b"[1]"[..]).is_err());
        assert!(RemovePayload::read(&br#"{"cwd":"/r"}"#[..]).is_err());
        let remove = RemovePayload::read(&br#"{"worktree_path":"/w","cwd":"/r"}"#[..]).unwrap();
        assert_eq!(remove.worktree_path, PathBuf::from("/w"));
    }
}
