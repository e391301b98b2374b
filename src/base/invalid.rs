//! [`Invalid`]: why an argument, a file or a payload cannot be used (`invalid_input`), with
//! the values its message is made of. Grouped by where the input comes from.

use std::path::PathBuf;

use thiserror::Error;

/// Why an input cannot be used; its text is the error's message.
#[derive(Debug, Error)]
pub enum Invalid {
    // Flags and their values.
    /// A path given to a flag that cannot be resolved.
    #[error("{flag} {}: {error}", path.display())]
    FlagPath {
        /// The flag (`--allow-write`…).
        flag: String,
        /// The path as given.
        path: PathBuf,
        /// Why it cannot be resolved.
        error: String,
    },
    /// An `--env` request that is not `NAME`, `NAME=VALUE` or a pattern.
    #[error("--env {given}: {why}")]
    Env {
        /// The request as given.
        given: String,
        /// What is wrong with it.
        why: String,
    },
    /// A `--publish` request that cannot be used.
    #[error("--publish {given:?}: {why}")]
    Publish {
        /// The request as given.
        given: String,
        /// What is wrong with it.
        why: String,
    },
    /// A `--publish` of the port the proxy listens on inside.
    #[error("--publish {port}: port {proxy_port} inside is the proxy's with --allow-host")]
    PublishProxyPort {
        /// The port asked for.
        port: u16,
        /// The proxy's port.
        proxy_port: u16,
    },
    /// A published port whose host side cannot be listened on.
    #[error("--publish: cannot listen on 127.0.0.1:{host_port} for port {port} inside: {error}")]
    PublishListen {
        /// The host port.
        host_port: u16,
        /// The port inside.
        port: u16,
        /// Why not.
        error: String,
    },
    /// An `--allow-host` entry that cannot be used.
    #[error("--allow-host {given:?}: {why}")]
    AllowHost {
        /// The entry as given.
        given: String,
        /// What is wrong with it.
        why: String,
    },
    /// `--onto` (or the source's HEAD) names no commit.
    #[error("{}", match onto {
        Some(rev) => format!("--onto {rev:?} names no commit of the source"),
        None => "the source's HEAD names no commit".to_string(),
    })]
    Onto {
        /// The revision given, or `None` for the source's HEAD.
        onto: Option<String>,
    },
    /// A name that is not one of the repository's remotes.
    #[error("{name:?} is not a remote of this repository (configured: {}); change sets travel through configured remotes only (git remote add NAME URL), or a URL with --allow-url", match configured.is_empty() {
        true => "none".to_string(),
        false => configured.join(", "),
    })]
    NotARemote {
        /// The name given.
        name: String,
        /// The remotes there are.
        configured: Vec<String>,
    },

    // Files the user names.
    /// A change-set request file that cannot be read.
    #[error("cannot read the request {}: {error}", path.display())]
    RequestUnreadable {
        /// The file.
        path: PathBuf,
        /// Why not.
        error: String,
    },
    /// A message file (`--message-file`) that cannot be read.
    #[error("cannot read the message from {}: {error}", path.display())]
    MessageUnreadable {
        /// The file (`-` for standard input).
        path: PathBuf,
        /// Why not.
        error: String,
    },
    /// A message file that holds no message.
    #[error("the message in {} is empty", path.display())]
    MessageEmpty {
        /// The file.
        path: PathBuf,
    },

    // Configuration and profiles.
    /// A configuration file that cannot be read, or whose syntax or keys are wrong.
    #[error("{}: {detail}", path.display())]
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// A repository's configuration file that defines profiles.
    #[error("{}: [profiles] belong in your own configuration file; a repository may only select one with [run] profile", path.display())]
    ProfilesInRepository {
        /// The file.
        path: PathBuf,
    },
    /// `config trust` where the repository has no configuration file.
    #[error("{} has no {file} to trust", source_path.display())]
    NothingToTrust {
        /// The source checkout.
        source_path: PathBuf,
        /// The file's name.
        file: String,
    },
    /// No per-user data directory to record trust in.
    #[error("there is no per-user data directory to record trust in")]
    NoTrustStore,
    /// A profile that does not exist.
    #[error("no profile {name:?} (there are: {})", known.join(", "))]
    NoSuchProfile {
        /// The name asked for.
        name: String,
        /// The profiles there are.
        known: Vec<String>,
    },
    /// A profile whose definition cannot be used.
    #[error("profile {name:?}: {why}")]
    Profile {
        /// The profile.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// A profile with writable home paths and no per-user data directory to keep them in.
    #[error("profile {name:?} needs a per-user data directory")]
    ProfileNeedsDataDir {
        /// The profile.
        name: String,
    },
    /// A profile that needs a home directory, with `HOME` unset.
    #[error("profile {name:?} needs HOME, which is not set")]
    ProfileNeedsHome {
        /// The profile.
        name: String,
    },
    /// A symbolic link on the way to a profile's kept copy.
    #[error("{} is a symbolic link (a run can write there), which a3s-iso does not follow: remove it to keep the profile's copy there", path.display())]
    LinkInProfile {
        /// The link.
        path: PathBuf,
    },
    /// An agent's settings file a3s-iso will not change.
    #[error("{}: {why}; nothing was changed (fix the file, or add the hooks by hand: see docs/agents.md)", path.display())]
    AgentSettings {
        /// The file.
        path: PathBuf,
        /// Why not.
        why: String,
    },

    // Hook payloads on standard input.
    /// A hook payload that is not JSON.
    #[error("the {event} payload on stdin is not JSON: {error}")]
    PayloadNotJson {
        /// The hook event.
        event: String,
        /// The parser's error.
        error: String,
    },
    /// A hook payload that is not a JSON object.
    #[error("the {event} payload on stdin is not a JSON object")]
    PayloadNotObject {
        /// The hook event.
        event: String,
    },
    /// A hook payload for another event.
    #[error(
        "the payload is for {found:?}, not {event}: check the hook's command in Claude Code's settings"
    )]
    PayloadForAnotherEvent {
        /// The event the payload names.
        found: String,
        /// The hook's event.
        event: String,
    },
    /// A payload field that is not a string.
    #[error("{event} payload: {key:?} is {found}, not a string")]
    PayloadField {
        /// The hook event.
        event: String,
        /// The field.
        key: String,
        /// What it holds (as JSON).
        found: String,
    },
    /// A `WorktreeRemove` payload that names no worktree.
    #[error("the WorktreeRemove payload names no worktree (worktree_path)")]
    PayloadNoWorktree,

    // What a session or a repository holds.
    /// `--reapply` or `--digest` of a digest no promote recorded.
    #[error("no promote of {digest} is recorded here (a3s-iso log lists them)")]
    NoPromote {
        /// The digest (or prefix) given.
        digest: String,
    },
    /// `--reapply` of a session with no promoted change set.
    #[error("session {session_id:?} has no promoted change set to land again")]
    NothingToReapply {
        /// The session.
        session_id: String,
    },
    /// `--reapply` of a nested repository's change set.
    #[error(
        "{digest} is the change set of the nested repository {nested}: --reapply lands a root change set again, not a nested one"
    )]
    NestedReapply {
        /// The digest.
        digest: String,
        /// The nested repository's path.
        nested: String,
    },
    /// `rebase --continue` or `--abort` with no conflicted rebase.
    #[error("session {session_id:?} has no conflicted rebase to continue or abort")]
    NoConflictedRebase {
        /// The session.
        session_id: String,
    },
    /// A rebase of a session bound with `--carry-wip`.
    #[error(
        "session {session_id:?} started from your uncommitted work (--carry-wip): its base is not a commit to move from"
    )]
    RebaseOfCarriedWip {
        /// The session.
        session_id: String,
    },
    /// An isolation whose HEAD left its bound revision's history.
    #[error(
        "the isolation's HEAD ({head}) does not descend from the session's bound revision ({bound})"
    )]
    HeadNotDescendant {
        /// The isolation's HEAD.
        head: String,
        /// The session's bound revision.
        bound: String,
    },
    /// Ignored files of the isolation where the rebased tree has tracked ones.
    #[error("the isolation holds files its snapshot leaves out (ignored ones) where the rebased tree has tracked files: {}; move them away and rebase again", paths.join(", "))]
    RebaseInTheWay {
        /// Those paths.
        paths: Vec<String>,
    },
    /// Files the rebase moves that changed in the isolation since its snapshot.
    #[error("the isolation changed since the rebase's snapshot at paths the rebase moves: {}; nothing was written, and the change stays: rebase (or land) again", paths.join(", "))]
    RebaseIsolationChanged {
        /// Those paths.
        paths: Vec<String>,
    },
    /// A change set pushed from a repository that does not hold its tree.
    #[error(
        "the change set's tree {tree} is not in this repository: push it from the repository it was captured in"
    )]
    TreeNotHere {
        /// The tree.
        tree: String,
    },
}
