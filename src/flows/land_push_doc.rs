//! A change-set document (or one pushed to a remote, fetched as `promote --from` does) as an
//! entry of `land --push`: its result tree made from base and patch, then landed as a
//! session's is, tested in a scratch session. Its base commit is unknown, so the whole history
//! is searched for its trailer.

use std::path::Path;
use std::time::Instant;

use crate::base::error::{Error, IoContext, Result};
use crate::base::ids::SessionId;
use crate::base::invalid::Invalid;
use crate::context::{Context, Located};

use super::land::{LandOptions, LandResult, LandedSession, PushReport};
use super::land_remote::{Change, Pins, PushOptions, Pushing, SCRATCH, attempts};

/// Where a change set that is no session of this repository comes from.
#[derive(Clone, Copy)]
pub(super) enum Source<'a> {
    /// A change-set document on disk.
    File(&'a Path),
    /// A change set pushed to a configured remote, by digest.
    Remote { remote: &'a str, digest: &'a str },
}

impl Source<'_> {
    /// What the report calls it until it is read.
    pub(super) fn label(&self) -> String {
        match self {
            Source::File(path) => path.display().to_string(),
            // A session id's characters: the digest's hex.
            Source::Remote { digest, .. } => {
                digest.strip_prefix("sha256:").unwrap_or(digest).to_string()
            }
        }
    }
}

/// A change set read and verified: what landing it needs, its patch on disk.
struct Read {
    session_id: String,
    digest: crate::base::ids::Digest,
    base_tree: String,
    result_tree: String,
    patch: crate::model::snapshot::Patch,
}

/// Reads and verifies the change set `source` names (a remote's: fetched and pinned first).
fn read(ctx: &Context, located: &Located, source: Source<'_>, push: &PushOptions) -> Result<Read> {
    match source {
        Source::File(path) => {
            let verified = crate::model::changeset::verify_file(&ctx.git, path)?;
            let scratch = located.store.scratch_dir();
            let cs = &verified.change_set;
            Ok(Read {
                session_id: cs.identity.session_id.clone(),
                digest: cs.patch_digest.clone(),
                base_tree: cs.base_tree.as_str().to_string(),
                result_tree: cs.result_tree.as_str().to_string(),
                patch: crate::model::snapshot::Patch::from_bytes(&verified.patch, &scratch)?,
            })
        }
        Source::Remote { remote, digest } => {
            let max_bytes = push
                .fetched
                .as_ref()
                .map_or(crate::services::remote::DEFAULT_MAX_BYTES, |f| f.max_bytes);
            let request = crate::services::remote::FetchRequest {
                remote: remote.to_string(),
                digest: Some(digest.to_string()),
                allow_url: false,
                max_bytes,
            };
            let fetched = crate::services::remote::fetch_for_promote(ctx, located, &request)?;
            Ok(Read {
                session_id: fetched.report.session_id.clone(),
                digest: fetched.report.digest.clone(),
                base_tree: fetched.base_tree.as_str().to_string(),
                result_tree: fetched.result_tree.as_str().to_string(),
                patch: fetched.patch,
            })
        }
    }
}

/// One change set through the server; whatever stops it is its result.
pub(super) fn document_one(
    ctx: &Context,
    located: &Located,
    (opts, push): (&LandOptions, &PushOptions),
    source: Source<'_>,
) -> LandedSession {
    let started = Instant::now();
    let mut landed = LandedSession::new(&source.label(), LandResult::Failed);
    landed.push = Some(PushReport {
        remote: push.target.remote.clone(),
        branch: push.target.branch.clone(),
        ..PushReport::default()
    });
    let mut pins = Pins::new(ctx, located);
    let mut scratch = None;
    let result = document_steps(
        ctx,
        located,
        (opts, push),
        source,
        &mut pins,
        &mut scratch,
        &mut landed,
    );
    pins.release();
    if let Some(id) = scratch {
        // Its isolation held the landing's tree for the test: nothing of it is kept.
        let _ = super::land::discard(ctx, id.as_str(), true);
    }
    if let Err(err) = result {
        landed.fail(&err);
    }
    landed.finished(ctx, started)
}

/// Read and verify, make the result tree, bind a scratch session for a test, then the attempts.
fn document_steps(
    ctx: &Context,
    located: &Located,
    (opts, push): (&LandOptions, &PushOptions),
    source: Source<'_>,
    pins: &mut Pins,
    scratch: &mut Option<SessionId>,
    landed: &mut LandedSession,
) -> Result<()> {
    let cs = read(ctx, located, source, push)?;
    landed.session_id = cs.session_id.clone();
    landed.digest = Some(cs.digest.clone());
    let (base_tree, result_tree) = (cs.base_tree.as_str(), cs.result_tree.as_str());
    if base_tree == result_tree {
        landed.outcome = LandResult::Empty;
        return Ok(());
    }
    made_here(ctx, located, (base_tree, result_tree), cs.patch.file.path())?;
    let pushing = Pushing {
        remote: push.target.remote.clone(),
        branch: push.target.branch.clone(),
        digest: cs.digest.clone(),
        base: String::new(),
    };
    if opts.test.is_some() {
        let id = crate::base::maker::owned_name(SCRATCH);
        let bound = crate::ops::bind::bind_isolation(
            ctx,
            &crate::ops::bind::BindOptions {
                session_id: Some(id),
                allow_dirty: true,
                owner: crate::ops::bind::OwnerChoice::Pid(std::process::id()),
                no_auto_sweep: true,
                ..crate::ops::bind::BindOptions::default()
            },
        )?;
        *scratch = Some(bound.session_id);
    }
    let change = Change {
        id: &cs.session_id,
        tested_in: scratch.as_ref(),
        pushing: &pushing,
        base_tree,
        result_tree,
        replay: None,
    };
    attempts(ctx, located, (opts, push), &change, pins, landed)
}

/// Writes the result tree from base tree and patch, and checks it is the document's.
fn made_here(
    ctx: &Context,
    located: &Located,
    (base_tree, result_tree): (&str, &str),
    patch_file: &Path,
) -> Result<()> {
    let dir = &located.repo.toplevel;
    let present = ctx.git.objects_present(dir, &[base_tree.to_string()])?;
    if !present.first().copied().unwrap_or(false) {
        return Err(Error::InvalidInput {
            reason: Invalid::TreeNotHere {
                tree: base_tree.to_string(),
            },
        });
    }
    let scratch = located.store.scratch_dir();
    std::fs::create_dir_all(&scratch).ctx(|| format!("cannot create {}", scratch.display()))?;
    let index = scratch.join(format!(
        "{}.index",
        crate::base::maker::owned_name("landing-doc")
    ));
    let made = ctx
        .git
        .tree_with_patch(dir, (base_tree, patch_file), &index);
    let _ = std::fs::remove_file(&index);
    match made? {
        Some(tree) if tree == result_tree => Ok(()),
        made => Err(Error::ChangeSetInvalid {
            rule: crate::base::error::ChangeSetRule::Patch,
            field: "result_tree".into(),
            detail: format!(
                "the patch applied to its base tree makes {}, not {result_tree}",
                made.as_deref().unwrap_or("nothing (it does not apply)")
            ),
        }),
    }
}
