//! `list`: sessions with their state, owner liveness and whether the source moved on.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use serde::Serialize;

use crate::context::Context;
use crate::error::Result;
use crate::isolation;
use crate::owner::Liveness;
use crate::repo::Repo;
use crate::state::{LastRun, SessionRecord, SessionState, Store, registered_sources};

#[derive(Debug, Clone, Serialize)]
pub struct SessionView {
    pub session_id: String,
    /// `bound`, `retained`, `discarded`, or `missing` (recorded as bound, tree gone).
    pub state: &'static str,
    pub source: PathBuf,
    pub worktree: Option<PathBuf>,
    pub bound_revision: String,
    /// `null` when the source cannot be read.
    pub head_moved: Option<bool>,
    /// `null` when it cannot be told (another host, no start identity).
    pub owner_alive: Option<bool>,
    pub last_run: Option<LastRun>,
    pub read_only: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct ListOutcome {
    pub sessions: Vec<SessionView>,
    /// Records that could not be read, by file.
    pub unreadable: Vec<String>,
}

pub fn list(ctx: &Context, all: bool) -> Result<ListOutcome> {
    let mut stores: BTreeMap<PathBuf, Store> = BTreeMap::new();
    let here = if all {
        ctx.locate().ok()
    } else {
        Some(ctx.locate()?)
    };
    if let Some(located) = &here {
        stores.insert(located.store.dir().to_path_buf(), located.store.clone());
    }
    if all {
        for entry in registered_sources()? {
            stores
                .entry(entry.state_dir.clone())
                .or_insert_with(|| Store::new(&entry.common_dir, Some(&entry.state_dir)));
        }
    }
    let mut heads: HashMap<PathBuf, Option<String>> = HashMap::new();
    let mut outcome = ListOutcome {
        sessions: Vec::new(),
        unreadable: Vec::new(),
    };
    for store in stores.values() {
        for record in store.sessions()? {
            match record {
                Ok(record) => {
                    let head = heads.entry(record.source.clone()).or_insert_with(|| {
                        Repo {
                            toplevel: record.source.clone(),
                            common_dir: record.common_dir.clone(),
                        }
                        .head_commit(&ctx.git)
                    });
                    outcome.sessions.push(view(&record, head.as_deref()));
                }
                Err(unreadable) => outcome.unreadable.push(unreadable),
            }
        }
    }
    Ok(outcome)
}

fn view(record: &SessionRecord, source_head: Option<&str>) -> SessionView {
    let state = match record.state {
        SessionState::Discarded => "discarded",
        _ if !record.read_only && !isolation::is_healthy(record) => "missing",
        SessionState::Retained => "retained",
        SessionState::Bound => "bound",
    };
    SessionView {
        session_id: record.session_id.clone(),
        state,
        source: record.source.clone(),
        worktree: record.worktree.clone(),
        bound_revision: record.bound_revision.clone(),
        head_moved: source_head.map(|head| head != record.bound_revision),
        owner_alive: match record.owner.liveness() {
            Liveness::Alive => Some(true),
            Liveness::Dead => Some(false),
            Liveness::Foreign | Liveness::Unknown => None,
        },
        last_run: record.last_run.clone(),
        read_only: record.read_only,
    }
}
