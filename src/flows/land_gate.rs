//! The test gate's throwaway layer. `land --test` runs the test in the session's sandbox on
//! its rebased tree; whatever the test writes there (logs, build output, reformatted files)
//! must not land. Where the run can take its layer (`run_layer`), the test writes to the layer
//! alone and the layer is removed, never merged: the isolation is never touched, and a kill
//! leaves the layer for recovery to remove. Otherwise the run records the isolation's
//! snapshot tree (what lands) in the state dir before the command starts; after it, the
//! isolation is moved back to that tree (`read-tree -m -u`, touching only the paths the test
//! changed), and the record goes. A test ended by a kill leaves the record, so the next
//! `land` (or anything that lands the session through it) moves the isolation back before
//! going on. Ignored files the test wrote stay in the isolation on that path, as build output
//! does, and never land: no snapshot holds them.

use std::path::PathBuf;

use crate::base::error::{Error, Result};
use crate::base::fsutil::{remove_file_if_exists, write_atomic};
use crate::base::ids::SessionId;
use crate::context::{Context, Located};
use crate::model::isolation::writable_isolation;
use crate::model::snapshot::{self, Seed};

/// Where the tree a session's test started from is recorded while the test runs.
pub(crate) fn record_of(located: &Located, id: &SessionId) -> PathBuf {
    located.store.land_tests_dir(id).join("tested-on")
}

/// What a test a kill ended left in the isolation goes ([`drop_test_writes`]), with a warning
/// that names it: none of it lands.
pub(super) fn drop_left_writes(
    ctx: &Context,
    located: &Located,
    id: &SessionId,
    warnings: &mut Vec<crate::base::warning::Warning>,
) -> Result<()> {
    let paths = drop_test_writes(ctx, located, id)?;
    if !paths.is_empty() {
        warnings.push(crate::base::warning::LandWarning::TestWritesDropped { paths }.into());
    }
    Ok(())
}

/// Moves the isolation back to the tree recorded before the test and drops the record; the
/// tracked paths the test added, changed or deleted. Nothing recorded: nothing to drop.
pub(crate) fn drop_test_writes(
    ctx: &Context,
    located: &Located,
    id: &SessionId,
) -> Result<Vec<String>> {
    let record = record_of(located, id);
    let tree = match std::fs::read_to_string(&record) {
        Ok(text) => text.trim().to_string(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(format!("cannot read {}", record.display()), e)),
    };
    let _lease = located.store.lease_or_busy(id)?;
    let (session, now) = isolation_tree(ctx, located, id)?;
    let wrote = ctx.git.diff_trees_filtered(
        &located.repo.toplevel,
        (tree.as_str(), now.as_str()),
        "ADMT",
    )?;
    let wrote: Vec<String> = crate::git::split_nul(&wrote)
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let isolation = writable_isolation(&session)?;
    let wt = isolation.git(&ctx.git, &located.store.scratch_dir())?;
    crate::recovery::rebase_apply::write_files(&wt, &located.store, &isolation, &now, &tree)?;
    remove_file_if_exists(&record)?;
    Ok(wrote)
}

/// How a session's test went.
pub(crate) struct Tested {
    /// It exited 0.
    pub(crate) passed: bool,
    /// What it wrote, when its run's layer was thrown away (see `RunOutcome::dropped`);
    /// `None`: what it wrote is in the isolation, for [`drop_test_writes`] to move back.
    pub(crate) dropped: Option<Vec<String>>,
}

/// Where `land --push` records the tree the isolation held before it was moved to a landing's
/// tree for the test: the tree it goes back to.
fn home_of(located: &Located, id: &SessionId) -> PathBuf {
    located.store.land_tests_dir(id).join("home")
}

/// What a test on a landing's tree found.
pub(crate) struct TreeTest {
    /// Whether the test passed.
    pub(crate) passed: bool,
    /// The isolation's snapshot tree as the test started: the landing's tree.
    pub(crate) tested: String,
    /// The tracked paths the test wrote (dropped).
    pub(crate) wrote: Vec<String>,
}

/// Moves the session's isolation to `tree` (a landing's, built elsewhere), runs `test` there
/// through the gate, and moves the isolation back to what it held: the session's files are
/// as they were, whatever the test did. A kill on the way leaves the records that
/// [`back_home`] (run first by the next landing) undoes.
pub(crate) fn test_on_tree(
    ctx: &Context,
    located: &Located,
    (id, tree): (&SessionId, &str),
    test: impl FnOnce() -> Result<Tested>,
) -> Result<TreeTest> {
    {
        let _lease = located.store.lease_or_busy(id)?;
        let (session, now) = isolation_tree(ctx, located, id)?;
        write_atomic(&home_of(located, id), format!("{now}\n").as_bytes())?;
        let isolation = writable_isolation(&session)?;
        let wt = isolation.git(&ctx.git, &located.store.scratch_dir())?;
        crate::recovery::rebase_apply::write_files(&wt, &located.store, &isolation, &now, tree)?;
    }
    crate::fault_point!("land-push-on-landing-tree");
    let tested = {
        let _lease = located.store.lease_or_busy(id)?;
        isolation_tree(ctx, located, id)?.1
    };
    let ran = test();
    let wrote = match ran.as_ref().ok().and_then(|t| t.dropped.clone()) {
        Some(wrote) => wrote,
        None => drop_test_writes(ctx, located, id)?,
    };
    back_home(ctx, located, id)?;
    if tested != tree {
        return Err(Error::internal(format!(
            "the isolation held {tested} for the test, not the landing's tree {tree}"
        )));
    }
    Ok(TreeTest {
        passed: ran?.passed,
        tested,
        wrote,
    })
}

/// Moves the isolation back to the tree recorded before it took a landing's tree, and drops
/// the record; whether there was one.
pub(crate) fn back_home(ctx: &Context, located: &Located, id: &SessionId) -> Result<bool> {
    let record = home_of(located, id);
    let home = match std::fs::read_to_string(&record) {
        Ok(text) => text.trim().to_string(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io(format!("cannot read {}", record.display()), e)),
    };
    let _lease = located.store.lease_or_busy(id)?;
    let (session, now) = isolation_tree(ctx, located, id)?;
    let isolation = writable_isolation(&session)?;
    let wt = isolation.git(&ctx.git, &located.store.scratch_dir())?;
    crate::recovery::rebase_apply::write_files(&wt, &located.store, &isolation, &now, &home)?;
    remove_file_if_exists(&record)?;
    Ok(true)
}

/// The session's record and the snapshot tree of its isolation as it is now (a3s-iso's own
/// index of it left describing it, as the move back needs).
fn isolation_tree(
    ctx: &Context,
    located: &Located,
    id: &SessionId,
) -> Result<(crate::store::state::SessionRecord, String)> {
    let session = ctx.resolve_session(located, Some(id))?;
    let isolation = writable_isolation(&session)?;
    let scratch = located.store.scratch_dir();
    let wt = isolation.git(&ctx.git, &scratch)?;
    let seed = located.store.seed_index(&isolation.admin)?;
    let tree = snapshot::snapshot(&wt, Seed::Own(&seed), &scratch)?.tree;
    Ok((session, tree))
}
