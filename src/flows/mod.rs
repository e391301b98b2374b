//! Commands composed of other commands: bind with its setup, land, Claude Code's hooks.
//! May call: base, git, store, context, model, recovery, services, ops.
//!
//! Commands composed of other commands: `bind` with its setup commands (a recorded `run` in
//! the new isolation), `land` (rebase, test with `run`, promote, one session at a time) and
//! Claude Code's worktree hooks and `init claude` (bind, setup and discard). A flow calls the
//! verbs of `ops` (and the hooks call the `bind` flow); no verb calls a flow.

pub mod autosweep;
pub mod claude;
pub mod land;
mod land_gate;
pub mod land_push;
mod land_push_branch;
mod land_push_doc;
mod land_remote;
pub mod setup;
