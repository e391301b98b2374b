//! A tool call's `arguments`, checked as the command line checks its options (types, what
//! goes together, what needs what), and turned into the library's options. Whatever is wrong
//! here is an invalid-params error of the protocol, as a bad command line is a usage error:
//! nothing has been done.

use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::flows::land::LandOptions;
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
use crate::interface::request::{self, Request, agent_flag, agent_text, given_at_all};
use crate::mcp::grants::{self, GrantedFile, Grants};
pub use crate::mcp::place::Place;
use crate::mcp::protocol::RpcError;
use crate::mcp::tool::Tool;
use crate::ops::bind::BindOptions;
use crate::ops::capture::CaptureOptions;
use crate::ops::diff::DiffOptions;
use crate::ops::discard::DiscardOptions;
use crate::ops::promote::PromoteOptions;
use crate::ops::run::RunOptions;
use crate::ops::run::request::SandboxAsk;

/// The call's arguments as the verb's request, checked as its command line is.
fn parse<R: Request>(args: &Map<String, Value>) -> Result<R, RpcError> {
    request::parse_agent::<R>(args).map_err(RpcError::params)
}

/// `bind`'s options.
pub(crate) fn bind(args: &Map<String, Value>, place: &Place) -> Result<BindOptions, RpcError> {
    let parsed: BindArgs = parse(args)?;
    Ok(BindOptions {
        session_id: parsed.session,
        allow_dirty: parsed.allow_dirty,
        read_only: parsed.read_only,
        base_dir: parsed
            .base_dir
            .map(|dir| base_dir(place.path(dir), &place.grants))
            .transpose()?,
        owner: parsed.owner.unwrap_or_default(),
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

/// `run`'s options as the command line builds them from the server's grants narrowed by the call
/// (the release identity of `A3S_ISO_RELEASE_IDENTITY` when none is given, stdout sent to stderr as
/// with `--json`), the sandbox the call may ask (for [`crate::ops::run::request::configure`] to
/// complete), and the granted output file the call named, for the tool to open.
pub(crate) fn run(
    args: &Map<String, Value>,
    place: &Place,
) -> Result<(RunOptions, SandboxAsk, Option<GrantedFile>), RpcError> {
    let parsed: RunArgs = parse(args)?;
    if parsed.command[0].is_empty() {
        return Err(RpcError::params(
            "command: the command to run and its arguments, as an array of strings",
        ));
    }
    let narrowed = crate::mcp::narrow::run(&asked(args, &parsed), place)?;
    let output = agent_text(args, "output")
        .map(|p| grants::output_file(Tool::Run, "output", place.path(p.into()), &place.grants))
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
        cache: narrowed.cache,
    };
    let opts = RunOptions {
        session_id: parsed.session.session,
        run_id: parsed.run_id,
        run_id_fresh: false,
        timeout: narrowed.timeout,
        command: parsed.command,
        stdout_to_stderr: true,
        sandbox: None,
        release_identity: release_identity(parsed.release_identity),
        helper: place.helper.clone(),
        env: narrowed.env,
        output: None,
        on_published: None,
        // `land`'s own: an agent's run keeps what it writes.
        throwaway: None,
    };
    Ok((opts, ask, output))
}

/// What of a run's arguments narrows the server's grants: each one the call gave at all, even
/// `false` or `[]`; what it left out is the grant whole.
fn asked(args: &Map<String, Value>, parsed: &RunArgs) -> crate::mcp::narrow::Asked {
    let given = |name: &str| given_at_all(args, name);
    let grants = &parsed.grants;
    crate::mcp::narrow::Asked {
        allow_network: given("allow_network").then_some(grants.allow_network),
        allow_host: given("allow_host").then(|| grants.allow_host.clone()),
        publish: given("publish").then(|| grants.publish.clone()),
        allow_write: given("allow_write").then(|| grants.allow_write.clone()),
        allow_read: given("allow_read").then(|| grants.allow_read.clone()),
        profile: grants.profile.clone(),
        env: given("env").then(|| grants.env.clone()),
        timeout: parsed.timeout,
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

/// `diff`'s options, whether the patch goes with the document, and the change-set document
/// the call names, for the tool to open.
pub(crate) fn diff(
    args: &Map<String, Value>,
    place: &Place,
) -> Result<(DiffOptions, bool, Option<GrantedFile>), RpcError> {
    let parsed: DiffArgs = parse(args)?;
    let document = parsed
        .change_set
        .map(|p| grants::input_file(Tool::Diff, "change_set", place.path(p), &place.grants))
        .transpose()?;
    let options = DiffOptions {
        session_id: parsed.session.session,
        change_set: None,
        digest: parsed.digest,
        cumulative: parsed.cumulative,
    };
    Ok((options, agent_flag(args, "patch"), document))
}

/// `show`'s session.
pub(crate) fn session(args: &Map<String, Value>) -> Result<Option<String>, RpcError> {
    Ok(parse::<ShowArgs>(args)?.session.session)
}

/// `list`'s `all`.
pub(crate) fn list(args: &Map<String, Value>) -> Result<bool, RpcError> {
    Ok(parse::<ListArgs>(args)?.all)
}

/// Checks that `overlaps` was given no arguments.
pub(crate) fn none(args: &Map<String, Value>) -> Result<(), RpcError> {
    parse::<OverlapsArgs>(args).map(|_| ())
}

/// `capture`'s options, and the file to write the document to, if any.
pub(crate) fn capture(
    args: &Map<String, Value>,
    place: &Place,
) -> Result<(CaptureOptions, Option<GrantedFile>), RpcError> {
    let parsed: CaptureArgs = parse(args)?;
    let options = CaptureOptions {
        session_id: parsed.session.session,
        run_id: parsed.run_id,
        release_identity: release_identity(parsed.release_identity),
    };
    let output = parsed
        .output
        .map(|p| grants::output_file(Tool::Capture, "output", place.path(p), &place.grants))
        .transpose()?;
    Ok((options, output))
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
    Ok(match parsed.all {
        true => Discarding::All(parsed.purge),
        false => Discarding::One(parsed.options()),
    })
}

/// `promote`'s options, with the command line's rules of what goes together, and the
/// change-set document to read and the artifacts directory the call names, for the tool to open.
pub(crate) fn promote(
    args: &Map<String, Value>,
    place: &Place,
) -> Result<(PromoteOptions, Option<GrantedFile>, Option<GrantedFile>), RpcError> {
    let parsed: PromoteArgs = parse(args)?;
    parsed
        .check()
        .map_err(|e| RpcError::params(request::agent_sentence::<PromoteArgs>(&e.to_string())))?;
    // The tool opens the document and the artifacts beneath their grants, and names them.
    let options = PromoteOptions {
        change_set: None,
        artifacts: None,
        ..parsed.options(parsed.message.clone())
    };
    let document = parsed
        .change_set
        .map(|p| grants::input_file(Tool::Promote, "change_set", place.path(p), &place.grants))
        .transpose()?;
    let artifacts = parsed
        .artifacts
        .map(|p| grants::output_file(Tool::Promote, "artifacts", place.path(p), &place.grants))
        .transpose()?;
    Ok((options, document, artifacts))
}

/// `land`'s options.
pub(crate) fn land(args: &Map<String, Value>) -> Result<LandOptions, RpcError> {
    // `abort` is not an agent's to set: it stays false.
    Ok(parse::<LandArgs>(args)?.options())
}

#[cfg(test)]
mod tests {
    use crate::mcp::args::*;
    use crate::ops::bind::OwnerChoice;
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
        let (opts, ask, output) = run(&args, &place()).unwrap();
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
        assert!(output.is_some() && opts.output.is_none());
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
