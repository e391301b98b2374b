//! The intent record (`<state>/intents/<digest hex>.json`): what a promote is about to do to
//! the checkout, fsynced before its first byte changes, removed once journaled (or rolled back).
//!
//! Paths are bytes ([`RepoPath`]): any path git can hold survives the round trip exactly.

use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::base::error::Result;
use crate::base::fsutil::{read_json, remove_file_if_exists, write_json_durable};
pub(crate) use crate::base::paths::RepoPath;
use crate::store::layout::StateDir;
use crate::store::state::{PromoteMode, Step, Store};

/// The schema name of an intent record.
pub(crate) const SCHEMA: &str = "a3s-iso.intent.v1";

/// What a path holds: a mode (`100644`, `100755`, `120000`, `160000`) and an object id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Entry {
    /// The git mode, as git prints it.
    pub(crate) mode: String,
    /// The blob (or, for a gitlink, commit) id.
    pub(crate) oid: String,
}

impl Entry {
    /// A submodule's commit: the checkout holds a directory, not content.
    pub(crate) fn is_gitlink(&self) -> bool {
        self.mode == "160000"
    }

    /// The path and entry of each NUL-ended `<mode> <word> <word>\t<path>` git lists, the id at
    /// word `oid_at` (`ls-files -s`: 1; `ls-tree`: 2).
    pub(crate) fn listed(listed: &[u8], oid_at: usize) -> impl Iterator<Item = (&[u8], Entry)> {
        crate::git::split_nul(listed).filter_map(move |record| {
            let tab = record.iter().position(|b| *b == b'\t')?;
            let meta = String::from_utf8_lossy(&record[..tab]);
            let words: Vec<&str> = meta.split(' ').collect();
            let entry = Entry {
                mode: words.first()?.to_string(),
                oid: words.get(oid_at)?.to_string(),
            };
            (words.len() == 3).then_some((&record[tab + 1..], entry))
        })
    }
}

/// One path a patch changes: what it holds before and after (`None`: absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PathChange {
    pub(crate) path: RepoPath,
    /// Before the promote.
    pub(crate) pre: Option<Entry>,
    /// After it.
    pub(crate) post: Option<Entry>,
}

impl PathChange {
    /// A submodule entry on either side: only its directory is the checkout's business.
    pub(crate) fn is_gitlink(&self) -> bool {
        self.pre.as_ref().is_some_and(Entry::is_gitlink)
            || self.post.as_ref().is_some_and(Entry::is_gitlink)
    }
}

/// Patch mode: every touched path's pre- and post-image, both in the object store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PatchPlan {
    /// The touched paths, in the order the writer numbers its temporary files.
    pub(crate) paths: Vec<PathChange>,
    /// Directories the promote creates (absent before), deepest first.
    pub(crate) created_dirs: Vec<RepoPath>,
}

/// Branch mode: where the branch was, where it is going, and where the user's WIP is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct BranchPlan {
    /// The source's branch the commits are replayed onto (`refs/heads/…`).
    pub(crate) branch: String,
    /// Its tip before the replay.
    pub(crate) old_tip: String,
    /// The retained branch's tip: the chain being replayed.
    pub(crate) retained_tip: String,
    /// Whether the source had uncommitted work to set aside.
    pub(crate) had_wip: bool,
    /// A unique token in the stash's message and every git's environment, to find them later.
    pub(crate) token: String,
    /// The stash commit holding the user's WIP, once it exists.
    pub(crate) stash: Option<String>,
    /// The commits to replay, in order.
    pub(crate) chain: Vec<String>,
    /// How many of them the replay has dealt with (replayed or skipped as empty).
    pub(crate) processed: usize,
    /// The commits the replay made so far, oldest first.
    pub(crate) replayed: Vec<String>,
    /// The branch tip once the replay finished.
    pub(crate) done: Option<String>,
    /// Set when the chain lands as a fast-forward to this commit (its tip, which this
    /// promote made on the old tip): the index and files move first by a two-way merge that
    /// leaves the user's work in place, then the branch. Nothing is stashed, nothing is reset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) fast_forward: Option<String>,
    /// git refused the fast-forward's move, having written nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) fast_forward_refused: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Changes {
    /// Files written in place.
    Patch(PatchPlan),
    /// Commits replayed onto a branch, with the WIP set aside.
    Branch(BranchPlan),
}

/// A promote about to change (or changing) the checkout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Intent {
    pub(crate) schema: String,
    pub(crate) digest: crate::base::ids::Digest,
    /// The promoted session, if any.
    pub(crate) session_id: Option<String>,
    pub(crate) mode: PromoteMode,
    /// The checkout being changed (its top level).
    #[serde(with = "crate::base::paths::fs_path")]
    pub(crate) source: PathBuf,
    /// The source's HEAD when the promote started (for the journal).
    pub(crate) source_head: Option<crate::base::ids::CommitId>,
    /// The patch's size (for the journal).
    pub(crate) patch_bytes: u64,
    /// When the intent was written.
    pub(crate) created_at_ms: u64,
    /// The promoting process.
    pub(crate) pid: u32,
    pub(crate) changes: Changes,
    /// The step a session's promote lands, journaled with it (by the promote or recovery), so
    /// that a crash neither loses it nor records it twice.
    #[serde(default)]
    pub(crate) step: Option<Step>,
    /// For `promote --reapply`: the `promoted_at_ms` of the journal entry this landing follows
    /// (the entry is there before it lands again, so only a newer one says it is done).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reapply_of: Option<u64>,
}

impl Intent {
    /// Whether the journal entry `entry` (of this intent's digest) records this very landing.
    pub(crate) fn journaled_by(&self, entry: Option<&crate::store::state::JournalEntry>) -> bool {
        entry.is_some_and(|e| self.reapply_of != Some(e.promoted_at_ms))
    }
}

/// A short tag of a digest for file names (the first 12 hex digits).
pub(crate) fn tag(digest: &str) -> String {
    digest
        .strip_prefix("sha256:")
        .unwrap_or(digest)
        .chars()
        .take(12)
        .collect()
}

fn file(store: &Store, digest: &str) -> PathBuf {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    StateDir::Intents.file(store.dir(), hex, ".json")
}

/// Writes (or rewrites) an intent: atomic and fsynced before this returns.
pub(crate) fn save(store: &Store, intent: &Intent) -> Result<()> {
    write_json_durable(&file(store, &intent.digest), intent)
}

/// The intent of a digest, if one is pending.
pub(crate) fn load(store: &Store, digest: &str) -> Result<Option<Intent>> {
    read_json(&file(store, digest))
}

/// Drops an intent once nothing is left to finish.
pub(crate) fn remove(store: &Store, digest: &str) -> Result<()> {
    remove_file_if_exists(&file(store, digest))
}

/// Every pending intent, by file name; one that cannot be read is reported by name.
pub(crate) fn pending(store: &Store) -> Vec<std::result::Result<Intent, String>> {
    let dir = store.path(StateDir::Intents);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let hidden = |p: &PathBuf| {
        p.file_name()
            .is_some_and(|n| n.as_bytes().starts_with(b"."))
    };
    let mut names: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json") && !hidden(p))
        .collect();
    names.sort();
    names
        .into_iter()
        .filter_map(|path| match read_json::<Intent>(&path) {
            Ok(Some(intent)) => Some(Ok(intent)),
            Ok(None) => None,
            Err(e) => Some(Err(format!("{}: {e}", path.display()))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::recovery::intent::record::*;

    #[test]
    fn paths_survive_json_whatever_their_bytes() {
        for bytes in [b"plain/path.txt".to_vec(), b"caf\xe9\n\"x".to_vec()] {
            let path = RepoPath(bytes.clone());
            let json = serde_json::to_string(&path).unwrap();
            assert_eq!(serde_json::from_str::<RepoPath>(&json).unwrap().0, bytes);
        }
        assert_eq!(
            serde_json::to_string(&RepoPath(b"a.txt".to_vec())).unwrap(),
            r#""a.txt""#
        );
        // Older records wrote a UTF-8 name as `{"text": …}`.
        assert_eq!(
            serde_json::from_str::<RepoPath>(r#"{"text":"a.txt"}"#)
                .unwrap()
                .0,
            b"a.txt"
        );
        assert_eq!(
            serde_json::to_string(&RepoPath(b"\xff".to_vec())).unwrap(),
            r#"{"bytes_base64":"/w=="}"#
        );
    }
}
