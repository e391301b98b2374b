//! Every directory of a state store, by name, with what it holds: the one place that knows
//! the layout under `<git common dir>/a3s-iso/` (or `--state-dir`). [`crate::store::state::Store`]
//! builds each path from these; nothing else joins a state-dir name by hand.

use crate::base::ids::{RunId, SessionId};
use std::path::{Path, PathBuf};

/// One directory (or top-level file) of a state store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateDir {
    /// `sessions/<id>.json`: each session's record.
    Sessions,
    /// `claims/<id>.json`: binds in flight (a claim made before the isolation exists).
    Claims,
    /// `leases/<id>.lock`: who is working in a session (run, capture, promote, …).
    Leases,
    /// `pending/<id>.json`: write-ahead intents of tree operations (retain, sweep, discard …).
    Pending,
    /// `intents/<digest hex>.json`: write-ahead intents of promotes.
    Intents,
    /// `promoted/<digest hex>.json`: the promote journal.
    Promoted,
    /// `artifacts/<digest hex>/`: what each promote wrote (patch, summary, change set).
    Artifacts,
    /// `runs/<id>/<run>.json`: each run's (and capture's) change-set document.
    Runs,
    /// `run-exits/<id>/<run>.json`: how each run ended, and what it ran.
    RunExits,
    /// `nested/<id>/…`: nested change sets (submodules, nested repositories) of each run.
    Nested,
    /// `rebases/<id>.{json,index,HEAD}`: a conflicted rebase, kept byte for byte.
    Rebases,
    /// `rebasing/<id>.json`: the write-ahead intent of one change of an isolation by rebase.
    Rebasing,
    /// `seeds/<name>.index`: index files that seed snapshots of an isolation.
    Seeds,
    /// `pool/`: spare isolations and their records.
    Pool,
    /// `quarantine/<run>-<maker>/`: each sandboxed run's quarantine object dir.
    Quarantine,
    /// `tmp/`: scratch (temporary indexes and patches), named for their maker.
    Tmp,
    /// `land-tests/<id>/`: the output of `land --test` for each session.
    LandTests,
    /// `setup/<id>/`: the output of each session's setup commands.
    Setup,
    /// `land.json`: where an interrupted land goes on.
    LandQueue,
    /// `land-push/<id>.json`: the change set a `land --push` of the session pushes, written
    /// before its first push (its digest is what the branch is searched for).
    LandPush,
    /// `live/<id>.json`: what a run in progress publishes (its ports), while it lives.
    Live,
    /// `session-git/<id>/`: the session's own git layers (refs, logs, its admin dir's).
    SessionGit,
    /// `run-layers/<id>/<run>/{upper,work}`: a sandboxed run's layer over its isolation, merged
    /// into the tree after the command (a `pending` intent names it meanwhile).
    RunLayers,
    /// `purged/<id>.json`: that a session was purged (`discard --purge`), written before
    /// anything of it goes, so that the purge run again is `already_purged`.
    Purged,
}

impl StateDir {
    /// Every entry, in the order the layout lists them.
    #[cfg(test)]
    pub const ALL: [StateDir; 24] = [
        StateDir::Sessions,
        StateDir::Claims,
        StateDir::Leases,
        StateDir::Pending,
        StateDir::Intents,
        StateDir::Promoted,
        StateDir::Artifacts,
        StateDir::Runs,
        StateDir::RunExits,
        StateDir::Nested,
        StateDir::Rebases,
        StateDir::Rebasing,
        StateDir::Seeds,
        StateDir::Pool,
        StateDir::Quarantine,
        StateDir::Tmp,
        StateDir::LandTests,
        StateDir::Setup,
        StateDir::LandQueue,
        StateDir::LandPush,
        StateDir::Live,
        StateDir::SessionGit,
        StateDir::RunLayers,
        StateDir::Purged,
    ];

    /// Its name under the state dir.
    pub const fn name(self) -> &'static str {
        match self {
            StateDir::Sessions => "sessions",
            StateDir::Claims => "claims",
            StateDir::Leases => "leases",
            StateDir::Pending => "pending",
            StateDir::Intents => "intents",
            StateDir::Promoted => "promoted",
            StateDir::Artifacts => "artifacts",
            StateDir::Runs => "runs",
            StateDir::RunExits => "run-exits",
            StateDir::Nested => "nested",
            StateDir::Rebases => "rebases",
            StateDir::Rebasing => "rebasing",
            StateDir::Seeds => "seeds",
            StateDir::Pool => "pool",
            StateDir::Quarantine => "quarantine",
            StateDir::Tmp => "tmp",
            StateDir::LandTests => "land-tests",
            StateDir::Setup => "setup",
            StateDir::LandQueue => "land.json",
            StateDir::LandPush => "land-push",
            StateDir::Live => "live",
            StateDir::SessionGit => "session-git",
            StateDir::RunLayers => "run-layers",
            StateDir::Purged => "purged",
        }
    }

    /// Its path under the state dir `root`.
    pub fn under(self, root: &Path) -> PathBuf {
        root.join(self.name())
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
        let mut names: Vec<&str> = StateDir::ALL.iter().map(|d| d.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), StateDir::ALL.len());
        assert_eq!(
            StateDir::Claims.file(Path::new("/s"), "x", ".json"),
            PathBuf::from("/s/claims/x.json")
        );
    }
}
