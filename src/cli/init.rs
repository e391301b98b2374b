//! `a3s-iso init`: configure an agent's harness to use a3s-iso.

use clap::ValueEnum;

use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
use a3s_iso::flows::claude::{InitOutcome, init};

use super::Output;

/// The harnesses `init` configures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum InitAgent {
    /// Claude Code: WorktreeCreate and WorktreeRemove hooks in .claude/settings.local.json
    Claude,
}

pub fn run(ctx: &Context, agent: InitAgent, out: &Output) -> Result<i32> {
    let InitAgent::Claude = agent;
    let outcome = init(ctx)?;
    out.warnings(&outcome.warnings);
    out.answer("a3s-iso.init.v1", &outcome, || render(&outcome, out));
    Ok(0)
}

fn render(outcome: &InitOutcome, out: &Output) {
    let settings = outcome.settings.display();
    out.headline(&match (outcome.changed, outcome.created) {
        (false, _) => format!("{settings}: the hooks are there already"),
        (true, true) => format!("created {settings} with the hooks"),
        (true, false) => format!("added the hooks to {settings}"),
    });
    for hook in &outcome.hooks {
        out.line(&format!(
            "  {:<15} {}{}",
            hook.event.name(),
            hook.command,
            if hook.added { "" } else { " (already there)" }
        ));
    }
}
