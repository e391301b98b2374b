//! What the command line and the MCP server share: requests, the words of errors and warnings.
//! May call: base, git, store, context, model, recovery, services, ops, flows.
//!
//! What the command line (the binary's `cli/`) and the MCP server (`mcp/`) share of the
//! interface: the words a user reads of errors and warnings, which name commands and flags.

pub mod errors;
pub mod request;
pub mod warnings;
