use clap::Args;

use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
use a3s_iso::ops::sweep::Progress;
use a3s_iso::services::pool::{PoolOptions, PoolOutcome, SpareState, pool};

use super::Output;

/// `a3s-iso pool`'s arguments.
#[derive(Debug, Args)]
pub struct PoolArgs {
    /// How many spare isolations to keep ready (0 removes them all); default: as set before
    #[arg(long, value_name = "N")]
    pub size: Option<usize>,

    /// Ignored paths that a returned isolation keeps for the next session, as gitignore
    /// patterns (e.g. target, node_modules/); replaces the list set before. Shares build
    /// outputs between sessions. The ignored files the source's .worktreeinclude names are
    /// kept too
    #[arg(long, value_name = "PATTERN", num_args = 1..)]
    pub keep_ignored: Option<Vec<String>>,

    /// Only report the pool; build and remove nothing
    #[arg(long, conflicts_with_all = ["size", "keep_ignored", "no_fill"])]
    pub status: bool,

    /// Record the settings but check nothing out now: spares come only from the trees that
    /// discard returns
    #[arg(long)]
    pub no_fill: bool,
}

pub fn run(ctx: &Context, args: &PoolArgs, out: &Output) -> Result<i32> {
    let bar = super::progress::Bar::new(!out.json && !out.quiet, "building spares");
    let mut progress = |done: usize, total: usize| {
        if done == 0 {
            bar.start(total as u64);
        } else {
            bar.advance();
        }
    };
    // What is not given comes from the configuration (a repository file's only when trusted).
    let (mut size, mut keep_ignored) = (args.size, args.keep_ignored.clone());
    if !args.status && (size.is_none() || keep_ignored.is_none()) {
        let mut warnings = Vec::new();
        let settings = a3s_iso::services::config::load(ctx, true)?.trusted_effective(&mut warnings);
        out.warnings(&warnings);
        size = size.or(settings.pool_size.value);
        keep_ignored = keep_ignored.or(settings.pool_keep_ignored.value);
    }
    let outcome = pool(
        ctx,
        &PoolOptions {
            size,
            keep_ignored,
            status_only: args.status,
            no_fill: args.no_fill,
        },
        &mut progress,
    )?;
    bar.finish();
    out.answer("a3s-iso.pool.v1", &outcome, || render(&outcome, out));
    Ok(0)
}

fn render(outcome: &PoolOutcome, out: &Output) {
    let ready = outcome
        .spares
        .iter()
        .filter(|s| s.state == SpareState::Ready)
        .count();
    out.headline(&format!(
        "pool of {}: {ready} of {} spare{} ready",
        outcome.source.display(),
        outcome.size,
        super::plural(outcome.size)
    ));
    let reflink = match (outcome.reflink, &outcome.reflink_detail) {
        (Some(true), _) => {
            "available (spares are clones of a pristine tree; kept and copied caches are cloned)"
                .to_string()
        }
        (Some(false), _) => "not available (caches are copied)".to_string(),
        (None, detail) => format!("unknown ({})", detail.as_deref().unwrap_or("")),
    };
    let keep = match (&outcome.keep_ignored[..], &outcome.worktreeinclude[..]) {
        ([], []) => "-".to_string(),
        (keep, []) => keep.join(" "),
        ([], included) => format!("(.worktreeinclude) {}", included.join(" ")),
        (keep, included) => format!(
            "{} (.worktreeinclude) {}",
            keep.join(" "),
            included.join(" ")
        ),
    };
    // What this call built or removed, when it did (`--status` changes nothing).
    let mut fields = Vec::new();
    if outcome.built > 0 {
        fields.push(("built", outcome.built.to_string()));
    }
    if outcome.removed > 0 {
        fields.push(("removed", outcome.removed.to_string()));
    }
    fields.extend([("keep ignored", keep), ("reflink", reflink)]);
    out.fields(&fields);
    for spare in &outcome.spares {
        // A checkout holds all its bytes alone; a clone's are worth showing.
        let clone = spare.fill == Some(a3s_iso::base::reflink::Fill::Clone);
        let disk = (spare.disk.as_ref().filter(|_| clone)).map_or(String::new(), |d| {
            format!(" ({})", super::output::cloned(d))
        });
        out.line(&format!(
            "  {} {} {}{disk}",
            spare.slot,
            spare.state,
            spare.path.display()
        ));
    }
}
