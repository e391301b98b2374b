use clap::{Args, ValueEnum};

use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
use a3s_iso::ops::profile::{ProfileAction, ProfileOutcome, profile};

use super::Output;

/// `a3s-iso profile`'s arguments.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// What to do with the changes runs made to a profile's hooks, MCP servers, instructions
    /// and other code-running files, held for this repository
    #[arg(value_enum, value_name = "ACTION")]
    pub action: Action,
    /// The profile (default: every profile that keeps copies)
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Action {
    /// Show the held changes as accepting them would make each file
    Diff,
    /// Apply the held changes: the profile's next run in this repository sees them
    Accept,
    /// Drop the held changes: the profile's copies stay as accepted
    Reject,
}

pub fn run(ctx: &Context, args: &ProfileArgs, out: &Output) -> Result<i32> {
    let action = match args.action {
        Action::Diff => ProfileAction::Diff,
        Action::Accept => ProfileAction::Accept,
        Action::Reject => ProfileAction::Reject,
    };
    let outcome = profile(ctx, action, args.name.as_deref())?;
    out.answer("a3s-iso.profile.v1", &outcome, || render(&outcome, out));
    Ok(0)
}

fn render(outcome: &ProfileOutcome, out: &Output) {
    let verb = match outcome.action {
        ProfileAction::Diff => "held for review",
        ProfileAction::Accept => "accepted",
        ProfileAction::Reject => "rejected",
    };
    for profile in &outcome.profiles {
        if profile.changes.is_empty() {
            out.info(&format!("{}: nothing held for review", profile.profile));
            continue;
        }
        out.info(&format!(
            "{}: {} change(s) {verb} ({})",
            profile.profile,
            profile.changes.len(),
            profile.kept_in.display()
        ));
        if outcome.action == ProfileAction::Diff {
            for change in &profile.changes {
                out.line(change.patch.trim_end());
            }
        }
    }
    if outcome.action == ProfileAction::Diff
        && outcome.profiles.iter().any(|p| !p.changes.is_empty())
    {
        out.hint("a3s-iso profile accept [NAME] makes them live; a3s-iso profile reject [NAME] drops them");
    }
}
