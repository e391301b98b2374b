//! The docs' table of each verb's options, derived from its request: what the command line
//! takes, and what of it a tool call may set (`docs/options.md`).

use crate::interface::request::agent::{Kind, agent_name, agent_params, choices, command};
use crate::interface::request::bind::BindArgs;
use crate::interface::request::capture::CaptureArgs;
use crate::interface::request::diff::DiffArgs;
use crate::interface::request::discard::DiscardArgs;
use crate::interface::request::land::LandArgs;
use crate::interface::request::list::ListArgs;
use crate::interface::request::overlaps::OverlapsArgs;
use crate::interface::request::promote::PromoteArgs;
use crate::interface::request::run::RunArgs;
use crate::interface::request::show::ShowArgs;
use crate::interface::request::verb::Request;

/// `docs/options.md`: a section per verb that has a tool, in the tools' order.
pub fn options_markdown() -> String {
    let mut out = String::from(
        "# Options and tool arguments\n\n\
         Generated from the commands' declarations (`a3s-iso generate-assets`): each option of a \
         command that the MCP server offers as a tool, the argument a tool call gives for it, \
         and what it does. An option marked \"not an agent's\" is the command line's alone; a \
         call that gives it is refused as an unknown argument. Whether a granted argument is \
         offered at all depends on the server's grants ([mcp.md](mcp.md)).\n",
    );
    for section in [
        section::<BindArgs>(),
        section::<RunArgs>(),
        section::<DiffArgs>(),
        section::<ShowArgs>(),
        section::<ListArgs>(),
        section::<OverlapsArgs>(),
        section::<CaptureArgs>(),
        section::<DiscardArgs>(),
        section::<PromoteArgs>(),
        section::<LandArgs>(),
    ] {
        out.push('\n');
        out.push_str(&section);
    }
    out
}

/// One verb's table: its options, then the arguments only its tool has.
fn section<R: Request>() -> String {
    let mut out = format!(
        "## `{}`\n\n| option | tool argument | what it does |\n| --- | --- | --- |\n",
        R::VERB
    );
    let cmd = command::<R>();
    for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
        let id = arg.get_id().as_str();
        let taken = match R::NOT_FOR_AGENTS.contains(&id) {
            true => "not an agent's".to_string(),
            false => format!("`{}`", agent_name(id)),
        };
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        let help = format!("{help}{}", values(arg));
        out.push_str(&format!(
            "| {} | {taken} | {} |\n",
            cell(&spelled(arg)),
            cell(&help)
        ));
    }
    let own = agent_params::<R>();
    for param in own
        .iter()
        .filter(|p| R::AGENT_ONLY.iter().any(|o| o.name == p.name))
    {
        let kind = match param.kind {
            Kind::Flag => "true or false",
            _ => "a string",
        };
        out.push_str(&format!(
            "| (the tool's own: {kind}) | `{}` | {} |\n",
            param.name,
            cell(&param.description)
        ));
    }
    out
}

/// What values an option takes, and which it takes when left out (` (patch, branch; default:
/// patch)`); nothing for a flag.
fn values(arg: &clap::Arg) -> String {
    if matches!(arg.get_action(), clap::ArgAction::SetTrue) {
        return String::new();
    }
    let choices = choices(arg);
    let mut parts: Vec<String> = Vec::new();
    if !choices.is_empty() {
        parts.push(choices.join(", "));
    }
    if let Some(default) = arg.get_default_values().first() {
        parts.push(format!("default: {}", default.to_string_lossy()));
    }
    match parts.is_empty() {
        true => String::new(),
        false => format!(" ({})", parts.join("; ")),
    }
}

/// How the command line spells the option: `-s, --session <ID>`, `<CMD>...`.
fn spelled(arg: &clap::Arg) -> String {
    let value = arg
        .get_value_names()
        .and_then(|names| names.first())
        .map(|name| format!(" <{name}>"))
        .filter(|_| arg.get_num_args().is_none_or(|n| n.takes_values()));
    let value = match arg.get_action() {
        clap::ArgAction::SetTrue => String::new(),
        _ => value.unwrap_or_else(|| format!(" <{}>", arg.get_id().as_str().to_uppercase())),
    };
    let mut names = Vec::new();
    if let Some(short) = arg.get_short() {
        names.push(format!("-{short}"));
    }
    if let Some(long) = arg.get_long() {
        names.push(format!("--{long}"));
    }
    match names.is_empty() {
        true => format!("`{}...`", value.trim_start()),
        false => format!("`{}{value}`", names.join(", ")),
    }
}

/// Text for a table cell: one line, its bars escaped.
fn cell(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}
