//! The tools: one per command, each one call of the library, its result the JSON document the
//! command prints with `--json` (with its `schema`), or the error document when a3s-iso refused
//! or failed.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::base::error::Error;
use crate::context::Context;
use crate::interface::request::{Kind, Param};
use crate::mcp::args::{self, Discarding};
use crate::mcp::grants::{Grants, Reach};
use crate::mcp::place::Place;
use crate::mcp::protocol::RpcError;
pub use crate::mcp::tool::Tool;

/// The most of a command's output, or of a patch, a result carries (its end, for output).
const SHOWN_BYTES: u64 = 64 * 1024;

impl Tool {
    /// Its parameters: its command's options an agent may set, and its own.
    fn params(self) -> Vec<Param> {
        use crate::interface::request::*;
        match self {
            Tool::Bind => agent_params::<bind::BindArgs>(),
            Tool::Run => agent_params::<run::RunArgs>(),
            Tool::Diff => agent_params::<diff::DiffArgs>(),
            Tool::Show => agent_params::<show::ShowArgs>(),
            Tool::List => agent_params::<list::ListArgs>(),
            Tool::Overlaps => agent_params::<overlaps::OverlapsArgs>(),
            Tool::Capture => agent_params::<capture::CaptureArgs>(),
            Tool::Discard => agent_params::<discard::DiscardArgs>(),
            Tool::Promote => agent_params::<promote::PromoteArgs>(),
            Tool::Land => agent_params::<land::LandArgs>(),
        }
    }

    fn description(self) -> &'static str {
        match self {
            Tool::Bind => {
                "Create (or reuse) a session's isolation: a detached git worktree next to the \
                 repository, where an agent's work stays until it is promoted. Returns the \
                 a3s-iso.bind.v1 document (worktree, bound_revision, owner, ...)."
            }
            Tool::Run => {
                "Run a command inside a session's isolation (sandboxed: no network, writes only \
                 inside the isolation) and record what it changed. Returns the a3s-iso.run.v1 \
                 document (state, exit_code, change_set, ...), then the command's output."
            }
            Tool::Diff => {
                "Show the change set a promote would apply now: its files with lines added and \
                 removed (the a3s-iso.diff.v1 document), and with patch the patch itself."
            }
            Tool::Show => {
                "Show one session in full: its isolation, owner, runs and promotions (the \
                 a3s-iso.show.v1 document)."
            }
            Tool::List => {
                "List the sessions of the repository with their state, owner liveness and \
                 whether the source's HEAD moved (the a3s-iso.list.v1 document)."
            }
            Tool::Overlaps => {
                "Predict which live sessions' work would conflict with each other, and where, \
                 without touching a tree (the a3s-iso.overlaps.v1 document)."
            }
            Tool::Capture => {
                "Snapshot a session into a pinned tree and return its change-set document \
                 (schema a3s.code.agent-change-set.v1), which promote can take."
            }
            Tool::Discard => {
                "Remove a session's isolation, keeping its record and evidence (purge drops \
                 those too); never touches the source (the a3s-iso.discard.v1 document)."
            }
            Tool::Promote => {
                "Apply a session's (or a change-set document's) change set to the source \
                 checkout, exactly once (the a3s-iso.promote.v1 document: outcome applied, \
                 idempotent, conflict with a reason, ...)."
            }
            Tool::Land => {
                "Land a queue of sessions in order: each rebased onto the source's HEAD, tested \
                 (test), and promoted as one commit; exactly once (the a3s-iso.land.v1 document)."
            }
        }
    }

    /// What the tool does to the world, as MCP's hints say it.
    fn annotations(self) -> Value {
        let read_only = matches!(self, Tool::Diff | Tool::Show | Tool::List | Tool::Overlaps);
        let mut hints = json!({ "readOnlyHint": read_only });
        if !read_only {
            hints["destructiveHint"] = json!(self == Tool::Discard);
            hints["idempotentHint"] =
                json!(matches!(self, Tool::Bind | Tool::Discard | Tool::Promote));
        }
        // Only a run may reach past the repository (with allow_network).
        if self != Tool::Run {
            hints["openWorldHint"] = json!(false);
        }
        hints
    }

    /// The tool's entry in `tools/list` for a server granted `grants`: only the arguments it
    /// grants, each saying what the grant is.
    pub fn describe(self, grants: &Grants) -> Value {
        let offered: Vec<Param> = self
            .params()
            .into_iter()
            .filter(|p| grants.offers(Reach::of(self, &p.name)))
            .collect();
        let mut input = input_schema(&offered);
        for param in &offered {
            if let Some(granted) = grants.granted(Reach::of(self, &param.name)) {
                let text = &mut input["properties"][&param.name]["description"];
                *text = json!(format!(
                    "{} (granted: {granted})",
                    text.as_str().unwrap_or("")
                ));
            }
        }
        json!({
            "name": self.as_str(),
            "description": self.description(),
            "inputSchema": input,
            "annotations": self.annotations(),
        })
    }
}

/// A tool's `inputSchema`: an object of its parameters, nothing else.
fn input_schema(params: &[Param]) -> Value {
    let properties: Map<String, Value> = params
        .iter()
        .map(|p| (p.name.clone(), property(p)))
        .collect();
    let required: Vec<&str> = params
        .iter()
        .filter(|p| p.required)
        .map(|p| p.name.as_str())
        .collect();
    let mut schema = json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    });
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// One parameter's schema: its JSON type, its values, its default and what it does.
fn property(p: &Param) -> Value {
    let mut schema = match &p.kind {
        Kind::Text => json!({ "type": "string" }),
        Kind::Flag => json!({ "type": "boolean", "default": false }),
        Kind::Texts => json!({ "type": "array", "items": { "type": "string" } }),
        Kind::Choice(values) => json!({ "type": "string", "enum": values }),
    };
    if let (Kind::Choice(_), Some(default)) = (&p.kind, &p.default) {
        schema["default"] = json!(default);
    }
    if p.required && p.kind == Kind::Texts {
        schema["minItems"] = json!(1);
    }
    schema["description"] = json!(p.description);
    schema
}

/// A document as the command line prints it: its schema first, then its fields.
#[derive(Serialize)]
struct Document<'a, T: Serialize> {
    schema: &'a str,
    #[serde(flatten)]
    body: &'a T,
}

/// What a call of a tool gave back.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The document as the command prints it with `--json`.
    pub text: String,
    /// The same document as a value.
    pub document: Value,
    /// Whether it is the error document of a failure.
    pub failed: bool,
    /// More text after the document: a command's output, a patch.
    pub more: Option<String>,
}

impl Answer {
    /// `{"schema": schema, ...body}`, as the command line prints it.
    fn of<T: Serialize>(schema: &str, body: &T) -> Result<Answer, Error> {
        Answer::raw(&Document { schema, body })
    }

    /// A document that carries its own schema.
    fn raw<T: Serialize>(value: &T) -> Result<Answer, Error> {
        let text =
            serde_json::to_string_pretty(value).map_err(|e| Error::internal(e.to_string()))?;
        let document = serde_json::from_str(&text).map_err(|e| Error::internal(e.to_string()))?;
        Ok(Answer {
            text,
            document,
            failed: false,
            more: None,
        })
    }

    /// The error document of a failure (`a3s-iso.error.v1`).
    pub fn error(err: &Error) -> Answer {
        let body = json!({ "error": crate::interface::errors::document(err) });
        let document = Document {
            schema: "a3s-iso.error.v1",
            body: &body,
        };
        Answer {
            text: serde_json::to_string_pretty(&document).unwrap_or_default(),
            document: serde_json::to_value(&document).unwrap_or_default(),
            failed: true,
            more: None,
        }
    }
}

/// Why a call gave no document: arguments the tool does not take (a protocol error), or
/// a3s-iso's refusal or failure (an error document).
#[derive(Debug)]
pub enum CallError {
    /// The arguments are wrong; nothing was done.
    Params(RpcError),
    /// a3s-iso refused or failed.
    Failed(Error),
}

impl From<RpcError> for CallError {
    fn from(err: RpcError) -> CallError {
        CallError::Params(err)
    }
}

impl From<Error> for CallError {
    fn from(err: Error) -> CallError {
        CallError::Failed(err)
    }
}

/// A bind's options with the repository's configuration applied as `bind` applies it without a
/// terminal: an untrusted file is `config_untrusted`, a trusted one adds its copies and setup.
fn configured(
    ctx: &Context,
    mut opts: crate::ops::bind::BindOptions,
) -> crate::base::error::Result<crate::ops::bind::BindOptions> {
    let loaded = crate::services::config::load(ctx, true)?;
    loaded.require_trusted()?;
    let settings = loaded.effective(true);
    opts.setup = crate::flows::setup::Setup::configured(&settings);
    opts.copy_ignored.extend(settings.copy_ignored.value);
    opts.no_auto_sweep = !settings.sweep_auto.value;
    Ok(opts)
}

/// Calls `tool` with `args`: the library call its command makes, in `ctx`.
pub fn call(
    tool: Tool,
    ctx: &Context,
    args: &Map<String, Value>,
    place: &Place,
) -> Result<Answer, CallError> {
    Ok(match tool {
        Tool::Bind => Answer::of(
            "a3s-iso.bind.v1",
            &crate::flows::setup::bind(ctx, &configured(ctx, args::bind(args, place)?)?)?,
        )?,
        Tool::Run => run(ctx, args, place)?,
        Tool::Diff => diff(ctx, args, place)?,
        Tool::Show => Answer::of(
            "a3s-iso.show.v1",
            &crate::ops::show::show(ctx, args::session(args)?.as_deref())?,
        )?,
        Tool::List => Answer::of(
            "a3s-iso.list.v1",
            &crate::ops::list::list(ctx, args::list(args)?, false)?,
        )?,
        Tool::Overlaps => {
            args::none(args)?;
            Answer::of(
                "a3s-iso.overlaps.v1",
                &crate::services::overlaps::overlaps(ctx)?,
            )?
        }
        Tool::Capture => capture(ctx, args, place)?,
        Tool::Discard => match args::discard(args)? {
            Discarding::One(opts) => Answer::of(
                "a3s-iso.discard.v1",
                &crate::ops::discard::discard(ctx, &opts)?,
            )?,
            Discarding::All(purge) => Answer::of(
                "a3s-iso.discard-all.v1",
                &crate::ops::discard::discard_all(ctx, purge)?,
            )?,
        },
        Tool::Promote => promote(ctx, args, place)?,
        Tool::Land => Answer::of(
            "a3s-iso.land.v1",
            &crate::flows::land::land(ctx, &args::land(args)?)?,
        )?,
    })
}

/// `run`, its output kept in a file of its own unless the call named one, and returned after
/// the document (the end of it, when long): the command's stdout never reaches the protocol's
/// stream, and its stdin is `/dev/null`.
fn run(ctx: &Context, args: &Map<String, Value>, place: &Place) -> Result<Answer, CallError> {
    let (mut options, ask, named) = args::run(args, place)?;
    // The file the call named is opened now, beneath its grant, and the run appends to that
    // very file (through this process's descriptor): nothing on the way can be swapped.
    let appended = named.as_ref().map(|file| file.append()).transpose()?;
    let kept = appended.is_none().then(OutputFile::create).transpose()?;
    options.output =
        (appended.as_ref().map(descriptor_path)).or_else(|| kept.as_ref().map(|f| f.path.clone()));
    // An untrusted repository file that asks for anything of a run is refused: a tool call
    // has no terminal to approve it on. How the configuration was read leads the warnings.
    let front = crate::ops::run::FrontEnd {
        approve: &mut |_| false,
        warn: None,
    };
    let request = crate::ops::run::RunRequest { options, ask };
    let ran = crate::ops::run::run_requested(ctx, request, front);
    let output = kept.and_then(|file| file.tail());
    let mut answer = match ran {
        Ok(outcome) => Answer::of("a3s-iso.run.v1", &outcome)?,
        Err(err) => Answer::error(&err),
    };
    answer.more = output;
    Ok(answer)
}

/// `promote`, of the change-set document the call names read from the file opened beneath
/// its grant (through this process's descriptor: nothing on the way can be swapped).
fn promote(ctx: &Context, args: &Map<String, Value>, place: &Place) -> Result<Answer, CallError> {
    let (mut opts, document, artifacts) = args::promote(args, place)?;
    let opened = document.as_ref().map(|f| f.open()).transpose()?;
    opts.change_set = opened.as_ref().map(descriptor_path);
    if let Some(dir) = &artifacts {
        opts.artifacts = Some(dir.path().to_path_buf());
        let opened = crate::ops::promote::OpenedDir(std::sync::Arc::new(dir.open_dir()?));
        opts.artifacts_opened = Some(opened);
    }
    Ok(Answer::of(
        "a3s-iso.promote.v1",
        &crate::ops::promote::promote(ctx, &opts)?,
    )?)
}

/// `diff`'s document; with `patch`, the patch after it (the root's, then each nested
/// repository's after a `# nested repository` line, as the command prints it).
fn diff(ctx: &Context, args: &Map<String, Value>, place: &Place) -> Result<Answer, CallError> {
    let (mut opts, with_patch, document) = args::diff(args, place)?;
    let opened = document.as_ref().map(|file| file.open()).transpose()?;
    opts.change_set = opened.as_ref().map(descriptor_path);
    let outcome = crate::ops::diff::diff(ctx, &opts)?;
    let mut answer = Answer::of("a3s-iso.diff.v1", &outcome)?;
    if with_patch {
        let mut patch = Vec::new();
        read_shown(outcome.open_patch()?, &mut patch)?;
        for nested in &outcome.nested_change_sets {
            let header = format!(
                "# nested repository {} ({})\n",
                nested.path.shown(),
                nested.kind
            );
            patch.extend_from_slice(header.as_bytes());
            read_shown(nested.open_patch()?, &mut patch)?;
        }
        answer.more = Some(shown_head(&patch));
    }
    Ok(answer)
}

/// Appends the first [`SHOWN_BYTES`] of a patch, and a byte more when there is more.
fn read_shown(patch: impl Read, to: &mut Vec<u8>) -> Result<(), Error> {
    patch
        .take(SHOWN_BYTES + 1)
        .read_to_end(to)
        .map(drop)
        .map_err(|e| Error::io("cannot read the patch", e))
}

/// The first [`SHOWN_BYTES`] of a patch, saying so when there is more.
fn shown_head(bytes: &[u8]) -> String {
    let cut = bytes.len().min(SHOWN_BYTES as usize);
    let mut text = String::from_utf8_lossy(&bytes[..cut]).into_owned();
    if bytes.len() > cut {
        text.push_str("\n[the patch goes on: promote writes it whole to its artifacts]\n");
    }
    text
}

/// `capture`: the change-set document itself, also written to `output` when named.
fn capture(ctx: &Context, args: &Map<String, Value>, place: &Place) -> Result<Answer, CallError> {
    let (opts, output) = args::capture(args, place)?;
    let outcome = crate::ops::capture::capture(ctx, &opts)?;
    if let Some(file) = &output {
        file.write(&outcome.change_set.to_json()?)?;
    }
    Ok(Answer::raw(&outcome.change_set)?)
}

/// A path that opens the very file `file` is, whatever its name leads to now.
fn descriptor_path(file: &std::fs::File) -> PathBuf {
    use std::os::fd::AsRawFd;
    PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()))
}

/// A private file for one run's output, removed when dropped.
struct OutputFile {
    path: PathBuf,
    file: std::fs::File,
}

impl OutputFile {
    fn create() -> Result<OutputFile, Error> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = std::env::temp_dir().join(format!(
            "a3s-iso-mcp-{}.log",
            crate::base::ids::generate("out")
        ));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| Error::io(format!("cannot create {}", path.display()), e))?;
        Ok(OutputFile { path, file })
    }

    /// The end of what the command wrote ([`SHOWN_BYTES`] at most); none when it wrote nothing.
    fn tail(mut self) -> Option<String> {
        let len = self.file.metadata().ok()?.len();
        if len == 0 {
            return None;
        }
        let start = len.saturating_sub(SHOWN_BYTES);
        self.file.seek(SeekFrom::Start(start)).ok()?;
        let mut bytes = Vec::new();
        (&mut self.file)
            .take(SHOWN_BYTES)
            .read_to_end(&mut bytes)
            .ok()?;
        let text = String::from_utf8_lossy(&bytes);
        Some(match start {
            0 => text.into_owned(),
            _ => format!("[the first {start} bytes of the output are left out]\n{text}"),
        })
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use crate::interface::request::{self, Request};
    use crate::mcp::tools::*;

    /// A value of the kind a parameter takes (one it accepts, where it reads the text).
    fn sample(param: &Param) -> Value {
        match param.name.as_str() {
            "owner" => return json!("none"),
            "timeout" => return json!("1s"),
            "allow_host" => return json!(["@npm"]),
            "publish" => return json!(["3000"]),
            "allow_read" | "allow_write" => return json!(["/repo/x"]),
            "profile" => return json!("claude"),
            "env" => return json!(["A=b"]),
            "output" | "artifacts" | "change_set" | "base_dir" => return json!("/repo/x"),
            _ => {}
        }
        match &param.kind {
            Kind::Text => json!("x"),
            Kind::Flag => json!(true),
            Kind::Texts => json!(["x"]),
            Kind::Choice(values) => json!(values[0]),
        }
    }

    /// Only the arguments' check of a tool, without calling the library.
    fn check(tool: Tool, args: &Map<String, Value>, place: &Place) -> Result<(), RpcError> {
        match tool {
            Tool::Bind => args::bind(args, place).map(|_| ()),
            Tool::Run => args::run(args, place).map(|_| ()),
            Tool::Diff => args::diff(args, place).map(|_| ()),
            Tool::Show => args::session(args).map(|_| ()),
            Tool::List => args::list(args).map(|_| ()),
            Tool::Overlaps => args::none(args),
            Tool::Capture => args::capture(args, place).map(|_| ()),
            Tool::Discard => args::discard(args).map(|_| ()),
            Tool::Promote => args::promote(args, place).map(|_| ()),
            Tool::Land => args::land(args).map(|_| ()),
        }
    }

    #[test]
    fn every_schema_property_is_an_argument_the_tool_takes() {
        let place = Place {
            start_dir: PathBuf::from("/repo"),
            helper: None,
            grants: crate::mcp::grants::granting_all(),
        };
        for tool in Tool::ALL {
            let params = tool.params();
            for param in &params {
                let mut args: Map<String, Value> = params
                    .iter()
                    .filter(|p| p.required)
                    .map(|p| (p.name.clone(), sample(p)))
                    .collect();
                args.insert(param.name.clone(), sample(param));
                if let Err(e) = check(tool, &args, &place) {
                    // A rule of what goes with what may refuse it alone; never its type.
                    assert!(
                        e.message.contains(" goes with ")
                            || e.message.contains("required arguments were not provided"),
                        "{}: {}: {}",
                        tool.as_str(),
                        param.name,
                        e.message
                    );
                }
            }
            let unknown: Map<String, Value> =
                [("__probe".to_string(), json!(1))].into_iter().collect();
            assert!(check(tool, &unknown, &place).is_err(), "{}", tool.as_str());
        }
    }

    /// Each option of `R`'s command line: a parameter of its tool, or marked as not an
    /// agent's; and each mark names an option there is.
    fn options_are_parameters_or_marked<R: Request>(tool: Tool) {
        let params: Vec<String> = tool.params().into_iter().map(|p| p.name).collect();
        let ids: Vec<String> = request::command::<R>()
            .get_arguments()
            .map(|a| a.get_id().to_string())
            .collect();
        for id in &ids {
            let marked = R::NOT_FOR_AGENTS.contains(&id.as_str());
            let offered = params.contains(&request::agent_name(id));
            assert!(
                marked != offered,
                "{}: --{id} offered {offered}, marked {marked}",
                R::VERB
            );
        }
        for mark in R::NOT_FOR_AGENTS {
            assert!(
                ids.iter().any(|id| id == mark),
                "{}: no option {mark}",
                R::VERB
            );
        }
        assert_eq!(tool.as_str(), R::VERB);
    }

    #[test]
    fn every_command_line_option_is_an_agents_parameter_or_marked_as_not_an_agents() {
        use crate::interface::request::*;
        options_are_parameters_or_marked::<bind::BindArgs>(Tool::Bind);
        options_are_parameters_or_marked::<run::RunArgs>(Tool::Run);
        options_are_parameters_or_marked::<diff::DiffArgs>(Tool::Diff);
        options_are_parameters_or_marked::<show::ShowArgs>(Tool::Show);
        options_are_parameters_or_marked::<list::ListArgs>(Tool::List);
        options_are_parameters_or_marked::<overlaps::OverlapsArgs>(Tool::Overlaps);
        options_are_parameters_or_marked::<capture::CaptureArgs>(Tool::Capture);
        options_are_parameters_or_marked::<discard::DiscardArgs>(Tool::Discard);
        options_are_parameters_or_marked::<promote::PromoteArgs>(Tool::Promote);
        options_are_parameters_or_marked::<land::LandArgs>(Tool::Land);
    }

    #[test]
    fn tool_names_are_unique_and_found_by_name() {
        for tool in Tool::ALL {
            assert_eq!(Tool::named(tool.as_str()), Some(tool));
            let described = tool.describe(&crate::mcp::grants::granting_all());
            assert_eq!(described["inputSchema"]["type"], "object");
        }
        assert_eq!(Tool::named("sweep"), None);
    }
}
