pub use a3s_iso::interface::request::bind::BindArgs;

use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
use a3s_iso::flows::setup::Setup;
use a3s_iso::flows::setup::bind;
use a3s_iso::ops::bind::{BindOptions, BindOutcome, OwnerChoice};

use super::Output;

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
    let options = BindOptions {
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
    };
    let outcome = out.spinning("binding", || bind(ctx, &options))?;
    out.warnings(&outcome.warnings);
    super::sweep::note_reclaimed(&outcome.reclaimed, out);
    if out.json_done("a3s-iso.bind.v1", &outcome) {
        return Ok(0);
    }
    match &outcome.worktree {
        Some(tree) => out.headline(&tree.display().to_string()),
        None => out.headline("(read-only session: no isolation)"),
    }
    out.fields(&[
        ("session", outcome.session_id.to_string()),
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
