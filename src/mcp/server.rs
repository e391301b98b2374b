//! The server: reads the client's messages a line at a time, answers the protocol's requests
//! at once and runs each tool call on a thread of its own (so that a long `run` does not hold
//! up a `ping` or another call), writing every response as one line.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use serde_json::{Map, Value, json};

use crate::base::error::{Error, Result};
use crate::context::{Context, SessionScope};
use crate::mcp::grants::Grants;
use crate::mcp::place::Place;
use crate::mcp::protocol::{
    self, Incoming, Method, ProtocolVersion, RpcCode, RpcError, failure, success,
};
use crate::mcp::tools::{self, Answer, CallError, Tool};

/// What the server tells a client about itself at the handshake.
const INSTRUCTIONS: &str = "a3s-iso isolates an agent's work on this git repository. bind a \
session (a detached worktree of its own, at bind's worktree), run commands in it (sandboxed: \
no network, writes only inside the isolation), review the work with diff and show, capture it \
as a change-set document. The user's checkout changes only through promote, exactly once. Each \
result is a JSON document with a schema field; a failure is an a3s-iso.error.v1 document whose \
error.code says what went wrong.";

/// How the server is set up.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The context every call starts from (its start directory is where the server acts).
    pub context: Context,
    /// What the user granted: the most any call gets (`promote` and `land`, which write to
    /// the source checkout, only with `grants.promote`).
    pub grants: Grants,
    /// The a3s-iso executable `run` re-executes as its sandbox helper (`None`: this
    /// process's own, which must then be a3s-iso).
    pub helper: Option<PathBuf>,
    /// Write no warnings to stderr.
    pub quiet: bool,
}

/// The sessions a server starts with: those its command line names, and the session of the
/// isolation it was started in, if any (its user started it there for that session).
fn scope_of(opts: &ServeOptions) -> SessionScope {
    let mut ids = opts.grants.sessions.clone();
    if let Some(inside) = opts.context.session_inside() {
        ids.push(inside);
    }
    SessionScope::new(
        ids,
        "MCP server",
        "this server acts on the sessions it bound; start it with a3s-iso mcp --session {id} \
         to let it act on this one, or with --all-sessions on every one",
    )
}

/// Serves `input`'s messages, answering on `output`, until `input` ends; then waits for the
/// calls in progress to finish. A `run` call's command gets `/dev/null` for stdin and a file
/// for its output, whatever the streams served.
pub fn serve(
    opts: ServeOptions,
    input: impl BufRead,
    output: impl Write + Send + 'static,
) -> Result<()> {
    Server::new(opts, Box::new(output)).read(input)
}

/// Serves this process's stdin and stdout. The server keeps its own copies of both and puts
/// `/dev/null` in place of stdin and stderr in place of stdout, so that nothing else in the
/// process, and no command it starts, can read the client's messages or write into the
/// stream of answers. SIGINT, SIGTERM and SIGHUP end the process once the calls in progress
/// have finished (a running command gets the signal and ends the run as cancelled).
pub fn serve_stdio(opts: ServeOptions) -> Result<()> {
    let (input, output) = take_stdio()?;
    let server = Server::new(opts, Box::new(output));
    end_on_signals(&server)?;
    server.read(BufReader::new(input))
}

/// Private copies of stdin and stdout (closed on exec); stdin becomes `/dev/null` and stdout
/// a copy of stderr.
fn take_stdio() -> Result<(File, File)> {
    use std::os::fd::AsFd;
    let failed =
        |e: rustix::io::Errno| Error::io("cannot set up the server's standard streams", e.into());
    let input = rustix::io::fcntl_dupfd_cloexec(std::io::stdin().as_fd(), 3).map_err(failed)?;
    let output = rustix::io::fcntl_dupfd_cloexec(std::io::stdout().as_fd(), 3).map_err(failed)?;
    let null = File::open("/dev/null").map_err(|e| Error::io("cannot open /dev/null", e))?;
    rustix::stdio::dup2_stdin(&null).map_err(failed)?;
    let _ = std::io::stdout().flush();
    rustix::stdio::dup2_stdout(std::io::stderr().as_fd()).map_err(failed)?;
    Ok((File::from(input), File::from(output)))
}

/// Ends the process at SIGINT, SIGTERM or SIGHUP, once no call is in progress.
fn end_on_signals(server: &Arc<Server>) -> Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .map_err(|e| Error::io("cannot install a signal handler", e))?;
    let server = Arc::clone(server);
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            server.calls.close_when_idle();
            std::process::exit(128 + signal);
        }
    });
    Ok(())
}

/// The calls in progress, and whether the server takes more.
#[derive(Default)]
struct Calls {
    state: Mutex<(usize, bool)>,
    idle: Condvar,
}

impl Calls {
    fn lock(&self) -> MutexGuard<'_, (usize, bool)> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts a call in; false once the server is closing.
    fn begin(&self) -> bool {
        let mut state = self.lock();
        if state.1 {
            return false;
        }
        state.0 += 1;
        true
    }

    fn end(&self) {
        let mut state = self.lock();
        state.0 = state.0.saturating_sub(1);
        self.idle.notify_all();
    }

    /// Takes no more calls, and waits until those in progress have answered.
    fn close_when_idle(&self) {
        let mut state = self.lock();
        state.1 = true;
        while state.0 > 0 {
            state = self.idle.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// A call counted in, counted out when dropped (also when it panicked).
struct Running(Arc<Server>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.calls.end();
    }
}

struct Server {
    opts: ServeOptions,
    place: Place,
    /// The sessions calls may act on (`None`: every one, `--all-sessions`).
    scope: Option<Arc<SessionScope>>,
    out: Mutex<Box<dyn Write + Send>>,
    version: Mutex<Option<ProtocolVersion>>,
    calls: Calls,
}

impl Server {
    fn new(opts: ServeOptions, out: Box<dyn Write + Send>) -> Arc<Server> {
        let place = Place {
            start_dir: opts.context.start_dir.clone(),
            helper: opts.helper.clone(),
            grants: opts.grants.clone(),
        };
        let scope = (!opts.grants.all_sessions).then(|| Arc::new(scope_of(&opts)));
        Arc::new(Server {
            opts,
            place,
            scope,
            out: Mutex::new(out),
            version: Mutex::new(None),
            calls: Calls::default(),
        })
    }

    fn read(self: &Arc<Self>, mut input: impl BufRead) -> Result<()> {
        let mut line = Vec::new();
        let read = loop {
            line.clear();
            match input.read_until(b'\n', &mut line) {
                Ok(0) => break Ok(()),
                Ok(_) => self.receive(&line),
                Err(e) => break Err(Error::io("cannot read the client's messages", e)),
            }
        };
        self.calls.close_when_idle();
        read
    }

    /// One line: a message or a batch of them; tool calls and batches are answered from a
    /// thread of their own.
    fn receive(self: &Arc<Self>, line: &[u8]) {
        let text = line.trim_ascii();
        if text.is_empty() {
            return;
        }
        let message: Value = match serde_json::from_slice(text) {
            Ok(message) => message,
            Err(e) => {
                let err = RpcError::new(RpcCode::ParseError, format!("not JSON: {e}"));
                return self.send(&failure(&Value::Null, &err));
            }
        };
        let calls_tool =
            message.get("method").and_then(Value::as_str) == Some(Method::ToolsCall.as_str());
        match message {
            Value::Array(batch) => self.spawn(move |server| server.answer_batch(batch)),
            message if calls_tool => self.spawn(move |server| server.answer(message)),
            message => {
                if let Some(response) = self.answer(message) {
                    self.send(&response);
                }
            }
        }
    }

    fn spawn(self: &Arc<Self>, work: impl FnOnce(&Server) -> Option<Value> + Send + 'static) {
        if !self.calls.begin() {
            return;
        }
        let running = Running(Arc::clone(self));
        std::thread::spawn(move || {
            if let Some(response) = work(&running.0) {
                running.0.send(&response);
            }
        });
    }

    fn send(&self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap_or_default();
        line.push(b'\n');
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        // A client that went away shows as the end of its messages.
        let _ = out.write_all(&line).and_then(|()| out.flush());
    }

    fn answer_batch(&self, batch: Vec<Value>) -> Option<Value> {
        if batch.is_empty() {
            let err = RpcError::new(RpcCode::InvalidRequest, "an empty batch");
            return Some(failure(&Value::Null, &err));
        }
        let answers: Vec<Value> = batch.into_iter().filter_map(|m| self.answer(m)).collect();
        (!answers.is_empty()).then_some(Value::Array(answers))
    }

    /// The response to one message; none for a notification or a response.
    fn answer(&self, message: Value) -> Option<Value> {
        match protocol::classify(message) {
            Err((id, err)) => Some(failure(&id, &err)),
            Ok(Incoming::Request { id, method, params }) => {
                Some(match self.request(&method, params) {
                    Ok(result) => success(&id, result),
                    Err(err) => failure(&id, &err),
                })
            }
            Ok(Incoming::Notification { .. } | Incoming::Response) => None,
        }
    }

    fn request(
        &self,
        method: &str,
        params: Map<String, Value>,
    ) -> std::result::Result<Value, RpcError> {
        match Method::named(method) {
            Some(Method::Initialize) => Ok(self.initialize(&params)),
            Some(Method::Ping) => Ok(json!({})),
            Some(Method::ToolsList) => Ok(self.list_tools()),
            Some(Method::ToolsCall) => self.call_tool(&params),
            None => Err(RpcError::new(
                RpcCode::MethodNotFound,
                format!("no method {method}"),
            )),
        }
    }

    fn initialize(&self, params: &Map<String, Value>) -> Value {
        let requested = params.get("protocolVersion").and_then(Value::as_str);
        let version = ProtocolVersion::negotiate(requested);
        *self.version.lock().unwrap_or_else(|e| e.into_inner()) = Some(version);
        json!({
            "protocolVersion": version.as_str(),
            "capabilities": { "tools": { "listChanged": false } },
            "serverInfo": { "name": "a3s-iso", "version": env!("CARGO_PKG_VERSION") },
            "instructions": INSTRUCTIONS,
        })
    }

    fn list_tools(&self) -> Value {
        let grants = &self.opts.grants;
        let tools: Vec<Value> = Tool::ALL
            .into_iter()
            .filter(|t| grants.offers_tool(*t))
            .map(|t| t.describe(grants))
            .collect();
        json!({ "tools": tools })
    }

    fn call_tool(&self, params: &Map<String, Value>) -> std::result::Result<Value, RpcError> {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::params("tools/call names its tool in \"name\""))?;
        let tool = Tool::named(name).ok_or_else(|| RpcError::params(format!("no tool {name}")))?;
        let args = match params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(args)) => args.clone(),
            Some(_) => return Err(RpcError::params("\"arguments\" is an object")),
        };
        // Before anything runs: a tool or an argument the server was not granted.
        self.opts.grants.check_reach(tool, &args)?;
        // Each call is one command: nothing the last one memoised about git carries over.
        let mut ctx = self.opts.context.clone();
        ctx.git = ctx.git.for_one_command();
        if let Some(scope) = &self.scope {
            ctx = ctx.scoped(Arc::clone(scope));
        }
        let called = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            tools::call(tool, &ctx, &args, &self.place)
        }));
        let answer = match called {
            Ok(Ok(answer)) => answer,
            Ok(Err(CallError::Params(err))) => return Err(err),
            Ok(Err(CallError::Failed(err))) => Answer::error(&err),
            Err(_) => Answer::error(&Error::internal(format!("the {name} tool panicked"))),
        };
        if !self.opts.quiet {
            for notice in ctx.take_notices() {
                eprintln!("a3s-iso: warning: {notice}");
            }
        }
        Ok(self.result(answer))
    }

    /// A tool's result: the document as text (and, from 2025-06-18 on, as structured
    /// content), then what follows it; `isError` for an error document.
    fn result(&self, answer: Answer) -> Value {
        let mut content = vec![json!({ "type": "text", "text": answer.text })];
        if let Some(more) = answer.more {
            content.push(json!({ "type": "text", "text": more }));
        }
        let mut result = json!({ "content": content, "isError": answer.failed });
        let version = self.version.lock().unwrap_or_else(|e| e.into_inner());
        if version
            .unwrap_or(ProtocolVersion::LATEST)
            .structured_content()
        {
            result["structuredContent"] = answer.document;
        }
        result
    }
}
