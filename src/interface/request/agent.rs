//! A verb's tool, derived from its request: the parameters an agent gives, and an agent's
//! arguments checked by clap as the command line they stand for.

use clap::{ArgAction, Command};
use serde_json::{Map, Value};

use crate::interface::request::verb::Request;

/// What kind of value a parameter takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A string.
    Text,
    /// A boolean, false when left out (a command-line flag).
    Flag,
    /// An array of strings (a repeatable option, or the trailing arguments).
    Texts,
    /// One of these strings.
    Choice(Vec<String>),
}

/// One parameter of an agent's call, derived from a command-line option.
#[derive(Debug, Clone)]
pub struct Param {
    /// Its name in `arguments`.
    pub name: String,
    /// The kind of value it takes.
    pub kind: Kind,
    /// What it does: the option's help, with options named as parameters.
    pub description: String,
    /// Whether a call must give it.
    pub required: bool,
    /// The value taken when it is left out, if the option has one.
    pub default: Option<String>,
    /// What in the command line it stands for.
    stands_for: StandsFor,
}

/// What in the command line a parameter stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
enum StandsFor {
    /// The long option.
    Long(String),
    /// The trailing arguments.
    Trailing,
    /// Nothing: the tool's own.
    Nothing,
}

/// The verb's arguments as clap has them, without the environment (an agent's call says all
/// it asks) and without `--help`.
pub fn command<R: Request>() -> Command {
    R::augment_args(Command::new(R::VERB))
        .disable_help_flag(true)
        .mut_args(|arg| arg.env(None))
}

/// The name an agent gives the option of this clap id.
pub fn agent_name(id: &str) -> String {
    match id {
        "session" => "session_id".to_string(),
        other => other.to_string(),
    }
}

/// The parameters of the verb's tool: every option but those not for agents, in declared order.
pub fn agent_params<R: Request>() -> Vec<Param> {
    params_of::<R>(&command::<R>())
}

/// The parameters of `cmd`, `R`'s command.
fn params_of<R: Request>(cmd: &Command) -> Vec<Param> {
    let renames: Vec<(String, String)> = cmd
        .get_arguments()
        .filter_map(|a| Some((a.get_long()?.to_string(), agent_name(a.get_id().as_str()))))
        .collect();
    cmd.get_arguments()
        .filter(|a| !R::NOT_FOR_AGENTS.contains(&a.get_id().as_str()))
        .map(|arg| Param {
            name: agent_name(arg.get_id().as_str()),
            kind: kind_of(arg),
            description: described::<R>(arg, &renames),
            required: arg.is_required_set(),
            default: arg
                .get_default_values()
                .first()
                .map(|v| v.to_string_lossy().into_owned()),
            stands_for: match arg.get_long() {
                Some(long) => StandsFor::Long(long.to_string()),
                None => StandsFor::Trailing,
            },
        })
        .chain(R::AGENT_ONLY.iter().map(|only| Param {
            name: only.name.to_string(),
            kind: if only.flag { Kind::Flag } else { Kind::Text },
            description: only.description.to_string(),
            required: false,
            default: None,
            stands_for: StandsFor::Nothing,
        }))
        .collect()
}

fn kind_of(arg: &clap::Arg) -> Kind {
    match arg.get_action() {
        ArgAction::SetTrue => Kind::Flag,
        ArgAction::Append => Kind::Texts,
        _ => match choices(arg) {
            values if values.is_empty() => Kind::Text,
            values => Kind::Choice(values),
        },
    }
}

/// The values the option takes, when it names them (hidden ones left out).
pub(crate) fn choices(arg: &clap::Arg) -> Vec<String> {
    (arg.get_possible_values().iter())
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name().to_string())
        .collect()
}

/// The option's whole help on one line, and its note for agents, with `--long` options named
/// as parameters.
fn described<R: Request>(arg: &clap::Arg, renames: &[(String, String)]) -> String {
    let help = arg.get_long_help().or(arg.get_help());
    let help = help.map(|h| h.to_string()).unwrap_or_default();
    // One line: each paragraph a sentence.
    let paragraphs: Vec<String> = help
        .split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|p| !p.is_empty())
        .collect();
    let mut text = match paragraphs.len() {
        1 => paragraphs[0].clone(),
        _ => paragraphs
            .iter()
            .map(|p| match p.ends_with('.') {
                true => p.clone(),
                false => format!("{p}."),
            })
            .collect::<Vec<_>>()
            .join(" "),
    };
    let id = arg.get_id().as_str();
    if let Some((_, note)) = R::AGENT_NOTES.iter().find(|(name, _)| *name == id) {
        text.push(' ');
        text.push_str(note);
    }
    named_as_params(&text, renames)
}

/// `text` with each `--long` of `renames` written as its parameter's name.
pub fn named_as_params(text: &str, renames: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("--") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let word_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(after.len());
        let word = &after[..word_len];
        match renames.iter().find(|(long, _)| long == word) {
            Some((_, name)) if !word.is_empty() => {
                out.push_str(name);
                rest = skip_value_name(&after[word_len..]);
            }
            _ => {
                out.push_str("--");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// After an option clap names in an error (`'--timeout <DUR>'`): past its value's name.
fn skip_value_name(text: &str) -> &str {
    (text.strip_prefix(" <"))
        .and_then(|t| t.find('>').map(|end| &t[end + 1..]))
        .unwrap_or(text)
}

/// An agent's arguments, checked exactly as the command line checks the options they stand
/// for. Null, `false` and `[]` are left out. The error is the sentence to give the agent.
pub fn parse_agent<R: Request>(args: &Map<String, Value>) -> Result<R, String> {
    let cmd = command::<R>();
    let params = params_of::<R>(&cmd);
    if let Some(unknown) = args.keys().find(|k| !params.iter().any(|p| &p.name == *k)) {
        return Err(format!("unknown argument {unknown:?}"));
    }
    let mut argv = vec![R::VERB.to_string()];
    let mut trailing = Vec::new();
    for param in &params {
        if let Some(value) = args.get(&param.name) {
            for word in words(param, value)? {
                match &param.stands_for {
                    StandsFor::Long(long) if param.kind == Kind::Flag => {
                        argv.push(format!("--{long}"))
                    }
                    StandsFor::Long(long) => argv.push(format!("--{long}={word}")),
                    StandsFor::Trailing => trailing.push(word),
                    StandsFor::Nothing => {}
                }
            }
        }
    }
    if !trailing.is_empty() {
        argv.push("--".into());
        argv.extend(trailing);
    }
    let matches = cmd
        .try_get_matches_from(argv)
        .map_err(|e| clap_sentence(&e, &params))?;
    R::from_arg_matches(&matches).map_err(|e| clap_sentence(&e, &params))
}

/// The values one argument gives: a flag's one word when true, a text's one, a list's each.
fn words(param: &Param, value: &Value) -> Result<Vec<String>, String> {
    let name = &param.name;
    match (&param.kind, value) {
        (_, Value::Null) => Ok(Vec::new()),
        (Kind::Flag, Value::Bool(on)) => Ok(on.then(String::new).into_iter().collect()),
        (Kind::Flag, _) => Err(format!("{name}: expected a boolean")),
        (Kind::Text | Kind::Choice(_), Value::String(text)) => Ok(vec![text.clone()]),
        (Kind::Text | Kind::Choice(_), _) => Err(format!("{name}: expected a string")),
        (Kind::Texts, Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| format!("{name}: expected an array of strings")),
        (Kind::Texts, _) => Err(format!("{name}: expected an array of strings")),
    }
}

/// A sentence of the command line's about `R`'s options, with them named as parameters.
pub fn agent_sentence<R: Request>(text: &str) -> String {
    named_as_params(text, &renames(&agent_params::<R>()))
}

/// Each long option of `params` and its parameter's name.
fn renames(params: &[Param]) -> Vec<(String, String)> {
    params
        .iter()
        .filter_map(|p| match &p.stands_for {
            StandsFor::Long(long) => Some((long.clone(), p.name.clone())),
            _ => None,
        })
        .collect()
}

/// Clap's complaint in one line, options named as the agent's parameters.
/// Its first paragraph (a list of missing arguments goes on the lines after the first), and
/// the value the agent gave kept as given.
fn clap_sentence(err: &clap::Error, params: &[Param]) -> String {
    let rendered = err.render().to_string();
    let sentence: Vec<&str> = rendered
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .map(str::trim)
        .collect();
    let sentence = sentence.join(" ");
    let sentence = sentence.strip_prefix("error: ").unwrap_or(&sentence);
    let given = match err.get(clap::error::ContextKind::InvalidValue) {
        Some(clap::error::ContextValue::String(value)) => Some(format!("'{value}'")),
        _ => None,
    };
    match given.filter(|quoted| sentence.contains(quoted.as_str())) {
        Some(quoted) => sentence
            .split(quoted.as_str())
            .map(|part| named_as_params(part, &renames(params)))
            .collect::<Vec<_>>()
            .join(&quoted),
        None => named_as_params(sentence, &renames(params)),
    }
}

/// Whether the call gave the argument at all (even `false` or `[]`; not null).
pub fn given_at_all(args: &Map<String, Value>, name: &str) -> bool {
    args.get(name).is_some_and(|v| !v.is_null())
}

/// A tool's own flag, as [`parse_agent`] checked it.
pub fn agent_flag(args: &Map<String, Value>, name: &str) -> bool {
    args.get(name).and_then(Value::as_bool).unwrap_or(false)
}

/// A tool's own string, as [`parse_agent`] checked it.
pub fn agent_text(args: &Map<String, Value>, name: &str) -> Option<String> {
    args.get(name).and_then(Value::as_str).map(str::to_string)
}
