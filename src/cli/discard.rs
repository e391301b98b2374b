use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
pub use a3s_iso::interface::request::discard::DiscardArgs;
use a3s_iso::ops::discard::{DiscardAllOutcome, DiscardOutcome, discard, discard_all};

use super::Output;

pub fn run(ctx: &Context, args: &DiscardArgs, out: &Output) -> Result<i32> {
    if args.all {
        let outcome = out.spinning("discarding", || discard_all(ctx, args.purge))?;
        return Ok(report_all(&outcome, out));
    }
    let outcome = out.spinning("discarding", || discard(ctx, &args.options()))?;
    out.answer("a3s-iso.discard.v1", &outcome, || report(&outcome, out));
    Ok(0)
}

/// Every session's line, then those that stayed; the exit status of the first failure.
fn report_all(outcome: &DiscardAllOutcome, out: &Output) -> i32 {
    let status = outcome
        .failed
        .first()
        .map_or(0, |failed| failed.code.exit_code());
    if out.json_done("a3s-iso.discard-all.v1", outcome) {
        return status;
    }
    for session in &outcome.sessions {
        report(session, out);
    }
    for failed in &outcome.failed {
        out.warn(&format!("{} stays: {}", failed.session_id, failed.message));
    }
    if outcome.sessions.is_empty() && outcome.failed.is_empty() {
        out.info("no sessions to discard");
    }
    status
}

/// One session's headline; with its items unless `-q`.
fn report(outcome: &DiscardOutcome, out: &Output) {
    let what = match (outcome.removed, outcome.purged) {
        _ if outcome.already_purged && outcome.purged_items.is_empty() => {
            "already purged (nothing of it is left)"
        }
        _ if outcome.already_purged => "already purged (removed what the first purge left)",
        (true, false) if outcome.recycled => "discarded (the tree went back to the pool, cleaned)",
        (true, true) => "discarded and purged",
        (true, false) => "discarded",
        (false, true) => "purged (no isolation was left to remove)",
        (false, false) => "already discarded (nothing to remove)",
    };
    out.headline(&format!("{}: {what}", outcome.session_id));
    if out.quiet {
        return;
    }
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
}
