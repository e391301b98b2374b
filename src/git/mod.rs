//! The only place that runs git. Every call: stdin closed (or fed), output captured, a fixed
//! environment (no pager, no prompt, C messages, no fsmonitor, no repository-selecting variables
//! from the caller), and a typed failure carrying args, exit code and stderr. Domain code uses
//! the typed operations (`ops.rs`) where they exist, and [`Git::at`] otherwise. Git on an
//! isolation goes through [`HermeticGit`], which names every location git reads, and patches
//! are computed in an [`ObjectView`] (`hermetic.rs`).

mod blobs;
mod hermetic;
mod merge;
mod ops;
mod remote;
mod runner;
mod submodule;

pub(crate) use hermetic::{HermeticGit, ObjectView, resolve_head};
pub(crate) use merge::{CommitInfo, Merged};
pub(crate) use ops::{CatFile, PatchInput, RefUpdate, is_commit_type};
pub(crate) use remote::{ObjectInfo, TopEntry};
pub use runner::Git;
pub(crate) use runner::{GitCmd, REPO_SELECTING_VARS, failure_of, split_nul};
pub(crate) use submodule::{Gitlink, LocalClone, file_url, module_paths};
