//! The state store: session records, in-flight claims, and the user-level registry of sources.
//! Every path below is built from [`crate::store::layout::StateDir`].

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::base::error::{Busy, Error, IoContext, Result};
use crate::base::fsutil::{path_key, read_json, remove_file_if_exists, write_record_atomic};
use crate::base::ids::{CommitId, Digest, RunId, SessionId, TreeId};
use crate::base::names::{IsolationNames, RefNames, canonical, tenant_tag};
use crate::base::owner::Owner;
use crate::base::wire::wire_enum;
use crate::store::layout::StateDir;
use crate::store::lock::FileLock;

wire_enum! {
    /// How a run ended: the `state` of a change-set document, a run's result, a session's last run.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    pub enum RunState {
        /// The command exited 0 (and every `capture`).
        Completed = "completed",
        /// The command exited non-zero.
        Failed = "failed",
        /// A signal, an interrupt or `--timeout` ended the command.
        Cancelled = "cancelled",
    }
}

impl RunState {
    /// The state a document spells as `text`, if it is one of the three.
    pub(crate) fn parse(text: &str) -> Option<RunState> {
        RunState::ALL
            .into_iter()
            .find(|state| state.as_str() == text)
    }
}

/// A session's recorded state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionState {
    /// Bound to its source; its isolation (if not read-only) is where the record says.
    Bound,
    /// Retained for inspection: moved aside and locked; sweep leaves it alone.
    Retained,
    /// Discarded: its isolation is gone; its evidence stays unless purged.
    Discarded,
    /// A sweep reclaimed its isolation after snapshotting it; `bind --resume` brings it back.
    Swept,
}

impl SessionState {
    /// Whether a session in this state has its tree where its record says (if not read-only).
    pub fn has_tree(self) -> bool {
        matches!(self, SessionState::Bound | SessionState::Retained)
    }
}

/// What a sweep left of a session it reclaimed: enough to find the work and resume it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweptInfo {
    /// When the isolation was reclaimed, in milliseconds since the epoch.
    pub at_ms: u64,
    /// Where its last state was snapshotted (`None` when swept with `--no-capture`).
    pub swept_ref: Option<String>,
    /// Where the isolation was.
    #[serde(with = "crate::base::paths::fs_path")]
    pub path: PathBuf,
}

/// The latest run (or capture) of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastRun {
    /// The run's id.
    pub run_id: RunId,
    /// How it ended.
    pub state: RunState,
    /// When its result was observed, in milliseconds since the epoch.
    pub observed_at_ms: u64,
    /// The run's result tree: what `bind --resume` restores.
    pub result_tree: TreeId,
}

/// How a run's lease file names the run, on a line of its own after the holder's.
const LEASE_RUN_NOTE: &str = "run ";

/// The schema of a session record (`sessions/<id>.json`).
pub const SESSION_SCHEMA: &str = "a3s-iso.session.v1";
/// The schema of an in-flight bind's claim (`claims/<id>.json`).
pub const CLAIM_SCHEMA: &str = "a3s-iso.claim.v1";
/// The schema of a run exit record (`run-exits/<id>/<run>.json`).
pub const RUN_EXIT_SCHEMA: &str = "a3s-iso.run_exit.v1";
/// The schema of a promote journal entry (`promoted/<digest hex>.json`).
pub const JOURNAL_SCHEMA: &str = "a3s-iso.journal.v1";
/// The schema of an entry of the registry of sources.
pub const REGISTRY_SCHEMA: &str = "a3s-iso.registry.v1";

/// A session as the store records it (`sessions/<id>.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The session's id.
    pub session_id: SessionId,
    /// Bound, retained or discarded.
    pub state: SessionState,
    /// The source checkout it was bound from.
    #[serde(with = "crate::base::paths::fs_path")]
    pub source: PathBuf,
    /// The source's common git dir.
    #[serde(with = "crate::base::paths::fs_path")]
    pub common_dir: PathBuf,
    /// The isolation; `None` for a read-only session.
    #[serde(default, with = "crate::base::paths::fs_path_opt")]
    pub worktree: Option<PathBuf>,
    /// The isolation's git admin dir (`<common>/worktrees/<name>`), recorded at bind so that the
    /// `.git` file inside the tree is never trusted.
    #[serde(default, with = "crate::base::paths::fs_path_opt")]
    pub admin_dir: Option<PathBuf>,
    /// The commit the isolation was detached at.
    pub bound_revision: String,
    /// The tree change sets are taken against (with carried WIP, the source's working state).
    pub base_tree: TreeId,
    /// No isolation: writing commands refuse the session.
    pub read_only: bool,
    /// The isolation started from the source's local changes (`--carry-wip`).
    pub carried_wip: bool,
    /// With carried WIP: what the source had staged (the base tree is its working state).
    #[serde(default)]
    pub carried_index_tree: Option<TreeId>,
    /// The source had local changes that the isolation does not contain (`--allow-dirty`).
    pub wip_left_out: bool,
    /// Who owns the session; `None` for an ownerless one (`bind --owner none`).
    pub owner: Option<Owner>,
    /// When it was bound, in milliseconds since the epoch.
    pub created_at_ms: u64,
    /// When the record last changed.
    pub updated_at_ms: u64,
    /// The latest run or capture.
    #[serde(default)]
    pub last_run: Option<LastRun>,
    /// Why the session was retained (`retain --reason`).
    #[serde(default)]
    pub retained_reason: Option<String>,
    /// When the session was retained.
    #[serde(default)]
    pub retained_at_ms: Option<u64>,
    /// Set when a sweep reclaimed the isolation (state `swept`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swept: Option<SweptInfo>,
    /// Set when a rebase moved the session onto a new base (`bound_revision`, `base_tree`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebased: Option<Rebased>,
    /// Set when a tool (a Claude Code hook) made the session, with the process it made it for;
    /// a record without it is no hook's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<CreatedBy>,
    /// How its isolation's files were made; `None` if read-only, and in records older than it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fill: Option<crate::base::reflink::Fill>,
}

/// That a session was purged (`purged/<id>.json`), so that a purge run again (after a crash, or
/// twice) is `already_purged`, not `session_not_found`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgedMark {
    /// The session purged.
    pub session_id: SessionId,
    /// The common git dir of its source (a shared state dir holds several repositories').
    #[serde(with = "crate::base::paths::fs_path")]
    pub common_dir: PathBuf,
    /// Its isolation's admin dir, whose seed indexes the purge removes.
    #[serde(default, with = "crate::base::paths::fs_path_opt")]
    pub admin_dir: Option<PathBuf>,
    /// Where its isolation was.
    #[serde(default, with = "crate::base::paths::fs_path_opt")]
    pub worktree: Option<PathBuf>,
    /// When the purge began, in milliseconds since the epoch.
    pub purged_at_ms: u64,
}

/// Which tool made a session, for which process: what a hook may act on is decided from this.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreatedBy {
    /// The tool.
    pub tool: Creator,
    /// The process it made the session for (a hook: the Claude Code it ran under), with its
    /// start identity, so that a reused pid is not taken for it.
    pub process: Owner,
}

/// A tool that makes sessions of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Creator {
    /// `a3s-iso hook claude worktree-create`.
    ClaudeHook,
}

/// What the last rebase of a session changed: its steps up to then are behind its new base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rebased {
    /// When it was rebased, in milliseconds since the epoch.
    pub at_ms: u64,
    /// The number of the last step promoted before it (0: none): later promotes take their
    /// delta from the new base tree and number their steps on from here.
    pub steps_before: u64,
}

impl SessionRecord {
    /// The number of the last step promoted before the session's last rebase (0: none).
    pub(crate) fn steps_before_rebase(&self) -> u64 {
        self.rebased.as_ref().map_or(0, |r| r.steps_before)
    }

    /// For a swept session: when it was swept and where its last state is, as a sentence.
    pub fn swept_summary(&self) -> Option<String> {
        let swept = self
            .swept
            .as_ref()
            .filter(|_| self.state == SessionState::Swept)?;
        let at = crate::base::fsutil::format_utc(swept.at_ms);
        Some(match &swept.swept_ref {
            Some(reference) => format!(
                "session {:?} was swept at {at}; its last state is in {reference}",
                self.session_id
            ),
            None => format!(
                "session {:?} was swept at {at} without a snapshot (--no-capture); its last capture is kept",
                self.session_id
            ),
        })
    }

    /// When the session last showed a sign of life: bound, changed or captured.
    pub fn last_activity_ms(&self) -> u64 {
        let captured = self.last_run.as_ref().map_or(0, |r| r.observed_at_ms);
        self.created_at_ms.max(self.updated_at_ms).max(captured)
    }
}

/// What is on disk for a session id.
#[derive(Debug, Clone)]
pub(crate) enum RecordStatus {
    /// No record.
    Missing,
    /// A record, read.
    Found(Box<SessionRecord>),
    /// There, but not a session record (corrupt or truncated).
    Malformed(String),
    /// There, but it cannot be read.
    Unreadable(String),
}

/// An in-flight bind, from before its checkout until the session is published: names the bind
/// process, so a dead bind's leftovers can be proven dead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimRecord {
    /// The session being bound.
    pub session_id: SessionId,
    /// Where the tree is being built (in place, at the isolation path).
    #[serde(with = "crate::base::paths::fs_path")]
    pub path: PathBuf,
    /// The bind's own process.
    pub bind_process: Owner,
    /// When the claim was made.
    pub created_at_ms: u64,
    /// The process group the bind ran in (its git runs there too): once no process of it is
    /// left, nothing can still be writing the tree. `None` in claims written before it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_group: Option<i32>,
}

/// A state store (the state dir). One other than the repository's default one is a tenant: its
/// private refs and isolation names carry its tag (see `names`).
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    /// The tenant's tag; `None` for the default store `<common dir>/a3s-iso`.
    tag: Option<String>,
}

impl Store {
    /// `--state-dir` when given, else `<common dir>/a3s-iso`; naming the default store, the
    /// default tenant.
    pub(crate) fn new(common_dir: &Path, override_dir: Option<&Path>) -> Store {
        let default = common_dir.join("a3s-iso");
        match override_dir {
            Some(dir) if canonical(dir) != canonical(&default) => Store {
                dir: dir.to_path_buf(),
                tag: Some(tenant_tag(dir)),
            },
            _ => Store {
                dir: override_dir.map_or(default, Path::to_path_buf),
                tag: None,
            },
        }
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// One directory (or top-level file) of the state dir.
    pub(crate) fn path(&self, entry: StateDir) -> PathBuf {
        entry.under(&self.dir)
    }

    /// The tenant's tag; `None` for the repository's default store.
    pub fn tenant(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// This store's private ref namespace.
    pub fn refs(&self) -> RefNames {
        RefNames::new(self.tag.as_deref())
    }

    /// This store's names for the isolations of `source`.
    pub fn isolation_names(&self, source: &Path) -> IsolationNames {
        IsolationNames::new(source, self.tag.as_deref())
    }

    /// Where the session's lease file is.
    pub(crate) fn lease_file(&self, id: &SessionId) -> PathBuf {
        StateDir::Leases.file(&self.dir, id, ".lock")
    }

    /// Takes the session's lease if no one holds it (`None` if someone does): a run holds it
    /// throughout, and `sweep`, `retain` and `discard` while they change the tree, so none starts
    /// in the middle of another. Waits only for a probe of [`Store::is_leased`] to let go.
    pub(crate) fn try_lease(&self, id: &SessionId) -> Result<Option<FileLock>> {
        self.try_lease_noting(id, None)
    }

    /// [`Store::try_lease`] for run `run_id`, which the lease file names meanwhile.
    pub(crate) fn try_lease_for_run(
        &self,
        id: &SessionId,
        run_id: &RunId,
    ) -> Result<Option<FileLock>> {
        self.try_lease_noting(id, Some(&format!("{LEASE_RUN_NOTE}{run_id}")))
    }

    fn try_lease_noting(&self, id: &SessionId, note: Option<&str>) -> Result<Option<FileLock>> {
        let path = self.lease_file(id);
        for pause_ms in [1, 3, 0] {
            if let Some(lease) = FileLock::try_acquire_noting(&path, note)? {
                return Ok(Some(lease));
            }
            std::thread::sleep(std::time::Duration::from_millis(pause_ms));
        }
        Ok(None)
    }

    /// The run holding the session's lease now, if a run does. The holder writes the file just
    /// after taking the lock: a file not written whole yet is read again, briefly.
    pub(crate) fn leasing_run(&self, id: &SessionId) -> Result<Option<String>> {
        if !self.is_leased(id)? {
            return Ok(None);
        }
        let path = self.lease_file(id);
        for pause_ms in [0, 2, 5, 10, 20] {
            std::thread::sleep(std::time::Duration::from_millis(pause_ms));
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if text.ends_with('\n') {
                // The holder's own line first (one line: its command line's breaks are blanked).
                return Ok(text
                    .lines()
                    .skip(1)
                    .find_map(|line| line.strip_prefix(LEASE_RUN_NOTE))
                    .map(str::to_string));
            }
        }
        Ok(None)
    }

    /// Whether someone holds the session's lease now (a probe takes a free one for an instant).
    pub(crate) fn is_leased(&self, id: &SessionId) -> Result<bool> {
        FileLock::is_held(&self.lease_file(id))
    }

    /// Takes the session's lease to change its tree; `session_busy` at once if someone holds it.
    pub(crate) fn lease_or_busy(&self, id: &SessionId) -> Result<FileLock> {
        self.try_lease(id)?.ok_or_else(|| Error::SessionBusy {
            session_id: id.to_string(),
            holder: Busy::RunInProgress,
        })
    }

    /// Where the mark of the session's purge is.
    pub(crate) fn purged_file(&self, id: &SessionId) -> PathBuf {
        StateDir::Purged.file(&self.dir, id, ".json")
    }

    /// The mark a purge of `id` left, if there is one.
    pub(crate) fn load_purged(&self, id: &SessionId) -> Result<Option<PurgedMark>> {
        read_json(&self.purged_file(id))
    }

    /// Marks `id` purged (atomically, fsynced) before anything of it is removed.
    pub(crate) fn save_purged(&self, mark: &PurgedMark) -> Result<()> {
        crate::base::fsutil::write_record_durable(
            &self.purged_file(&mark.session_id),
            "a3s-iso.purged.v1",
            mark,
        )
    }

    /// Where the session's record is.
    pub(crate) fn session_file(&self, id: &SessionId) -> PathBuf {
        StateDir::Sessions.file(&self.dir, id, ".json")
    }

    fn claim_file(&self, id: &SessionId) -> PathBuf {
        StateDir::Claims.file(&self.dir, id, ".json")
    }

    /// The session record of `id`, if there is one.
    pub(crate) fn load_session(&self, id: &SessionId) -> Result<Option<SessionRecord>> {
        read_json(&self.session_file(id))
    }

    /// Writes a session record (atomically).
    pub(crate) fn save_session(&self, record: &SessionRecord) -> Result<()> {
        write_record_atomic(
            &self.session_file(&record.session_id),
            SESSION_SCHEMA,
            record,
        )
    }

    /// Removes a session record; a missing one is not an error.
    pub(crate) fn remove_session(&self, id: &SessionId) -> Result<()> {
        remove_file_if_exists(&self.session_file(id))
    }

    /// Every session record, sorted by id; unreadable records are reported by name.
    pub(crate) fn sessions(&self) -> Result<Vec<std::result::Result<SessionRecord, String>>> {
        let names = self.ids_in(&StateDir::Sessions.under(&self.dir))?;
        Ok(each_record(names, |name| match SessionId::new(name) {
            Ok(id) => self.load_session(&id).map_err(|e| e.to_string()),
            Err(_) => Err("not a session id".into()),
        }))
    }

    /// A session record as found on disk, telling a corrupt record from one that cannot be read.
    pub(crate) fn session_status(&self, id: &SessionId) -> RecordStatus {
        let path = self.session_file(id);
        match std::fs::read(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => RecordStatus::Missing,
            Err(e) => RecordStatus::Unreadable(format!("{}: {e}", path.display())),
            Ok(bytes) => match serde_json::from_slice(&bytes) {
                Ok(record) => RecordStatus::Found(Box::new(record)),
                Err(e) => RecordStatus::Malformed(format!("{}: {e}", path.display())),
            },
        }
    }

    /// When the session record was last written (for the age of a malformed one).
    pub(crate) fn session_modified_ms(&self, id: &SessionId) -> Option<u64> {
        crate::base::fsutil::modified_ms(&self.session_file(id))
    }

    /// Every in-flight claim that can be read.
    pub(crate) fn claims(&self) -> Result<Vec<ClaimRecord>> {
        let names = self.ids_in(&StateDir::Claims.under(&self.dir))?;
        let claims = each_record(names, |name| {
            let id = SessionId::new(name).map_err(|e| e.to_string())?;
            self.load_claim(&id).map_err(|e| e.to_string())
        });
        Ok(claims.into_iter().flatten().collect())
    }

    /// The in-flight claim on `id`, if there is one.
    pub(crate) fn load_claim(&self, id: &SessionId) -> Result<Option<ClaimRecord>> {
        read_json(&self.claim_file(id))
    }

    /// Writes a claim (atomically), before the bind builds anything.
    pub(crate) fn save_claim(&self, claim: &ClaimRecord) -> Result<()> {
        write_record_atomic(&self.claim_file(&claim.session_id), CLAIM_SCHEMA, claim)
    }

    /// Removes a claim; a missing one is not an error.
    pub(crate) fn remove_claim(&self, id: &SessionId) -> Result<()> {
        remove_file_if_exists(&self.claim_file(id))
    }

    /// Where the intent of a tree operation on session `id` is kept meanwhile (see `pending`).
    pub(crate) fn pending_file(&self, id: &SessionId) -> PathBuf {
        StateDir::Pending.file(&self.dir, id, ".json")
    }

    /// The sessions with a tree operation's intent pending, sorted.
    pub(crate) fn pending_ids(&self) -> Result<Vec<SessionId>> {
        Ok(checked(self.ids_in(&StateDir::Pending.under(&self.dir))?))
    }

    fn run_file(&self, id: &SessionId, run_id: &RunId) -> PathBuf {
        StateDir::Runs.run_file(&self.dir, id, run_id)
    }

    /// The stored change-set document of a run, as its exact bytes.
    pub(crate) fn load_run_doc(&self, id: &SessionId, run_id: &RunId) -> Result<Option<Vec<u8>>> {
        let path = self.run_file(id, run_id);
        match std::fs::read(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            read => read
                .map(Some)
                .ctx(|| format!("cannot read {}", path.display())),
        }
    }

    /// The run ids with a stored document for a session, sorted.
    pub(crate) fn run_ids(&self, id: &SessionId) -> Result<Vec<RunId>> {
        Ok(checked(
            self.ids_in(&StateDir::Runs.under(&self.dir).join(id))?,
        ))
    }

    /// The sessions with stored run documents (a directory under `runs/`), sorted.
    pub(crate) fn run_session_ids(&self) -> Result<Vec<SessionId>> {
        let mut ids: Vec<SessionId> = entries_of(&StateDir::Runs.under(&self.dir))?
            .flatten()
            .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|entry| entry.file_name().into_string().ok())
            .filter_map(|id| SessionId::new(id).ok())
            .collect();
        ids.sort();
        Ok(ids)
    }

    /// Records how a run's command ended and what it ran, which its document has no place for.
    pub(crate) fn save_run_exit(
        &self,
        id: &SessionId,
        run_id: &RunId,
        exit: &RunExit,
    ) -> Result<()> {
        let path = StateDir::RunExits.run_file(&self.dir, id, run_id);
        write_record_atomic(&path, RUN_EXIT_SCHEMA, exit)
    }

    fn live_run_path(&self, id: &SessionId) -> PathBuf {
        StateDir::Live.file(&self.dir, id, ".json")
    }

    /// The live data of the run holding the session's lease now, if it published ports.
    pub(crate) fn live_run(&self, id: &SessionId) -> Option<LiveRun> {
        let running = self.leasing_run(id).ok().flatten()?;
        let bytes = std::fs::read(self.live_run_path(id)).ok()?;
        let live: LiveRun = serde_json::from_slice(&bytes).ok()?;
        (live.run_id == running).then_some(live)
    }

    /// How a run's command ended, if a3s-iso recorded it.
    pub(crate) fn load_run_exit(&self, id: &SessionId, run_id: &RunId) -> Option<RunExit> {
        let path = StateDir::RunExits.run_file(&self.dir, id, run_id);
        read_json(&path).ok().flatten()
    }

    /// Stores a run's change-set document (atomically).
    pub(crate) fn save_run_doc(&self, id: &SessionId, run_id: &RunId, bytes: &[u8]) -> Result<()> {
        crate::base::fsutil::write_atomic(&self.run_file(id, run_id), bytes)
    }

    /// Where the journal entry of a digest is.
    pub(crate) fn journal_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        StateDir::Promoted.file(&self.dir, hex, ".json")
    }

    /// The promote journal's entry for a digest, if it was promoted.
    pub(crate) fn journal_entry(&self, digest: &str) -> Result<Option<JournalEntry>> {
        read_json(&self.journal_file(digest))
    }

    /// Every entry of the promote journal that can be read (one that cannot is skipped: it
    /// names no step anyone could continue from).
    pub(crate) fn journal_entries(&self) -> Result<Vec<JournalEntry>> {
        Ok(self
            .journal_entries_checked()?
            .into_iter()
            .flatten()
            .collect())
    }

    /// Every entry of the promote journal, unordered; those that cannot be read by name.
    pub(crate) fn journal_entries_checked(
        &self,
    ) -> Result<Vec<std::result::Result<JournalEntry, String>>> {
        let names = self.ids_in(&StateDir::Promoted.under(&self.dir))?;
        Ok(each_record(names, |hex| {
            self.journal_entry(hex).map_err(|e| e.to_string())
        }))
    }

    /// The readable sessions that have an isolation to work in (bound, not read-only).
    pub(crate) fn live_sessions(&self) -> Result<Vec<SessionRecord>> {
        Ok(self
            .sessions()?
            .into_iter()
            .flatten()
            .filter(|r| r.state == SessionState::Bound && !r.read_only)
            .collect())
    }

    /// Where `land` records its queue while it has one (`land.json`).
    pub(crate) fn land_queue_file(&self) -> PathBuf {
        StateDir::LandQueue.under(&self.dir)
    }

    /// What `land --push` pushes of a session (`land-push/<id>.json`).
    pub(crate) fn land_push_file(&self, id: &SessionId) -> PathBuf {
        StateDir::LandPush.file(&self.dir, id, ".json")
    }

    /// Where `land --test` keeps the output of a session's tests (`land-tests/<id>/`).
    pub(crate) fn land_tests_dir(&self, id: &SessionId) -> PathBuf {
        StateDir::LandTests.under(&self.dir).join(id)
    }

    /// Where the setup commands of a session keep their output (`setup/<id>/`).
    pub(crate) fn setup_output_dir(&self, id: &SessionId) -> PathBuf {
        StateDir::Setup.under(&self.dir).join(id)
    }

    /// Where promoted change sets keep their artifacts (`artifacts/<digest hex>/`).
    pub(crate) fn artifacts_dir(&self) -> PathBuf {
        StateDir::Artifacts.under(&self.dir)
    }

    /// The change set a `--digest` value names among those this store knows (journaled, or
    /// with artifacts): a whole digest, or a unique prefix; `None` when none matches.
    pub(crate) fn resolve_digest(&self, flag: &str, given: &str) -> Result<Option<Digest>> {
        let query = crate::base::ids::DigestQuery::parse(flag, given)?;
        let mut known = self.ids_in(&StateDir::Promoted.under(&self.dir))?;
        if let Ok(entries) = std::fs::read_dir(self.artifacts_dir()) {
            known.extend(
                entries
                    .flatten()
                    .filter_map(|e| e.file_name().into_string().ok()),
            );
        }
        query.resolve(flag, known)
    }

    /// Records a promoted digest (atomic, fsynced). A digest that landed before keeps the
    /// times of its earlier landings, and its session and step when this landing has none.
    pub(crate) fn record_promoted(&self, entry: &JournalEntry) -> Result<()> {
        let mut entry = entry.clone();
        if let Some(old) = self.journal_entry(&entry.digest).ok().flatten()
            && old.promoted_at_ms != entry.promoted_at_ms
        {
            entry.earlier_landings = old.earlier_landings;
            entry.earlier_landings.push(old.promoted_at_ms);
            entry.session_id = entry.session_id.or(old.session_id);
            entry.step = entry.step.or(old.step);
        }
        crate::base::fsutil::write_record_durable(
            &self.journal_file(&entry.digest),
            JOURNAL_SCHEMA,
            &entry,
        )
    }

    /// Where a3s-iso keeps its own index (the seed of its next snapshot) of the isolation whose
    /// admin dir is `admin`; the directory is created.
    pub(crate) fn seed_index(&self, admin: &Path) -> Result<PathBuf> {
        let dir = StateDir::Seeds.under(&self.dir);
        std::fs::create_dir_all(&dir).ctx(|| format!("cannot create {}", dir.display()))?;
        Ok(self.seed_index_path(admin))
    }

    /// Where [`Store::seed_index`] is, without creating anything.
    pub(crate) fn seed_index_path(&self, admin: &Path) -> PathBuf {
        self.seed_file(admin, ".index")
    }

    /// A file of `seeds/` named for the isolation whose admin dir is `admin`.
    fn seed_file(&self, admin: &Path, ext: &str) -> PathBuf {
        let name = admin
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        StateDir::Seeds.file(&self.dir, &name, ext)
    }

    /// Where a3s-iso notes the tree that the index of the isolation whose admin dir is
    /// `admin` (git's own there) writes, as a rebase last wrote that index.
    pub(crate) fn isolation_index_note(&self, admin: &Path) -> PathBuf {
        self.seed_index_path(admin).with_extension("index-tree")
    }

    /// The index of the isolation whose admin dir is `admin` as bind wrote it, which tells the
    /// pool's cleaning what the session touched (the seed's stat data moves with every capture);
    /// no session id has a `+`, so no other isolation's seed has this name.
    pub(crate) fn bound_index_path(&self, admin: &Path) -> PathBuf {
        self.seed_file(admin, "+bound.index")
    }

    /// A conflicted rebase's records (`rebases/<id>.json`, the pre-rebase `.index` and `.HEAD`).
    pub(crate) fn rebase_file(&self, id: &SessionId, ext: &str) -> PathBuf {
        StateDir::Rebases.file(&self.dir, id, &format!(".{ext}"))
    }

    /// A rebase's write-ahead intent (`rebasing/<id>.json`), while it changes the isolation.
    pub(crate) fn rebase_intent_file(&self, id: &SessionId) -> PathBuf {
        StateDir::Rebasing.file(&self.dir, id, ".json")
    }

    /// The session's own git layers (`session-git/<id>/`): what git inside its runs writes.
    pub(crate) fn session_git_dir(&self, id: &SessionId) -> PathBuf {
        StateDir::SessionGit.under(&self.dir).join(id)
    }

    /// Where a sandboxed run's layer over its isolation is (`run-layers/<id>/<run>/`).
    pub(crate) fn run_layer_dir(&self, id: &SessionId, run_id: &RunId) -> PathBuf {
        StateDir::RunLayers.under(&self.dir).join(id).join(run_id)
    }

    /// Scratch space for temporary indexes and patches, on the repository's file system.
    pub(crate) fn scratch_dir(&self) -> PathBuf {
        StateDir::Tmp.under(&self.dir)
    }

    /// Drops what a session's runs and rebase recorded (their refs go with the session's).
    pub(crate) fn remove_runs(&self, id: &SessionId) -> Result<()> {
        for file in [
            self.rebase_file(id, "json"),
            self.rebase_file(id, "index"),
            self.rebase_file(id, "HEAD"),
            self.rebase_intent_file(id),
            self.live_run_path(id),
        ] {
            remove_file_if_exists(&file)?;
        }
        for kind in [
            StateDir::Runs,
            StateDir::Nested,
            StateDir::RunExits,
            StateDir::SessionGit,
            StateDir::RunLayers,
        ] {
            let dir = kind.under(&self.dir).join(id);
            // The session's git layers hold what its command wrote: removed as entries.
            if let Err(e) = crate::base::beneath::remove_path(&dir)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                return Err(Error::io(format!("cannot remove {}", dir.display()), e));
            }
        }
        Ok(())
    }

    fn ids_in(&self, dir: &Path) -> Result<Vec<String>> {
        let mut ids = Vec::new();
        for entry in entries_of(dir)? {
            let entry = entry.ctx(|| format!("cannot read {}", dir.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(id) = name.strip_suffix(".json")
                && !name.starts_with('.')
            {
                ids.push(id.to_string());
            }
        }
        ids.sort();
        Ok(ids)
    }
}

/// One line of the promote journal: a digest that landed in the source, exactly once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JournalEntry {
    /// The patch digest that landed.
    pub digest: Digest,
    /// The session it came from (`None` for a document or a noted digest).
    pub session_id: Option<String>,
    /// When it landed, in milliseconds since the epoch.
    pub promoted_at_ms: u64,
    /// The source's HEAD when it landed.
    pub source_head: Option<CommitId>,
    /// The patch's size.
    pub patch_bytes: u64,
    /// How it landed.
    pub how: Landing,
    /// Which promote mode landed it.
    pub mode: PromoteMode,
    /// For a session's promote: which step of the session it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<Step>,
    /// When it landed before, oldest first (`promote --reapply` lands a change set again).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_landings: Vec<u64>,
}

/// One step of a session promoted in steps: the delta from the previous step's tree to its result
/// then. A step has landed exactly when its journal entry exists (the only "last promoted").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Step {
    /// 1 for the session's first promote, then 2, 3, …
    pub number: u64,
    /// The session's `created_at_ms`: a session bound again under the same id starts over.
    pub session_created_at_ms: u64,
    /// The tree the delta starts from: the session's base tree, or the previous step's result.
    pub from_tree: TreeId,
    /// The session's snapshot this step brought into the source.
    pub result_tree: TreeId,
    /// The isolation's HEAD at the snapshot (branch mode replays the commits after it next).
    pub isolation_head: Option<CommitId>,
    /// The source's HEAD once the step landed (branch mode moves it).
    pub head_after: Option<CommitId>,
    /// How many files the step's patch touches.
    #[serde(default)]
    pub files_changed: u64,
    /// Branch mode: the last commit of the replayed chain (its tree is this step's result
    /// without carried WIP), which the next step's commits are rebuilt on.
    #[serde(default)]
    pub chain_tip: Option<CommitId>,
    /// A nested change set's step: its repository's path in the source (counted apart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nested: Option<crate::base::paths::RepoPath>,
}

/// How a run's command ended, and what it ran (`run-exits/<id>/<run>.json`); older records have
/// only the first three fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RunExit {
    /// Its exit code (none when a signal ended it).
    pub exit_code: Option<i32>,
    /// The signal that ended it.
    pub signal: Option<i32>,
    /// Whether `--timeout` ended it.
    pub timed_out: bool,
    /// The run's terminal state.
    #[serde(default)]
    pub state: Option<RunState>,
    /// What it ran, where, and when.
    #[serde(flatten)]
    pub ran: Ran,
    /// The sandbox settings it ran with.
    #[serde(default)]
    pub sandbox: Option<RunSandbox>,
    /// What it could reach of the network, and what the proxy refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::store::network_report::NetworkReport>,
}

/// What `show` can read of a live run: its published ports (`live/<session>.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveRun {
    /// The run's id.
    pub run_id: String,
    /// Its published ports.
    pub published: Vec<crate::store::network_report::Published>,
}

/// The live-run file of a run with published ports, removed when dropped.
#[derive(Debug)]
pub(crate) struct LiveRunFile {
    path: PathBuf,
}

impl LiveRunFile {
    /// Writes the file for a run that publishes ports (`None` for one that publishes none).
    pub(crate) fn write(
        store: &Store,
        id: &SessionId,
        run_id: &RunId,
        published: &[crate::store::network_report::Published],
    ) -> Result<Option<LiveRunFile>> {
        if published.is_empty() {
            return Ok(None);
        }
        let path = store.live_run_path(id);
        let live = LiveRun {
            run_id: run_id.to_string(),
            published: published.to_vec(),
        };
        let bytes = serde_json::to_vec(&live).map_err(|e| Error::internal(e.to_string()))?;
        crate::base::fsutil::write_atomic(&path, &bytes)?;
        Ok(Some(LiveRunFile { path }))
    }
}

impl Drop for LiveRunFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// What a run ran, where and when, as its exit record keeps it (`None` in old records, captures).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ran {
    /// The command and its arguments, exactly.
    #[serde(default)]
    pub argv: Option<crate::base::argv::Argv>,
    /// The directory it started in, relative to the isolation's root (`.` for the root).
    #[serde(default, with = "crate::base::paths::fs_path_opt")]
    pub cwd: Option<PathBuf>,
    /// The name of the profile it ran under (`run --profile`); `None` without one.
    #[serde(default)]
    pub profile: Option<String>,
    /// `--timeout`, in milliseconds.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// When the command was started, in milliseconds since the epoch.
    #[serde(default)]
    pub started_at_ms: Option<u64>,
    /// When it had ended, in milliseconds since the epoch.
    #[serde(default)]
    pub ended_at_ms: Option<u64>,
}

/// The sandbox settings a run asked for and ran with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunSandbox {
    /// Whether it ran sandboxed (`false`: `--no-sandbox`).
    pub enabled: bool,
    /// Whether it could reach the network.
    pub network: crate::base::sandbox::NetworkAccess,
    /// What `--allow-write` added to the writable paths (canonical).
    #[serde(with = "crate::base::paths::fs_path_list")]
    pub allow_write: Vec<PathBuf>,
    /// What `--allow-read` made readable (canonical).
    #[serde(with = "crate::base::paths::fs_path_list")]
    pub allow_read: Vec<PathBuf>,
    /// The names of the environment variables it got, sorted (never their values).
    pub env_passed: Vec<String>,
    /// The profile it ran under and what that allowed; `None` without one.
    #[serde(default)]
    pub profile: Option<crate::base::sandbox::ProfileUsed>,
}

wire_enum! {
    /// How a journaled change set came to be in the source.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    pub enum Landing {
        /// A promote applied it.
        Applied = "applied",
        /// Found applied after a crash between apply and journal.
        Recovered = "recovered",
        /// The host promoted it by its own means (`promote --note`).
        Noted = "noted",
        /// `promote --reapply` applied it again after its earlier landing was undone.
        Reapplied = "reapplied",
    }
}

wire_enum! {
    /// How a change set lands in the source.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
    pub enum PromoteMode {
        /// As uncommitted changes, with `git apply`.
        #[default]
        Patch = "patch",
        /// As commits replayed onto the current branch.
        Branch = "branch",
    }
}

/// An entry of the user-level registry, so that `--all` reaches every repository: one file per
/// (source, state dir) a session was bound from, so concurrent binds never race on a list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RegistryEntry {
    /// The source checkout.
    #[serde(with = "crate::base::paths::fs_path")]
    pub source: PathBuf,
    /// Its common git dir.
    #[serde(with = "crate::base::paths::fs_path")]
    pub common_dir: PathBuf,
    /// The state dir its sessions are recorded in.
    #[serde(with = "crate::base::paths::fs_path")]
    pub state_dir: PathBuf,
}

/// The per-user data directory (`$XDG_DATA_HOME/a3s-iso` on Linux).
pub(crate) fn user_data_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "a3s-iso").map(|d| d.data_dir().to_path_buf())
}

/// The per-user directory that holds a source's isolations when its parent is not writable.
pub(crate) fn user_isolations_dir(source: &Path) -> Option<PathBuf> {
    user_data_dir().map(|d| d.join("isolations").join(path_key(&[source])))
}

fn registry_dir() -> Option<PathBuf> {
    user_data_dir().map(|d| d.join("sources"))
}

/// Adds a (source, state dir) to the user-level registry, unless it is there already.
pub(crate) fn register_source(entry: &RegistryEntry) -> Result<()> {
    let Some(dir) = registry_dir() else {
        return Ok(());
    };
    let file = dir.join(format!(
        "{}.json",
        path_key(&[&entry.source, &entry.state_dir])
    ));
    if read_json::<RegistryEntry>(&file).ok().flatten().as_ref() == Some(entry) {
        return Ok(());
    }
    write_record_atomic(&file, REGISTRY_SCHEMA, entry)
}

/// Every registered (source, state dir), sorted by source.
pub(crate) fn registered_sources() -> Result<Vec<RegistryEntry>> {
    Ok(registry_files()?.into_iter().map(|(_, e)| e).collect())
}

/// Every registry file that can be read, with what it records, sorted by source.
pub(crate) fn registry_files() -> Result<Vec<(PathBuf, RegistryEntry)>> {
    let Some(dir) = registry_dir() else {
        return Ok(Vec::new());
    };
    let mut out: Vec<(PathBuf, RegistryEntry)> = entries_of(&dir)?
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".json"))
        .filter_map(|entry| Some((entry.path(), read_json(&entry.path()).ok()??)))
        .collect();
    out.sort_by(|a, b| a.1.source.cmp(&b.1.source));
    Ok(out)
}

/// The entries of the directory `dir`; none when there is no such directory.
fn entries_of(dir: &Path) -> Result<impl Iterator<Item = std::io::Result<std::fs::DirEntry>>> {
    match std::fs::read_dir(dir) {
        Ok(entries) => Ok(Some(entries).into_iter().flatten()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None.into_iter().flatten()),
        Err(e) => Err(Error::io(format!("cannot read {}", dir.display()), e)),
    }
}

/// The record of each of `names` that `load` finds, in order; one it cannot read as `name: why`.
fn each_record<T>(
    names: Vec<String>,
    load: impl Fn(&str) -> std::result::Result<Option<T>, String>,
) -> Vec<std::result::Result<T, String>> {
    names
        .into_iter()
        .filter_map(|name| load(&name).map_err(|e| format!("{name}: {e}")).transpose())
        .collect()
}

/// The names that are ids of this kind (a file a3s-iso did not write may be named anything).
fn checked<T: TryFrom<String>>(names: Vec<String>) -> Vec<T> {
    names
        .into_iter()
        .filter_map(|n| T::try_from(n).ok())
        .collect()
}
