//! The one error type of a3s-iso, with stable codes and the one table from code to exit status.

use std::path::PathBuf;

use serde::Serialize;

use crate::base::wire::wire_enum;

/// A git invocation that failed: what ran, how it ended, what it said.
#[derive(Debug, Clone, Serialize)]
pub struct GitFailure {
    /// git's arguments (without the fixed preamble a3s-iso adds to every call).
    pub args: Vec<String>,
    /// Its exit code; `None` when a signal ended it.
    pub exit_code: Option<i32>,
    /// What it said on stderr.
    pub stderr: String,
}

wire_enum! {
    /// Stable, snake_case error codes. Codes are only ever added, never renamed or removed.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
    pub enum ErrorCode {
        /// No repository, a bare one, an unborn HEAD, or no git.
        IsolationUnavailable = "isolation_unavailable",
        /// A session or run id that breaks the id rules.
        InvalidId = "invalid_id",
        /// No such session, or no single one to choose.
        SessionNotFound = "session_not_found",
        /// The id is bound by another owner, in flight, or damaged.
        SessionExists = "session_exists",
        /// The source has local changes and no choice was made about them.
        DirtySource = "dirty_source",
        /// Something a3s-iso did not publish is at the isolation path.
        IsolationPathOccupied = "isolation_path_occupied",
        /// A writing command on a session with no isolation.
        ReadOnlySession = "read_only_session",
        /// A run id already holds different evidence.
        CaptureConflict = "capture_conflict",
        /// The patch is over the document limit.
        ChangeSetTooLarge = "change_set_too_large",
        /// A document breaks a rule of the format.
        ChangeSetInvalid = "change_set_invalid",
        /// A document cannot be read.
        ChangeSetUnavailable = "change_set_unavailable",
        /// The kernel cannot give the run its sandbox.
        SandboxUnavailable = "sandbox_unavailable",
        /// Another a3s-iso command held the repository lock too long.
        LockTimeout = "lock_timeout",
        /// A git call failed.
        GitFailed = "git_failed",
        /// Git is older than a3s-iso needs.
        GitTooOld = "git_too_old",
        /// A file-system operation failed.
        Io = "io",
        /// A bug in a3s-iso.
        Internal = "internal",
        /// The command line is wrong.
        Usage = "usage",
        /// A run holds the session's lease.
        SessionBusy = "session_busy",
        /// `command_not_found`: `run`'s command does not exist.
        CommandNotFound = "command_not_found",
        /// `command_not_executable`: `run`'s command cannot be executed.
        CommandNotExecutable = "command_not_executable",
        /// Branch mode needs a current branch in the source.
        DetachedSource = "detached_source",
        /// An argument names something that cannot be used.
        InvalidInput = "invalid_input",
        /// A remote has no change set with the digest asked for.
        ChangeSetNotFound = "change_set_not_found",
        /// The session is bound but its isolation is gone (removed by hand).
        IsolationMissing = "isolation_missing",
        /// A rebase of the session stopped at a conflict that is not resolved.
        SessionConflicted = "session_conflicted",
        /// A digest prefix matches more than one change set.
        DigestAmbiguous = "digest_ambiguous",
        /// The session is known but has no run by the id asked for.
        RunNotFound = "run_not_found",
        /// The run asked for has not ended (or not been captured) yet.
        ChangeSetPending = "change_set_pending",
        /// The repository's configuration file is not approved by this user.
        ConfigUntrusted = "config_untrusted",
        /// A setup command of the configuration failed after a bind.
        SetupFailed = "setup_failed",
        /// The session is not one the caller (an MCP server, a hook) may act on.
        SessionNotGranted = "session_not_granted",
        /// A remote did not answer (a path that is not a repository, a host not reached).
        RemoteUnreachable = "remote_unreachable",
        /// A server refused a push for a reason other than a race (a protected branch, a hook).
        PushRefused = "push_refused",
        /// Every push of a landing lost its race to another machine's, up to the bound.
        PushContended = "push_contended",
    }
}

impl ErrorCode {
    /// The one table from error to exit status (see the README's contract).
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorCode::Usage => 2,
            ErrorCode::CaptureConflict | ErrorCode::SessionConflicted => 3,
            ErrorCode::IsolationUnavailable
            | ErrorCode::SandboxUnavailable
            | ErrorCode::IsolationMissing
            | ErrorCode::RemoteUnreachable => 4,
            ErrorCode::InvalidId
            | ErrorCode::ChangeSetInvalid
            | ErrorCode::InvalidInput
            | ErrorCode::DigestAmbiguous
            | ErrorCode::ConfigUntrusted => 5,
            ErrorCode::LockTimeout | ErrorCode::SessionBusy | ErrorCode::PushContended => 6,
            ErrorCode::ChangeSetPending => 75,
            ErrorCode::CommandNotExecutable => 126,
            ErrorCode::CommandNotFound => 127,
            // Every other code is a plain failure (the table is pinned by a test).
            _ => 1,
        }
    }
}

wire_enum! {
    /// The rule of the change-set format a document breaks (`change_set_invalid`, `verify`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
    pub enum ChangeSetRule {
        /// The document is not JSON.
        Json = "json",
        /// A field (or the document) has the wrong JSON type.
        Type = "type",
        /// The document is larger than the largest one accepted.
        DocumentSize = "document_size",
        /// An object holds a key twice.
        DuplicateKey = "duplicate_key",
        /// A field the format does not have.
        UnknownField = "unknown_field",
        /// A field the format requires is missing.
        MissingField = "missing_field",
        /// A field whose value the format fixes has another.
        ExactString = "exact_string",
        /// Not `sha256:` and 64 lowercase hex digits.
        Sha256Format = "sha256_format",
        /// A blank, too long or multi-line id.
        IdFormat = "id_format",
        /// Not `git-tree:` and 40 or 64 lowercase hex digits.
        TreeFormat = "tree_format",
        /// Not one of the run states.
        State = "state",
        /// `observed_at_ms` out of range.
        ObservedAt = "observed_at",
        /// The patch is larger than a document carries.
        PatchSize = "patch_size",
        /// `patch_base64` is not base64.
        Base64 = "base64",
        /// `patch_bytes` is not the decoded patch's size.
        PatchBytes = "patch_bytes",
        /// `patch_digest` is not the decoded patch's digest.
        Digest = "digest",
        /// The patch is not one git can read (garbage, cut short, a broken binary literal).
        Patch = "patch",
        /// A detached document (a remote change set's) carries its patch inline.
        DetachedPatch = "detached_patch",
        /// A remote change set's ref names another digest than its document's.
        DigestName = "digest_name",
        /// A remote change set's commit is not the one its document makes.
        Commit = "commit",
        /// A remote change set's commit tree does not have the carrier's layout.
        Layout = "layout",
        /// A remote change set carries another base or result tree than its document names.
        CarriedTree = "carried_tree",
        /// A change-set request's identity differs from the one the run's document carries.
        IdentityMismatch = "identity_mismatch",
    }
}

/// Why there is no isolation to have (`isolation_unavailable`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// The directory given is not one.
    #[error("{} is not a directory", dir.display())]
    NotADirectory {
        /// The directory given.
        dir: PathBuf,
    },
    /// A bare repository: no checkout.
    #[error("{} is a bare repository: it has no checkout to isolate", dir.display())]
    Bare {
        /// The directory given.
        dir: PathBuf,
    },
    /// A directory inside a git directory (`.git` or below).
    #[error("{} is inside a git directory, not a working tree", dir.display())]
    InsideGitDir {
        /// The directory given.
        dir: PathBuf,
    },
    /// No repository at all.
    #[error("{} is not in a git repository", dir.display())]
    NotARepository {
        /// The directory given.
        dir: PathBuf,
    },
    /// A repository with no commit yet.
    #[error("{} has no commit yet (unborn HEAD)", toplevel.display())]
    UnbornHead {
        /// The repository's top level.
        toplevel: PathBuf,
    },
    /// No git on PATH.
    #[error("git was not found on PATH: {error}")]
    NoGit {
        /// Why the search failed.
        error: String,
    },
    /// Nowhere writable to put an isolation.
    #[error("{} is not writable and there is no per-user data directory", parent.display())]
    NoBaseDir {
        /// The source's parent.
        parent: PathBuf,
    },
    /// The session was discarded.
    #[error("session {session_id} was discarded: its isolation is gone")]
    Discarded {
        /// The session.
        session_id: String,
    },
    /// The session was bound `--read-only`.
    #[error("session {session_id} is read-only: it has no isolation")]
    ReadOnly {
        /// The session.
        session_id: String,
    },
    /// The session's isolation is no longer on disk.
    #[error("the isolation of session {session_id} is gone: {}", tree.display())]
    Gone {
        /// The session.
        session_id: String,
        /// Where its isolation was.
        tree: PathBuf,
    },
}

/// Why a session id cannot be bound (`session_exists`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Taken {
    /// The session was swept: a new binding would shadow its swept snapshot.
    #[error("{summary}")]
    Swept {
        /// The session.
        session_id: String,
        /// When it was swept and where its last state is.
        summary: String,
    },
    /// The id is another repository's session in a shared state dir.
    #[error("session {session_id:?} in {} belongs to {}", store.display(), repository.display())]
    OtherRepository {
        /// The session.
        session_id: String,
        /// The state dir.
        store: PathBuf,
        /// The repository whose session it is.
        repository: PathBuf,
    },
    /// Another bind of the id is still running.
    #[error("a bind of session {session_id:?} is in progress ({process})")]
    BindInProgress {
        /// The session.
        session_id: String,
        /// The process binding it.
        process: String,
    },
    /// The session is bound but its isolation is missing or damaged.
    #[error("session {session_id:?} is bound but its isolation {} is missing or damaged", worktree.as_deref().map(|p| p.display().to_string()).unwrap_or_default())]
    Damaged {
        /// The session.
        session_id: String,
        /// Its isolation, as recorded.
        worktree: Option<PathBuf>,
    },
    /// A hook binds only the sessions it created for the same process, not this one.
    #[error("session {session_id:?} was not created by a hook for this process")]
    NotCreatedHere {
        /// The session.
        session_id: String,
    },
    /// Another owner, which may still be running, holds the session.
    #[error("session {session_id:?} is bound by another owner ({owner}) that may still be running")]
    OtherOwner {
        /// The session.
        session_id: String,
        /// The owner, for people.
        owner: String,
        /// The owner's process id.
        pid: u32,
    },
}

/// Why a caller may not act on a session (`session_not_granted`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotGranted {
    /// Outside the sessions the caller may act on; whether the id exists is not said.
    #[error("session {session_id:?} is not one of the sessions this {caller} may act on")]
    OutsideScope {
        /// The id asked for.
        session_id: String,
        /// What asked (`MCP server`).
        caller: String,
        /// How the user grants it.
        grant: String,
    },
    /// The session was bound by a person or a harness, not by a hook.
    #[error("{} is the isolation of session {session_id:?}, which no Claude Code hook created: a hook removes only the isolations hooks created", path.display())]
    NotAHooks {
        /// The worktree the payload named.
        path: PathBuf,
        /// The session whose isolation it is.
        session_id: String,
    },
    /// A hook created it for another Claude Code, which still runs.
    #[error("{} is the isolation of session {session_id:?}, which a hook created for another Claude Code ({process}) that is still running", path.display())]
    AnotherClaude {
        /// The worktree the payload named.
        path: PathBuf,
        /// The session whose isolation it is.
        session_id: String,
        /// The Claude Code it was created for, for people.
        process: String,
    },
    /// The isolation is another repository's than the one the payload's `cwd` names.
    #[error("{} is the isolation of session {session_id:?} of {}, not of {} (the repository of the payload's cwd)", path.display(), repository.display(), cwd_repository.display())]
    OtherRepository {
        /// The worktree the payload named.
        path: PathBuf,
        /// The session whose isolation it is.
        session_id: String,
        /// The repository whose session it is.
        repository: PathBuf,
        /// The repository the payload's `cwd` names.
        cwd_repository: PathBuf,
    },
}

/// What was looked for when no session was found (`session_not_found`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoSession {
    /// The store has no session by the id given.
    #[error("no session {session_id:?} in {}", store.display())]
    Unknown {
        /// The id given.
        session_id: String,
        /// The state dir looked in.
        store: PathBuf,
    },
    /// The id is another repository's session in a shared state dir.
    #[error("session {session_id:?} in {} belongs to {}, not to this repository", store.display(), repository.display())]
    OtherRepository {
        /// The id given.
        session_id: String,
        /// The state dir.
        store: PathBuf,
        /// The repository whose session it is.
        repository: PathBuf,
    },
    /// No id was given and the source has no live session.
    #[error("{} has no live session", source_path.display())]
    NoneLive {
        /// The source.
        source_path: PathBuf,
    },
    /// No id was given and the source has several live sessions.
    #[error("{} has {count} live sessions; name one with -s", source_path.display())]
    SeveralLive {
        /// The source.
        source_path: PathBuf,
        /// How many.
        count: usize,
    },
    /// The session has no healthy isolation to retain.
    #[error("session {session_id:?} has no isolation to retain")]
    NoIsolation {
        /// The session.
        session_id: String,
    },
}

/// What a run id already holds (`capture_conflict`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Held {
    /// Evidence of a run: a run is never redone under its id.
    #[error("already holds evidence; runs are never redone under the same id")]
    Evidence,
    /// A pinned result tree other than the one captured now.
    #[error("was captured with result tree {pinned}{}", now.as_deref().map(|now| format!("; it is now {now}")).unwrap_or_default())]
    ResultTree {
        /// The tree pinned.
        pinned: String,
        /// The tree captured now, where the message names it.
        now: Option<String>,
    },
}

/// What holds a session's lease (`session_busy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Busy {
    /// Another run, when a run asks for the lease.
    #[error("another run holds its lease")]
    AnotherRun,
    /// A run, when a command that changes the tree asks for it.
    #[error("a run is in progress in its isolation")]
    RunInProgress,
    /// Another command moving or removing its tree (a landing's cleanup, a discard).
    #[error("another command is moving or removing its tree")]
    TreeOperation,
    /// Another command that is not a run: a rebase, a promote, or a land queue that
    /// snapshotted the session to land it next.
    #[error("another command (a rebase, a promote, or a land queue landing it) holds its lease")]
    AnotherCommand,
}

/// Why there is no change-set document to read or make (`change_set_unavailable`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoDocument {
    /// A document file that cannot be opened.
    #[error("cannot read {}: {error}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The operating system's error.
        error: String,
    },
    /// No isolation (no repository, ...) to answer from.
    #[error("{0}")]
    NoSource(Unavailable),
    /// A discarded session has nothing to capture.
    #[error("session {session_id:?} has no isolation to capture (discarded)")]
    Discarded {
        /// The session.
        session_id: String,
    },
    /// The isolation's HEAD is not a regular file.
    #[error("session {session_id:?}'s isolation has no readable HEAD ({} is not a regular file)", head.as_deref().map(|p| p.display().to_string()).unwrap_or_default())]
    NoHeadFile {
        /// The session.
        session_id: String,
        /// Where its HEAD would be.
        head: Option<PathBuf>,
    },
    /// The isolation's HEAD names no commit of the repository.
    #[error("the isolation's HEAD ({}) {problem}", path.display())]
    Head {
        /// The HEAD file.
        path: PathBuf,
        /// What is wrong with it.
        problem: HeadProblem,
    },
    /// The run's stored document does not verify.
    #[error("the stored document of run {run_id:?} of session {session_id:?} is damaged: {error}")]
    Damaged {
        /// The session.
        session_id: String,
        /// The run.
        run_id: String,
        /// The rule it breaks.
        error: String,
    },
    /// The run has no document: its patch is too large, or its capture did not finish.
    #[error("run {run_id:?} of session {session_id:?} has no change-set document: its patch is over the {limit}-byte bound of a document, or its capture did not finish{}", pinned_at.as_deref().map(|r| format!("; its result tree is pinned at {r}")).unwrap_or_default())]
    NotRecorded {
        /// The session.
        session_id: String,
        /// The run.
        run_id: String,
        /// The largest patch a document carries.
        limit: u64,
        /// The ref its result tree is pinned at, if it is.
        pinned_at: Option<String>,
    },
    /// The run has no stored document to push.
    #[error(
        "run {run_id:?} of session {session_id:?} has no stored change-set document (a patch over 4 MiB has none: push -s {session_id} pushes the session's change set)"
    )]
    NotStored {
        /// The session.
        session_id: String,
        /// The run.
        run_id: String,
    },
    /// A journaled change set whose patch and trees are both gone.
    #[error(
        "cannot land {digest} again: its patch is no longer in the artifacts and no trees it was made from are recorded"
    )]
    NotReapplicable {
        /// The change set's digest.
        digest: String,
    },
    /// A promoted change set whose patch is not in the artifacts.
    #[error("cannot show {digest}: its patch is not in the artifacts ({} is missing; promote --artifacts DIR keeps it where DIR is)", path.display())]
    PatchMissing {
        /// The change set's digest.
        digest: String,
        /// Where its patch would be.
        path: PathBuf,
    },
    /// A promoted change set whose patch in the artifacts was changed.
    #[error("cannot show {digest}: {} has been changed: its bytes hash to {found}", path.display())]
    PatchChanged {
        /// The change set's digest.
        digest: String,
        /// The patch file.
        path: PathBuf,
        /// The digest of its bytes.
        found: String,
    },
}

/// What is wrong with an isolation's HEAD file ([`NoDocument::Head`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeadProblem {
    /// It cannot be read as a small regular file.
    #[error("cannot be read: {0}")]
    Unreadable(String),
    /// It is not UTF-8.
    #[error("is not text")]
    NotText,
    /// A symbolic ref outside the refs the repository shares.
    #[error("points at {0:?}, which is not a shared ref of the repository")]
    NotShared(String),
    /// A symbolic ref that does not exist.
    #[error("points at {0}, which does not exist")]
    NoSuchRef(String),
    /// Neither a full object id nor `ref: ...`.
    #[error("is neither a full commit id nor a symbolic ref")]
    Malformed,
    /// It names something that is not a commit.
    #[error("names {0}, which is not a commit of the repository")]
    NotACommit(String),
}

/// Where `run`'s program (or its interpreter) is on the host, in a directory the sandbox empties.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HiddenTool {
    /// The file it resolves to on the host (links followed).
    pub path: std::path::PathBuf,
    /// The directory the sandbox replaces with an empty one.
    pub under: std::path::PathBuf,
    /// The directory whose `--allow-read` lets it through: its installation's prefix.
    pub allow_read: std::path::PathBuf,
}

/// Every failure of a3s-iso; each variant has one [`ErrorCode`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The source cannot be isolated (no repository, a bare one, an unborn HEAD, no git).
    #[error("{reason}")]
    IsolationUnavailable {
        /// What is wrong.
        reason: Unavailable,
    },
    /// An id that breaks the id rules; nothing was written.
    #[error("invalid id {id:?}: {reason}")]
    InvalidId {
        /// The id given.
        id: String,
        /// Which rule it breaks.
        reason: String,
    },
    /// No such session, or no single one to choose.
    #[error("{reason}")]
    SessionNotFound {
        /// What was looked for, and why it was not found.
        reason: NoSession,
        /// The live sessions one could name with `-s`.
        candidates: Vec<String>,
    },
    /// No session by the id given, but the store has ids close to it (`session_not_found`).
    #[error("no session {session_id:?} in {}", store.display())]
    SessionNearMiss {
        /// The id given.
        session_id: String,
        /// The state dir looked in.
        store: PathBuf,
        /// The ids within two edits of the one given, closest first.
        candidates: Vec<String>,
    },
    /// A sweep reclaimed the session's isolation (`session_not_found`); `bind --resume` brings
    /// its work back.
    #[error("{summary}")]
    SessionSwept {
        /// The session.
        session_id: String,
        /// When it was swept and where its last state is.
        summary: String,
    },
    /// The session id is taken (another owner, a bind in flight, a damaged isolation).
    #[error("{reason}")]
    SessionExists {
        /// Who has it, or what is wrong with it.
        reason: Taken,
    },
    /// The source has local changes and the caller did not say what becomes of them.
    #[error("the source has local changes that the isolation would not contain: {}{}", paths.join(", "), if *more > 0 { format!(" and {more} more") } else { String::new() })]
    DirtySource {
        /// The first changed paths.
        paths: Vec<String>,
        /// How many more there are.
        more: usize,
    },
    /// Something a3s-iso did not publish is at the isolation path; nothing was deleted.
    #[error("{} is occupied by {found} that a3s-iso did not publish", path.display())]
    IsolationPathOccupied {
        /// The isolation path.
        path: PathBuf,
        /// What is there ("a symbolic link", "a file", ...).
        found: String,
    },
    /// A writing command on a session bound `--read-only`.
    #[error("session {session_id:?} is read-only: it has no isolation to write to")]
    ReadOnlySession {
        /// The session.
        session_id: String,
    },
    /// A run id that already holds other (or any, for `run`) evidence.
    #[error("run {run_id:?} of session {session_id:?} {held}")]
    CaptureConflict {
        /// The session.
        session_id: String,
        /// The run.
        run_id: String,
        /// What the run id holds.
        held: Held,
    },
    /// A patch too large to travel as a document (its result tree is still pinned).
    #[error("the patch is {bytes} bytes, over the {limit}-byte limit of a change-set document")]
    ChangeSetTooLarge {
        /// The patch's size.
        bytes: u64,
        /// The largest patch a document carries.
        limit: u64,
    },
    /// A document that breaks a rule of the format.
    #[error("change set invalid ({rule}) at {field}: {detail}")]
    ChangeSetInvalid {
        /// The rule (`digest`, `unknown_field`, ...).
        rule: ChangeSetRule,
        /// The field it concerns.
        field: String,
        /// What is wrong.
        detail: String,
    },
    /// A change-set request that breaks a rule of its format, or whose identity is not its run's
    /// (`change_set_invalid`).
    #[error("change-set request invalid ({rule}) at {field}: {detail}")]
    RequestInvalid {
        /// The rule (`unknown_field`, `identity_mismatch`, ...).
        rule: ChangeSetRule,
        /// The field it concerns.
        field: String,
        /// What is wrong.
        detail: String,
    },
    /// A document that cannot be read.
    #[error("{reason}")]
    ChangeSetUnavailable {
        /// What could not be read, and why.
        reason: NoDocument,
    },
    /// The kernel cannot give the run its sandbox.
    #[error("{message}")]
    SandboxUnavailable {
        /// What is missing.
        message: String,
    },
    /// The repository lock stayed held past the lock timeout.
    #[error("the repository lock is held by {holder}")]
    LockTimeout {
        /// Who holds it, as the lock file says.
        holder: String,
    },
    /// A git call failed.
    #[error("git {} failed{}: {}", failure.args.join(" "), failure.exit_code.map(|c| format!(" with exit code {c}")).unwrap_or_default(), failure.stderr.trim().lines().next().unwrap_or("(no message)"))]
    GitFailed {
        /// What ran and what it said.
        failure: GitFailure,
    },
    /// A git call failed while it changed the user's checkout, which the intent kept lets the
    /// next command finish or put back: code `git_failed`, and what that next step is.
    #[error("{message}")]
    GitStoppedMidway {
        /// What ran and what it said.
        failure: GitFailure,
        /// What was left, and what the next command does about it.
        message: String,
    },
    /// git is older than a3s-iso needs.
    #[error("git {found} is too old; a3s-iso needs git {required} or newer")]
    GitTooOld {
        /// The version found.
        found: String,
        /// The oldest version that works.
        required: String,
    },
    /// A file-system operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What a3s-iso was doing.
        context: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A bug in a3s-iso.
    #[error("internal error: {message}")]
    Internal {
        /// What went wrong.
        message: String,
    },
    /// The command line is wrong.
    #[error("{message}")]
    Usage {
        /// What is wrong with it.
        message: String,
    },
    /// A run holds the session's lease.
    #[error("session {session_id:?} is busy: {holder}")]
    SessionBusy {
        /// The session.
        session_id: String,
        /// What holds it.
        holder: Busy,
    },
    /// `run`'s command does not exist.
    #[error("command not found: {program}")]
    CommandNotFound {
        /// The command.
        program: String,
        /// Where the program (or its `#!` interpreter) is on the host, if the sandbox hides it.
        hidden: Vec<HiddenTool>,
    },
    /// `run`'s command cannot be executed.
    #[error("command not executable: {program}: {reason}")]
    CommandNotExecutable {
        /// The command.
        program: String,
        /// Why it cannot run.
        reason: String,
    },
    /// Branch mode needs a current branch in the source.
    #[error("{} has no current branch (detached HEAD): branch mode replays commits onto a branch", source_path.display())]
    DetachedSource {
        /// The source checkout.
        source_path: PathBuf,
    },
    /// An argument, a file or a payload that cannot be used (e.g. a path that does not exist).
    #[error("{reason}")]
    InvalidInput {
        /// What is wrong with it.
        reason: crate::base::invalid::Invalid,
    },
    /// A session is bound but its isolation was removed outside a3s-iso.
    #[error("session {session_id:?} is bound but its isolation {} is missing (removed outside a3s-iso?)", worktree.as_deref().map(|p| p.display().to_string()).unwrap_or_default())]
    IsolationMissing {
        /// The session.
        session_id: String,
        /// Where its isolation was.
        worktree: Option<PathBuf>,
    },
    /// A remote holds no change set with the digest asked for.
    #[error("{remote} has no change set {digest} (no ref {reference})")]
    ChangeSetNotFound {
        /// The remote, as given.
        remote: String,
        /// The digest asked for.
        digest: String,
        /// The ref looked for there.
        reference: String,
    },
    /// The session's rebase stopped at a conflict: nothing that needs the session whole runs.
    #[error("session {session_id:?} is conflicted ({what}): {}", paths.join(", "))]
    SessionConflicted {
        /// The session.
        session_id: String,
        /// What is unresolved.
        what: String,
        /// The conflicting paths.
        paths: Vec<String>,
    },
    /// A document (not `-s`) names no session of the store (`session_not_found`).
    #[error("no session {session_id:?} in {}", store.display())]
    UnknownSession {
        /// The session asked for.
        session_id: String,
        /// The state dir looked in.
        store: PathBuf,
    },
    /// A known session without the run asked for.
    #[error("session {session_id:?} has no run {run_id:?}")]
    RunNotFound {
        /// The session.
        session_id: String,
        /// The run asked for.
        run_id: String,
    },
    /// The run asked for has not ended, or its change set is not recorded yet.
    #[error("run {run_id:?} of session {session_id:?} has not ended: {why}")]
    ChangeSetPending {
        /// The session.
        session_id: String,
        /// The run.
        run_id: String,
        /// What it is still doing.
        why: String,
    },
    /// A digest prefix that names more than one change set.
    #[error("{flag} {given} is ambiguous: {} change sets start with it", candidates.len())]
    DigestAmbiguous {
        /// The option it was given to.
        flag: String,
        /// The prefix as given.
        given: String,
        /// The full digests it matches.
        candidates: Vec<String>,
    },
    /// This user has not approved the repository's configuration file as it is; nothing was bound.
    #[error("{} {}: it can run commands and open the network", path.display(), if *changed { "changed since you trusted it" } else { "is not trusted by you" })]
    ConfigUntrusted {
        /// The file.
        path: PathBuf,
        /// It was trusted once, with other content.
        changed: bool,
    },
    /// A hook asked to act on a session it may not act on; nothing was done.
    #[error("{reason}")]
    SessionNotGranted {
        /// Whose session it is, and why the hook may not act on it.
        reason: NotGranted,
    },
    /// A remote did not answer; nothing was pushed there.
    #[error("remote {remote:?} cannot be reached: {detail}")]
    RemoteUnreachable {
        /// The remote, as given.
        remote: String,
        /// What git said.
        detail: String,
    },
    /// The server refused the push for a reason other than a race; nothing was retried.
    #[error("{remote} refused the push to {branch}: {message}")]
    PushRefused {
        /// The remote.
        remote: String,
        /// The branch.
        branch: String,
        /// What the server (its hook) said.
        message: String,
    },
    /// Every push of a landing found the branch moved by another push.
    #[error(
        "{remote}/{branch} moved under each of {attempts} pushes: another machine kept landing first"
    )]
    PushContended {
        /// The remote.
        remote: String,
        /// The branch.
        branch: String,
        /// The pushes attempted.
        attempts: u32,
    },
    /// A setup command failed after a bind; the isolation stays bound for inspection.
    #[error("setup command {command:?} of session {session_id:?} failed{}; its output is in {}", exit_code.map(|c| format!(" with exit code {c}")).unwrap_or_else(|| " (no exit code)".into()), output.display())]
    SetupFailed {
        /// The session, left bound.
        session_id: String,
        /// The command that failed.
        command: String,
        /// Its exit code; `None` when a signal ended it.
        exit_code: Option<i32>,
        /// The file holding its output.
        output: PathBuf,
    },
}

/// a3s-iso's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Each reason is the one error it explains (`Error::from(Taken::…)` is `session_exists`).
macro_rules! error_of_reason {
    ($($reason:ty => $variant:ident),* $(,)?) => {$(
        impl From<$reason> for Error {
            fn from(reason: $reason) -> Error {
                Error::$variant { reason }
            }
        }
    )*};
}

error_of_reason!(
    Unavailable => IsolationUnavailable,
    Taken => SessionExists,
    NoDocument => ChangeSetUnavailable,
    crate::base::invalid::Invalid => InvalidInput,
);

impl Error {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::IsolationUnavailable { .. } => ErrorCode::IsolationUnavailable,
            Error::InvalidId { .. } => ErrorCode::InvalidId,
            Error::InvalidInput { .. } => ErrorCode::InvalidInput,
            Error::SessionNotFound { .. }
            | Error::SessionNearMiss { .. }
            | Error::SessionSwept { .. }
            | Error::UnknownSession { .. } => ErrorCode::SessionNotFound,
            Error::SessionExists { .. } => ErrorCode::SessionExists,
            Error::DirtySource { .. } => ErrorCode::DirtySource,
            Error::IsolationPathOccupied { .. } => ErrorCode::IsolationPathOccupied,
            Error::ReadOnlySession { .. } => ErrorCode::ReadOnlySession,
            Error::CaptureConflict { .. } => ErrorCode::CaptureConflict,
            Error::ChangeSetTooLarge { .. } => ErrorCode::ChangeSetTooLarge,
            Error::ChangeSetInvalid { .. } | Error::RequestInvalid { .. } => {
                ErrorCode::ChangeSetInvalid
            }
            Error::ChangeSetUnavailable { .. } => ErrorCode::ChangeSetUnavailable,
            Error::SandboxUnavailable { .. } => ErrorCode::SandboxUnavailable,
            Error::LockTimeout { .. } => ErrorCode::LockTimeout,
            Error::GitFailed { .. } | Error::GitStoppedMidway { .. } => ErrorCode::GitFailed,
            Error::GitTooOld { .. } => ErrorCode::GitTooOld,
            Error::Io { .. } => ErrorCode::Io,
            Error::Internal { .. } => ErrorCode::Internal,
            Error::Usage { .. } => ErrorCode::Usage,
            Error::SessionBusy { .. } => ErrorCode::SessionBusy,
            Error::CommandNotFound { .. } => ErrorCode::CommandNotFound,
            Error::CommandNotExecutable { .. } => ErrorCode::CommandNotExecutable,
            Error::DetachedSource { .. } => ErrorCode::DetachedSource,
            Error::ChangeSetNotFound { .. } => ErrorCode::ChangeSetNotFound,
            Error::IsolationMissing { .. } => ErrorCode::IsolationMissing,
            Error::SessionConflicted { .. } => ErrorCode::SessionConflicted,
            Error::DigestAmbiguous { .. } => ErrorCode::DigestAmbiguous,
            Error::RunNotFound { .. } => ErrorCode::RunNotFound,
            Error::ChangeSetPending { .. } => ErrorCode::ChangeSetPending,
            Error::ConfigUntrusted { .. } => ErrorCode::ConfigUntrusted,
            Error::SetupFailed { .. } => ErrorCode::SetupFailed,
            Error::SessionNotGranted { .. } => ErrorCode::SessionNotGranted,
            Error::RemoteUnreachable { .. } => ErrorCode::RemoteUnreachable,
            Error::PushRefused { .. } => ErrorCode::PushRefused,
            Error::PushContended { .. } => ErrorCode::PushContended,
        }
    }

    /// The exit status for this error (see [`ErrorCode::exit_code`]).
    pub fn exit_code(&self) -> i32 {
        self.code().exit_code()
    }

    /// What git said, for a `git_failed` error.
    pub(crate) fn git_failure(&self) -> Option<&GitFailure> {
        match self {
            Error::GitFailed { failure } | Error::GitStoppedMidway { failure, .. } => Some(failure),
            _ => None,
        }
    }

    /// An `io` error with what a3s-iso was doing.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// An `internal` error: a bug.
    pub(crate) fn internal(message: impl Into<String>) -> Error {
        Error::Internal {
            message: message.into(),
        }
    }

    /// A `usage` error: the command line asks for what cannot be done.
    pub(crate) fn usage(message: impl Into<String>) -> Error {
        Error::Usage {
            message: message.into(),
        }
    }
}

/// Attach a context line to `std::io::Result`s.
pub trait IoContext<T> {
    /// Turns an I/O error into an `io` error with `context` (computed only on failure).
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn ctx(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| Error::io(context(), source))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::base::error::*;

    /// The exit-code contract: scripts depend on it, so it is pinned here code by code.
    #[test]
    fn exit_code_table_is_pinned() {
        let table: Vec<(&str, i32)> = ErrorCode::ALL
            .iter()
            .map(|c| (c.as_str(), c.exit_code()))
            .collect();
        assert_eq!(
            table,
            vec![
                ("isolation_unavailable", 4),
                ("invalid_id", 5),
                ("session_not_found", 1),
                ("session_exists", 1),
                ("dirty_source", 1),
                ("isolation_path_occupied", 1),
                ("read_only_session", 1),
                ("capture_conflict", 3),
                ("change_set_too_large", 1),
                ("change_set_invalid", 5),
                ("change_set_unavailable", 1),
                ("sandbox_unavailable", 4),
                ("lock_timeout", 6),
                ("git_failed", 1),
                ("git_too_old", 1),
                ("io", 1),
                ("internal", 1),
                ("usage", 2),
                ("session_busy", 6),
                ("command_not_found", 127),
                ("command_not_executable", 126),
                ("detached_source", 1),
                ("invalid_input", 5),
                ("change_set_not_found", 1),
                ("isolation_missing", 4),
                ("session_conflicted", 3),
                ("digest_ambiguous", 5),
                ("run_not_found", 1),
                ("change_set_pending", 75),
                ("config_untrusted", 5),
                ("setup_failed", 1),
                ("session_not_granted", 1),
                ("remote_unreachable", 4),
                ("push_refused", 1),
                ("push_contended", 6),
            ]
        );
    }

    /// One example of every error, for the rendering snapshots.
    pub(crate) fn one_of_each() -> Vec<Error> {
        let errors = vec![
            Error::IsolationUnavailable {
                reason: Unavailable::UnbornHead {
                    toplevel: "/work/src".into(),
                },
            },
            Error::InvalidId {
                id: "../x".into(),
                reason: "it must start with a letter or a digit".into(),
            },
            Error::SessionNotFound {
                reason: NoSession::SeveralLive {
                    source_path: "/work/src".into(),
                    count: 2,
                },
                candidates: vec!["a".into(), "b".into()],
            },
            Error::SessionSwept {
                session_id: "task".into(),
                summary: "session \"task\" was swept at 2026-01-02T03:04:05Z; its last state is in refs/a3s-iso/swept/task".into(),
            },
            Error::SessionExists {
                reason: Taken::OtherOwner {
                    session_id: "task".into(),
                    owner: "pid 42 on host".into(),
                    pid: 42,
                },
            },
            Error::DirtySource {
                paths: vec!["README.md".into(), "notes.txt".into()],
                more: 3,
            },
            Error::IsolationPathOccupied {
                path: "/work/.a3s-isolate-task".into(),
                found: "a symbolic link".into(),
            },
            Error::ReadOnlySession { session_id: "ro".into() },
            Error::CaptureConflict {
                session_id: "s".into(),
                run_id: "r1".into(),
                held: Held::ResultTree {
                    pinned: "1111".into(),
                    now: Some("2222".into()),
                },
            },
            Error::ChangeSetTooLarge {
                bytes: 5_000_000,
                limit: 4_194_304,
            },
            Error::ChangeSetInvalid {
                rule: ChangeSetRule::Digest,
                field: "patch_digest".into(),
                detail: "the patch's sha256 is sha256:00".into(),
            },
            Error::ChangeSetUnavailable {
                reason: NoDocument::Unreadable {
                    path: "cs.json".into(),
                    error: "No such file or directory (os error 2)".into(),
                },
            },
            Error::SandboxUnavailable {
                message: "the kernel does not offer Landlock, so writes cannot be confined".into(),
            },
            Error::LockTimeout {
                holder: "pid 42 on host since 1764500000000 ms (/work/src/.git/a3s-iso.lock)".into(),
            },
            Error::GitFailed {
                failure: GitFailure {
                    args: vec!["worktree".into(), "add".into()],
                    exit_code: Some(128),
                    stderr: "fatal: invalid reference: nope\nhint: more detail\n".into(),
                },
            },
            Error::GitStoppedMidway {
                failure: GitFailure {
                    args: vec!["read-tree".into(), "-m".into(), "-u".into()],
                    exit_code: None,
                    stderr: String::new(),
                },
                message: "git read-tree was killed while it moved your checkout; the next a3s-iso command puts back the files it wrote".into(),
            },
            Error::GitTooOld {
                found: "2.20.1".into(),
                required: "2.31".into(),
            },
            Error::io(
                "cannot write /work/state/sessions/a.json",
                std::io::Error::from(std::io::ErrorKind::PermissionDenied),
            ),
            Error::internal("a healthy isolation without paths"),
            Error::Usage {
                message: "--owner-pid 42 is not a running process on this host".into(),
            },
            Error::SessionBusy {
                session_id: "s".into(),
                holder: Busy::AnotherRun,
            },
            Error::CommandNotFound {
                program: "nope".into(),
                hidden: Vec::new(),
            },
            Error::CommandNotExecutable {
                program: "./README.md".into(),
                reason: "Permission denied (os error 13)".into(),
            },
            Error::DetachedSource {
                source_path: "/work/src".into(),
            },
            Error::InvalidInput {
                reason: crate::base::invalid::Invalid::FlagPath {
                    flag: "--allow-write".into(),
                    path: "/nowhere".into(),
                    error: "No such file or directory (os error 2)".into(),
                },
            },
            Error::ChangeSetNotFound {
                remote: "origin".into(),
                digest: format!("sha256:{}", "0".repeat(64)),
                reference: format!("refs/a3s-iso/changes/{}", "0".repeat(64)),
            },
            Error::IsolationMissing {
                session_id: "task".into(),
                worktree: Some("/work/.src.a3s-isolate-task".into()),
            },
            Error::SessionConflicted {
                session_id: "s".into(),
                what: "a rebase stopped at a conflict".into(),
                paths: vec!["README.md".into()],
            },
            Error::DigestAmbiguous {
                flag: "--digest".into(),
                given: "0123abcd".into(),
                candidates: vec![
                    format!("sha256:0123abcd{}", "0".repeat(56)),
                    format!("sha256:0123abcd{}", "1".repeat(56)),
                ],
            },
            Error::RequestInvalid {
                rule: ChangeSetRule::IdentityMismatch,
                field: "identity.agent_release_identity".into(),
                detail: format!("run \"r1\" of session \"s\" was recorded with sha256:{}", "1".repeat(64)),
            },
            Error::UnknownSession {
                session_id: "gone".into(),
                store: "/work/src/.git/a3s-iso".into(),
            },
            Error::RunNotFound {
                session_id: "s".into(),
                run_id: "r9".into(),
            },
            Error::ChangeSetPending {
                session_id: "s".into(),
                run_id: "r2".into(),
                why: "its command is running".into(),
            },
            Error::ConfigUntrusted {
                path: "/work/src/.a3s-iso.toml".into(),
                changed: true,
            },
            Error::SetupFailed {
                session_id: "s".into(),
                command: "npm ci".into(),
                exit_code: Some(1),
                output: "/work/src/.git/a3s-iso/setup/s/r1.log".into(),
            },
            Error::SessionNotGranted {
                reason: NotGranted::OutsideScope {
                    session_id: "yours".into(),
                    caller: "MCP server".into(),
                    grant: "start it with a3s-iso mcp --session yours, or --all-sessions".into(),
                },
            },
            Error::RemoteUnreachable {
                remote: "origin".into(),
                detail: "fatal: '/nowhere' does not appear to be a git repository".into(),
            },
            Error::PushRefused {
                remote: "origin".into(),
                branch: "main".into(),
                message: "main is protected ([remote rejected] (pre-receive hook declined))".into(),
            },
            Error::PushContended {
                remote: "origin".into(),
                branch: "main".into(),
                attempts: 10,
            },
        ];
        let codes: std::collections::HashSet<ErrorCode> = errors.iter().map(Error::code).collect();
        assert_eq!(codes.len(), ErrorCode::ALL.len(), "one example per code");
        errors
    }

    #[test]
    fn every_variant_maps_to_its_code() {
        let e = Error::ChangeSetInvalid {
            rule: ChangeSetRule::Digest,
            field: "patch_digest".into(),
            detail: "mismatch".into(),
        };
        assert_eq!(e.code(), ErrorCode::ChangeSetInvalid);
        assert_eq!(e.exit_code(), 5);
        let e = Error::LockTimeout {
            holder: "pid 1".into(),
        };
        assert_eq!(e.exit_code(), 6);
    }
}
