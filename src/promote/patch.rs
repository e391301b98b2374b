//! Patch mode: the change set lands as uncommitted changes, never merged into the user's own
//! uncommitted work. `git apply --check` decides whether it applies; `git apply --cached` on a
//! temporary index of the touched paths computes the post-images; an fsynced intent records
//! both sides; then each path is written by rename and the digest journaled, in one
//! uninterruptible step. A crash anywhere in it is finished by the next command (`intent`).

use std::path::Path;

use super::artifacts::Artifacts;
use super::gitlink::prepare_bumps;
use super::journal::journal;
use super::options::{Candidate, PromoteOptions};
use super::outcome::{Mode, Outcome, PromoteOutcome, Reason};
use crate::context::{Context, Located};
use crate::error::Result;
use crate::git::split_nul;
use crate::intent::{
    self, Changes, Checkout, Intent, PatchPlan, PathState, Planned, RepoPath, Side,
};
use crate::repo::Repo;
use crate::state::Landing;

/// What the checks before applying found.
pub(super) enum Check {
    /// The patch applies and meets no uncommitted work: every touched path's images (a
    /// submodule's new commit already in the source's submodule).
    Applies(PatchPlan),
    /// Every touched path already holds what the change set makes of it, but no record says
    /// that a promote put it there.
    Present(Vec<RepoPath>),
    /// The patch does not apply; git's explanation.
    DoesNotApply(String),
    /// The patch touches paths the user changed and has not committed.
    MeetsWip(Vec<RepoPath>),
    /// The patch moves submodules that cannot be moved in the source; why.
    Gitlinks(Vec<RepoPath>, String),
}

/// Steps 2–6 for the root change set: empty, journal, pending intent, HEAD, artifacts,
/// check, apply, journal. The artifacts' summary is the caller's to write, once the nested
/// change sets are done.
pub(super) fn promote_patch(
    ctx: &Context,
    located: &Located,
    candidate: &Candidate,
    opts: &PromoteOptions,
) -> Result<(PromoteOutcome, Option<Artifacts>)> {
    let mut out = initial_report(ctx, candidate);
    if candidate.patch.bytes == 0 {
        return Ok((out, None));
    }
    let digest = candidate.patch.digest.clone();
    out.digest = Some(digest.clone());
    if located.store.journal_entry(&digest)?.is_some() {
        out.outcome = Outcome::Idempotent;
        return Ok((out, None));
    }
    if let Some(paths) = intent::blocking(&ctx.git, &located.store, &digest)? {
        out.conflict(Reason::PatchDoesNotApply, Some(INTERRUPTED.into()));
        out.set_conflicting_paths(paths);
        return Ok((out, None));
    }
    let source = source_of(located, candidate);
    let head = source.head_commit(&ctx.git);
    if let Some(session) = &candidate.session {
        out.bound_revision = Some(session.bound_revision.clone());
        out.current_revision = head.clone();
        if head.as_deref() != Some(session.bound_revision.as_str()) {
            out.conflict(Reason::HeadMoved, None);
            return Ok((out, None));
        }
    }
    let artifacts = Artifacts::write(
        located,
        opts.artifacts.as_deref(),
        &candidate.patch,
        &mut out,
    )?;
    if opts.no_apply {
        return Ok((out, Some(artifacts)));
    }
    match check(ctx, located, candidate, &source.toplevel, &artifacts.patch)? {
        Check::Applies(plan) => {
            let landing = Lander {
                ctx,
                located,
                candidate,
                key: &digest,
                source: &source.toplevel,
                head: head.as_deref(),
                then: None,
            };
            landing.apply_and_journal(plan, &mut out)?;
        }
        conflict => report_conflict(conflict, head, &mut out),
    }
    Ok((out, Some(artifacts)))
}

/// Why a change set whose promote was interrupted cannot be promoted again yet.
pub(super) const INTERRUPTED: &str = "an interrupted promote of this change set left these paths changed since it stopped; put them back as they were (or as the change set makes them) and promote again";

/// The report before any check: sizes, session, nested repositories, and what recovery under
/// the lock did.
fn initial_report(ctx: &Context, candidate: &Candidate) -> PromoteOutcome {
    let mut out = PromoteOutcome::new(Outcome::Empty, Mode::Patch);
    out.session_id = candidate.session.as_ref().map(|s| s.session_id.clone());
    out.patch_bytes = candidate.patch.bytes;
    out.files_changed = candidate.patch.files_changed;
    out.nested_repositories = candidate.nested.clone();
    out.warnings.extend(ctx.take_notices());
    out.warnings.extend(candidate.nested.iter().map(|p| {
        format!("nested repository {p} is not part of the change set; promote it on its own")
    }));
    out.warnings
        .extend(candidate.nested_skipped.iter().map(|s| {
            format!(
                "nested repository {} could not be captured: {}",
                s.path, s.why
            )
        }));
    out
}

/// A check that stops the promote, as a conflict.
pub(super) fn report_conflict(check: Check, head: Option<String>, out: &mut PromoteOutcome) {
    let (detail, paths) = match check {
        Check::Applies(..) => return,
        Check::Present(paths) => (
            "the change set appears to be in the checkout already, but no promote of it is recorded; nothing applied (promote --note DIGEST records it)".to_string(),
            paths,
        ),
        Check::DoesNotApply(detail) => (detail, Vec::new()),
        Check::MeetsWip(paths) => (
            "the patch touches files with uncommitted changes in the source".to_string(),
            paths,
        ),
        Check::Gitlinks(paths, detail) => {
            out.conflict(Reason::SubmoduleNotUpdated, Some(detail));
            out.current_revision = head;
            out.set_conflicting_paths(paths);
            return;
        }
    };
    out.conflict(Reason::PatchDoesNotApply, Some(detail));
    out.current_revision = head;
    out.set_conflicting_paths(paths);
}

/// The checkout the change set lands in: the session's source, or the located one.
fn source_of(located: &Located, candidate: &Candidate) -> Repo {
    Repo {
        toplevel: candidate
            .session
            .as_ref()
            .map(|s| s.source.clone())
            .unwrap_or_else(|| located.repo.toplevel.clone()),
        common_dir: located.repo.common_dir.clone(),
    }
}

/// Decides whether the patch can land, and plans every touched path's images if it can.
pub(super) fn check(
    ctx: &Context,
    located: &Located,
    candidate: &Candidate,
    source: &Path,
    patch_file: &Path,
) -> Result<Check> {
    let touched = touched_paths(ctx, source, patch_file)?;
    let checkout = Checkout::open(&ctx.git, source)?;
    let states = checkout.states(&touched, true)?;
    if already_present(ctx, &checkout, candidate, &touched, &states)? {
        return Ok(Check::Present(touched.clone()));
    }
    if let Err(detail) = ctx.git.apply_check(source, patch_file, false)? {
        return Ok(Check::DoesNotApply(detail));
    }
    // The source's uncommitted work must not meet the patch: any touched path whose current
    // state differs from the change set's base is a conflict, even where git could merge it.
    let overlap = match &candidate.base_tree {
        // The base is a carried WIP snapshot: compare the checkout with it.
        Some(base) if candidate.session.as_ref().is_some_and(|s| s.carried_wip) => {
            let scratch = located.store.scratch_dir();
            crate::wip::changed_since(&ctx.git, source, base, &touched, &scratch)?
        }
        // The base is HEAD's tree: anything uncommitted at a touched path collides.
        _ => uncommitted_among(ctx, source, &touched)?,
    };
    if !overlap.is_empty() {
        return Ok(Check::MeetsWip(overlap));
    }
    let scratch = located.store.scratch_dir();
    Ok(
        match intent::plan_patch(&ctx.git, source, patch_file, &touched, &states, &scratch)? {
            Planned::Plan(plan) => {
                match prepare_bumps(&ctx.git, located, candidate, source, &plan)? {
                    Ok(()) => Check::Applies(plan),
                    Err((paths, detail)) => Check::Gitlinks(paths, detail),
                }
            }
            Planned::DoesNotApply(detail) => Check::DoesNotApply(detail),
        },
    )
}

/// Whether every touched path already holds the change set's result (the session's snapshot,
/// or a document's result tree when this repository has it): decided from blob ids.
fn already_present(
    ctx: &Context,
    checkout: &Checkout<'_>,
    candidate: &Candidate,
    touched: &[RepoPath],
    states: &[PathState],
) -> Result<bool> {
    let Some(tree) = &candidate.result_tree else {
        return Ok(false);
    };
    if touched.is_empty() {
        return Ok(false);
    }
    // A document's result tree may not be in this repository: then nothing can be told.
    let Some(result) = intent::tree_images(&ctx.git, checkout.top, tree, touched)? else {
        return Ok(false);
    };
    Ok(states
        .iter()
        .zip(&result)
        .all(|(state, want)| checkout.holds(state, want.as_ref())))
}

/// A step after the files are written and before the journal.
pub(super) type AfterWrite<'a> = dyn Fn(&PatchPlan) -> Result<()> + 'a;

/// Where a planned change set lands, and who journals it.
pub(super) struct Lander<'a> {
    pub(super) ctx: &'a Context,
    pub(super) located: &'a Located,
    pub(super) candidate: &'a Candidate,
    /// The journal's key: the root patch's digest, or a nested change set's key.
    pub(super) key: &'a str,
    /// The checkout it lands in: the source, or one of its nested repositories.
    pub(super) source: &'a Path,
    pub(super) head: Option<&'a str>,
    /// What else must happen once the files are written and before the journal (branch
    /// mode's commit in a nested repository); a failure puts the files back.
    pub(super) then: Option<&'a AfterWrite<'a>>,
}

impl Lander<'_> {
    /// The intent of this promote: both images of every touched path.
    fn intent(&self, plan: &PatchPlan) -> Intent {
        Intent {
            schema: intent::SCHEMA.into(),
            digest: self.key.to_string(),
            session_id: self
                .candidate
                .session
                .as_ref()
                .map(|s| s.session_id.clone()),
            mode: Mode::Patch,
            source: self.source.to_path_buf(),
            source_head: self.head.map(str::to_string),
            patch_bytes: self.candidate.patch.bytes,
            created_at_ms: crate::fsutil::now_ms(),
            pid: std::process::id(),
            changes: Changes::Patch(plan.clone()),
        }
    }

    /// Records the intent, writes every touched path and journals. From the intent to the
    /// journal nothing may stop halfway: interrupts wait. A crash is finished by the next
    /// command; a failure to write puts back what was written.
    pub(super) fn apply_and_journal(
        &self,
        plan: PatchPlan,
        out: &mut PromoteOutcome,
    ) -> Result<()> {
        let store = &self.located.store;
        let digest = self.key;
        intent::save(store, &self.intent(&plan))?;
        crate::fault_point!("promote-after-intent");
        let interrupts = crate::signals::Signals::register()?;
        let checkout = Checkout::open(&self.ctx.git, self.source)?;
        let tag = intent::tag(digest);
        let todo: Vec<usize> = (0..plan.paths.len()).collect();
        // Submodules move with the other paths (`Checkout::write`): a gitlink's image is its
        // commit, so recovery moves them too.
        let written = checkout
            .write(&tag, &plan, &todo, Side::Post)
            .and_then(|()| self.then.map_or(Ok(()), |then| then(&plan)));
        if let Err(e) = written {
            self.put_back(&checkout, &tag, &plan);
            return Err(e);
        }
        crate::fault_point!("promote-interrupt-during-apply");
        crate::fault_point!("promote-after-apply");
        self.record(Landing::Applied)?;
        crate::fault_point!("promote-after-journal");
        intent::remove(store, digest)?;
        out.outcome = Outcome::Applied;
        if interrupts.received().is_some() {
            out.warnings.push(
                "an interrupt arrived while the patch was being applied; the promote finished first"
                    .into(),
            );
        }
        Ok(())
    }

    /// After a failed write: every path back to its pre-image and the intent dropped; if that
    /// fails too, the intent stays for the next command to finish.
    fn put_back(&self, checkout: &Checkout<'_>, tag: &str, plan: &PatchPlan) {
        checkout.clear_temps(tag, plan);
        let paths: Vec<RepoPath> = plan.paths.iter().map(|c| c.path.clone()).collect();
        let Ok(states) = checkout.states(&paths, false) else {
            return;
        };
        let todo: Vec<usize> = plan
            .paths
            .iter()
            .zip(&states)
            .enumerate()
            .filter(|(_, (change, state))| !checkout.holds(state, change.pre.as_ref()))
            .map(|(i, _)| i)
            .collect();
        if checkout.write(tag, plan, &todo, Side::Pre).is_ok() {
            checkout.remove_created_dirs(plan);
            let _ = intent::remove(&self.located.store, self.key);
        }
    }

    fn record(&self, how: Landing) -> Result<()> {
        journal(
            self.located,
            self.key,
            self.candidate
                .session
                .as_ref()
                .map(|s| s.session_id.as_str()),
            self.head,
            self.candidate.patch.bytes,
            how,
            Mode::Patch,
        )
    }
}

/// The paths a patch touches, as git apply reads them (bytes, exactly).
fn touched_paths(ctx: &Context, source: &Path, patch_file: &Path) -> Result<Vec<RepoPath>> {
    let out = ctx
        .git
        .at(source)
        .args(["apply", "--numstat", "-z"])
        .arg(patch_file)
        .run()?;
    // Records: "added\tdeleted\tpath\0" (no renames: --no-renames patches).
    let mut paths: Vec<RepoPath> = split_nul(&out)
        .filter_map(|record| {
            let mut fields = record.splitn(3, |b| *b == b'\t');
            fields.nth(2).map(|path| RepoPath(path.to_vec()))
        })
        .collect();
    paths.dedup();
    Ok(paths)
}

/// Which of `paths` have uncommitted changes (staged or not) or are untracked in the source.
fn uncommitted_among(ctx: &Context, source: &Path, paths: &[RepoPath]) -> Result<Vec<RepoPath>> {
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
        .args(paths.iter().map(RepoPath::as_os))
        .run()?;
    Ok(split_nul(&out)
        .filter(|record| record.len() > 3)
        .map(|record| RepoPath(record[3..].to_vec()))
        .collect())
}
