//! Patch mode: the change set lands as uncommitted changes through `git apply`, never merged
//! into the user's own uncommitted work, and journaled in the same uninterruptible step.

use std::path::Path;

use super::artifacts::Artifacts;
use super::journal::journal;
use super::options::{Candidate, PromoteOptions};
use super::outcome::{Mode, Outcome, PromoteOutcome, Reason};
use crate::context::{Context, Located};
use crate::error::Result;
use crate::git::split_nul;
use crate::repo::Repo;
use crate::state::Landing;

/// What the checks before applying found.
enum Check {
    /// The patch applies and meets no uncommitted work.
    Applies,
    /// The patch is already there: an earlier promote landed it and died before its journal.
    AlreadyPresent,
    /// The patch does not apply; git's explanation.
    DoesNotApply(String),
    /// The patch touches paths the user changed and has not committed.
    MeetsWip(Vec<String>),
}

/// Steps 2–6 under the repository lock: empty, journal, HEAD, artifacts, check, apply, journal.
pub(super) fn promote_patch(
    ctx: &Context,
    located: &Located,
    candidate: Candidate,
    opts: &PromoteOptions,
) -> Result<PromoteOutcome> {
    let mut out = initial_report(&candidate);
    if candidate.patch.bytes == 0 {
        return Ok(out);
    }
    out.digest = Some(candidate.patch.digest.clone());
    if located
        .store
        .journal_entry(&candidate.patch.digest)?
        .is_some()
    {
        out.outcome = Outcome::Idempotent;
        return Ok(out);
    }
    let source = source_of(located, &candidate);
    let head = source.head_commit(&ctx.git);
    if let Some(session) = &candidate.session {
        out.bound_revision = Some(session.bound_revision.clone());
        out.current_revision = head.clone();
        if head.as_deref() != Some(session.bound_revision.as_str()) {
            out.conflict(Reason::HeadMoved, None);
            return Ok(out);
        }
    }
    let artifacts = Artifacts::write(
        located,
        opts.artifacts.as_deref(),
        &candidate.patch,
        &mut out,
    )?;
    if opts.no_apply {
        return Ok(out);
    }
    match check(ctx, located, &candidate, &source.toplevel, &artifacts.patch)? {
        Check::Applies => {}
        Check::AlreadyPresent => {
            record(located, &candidate, head.as_deref(), Landing::Recovered)?;
            out.outcome = Outcome::Idempotent;
            out.warnings.push("the patch was already present (an earlier promote was interrupted); journal repaired".into());
        }
        Check::DoesNotApply(detail) => {
            out.conflict(Reason::PatchDoesNotApply, Some(detail));
            out.current_revision = head.clone();
        }
        Check::MeetsWip(paths) => {
            out.conflict(
                Reason::PatchDoesNotApply,
                Some("the patch touches files with uncommitted changes in the source".into()),
            );
            out.current_revision = head.clone();
            out.conflicting_paths = paths;
        }
    }
    if out.outcome == Outcome::Planned {
        apply_and_journal(
            ctx,
            located,
            &candidate,
            &source.toplevel,
            &artifacts,
            head.as_deref(),
            &mut out,
        )?;
    }
    artifacts.summarise(&out)?;
    Ok(out)
}

/// The report before any check: sizes, session and nested repositories.
fn initial_report(candidate: &Candidate) -> PromoteOutcome {
    let mut out = PromoteOutcome::new(Outcome::Empty, Mode::Patch);
    out.session_id = candidate.session.as_ref().map(|s| s.session_id.clone());
    out.patch_bytes = candidate.patch.bytes;
    out.files_changed = candidate.patch.files_changed;
    out.nested_repositories = candidate.nested.clone();
    out.warnings.extend(candidate.nested.iter().map(|p| {
        format!("nested repository {p} is not part of the change set; promote it on its own")
    }));
    out
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

/// Decides whether the patch can land: it applies, it is already there, or it collides.
fn check(
    ctx: &Context,
    located: &Located,
    candidate: &Candidate,
    source: &Path,
    patch_file: &Path,
) -> Result<Check> {
    if let Err(detail) = ctx.git.apply_check(source, patch_file, false)? {
        // Already there (a crash between apply and journal)? Then it is this promote's own
        // earlier landing.
        return Ok(match ctx.git.apply_check(source, patch_file, true)? {
            Ok(()) => Check::AlreadyPresent,
            Err(_) => Check::DoesNotApply(detail),
        });
    }
    // The source's uncommitted work must not meet the patch: any touched path whose current
    // state differs from the change set's base is a conflict, even where git could merge it.
    let touched = touched_paths(ctx, source, patch_file)?;
    let overlap = match &candidate.base_tree {
        // The base is a carried WIP snapshot: compare the checkout with it.
        Some(base) if candidate.session.as_ref().is_some_and(|s| s.carried_wip) => {
            crate::wip::changed_since(
                &ctx.git,
                source,
                base,
                &touched,
                &located.store.scratch_dir(),
            )?
        }
        // The base is HEAD's tree: anything uncommitted at a touched path collides.
        _ => uncommitted_among(ctx, source, &touched)?,
    };
    Ok(if overlap.is_empty() {
        Check::Applies
    } else {
        Check::MeetsWip(overlap)
    })
}

/// Applies the patch and journals it. From here to the journal nothing may stop halfway:
/// interrupts wait, and git apply runs where a Ctrl-C at the terminal cannot reach it.
fn apply_and_journal(
    ctx: &Context,
    located: &Located,
    candidate: &Candidate,
    source: &Path,
    artifacts: &Artifacts,
    head: Option<&str>,
    out: &mut PromoteOutcome,
) -> Result<()> {
    let interrupts = crate::signals::Signals::register()?;
    ctx.git
        .at(source)
        .args(["-c", "apply.whitespace=nowarn", "apply", "--binary"])
        .arg(&artifacts.patch)
        .shielded()
        .run()?;
    crate::fault_point!("promote-interrupt-during-apply");
    crate::fault_point!("promote-after-apply");
    record(located, candidate, head, Landing::Applied)?;
    out.outcome = Outcome::Applied;
    if interrupts.received().is_some() {
        out.warnings.push(
            "an interrupt arrived while the patch was being applied; the promote finished first"
                .into(),
        );
    }
    Ok(())
}

fn record(
    located: &Located,
    candidate: &Candidate,
    head: Option<&str>,
    how: Landing,
) -> Result<()> {
    journal(
        located,
        &candidate.patch.digest,
        candidate.session.as_ref().map(|s| s.session_id.as_str()),
        head,
        candidate.patch.bytes,
        how,
        Mode::Patch,
    )
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
    Ok(split_nul(&out)
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
    Ok(split_nul(&out)
        .filter(|record| record.len() > 3)
        .map(|record| String::from_utf8_lossy(&record[3..]).into_owned())
        .collect())
}
