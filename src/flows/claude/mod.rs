//! Claude Code's worktree hooks and `init claude`: binds, setups and discards.
//! May call: base, git, store, context, model, recovery, services, ops and the rest of flows.
//!
//! With `WorktreeCreate` and `WorktreeRemove` configured, `claude --worktree` worktrees are
//! isolations: create binds a session and prints its path, remove captures and discards it.

mod hooks;
mod payload;
mod settings;

pub use crate::flows::claude::hooks::{RemoveOutcome, worktree_create, worktree_remove};
pub use crate::flows::claude::payload::{
    CreatePayload, RemovePayload, WorktreeEvent, session_id_from,
};
pub use crate::flows::claude::settings::{
    InitHook, InitOutcome, SETTINGS_FILE, hook_command, init,
};
