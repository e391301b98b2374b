//! One verb each (a folder where a verb has parts), each returning a typed outcome.
//! May call: base, git, store, context, model, recovery, services; a verb never calls another verb.

pub mod bind;
pub mod capture;
pub mod changes;
pub mod complete;
pub mod diff;
pub mod discard;
pub mod doctor;
pub mod enter;
pub mod gc;
pub mod list;
pub mod log;
pub mod profile;
pub mod promote;
pub mod retain;
pub mod run;
pub mod show;
pub mod sweep;
