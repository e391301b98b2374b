//! a3s-iso: effect isolation for AI coding agents and CI jobs on git repositories.
//!
//! The library holds the logic; the binary only parses arguments and renders outcomes. Each
//! command is one module returning a typed outcome; every git call goes through [`git`].

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod base;
pub mod flows;
pub mod front;
pub mod git;
pub mod mcp;
pub mod model;
pub mod ops;
pub mod recovery;
pub mod services;
pub mod store;
pub mod workspace;

pub use crate::base::error::{Error, ErrorCode, Result};
pub use crate::workspace::context::Context;
