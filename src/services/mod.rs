//! TODO-DOC services

pub mod config;
pub mod copyignored;
pub mod evidence;
pub mod hidden_paths;
pub mod network;
pub mod overlaps;
pub mod pool;
pub mod profile;
pub(crate) mod purge;
pub mod purge_item;
pub mod quarantine;
pub mod rebase;
pub mod remote;
pub mod run_request;
pub(crate) mod writeback;
