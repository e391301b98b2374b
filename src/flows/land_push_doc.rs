//! A change-set document as an entry of `land --push`: verified, its result tree made from its
//! base tree and patch (objects only), then landed as a session's change set is (see
//! `land_push`), its test run in a scratch session bound for it and purged after. Its base
//! commit is not known, so the branch's whole history is searched for its trailer.

use std::path::Path;
use std::time::Instant;

use crate::base::error::{Error, Result};
use crate::base::invalid::Invalid;
use crate::context::{Context, Located};

use super::land::{LandError, LandOptions, LandResult, LandedSession, PushReport};
use super::land_remote::{Change, Pins, PushOptions, Pushing, SCRATCH, attempts};

/// One document through the server; whatever stops it is its result. `session_id` is the
/// session the document names.
pub(super) fn document_one(
    ctx: &Context,
    located: &Located,
    (opts, push): (&LandOptions, &PushOptions),
    path: &Path,
) -> LandedSession {
    let started = Instant::now();
    let mut landed = LandedSession::new(&path.display().to_string(), LandResult::Failed);
    landed.push = Some(PushReport {
        remote: push.target.remote.clone(),
        branch: push.target.branch.clone(),
        attempts: 0,
        built_on: None,
        tested_tree: None,
    });
    let mut pins = Pins::new(ctx, located);
    let mut scratch = None;
    let result = document_steps(
        ctx,
        located,
        (opts, push),
        path,
        &mut pins,
        &mut scratch,
        &mut landed,
    );
    pins.release();
    if let Some(id) = scratch {
        // Its isolation held the landing's tree for the test: nothing of it is kept.
        let _ = crate::ops::discard::discard(
            ctx,
            &crate::ops::discard::DiscardOptions {
                session_id: Some(id),
                purge: true,
            },
        );
    }
    if let Err(err) = result {
        landed.outcome = LandResult::Failed;
        landed.error = Some(LandError {
            code: err.code().as_str().to_string(),
            message: err.to_string(),
        });
    }
    landed.warnings.extend(ctx.take_notices());
    landed.duration_ms = started.elapsed().as_millis() as u64;
    landed
}

/// Verify, make the result tree, bind the scratch session for a test, then the attempts.
fn document_steps(
    ctx: &Context,
    located: &Located,
    (opts, push): (&LandOptions, &PushOptions),
    path: &Path,
    pins: &mut Pins,
    scratch: &mut Option<String>,
    landed: &mut LandedSession,
) -> Result<()> {
    let verified = crate::model::changeset::verify_file(&ctx.git, path)?;
    let cs = &verified.change_set;
    landed.session_id = cs.identity.session_id.clone();
    landed.digest = Some(cs.patch_digest.clone());
    let (base_tree, result_tree) = (cs.base_tree.as_str(), cs.result_tree.as_str());
    if base_tree == result_tree {
        landed.outcome = LandResult::Empty;
        return Ok(());
    }
    made_here(ctx, located, (base_tree, result_tree), &verified.patch)?;
    let pushing = Pushing {
        remote: push.target.remote.clone(),
        branch: push.target.branch.clone(),
        digest: cs.patch_digest.clone(),
        base: String::new(),
    };
    if opts.test.is_some() {
        let id = crate::base::maker::owned_name(SCRATCH);
        crate::ops::bind::bind_isolation(
            ctx,
            &crate::ops::bind::BindOptions {
                session_id: Some(id.clone()),
                allow_dirty: true,
                owner: crate::ops::bind::OwnerChoice::Pid(std::process::id()),
                no_auto_sweep: true,
                ..crate::ops::bind::BindOptions::default()
            },
        )?;
        *scratch = Some(id);
    }
    let change = Change {
        id: &cs.identity.session_id,
        tested_in: scratch.as_deref(),
        pushing: &pushing,
        base_tree,
        result_tree,
    };
    attempts(ctx, located, (opts, push), &change, pins, landed)
}

/// Writes the document's result tree here from its base tree and patch, and checks that it
/// is the tree the document names; the base tree must be here.
fn made_here(
    ctx: &Context,
    located: &Located,
    (base_tree, result_tree): (&str, &str),
    patch: &[u8],
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
    std::fs::create_dir_all(&scratch)
        .map_err(|e| Error::io(format!("cannot create {}", scratch.display()), e))?;
    let name = crate::base::maker::owned_name("landing-doc");
    let (patch_file, index) = (
        scratch.join(format!("{name}.patch")),
        scratch.join(format!("{name}.index")),
    );
    std::fs::write(&patch_file, patch)
        .map_err(|e| Error::io(format!("cannot write {}", patch_file.display()), e))?;
    let made = ctx
        .git
        .tree_with_patch(dir, (base_tree, &patch_file), &index);
    let _ = std::fs::remove_file(&patch_file);
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
