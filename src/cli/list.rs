use clap::Args;

use a3s_iso::context::Context;
use a3s_iso::error::Result;
use a3s_iso::list::list;

use super::Output;

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Every source this user has bound from, not only this repository
    #[arg(long)]
    pub all: bool,
}

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
    let rows: Vec<[String; 5]> = outcome
        .sessions
        .iter()
        .map(|s| {
            [
                s.session_id.clone(),
                s.state.to_string(),
                match s.head_moved {
                    Some(true) => "moved".into(),
                    Some(false) => "same".into(),
                    None => "?".into(),
                },
                match s.owner_alive {
                    Some(true) => "alive".into(),
                    Some(false) => "dead".into(),
                    None => "unknown".into(),
                },
                s.worktree
                    .as_deref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let header = ["SESSION", "STATE", "HEAD", "OWNER", "PATH"].map(String::from);
    let mut widths = [0usize; 4];
    for row in std::iter::once(&header).chain(rows.iter()) {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(rows.iter()) {
        out.line(&format!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {:<w3$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            row[4],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3]
        ));
    }
    Ok(0)
}
