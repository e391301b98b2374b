//! Landing nested change sets, after the root: each in the matching repository of the source
//! (the submodule's or nested repository's own top level), with the root's rules — the same
//! check, atomic per repository, the repository's own uncommitted work outside the touched
//! paths untouched — and the same exactly-once journal, keyed by the path and the nested
//! digest. When the root landed (now or before) and a nested one cannot, the promote is
//! `partial`; a promote again lands what is left and leaves what landed.

use std::path::Path;

use super::gitlink::is_toplevel;
use super::options::{Candidate, PromoteOptions};
use super::outcome::{Mode, NestedOutcome, NestedResult, Outcome, PromoteOutcome, Reason};
use super::patch::{Check, INTERRUPTED, Lander, check, report_conflict};
use crate::context::{Context, Located};
use crate::error::Result;
use crate::intent;
use crate::nested::{Captured, NestedChangeSet};
use crate::snapshot::{Patch, digest_bytes};

/// The journal's key for a nested change set: the digest of its path and its patch digest, so
/// that the same patch in two repositories is promoted once in each.
pub(crate) fn journal_key(set: &NestedChangeSet) -> String {
    let mut bytes = b"a3s-iso nested\0".to_vec();
    bytes.extend_from_slice(&set.path_exact.0);
    bytes.push(0);
    bytes.extend_from_slice(set.patch_digest.as_bytes());
    digest_bytes(&bytes)
}

/// Lands every nested change set of `candidate` (unless the root did not land) and folds the
/// results into the report's outcome.
pub(super) fn land_nested(
    ctx: &Context,
    located: &Located,
    candidate: &Candidate,
    opts: &PromoteOptions,
    out: &mut PromoteOutcome,
) -> Result<()> {
    if candidate.nested_sets.is_empty() {
        return Ok(());
    }
    let root_landed = matches!(
        out.outcome,
        Outcome::Applied | Outcome::Idempotent | Outcome::Empty
    );
    let source = candidate
        .session
        .as_ref()
        .map_or(located.repo.toplevel.as_path(), |s| s.source.as_path());
    for captured in &candidate.nested_sets {
        let mut result = NestedResult {
            path: captured.set.path.clone(),
            path_exact: captured.set.path_exact.clone(),
            kind: captured.set.kind,
            outcome: NestedOutcome::NotAttempted,
            reason: None,
            digest: captured.set.patch_digest.clone(),
            journal_key: journal_key(&captured.set),
            conflicting_paths: Vec::new(),
            detail: None,
        };
        if out.outcome == Outcome::Planned || (opts.no_apply && root_landed) {
            result.outcome = NestedOutcome::Planned;
        } else if root_landed {
            land_one(ctx, located, source, captured, &mut result, out)?;
        }
        out.nested.push(result);
    }
    fold(out);
    Ok(())
}

/// Lands one nested change set in `source`'s repository at its path.
fn land_one(
    ctx: &Context,
    located: &Located,
    source: &Path,
    captured: &Captured,
    result: &mut NestedResult,
    out: &mut PromoteOutcome,
) -> Result<()> {
    let key = result.journal_key.clone();
    if located.store.journal_entry(&key)?.is_some() {
        result.outcome = NestedOutcome::Idempotent;
        return Ok(());
    }
    result.outcome = NestedOutcome::Conflict;
    if intent::blocking(&ctx.git, &located.store, &key)?.is_some() {
        result.reason = Some(Reason::PatchDoesNotApply);
        result.detail = Some(INTERRUPTED.into());
        return Ok(());
    }
    let target = captured.set.path_exact.under(source);
    if !is_toplevel(&ctx.git, &target) {
        result.reason = Some(Reason::NestedUnavailable);
        result.detail = Some(format!(
            "the source has no initialised repository at {} (git submodule update --init)",
            captured.set.path
        ));
        return Ok(());
    }
    let scratch = located.store.scratch_dir();
    let nested = Candidate {
        patch: Patch::from_bytes(&captured.patch.read()?, &scratch)?,
        session: None,
        base_tree: Some(captured.set.base_tree.clone()),
        result_tree: Some(captured.set.result_tree.clone()),
        nested: Vec::new(),
        nested_sets: Vec::new(),
        submodule_objects: Vec::new(),
        nested_warnings: Vec::new(),
    };
    let head = located_head(ctx, &target);
    let mut report = PromoteOutcome::new(Outcome::Empty, Mode::Patch);
    match check(ctx, located, &nested, &target, nested.patch.file.path())? {
        Check::Applies(plan, bumps) => {
            let landing = Lander {
                ctx,
                located,
                candidate: &nested,
                key: &key,
                source: &target,
                head: head.as_deref(),
                bumps: &bumps,
            };
            landing.apply_and_journal(plan, &mut report)?;
            result.outcome = NestedOutcome::Applied;
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

fn located_head(ctx: &Context, top: &Path) -> Option<String> {
    ctx.git.rev_parse(top, "HEAD").ok().flatten()
}

/// The promote's outcome once the nested results are in: `partial` when something landed
/// (the root now or before, or a nested one) and a nested one did not; `conflict` when
/// nothing landed; `applied` when something landed now and nothing failed.
fn fold(out: &mut PromoteOutcome) {
    let failed: Vec<&NestedResult> = out
        .nested
        .iter()
        .filter(|r| r.outcome == NestedOutcome::Conflict)
        .collect();
    let nested_now = out
        .nested
        .iter()
        .any(|r| r.outcome == NestedOutcome::Applied);
    let nested_before = out
        .nested
        .iter()
        .any(|r| r.outcome == NestedOutcome::Idempotent);
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
        Outcome::Empty if nested_before => out.outcome = Outcome::Idempotent,
        _ => {}
    }
}
