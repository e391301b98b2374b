//! A session's runs as `show` and `log` list them: each from its stored change-set document
//! and, for a run, its exit record.

use serde::Serialize;

use crate::base::error::Result;
use crate::base::ids::{RunId, SessionId};
use crate::model::changeset::{ChangeSet, RunState};
use crate::store::state::{Ran, RunSandbox, Store};

/// One run (or capture) of the session, from its stored change-set document and, for a run,
/// its exit record.
#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    /// The run's id.
    pub run_id: RunId,
    /// How it ended; `null` when the document cannot be read.
    pub state: Option<RunState>,
    /// The command's exit code, from the run's exit record: `null` for a capture (which runs
    /// nothing) and when a signal ended the command.
    pub exit_code: Option<i32>,
    /// The signal that ended the command, if one did.
    pub signal: Option<i32>,
    /// The change set's digest.
    pub digest: Option<crate::base::ids::Digest>,
    /// The patch's size.
    pub patch_bytes: Option<u64>,
    /// When its result was observed, in milliseconds since the epoch.
    pub observed_at_ms: Option<u64>,
    /// What the command was, where and when it ran (each `null` for a capture and in exit
    /// records written before a3s-iso kept it).
    #[serde(flatten)]
    pub ran: Ran,
    /// The sandbox settings it ran with (`null` likewise).
    pub sandbox: Option<RunSandbox>,
    /// What it could reach of the network and what the proxy refused (`null` likewise).
    pub network: Option<crate::services::network::NetworkReport>,
}

/// The session's runs (those with a stored document), oldest first.
pub(crate) fn runs(store: &Store, session_id: &SessionId) -> Result<Vec<RunView>> {
    let mut runs: Vec<RunView> = store
        .run_ids(session_id)?
        .into_iter()
        .map(|run_id| run_view(store, session_id, run_id))
        .collect();
    runs.sort_by(|a, b| (a.observed_at_ms, &a.run_id).cmp(&(b.observed_at_ms, &b.run_id)));
    Ok(runs)
}

/// One run, from its stored document (when it can be read) and its exit record (when there is one).
fn run_view(store: &Store, session_id: &SessionId, run_id: RunId) -> RunView {
    let doc = store
        .load_run_doc(session_id, &run_id)
        .ok()
        .flatten()
        .and_then(|bytes| serde_json::from_slice::<ChangeSet>(&bytes).ok());
    let exit = store.load_run_exit(session_id, &run_id);
    RunView {
        state: doc.as_ref().map(|d| d.state),
        exit_code: exit.as_ref().and_then(|e| e.exit_code),
        signal: exit.as_ref().and_then(|e| e.signal),
        digest: doc.as_ref().map(|d| d.patch_digest.clone()),
        patch_bytes: doc.as_ref().map(|d| d.patch_bytes),
        observed_at_ms: doc.as_ref().map(|d| d.observed_at_ms),
        ran: exit.as_ref().map(|e| e.ran.clone()).unwrap_or_default(),
        network: exit.as_ref().and_then(|e| e.network.clone()),
        sandbox: exit.and_then(|e| e.sandbox),
        run_id,
    }
}
