//! `rebase`: moves a session onto a new base inside its isolation, with git's three-way
//! machinery (`merge-tree --write-tree`, in an object view: no configuration, attributes or
//! hooks of the repository take part, and no working tree until the result is known). The
//! session's commits since its bound revision are replayed, keeping their authors and
//! messages; its uncommitted work (tracked and untracked, as a snapshot) is merged on top and
//! left uncommitted. The user's checkout, index, stash and branches are never touched.
//!
//! Before anything changes, the isolation's HEAD, index and snapshot are pinned under private
//! refs and its index and HEAD files saved byte for byte, so `--abort` puts back exactly what
//! was there. Every change of the isolation goes through one write-ahead intent (`apply`),
//! finished by the next command that takes the repository lock if a crash interrupts it: a
//! kill leaves the pre-rebase, the rebased or the conflicted state.

use crate::base::ids::SessionId;
use crate::base::invalid::Invalid;
use crate::base::warning::Warning;
use serde::Serialize;

use crate::base::error::{Error, IoContext, Result};
use crate::base::fsutil;
use crate::base::paths::RepoPath;
use crate::context::{Context, Located};
use crate::git::{Merged, ObjectView, RefUpdate, SideNames};
use crate::model::isolation::{Isolation, writable_isolation};
use crate::model::snapshot::TempFile;
pub(crate) use crate::recovery::rebase_apply::forget;
use crate::recovery::rebase_apply::{self, SavedIndex};
pub use crate::recovery::rebase_record::Replayed;
use crate::recovery::rebase_record::{
    self, Applying, HeadPlan, IndexPlan, Pre, RebaseState, Stage, Then,
};
pub(crate) use crate::recovery::rebase_record::{conflicted_onto, conflicted_paths};
pub(crate) use crate::services::presnapshot::Presnapshot;
use crate::store::state::SessionRecord;

/// What `rebase` is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Action {
    /// Move the session onto a new base.
    #[default]
    Start,
    /// Go on after the conflicts were resolved.
    Continue,
    /// Put the isolation back as it was before the rebase.
    Abort,
}

/// The options of a rebase.
#[derive(Debug, Clone, Default)]
pub struct RebaseOptions {
    /// The session (default: the one `-s` resolution finds).
    pub session_id: Option<String>,
    /// Where to move it (default: the source's current HEAD).
    pub onto: Option<String>,
    /// Start, continue or abort.
    pub action: Action,
}

/// How a rebase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RebaseResult {
    /// The session is on its new base.
    Rebased,
    /// The session was on that base already: nothing changed.
    UpToDate,
    /// It stopped at a conflict, left in the isolation.
    Conflicted,
    /// A conflicted rebase was resolved and finished.
    Continued,
    /// A conflicted rebase was undone.
    Aborted,
}

/// What a rebase did (`a3s-iso.rebase.v1`).
#[derive(Debug, Clone, Serialize)]
pub struct RebaseOutcome {
    /// How it ended.
    pub outcome: RebaseResult,
    /// The session.
    pub session_id: SessionId,
    /// The revision the session was bound at before.
    pub from_revision: String,
    /// The revision it moves onto.
    pub to_revision: String,
    /// The isolation's HEAD afterwards.
    pub head: Option<String>,
    /// The session's commits, replayed so far.
    pub replayed: Vec<Replayed>,
    /// The commit whose replay conflicted (`null`: the uncommitted work did, or no conflict).
    pub conflict_commit: Option<String>,
    /// The conflicting paths.
    pub conflicting_paths: Vec<String>,
    /// What recovery or the rebase wants the user to know.
    pub warnings: Vec<Warning>,
    /// After a fresh rebase that finished, when its snapshot found nothing nested: the tree
    /// the isolation holds now, all of the session's work (what `land` tests and lands).
    #[serde(skip)]
    pub(crate) tree: Option<String>,
}

impl RebaseOutcome {
    fn new(outcome: RebaseResult, id: &SessionId, from: &str, to: &str) -> RebaseOutcome {
        RebaseOutcome {
            outcome,
            session_id: id.clone(),
            from_revision: from.to_string(),
            to_revision: to.to_string(),
            head: None,
            replayed: Vec::new(),
            conflict_commit: None,
            conflicting_paths: Vec::new(),
            warnings: Vec::new(),
            tree: None,
        }
    }

    fn of_state(outcome: RebaseResult, state: &RebaseState) -> RebaseOutcome {
        let mut out = RebaseOutcome::new(
            outcome,
            &state.session_id,
            &state.from_revision,
            &state.to_revision,
        );
        out.head = Some(state.tip.clone());
        out.replayed = state.replayed.clone();
        out.conflict_commit = state.conflict_commit.clone();
        out.conflicting_paths = state.paths.iter().map(RepoPath::shown).collect();
        out
    }

    /// 3 for `conflicted` (look at it), else 0.
    pub fn exit_code(&self) -> i32 {
        match self.outcome {
            RebaseResult::Conflicted => 3,
            _ => 0,
        }
    }
}

/// Rebases, continues or aborts, under the repository lock and the session's lease.
pub fn rebase(ctx: &Context, opts: &RebaseOptions) -> Result<RebaseOutcome> {
    rebase_ahead(ctx, opts, None)
}

/// [`rebase`], with the session's snapshot taken ahead ([`Presnapshot`]), used if it is still
/// current.
pub(crate) fn rebase_ahead(
    ctx: &Context,
    opts: &RebaseOptions,
    pre: Option<Presnapshot>,
) -> Result<RebaseOutcome> {
    if opts.action != Action::Abort {
        ctx.git.require_merge_tree()?;
    }
    let located = crate::recovery::locate(ctx)?;
    let found = ctx.resolve_session(&located, opts.session_id.as_deref())?;
    let _lock = crate::recovery::lock(ctx, &located.repo)?;
    let _lease = located.store.lease_or_busy(&found.session_id)?;
    // Read again under the lock: recovery may have just finished a rebase of it.
    let session = located
        .store
        .load_session(&found.session_id)?
        .ok_or_else(|| Error::internal("the session's record went away"))?;
    let state = rebase_record::load_state(&located.store, &session.session_id)?
        .filter(|s| s.session_created_at_ms == session.created_at_ms);
    let mut work = Work::new(ctx, &located, &session)?;
    work.pre = pre.filter(|pre| pre.session_id() == &session.session_id);
    let mut out = match (opts.action, state) {
        (Action::Start, Some(state)) => {
            let paths = state.paths.iter().map(RepoPath::shown).collect();
            return Err(conflicted_error(&state.session_id, paths));
        }
        (Action::Start, None) => work.start(opts.onto.as_deref())?,
        (Action::Continue, Some(state)) => work.resume(state)?,
        (Action::Abort, Some(state)) => work.abort(state)?,
        (_, None) => {
            return Err(Error::from(Invalid::NoConflictedRebase {
                session_id: session.session_id.to_string(),
            }));
        }
    };
    out.warnings.extend(ctx.take_notices());
    Ok(out)
}

/// `session_conflicted` for a session whose rebase stopped at a conflict.
pub(crate) fn conflicted_error(session_id: &SessionId, paths: Vec<String>) -> Error {
    conflicted(session_id, "its rebase stopped at a conflict", paths)
}

/// `session_conflicted`: `what` keeps the session's rebase from going on, at `paths`.
fn conflicted(session_id: &SessionId, what: &str, paths: Vec<String>) -> Error {
    Error::SessionConflicted {
        session_id: session_id.to_string(),
        what: what.into(),
        paths,
    }
}

/// One rebase at work: the session, its isolation and an object view to merge in.
struct Work<'a> {
    ctx: &'a Context,
    located: &'a Located,
    session: &'a SessionRecord,
    isolation: Isolation,
    view: ObjectView,
    /// The tree of the snapshot this command took of the isolation (whose files stay as they
    /// are under the lock and the session's lease until the intent is carried out).
    now: std::cell::RefCell<Option<String>>,
    /// The isolation's index as this command saved it (before the rebase).
    index_now: std::cell::RefCell<Option<SavedIndex>>,
    /// This command's snapshot found neither a nested repository nor a gitlink: its tree is
    /// all of the session's work.
    flat: std::cell::Cell<bool>,
    /// What conflict markers call the side moved onto, once a merge needed it.
    onto: std::cell::OnceCell<String>,
    /// The snapshot taken ahead of this rebase, if one was.
    pre: Option<Presnapshot>,
    /// The pins of the isolation as it was, being written while the merge is worked out (only
    /// objects are written until the isolation changes, which waits for them).
    pinning: std::cell::RefCell<Option<std::thread::JoinHandle<Result<()>>>>,
}

impl Drop for Work<'_> {
    fn drop(&mut self) {
        let _ = self.pinned();
    }
}

impl<'a> Work<'a> {
    fn new(ctx: &'a Context, located: &'a Located, session: &'a SessionRecord) -> Result<Self> {
        let isolation = writable_isolation(session)?;
        let view = ObjectView::new(
            &ctx.git,
            &located.repo.common_dir,
            &[&session.bound_revision],
            &located.store.scratch_dir(),
        )?;
        Ok(Work {
            ctx,
            located,
            session,
            isolation,
            view,
            now: std::cell::RefCell::new(None),
            index_now: std::cell::RefCell::new(None),
            flat: std::cell::Cell::new(false),
            onto: std::cell::OnceCell::new(),
            pre: None,
            pinning: std::cell::RefCell::new(None),
        })
    }

    /// A fresh rebase onto `onto` (default: the source's HEAD).
    fn start(&mut self, onto: Option<&str>) -> Result<RebaseOutcome> {
        let session = self.session;
        if session.carried_wip {
            return Err(Error::from(Invalid::RebaseOfCarriedWip {
                session_id: session.session_id.to_string(),
            }));
        }
        let target = self.target(onto)?;
        let id = &session.session_id;
        if target == session.bound_revision {
            let mut out =
                RebaseOutcome::new(RebaseResult::UpToDate, id, &session.bound_revision, &target);
            out.head = self.isolation.head(&self.ctx.git).ok().map(String::from);
            return Ok(out);
        }
        let head = self.isolation.head(&self.ctx.git)?;
        let commits = self
            .view
            .first_parent_chain(&session.bound_revision, &head)?
            .ok_or_else(|| Invalid::HeadNotDescendant {
                head: head.to_string(),
                bound: session.bound_revision.to_string(),
            })?;
        let pre = self.pin_pre(&head)?;
        let state = RebaseState {
            schema: rebase_record::STATE_SCHEMA.into(),
            session_id: id.clone(),
            session_created_at_ms: session.created_at_ms,
            pre,
            from_revision: session.bound_revision.clone(),
            to_revision: target.clone(),
            tip: target,
            replayed: Vec::new(),
            conflict_commit: None,
            remaining: commits,
            paths: Vec::new(),
        };
        self.proceed(state, RebaseResult::Rebased)
    }

    /// The commit to move onto.
    fn target(&self, onto: Option<&str>) -> Result<String> {
        let repo = &self.located.repo;
        let found = match onto {
            None => repo.head_commit(&self.ctx.git).map(String::from),
            Some(rev) => self
                .ctx
                .git
                .rev_parse(&repo.toplevel, &format!("{rev}^{{commit}}"))?,
        };
        found.ok_or_else(|| {
            Error::from(Invalid::Onto {
                onto: onto.map(str::to_string),
            })
        })
    }

    /// Pins the isolation as it is (HEAD, index tree, snapshot) and saves its index and HEAD
    /// files byte for byte.
    fn pin_pre(&mut self, head: &str) -> Result<Pre> {
        let store = &self.located.store;
        let id = &self.session.session_id;
        let ahead = self.pre.take();
        let snapshot = match ahead.and_then(|pre| pre.still_current(self.located, &self.isolation))
        {
            Some(snapshot) => snapshot,
            None => self.isolation.snapshot(self.ctx, self.located)?,
        };
        *self.now.borrow_mut() = Some(snapshot.tree.clone());
        self.flat
            .set(snapshot.nested.is_empty() && snapshot.gitlinks.is_empty());
        let admin_index = self.isolation.admin.join("index");
        let saved_index = rebase_record::saved_index(store, id);
        let (index_tree, index_now) =
            if std::fs::symlink_metadata(&admin_index).is_ok_and(|m| m.is_file()) {
                // The tree a rebase noted for this very file, read before the link moves its
                // change time.
                let note = store.isolation_index_note(&self.isolation.admin);
                let before = fsutil::FileStamp::of(&admin_index)?;
                let noted = crate::model::snapshot::noted_tree_at(&note, &admin_index);
                let stamp = fsutil::keep_as_is(&admin_index, &saved_index)?;
                let tree = match noted.filter(|_| stamp.same_file(&before)) {
                    Some(tree) if self.tree_here(&tree)? => Some(tree),
                    _ => self.index_tree(&saved_index)?,
                };
                let saved = tree.clone().map(|tree| SavedIndex { tree, stamp });
                (tree, saved)
            } else {
                fsutil::remove_file_if_exists(&saved_index)?;
                (None, None)
            };
        let head_bytes = fsutil::read_small_regular_file(&self.isolation.admin.join("HEAD"), 4096)
            .unwrap_or_else(|_| format!("{head}\n").into_bytes());
        fsutil::write_atomic(&rebase_record::saved_head(store, id), &head_bytes)?;
        let message = format!("a3s-iso: the isolation of session {id} before a rebase\n");
        let snapshot_commit =
            self.view
                .commit_tree(&snapshot.tree, head, None, message.as_bytes())?;
        let mut pins = vec![
            ("head", head.to_string()),
            ("snapshot", snapshot_commit.clone()),
        ];
        if let Some(tree) = &index_tree {
            pins.push(("index", tree.clone()));
        }
        self.index_now.replace(index_now);
        let (git, dir, updates) = self.pin_updates(&pins);
        let pinning =
            std::thread::spawn(move || git.update_refs(&dir, &updates, "a3s-iso: rebase"));
        self.pinning.replace(Some(pinning));
        Ok(Pre {
            head: head.to_string(),
            snapshot_tree: snapshot.tree,
            snapshot_commit,
            index_tree,
        })
    }

    /// The tree of an index file (`None` when it holds conflicts): its cache tree's when whole and
    /// here, else what `write-tree` writes from a copy (it may rewrite the file it reads).
    fn index_tree(&self, index: &std::path::Path) -> Result<Option<String>> {
        let bytes = std::fs::read(index).ctx(|| format!("cannot read {}", index.display()))?;
        if let Some(tree) = crate::git::index_file::cached_tree(&bytes)
            && self.tree_here(&tree)?
        {
            return Ok(Some(tree));
        }
        let (copy, wt) = self.index_copy(index)?;
        wt.on_index(copy.path()).try_write_tree()
    }

    /// A copy of the index file `index` in scratch, and git on the isolation to read it with.
    fn index_copy(&self, index: &std::path::Path) -> Result<(TempFile, crate::git::HermeticGit)> {
        let scratch = self.located.store.scratch_dir();
        let copy = TempFile::new(&scratch, "index")?;
        std::fs::copy(index, copy.path()).ctx(|| format!("cannot copy {}", index.display()))?;
        Ok((copy, self.isolation.git(&self.ctx.git, &scratch)?))
    }

    /// The tree of `commit`; the command knows HEAD's already when it read HEAD (a landing's
    /// target).
    fn tree_of(&self, commit: &str) -> Result<String> {
        let question = format!("{commit}^{{tree}}");
        match self.ctx.git.recall(&self.located.repo.toplevel, &question) {
            Some(tree) => Ok(tree),
            None => Ok(self.view.commit_info(commit)?.tree),
        }
    }

    /// Whether the repository holds the tree `tree`.
    fn tree_here(&self, tree: &str) -> Result<bool> {
        // The session's base is pinned with it (an index nothing was staged in holds it).
        if *self.session.base_tree == *tree {
            return Ok(true);
        }
        // One a rebase or a snapshot wrote lately is loose: its file says so, without a git.
        if crate::base::ids::is_object_hex(tree) {
            let (fan, rest) = tree.split_at(2);
            let objects = self.located.repo.common_dir.join("objects");
            let loose = std::fs::symlink_metadata(objects.join(fan).join(rest));
            if loose.is_ok_and(|meta| meta.is_file() && meta.len() > 0) {
                return Ok(true);
            }
        }
        let found = self
            .ctx
            .git
            .object_info(&self.located.repo.toplevel, &[tree.to_string()])?;
        Ok(found
            .first()
            .and_then(Option::as_ref)
            .is_some_and(|info| crate::git::is_tree_type(&info.kind)))
    }

    /// Sets `<ns>sessions/<id>/rebase/<name>` for each pair, in one transaction.
    fn pin(&self, pins: &[(&str, String)]) -> Result<()> {
        self.pinned()?;
        let (git, dir, updates) = self.pin_updates(pins);
        git.update_refs(&dir, &updates, "a3s-iso: rebase")
    }

    /// What [`Work::pin`] runs: git, where, and the updates.
    fn pin_updates(
        &self,
        pins: &[(&str, String)],
    ) -> (crate::git::Git, std::path::PathBuf, Vec<RefUpdate>) {
        let ns = self.located.store.refs();
        let dir = ns.session_dir(&self.session.session_id);
        let updates: Vec<RefUpdate> = pins
            .iter()
            .map(|(name, target)| RefUpdate::Set {
                name: format!("{dir}rebase/{name}"),
                target: target.clone(),
            })
            .collect();
        let repo = self.located.repo.common_dir.clone();
        (self.ctx.git.clone(), repo, updates)
    }

    /// Waits for the pins [`Work::pin_pre`] set going: the isolation changes only after them.
    fn pinned(&self) -> Result<()> {
        match self.pinning.borrow_mut().take() {
            Some(pinning) => pinning
                .join()
                .unwrap_or_else(|_| Err(Error::internal("the rebase's pins stopped"))),
            None => Ok(()),
        }
    }

    /// Replays what is left of the session's commits, then merges its uncommitted work.
    fn proceed(&self, mut state: RebaseState, done: RebaseResult) -> Result<RebaseOutcome> {
        while !state.remaining.is_empty() {
            let commit = state.remaining.remove(0);
            let info = self.view.commit_info(&commit)?;
            let parent = info
                .parents
                .first()
                .cloned()
                .ok_or_else(|| Error::internal("a replayed commit without a parent"))?;
            let theirs = format!("session/{}/{}", state.session_id, short(&commit));
            let sides = (parent.as_str(), state.tip.as_str(), commit.as_str());
            let merged = self.merge_onto(sides, &state.to_revision, &theirs)?;
            if !merged.conflicts.is_empty() {
                state.conflict_commit = Some(commit);
                return self.stop(state, merged);
            }
            self.add_replayed(&mut state, commit, &info, &merged.tree)?;
        }
        let theirs = format!("session/{}/uncommitted", state.session_id);
        let sides = (
            state.pre.head.as_str(),
            state.tip.as_str(),
            state.pre.snapshot_commit.as_str(),
        );
        let merged = self.merge_onto(sides, &state.to_revision, &theirs)?;
        if !merged.conflicts.is_empty() {
            state.conflict_commit = None;
            return self.stop(state, merged);
        }
        self.finish(state, merged.tree, done)
    }

    /// Merges `(base, ours, theirs)` with the sides named for conflict markers, as git's name
    /// `HEAD` and the commit. Names show only where a merge conflicts (markers, a file moved
    /// aside), so the merge is first made of the commits alone, and one without conflicts is
    /// taken as it is: no name is written, and the side moved onto (`to`) is named, which
    /// reads the source's HEAD and branch, only once one conflicts.
    fn merge_onto(&self, sides: (&str, &str, &str), to: &str, theirs: &str) -> Result<Merged> {
        let unnamed = self.view.merge(sides.0, sides.1, sides.2)?;
        if unnamed.conflicts.is_empty() {
            return Ok(unnamed);
        }
        let ours = self.onto.get_or_init(|| self.onto_name(to));
        let names = SideNames {
            base: "base",
            ours,
            theirs,
        };
        self.view.merge_named(sides, names)
    }

    /// What conflict markers call the side the session moves onto: the source's branch when
    /// the rebase moves onto its HEAD (as `git rebase` calls it `HEAD`), else `onto`.
    fn onto_name(&self, to: &str) -> String {
        let repo = &self.located.repo;
        let at_head = repo
            .head_commit(&self.ctx.git)
            .is_some_and(|head| head.as_str() == to);
        let branch = at_head
            .then(|| self.ctx.git.current_branch(&repo.toplevel).ok().flatten())
            .flatten();
        branch
            .and_then(|b| b.strip_prefix("refs/heads/").map(str::to_string))
            .unwrap_or_else(|| UNNAMED_ONTO.into())
    }

    /// A replayed commit onto the tip; dropped when it brings nothing new there.
    fn add_replayed(
        &self,
        state: &mut RebaseState,
        commit: String,
        info: &crate::git::CommitInfo,
        tree: &str,
    ) -> Result<()> {
        let tip_tree = self.view.commit_info(&state.tip)?.tree;
        let rebased = (tree != tip_tree)
            .then(|| self.view.commit_tree(tree, &state.tip, Some(info), b""))
            .transpose()?;
        if let Some(rebased) = &rebased {
            state.tip = rebased.clone();
        }
        state.replayed.push(Replayed {
            commit,
            rebased,
            subject: info.subject(),
        });
        Ok(())
    }

    /// Leaves the conflict in the isolation: the merge's tree (markers included) in its files,
    /// the stages in its index, HEAD at the chain replayed so far.
    fn stop(&self, mut state: RebaseState, merged: Merged) -> Result<RebaseOutcome> {
        state.paths = merged.paths().into_iter().map(RepoPath).collect();
        self.pin(&[
            ("tip", state.tip.clone()),
            ("conflict", merged.tree.clone()),
        ])?;
        let stages = merged
            .conflicts
            .iter()
            .map(|c| Stage {
                mode: c.mode.clone(),
                oid: c.oid.clone(),
                stage: c.stage,
                path: RepoPath(c.path.clone()),
            })
            .collect();
        let out = RebaseOutcome::of_state(RebaseResult::Conflicted, &state);
        let index = IndexPlan::Conflict {
            tree: merged.tree.clone(),
            stages,
        };
        let head = HeadPlan::Commit(state.tip.clone());
        self.carry_out(merged.tree, index, head, Then::Conflicted(Box::new(state)))?;
        Ok(out)
    }

    /// The isolation at the rebased chain with the merged uncommitted work; the session bound
    /// at the target.
    fn finish(
        &self,
        state: RebaseState,
        tree: String,
        done: RebaseResult,
    ) -> Result<RebaseOutcome> {
        let tip_tree = self.tree_of(&state.tip)?;
        // With nothing replayed the tip is the target itself: its tree is read once.
        let base_tree = match state.tip == state.to_revision {
            true => tip_tree.clone(),
            false => self.tree_of(&state.to_revision)?,
        };
        let steps_before = last_step_number(&self.located.store, self.session)?;
        let mut out = RebaseOutcome::of_state(done, &state);
        out.conflict_commit = None;
        out.conflicting_paths.clear();
        out.tree = (done == RebaseResult::Rebased && self.flat.get()).then(|| tree.clone());
        let then = Then::Clean {
            revision: state.to_revision.clone(),
            base_tree,
            steps_before,
        };
        let head = HeadPlan::Commit(state.tip.clone());
        self.carry_out(tree, IndexPlan::Tree(tip_tree), head, then)?;
        Ok(out)
    }

    /// Carries out a fresh intent for the isolation's files (`tree`), index, HEAD and what
    /// follows, from the snapshot this command took (none for an abort).
    fn carry_out(&self, tree: String, index: IndexPlan, head: HeadPlan, then: Then) -> Result<()> {
        self.pinned()?;
        let intent = Applying {
            schema: rebase_record::INTENT_SCHEMA.into(),
            session_id: self.session.session_id.clone(),
            tree,
            index,
            head,
            then,
        };
        let now = self.now.borrow().clone();
        let index = self.index_now.borrow().clone();
        let start = rebase_apply::Start::Fresh {
            now: now.as_deref(),
            index: index.as_ref(),
        };
        rebase_apply::carry_out(&self.ctx.git, &self.located.store, &intent, start)
    }

    /// `--continue`: the conflicts must be resolved (no stages, no markers); a conflicted
    /// commit is committed as resolved, the rest replayed, the uncommitted work merged.
    fn resume(&self, mut state: RebaseState) -> Result<RebaseOutcome> {
        self.check_resolved(&state)?;
        let snapshot = self.isolation.snapshot(self.ctx, self.located)?;
        *self.now.borrow_mut() = Some(snapshot.tree.clone());
        match state.conflict_commit.take() {
            Some(commit) => {
                let info = self.view.commit_info(&commit)?;
                self.add_replayed(&mut state, commit, &info, &snapshot.tree)?;
                state.paths.clear();
                self.proceed(state, RebaseResult::Continued)
            }
            None => self.finish(state, snapshot.tree, RebaseResult::Continued),
        }
    }

    /// Refuses to go on while the isolation's index has conflict stages or a conflicted file
    /// still holds conflict markers.
    fn check_resolved(&self, state: &RebaseState) -> Result<()> {
        let admin_index = self.isolation.admin.join("index");
        let mut unmerged: Vec<String> = Vec::new();
        if std::fs::symlink_metadata(&admin_index).is_ok_and(|m| m.is_file()) {
            let (copy, wt) = self.index_copy(&admin_index)?;
            let listed = wt.on_index(copy.path()).unmerged_entries()?;
            // A path's stages sit next to each other, but two names that are not UTF-8 may
            // read alike and sit apart: each name once, whatever its place.
            for (path, _) in crate::recovery::intent::Entry::listed(&listed, 1) {
                let path = String::from_utf8_lossy(path).into_owned();
                if !unmerged.contains(&path) {
                    unmerged.push(path);
                }
            }
        }
        if !unmerged.is_empty() {
            let what =
                "paths are still unmerged in the isolation's index (git add them once resolved)";
            return Err(conflicted(&state.session_id, what, unmerged));
        }
        let marked: Vec<String> = state
            .paths
            .iter()
            .filter(|p| has_markers(&p.under(&self.isolation.tree)))
            .map(RepoPath::shown)
            .collect();
        if !marked.is_empty() {
            let what = "files still hold conflict markers";
            return Err(conflicted(&state.session_id, what, marked));
        }
        Ok(())
    }

    /// `--abort`: the isolation as it was before the rebase, byte for byte.
    fn abort(&self, state: RebaseState) -> Result<RebaseOutcome> {
        let mut out = RebaseOutcome::new(
            RebaseResult::Aborted,
            &state.session_id,
            &state.from_revision,
            &state.to_revision,
        );
        out.head = Some(state.pre.head.clone());
        let tree = state.pre.snapshot_tree;
        self.carry_out(tree, IndexPlan::Saved, HeadPlan::Saved, Then::Aborted)?;
        Ok(out)
    }
}

/// What conflict markers call the side moved onto when it is not the source's HEAD.
const UNNAMED_ONTO: &str = "onto";

/// The most a conflicted file is read to look for markers.
const MARKER_SCAN_LIMIT: u64 = 64 * 1024 * 1024;

/// Whether a file holds a line git writes around a conflict.
fn has_markers(path: &std::path::Path) -> bool {
    let Ok(bytes) = fsutil::read_small_regular_file(path, MARKER_SCAN_LIMIT) else {
        return false;
    };
    bytes.split(|b| *b == b'\n').any(|line| {
        line.starts_with(b"<<<<<<< ")
            || line.starts_with(b">>>>>>> ")
            || line == b"======="
            || line == b"=======\r"
    })
}

/// The number of the session's last promoted root step, whatever its rebases (0: none).
fn last_step_number(store: &crate::store::state::Store, session: &SessionRecord) -> Result<u64> {
    Ok(store
        .journal_entries()?
        .into_iter()
        .filter(|e| e.session_id.as_deref() == Some(session.session_id.as_str()))
        .filter_map(|e| e.step)
        .filter(|s| s.nested.is_none() && s.session_created_at_ms == session.created_at_ms)
        .map(|s| s.number)
        .max()
        .unwrap_or(0)
        .max(session.steps_before_rebase()))
}

/// A commit id as conflict markers show it: its first seven digits.
fn short(oid: &str) -> &str {
    oid.get(..7).unwrap_or(oid)
}
