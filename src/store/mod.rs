//! TODO-DOC store

pub(crate) mod layout;
pub mod lock;
pub mod scratch;
pub mod state;
