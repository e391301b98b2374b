//! `a3s-iso mcp`: the commands as the tools of a Model Context Protocol server on stdio.
//! May call: base, git, store, context, model, recovery, services, ops, flows, interface.
//!
//! JSON-RPC 2.0, one message a line, for agents whose client speaks MCP. Each tool is one
//! call of the library (`bind`, `run`, `diff`, `show`, `list`, `overlaps`, `capture`,
//! `discard`; `promote` and `land` only when allowed), its result the JSON document the
//! command prints with `--json`. An a3s-iso failure is a tool result with `isError` and the
//! `a3s-iso.error.v1` document; a message the protocol does not allow (not JSON, an unknown
//! method, arguments a tool does not take) is a JSON-RPC error.

mod args;
mod grants;
mod narrow;
mod place;
mod protocol;
mod server;
mod tool;
mod tools;

pub use crate::mcp::grants::{Grants, RunGrants};
pub use crate::mcp::protocol::ProtocolVersion;
pub use crate::mcp::server::{ServeOptions, serve, serve_stdio};
pub use crate::mcp::tools::Tool;
