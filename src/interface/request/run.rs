//! `run`'s request, and the sandbox's grants as `run` and `mcp` take them.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::base::command_env::EnvRequest;
use crate::interface::request::verb::{AgentOnly, Request, SessionArg, parse_duration};
use crate::services::caches::CacheMode;

/// `a3s-iso run`'s arguments.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The session acted on.
    #[command(flatten)]
    pub session: SessionArg,

    /// Name the run (generated when omitted); a run id is never reused
    #[arg(long, value_name = "RID")]
    pub run_id: Option<String>,

    /// Stop the command after DUR (SIGTERM to its process group, SIGKILL 2 s later)
    #[arg(long, value_name = "DUR", value_parser = parse_duration)]
    pub timeout: Option<Duration>,

    /// What the sandbox lets the command do beyond the defaults.
    #[command(flatten)]
    pub grants: SandboxGrantArgs,

    /// Run the command as a plain host process, without the sandbox
    #[arg(long, conflicts_with_all = ["allow_network", "allow_write", "allow_read", "allow_host", "publish", "profile", "cache"])]
    pub no_sandbox: bool,

    /// Run without reading the repository's .a3s-iso.toml at all (trusted or not)
    #[arg(long)]
    pub ignore_config: bool,

    /// The agent_release_identity recorded in the run's change set (sha256:<64 hex>)
    #[arg(
        long,
        value_name = "SHA256",
        env = "A3S_ISO_RELEASE_IDENTITY",
        hide_env_values = true
    )]
    pub release_identity: Option<String>,

    /// The command and its arguments
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// The sandbox's grants: network, hosts, ports, paths, a profile and variables.
#[derive(Debug, Args)]
pub struct SandboxGrantArgs {
    /// Let the command reach the network (it is denied by default)
    #[arg(long)]
    pub allow_network: bool,

    /// Also let the command write to PATH (repeatable; also A3S_ISO_ALLOW_WRITE, colon-separated)
    #[arg(long, value_name = "PATH")]
    pub allow_write: Vec<PathBuf>,

    /// Let the command read PATH although it is hidden (a secret such as ~/.ssh) or private
    /// (repeatable; also A3S_ISO_ALLOW_READ, colon-separated)
    #[arg(long, value_name = "PATH")]
    pub allow_read: Vec<PathBuf>,

    /// Run under the profile NAME: claude, codex, aider, generic or one of your configuration's
    /// (its home paths writable, kept apart by a3s-iso; its variables; its hosts)
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,

    /// Pass the variable NAME to the command, or set NAME=VALUE (repeatable)
    ///
    /// Otherwise the command gets only PATH, HOME, USER, LOGNAME, SHELL, TERM, COLORTERM, LANG,
    /// LC_*, TZ, TMPDIR, EDITOR, PAGER, A3S_ISO_*, git's identity and where git's configuration
    /// is. NAME may be a pattern ('NODE_*'), but a variable that looks like a credential
    /// (*TOKEN*, *SECRET*, *PASSWORD*, *_KEY, *API_KEY*, AWS_*, GITHUB_*, GH_*, *CREDENTIAL*)
    /// passes only when named exactly. With or without the sandbox.
    #[arg(long, value_name = "NAME[=VALUE]", value_parser = parse_env)]
    pub env: Vec<EnvRequest>,

    /// Let the command reach HOST[:PORT] through a3s-iso's HTTP proxy (repeatable)
    ///
    /// The command keeps its own network with only loopback; HTTP_PROXY and the like point it
    /// at the proxy on 127.0.0.1:3128 inside. HOST is a name (api.example.com), a wildcard
    /// (*.example.org: any subdomain, not the domain itself), an IP address (127.0.0.1:8080,
    /// [::1]:8080) or a preset: @crates, @npm, @pypi, @github, @anthropic, @openai. Without a
    /// port: 80 and 443 (presets: 443). Names resolving to loopback, private, link-local or
    /// metadata addresses are refused unless that address is allowed as an IP address.
    #[arg(long, value_name = "HOST[:PORT]", conflicts_with = "allow_network")]
    pub allow_host: Vec<String>,

    /// Publish PORT inside on the host's 127.0.0.1:HOST_PORT while the run lives (repeatable;
    /// HOST_PORT 0 or omitted: one the kernel picks, printed on stderr)
    #[arg(
        long,
        value_name = "[HOST_PORT:]PORT",
        conflicts_with = "allow_network"
    )]
    pub publish: Vec<String>,

    /// The cache of a preset's package manager (@npm: npm, @pypi: pip, @crates: cargo): private
    /// (a3s-iso's own, shared by your runs; the default), user (your own ~/.npm, ~/.cache/pip,
    /// ~/.cargo/registry and ~/.cargo/git, made writable) or none
    #[arg(long, value_name = "MODE", value_parser = parse_cache)]
    pub cache: Option<CacheMode>,
}

impl SandboxGrantArgs {
    /// `--allow-write`, then the paths of `A3S_ISO_ALLOW_WRITE`.
    pub fn allow_write_with_env(&self) -> Vec<PathBuf> {
        with_env(&self.allow_write, "A3S_ISO_ALLOW_WRITE")
    }

    /// `--allow-read`, then the paths of `A3S_ISO_ALLOW_READ`.
    pub fn allow_read_with_env(&self) -> Vec<PathBuf> {
        with_env(&self.allow_read, "A3S_ISO_ALLOW_READ")
    }
}

/// The paths given, and those the variable lists (colon-separated).
fn with_env(given: &[PathBuf], var: &str) -> Vec<PathBuf> {
    let mut paths = given.to_vec();
    if let Some(listed) = std::env::var_os(var) {
        paths.extend(std::env::split_paths(&listed).filter(|p| !p.as_os_str().is_empty()));
    }
    paths
}

/// `--env NAME`, `--env 'PATTERN*'` or `--env NAME=VALUE`.
fn parse_env(arg: &str) -> std::result::Result<EnvRequest, String> {
    EnvRequest::parse(std::ffi::OsStr::new(arg)).map_err(|e| e.to_string())
}

/// `--cache private|user|none`.
fn parse_cache(arg: &str) -> std::result::Result<CacheMode, String> {
    CacheMode::ALL
        .into_iter()
        .find(|mode| mode.as_str() == arg)
        .ok_or_else(|| format!("expected private, user or none, not {arg:?}"))
}

impl Request for RunArgs {
    const VERB: &'static str = "run";
    const NOT_FOR_AGENTS: &'static [&'static str] = &["cache"];
    const AGENT_NOTES: &'static [(&'static str, &'static str)] = &[
        (
            "command",
            "(an array: each word exactly, no shell; use [\"sh\", \"-c\", \"...\"] for one)",
        ),
        ("timeout", "(DUR: 500ms, 90s, 10m, 1h)"),
    ];
    const AGENT_ONLY: &'static [AgentOnly] = &[AgentOnly {
        name: "output",
        flag: false,
        description: "Append the command's stdout and stderr to this file instead of returning \
                      them with the result",
    }];
}
