use a3s_iso::base::error::Result;
use a3s_iso::base::owner::OwnerLiveness;
use a3s_iso::context::Context;
pub use a3s_iso::interface::request::list::ListArgs;
use a3s_iso::ops::list::{ListOutcome, ListedState, SessionView, list};
use a3s_iso::services::remote::list_remote;

use super::{Output, Tone};

/// Lists the change sets on a remote: digest, session, run, size and date.
fn run_remote(ctx: &Context, remote: &str, allow_url: bool, out: &Output) -> Result<i32> {
    let listing = list_remote(ctx, Some(remote), allow_url)?;
    if out.json_done("a3s-iso.remote-list.v1", &listing) {
        return Ok(0);
    }
    if listing.change_sets.is_empty() {
        out.line(&format!("no change sets on {}", listing.remote.name));
        return Ok(0);
    }
    let header: Vec<Cell> = ["DIGEST", "SESSION", "RUN", "SIZE"]
        .into_iter()
        .map(|h| Cell::plain(h.to_string()))
        .collect();
    let unknown = || "?".to_string();
    let rows: Vec<Vec<Cell>> = listing
        .change_sets
        .iter()
        .map(|c| {
            vec![
                Cell::plain(c.digest.clone()),
                Cell::plain(c.session_id.clone().unwrap_or_else(unknown)),
                Cell::plain(c.run_id.clone().unwrap_or_else(unknown)),
                Cell::plain(c.patch_bytes.map_or_else(unknown, super::human_bytes)),
            ]
        })
        .collect();
    print_table(out, &header, &rows);
    Ok(0)
}

/// Lists the sessions, as a table or a JSON document.
pub fn run(ctx: &Context, args: &ListArgs, out: &Output) -> Result<i32> {
    if let Some(remote) = &args.remote {
        return run_remote(ctx, remote, args.allow_url, out);
    }
    let outcome = list(ctx, args.all, args.disk)?;
    for unreadable in &outcome.unreadable {
        out.warn(&format!("unreadable session record {unreadable}"));
    }
    if out.json_done("a3s-iso.list.v1", &outcome) {
        return Ok(0);
    }
    if args.nul {
        return nul_records(&outcome.sessions);
    }
    if outcome.hidden_discarded > 0 {
        out.info(&format!(
            "{} discarded session{} not shown (list --all shows them)",
            outcome.hidden_discarded,
            super::plural(outcome.hidden_discarded)
        ));
    }
    if outcome.sessions.is_empty() {
        out.line("no sessions");
        return Ok(0);
    }
    let header = header(args);
    let rows: Vec<Vec<Cell>> = (outcome.sessions.iter())
        .map(|s| session_row(args, &outcome, s))
        .collect();
    print_table(out, &header, &rows);
    if let Some(disk) = &outcome.disk {
        out.line(&format!(
            "on disk: {} for {} of files ({} of pristine trees shared by clones)",
            super::human_bytes(disk.total.own_bytes),
            super::human_bytes(disk.total.apparent_bytes),
            super::human_bytes(disk.pristine.allocated_bytes),
        ));
    }
    Ok(0)
}

/// The table's header, with `SOURCE` under `--all` and the sizes under `--disk`.
fn header(args: &ListArgs) -> Vec<Cell> {
    let mut header: Vec<String> = [
        "SESSION", "STATE", "REVISION", "HEAD", "OWNER", "LAST RUN", "PATH",
    ]
    .map(String::from)
    .to_vec();
    if args.all {
        // Sessions of several sources: say whose each one is.
        header.insert(1, "SOURCE".into());
    }
    if args.disk {
        let at = header.len() - 1;
        header.insert(at, "SIZE".into());
        header.insert(at + 1, "ALONE".into());
    }
    header.into_iter().map(Cell::plain).collect()
}

/// A session's row under [`header`], its state naming unfinished operations and conflicts.
fn session_row(args: &ListArgs, outcome: &ListOutcome, s: &SessionView) -> Vec<Cell> {
    let mut cells = row(s);
    if let Some(op) = outcome
        .interrupted
        .iter()
        .find(|i| i.session_id.as_deref() == Some(s.session_id.as_str()))
    {
        cells[1].text = format!("{} ({} unfinished)", cells[1].text, op.operation.as_str());
        cells[1].tone = Some(Tone::Note);
    }
    let against = conflicts_of(s);
    if !against.is_empty() {
        cells[1].text = format!("{} (conflicts with {})", cells[1].text, against);
    }
    if args.all {
        cells.insert(1, Cell::plain(s.source.display().to_string()));
    }
    if args.disk {
        let at = cells.len() - 1;
        let size = |f: fn(&a3s_iso::base::reflink::DiskUse) -> u64| {
            s.disk
                .as_ref()
                .map_or("-".into(), |d| super::human_bytes(f(d)))
        };
        cells.insert(at, Cell::plain(size(|d| d.apparent_bytes)));
        cells.insert(at + 1, Cell::plain(size(|d| d.own_bytes)));
    }
    cells
}

/// What the session's work would conflict with, as `overlaps` predicts (empty: nothing).
fn conflicts_of(s: &SessionView) -> String {
    let mut against: Vec<String> = (s.conflicts_with.iter())
        .map(|id| super::inert(id).into_owned())
        .collect();
    if !s.conflicts_with_head.is_empty() {
        against.push("HEAD".into());
    }
    if !s.conflicts_with_your_changes.is_empty() {
        against.push("your uncommitted changes".into());
    }
    against.join(", ")
}

/// A table cell and the colour it is shown in.
struct Cell {
    text: String,
    tone: Option<Tone>,
}

impl Cell {
    fn plain(text: String) -> Cell {
        Cell { text, tone: None }
    }

    fn toned(text: &str, tone: Option<Tone>) -> Cell {
        let text = text.to_string();
        Cell { text, tone }
    }
}

/// Live is green, kept for inspection cyan, gone or landed dim, damaged red.
fn state_tone(state: ListedState) -> Tone {
    match state {
        ListedState::Bound => Tone::Good,
        ListedState::Retained => Tone::Note,
        ListedState::Discarded | ListedState::Swept | ListedState::Landed => Tone::Quiet,
        ListedState::Missing | ListedState::Conflicted => Tone::Bad,
    }
}

/// One session's cells, in the header's order (without SOURCE).
fn row(s: &SessionView) -> Vec<Cell> {
    let owner = match s.owner.as_ref().map(|o| o.liveness) {
        None => ("none", None),
        Some(OwnerLiveness::Alive) => ("alive", Some(Tone::Good)),
        Some(OwnerLiveness::Dead) => ("dead", Some(Tone::Quiet)),
        Some(OwnerLiveness::Foreign | OwnerLiveness::Unknown) => ("unknown", None),
    };
    let head = match s.head_moved {
        Some(true) => ("moved", Some(Tone::Note)),
        Some(false) => ("same", None),
        None => ("?", None),
    };
    vec![
        Cell::plain(s.session_id.to_string()),
        Cell::toned(s.state.as_str(), Some(state_tone(s.state))),
        Cell::plain(s.bound_revision.chars().take(12).collect()),
        Cell::toned(head.0, head.1),
        Cell::toned(owner.0, owner.1),
        Cell::plain(
            s.last_run
                .as_ref()
                .map(|run| format!("{} {}", run.run_id, run.state))
                .unwrap_or_else(|| "-".into()),
        ),
        Cell::plain(match (&s.worktree, &s.swept_ref) {
            (Some(path), _) => path.display().to_string(),
            // A swept session's work is in its swept ref: the way back is bind --resume.
            (None, Some(swept)) => format!("{swept} (bind -s {} --resume)", s.session_id),
            (None, None) => "-".into(),
        }),
    ]
}

/// Prints the header and rows; every column but the last (the path) is padded to its widest
/// cell, and padding stays outside the colour codes so that columns line up.
fn print_table(out: &Output, header: &[Cell], rows: &[Vec<Cell>]) {
    let mut widths = vec![0usize; header.len()];
    for row in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(super::inert(&cell.text).chars().count());
        }
    }
    for row in std::iter::once(header).chain(rows.iter().map(Vec::as_slice)) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            let text = super::inert(&cell.text);
            let shown = match cell.tone {
                Some(tone) => out.toned(&text, tone),
                None => text.to_string(),
            };
            line.push_str(&shown);
            if i + 1 < row.len() {
                let pad = widths[i] - text.chars().count();
                line.push_str(&" ".repeat(pad + 2));
            }
        }
        out.line_composed(&line);
    }
}

/// `list -z`: each session's cells joined by TAB, the path last as its bytes, ended by NUL.
fn nul_records(sessions: &[SessionView]) -> Result<i32> {
    use std::io::Write;
    use std::os::unix::ffi::OsStrExt;
    let mut stdout = std::io::stdout().lock();
    for s in sessions {
        let mut record: Vec<u8> = Vec::new();
        let mut cells = row(s);
        cells[2] = Cell::plain(s.bound_revision.clone());
        for cell in &cells[..cells.len() - 1] {
            record.extend_from_slice(cell.text.as_bytes());
            record.push(b'\t');
        }
        match &s.worktree {
            Some(path) => record.extend_from_slice(path.as_os_str().as_bytes()),
            None => record.extend_from_slice(cells[cells.len() - 1].text.as_bytes()),
        }
        record.push(0);
        stdout
            .write_all(&record)
            .map_err(|e| a3s_iso::base::error::Error::io("cannot write to standard output", e))?;
    }
    Ok(0)
}
