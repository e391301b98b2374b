use a3s_iso::base::invalid::Invalid;
pub use a3s_iso::interface::request::promote::PromoteArgs;

use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
use a3s_iso::ops::promote::{Outcome, PromoteOutcome, Reason, promote};

use super::{Output, Tone};

pub fn run(ctx: &Context, args: &PromoteArgs, out: &Output) -> Result<i32> {
    args.check()?;
    let message = match &args.message_file {
        Some(file) => Some(read_message(file)?),
        None => args.message.clone(),
    };
    let outcome = out.spinning("promoting", || promote(ctx, &args.options(message)))?;
    out.warnings(&outcome.warnings);
    if out.json_done("a3s-iso.promote.v1", &outcome) {
        return Ok(outcome.exit_code());
    }
    out.headline_toned(&headline(&outcome), tone(outcome.outcome));
    out.fields(&fields(&outcome));
    if matches!(outcome.outcome, Outcome::Applied | Outcome::Planned) {
        out.path_list(&outcome.files, outcome.files_changed);
    }
    let nested_reason = outcome.nested.iter().find_map(|n| n.reason);
    if outcome.already_present {
        out.hint(ALREADY_PRESENT);
    } else if let Some(reason) = outcome.reason.or(nested_reason) {
        out.hint(hint(reason));
    }
    Ok(outcome.exit_code())
}

/// Applied is green; nothing to do dim; not (all) applied red; recorded or planned cyan.
fn tone(outcome: Outcome) -> Tone {
    match outcome {
        Outcome::Applied => Tone::Good,
        Outcome::Idempotent | Outcome::Empty => Tone::Quiet,
        Outcome::Conflict | Outcome::Partial => Tone::Bad,
        Outcome::Planned | Outcome::Noted => Tone::Note,
    }
}

fn headline(outcome: &PromoteOutcome) -> String {
    match (outcome.outcome, outcome.reason) {
        (Outcome::Empty, _) => "empty: the session changed nothing; nothing was applied".into(),
        (Outcome::Applied, _) => {
            let files = format!(
                "{} file{} changed",
                outcome.files_changed,
                super::plural(outcome.files_changed)
            );
            match &outcome.branch {
                Some(branch) => format!("applied: {}; {files}", replayed(branch)),
                None => format!("applied: {files}"),
            }
        }
        (Outcome::Idempotent, _) => {
            "idempotent: this change set was promoted before; nothing applied".into()
        }
        (Outcome::Planned, _) => "planned: artifacts written, source untouched (--no-apply)".into(),
        (Outcome::Noted, _) => "noted: recorded as promoted".into(),
        (Outcome::Conflict, Some(reason)) => {
            format!("conflict ({}): nothing applied", reason.as_str())
        }
        (Outcome::Conflict, None) => "conflict: nothing applied".into(),
        (Outcome::Partial, _) => {
            "partial: the change set landed, but not every nested change set did; see below".into()
        }
    }
}

/// Branch mode's part of the headline: how many commits onto which branch, kept where.
fn replayed(branch: &a3s_iso::ops::promote::BranchReport) -> String {
    let count = branch.replayed.len();
    let onto = branch
        .target_branch
        .strip_prefix("refs/heads/")
        .unwrap_or(&branch.target_branch);
    let kept = branch
        .retained_branch
        .as_ref()
        .map(|b| format!(" (retained branch {b})"))
        .unwrap_or_default();
    format!(
        "replayed {count} commit{} onto {onto}{kept}",
        super::plural(count)
    )
}

fn fields(outcome: &PromoteOutcome) -> Vec<(&'static str, String)> {
    let mut fields = Vec::new();
    let mut push = |key: &'static str, value: Option<String>| {
        if let Some(value) = value {
            fields.push((key, value));
        }
    };
    push("session", outcome.session_id.clone());
    push("digest", outcome.digest.clone().map(String::from));
    if outcome.patch_bytes > 0 {
        push("size", Some(super::human_bytes(outcome.patch_bytes)));
    }
    push("step", outcome.step.map(|n| n.to_string()));
    push("bound", outcome.bound_revision.clone());
    push(
        "current",
        outcome.current_revision.clone().map(String::from),
    );
    push(
        "artifacts",
        outcome.artifacts.as_ref().map(|p| p.display().to_string()),
    );
    if !outcome.conflicting_paths.is_empty() {
        push("paths", Some(outcome.conflicting_paths.join(", ")));
    }
    push("detail", outcome.detail.clone());
    if let Some(fetched) = &outcome.fetched {
        push("commit", Some(fetched.commit.clone()));
        push(
            "from",
            Some(format!(
                "session {} run {}",
                fetched.session_id, fetched.run_id
            )),
        );
    }
    if let Some(branch) = &outcome.branch {
        push("retained", branch.retained_branch.clone());
        push("branch", Some(branch.target_branch.clone()));
        push("replayed", Some(branch.replayed.len().to_string()));
        if !branch.skipped.is_empty() {
            let skipped: Vec<&str> = branch.skipped.iter().map(|s| s.commit.as_str()).collect();
            push("skipped", Some(skipped.join(", ")));
        }
        push("failed", branch.failed_commit.clone());
    }
    for nested in &outcome.nested {
        let reason = nested
            .reason
            .map_or(String::new(), |r| format!(" ({})", r.as_str()));
        let detail = nested
            .detail
            .as_ref()
            .map_or(String::new(), |d| format!(": {d}"));
        let (path, how) = (&nested.path, nested.outcome.as_str());
        fields.push(("nested", format!("{path} {how}{reason}{detail}")));
    }
    fields
}

/// The hint when the change set's result is in the checkout already but no promote of it is
/// recorded: nothing was interrupted, and nothing of the user's needs to move.
const ALREADY_PRESENT: &str = "your checkout already holds this change set's result (committed or written by other means, as in a clone that has it); a3s-iso has no record of promoting it here: promote --note DIGEST records it, so that promoting it again is idempotent";

fn hint(reason: Reason) -> &'static str {
    match reason {
        Reason::PatchDoesNotApply => {
            "commit or stash your own changes to those paths (or let them go), then promote again; nothing was applied"
        }
        Reason::ReplayFailed => {
            "nothing changed in your checkout: a3s-iso rebase -s ID moves the session onto your HEAD (conflicts stay in its isolation), then promote again; or promote in patch mode"
        }
        Reason::BaseUnknown => {
            "the change set was taken from another repository (its base tree is not here); fetch that history first, or apply the patch by hand"
        }
        Reason::BaseDiffers => {
            "the change set was taken against another state than HEAD: promote --change-set FILE --onto-head applies it onto your checkout if it applies cleanly"
        }
        Reason::ModeChanged => {
            "earlier steps of this session are uncommitted changes in your checkout: promote the session in patch mode"
        }
        Reason::NestedUnavailable => {
            "initialise the submodule in your checkout (git submodule update --init), then promote again; what landed stays, and only the rest is applied"
        }
        Reason::SubmoduleNotUpdated => {
            "initialise the named submodules in your checkout (git submodule update --init) and leave them clean at the commit your superproject records, then promote again; nothing was applied"
        }
        Reason::HeadMoved => {
            "the source's HEAD moved since bind: a3s-iso rebase -s ID moves the session onto it (conflicts stay in its isolation), or promote --rebase does that and promotes if it was clean; --mode branch replays the session's commits onto the new HEAD instead"
        }
        Reason::RebaseConflicted => {
            "the conflict waits in the session's isolation: resolve it there (a3s-iso run -s ID -- ..., or by hand) and git add, then a3s-iso rebase -s ID --continue and promote; or a3s-iso rebase -s ID --abort"
        }
    }
}

/// A commit message from a file (`-`: stdin); an empty one is refused, as git refuses it.
fn read_message(file: &std::path::Path) -> Result<String> {
    use std::io::Read;
    let mut text = String::new();
    let read = match file.as_os_str() == "-" {
        true => std::io::stdin().read_to_string(&mut text).map(|_| ()),
        false => std::fs::read_to_string(file).map(|t| text = t),
    };
    read.map_err(|e| a3s_iso::base::error::Error::InvalidInput {
        reason: Invalid::MessageUnreadable {
            path: file.to_path_buf(),
            error: e.to_string(),
        },
    })?;
    if text.trim().is_empty() {
        return Err(a3s_iso::base::error::Error::InvalidInput {
            reason: Invalid::MessageEmpty {
                path: file.to_path_buf(),
            },
        });
    }
    Ok(text)
}
