//! What a3s-iso's data is, independent of any verb: change sets, snapshots, isolations.
//! May call: base, git, store, context.
//!
//! What a3s-iso's data is, independent of any verb: the change-set document, snapshots and
//! patches (and the text of a patch), an isolation, a session's private refs, a carried WIP
//! and submodules.

pub mod changeset;
pub mod isolation;
pub(crate) mod json;
pub(crate) mod neutralize;
pub(crate) mod patch_text;
pub(crate) mod pristine;
pub mod refs;
pub mod snapshot;
pub(crate) mod submodules;
pub(crate) mod tree_move;
pub mod wip;
