//! What the command line and the MCP server share: requests, the words of errors and warnings.
//! May call: base, git, store, context, model, recovery, services, ops, flows.

pub mod errors;
pub mod request;
pub mod warnings;
