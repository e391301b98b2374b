//! The state store under `<common dir>/a3s-iso/`: its records, their layout, the lock.
//! May call: base, git.
//!
//! The state store under `<common dir>/a3s-iso/`: its records (sessions, runs, journal,
//! registry, leases), where each lives (`layout`), the repository lock, and what dead
//! processes left in its scratch dir.

pub mod layout;
pub mod lock;
pub mod network_report;
pub mod scratch;
pub mod state;
