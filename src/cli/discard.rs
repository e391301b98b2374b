use clap::Args;

use a3s_iso::context::Context;
use a3s_iso::discard::{DiscardOptions, discard};
use a3s_iso::error::Result;

use super::{Output, SessionArg};

#[derive(Debug, Args)]
pub struct DiscardArgs {
    #[command(flatten)]
    pub session: SessionArg,

    /// Also delete everything of the session: record, refs, retained branch, change sets, artifacts (its journal entries stay)
    #[arg(long)]
    pub purge: bool,
}

pub fn run(ctx: &Context, args: &DiscardArgs, out: &Output) -> Result<i32> {
    let outcome = discard(
        ctx,
        &DiscardOptions {
            session_id: args.session.session.clone(),
            purge: args.purge,
        },
    )?;
    if out.json {
        out.document("a3s-iso.discard.v1", &outcome);
        return Ok(0);
    }
    let what = match (outcome.removed, outcome.purged) {
        (true, false) if outcome.recycled => "discarded (the tree went back to the pool, cleaned)",
        (true, true) => "discarded and purged",
        (true, false) => "discarded",
        (false, true) => "purged (no isolation was left to remove)",
        (false, false) => "already discarded (nothing to remove)",
    };
    out.headline(&format!("{}: {what}", outcome.session_id));
    if let Some(tree) = &outcome.worktree
        && outcome.removed
    {
        out.fields(&[("removed", tree.display().to_string())]);
    }
    for item in &outcome.purged_items {
        out.line(&format!("  purged {}", super::gc::describe(item)));
    }
    for item in &outcome.kept {
        out.line(&format!("  kept   {}", super::gc::describe(item)));
    }
    Ok(0)
}
