//! `promote`: apply a change set to the source exactly once — `applied`, `idempotent` for a
//! digest already in the journal, `conflict` when the source moved or the patch does not apply
//! (nothing applied), `empty`, or `planned` with `--no-apply`.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::changeset::{self, tree_id};
use crate::context::{Context, Located};
use crate::error::{Error, Result};
use crate::fsutil::{now_ms, write_atomic, write_json_atomic};
use crate::snapshot;
use crate::state::{JournalEntry, SessionRecord};

/// Test-only fault points between `git apply` and the journal write:
/// `A3S_ISO_TEST_FAULT=promote-after-apply` kills the process (the next promote must recover);
/// `promote-interrupt-during-apply` sends it SIGINT (the promote must finish first).
pub const FAULT_VAR: &str = "A3S_ISO_TEST_FAULT";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Patch,
    Branch,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Patch => "patch",
            Mode::Branch => "branch",
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct PromoteOptions {
    pub session_id: Option<String>,
    pub change_set: Option<PathBuf>,
    pub mode: Mode,
    pub no_apply: bool,
    pub artifacts: Option<PathBuf>,
    pub note: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PromoteOutcome {
    /// `applied`, `idempotent`, `conflict`, `empty`, `planned` or `noted`.
    pub outcome: &'static str,
    pub digest: Option<String>,
    pub session_id: Option<String>,
    pub mode: &'static str,
    /// For `conflict`: `head_moved`, `patch_does_not_apply` or `replay_failed`.
    pub reason: Option<&'static str>,
    pub bound_revision: Option<String>,
    pub current_revision: Option<String>,
    pub artifacts: Option<PathBuf>,
    pub patch_bytes: u64,
    pub files_changed: u64,
    /// Paths of the patch that collide with the source's uncommitted work (for `conflict`).
    pub conflicting_paths: Vec<String>,
    pub nested_repositories: Vec<String>,
    pub detail: Option<String>,
    pub warnings: Vec<String>,
    /// Branch mode: the retained branch, the commits replayed and skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<crate::branch::BranchReport>,
}

impl PromoteOutcome {
    pub fn new(outcome: &'static str, mode: Mode) -> PromoteOutcome {
        PromoteOutcome {
            outcome,
            digest: None,
            session_id: None,
            mode: mode.as_str(),
            reason: None,
            bound_revision: None,
            current_revision: None,
            artifacts: None,
            patch_bytes: 0,
            files_changed: 0,
            conflicting_paths: Vec::new(),
            nested_repositories: Vec::new(),
            detail: None,
            warnings: Vec::new(),
            branch: None,
        }
    }

    /// 0 for every outcome but `conflict` (3).
    pub fn exit_code(&self) -> i32 {
        if self.outcome == "conflict" { 3 } else { 0 }
    }
}

/// A change set ready to promote: its patch bytes and where they came from.
pub struct Candidate {
    pub patch: Vec<u8>,
    pub digest: String,
    pub session: Option<SessionRecord>,
    pub result_tree: Option<String>,
    /// What the patch applies to: the session's base tree (HEAD's, or the carried WIP's), or
    /// for a document, the source's HEAD.
    pub base_tree: Option<String>,
    pub nested: Vec<String>,
}

fn check_digest_format(digest: &str) -> Result<()> {
    let ok = crate::changeset::is_sha256_digest(digest);
    if ok {
        Ok(())
    } else {
        Err(Error::Usage {
            message: format!("--note {digest:?} is not sha256: and 64 lowercase hex digits"),
        })
    }
}

pub fn promote(ctx: &Context, opts: &PromoteOptions) -> Result<PromoteOutcome> {
    if let Some(digest) = &opts.note {
        return note(ctx, opts, digest);
    }
    // A document is checked completely before anything else.
    let verified = match &opts.change_set {
        Some(path) => Some(changeset::verify_file(path)?),
        None => None,
    };
    let located = ctx.locate()?;
    let session = match &verified {
        Some(_) => None,
        None => Some(ctx.resolve_session(&located, opts.session_id.as_deref())?),
    };
    if opts.mode == Mode::Branch {
        let Some(session) = session else {
            return Err(Error::Usage {
                message: "branch mode promotes a session (-s ID), not a change-set file".into(),
            });
        };
        return crate::branch::promote_branch(ctx, &located, session, opts);
    }
    let _lock = ctx.lock(&located.repo)?;
    let candidate = match (verified, session) {
        (Some(verified), _) => Candidate {
            digest: verified.change_set.patch_digest.clone(),
            result_tree: Some(tree_id(&verified.change_set.result_tree).to_string()),
            patch: verified.patch,
            session: None,
            base_tree: None,
            nested: Vec::new(),
        },
        (None, Some(session)) => fresh_capture(ctx, &located, session)?,
        (None, None) => return Err(Error::internal("nothing to promote")),
    };
    apply_candidate(ctx, &located, candidate, opts)
}

/// Step 1 for a session: a fresh cumulative capture (base = the session's base tree).
fn fresh_capture(ctx: &Context, located: &Located, session: SessionRecord) -> Result<Candidate> {
    let snap = crate::isolation::writable_isolation(&session)?.snapshot(ctx, located)?;
    let patch = snapshot::patch(
        &ctx.git,
        &located.repo.toplevel,
        &session.base_tree,
        &snap.tree,
        &located.store.scratch_dir(),
    )?;
    Ok(Candidate {
        patch: patch.read()?,
        digest: patch.digest,
        base_tree: Some(session.base_tree.clone()),
        session: Some(session),
        result_tree: Some(snap.tree),
        nested: snap.nested,
    })
}

/// Steps 2–6 under the repository lock: empty, journal, HEAD, check and apply, journal.
pub fn apply_candidate(
    ctx: &Context,
    located: &Located,
    candidate: Candidate,
    opts: &PromoteOptions,
) -> Result<PromoteOutcome> {
    let source = candidate
        .session
        .as_ref()
        .map(|s| s.source.clone())
        .unwrap_or_else(|| located.repo.toplevel.clone());
    let mut out = PromoteOutcome::new("empty", Mode::Patch);
    out.session_id = candidate.session.as_ref().map(|s| s.session_id.clone());
    out.patch_bytes = candidate.patch.len() as u64;
    out.files_changed = snapshot::count_files(&candidate.patch);
    out.nested_repositories = candidate.nested.clone();
    out.warnings.extend(candidate.nested.iter().map(|p| {
        format!("nested repository {p} is not part of the change set; promote it on its own")
    }));
    if candidate.patch.is_empty() {
        return Ok(out);
    }
    out.digest = Some(candidate.digest.clone());
    if located.store.journal_entry(&candidate.digest)?.is_some() {
        out.outcome = "idempotent";
        return Ok(out);
    }
    let head = crate::repo::Repo {
        toplevel: source.clone(),
        common_dir: located.repo.common_dir.clone(),
    }
    .head_commit(&ctx.git);
    if let Some(session) = &candidate.session {
        out.bound_revision = Some(session.bound_revision.clone());
        out.current_revision = head.clone();
        if head.as_deref() != Some(session.bound_revision.as_str()) {
            out.outcome = "conflict";
            out.reason = Some("head_moved");
            return Ok(out);
        }
    }

    let (artifacts, patch_file) =
        write_artifacts(located, opts, &candidate.digest, &candidate.patch, &mut out)?;
    if opts.no_apply {
        return Ok(out);
    }

    let apply = |extra: &[&str]| {
        ctx.git
            .at(&source)
            .args(["-c", "apply.whitespace=nowarn", "apply", "--binary"])
            .args(extra)
            .arg(&patch_file)
    };
    let forward = apply(&["--check"]).output()?;
    if forward.exit_code != Some(0) {
        // Already there (a crash between apply and journal)? Then it is this promote's own
        // earlier landing: repair the journal.
        if apply(&["--check", "--reverse"]).output()?.exit_code == Some(0) {
            journal(located, &candidate, head.as_deref(), "recovered")?;
            out.outcome = "idempotent";
            out.warnings.push("the patch was already present (an earlier promote was interrupted); journal repaired".into());
            write_summary(&artifacts, &out)?;
            return Ok(out);
        }
        out.outcome = "conflict";
        out.reason = Some("patch_does_not_apply");
        out.current_revision = head.clone();
        out.detail = Some(forward.stderr.trim().to_string());
        write_summary(&artifacts, &out)?;
        return Ok(out);
    }
    // The source's uncommitted work must not meet the patch: any touched path whose current
    // state differs from the change set's base is a conflict, even where git could merge it.
    let touched = touched_paths(ctx, &source, &patch_file)?;
    let overlap = match &candidate.base_tree {
        // The base is a carried WIP snapshot: compare the checkout with it.
        Some(base) if candidate.session.as_ref().is_some_and(|s| s.carried_wip) => {
            crate::wip::changed_since(
                &ctx.git,
                &source,
                base,
                &touched,
                &located.store.scratch_dir(),
            )?
        }
        // The base is HEAD's tree: anything uncommitted at a touched path collides.
        _ => uncommitted_among(ctx, &source, &touched)?,
    };
    if !overlap.is_empty() {
        out.outcome = "conflict";
        out.reason = Some("patch_does_not_apply");
        out.current_revision = head.clone();
        out.detail = Some("the patch touches files with uncommitted changes in the source".into());
        out.conflicting_paths = overlap;
        write_summary(&artifacts, &out)?;
        return Ok(out);
    }
    // From here to the journal nothing may stop halfway: interrupts wait, and git apply runs
    // where a Ctrl-C at the terminal cannot reach it.
    let interrupts = crate::signals::Signals::register()?;
    let applied = apply(&[]).shielded().output()?;
    if applied.exit_code != Some(0) {
        return Err(Error::GitFailed {
            failure: crate::error::GitFailure {
                args: vec!["apply".into(), patch_file.display().to_string()],
                exit_code: applied.exit_code,
                stderr: applied.stderr,
            },
        });
    }
    if std::env::var(FAULT_VAR).as_deref() == Ok("promote-interrupt-during-apply") {
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::INT);
    }
    if std::env::var(FAULT_VAR).as_deref() == Ok("promote-after-apply") {
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    }
    journal(located, &candidate, head.as_deref(), "applied")?;
    out.outcome = "applied";
    if interrupts.received().is_some() {
        out.warnings.push(
            "an interrupt arrived while the patch was being applied; the promote finished first"
                .into(),
        );
    }
    write_summary(&artifacts, &out)?;
    Ok(out)
}

fn journal(located: &Located, candidate: &Candidate, head: Option<&str>, how: &str) -> Result<()> {
    located.store.record_promoted(&JournalEntry {
        digest: candidate.digest.clone(),
        session_id: candidate.session.as_ref().map(|s| s.session_id.clone()),
        promoted_at_ms: now_ms(),
        source_head: head.map(str::to_string),
        patch_bytes: candidate.patch.len() as u64,
        how: how.into(),
        mode: "patch".into(),
    })
}

/// Writes the patch and a `planned` summary before anything is applied; returns the artifacts
/// dir and the patch file.
pub fn write_artifacts(
    located: &Located,
    opts: &PromoteOptions,
    digest: &str,
    patch: &[u8],
    out: &mut PromoteOutcome,
) -> Result<(PathBuf, PathBuf)> {
    let artifacts = opts.artifacts.clone().unwrap_or_else(|| {
        located
            .store
            .dir()
            .join("artifacts")
            .join(digest.trim_start_matches("sha256:"))
    });
    let patch_file = artifacts.join("change.patch");
    write_atomic(&patch_file, patch)?;
    out.artifacts = Some(artifacts.clone());
    out.outcome = "planned";
    write_summary(&artifacts, out)?;
    Ok((artifacts, patch_file))
}

pub fn write_summary(dir: &Path, out: &PromoteOutcome) -> Result<()> {
    write_json_atomic(&dir.join("summary.json"), out)
}

/// `--note DIGEST`: the host promoted this change set by its own means.
fn note(ctx: &Context, opts: &PromoteOptions, digest: &str) -> Result<PromoteOutcome> {
    check_digest_format(digest)?;
    let located = ctx.locate()?;
    let _lock = ctx.lock(&located.repo)?;
    let mut out = PromoteOutcome::new("noted", opts.mode);
    out.digest = Some(digest.to_string());
    out.session_id = opts.session_id.clone();
    if located.store.journal_entry(digest)?.is_some() {
        out.outcome = "idempotent";
        return Ok(out);
    }
    located.store.record_promoted(&JournalEntry {
        digest: digest.to_string(),
        session_id: opts.session_id.clone(),
        promoted_at_ms: now_ms(),
        source_head: located.repo.head_commit(&ctx.git),
        patch_bytes: 0,
        how: "noted".into(),
        mode: opts.mode.as_str().into(),
    })?;
    Ok(out)
}

/// The paths a patch touches, as git apply reads them.
fn touched_paths(ctx: &Context, source: &Path, patch_file: &Path) -> Result<Vec<String>> {
    let out = ctx
        .git
        .at(source)
        .args(["apply", "--numstat", "-z"])
        .arg(patch_file)
        .run()?;
    // Records: "added\tdeleted\tpath\0" (no renames: --no-renames patches).
    Ok(crate::git::split_nul(&out)
        .filter_map(|record| {
            let text = String::from_utf8_lossy(record);
            text.splitn(3, '\t').nth(2).map(str::to_string)
        })
        .collect())
}

/// Which of `paths` have uncommitted changes (staged or not) or are untracked in the source.
fn uncommitted_among(ctx: &Context, source: &Path, paths: &[String]) -> Result<Vec<String>> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let out = ctx
        .git
        .at(source)
        .args([
            "--literal-pathspecs",
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--",
        ])
        .args(paths)
        .run()?;
    Ok(crate::git::split_nul(&out)
        .filter(|record| record.len() > 3)
        .map(|record| String::from_utf8_lossy(&record[3..]).into_owned())
        .collect())
}
