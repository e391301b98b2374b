//! Rendering: one JSON document on stdout with `--json`; otherwise short human output on
//! stdout and narration on stderr. Colour only on a terminal (or `--color always`).

use std::io::{IsTerminal, Write};

use serde::Serialize;

use a3s_iso::error::{Error, ErrorCode};

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

    /// A document that carries its own schema (the change-set document).
    pub fn raw_json<T: Serialize>(&self, value: &T) {
        let text = serde_json::to_string_pretty(value).unwrap_or_default();
        let _ = writeln!(std::io::stdout().lock(), "{text}");
    }

    /// A line of the answer (stdout).
    pub fn line(&self, text: &str) {
        let _ = writeln!(std::io::stdout().lock(), "{text}");
    }

    /// Aligned `key  value` lines (stdout).
    pub fn fields(&self, fields: &[(&str, String)]) {
        let width = fields.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        let mut stdout = std::io::stdout().lock();
        for (key, value) in fields {
            let key = self.paint_stdout(&format!("{key:<width$}"), "2");
            let _ = writeln!(stdout, "{key}  {value}");
        }
    }

    /// The key value of a result, first and emphasised on a terminal.
    pub fn headline(&self, text: &str) {
        let text = self.paint_stdout(text, "1");
        let _ = writeln!(std::io::stdout().lock(), "{text}");
    }

    /// Narration and warnings (stderr), silenced by `-q`.
    pub fn warn(&self, text: &str) {
        if !self.quiet {
            let label = self.paint_stderr("warning:", "33");
            let _ = writeln!(std::io::stderr().lock(), "{label} {text}");
        }
    }

    /// What to do next (stderr), silenced by `-q`.
    pub fn hint(&self, text: &str) {
        if !self.quiet {
            let _ = writeln!(std::io::stderr().lock(), "  hint: {text}");
        }
    }

    /// A result line on stderr (when stdout belongs to someone else), silenced by `-q`.
    pub fn note(&self, text: &str) {
        if !self.quiet {
            let label = self.paint_stderr("a3s-iso:", "1");
            let _ = writeln!(std::io::stderr().lock(), "{label} {text}");
        }
    }

    fn paint_stdout(&self, text: &str, sgr: &str) -> String {
        paint(self.color_stdout, text, sgr)
    }

    fn paint_stderr(&self, text: &str, sgr: &str) -> String {
        paint(self.color_stderr, text, sgr)
    }

    /// Renders an error and returns its exit status.
    pub fn error(&self, err: &Error) -> i32 {
        if self.json {
            self.document(
                "a3s-iso.error.v1",
                &serde_json::json!({ "error": err.to_json() }),
            );
        } else {
            let _ = write!(
                std::io::stderr().lock(),
                "{}",
                err.render(self.color_stderr)
            );
        }
        err.exit_code()
    }
}

fn paint(enabled: bool, text: &str, sgr: &str) -> String {
    if enabled {
        format!("\x1b[{sgr}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// A command line clap refused: help and version go to stdout with status 0; anything else is
/// a usage error (status 2), as a JSON document when `--json` was among the arguments.
pub fn usage_error(err: clap::Error, raw: &[std::ffi::OsString]) -> i32 {
    use clap::error::ErrorKind;
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    ) {
        let _ = err.print();
        return 0;
    }
    if raw.iter().any(|a| a == "--json") {
        let message = err.kind().as_str().map(str::to_string).unwrap_or_else(|| {
            err.to_string()
                .lines()
                .next()
                .unwrap_or("invalid arguments")
                .to_string()
        });
        let detail = err.to_string();
        let first = detail
            .lines()
            .next()
            .map(|l| l.trim_start_matches("error: ").to_string())
            .unwrap_or(message);
        let out = Output::new(true, false, ColorChoice::Never);
        return out.error(&Error::Usage { message: first });
    }
    let _ = err.print();
    ErrorCode::Usage.exit_code()
}
