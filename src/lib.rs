//! a3s-iso: effect isolation for AI coding agents and CI jobs on git repositories.
//!
//! The library holds the logic; the binary only parses arguments and renders outcomes. Each
//! command is one module returning a typed outcome; every git call goes through [`git`].

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod base;
pub mod context;
pub mod flows;
pub mod git;
pub mod interface;
pub mod mcp;
pub mod model;
pub mod ops;
pub mod recovery;
pub mod services;
pub mod store;

pub use crate::base::error::{Error, ErrorCode, Result};
pub use crate::context::Context;
