//! What the command line (the binary's `cli/`) and the MCP server (`mcp/`) share of the
//! interface: the words a user reads, which name commands and flags.

pub mod errors;
