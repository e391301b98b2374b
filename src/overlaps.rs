//! `overlaps`: for the live sessions of a source, the paths each changed since its base, and
//! for every pair whether their work would merge (`clean`) or not (`conflict`, with the paths),
//! predicted with `git merge-tree --write-tree` in an object view. No tree is touched: each
//! isolation is read through a peek (a3s-iso's own index of it is left as it was), and only
//! objects are written.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::context::{Context, Located};
use crate::error::Result;
use crate::git::ObjectView;
use crate::isolation::writable_isolation;
use crate::state::{SessionRecord, SessionState};

/// A live session and what it changed since its base.
#[derive(Debug, Clone, Serialize)]
pub struct Changed {
    /// The session.
    pub session_id: String,
    /// Its bound revision.
    pub bound_revision: String,
    /// The paths that differ from its base tree now (tracked and untracked).
    pub paths: Vec<String>,
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
    pub a: String,
    /// The other.
    pub b: String,
    /// Whether their work merges.
    pub prediction: Prediction,
    /// The paths both changed.
    pub shared_paths: Vec<String>,
    /// The paths where they conflict (empty when clean).
    pub conflicting_paths: Vec<String>,
}

/// A session left out of the prediction, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    /// The session.
    pub session_id: String,
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
}

impl OverlapsOutcome {
    /// For each session, the ids of the sessions it would conflict with.
    pub fn conflicts_with(&self) -> BTreeMap<String, Vec<String>> {
        let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
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
    let located = ctx.locate()?;
    predict(ctx, &located)
}

/// One session's work as a commit on its bound revision, with what it changed.
struct Work {
    changed: Changed,
    commit: String,
}

/// Plans only: snapshots (peeks) each live session, then merges every pair in objects.
pub(crate) fn predict(ctx: &Context, located: &Located) -> Result<OverlapsOutcome> {
    let scratch = located.store.scratch_dir();
    let view = ObjectView::new(&ctx.git, &located.repo.common_dir, &[], &scratch)?;
    let mut works: Vec<Work> = Vec::new();
    let mut skipped = Vec::new();
    let mut records: Vec<SessionRecord> = located
        .store
        .sessions()?
        .into_iter()
        .flatten()
        .filter(|r| r.state == SessionState::Bound && !r.read_only)
        .collect();
    records.sort_by(|a, b| a.session_id.cmp(&b.session_id));
    for record in records {
        match work_of(ctx, located, &view, &record) {
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
    let mut pairs = Vec::new();
    for (i, a) in works.iter().enumerate() {
        for b in &works[i + 1..] {
            pairs.push(pair(&view, a, b)?);
        }
    }
    Ok(OverlapsOutcome {
        sessions: works.into_iter().map(|w| w.changed).collect(),
        pairs,
        skipped,
    })
}

/// A session's snapshot as a commit on its bound revision; `None` for a conflicted session
/// (its files hold markers, not its work).
fn work_of(
    ctx: &Context,
    located: &Located,
    view: &ObjectView,
    record: &SessionRecord,
) -> Result<Option<Work>> {
    if crate::rebase::conflicted_paths(&located.store, record).is_some() {
        return Ok(None);
    }
    let isolation = writable_isolation(record)?;
    let snap = isolation.peek(ctx, located, &located.store.scratch_dir())?;
    let paths = ctx
        .git
        .diff_trees(&located.repo.common_dir, &record.base_tree, &snap.tree)?
        .iter()
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
    let message = format!("a3s-iso: the work of session {}\n", record.session_id);
    let commit = view.commit_tree(&snap.tree, &record.bound_revision, None, message.as_bytes())?;
    Ok(Some(Work {
        changed: Changed {
            session_id: record.session_id.clone(),
            bound_revision: record.bound_revision.clone(),
            paths,
        },
        commit,
    }))
}

fn pair(view: &ObjectView, a: &Work, b: &Work) -> Result<Pair> {
    let shared: Vec<String> = a
        .changed
        .paths
        .iter()
        .filter(|p| b.changed.paths.contains(p))
        .cloned()
        .collect();
    // Paths need not be shared to conflict (a file where the other puts a directory).
    let (prediction, conflicting) = if a.changed.paths.is_empty() || b.changed.paths.is_empty() {
        (Prediction::Clean, Vec::new())
    } else {
        let merged = view.merge_commits(&a.commit, &b.commit)?;
        let paths: Vec<String> = merged
            .paths()
            .iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        match paths.is_empty() {
            true => (Prediction::Clean, paths),
            false => (Prediction::Conflict, paths),
        }
    };
    Ok(Pair {
        a: a.changed.session_id.clone(),
        b: b.changed.session_id.clone(),
        prediction,
        shared_paths: shared,
        conflicting_paths: conflicting,
    })
}
