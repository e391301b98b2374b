use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use a3s_iso::base::command_env::EnvRequest;
use a3s_iso::base::error::Result;
use a3s_iso::mcp::{Grants, RunGrants, ServeOptions, serve_stdio};
use a3s_iso::workspace::context::Context;

use super::{Output, parse_duration};

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

    /// Let runs reach the whole network (a call may narrow it to hosts, or none)
    #[arg(long)]
    pub allow_network: bool,

    /// Let runs reach HOST[:PORT] through a3s-iso's proxy, as run --allow-host (repeatable; a
    /// call may name fewer)
    #[arg(long, value_name = "HOST[:PORT]", conflicts_with = "allow_network")]
    pub allow_host: Vec<String>,

    /// Publish PORT of runs on the host's loopback, as run --publish (repeatable)
    #[arg(
        long,
        value_name = "[HOST_PORT:]PORT",
        conflicts_with = "allow_network"
    )]
    pub publish: Vec<String>,

    /// Let runs read PATH although it is hidden or private (repeatable; also
    /// A3S_ISO_ALLOW_READ; a call may name paths beneath these)
    #[arg(long, value_name = "PATH")]
    pub allow_read: Vec<PathBuf>,

    /// Let runs write PATH (repeatable; also A3S_ISO_ALLOW_WRITE; a call may name paths
    /// beneath these)
    #[arg(long, value_name = "PATH")]
    pub allow_write: Vec<PathBuf>,

    /// Runs use the profile NAME (its home paths, variables and hosts)
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,

    /// Pass the variable NAME to runs, or set NAME=VALUE (repeatable; a call may pass fewer)
    #[arg(long, value_name = "NAME[=VALUE]", value_parser = parse_env)]
    pub env: Vec<EnvRequest>,

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

/// `--env NAME`, `--env 'PATTERN*'` or `--env NAME=VALUE`.
fn parse_env(arg: &str) -> std::result::Result<EnvRequest, String> {
    EnvRequest::parse(std::ffi::OsStr::new(arg)).map_err(|e| e.to_string())
}

/// The paths given, and those the variable lists (colon-separated), as `run` reads them.
fn with_env(given: &[PathBuf], var: &str) -> Vec<PathBuf> {
    let mut paths = given.to_vec();
    if let Some(listed) = std::env::var_os(var) {
        paths.extend(std::env::split_paths(&listed).filter(|p| !p.as_os_str().is_empty()));
    }
    paths
}

impl McpArgs {
    fn grants(&self) -> Grants {
        Grants {
            promote: self.allow_promote,
            run: RunGrants {
                allow_network: self.allow_network,
                allow_hosts: self.allow_host.clone(),
                publish: self.publish.clone(),
                allow_read: with_env(&self.allow_read, "A3S_ISO_ALLOW_READ"),
                allow_write: with_env(&self.allow_write, "A3S_ISO_ALLOW_WRITE"),
                profile: self.profile.clone(),
                env: self.env.clone(),
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
