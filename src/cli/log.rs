use clap::Args;

use a3s_iso::context::Context;
use a3s_iso::error::Result;
use a3s_iso::log::{Promotion, format_utc, log};
use a3s_iso::state::Landing;

use super::Output;

/// `a3s-iso log`'s arguments.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Only the promotions of this session
    #[arg(short = 's', long = "session", value_name = "ID")]
    pub session: Option<String>,
    /// At most N promotions (the newest)
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
}

/// Prints the promote journal, newest first, as a table or one JSON document.
pub fn run(ctx: &Context, args: &LogArgs, out: &Output) -> Result<i32> {
    let outcome = log(ctx, args.session.as_deref(), args.limit)?;
    for name in &outcome.unreadable {
        out.warn(&format!("unreadable journal entry {name}"));
    }
    if out.json {
        out.document("a3s-iso.log.v1", &outcome);
        return Ok(0);
    }
    if outcome.promotions.is_empty() {
        out.line("no promotions");
        return Ok(0);
    }
    let header = [
        "TIME",
        "SESSION",
        "DIGEST",
        "LANDING",
        "FILES",
        "SOURCE HEAD",
    ]
    .map(String::from);
    let rows: Vec<[String; 6]> = outcome.promotions.iter().map(row).collect();
    let mut widths = [0usize; 6];
    for row in std::iter::once(&header).chain(rows.iter()) {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in std::iter::once(&header).chain(rows.iter()) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.line(cells.join("  ").trim_end());
    }
    Ok(0)
}

/// One promotion's cells, in the header's order.
fn row(p: &Promotion) -> [String; 6] {
    let short = |s: &str, n: usize| s.chars().take(n).collect::<String>();
    let digest = p.digest.strip_prefix("sha256:").unwrap_or(&p.digest);
    let landing = match p.landing {
        Landing::Applied => "applied",
        Landing::Recovered => "recovered",
        Landing::Noted => "noted",
        Landing::Reapplied => "reapplied",
    };
    [
        format_utc(p.promoted_at_ms),
        p.session_id.clone().unwrap_or_else(|| "-".into()),
        format!("sha256:{}", short(digest, 12)),
        format!("{landing} ({})", p.mode.as_str()),
        p.files_changed
            .map(|n| n.to_string())
            .unwrap_or_else(|| "-".into()),
        p.source_head
            .as_deref()
            .map(|h| short(h, 12))
            .unwrap_or_else(|| "-".into()),
    ]
}
