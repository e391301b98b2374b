//! Writing the isolation to what an intent names (its files, index and HEAD) and what follows;
//! the same code finishes an intent a crash left. Each part is idempotent: the files move from
//! whatever a fresh snapshot finds to the target tree (`read-tree -m -u`), the index and HEAD
//! are written whole, by rename.

use std::fs;
use std::os::unix::ffi::OsStrExt;

use crate::base::error::{Error, IoContext, Result};
use crate::base::fsutil::{Sync, copy_synced, now_ms, remove_file_if_exists, write_synced};
use crate::base::ids::SessionId;
use crate::base::warning::{RebaseEnd, RecoveryWarning, Warning};
use crate::git::{Git, HermeticGit, RefUpdate};
use crate::model::isolation::{Isolation, writable_isolation};
use crate::model::snapshot::{self, Seed, TempFile};
use crate::recovery::rebase_record::{self, Applying, HeadPlan, IndexPlan, Then};
use crate::store::lock::RepoLock;
use crate::store::state::{Rebased, Store};

/// The isolation's index as a fresh rebase saved it: its tree, and its file's stamp then.
#[derive(Debug, Clone)]
pub(crate) struct SavedIndex {
    pub tree: String,
    pub stamp: crate::base::fsutil::FileStamp,
}

/// How an intent is carried out.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Start<'a> {
    /// A new one, checked first: an ignored file where the target puts a tracked one fails
    /// before anything is written. `now`: the tree of a snapshot taken under the lock and the
    /// lease, not taken again; `index`: the isolation's index as saved, edited rather than
    /// written whole while nothing has written it since.
    Fresh {
        now: Option<&'a str>,
        index: Option<&'a SavedIndex>,
    },
    /// One a crash left: the files are snapshotted as they are now.
    Recovery,
}

/// Makes the isolation hold what `intent` names, then does what follows and drops the intent.
pub(crate) fn carry_out(
    git: &Git,
    store: &Store,
    intent: &Applying,
    start: Start<'_>,
) -> Result<()> {
    let session = store
        .load_session(&intent.session_id)?
        .ok_or_else(|| Error::internal("a rebase intent without its session"))?;
    let isolation = writable_isolation(&session)?;
    let scratch = store.scratch_dir();
    let wt = isolation.git(git, &scratch)?;
    let seed = store.seed_index(&isolation.admin)?;
    let now = match start {
        Start::Fresh {
            now: Some(tree), ..
        } => tree.to_string(),
        Start::Fresh { now: None, .. } | Start::Recovery => {
            snapshot::snapshot(&wt, Seed::Own(&seed), &scratch)?.tree
        }
    };
    let known = match start {
        Start::Fresh { index, .. } => index,
        Start::Recovery => None,
    };
    // What an index saved as a tree needs to become the target's, asked beside the files'
    // move (both only read trees).
    let index_move = match (known, &intent.index) {
        (Some(saved), IndexPlan::Tree(to)) => Some((saved.tree.as_str(), to.as_str())),
        _ => None,
    };
    let index_diff = std::thread::scope(|scope| {
        let diff = index_move.map(|(from, to)| scope.spawn(|| wt.tree_diff(from, to)));
        let moved = write_files_first(&wt, store, (&isolation, &seed), (&now, intent), &start);
        let diff = diff.map(|diff| diff.join().ok().and_then(Result::ok));
        moved.map(|()| diff.flatten())
    })?;
    crate::fault_point!("rebase-after-files");
    write_index(
        &wt,
        store,
        &isolation,
        (&intent.session_id, known.map(|saved| (saved, index_diff))),
        &intent.index,
    )?;
    write_head(store, &isolation, &intent.session_id, &intent.head)?;
    crate::fault_point!("rebase-after-head");
    follow_up(git, store, &intent.session_id, &intent.then)?;
    rebase_record::remove_intent(store, &intent.session_id)
}

/// A fresh intent is checked and recorded first; then the files move from `now` to the
/// intent's tree. git refusing before it writes anything (a file changed since the snapshot)
/// leaves the isolation as it was, and the intent goes; after a partial write it stays for
/// recovery to finish.
fn write_files_first(
    wt: &HermeticGit,
    store: &Store,
    (isolation, seed): (&Isolation, &std::path::Path),
    (now, intent): (&str, &Applying),
    start: &Start<'_>,
) -> Result<()> {
    let mut changes = None;
    if let Start::Fresh { .. } = start {
        changes = try_files(wt, isolation, now, &intent.tree)?;
        rebase_record::save_intent(store, intent)?;
    }
    crate::fault_point!("rebase-after-intent");
    let moved = move_files(wt, store, isolation, (now, &intent.tree), changes.as_ref());
    if let Err(err) = moved {
        let scratch = store.scratch_dir();
        if let Start::Fresh { .. } = start {
            let found = snapshot::snapshot(wt, Seed::Own(seed), &scratch)?.tree;
            if nothing_written(wt, (now, &found, &intent.tree))? {
                rebase_record::remove_intent(store, &intent.session_id)?;
            }
        }
        return Err(err);
    }
    Ok(())
}

/// Whether a move from `now` to `to` that failed wrote nothing: the isolation (`found` now)
/// holds what `to` has at none of the paths where `to` differs from `now`. A path changed since
/// the snapshot (an edit made meanwhile) is not taken for a write, so the intent goes and the
/// edit stays, never moved over by recovery.
fn nothing_written(wt: &HermeticGit, (now, found, to): (&str, &str, &str)) -> Result<bool> {
    if found == now {
        return Ok(true);
    }
    let moved = wt.tree_diff(now, to)?.changes;
    let still_differ = wt.tree_diff(found, to)?.changes;
    Ok(moved.keys().all(|path| still_differ.contains_key(path)))
}

/// Refuses a move from what the working tree holds now (`now`) to `tree` that would write
/// over a file a3s-iso has no copy of; else what differs between the two (`None`: nothing).
fn try_files(
    wt: &HermeticGit,
    isolation: &Isolation,
    now: &str,
    tree: &str,
) -> Result<Option<crate::git::TreeDiff>> {
    if now == tree {
        return Ok(None);
    }
    // git takes an ignored file for expendable and writes over it; a3s-iso does not: the
    // snapshot that `--abort` restores has no copy of it.
    let diff = wt.tree_diff(now, tree)?;
    // What is in the way: a file (or link) at an added path or at one of its leading
    // directories that the snapshot does not hold; one it holds, git moves out of the way.
    let blockers: Vec<(&[u8], Vec<u8>)> = (diff.added)
        .iter()
        .map(Vec::as_slice)
        .filter_map(|path| {
            crate::model::tree_move::blocker(&isolation.tree, path).map(|at| (path, at))
        })
        .collect();
    let held = held_in(wt, now, blockers.iter().map(|(_, at)| at.as_slice()))?;
    let in_the_way: Vec<String> = blockers
        .iter()
        .filter(|(_, at)| !held.contains(at))
        .map(|(path, _)| String::from_utf8_lossy(path).into_owned())
        .collect();
    if !in_the_way.is_empty() {
        return Err(Error::InvalidInput {
            reason: crate::base::invalid::Invalid::RebaseInTheWay { paths: in_the_way },
        });
    }
    Ok(Some(diff))
}

/// Which of `paths` the tree `tree` holds as a file or link.
fn held_in<'a>(
    wt: &HermeticGit,
    tree: &str,
    paths: impl Iterator<Item = &'a [u8]>,
) -> Result<Vec<Vec<u8>>> {
    let paths: Vec<&[u8]> = paths.collect();
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let listed = wt.names_in_tree(tree, paths.iter().map(|p| std::ffi::OsStr::from_bytes(p)))?;
    Ok(crate::git::split_nul(&listed).map(<[u8]>::to_vec).collect())
}

/// Moves the working tree from `now` (which a3s-iso's own index describes) to `tree`.
pub(crate) fn write_files(
    wt: &HermeticGit,
    store: &Store,
    isolation: &Isolation,
    now: &str,
    tree: &str,
) -> Result<()> {
    move_files(wt, store, isolation, (now, tree), None)
}

/// [`write_files`], with what differs from `now` to `tree` when it is known.
fn move_files(
    wt: &HermeticGit,
    store: &Store,
    isolation: &Isolation,
    (now, tree): (&str, &str),
    known: Option<&crate::git::TreeDiff>,
) -> Result<()> {
    let scratch = store.scratch_dir();
    let seed = store.seed_index(&isolation.admin)?;
    if now == tree
        || crate::model::tree_move::move_changed(wt, &scratch, &seed, (now, tree), known)?
    {
        return Ok(());
    }
    refuse_deleted_since(wt, (isolation, &seed), (now, tree), known)?;
    let index = TempFile::new(&scratch, "index")?;
    snapshot::copy_index(&seed, index.path())?;
    wt.read_tree_move(index.path(), now, tree)?;
    // The next snapshot starts from the index that describes the files just written, and
    // the next run's fast path from the tree they hold.
    fs::rename(index.path(), &seed).ctx(|| format!("cannot keep {}", seed.display()))?;
    snapshot::note_tree(&seed, tree);
    Ok(())
}

/// Refuses a move by git's two-way `read-tree` when a file it changes or deletes is gone from
/// the isolation since the snapshot `now`: git takes a missing file for one it may write, and
/// would bring back what the agent deleted. A file sparse checkout keeps out of the tree
/// (`skip-worktree` in the isolation's index or in `seed`) is absent by design.
fn refuse_deleted_since(
    wt: &HermeticGit,
    (isolation, seed): (&Isolation, &std::path::Path),
    (now, tree): (&str, &str),
    known: Option<&crate::git::TreeDiff>,
) -> Result<()> {
    let asked;
    let diff = match known {
        Some(known) => known,
        None => {
            asked = wt.tree_diff(now, tree)?;
            &asked
        }
    };
    let gone: Vec<&Vec<u8>> = (diff.changes.keys())
        .filter(|path| !diff.added.contains(path))
        .filter(|path| {
            let on_disk = isolation.tree.join(std::ffi::OsStr::from_bytes(path));
            std::fs::symlink_metadata(on_disk)
                .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        })
        .collect();
    if gone.is_empty() {
        return Ok(());
    }
    let sparse = skipped_worktree(&[&isolation.admin.join("index"), seed]);
    let kept_out = |path: &[u8]| {
        sparse.iter().any(|skipped| {
            path == skipped.as_slice()
                || (path.starts_with(skipped) && path.get(skipped.len()) == Some(&b'/'))
                || (skipped.ends_with(b"/") && path.starts_with(skipped))
        })
    };
    let gone: Vec<String> = gone
        .into_iter()
        .filter(|path| !kept_out(path))
        .map(|path| String::from_utf8_lossy(path).into_owned())
        .collect();
    match gone.is_empty() {
        true => Ok(()),
        false => Err(Error::InvalidInput {
            reason: crate::base::invalid::Invalid::RebaseIsolationChanged { paths: gone },
        }),
    }
}

/// The paths (files, and a sparse index's directories) the indexes at `indexes` mark
/// `skip-worktree`.
fn skipped_worktree(indexes: &[&std::path::Path]) -> Vec<Vec<u8>> {
    let mut skipped = Vec::new();
    for index in indexes {
        let Ok(bytes) = fs::read(index) else {
            continue;
        };
        crate::git::index_file::reader::IndexFile::detect(&bytes, |entry| {
            if entry.skip_worktree() {
                skipped.push(entry.path.to_vec());
            }
        });
    }
    skipped
}

/// The isolation's index, [edited](edit_index) while still as saved, else written whole.
fn write_index(
    wt: &HermeticGit,
    store: &Store,
    isolation: &Isolation,
    (id, known): (
        &SessionId,
        Option<(&SavedIndex, Option<crate::git::TreeDiff>)>,
    ),
    plan: &IndexPlan,
) -> Result<()> {
    let target = isolation.admin.join("index");
    if let (IndexPlan::Tree(tree), Some((saved, diff))) = (plan, known)
        && edit_index(wt, store, isolation, (saved, diff), tree)?
    {
        return Ok(());
    }
    let (tree, stages) = match plan {
        IndexPlan::Saved => {
            let saved = rebase_record::saved_index(store, id);
            return if saved.is_file() {
                copy_synced(&saved, &target, Sync::AsGit)
            } else {
                remove_file_if_exists(&target)
            };
        }
        IndexPlan::Tree(tree) => (tree, &[][..]),
        IndexPlan::Conflict { tree, stages } => (tree, stages.as_slice()),
    };
    let index = TempFile::new(&store.scratch_dir(), "index")?;
    let on_index = wt.on_index(index.path());
    on_index.read_tree(tree)?;
    if !stages.is_empty() {
        let null = "0".repeat(tree.len());
        let mut input = Vec::new();
        let mut removed: Vec<&[u8]> = Vec::new();
        for stage in stages {
            if !removed.contains(&stage.path.0.as_slice()) {
                removed.push(&stage.path.0);
                input.extend_from_slice(format!("0 {null}\t").as_bytes());
                input.extend_from_slice(&stage.path.0);
                input.push(0);
            }
        }
        for stage in stages {
            let line = format!("{} {} {}\t", stage.mode, stage.oid, stage.stage);
            input.extend_from_slice(line.as_bytes());
            input.extend_from_slice(&stage.path.0);
            input.push(0);
        }
        on_index.index_info(input)?;
    }
    copy_synced(index.path(), &target, Sync::AsGit)?;
    if stages.is_empty() {
        snapshot::note_tree_at(&store.isolation_index_note(&isolation.admin), &target, tree);
    }
    Ok(())
}

/// Edits the isolation's index from its saved tree to `to` when nothing wrote it since (the
/// other entries keep their stat data, so git need not read every file again); `false`: not.
fn edit_index(
    wt: &HermeticGit,
    store: &Store,
    isolation: &Isolation,
    (saved, diff): (&SavedIndex, Option<crate::git::TreeDiff>),
    to: &str,
) -> Result<bool> {
    use crate::git::index_file::edit::{Keep, edit};
    let target = isolation.admin.join("index");
    if crate::base::fsutil::FileStamp::of(&target).ok() != Some(saved.stamp) {
        return Ok(false);
    }
    let Ok(bytes) = fs::read(&target) else {
        return Ok(false);
    };
    let from = saved.tree.as_str();
    let crate::git::TreeDiff {
        changes, subtrees, ..
    } = match diff {
        Some(diff) => diff,
        None => wt.tree_diff(from, to)?,
    };
    // The index held exactly `from`: it holds `to` after the edit.
    let keep = Keep {
        racy_from: Some(crate::git::index_file::recent::written_second(&target)?),
        untracked_cache: false,
        subtrees: Some(&subtrees),
        // The user's git and tools read this one: its trailer is git's.
        null_trailer: false,
    };
    let Some(edited) = edit(&bytes, from.len() / 2, &changes, keep) else {
        return Ok(false);
    };
    write_synced(&target, &edited, Sync::AsGit)?;
    snapshot::note_tree_at(&store.isolation_index_note(&isolation.admin), &target, to);
    Ok(true)
}

/// The isolation's HEAD: detached at a commit, or the file saved before the rebase.
fn write_head(store: &Store, isolation: &Isolation, id: &SessionId, plan: &HeadPlan) -> Result<()> {
    let bytes = match plan {
        HeadPlan::Commit(commit) => format!("{commit}\n").into_bytes(),
        HeadPlan::Saved => {
            let saved = rebase_record::saved_head(store, id);
            fs::read(&saved).ctx(|| format!("cannot read {}", saved.display()))?
        }
    };
    write_synced(&isolation.admin.join("HEAD"), &bytes, Sync::AsGit)
}

/// Once the isolation holds the target: the session moves to the new base, the conflict is
/// recorded, or the rebase's records go.
fn follow_up(git: &Git, store: &Store, id: &SessionId, then: &Then) -> Result<()> {
    match then {
        Then::Clean {
            revision,
            base_tree,
            steps_before,
        } => {
            let mut session = store
                .load_session(id)?
                .ok_or_else(|| Error::internal("a rebase without its session"))?;
            if session.bound_revision != *revision {
                session.bound_revision = revision.clone();
                session.base_tree = crate::base::ids::TreeId::new(base_tree)?;
                session.rebased = Some(Rebased {
                    at_ms: now_ms(),
                    steps_before: *steps_before,
                });
                session.updated_at_ms = now_ms();
                git.update_refs(
                    &session.common_dir,
                    &[RefUpdate::Set {
                        name: store.refs().session_base(id),
                        target: revision.clone(),
                    }],
                    "a3s-iso: rebase",
                )?;
                store.save_session(&session)?;
            }
            rebase_record::remove_state(store, id)
        }
        Then::Conflicted(state) => rebase_record::save_state(store, state),
        Then::Aborted => rebase_record::remove_state(store, id),
    }
}

/// Finishes every interrupted rebase, under the lock; returns what to tell the user.
pub(crate) fn recover(_held: &RepoLock, git: &Git, store: &Store) -> Vec<Warning> {
    rebase_record::intents(store)
        .into_iter()
        .map(|intent| {
            let end = match &intent.then {
                Then::Clean { .. } => RebaseEnd::Completed,
                Then::Conflicted(_) => RebaseEnd::CompletedToConflict,
                Then::Aborted => RebaseEnd::Undone,
            };
            let session = store.load_session(&intent.session_id);
            let gone = !matches!(session, Ok(Some(s)) if s.state.has_tree());
            let session_id = intent.session_id.clone();
            if gone {
                // Nothing left to rebase: the session or its isolation went since.
                let _ = forget(store, &intent.session_id);
                return RecoveryWarning::RebaseDropped { session_id }.into();
            }
            match carry_out(git, store, &intent, Start::Recovery) {
                Ok(()) => RecoveryWarning::RebaseFinished { session_id, end }.into(),
                Err(err) => RecoveryWarning::RebaseNotFinished {
                    session_id,
                    why: err.to_string(),
                }
                .into(),
            }
        })
        .collect()
}

/// Drops every record of a session's rebase (its isolation or the session goes).
pub(crate) fn forget(store: &Store, id: &SessionId) -> Result<()> {
    rebase_record::remove_intent(store, id)?;
    rebase_record::remove_state(store, id)
}
