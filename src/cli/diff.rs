pub use a3s_iso::interface::request::diff::DiffArgs;
use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
use std::process::{Command, Stdio};

use a3s_iso::base::error::{Error, Result};
use a3s_iso::context::Context;
use a3s_iso::ops::diff::{DiffOptions, DiffOutcome, FileChange, FileStatus, NestedDiff, diff};

use super::{ColorChoice, Output};

/// Shows the patch (paged on a terminal), `--stat`, `--name-only`, or one JSON document.
pub fn run(ctx: &Context, args: &DiffArgs, color: ColorChoice, out: &Output) -> Result<i32> {
    let env_session = args.change_set.is_none() && args.digest.is_none();
    let outcome = diff(
        ctx,
        &DiffOptions {
            session_id: args.session.session.clone().filter(|_| env_session),
            change_set: args.change_set.clone(),
            digest: args.digest.clone(),
            cumulative: args.cumulative,
        },
    )?;
    out.warnings(&outcome.warnings);
    if outcome.head_moved == Some(true) {
        out.warn(
            "the source's HEAD moved since the session was bound (or last promoted): \
             promote would refuse it (head_moved)",
        );
    }
    if out.json_done("a3s-iso.diff.v1", &outcome) {
        return Ok(0);
    }
    if outcome.files.is_empty() && outcome.nested_change_sets.is_empty() && !out.quiet {
        out.note("no changes");
        return Ok(0);
    }
    let terminal = std::io::stdout().is_terminal();
    let painted = match color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => terminal && std::env::var_os("NO_COLOR").is_none(),
    };
    let pager = if terminal { pager(ctx) } else { None };
    write_through(pager.as_deref(), |w| {
        if args.name_only {
            name_only(&outcome, args.nul, w)
        } else if args.stat {
            stat(&outcome, painted, w)
        } else {
            patch(&outcome, painted, w)
        }
    })?;
    Ok(0)
}

/// The pager: `GIT_PAGER`, then `PAGER`, then the source's `core.pager`, else `less -FRX`;
/// `cat` or an empty one means none.
fn pager(ctx: &Context) -> Option<String> {
    let chosen = ["GIT_PAGER", "PAGER"]
        .iter()
        .find_map(|name| std::env::var(name).ok())
        .or_else(|| a3s_iso::ops::diff::configured_pager(ctx))
        .unwrap_or_else(|| "less -FRX".into());
    let trimmed = chosen.trim();
    (!trimmed.is_empty() && trimmed != "cat").then(|| trimmed.to_string())
}

/// Writes to stdout, or to the pager's stdin when there is one (waiting for it to end).
fn write_through(
    pager: Option<&str>,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let started = pager.and_then(|command| {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(command).stdin(Stdio::piped());
        if std::env::var_os("LESS").is_none() {
            cmd.env("LESS", "FRX");
        }
        cmd.spawn().ok()
    });
    let result = match started {
        Some(mut child) => {
            let result = (child.stdin.take()).map_or(Ok(()), |mut stdin| write(&mut stdin));
            let _ = child.wait();
            result
        }
        None => write(&mut std::io::stdout().lock()),
    };
    match result {
        // A pager (or `head`) that stopped reading is the reader's choice, not a failure.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(|e| Error::io("cannot write the diff", e)),
    }
}

/// The root's patch, then each nested repository's after its [`header_line`]; painted, each
/// line coloured as git colours a diff. With no nested change set, exactly the root's patch.
fn patch(outcome: &DiffOutcome, painted: bool, w: &mut dyn Write) -> std::io::Result<()> {
    let reader = outcome.open_patch().map_err(std::io::Error::other)?;
    copy_painted(reader, painted, w)?;
    for nested in &outcome.nested_change_sets {
        header_line(nested, painted, w)?;
        let reader = nested.open_patch().map_err(std::io::Error::other)?;
        copy_painted(reader, painted, w)?;
    }
    w.flush()
}

/// `# nested repository <path> (<kind>)`, bold when painted: what introduces a nested
/// repository's change set, its path quoted as `git diff` quotes a name.
fn header_line(nested: &NestedDiff, painted: bool, w: &mut dyn Write) -> std::io::Result<()> {
    let path = super::quote_path(&nested.path.0);
    let header = format!("# nested repository {path} ({})", nested.kind);
    match painted {
        true => writeln!(w, "\x1b[1m{header}\x1b[m"),
        false => writeln!(w, "{header}"),
    }
}

/// A patch's bytes; painted, each line coloured as git colours a diff.
fn copy_painted(mut reader: impl Read, painted: bool, w: &mut dyn Write) -> std::io::Result<()> {
    if !painted {
        return std::io::copy(&mut reader, w).map(drop);
    }
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    let mut in_header = false;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        if line.starts_with(b"diff --git ") {
            in_header = true;
        } else if line.starts_with(b"@@") {
            in_header = false;
        }
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        let sgr = match body.first() {
            _ if in_header => "1",
            Some(b'@') => "36",
            Some(b'+') => "32",
            Some(b'-') => "31",
            _ => "",
        };
        if sgr.is_empty() || body.is_empty() {
            w.write_all(&line)?;
        } else {
            write!(w, "\x1b[{sgr}m")?;
            w.write_all(body)?;
            w.write_all(b"\x1b[m")?;
            w.write_all(&line[body.len()..])?;
        }
    }
    Ok(())
}

/// One path a line, quoted as `git diff --name-only` quotes it (`-z`: its bytes ended by NUL);
/// the nested repositories' files follow, as superproject paths, with no header.
fn name_only(outcome: &DiffOutcome, nul: bool, w: &mut dyn Write) -> std::io::Result<()> {
    let nested = outcome.nested_change_sets.iter().flat_map(|n| &n.files);
    for file in outcome.files.iter().chain(nested) {
        if nul {
            w.write_all(&file.path.0)?;
            w.write_all(b"\0")?;
        } else {
            w.write_all(super::quote_path(&file.path.0).as_bytes())?;
            w.write_all(b"\n")?;
        }
    }
    w.flush()
}

/// The root's files as `git diff --stat` writes them, then each nested repository's after its
/// [`header_line`].
fn stat(outcome: &DiffOutcome, painted: bool, w: &mut dyn Write) -> std::io::Result<()> {
    if !outcome.files.is_empty() || outcome.nested_change_sets.is_empty() {
        stat_block(&outcome.files, painted, w)?;
    }
    for nested in &outcome.nested_change_sets {
        header_line(nested, painted, w)?;
        stat_block(&nested.files, painted, w)?;
    }
    w.flush()
}

/// ` path | N ++--` for each file, then the totals, as `git diff --stat` writes them.
fn stat_block(files: &[FileChange], painted: bool, w: &mut dyn Write) -> std::io::Result<()> {
    let width = files
        .iter()
        .map(|f| super::quote_path(&f.path.0).chars().count())
        .max()
        .unwrap_or(0);
    let most = files
        .iter()
        .map(|f| f.additions + f.deletions)
        .max()
        .unwrap_or(0);
    let digits = most.to_string().len().max(3);
    for file in files {
        let path = super::quote_path(&file.path.0);
        writeln!(
            w,
            " {path:<width$} | {}",
            counts(file, most, digits, painted)
        )?;
    }
    let (added, removed) = files
        .iter()
        .fold((0, 0), |(a, d), f| (a + f.additions, d + f.deletions));
    let n = files.len();
    writeln!(
        w,
        " {n} file{} changed, {added} insertion{}(+), {removed} deletion{}(-)",
        super::plural(n),
        super::plural(added),
        super::plural(removed)
    )
}

/// `N +++--` (at most 40 marks) or `Bin`, with the file's status unless it is modified.
fn counts(file: &FileChange, most: u64, digits: usize, painted: bool) -> String {
    let status = match file.status {
        FileStatus::Modified => String::new(),
        other => format!(" ({})", other.as_str().replace('_', " ")),
    };
    if file.binary {
        return format!("{:>digits$}{status}", "Bin");
    }
    let total = file.additions + file.deletions;
    // Up to 40 marks as they are, more scaled down to 40.
    let marks = |mark: &str, n: u64| mark.repeat((n * 40).div_ceil(most.max(40)) as usize);
    let (plus, minus) = (marks("+", file.additions), marks("-", file.deletions));
    let (plus, minus) = match painted {
        true => (
            format!("\x1b[32m{plus}\x1b[m"),
            format!("\x1b[31m{minus}\x1b[m"),
        ),
        false => (plus, minus),
    };
    format!("{total:>digits$} {plus}{minus}{status}")
}
