use clap::Args;

use a3s_iso::base::error::Result;
use a3s_iso::mcp::{ServeOptions, serve_stdio};
use a3s_iso::workspace::context::Context;

use super::Output;

/// `a3s-iso mcp`'s arguments.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Also offer the promote and land tools, which write to your checkout
    #[arg(long)]
    pub allow_promote: bool,
}

/// Serves the tools on stdin and stdout until the client closes stdin.
pub fn run(ctx: &Context, args: &McpArgs, out: &Output) -> Result<i32> {
    serve_stdio(ServeOptions {
        context: ctx.clone(),
        allow_promote: args.allow_promote,
        helper: std::env::current_exe().ok(),
        quiet: out.quiet,
    })?;
    Ok(0)
}
