//! `changes`: answers a change-set request (`a3s.code.agent-change-set-request.v1`) with the
//! stored change-set document of exactly the run its identity names.

use crate::base::ids::{RunId, SessionId};
use crate::base::invalid::Invalid;
use std::path::Path;

use crate::base::error::{ChangeSetRule, Error, NoDocument, Result};
use crate::context::{Context, Located};
use crate::model::changeset::{self, ChangeSet, Identity, MAX_PATCH_BYTES, MAX_REQUEST_BYTES};

/// The answer to a request: the run's stored document, as its exact bytes, and what it says.
#[derive(Debug, Clone)]
pub struct ChangesAnswer {
    /// The document exactly as it is stored (`runs/<session>/<run>.json`).
    pub bytes: Vec<u8>,
    /// The document, verified.
    pub change_set: ChangeSet,
}

/// Reads and checks a change-set request from a file (or `-`, stdin) read to one byte past the
/// limit; returns the run identity it asks for.
pub fn read_request(path: &Path) -> Result<Identity> {
    let bytes = if path == Path::new("-") {
        changeset::read_bounded(std::io::stdin().lock(), MAX_REQUEST_BYTES)
            .map_err(|e| Error::io("cannot read standard input", e))?
    } else {
        let file = std::fs::File::open(path).map_err(|e| Invalid::RequestUnreadable {
            path: path.to_path_buf(),
            error: e.to_string(),
        })?;
        changeset::read_bounded(file, MAX_REQUEST_BYTES)
            .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?
    };
    changeset::verify_request(&bytes)
}

/// The stored document of the run `identity` names: the run must have ended (else
/// `change_set_pending`), and the identity match field by field (else `identity_mismatch`).
pub fn answer(ctx: &Context, identity: &Identity) -> Result<ChangesAnswer> {
    let located = crate::recovery::locate(ctx).map_err(|err| match err {
        Error::IsolationUnavailable { reason } => Error::from(NoDocument::NoSource(reason)),
        other => other,
    })?;
    let session_id = &known_session(&located, &identity.session_id)?;
    let run_id = RunId::new(identity.run_id.as_str()).map_err(|_| run_not_found(identity))?;
    if located.store.leasing_run(session_id)?.as_deref() == Some(run_id.as_str()) {
        return Err(Error::ChangeSetPending {
            session_id: identity.session_id.clone(),
            run_id: identity.run_id.clone(),
            why: "its command is running, or its change set is being recorded".into(),
        });
    }
    match located.store.load_run_doc(session_id, &run_id)? {
        Some(bytes) => answer_with(bytes, identity),
        None => without_document(ctx, &located, identity, session_id, &run_id),
    }
}

/// Checks that the store records the session for this repository.
fn known_session(located: &Located, session_id: &str) -> Result<SessionId> {
    if let Ok(id) = SessionId::new(session_id)
        && located
            .store
            .load_session(&id)?
            .is_some_and(|r| located.owns(&r))
    {
        return Ok(id);
    }
    Err(Error::UnknownSession {
        session_id: session_id.to_string(),
        store: located.store.dir().to_path_buf(),
    })
}

fn run_not_found(identity: &Identity) -> Error {
    Error::RunNotFound {
        session_id: identity.session_id.clone(),
        run_id: identity.run_id.clone(),
    }
}

/// The stored document `bytes`, verified, if its identity is the request's.
fn answer_with(bytes: Vec<u8>, identity: &Identity) -> Result<ChangesAnswer> {
    let verified = changeset::verify(&bytes).map_err(|err| NoDocument::Damaged {
        session_id: identity.session_id.clone(),
        run_id: identity.run_id.clone(),
        error: err.to_string(),
    })?;
    let stored = &verified.change_set.identity;
    let fields = [
        ("schema", &stored.schema, &identity.schema),
        ("protocol", &stored.protocol, &identity.protocol),
        (
            "agent_release_identity",
            &stored.agent_release_identity,
            &identity.agent_release_identity,
        ),
        ("session_id", &stored.session_id, &identity.session_id),
        ("run_id", &stored.run_id, &identity.run_id),
    ];
    if let Some((field, recorded, _)) = fields.iter().find(|(_, stored, asked)| stored != asked) {
        return Err(Error::RequestInvalid {
            rule: ChangeSetRule::IdentityMismatch,
            field: format!("identity.{field}"),
            detail: format!(
                "run {:?} of session {:?} was recorded with {field} {recorded:?}",
                identity.run_id, identity.session_id
            ),
        });
    }
    Ok(ChangesAnswer {
        bytes,
        change_set: verified.change_set,
    })
}

/// A run without a stored document: unknown, or ended without one. A capture writes it under
/// the lock after pinning the result, so one still missing under the lock never will be
/// (`change_set_unavailable`).
fn without_document(
    ctx: &Context,
    located: &Located,
    identity: &Identity,
    session_id: &SessionId,
    run_id: &RunId,
) -> Result<ChangesAnswer> {
    let store = &located.store;
    let source = &located.repo.toplevel;
    let pinned = crate::model::refs::SessionRefs {
        git: &ctx.git,
        dir: source,
        ns: &store.refs(),
        session_id,
    }
    .run_exists(run_id)?;
    let ended = store.load_run_exit(session_id, run_id).is_some();
    if !pinned && !ended {
        return Err(run_not_found(identity));
    }
    let _lock = crate::recovery::lock(ctx, &located.repo)?;
    if let Some(bytes) = store.load_run_doc(session_id, run_id)? {
        return answer_with(bytes, identity);
    }
    Err(Error::from(NoDocument::NotRecorded {
        session_id: session_id.to_string(),
        run_id: run_id.to_string(),
        limit: MAX_PATCH_BYTES,
        pinned_at: pinned.then(|| store.refs().run_result(session_id, run_id)),
    }))
}
