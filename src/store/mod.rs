//! The state store under `<common dir>/a3s-iso/`: its records, their layout, the lock.
//! May call: base, git.

pub mod layout;
pub mod lock;
pub mod network_report;
pub mod scratch;
pub mod state;
