//! Commands composed of other commands: bind with its setup, land, Claude Code's hooks.
//! May call: base, git, store, context, model, recovery, services, ops.
//!
//! Setup commands are recorded `run`s in the new isolation; `land` rebases, tests with `run`
//! and promotes one session at a time. A flow calls verbs (and the hooks call the `bind` flow);
//! no verb calls a flow.

pub mod autosweep;
pub mod claude;
pub mod land;
mod land_gate;
pub mod land_push;
mod land_push_branch;
mod land_push_doc;
mod land_remote;
pub mod setup;
