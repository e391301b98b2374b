pub use a3s_iso::interface::request::run::RunArgs;
use std::ffi::OsString;

use clap::Args;

use a3s_iso::base::error::{ErrorCode, Result};
use a3s_iso::base::warning::Warning;
use a3s_iso::context::Context;
use a3s_iso::ops::run::request::SandboxAsk;
use a3s_iso::ops::run::{FrontEnd, RunOptions, RunOutcome, RunRequest, run_requested};
use a3s_iso::services::hidden_paths::{Access, HiddenPath, HiddenReason};
use a3s_iso::services::network::{Denied, DeniedBy};
use a3s_iso::store::state::RunState;

use super::Output;

/// The hidden helper `run` re-executes to enter the sandbox before exec'ing the command.
#[derive(Debug, Args)]
pub struct SandboxExecArgs {
    #[arg(long)]
    pub status_fd: i32,
    #[arg(long)]
    pub socket_fd: Option<i32>,
    #[arg(long)]
    pub spec: String,
    #[arg(last = true, required = true)]
    pub command: Vec<OsString>,
}

/// The hidden helper: enters the sandbox and execs the command; returns only on failure.
pub fn sandbox_exec(args: &SandboxExecArgs) -> i32 {
    let reporter = a3s_iso::base::sandbox::Reporter::adopt(args.status_fd);
    match serde_json::from_str(&args.spec) {
        Ok(spec) => {
            let sockets = args
                .socket_fd
                .and_then(a3s_iso::base::sandbox::SocketServer::adopt);
            a3s_iso::base::sandbox::exec_sandboxed(&spec, &reporter, sockets, &args.command)
        }
        Err(e) => reporter.fail(
            a3s_iso::base::sandbox::HelperCode::Internal,
            format!("invalid sandbox spec: {e}"),
            &args.command[0].to_string_lossy(),
        ),
    }
}

/// Runs `a3s-iso run`: the command's exit status, or 125 and the like for a3s-iso's failures.
pub fn execute(ctx: &Context, args: &RunArgs, out: &Output) -> i32 {
    run_command(ctx, args, out).unwrap_or_else(|err| failed(&err, out))
}

/// Renders a3s-iso's own failure in `run`. Like env(1), such failures exit 125 so they never
/// pass for the command's status; the contract's unavailable (4), usage (2), not executable
/// (126), not found (127) and an untrusted configuration (5) keep their codes.
pub fn failed(err: &a3s_iso::Error, out: &Output) -> i32 {
    out.error(err);
    match err.code() {
        ErrorCode::SandboxUnavailable
        | ErrorCode::IsolationUnavailable
        | ErrorCode::IsolationMissing
        | ErrorCode::CommandNotFound
        | ErrorCode::CommandNotExecutable
        | ErrorCode::InvalidInput
        | ErrorCode::ConfigUntrusted
        | ErrorCode::Usage => err.exit_code(),
        _ => 125,
    }
}

fn run_command(ctx: &Context, args: &RunArgs, out: &Output) -> Result<i32> {
    let grants = &args.grants;
    let ask = SandboxAsk {
        no_sandbox: args.no_sandbox,
        ignore_config: args.ignore_config,
        allow_network: grants.allow_network,
        allow_hosts: grants.allow_host.clone(),
        publish: grants.publish.clone(),
        allow_write: grants.allow_write_with_env(),
        allow_read: grants.allow_read_with_env(),
        profile: grants.profile.clone(),
        cache: grants.cache,
    };
    let options = RunOptions {
        session_id: args.session.session.clone(),
        run_id: args.run_id.clone(),
        run_id_fresh: false,
        timeout: args.timeout,
        command: args.command.clone(),
        stdout_to_stderr: out.json,
        sandbox: None,
        release_identity: args.release_identity.clone(),
        helper: None,
        env: args.grants.env.clone(),
        output: None,
        on_published: Some(announce_published),
        throwaway: None,
    };
    let mut approve = |file: &_| super::config::ask_on_terminal(file, out);
    let mut warn = |warning: &Warning| out.warnings([warning]);
    let front = FrontEnd {
        approve: &mut approve,
        warn: Some(&mut warn),
    };
    let outcome = run_requested(ctx, RunRequest { options, ask }, front)?;
    out.warnings(&outcome.warnings);
    for hidden in &outcome.hidden_paths {
        out.hint(&hidden_hint(hidden));
    }
    if outcome.state != RunState::Completed
        && let Some(hint) = network_hint(&outcome.network.denied)
    {
        out.hint(&hint);
    }
    if !out.json
        && let Some(refused) = outcome.network.refusal_summary()
    {
        out.warn(&format!("network: {refused}"));
    }
    if out.json {
        out.document("a3s-iso.run.v1", &outcome);
    } else if !out.quiet {
        out.note(&summary(&outcome));
    }
    Ok(outcome.status)
}

/// `published 127.0.0.1:41234 -> 3000` on stderr, as soon as the port is bound.
fn announce_published(published: &a3s_iso::services::network::Published) {
    eprintln!(
        "published {}:{} -> {}",
        published.host, published.host_port, published.port
    );
}

/// How many hosts the network hint names (the JSON has them all).
const HINTED_HOSTS: usize = 5;

/// Which hosts the sandbox kept from a failed command, and the `--allow-host` grants for them.
fn network_hint(denied: &[Denied]) -> Option<String> {
    if denied.is_empty() {
        return None;
    }
    let mut hosts: Vec<String> = denied
        .iter()
        .take(HINTED_HOSTS)
        .map(|d| match (d.how, d.port) {
            (DeniedBy::Lookup, _) => format!("{} (name lookup)", d.host),
            (DeniedBy::Proxy, Some(port)) => format!("{}:{port} (proxy)", d.host),
            (DeniedBy::Proxy, None) => format!("{} (proxy)", d.host),
        })
        .collect();
    if denied.len() > HINTED_HOSTS {
        hosts.push(format!("{} more", denied.len() - HINTED_HOSTS));
    }
    let mut grants: Vec<&str> = Vec::new();
    for grant in denied.iter().map(|d| d.allow_host.as_str()) {
        if !grants.contains(&grant) {
            grants.push(grant);
        }
    }
    let flags: Vec<String> = grants.iter().map(|g| format!("--allow-host {g}")).collect();
    Some(format!(
        "the sandbox kept the command from the network: {}; to let {} through: {}",
        hosts.join(", "),
        if grants.len() == 1 { "it" } else { "them" },
        flags.join(" ")
    ))
}

/// What kept a path from the command, and the flag that lets it through.
fn hidden_hint(hidden: &HiddenPath) -> String {
    let path = hidden.path.display();
    let why = match (hidden.reason, &hidden.under) {
        (HiddenReason::Private, Some(dir)) => format!(
            "{path} is under {}, which the sandbox replaces with an empty one",
            dir.display()
        ),
        (HiddenReason::Hidden, Some(secret)) => format!(
            "{path} is under {}, a secret the sandbox hides",
            secret.display()
        ),
        (HiddenReason::ReadOnly, _) => format!("{path} is read-only inside the sandbox"),
        (_, None) => format!("{path} is out of the sandbox's reach"),
    };
    let flag = match hidden.allow {
        Access::Read => "--allow-read",
        Access::Write => "--allow-write",
    };
    format!(
        "{why}; to let the command through: {flag} {}",
        hidden.allow_path.display()
    )
}

/// `run <id> <state> (<how it ended>): <what changed>`, the line on stderr after a run.
fn summary(outcome: &RunOutcome) -> String {
    let how =
        super::show::ended(outcome.exit_code, outcome.signal).unwrap_or_else(|| "no status".into());
    let changed = match &outcome.change_set {
        Some(cs) => format!(
            "{} file{} changed, {}, {}",
            cs.files_changed,
            super::plural(cs.files_changed),
            super::human_bytes(cs.patch_bytes),
            cs.patch_digest
        ),
        None => "change set too large for a document".into(),
    };
    format!(
        "run {} {} ({how}{}): {changed}",
        outcome.run_id,
        outcome.state,
        if outcome.timed_out { ", timed out" } else { "" }
    )
}
