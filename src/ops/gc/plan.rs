//! What `gc` removes, planned from the disk and the refs under the lock, changing nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::base::error::Result;
use crate::base::fsutil::modified_ms;
use crate::base::ids::SessionId;
use crate::base::maker;
use crate::base::reflink;
use crate::context::Located;
use crate::git::Git;
use crate::services::purge::{SessionPlan, artifacts_session, plan_session};
use crate::services::purge_item::{Item, Kind, Reason};
use crate::store::layout::StateDir;
use crate::store::state::{SessionRecord, SessionState};

/// Which items are old enough to go.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    /// Items last changed before this time (milliseconds since the epoch) are expired.
    pub cutoff_ms: u64,
    /// `--all`: every item no live or retained session needs, whatever its age.
    pub all: bool,
}

impl Window {
    fn expired(self, at_ms: u64) -> bool {
        self.all || at_ms < self.cutoff_ms
    }
}

/// The sessions of the store as `gc` sees them.
struct Sessions {
    /// Every record that could be read, by id.
    records: BTreeMap<SessionId, SessionRecord>,
    /// The ids not to touch: bound, retained, or unreadable (it may be a live session's).
    needed: BTreeSet<SessionId>,
}

impl Sessions {
    fn read(located: &Located) -> Result<Sessions> {
        let mut records = BTreeMap::new();
        let mut needed = BTreeSet::new();
        for id in session_ids(ids_in(&located.store.path(StateDir::Sessions), ".json")) {
            match located.store.load_session(&id) {
                Ok(Some(record)) => {
                    if matches!(record.state, SessionState::Bound | SessionState::Retained) {
                        needed.insert(id.clone());
                    }
                    records.insert(id, record);
                }
                Ok(None) => {}
                Err(_) => {
                    needed.insert(id);
                }
            }
        }
        Ok(Sessions { records, needed })
    }
}

/// Plans a `gc` of the located store.
pub(crate) fn plan(git: &Git, located: &Located, window: Window) -> Result<SessionPlan> {
    let sessions = Sessions::read(located)?;
    let mut plan = SessionPlan::default();
    plan_sessions(git, located, window, &sessions, &mut plan)?;
    plan_gone(git, located, window, &sessions, &mut plan)?;
    plan_purged(located, window, &sessions, &mut plan);
    plan_journal(located, window, &sessions, &mut plan);
    plan_artifacts(located, window, &sessions, &mut plan);
    let pool = plan_pool(located, window, &mut plan);
    plan_pristine(located, &sessions, &mut plan);
    plan_seeds(located, &sessions, &pool, &mut plan);
    plan_fetched(git, located, window, &mut plan)?;
    for leftover in crate::store::scratch::leftovers(located.store.dir()) {
        plan.remove
            .push(Item::path(Kind::Temp, leftover.path, Reason::DeadMaker));
    }
    plan_registry(located, window, &sessions, &mut plan);
    if window.all {
        plan_uninstall(git, located, &sessions, &mut plan)?;
    }
    let mut seen = BTreeSet::new();
    plan.remove
        .retain(|item| seen.insert((item.path.clone(), item.reference.clone())));
    // What goes is not also kept, and what stays is listed once.
    plan.keep
        .retain(|item| seen.insert((item.path.clone(), item.reference.clone())));
    Ok(plan)
}

/// The session ids among `names`: a file a3s-iso did not write is no session's.
fn session_ids(names: impl IntoIterator<Item = String>) -> impl Iterator<Item = SessionId> {
    names
        .into_iter()
        .filter_map(|name| SessionId::new(name).ok())
}

/// Whether a claim, a tree operation's intent or a held lease is on session `id`.
fn busy(located: &Located, id: &SessionId) -> bool {
    let store = &located.store;
    StateDir::Claims.file(store.dir(), id, ".json").exists()
        || store.pending_file(id).exists()
        || store.rebase_intent_file(id).exists()
        || store.is_leased(id).unwrap_or(true)
}

/// Discarded and swept sessions: all their evidence past the window, only their lease before.
fn plan_sessions(
    git: &Git,
    located: &Located,
    window: Window,
    sessions: &Sessions,
    plan: &mut SessionPlan,
) -> Result<()> {
    for (id, record) in &sessions.records {
        let record_item =
            |reason| Item::path(Kind::SessionRecord, located.store.session_file(id), reason).of(id);
        let reason = match record.state {
            SessionState::Bound => Reason::Live,
            SessionState::Retained => Reason::Retained,
            SessionState::Discarded => Reason::Discarded,
            SessionState::Swept => Reason::Swept,
        };
        if matches!(reason, Reason::Live | Reason::Retained) {
            plan.keep.push(record_item(reason));
        } else if busy(located, id) {
            plan.keep.push(record_item(Reason::Busy));
        } else if window.expired(record.last_activity_ms()) {
            let session = plan_session(git, located, id, Some(record), reason)?;
            plan.remove.extend(session.remove);
            plan.keep.extend(session.keep);
        } else {
            // Its evidence stays until the window is past, listed so nothing is kept unsaid.
            let session = plan_session(git, located, id, Some(record), reason)?;
            plan.keep.extend(
                session
                    .remove
                    .into_iter()
                    .chain(session.keep)
                    .filter(|i| i.kind != Kind::Lease)
                    .map(|i| Item {
                        reason: match i.reason {
                            Reason::CheckedOut => i.reason,
                            _ => Reason::InsideWindow,
                        },
                        ..i
                    }),
            );
            let lease = located.store.lease_file(id);
            if lease.exists() {
                plan.remove
                    .push(Item::path(Kind::Lease, lease, Reason::DeadHolder).of(id));
            }
        }
    }
    Ok(())
}

/// The directories that hold a session's files under its id.
const PER_SESSION: [StateDir; 7] = [
    StateDir::Runs,
    StateDir::Nested,
    StateDir::RunExits,
    StateDir::SessionGit,
    StateDir::RunLayers,
    StateDir::LandTests,
    StateDir::Setup,
];

/// Sessions with no record left: their refs, branches and files, once past the window.
fn plan_gone(
    git: &Git,
    located: &Located,
    window: Window,
    sessions: &Sessions,
    plan: &mut SessionPlan,
) -> Result<()> {
    let dir = located.store.dir();
    let mut ids: BTreeSet<String> = ref_ids(git, located)?;
    for sub in PER_SESSION {
        ids.extend(ids_in(&sub.under(dir), ""));
    }
    ids.extend(ids_in(&StateDir::Leases.under(dir), ".lock"));
    for id in session_ids(ids) {
        if sessions.records.contains_key(&id) || sessions.needed.contains(&id) || busy(located, &id)
        {
            continue;
        }
        let newest = PER_SESSION
            .iter()
            .map(|sub| newest_ms(&sub.under(dir).join(&id)))
            .chain([newest_ms(&located.store.lease_file(&id))])
            .max()
            .unwrap_or(0);
        if window.expired(newest) {
            let session = plan_session(git, located, &id, None, Reason::Gone)?;
            plan.remove.extend(session.remove);
            plan.keep.extend(session.keep);
        }
    }
    Ok(())
}

/// The marks purges left of sessions with no record, once past the window (`--all`: all).
fn plan_purged(located: &Located, window: Window, sessions: &Sessions, plan: &mut SessionPlan) {
    let reason = if window.all {
        Reason::Uninstall
    } else {
        Reason::Expired
    };
    for id in session_ids(ids_in(&located.store.path(StateDir::Purged), ".json")) {
        if sessions.records.contains_key(&id) || sessions.needed.contains(&id) {
            continue;
        }
        let path = located.store.purged_file(&id);
        if window.expired(newest_ms(&path)) {
            plan.remove
                .push(Item::path(Kind::PurgeMark, path, reason).of(&id));
        }
    }
}

/// The session ids the store's refs and retained branches name.
fn ref_ids(git: &Git, located: &Located) -> Result<BTreeSet<String>> {
    let ns = located.store.refs();
    let top = &located.repo.toplevel;
    let mut ids = BTreeSet::new();
    for name in git.list_refs(top, &[ns.root()])? {
        ids.extend(ns.session_of(&name).map(str::to_string));
    }
    for name in git.list_refs(top, &[ns.branch_root()])? {
        ids.extend(ns.branch_session(&name).map(str::to_string));
    }
    Ok(ids)
}

/// Journal entries past the window, but a live or retained session's or a pending promote's.
fn plan_journal(located: &Located, window: Window, sessions: &Sessions, plan: &mut SessionPlan) {
    let store = &located.store;
    for entry in store.journal_entries().unwrap_or_default() {
        let owner = entry.session_id.as_deref();
        if owner.is_some_and(|id| sessions.needed.contains(id)) {
            continue;
        }
        let path = store.journal_file(&entry.digest);
        let mut item = Item::path(Kind::JournalEntry, path, Reason::Expired);
        item.session_id = owner.map(str::to_string);
        if intent_pending(located, &entry.digest) {
            plan.keep.push(Item {
                reason: Reason::Busy,
                ..item
            });
        } else if window.expired(entry.promoted_at_ms) {
            plan.remove.push(item);
        } else {
            plan.keep.push(Item {
                reason: Reason::InsideWindow,
                ..item
            });
        }
    }
}

/// Whether a promote of `digest` has an intent on disk (interrupted and not yet recovered).
fn intent_pending(located: &Located, digest: &str) -> bool {
    let hex = digest.trim_start_matches("sha256:");
    StateDir::Intents
        .file(located.store.dir(), hex, ".json")
        .exists()
}

/// Promote artifacts past the window whose session is not live or retained.
fn plan_artifacts(located: &Located, window: Window, sessions: &Sessions, plan: &mut SessionPlan) {
    let Ok(entries) = std::fs::read_dir(located.store.artifacts_dir()) else {
        return;
    };
    for dir in entries.flatten().map(|e| e.path()) {
        let hex = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        let journaled = hex.as_deref().and_then(|hex| {
            located
                .store
                .journal_entry(&format!("sha256:{hex}"))
                .ok()
                .flatten()
        });
        let owner = journaled
            .as_ref()
            .and_then(|e| e.session_id.clone())
            .or_else(|| artifacts_session(&dir));
        if owner
            .as_ref()
            .is_some_and(|id| sessions.needed.contains(id.as_str()))
            || hex.as_deref().is_some_and(|h| intent_pending(located, h))
        {
            continue;
        }
        let at = journaled.map_or_else(|| newest_ms(&dir), |e| e.promoted_at_ms);
        if window.expired(at) {
            let mut item = Item::path(Kind::Artifacts, dir, Reason::Expired);
            item.session_id = owner;
            plan.remove.push(item);
        }
    }
}

/// Seed indexes: one whose isolation is gone goes whatever its age (a new one writes its own),
/// unless a bind is in flight (its admin dir may be appearing now).
fn plan_seeds(located: &Located, sessions: &Sessions, pool: &PoolPlan, plan: &mut SessionPlan) {
    let store = &located.store;
    let mut owners: Vec<(String, Reason)> = Vec::new();
    for id in &sessions.needed {
        let record = sessions.records.get(id);
        let reason = match record.map(|r| r.state) {
            Some(SessionState::Retained) => Reason::Retained,
            _ => Reason::Live,
        };
        if let Some(name) = record
            .and_then(|r| r.admin_dir.as_deref())
            .and_then(Path::file_name)
        {
            owners.push((name.to_string_lossy().into_owned(), reason));
        }
    }
    owners.extend(pool.kept_admins.iter().map(|n| (n.clone(), Reason::Pool)));
    for name in admin_names(located) {
        if !pool.removed_admins.contains(&name) {
            owners.push((name, Reason::IsolationExists));
        }
    }
    let binding = !ids_in(&store.path(StateDir::Claims), ".json").is_empty();
    let Ok(entries) = std::fs::read_dir(store.path(StateDir::Seeds)) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let owner = owners
            .iter()
            .find(|(admin, _)| name.as_deref().is_some_and(|n| seed_of(n, admin)));
        match owner {
            Some((_, reason)) => plan.keep.push(Item::path(Kind::Seed, path, *reason)),
            None if binding => plan.keep.push(Item::path(Kind::Seed, path, Reason::Busy)),
            None => plan
                .remove
                .push(Item::path(Kind::Seed, path, Reason::IsolationGone)),
        }
    }
}

/// Whether the seed file `name` is the isolation `admin`'s; a longer name starting with
/// `admin.` counts too, so it is kept, never wrongly removed.
fn seed_of(name: &str, admin: &str) -> bool {
    name.strip_prefix(admin)
        .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('+'))
}

/// The names of the admin dirs of the repository's linked worktrees.
fn admin_names(located: &Located) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(located.repo.common_dir.join("worktrees")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// What `gc` does with the pool: the admin dirs of the spares it keeps and of those it removes.
#[derive(Debug, Default)]
struct PoolPlan {
    kept_admins: Vec<String>,
    removed_admins: Vec<String>,
}

/// The pool's spares and settings: kept, or with `--all` removed (but one still being built).
fn plan_pool(located: &Located, window: Window, plan: &mut SessionPlan) -> PoolPlan {
    use crate::recovery::spares::{self, SpareState};
    let mut pool = PoolPlan::default();
    let all = spares::spares(located).unwrap_or_default();
    let mut building = false;
    for spare in &all {
        let goes = window.all && spare.state == SpareState::Ready;
        building |= spare.state == SpareState::Building;
        let reason = match (goes, spare.state) {
            (true, _) => Reason::Uninstall,
            (false, SpareState::Building) => Reason::Busy,
            (false, _) => Reason::Pool,
        };
        let item = Item {
            bytes: Some(spares::bytes_of(located, spare)),
            ..Item::path(Kind::Spare, spare.path.clone(), reason)
        };
        let admin = spare
            .admin
            .as_deref()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned());
        match goes {
            true => pool.removed_admins.extend(admin),
            false => pool.kept_admins.extend(admin),
        }
        list(plan, goes, item);
    }
    let settings = spares::settings_file(located);
    if settings.exists() {
        let reason = if window.all && !building {
            Reason::Uninstall
        } else {
            Reason::Pool
        };
        let item = Item::path(Kind::PoolSettings, settings, reason);
        list(plan, reason == Reason::Uninstall, item);
    }
    pool
}

fn list(plan: &mut SessionPlan, goes: bool, item: Item) {
    match goes {
        true => plan.remove.push(item),
        false => plan.keep.push(item),
    }
}

/// Pristine trees (a cache) that nothing is bound at, or a dead process was building, go.
fn plan_pristine(located: &Located, sessions: &Sessions, plan: &mut SessionPlan) {
    let mut trees: Vec<PathBuf> = Vec::new();
    let mut in_use: Vec<String> = Vec::new();
    for record in sessions.records.values() {
        if matches!(record.state, SessionState::Bound | SessionState::Retained) {
            in_use.push(record.bound_revision.clone());
            trees.extend(record.worktree.clone());
        }
    }
    // A record that cannot be read may be a live session's at any revision.
    let unreadable = sessions
        .needed
        .iter()
        .any(|id| !sessions.records.contains_key(id));
    for spare in crate::recovery::spares::spares(located).unwrap_or_default() {
        in_use.push(spare.head.clone());
        trees.push(spare.path.clone());
    }
    let beside = located.store.isolation_names(&located.repo.toplevel);
    let parent = located.repo.toplevel.parent().unwrap_or(Path::new("/"));
    let mut roots = vec![parent.join(format!(
        "{}.pristine",
        beside.prefix(false).to_string_lossy()
    ))];
    for tree in &trees {
        if let Some(root) = crate::model::pristine::root_beside(tree)
            && !roots.contains(&root)
        {
            roots.push(root);
        }
    }
    for root in roots {
        for (path, unused) in crate::model::pristine::listed(&root, &in_use) {
            use crate::model::pristine::Unneeded;
            let (goes, reason) = match (unused, unreadable) {
                (Some(Unneeded::Unused), false) => (true, Reason::Unused),
                (Some(Unneeded::DeadBuild), _) => (true, Reason::DeadMaker),
                (Some(_), true) => (false, Reason::Busy),
                (None, _) => (false, Reason::InUse),
            };
            let item = Item {
                bytes: reflink::disk_use(&path).ok().map(|d| d.allocated_bytes),
                ..Item::path(Kind::Pristine, path, reason)
            };
            list(plan, goes, item);
        }
    }
}

/// Fetched change sets older than the window (a cache of the remote's), and the refs of
/// fetches that died before verifying them.
fn plan_fetched(
    git: &Git,
    located: &Located,
    window: Window,
    plan: &mut SessionPlan,
) -> Result<()> {
    let ns = located.store.refs();
    let top = &located.repo.toplevel;
    for (name, dated_ms) in git.list_refs_dated(top, &ns.fetched(""))? {
        if window.expired(dated_ms) {
            plan.remove
                .push(Item::reference(Kind::Ref, name, Reason::Expired));
        }
    }
    let landing = ns.fetching("");
    for name in git.list_refs(top, std::slice::from_ref(&landing))? {
        if name.strip_prefix(&landing).is_some_and(maker::made_by_dead) {
            plan.remove
                .push(Item::reference(Kind::Ref, name, Reason::DeadMaker));
        }
    }
    Ok(())
}

/// Registry entries of gone sources past the window; with `--all`, this one if no session is left.
fn plan_registry(located: &Located, window: Window, sessions: &Sessions, plan: &mut SessionPlan) {
    let this = (
        crate::base::names::canonical(&located.repo.toplevel),
        crate::base::names::canonical(located.store.dir()),
    );
    for (file, entry) in crate::store::state::registry_files().unwrap_or_default() {
        let gone = !entry.source.exists() || !entry.common_dir.exists();
        let ours = (
            crate::base::names::canonical(&entry.source),
            crate::base::names::canonical(&entry.state_dir),
        ) == this;
        if gone && window.expired(newest_ms(&file)) {
            plan.remove
                .push(Item::path(Kind::RegistryEntry, file, Reason::SourceGone));
        } else if ours && window.all && sessions.needed.is_empty() {
            plan.remove
                .push(Item::path(Kind::RegistryEntry, file, Reason::Uninstall));
        }
    }
}

/// `--all`: refs no session names, and with no session left, the state dir's (empty) dirs.
fn plan_uninstall(
    git: &Git,
    located: &Located,
    sessions: &Sessions,
    plan: &mut SessionPlan,
) -> Result<()> {
    let ns = located.store.refs();
    let landing = ns.fetching("");
    for name in git.list_refs(&located.repo.toplevel, &[ns.root()])? {
        // A fetch works without the lock: its ref is in use while its process lives.
        let in_flight = name
            .strip_prefix(&landing)
            .is_some_and(|token| !maker::made_by_dead(token));
        if ns.session_of(&name).is_none() && !in_flight {
            plan.remove
                .push(Item::reference(Kind::Ref, name, Reason::Uninstall));
        }
    }
    let untouched = plan.keep.iter().any(|i| {
        matches!(
            i.reason,
            Reason::Live | Reason::Retained | Reason::Busy | Reason::CheckedOut
        )
    });
    if sessions.needed.is_empty() && !untouched {
        let dir = located.store.dir();
        let mut dirs = dirs_under(dir);
        if located.store.tenant().is_none() {
            dirs.push(dir.to_path_buf());
            // The directories git leaves behind in the refs namespace once its refs are gone.
            let refs_dir = located.repo.common_dir.join("refs").join("a3s-iso");
            dirs.extend(dirs_under(&refs_dir));
            dirs.push(refs_dir);
        }
        plan.remove.extend(dirs.into_iter().map(|d| Item {
            bytes: None,
            ..Item::path(Kind::EmptyDir, d, Reason::Uninstall)
        }));
    }
    Ok(())
}

/// Every directory under `dir` (not following links), the deepest first.
fn dirs_under(dir: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    collect_dirs(dir, &mut dirs);
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    dirs
}

/// Every directory under `dir` (not following links).
fn collect_dirs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.push(entry.path());
            collect_dirs(&entry.path(), out);
        }
    }
}

/// The names in `dir` ending in `suffix` (with it cut off), hidden ones left out.
fn ids_in(dir: &Path, suffix: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|name| !name.starts_with('.'))
        .filter_map(|name| name.strip_suffix(suffix).map(str::to_string))
        .collect();
    ids.sort();
    ids
}

/// When anything at `path` (or under it) last changed; 0 when it is not there.
fn newest_ms(path: &Path) -> u64 {
    let own = modified_ms(path).unwrap_or(0);
    let Ok(entries) = std::fs::read_dir(path) else {
        return own;
    };
    entries
        .flatten()
        .map(|e| newest_ms(&e.path()))
        .fold(own, u64::max)
}
