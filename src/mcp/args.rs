//! A tool call's `arguments`, checked as the command line checks its options (types, what
//! goes together, what needs what), and turned into the library's options. Whatever is wrong
//! here is an invalid-params error of the protocol, as a bad command line is a usage error:
//! nothing has been done.

use std::ffi::OsString;
use std::path::PathBuf;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::flows::land::{LandMode, LandOptions};
use crate::mcp::grants::{self, Grants};
pub use crate::mcp::place::Place;
use crate::mcp::protocol::RpcError;
use crate::mcp::tool::Tool;
use crate::ops::bind::{BindOptions, OwnerChoice};
use crate::ops::capture::CaptureOptions;
use crate::ops::diff::DiffOptions;
use crate::ops::discard::DiscardOptions;
use crate::ops::promote::{Mode, PromoteOptions};
use crate::ops::run::RunOptions;
use crate::ops::run::request::SandboxAsk;

/// The arguments as `T`; a `null` is taken for a left-out argument.
fn parse<T: DeserializeOwned>(args: &Map<String, Value>) -> Result<T, RpcError> {
    let given: Map<String, Value> = args
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    serde_json::from_value(Value::Object(given)).map_err(|e| RpcError::params(e.to_string()))
}

/// Whether an argument was given a value that does something (not null, false or `[]`).
fn given(args: &Map<String, Value>, key: &str) -> bool {
    match args.get(key) {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::Array(items)) => !items.is_empty(),
        Some(_) => true,
    }
}

/// Refuses arguments that do not go together, as the command line's conflicts do.
fn apart(args: &Map<String, Value>, pairs: &[(&str, &str)]) -> Result<(), RpcError> {
    match pairs.iter().find(|(a, b)| given(args, a) && given(args, b)) {
        Some((a, b)) => Err(RpcError::params(format!("{a} cannot be used with {b}"))),
        None => Ok(()),
    }
}

/// Refuses `key` without one of `needs`.
fn needs(args: &Map<String, Value>, key: &str, needs: &[&str]) -> Result<(), RpcError> {
    if given(args, key) && !needs.iter().any(|n| given(args, n)) {
        return Err(RpcError::params(format!(
            "{key} goes with {}",
            needs.join(" or ")
        )));
    }
    Ok(())
}

/// The arguments of `bind`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct BindArgs {
    session_id: Option<String>,
    allow_dirty: bool,
    carry_wip: bool,
    submodules: bool,
    read_only: bool,
    base_dir: Option<PathBuf>,
    resume: bool,
    owner: Option<String>,
    copy_ignored: Vec<String>,
}

/// `bind`'s options.
pub(crate) fn bind(args: &Map<String, Value>, place: &Place) -> Result<BindOptions, RpcError> {
    let parsed: BindArgs = parse(args)?;
    apart(
        args,
        &[
            ("carry_wip", "allow_dirty"),
            ("carry_wip", "read_only"),
            ("carry_wip", "resume"),
            ("submodules", "read_only"),
            ("resume", "read_only"),
            ("copy_ignored", "read_only"),
        ],
    )?;
    needs(args, "resume", &["session_id"])?;
    let owner = match &parsed.owner {
        None => OwnerChoice::default(),
        Some(text) => OwnerChoice::parse(text)
            .ok_or_else(|| RpcError::params(format!("owner {text:?}: expected none or pid:N")))?,
    };
    Ok(BindOptions {
        session_id: parsed.session_id,
        allow_dirty: parsed.allow_dirty,
        read_only: parsed.read_only,
        base_dir: parsed
            .base_dir
            .map(|dir| base_dir(place.path(dir), &place.grants))
            .transpose()?,
        owner,
        resume: parsed.resume,
        carry_wip: parsed.carry_wip,
        submodules: parsed.submodules,
        copy_ignored: parsed.copy_ignored,
        setup: Default::default(),
        created_by: None,
        no_auto_sweep: false,
    })
}

/// A directory for a new isolation: beneath an `--allow-base-dir` directory.
fn base_dir(dir: PathBuf, grants: &Grants) -> Result<PathBuf, RpcError> {
    if grants::beneath(&dir, &grants.base_dir) {
        return Ok(dir);
    }
    let why = format!(
        "{} is not beneath a directory granted for isolations ({})",
        dir.display(),
        grants::shown(&grants.base_dir)
    );
    Err(grants::not_granted(
        Tool::Bind,
        "base_dir",
        why,
        "--allow-base-dir",
    ))
}

/// The arguments of `run`. What narrows a grant is an `Option`: left out, the server's grant
/// applies whole; given (even `[]` or `false`), it replaces it and must lie within it.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct RunArgs {
    session_id: Option<String>,
    command: Vec<String>,
    run_id: Option<String>,
    timeout: Option<String>,
    allow_network: Option<bool>,
    allow_host: Option<Vec<String>>,
    publish: Option<Vec<String>>,
    allow_write: Option<Vec<PathBuf>>,
    allow_read: Option<Vec<PathBuf>>,
    profile: Option<String>,
    ignore_config: bool,
    env: Option<Vec<String>>,
    no_sandbox: bool,
    release_identity: Option<String>,
    output: Option<PathBuf>,
}

/// `run`'s options, as the command line builds them from the server's grants narrowed by the
/// call: the release identity of `A3S_ISO_RELEASE_IDENTITY` when none is given, the command's
/// stdout sent to stderr as with `--json`; `output` the file the call named (beneath an
/// `--allow-output` directory), if any (the tool names one otherwise). The sandbox is what
/// the call may ask, for [`crate::ops::run::request::configure`] to complete.
pub(crate) fn run(
    args: &Map<String, Value>,
    place: &Place,
) -> Result<(RunOptions, SandboxAsk), RpcError> {
    let parsed: RunArgs = parse(args)?;
    apart(
        args,
        &[
            ("no_sandbox", "allow_network"),
            ("no_sandbox", "allow_write"),
            ("no_sandbox", "allow_read"),
            ("no_sandbox", "allow_host"),
            ("no_sandbox", "publish"),
            ("no_sandbox", "profile"),
            ("allow_network", "allow_host"),
            ("allow_network", "publish"),
        ],
    )?;
    if parsed.command.is_empty() || parsed.command[0].is_empty() {
        return Err(RpcError::params(
            "command: the command to run and its arguments, as an array of strings",
        ));
    }
    let narrowed = crate::mcp::narrow::run(&parsed_grant_asks(&parsed), place)?;
    let output = parsed
        .output
        .map(|p| grants::output_path(Tool::Run, "output", place.path(p), &place.grants))
        .transpose()?;
    let ask = SandboxAsk {
        no_sandbox: parsed.no_sandbox,
        ignore_config: parsed.ignore_config,
        allow_network: narrowed.allow_network,
        allow_hosts: narrowed.allow_hosts,
        publish: narrowed.publish,
        allow_write: narrowed.allow_write,
        allow_read: narrowed.allow_read,
        profile: narrowed.profile,
        cache: place.grants.run.cache,
    };
    let opts = RunOptions {
        session_id: parsed.session_id,
        run_id: parsed.run_id,
        timeout: narrowed.timeout,
        command: parsed.command.into_iter().map(OsString::from).collect(),
        stdout_to_stderr: true,
        sandbox: None,
        release_identity: release_identity(parsed.release_identity),
        helper: place.helper.clone(),
        env: narrowed.env,
        output,
        on_published: None,
        // `land`'s own: an agent's run keeps what it writes.
        throwaway: None,
    };
    Ok((opts, ask))
}

/// What of a run's arguments narrows the server's grants.
fn parsed_grant_asks(parsed: &RunArgs) -> crate::mcp::narrow::Asked {
    crate::mcp::narrow::Asked {
        allow_network: parsed.allow_network,
        allow_host: parsed.allow_host.clone(),
        publish: parsed.publish.clone(),
        allow_write: parsed.allow_write.clone(),
        allow_read: parsed.allow_read.clone(),
        profile: parsed.profile.clone(),
        env: parsed.env.clone(),
        timeout: parsed.timeout.clone(),
    }
}

/// The given release identity, else `A3S_ISO_RELEASE_IDENTITY`'s (as the command line reads it).
fn release_identity(given: Option<String>) -> Option<String> {
    given.or_else(|| {
        std::env::var("A3S_ISO_RELEASE_IDENTITY")
            .ok()
            .filter(|v| !v.is_empty())
    })
}

/// The arguments of `diff`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct DiffArgs {
    session_id: Option<String>,
    change_set: Option<PathBuf>,
    digest: Option<String>,
    cumulative: bool,
    patch: bool,
}

/// `diff`'s options, and whether the patch goes with the document.
pub(crate) fn diff(
    args: &Map<String, Value>,
    place: &Place,
) -> Result<(DiffOptions, bool), RpcError> {
    let parsed: DiffArgs = parse(args)?;
    apart(
        args,
        &[
            ("change_set", "digest"),
            ("change_set", "session_id"),
            ("digest", "session_id"),
            ("cumulative", "change_set"),
            ("cumulative", "digest"),
        ],
    )?;
    let options = DiffOptions {
        session_id: parsed.session_id,
        change_set: parsed
            .change_set
            .map(|p| grants::input_path(Tool::Diff, "change_set", place.path(p), &place.grants))
            .transpose()?,
        digest: parsed.digest,
        cumulative: parsed.cumulative,
    };
    Ok((options, parsed.patch))
}

/// The arguments of the tools that take a session and nothing else (`show`).
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct SessionArgs {
    session_id: Option<String>,
}

/// `show`'s session.
pub(crate) fn session(args: &Map<String, Value>) -> Result<Option<String>, RpcError> {
    Ok(parse::<SessionArgs>(args)?.session_id)
}

/// The arguments of `list`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct ListArgs {
    all: bool,
}

/// `list`'s `all`.
pub(crate) fn list(args: &Map<String, Value>) -> Result<bool, RpcError> {
    Ok(parse::<ListArgs>(args)?.all)
}

/// The arguments of `overlaps`: none.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct NoArgs {}

/// Checks that `overlaps` was given no arguments.
pub(crate) fn none(args: &Map<String, Value>) -> Result<(), RpcError> {
    parse::<NoArgs>(args).map(|_| ())
}

/// The arguments of `capture`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct CaptureArgs {
    session_id: Option<String>,
    run_id: Option<String>,
    output: Option<PathBuf>,
    release_identity: Option<String>,
}

/// `capture`'s options, and the file to write the document to, if any.
pub(crate) fn capture(
    args: &Map<String, Value>,
    place: &Place,
) -> Result<(CaptureOptions, Option<PathBuf>), RpcError> {
    let parsed: CaptureArgs = parse(args)?;
    let options = CaptureOptions {
        session_id: parsed.session_id,
        run_id: parsed.run_id,
        release_identity: release_identity(parsed.release_identity),
    };
    let output = parsed
        .output
        .map(|p| grants::output_path(Tool::Capture, "output", place.path(p), &place.grants))
        .transpose()?;
    Ok((options, output))
}

/// The arguments of `discard`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct DiscardArgs {
    session_id: Option<String>,
    all: bool,
    purge: bool,
}

/// What `discard` is asked: one session, or every session (`all`, with `purge`).
pub(crate) enum Discarding {
    /// One session.
    One(DiscardOptions),
    /// Every session of the checkout; whether to purge them.
    All(bool),
}

/// `discard`'s options.
pub(crate) fn discard(args: &Map<String, Value>) -> Result<Discarding, RpcError> {
    let parsed: DiscardArgs = parse(args)?;
    apart(args, &[("all", "session_id")])?;
    Ok(match parsed.all {
        true => Discarding::All(parsed.purge),
        false => Discarding::One(DiscardOptions {
            session_id: parsed.session_id,
            purge: parsed.purge,
        }),
    })
}

/// The arguments of `promote`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct PromoteArgs {
    session_id: Option<String>,
    change_set: Option<PathBuf>,
    mode: Mode,
    no_apply: bool,
    artifacts: Option<PathBuf>,
    note: Option<String>,
    rebase: bool,
    reapply: bool,
    digest: Option<String>,
    message: Option<String>,
    onto_head: bool,
}

/// `promote`'s options, with the command line's rules of what goes together.
pub(crate) fn promote(
    args: &Map<String, Value>,
    place: &Place,
) -> Result<PromoteOptions, RpcError> {
    let parsed: PromoteArgs = parse(args)?;
    apart(
        args,
        &[
            ("change_set", "session_id"),
            ("change_set", "digest"),
            ("note", "change_set"),
            ("note", "no_apply"),
            ("rebase", "change_set"),
            ("rebase", "note"),
            ("reapply", "note"),
            ("reapply", "rebase"),
            ("reapply", "no_apply"),
        ],
    )?;
    needs(args, "onto_head", &["change_set"])?;
    needs(args, "digest", &["reapply"])?;
    if parsed.message.is_some() && parsed.mode != Mode::Branch {
        return Err(RpcError::params(
            "message names a commit: it goes with mode branch",
        ));
    }
    Ok(PromoteOptions {
        session_id: parsed.session_id,
        change_set: parsed
            .change_set
            .map(|p| grants::input_path(Tool::Promote, "change_set", place.path(p), &place.grants))
            .transpose()?,
        mode: parsed.mode,
        no_apply: parsed.no_apply,
        artifacts: parsed
            .artifacts
            .map(|p| grants::output_path(Tool::Promote, "artifacts", place.path(p), &place.grants))
            .transpose()?,
        note: parsed.note,
        onto_head: parsed.onto_head,
        from: None,
        rebase: parsed.rebase,
        reapply: parsed.reapply,
        digest: parsed.digest,
        squash: false,
        message: parsed.message,
    })
}

/// The arguments of `land`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct LandArgs {
    sessions: Vec<String>,
    all: bool,
    test: Option<String>,
    mode: LandMode,
    message: Option<String>,
    keep_going: bool,
    no_sandbox: bool,
    keep: bool,
}

/// `land`'s options.
pub(crate) fn land(args: &Map<String, Value>) -> Result<LandOptions, RpcError> {
    let parsed: LandArgs = parse(args)?;
    apart(args, &[("sessions", "all")])?;
    needs(args, "no_sandbox", &["test"])?;
    Ok(LandOptions {
        sessions: parsed.sessions,
        all: parsed.all,
        test: parsed.test,
        mode: parsed.mode,
        message: parsed.message,
        keep_going: parsed.keep_going,
        no_sandbox: parsed.no_sandbox,
        keep: parsed.keep,
        abort: false,
    })
}

#[cfg(test)]
mod tests {
    use crate::mcp::args::*;
    use serde_json::json;
    use std::path::Path;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    fn place() -> Place {
        Place {
            start_dir: PathBuf::from("/repo"),
            helper: Some(PathBuf::from("/bin/a3s-iso")),
            grants: crate::mcp::grants::granting_all(),
        }
    }

    #[test]
    fn run_arguments_become_run_options() {
        let args = object(json!({
            "session_id": "t1",
            "command": ["sh", "-c", "echo hi > hi.txt"],
            "timeout": "90s",
            "allow_write": ["cache"],
            "allow_host": ["@npm"],
            "publish": ["3000"],
            "profile": "claude",
            "env": ["NODE_*", "A=b"],
            "output": "out.log",
            "release_identity": null,
        }));
        let (opts, ask) = run(&args, &place()).unwrap();
        assert_eq!(opts.session_id.as_deref(), Some("t1"));
        assert_eq!(opts.command.len(), 3);
        assert_eq!(opts.timeout, Some(std::time::Duration::from_secs(90)));
        assert!(opts.stdout_to_stderr);
        assert_eq!(opts.helper.as_deref(), Some(Path::new("/bin/a3s-iso")));
        assert_eq!(ask.allow_write[0], Path::new("/repo/cache"));
        assert_eq!(ask.allow_hosts, ["@npm"]);
        assert_eq!(ask.publish, ["3000"]);
        assert_eq!(ask.profile.as_deref(), Some("claude"));
        assert_eq!(opts.env.len(), 2);
        assert_eq!(opts.output.as_deref(), Some(Path::new("/repo/out.log")));
    }

    #[test]
    fn bad_arguments_are_invalid_params() {
        let refused = [
            json!({}),
            json!({"command": []}),
            json!({"command": "make test"}),
            json!({"command": ["true"], "timeout": "soon"}),
            json!({"command": ["true"], "no_sandbox": true, "allow_network": true}),
            json!({"command": ["true"], "allow_network": true, "allow_host": ["@npm"]}),
            json!({"command": ["true"], "no_sandbox": true, "profile": "claude"}),
            json!({"command": ["true"], "colour": true}),
        ];
        for args in refused {
            assert!(run(&object(args.clone()), &place()).is_err(), "{args}");
        }
        assert!(bind(&object(json!({"owner": "someone"})), &place()).is_err());
        assert!(bind(&object(json!({"resume": true})), &place()).is_err());
        assert!(
            bind(
                &object(json!({"carry_wip": true, "allow_dirty": true})),
                &place()
            )
            .is_err()
        );
        assert!(promote(&object(json!({"message": "m"})), &place()).is_err());
        assert!(promote(&object(json!({"mode": "sideways"})), &place()).is_err());
        assert!(discard(&object(json!({"all": true, "session_id": "a"}))).is_err());
        assert!(none(&object(json!({"x": 1}))).is_err());
    }

    #[test]
    fn false_and_null_arguments_count_as_left_out() {
        let args = object(json!({"carry_wip": true, "allow_dirty": false, "read_only": null}));
        let opts = bind(&args, &place()).unwrap();
        assert!(opts.carry_wip && !opts.allow_dirty && !opts.read_only);
        let opts = bind(&object(json!({"owner": "none"})), &place()).unwrap();
        assert_eq!(opts.owner, OwnerChoice::Nobody);
    }
}
