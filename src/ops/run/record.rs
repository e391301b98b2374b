//! `run`'s last step, record: the layer merged, allowed files written back, new objects and
//! git state settled, evidence stored, what could make git execute code neutralized, and the
//! exit recorded: the [`RunOutcome`].

use std::ffi::OsString;
use std::path::PathBuf;

use serde::Serialize;

use crate::base::error::{Error, Result};
use crate::base::ids::{RunId, SessionId, TreeId};
use crate::base::sandbox::SandboxReport;
use crate::base::warning::{PromoteWarning, RunWarning, Warning};
use crate::context::{Context, Located};
use crate::model::changeset::RunState;
use crate::ops::run::launch::{GitState, RunResult, Staged};
use crate::ops::run::plan::{Planned, command_path};
use crate::ops::run::request::RunOptions;
use crate::ops::run::supervise::Exited;
use crate::ops::run::target::Claimed;
use crate::recovery::session_git;
use crate::services::evidence::{Evidence, Target, record_evidence};
use crate::services::hidden_paths::HiddenPath;
use crate::services::network::NetworkReport;
use crate::store::state::Ran;

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
    pub session_id: SessionId,
    /// The run's id (generated ones included).
    pub run_id: RunId,
    /// `completed` (exit 0), `failed` (non-zero exit) or `cancelled` (signal, interrupt, timeout).
    pub state: RunState,
    /// The command's exit code; `null` when a signal ended it.
    pub exit_code: Option<i32>,
    /// The signal that ended the command, if one did.
    pub signal: Option<i32>,
    /// Whether `--timeout` stopped it.
    pub timed_out: bool,
    /// What it ran, where, under which profile and timeout, and when: the exit record's.
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
    pub warnings: Vec<Warning>,
    /// When the command failed: the paths the sandbox kept from it, each with what to allow.
    pub hidden_paths: Vec<HiddenPath>,
    /// The nested change sets, stored beside the run's document (absent when none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nested: Vec<crate::services::nested::NestedChangeSet>,
    /// The exit status for a3s-iso itself.
    #[serde(skip)]
    pub status: i32,
    /// With [`RunOptions::throwaway`] and the layer thrown away: the paths the command wrote.
    /// `None`: they are in the isolation, for the caller to move back.
    #[serde(skip)]
    pub dropped: Option<Vec<String>>,
}

/// Records what the run changed and how it ended (`exited`); its layer is merged either way.
pub(crate) fn record(
    ctx: &Context,
    opts: &RunOptions,
    planned: &Planned,
    staged: Staged,
    exited: Result<Exited>,
) -> Result<RunOutcome> {
    let at = &planned.claimed.target;
    let (before, exited) = staged.before.after(ctx, at, exited)?;
    let git = planned.spec.is_some().then_some(staged.git);
    let mut warnings = after_command(ctx, planned, git)?;
    let dropped = before.dropped();
    let result = before.result(ctx, at)?;
    let (session_id, run_id) = (planned.claimed.session_id(), planned.claimed.run_id());
    let Exited {
        ended,
        network,
        ran,
    } = exited;
    let evidence = Evidence {
        session_id,
        run_id,
        state: ended.state(),
        base_tree: &result.base_tree,
        result_tree: &TreeId::new(&result.result.tree)?,
        release_identity: &at.identity,
    };
    let (change_set, recorded) = record_run(ctx, &at.located, &evidence, &result)?;
    warnings.extend(recorded);
    warnings.extend(neutralize(ctx, at, &result));
    let exit = ended.exit(&ran, &planned.settings, &network);
    (at.located.store).save_run_exit(session_id, run_id, &exit)?;
    Ok(RunOutcome {
        session_id: session_id.clone(),
        run_id: run_id.clone(),
        state: ended.state(),
        exit_code: ended.exit_code,
        signal: ended.signal,
        timed_out: ended.timed_out,
        ran,
        result_ref: at.located.store.refs().run_result(session_id, run_id),
        result_tree: evidence.result_tree.clone(),
        base_tree: result.base_tree.clone(),
        change_set,
        sandbox: report(planned),
        network,
        warnings,
        hidden_paths: hidden_paths_of(planned, ended.state(), &opts.command),
        nested: result.nested.sets(),
        status: ended.status(),
        dropped,
    })
}

/// Once nothing can change the layers: the allowed files written back, then [`after_sandbox`].
fn after_command(ctx: &Context, planned: &Planned, git: Option<GitState>) -> Result<Vec<Warning>> {
    let granted = &planned.granted;
    let mut warnings = granted.held.clone();
    warnings.extend(granted.layers.write_back());
    // Reviewed once nothing can write them; a failed review loses no work (the next run's
    // does it again).
    if let Some((profile, kept)) = &granted.kept {
        match crate::services::profile_review::review(kept, profile) {
            Ok(held) => warnings.extend(held),
            Err(e) => {
                let (home, why) = (kept.home(), e.to_string());
                warnings.push(RunWarning::ProfileNotReviewed { home, why }.into());
            }
        }
    }
    if let Some(git) = git {
        warnings.extend(after_sandbox(ctx, &planned.claimed, git)?);
    }
    Ok(warnings)
}

/// After a sandboxed run: the new objects join the store once checked, then git's changes
/// reach the admin dir ([`settle_layers`]); without layers, HEAD is detached again.
fn after_sandbox(ctx: &Context, claimed: &Claimed, git: GitState) -> Result<Vec<Warning>> {
    let (located, isolation) = (&claimed.target.located, &claimed.target.isolation);
    let session_id = claimed.session_id();
    let mut warnings = claimed.quarantine.migrate(&ctx.git, &located.repo)?.1;
    warnings.extend(git.warnings);
    let (repo, admin) = (&located.repo, &isolation.admin);
    if !git.layered {
        let kept = session_git::keep_head_detached(&ctx.git, repo, admin, &git.head_before);
        warnings.extend(kept);
        return Ok(warnings);
    }
    let settled = session_git::settle(
        &ctx.git,
        repo,
        &located.store,
        session_id,
        (admin, &git.head_before),
    );
    // Recorded first: what fails here the next command finishes; the run's evidence stands.
    warnings.extend(
        settled.unwrap_or_else(|e| vec![RunWarning::GitNotSettled { why: e.to_string() }.into()]),
    );
    Ok(warnings)
}

/// Records the evidence and summarises the change set (one too large for a document warns).
fn record_run(
    ctx: &Context,
    located: &Located,
    evidence: &Evidence<'_>,
    result: &RunResult,
) -> Result<(Option<ChangeSetSummary>, Vec<Warning>)> {
    let nested = &result.nested;
    let mut warnings: Vec<Warning> = (result.result.nested)
        .iter()
        .map(|path| PromoteWarning::NestedLeftOut { path: path.clone() }.into())
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
            let why = err.to_string();
            warnings.push(RunWarning::TreePinnedOnly { why }.into());
            None
        }
        Err(err) => return Err(err),
    };
    Ok((change_set, warnings))
}

/// Leaves nothing the run wrote that would make your git execute code in the isolation: the
/// admin dir's `config.worktree`, and every nested repository's config and hooks.
fn neutralize(ctx: &Context, at: &Target, result: &RunResult) -> Vec<Warning> {
    use crate::base::paths::RepoPath;
    let (snap, nested) = (&result.result, &result.nested);
    let (located, isolation) = (&at.located, &at.isolation);
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

/// What a run reports of its sandbox (`None`: `--no-sandbox`) and of its environment.
fn report(planned: &Planned) -> SandboxReport {
    let (spec, settings) = (planned.spec.as_ref(), &planned.settings);
    let (env, granted) = (&planned.env, &planned.granted);
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

/// What a failed sandboxed command named that the sandbox kept from it, and its interpreter
/// when hidden (`#!/usr/bin/env node` with `node` under `/var/tmp` fails with 127).
fn hidden_paths_of(planned: &Planned, state: RunState, command: &[OsString]) -> Vec<HiddenPath> {
    let path_env = command_path(&planned.env);
    let path_env = path_env.as_deref();
    match (planned.spec.as_ref(), state) {
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
