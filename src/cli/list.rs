use clap::Args;

use a3s_iso::context::Context;
use a3s_iso::error::Result;
use a3s_iso::list::{SessionView, list};

use super::Output;

/// `a3s-iso list`'s arguments.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Every source this user has bound from, not only this repository
    #[arg(long)]
    pub all: bool,
}

/// Lists the sessions, as a table or a JSON document.
pub fn run(ctx: &Context, args: &ListArgs, out: &Output) -> Result<i32> {
    let outcome = list(ctx, args.all)?;
    for unreadable in &outcome.unreadable {
        out.warn(&format!("unreadable session record {unreadable}"));
    }
    if out.json {
        out.document("a3s-iso.list.v1", &outcome);
        return Ok(0);
    }
    if outcome.sessions.is_empty() {
        out.line("no sessions");
        return Ok(0);
    }
    let header = [
        "SESSION", "STATE", "REVISION", "HEAD", "OWNER", "LAST RUN", "PATH",
    ]
    .map(String::from);
    let rows: Vec<[String; 7]> = outcome.sessions.iter().map(row).collect();
    print_table(out, &header, &rows);
    Ok(0)
}

/// One session's cells, in the header's order.
fn row(s: &SessionView) -> [String; 7] {
    [
        s.session_id.clone(),
        s.state.as_str().to_string(),
        s.bound_revision.chars().take(12).collect(),
        match s.head_moved {
            Some(true) => "moved".into(),
            Some(false) => "same".into(),
            None => "?".into(),
        },
        match (s.ownerless, s.owner_alive) {
            (true, _) => "none".into(),
            (false, Some(true)) => "alive".into(),
            (false, Some(false)) => "dead".into(),
            (false, None) => "unknown".into(),
        },
        s.last_run
            .as_ref()
            .map(|run| format!("{} {}", run.run_id, run.state))
            .unwrap_or_else(|| "-".into()),
        match (&s.worktree, &s.swept_ref) {
            (Some(path), _) => path.display().to_string(),
            // A swept session's work is in its swept ref: the way back is bind --resume.
            (None, Some(swept)) => format!("{swept} (bind -s {} --resume)", s.session_id),
            (None, None) => "-".into(),
        },
    ]
}

/// Prints the header and rows; every column but the last (the path) is padded to its widest
/// cell.
fn print_table(out: &Output, header: &[String; 7], rows: &[[String; 7]]) {
    let mut widths = [0usize; 7];
    for row in std::iter::once(header).chain(rows.iter()) {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in std::iter::once(header).chain(rows.iter()) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  ", width = widths[i]));
            }
        }
        out.line(&line);
    }
}
