//! `sweep`: reclaim dead isolations. Ownership first, age second, and a snapshot before any
//! deletion. Only a3s-iso's own isolations are considered (its naming and its records); live,
//! foreign, unknown and retained ones are never touched.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::context::{Context, Located};
use crate::error::Result;
use crate::fsutil::{modified_ms, now_ms, tree_size};
use crate::isolation::{NAME_PREFIX, clear_dead_claim, registered_admins};
use crate::owner::Liveness;
use crate::refs;
use crate::repo::Repo;
use crate::snapshot::{self, Worktree};
use crate::state::{
    ClaimRecord, RecordStatus, SessionRecord, SessionState, Store, registered_sources,
};

pub const DEFAULT_GRACE: Duration = Duration::from_secs(600);

#[derive(Debug, Clone)]
pub struct SweepOptions {
    pub all: bool,
    pub dry_run: bool,
    pub grace: Duration,
    pub no_capture: bool,
    pub retained_older_than: Option<Duration>,
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions {
            all: false,
            dry_run: false,
            grace: DEFAULT_GRACE,
            no_capture: false,
            retained_older_than: None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Reclaimed {
    pub session_id: String,
    pub path: PathBuf,
    /// Why it could go: `owner_dead`, `in_flight_dead`, `malformed`, `unrecorded`, `retained_expired`.
    pub why: String,
    pub bytes: u64,
    /// Where its last state was snapshotted (null with `--no-capture` or for an in-flight bind,
    /// which never held anyone's work).
    pub swept_ref: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Kept {
    pub path: PathBuf,
    pub session_id: Option<String>,
    /// `retained`, `foreign`, `unknown`, `live`, `in_flight`, `young`, or why a reclaim failed.
    pub reason: String,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct SweepOutcome {
    pub dry_run: bool,
    pub reclaimed: Vec<Reclaimed>,
    pub kept: Vec<Kept>,
    pub skipped: Vec<Skipped>,
    pub bytes_freed: u64,
    pub sources: Vec<PathBuf>,
}

/// Progress of a long sweep; the command line shows it as a bar on a terminal.
pub trait Progress {
    fn start(&self, total: u64);
    fn advance(&self);
    fn finish(&self);
}

pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _: u64) {}
    fn advance(&self) {}
    fn finish(&self) {}
}

/// What is known of one entry named like an isolation.
#[derive(Debug, Clone)]
enum Found {
    Recorded(Box<SessionRecord>),
    Claimed(ClaimRecord),
    Malformed {
        id: String,
        detail: String,
        age_ms: u64,
    },
    Unreadable {
        id: String,
        detail: String,
    },
    /// A registered worktree of this repository, named like an isolation, with no record.
    Unrecorded {
        id: String,
        admin: PathBuf,
        age_ms: u64,
    },
    /// Neither recorded nor a worktree of this repository.
    Stranger {
        detail: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Decision {
    Keep(&'static str, String),
    Reclaim(&'static str),
}

pub fn sweep(ctx: &Context, opts: &SweepOptions, progress: &dyn Progress) -> Result<SweepOutcome> {
    let mut out = SweepOutcome {
        dry_run: opts.dry_run,
        ..SweepOutcome::default()
    };
    let mut targets: Vec<(Repo, Store)> = Vec::new();
    let here = if opts.all {
        ctx.locate().ok()
    } else {
        Some(ctx.locate()?)
    };
    if let Some(located) = here {
        targets.push((located.repo, located.store));
    }
    if opts.all {
        for entry in registered_sources()? {
            if !entry.source.is_dir() {
                out.skipped.push(Skipped {
                    path: entry.source.clone(),
                    reason: "registered source no longer exists".into(),
                });
                continue;
            }
            if targets.iter().any(|(repo, store)| {
                repo.toplevel == entry.source && store.dir() == entry.state_dir
            }) {
                continue;
            }
            targets.push((
                Repo {
                    toplevel: entry.source.clone(),
                    common_dir: entry.common_dir.clone(),
                },
                Store::new(&entry.common_dir, Some(&entry.state_dir)),
            ));
        }
    }
    for (repo, store) in targets {
        out.sources.push(repo.toplevel.clone());
        let located = Located {
            repo,
            store,
            inside: None,
        };
        sweep_source(ctx, &located, opts, progress, &mut out)?;
    }
    Ok(out)
}

fn sweep_source(
    ctx: &Context,
    located: &Located,
    opts: &SweepOptions,
    progress: &dyn Progress,
    out: &mut SweepOutcome,
) -> Result<()> {
    let store = &located.store;
    let repo = &located.repo;
    let records: Vec<SessionRecord> = store.sessions()?.into_iter().flatten().collect();
    let claims = store.claims()?;
    let by_path: HashMap<PathBuf, &SessionRecord> = records
        .iter()
        .filter(|r| r.state != SessionState::Discarded)
        .filter_map(|r| r.worktree.clone().map(|w| (w, r)))
        .collect();
    let claim_by_path: HashMap<&Path, &ClaimRecord> =
        claims.iter().map(|c| (c.path.as_path(), c)).collect();
    let admins = registered_admins(repo);
    // Isolations that other state stores of this repository (--state-dir tenants) record or
    // claim are theirs, not unrecorded.
    let mut elsewhere: BTreeSet<PathBuf> = BTreeSet::new();
    for entry in registered_sources().unwrap_or_default() {
        if entry.common_dir == repo.common_dir && entry.state_dir != store.dir() {
            let other = Store::new(&entry.common_dir, Some(&entry.state_dir));
            for record in other.sessions().unwrap_or_default().into_iter().flatten() {
                elsewhere.extend(record.worktree);
            }
            elsewhere.extend(
                other
                    .claims()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|c| c.path),
            );
        }
    }

    // Where isolations of this source can be: beside it, and wherever its records point.
    let mut dirs: BTreeSet<PathBuf> = BTreeSet::new();
    if let Some(parent) = repo.toplevel.parent() {
        dirs.insert(parent.to_path_buf());
    }
    for path in records
        .iter()
        .filter_map(|r| r.worktree.as_ref())
        .chain(claims.iter().map(|c| &c.path))
    {
        if let Some(parent) = path.parent() {
            dirs.insert(parent.to_path_buf());
        }
    }
    if let Some(data) = crate::state::user_data_dir() {
        dirs.insert(
            data.join("isolations")
                .join(crate::fsutil::path_key(&[&repo.toplevel])),
        );
    }
    let mut candidates: Vec<PathBuf> = Vec::new();
    for dir in &dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(NAME_PREFIX) {
                candidates.push(entry.path());
            }
        }
    }
    candidates.sort();
    progress.start(candidates.len() as u64);
    for path in candidates {
        progress.advance();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            out.skipped.push(Skipped {
                path,
                reason: "a symbolic link: never followed".into(),
            });
            continue;
        }
        if !meta.is_dir() {
            out.skipped.push(Skipped {
                path,
                reason: "not a directory".into(),
            });
            continue;
        }
        if elsewhere.contains(&path) && !by_path.contains_key(&path) {
            out.skipped.push(Skipped {
                path,
                reason: "recorded by another state store of this repository".into(),
            });
            continue;
        }
        let found = identify(&path, store, &by_path, &claim_by_path, &admins);
        if let Found::Stranger { detail } = &found
            && detail.starts_with("belongs to")
        {
            out.skipped.push(Skipped {
                path,
                reason: detail.clone(),
            });
            continue;
        }
        let lease_held = |id: &str| store.is_leased(id).unwrap_or(true);
        match decide(&found, opts, now_ms(), &lease_held) {
            Decision::Keep(reason, detail) => out.kept.push(Kept {
                path,
                session_id: id_of(&found),
                reason: reason.into(),
                detail,
            }),
            Decision::Reclaim(why) => reclaim(ctx, located, opts, &path, &found, why, out)?,
        }
    }
    progress.finish();
    Ok(())
}

/// The decision table, in its precedence: retained, foreign, unknown, live, in flight with a
/// live owner, young, then reclaimable.
fn decide(
    found: &Found,
    opts: &SweepOptions,
    now: u64,
    lease_held: &dyn Fn(&str) -> bool,
) -> Decision {
    let grace = opts.grace.as_millis() as u64;
    match found {
        Found::Recorded(record) => {
            if record.state == SessionState::Retained {
                let retained_for = now.saturating_sub(record.retained_at_ms.unwrap_or(now));
                return match opts.retained_older_than {
                    Some(limit) if retained_for >= limit.as_millis() as u64 => {
                        Decision::Reclaim("retained_expired")
                    }
                    _ => Decision::Keep(
                        "retained",
                        record.retained_reason.clone().unwrap_or_default(),
                    ),
                };
            }
            match record.owner.liveness() {
                Liveness::Foreign => {
                    Decision::Keep("foreign", format!("owned by {}", record.owner.describe()))
                }
                Liveness::Unknown => Decision::Keep(
                    "unknown",
                    "the owner's liveness cannot be determined".into(),
                ),
                _ if lease_held(&record.session_id) => {
                    Decision::Keep("live", "a run holds its lease".into())
                }
                Liveness::Alive => Decision::Keep(
                    "live",
                    format!("owner {} is alive", record.owner.describe()),
                ),
                Liveness::Dead => Decision::Reclaim("owner_dead"),
            }
        }
        Found::Claimed(claim) => match claim.bind_process.liveness() {
            Liveness::Foreign => Decision::Keep(
                "foreign",
                format!("bind by {}", claim.bind_process.describe()),
            ),
            Liveness::Unknown => {
                Decision::Keep("unknown", "the bind's liveness cannot be determined".into())
            }
            Liveness::Alive => Decision::Keep(
                "in_flight",
                format!("bind {} in progress", claim.bind_process.describe()),
            ),
            Liveness::Dead if now.saturating_sub(claim.created_at_ms) < grace => Decision::Keep(
                "young",
                "an interrupted bind, within the grace period".into(),
            ),
            Liveness::Dead => Decision::Reclaim("in_flight_dead"),
        },
        Found::Unreadable { detail, .. } => {
            Decision::Keep("unknown", format!("owner record unreadable: {detail}"))
        }
        Found::Stranger { detail } => Decision::Keep("unknown", detail.clone()),
        Found::Malformed { id, age_ms, detail } => {
            if lease_held(id) {
                Decision::Keep("live", "a run holds its lease".into())
            } else if *age_ms < grace {
                Decision::Keep(
                    "young",
                    format!("malformed record, within the grace period: {detail}"),
                )
            } else {
                Decision::Reclaim("malformed")
            }
        }
        Found::Unrecorded { id, age_ms, .. } => {
            if lease_held(id) {
                Decision::Keep("live", "a run holds its lease".into())
            } else if *age_ms < grace {
                Decision::Keep("young", "unrecorded, within the grace period".into())
            } else {
                Decision::Reclaim("unrecorded")
            }
        }
    }
}

fn id_of(found: &Found) -> Option<String> {
    match found {
        Found::Recorded(r) => Some(r.session_id.clone()),
        Found::Claimed(c) => Some(c.session_id.clone()),
        Found::Malformed { id, .. }
        | Found::Unreadable { id, .. }
        | Found::Unrecorded { id, .. } => Some(id.clone()),
        Found::Stranger { .. } => None,
    }
}

/// The session id an isolation's name carries (`.a3s-isolate-<id>[.retained-<ms>]`).
fn id_from_name(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let rest = name.strip_prefix(NAME_PREFIX)?;
    let id = match rest.rfind(".retained-") {
        Some(at) => &rest[..at],
        None => rest,
    };
    crate::ids::validate(id).ok().map(|()| id.to_string())
}

/// `<tree>/.git` → admin dir, for every worktree registered with this repository.
fn identify(
    path: &Path,
    store: &Store,
    by_path: &HashMap<PathBuf, &SessionRecord>,
    claims: &HashMap<&Path, &ClaimRecord>,
    admins: &HashMap<PathBuf, PathBuf>,
) -> Found {
    if let Some(record) = by_path.get(path) {
        return Found::Recorded(Box::new((*record).clone()));
    }
    if let Some(claim) = claims.get(path) {
        return Found::Claimed((*claim).clone());
    }
    let age_ms = now_ms().saturating_sub(modified_ms(path).unwrap_or(0));
    let Some(id) = id_from_name(path) else {
        return Found::Stranger {
            detail: "named like an isolation, but no session id can be read from its name".into(),
        };
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
            return Found::Stranger {
                detail: format!(
                    "named like session {id:?}, whose record points elsewhere ({})",
                    record
                        .worktree
                        .as_deref()
                        .map(|p| p.display().to_string())
                        .unwrap_or_else(|| "no isolation".into())
                ),
            };
        }
        RecordStatus::Missing => {}
    }
    if let Some(admin) = admins.get(&path.join(".git")) {
        return Found::Unrecorded {
            id,
            admin: admin.clone(),
            age_ms,
        };
    }
    // Not ours to judge: say whose it is if its .git file tells (read, never trusted to act).
    match std::fs::read_to_string(path.join(".git")) {
        Ok(text) if text.starts_with("gitdir: ") => Found::Stranger {
            detail: format!(
                "belongs to another repository ({})",
                text.trim_end().trim_start_matches("gitdir: ")
            ),
        },
        _ => Found::Stranger {
            detail: "no a3s-iso record and not a worktree of this repository (made by hand?)"
                .into(),
        },
    }
}

fn reclaim(
    ctx: &Context,
    located: &Located,
    opts: &SweepOptions,
    path: &Path,
    found: &Found,
    why: &'static str,
    out: &mut SweepOutcome,
) -> Result<()> {
    let id = id_of(found).unwrap_or_default();
    let bytes = tree_size(path);
    let admin = match found {
        Found::Recorded(record) => record.admin_dir.clone(),
        Found::Unrecorded { admin, .. } => Some(admin.clone()),
        _ => registered_admins(&located.repo)
            .get(&path.join(".git"))
            .cloned(),
    };
    // An interrupted bind never held anyone's work: nothing to snapshot.
    let capture = !opts.no_capture && !matches!(found, Found::Claimed(_));
    let swept_ref = capture.then(|| refs::swept(&id));
    let keep = |out: &mut SweepOutcome, reason: &str, detail: String| {
        out.kept.push(Kept {
            path: path.to_path_buf(),
            session_id: Some(id.clone()),
            reason: reason.into(),
            detail,
        });
    };
    if opts.dry_run {
        out.bytes_freed += bytes;
        out.reclaimed.push(Reclaimed {
            session_id: id,
            path: path.to_path_buf(),
            why: why.into(),
            bytes,
            swept_ref,
        });
        return Ok(());
    }
    let _lock = ctx.lock(&located.repo)?;
    if swept_ref.is_some() {
        let snapped = match &admin {
            Some(admin) => snapshot::snapshot(
                &ctx.git,
                &Worktree {
                    tree: path,
                    admin_dir: admin,
                },
                &located.store.scratch_dir(),
            )
            .and_then(|snap| refs::pin_swept(&ctx.git, &located.repo.toplevel, &id, &snap.tree)),
            None => Err(crate::error::Error::internal(
                "it is not a registered worktree",
            )),
        };
        if let Err(err) = snapped {
            keep(
                out,
                "snapshot_failed",
                format!("not removed, because it could not be snapshotted first: {err}"),
            );
            return Ok(());
        }
    }
    let removed = match found {
        Found::Claimed(claim) => clear_dead_claim(ctx, located, claim),
        _ => crate::isolation::remove(&ctx.git, &located.repo, path, admin.as_deref()).map(|_| ()),
    };
    if let Err(err) = removed {
        keep(out, "removal_failed", err.to_string());
        return Ok(());
    }
    drop_session(ctx, located, &id, found)?;
    out.bytes_freed += bytes;
    out.reclaimed.push(Reclaimed {
        session_id: id,
        path: path.to_path_buf(),
        why: why.into(),
        bytes,
        swept_ref,
    });
    Ok(())
}

/// Drops a reclaimed session's refs (base and runs) and records; the swept snapshot stays.
fn drop_session(ctx: &Context, located: &Located, id: &str, found: &Found) -> Result<()> {
    if id.is_empty() {
        return Ok(());
    }
    refs::delete_session_refs(&ctx.git, &located.repo.toplevel, id, refs::Scope::KeepSwept)?;
    if !matches!(found, Found::Unreadable { .. }) {
        located.store.remove_session(id)?;
    }
    located.store.remove_claim(id)?;
    located.store.remove_runs(id)
}

/// A summary line per reason, for the human report.
pub fn reasons(out: &SweepOutcome) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for kept in &out.kept {
        *counts.entry(kept.reason.clone()).or_insert(0) += 1;
    }
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::owner::Owner;

    fn record(owner: Owner, state: SessionState) -> SessionRecord {
        SessionRecord {
            session_id: "s".into(),
            state,
            source: "/src".into(),
            common_dir: "/src/.git".into(),
            worktree: Some("/.a3s-isolate-s".into()),
            admin_dir: None,
            bound_revision: String::new(),
            base_tree: String::new(),
            read_only: false,
            carried_wip: false,
            carried_index_tree: None,
            wip_left_out: false,
            owner,
            created_at_ms: 0,
            updated_at_ms: 0,
            last_run: None,
            retained_reason: Some("inspect".into()),
            retained_at_ms: Some(1_000),
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
        let no_lease = |_: &str| false;
        let leased = |_: &str| true;
        let now = 10_000_000;
        let decide_rec = |owner: &Owner, state, lease: &dyn Fn(&str) -> bool| {
            decide(
                &Found::Recorded(Box::new(record(owner.clone(), state))),
                &opts,
                now,
                lease,
            )
        };
        assert!(matches!(
            decide_rec(&dead, SessionState::Retained, &no_lease),
            Decision::Keep("retained", _)
        ));
        assert!(matches!(
            decide_rec(&foreign, SessionState::Bound, &leased),
            Decision::Keep("foreign", _)
        ));
        assert!(matches!(
            decide_rec(&unknown, SessionState::Bound, &no_lease),
            Decision::Keep("unknown", _)
        ));
        assert!(matches!(
            decide_rec(&dead, SessionState::Bound, &leased),
            Decision::Keep("live", _)
        ));
        assert!(matches!(
            decide_rec(&me, SessionState::Bound, &no_lease),
            Decision::Keep("live", _)
        ));
        assert_eq!(
            decide_rec(&dead, SessionState::Bound, &no_lease),
            Decision::Reclaim("owner_dead")
        );
        let expired = SweepOptions {
            retained_older_than: Some(Duration::ZERO),
            ..SweepOptions::default()
        };
        let retained = Found::Recorded(Box::new(record(me.clone(), SessionState::Retained)));
        assert_eq!(
            decide(&retained, &expired, now, &no_lease),
            Decision::Reclaim("retained_expired")
        );
        let young = Found::Malformed {
            id: "m".into(),
            detail: String::new(),
            age_ms: 1_000,
        };
        assert!(matches!(
            decide(&young, &opts, now, &no_lease),
            Decision::Keep("young", _)
        ));
        let old = Found::Malformed {
            id: "m".into(),
            detail: String::new(),
            age_ms: 3_600_000,
        };
        assert_eq!(
            decide(&old, &opts, now, &no_lease),
            Decision::Reclaim("malformed")
        );
        let claim = |owner: Owner, created| {
            Found::Claimed(ClaimRecord {
                session_id: "c".into(),
                path: "/x".into(),
                bind_process: owner,
                created_at_ms: created,
            })
        };
        assert!(matches!(
            decide(&claim(me.clone(), 0), &opts, now, &no_lease),
            Decision::Keep("in_flight", _)
        ));
        assert!(matches!(
            decide(&claim(dead.clone(), now - 1), &opts, now, &no_lease),
            Decision::Keep("young", _)
        ));
        assert_eq!(
            decide(&claim(dead, 0), &opts, now, &no_lease),
            Decision::Reclaim("in_flight_dead")
        );
    }

    #[test]
    fn ids_come_from_isolation_names() {
        assert_eq!(
            id_from_name(Path::new("/p/.a3s-isolate-abc")),
            Some("abc".into())
        );
        assert_eq!(
            id_from_name(Path::new("/p/.a3s-isolate-a.b.retained-17")),
            Some("a.b".into())
        );
        assert_eq!(id_from_name(Path::new("/p/.a3s-isolate-")), None);
    }
}
