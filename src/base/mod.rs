//! The bottom layer: errors and their codes, ids, paths, file-system and process primitives.
//! May call: no other folder of the library; every folder may call it.

pub mod argv;
pub(crate) mod beneath;
pub mod command_env;
pub mod duration;
pub mod error;
pub mod fault;
pub mod fsutil;
pub mod ids;
pub mod include;
pub mod interrupted;
pub mod invalid;
pub(crate) mod maker;
pub mod names;
pub mod owner;
pub mod paths;
pub mod probe;
pub(crate) mod pty;
pub mod reflink;
pub mod sandbox;
pub mod signals;
pub mod warning;
pub(crate) mod wire;
