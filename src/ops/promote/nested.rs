//! Landing nested change sets after the root, each in the source's repository at its path,
//! with the root's rules and exactly-once journal (keyed by path and nested digest). When the
//! root landed and a nested one cannot, the promote is `partial`; a promote again lands the rest.

use std::path::{Path, PathBuf};

use crate::base::error::{IoContext, Result};
use crate::base::ids::Digest;
use crate::base::paths::RepoPath;
use crate::base::warning::PromoteWarning;
use crate::context::{Context, Located};
use crate::git::{Git, Identity};
use crate::model::snapshot::{Patch, Snapshot, TempFile, digest_bytes};
use crate::ops::promote::gitlink::{Bump, is_toplevel, move_submodules, objects_of, ready};
use crate::ops::promote::options::{Candidate, PromoteOptions};
use crate::ops::promote::outcome::{
    Mode, NestedOutcome, NestedResult, Outcome, PromoteOutcome, Reason,
};
use crate::ops::promote::patch::{Check, INTERRUPTED, Lander, check, report_conflict};
use crate::recovery::intent;
use crate::services::nested::{Captured, Nested, NestedChangeSet, Skipped};
use crate::services::steps::nested_delta_base;
use crate::store::state::SessionRecord;

/// The journal's key for a nested change set: its path's and patch's digest, once per repository.
pub(crate) fn journal_key(set: &NestedChangeSet) -> String {
    key_text(&set.path_exact, &set.patch_digest)
}

/// The journal's key of the patch with `digest` landing in the nested repository at `path`.
fn key_text(path: &RepoPath, digest: &str) -> String {
    let mut bytes = b"a3s-iso nested\0".to_vec();
    bytes.extend_from_slice(&path.0);
    bytes.push(0);
    bytes.extend_from_slice(digest.as_bytes());
    digest_bytes(&bytes)
}

/// Lands every nested change set (unless the root did not land) and folds in the results.
pub(crate) fn land_nested(
    ctx: &Context,
    located: &Located,
    candidate: &Candidate,
    opts: &PromoteOptions,
    out: &mut PromoteOutcome,
) -> Result<()> {
    let source = candidate
        .session
        .as_ref()
        .map_or(located.repo.toplevel.as_path(), |s| s.source.as_path());
    let undone = undone_steps(ctx, located, candidate.session.as_ref(), source, candidate)?;
    if candidate.nested_found.captured.is_empty()
        && candidate.nested_found.skipped.is_empty()
        && undone.is_empty()
    {
        return Ok(());
    }
    let root_landed = matches!(
        out.outcome,
        Outcome::Applied | Outcome::Idempotent | Outcome::Empty
    );
    for captured in &candidate.nested_found.captured {
        let mut result = new_result(captured);
        if out.outcome == Outcome::Planned || (opts.no_apply && root_landed) {
            result.outcome = NestedOutcome::Planned;
            keep_patch(located, opts, captured, &mut result, out)?;
        } else if root_landed {
            let landing = NestedLanding {
                source,
                session: candidate.session.as_ref(),
                captured,
                commit: None,
            };
            land_one(ctx, located, &landing, &mut result, out)?;
        }
        out.nested.push(result);
    }
    report_skipped(&candidate.nested_found.skipped, root_landed, out);
    if root_landed && out.outcome != Outcome::Planned {
        out.nested.extend(undone);
    }
    fold(out);
    Ok(())
}

/// Nested repositories with a promoted step whose isolation copy went back to HEAD while the
/// source's copy still has uncommitted changes: that undo does not travel, so each conflicts.
fn undone_steps(
    ctx: &Context,
    located: &Located,
    session: Option<&SessionRecord>,
    source: &Path,
    candidate: &Candidate,
) -> Result<Vec<NestedResult>> {
    let Some(session) = session else {
        return Ok(Vec::new());
    };
    let mut stepped: Vec<RepoPath> = located
        .store
        .journal_entries()?
        .into_iter()
        .filter(|e| e.session_id.as_deref() == Some(session.session_id.as_str()))
        .filter_map(|e| e.step)
        .filter(|s| s.session_created_at_ms == session.created_at_ms)
        .filter_map(|s| s.nested)
        .collect();
    stepped.sort();
    stepped.dedup();
    let mut undone = Vec::new();
    for path in stepped {
        let captured = candidate
            .nested_found
            .captured
            .iter()
            .any(|c| c.set.path_exact == path);
        let target = path.under(source);
        if captured || !is_toplevel(&ctx.git, &target) || !has_tracked_changes(ctx, &target) {
            continue;
        }
        let kind = match target.join(".git").is_file() {
            true => crate::services::nested::NestedKind::Submodule,
            false => crate::services::nested::NestedKind::Repository,
        };
        let detail = "the session's work here went back to the repository's HEAD since an earlier step, but the source's copy still holds uncommitted changes: that undo does not travel; put the files back (git checkout -- .) if you want it";
        let reason = Some(Reason::PatchDoesNotApply);
        undone.push(not_landed(&path, kind, reason, detail.into()));
    }
    Ok(undone)
}

/// Whether a checkout of the user's has uncommitted changes to tracked files.
fn has_tracked_changes(ctx: &Context, top: &Path) -> bool {
    ctx.git.status_tracked(top).is_ok_and(|out| !out.is_empty())
}

/// The nested repositories that could not be captured, as not landed (when the root did).
fn report_skipped(skipped: &[Skipped], root_landed: bool, out: &mut PromoteOutcome) {
    for skip in skipped {
        let attempted = root_landed && out.outcome != Outcome::Planned;
        let reason = attempted.then_some(Reason::NestedUnavailable);
        let detail = format!("it could not be captured: {}", skip.why);
        out.nested
            .push(not_landed(&skip.path, skip.kind, reason, detail));
    }
}

/// A nested repository with no change set: a conflict for `reason`, else not attempted.
fn not_landed(
    path: &RepoPath,
    kind: crate::services::nested::NestedKind,
    reason: Option<Reason>,
    detail: String,
) -> NestedResult {
    NestedResult {
        path: path.shown(),
        path_exact: path.clone(),
        kind,
        outcome: match reason {
            Some(_) => NestedOutcome::Conflict,
            None => NestedOutcome::NotAttempted,
        },
        reason,
        digest: None,
        journal_key: None,
        conflicting_paths: Vec::new(),
        detail: Some(detail),
    }
}

/// `--no-apply`: the nested patch in the root's artifacts' `nested/`, else in `--artifacts DIR`
/// or `<state>/artifacts/<hex of the journal key>/`.
fn keep_patch(
    located: &Located,
    opts: &PromoteOptions,
    captured: &Captured,
    result: &mut NestedResult,
    out: &mut PromoteOutcome,
) -> Result<()> {
    let root = match (&out.artifacts, &opts.artifacts) {
        (Some(dir), _) | (None, Some(dir)) => dir.clone(),
        (None, None) => located
            .store
            .artifacts_dir()
            .join(journal_key(&captured.set).trim_start_matches("sha256:")),
    };
    out.artifacts = Some(root.clone());
    let name = format!("{}.patch", hex::encode(&captured.set.path_exact.0));
    let path = root.join("nested").join(&name);
    let bytes = captured.patch.read()?;
    match (&opts.artifacts, &opts.artifacts_opened) {
        // The directory a caller opened beneath its grant: written through it, never by name.
        (Some(chosen), Some(opened)) if *chosen == root => opened
            .0
            .create_dirs(Path::new("nested"))
            .and_then(|nested| nested.replace(Path::new(&name), &bytes))
            .ctx(|| format!("cannot write {}", path.display()))?,
        _ => {
            let dir = root.join("nested");
            std::fs::create_dir_all(&dir).ctx(|| format!("cannot create {}", dir.display()))?;
            crate::base::fsutil::write_atomic(&path, &bytes)?;
        }
    }
    result.detail = Some(format!("patch written to {}", path.display()));
    Ok(())
}

/// One nested change set to land, and in branch mode, how it is committed.
struct NestedLanding<'a> {
    source: &'a Path,
    session: Option<&'a SessionRecord>,
    captured: &'a Captured,
    commit: Option<(&'a str, &'a Identity)>,
}

/// Lands one nested change set in its repository; branch mode commits it there.
fn land_one(
    ctx: &Context,
    located: &Located,
    to_land: &NestedLanding<'_>,
    result: &mut NestedResult,
    out: &mut PromoteOutcome,
) -> Result<()> {
    let (captured, commit) = (to_land.captured, to_land.commit);
    let scratch = located.store.scratch_dir();
    let Some(nested) = candidate_of(ctx, located, to_land.session, captured, &scratch)? else {
        // Nothing new since this repository's last step: a replay of it.
        result.outcome = NestedOutcome::Idempotent;
        return Ok(());
    };
    let key = Digest::new(key_text(&captured.set.path_exact, &nested.patch.digest))?;
    result.digest = Some(Digest::new(&nested.patch.digest)?);
    result.journal_key = Some(key.to_string());
    if located.store.journal_entry(&key)?.is_some() && nested.previous.is_none() {
        result.outcome = NestedOutcome::Idempotent;
        return Ok(());
    }
    result.outcome = NestedOutcome::Conflict;
    if intent::blocking(&ctx.git, &located.store, &key)?.is_some() {
        result.reason = Some(Reason::PatchDoesNotApply);
        result.detail = Some(INTERRUPTED.into());
        return Ok(());
    }
    let target = captured.set.path_exact.under(to_land.source);
    if !is_toplevel(&ctx.git, &target) {
        result.reason = Some(Reason::NestedUnavailable);
        result.detail = Some(format!(
            "the source has no initialised repository at {} (git submodule update --init)",
            captured.set.path
        ));
        return Ok(());
    }
    let head = (ctx.git.rev_parse(&target, "HEAD").ok().flatten())
        .and_then(|head| crate::base::ids::CommitId::new(head).ok());
    let mut report = PromoteOutcome::new(Outcome::Empty, Mode::Patch);
    match check(ctx, located, &nested, &target, nested.patch.file.path())? {
        Check::Applies(plan) => {
            let commit_it = |plan: &crate::recovery::intent::PatchPlan| match commit {
                Some((message, ident)) => {
                    commit_plan(&ctx.git, &target, &scratch, (message, ident), plan)
                }
                None => Ok(()),
            };
            let landing = Lander {
                ctx,
                located,
                candidate: &nested,
                key: &key,
                source: &target,
                head: head.as_ref(),
                then: Some(&commit_it),
                reapply_of: None,
            };
            match landing.apply_and_journal(plan, &mut report) {
                Ok(()) => result.outcome = NestedOutcome::Applied,
                // Its files are back as they were; the root (and what landed) stays.
                Err(e) if commit.is_some() => {
                    result.reason = Some(Reason::ReplayFailed);
                    result.detail = Some(e.to_string());
                }
                Err(e) => return Err(e),
            }
        }
        conflict => {
            report_conflict(conflict, head, &mut report);
            result.reason = report.reason;
            result.detail = report.detail.clone();
            result.conflicting_paths = report.conflicting_paths.clone();
        }
    }
    out.warnings.extend(report.warnings);
    Ok(())
}

/// A nested change set as a candidate of its own, in steps like the root. `None`: nothing new.
fn candidate_of(
    ctx: &Context,
    located: &Located,
    session: Option<&SessionRecord>,
    captured: &Captured,
    scratch: &Path,
) -> Result<Option<Candidate>> {
    let path = &captured.set.path_exact;
    let Some((base_tree, previous)) = nested_delta_base(&located.store, session, &captured.set)?
    else {
        return Ok(None);
    };
    let result_tree = captured.set.result_tree.clone();
    let patch = match &previous {
        Some(_) => {
            let common = &located.repo.common_dir;
            crate::model::snapshot::patch(&ctx.git, common, &base_tree, &result_tree, scratch)?
        }
        None => Patch::from_bytes(&captured.patch.read()?, scratch)?,
    };
    Ok(Some(Candidate {
        session: session.cloned(),
        previous,
        nested_path: Some(path.clone()),
        alternate_objects: Some(located.repo.common_dir.join("objects")),
        ..Candidate::of_trees(patch, Some(base_tree), Some(result_tree))
    }))
}

/// The outcome with the nested results: `partial` when something landed and a nested one did
/// not; `conflict` when nothing landed; `applied` when something landed and nothing failed.
fn fold(out: &mut PromoteOutcome) {
    let failed: Vec<&NestedResult> = out
        .nested
        .iter()
        .filter(|r| r.outcome == NestedOutcome::Conflict)
        .collect();
    let any = |outcome| out.nested.iter().any(|r| r.outcome == outcome);
    let (nested_now, nested_before) = (any(NestedOutcome::Applied), any(NestedOutcome::Idempotent));
    let planned = any(NestedOutcome::Planned);
    let root_landed = matches!(out.outcome, Outcome::Applied | Outcome::Idempotent);
    if let Some(first) = failed.first() {
        if root_landed || nested_now || nested_before {
            out.outcome = Outcome::Partial;
            return;
        }
        let reason = first.reason.unwrap_or(Reason::PatchDoesNotApply);
        let paths = failed.iter().map(|r| r.path_exact.clone()).collect();
        out.conflict(
            reason,
            Some("no nested change set could land; see nested for each".into()),
        );
        out.set_conflicting_paths(paths);
        return;
    }
    match out.outcome {
        Outcome::Empty | Outcome::Idempotent if nested_now => out.outcome = Outcome::Applied,
        Outcome::Empty if planned => out.outcome = Outcome::Planned,
        Outcome::Empty if nested_before => out.outcome = Outcome::Idempotent,
        _ => {}
    }
}

/// What branch mode's nested step needs of the session.
pub(crate) struct BranchNested<'a> {
    /// The session promoted.
    pub(crate) session: &'a SessionRecord,
    /// The isolation's snapshot the root replay used.
    pub(crate) snap: &'a Snapshot,
    /// Who commits (a3s-iso when git has no identity of its own).
    pub(crate) ident: &'a Identity,
}

impl BranchNested<'_> {
    /// After the root replay: moved submodules are checked out where clean (else a warning),
    /// and each nested change set is committed in its repository; a failure is `partial`.
    pub(crate) fn commit_nested(
        &self,
        ctx: &Context,
        located: &Located,
        nested: Nested,
        opts: &PromoteOptions,
        out: &mut PromoteOutcome,
    ) -> Result<()> {
        let source = self.session.source.as_path();
        if out.outcome == Outcome::Applied {
            follow_bumps(ctx, located, self, &nested.objects, out)?;
        }
        let root_landed = matches!(
            out.outcome,
            Outcome::Applied | Outcome::Idempotent | Outcome::Empty
        );
        for captured in &nested.captured {
            let mut result = new_result(captured);
            let message = format!(
                "a3s-iso: uncommitted changes of session {} in {}",
                self.session.session_id, captured.set.path
            );
            if out.outcome == Outcome::Planned || (opts.no_apply && root_landed) {
                result.outcome = NestedOutcome::Planned;
            } else if root_landed {
                let landing = NestedLanding {
                    source,
                    session: Some(self.session),
                    captured,
                    commit: Some((message.as_str(), self.ident)),
                };
                land_one(ctx, located, &landing, &mut result, out)?;
            }
            out.nested.push(result);
        }
        report_skipped(&nested.skipped, root_landed, out);
        fold(out);
        Ok(())
    }
}

fn new_result(captured: &Captured) -> NestedResult {
    NestedResult {
        path: captured.set.path.clone(),
        path_exact: captured.set.path_exact.clone(),
        kind: captured.set.kind,
        outcome: NestedOutcome::NotAttempted,
        reason: None,
        digest: Some(captured.set.patch_digest.clone()),
        journal_key: Some(journal_key(&captured.set)),
        conflicting_paths: Vec::new(),
        detail: None,
    }
}

/// Checks out each moved submodule at its new commit where it is clean and at the old one.
fn follow_bumps(
    ctx: &Context,
    located: &Located,
    branch: &BranchNested<'_>,
    objects: &[(RepoPath, PathBuf)],
    out: &mut PromoteOutcome,
) -> Result<()> {
    let links = &branch.snap.gitlinks;
    if links.is_empty() {
        return Ok(());
    }
    let common = &located.repo.common_dir;
    let before = intent::tree_images(&ctx.git, common, &branch.session.base_tree, links)?;
    let after = intent::tree_images(&ctx.git, common, &branch.snap.tree, links)?;
    let (Some(before), Some(after)) = (before, after) else {
        return Ok(());
    };
    let source = branch.session.source.as_path();
    for ((path, old), new) in links.iter().zip(before).zip(after) {
        let (Some(old), Some(new)) = (old, new) else {
            continue;
        };
        if old.oid == new.oid || !old.is_gitlink() || !new.is_gitlink() {
            continue;
        }
        let bump = Bump::new(path.clone(), old.oid, new.oid);
        match ready(&ctx.git, located, source, &bump, objects_of(objects, path))? {
            Ok(()) => move_submodules(&ctx.git, source, std::slice::from_ref(&bump))?,
            Err(why) => {
                let (path, why) = (path.to_string(), why.to_string());
                out.warnings
                    .push(PromoteWarning::SubmoduleStays { path, why }.into());
            }
        }
    }
    Ok(())
}

/// Commits what a nested plan wrote at `top`: HEAD moved only if still where it was, and the
/// touched paths' index entries set to match.
fn commit_plan(
    git: &Git,
    top: &Path,
    scratch: &Path,
    (message, ident): (&str, &Identity),
    plan: &crate::recovery::intent::PatchPlan,
) -> Result<()> {
    let head = git.rev_parse_required(top, "HEAD")?;
    let null = git.null_oid(top)?;
    let mut info = Vec::new();
    for change in &plan.paths {
        let line = match &change.post {
            Some(entry) => format!("{} {}\t", entry.mode, entry.oid),
            None => format!("0 {null}\t"),
        };
        info.extend_from_slice(line.as_bytes());
        info.extend_from_slice(&change.path.0);
        info.push(0);
    }
    let index = TempFile::new(scratch, "nested-commit-index")?;
    let on_index = git.on_index(top, index.path());
    on_index.read_tree(&head)?;
    on_index.index_info(info.clone())?;
    let tree = on_index.write_tree()?;
    let commit = git.commit_tree(top, ident, &[], (&tree, &head), format!("{message}\n"))?;
    git.move_head(top, message, &commit, &head)?;
    git.index_info(top, info)
}
