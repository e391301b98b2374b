//! What a command opens before it acts: the source, its store, the session `-s` names.
//! May call: base, git, store.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::base::warning::Warning;
use std::time::Duration;

use crate::base::error::{Error, NoSession, Result};
use crate::base::ids::SessionId;
use crate::git::Git;
use crate::git::repo::Repo;
use crate::store::state::{SessionRecord, SessionState, Store};

/// How long a command waits for the repository lock unless `--lock-timeout` says otherwise.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(60);

/// What a command was started with: git, where, which state store, how patiently.
#[derive(Debug, Clone)]
pub struct Context {
    /// The git every call goes through.
    pub git: Git,
    /// `-C/--repo`, else the current directory.
    pub start_dir: PathBuf,
    /// `--state-dir` / `A3S_ISO_STATE_DIR`.
    pub state_dir: Option<PathBuf>,
    /// How long to wait for the repository lock (`--lock-timeout`).
    pub lock_timeout: Duration,
    /// What recovery did under the lock, for the command to report.
    notices: Arc<Mutex<Vec<Warning>>>,
    /// Whether recovery leaves interrupted binds to the command (`sweep`, which reports them).
    judges_claims: bool,
    /// The sessions the command may act on when something narrower than the user drives it.
    scope: Option<Arc<SessionScope>>,
}

/// The sessions an agent's front end (the MCP server) may see and act on: those it bound and
/// those the user named when starting it. Shared by its calls, which add what they bind.
#[derive(Debug)]
pub struct SessionScope {
    ids: Mutex<std::collections::BTreeSet<String>>,
    /// What acts within the scope, as a refusal names it (`MCP server`).
    pub caller: String,
    /// How the user grants more, as a refusal's hint says it.
    pub grant: String,
}

impl SessionScope {
    /// A scope holding `ids`.
    pub fn new(ids: impl IntoIterator<Item = String>, caller: &str, grant: &str) -> SessionScope {
        SessionScope {
            ids: Mutex::new(ids.into_iter().collect()),
            caller: caller.to_string(),
            grant: grant.to_string(),
        }
    }

    fn ids(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeSet<String>> {
        self.ids.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a session (one the front end bound).
    pub fn admit(&self, id: &str) {
        self.ids().insert(id.to_string());
    }

    /// Whether `id` is in the scope.
    pub fn contains(&self, id: &str) -> bool {
        self.ids().contains(id)
    }

    /// The refusal of `id`.
    pub fn refusal(&self, id: &str) -> Error {
        Error::SessionNotGranted {
            reason: crate::base::error::NotGranted::OutsideScope {
                session_id: id.to_string(),
                caller: self.caller.clone(),
                grant: self.grant.replace("{id}", id),
            },
        }
    }
}

/// The source a command works on, its store, and the session it was started in, if any.
#[derive(Debug, Clone)]
pub struct Located {
    /// The source (for a command started inside an isolation, that session's source).
    pub repo: Repo,
    /// The state store of the source.
    pub store: Store,
    /// The session whose isolation the command was started in.
    pub inside: Option<SessionRecord>,
    /// Operations left unfinished when the repository was located (another process held the
    /// lock): a command reports them.
    pub interrupted: Vec<crate::base::interrupted::Interrupted>,
}

impl Located {
    /// A located source with nothing known to be unfinished.
    pub(crate) fn new(repo: Repo, store: Store, inside: Option<SessionRecord>) -> Located {
        Located {
            repo,
            store,
            inside,
            interrupted: Vec::new(),
        }
    }

    /// Whether a session record is of this repository: a state dir shared by several (one
    /// `--state-dir` for a harness) holds each one's sessions.
    pub(crate) fn owns(&self, record: &SessionRecord) -> bool {
        let canonical = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or(p.to_path_buf());
        canonical(&record.common_dir) == canonical(&self.repo.common_dir)
    }
}

impl Context {
    /// A context with the default lock timeout.
    pub fn new(git: Git, start_dir: PathBuf, state_dir: Option<PathBuf>) -> Context {
        Context {
            git,
            start_dir,
            state_dir,
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            notices: Arc::default(),
            judges_claims: false,
            scope: None,
        }
    }

    /// The same context acting only on the sessions of `scope`.
    pub fn scoped(&self, scope: Arc<SessionScope>) -> Context {
        Context {
            scope: Some(scope),
            ..self.clone()
        }
    }

    /// Adds a session the command made to its scope, if it has one.
    pub(crate) fn admit(&self, id: &SessionId) {
        if let Some(scope) = &self.scope {
            scope.admit(id);
        }
    }

    /// Whether the command may act on session `id` (always, without a scope).
    pub(crate) fn may_act_on(&self, id: &str) -> bool {
        self.scope.as_ref().is_none_or(|scope| scope.contains(id))
    }

    /// `session_not_granted` for a promoted change set whose session is outside the command's
    /// scope (or unknown: a scoped caller reaches only its own sessions' landings).
    pub(crate) fn require_granted_digest(&self, located: &Located, digest: &str) -> Result<()> {
        if self.scope.is_none() {
            return Ok(());
        }
        let session = located
            .store
            .journal_entry(digest)?
            .and_then(|entry| entry.session_id);
        self.require_granted(session.as_deref().unwrap_or(digest))
    }

    /// The session of the isolation the command was started in, if any.
    pub fn session_inside(&self) -> Option<String> {
        self.find_source()
            .ok()?
            .inside
            .map(|record| record.session_id.into())
    }

    /// Whether the command acts within a scope narrower than the store.
    pub(crate) fn is_scoped(&self) -> bool {
        self.scope.is_some()
    }

    /// `session_not_granted` for `id` when it is outside the command's scope.
    pub(crate) fn require_granted(&self, id: &str) -> Result<()> {
        match &self.scope {
            Some(scope) if !scope.contains(id) => Err(scope.refusal(id)),
            _ => Ok(()),
        }
    }

    /// The same context for a command that judges interrupted binds itself (`sweep`).
    pub(crate) fn judging_claims(&self) -> Context {
        Context {
            judges_claims: true,
            ..self.clone()
        }
    }

    /// Whether recovery leaves interrupted binds to the command.
    pub(crate) fn judges_claims(&self) -> bool {
        self.judges_claims
    }

    /// The same context started in `dir` instead (its notices go where this one's go).
    pub(crate) fn started_in(&self, dir: PathBuf) -> Context {
        Context {
            start_dir: dir,
            ..self.clone()
        }
    }

    pub(crate) fn push_notices(&self, notices: Vec<Warning>) {
        self.notices
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(notices);
    }

    /// The command's source (started inside an isolation: that session's source), as it is:
    /// `recovery::locate` finishes what a crash left in its store first.
    pub(crate) fn find_source(&self) -> Result<Located> {
        if let Some(located) = self.locate_isolation() {
            return Ok(located);
        }
        let repo = Repo::discover(&self.git, &self.start_dir)?;
        let store = Store::new(&repo.common_dir, self.state_dir.as_deref());
        // Only a linked worktree (a `.git` file, not a directory) can be an isolation: in the
        // main checkout the records need not be read at all.
        let inside = if repo.toplevel.join(".git").is_file() {
            store
                .sessions()?
                .into_iter()
                .flatten()
                .find(|s| s.state.has_tree() && s.worktree.as_deref() == Some(&repo.toplevel))
        } else {
            None
        };
        let repo = match &inside {
            Some(session) => Repo::new(&self.git, session.source.clone(), repo.common_dir),
            None => repo,
        };
        Ok(Located::new(repo, store, inside))
    }

    /// Started inside an isolation: its session, found by path in the stores a3s-iso knows itself
    /// (`--state-dir`, else the user-level registry), never through git's discovery there: the
    /// isolation's `.git` file and admin dir are the command's to rewrite, so they could name a
    /// repository and store of its choosing. Where no store knows the path, git's discovery
    /// decides, as for any checkout.
    fn locate_isolation(&self) -> Option<Located> {
        let start = std::fs::canonicalize(&self.start_dir).ok()?;
        let named = start
            .components()
            .any(|c| crate::base::names::looks_like_isolation(c.as_os_str()));
        if !named {
            return None;
        }
        // (state dir, common dir when known): a bare `--state-dir` learns its repository from
        // the record it holds, and only then whether it is a tenant.
        let stores: Vec<(PathBuf, Option<PathBuf>)> = match &self.state_dir {
            Some(dir) => vec![(dir.clone(), None)],
            None => crate::store::state::registered_sources()
                .unwrap_or_default()
                .into_iter()
                .map(|entry| (entry.state_dir, Some(entry.common_dir)))
                .collect(),
        };
        stores.into_iter().find_map(|(dir, common)| {
            let reader = Store::new(common.as_deref().unwrap_or(&dir), Some(&dir));
            let session = reader.sessions().ok()?.into_iter().flatten().find(|s| {
                s.state.has_tree()
                    && s.worktree
                        .as_deref()
                        .is_some_and(|tree| start.starts_with(tree))
            })?;
            let repo = Repo::new(
                &self.git,
                session.source.clone(),
                session.common_dir.clone(),
            );
            let store = Store::new(&repo.common_dir, Some(&dir));
            Some(Located::new(repo, store, Some(session)))
        })
    }

    /// What recovery under the lock did since the last call, each handed out once.
    pub fn take_notices(&self) -> Vec<Warning> {
        std::mem::take(&mut *self.notices.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The session a command is about: `-s ID`; else the isolation it was started in; else the
    /// source's only live session. A swept one is `session_not_found` saying where its work is.
    pub(crate) fn resolve_session(
        &self,
        located: &Located,
        explicit: Option<&str>,
    ) -> Result<SessionRecord> {
        let record = self.resolve_record(located, explicit)?;
        match record.swept_summary() {
            Some(summary) => Err(Error::SessionSwept {
                session_id: record.session_id.into(),
                summary,
            }),
            None => Ok(record),
        }
    }

    /// Like [`Context::resolve_session`], a swept session included (for `discard`).
    pub(crate) fn resolve_record(
        &self,
        located: &Located,
        explicit: Option<&str>,
    ) -> Result<SessionRecord> {
        if let Some(id) = explicit {
            let id = &SessionId::new(id)?;
            // Outside the scope an id is refused whether or not it exists.
            self.require_granted(id)?;
            return match located.store.load_session(id)? {
                Some(record) if located.owns(&record) => Ok(record),
                Some(record) => Err(Error::SessionNotFound {
                    reason: NoSession::OtherRepository {
                        session_id: id.to_string(),
                        store: located.store.dir().to_path_buf(),
                        repository: record.source,
                    },
                    candidates: Vec::new(),
                }),
                None => Err(not_found(self, located, id)),
            };
        }
        if let Some(session) = &located.inside {
            self.require_granted(&session.session_id)?;
            return Ok(session.clone());
        }
        let mut live: Vec<SessionRecord> = located
            .store
            .sessions()?
            .into_iter()
            .flatten()
            .filter(|s| {
                !matches!(s.state, SessionState::Discarded | SessionState::Swept)
                    && s.source == located.repo.toplevel
                    && self.may_act_on(&s.session_id)
            })
            .collect();
        let source_path = located.repo.toplevel.clone();
        let reason = match live.len() {
            0 => NoSession::NoneLive { source_path },
            1 => return Ok(live.remove(0)),
            count => NoSession::SeveralLive { source_path, count },
        };
        Err(Error::SessionNotFound {
            reason,
            candidates: live.into_iter().map(|s| s.session_id.into()).collect(),
        })
    }
}

/// `session_not_found` for an id the store does not have, with the ids close to it if any.
pub(crate) fn not_found(ctx: &Context, located: &Located, id: &str) -> Error {
    let known: Vec<String> = located
        .store
        .sessions()
        .unwrap_or_default()
        .into_iter()
        .flatten()
        .map(|s| s.session_id.into())
        .filter(|s: &String| ctx.may_act_on(s))
        .collect();
    let candidates = crate::base::ids::near_misses(id, known.iter().map(String::as_str));
    let (session_id, store) = (id.to_string(), located.store.dir().to_path_buf());
    if candidates.is_empty() {
        Error::SessionNotFound {
            reason: NoSession::Unknown { session_id, store },
            candidates,
        }
    } else {
        Error::SessionNearMiss {
            session_id,
            store,
            candidates,
        }
    }
}
