//! What a promote is asked to do, and the change set it works on.

use std::path::PathBuf;

use crate::base::error::{Error, NoDocument, Result};
use crate::base::ids::{CommitId, TreeId};
use crate::base::invalid::Invalid;
use crate::context::{Context, Located};
use crate::model::isolation::writable_isolation;
use crate::model::snapshot::{self, Patch};
use crate::ops::promote::outcome::{Mode, Outcome, PromoteOutcome};
use crate::services::steps::{Previous, delta_base, last_step};
use crate::store::state::{SessionRecord, Step};

/// A directory a caller opened already, to be written through and never looked up by name.
#[derive(Debug, Clone)]
pub struct OpenedDir(pub(crate) std::sync::Arc<crate::base::beneath::Dir>);

/// What to promote and how.
#[derive(Debug, Clone, Default)]
pub struct PromoteOptions {
    /// The session to promote (default: the one `-s` resolution finds).
    pub session_id: Option<String>,
    /// A change-set document to promote instead of a session.
    pub change_set: Option<PathBuf>,
    /// How the work lands.
    pub mode: Mode,
    /// Write the artifacts and stop.
    pub no_apply: bool,
    /// Where the artifacts go (default: under the state dir).
    pub artifacts: Option<PathBuf>,
    /// The directory `artifacts` names, opened by a caller that checked it: never looked up again.
    pub artifacts_opened: Option<OpenedDir>,
    /// `--note DIGEST`: record the digest as promoted by other means.
    pub note: Option<String>,
    /// A document whose base tree is not HEAD's still applies when `git apply --check` passes.
    pub onto_head: bool,
    /// `--from REMOTE --digest D`: the change set is fetched from a remote and verified first.
    pub from: Option<crate::services::remote::FetchRequest>,
    /// A session whose source HEAD moved is rebased onto it first (promoted only if clean).
    pub rebase: bool,
    /// Land again a change set whose recorded landing is no longer in the checkout.
    pub reapply: bool,
    /// With `reapply`: the digest (or unique 8+ digit prefix) of the change set to land again.
    pub digest: Option<String>,
    /// Branch mode: land the session's work as one commit instead of replaying its commits.
    pub squash: bool,
    /// Branch mode: the message of the squashed commit, or of the uncommitted leftovers'.
    pub message: Option<String>,
    /// Branch mode, for a landing's test gate: the commit HEAD was when the test ran. Read
    /// again under the promote's lock, HEAD anywhere else is a `head_moved` conflict that
    /// lands nothing (what was tested is what lands).
    pub tested_on: Option<CommitId>,
}

/// What the caller knows the isolation holds, in place of a fresh capture: the tree and HEAD a
/// landing's rebase left, and the patch made from them while its test ran, if any.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Known<'a> {
    pub(crate) tree: &'a str,
    pub(crate) head: &'a str,
    pub(crate) ahead: Option<&'a PatchAhead>,
}

/// The patch a session's promote would land, made before the promote (a landing makes it
/// while the session's test runs): what it goes between, and the patch itself. The promote
/// takes it only when its own base and result are those same trees, so it lands exactly
/// what it would have made.
pub(crate) struct PatchAhead {
    from: TreeId,
    to: String,
    patch: std::sync::Mutex<Option<Patch>>,
}

impl std::fmt::Debug for PatchAhead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (from, to) = (&self.from, &self.to);
        write!(f, "PatchAhead({from}..{to})")
    }
}

impl PatchAhead {
    /// The patch of the candidate `known` makes of the session as its record says now (from
    /// its delta base, its base or its last step's result, to the known tree); `plan` is
    /// handed that candidate first (see [`crate::ops::promote::branch::plan_ahead`]).
    pub(crate) fn make(
        ctx: &Context,
        located: &Located,
        session: SessionRecord,
        known: Known<'_>,
        plan: impl FnOnce(&Candidate),
    ) -> Result<PatchAhead> {
        let candidate = Candidate::of_known(ctx, located, session, known)?;
        plan(&candidate);
        let from = (candidate.base_tree.clone())
            .ok_or_else(|| Error::internal("a session's change set without its base"))?;
        Ok(PatchAhead {
            from,
            to: known.tree.to_string(),
            patch: std::sync::Mutex::new(Some(candidate.patch)),
        })
    }

    /// The patch, once, if it goes from `from` to `to`.
    fn take(&self, from: &TreeId, to: &str) -> Option<Patch> {
        if self.from != *from || self.to != to {
            return None;
        }
        self.patch.lock().ok()?.take()
    }
}

/// A change set ready to promote: its patch on disk and where it came from.
pub(crate) struct Candidate {
    pub(crate) patch: Patch,
    pub(crate) session: Option<SessionRecord>,
    /// What the patch applies to: the session's base, its last step's result, or a document's.
    pub(crate) base_tree: Option<TreeId>,
    /// What the patch makes: the session's snapshot, or a document's (maybe unknown) tree.
    pub(crate) result_tree: Option<TreeId>,
    pub(crate) nested: Vec<String>,
    /// A session's last promoted step: the patch is the delta since its result.
    pub(crate) previous: Option<Previous>,
    /// The isolation's HEAD at the snapshot, for the step's record.
    pub(crate) isolation_head: Option<CommitId>,
    /// The nested change sets, landed after the root, and those that could not be captured;
    /// none for a document.
    pub(crate) nested_found: crate::services::nested::Nested,
    /// A session's snapshot of its isolation (with the gitlinks it recorded).
    pub(crate) snapshot: Option<crate::model::snapshot::Snapshot>,
    /// A nested change set's path: its steps are its own.
    pub(crate) nested_path: Option<crate::base::paths::RepoPath>,
    /// Another object directory the checks may read trees from (a nested repository's step).
    pub(crate) alternate_objects: Option<std::path::PathBuf>,
    /// The patch is this promote's own diff of `base_tree` and `result_tree`, both here.
    pub(crate) made_from_trees: bool,
    /// The source's HEAD, if read under the lock during the capture.
    pub(crate) source_head: Option<Option<CommitId>>,
}

impl Candidate {
    /// A change set of no session: its patch and what the trees it goes between are known.
    pub(crate) fn of_trees(
        patch: Patch,
        base_tree: Option<TreeId>,
        result_tree: Option<TreeId>,
    ) -> Candidate {
        Candidate {
            patch,
            session: None,
            base_tree,
            result_tree,
            nested: Vec::new(),
            previous: None,
            isolation_head: None,
            nested_found: crate::services::nested::Nested::default(),
            snapshot: None,
            nested_path: None,
            alternate_objects: None,
            made_from_trees: false,
            source_head: None,
        }
    }

    /// A journaled change set to land again, its patch from the artifacts or its step's trees.
    pub(crate) fn of_journal(ctx: &Context, located: &Located, digest: &str) -> Result<Candidate> {
        let entry = located
            .store
            .journal_entry(digest)?
            .ok_or_else(|| Invalid::NoPromote {
                digest: digest.to_string(),
            })?;
        if let Some(path) = entry.step.as_ref().and_then(|s| s.nested.as_ref()) {
            return Err(Error::from(Invalid::NestedReapply {
                digest: digest.to_string(),
                nested: path.shown().to_string(),
            }));
        }
        let step = entry.step;
        let scratch = located.store.scratch_dir();
        let stored = located
            .store
            .artifacts_dir()
            .join(digest.trim_start_matches("sha256:"))
            .join("change.patch");
        let mut patch = match crate::base::fsutil::read_small_regular_file(&stored, 1 << 40) {
            Ok(bytes) => Some(Patch::from_bytes(&bytes, &scratch)?),
            Err(_) => None,
        }
        .filter(|p| p.digest == digest);
        if patch.is_none()
            && let Some(step) = &step
        {
            let made = snapshot::patch(
                &ctx.git,
                &located.repo.common_dir,
                &step.from_tree,
                &step.result_tree,
                &scratch,
            );
            patch = made.ok().filter(|p| p.digest == digest);
        }
        let patch = patch.ok_or_else(|| NoDocument::NotReapplicable {
            digest: digest.to_string(),
        })?;
        let base_tree = step.as_ref().map(|s| s.from_tree.clone());
        let result_tree = step.map(|s| s.result_tree);
        Ok(Candidate::of_trees(patch, base_tree, result_tree))
    }

    /// The step this promote lands, for the intent and the journal (none for a document).
    pub(crate) fn step(&self, head_after: Option<&CommitId>) -> Option<Step> {
        let session = self.session.as_ref()?;
        Some(Step {
            number: self
                .previous
                .as_ref()
                .map_or_else(|| self.step_floor(session) + 1, |p| p.step.number + 1),
            session_created_at_ms: session.created_at_ms,
            from_tree: self.base_tree.clone()?,
            result_tree: self.result_tree.clone()?,
            isolation_head: self.isolation_head.clone(),
            head_after: head_after.cloned(),
            files_changed: self.patch.files_changed,
            chain_tip: None,
            nested: self.nested_path.clone(),
        })
    }

    /// The root's steps a rebase put behind the session's base, where numbering goes on.
    fn step_floor(&self, session: &SessionRecord) -> u64 {
        if self.nested_path.is_some() {
            0
        } else {
            session.steps_before_rebase()
        }
    }

    /// The id of the session promoted (none for a document).
    pub(crate) fn session_id(&self) -> Option<&str> {
        self.session.as_ref().map(|s| s.session_id.as_str())
    }

    /// The session a branch promote lands (an internal error for a document).
    pub(crate) fn branch_session(&self) -> Result<&SessionRecord> {
        (self.session.as_ref()).ok_or_else(|| Error::internal("a branch promote without a session"))
    }

    /// Where the session's commits start: the HEAD its last step saw, else the bound revision.
    pub(crate) fn commits_since<'a>(&'a self, session: &'a SessionRecord) -> &'a str {
        (self.previous.as_ref())
            .and_then(|p| p.step.isolation_head.as_deref())
            .unwrap_or(&session.bound_revision)
    }

    /// Where the source's HEAD must be: where the last step left it, else the bound revision.
    pub(crate) fn expected_head(&self) -> Option<&str> {
        let bound = self.session.as_ref()?.bound_revision.as_str();
        Some(
            self.previous
                .as_ref()
                .and_then(|p| p.step.head_after.as_deref())
                .unwrap_or(bound),
        )
    }
}

impl Candidate {
    /// Step 1 for a session: a fresh capture (or what the caller `known`s), as the delta since
    /// its last promoted step or its base tree.
    pub(crate) fn of_session(
        ctx: &Context,
        located: &Located,
        session: SessionRecord,
        known: Option<Known<'_>>,
    ) -> Result<Candidate> {
        let isolation = writable_isolation(&session)?;
        let (snap, nested, isolation_head) = match known {
            Some(known) => return Candidate::of_known(ctx, located, session, known),
            None => {
                let (snap, nested) =
                    crate::services::evidence::snapshot_all(ctx, located, &isolation)?;
                (snap, nested, isolation.head(&ctx.git).ok())
            }
        };
        Candidate::of_snapshot(ctx, located, session, (snap, nested, isolation_head), known)
    }

    /// [`Candidate::of_session`] of what the caller knows the isolation holds, which is not
    /// looked at.
    pub(crate) fn of_known(
        ctx: &Context,
        located: &Located,
        session: SessionRecord,
        known: Known<'_>,
    ) -> Result<Candidate> {
        let found = (
            crate::model::snapshot::Snapshot::flat(known.tree),
            crate::services::nested::Nested::default(),
            CommitId::new(known.head).ok(),
        );
        Candidate::of_snapshot(ctx, located, session, found, Some(known))
    }

    /// The candidate of the session's snapshot, nested change sets and isolation HEAD.
    fn of_snapshot(
        ctx: &Context,
        located: &Located,
        session: SessionRecord,
        (snap, nested, isolation_head): (
            crate::model::snapshot::Snapshot,
            crate::services::nested::Nested,
            Option<CommitId>,
        ),
        known: Option<Known<'_>>,
    ) -> Result<Candidate> {
        let previous = last_step(&located.store, &session, None)?;
        let from = delta_base(&session, previous.as_ref());
        let ahead = known.and_then(|known| known.ahead?.take(&from, &snap.tree));
        let patch = match ahead {
            Some(patch) => patch,
            None => snapshot::patch(
                &ctx.git,
                &located.repo.common_dir,
                &from,
                &snap.tree,
                &located.store.scratch_dir(),
            )?,
        };
        let result_tree = TreeId::new(&snap.tree)?;
        Ok(Candidate {
            isolation_head,
            session: Some(session),
            nested: snap.nested.clone(),
            snapshot: Some(snap),
            nested_found: nested,
            previous,
            made_from_trees: true,
            ..Candidate::of_trees(patch, Some(from), Some(result_tree))
        })
    }

    /// [`Candidate::of_session`], with patch mode's reads of HEAD and core settings beside it.
    pub(crate) fn of_session_beside_head(
        ctx: &Context,
        located: &Located,
        session: SessionRecord,
        known: Option<Known<'_>>,
    ) -> Result<Candidate> {
        let source = crate::git::repo::Repo::new(
            &ctx.git,
            session.source.clone(),
            located.repo.common_dir.clone(),
        );
        std::thread::scope(|scope| {
            let read = scope.spawn(|| {
                // Kept in the command's memo for the checkout's writer.
                let _ = ctx.git.core_settings(&source.toplevel);
                source.head_commit(&ctx.git)
            });
            let captured = Candidate::of_session(ctx, located, session, known);
            let head = read.join();
            let mut candidate = captured?;
            candidate.source_head = head.ok();
            Ok(candidate)
        })
    }

    /// Nothing new since the last step: `idempotent` with its digest (no step: `empty`).
    pub(crate) fn replay_last_step(&self, out: &mut PromoteOutcome) {
        if let Some(previous) = &self.previous {
            out.outcome = Outcome::Idempotent;
            out.digest = Some(previous.digest.clone());
            out.step = Some(previous.step.number);
            out.from_tree = Some(previous.step.from_tree.clone());
            out.patch_bytes = previous.patch_bytes;
            out.files_changed = previous.step.files_changed;
        }
    }

    /// Fills in the change set's sizes, nested repositories, step, and first touched paths.
    pub(crate) fn report_step(&self, out: &mut PromoteOutcome) {
        out.nested_repositories = self.nested.clone();
        out.patch_bytes = self.patch.bytes;
        out.files_changed = self.patch.files_changed;
        if self.patch.bytes == 0 {
            // Nothing to land is no step (a replay reports the last one).
            return;
        }
        out.files = self.patch.listed_paths();
        if let Some(step) = self.step(None) {
            out.step = Some(step.number);
            out.from_tree = Some(step.from_tree);
        }
    }
}
