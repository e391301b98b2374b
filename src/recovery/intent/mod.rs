//! Write-ahead intents of the promotes that change the user's checkout, and their finishing.
//! May call: base, git, store, context, model and the rest of recovery.
//!
//! Every promote that changes the user's checkout first writes, fsynced, what it is about to do
//! (`<state>/intents/<digest hex>.json`); the next command that takes the repository lock
//! finishes whatever a crash left half done, before anything else.
//!
//! - Patch mode records each touched path's pre- and post-image (mode and blob id, or absent),
//!   both in the object store before the checkout is written path by path, each by rename.
//!   Recovery compares the checkout with the recorded ids: all post → journal; all pre →
//!   nothing landed; some of each → write the rest; anything else → keep the intent and
//!   report a conflict, never guess.
//! - Branch mode records the branch and its old tip, the stash holding the user's WIP (found by
//!   a token in its message), the commits replayed so far and the final tip. Recovery completes
//!   a finished replay or resets to the old tip, and always restores the WIP.
//!
//! "Already promoted" is decided from these records and the journal, never from whether a
//! patch happens to apply in reverse.

mod checkout;
mod images;
mod orphans;
mod record;
mod recover;
mod stash;

pub(crate) use crate::recovery::intent::checkout::{Checkout, PathState, Side};
pub(crate) use crate::recovery::intent::images::{
    Planned, Touched, patch_changes, plan_of_changes, plan_patch, tree_changes, tree_images,
};
pub(crate) use crate::recovery::intent::record::{
    BranchPlan, Changes, Entry, Intent, PatchPlan, PathChange, RepoPath, SCHEMA, tag,
};
pub(crate) use crate::recovery::intent::record::{load, pending, remove, save};
pub(crate) use crate::recovery::intent::recover::{blocking, recover};
pub(crate) use crate::recovery::intent::stash::{
    has_wip, push as stash_push, restore as restore_stash,
};
