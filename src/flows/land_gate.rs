//! The test gate's throwaway layer: whatever `land --test` writes must not land. On the run's
//! layer (`run_layer`), the layer is removed, never merged. Otherwise the run records the
//! isolation's snapshot tree before the command starts, and the isolation is moved back to it
//! after (`read-tree -m -u`); a kill leaves the record for the next `land` to move it back.
//! Ignored files the test wrote stay, as build output does, and never land.

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

/// Drops what a killed test left in the isolation ([`drop_test_writes`]), with a warning.
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

/// Moves the isolation back to the tree recorded before the test, dropping the record; the
/// tracked paths the test wrote.
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
    /// What it wrote, when its layer was thrown away (`None`: for [`drop_test_writes`]).
    pub(crate) dropped: Option<Vec<String>>,
}

/// Where `land --push` records the tree the isolation goes back to after a landing's test.
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

/// Runs `test` through the gate with the isolation moved to `tree`, then moves it back; a
/// kill leaves the records [`back_home`] undoes.
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

/// Moves the isolation back home and drops the record; whether there was one.
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

/// The session's record and its isolation's snapshot tree now (the index left describing it).
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
