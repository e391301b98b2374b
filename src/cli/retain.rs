use clap::Args;

use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
use a3s_iso::ops::retain::retain;

use super::{Output, SessionArg};

/// `a3s-iso retain`'s arguments.
#[derive(Debug, Args)]
pub struct RetainArgs {
    #[command(flatten)]
    pub session: SessionArg,

    /// Why the isolation is kept (recorded, and shown by git worktree list)
    #[arg(long, value_name = "TEXT")]
    pub reason: String,
}

/// Retains the isolation and renders where it is now.
pub fn run(ctx: &Context, args: &RetainArgs, out: &Output) -> Result<i32> {
    let outcome = retain(ctx, args.session.session.as_deref(), &args.reason)?;
    if out.json_done("a3s-iso.retain.v1", &outcome) {
        return Ok(0);
    }
    out.headline(&outcome.worktree.display().to_string());
    out.fields(&[
        ("session", outcome.session_id.to_string()),
        ("was", outcome.previous_worktree.display().to_string()),
        ("reason", outcome.reason.clone()),
    ]);
    Ok(0)
}
