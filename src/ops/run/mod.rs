//! `run`: execute a command inside a session's isolation, sandboxed by default, and record what
//! it did as the run's change set (base = before the command, result = after). Its home: the
//! sandbox a request and the configuration make (`request`), the quarantine of the objects the
//! command writes (`quarantine`); it may call every layer below `ops/`, never another verb.

pub mod quarantine;
pub mod request;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::base::command_env::{CommandEnv, EnvRequest};
use crate::base::error::{Busy, Error, Held, HiddenTool, IoContext, Result};
use crate::base::ids::TreeId;
use crate::base::pty::{CommandTerminal, Stream, Use};
use crate::base::sandbox::{
    self, NetworkAccess, SandboxReport, SandboxSpec, SocketFactory, StatusChannel, TerminalSpec,
};
use crate::base::signals::Signals;
use crate::context::{Context, Located};
use crate::git::REPO_SELECTING_VARS;
use crate::model::changeset::RunState;
use crate::model::isolation::Isolation;
use crate::ops::run::quarantine::Quarantine;
use crate::services::evidence::{Evidence, Target, record_evidence};
use crate::services::network::{
    Allowlist, NetworkPlan, NetworkReport, NetworkService, PROXY_PORT, PublishRequest, Published,
};
use crate::store::lock::FileLock;
use crate::store::state::{Ran, RunSandbox, SessionRecord};

pub use crate::ops::run::request::SandboxRequest;

/// How long a timed-out command gets between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);

/// What `run` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The session; resolved as for every command when `None`.
    pub session_id: Option<String>,
    /// The run id; generated when `None`. A run id is never reused.
    pub run_id: Option<String>,
    /// Stop the command after this long (SIGTERM, then SIGKILL).
    pub timeout: Option<Duration>,
    /// The command and its arguments.
    pub command: Vec<OsString>,
    /// Send the command's stdout to stderr (so stdout can carry one JSON document).
    pub stdout_to_stderr: bool,
    /// `None`: `--no-sandbox`, a plain host process.
    pub sandbox: Option<SandboxRequest>,
    /// The `agent_release_identity` of the run's change set; default: a3s-iso's own.
    pub release_identity: Option<String>,
    /// The a3s-iso executable, re-executed as the sandbox helper.
    pub helper: Option<PathBuf>,
    /// What of the caller's environment the command gets beyond the allowlist
    /// ([`crate::base::command_env::ALLOWED`]), and what it is given.
    pub env: Vec<EnvRequest>,
    /// Where the command's stdout and stderr go instead (appended); it then gets no terminal
    /// and `/dev/null` for stdin.
    pub output: Option<PathBuf>,
    /// Told of each published port once it is bound, before the command starts.
    pub on_published: Option<fn(&Published)>,
    /// What the command writes is thrown away (`land`'s test). On the run's layer, the layer
    /// is removed, never merged ([`RunOutcome::dropped`]); on the full path, the tree the
    /// command starts from is written to this file before it starts, for the caller to move
    /// the isolation back to.
    pub throwaway: Option<PathBuf>,
}

/// The run's change set in brief (the document itself is stored with the run).
#[derive(Debug, Clone, Serialize)]
pub struct ChangeSetSummary {
    /// `sha256:` and the hex digest of the patch.
    pub patch_digest: crate::base::ids::Digest,
    /// The patch's size.
    pub patch_bytes: u64,
    /// How many files the patch touches.
    pub files_changed: u64,
}

/// How a run ended and what it changed.
#[derive(Debug, Clone, Serialize)]
pub struct RunOutcome {
    /// The session the command ran in.
    pub session_id: String,
    /// The run's id (generated ones included).
    pub run_id: String,
    /// `completed` (exit 0), `failed` (non-zero exit) or `cancelled` (signal, interrupt, timeout).
    pub state: RunState,
    /// The command's exit code; `null` when a signal ended it.
    pub exit_code: Option<i32>,
    /// The signal that ended the command, if one did.
    pub signal: Option<i32>,
    /// Whether `--timeout` stopped it.
    pub timed_out: bool,
    /// What it ran (`argv`), where (`cwd`), under which `profile` and `timeout_ms`, and when
    /// (`started_at_ms`, `ended_at_ms`): what the run's exit record keeps.
    #[serde(flatten)]
    pub ran: Ran,
    /// The ref that pins the run's result tree.
    pub result_ref: String,
    /// The isolation's snapshot before the command.
    pub base_tree: TreeId,
    /// The isolation's snapshot after the command.
    pub result_tree: TreeId,
    /// `null` when the patch is too large to travel as a document (the tree is still pinned).
    pub change_set: Option<ChangeSetSummary>,
    /// Which protections the command ran under.
    pub sandbox: SandboxReport,
    /// What it could reach of the network, and what the proxy refused.
    pub network: NetworkReport,
    /// What the user should know (printed on stderr; also in the JSON).
    pub warnings: Vec<String>,
    /// When the command failed: the paths it named that the sandbox kept from it (private,
    /// hidden or read-only), each with what to allow.
    pub hidden_paths: Vec<crate::services::hidden_paths::HiddenPath>,
    /// The nested change sets (submodules and nested repositories with uncommitted work),
    /// stored beside the run's document (absent when there are none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nested: Vec<crate::services::nested::NestedChangeSet>,
    /// The exit status for a3s-iso itself.
    #[serde(skip)]
    pub status: i32,
    /// With [`RunOptions::throwaway`], when the run's layer was thrown away: the paths the
    /// command wrote that a snapshot would have taken. `None`: what it wrote is in the
    /// isolation, for the caller to move back.
    #[serde(skip)]
    pub dropped: Option<Vec<String>>,
}

/// Runs a command in the session's isolation and records its change set. The command's own
/// exit status is in the outcome; an `Err` is a3s-iso's own failure.
pub fn run(ctx: &Context, opts: &RunOptions) -> Result<RunOutcome> {
    require_command(opts)?;
    let (allow, publish) = network_request(opts)?;
    let Target {
        located,
        record,
        isolation,
        run_id,
        identity,
    } = target_of(ctx, opts)?;
    let explicit_run_id = opts.run_id.is_some();
    let _lease = claim(ctx, &located, &record.session_id, &run_id, explicit_run_id)?;
    let private_tmp = PrivateTmp::create(&run_id)?;
    let quarantine = Quarantine::for_isolation(&located.store, &run_id, &isolation.admin)?;
    let workdir = counterpart(ctx, &located, &record, &isolation.tree);
    let run_dirs = (private_tmp.path(), quarantine.dir());
    let mut settings = settings_of(opts, !allow.is_empty())?;
    let at = (&located, &isolation);
    let granted = Granted::prepare(opts, &mut settings, &run_id, (at, run_dirs))?;
    let run_of = (&located.store, record.session_id.as_str(), run_id.as_str());
    let (plan, planned, _live) = network_for(opts, &settings, run_of, allow, &publish)?;
    let terminal = terminal_for(opts);
    let place = (workdir.as_path(), &granted, terminal);
    let mut sandbox_spec = sandbox_for(opts, &settings, at, run_dirs, place)?;
    let git_state = attach_layers(ctx, at, &record.session_id, &mut sandbox_spec)?;
    let ids = (record.session_id.as_str(), run_id.as_str());
    let before = before_command(ctx, at, ids, &mut sandbox_spec, opts.throwaway.as_deref())?;
    let extra_env = sandboxed_env(sandbox_spec.as_ref(), &quarantine, &located, &granted);
    let paths = (workdir.as_path(), private_tmp.path());
    let env = command_env(opts, (&record, &run_id), paths, extra_env, &settings);
    settings.env_passed = env.passed.clone();
    let launch = Launch {
        workdir: &workdir,
        spec: sandbox_spec.as_ref(),
        terminal,
        env: &env,
    };
    let started_at_ms = crate::base::fsutil::now_ms();
    let executed = execute(opts, &launch, (plan, planned));
    let ran = ran_of(opts, (&isolation.tree, &workdir), started_at_ms);
    let (before, (ended, network)) = before.after(ctx, at, executed)?;
    let git_state = sandbox_spec.is_some().then_some(git_state);
    let after = (&quarantine, &granted);
    let migrate_warnings = after_command(ctx, at, after, &record.session_id, git_state)?;
    let dropped = before.dropped();
    let (base_tree, result, nested) = before.result(ctx, at)?;
    let evidence = Evidence {
        session_id: &record.session_id,
        run_id: &run_id,
        state: ended.state(),
        base_tree: &base_tree,
        result_tree: &TreeId::new(&result.tree)?,
        release_identity: &identity,
    };
    let (change_set, mut warnings) =
        record_run(ctx, &located, &evidence, (&result.nested, &nested))?;
    warnings.splice(0..0, migrate_warnings);
    warnings.extend(neutralize(ctx, &located, &isolation, (&result, &nested)));
    let exit = ended.exit(&ran, &settings, &network);
    (located.store).save_run_exit(&record.session_id, &run_id, &exit)?;
    Ok(RunOutcome {
        session_id: record.session_id.to_string(),
        run_id: run_id.clone(),
        state: ended.state(),
        exit_code: ended.exit_code,
        signal: ended.signal,
        timed_out: ended.timed_out,
        ran,
        result_ref: located.store.refs().run_result(&record.session_id, &run_id),
        result_tree: evidence.result_tree.clone(),
        base_tree,
        change_set,
        sandbox: report(sandbox_spec.as_ref(), &settings, &env, &granted),
        network,
        warnings,
        hidden_paths: hidden_paths_of(
            sandbox_spec.as_ref(),
            ended.state(),
            &opts.command,
            command_path(&env).as_deref(),
        ),
        nested: nested.sets(),
        status: ended.status(),
        dropped,
    })
}

/// Where the run's base comes from, and then its result.
enum Before {
    /// The full path: the isolation's snapshot before the command.
    Snapshot(String),
    /// The fast path: the run's layer over the isolation, merged after the command.
    Layer(crate::recovery::run_layer::RunLayer),
    /// The layer merged: the run's base and result from the paths it held.
    Merged {
        base: String,
        result: crate::model::snapshot::Snapshot,
    },
    /// The layer thrown away: the isolation is at `tree` still; `wrote` is what the command
    /// wrote.
    Dropped { tree: String, wrote: Vec<String> },
}

/// Before the command: a sandboxed run whose fast path can be proven gets its layer over the
/// isolation (`run_layer`); any other takes the isolation's snapshot (and, its writes to be
/// thrown away, records its tree at `throwaway` before the command can write).
fn before_command(
    ctx: &Context,
    (located, isolation): (&Located, &Isolation),
    ids: (&str, &str),
    spec: &mut Option<SandboxSpec>,
    throwaway: Option<&Path>,
) -> Result<Before> {
    use crate::recovery::run_layer::{Writes, prepare};
    let writes = match throwaway {
        Some(_) => Writes::Dropped,
        None => Writes::Kept,
    };
    if let Some(spec) = spec
        && let Some(layer) = prepare(located, isolation, ids, spec, writes)?
    {
        spec.tree_layer = Some(layer.spec());
        return Ok(Before::Layer(layer));
    }
    let tree = isolation.snapshot(ctx, located)?.tree;
    if let Some(record) = throwaway {
        if let Some(dir) = record.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::io(format!("cannot create {}", dir.display()), e))?;
        }
        crate::base::fsutil::write_atomic(record, format!("{tree}\n").as_bytes())?;
    }
    Ok(Before::Snapshot(tree))
}

impl Before {
    /// Once the command has ended, or never started (not found, a sandbox that failed): the
    /// layer merged now, which the next command would otherwise take for an interrupted run.
    /// One that a3s-iso lost track of (internal) may still write: its layer waits for
    /// recovery.
    fn after<T>(
        self,
        ctx: &Context,
        at: (&Located, &Isolation),
        executed: Result<T>,
    ) -> Result<(Before, T)> {
        match executed {
            Err(e) if e.code() == crate::base::error::ErrorCode::Internal => Err(e),
            // The command's own error is the one to report; a merge that fails here leaves
            // its record for recovery.
            Err(e) => {
                let _ = self.merge(ctx, at);
                Err(e)
            }
            Ok(done) => Ok((self.merge(ctx, at)?, done)),
        }
    }

    /// Once the command has ended: the run's layer, if it has one, merged into the tree (its
    /// base and result read around the merge, or else the base only).
    fn merge(self, ctx: &Context, (located, isolation): (&Located, &Isolation)) -> Result<Before> {
        let Before::Layer(layer) = self else {
            return Ok(self);
        };
        Ok(
            match crate::recovery::run_layer::finish(&ctx.git, located, isolation, layer)? {
                crate::recovery::run_layer::Finished::Fast { base, result } => {
                    Before::Merged { base, result }
                }
                crate::recovery::run_layer::Finished::Full { base } => Before::Snapshot(base),
                crate::recovery::run_layer::Finished::Dropped { tree, wrote } => {
                    Before::Dropped { tree, wrote }
                }
            },
        )
    }

    /// What a thrown-away layer held (see [`RunOutcome::dropped`]).
    fn dropped(&self) -> Option<Vec<String>> {
        match self {
            Before::Dropped { wrote, .. } => Some(wrote.clone()),
            _ => None,
        }
    }

    /// The run's base tree, its result's snapshot and nested change sets: on the full path, a
    /// snapshot of the whole isolation now.
    fn result(
        self,
        ctx: &Context,
        (located, isolation): (&Located, &Isolation),
    ) -> Result<(
        TreeId,
        crate::model::snapshot::Snapshot,
        crate::services::nested::Nested,
    )> {
        match self {
            Before::Merged { base, result } => Ok((TreeId::new(base)?, result, Default::default())),
            Before::Dropped { tree, .. } => {
                let result = crate::model::snapshot::Snapshot {
                    tree: tree.clone(),
                    nested: Vec::new(),
                    gitlinks: Vec::new(),
                };
                Ok((TreeId::new(tree)?, result, Default::default()))
            }
            Before::Snapshot(base) => {
                let (result, nested) =
                    crate::services::evidence::snapshot_all(ctx, located, isolation)?;
                Ok((TreeId::new(base)?, result, nested))
            }
            Before::Layer(_) => Err(Error::internal("the run's layer was never merged")),
        }
    }
}

/// The session, its isolation, the run's id and the release identity the run records.
fn target_of(ctx: &Context, opts: &RunOptions) -> Result<Target> {
    Target::prepare(
        ctx,
        opts.session_id.as_deref(),
        opts.run_id.as_deref(),
        opts.release_identity.as_deref(),
    )
}

/// Once the command and its sandbox have ended (nothing can change its layers any more): the
/// allowed files written back, then, sandboxed ([`after_sandbox`]), the command's new objects
/// and what git inside changed. Returns the warnings of both.
fn after_command(
    ctx: &Context,
    at: (&Located, &Isolation),
    (quarantine, granted): (&Quarantine, &Granted),
    session_id: &str,
    git: Option<GitState>,
) -> Result<Vec<String>> {
    let mut warnings = granted.held.clone();
    warnings.extend(granted.layers.write_back());
    // The profile's copies are reviewed once nothing can write them any more. A review that
    // fails loses no work: the next run under the profile reviews them before its command.
    if let Some((profile, kept)) = &granted.kept {
        match crate::services::profile_review::review(kept, profile) {
            Ok(held) => warnings.extend(held),
            Err(e) => warnings.push(format!(
                "the profile's copies ({}) were not reviewed: {e}; its next run reviews them first",
                kept.home().display()
            )),
        }
    }
    if let Some(git) = git {
        warnings.extend(after_sandbox(ctx, at, quarantine, session_id, git)?);
    }
    Ok(warnings)
}

/// What a failed sandboxed command named that the sandbox kept from it, and where its
/// program's interpreter lives when the sandbox hides that (`#!/usr/bin/env node` with a
/// `node` installed under `/var/tmp` fails with the command's own 127).
fn hidden_paths_of(
    spec: Option<&SandboxSpec>,
    state: RunState,
    command: &[OsString],
    path_env: Option<&OsStr>,
) -> Vec<crate::services::hidden_paths::HiddenPath> {
    match (spec, state) {
        (Some(spec), RunState::Failed) => {
            let home = std::env::var_os("HOME").map(PathBuf::from);
            let mut found = crate::services::hidden_paths::find(spec, command, home.as_deref());
            for tool in crate::services::hidden_tools::find(spec, &command[0], path_env) {
                if !found.iter().any(|f| f.allow_path == tool.allow_path) {
                    found.push(tool);
                }
            }
            found
        }
        _ => Vec::new(),
    }
}

/// The run's network: the published ports bound on the host (now, so that a port in use
/// fails before the command starts), announced, and written where `show` finds them while the
/// run lives; and what the run reports of it before anything is refused.
fn network_for(
    opts: &RunOptions,
    settings: &RunSandbox,
    (store, session_id, run_id): (&crate::store::state::Store, &str, &str),
    allow: Allowlist,
    publish: &[PublishRequest],
) -> Result<(
    NetworkPlan,
    NetworkReport,
    Option<crate::store::state::LiveRunFile>,
)> {
    let plan = NetworkPlan::bind(allow, publish)?;
    let planned = NetworkReport::planned(settings.network, plan.allow.report(), plan.published());
    let live =
        crate::store::state::LiveRunFile::write(store, session_id, run_id, &planned.published)?;
    for published in &planned.published {
        if let Some(announce) = opts.on_published {
            announce(published);
        }
    }
    Ok((plan, planned, live))
}

/// What `run` keeps of the session's git state across the command.
#[derive(Default)]
struct GitState {
    /// The session's layers were given to the sandbox.
    layered: bool,
    /// The isolation's HEAD before the command, as its file held it.
    head_before: Vec<u8>,
    /// What the user should know so far.
    warnings: Vec<String>,
}

/// Gives a sandboxed run the session's git layers, made ready (`session_git::prepare`); `refs`
/// then stays read-only only where they cannot be mounted. A repository whose refs are in
/// reftable gets none (its refs are not files a layer holds).
fn attach_layers(
    ctx: &Context,
    (located, isolation): (&Located, &Isolation),
    session_id: &str,
    spec: &mut Option<SandboxSpec>,
) -> Result<GitState> {
    let Some(spec) = spec else {
        return Ok(GitState::default());
    };
    let mut state = GitState {
        head_before: crate::recovery::session_git::read_head(&isolation.admin),
        ..GitState::default()
    };
    if located.repo.common_dir.join("reftable").is_dir() {
        state.warnings.push(
            "this repository keeps its refs in reftable: git inside cannot keep branches, tags or stash entries between runs (what it writes to the refs is thrown away after the run)".into(),
        );
        return Ok(state);
    }
    let prepared = crate::recovery::session_git::prepare(
        &ctx.git,
        &located.repo,
        &located.store,
        session_id,
        &isolation.admin,
    );
    let (layers, warnings) = match prepared {
        Ok(prepared) => prepared,
        // As where the layers cannot be mounted: the run goes on without them.
        Err(e) => {
            state.warnings.push(format!(
                "the session's git layers cannot be made ready ({e}): git inside cannot keep branches, tags or stash entries in this run"
            ));
            return Ok(state);
        }
    };
    spec.sealed.retain(|p| !layers.sealed_otherwise.contains(p));
    spec.git_layers = Some(layers);
    state.layered = true;
    state.warnings = warnings;
    Ok(state)
}

/// After a sandboxed run: the command's new objects join the store once they pass the checks,
/// then what git inside changed reaches the admin dir ([`settle_layers`]); without the
/// layers, a HEAD the command left on a branch is detached again. Returns the warnings.
fn after_sandbox(
    ctx: &Context,
    (located, isolation): (&Located, &Isolation),
    quarantine: &Quarantine,
    session_id: &str,
    git: GitState,
) -> Result<Vec<String>> {
    let mut warnings = quarantine.migrate(&ctx.git, &located.repo)?.1;
    warnings.extend(git.warnings);
    let (repo, admin) = (&located.repo, &isolation.admin);
    if !git.layered {
        let kept = crate::recovery::session_git::keep_head_detached(
            &ctx.git,
            repo,
            admin,
            &git.head_before,
        );
        warnings.extend(kept);
        return Ok(warnings);
    }
    let settled = crate::recovery::session_git::settle(
        &ctx.git,
        repo,
        &located.store,
        session_id,
        (admin, &git.head_before),
    );
    // Recorded first: what fails here the next command finishes; the run's evidence stands.
    warnings.extend(settled.unwrap_or_else(|e| {
        vec![format!(
            "the run's git state (branches, HEAD) is not settled yet: {e}; the next a3s-iso command finishes it"
        )]
    }));
    Ok(warnings)
}

/// A run needs a command: `a3s-iso run -- CMD [ARGS...]`.
fn require_command(opts: &RunOptions) -> Result<()> {
    match opts.command.is_empty() {
        true => Err(Error::Usage {
            message: "no command given: a3s-iso run -- CMD [ARGS...]".into(),
        }),
        false => Ok(()),
    }
}

impl Ended {
    /// How the command ended and what it ran, as the state dir records it beside the run's
    /// document.
    fn exit(
        &self,
        ran: &Ran,
        settings: &RunSandbox,
        network: &NetworkReport,
    ) -> crate::store::state::RunExit {
        crate::store::state::RunExit {
            exit_code: self.exit_code,
            signal: self.signal,
            timed_out: self.timed_out,
            state: Some(self.state()),
            ran: ran.clone(),
            sandbox: Some(settings.clone()),
            network: Some(network.clone()),
        }
    }
}

/// What a run reports of its sandbox (`None`: `--no-sandbox`) and of its environment.
fn report(
    spec: Option<&SandboxSpec>,
    settings: &RunSandbox,
    env: &CommandEnv,
    granted: &Granted,
) -> SandboxReport {
    let mut report = spec.map_or_else(SandboxReport::disabled, SandboxReport::of);
    if spec.is_some() {
        report.caches = granted.caches.report.clone();
    }
    report.allow_write = settings.allow_write.clone();
    report.allow_read = settings.allow_read.clone();
    report.env_passed = env.passed.clone();
    report.env_dropped = env.dropped.clone();
    report.profile = settings.profile.clone();
    report
}

/// What the run ran, where and when, now that the command started at `started_at_ms` has
/// ended: the command line exactly, and the working directory relative to the isolation's root.
fn ran_of(opts: &RunOptions, (tree, workdir): (&Path, &Path), started_at_ms: u64) -> Ran {
    let cwd = match workdir.strip_prefix(tree) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ran {
        argv: Some(crate::base::argv::Argv(opts.command.clone())),
        cwd: Some(cwd),
        profile: opts
            .sandbox
            .as_ref()
            .and_then(|s| s.profile.as_ref())
            .map(|p| p.name.clone()),
        timeout_ms: opts
            .timeout
            .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
        started_at_ms: Some(started_at_ms),
        ended_at_ms: Some(crate::base::fsutil::now_ms()),
    }
}

/// The `--allow-host` entries and `--publish` requests, parsed (an invalid one is
/// `invalid_input`); both need the sandbox's own network namespace.
fn network_request(opts: &RunOptions) -> Result<(Allowlist, Vec<PublishRequest>)> {
    let Some(request) = &opts.sandbox else {
        return Ok((Allowlist::default(), Vec::new()));
    };
    if request.allow_network && !(request.allow_hosts.is_empty() && request.publish.is_empty()) {
        return Err(Error::Usage {
            message: "--allow-host and --publish need the sandbox's own network: not with --allow-network".into(),
        });
    }
    let allow = Allowlist::parse(&request.allow_hosts)?;
    let publish = request
        .publish
        .iter()
        .map(|p| PublishRequest::parse(p))
        .collect::<Result<_>>()?;
    Ok((allow, publish))
}

/// The sandbox settings the caller asked for (`allowlist`: a proxy serves allowed hosts), the
/// paths of `--allow-write` and `--allow-read` canonical (a path that does not exist is
/// `invalid_input`); the environment's names are added once it is planned.
fn settings_of(opts: &RunOptions, allowlist: bool) -> Result<RunSandbox> {
    let Some(request) = &opts.sandbox else {
        return Ok(RunSandbox {
            enabled: false,
            network: NetworkAccess::Allowed,
            allow_write: Vec::new(),
            allow_read: Vec::new(),
            env_passed: Vec::new(),
            profile: None,
        });
    };
    Ok(RunSandbox {
        enabled: true,
        network: if request.allow_network {
            NetworkAccess::Allowed
        } else if allowlist {
            NetworkAccess::Allowlist
        } else {
            NetworkAccess::Denied
        },
        allow_write: existing("--allow-write", &request.allow_write)?,
        allow_read: existing("--allow-read", &request.allow_read)?,
        env_passed: Vec::new(),
        profile: request.profile.as_ref().map(|p| p.used(None)),
    })
}

/// The terminal the command gets: an interactive pty when a3s-iso's stdin is a terminal it
/// has the foreground of; sandboxed, a pty for its output when only that goes to a terminal
/// (the command never holds a descriptor of the caller's terminal).
fn terminal_for(opts: &RunOptions) -> TerminalSpec {
    if opts.output.is_some() {
        return TerminalSpec::None;
    }
    if crate::base::pty::stdin_is_terminal() {
        return TerminalSpec::Interactive;
    }
    if opts.sandbox.is_none() {
        return TerminalSpec::None;
    }
    let stdout = output_target(opts).is_terminal();
    let stderr = Stream::Stderr.is_terminal();
    if stdout || stderr {
        TerminalSpec::Output { stdout, stderr }
    } else {
        TerminalSpec::None
    }
}

/// Where the command's stdout goes: a3s-iso's stdout, or its stderr with `--json`.
fn output_target(opts: &RunOptions) -> Stream {
    if opts.stdout_to_stderr {
        Stream::Stderr
    } else {
        Stream::Stdout
    }
}

/// The command's environment: the caller's allowed and named variables, what `--env` sets,
/// and run's own (the session's, TMPDIR, and `extra`: the quarantine for git, the caches' variables); never a repository-selecting
/// `GIT_*` of the caller's.
/// With the proxy, the variables that send HTTP clients to it; with a preset's cache, the
/// variable that points its package manager there; with the network denied, those that keep
/// package managers from retrying what cannot succeed.
fn command_env(
    opts: &RunOptions,
    (record, run_id): (&SessionRecord, &str),
    (workdir, private_tmp): (&Path, &Path),
    extra: Vec<(String, OsString)>,
    settings: &RunSandbox,
) -> CommandEnv {
    let worktree = record.worktree.as_deref().unwrap_or(workdir);
    let mut own: Vec<(String, OsString)> = vec![
        (
            "A3S_ISO_SESSION_ID".into(),
            record.session_id.as_str().into(),
        ),
        ("A3S_ISO_RUN_ID".into(), run_id.into()),
        ("A3S_ISO_WORKTREE".into(), worktree.into()),
        ("A3S_ISO_SOURCE".into(), record.source.clone().into()),
        ("TMPDIR".into(), private_tmp.into()),
    ];
    own.extend(extra);
    if settings.network == NetworkAccess::Allowlist {
        let vars = crate::services::network::proxy_env();
        own.extend(vars.into_iter().map(|(k, v)| (k, v.into())));
    }
    // The profile's variables pass as if named with --env.
    let mut requests: Vec<EnvRequest> = opts
        .sandbox
        .as_ref()
        .and_then(|s| s.profile.as_ref())
        .map(crate::services::profile::Profile::env_requests)
        .unwrap_or_default();
    requests.extend(opts.env.iter().cloned());
    let mut env =
        crate::base::command_env::plan(std::env::vars_os(), &requests, &own, REPO_SELECTING_VARS);
    if settings.enabled && settings.network == NetworkAccess::Denied {
        add_unless_given(&mut env, crate::services::network::no_retry_env());
    }
    env
}

/// Adds each variable the command does not get already (what the caller passes wins).
fn add_unless_given(env: &mut CommandEnv, defaults: Vec<(String, String)>) {
    for (name, value) in defaults {
        if !env.passed.contains(&name) {
            env.vars.push((name.clone().into(), value.into()));
            env.dropped.retain(|dropped| *dropped != name);
            env.passed.push(name);
        }
    }
    env.passed.sort();
}

/// What a sandboxed command's environment adds: the quarantine for git, and the variables that
/// point each preset's tool at its cache.
fn sandboxed_env(
    spec: Option<&SandboxSpec>,
    quarantine: &Quarantine,
    located: &Located,
    granted: &Granted,
) -> Vec<(String, OsString)> {
    let Some(_) = spec else {
        return Vec::new();
    };
    let git = quarantine.environment(&located.repo).into_iter();
    git.map(|(k, v)| (k, v.into()))
        .chain(granted.caches.env.iter().cloned())
        .collect()
}

/// Takes the session's lease for the run, after checking that the run id is new.
fn claim(
    ctx: &Context,
    located: &Located,
    session_id: &str,
    run_id: &str,
    explicit: bool,
) -> Result<FileLock> {
    refuse_redo(ctx, located, session_id, run_id, explicit)?;
    located
        .store
        .try_lease_for_run(session_id, run_id)?
        .ok_or_else(|| Error::SessionBusy {
            session_id: session_id.to_string(),
            holder: Busy::AnotherRun,
        })
}

/// Refuses a run id that already holds evidence (a stored document, or with an explicit id, a
/// pinned result): runs are never redone under the same id.
fn refuse_redo(
    ctx: &Context,
    located: &Located,
    session_id: &str,
    run_id: &str,
    explicit: bool,
) -> Result<()> {
    let redone = located.store.load_run_doc(session_id, run_id)?.is_some()
        || (explicit
            && crate::model::refs::SessionRefs {
                git: &ctx.git,
                dir: &located.repo.toplevel,
                ns: &located.store.refs(),
                session_id,
            }
            .run_exists(run_id)?);
    if redone {
        return Err(Error::CaptureConflict {
            session_id: session_id.to_string(),
            run_id: run_id.to_string(),
            held: Held::Evidence,
        });
    }
    Ok(())
}

/// The sandbox a run gets under `settings` (`None` with `--no-sandbox`), checked against this
/// kernel before anything runs. Writable: the isolation, its admin dir, the run's quarantine
/// object dir and TMPDIR, the device nodes and what the caller allowed; the repository's own
/// git dir stays readable; the links between the isolation and its repository are frozen.
/// With `pty`, the command takes its stdin as its controlling terminal in a session of its own.
fn sandbox_for(
    opts: &RunOptions,
    settings: &RunSandbox,
    (located, isolation): (&Located, &Isolation),
    (private_tmp, quarantine): (&Path, &Path),
    (workdir, granted, terminal): (&Path, &Granted, TerminalSpec),
) -> Result<Option<SandboxSpec>> {
    if !settings.enabled {
        return Ok(None);
    }
    let deny_network = settings.network != NetworkAccess::Allowed;
    let (allow_write, allow_read) = (&settings.allow_write, &settings.allow_read);
    let mut writable = vec![
        isolation.tree.clone(),
        isolation.admin.clone(),
        quarantine.to_path_buf(),
        private_tmp.to_path_buf(),
    ];
    writable.extend(sandbox::DEVICE_NODES.iter().map(PathBuf::from));
    writable.extend(
        allow_write
            .iter()
            .filter(|p| !granted.not_mounted.contains(p))
            .cloned(),
    );
    writable.extend(granted.layers.root().map(Path::to_path_buf));
    writable.extend(granted.caches.writable.iter().cloned());
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut visible = vec![located.repo.common_dir.clone()];
    visible.extend(home.iter().cloned());
    visible.extend(allow_read.iter().cloned());
    visible.extend(program_path(&opts.command[0]));
    // A layered directory under a private one comes back before its layer goes on.
    visible.extend(granted.layers.spec().into_iter().map(|l| l.dir));
    let spec = SandboxSpec {
        deny_network,
        writable,
        visible,
        private: sandbox::private_dirs(deny_network),
        frozen: ["commondir", "gitdir"]
            .iter()
            .map(|f| isolation.admin.join(f))
            .chain([isolation.tree.join(".git")])
            .filter(|p| p.is_file())
            .collect(),
        sealed: ["objects", "refs", "config"]
            .iter()
            .map(|d| located.repo.common_dir.join(d))
            .filter(|p| p.exists())
            .collect(),
        scratch_layer: Some(located.repo.common_dir.clone()),
        layers: granted.layers.spec(),
        mounted: granted.mounted.clone(),
        git_layers: None,
        tree_layer: None,
        hidden: hidden_paths(
            home.as_deref(),
            allow_read,
            deny_network,
            logins(opts, granted),
        ),
        workdir: workdir.to_path_buf(),
        terminal,
        proxy_port: (settings.network == NetworkAccess::Allowlist).then_some(PROXY_PORT),
        dns: deny_network,
    };
    sandbox::probe(&spec)?;
    Ok(Some(spec))
}

/// What a run may write beyond its writable directories: allowed files in read-only
/// directories, written back through layers, and a profile's home paths.
struct Granted {
    /// The layers, read back once the command has ended.
    layers: crate::services::writeback::Layers,
    /// The profile's copies of directories, mounted over the real ones.
    mounted: Vec<sandbox::MountedDir>,
    /// The `--allow-write` files that are not mounted writable: layered, or in a writable
    /// directory already.
    not_mounted: Vec<PathBuf>,
    /// The profile and its copies for this repository, reviewed after the command.
    kept: Option<(
        crate::services::profile::Profile,
        crate::services::profile_review::Kept,
    )>,
    /// What the review before the command held (of a run killed before its own review).
    held: Vec<String>,
    /// The caches of the presets' package managers: writable directories and variables.
    caches: crate::services::caches::CachePlan,
}

impl Granted {
    /// Makes the layers and the profile's copies a sandboxed run needs (nothing without the
    /// sandbox): each `--allow-write` file whose directory can be layered and is not writable
    /// already (beneath the isolation, its admin dir, the run's TMPDIR and quarantine, or an
    /// allowed directory: such a file is left as it is), and with a profile that names home paths, the home directory as a
    /// whole (where its mount points are made).
    fn prepare(
        opts: &RunOptions,
        settings: &mut RunSandbox,
        run_id: &str,
        ((located, isolation), (private_tmp, quarantine)): ((&Located, &Isolation), (&Path, &Path)),
    ) -> Result<Granted> {
        let profile = opts.sandbox.as_ref().and_then(|s| s.profile.as_ref());
        let private = sandbox::private_dirs(settings.network == NetworkAccess::Denied);
        let mut writable: Vec<&Path> =
            vec![&isolation.tree, &isolation.admin, private_tmp, quarantine];
        let allowed = settings.allow_write.iter().filter(|_| settings.enabled);
        writable.extend(allowed.clone().filter(|p| p.is_dir()).map(PathBuf::as_path));
        // A file in a writable directory needs nothing: renaming there works already.
        let (unneeded, files): (Vec<PathBuf>, Vec<PathBuf>) =
            allowed.filter(|p| p.is_file()).cloned().partition(|p| {
                p.parent()
                    .is_some_and(|d| writable.iter().any(|w| d.starts_with(w)))
            });
        let layered: Vec<PathBuf> = files
            .into_iter()
            .filter(|p| crate::services::writeback::layerable(p, &private))
            .collect();
        let mut grants: Vec<crate::services::writeback::FileGrant> = layered
            .iter()
            .map(|p| crate::services::writeback::FileGrant {
                at: p.clone(),
                kept: p.clone(),
            })
            .collect();
        let mut granted = Granted {
            layers: crate::services::writeback::Layers::create(run_id, &[], Vec::new())?,
            mounted: Vec::new(),
            not_mounted: [layered, unneeded].concat(),
            kept: None,
            held: Vec::new(),
            caches: cache_plan(opts, settings)?,
        };
        let mut dirs = Vec::new();
        if let Some(profile) = profile.filter(|p| !p.writable.is_empty()) {
            let key = crate::services::profile::repo_key(&located.repo.common_dir);
            let kept = crate::services::profile_copies::kept_for(&profile.name, &key);
            if let Some(used) = settings.profile.as_mut() {
                used.kept_in = kept
                    .as_ref()
                    .map(crate::services::profile_review::Kept::home);
            }
            if settings.enabled {
                let kept = kept.ok_or_else(|| Error::InvalidInput {
                    reason: crate::base::invalid::Invalid::ProfileNeedsDataDir {
                        name: profile.name.clone(),
                    },
                })?;
                let home = std::env::var_os("HOME")
                    .map(PathBuf::from)
                    .and_then(|h| std::fs::canonicalize(h).ok())
                    .ok_or_else(|| crate::services::writeback::no_home(&profile.name))?;
                let mounts = crate::services::profile_copies::prepare(profile, &home, &kept)?;
                dirs.push(home);
                grants.extend(mounts.files);
                granted.mounted = mounts.dirs;
                granted.held = mounts.held;
                granted.kept = Some((profile.clone(), kept));
            }
        }
        granted.layers = crate::services::writeback::Layers::create(run_id, &dirs, grants)?;
        Ok(granted)
    }
}

/// The caches a sandboxed run's presets bring (none without the sandbox).
fn cache_plan(
    opts: &RunOptions,
    settings: &RunSandbox,
) -> Result<crate::services::caches::CachePlan> {
    match &opts.sandbox {
        Some(request) if settings.enabled => crate::services::caches::prepare(
            &request.allow_hosts,
            request.cache,
            &crate::services::caches::CacheRoots::of_user(),
        ),
        _ => Ok(crate::services::caches::CachePlan::default()),
    }
}

/// The logins a run must not see (relative to the home directory: every profile's but the
/// running one's) and the running profile's mounted copies, where one may be seen too.
fn logins<'a>(
    opts: &RunOptions,
    granted: &'a Granted,
) -> (Vec<PathBuf>, &'a [sandbox::MountedDir]) {
    let request = opts.sandbox.as_ref();
    let own: Vec<PathBuf> = request
        .and_then(|s| s.profile.as_ref())
        .map(|p| p.credentials.iter().map(|c| c.rel.clone()).collect())
        .unwrap_or_default();
    let declared = request.map(|s| s.credentials.clone()).unwrap_or_default();
    let known = sandbox::secrets::AGENT_CREDENTIALS
        .iter()
        .map(PathBuf::from);
    let mut others: Vec<PathBuf> = known.chain(declared).filter(|l| !own.contains(l)).collect();
    others.sort();
    others.dedup();
    (others, &granted.mounted)
}

/// The secrets to cover (the agents' logins but the running profile's, and every profile's
/// kept copies), and with the network denied the caller's ssh agent socket (it may live
/// outside the private directories).
fn hidden_paths(
    home: Option<&Path>,
    allow_read: &[PathBuf],
    deny_network: bool,
    (others, mounted): (Vec<PathBuf>, &[sandbox::MountedDir]),
) -> Vec<PathBuf> {
    let mut hidden = Vec::new();
    if let Some(home) = home {
        let own: Vec<PathBuf> = sandbox::secrets::AGENT_CREDENTIALS
            .iter()
            .map(PathBuf::from)
            .filter(|l| !others.contains(l))
            .collect();
        hidden = sandbox::secrets::to_hide(home, allow_read, &own);
        // A login seen at its real path, or in a copy mounted there.
        let seen = |real: &Path| {
            std::fs::symlink_metadata(real).is_ok()
                || mounted.iter().any(|m| {
                    real.strip_prefix(&m.to)
                        .is_ok_and(|rest| std::fs::symlink_metadata(m.from.join(rest)).is_ok())
                })
        };
        let logins = others.iter().map(|rel| home.join(rel));
        for login in logins.filter(|l| seen(l) && !sandbox::secrets::allowed_to_read(l, allow_read))
        {
            if !hidden.contains(&login) {
                hidden.push(login);
            }
        }
    }
    if let Some(store) = crate::services::profile::store_dir()
        && std::fs::symlink_metadata(&store).is_ok()
        && !sandbox::secrets::allowed_to_read(&store, allow_read)
    {
        hidden.push(store);
    }
    if deny_network
        && let Some(agent) = std::env::var_os("SSH_AUTH_SOCK").map(PathBuf::from)
        && agent.is_absolute()
        && std::fs::symlink_metadata(&agent).is_ok()
        && !allow_read.iter().any(|allowed| agent.starts_with(allowed))
    {
        hidden.push(agent);
    }
    hidden
}

/// Canonical forms of paths a caller named; a path that does not exist is `invalid_input`.
fn existing(flag: &str, paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    paths
        .iter()
        .map(|path| {
            std::fs::canonicalize(path).map_err(|e| Error::InvalidInput {
                reason: crate::base::invalid::Invalid::FlagPath {
                    flag: flag.to_string(),
                    path: path.to_path_buf(),
                    error: e.to_string(),
                },
            })
        })
        .collect()
}

/// The program itself, when it is named by an absolute path (it may live under a private
/// directory); a relative path is found from the working directory, inside the isolation.
fn program_path(program: &std::ffi::OsStr) -> Option<PathBuf> {
    let path = Path::new(program);
    path.is_absolute()
        .then(|| std::fs::canonicalize(path).ok())
        .flatten()
}

/// Records the run's evidence and summarises its change set. A change set too large for a
/// document is a warning, not a failure: its result tree is pinned all the same.
fn record_run(
    ctx: &Context,
    located: &Located,
    evidence: &Evidence<'_>,
    (left_out, nested): (&[String], &crate::services::nested::Nested),
) -> Result<(Option<ChangeSetSummary>, Vec<String>)> {
    let mut warnings: Vec<String> = left_out
        .iter()
        .map(|path| format!("nested repository {path} is not part of the change set"))
        .collect();
    warnings.extend(nested.warnings());
    crate::services::evidence::record_nested(
        ctx,
        located,
        evidence.session_id,
        evidence.run_id,
        nested,
    )?;
    let change_set = match record_evidence(ctx, located, evidence) {
        Ok(captured) => Some(ChangeSetSummary {
            patch_digest: captured.change_set.patch_digest,
            patch_bytes: captured.change_set.patch_bytes,
            files_changed: captured.files_changed,
        }),
        Err(err @ Error::ChangeSetTooLarge { .. }) => {
            warnings.push(format!("{err}; the result tree is pinned"));
            None
        }
        Err(err) => return Err(err),
    };
    Ok((change_set, warnings))
}

/// The isolation's counterpart of the caller's directory (the isolation root when the caller
/// is outside the source, or when the counterpart does not exist).
fn counterpart(ctx: &Context, located: &Located, record: &SessionRecord, tree: &Path) -> PathBuf {
    let start = std::fs::canonicalize(&ctx.start_dir).unwrap_or_else(|_| ctx.start_dir.clone());
    if start.starts_with(tree) {
        return start;
    }
    match start
        .strip_prefix(&record.source)
        .or_else(|_| start.strip_prefix(&located.repo.toplevel))
    {
        Ok(rel) if tree.join(rel).is_dir() => tree.join(rel),
        _ => tree.to_path_buf(),
    }
}

/// A per-run TMPDIR, removed when the run ends.
struct PrivateTmp {
    path: PathBuf,
}

impl PrivateTmp {
    fn create(run_id: &str) -> Result<PrivateTmp> {
        use std::os::unix::fs::DirBuilderExt;
        // Named after this process, so that the next command removes it if the run is killed.
        let path = std::env::temp_dir().join(crate::base::maker::owned_name(&format!(
            "{}{run_id}",
            crate::store::scratch::PRIVATE_TMP_PREFIX
        )));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .ctx(|| format!("cannot create {}", path.display()))?;
        Ok(PrivateTmp { path })
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        // What the command left in it (links included) goes beneath the directory's handle.
        let _ = crate::base::beneath::remove_path(&self.path);
    }
}

/// How the command ended.
struct Ended {
    exit_code: Option<i32>,
    signal: Option<i32>,
    /// A signal a3s-iso received and passed on (Ctrl-C, SIGTERM, SIGHUP).
    forwarded: Option<i32>,
    timed_out: bool,
}

impl Ended {
    /// The terminal state: a signal of any kind (passed on, a timeout, or one the command got)
    /// cancels the run; otherwise the exit code decides.
    fn state(&self) -> RunState {
        if self.forwarded.is_some() || self.timed_out || self.signal.is_some() {
            RunState::Cancelled
        } else if self.exit_code == Some(0) {
            RunState::Completed
        } else {
            RunState::Failed
        }
    }

    /// Like env(1) and timeout(1): the command's status, 128+signal, 124 on timeout, and
    /// 128+signal of what a3s-iso itself received.
    fn status(&self) -> i32 {
        if let Some(signal) = self.forwarded {
            128 + signal
        } else if self.timed_out {
            124
        } else if let Some(signal) = self.signal {
            128 + signal
        } else {
            self.exit_code.unwrap_or(125)
        }
    }
}

/// What the command is started with.
struct Launch<'a> {
    /// Its working directory, inside the isolation.
    workdir: &'a Path,
    /// `None`: a plain host process.
    spec: Option<&'a SandboxSpec>,
    /// The terminal it gets.
    terminal: TerminalSpec,
    /// Its environment.
    env: &'a CommandEnv,
}

/// Starts the command, waits for it (passing interrupts on, enforcing the timeout) and says
/// how it ended. With an interactive pty, the caller's terminal is in raw mode from just
/// before the command starts until its output is drained, and restored on every way out.
/// With a network plan to serve, the proxy and the published ports are served from the
/// command's start to its end; returns the network's report with what the proxy refused.
fn execute(
    opts: &RunOptions,
    launch: &Launch<'_>,
    (mut plan, planned): (NetworkPlan, NetworkReport),
) -> Result<(Ended, NetworkReport)> {
    let signals = Signals::register()?;
    plan.dns = launch.spec.is_some_and(|spec| spec.dns);
    let allow = plan.allow.clone();
    let mut channel = match launch.spec {
        Some(_) => Some(
            StatusChannel::new()
                .map_err(|e| Error::io("cannot make the sandbox helper's channel", e))?,
        ),
        None => None,
    };
    let mut factory = match launch.spec.filter(|_| plan.is_needed()) {
        Some(_) => Some(
            SocketFactory::new()
                .map_err(|e| Error::io("cannot make the sandbox helper's socket channel", e))?,
        ),
        None => None,
    };
    let mut command = command_for(opts, launch.spec, channel.as_ref(), factory.as_ref())?;
    set_up(&mut command, opts, launch)?;
    let mut terminal = match (launch.spec, launch.terminal) {
        (None, TerminalSpec::Interactive) => Some(host_pty_for(&mut command, opts)?),
        _ => None,
    };
    let mut child = spawn(command, &opts.command[0])?;
    if let Some(terminal) = &mut terminal {
        terminal.started();
    }
    let service = serve_network(factory.take(), plan, &mut child)?;
    if let Some(channel) = &mut channel {
        channel.spawned();
        if launch.terminal != TerminalSpec::None {
            terminal = relay_sandbox_terminal(channel, opts, launch.terminal, &mut child)?;
        }
    }
    let ended = supervise(
        child,
        opts.timeout,
        &signals,
        launch.spec.is_some(),
        terminal.as_ref(),
    );
    if let Some(terminal) = terminal {
        terminal.finish();
    }
    let kept = service.map(NetworkService::finish).unwrap_or_default();
    let ended = ended?;
    // A helper that never became the command says why on its channel, which the command
    // never holds.
    if matches!(ended.exit_code, Some(125..=127))
        && let Some(failure) = channel.as_mut().and_then(StatusChannel::failure)
    {
        return Err(with_hidden_tools(
            sandbox::failure_error(failure),
            launch,
            &opts.command[0],
        ));
    }
    let denied = crate::services::network::denied(&kept.lookups, &kept.refused, &allow);
    let refused = kept.refused;
    Ok((
        ended,
        NetworkReport {
            refused,
            denied,
            ..planned
        },
    ))
}

/// A program not found in the sandbox, with where it (or its interpreter) lives on the host
/// when the sandbox hides that place.
fn with_hidden_tools(err: Error, launch: &Launch<'_>, program: &OsStr) -> Error {
    match (err, launch.spec) {
        (Error::CommandNotFound { program: name, .. }, Some(spec)) => {
            let path = command_path(launch.env);
            let hidden = crate::services::hidden_tools::find(spec, program, path.as_deref());
            Error::CommandNotFound {
                program: name,
                hidden: hidden.into_iter().map(hidden_tool).collect(),
            }
        }
        (err, _) => err,
    }
}

fn hidden_tool(hidden: crate::services::hidden_paths::HiddenPath) -> HiddenTool {
    HiddenTool {
        under: hidden.under.unwrap_or_default(),
        path: hidden.path,
        allow_read: hidden.allow_path,
    }
}

/// The `PATH` the command gets.
fn command_path(env: &CommandEnv) -> Option<OsString> {
    env.vars
        .iter()
        .rev()
        .find(|(name, _)| name == "PATH")
        .map(|(_, value)| value.clone())
}

/// Starts the run's network service once the helper runs (`None` without a plan to serve).
/// When it cannot start, the helper (whose command cannot have started) is ended.
fn serve_network(
    factory: Option<SocketFactory>,
    plan: NetworkPlan,
    helper: &mut Child,
) -> Result<Option<NetworkService>> {
    let Some(mut factory) = factory else {
        return Ok(None);
    };
    factory.spawned();
    match NetworkService::start(plan, factory) {
        Ok(service) => Ok(Some(service)),
        Err(e) => {
            let _ = helper.kill();
            let _ = helper.wait();
            Err(Error::io("cannot serve the run's network", e))
        }
    }
}

/// A host pty for an unsandboxed interactive command, relayed to the caller's terminal (in
/// raw mode from now on); the command is made a session leader with it just before exec.
fn host_pty_for(command: &mut Command, opts: &RunOptions) -> Result<CommandTerminal> {
    let terminal = CommandTerminal::open(output_target(opts))
        .map_err(|e| Error::io("cannot open a pty for the command", e))?;
    terminal
        .attach(command, true)
        .map_err(|e| Error::io("cannot give the command its pty", e))?;
    Ok(terminal)
}

/// Relays the pty the sandbox helper made (its master comes over the channel) and lets the
/// helper go on. `None` when the helper ended first (its failure is on the channel). When the
/// relay cannot start, the helper (which has not started the command yet) is ended.
fn relay_sandbox_terminal(
    channel: &mut StatusChannel,
    opts: &RunOptions,
    terminal: TerminalSpec,
    helper: &mut Child,
) -> Result<Option<CommandTerminal>> {
    let Some(master) = channel.terminal() else {
        return Ok(None);
    };
    let usage = match terminal {
        TerminalSpec::Output {
            stdout: false,
            stderr: true,
        } => Use::Output { to: Stream::Stderr },
        TerminalSpec::Output { .. } => Use::Output {
            to: output_target(opts),
        },
        _ => Use::Interactive {
            to: output_target(opts),
        },
    };
    match CommandTerminal::relay(master, None, usage) {
        Ok(relayed) => {
            channel.go();
            Ok(Some(relayed))
        }
        Err(e) => {
            let _ = helper.kill();
            let _ = helper.wait();
            Err(Error::io("cannot relay the command's pty", e))
        }
    }
}

/// Starts `command` and lets go of it (its copies of the command's stdio are closed).
fn spawn(mut command: Command, program: &std::ffi::OsStr) -> Result<Child> {
    command.spawn().map_err(|err| {
        sandbox::spawn_failure(program, &err)
            .unwrap_or_else(|| Error::io(format!("cannot run {}", program.to_string_lossy()), err))
    })
}

/// The process to start: the command itself, or (sandboxed) a3s-iso re-executed as the helper
/// that enters the sandbox and then execs the command, with its end of `channel`.
fn command_for(
    opts: &RunOptions,
    spec: Option<&SandboxSpec>,
    channel: Option<&StatusChannel>,
    factory: Option<&SocketFactory>,
) -> Result<Command> {
    let (Some(spec), Some(channel)) = (spec, channel) else {
        let mut command = Command::new(&opts.command[0]);
        command.args(&opts.command[1..]);
        return Ok(command);
    };
    let helper = opts
        .helper
        .clone()
        .or_else(|| std::env::current_exe().ok())
        .ok_or_else(|| {
            Error::internal("cannot find the a3s-iso executable for the sandbox helper")
        })?;
    let mut command = Command::new(helper);
    command.arg("sandbox-exec");
    channel.pass_to(&mut command);
    if let Some(factory) = factory {
        factory.pass_to(&mut command);
    }
    command
        .arg("--spec")
        .arg(serde_json::to_string(spec).map_err(|e| Error::internal(e.to_string()))?)
        .arg("--")
        .args(&opts.command);
    Ok(command)
}

/// The command's environment (only what [`command_env`] planned), its working directory, its
/// session or process group, and its stdio. Sandboxed, the helper leads a process group of
/// its own (the command a session of its own inside) and gets `/dev/null` for every stream
/// that is a terminal: the command's terminal is the sandbox's pty, never the caller's.
/// Unsandboxed, the command leads a session of its own (with an interactive pty: that pty is
/// its controlling terminal; otherwise it has none), except on a terminal a3s-iso is in the
/// background of: then it is a background job of that terminal like a3s-iso.
fn set_up(command: &mut Command, opts: &RunOptions, launch: &Launch<'_>) -> Result<()> {
    use std::os::unix::process::CommandExt;
    command
        .current_dir(launch.workdir)
        .env_clear()
        .envs(launch.env.vars.iter().map(|(k, v)| (k, v)));
    let stdout_to_stderr = || -> Result<Stdio> {
        use std::os::fd::AsFd;
        let stderr = std::io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| Error::io("cannot duplicate stderr", e))?;
        Ok(Stdio::from(stderr))
    };
    if let Some(path) = &opts.output {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .ctx(|| format!("cannot open {}", path.display()))?;
        let copy = file
            .try_clone()
            .ctx(|| format!("cannot open {}", path.display()))?;
        command
            .stdin(Stdio::null())
            .stdout(Stdio::from(file))
            .stderr(Stdio::from(copy));
        match launch.spec {
            Some(_) => {
                command.process_group(0);
            }
            None => sandbox::new_session_on_exec(command),
        }
        return Ok(());
    }
    if launch.spec.is_none() {
        match launch.terminal {
            // The pty's own session: host_pty_for makes it.
            TerminalSpec::Interactive => {}
            // A background job of that terminal, whose job control applies as to any other.
            _ if Stream::Stdin.is_terminal() => {
                command.process_group(0);
            }
            _ => sandbox::new_session_on_exec(command),
        }
        if opts.stdout_to_stderr {
            command.stdout(stdout_to_stderr()?);
        }
        return Ok(());
    }
    // Its own process group, so that signals reach the helper and init, which pass them on.
    command.process_group(0);
    let (stdout_pty, stderr_pty) = match launch.terminal {
        TerminalSpec::None => (false, false),
        TerminalSpec::Interactive => (true, true),
        TerminalSpec::Output { stdout, stderr } => (stdout, stderr),
    };
    if launch.terminal == TerminalSpec::Interactive || Stream::Stdin.is_terminal() {
        command.stdin(Stdio::null());
    }
    if stdout_pty {
        command.stdout(Stdio::null());
    } else if opts.stdout_to_stderr {
        command.stdout(stdout_to_stderr()?);
    }
    if stderr_pty {
        command.stderr(Stdio::null());
    }
    Ok(())
}

/// Waits for the command. Signals a3s-iso receives go on to its process group (and, with a
/// pty, to the foreground group of the command's terminal); at the timeout it gets SIGTERM,
/// then SIGKILL after [`KILL_GRACE`]. A cancelled command's group is killed once it has
/// ended, so nothing it started outlives the run.
fn supervise(
    mut child: Child,
    timeout: Option<Duration>,
    signals: &Signals,
    sandboxed: bool,
    terminal: Option<&CommandTerminal>,
) -> Result<Ended> {
    use std::os::unix::process::ExitStatusExt;
    use std::sync::mpsc::RecvTimeoutError;
    let group = rustix::process::Pid::from_raw(child.id() as i32)
        .ok_or_else(|| Error::internal("a child without a pid"))?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let kill = |signal: rustix::process::Signal| {
        let _ = rustix::process::kill_process_group(group, signal);
        // In the sandbox, the command leads a session of its own, outside the helper's group.
        if let Some(foreground) = terminal.and_then(CommandTerminal::foreground)
            && foreground != group
        {
            let _ = rustix::process::kill_process_group(foreground, signal);
        }
    };
    let deadline = timeout.map(|t| Instant::now() + t);
    let mut forwarded = None;
    let mut timed_out = false;
    let mut kill_at: Option<Instant> = None;
    let status = loop {
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(status) => break status.map_err(|e| Error::io("cannot wait for the command", e))?,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                return Err(Error::internal("lost track of the command"));
            }
        }
        if let Some(signal) = signals.take() {
            forwarded = Some(signal);
            if let Some(sig) = rustix::process::Signal::from_named_raw(signal) {
                kill(sig);
            }
        }
        if deadline.is_some_and(|d| Instant::now() >= d) && !timed_out {
            timed_out = true;
            kill(rustix::process::Signal::TERM);
            // A stopped command takes its SIGTERM once continued (as timeout(1) does).
            kill(rustix::process::Signal::CONT);
            kill_at = Some(Instant::now() + KILL_GRACE);
        }
        if kill_at.is_some_and(|k| Instant::now() >= k) {
            if sandboxed {
                // The helper ends the whole sandbox and waits until nothing in it runs.
                let _ = rustix::process::kill_process(group, rustix::process::Signal::USR1);
            } else {
                kill(rustix::process::Signal::KILL);
            }
            kill_at = None;
        }
    };
    if forwarded.is_some() || timed_out {
        // Cancelled: nothing it started may outlive the run.
        kill(rustix::process::Signal::KILL);
    }
    Ok(Ended {
        exit_code: status.code(),
        signal: status.signal(),
        forwarded,
        timed_out,
    })
}

/// Leaves nothing the run wrote that would make your own git execute code in the isolation
/// (`neutralize`): the admin dir's `config.worktree`, and the config and hooks of every nested
/// repository and submodule the snapshot found. Returns its warnings.
fn neutralize(
    ctx: &Context,
    located: &Located,
    isolation: &Isolation,
    (snap, nested): (
        &crate::model::snapshot::Snapshot,
        &crate::services::nested::Nested,
    ),
) -> Vec<String> {
    use crate::base::paths::RepoPath;
    let mut paths: Vec<RepoPath> = snap.gitlinks.clone();
    paths.extend(nested.covered.iter().cloned());
    paths.extend(nested.skipped.iter().map(|s| s.path.clone()));
    paths.extend(
        snap.nested
            .iter()
            .map(|name| RepoPath(name.trim_end_matches('/').as_bytes().to_vec())),
    );
    let dirs = crate::model::neutralize::git_dirs(&isolation.tree, &isolation.admin, &paths);
    crate::model::neutralize::after_run(&ctx.git, &located.repo.common_dir, &isolation.admin, &dirs)
}
