use clap::Args;

use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
use a3s_iso::services::rebase::{Action, RebaseOptions, RebaseOutcome, RebaseResult, rebase};

use super::{Output, SessionArg, Tone};

/// `a3s-iso rebase`'s arguments.
#[derive(Debug, Args)]
pub struct RebaseArgs {
    #[command(flatten)]
    pub session: SessionArg,

    /// The commit to move the session onto (default: the source's current HEAD)
    #[arg(long, value_name = "REV", conflicts_with_all = ["continue_", "abort"])]
    pub onto: Option<String>,

    /// Go on after the conflicts were resolved in the isolation
    #[arg(long = "continue", conflicts_with = "abort")]
    pub continue_: bool,

    /// Put the isolation back exactly as it was before the rebase
    #[arg(long)]
    pub abort: bool,
}

/// Rebases (continues, aborts) and renders the outcome.
pub fn run(ctx: &Context, args: &RebaseArgs, out: &Output) -> Result<i32> {
    let action = if args.continue_ {
        Action::Continue
    } else if args.abort {
        Action::Abort
    } else {
        Action::Start
    };
    let options = RebaseOptions {
        session_id: args.session.session.clone(),
        onto: args.onto.clone(),
        action,
    };
    let outcome = out.spinning("rebasing", || rebase(ctx, &options))?;
    out.warnings(&outcome.warnings);
    out.answer("a3s-iso.rebase.v1", &outcome, || render(&outcome, out));
    Ok(outcome.exit_code())
}

fn render(outcome: &RebaseOutcome, out: &Output) {
    let short = |rev: &str| rev.chars().take(12).collect::<String>();
    let (headline, tone) = match outcome.outcome {
        RebaseResult::Rebased => ("rebased", Tone::Good),
        RebaseResult::UpToDate => ("up to date", Tone::Quiet),
        RebaseResult::Conflicted => ("conflicted", Tone::Bad),
        RebaseResult::Continued => ("rebased (continued)", Tone::Good),
        RebaseResult::Aborted => ("aborted: the isolation is as it was", Tone::Note),
    };
    out.headline_toned(headline, tone);
    let replayed = outcome
        .replayed
        .iter()
        .filter(|r| r.rebased.is_some())
        .count();
    out.fields(&[
        ("session", outcome.session_id.to_string()),
        ("from", short(&outcome.from_revision)),
        ("onto", short(&outcome.to_revision)),
        ("replayed", replayed.to_string()),
    ]);
    if outcome.outcome == RebaseResult::Conflicted {
        for path in &outcome.conflicting_paths {
            out.line(&format!("  conflict: {}", super::inert(path)));
        }
        let id = &outcome.session_id;
        out.hint(&format!(
            "resolve them in the isolation (a3s-iso run -s {id} -- ..., or by hand), git add them, then a3s-iso rebase -s {id} --continue; or a3s-iso rebase -s {id} --abort"
        ));
    }
}
