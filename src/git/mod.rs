//! The only place that runs git, and git's formats read in one place (the index file).
//! May call: base.
//!
//! The only place that runs git. Every call: stdin closed (or fed), output captured, a fixed
//! environment (no pager, no prompt, C messages, no fsmonitor, no repository-selecting variables
//! from the caller), and a typed failure carrying args, exit code and stderr. Git's arguments are
//! built here only: domain code calls typed operations (`ops.rs`, and a module by kind:
//! `index.rs`, `checkout.rs`, `stash.rs`, `diff.rs`, `objects.rs`). Git on an
//! isolation goes through [`HermeticGit`], which names every location git reads, and patches
//! are computed in an [`ObjectView`] (`hermetic.rs`).

mod blobs;
mod checkout;
pub(crate) mod diff;
mod hermetic;
mod index;
pub(crate) mod index_file;
mod merge;
mod objects;
mod ops;
mod remote;
pub mod repo;
mod runner;
mod stash;
mod submodule;
mod tree_edit;
mod version_cache;

pub(crate) use crate::git::checkout::{PathsByKind, Person, Untracked};
pub(crate) use crate::git::hermetic::{HermeticGit, ObjectView, resolve_head};
pub(crate) use crate::git::index::{OnIndex, TreeDiff};
pub(crate) use crate::git::merge::{CommitInfo, Merged, SideNames};
pub(crate) use crate::git::objects::Receiver;
pub(crate) use crate::git::ops::{CatFile, PatchInput, RefUpdate, is_commit_type, is_tree_type};
pub(crate) use crate::git::remote::{LeasedPush, ObjectInfo, TopEntry};
pub use crate::git::runner::Git;
pub(crate) use crate::git::runner::{GitOutput, REPO_SELECTING_VARS, split_nul};
pub(crate) use crate::git::stash::{Identity, LOCK_PAUSE, LOCK_TRIES, Marked, TOKEN_VAR};
pub(crate) use crate::git::submodule::{Gitlink, LocalClone, file_url, module_paths};
pub(crate) use crate::git::tree_edit::TreeEdit;

#[cfg(test)]
pub(crate) mod testing;
