//! `run`'s fast path: the layer a sandboxed command writes to, merged into the isolation.
//! May call: base, git, store, context, model and the rest of recovery.
//!
//! A sandboxed run's command writes to an overlay over the isolation (its upper directory in
//! the state dir, on the isolation's file system), so that afterwards the layer lists exactly
//! what it created, changed or deleted. The run's change set comes from those paths alone:
//!
//! - its base is the isolation's last tree (the tree of its last full snapshot, or the result
//!   of the last run since, noted beside a3s-iso's own index of it) with each path the run
//!   touched taken as the tree had it before the merge;
//! - its result is that tree with the same paths taken after the merge, which moves the layer
//!   down into the tree (renames; whiteouts delete; opaque directories replace).
//!
//! Both are staged as `git add -A` would stage those paths (a changed `.gitignore` naming its
//! whole directory) into an index of those paths alone; the trees are the last tree with those
//! paths replaced (`git::TreeEdit`), so nothing of the repository's size is read. Edits made
//! outside any run keep their entry of the last tree: the next full snapshot (`capture`) sees
//! them, as a3s-iso's own index still holds the last full snapshot's stat data. A changed root
//! `.gitignore` stages every path of that index instead.
//!
//! The merge is recorded before the command starts
//! ([`crate::recovery::pending::TreeMove::MergeRun`]), so whatever ends `run`, the next command
//! merges what the layer holds ([`recover`]). Where the fast path cannot be proven the run
//! takes the full one (a snapshot before and after): see [`prepare`] and [`finish`].

mod dropped;
mod merge;

use std::path::{Path, PathBuf};

use crate::base::error::{Error, IoContext, Result};
use crate::base::ids::{RunId, SessionId};
use crate::base::sandbox::{FileLayer, SandboxSpec};
use crate::context::Located;
use crate::model::isolation::Isolation;
use crate::model::snapshot::{self, Snapshot, TempFile};
use crate::recovery::pending::{MergeRun, TreeMove};
use crate::store::lock::RepoLock;

/// Makes `run` take the full path, so that tests can compare both (`fault-injection` builds).
pub const FORCE_FULL: &str = "A3S_ISO_TEST_FULL_RUN";

/// A run's layer over its isolation, made (and its merge recorded) before the command.
pub(crate) struct RunLayer {
    intent: MergeRun,
    /// a3s-iso's own index of the isolation, as its last full snapshot left it.
    seed: PathBuf,
    /// The isolation's last tree: its last full snapshot's, or the last run's result since.
    tree: String,
}

impl RunLayer {
    /// What the sandbox mounts: the layer over the isolation's tree.
    pub(crate) fn spec(&self) -> FileLayer {
        FileLayer {
            dir: self.intent.tree.clone(),
            base: self.intent.layer.clone(),
            volatile: self.intent.dropped,
        }
    }
}

/// What becomes of what a run's command writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Writes {
    /// Merged into the isolation: the run's work.
    Kept,
    /// Thrown away (`land`'s test): the layer is removed, never merged.
    Dropped,
}

/// How a run's change set is made after the command.
pub(crate) enum Finished {
    /// From the paths the layer held: the base and the result.
    Fast { base: String, result: Snapshot },
    /// The layer was thrown away: the isolation is its last tree still; `wrote`: the paths a
    /// snapshot would have taken from what the command wrote.
    Dropped { tree: String, wrote: Vec<String> },
    /// The layer could not be used (the overlay was refused, or the run touched a nested
    /// repository): it is merged, and the caller takes a full snapshot for the result.
    Full { base: String },
}

fn forced_full() -> bool {
    cfg!(feature = "fault-injection") && std::env::var_os(FORCE_FULL).is_some_and(|v| !v.is_empty())
}

/// The run's layer, its merge recorded, when the run can take the fast path: sandboxed, a flat
/// last full snapshot with a plain index, no write to the isolation but through the layer, and
/// the layer on the isolation's file system. `None`: the full path.
pub(crate) fn prepare(
    located: &Located,
    isolation: &Isolation,
    (session_id, run_id): (&SessionId, &RunId),
    spec: &SandboxSpec,
    writes: Writes,
) -> Result<Option<RunLayer>> {
    let store = &located.store;
    let seed = store.seed_index_path(&isolation.admin);
    let last = snapshot::noted_tree(&seed);
    let Some(tree) =
        last.filter(|_| !forced_full() && provable(located, isolation, spec, session_id))
    else {
        return Ok(None);
    };
    let layer = store.run_layer_dir(session_id, run_id);
    let _ = merge::remove_layer(&layer);
    for dir in ["upper", "work"] {
        let dir = layer.join(dir);
        std::fs::create_dir_all(&dir).ctx(|| format!("cannot create {}", dir.display()))?;
    }
    if !same_file_system(&isolation.tree, &layer) || !mountable(&layer) {
        let _ = merge::remove_layer(&layer);
        return Ok(None);
    }
    let intent = MergeRun {
        session_id: session_id.clone(),
        tree: isolation.tree.clone(),
        layer,
        dropped: writes == Writes::Dropped,
    };
    crate::recovery::pending::save(store, &TreeMove::MergeRun(intent.clone()))?;
    Ok(Some(RunLayer { intent, seed, tree }))
}

/// What the fast path needs of the session and the sandbox, checked without reading the tree.
fn provable(located: &Located, isolation: &Isolation, spec: &SandboxSpec, id: &SessionId) -> bool {
    let tree = &isolation.tree;
    let under_tree = |p: &PathBuf| p != tree && p.starts_with(tree);
    let store = located.store.dir();
    !located.repo.common_dir.join("reftable").exists()
        && !isolation.admin.join("modules").exists()
        && flat_marker(&located.store.seed_index_path(&isolation.admin)).is_file()
        && std::fs::symlink_metadata(located.store.pending_file(id)).is_err()
        && !spec.writable.iter().any(under_tree)
        && !spec.layers.iter().any(|l| l.dir.starts_with(tree))
        && !spec.mounted.iter().any(|m| m.to.starts_with(tree))
        && !store.starts_with(tree)
        && !tree.starts_with(store)
        && mountable(tree)
}

/// The mark beside a3s-iso's index that its last full snapshot found nothing nested.
fn flat_marker(seed: &Path) -> PathBuf {
    seed.with_extension("flat")
}

/// Records, after a full snapshot, whether it found nothing nested and left a plain index (the
/// fast path needs both). Best effort: without the mark, runs take the full path.
pub(crate) fn note_full_snapshot(seed: &Path, flat: bool) {
    let marker = flat_marker(seed);
    match flat && plain_seed(seed).unwrap_or(false) {
        true if !marker.is_file() => drop(std::fs::write(&marker, b"")),
        true => {}
        false => drop(std::fs::remove_file(&marker)),
    }
}

/// Whether a snapshot can start from a3s-iso's own index alone: a plain file, not split, no
/// entry marked skip-worktree, no gitlink.
pub(crate) fn plain_seed(seed: &Path) -> Result<bool> {
    if !std::fs::symlink_metadata(seed).is_ok_and(|m| m.is_file()) {
        return Ok(false);
    }
    let held = crate::git::index_file::summary(seed)?;
    Ok(held.parsed && !held.split && !held.skip_worktree && !held.gitlink)
}

/// A path the overlay's mount options can carry.
fn mountable(path: &Path) -> bool {
    !path.to_string_lossy().contains([',', ':', '\\'])
}

fn same_file_system(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev(),
        _ => false,
    }
}

/// After the command: the run's base and result from what its layer holds, the layer merged
/// into the tree between the two, and the isolation's last tree noted at the result.
pub(crate) fn finish(
    git: &crate::git::Git,
    located: &Located,
    isolation: &Isolation,
    layer: RunLayer,
) -> Result<Finished> {
    let took = layer.intent.layer.join("work").join("work").is_dir();
    let upper = layer.intent.layer.join("upper");
    let changes = match took {
        true => merge::changes(&upper, &isolation.tree).ctx(|| read_failure(&upper))?,
        false => merge::Changes::default(),
    };
    if layer.intent.dropped {
        let wrote = match took {
            true => {
                let wt = isolation.git(git, &located.store.scratch_dir())?;
                let dirs = (isolation.tree.as_path(), upper.as_path());
                dropped::wrote(git, &wt, dirs, &layer.tree, &changes)?
            }
            false => Vec::new(),
        };
        crate::fault_point!("run-layer-before-drop");
        complete(&located.store, &layer.intent)?;
        return Ok(Finished::Dropped {
            tree: layer.tree,
            wrote,
        });
    }
    let unchanged = took && changes.paths.is_empty() && !changes.everything;
    if !took || changes.nested || unchanged {
        complete(&located.store, &layer.intent)?;
        let base = layer.tree;
        return Ok(match unchanged {
            // Nothing changed: the last tree is both.
            true => Finished::Fast {
                base: base.clone(),
                result: Snapshot::flat(&base),
            },
            false => Finished::Full { base },
        });
    }
    let scratch = located.store.scratch_dir();
    let wt = isolation.git(git, &scratch)?;
    match changes.everything {
        true => restage_whole(&wt, located, &layer),
        false => edit_last_tree(git, &wt, located, &layer, &changes.paths),
    }
}

/// The run's trees as the last tree with the paths it touched staged again, before and after
/// the merge: only the trees above those paths are read, whatever the repository holds.
fn edit_last_tree(
    git: &crate::git::Git,
    wt: &crate::git::HermeticGit,
    located: &Located,
    layer: &RunLayer,
    paths: &[PathBuf],
) -> Result<Finished> {
    use std::os::unix::ffi::OsStrExt;
    let replaced: Vec<Vec<u8>> = paths
        .iter()
        .map(|p| p.as_os_str().as_bytes().to_vec())
        .collect();
    let listing = wt.listing_under(&layer.tree, &replaced)?;
    if listing.has_gitlink() {
        complete(&located.store, &layer.intent)?;
        return Ok(Finished::Full {
            base: layer.tree.clone(),
        });
    }
    let index = TempFile::new(&located.store.scratch_dir(), "index")?;
    let on_index = wt.on_snapshot_index_literal(index.path());
    if !listing.entries.is_empty() {
        on_index.index_info(listing.index_info())?;
    }
    let staged = || -> Result<Vec<_>> {
        snapshot::stage_paths(wt, index.path(), Some(paths))?;
        let hash_len = layer.tree.len() / 2;
        crate::git::index_file::entries(index.path(), hash_len)?
            .ok_or_else(|| Error::internal("cannot read the index of the run's paths"))
    };
    let before = staged()?;
    crate::fault_point!("run-layer-before-merge");
    complete(&located.store, &layer.intent)?;
    let after = staged()?;
    let edit = |staged| crate::git::TreeEdit {
        root: &layer.tree,
        replaced: &replaced,
        staged,
    };
    let trees = wt.write_edits(git, &listing, &[edit(&before), edit(&after)])?;
    let [base, result] =
        <[String; 2]>::try_from(trees).map_err(|_| Error::internal("two trees were asked for"))?;
    snapshot::note_tree(&layer.seed, &result);
    Ok(Finished::Fast {
        base,
        result: Snapshot::flat(&result),
    })
}

/// The run's trees when the root's `.gitignore` changed: a3s-iso's index with every path
/// staged before and after the merge, then kept. Each staging starts from a copy whose racy
/// records are distrusted, as a snapshot's does: git compares whole seconds, and a same-size
/// edit with its time put back would otherwise stay unread.
fn restage_whole(
    wt: &crate::git::HermeticGit,
    located: &Located,
    layer: &RunLayer,
) -> Result<Finished> {
    let scratch = located.store.scratch_dir();
    let before = TempFile::new(&scratch, "index")?;
    snapshot::copy_distrusted(wt, &layer.seed, before.path())?;
    snapshot::stage_paths(wt, before.path(), None)?;
    let base = snapshot::write_tree(wt, before.path())?;
    crate::fault_point!("run-layer-before-merge");
    complete(&located.store, &layer.intent)?;
    let after = TempFile::new(&scratch, "index")?;
    let began = std::time::SystemTime::now();
    snapshot::copy_distrusted(wt, before.path(), after.path())?;
    snapshot::stage_paths(wt, after.path(), None)?;
    let tree = snapshot::write_tree(wt, after.path())?;
    snapshot::keep_seed(after.path(), &layer.seed, began, &tree)?;
    Ok(Finished::Fast {
        base,
        result: Snapshot::flat(&tree),
    })
}

fn read_failure(upper: &Path) -> String {
    format!("cannot read the run's layer {}", upper.display())
}

/// Merges the layer into the tree (unless dropped), removes it, then the intent; repeatable.
fn complete(store: &crate::store::state::Store, intent: &MergeRun) -> Result<()> {
    let upper = intent.layer.join("upper");
    let tree_is_there = std::fs::symlink_metadata(&intent.tree).is_ok_and(|m| m.is_dir());
    if !intent.dropped && tree_is_there && upper.is_dir() {
        let (from, into) = (upper.display(), intent.tree.display());
        merge::merge(&upper, &intent.tree)
            .ctx(|| format!("cannot merge the run's layer {from} into {into}"))?;
    }
    crate::fault_point!("run-layer-after-merge");
    merge::remove_layer(&intent.layer)
        .ctx(|| format!("cannot remove {}", intent.layer.display()))?;
    if let Some(session_dir) = intent.layer.parent() {
        let _ = std::fs::remove_dir(session_dir);
    }
    crate::recovery::pending::remove(store, &intent.session_id)
}

/// Finishes every interrupted `MergeRun` whose session's lease is free, under the repository
/// lock, before anything else reads the tree. Best effort: one that fails stays pending.
pub(crate) fn recover(_held: &RepoLock, store: &crate::store::state::Store) {
    for intent in crate::recovery::pending::left(store) {
        if let TreeMove::MergeRun(merge) = intent
            && let Ok(Some(_lease)) = store.try_lease(&merge.session_id)
        {
            let _ = complete(store, &merge);
        }
    }
}
