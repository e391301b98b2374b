//! a3s-iso: effect isolation for AI coding agents and CI jobs on git repositories.
//!
//! The library holds the logic; the binary only parses arguments and renders outcomes. Each
//! command is one module returning a typed outcome; every git call goes through [`git`].

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod argv;
mod beneath;
pub mod bind;
pub mod capture;
pub mod changes;
pub mod changeset;
pub mod claude;
pub mod command_env;
pub mod complete;
pub mod config;
pub mod context;
pub mod copyignored;
pub mod diff;
pub mod discard;
pub mod doctor;
pub mod duration;
pub mod enter;
pub mod error;
pub mod fault;
pub mod fsutil;
pub mod gc;
pub mod git;
pub mod hidden_paths;
pub mod ids;
pub mod include;
mod indexfile;
pub mod intent;
pub mod isolation;
pub mod land;
pub(crate) mod layout;
pub mod list;
pub mod lock;
pub mod log;
pub mod mcp;
pub mod names;
pub mod nested;
pub mod network;
pub(crate) mod neutralize;
pub mod overlaps;
pub mod owner;
pub mod paths;
pub mod pending;
pub mod pool;
pub mod probe;
pub mod profile;
pub mod promote;
mod pty;
pub mod quarantine;
pub mod rebase;
pub mod recovery;
pub mod refs;
pub mod remote;
pub mod repo;
pub mod retain;
pub mod run;
pub(crate) mod run_layer;
pub mod run_request;
pub mod sandbox;
pub mod scratch;
pub mod session_git;
pub mod setup;
pub mod show;
pub mod signals;
pub mod snapshot;
pub mod state;
mod strictjson;
pub(crate) mod submodules;
pub mod sweep;
pub mod wip;
mod wire;
mod writeback;

pub use context::Context;
pub use error::{Error, ErrorCode, Result};
