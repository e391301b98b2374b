//! `sweep`: reclaim dead isolations. Ownership first, age second, and a snapshot before any
//! deletion. Only what this store can prove is its own is reclaimed: its records, or an
//! unrecorded worktree of this repository named with this store's prefix for this source. A
//! reclaimed session stays recorded `swept`, so that `bind --resume` brings it back.
//!
//! [`inspect`] reads what a candidate is, [`decide`] applies the decision table, and only a
//! `Reclaim` acts, in [`reclaim`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};

use crate::base::error::{Error, Result};
use crate::base::fsutil::{modified_ms, now_ms, tree_size};
use crate::base::ids::SessionId;
use crate::base::names::{IsolationNames, looks_like_isolation};
use crate::base::owner::Liveness;
use crate::base::wire::wire_enum;
use crate::context::{Context, Located};
use crate::git::repo::Repo;
use crate::model::isolation::{Isolation, registered_admins};
use crate::model::refs;
use crate::recovery::pending::{self, TreeMove};
use crate::services::pool;
use crate::store::lock::RepoLock;
use crate::store::state::{
    ClaimRecord, RecordStatus, SessionRecord, SessionState, Store, registered_sources,
};

pub use crate::services::reclaimed::{ReclaimReason, Reclaimed};

/// How long an in-flight, malformed or unrecorded isolation is kept before it may go.
pub(crate) const DEFAULT_GRACE: Duration = crate::base::owner::GRACE;

/// What `sweep` is asked to do.
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// Every registered source, not only the current repository.
    pub all: bool,
    /// Report what would be reclaimed, and change nothing.
    pub dry_run: bool,
    /// In-flight, malformed and unrecorded isolations younger than this are kept.
    pub grace: Duration,
    /// Remove without snapshotting into `refs/a3s-iso/swept/<id>` first.
    pub no_capture: bool,
    /// Also reclaim isolations retained longer ago than this.
    pub retained_older_than: Option<Duration>,
    /// Also reclaim ownerless sessions (`bind --owner none`) idle longer than the grace.
    pub include_ownerless: bool,
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions {
            all: false,
            dry_run: false,
            grace: DEFAULT_GRACE,
            no_capture: false,
            retained_older_than: None,
            include_ownerless: false,
        }
    }
}

wire_enum! {
    /// Why an isolation was kept (`kept[].reason`), or why its reclaim failed.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    pub enum KeepReason {
        /// Retained (`retain`), and not asked to reclaim retained ones this old.
        Retained = "retained",
        /// Owned by a process of another host.
        Foreign = "foreign",
        /// Whether its owner lives cannot be told, or it is not clearly an a3s-iso isolation.
        Unknown = "unknown",
        /// A run holds its lease, or its owner is alive.
        Live = "live",
        /// A bind is building it now.
        InFlight = "in_flight",
        /// Reclaimable, but within the grace period.
        Young = "young",
        /// It could not be snapshotted first, so it was not removed.
        SnapshotFailed = "snapshot_failed",
        /// Removing it failed; the tree stays.
        RemovalFailed = "removal_failed",
        /// An ownerless session (`bind --owner none`): only `--include-ownerless` reclaims it.
        Ownerless = "ownerless",
        /// Recorded, claimed or named by another state store (tenant) of this repository.
        OtherTenant = "other_tenant",
        /// Named like an isolation, but not with this store's name for this source, nor recorded.
        NotOurs = "not_ours",
    }
}

/// Why an entry was not considered: the code (`skipped[].reason`) and sentence (`detail`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// A registered source (with `--all`) that is gone.
    SourceGone,
    /// A symbolic link named like an isolation: never followed.
    SymbolicLink,
    /// A file named like an isolation.
    NotADirectory,
    /// A worktree of another repository, as its `.git` file says (never trusted to act on).
    OtherRepository {
        /// The admin dir its `.git` file points at.
        gitdir: String,
    },
}

impl SkipReason {
    /// The reason as the report spells it.
    pub fn as_str(&self) -> &'static str {
        match self {
            SkipReason::SourceGone => "source_gone",
            SkipReason::SymbolicLink => "symbolic_link",
            SkipReason::NotADirectory => "not_a_directory",
            SkipReason::OtherRepository { .. } => "other_repository",
        }
    }

    /// The sentence for a human (`skipped[].detail`).
    pub fn message(&self) -> String {
        match self {
            SkipReason::SourceGone => "registered source no longer exists".into(),
            SkipReason::SymbolicLink => "a symbolic link: never followed".into(),
            SkipReason::NotADirectory => "not a directory".into(),
            SkipReason::OtherRepository { gitdir } => {
                format!("belongs to another repository ({gitdir})")
            }
        }
    }
}

impl Serialize for SkipReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message())
    }
}

/// An isolation left in place, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Kept {
    /// Where it is.
    #[serde(with = "crate::base::paths::fs_path")]
    pub path: PathBuf,
    /// Its session id, when it is known to be one.
    pub session_id: Option<SessionId>,
    /// Why it was kept.
    pub reason: KeepReason,
    /// The particulars, for a human.
    pub detail: String,
}

/// An entry named like an isolation that sweep does not consider, and why.
#[derive(Debug, Clone)]
pub struct Skipped {
    /// Where it is.
    pub path: PathBuf,
    /// Why it is not considered: a code, with the sentence beside it as `detail`.
    pub reason: SkipReason,
}

impl Serialize for Skipped {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Shown<'a> {
            #[serde(with = "crate::base::paths::fs_path")]
            path: &'a PathBuf,
            reason: &'a SkipReason,
            detail: String,
        }
        Shown {
            path: &self.path,
            reason: &self.reason,
            detail: self.reason.message(),
        }
        .serialize(serializer)
    }
}

/// What a sweep did (or would do, with `--dry-run`).
#[derive(Debug, Clone, Serialize, Default)]
pub struct SweepOutcome {
    /// Whether nothing was changed.
    pub dry_run: bool,
    /// The isolations removed.
    pub reclaimed: Vec<Reclaimed>,
    /// The isolations left in place, with reasons.
    pub kept: Vec<Kept>,
    /// The entries not considered, with reasons.
    pub skipped: Vec<Skipped>,
    /// The bytes of the reclaimed isolations.
    pub bytes_freed: u64,
    /// The sources swept.
    #[serde(with = "crate::base::paths::fs_path_list")]
    pub sources: Vec<PathBuf>,
}

/// Progress of a long sweep; the command line shows it as a bar on a terminal.
pub trait Progress {
    /// Sweeping starts, with `total` candidates.
    fn start(&self, total: u64);
    /// One candidate is done.
    fn advance(&self);
    /// Sweeping is over.
    fn finish(&self);
}

/// What is known of one entry named like an isolation.
#[derive(Debug, Clone)]
enum Found {
    Recorded(Box<SessionRecord>),
    Claimed(ClaimRecord),
    Malformed {
        id: SessionId,
        detail: String,
        age_ms: u64,
    },
    Unreadable {
        id: SessionId,
        detail: String,
    },
    /// A registered worktree of this repository, named like an isolation, with no record.
    Unrecorded {
        id: SessionId,
        admin: PathBuf,
        age_ms: u64,
    },
    /// A symbolic link (never followed).
    Symlink,
    /// Not a directory.
    NotADirectory,
    /// What another state store of this repository records, claims or names.
    OtherTenant,
    /// Named like an isolation, but not with this store's name for this source.
    NotOurs,
    /// Named like a session whose record points elsewhere (or to no isolation): not its tree.
    Lookalike {
        id: SessionId,
        recorded: Option<PathBuf>,
    },
    /// A worktree of another repository, as its `.git` file says.
    OtherRepository {
        gitdir: String,
    },
    /// Neither recorded nor a worktree of any repository it names (made by hand?).
    Stranger,
}

/// What the decision table says about one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Decision {
    Skip(SkipReason),
    Keep(KeepReason, String),
    Reclaim(ReclaimReason),
}

/// Sweeps the current repository (and with `all`, every registered source).
pub fn sweep(ctx: &Context, opts: &SweepOptions, progress: &dyn Progress) -> Result<SweepOutcome> {
    // Interrupted binds are judged by the table below (its grace) and reported.
    let ctx = &ctx.judging_claims();
    let mut out = SweepOutcome {
        dry_run: opts.dry_run,
        ..SweepOutcome::default()
    };
    for located in sources(ctx, opts, &mut out)? {
        out.sources.push(located.repo.toplevel.clone());
        sweep_source(ctx, &located, opts, progress, &mut out)?;
    }
    Ok(out)
}

/// Reclaims the dead-owner sessions `sweep` would, for a command that reclaims as it starts
/// (`bind`, `land`). The records alone pick the candidates (with none, git is not called);
/// each then goes through sweep's decision table under the lock, `spare` asked again there.
pub fn reclaim_dead(
    ctx: &Context,
    located: &Located,
    spare: &dyn Fn(&SessionId) -> bool,
) -> Result<Vec<Reclaimed>> {
    let dead = dead_owner_trees(ctx, &located.store, spare)?;
    if dead.is_empty() {
        return Ok(Vec::new());
    }
    let known = Known::load(&located.repo, &located.store)?;
    let opts = SweepOptions::default();
    let sweep = Sweep {
        ctx,
        located,
        opts: &opts,
        known: &known,
        spare,
    };
    let mut out = SweepOutcome::default();
    let lease_held = |id: &SessionId| located.store.is_leased(id).unwrap_or(true);
    for path in dead {
        // Only a record's tree: what else sweep reclaims (claims, unrecorded trees) is its own.
        let Some(found @ Found::Recorded(_)) = inspect(&path, &located.store, &known) else {
            continue;
        };
        if decide(&found, &opts, now_ms(), &lease_held)
            == Decision::Reclaim(ReclaimReason::OwnerDead)
        {
            sweep.reclaim(&path, &found, &mut out)?;
        }
    }
    Ok(out.reclaimed)
}

/// The trees of dead owners' sessions the caller may act on and does not spare, from records.
fn dead_owner_trees(
    ctx: &Context,
    store: &Store,
    spare: &dyn Fn(&SessionId) -> bool,
) -> Result<Vec<PathBuf>> {
    Ok(store
        .sessions()?
        .into_iter()
        .flatten()
        .filter(|r| r.state.has_tree() && r.state != SessionState::Retained)
        .filter(|r| ctx.may_act_on(&r.session_id))
        .filter(|r| {
            r.owner
                .as_ref()
                .is_some_and(|owner| owner.liveness() == Liveness::Dead)
        })
        .filter(|r| !spare(&r.session_id))
        .filter_map(|r| r.worktree)
        .collect())
}

/// This repository (optional with `--all`), then every other registered source; a gone one
/// is skipped.
fn sources(ctx: &Context, opts: &SweepOptions, out: &mut SweepOutcome) -> Result<Vec<Located>> {
    let here = if opts.all {
        crate::recovery::locate(ctx).ok()
    } else {
        Some(crate::recovery::locate(ctx)?)
    };
    let mut targets: Vec<(Repo, Store)> = here.map(|l| (l.repo, l.store)).into_iter().collect();
    if opts.all {
        for entry in registered_sources()? {
            if !entry.source.is_dir() {
                out.skipped.push(Skipped {
                    path: entry.source.clone(),
                    reason: SkipReason::SourceGone,
                });
                continue;
            }
            if targets.iter().any(|(repo, store)| {
                repo.toplevel == entry.source && store.dir() == entry.state_dir
            }) {
                continue;
            }
            targets.push((
                Repo::new(&ctx.git, entry.source.clone(), entry.common_dir.clone()),
                Store::new(&entry.common_dir, Some(&entry.state_dir)),
            ));
        }
    }
    // Each store's interrupted operations are finished before its isolations are judged (this
    // repository's were, when it was located).
    Ok(targets
        .into_iter()
        .map(|(repo, store)| {
            let mut located = Located::new(repo, store, None);
            crate::recovery::recover(ctx, &mut located);
            located
        })
        .collect())
}

/// Sweeps one source: candidates are judged without the lock (most are kept); a reclaim is
/// decided again under the lock and lease before anything is touched ([`Sweep::reclaim`]).
fn sweep_source(
    ctx: &Context,
    located: &Located,
    opts: &SweepOptions,
    progress: &dyn Progress,
    out: &mut SweepOutcome,
) -> Result<()> {
    crate::store::scratch::clean(located.store.dir());
    let store = &located.store;
    let known = Known::load(&located.repo, store)?;
    let candidates = candidates(&known.dirs);
    let sweep = Sweep {
        ctx,
        located,
        opts,
        known: &known,
        spare: &|_| false,
    };
    progress.start(candidates.len() as u64);
    for path in candidates {
        progress.advance();
        let Some(found) = inspect(&path, store, &known) else {
            continue;
        };
        let lease_held = |id: &SessionId| store.is_leased(id).unwrap_or(true);
        match decide(&found, opts, now_ms(), &lease_held) {
            Decision::Reclaim(why) if opts.dry_run => {
                // Only what stands for a session is ever reclaimed.
                if let Some(id) = id_of(&found) {
                    let plan = plan_reclaim(located, opts, &path, id, &found);
                    report_reclaimed(out, plan, &path, why);
                }
            }
            Decision::Reclaim(_) => sweep.reclaim(&path, &found, out)?,
            // Another repository's isolation beside this one is its own sweep's business.
            Decision::Skip(SkipReason::OtherRepository { .. }) if !opts.all => {}
            other => report_kept(out, path, &found, other),
        }
    }
    progress.finish();
    Ok(())
}

/// Reports a decision to keep or skip an entry.
fn report_kept(out: &mut SweepOutcome, path: PathBuf, found: &Found, decision: Decision) {
    match decision {
        Decision::Skip(reason) => out.skipped.push(Skipped { path, reason }),
        Decision::Keep(reason, detail) => out.kept.push(Kept {
            path,
            session_id: id_of(found),
            reason,
            detail,
        }),
        Decision::Reclaim(_) => {}
    }
}

/// Reports an isolation reclaimed (or, with `--dry-run`, to be reclaimed).
fn report_reclaimed(out: &mut SweepOutcome, plan: ReclaimPlan, path: &Path, why: ReclaimReason) {
    out.bytes_freed += plan.bytes;
    out.reclaimed.push(Reclaimed {
        session_id: plan.id.clone(),
        path: path.to_path_buf(),
        reason: why,
        bytes: plan.bytes,
        swept_ref: plan.swept_ref,
    });
}

/// What a sweep of one source reads once, before it looks at any candidate.
struct Known {
    /// The live (not discarded) records of this store, by isolation path.
    records: HashMap<PathBuf, SessionRecord>,
    /// This store's in-flight binds, by the path they build at.
    claims: HashMap<PathBuf, ClaimRecord>,
    /// `<tree>/.git` → admin dir, for every worktree registered with the repository.
    admins: HashMap<PathBuf, PathBuf>,
    /// Isolations that other state stores (tenants) of this repository record or claim.
    elsewhere: BTreeSet<PathBuf>,
    /// Where isolations of this source can be: beside it, and wherever its records point.
    dirs: BTreeSet<PathBuf>,
    /// This store's names for this source's isolations (an unrecorded tree must carry one).
    names: IsolationNames,
}

impl Known {
    /// Reads the store's records and claims, the repository's worktrees and the other stores.
    fn load(repo: &Repo, store: &Store) -> Result<Known> {
        let records: Vec<SessionRecord> = store.sessions()?.into_iter().flatten().collect();
        let claims = store.claims()?;
        let dirs = search_dirs(repo, &records, &claims);
        Ok(Known {
            records: records
                .into_iter()
                .filter(|r| r.state.has_tree())
                .filter_map(|r| r.worktree.clone().map(|w| (w, r)))
                .collect(),
            claims: claims.into_iter().map(|c| (c.path.clone(), c)).collect(),
            admins: registered_admins(repo),
            elsewhere: held_by_other_stores(repo, store),
            dirs,
            names: store.isolation_names(&repo.toplevel),
        })
    }

    /// One candidate read again under the lock: the records and claims of session `id` and of
    /// the session the path is named after; other stores' holdings are kept from `before`.
    fn fresh(repo: &Repo, store: &Store, path: &Path, id: &SessionId, before: &Known) -> Known {
        let mut ids = vec![id.clone()];
        let named = path.file_name().and_then(|n| before.names.id_of(n));
        ids.extend(named.filter(|named| named != id));
        let mut records = HashMap::new();
        let mut claims = HashMap::new();
        for id in &ids {
            if let RecordStatus::Found(record) = store.session_status(id)
                && record.state.has_tree()
                && record.worktree.as_deref() == Some(path)
            {
                records.insert(path.to_path_buf(), *record);
            }
            if let Ok(Some(claim)) = store.load_claim(id)
                && claim.path == path
            {
                claims.insert(path.to_path_buf(), claim);
            }
        }
        Known {
            records,
            claims,
            admins: registered_admins(repo),
            elsewhere: before.elsewhere.clone(),
            dirs: BTreeSet::new(),
            names: before.names.clone(),
        }
    }
}

/// The isolation paths that the other state stores of this repository record or claim.
fn held_by_other_stores(repo: &Repo, store: &Store) -> BTreeSet<PathBuf> {
    let mut elsewhere = BTreeSet::new();
    for entry in registered_sources().unwrap_or_default() {
        if entry.common_dir == repo.common_dir && entry.state_dir != store.dir() {
            let other = Store::new(&entry.common_dir, Some(&entry.state_dir));
            for record in other.sessions().unwrap_or_default().into_iter().flatten() {
                elsewhere.extend(record.worktree);
            }
            for claim in other.claims().unwrap_or_default() {
                elsewhere.insert(claim.path);
            }
        }
    }
    elsewhere
}

/// Its parent, every recorded or claimed isolation's parent, and the per-user fallback.
fn search_dirs(
    repo: &Repo,
    records: &[SessionRecord],
    claims: &[ClaimRecord],
) -> BTreeSet<PathBuf> {
    let recorded = records.iter().filter_map(|r| r.worktree.as_deref());
    let claimed = claims.iter().map(|c| c.path.as_path());
    std::iter::once(repo.toplevel.as_path())
        .chain(recorded)
        .chain(claimed)
        .filter_map(Path::parent)
        .map(Path::to_path_buf)
        .chain(crate::store::state::user_isolations_dir(&repo.toplevel))
        .collect()
}

/// Every entry of `dirs` named like an isolation, sorted.
fn candidates(dirs: &BTreeSet<PathBuf>) -> Vec<PathBuf> {
    let mut candidates: Vec<PathBuf> = (dirs.iter())
        .filter_map(|dir| std::fs::read_dir(dir).ok())
        .flat_map(|entries| entries.flatten())
        .filter(|entry| looks_like_isolation(&entry.file_name()))
        .map(|entry| entry.path())
        .collect();
    candidates.sort();
    candidates
}

/// What a candidate is, read without changing anything; `None` when it is gone already.
fn inspect(path: &Path, store: &Store, known: &Known) -> Option<Found> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some(if meta.file_type().is_symlink() {
        Found::Symlink
    } else if !meta.is_dir() {
        Found::NotADirectory
    } else if known.elsewhere.contains(path) && !known.records.contains_key(path) {
        Found::OtherTenant
    } else {
        identify(path, store, known)
    })
}

/// The decision table: retained, foreign, unknown, live, in flight, young, then reclaimable.
fn decide(
    found: &Found,
    opts: &SweepOptions,
    now: u64,
    lease_held: &dyn Fn(&SessionId) -> bool,
) -> Decision {
    let grace = opts.grace.as_millis() as u64;
    match found {
        Found::Recorded(record) => decide_recorded(record, opts, now, lease_held),
        Found::Claimed(claim) => decide_claimed(claim, now, grace),
        Found::Unreadable { detail, .. } => keep(
            KeepReason::Unknown,
            format!("owner record unreadable: {detail}"),
        ),
        Found::Malformed { id, age_ms, detail } => decide_unowned(
            lease_held(id),
            *age_ms < grace,
            format!("malformed record, within the grace period: {detail}"),
            ReclaimReason::Malformed,
        ),
        Found::Unrecorded { id, age_ms, .. } => decide_unowned(
            lease_held(id),
            *age_ms < grace,
            "unrecorded, within the grace period".into(),
            ReclaimReason::Unrecorded,
        ),
        Found::Symlink => Decision::Skip(SkipReason::SymbolicLink),
        Found::NotADirectory => Decision::Skip(SkipReason::NotADirectory),
        Found::OtherTenant => keep(
            KeepReason::OtherTenant,
            "another state store (tenant) of this repository records or names it",
        ),
        Found::OtherRepository { gitdir } => Decision::Skip(SkipReason::OtherRepository {
            gitdir: gitdir.clone(),
        }),
        Found::NotOurs => keep(
            KeepReason::NotOurs,
            "named like an isolation, but not with this store's name for this source, and not recorded here",
        ),
        Found::Lookalike { id, recorded } => keep(
            KeepReason::Unknown,
            format!(
                "named like session {id:?}, whose record points elsewhere ({})",
                recorded
                    .as_deref()
                    .map_or("no isolation".into(), |p| p.display().to_string())
            ),
        ),
        Found::Stranger => keep(
            KeepReason::Unknown,
            "no a3s-iso record and not a worktree of this repository (made by hand?)",
        ),
    }
}

/// A recorded session: retained first, then its owner's liveness, then its lease.
fn decide_recorded(
    record: &SessionRecord,
    opts: &SweepOptions,
    now: u64,
    lease_held: &dyn Fn(&SessionId) -> bool,
) -> Decision {
    if record.state == SessionState::Retained {
        let retained_for = now.saturating_sub(record.retained_at_ms.unwrap_or(now));
        return match opts.retained_older_than {
            Some(limit) if retained_for >= limit.as_millis() as u64 => {
                Decision::Reclaim(ReclaimReason::RetainedExpired)
            }
            _ => keep(
                KeepReason::Retained,
                record.retained_reason.clone().unwrap_or_default(),
            ),
        };
    }
    let Some(owner) = &record.owner else {
        return decide_ownerless(record, opts, now, lease_held);
    };
    match owner.liveness() {
        Liveness::Foreign => keep(
            KeepReason::Foreign,
            format!("owned by {}", owner.describe()),
        ),
        Liveness::Unknown => keep(
            KeepReason::Unknown,
            "the owner's liveness cannot be determined",
        ),
        // A live owner keeps it without a look at the lease: a probe of a free lease holds it
        // for an instant, which only a dead owner's session needs to risk.
        Liveness::Alive => keep(
            KeepReason::Live,
            format!("owner {} is alive", owner.describe()),
        ),
        Liveness::Dead if lease_held(&record.session_id) => {
            keep(KeepReason::Live, "a run holds its lease")
        }
        Liveness::Dead => Decision::Reclaim(ReclaimReason::OwnerDead),
    }
}

/// An ownerless session: kept unless `--include-ownerless`, then reclaimed once idle for the
/// grace period.
fn decide_ownerless(
    record: &SessionRecord,
    opts: &SweepOptions,
    now: u64,
    lease_held: &dyn Fn(&SessionId) -> bool,
) -> Decision {
    if !opts.include_ownerless {
        return keep(
            KeepReason::Ownerless,
            "no owner process (bound with --owner none); sweep --include-ownerless reclaims it",
        );
    }
    let idle = now.saturating_sub(record.last_activity_ms());
    decide_unowned(
        lease_held(&record.session_id),
        idle < opts.grace.as_millis() as u64,
        "ownerless, active within the grace period".into(),
        ReclaimReason::Ownerless,
    )
}

/// An in-flight bind: kept while its process lives, and for the grace period after.
fn decide_claimed(claim: &ClaimRecord, now: u64, grace: u64) -> Decision {
    match claim.bind_process.liveness() {
        Liveness::Foreign => keep(
            KeepReason::Foreign,
            format!("bind by {}", claim.bind_process.describe()),
        ),
        Liveness::Unknown => keep(
            KeepReason::Unknown,
            "the bind's liveness cannot be determined",
        ),
        Liveness::Alive => keep(
            KeepReason::InFlight,
            format!("bind {} in progress", claim.bind_process.describe()),
        ),
        Liveness::Dead if now.saturating_sub(claim.created_at_ms) < grace => keep(
            KeepReason::Young,
            "an interrupted bind, within the grace period",
        ),
        Liveness::Dead => Decision::Reclaim(ReclaimReason::InFlightDead),
    }
}

fn keep(reason: KeepReason, detail: impl Into<String>) -> Decision {
    Decision::Keep(reason, detail.into())
}

/// No owner to ask: live while leased, young within the grace period, else reclaimable.
fn decide_unowned(leased: bool, young: bool, young_detail: String, why: ReclaimReason) -> Decision {
    if leased {
        keep(KeepReason::Live, "a run holds its lease")
    } else if young {
        Decision::Keep(KeepReason::Young, young_detail)
    } else {
        Decision::Reclaim(why)
    }
}

/// The session id a found entry stands for; `None` for what is not (or not clearly) a session's.
fn id_of(found: &Found) -> Option<SessionId> {
    match found {
        Found::Recorded(r) => Some(r.session_id.clone()),
        Found::Claimed(c) => Some(c.session_id.clone()),
        Found::Malformed { id, .. }
        | Found::Unreadable { id, .. }
        | Found::Unrecorded { id, .. } => Some(id.clone()),
        // A lookalike carries a session's name, but it is not that session's tree.
        _ => None,
    }
}

/// What a directory named like an isolation is, by record, claim and registration.
fn identify(path: &Path, store: &Store, known: &Known) -> Found {
    if let Some(record) = known.records.get(path) {
        return Found::Recorded(Box::new(record.clone()));
    }
    if let Some(claim) = known.claims.get(path) {
        return Found::Claimed(claim.clone());
    }
    let age_ms = now_ms().saturating_sub(modified_ms(path).unwrap_or(0));
    let Some(id) = path.file_name().and_then(|n| known.names.id_of(n)) else {
        return not_ours(path, known);
    };
    match store.session_status(&id) {
        RecordStatus::Malformed(detail) => {
            let record_age = now_ms().saturating_sub(store.session_modified_ms(&id).unwrap_or(0));
            return Found::Malformed {
                id,
                detail,
                age_ms: age_ms.min(record_age),
            };
        }
        RecordStatus::Unreadable(detail) => return Found::Unreadable { id, detail },
        RecordStatus::Found(record) => {
            // Named like a session whose isolation is elsewhere (or discarded): not this one's.
            return Found::Lookalike {
                id,
                recorded: record.worktree,
            };
        }
        RecordStatus::Missing => {}
    }
    if let Some(admin) = known.admins.get(&path.join(".git")) {
        return Found::Unrecorded {
            id,
            admin: admin.clone(),
            age_ms,
        };
    }
    other_repository(path).unwrap_or(Found::Stranger)
}

/// Another repository's worktree, as its `.git` file says (never trusted to act on).
fn other_repository(path: &Path) -> Option<Found> {
    // Never followed if it is a link, never waited on if it is a FIFO.
    let bytes = crate::base::fsutil::read_small_regular_file(&path.join(".git"), 64 * 1024).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    text.starts_with("gitdir: ")
        .then(|| Found::OtherRepository {
            gitdir: text.trim_end().trim_start_matches("gitdir: ").to_string(),
        })
}

/// A name without this store's prefix: another tenant's, another repository's, or unknown.
fn not_ours(path: &Path, known: &Known) -> Found {
    let other_tenant = path
        .file_name()
        .is_some_and(|n| known.names.is_other_tenants(n));
    if other_tenant {
        return Found::OtherTenant;
    }
    match other_repository(path) {
        Some(Found::OtherRepository { gitdir })
            if !known.admins.contains_key(&path.join(".git")) =>
        {
            Found::OtherRepository { gitdir }
        }
        _ => Found::NotOurs,
    }
}

/// How a reclaim goes, settled before anything is touched.
struct ReclaimPlan {
    id: SessionId,
    bytes: u64,
    /// The isolation's admin dir, where git knows it.
    admin: Option<PathBuf>,
    /// The commit its session was bound at, when a record says so.
    bound_revision: Option<String>,
    /// Where it is snapshotted first; `None` with `--no-capture` or for an in-flight bind.
    swept_ref: Option<String>,
}

/// The reclaim of one isolation, decided from what was found.
fn plan_reclaim(
    located: &Located,
    opts: &SweepOptions,
    path: &Path,
    id: SessionId,
    found: &Found,
) -> ReclaimPlan {
    let admin = match found {
        Found::Recorded(record) => record.admin_dir.clone(),
        Found::Unrecorded { admin, .. } => Some(admin.clone()),
        _ => registered_admins(&located.repo)
            .get(&path.join(".git"))
            .cloned(),
    };
    // An interrupted bind never held anyone's work: nothing to snapshot.
    let capture = !opts.no_capture && !matches!(found, Found::Claimed(_));
    let bound_revision = match found {
        Found::Recorded(record) => Some(record.bound_revision.clone()),
        _ => None,
    };
    ReclaimPlan {
        swept_ref: capture.then(|| located.store.refs().swept(&id)),
        bytes: tree_size(path),
        admin,
        bound_revision,
        id,
    }
}

/// One source's sweep: how it was asked for, and what was recorded when it started.
struct Sweep<'a> {
    ctx: &'a Context,
    located: &'a Located,
    opts: &'a SweepOptions,
    known: &'a Known,
    /// Sessions left alone whatever the table says: those the caller is about to act on.
    spare: &'a dyn Fn(&SessionId) -> bool,
}

impl Sweep<'_> {
    /// Reclaims one candidate. Under the lock and the session's lease (held until the tree is
    /// gone), the table is applied afresh, since a bind may have taken the session over or
    /// published it meanwhile; only a fresh `Reclaim` removes. A failure keeps the tree.
    fn reclaim(&self, path: &Path, found: &Found, out: &mut SweepOutcome) -> Result<()> {
        let (ctx, located, opts, known) = (self.ctx, self.located, self.opts, self.known);
        let Some(id) = id_of(found) else {
            return Ok(());
        };
        let lock = crate::recovery::lock(ctx, &located.repo)?;
        let Some(_lease) = located.store.try_lease(&id)? else {
            let live = keep(KeepReason::Live, "a run holds its lease");
            report_kept(out, path.to_path_buf(), found, live);
            return Ok(());
        };
        if (self.spare)(&id) {
            return Ok(());
        }
        let Some((found, decision)) = confirm(located, opts, path, &id, known) else {
            return Ok(());
        };
        let Decision::Reclaim(why) = decision else {
            report_kept(out, path.to_path_buf(), &found, decision);
            return Ok(());
        };
        let plan = plan_reclaim(located, opts, path, id, &found);
        match remove_isolation(&lock, ctx, located, (path, &found), &plan)? {
            Removal::Done => report_reclaimed(out, plan, path, why),
            Removal::Kept(reason, detail) => report_kept(
                out,
                path.to_path_buf(),
                &found,
                Decision::Keep(reason, detail),
            ),
        }
        Ok(())
    }
}

/// The decision taken again on what is there now (`None`: gone), with `id`'s lease held (not
/// a run's). A candidate that is no longer `id`'s is kept for the next sweep.
fn confirm(
    located: &Located,
    opts: &SweepOptions,
    path: &Path,
    id: &SessionId,
    known: &Known,
) -> Option<(Found, Decision)> {
    let fresh = Known::fresh(&located.repo, &located.store, path, id, known);
    let found = inspect(path, &located.store, &fresh)?;
    let store = &located.store;
    let lease_held = |other: &SessionId| other != id && store.is_leased(other).unwrap_or(true);
    let decision = match decide(&found, opts, now_ms(), &lease_held) {
        Decision::Reclaim(_) if id_of(&found).as_ref() != Some(id) => keep(
            KeepReason::Unknown,
            "it changed hands while the sweep ran; left for the next sweep",
        ),
        decision => decision,
    };
    Some((found, decision))
}

enum Removal {
    /// Snapshotted (as planned), removed, and its session forgotten.
    Done,
    /// Left in place, with why: the snapshot or the removal failed.
    Kept(KeepReason, String),
}

/// Snapshots, removes and forgets one isolation, under the lock and lease; nothing is removed
/// without its snapshot. The tree leaves in one rename after an intent is written, so the next
/// command finishes a crash at any step (see `pending`).
fn remove_isolation(
    held: &RepoLock,
    ctx: &Context,
    located: &Located,
    (path, found): (&Path, &Found),
    plan: &ReclaimPlan,
) -> Result<Removal> {
    // A git killed while it changed one of the session's refs must not block this one.
    refs::clear_stale_locks(
        held,
        &located.repo.common_dir,
        &located.store.refs(),
        &plan.id,
    );
    if plan.swept_ref.is_some()
        && let Err(err) = snapshot_into_swept(ctx, located, path, plan)
    {
        return Ok(Removal::Kept(
            KeepReason::SnapshotFailed,
            format!("not removed, because it could not be snapshotted first: {err}"),
        ));
    }
    crate::fault_point!("sweep-after-snapshot");
    if let Found::Claimed(claim) = found {
        // The claim is the interrupted bind's own intent: clearing it can be done again.
        if let Err(err) = crate::recovery::claims::finish(held, &ctx.git, located, claim) {
            return Ok(Removal::Kept(KeepReason::RemovalFailed, err.to_string()));
        }
        return Ok(Removal::Done);
    }
    if let Found::Recorded(record) = found {
        // While the pool is below its size, the tree is cleaned and kept as a spare.
        let how = pool::Return::Sweep(plan.swept_ref.as_deref());
        if pool::recycle(held, ctx, located, record, how)? != pool::Returned::No {
            return Ok(Removal::Done);
        }
    }
    let intent = pending::Reclaim {
        session_id: plan.id.clone(),
        path: path.to_path_buf(),
        admin: plan.admin.clone(),
        trash: pending::trash_path(path, &plan.id),
        swept_ref: plan.swept_ref.clone(),
        at_ms: now_ms(),
    };
    pending::save(&located.store, &TreeMove::Reclaim(intent.clone()))?;
    crate::fault_point!("sweep-after-intent");
    if let Err(err) = std::fs::rename(path, &intent.trash) {
        pending::remove(&located.store, &plan.id)?;
        return Ok(Removal::Kept(
            KeepReason::RemovalFailed,
            format!("cannot move it aside to remove it: {err}"),
        ));
    }
    crate::fault_point!("sweep-after-move");
    pending::complete_reclaim(held, &ctx.git, &located.repo, &located.store, &intent)?;
    Ok(Removal::Done)
}

/// Snapshots the tree and pins the snapshot under the session's swept ref.
fn snapshot_into_swept(
    ctx: &Context,
    located: &Located,
    path: &Path,
    plan: &ReclaimPlan,
) -> Result<()> {
    let Some(admin) = &plan.admin else {
        return Err(Error::internal("it is not a registered worktree"));
    };
    let isolation = Isolation {
        tree: path.to_path_buf(),
        admin: admin.clone(),
        common_dir: located.repo.common_dir.clone(),
        bound_revision: plan.bound_revision.clone(),
    };
    let snap = isolation.snapshot(ctx, located)?;
    refs::SessionRefs {
        git: &ctx.git,
        dir: &located.repo.toplevel,
        ns: &located.store.refs(),
        session_id: &plan.id,
    }
    .pin_swept(&crate::base::ids::TreeId::new(&snap.tree)?)
}

/// How many isolations were kept for each reason, for the human report's summary line.
pub fn reasons(out: &SweepOutcome) -> BTreeMap<&'static str, usize> {
    let mut counts = BTreeMap::new();
    for kept in &out.kept {
        *counts.entry(kept.reason.as_str()).or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    fn sid(id: &str) -> SessionId {
        SessionId::new(id).unwrap()
    }

    use crate::base::owner::Owner;
    use crate::ops::sweep::*;

    fn record(owner: Owner, state: SessionState) -> SessionRecord {
        SessionRecord {
            session_id: crate::base::ids::SessionId::new("s").unwrap(),
            state,
            source: "/src".into(),
            common_dir: "/src/.git".into(),
            worktree: Some("/.a3s-isolate-s".into()),
            admin_dir: None,
            bound_revision: String::new(),
            base_tree: crate::base::ids::TreeId::new("a".repeat(40)).unwrap(),
            read_only: false,
            carried_wip: false,
            carried_index_tree: None,
            wip_left_out: false,
            owner: Some(owner),
            created_at_ms: 0,
            updated_at_ms: 0,
            last_run: None,
            retained_reason: Some("inspect".into()),
            retained_at_ms: Some(1_000),
            swept: None,
            rebased: None,
            created_by: None,
            fill: None,
        }
    }

    #[test]
    fn the_decision_table_in_its_precedence() {
        let opts = SweepOptions::default();
        let me = Owner::this_process();
        let dead = Owner {
            start_identity: Some("linux-proc-start-ticks:1".into()),
            ..me.clone()
        };
        let foreign = Owner {
            hostname: "elsewhere.example".into(),
            ..dead.clone()
        };
        let unknown = Owner {
            start_identity: None,
            ..me.clone()
        };
        let no_lease = |_: &SessionId| false;
        let leased = |_: &SessionId| true;
        let now = 10_000_000;
        let decide_rec = |owner: &Owner, state, lease: &dyn Fn(&SessionId) -> bool| {
            decide(
                &Found::Recorded(Box::new(record(owner.clone(), state))),
                &opts,
                now,
                lease,
            )
        };
        assert!(matches!(
            decide_rec(&dead, SessionState::Retained, &no_lease),
            Decision::Keep(KeepReason::Retained, _)
        ));
        assert!(matches!(
            decide_rec(&foreign, SessionState::Bound, &leased),
            Decision::Keep(KeepReason::Foreign, _)
        ));
        assert!(matches!(
            decide_rec(&unknown, SessionState::Bound, &no_lease),
            Decision::Keep(KeepReason::Unknown, _)
        ));
        assert!(matches!(
            decide_rec(&dead, SessionState::Bound, &leased),
            Decision::Keep(KeepReason::Live, _)
        ));
        assert!(matches!(
            decide_rec(&me, SessionState::Bound, &no_lease),
            Decision::Keep(KeepReason::Live, _)
        ));
        assert_eq!(
            decide_rec(&dead, SessionState::Bound, &no_lease),
            Decision::Reclaim(ReclaimReason::OwnerDead)
        );
        let expired = SweepOptions {
            retained_older_than: Some(Duration::ZERO),
            ..SweepOptions::default()
        };
        let retained = Found::Recorded(Box::new(record(me.clone(), SessionState::Retained)));
        assert_eq!(
            decide(&retained, &expired, now, &no_lease),
            Decision::Reclaim(ReclaimReason::RetainedExpired)
        );
        let young = Found::Malformed {
            id: sid("m"),
            detail: String::new(),
            age_ms: 1_000,
        };
        assert!(matches!(
            decide(&young, &opts, now, &no_lease),
            Decision::Keep(KeepReason::Young, _)
        ));
        let old = Found::Malformed {
            id: sid("m"),
            detail: String::new(),
            age_ms: 3_600_000,
        };
        assert_eq!(
            decide(&old, &opts, now, &no_lease),
            Decision::Reclaim(ReclaimReason::Malformed)
        );
        let claim = |owner: Owner, created| {
            Found::Claimed(ClaimRecord {
                session_id: sid("c"),
                path: "/x".into(),
                bind_process: owner,
                created_at_ms: created,
                process_group: None,
            })
        };
        assert!(matches!(
            decide(&claim(me.clone(), 0), &opts, now, &no_lease),
            Decision::Keep(KeepReason::InFlight, _)
        ));
        assert!(matches!(
            decide(&claim(dead.clone(), now - 1), &opts, now, &no_lease),
            Decision::Keep(KeepReason::Young, _)
        ));
        assert_eq!(
            decide(&claim(dead, 0), &opts, now, &no_lease),
            Decision::Reclaim(ReclaimReason::InFlightDead)
        );
    }

    #[test]
    fn ownerless_sessions_are_kept_unless_asked() {
        let mut ownerless = record(Owner::this_process(), SessionState::Bound);
        ownerless.owner = None;
        ownerless.updated_at_ms = 9_000_000;
        let found = Found::Recorded(Box::new(ownerless));
        let now = 10_000_000;
        let no_lease = |_: &SessionId| false;
        assert!(matches!(
            decide(&found, &SweepOptions::default(), now, &no_lease),
            Decision::Keep(KeepReason::Ownerless, _)
        ));
        let include = |grace| SweepOptions {
            include_ownerless: true,
            grace,
            ..SweepOptions::default()
        };
        assert!(matches!(
            decide(&found, &include(Duration::from_secs(3600)), now, &no_lease),
            Decision::Keep(KeepReason::Young, _)
        ));
        assert!(matches!(
            decide(&found, &include(Duration::ZERO), now, &|_| true),
            Decision::Keep(KeepReason::Live, _)
        ));
        assert_eq!(
            decide(&found, &include(Duration::ZERO), now, &no_lease),
            Decision::Reclaim(ReclaimReason::Ownerless)
        );
    }

    #[test]
    fn reasons_keep_their_report_spelling() {
        use serde_json::to_value;
        for why in [
            ReclaimReason::OwnerDead,
            ReclaimReason::InFlightDead,
            ReclaimReason::Malformed,
            ReclaimReason::Unrecorded,
            ReclaimReason::RetainedExpired,
            ReclaimReason::Ownerless,
        ] {
            assert_eq!(to_value(why).unwrap(), why.as_str());
        }
        for reason in [
            KeepReason::Retained,
            KeepReason::Foreign,
            KeepReason::Unknown,
            KeepReason::Live,
            KeepReason::InFlight,
            KeepReason::Young,
            KeepReason::SnapshotFailed,
            KeepReason::RemovalFailed,
            KeepReason::Ownerless,
            KeepReason::OtherTenant,
            KeepReason::NotOurs,
        ] {
            assert_eq!(to_value(reason).unwrap(), reason.as_str());
        }
        assert_eq!(to_value(KeepReason::InFlight).unwrap(), "in_flight");
        let other = Found::OtherRepository {
            gitdir: "/r/.git/worktrees/x".into(),
        };
        let Decision::Skip(reason) = decide(&other, &SweepOptions::default(), 0, &|_| false) else {
            panic!("another repository's worktree is skipped");
        };
        assert_eq!(to_value(&reason).unwrap(), "other_repository");
        assert_eq!(
            reason.message(),
            "belongs to another repository (/r/.git/worktrees/x)"
        );
        let shown = to_value(Skipped {
            path: "/r/x".into(),
            reason,
        })
        .unwrap();
        assert_eq!(shown["reason"], "other_repository");
        assert_eq!(
            shown["detail"],
            "belongs to another repository (/r/.git/worktrees/x)"
        );
        assert_eq!(to_value(SkipReason::SymbolicLink).unwrap(), "symbolic_link");
    }
}
