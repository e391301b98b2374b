//! What several verbs share: evidence, runs, the pool, remotes, the network, configuration.
//! May call: base, git, store, context, model, recovery.
//!
//! What several verbs share: capture's insides (evidence), a session's steps and runs,
//! nested change sets, whether a session landed, the pool of spares, purges, rebase planning,
//! remotes, the network proxy, the package managers' caches, profiles, configuration, setup and overlaps.

pub mod caches;
pub mod config;
pub mod copyignored;
pub mod evidence;
pub mod hidden_paths;
pub mod hidden_tools;
pub mod landed;
pub mod nested;
pub mod network;
pub mod overlaps;
pub mod pool;
pub(crate) mod presnapshot;
pub mod profile;
pub mod profile_copies;
pub mod profile_review;
pub(crate) mod purge;
pub mod purge_item;
pub mod rebase;
pub mod reclaimed;
pub mod remote;
pub mod runs;
pub mod setup;
pub(crate) mod steps;
pub(crate) mod worktree;
pub(crate) mod writeback;
