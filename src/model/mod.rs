//! TODO-DOC model

pub mod changeset;
pub mod isolation;
pub(crate) mod neutralize;
pub mod refs;
pub mod snapshot;
pub(crate) mod strictjson;
pub(crate) mod submodules;
pub mod wip;
