//! What a command opens before it acts: the source repository and its store (`Context`,
//! `Located`), which session `-s` names, and what recovery could not finish in time.

pub mod context;
pub(crate) mod interrupted;
