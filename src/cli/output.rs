//! Rendering: one JSON document on stdout with `--json`; otherwise short human output on
//! stdout and narration on stderr. Colour only on a terminal (or `--color always`).

use std::borrow::Cow;
use std::io::{IsTerminal, Write};

use serde::Serialize;

use a3s_iso::base::error::{Error, ErrorCode};
use a3s_iso::base::warning::Warning;

use super::ColorChoice;

/// Where and how a command's answer, narration and errors are printed.
pub struct Output {
    /// `--json`: exactly one JSON document on stdout.
    pub json: bool,
    /// `-q`: no narration or warnings on stderr.
    pub quiet: bool,
    color_stderr: bool,
    color_stdout: bool,
}

#[derive(Serialize)]
struct Document<'a, T: Serialize> {
    schema: &'a str,
    #[serde(flatten)]
    body: &'a T,
}

fn colour_wanted(choice: ColorChoice, is_terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            is_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        }
    }
}

impl Output {
    /// Output for the global flags; colour only where the stream is a terminal (or `always`).
    pub fn new(json: bool, quiet: bool, color: ColorChoice) -> Output {
        Output {
            json,
            quiet,
            color_stderr: !json && colour_wanted(color, std::io::stderr().is_terminal()),
            color_stdout: !json && colour_wanted(color, std::io::stdout().is_terminal()),
        }
    }

    /// Prints a result document `{"schema": ..., ...body}`.
    pub fn document<T: Serialize>(&self, schema: &str, body: &T) {
        let doc = Document { schema, body };
        let text = serde_json::to_string_pretty(&doc).unwrap_or_else(|e| {
            format!("{{\"schema\":\"a3s-iso.error.v1\",\"error\":{{\"code\":\"internal\",\"message\":\"{e}\"}}}}")
        });
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{text}");
    }

    /// With `--json`, prints the document and says so: the caller is done.
    pub fn json_done<T: Serialize>(&self, schema: &str, body: &T) -> bool {
        if self.json {
            self.document(schema, body);
        }
        self.json
    }

    /// The answer: its document with `--json`, else what `human` prints.
    pub fn answer<T: Serialize>(&self, schema: &str, body: &T, human: impl FnOnce()) {
        match self.json {
            true => self.document(schema, body),
            false => human(),
        }
    }

    /// A document that carries its own schema (the change-set document).
    pub fn raw_json<T: Serialize>(&self, value: &T) {
        let text = serde_json::to_string_pretty(value).unwrap_or_default();
        let _ = writeln!(std::io::stdout().lock(), "{text}");
    }

    /// A document that carries its own schema, exactly as stored (`changes`'s answer).
    pub fn raw_bytes(&self, bytes: &[u8]) {
        let _ = std::io::stdout().lock().write_all(bytes);
    }

    // Every method that prints human text makes it inert first ([`inert`]): ids, paths, labels,
    // git's messages and document fields come from outside, and a control character in them
    // must never reach a terminal as one. Only a3s-iso's own colours are added afterwards.

    /// A line of the answer (stdout).
    pub fn line(&self, text: &str) {
        let _ = writeln!(std::io::stdout().lock(), "{}", inert(text));
    }

    /// A line the caller made inert (and coloured): [`Output::toned`] cells and [`inert`] text.
    pub fn line_composed(&self, text: &str) {
        let _ = writeln!(std::io::stdout().lock(), "{text}");
    }

    /// Aligned `key  value` lines (stdout).
    pub fn fields<K: AsRef<str>>(&self, fields: &[(K, String)]) {
        let width = fields
            .iter()
            .map(|(k, _)| k.as_ref().len())
            .max()
            .unwrap_or(0);
        let mut stdout = std::io::stdout().lock();
        for (key, value) in fields {
            let key = paint(self.color_stdout, &format!("{:<width$}", key.as_ref()), "2");
            let _ = writeln!(stdout, "{key}  {}", inert(value));
        }
    }

    /// The key value of a result, first and emphasised on a terminal.
    pub fn headline(&self, text: &str) {
        self.line_composed(&paint(self.color_stdout, &inert(text), "1"));
    }

    /// A headline whose colour says how it went (an outcome).
    pub fn headline_toned(&self, text: &str, tone: Tone) {
        self.line_composed(&self.toned(text, tone));
    }

    /// `text`, made inert, coloured by `tone` when stdout is coloured (a table cell, a state).
    pub fn toned(&self, text: &str, tone: Tone) -> String {
        paint(self.color_stdout, &inert(text), tone.sgr())
    }

    /// Does `work` under a spinner on stderr (none with `--json` or `-q`).
    pub fn spinning<T>(&self, message: &'static str, work: impl FnOnce() -> T) -> T {
        let _spinner = super::progress::Spinner::start(!self.json && !self.quiet, message);
        work()
    }

    /// The first paths of a list, one an indented line, then `and N more` of `total`.
    pub fn path_list(&self, paths: &[String], total: u64) {
        const SHOWN: usize = 10;
        let shown = &paths[..paths.len().min(SHOWN)];
        let rest = total.saturating_sub(shown.len() as u64);
        let more = (rest > 0).then(|| format!("and {rest} more"));
        for line in shown.iter().chain(&more) {
            self.line(&format!("  {line}"));
        }
    }

    /// Information on stderr that is not a warning (a normal state), silenced by `-q`.
    pub fn info(&self, text: &str) {
        if !self.quiet {
            let _ = writeln!(std::io::stderr().lock(), "{}", inert(text));
        }
    }

    /// Narration and warnings (stderr), silenced by `-q`.
    pub fn warn(&self, text: &str) {
        if !self.quiet {
            let label = paint(self.color_stderr, "warning:", "33");
            let _ = writeln!(std::io::stderr().lock(), "{label} {}", inert(text));
        }
    }

    /// Warnings of the library's, in the interface's words (stderr), silenced by `-q`.
    pub fn warnings<'a>(&self, warnings: impl IntoIterator<Item = &'a Warning>) {
        for warning in warnings {
            self.warn(&warning.to_string());
        }
    }

    /// What to do next (stderr), silenced by `-q`.
    pub fn hint(&self, text: &str) {
        if !self.quiet {
            let _ = writeln!(std::io::stderr().lock(), "  hint: {}", inert(text));
        }
    }

    /// A result line on stderr (when stdout belongs to someone else), silenced by `-q`.
    pub fn note(&self, text: &str) {
        if !self.quiet {
            let label = paint(self.color_stderr, "a3s-iso:", "1");
            let _ = writeln!(std::io::stderr().lock(), "{label} {}", inert(text));
        }
    }

    /// Renders an error and returns its exit status.
    pub fn error(&self, err: &Error) -> i32 {
        if self.json {
            self.document(
                "a3s-iso.error.v1",
                &serde_json::json!({ "error": a3s_iso::interface::errors::document(err) }),
            );
        } else {
            // Rendered plain and made inert, then only the label coloured.
            let text = inert(&a3s_iso::interface::errors::render(err)).into_owned();
            let label = format!("error[{}]:", err.code().as_str());
            let text = match text.strip_prefix(&label) {
                Some(rest) if self.color_stderr => format!("\x1b[31;1m{label}\x1b[0m{rest}"),
                _ => text,
            };
            let _ = write!(std::io::stderr().lock(), "{text}");
        }
        err.exit_code()
    }
}

/// How an outcome or a state went, as a colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// It worked and changed something (green).
    Good,
    /// Nothing to do (dim).
    Quiet,
    /// It did not work, or not all of it (red).
    Bad,
    /// Recorded or planned, nothing applied yet (cyan).
    Note,
}

impl Tone {
    fn sgr(self) -> &'static str {
        match self {
            Tone::Good => "32",
            Tone::Quiet => "2",
            Tone::Bad => "31",
            Tone::Note => "36",
        }
    }
}

/// A size for people: `512 bytes`, `1.2 KiB`, `675.1 MiB` (JSON keeps exact bytes).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} byte{}", plural(bytes));
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// What a clone's files take: `cloned: 1.2 MiB apparent, 512 bytes held alone`.
pub fn cloned(disk: &a3s_iso::base::reflink::DiskUse) -> String {
    format!(
        "cloned: {} apparent, {} held alone",
        human_bytes(disk.apparent_bytes),
        human_bytes(disk.own_bytes)
    )
}

/// The `s` of a plural: none for one.
pub fn plural<N: PartialEq + From<u8>>(n: N) -> &'static str {
    if n == N::from(1) { "" } else { "s" }
}

/// Text for a terminal: every control character but newline and tab (C0, DEL, and the C1
/// range that some terminals take as escape sequences) shown escaped as git shows them in
/// paths (`\033`, `\a`, `\r`, …), so that nothing from outside can move the cursor, set a
/// title, write the clipboard or ring. Plain text comes back as it was.
pub fn inert(text: &str) -> Cow<'_, str> {
    let unsafe_char =
        |c: char| (c.is_control() && c != '\n' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c);
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !unsafe_char(c) {
            out.push(c);
            continue;
        }
        match c {
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0b' => out.push_str("\\v"),
            '\x0c' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            _ => {
                let mut buf = [0u8; 4];
                for byte in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("\\{byte:03o}"));
                }
            }
        }
    }
    Cow::Owned(out)
}

/// `paths`, each made [`inert`], joined by `, `.
pub fn inert_joined(paths: &[String]) -> String {
    paths
        .iter()
        .map(|p| inert(p))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A path inside a repository as `git diff --name-only` shows it (`core.quotePath` on): in
/// double quotes with C escapes when it holds a control character, a quote, a backslash or a
/// byte outside ASCII; as it is otherwise.
pub fn quote_path(path: &[u8]) -> String {
    let needs = |b: u8| b < 0x20 || b == 0x7f || b == b'"' || b == b'\\' || b >= 0x80;
    if !path.iter().copied().any(needs) {
        return String::from_utf8_lossy(path).into_owned();
    }
    let mut out = String::from("\"");
    for &b in path {
        match b {
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            0x0b => out.push_str("\\v"),
            0x0c => out.push_str("\\f"),
            b'\r' => out.push_str("\\r"),
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            _ if needs(b) => out.push_str(&format!("\\{b:03o}")),
            _ => out.push(b as char),
        }
    }
    out.push('"');
    out
}

fn paint(enabled: bool, text: &str, sgr: &str) -> String {
    if enabled {
        format!("\x1b[{sgr}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// A command line clap refused: help and version exit 0; anything else is a usage error (2), a
/// JSON document when `--json` was among the arguments.
pub fn usage_error(err: clap::Error, raw: &[std::ffi::OsString]) -> i32 {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    ) {
        let _ = err.print();
        return 0;
    }
    let hint = missing_separator(&err, raw).then_some(RUN_SEPARATOR_HINT);
    if raw.iter().any(|a| a == "--json") {
        // An empty rendering has no first line: then the kind's words, if any.
        let detail = err.to_string();
        let first = (detail.lines().next())
            .map(|line| line.trim_start_matches("error: "))
            .unwrap_or_else(|| err.kind().as_str().unwrap_or("invalid arguments"))
            .to_string();
        let message = match hint {
            Some(hint) => format!("{first} ({hint})"),
            None => first,
        };
        let out = Output::new(true, false, ColorChoice::Never);
        return out.error(&Error::Usage { message });
    }
    let _ = err.print();
    if let Some(hint) = hint {
        eprintln!("  hint: {hint}");
    }
    ErrorCode::Usage.exit_code()
}

const RUN_SEPARATOR_HINT: &str =
    "put -- before the command: a3s-iso run [OPTIONS] -- CMD [ARGS]...";

/// `run` refused a word it took for one of its own arguments, and no `--` was given: the
/// word was most likely the command to run.
fn missing_separator(err: &clap::Error, raw: &[std::ffi::OsString]) -> bool {
    use clap::error::ErrorKind;
    let is_run = raw.iter().skip(1).any(|a| a == "run");
    is_run
        && !raw.iter().any(|a| a == "--")
        && matches!(
            err.kind(),
            ErrorKind::UnknownArgument | ErrorKind::MissingRequiredArgument
        )
}

/// `key<TAB>value<NUL>` records on stdout, the values as their bytes (`-z` output).
pub fn write_nul_records(records: &[(&str, Vec<u8>)]) -> a3s_iso::base::error::Result<()> {
    use std::io::Write;
    let mut bytes = Vec::new();
    for (key, value) in records {
        bytes.extend_from_slice(key.as_bytes());
        bytes.push(b'\t');
        bytes.extend_from_slice(value);
        bytes.push(0);
    }
    std::io::stdout()
        .lock()
        .write_all(&bytes)
        .map_err(|e| Error::io("cannot write to standard output", e))
}
