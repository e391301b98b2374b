//! Everything a3s-iso stores for one session, as items to remove: what `discard --purge`
//! removes, and what `gc` removes of a session no one needs any more. The journal entries of
//! its promotes stay (they keep a later promote of the same digest `idempotent`).

use std::path::PathBuf;

use crate::base::error::Result;
use crate::base::ids::SessionId;
use crate::context::Located;
use crate::git::Git;
use crate::model::refs::{self, Scope};
use crate::services::purge_item::{Item, Kind, Reason};
use crate::store::layout::StateDir;
use crate::store::state::SessionRecord;

/// What a clean-up of one session removes and what it keeps.
#[derive(Debug, Default)]
pub(crate) struct SessionPlan {
    /// What goes.
    pub remove: Vec<Item>,
    /// What stays, with why.
    pub keep: Vec<Item>,
}

/// Plans the removal of everything of session `id` (its record, when `record` is given): its
/// private refs in every namespace of this store, its retained branch (unless checked out in
/// the source or another worktree), its run documents, nested change sets, run exits, promote artifacts, seed
/// index, lease and record. Its journal entries are kept.
pub(crate) fn plan_session(
    git: &Git,
    located: &Located,
    id: &SessionId,
    record: Option<&SessionRecord>,
    reason: Reason,
) -> Result<SessionPlan> {
    let admin = record.and_then(|r| r.admin_dir.as_deref());
    plan_session_at(git, located, id, admin, reason)
}

/// [`plan_session`] of a session known by its isolation's admin dir only (its record is gone:
/// what an interrupted purge left).
pub(crate) fn plan_session_at(
    git: &Git,
    located: &Located,
    id: &SessionId,
    admin: Option<&std::path::Path>,
    reason: Reason,
) -> Result<SessionPlan> {
    let mut plan = SessionPlan::default();
    let ns = located.store.refs();
    let top = &located.repo.toplevel;
    let session_refs = refs::SessionRefs {
        git,
        dir: top,
        ns: &ns,
        session_id: id,
    };
    for name in session_refs.list(Scope::All)? {
        plan.remove
            .push(Item::reference(Kind::Ref, name, reason).of(id));
    }
    let branch = format!("refs/heads/{}", ns.retained_branch(id));
    if !git
        .list_refs(top, std::slice::from_ref(&branch))?
        .is_empty()
    {
        // Checked out anywhere (the source or another worktree, all listed by git): deleting
        // it would leave that worktree on a branch with no commits.
        let checked_out = git.checked_out_branches(top)?.contains(&branch);
        let item = Item::reference(Kind::Branch, branch, reason).of(id);
        if checked_out {
            plan.keep.push(Item {
                reason: Reason::CheckedOut,
                ..item
            });
        } else {
            plan.remove.push(item);
        }
    }
    plan.remove.extend(files_of(located, id, admin, reason));
    plan.keep.extend(journal_of(located, id));
    Ok(plan)
}

/// The session's files in the state dir that exist now (its record last).
fn files_of(
    located: &Located,
    id: &SessionId,
    admin: Option<&std::path::Path>,
    reason: Reason,
) -> Vec<Item> {
    let store = &located.store;
    let dir = store.dir();
    let mut paths: Vec<(Kind, PathBuf)> = vec![
        (Kind::Runs, StateDir::Runs.under(dir).join(id)),
        (Kind::Nested, StateDir::Nested.under(dir).join(id)),
        (Kind::RunExits, StateDir::RunExits.under(dir).join(id)),
        (Kind::SessionGit, store.session_git_dir(id)),
        (Kind::Runs, store.land_tests_dir(id)),
        (Kind::Runs, store.setup_output_dir(id)),
        (Kind::RunLayer, StateDir::RunLayers.under(dir).join(id)),
    ];
    paths.extend(
        artifacts_of(located, id)
            .into_iter()
            .map(|p| (Kind::Artifacts, p)),
    );
    // Seeds are named by the admin dir, which a spare (or a later isolation) may hold now:
    // only those of an admin dir that is gone are this session's.
    if let Some(admin) = admin.filter(|a| std::fs::symlink_metadata(a).is_err()) {
        paths.extend(seeds_of(store, admin).into_iter().map(|p| (Kind::Seed, p)));
    }
    paths.push((Kind::Lease, store.lease_file(id)));
    paths.push((Kind::SessionRecord, store.session_file(id)));
    paths
        .into_iter()
        .filter(|(_, p)| std::fs::symlink_metadata(p).is_ok())
        .map(|(kind, p)| Item::path(kind, p, reason).of(id))
        .collect()
}

/// The seed indexes of the isolation whose admin dir is `admin`: its own
/// (`<name>.index`, with its notes `<name>.tree`, `<name>.flat` and `<name>.index-tree`), its index at bind
/// (`<name>+bound.index`) and its nested repositories' (`<name>+nested-<hex>.index`).
pub(crate) fn seeds_of(
    store: &crate::store::state::Store,
    admin: &std::path::Path,
) -> Vec<PathBuf> {
    let own = store.seed_index_path(admin);
    let mark = crate::services::nested::NESTED_SEED_MARK;
    let stem =
        (own.file_stem()).map_or(String::new(), |s| format!("{}{mark}", s.to_string_lossy()));
    let mut seeds = vec![own.clone(), store.bound_index_path(admin)];
    // What a3s-iso notes beside its own index: the tree it writes, that it is flat, and the
    // tree the isolation's index writes.
    seeds.extend(
        ["tree", "flat", "index-tree"]
            .map(|ext| own.with_extension(ext))
            .into_iter()
            .filter(|p| p.is_file()),
    );
    if let Some(Ok(entries)) = own.parent().map(std::fs::read_dir) {
        seeds.extend(
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&stem))
                .map(|e| e.path()),
        );
    }
    seeds
}

/// The session's promote artifacts in the state dir: those of its journal entries, and those
/// whose `summary.json` names it (a `--no-apply` promote journals nothing).
fn artifacts_of(located: &Located, id: &SessionId) -> Vec<PathBuf> {
    let root = located.store.artifacts_dir();
    let mut dirs: Vec<PathBuf> = located
        .store
        .journal_entries()
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.session_id.as_deref() == Some(id))
        .map(|e| root.join(e.digest.trim_start_matches("sha256:")))
        .collect();
    if let Ok(entries) = std::fs::read_dir(&root) {
        dirs.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|dir| artifacts_session(dir).as_deref() == Some(id)),
        );
    }
    dirs.sort();
    dirs.dedup();
    dirs
}

/// The session a promote's artifacts belong to, as its `summary.json` says.
pub(crate) fn artifacts_session(dir: &std::path::Path) -> Option<String> {
    let bytes =
        crate::base::fsutil::read_small_regular_file(&dir.join("summary.json"), 16 << 20).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    value.get("session_id")?.as_str().map(str::to_string)
}

/// The session's journal entries: kept, each makes a later promote of its digest `idempotent`.
fn journal_of(located: &Located, id: &SessionId) -> Vec<Item> {
    let store = &located.store;
    store
        .journal_entries()
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.session_id.as_deref() == Some(id))
        .map(|e| {
            Item::path(
                Kind::JournalEntry,
                store.journal_file(&e.digest),
                Reason::Idempotence,
            )
            .of(id)
        })
        .collect()
}
