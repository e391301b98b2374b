//! Shell completions, man pages and the docs' options table, generated from clap's definition.

use std::path::Path;

use clap::CommandFactory;
use clap_complete::Shell;

use a3s_iso::base::error::{Error, IoContext, Result};

use super::Cli;

const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "A3S_ISO_SESSION_ID",
        "the session, as -s/--session; run sets it for its command",
    ),
    ("A3S_ISO_STATE_DIR", "the state store, as --state-dir"),
    ("A3S_ISO_GIT", "the git binary, as --git"),
    (
        "A3S_ISO_RELEASE_IDENTITY",
        "the agent_release_identity of captured change sets",
    ),
    (
        "NO_COLOR",
        "when set and not empty, no colour in human output (--color auto)",
    ),
];

/// Writes `completions/`, `man/` and `docs/options.md` under `dir`.
pub fn generate(dir: &Path) -> Result<()> {
    let completions_dir = dir.join("completions");
    let man = dir.join("man");
    for sub in [&completions_dir, &man] {
        std::fs::create_dir_all(sub).ctx(|| format!("cannot create {}", sub.display()))?;
    }
    for (shell, name) in [
        (Shell::Bash, "a3s-iso.bash"),
        (Shell::Zsh, "_a3s-iso"),
        (Shell::Fish, "a3s-iso.fish"),
        (Shell::Elvish, "a3s-iso.elv"),
        (Shell::PowerShell, "_a3s-iso.ps1"),
    ] {
        write(&completions_dir.join(name), &super::complete::script(shell))?;
    }
    // No `help` subcommand in the pages: there is no a3s-iso-help(1) to link to.
    let root = Cli::command().disable_help_subcommand(true);
    write(&man.join("a3s-iso.1"), &man_page(root.clone(), "")?)?;
    for sub in root.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("a3s-iso-{}", sub.get_name());
        let page = sub
            .clone()
            .display_name(name.clone())
            .bin_name(format!("a3s-iso {}", sub.get_name()));
        write(
            &man.join(format!("{name}.1")),
            &man_page(page, sub.get_name())?,
        )?;
    }
    let docs = dir.join("docs");
    std::fs::create_dir_all(&docs).ctx(|| format!("cannot create {}", docs.display()))?;
    let options = a3s_iso::interface::request::doc::options_markdown();
    write(&docs.join("options.md"), options.as_bytes())?;
    Ok(())
}

/// A page: clap's sections without its EXTRA (the help's closing text, which would repeat
/// the exit statuses), then EXAMPLES, EXIT STATUS and ENVIRONMENT, each once.
fn man_page(cmd: clap::Command, name: &str) -> Result<Vec<u8>> {
    let cmd = cmd.after_help(None::<&str>).after_long_help(None::<&str>);
    let man = clap_mangen::Man::new(cmd);
    let mut out = Vec::new();
    let io = |e: std::io::Error| Error::io("cannot render a man page", e);
    man.render(&mut out).map_err(io)?;
    let examples = super::examples::text(name);
    if !examples.is_empty() {
        out.extend_from_slice(b".SH EXAMPLES\n.nf\n");
        for line in examples.lines() {
            out.extend_from_slice(roff_literal(line.trim_start()).as_bytes());
            out.push(b'\n');
        }
        out.extend_from_slice(b".fi\n");
    }
    out.extend_from_slice(b".SH \"EXIT STATUS\"\n");
    out.extend_from_slice(super::examples::EXIT_STATUS.as_bytes());
    out.extend_from_slice(b"\n.SH ENVIRONMENT\n");
    for (name, meaning) in ENVIRONMENT {
        out.extend_from_slice(format!(".TP\n\\fB{name}\\fR\n{meaning}\n").as_bytes());
    }
    Ok(out)
}

/// A line shown as is in roff: backslashes escaped, a leading `.` or `'` not read as a request.
fn roff_literal(line: &str) -> String {
    let line = line.replace('\\', "\\e").replace('-', "\\-");
    if line.starts_with(['.', '\'']) {
        format!("\\&{line}")
    } else {
        line
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).ctx(|| format!("cannot write {}", path.display()))
}
