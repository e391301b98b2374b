use clap::Args;

use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
use a3s_iso::ops::log::{LandingRow, LoggedRun, format_utc, log, runs};

use super::Output;

/// `a3s-iso log`'s arguments.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// Only the promotions (or runs) of this session
    #[arg(short = 's', long = "session", value_name = "ID")]
    pub session: Option<String>,
    /// At most N entries (the newest)
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// List the runs instead, with the command each ran, its working directory and sandbox
    /// settings
    #[arg(long)]
    pub runs: bool,
}

/// Prints the promote journal (or the runs), newest first, as a table or one JSON document.
pub fn run(ctx: &Context, args: &LogArgs, out: &Output) -> Result<i32> {
    if args.runs {
        return run_log(ctx, args, out);
    }
    let outcome = log(ctx, args.session.as_deref(), args.limit)?;
    for name in &outcome.unreadable {
        out.warn(&format!("unreadable journal entry {name}"));
    }
    if out.json_done("a3s-iso.log.v1", &outcome) {
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
    ];
    let rows: Vec<[String; 6]> = outcome.landings().into_iter().map(row).collect();
    table(out, header, &rows);
    Ok(0)
}

/// `log --runs`: the runs, newest first, with what each ran.
fn run_log(ctx: &Context, args: &LogArgs, out: &Output) -> Result<i32> {
    let outcome = runs(ctx, args.session.as_deref(), args.limit)?;
    if out.json_done("a3s-iso.log.v1", &outcome) {
        return Ok(0);
    }
    if outcome.runs.is_empty() {
        out.line("no runs");
        return Ok(0);
    }
    let header = ["TIME", "SESSION", "RUN", "STATE", "ENDED", "COMMAND"];
    let rows: Vec<[String; 6]> = outcome.runs.iter().map(run_row).collect();
    table(out, header, &rows);
    Ok(0)
}

/// Prints `rows` under `header`, each column as wide as its widest cell.
fn table<const N: usize>(out: &Output, header: [&str; N], rows: &[[String; N]]) {
    let header = header.map(String::from);
    let mut widths = [0usize; N];
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
}

/// One run's cells, in the header's order.
fn run_row(logged: &LoggedRun) -> [String; 6] {
    let run = &logged.run;
    [
        run.observed_at_ms.map_or("-".into(), format_utc),
        logged.session_id.to_string(),
        run.run_id.to_string(),
        run.state.map_or("unreadable", |s| s.as_str()).to_string(),
        super::show::ended(run.exit_code, run.signal).unwrap_or_else(|| "-".into()),
        super::show::command_line(run).unwrap_or_else(|| "-".into()),
    ]
}

/// One landing's cells; an earlier landing of a reapplied change set says so, its HEAD unknown.
fn row(landing: LandingRow<'_>) -> [String; 6] {
    let p = landing.promotion;
    [
        format_utc(landing.at_ms),
        p.session_id.clone().unwrap_or_else(|| "-".into()),
        super::show::short_digest(&p.digest),
        match landing.earlier {
            true => format!("earlier landing ({})", p.mode.as_str()),
            false => format!("{} ({})", p.landing, p.mode),
        },
        p.files_changed
            .map(|n| n.to_string())
            .unwrap_or_else(|| "-".into()),
        p.source_head
            .as_deref()
            .filter(|_| !landing.earlier)
            .map(|h| h.chars().take(12).collect())
            .unwrap_or_else(|| "-".into()),
    ]
}
