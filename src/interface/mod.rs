//! What the command line and the MCP server share: each verb's request, the words of an error.
//! May call: base, git, store, context, model, recovery, services, ops, flows.
//!
//! What the command line (the binary's `cli/`) and the MCP server (`mcp/`) share of the
//! interface: the words a user reads, which name commands and flags.

pub mod errors;
pub mod request;
