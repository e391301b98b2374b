//! Patch mode: the change set lands as uncommitted changes, never merged into the user's own.
//! `git apply --check` decides, `git apply --cached` on a temporary index computes the
//! post-images, an fsynced intent records both sides, then each path is written by rename and
//! the digest journaled, uninterrupted; the next command finishes a crash (`intent`).

use std::path::Path;

use crate::base::error::Error;
use crate::base::error::Result;
use crate::base::ids::{CommitId, Digest};
use crate::base::warning::PromoteWarning;
use crate::context::{Context, Located};
use crate::git::Git;
use crate::git::repo::Repo;
use crate::git::{Untracked, split_nul};
use crate::ops::promote::artifacts::Artifacts;
use crate::ops::promote::gitlink::prepare_bumps;
use crate::ops::promote::journal::landed_before;
use crate::ops::promote::options::{Candidate, PromoteOptions};
use crate::ops::promote::outcome::{Mode, Outcome, PromoteOutcome, Reason};
use crate::recovery::intent::{
    self, Changes, Checkout, Entry, Intent, PatchPlan, PathChange, PathState, Planned, RepoPath,
    Side,
};
use crate::store::state::{JournalEntry, Landing};

/// What the checks before applying found.
pub(crate) enum Check {
    /// The patch applies and meets no uncommitted work: every touched path's images.
    Applies(PatchPlan),
    /// Every touched path already holds the result, but no record says a promote put it there.
    Present(Vec<RepoPath>),
    /// The patch does not apply; git's explanation and the paths it names.
    DoesNotApply(String, Vec<RepoPath>),
    /// The patch touches paths the user changed and has not committed.
    MeetsWip(Vec<RepoPath>),
    /// The patch moves submodules that cannot be moved in the source; why.
    Gitlinks(Vec<RepoPath>, String),
}

/// Steps 2–6 for the root change set under the lock; the caller writes the artifacts'
/// summary once the nested change sets are done.
pub(crate) fn promote_patch(
    ctx: &Context,
    located: &Located,
    candidate: &Candidate,
    opts: &PromoteOptions,
) -> Result<(PromoteOutcome, Option<Artifacts>)> {
    let mut out = initial_report(ctx, candidate);
    if candidate.patch.bytes == 0 {
        candidate.replay_last_step(&mut out);
        return Ok((out, None));
    }
    let digest = Digest::new(&candidate.patch.digest)?;
    out.digest = Some(digest.clone());
    if landed_before(&located.store, candidate)? && !opts.reapply {
        out.outcome = Outcome::Idempotent;
        return Ok((out, None));
    }
    // Landing again: the entry of the earlier landing, which this one follows.
    let reapply_of = match opts.reapply {
        true => located
            .store
            .journal_entry(&digest)?
            .map(|e| e.promoted_at_ms),
        false => None,
    };
    if let Some(paths) = intent::blocking(&ctx.git, &located.store, &digest)? {
        out.conflict(Reason::PatchDoesNotApply, Some(INTERRUPTED.into()));
        out.set_conflicting_paths(paths);
        return Ok((out, None));
    }
    let source = source_of(ctx, located, candidate);
    let head = (candidate.source_head.clone()).unwrap_or_else(|| source.head_commit(&ctx.git));
    out.current_revision = head.clone();
    if refused_where_it_lands(ctx, &source.toplevel, candidate, opts, &mut out)? {
        return Ok((out, None));
    }
    let artifacts = Artifacts::write(located, opts, &candidate.patch, &mut out)?;
    if opts.no_apply {
        return Ok((out, Some(artifacts)));
    }
    crate::fault_point!("promote-pause-after-artifacts");
    // The patch decided on is the verified one in the store's scratch: the artifacts' copy
    // may be in a directory others write.
    let patch = candidate.patch.file.path();
    if reapply_of.is_some() && still_landed(ctx, candidate, &source.toplevel, patch)? {
        out.outcome = Outcome::Idempotent;
        out.detail = Some(STILL_LANDED.into());
        return Ok((out, Some(artifacts)));
    }
    match check(ctx, located, candidate, &source.toplevel, patch)? {
        Check::Applies(plan) => {
            let landing = Lander {
                ctx,
                located,
                candidate,
                key: &digest,
                source: &source.toplevel,
                head: head.as_ref(),
                then: None,
                reapply_of,
            };
            landing.apply_and_journal(plan, &mut out)?;
        }
        conflict => report_conflict(conflict, head, &mut out),
    }
    Ok((out, Some(artifacts)))
}

/// Why `--reapply` applied nothing: the earlier landing is still there.
const STILL_LANDED: &str = "its earlier landing is still in your checkout: nothing to apply again";

/// Whether the checkout still holds the result: at every touched path, or by reverse apply.
fn still_landed(
    ctx: &Context,
    candidate: &Candidate,
    source: &Path,
    patch_file: &Path,
) -> Result<bool> {
    let touched = touched_paths(ctx, source, patch_file)?;
    let checkout = Checkout::open(&ctx.git, source)?;
    let states = checkout.states(&touched, true)?;
    if already_present(ctx, &checkout, candidate, (&touched, None), &states)? {
        return Ok(true);
    }
    Ok(ctx.git.apply_check(source, patch_file, true)?.is_ok())
}

/// Why a change set whose promote was interrupted cannot be promoted again yet.
pub(crate) const INTERRUPTED: &str = "an interrupted promote of this change set left these paths changed since it stopped; put them back as they were (or as the change set makes them) and promote again";

/// The report before any check, with what recovery under the lock did.
fn initial_report(ctx: &Context, candidate: &Candidate) -> PromoteOutcome {
    let mut out = PromoteOutcome::new(Outcome::Empty, Mode::Patch);
    out.session_id = candidate.session_id().map(str::to_string);
    candidate.report_step(&mut out);
    out.warnings.extend(ctx.take_notices());
    for path in candidate.nested.iter().cloned() {
        out.warnings
            .push(PromoteWarning::NestedOnItsOwn { path }.into());
    }
    for skip in &candidate.nested_found.skipped {
        let (path, why) = (skip.path.to_string(), skip.why.clone());
        out.warnings
            .push(PromoteWarning::NestedNotCaptured { path, why }.into());
    }
    out
}

/// Whether the promote stops before anything is written: a session's HEAD must be where its
/// last step (or bind) left it; a document's base tree here, and HEAD's unless `--onto-head`.
fn refused_where_it_lands(
    ctx: &Context,
    source: &Path,
    candidate: &Candidate,
    opts: &PromoteOptions,
    out: &mut PromoteOutcome,
) -> Result<bool> {
    if let Some(session) = &candidate.session {
        out.bound_revision = Some(session.bound_revision.clone());
        if out.current_revision.as_deref() != candidate.expected_head() {
            let detail = match candidate.previous.as_ref() {
                Some(p) => Some(format!(
                    "step {} of this session left HEAD at {}{}",
                    p.step.number,
                    p.step.head_after.as_deref().unwrap_or("(none)"),
                    if crate::ops::promote::journal::committed_since(&ctx.git, source, &p.step)? {
                        format!(
                            "; HEAD holds what that step landed (you committed it): a3s-iso rebase -s {} moves the session onto your commit, and the next promote lands only what is new",
                            session.session_id
                        )
                    } else {
                        String::new()
                    }
                )),
                None => None,
            };
            out.conflict(Reason::HeadMoved, detail);
            return Ok(true);
        }
        return Ok(false);
    }
    let Some(base) = &candidate.base_tree else {
        return Ok(false);
    };
    let found = ctx.git.rev_parse(source, &format!("{base}^{{tree}}"))?;
    if found.as_deref() != Some(base.as_str()) {
        out.conflict(
            Reason::BaseUnknown,
            Some(format!(
                "the change set's base tree {base} is not a tree of this repository: it was taken from another one"
            )),
        );
        return Ok(true);
    }
    let head_tree = ctx.git.rev_parse(source, "HEAD^{tree}")?;
    let matches = head_tree.as_deref() == Some(base.as_str());
    out.base_matches_head = Some(matches);
    // A change set landed again goes where it applies, as --onto-head lets it.
    if !matches && !opts.onto_head && !opts.reapply {
        out.conflict(
            Reason::BaseDiffers,
            Some(format!(
                "the change set was taken against tree {base}, HEAD's tree is {}; --onto-head applies it onto the checkout if it applies",
                head_tree.as_deref().unwrap_or("(none)")
            )),
        );
        return Ok(true);
    }
    Ok(false)
}

/// A check that stops the promote, as a conflict.
pub(crate) fn report_conflict(check: Check, head: Option<CommitId>, out: &mut PromoteOutcome) {
    let (reason, detail, paths) = match check {
        Check::Applies(..) => return,
        Check::Present(paths) => {
            out.already_present = true;
            let detail = "the change set appears to be in the checkout already, but no promote of it is recorded; nothing applied (promote --note DIGEST records it)";
            (Reason::PatchDoesNotApply, detail.to_string(), paths)
        }
        Check::DoesNotApply(detail, paths) => (Reason::PatchDoesNotApply, detail, paths),
        Check::MeetsWip(paths) => {
            let detail = "the patch touches files with uncommitted changes in the source";
            (Reason::PatchDoesNotApply, detail.to_string(), paths)
        }
        Check::Gitlinks(paths, detail) => (Reason::SubmoduleNotUpdated, detail, paths),
    };
    out.conflict(reason, Some(detail));
    out.current_revision = head;
    out.set_conflicting_paths(paths);
}

/// The checkout the change set lands in: the session's source, or the located one.
fn source_of(ctx: &Context, located: &Located, candidate: &Candidate) -> Repo {
    let toplevel = (candidate.session.as_ref()).map_or(&located.repo.toplevel, |s| &s.source);
    Repo::new(&ctx.git, toplevel.clone(), located.repo.common_dir.clone())
}

/// Decides whether the patch can land, and plans every touched path's images if it can.
pub(crate) fn check(
    ctx: &Context,
    located: &Located,
    candidate: &Candidate,
    source: &Path,
    patch_file: &Path,
) -> Result<Check> {
    let known = known_changes(ctx, candidate, source)?;
    let touched = match &known {
        Some(changes) => changes.iter().map(|c| c.path.clone()).collect(),
        None => touched_paths(ctx, source, patch_file)?,
    };
    // A path git apply would refuse (outside the repository, or in `.git`) is refused first.
    let unsafe_paths: Vec<RepoPath> = touched
        .iter()
        .filter(|p| !is_plain_path(p))
        .cloned()
        .collect();
    if !unsafe_paths.is_empty() {
        return Ok(Check::DoesNotApply(
            "the patch names paths outside the repository or inside .git".into(),
            unsafe_paths,
        ));
    }
    let checkout = Checkout::open(&ctx.git, source)?;
    let (states, overlap) = read_touched(&checkout, located, candidate, &touched)?;
    let in_the_way = files_in_the_way(source, &touched, &states);
    if !in_the_way.is_empty() {
        return Ok(Check::DoesNotApply(IN_THE_WAY.into(), in_the_way));
    }
    let posts = known
        .as_ref()
        .map(|changes| changes.iter().map(|c| c.post.clone()).collect::<Vec<_>>());
    if already_present(ctx, &checkout, candidate, (&touched, posts), &states)? {
        return Ok(Check::Present(touched.clone()));
    }
    if !overlap.is_empty() {
        return Ok(Check::MeetsWip(overlap));
    }
    let outside = outside_sparse_patterns(ctx, source, &touched)?;
    if !outside.is_empty() {
        return Ok(Check::DoesNotApply(OUTSIDE_SPARSE.into(), outside));
    }
    let scratch = located.store.scratch_dir();
    let planned = match known {
        // Every touched path holds exactly what the change set starts from: the patch applies
        // by construction and its result is the result tree's, so git has nothing to decide.
        Some(changes)
            if changes
                .iter()
                .zip(&states)
                .all(|(c, state)| holds_exactly(state, c.pre.as_ref())) =>
        {
            Planned::Plan(intent::plan_of_changes(source, changes))
        }
        _ => {
            if let Err(detail) = ctx.git.apply_check(source, patch_file, false)? {
                let paths = failing_paths(&detail, &touched);
                return Ok(Check::DoesNotApply(detail, paths));
            }
            let at = intent::Touched {
                paths: &touched,
                pre: &states,
            };
            intent::plan_patch(&ctx.git, source, patch_file, at, &scratch)?
        }
    };
    Ok(match planned {
        Planned::Plan(plan) => match prepare_bumps(&ctx.git, located, candidate, source, &plan)? {
            Ok(()) => Check::Applies(plan),
            Err((paths, detail)) => Check::Gitlinks(paths, detail),
        },
        Planned::DoesNotApply(detail) => {
            let paths = failing_paths(&detail, &touched);
            Check::DoesNotApply(detail, paths)
        }
    })
}

/// What each touched path holds now (stored as a pre-image), and which hold uncommitted work;
/// read side by side with a third git that learns the paths' checkout filters.
fn read_touched(
    checkout: &Checkout<'_>,
    located: &Located,
    candidate: &Candidate,
    touched: &[RepoPath],
) -> Result<(Vec<PathState>, Vec<RepoPath>)> {
    let source = checkout.top;
    std::thread::scope(|scope| {
        let overlap =
            scope.spawn(|| overlap_with_wip(checkout.git, located, candidate, source, touched));
        // What the writer will ask of the same paths; a failure here is asked again there.
        let tag = intent::tag(&candidate.patch.digest);
        scope.spawn(move || checkout.learn_filters(&tag, touched));
        let states = checkout.states(touched, true);
        let overlap = overlap
            .join()
            .unwrap_or_else(|_| Err(Error::internal("the WIP check panicked")));
        Ok((states?, overlap?))
    })
}

/// For a change set made here from two trees, every path it changes with both images; `None`
/// otherwise or when that misses a section of the patch (then git apply reads it).
fn known_changes(
    ctx: &Context,
    candidate: &Candidate,
    source: &Path,
) -> Result<Option<Vec<PathChange>>> {
    let (true, Some(base), Some(result)) = (
        candidate.made_from_trees,
        &candidate.base_tree,
        &candidate.result_tree,
    ) else {
        return Ok(None);
    };
    let changes = match intent::patch_changes(candidate.patch.file.path())? {
        Some(changes) => Some(changes),
        None => intent::tree_changes(&ctx.git, source, base, result)?,
    };
    Ok(changes.filter(|changes| changes.len() as u64 == candidate.patch.files_changed))
}

/// Whether a path holds exactly `want`: the same blob and the same mode (`None`: absent).
fn holds_exactly(state: &PathState, want: Option<&Entry>) -> bool {
    match (state, want) {
        (PathState::Absent, None) => true,
        (PathState::Held(have), Some(want)) => have == want,
        _ => false,
    }
}

/// The touched paths holding uncommitted work: a conflict even where git could merge it.
fn overlap_with_wip(
    git: &Git,
    located: &Located,
    candidate: &Candidate,
    source: &Path,
    touched: &[RepoPath],
) -> Result<Vec<RepoPath>> {
    match &candidate.base_tree {
        // A carried WIP snapshot, or the last step's uncommitted result: compared with it.
        Some(base)
            if candidate.previous.is_some()
                || candidate.session.as_ref().is_some_and(|s| s.carried_wip) =>
        {
            let alternate = candidate.alternate_objects.as_deref();
            let scratch = located.store.scratch_dir();
            crate::model::wip::changed_since(git, source, (base, alternate), touched, &scratch)
        }
        _ if touched.is_empty() => Ok(Vec::new()),
        // HEAD's tree: anything uncommitted or untracked at a touched path collides.
        _ => {
            let out = git.status_of(source, Untracked::All, touched.iter().map(RepoPath::as_os))?;
            Ok(status_paths(&out))
        }
    }
}

/// Why a change set that needs a directory where the checkout has a file does not land.
const IN_THE_WAY: &str = "the patch writes beneath a file of your checkout that it does not remove (a directory is needed there); move that file away and promote again";

/// Untouched files (or links) where a touched path needs a directory, each once, with the
/// touched paths beneath it.
fn files_in_the_way(source: &Path, touched: &[RepoPath], states: &[PathState]) -> Vec<RepoPath> {
    let touched_set: std::collections::BTreeSet<&[u8]> =
        touched.iter().map(|p| p.0.as_slice()).collect();
    let mut found = std::collections::BTreeSet::new();
    // Each directory is looked at once, however many new paths it holds.
    let mut seen: std::collections::HashMap<&[u8], bool> = std::collections::HashMap::new();
    for (path, state) in touched.iter().zip(states) {
        if *state != PathState::Absent {
            continue;
        }
        let ancestors = path.0.iter().enumerate().filter(|(_, b)| **b == b'/');
        for (at, _) in ancestors {
            let above = &path.0[..at];
            let blocks = *seen.entry(above).or_insert_with(|| {
                let full = RepoPath(above.to_vec()).under(source);
                std::fs::symlink_metadata(&full).is_ok_and(|m| !m.is_dir())
            });
            if blocks && !touched_set.contains(above) {
                found.insert(RepoPath(above.to_vec()));
                found.insert(path.clone());
                break;
            }
        }
    }
    found.into_iter().collect()
}

/// Why a change set that changes files the sparse checkout leaves out does not land.
const OUTSIDE_SPARSE: &str = "the patch changes files outside the checkout's sparse-checkout patterns, which are not in the checkout; add them (git sparse-checkout add) and promote again";

/// The touched paths a sparse checkout leaves off disk: git apply cannot change them.
fn outside_sparse_patterns(
    ctx: &Context,
    source: &Path,
    touched: &[RepoPath],
) -> Result<Vec<RepoPath>> {
    if touched.is_empty() || !ctx.git.core_settings(source)?.sparse_checkout {
        return Ok(Vec::new());
    }
    let out = ctx
        .git
        .tagged_entries_of(source, touched.iter().map(RepoPath::as_os))?;
    Ok(split_nul(&out)
        .filter_map(|record| record.strip_prefix(b"S "))
        .map(|path| RepoPath(path.to_vec()))
        .collect())
}

/// The touched paths git's refusal names; all of them when it names none that can be told.
fn failing_paths(detail: &str, touched: &[RepoPath]) -> Vec<RepoPath> {
    let named = |path: &RepoPath| {
        let Ok(name) = std::str::from_utf8(&path.0) else {
            return false;
        };
        detail.lines().any(|line| {
            let rest = line.strip_prefix("error: ").unwrap_or(line);
            let rest = rest.strip_prefix("patch failed: ").unwrap_or(rest);
            rest.strip_prefix(name).is_some_and(|r| r.starts_with(':'))
        })
    };
    let found: Vec<RepoPath> = touched.iter().filter(|p| named(p)).cloned().collect();
    match found.is_empty() {
        true => touched.to_vec(),
        false => found,
    }
}

/// Whether every touched path already holds the result, by blob ids; `posts`: the result's
/// images of the touched paths, when already known.
fn already_present(
    ctx: &Context,
    checkout: &Checkout<'_>,
    candidate: &Candidate,
    (touched, posts): (&[RepoPath], Option<Vec<Option<Entry>>>),
    states: &[PathState],
) -> Result<bool> {
    let Some(tree) = &candidate.result_tree else {
        return Ok(false);
    };
    if touched.is_empty() {
        return Ok(false);
    }
    // A document's result tree may not be in this repository: then nothing can be told.
    let result = match posts {
        Some(posts) => posts,
        None => match intent::tree_images(&ctx.git, checkout.top, tree, touched)? {
            Some(result) => result,
            None => return Ok(false),
        },
    };
    Ok(states
        .iter()
        .zip(&result)
        .all(|(state, want)| checkout.holds(state, want.as_ref())))
}

/// A step after the files are written and before the journal.
pub(crate) type AfterWrite<'a> = dyn Fn(&PatchPlan) -> Result<()> + 'a;

/// Where a planned change set lands, and who journals it.
pub(crate) struct Lander<'a> {
    pub(crate) ctx: &'a Context,
    pub(crate) located: &'a Located,
    pub(crate) candidate: &'a Candidate,
    /// The journal's key: the root patch's digest, or a nested change set's key.
    pub(crate) key: &'a Digest,
    /// The checkout it lands in: the source, or one of its nested repositories.
    pub(crate) source: &'a Path,
    pub(crate) head: Option<&'a CommitId>,
    /// What must happen between the write and the journal; a failure puts the files back.
    pub(crate) then: Option<&'a AfterWrite<'a>>,
    /// `--reapply`: the `promoted_at_ms` of the journal entry this landing follows.
    pub(crate) reapply_of: Option<u64>,
}

impl Lander<'_> {
    /// The intent of this promote: both images of every touched path.
    fn intent(&self, plan: &PatchPlan) -> Intent {
        Intent {
            schema: intent::SCHEMA.into(),
            digest: self.key.clone(),
            session_id: self.candidate.session_id().map(str::to_string),
            mode: Mode::Patch,
            source: self.source.to_path_buf(),
            source_head: self.head.cloned(),
            patch_bytes: self.candidate.patch.bytes,
            created_at_ms: crate::base::fsutil::now_ms(),
            pid: std::process::id(),
            changes: Changes::Patch(plan.clone()),
            step: self.candidate.step(self.head),
            reapply_of: self.reapply_of,
        }
    }

    /// Records the intent, writes every touched path and journals, interrupts waiting; the
    /// next command finishes a crash, and a failed write is put back.
    pub(crate) fn apply_and_journal(
        &self,
        plan: PatchPlan,
        out: &mut PromoteOutcome,
    ) -> Result<()> {
        let store = &self.located.store;
        let digest = self.key;
        intent::save(store, &self.intent(&plan))?;
        crate::fault_point!("promote-after-intent");
        let interrupts = crate::base::signals::Signals::register()?;
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
        self.record(match self.reapply_of {
            Some(_) => Landing::Reapplied,
            None => Landing::Applied,
        })?;
        crate::fault_point!("promote-after-journal");
        intent::remove(store, digest)?;
        out.outcome = Outcome::Applied;
        if interrupts.received().is_some() {
            out.warnings
                .push(PromoteWarning::InterruptedWhileApplying.into());
        }
        Ok(())
    }

    /// After a failed write: every path back to its pre-image and the intent dropped (if
    /// that fails, the next command finishes it).
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
        self.located.store.record_promoted(&JournalEntry {
            digest: self.key.clone(),
            session_id: self.candidate.session_id().map(str::to_string),
            promoted_at_ms: crate::base::fsutil::now_ms(),
            source_head: self.head.cloned(),
            patch_bytes: self.candidate.patch.bytes,
            how,
            mode: Mode::Patch,
            // Patch mode leaves HEAD where it was.
            step: self.candidate.step(self.head),
            earlier_landings: Vec::new(),
        })
    }
}

/// The paths a patch touches, as git apply reads them (bytes, exactly).
pub(crate) fn touched_paths(
    ctx: &Context,
    source: &Path,
    patch_file: &Path,
) -> Result<Vec<RepoPath>> {
    let out = ctx.git.patch_numstat(source, patch_file)?;
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

/// A relative path with no empty, `.` or `..` component, outside any `.git` (in any case).
fn is_plain_path(path: &RepoPath) -> bool {
    !path.0.is_empty()
        && path.0.split(|b| *b == b'/').all(|part| {
            !part.is_empty() && part != b"." && part != b".." && !part.eq_ignore_ascii_case(b".git")
        })
}

/// The paths of `git status --porcelain -z` records (`XY <path>`).
pub(crate) fn status_paths(status: &[u8]) -> Vec<RepoPath> {
    split_nul(status)
        .filter(|record| record.len() > 3)
        .map(|record| RepoPath(record[3..].to_vec()))
        .collect()
}
