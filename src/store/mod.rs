//! TODO-DOC store

pub(crate) mod layout;
pub mod lock;
pub mod network_report;
pub mod scratch;
pub mod state;
