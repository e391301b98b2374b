//! Shell completions: clap's generated scripts with what they get wrong put right (bash's
//! subcommand states for a name with a dash), hidden subcommands left out, and session ids for
//! `-s/--session` asked from the binary at completion time (`a3s-iso __complete sessions`).

use clap::builder::PossibleValuesParser;
use clap::{CommandFactory, Subcommand};
use clap_complete::Shell;

use a3s_iso::base::error::Result;
use a3s_iso::context::Context;

use super::{Cli, Output};

/// What the completion scripts ask for at completion time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Subcommand)]
pub enum CompleteWhat {
    /// The session ids a command can name here (bound and retained), one a line
    Sessions,
}

/// Stands for the session ids in the generated scripts until each shell's own way replaces it.
const SESSIONS: &str = "A3S_ISO_SESSION_IDS";

/// The visible subcommands, every `-s/--session` completed with the session-id stand-in.
fn completion_command() -> clap::Command {
    let full = Cli::command();
    let subcommands: Vec<clap::Command> = full
        .get_subcommands()
        .filter(|sub| !sub.is_hide_set())
        .cloned()
        .map(|sub| {
            if sub.get_arguments().any(|a| a.get_id() == "session") {
                sub.mut_arg("session", |a| {
                    a.value_parser(PossibleValuesParser::new([SESSIONS]))
                })
            } else {
                sub
            }
        })
        .collect();
    let mut cmd = clap::Command::new("a3s-iso")
        .version(env!("CARGO_PKG_VERSION"))
        .subcommands(subcommands);
    if let Some(about) = full.get_about() {
        cmd = cmd.about(about.clone());
    }
    cmd.args(full.get_arguments().cloned())
}

/// The completion script for `shell`.
pub fn script(shell: Shell) -> Vec<u8> {
    let mut raw = Vec::new();
    clap_complete::generate(shell, &mut completion_command(), "a3s-iso", &mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let text = match shell {
        Shell::Bash => bash(&text),
        Shell::Zsh => zsh(&text),
        Shell::Fish => text.replace(
            &format!("-f -a \"{SESSIONS}\\t''\""),
            "-f -a \"(command a3s-iso __complete sessions 2>/dev/null)\"",
        ),
        // These shells complete no option values: the stand-in cannot show.
        _ => text,
    };
    text.into_bytes()
}

/// clap_complete names bash's subcommand states `a3s__iso__subcmd__promote` while it walks the
/// words, but labels their cases `a3s__subcmd__iso__subcmd__promote` (the dash in the binary's
/// name turned into a separator), so nothing after a subcommand completed.
fn bash(text: &str) -> String {
    text.replace("a3s__subcmd__iso", "a3s__iso").replace(
        &format!("compgen -W \"{SESSIONS}\""),
        "compgen -W \"$(command a3s-iso __complete sessions 2>/dev/null)\"",
    )
}

const ZSH_SESSIONS: &str = r#"(( $+functions[_a3s-iso_sessions] )) ||
_a3s-iso_sessions() {
    local -a ids
    ids=(${(f)"$(command a3s-iso __complete sessions 2>/dev/null)"})
    compadd -a ids
}

"#;

fn zsh(text: &str) -> String {
    let text = text.replace(&format!("({SESSIONS})"), "_a3s-iso_sessions");
    // The helper goes before the dispatch at the end of the script.
    match text.rfind("\nif [ \"$funcstack[1]\" = \"_a3s-iso\" ]") {
        Some(at) => format!("{}\n{ZSH_SESSIONS}{}", &text[..at], &text[at + 1..]),
        None => format!("{text}\n{ZSH_SESSIONS}"),
    }
}

/// `__complete sessions`: the ids, one a line; nothing (and success) outside a repository, so
/// that a completion never prints an error.
pub fn run(ctx: Result<Context>, what: CompleteWhat, out: &Output) -> i32 {
    match what {
        CompleteWhat::Sessions => {
            let ids = ctx
                .and_then(|ctx| a3s_iso::ops::complete::session_ids(&ctx))
                .unwrap_or_default();
            for id in ids {
                out.line(&id);
            }
            0
        }
    }
}
