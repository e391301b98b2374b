//! The binary's thin command-line layer: parse, call the library, render the outcome.
//! May call: any folder of the library; no folder of the library calls it.

mod assets;
mod bind;
mod capture;
mod changes;
mod complete;
mod config;
mod diff;
mod discard;
mod doctor;
mod examples;
mod fetch;
mod gc;
mod hook;
mod init;
mod land;
mod list;
mod log;
mod mcp;
mod output;
mod overlaps;
mod path;
mod pool;
mod profile;
mod progress;
mod promote;
mod push;
mod rebase;
mod retain;
mod run;
mod shell_init;
mod show;
mod sweep;
mod verify;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

use a3s_iso::base::error::{Error, Result};
use a3s_iso::context::{Context, DEFAULT_LOCK_TIMEOUT};
use a3s_iso::git::Git;

pub use a3s_iso::base::duration::parse_duration;
pub use a3s_iso::interface::request::SessionArg;
pub use output::{
    Output, Tone, human_bytes, inert, inert_joined, plural, quote_path, write_nul_records,
};

#[derive(Debug, Parser)]
#[command(
    name = "a3s-iso",
    version,
    about = "Effect isolation for AI coding agents and CI jobs on git repositories",
    long_about = "Effect isolation for AI coding agents and CI jobs on git repositories.\n\n\
        Each session works in its own detached git worktree next to the repository; its work \
        comes back only through an explicit, verifiable, exactly-once promote.",
    after_help = examples::top_short(),
    after_long_help = examples::top_long()
)]
pub struct Cli {
    /// Run as if started in PATH (the source checkout or any directory in it)
    #[arg(
        short = 'C',
        long = "repo",
        value_name = "PATH",
        global = true,
        help_heading = "Global options"
    )]
    pub repo: Option<PathBuf>,

    /// Print exactly one JSON document on stdout (success or failure)
    #[arg(long, global = true, help_heading = "Global options")]
    pub json: bool,

    /// Print no narration or warnings on stderr
    #[arg(short, long, global = true, help_heading = "Global options")]
    pub quiet: bool,

    /// Keep sessions, journal and evidence in DIR instead of <git common dir>/a3s-iso
    #[arg(
        long,
        value_name = "DIR",
        env = "A3S_ISO_STATE_DIR",
        hide_env_values = true,
        global = true,
        help_heading = "Global options"
    )]
    pub state_dir: Option<PathBuf>,

    /// When to colour human output
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true,
        help_heading = "Global options")]
    pub color: ColorChoice,

    /// The git binary to run (default: git on PATH)
    #[arg(
        long,
        value_name = "PATH",
        env = "A3S_ISO_GIT",
        hide_env_values = true,
        global = true,
        help_heading = "Global options"
    )]
    pub git: Option<PathBuf>,

    /// How long to wait for the repository lock held by another a3s-iso command
    #[arg(
        long,
        value_name = "DUR",
        value_parser = parse_duration,
        default_value = "60s",
        global = true,
        help_heading = "Global options"
    )]
    pub lock_timeout: Option<Duration>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create (or reuse) a session's isolation: a detached worktree next to the source
    #[command(after_long_help = examples::long("bind"))]
    Bind(bind::BindArgs),
    /// List sessions with their state, owner liveness and whether HEAD moved
    #[command(after_long_help = examples::long("list"))]
    List(list::ListArgs),
    /// Run a command inside a session's isolation (sandboxed) and record its change set
    #[command(after_long_help = examples::long("run"))]
    Run(run::RunArgs),
    /// Snapshot a session into a pinned tree and a change-set document
    #[command(after_long_help = examples::long("capture"))]
    Capture(capture::CaptureArgs),
    /// Show the change set a promote would apply now (or a document's, or a promoted one's)
    #[command(after_long_help = examples::long("diff"))]
    Diff(diff::DiffArgs),
    /// Show one session in full: its isolation, owner, runs and promotions
    #[command(after_long_help = examples::long("show"))]
    Show(show::ShowArgs),
    /// Apply a session's (or a document's) change set to the source, exactly once
    #[command(after_long_help = examples::long("promote"))]
    Promote(promote::PromoteArgs),
    /// Move a session onto a new base (default: the source's HEAD) inside its isolation
    #[command(after_long_help = examples::long("rebase"))]
    Rebase(rebase::RebaseArgs),
    /// Land a queue of sessions in order: rebase onto HEAD, test, promote; exactly once
    #[command(after_long_help = examples::long("land"))]
    Land(land::LandArgs),
    /// Predict which live sessions' work would conflict, and where (no tree is touched)
    #[command(after_long_help = examples::long("overlaps"))]
    Overlaps(overlaps::OverlapsArgs),
    /// Publish a change set on a git remote as refs/a3s-iso/changes/<digest>
    #[command(after_long_help = examples::long("push"))]
    Push(push::PushArgs),
    /// Fetch change sets from a git remote and verify them, without promoting
    #[command(after_long_help = examples::long("fetch"))]
    Fetch(fetch::FetchArgs),
    /// Reclaim dead isolations; never live, foreign, unknown or retained ones
    #[command(after_long_help = examples::long("sweep"))]
    Sweep(sweep::SweepArgs),
    /// Pin a session's isolation for inspection, safe from sweep and git worktree prune
    #[command(after_long_help = examples::long("retain"))]
    Retain(retain::RetainArgs),
    /// Remove a session's isolation; never touches the source
    #[command(after_long_help = examples::long("discard"))]
    Discard(discard::DiscardArgs),
    /// Remove what no live or retained session needs: old evidence, artifacts, journal entries, leases, scratch
    #[command(after_long_help = examples::long("gc"))]
    Gc(gc::GcArgs),
    /// Keep spare isolations ready, so that bind takes one instead of checking out
    #[command(after_long_help = examples::long("pool"))]
    Pool(pool::PoolArgs),
    /// Show the configuration in effect and where each value came from (config trust: approve the repository's file)
    #[command(after_long_help = examples::long("config"))]
    Config(config::ConfigArgs),
    /// Review what runs changed in a profile's hooks, MCP servers and instructions for this repository: diff, accept, reject
    #[command(after_long_help = examples::long("profile"))]
    Profile(profile::ProfileArgs),
    /// Check a change-set document against every rule of the format
    #[command(after_long_help = examples::long("verify"))]
    Verify(verify::VerifyArgs),
    /// Answer a change-set request: print the stored change-set document of the run it names
    #[command(after_long_help = examples::long("changes"))]
    Changes(changes::ChangesArgs),
    /// Print a session's isolation path (for cd)
    #[command(after_long_help = examples::long("path"))]
    Path(path::PathArgs),
    /// List promotions from the journal, newest first
    #[command(after_long_help = examples::long("log"))]
    Log(log::LogArgs),
    /// Serve the commands as tools of an MCP server on stdin and stdout, for agents
    #[command(after_long_help = examples::long("mcp"))]
    Mcp(mcp::McpArgs),
    /// Check whether a3s-iso can work here: git, the run sandbox, file system, state
    #[command(after_long_help = examples::long("doctor"))]
    Doctor(doctor::DoctorArgs),
    /// Print the version of a3s-iso and git, and the kernel features the sandbox relies on
    #[command(after_long_help = examples::long("version"))]
    Version,
    /// Run an agent harness's hook: Claude Code's WorktreeCreate and WorktreeRemove
    #[command(after_long_help = examples::long("hook"))]
    Hook {
        /// The harness that runs the hook
        #[arg(value_enum)]
        agent: hook::HookAgent,
        /// The hook: its payload is read on stdin
        #[arg(value_enum)]
        event: hook::HookEvent,
    },
    /// Configure an agent harness to work in a3s-iso isolations (Claude Code's worktree hooks)
    #[command(after_long_help = examples::long("init"))]
    Init {
        /// The harness to configure
        #[arg(value_enum)]
        agent: init::InitAgent,
    },
    /// Print a shell function that adds `a3s-iso cd [ID]` (eval it in your shell's rc file)
    #[command(after_long_help = examples::long("shell-init"))]
    ShellInit {
        /// The shell to write the function for
        #[arg(value_enum)]
        shell: shell_init::InitShell,
    },
    /// Print shell completions
    #[command(after_long_help = examples::long("completions"))]
    Completions {
        /// The shell to complete for
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Enter the run sandbox, then exec the command (used by run)
    #[command(hide = true)]
    SandboxExec(run::SandboxExecArgs),
    /// Write completions/ and man/ under DIR (used to refresh the committed copies)
    #[command(hide = true)]
    GenerateAssets {
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// Print what the shell completions complete at completion time
    #[command(hide = true, name = "__complete")]
    Complete {
        #[command(subcommand)]
        what: complete::CompleteWhat,
    },
}

pub fn main() -> i32 {
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match Cli::try_parse_from(&raw) {
        Ok(cli) => cli,
        Err(err) => return output::usage_error(err, &raw),
    };
    let out = Output::new(cli.json, cli.quiet, cli.color);
    match run(&cli, &out) {
        Ok(code) => code,
        Err(err) => out.error(&err),
    }
}

/// The context started in `-C`, else in `dir`, else in the current directory.
fn context_in(cli: &Cli, dir: Option<&std::path::Path>) -> Result<Context> {
    let git = Git::locate(cli.git.as_deref())?;
    let start_dir = match cli.repo.as_deref().or(dir) {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir()
            .map_err(|e| Error::io("cannot read the current directory", e))?,
    };
    let start_dir = std::path::absolute(&start_dir).unwrap_or(start_dir);
    let mut ctx = Context::new(git, start_dir, cli.state_dir.clone());
    ctx.lock_timeout = cli.lock_timeout.unwrap_or(DEFAULT_LOCK_TIMEOUT);
    Ok(ctx)
}

/// Runs a command with its context, then reports what recovery did (unless it did already).
fn with_context(
    cli: &Cli,
    out: &Output,
    command: impl FnOnce(&Context) -> Result<i32>,
) -> Result<i32> {
    let ctx = context_in(cli, None)?;
    let result = command(&ctx);
    out.warnings(&ctx.take_notices());
    result
}

fn run(cli: &Cli, out: &Output) -> Result<i32> {
    match &cli.command {
        Command::SandboxExec(args) => Ok(run::sandbox_exec(args)),
        Command::Run(args) => Ok(match context_in(cli, None) {
            Ok(ctx) => {
                let code = run::execute(&ctx, args, out);
                out.warnings(&ctx.take_notices());
                code
            }
            Err(err) => run::failed(&err, out),
        }),
        Command::Bind(args) => with_context(cli, out, |ctx| bind::run(ctx, args, out)),
        Command::List(args) => with_context(cli, out, |ctx| list::run(ctx, args, out)),
        Command::Capture(args) => with_context(cli, out, |ctx| capture::run(ctx, args, out)),
        Command::Discard(args) => with_context(cli, out, |ctx| discard::run(ctx, args, out)),
        Command::Pool(args) => with_context(cli, out, |ctx| pool::run(ctx, args, out)),
        Command::Config(args) => with_context(cli, out, |ctx| config::run(ctx, args, out)),
        Command::Profile(args) => with_context(cli, out, |ctx| profile::run(ctx, args, out)),
        Command::Promote(args) => with_context(cli, out, |ctx| promote::run(ctx, args, out)),
        Command::Rebase(args) => with_context(cli, out, |ctx| rebase::run(ctx, args, out)),
        Command::Overlaps(args) => with_context(cli, out, |ctx| overlaps::run(ctx, args, out)),
        Command::Land(args) => with_context(cli, out, |ctx| land::run(ctx, args, out)),
        Command::Push(args) => with_context(cli, out, |ctx| push::run(ctx, args, out)),
        Command::Fetch(args) => with_context(cli, out, |ctx| fetch::run(ctx, args, out)),
        Command::Diff(args) => with_context(cli, out, |ctx| diff::run(ctx, args, cli.color, out)),
        Command::Show(args) => with_context(cli, out, |ctx| show::run(ctx, args, out)),
        Command::Sweep(args) => with_context(cli, out, |ctx| sweep::run(ctx, args, out)),
        Command::Retain(args) => with_context(cli, out, |ctx| retain::run(ctx, args, out)),
        Command::Gc(args) => with_context(cli, out, |ctx| gc::run(ctx, args, out)),
        Command::Verify(args) => with_context(cli, out, |ctx| {
            // Settled first like every command's: the repository verify runs in, if any.
            a3s_iso::recovery::settle(ctx);
            verify::run(ctx, args, out)
        }),
        Command::Changes(args) => with_context(cli, out, |ctx| changes::run(ctx, args, out)),
        Command::Path(args) => with_context(cli, out, |ctx| path::run(ctx, args, out)),
        Command::Log(args) => with_context(cli, out, |ctx| log::run(ctx, args, out)),
        Command::Mcp(args) => with_context(cli, out, |ctx| mcp::run(ctx, args, out)),
        Command::Doctor(args) => Ok(doctor::run(cli, args, out)),
        Command::Version => Ok(doctor::version(cli, out)),
        Command::Hook { agent, event } => Ok(hook::run(
            cli,
            (*agent, *event),
            &Output::new(false, cli.quiet, cli.color),
        )),
        Command::Init { agent } => with_context(cli, out, |ctx| init::run(ctx, *agent, out)),
        Command::ShellInit { shell } => {
            out.line(shell_init::script(*shell).trim_end());
            Ok(0)
        }
        Command::Complete { what } => Ok(complete::run(context_in(cli, None), *what, out)),
        Command::Completions { shell } => {
            let _ = std::io::Write::write_all(&mut std::io::stdout(), &complete::script(*shell));
            Ok(0)
        }
        Command::GenerateAssets { dir } => assets::generate(dir).map(|()| 0),
    }
}
