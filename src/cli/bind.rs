use std::path::PathBuf;

use clap::Args;

use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
use a3s_iso::flows::setup::Setup;
use a3s_iso::flows::setup::bind;
use a3s_iso::ops::bind::{BindOptions, BindOutcome, OwnerChoice};

use super::Output;

/// `a3s-iso bind`'s arguments.
#[derive(Debug, Args)]
pub struct BindArgs {
    /// The session id (generated when omitted); letters, digits, '.', '_' and '-'
    #[arg(
        short = 's',
        long = "session",
        value_name = "ID",
        env = "A3S_ISO_SESSION_ID",
        hide_env_values = true
    )]
    pub session: Option<String>,

    /// Bind at HEAD even though the source has local changes (they stay out of the isolation)
    #[arg(long)]
    pub allow_dirty: bool,

    /// Start from the source's working state: HEAD plus staged, unstaged and untracked changes
    /// (that state becomes the session's base, so change sets hold only the session's own work)
    #[arg(long, conflicts_with_all = ["allow_dirty", "read_only", "resume"])]
    pub carry_wip: bool,

    /// Initialise submodules (recursively) in the isolation, each cloned from the source's own
    /// copy of it (no network)
    #[arg(long, conflicts_with = "read_only")]
    pub submodules: bool,

    /// Record a session without an isolation tree; writing commands then refuse it
    #[arg(long)]
    pub read_only: bool,

    /// Create the isolation in DIR instead of next to the source
    #[arg(long, value_name = "DIR")]
    pub base_dir: Option<PathBuf>,

    /// Rebuild a swept, discarded or missing isolation at the bound revision and restore its work
    /// into it as uncommitted changes (a swept session's snapshot, else the latest capture)
    #[arg(long, requires = "session", conflicts_with = "read_only")]
    pub resume: bool,

    /// Who owns the session: `none` (no owner process: for scripts and CI; sweep keeps it
    /// unless --include-ownerless) or `pid:N` (default: the parent of a3s-iso, e.g. your shell)
    #[arg(long, value_name = "none|pid:N", value_parser = parse_owner, conflicts_with = "owner_pid")]
    pub owner: Option<OwnerChoice>,

    /// Copy the source's ignored files that the gitignore PATTERNs match (build caches such as
    /// target, node_modules/) into the new isolation, cloned where the file system can; the
    /// session then builds on them. The ignored files the source's .worktreeinclude names are
    /// copied too, without this option
    #[arg(long, value_name = "PATTERN", num_args = 1.., conflicts_with = "read_only")]
    pub copy_ignored: Vec<String>,

    /// The process that owns the session (the same as --owner pid:PID)
    #[arg(long, value_name = "PID")]
    pub owner_pid: Option<u32>,

    /// Do not run the configuration's setup commands in the new isolation
    #[arg(long)]
    pub no_setup: bool,

    /// Bind without reading the repository's .a3s-iso.toml at all (trusted or not)
    #[arg(long)]
    pub ignore_config: bool,
}

/// `none` or `pid:N`.
fn parse_owner(text: &str) -> std::result::Result<OwnerChoice, String> {
    OwnerChoice::parse(text).ok_or_else(|| format!("{text:?}: expected none or pid:N"))
}

/// Binds the session and renders it.
pub fn run(ctx: &Context, args: &BindArgs, out: &Output) -> Result<i32> {
    let loaded = super::config::approved(ctx, args.ignore_config, out)?;
    let settings = loaded.effective(true);
    let mut copy_ignored = args.copy_ignored.clone();
    copy_ignored.extend(settings.copy_ignored.value.iter().cloned());
    let mut setup = Setup::configured(&settings);
    if args.no_setup {
        setup.commands.clear();
    }
    let spinner = super::progress::Spinner::start(!out.json && !out.quiet, "binding");
    let outcome = bind(
        ctx,
        &BindOptions {
            session_id: args.session.clone(),
            allow_dirty: args.allow_dirty,
            read_only: args.read_only,
            base_dir: args.base_dir.clone(),
            owner: args
                .owner
                .or(args.owner_pid.map(OwnerChoice::Pid))
                .unwrap_or_default(),
            resume: args.resume,
            carry_wip: args.carry_wip,
            submodules: args.submodules,
            copy_ignored,
            setup,
            created_by: None,
            no_auto_sweep: !settings.sweep_auto.value,
        },
    )?;
    drop(spinner);
    for warning in &outcome.warnings {
        out.warn(warning);
    }
    super::sweep::note_reclaimed(&outcome.reclaimed, out);
    if out.json {
        out.document("a3s-iso.bind.v1", &outcome);
        return Ok(0);
    }
    match &outcome.worktree {
        Some(tree) => out.headline(&tree.display().to_string()),
        None => out.headline("(read-only session: no isolation)"),
    }
    out.fields(&[
        ("session", outcome.session_id.clone()),
        ("source", outcome.source.display().to_string()),
        ("revision", outcome.bound_revision.clone()),
        ("base tree", outcome.base_tree.to_string()),
        (
            "owner",
            outcome
                .owner
                .as_ref()
                .map_or_else(|| "none (ownerless)".into(), |o| o.describe()),
        ),
        ("flags", flags(&outcome)),
    ]);
    for ran in &outcome.setup {
        out.line(&format!(
            "  setup {} ran as {} (output in {})",
            ran.command,
            ran.run_id,
            ran.output.display()
        ));
    }
    Ok(0)
}

/// The session's flags, comma-separated (`-` for none).
fn flags(outcome: &BindOutcome) -> String {
    let flags: Vec<&str> = [
        (outcome.reused, "reused"),
        (outcome.read_only, "read-only"),
        (outcome.wip_left_out, "wip-left-out"),
        (outcome.carried_wip, "carried-wip"),
        (outcome.warm, "warm"),
    ]
    .into_iter()
    .filter_map(|(set, flag)| set.then_some(flag))
    .collect();
    if flags.is_empty() {
        "-".into()
    } else {
        flags.join(", ")
    }
}
