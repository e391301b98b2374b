use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
use a3s_iso::mcp::{Grants, RunGrants, ServeOptions, serve_stdio};

use super::{Output, parse_duration};
use a3s_iso::interface::request::run::SandboxGrantArgs;

/// `a3s-iso mcp`'s arguments: what the agent is granted. A tool call gets at most this, and
/// by default, for `run`, all of it; it may ask for less.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Also offer the promote and land tools, which write to your checkout
    #[arg(long)]
    pub allow_promote: bool,

    /// Act also on this session of yours (repeatable; by default the server acts only on the
    /// sessions it binds, and on the one whose isolation it was started in)
    #[arg(short = 's', long = "session", value_name = "ID")]
    pub sessions: Vec<String>,

    /// Act on every session of the repository, yours included (list, diff, discard, ...)
    #[arg(long, conflicts_with = "sessions")]
    pub all_sessions: bool,

    /// What every run gets (a call may ask for less, never more)
    #[command(
        flatten,
        next_help_heading = "Grants (a tool call may ask for less, never more)"
    )]
    pub grants: SandboxGrantArgs,

    /// Stop each run after DUR at the latest (a call may ask for less)
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub timeout: Option<Duration>,

    /// Let a call run its command (or land's test) without the sandbox, as a host process
    #[arg(long)]
    pub allow_no_sandbox: bool,

    /// Let calls write files (run's and capture's output, promote's artifacts) beneath DIR
    /// (repeatable)
    #[arg(long, value_name = "DIR")]
    pub allow_output: Vec<PathBuf>,

    /// Let calls read change-set documents (diff's and promote's change_set) beneath DIR
    /// (repeatable)
    #[arg(long, value_name = "DIR")]
    pub allow_input: Vec<PathBuf>,

    /// Let bind make isolations beneath DIR (its base_dir) (repeatable)
    #[arg(long, value_name = "DIR")]
    pub allow_base_dir: Vec<PathBuf>,
}

impl McpArgs {
    fn grants(&self) -> Grants {
        Grants {
            promote: self.allow_promote,
            run: RunGrants {
                allow_network: self.grants.allow_network,
                allow_hosts: self.grants.allow_host.clone(),
                publish: self.grants.publish.clone(),
                allow_read: self.grants.allow_read_with_env(),
                allow_write: self.grants.allow_write_with_env(),
                profile: self.grants.profile.clone(),
                cache: self.grants.cache,
                env: self.grants.env.clone(),
                timeout: self.timeout,
            },
            no_sandbox: self.allow_no_sandbox,
            output: self.allow_output.clone(),
            input: self.allow_input.clone(),
            base_dir: self.allow_base_dir.clone(),
            all_sessions: self.all_sessions,
            sessions: self.sessions.clone(),
        }
    }
}

/// Serves the tools on stdin and stdout until the client closes stdin.
pub fn run(ctx: &Context, args: &McpArgs, out: &Output) -> Result<i32> {
    let grants = args.grants().resolve(&ctx.start_dir)?;
    serve_stdio(ServeOptions {
        context: ctx.clone(),
        grants,
        helper: std::env::current_exe().ok(),
        quiet: out.quiet,
    })?;
    Ok(0)
}
