//! `overlaps`: for the live sessions of a source, the paths each changed since its base, and
//! for every pair whether their work would merge (`clean`) or not (`conflict`, with the paths),
//! predicted with `git merge-tree --write-tree` in an object view. No tree is touched: each
//! isolation is read through a peek (a3s-iso's own index of it is left as it was), and only
//! objects are written.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::base::error::Result;
use crate::base::ids::SessionId;
use crate::context::{Context, Located};
use crate::git::ObjectView;
use crate::model::isolation::writable_isolation;
use crate::store::state::SessionRecord;

/// A live session and what it changed since its base.
#[derive(Debug, Clone, Serialize)]
pub struct Changed {
    /// The session.
    pub session_id: SessionId,
    /// Its bound revision.
    pub bound_revision: String,
    /// The paths that differ from its base tree now (tracked and untracked).
    pub paths: Vec<String>,
    /// What `rebase` of it onto the source's HEAD does now (the commits since against its work).
    pub with_head: Against,
    /// Whether its work meets your uncommitted changes (tracked and untracked) in the source:
    /// conflicts beyond those `with_head` already has.
    pub with_your_changes: Against,
}

/// A session's work against something of yours.
#[derive(Debug, Clone, Serialize)]
pub struct Against {
    /// `clean` or `conflict`.
    pub prediction: Prediction,
    /// Where they conflict (empty when clean).
    pub conflicting_paths: Vec<String>,
}

impl Against {
    fn of(paths: Vec<String>) -> Against {
        Against {
            prediction: prediction_of(&paths),
            conflicting_paths: paths,
        }
    }
}

/// Whether two sessions' work merges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Prediction {
    /// Their changes merge without a conflict.
    Clean,
    /// They conflict at `conflicting_paths`.
    Conflict,
}

/// One pair of sessions.
#[derive(Debug, Clone, Serialize)]
pub struct Pair {
    /// One session.
    pub a: SessionId,
    /// The other.
    pub b: SessionId,
    /// Whether their work merges: `conflict` when landing them in either order conflicts.
    pub prediction: Prediction,
    /// What `rebase` of `b` does once `a` has landed (commits replayed, then work merged).
    pub b_after_a: Prediction,
    /// What `rebase` of `a` does once `b` has landed.
    pub a_after_b: Prediction,
    /// The paths both changed.
    pub shared_paths: Vec<String>,
    /// The paths where they conflict (empty when clean).
    pub conflicting_paths: Vec<String>,
}

/// A session left out of the prediction, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    /// The session.
    pub session_id: SessionId,
    /// Why (`conflicted`, `no_isolation`, or what reading it said).
    pub reason: String,
}

/// What `overlaps` found (`a3s-iso.overlaps.v1`).
#[derive(Debug, Clone, Serialize)]
pub struct OverlapsOutcome {
    /// The live sessions, by id.
    pub sessions: Vec<Changed>,
    /// Every pair of them.
    pub pairs: Vec<Pair>,
    /// Sessions that could not be taken into account.
    pub skipped: Vec<Skipped>,
    /// Landed sessions (their work all in HEAD's tree), by id: left out, with nothing to land.
    pub landed: Vec<SessionId>,
}

/// How many conflicts of each kind a prediction holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConflictCounts {
    /// Pairs of sessions whose work conflicts.
    pub pairs: usize,
    /// Sessions whose work conflicts with HEAD's new commits.
    pub with_head: usize,
    /// Sessions whose work conflicts with your uncommitted changes.
    pub with_your_changes: usize,
}

impl ConflictCounts {
    /// Whether nothing conflicts with anything.
    pub fn none(&self) -> bool {
        *self == ConflictCounts::default()
    }
}

impl OverlapsOutcome {
    /// The conflicts predicted, by kind: between sessions, with HEAD, with your changes.
    pub fn counts(&self) -> ConflictCounts {
        let conflicting = |against: &Against| against.prediction == Prediction::Conflict;
        ConflictCounts {
            pairs: (self.pairs.iter())
                .filter(|p| p.prediction == Prediction::Conflict)
                .count(),
            with_head: (self.sessions.iter())
                .filter(|s| conflicting(&s.with_head))
                .count(),
            with_your_changes: (self.sessions.iter())
                .filter(|s| conflicting(&s.with_your_changes))
                .count(),
        }
    }

    /// For each session, the ids of the sessions it would conflict with.
    pub fn conflicts_with(&self) -> BTreeMap<SessionId, Vec<SessionId>> {
        let mut map: BTreeMap<SessionId, Vec<SessionId>> = BTreeMap::new();
        for pair in self
            .pairs
            .iter()
            .filter(|p| p.prediction == Prediction::Conflict)
        {
            map.entry(pair.a.clone()).or_default().push(pair.b.clone());
            map.entry(pair.b.clone()).or_default().push(pair.a.clone());
        }
        map
    }
}

/// The overlaps of the live sessions of the source.
pub fn overlaps(ctx: &Context) -> Result<OverlapsOutcome> {
    let located = crate::recovery::locate(ctx)?;
    predict(ctx, &located)
}

/// One session's work as a commit on its bound revision, with what it changed, and what a
/// rebase of it replays: its commits since its bound revision and the HEAD they end at.
struct Work {
    changed: Changed,
    landed: bool,
    commit: String,
    head: String,
    chain: Vec<String>,
}

/// Plans only: snapshots (peeks) each live session, then merges every pair in objects.
pub(crate) fn predict(ctx: &Context, located: &Located) -> Result<OverlapsOutcome> {
    let scratch = located.store.scratch_dir();
    let view = ObjectView::new(&ctx.git, &located.repo.common_dir, &[], &scratch)?;
    let mut works: Vec<Work> = Vec::new();
    let mut skipped = Vec::new();
    let mut records = located.store.live_sessions()?;
    records.retain(|r| ctx.may_act_on(&r.session_id));
    records.sort_by(|a, b| a.session_id.cmp(&b.session_id));
    let head_tree = crate::services::landed::head_tree(ctx, located)?;
    let read = read_all(ctx, located, (&view, head_tree.as_deref()), &records);
    let mut landed = Vec::new();
    for (record, result) in records.iter().zip(read) {
        match result {
            Ok(Some(work)) if work.landed => landed.push(work.changed.session_id),
            Ok(Some(work)) => works.push(work),
            Ok(None) => skipped.push(Skipped {
                session_id: record.session_id.clone(),
                reason: "conflicted".into(),
            }),
            Err(err) => skipped.push(Skipped {
                session_id: record.session_id.clone(),
                reason: err.to_string(),
            }),
        }
    }
    let pairs = pairs(&view, &works)?;
    against_the_source(ctx, located, &view, &mut works)?;
    Ok(OverlapsOutcome {
        sessions: works.into_iter().map(|w| w.changed).collect(),
        pairs,
        skipped,
        landed,
    })
}

/// Each session against the source: rebased onto its HEAD, and merged with its uncommitted
/// work (a snapshot that leaves the source's index alone) on top of that HEAD.
fn against_the_source(
    ctx: &Context,
    located: &Located,
    view: &ObjectView,
    works: &mut [Work],
) -> Result<()> {
    let Some(head) = located.repo.head_commit(&ctx.git) else {
        return Ok(());
    };
    let scratch = located.store.scratch_dir();
    let wip = crate::model::wip::snapshot_source(&ctx.git, &located.repo.toplevel, &scratch)?;
    let head_tree = view.commit_info(&head)?.tree;
    let checkout = (wip.worktree_tree != head_tree)
        .then(|| view.commit_tree(&wip.worktree_tree, &head, None, b"your checkout\n"))
        .transpose()?;
    let onto_head = rebase_all(view, &head, works)?;
    let onto_checkout = match &checkout {
        Some(checkout) => rebase_all(view, checkout, works)?,
        None => vec![Vec::new(); works.len()],
    };
    for ((work, with_head), with_yours) in works.iter_mut().zip(onto_head).zip(onto_checkout) {
        let with_yours = with_yours
            .into_iter()
            .filter(|p| !with_head.contains(p))
            .collect();
        work.changed.with_head = Against::of(with_head);
        work.changed.with_your_changes = Against::of(with_yours);
    }
    Ok(())
}

/// [`rebase_conflicts`] of every work onto `onto`: the works without commits of their own in
/// one batch of merges.
fn rebase_all(view: &ObjectView, onto: &str, works: &[Work]) -> Result<Vec<Vec<String>>> {
    let plain: Vec<(String, String, String)> = works
        .iter()
        .filter(|w| w.chain.is_empty())
        .map(|w| (w.head.clone(), onto.to_string(), w.commit.clone()))
        .collect();
    let mut merged = view.merge_based(&plain)?.into_iter();
    works
        .iter()
        .map(|work| match work.chain.is_empty() {
            true => merged.next().map(|m| shown(&m)).ok_or_else(missing_merge),
            false => rebase_conflicts(view, onto, work),
        })
        .collect()
}

/// Each session's work, read by a few threads at once: a snapshot costs a stat pass over the
/// isolation and a handful of git processes, which overlap well; results in `records`' order.
fn read_all(
    ctx: &Context,
    located: &Located,
    (view, head_tree): (&ObjectView, Option<&str>),
    records: &[SessionRecord],
) -> Vec<Result<Option<Work>>> {
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 4)
        .min(records.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::Mutex::new(Vec::with_capacity(records.len()));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(record) = records.get(i) else { break };
                    let result = work_of(ctx, located, (view, head_tree), record);
                    if let Ok(mut done) = done.lock() {
                        done.push((i, result));
                    }
                }
            });
        }
    });
    let mut done = done
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, result)| result).collect()
}

/// A session's snapshot as a commit on its bound revision, and whether it is all in
/// `head_tree` (landed); `None` for a conflicted session (its files hold markers, not its work).
fn work_of(
    ctx: &Context,
    located: &Located,
    (view, head_tree): (&ObjectView, Option<&str>),
    record: &SessionRecord,
) -> Result<Option<Work>> {
    if crate::services::rebase::conflicted_paths(&located.store, record).is_some() {
        return Ok(None);
    }
    let isolation = writable_isolation(record)?;
    let snap = isolation.peek(ctx, located, &located.store.scratch_dir())?;
    let changed = (ctx.git).diff_trees(&located.repo.common_dir, &record.base_tree, &snap.tree)?;
    let work = (changed.as_slice(), snap.tree.as_str());
    let landed = crate::services::landed::tree_is_landed(ctx, located, record, work, head_tree)?;
    let paths = (changed.iter())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let message = format!("a3s-iso: the work of session {}\n", record.session_id);
    let commit = view.commit_tree(&snap.tree, &record.bound_revision, None, message.as_bytes())?;
    let head = isolation.head(&ctx.git)?;
    let chain = view
        .first_parent_chain(&record.bound_revision, &head)?
        .unwrap_or_default();
    Ok(Some(Work {
        changed: Changed {
            session_id: record.session_id.clone(),
            bound_revision: record.bound_revision.clone(),
            paths,
            with_head: Against::of(Vec::new()),
            with_your_changes: Against::of(Vec::new()),
        },
        landed,
        commit,
        head: head.into(),
        chain,
    }))
}

/// The paths where rebasing `work` onto `onto` stops: its commits replayed one by one (one
/// that brings nothing new dropped), then its uncommitted work merged on top, exactly as
/// `rebase` merges them; empty when it goes through.
fn rebase_conflicts(view: &ObjectView, onto: &str, work: &Work) -> Result<Vec<String>> {
    let mut tip = onto.to_string();
    for commit in &work.chain {
        let info = view.commit_info(commit)?;
        let Some(parent) = info.parents.first() else {
            break;
        };
        let merged = view.merge(parent, &tip, commit)?;
        if !merged.conflicts.is_empty() {
            return Ok(shown(&merged));
        }
        if merged.tree != view.commit_info(&tip)?.tree {
            tip = view.commit_tree(&merged.tree, &tip, Some(&info), b"")?;
        }
    }
    Ok(shown(&view.merge(&work.head, &tip, &work.commit)?))
}

/// The conflicting paths as the user knows them: where git set a file aside beside a
/// directory (`path~<commit>`, a commit that exists only in this prediction), the path itself.
fn shown(merged: &crate::git::Merged) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for path in merged.paths() {
        let path = String::from_utf8_lossy(&path).into_owned();
        let path = match path.rsplit_once('~') {
            Some((name, id))
                if matches!(id.len(), 40 | 64) && id.bytes().all(|b| b.is_ascii_hexdigit()) =>
            {
                name.to_string()
            }
            _ => path,
        };
        if !paths.contains(&path) {
            paths.push(path);
        }
    }
    paths
}

fn missing_merge() -> crate::base::error::Error {
    crate::base::error::Error::internal("a merge of the batch is missing")
}

fn prediction_of(paths: &[String]) -> Prediction {
    match paths.is_empty() {
        true => Prediction::Clean,
        false => Prediction::Conflict,
    }
}

/// Every pair of sessions. Pairs of uncommitted work only are one merge each, the same either
/// way round, all in one batch; a session with commits is replayed as `rebase` would.
fn pairs(view: &ObjectView, works: &[Work]) -> Result<Vec<Pair>> {
    let mut all: Vec<(&Work, &Work)> = Vec::new();
    for (i, a) in works.iter().enumerate() {
        all.extend(works[i + 1..].iter().map(|b| (a, b)));
    }
    let touches = |w: &Work| !w.changed.paths.is_empty();
    // Uncommitted work only, from one revision: a merge, the same either way round.
    let simple = |a: &Work, b: &Work| {
        a.chain.is_empty()
            && b.chain.is_empty()
            && a.changed.bound_revision == b.changed.bound_revision
    };
    let batch: Vec<(String, String)> = all
        .iter()
        .filter(|(a, b)| touches(a) && touches(b) && simple(a, b))
        .map(|(a, b)| (a.commit.clone(), b.commit.clone()))
        .collect();
    let mut merged = view.merge_pairs(&batch)?.into_iter();
    let mut out = Vec::with_capacity(all.len());
    for (a, b) in all {
        let (b_after_a, a_after_b) = if !touches(a) || !touches(b) {
            (Vec::new(), Vec::new())
        } else if simple(a, b) {
            let merged = merged.next().ok_or_else(missing_merge)?;
            let paths = shown(&merged);
            (paths.clone(), paths)
        } else {
            (after(view, a, b)?, after(view, b, a)?)
        };
        out.push(pair(a, b, b_after_a, a_after_b));
    }
    Ok(out)
}

/// Where rebasing `later` after `first` landed conflicts because of `first`: onto `first`'s
/// work, less what rebasing it onto `first`'s bound revision alone meets (commits of yours
/// between the two bound revisions, which are no session's doing).
fn after(view: &ObjectView, first: &Work, later: &Work) -> Result<Vec<String>> {
    let onto_work = rebase_conflicts(view, &first.commit, later)?;
    if onto_work.is_empty() || first.changed.bound_revision == later.changed.bound_revision {
        return Ok(onto_work);
    }
    let onto_base = rebase_conflicts(view, &first.changed.bound_revision, later)?;
    Ok(onto_work
        .into_iter()
        .filter(|p| !onto_base.contains(p))
        .collect())
}

/// One pair, from the paths where each landing order conflicts. Paths need not be shared to
/// conflict (a file where the other puts a directory).
fn pair(a: &Work, b: &Work, b_after_a: Vec<String>, a_after_b: Vec<String>) -> Pair {
    let shared: Vec<String> = a
        .changed
        .paths
        .iter()
        .filter(|p| b.changed.paths.contains(p))
        .cloned()
        .collect();
    let mut conflicting = b_after_a.clone();
    conflicting.extend(a_after_b.iter().filter(|p| !b_after_a.contains(p)).cloned());
    Pair {
        a: a.changed.session_id.clone(),
        b: b.changed.session_id.clone(),
        prediction: prediction_of(&conflicting),
        b_after_a: prediction_of(&b_after_a),
        a_after_b: prediction_of(&a_after_b),
        shared_paths: shared,
        conflicting_paths: conflicting,
    }
}
