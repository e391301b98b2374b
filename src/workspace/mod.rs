//! TODO-DOC workspace

pub mod context;
pub(crate) mod interrupted;
