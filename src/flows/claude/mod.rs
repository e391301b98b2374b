//! Claude Code's worktree hooks and `init claude`: binds, setups and discards.
//! May call: base, git, store, context, model, recovery, services, ops and the rest of flows.
//!
//! Claude Code's worktree hooks. With `WorktreeCreate` and `WorktreeRemove` configured,
//! `claude --worktree` and its subagents' worktrees are a3s-iso isolations: the create hook
//! binds a session and prints its isolation's path, the remove hook captures the session's
//! work and discards the isolation. `init claude` adds both hooks to the project's settings.

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
