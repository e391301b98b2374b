//! What the command line and the MCP server say of an error: its `a3s-iso.error.v1` document,
//! its plain-text rendering, and the hint, which names the commands and flags to use. The
//! library's errors carry only their code and cause (`base::error`); the words that belong to
//! the interface are here.

use crate::base::error::{ChangeSetRule, Error, NoSession, NotGranted, Taken, Unavailable};

/// The `error` object of an `a3s-iso.error.v1` document.
pub fn document(err: &Error) -> serde_json::Value {
    let mut body = serde_json::json!({
        "code": err.code().as_str(),
        "message": err.to_string(),
    });
    if let Some(hint) = hint(err) {
        body["hint"] = hint.into();
    }
    if let Some(git) = err.git_failure() {
        body["git"] = serde_json::to_value(git).unwrap_or_default();
    }
    if let Error::DirtySource { paths, more } = err {
        body["paths"] = serde_json::json!(paths);
        body["more_paths"] = serde_json::json!(more);
    }
    if let Error::SessionConflicted { paths, .. } = err {
        body["paths"] = serde_json::json!(paths);
    }
    if let Error::SetupFailed {
        session_id,
        command,
        exit_code,
        output,
    } = err
    {
        body["session_id"] = serde_json::json!(session_id);
        body["command"] = serde_json::json!(command);
        body["exit_code"] = serde_json::json!(exit_code);
        body["output"] = serde_json::json!(output.to_string_lossy());
    }
    if let Error::ChangeSetInvalid { rule, field, .. } | Error::RequestInvalid { rule, field, .. } =
        err
    {
        body["rule"] = serde_json::json!(rule);
        body["field"] = serde_json::json!(field);
    }
    if let Error::CommandNotFound { hidden, .. } = err
        && !hidden.is_empty()
    {
        body["hidden_paths"] = hidden
            .iter()
            .map(|h| {
                serde_json::json!({
                    "path": h.path.to_string_lossy(),
                    "reason": "private",
                    "under": h.under.to_string_lossy(),
                    "allow": "read",
                    "allow_path": h.allow_read.to_string_lossy(),
                })
            })
            .collect();
    }
    if let Error::SessionNotFound { candidates, .. }
    | Error::SessionNearMiss { candidates, .. }
    | Error::DigestAmbiguous { candidates, .. } = err
    {
        body["candidates"] = serde_json::json!(candidates);
    }
    body
}

/// The human rendering, plain text (the command line colours it): `error[code]: cause`,
/// then git's stderr, then the hint, each on lines of their own.
pub fn render(err: &Error) -> String {
    let mut text = format!("error[{}]: {err}\n", err.code().as_str());
    if let Some(git) = err.git_failure()
        && !git.stderr.trim().is_empty()
    {
        // The cause is in the message already; the full git stderr follows, indented.
        for line in git.stderr.trim().lines().skip(1) {
            text.push_str(&format!("  | {line}\n"));
        }
    }
    if let Some(hint) = hint(err) {
        text.push_str(&format!("  hint: {hint}\n"));
    }
    text
}

/// What the user can do about it, where there is something to say.
pub fn hint(err: &Error) -> Option<String> {
    match err {
        Error::IsolationUnavailable { reason } => unavailable_hint(reason),
        Error::SessionExists { reason } => Some(taken_hint(reason)),
        Error::SessionNotGranted { reason } => Some(not_granted_hint(reason)),
        Error::SessionNotFound { candidates, .. } if !candidates.is_empty() => Some(format!(
            "choose one with -s: {}",
            candidates.join(", ")
        )),
        Error::SessionNearMiss { candidates, .. } => Some(format!(
            "did you mean {}? name it with -s",
            candidates
                .iter()
                .map(|c| format!("{c:?}"))
                .collect::<Vec<_>>()
                .join(" or ")
        )),
        Error::SessionNotFound { reason, .. } => no_session_hint(reason),
        Error::CommandNotFound { program, hidden } if !hidden.is_empty() => {
            Some(hidden_tool_hint(program, hidden))
        }
        Error::SessionSwept { session_id, .. } => Some(format!(
            "restore it with a3s-iso bind -s {session_id} --resume (its work comes back as uncommitted changes), or forget it with a3s-iso discard -s {session_id}"
        )),
        Error::DirtySource { .. } => Some(
            "commit or stash them, or bind with --carry-wip (the isolation starts with them) or --allow-dirty (isolation at HEAD, local changes left out)".into(),
        ),
        Error::IsolationPathOccupied { .. } => Some(
            "move that path away, or bind with another session id or --base-dir".into(),
        ),
        Error::ReadOnlySession { .. } => {
            Some("bind a new session without --read-only to make changes".into())
        }
        Error::LockTimeout { .. } => {
            Some("wait for the other a3s-iso command, or raise --lock-timeout".into())
        }
        Error::SandboxUnavailable { .. } => Some(
            "run with --no-sandbox to run the command as a plain host process".into(),
        ),
        Error::GitTooOld { .. } => Some("install a newer git, or point --git at one".into()),
        Error::Internal { .. } => {
            Some("this is a bug in a3s-iso: please report it with this message".into())
        }
        Error::DetachedSource { .. } => Some(
            "check out a branch in the source (git switch NAME), or promote in patch mode".into(),
        ),
        Error::SessionBusy {
            holder: crate::base::error::Busy::AnotherCommand,
            ..
        } => Some("wait for that command to finish (a3s-iso list shows when the session is free again)".into()),
        Error::SessionBusy { .. } => {
            Some("wait for the other run to finish; one run at a time per session".into())
        }
        Error::IsolationMissing { session_id, .. } => Some(format!(
            "bring it back with a3s-iso bind -s {session_id} --resume (the last capture restored), or forget it with a3s-iso discard -s {session_id}"
        )),
        Error::SessionConflicted { session_id, .. } => Some(format!(
            "resolve the conflicts in the isolation (a3s-iso run -s {session_id} -- ..., or by hand in $(a3s-iso path -s {session_id})), then a3s-iso rebase -s {session_id} --continue; or a3s-iso rebase -s {session_id} --abort"
        )),
        _ => change_set_hint(err),
    }
}

/// The hints of change sets: their capture, their documents, the remotes they go through.
fn change_set_hint(err: &Error) -> Option<String> {
    match err {
        Error::ChangeSetTooLarge { .. } => Some(
            "the result tree is pinned; promote locally with promote -s ID".into(),
        ),
        Error::CaptureConflict { .. } => Some(
            "evidence is immutable: capture under a new run id; the stored document is unchanged".into(),
        ),
        Error::ChangeSetInvalid { .. } => Some(
            "the document was altered after capture, or was not written by a capture".into(),
        ),
        Error::ChangeSetNotFound { remote, .. } => Some(format!(
            "a3s-iso list --remote {remote} lists the change sets there; push it first (a3s-iso push)"
        )),
        Error::DigestAmbiguous { flag, candidates, .. } => Some(format!(
            "give more digits, e.g. {flag} {}",
            candidates.first().map(String::as_str).unwrap_or_default()
        )),
        Error::RemoteUnreachable { remote, .. } => Some(format!(
            "check that {remote} is reachable and that git fetch {remote} works from here; nothing was pushed"
        )),
        Error::PushRefused { .. } => Some(
            "the server's rule refused the landing commit (nothing was retried): deal with what it said, then land again".into(),
        ),
        Error::PushContended { .. } => Some(
            "land again (with a larger --attempts), or when fewer machines land at once".into(),
        ),
        _ => request_hint(err),
    }
}

/// What to do when there is no isolation to have, where there is something to say.
fn unavailable_hint(reason: &Unavailable) -> Option<String> {
    let hint = match reason {
        Unavailable::NotADirectory { .. } | Unavailable::InsideGitDir { .. } => return None,
        Unavailable::Bare { .. } => "run a3s-iso in a repository with a working tree",
        Unavailable::NotARepository { .. } => {
            "run a3s-iso inside a git checkout, or name one with -C"
        }
        Unavailable::UnbornHead { .. } => "create an initial commit",
        Unavailable::NoGit { .. } => "install git, or name it with --git / A3S_ISO_GIT",
        Unavailable::NoBaseDir { .. } => "name a writable directory with --base-dir",
        Unavailable::Discarded { .. } => {
            "bind a new session, or `bind --resume` to restore its last run"
        }
        Unavailable::ReadOnly { .. } => "bind a session without --read-only to get one",
        Unavailable::Gone { .. } => {
            "`a3s-iso list` shows it as missing; discard it, or bind it again"
        }
    };
    Some(hint.into())
}

/// What to do when a session id is taken.
fn taken_hint(reason: &Taken) -> String {
    match reason {
        Taken::Swept { session_id, .. } => format!(
            "restore it with a3s-iso bind -s {session_id} --resume, or forget it first with a3s-iso discard -s {session_id}"
        ),
        Taken::OtherRepository { .. } => {
            "use another session id, or give this repository a state dir of its own".into()
        }
        Taken::BindInProgress { .. } => "wait for it to finish, or use another session id".into(),
        Taken::Damaged { session_id, .. } => format!(
            "bring it back with a3s-iso bind -s {session_id} --resume (the last capture restored), or discard it (a3s-iso discard -s {session_id})"
        ),
        Taken::OtherOwner { pid, .. } => {
            format!("use another session id, or act for that owner with --owner-pid {pid}")
        }
        Taken::NotCreatedHere { .. } => "the hook binds another id beside it".into(),
    }
}

/// What to do when no session was found: one named with `-s` is bound under that id (or
/// looked for in another store); with none named, bind one or name one.
fn no_session_hint(reason: &NoSession) -> Option<String> {
    match reason {
        NoSession::Unknown { session_id, .. } => Some(format!(
            "a3s-iso list shows this store's sessions; bind this one with a3s-iso bind -s {session_id}, or name its store with --state-dir"
        )),
        NoSession::OtherRepository { repository, .. } => Some(format!(
            "run the command in {} (-C), or use another session id here",
            repository.display()
        )),
        NoSession::NoIsolation { session_id } => Some(format!(
            "a3s-iso show -s {session_id} says where its work is"
        )),
        NoSession::NoneLive { .. } => Some("bind a session first (a3s-iso bind)".into()),
        NoSession::SeveralLive { .. } => Some("name one with -s (a3s-iso list shows them)".into()),
    }
}

fn not_granted_hint(reason: &NotGranted) -> String {
    match reason {
        NotGranted::OutsideScope { grant, .. } => grant.clone(),
        NotGranted::NotAHooks { session_id, .. } => format!(
            "nothing was removed; to remove it yourself: a3s-iso discard -s {session_id}"
        ),
        NotGranted::AnotherClaude { .. } => {
            "nothing was removed; the Claude Code it was created for removes it, or any once that one has exited".into()
        }
        NotGranted::OtherRepository { .. } => {
            "nothing was removed; remove it from its own repository (the payload's cwd must be in it)".into()
        }
    }
}

/// The hints of the errors that answer a change-set request (`changes`).
fn request_hint(err: &Error) -> Option<String> {
    match err {
        Error::RequestInvalid {
            rule: ChangeSetRule::IdentityMismatch,
            ..
        } => Some(
            "ask with the identity the run's document carries: every field must match".into(),
        ),
        Error::RequestInvalid { .. } => Some(
            "a request is {\"schema\": \"a3s.code.agent-change-set-request.v1\", \"identity\": {…}} and nothing more".into(),
        ),
        Error::UnknownSession { .. } => Some(
            "a3s-iso list --all lists the sessions; -C and --state-dir choose the repository and its store".into(),
        ),
        Error::RunNotFound { session_id, .. } => Some(format!(
            "a3s-iso show -s {session_id} lists its runs; a run is known once it has started or been captured"
        )),
        Error::ChangeSetPending { .. } => {
            Some("ask again once the run has ended and its change set is recorded".into())
        }
        Error::ConfigUntrusted { .. } => Some(
            "read it, then approve it with a3s-iso config trust; or pass --ignore-config (bind, run) to leave it out".into(),
        ),
        Error::SetupFailed { session_id, .. } => Some(format!(
            "the isolation is kept: look in $(a3s-iso path -s {session_id}), or discard it (a3s-iso discard -s {session_id}); bind --no-setup skips setup"
        )),
        _ => None,
    }
}

/// Where a program the sandbox could not find lives on the host, and the `--allow-read` of
/// its installation's prefix that lets it through.
fn hidden_tool_hint(program: &str, hidden: &[crate::base::error::HiddenTool]) -> String {
    let places: Vec<String> = hidden
        .iter()
        .map(|h| {
            format!(
                "{} is under {}, which the sandbox replaces with an empty one",
                h.path.display(),
                h.under.display()
            )
        })
        .collect();
    let flags: Vec<String> = hidden
        .iter()
        .map(|h| format!("--allow-read {}", h.allow_read.display()))
        .collect();
    format!(
        "{program} resolves on the host to what the sandbox hides: {}; to let it through: {}",
        places.join("; "),
        flags.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use crate::base::error::Error;
    use crate::base::error::tests::one_of_each;
    use crate::interface::errors::*;

    #[test]
    fn every_error_renders_its_code_cause_and_hint() {
        let rendered: String = one_of_each().iter().map(render).collect();
        insta::assert_snapshot!("error_renderings", rendered);
        for err in one_of_each() {
            let json = document(&err);
            assert_eq!(json["code"], err.code().as_str());
            assert!(!render(&err).contains('\x1b'));
        }
    }

    #[test]
    fn a_lock_timeout_names_the_flag_that_waits_longer() {
        let e = Error::LockTimeout {
            holder: "pid 1".into(),
        };
        assert!(hint(&e).unwrap().contains("--lock-timeout"));
    }
}
