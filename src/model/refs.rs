//! Every private ref a3s-iso writes, named in one place, with its lifecycle: a session's refs
//! are created at bind (pinned base and carried WIP), a run's result is pinned once at capture,
//! a sweep pins a final snapshot, and discard deletes them. Every name comes from the store's
//! namespace ([`RefNames`], `Store::refs`): `refs/a3s-iso/` for the default store,
//! `refs/a3s-iso-tenants/<tag>/` for a tenant (`--state-dir`), so tenants never share a ref.
//!
//! ```text
//! <ns>sessions/<id>/base        the bound commit
//! <ns>sessions/<id>/wip         the carried WIP snapshot (the session's base tree)
//! <ns>sessions/<id>/wip-index   what the source had staged when WIP was carried
//! <ns>runs/<id>/<run>           a run's result tree (immutable evidence)
//! <ns>nested/<id>/<run>/<n>/base    a nested change set's base tree (n: 0, 1, …)
//! <ns>nested/<id>/<run>/<n>/result  its result tree
//! <ns>swept/<id>                the snapshot taken before a sweep removed the tree
//! <ns>fetched/<digest hex>      a change set fetched from a remote and verified (`remote`)
//! <ns>fetching/<token>          a fetch's landing place until it is verified or deleted
//! refs/a3s-iso/changes/<hex>    on a remote: a pushed change set (the same for every tenant)
//! refs/heads/a3s-iso/<id>       branch mode's retained branch (a user-visible branch;
//!                               refs/heads/a3s-iso-tenants/<tag>/<id> for a tenant)
//! ```

use std::path::Path;

use crate::base::error::Result;
use crate::base::ids::{RunId, SessionId, TreeId};
pub use crate::base::names::RefNames;
use crate::git::{Git, RefUpdate};
use crate::store::lock::RepoLock;
use crate::store::state::SessionRecord;

/// Which of a session's refs a deletion covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Base, WIP and run refs; the swept snapshot stays (a reclaim keeps the last work).
    KeepSwept,
    /// Everything, the swept snapshot included (`discard --purge`).
    All,
}

/// Pins what a session record names (the bound commit and any carried WIP trees) in one
/// transaction, so `git gc` keeps them.
pub fn pin_session(git: &Git, dir: &Path, ns: &RefNames, record: &SessionRecord) -> Result<()> {
    let id = &record.session_id;
    let mut updates = vec![RefUpdate::set(ns.session_base(id), &record.bound_revision)];
    if record.carried_wip {
        updates.push(RefUpdate::set(ns.session_wip(id), &record.base_tree));
        if let Some(index_tree) = &record.carried_index_tree {
            updates.push(RefUpdate::set(ns.session_wip_index(id), index_tree));
        }
    }
    git.update_refs(dir, &updates, "a3s-iso: bind")
}

/// What pinning a run's result found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pinned {
    /// The ref is new, or already held this very tree.
    Held,
    /// The run id was pinned to another tree before (immutable evidence).
    Other(TreeId),
}

/// One session's private refs in a store's namespace, in the repository at `dir`.
pub struct SessionRefs<'a> {
    /// The git to run.
    pub git: &'a Git,
    /// The repository (its common dir or any of its worktrees).
    pub dir: &'a Path,
    /// The store's namespace.
    pub ns: &'a RefNames,
    /// The session.
    pub session_id: &'a SessionId,
}

impl SessionRefs<'_> {
    /// Pins the base and result trees of a run's nested change sets (`(base, result)` each, in
    /// their order), in one transaction.
    pub(crate) fn pin_nested(&self, run_id: &RunId, trees: &[(TreeId, TreeId)]) -> Result<()> {
        let updates: Vec<RefUpdate> = trees
            .iter()
            .enumerate()
            .flat_map(|(n, (base, result))| {
                [("base", base), ("result", result)].map(|(side, tree)| {
                    RefUpdate::set(self.ns.nested_tree(self.session_id, run_id, n, side), tree)
                })
            })
            .collect();
        self.git
            .update_refs(self.dir, &updates, "a3s-iso: capture nested")
    }

    /// Pins a run's result tree, only if the run id has no result yet.
    pub fn pin_run(&self, run_id: &RunId, tree: &TreeId) -> Result<Pinned> {
        let name = self.ns.run_result(self.session_id, run_id);
        let create = RefUpdate::Create {
            name: name.clone(),
            target: tree.to_string(),
        };
        let created = self
            .git
            .update_refs(self.dir, &[create], "a3s-iso: capture");
        if created.is_ok() {
            return Ok(Pinned::Held);
        }
        match self.git.rev_parse(self.dir, &name)? {
            Some(pinned) if *tree == pinned => Ok(Pinned::Held),
            Some(pinned) => Ok(Pinned::Other(TreeId::new(pinned)?)),
            None => created.map(|()| Pinned::Held),
        }
    }

    /// Whether a run id already has a pinned result.
    pub fn run_exists(&self, run_id: &RunId) -> Result<bool> {
        Ok(self
            .git
            .rev_parse(self.dir, &self.ns.run_result(self.session_id, run_id))?
            .is_some())
    }

    /// Pins the snapshot a sweep takes before removing an isolation.
    pub fn pin_swept(&self, tree: &TreeId) -> Result<()> {
        let update = RefUpdate::set(self.ns.swept(self.session_id), tree);
        self.git.update_refs(self.dir, &[update], "a3s-iso: sweep")
    }

    /// Points the retained branch at `commit`.
    pub fn set_retained_branch(&self, commit: &str) -> Result<()> {
        let update = RefUpdate::set(self.retained_branch(), commit);
        let message = "a3s-iso: retained commits of the session";
        self.git.update_refs(self.dir, &[update], message)
    }

    /// Puts the retained branch back to `previous`, or deletes it when there was none.
    pub fn reset_retained_branch(&self, previous: Option<&str>) -> Result<()> {
        let name = self.retained_branch();
        let update = match previous {
            Some(commit) => RefUpdate::set(name, commit),
            None => RefUpdate::Delete { name },
        };
        self.git
            .update_refs(self.dir, &[update], "a3s-iso: replay undone")
    }

    /// The retained branch's full ref name.
    fn retained_branch(&self) -> String {
        format!("refs/heads/{}", self.ns.retained_branch(self.session_id))
    }

    /// The session's private refs within `scope`.
    pub fn list(&self, scope: Scope) -> Result<Vec<String>> {
        let mut prefixes = vec![
            self.ns.session_dir(self.session_id),
            self.ns.runs_dir(self.session_id),
            self.ns.nested_dir(self.session_id),
        ];
        if scope == Scope::All {
            prefixes.push(self.ns.swept(self.session_id));
        }
        self.git.list_refs(self.dir, &prefixes)
    }

    /// Deletes the session's private refs within `scope`, in one transaction.
    pub fn delete(&self, scope: Scope) -> Result<()> {
        let updates: Vec<RefUpdate> = self
            .list(scope)?
            .into_iter()
            .map(|name| RefUpdate::Delete { name })
            .collect();
        self.git
            .update_refs(self.dir, &updates, "a3s-iso: drop session")
    }
}

/// How old a lock file on a private ref must be to count as left by a killed git: a live git
/// holds one for milliseconds (and one that outlived a killed a3s-iso, see `update_refs`, only a
/// little longer).
const STALE_REF_LOCK: std::time::Duration = std::time::Duration::from_secs(10);

/// Removes the lock files a killed git left on the session's private refs (the files backend
/// keeps `<ref>.lock` beside a ref while it changes it; a git killed then leaves it, and every
/// later change of that ref fails). Called under the repository lock with the session's lease
/// held: every a3s-iso writer of these refs holds the lock, so a lock file older than
/// [`STALE_REF_LOCK`] found then is a dead git's. Returns how many went.
pub(crate) fn clear_stale_locks(
    _held: &RepoLock,
    common_dir: &Path,
    ns: &RefNames,
    session_id: &SessionId,
) -> usize {
    let refs = common_dir.join(ns.root());
    let mut locks = vec![refs.join(format!("swept/{session_id}.lock"))];
    for dir in [
        refs.join(format!("sessions/{session_id}")),
        refs.join(format!("runs/{session_id}")),
    ] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        locks.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "lock")),
        );
    }
    let stale = |lock: &Path| {
        std::fs::symlink_metadata(lock)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= STALE_REF_LOCK)
    };
    locks
        .iter()
        .filter(|lock| stale(lock) && std::fs::remove_file(lock).is_ok())
        .count()
}
