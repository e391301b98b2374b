//! Every directory of a state store under `<git common dir>/a3s-iso/` (or `--state-dir`), by
//! name: [`crate::store::state::Store`] builds each path from these, nothing else by hand.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::base::ids::{RunId, SessionId};
use crate::base::wire::wire_enum;

wire_enum! {
    /// One directory (or top-level file) of a state store.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum StateDir {
        /// `sessions/<id>.json`: each session's record.
        Sessions = "sessions",
        /// `claims/<id>.json`: binds in flight (a claim made before the isolation exists).
        Claims = "claims",
        /// `leases/<id>.lock`: who is working in a session (run, capture, promote, …).
        Leases = "leases",
        /// `pending/<id>.json`: write-ahead intents of tree operations (retain, sweep, discard …).
        Pending = "pending",
        /// `intents/<digest hex>.json`: write-ahead intents of promotes.
        Intents = "intents",
        /// `promoted/<digest hex>.json`: the promote journal.
        Promoted = "promoted",
        /// `artifacts/<digest hex>/`: what each promote wrote (patch, summary, change set).
        Artifacts = "artifacts",
        /// `runs/<id>/<run>.json`: each run's (and capture's) change-set document.
        Runs = "runs",
        /// `run-exits/<id>/<run>.json`: how each run ended, and what it ran.
        RunExits = "run-exits",
        /// `nested/<id>/…`: nested change sets (submodules, nested repositories) of each run.
        Nested = "nested",
        /// `rebases/<id>.{json,index,HEAD}`: a conflicted rebase, kept byte for byte.
        Rebases = "rebases",
        /// `rebasing/<id>.json`: the write-ahead intent of one change of an isolation by rebase.
        Rebasing = "rebasing",
        /// `seeds/<name>.index`: index files that seed snapshots of an isolation.
        Seeds = "seeds",
        /// `pool/`: spare isolations and their records.
        Pool = "pool",
        /// `quarantine/<run>-<maker>/`: each sandboxed run's quarantine object dir.
        Quarantine = "quarantine",
        /// `tmp/`: scratch (temporary indexes and patches), named for their maker.
        Tmp = "tmp",
        /// `land-tests/<id>/`: the output of `land --test` for each session.
        LandTests = "land-tests",
        /// `setup/<id>/`: the output of each session's setup commands.
        Setup = "setup",
        /// `land.json`: where an interrupted land goes on.
        LandQueue = "land.json",
        /// `land-push/<id>.json`: what `land --push` pushes, written before its first push.
        LandPush = "land-push",
        /// `live/<id>.json`: what a run in progress publishes (its ports), while it lives.
        Live = "live",
        /// `session-git/<id>/`: the session's own git layers (refs, logs, its admin dir's).
        SessionGit = "session-git",
        /// `run-layers/<id>/<run>/{upper,work}`: a sandboxed run's layer, merged after it.
        RunLayers = "run-layers",
        /// `purged/<id>.json`: that a session was purged, written before anything of it goes.
        Purged = "purged",
    }
}

impl StateDir {
    /// Its path under the state dir `root`.
    pub fn under(self, root: &Path) -> PathBuf {
        root.join(self.as_str())
    }

    /// A session's (or a run's, or a digest's) file in it: `<dir>/<id><ext>`.
    pub fn file(self, root: &Path, id: &str, ext: &str) -> PathBuf {
        self.under(root).join(format!("{id}{ext}"))
    }

    /// A run's record in a per-session directory: `<dir>/<session>/<run>.json`.
    pub fn run_file(self, root: &Path, session_id: &SessionId, run_id: &RunId) -> PathBuf {
        self.under(root)
            .join(session_id)
            .join(format!("{run_id}.json"))
    }
}

#[cfg(test)]
mod tests {
    use crate::store::layout::*;

    #[test]
    fn every_entry_has_a_name_of_its_own() {
        let mut names: Vec<&str> = StateDir::ALL.iter().map(|d| d.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), StateDir::ALL.len());
        assert_eq!(
            StateDir::Claims.file(Path::new("/s"), "x", ".json"),
            PathBuf::from("/s/claims/x.json")
        );
    }
}
