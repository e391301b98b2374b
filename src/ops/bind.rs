//! `bind`: give a session its own detached worktree next to the source, fail-closed.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::base::error::{Error, IoContext, Result, Taken, Unavailable};
use crate::base::fsutil::now_ms;
use crate::base::ids::{CommitId, SessionId, TreeId};
use crate::base::owner::{Liveness, Owner, OwnerView, long_lived_ancestor, parent_pid};
use crate::base::reflink::Fill;
use crate::base::warning::{BindWarning, Warning};
use crate::context::{Context, Located};
use crate::git::HermeticGit;
use crate::model::isolation;
use crate::model::wip::WorkingState;
use crate::store::lock::RepoLock;
use crate::store::state::{
    ClaimRecord, CreatedBy, RegistryEntry, SessionRecord, SessionState, register_source,
};

/// How many dirty paths a `dirty_source` error lists.
const DIRTY_PATHS_SHOWN: usize = 10;

/// What `bind` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct BindOptions {
    /// The session id; generated when `None`.
    pub session_id: Option<String>,
    /// Bind at HEAD even though the source has local changes (they stay out of the isolation).
    pub allow_dirty: bool,
    /// Record a session with no isolation tree.
    pub read_only: bool,
    /// Where the isolation goes instead of beside the source.
    pub base_dir: Option<PathBuf>,
    /// Who owns the session; default: the parent of a3s-iso.
    pub owner: OwnerChoice,
    /// Rebuild a gone isolation at the bound revision, its work restored as uncommitted changes.
    pub resume: bool,
    /// Initialise the submodules in the isolation.
    pub submodules: bool,
    /// Start the isolation from the source's working state, which becomes the session's base.
    pub carry_wip: bool,
    /// Gitignore patterns of ignored files to copy in, besides `.worktreeinclude`'s.
    pub copy_ignored: Vec<String>,
    /// Commands run in a new isolation once bound; the first that fails is `setup_failed`.
    pub setup: crate::services::setup::Setup,
    /// A tool binding for a process (a Claude Code hook): it never takes over a session it
    /// did not make (`session_exists`).
    pub created_by: Option<CreatedBy>,
    /// Do not reclaim dead isolations before binding; see [`crate::flows::setup::bind`].
    pub no_auto_sweep: bool,
}

/// Who is to own a session (`--owner`, `--owner-pid`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OwnerChoice {
    /// The parent of a3s-iso (the shell or harness that called it).
    #[default]
    Parent,
    /// This process of this host (`--owner pid:N`, `--owner-pid N`).
    Pid(u32),
    /// No owner process (`--owner none`), for scripts and CI; kept by sweep unless asked.
    Nobody,
}

impl OwnerChoice {
    /// `none` or `pid:N`, as `--owner` takes it.
    pub fn parse(text: &str) -> Option<OwnerChoice> {
        if text == "none" {
            return Some(OwnerChoice::Nobody);
        }
        text.strip_prefix("pid:")
            .and_then(|pid| pid.parse::<u32>().ok())
            .map(OwnerChoice::Pid)
    }
}

/// The bound session, as `bind` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct BindOutcome {
    /// The session's id (generated ones included).
    pub session_id: SessionId,
    /// The source checkout.
    #[serde(with = "crate::base::paths::fs_path")]
    pub source: PathBuf,
    /// The isolation; `null` for a read-only session.
    #[serde(with = "crate::base::paths::fs_path_opt")]
    pub worktree: Option<PathBuf>,
    /// The commit the isolation is detached at.
    pub bound_revision: String,
    /// The tree change sets are taken against (with carried WIP, the source's working state).
    pub base_tree: TreeId,
    /// An existing binding was returned as it was.
    pub reused: bool,
    /// No isolation: writing commands refuse the session.
    pub read_only: bool,
    /// The isolation started from the source's local changes.
    pub carried_wip: bool,
    /// The source had local changes that the isolation does not contain.
    pub wip_left_out: bool,
    /// Who owns the session and whether it runs; `null` for an ownerless one.
    pub owner: Option<OwnerView>,
    /// What the user should know (printed on stderr; also in the JSON).
    pub warnings: Vec<Warning>,
    /// The isolation is a spare of the pool, moved to the bound revision (not a checkout).
    pub warm: bool,
    /// How the isolation's files were made (`clone` or `checkout`); `null` when read-only.
    pub fill: Option<crate::base::reflink::Fill>,
    /// Ignored files copied from the source; `null` when no pattern (or no new isolation).
    pub copied_ignored: Option<crate::services::copyignored::CopyReport>,
    /// The setup commands that ran in the new isolation, in order.
    pub setup: Vec<crate::services::setup::SetupRun>,
    /// The dead isolations reclaimed (snapshotted first) before binding, as `sweep` says.
    pub reclaimed: Vec<crate::services::reclaimed::Reclaimed>,
}

impl BindOutcome {
    fn from_record(record: &SessionRecord, reused: bool, warnings: Vec<Warning>) -> BindOutcome {
        BindOutcome {
            session_id: record.session_id.clone(),
            source: record.source.clone(),
            worktree: record.worktree.clone(),
            bound_revision: record.bound_revision.clone(),
            base_tree: record.base_tree.clone(),
            reused,
            read_only: record.read_only,
            carried_wip: record.carried_wip,
            wip_left_out: record.wip_left_out,
            owner: OwnerView::of(record.owner.as_ref()),
            warnings,
            warm: false,
            fill: record.fill,
            copied_ignored: None,
            setup: Vec::new(),
            reclaimed: Vec::new(),
        }
    }
}

/// Binds a session: reuses its healthy isolation, or builds one at HEAD (setup commands are
/// [`crate::flows::setup::bind`]'s).
pub fn bind_isolation(ctx: &Context, opts: &BindOptions) -> Result<BindOutcome> {
    let session_id =
        (opts.session_id.clone()).map_or_else(|| Ok(SessionId::generate()), SessionId::new)?;
    let owner = owner_for(opts)?;
    let explicit = opts.owner != OwnerChoice::Parent;
    let located = crate::recovery::locate(ctx)?;
    crate::store::scratch::clean(located.store.dir());
    refuse_outside_scope(ctx, &located, &session_id)?;
    if opts.resume {
        return resume(ctx, &located, &session_id, owner, opts);
    }
    let head = located.repo.head(&ctx.git)?;

    // A healthy binding is reused as it is, whatever the source's HEAD or WIP is now.
    if live_record(&located, &session_id)?.is_some() {
        let _lock = crate::recovery::lock(ctx, &located.repo)?;
        refuse_outside_scope(ctx, &located, &session_id)?;
        if let Some(existing) = live_record(&located, &session_id)? {
            made_for(&existing, opts)?;
            return reuse(&located, existing, owner, explicit);
        }
    }

    let wip = plan_wip(ctx, &located, opts, &head.1)?;
    let record = wip.new_record(session_id, &located, head, opts, owner);
    let lock = crate::recovery::lock(ctx, &located.repo)?;
    refuse_outside_scope(ctx, &located, &record.session_id)?;
    if let Some(existing) = live_record(&located, &record.session_id)? {
        made_for(&existing, opts)?;
        return reuse(&located, existing, record.owner, explicit);
    }
    if opts.created_by.is_some()
        && let Some(discarded) = located.store.load_session(&record.session_id)?
    {
        made_for(&discarded, opts)?;
    }
    let restore = wip.carried.map(|c| Restore {
        tree: c.worktree_tree,
        index_tree: Some(c.index_tree),
    });
    let unbuilt = Unbuilt {
        record,
        restore,
        warnings: wip.warnings,
    };
    let outcome = create(ctx, &located, lock, unbuilt, opts)?;
    // A scoped caller (an MCP server) may act on what it bound from now on.
    ctx.admit(&outcome.session_id);
    Ok(outcome)
}

/// Refuses a known session outside the caller's scope: binding it would take over someone
/// else's. Checked again under the lock, where another process may have bound it meanwhile.
fn refuse_outside_scope(ctx: &Context, located: &Located, session_id: &SessionId) -> Result<()> {
    if !ctx.may_act_on(session_id) && located.store.load_session(session_id)?.is_some() {
        ctx.require_granted(session_id)?;
    }
    Ok(())
}

/// A tool's bind takes only a session the same tool made for the same process, or one it
/// made that is discarded (nothing of a person's is in it); else `session_exists`.
fn made_for(record: &SessionRecord, opts: &BindOptions) -> Result<()> {
    let Some(wanted) = &opts.created_by else {
        return Ok(());
    };
    let granted = record.created_by.as_ref().is_some_and(|made| {
        made.tool == wanted.tool
            && (made.process == wanted.process || record.state == SessionState::Discarded)
    });
    if granted {
        return Ok(());
    }
    Err(Error::from(Taken::NotCreatedHere {
        session_id: record.session_id.to_string(),
    }))
}

/// The owner asked for: a running process, none, or the parent of a3s-iso (past a shell
/// running a command string, to the harness or terminal that started it).
pub(crate) fn owner_for(opts: &BindOptions) -> Result<Option<Owner>> {
    match opts.owner {
        OwnerChoice::Pid(pid) => Owner::of_pid(pid).map(Some).ok_or_else(|| {
            Error::usage(format!(
                "owner pid {pid} is not a running process on this host"
            ))
        }),
        OwnerChoice::Nobody => Ok(None),
        OwnerChoice::Parent => Ok(Some(
            Owner::of_pid(long_lived_ancestor(parent_pid())).unwrap_or_else(Owner::this_process),
        )),
    }
}

/// The session's record unless it is missing or discarded. A swept session is refused with
/// `session_exists`: a new binding would shadow the work its swept snapshot holds.
fn live_record(located: &Located, session_id: &SessionId) -> Result<Option<SessionRecord>> {
    let record = located.store.load_session(session_id)?;
    // Another repository's discarded session leaves the id free here.
    if let Some(other) = record
        .as_ref()
        .filter(|r| r.state != SessionState::Discarded && !located.owns(r))
    {
        return Err(belongs_elsewhere(located, other));
    }
    if let Some(summary) = record.as_ref().and_then(SessionRecord::swept_summary) {
        return Err(Error::from(Taken::Swept {
            session_id: session_id.to_string(),
            summary,
        }));
    }
    Ok(record.filter(|record| record.state != SessionState::Discarded))
}

/// A session id of a state dir shared with another repository, whose session it is.
fn belongs_elsewhere(located: &Located, other: &SessionRecord) -> Error {
    Error::from(Taken::OtherRepository {
        session_id: other.session_id.to_string(),
        store: located.store.dir().to_path_buf(),
        repository: other.source.clone(),
    })
}

/// The source's local changes: carried, left out with a warning, or refused (`dirty_source`).
#[derive(Default)]
struct WipPlan {
    /// `--carry-wip` with local changes: the state the isolation starts from.
    carried: Option<WorkingState>,
    /// `--allow-dirty` with local changes: they are not in the isolation.
    left_out: bool,
    warnings: Vec<Warning>,
}

fn plan_wip(
    ctx: &Context,
    located: &Located,
    opts: &BindOptions,
    head_tree: &str,
) -> Result<WipPlan> {
    let mut plan = WipPlan::default();
    if opts.carry_wip {
        let state = crate::model::wip::snapshot_source(
            &ctx.git,
            &located.repo.toplevel,
            &located.store.scratch_dir(),
        )?;
        if state.worktree_tree != head_tree || state.index_tree != head_tree {
            plan.carried = Some(state);
        }
    } else if !opts.read_only {
        let (paths, more) = located.repo.local_changes(&ctx.git, DIRTY_PATHS_SHOWN)?;
        if !paths.is_empty() {
            if !opts.allow_dirty {
                return Err(Error::DirtySource { paths, more });
            }
            plan.left_out = true;
            let count = paths.len() + more;
            plan.warnings
                .push(BindWarning::DirtyLeftOut { paths: count }.into());
        }
    }
    Ok(plan)
}

impl WipPlan {
    /// The unpublished record of a new session bound at `head` (commit, tree); with carried
    /// WIP its base tree is the source's working state.
    fn new_record(
        &self,
        session_id: SessionId,
        located: &Located,
        (bound_revision, head_tree): (CommitId, TreeId),
        opts: &BindOptions,
        owner: Option<Owner>,
    ) -> SessionRecord {
        let now = now_ms();
        let carried = self.carried.as_ref();
        SessionRecord {
            session_id,
            state: SessionState::Bound,
            source: located.repo.toplevel.clone(),
            common_dir: located.repo.common_dir.clone(),
            worktree: None,
            admin_dir: None,
            bound_revision: bound_revision.to_string(),
            base_tree: carried.map_or(head_tree, |c| c.worktree_tree.clone()),
            read_only: opts.read_only,
            carried_wip: carried.is_some(),
            carried_index_tree: carried.map(|c| c.index_tree.clone()),
            wip_left_out: self.left_out,
            owner,
            created_at_ms: now,
            updated_at_ms: now,
            last_run: None,
            retained_reason: None,
            retained_at_ms: None,
            swept: None,
            rebased: None,
            created_by: opts.created_by.clone(),
            fill: None,
        }
    }
}

/// What a new isolation starts from besides its bound revision.
struct Restore {
    /// The working tree's content.
    tree: TreeId,
    /// What is staged; `None`: nothing (the index stays at the bound revision).
    index_tree: Option<TreeId>,
}

/// A session a bind builds a new isolation for, with the warnings so far.
struct Unbuilt {
    record: SessionRecord,
    restore: Option<Restore>,
    warnings: Vec<Warning>,
}

/// Claims the id, builds the isolation and publishes the session. Called with the repository
/// lock held; releases it for the checkout.
fn create(
    ctx: &Context,
    located: &Located,
    lock: RepoLock,
    mut unbuilt: Unbuilt,
    opts: &BindOptions,
) -> Result<BindOutcome> {
    let record = &unbuilt.record;
    refuse_bind_in_progress(located, &record.session_id)?;
    if record.read_only {
        publish(&lock, ctx, located, record)?;
        register_or_warn(located, &mut unbuilt.warnings);
        drop(lock);
        return Ok(BindOutcome::from_record(record, false, unbuilt.warnings));
    }
    let warnings = &mut unbuilt.warnings;
    let sets =
        crate::base::include::copy_sets(&located.repo.toplevel, &opts.copy_ignored, warnings)?;
    let claim = claim_path(located, opts, &unbuilt.record.session_id, warnings)?;
    // A spare is taken under the lock, so two binds never take the same one.
    let taken = (unbuilt.restore.is_none() && warm_eligible(located, opts, &claim.path))
        .then(|| {
            crate::services::pool::take(&lock, located, &claim.path)
                .ok()
                .flatten()
        })
        .flatten();
    // The checkout runs without the lock, so binds of other sessions proceed meanwhile; the
    // claim keeps this id (and this path) ours until the session is published.
    drop(lock);

    let revision = &unbuilt.record.bound_revision;
    let built = match taken {
        Some(taken) => warm_or_cold(ctx, located, &claim.path, revision, taken),
        None => unbuilt
            .cold(ctx, located, &claim.path, opts)
            .map(|(admin, fill, more)| {
                unbuilt.warnings.extend(more);
                (admin, false, fill)
            }),
    }
    .and_then(|built| {
        copy_ignored(ctx, located, (&claim.path, revision), &sets).map(|copied| (built, copied))
    });
    if let Ok(((admin_dir, _, _), _)) = &built
        && unbuilt.restore.is_none()
    {
        note_bound_tree(located, admin_dir, &unbuilt.record.base_tree);
    }
    crate::fault_point!("bind-before-publish");
    let lock = crate::recovery::lock(ctx, &located.repo)?;
    match built {
        Ok(((admin_dir, warm, fill), copied)) => {
            unbuilt.record.fill = Some(fill);
            let built = (&claim, admin_dir);
            let mut outcome = publish_isolation(&lock, ctx, located, unbuilt, built)?;
            outcome.warm = warm;
            outcome.copied_ignored = copied;
            Ok(outcome)
        }
        Err(err) => {
            let _ = isolation::clear_dead_claim(located, &claim);
            Err(err)
        }
    }
}

/// A plain bind at the source's side with nothing to restore may take a spare of the pool.
fn warm_eligible(located: &Located, opts: &BindOptions, path: &Path) -> bool {
    !opts.submodules && opts.base_dir.is_none() && path.parent() == located.repo.toplevel.parent()
}

impl Unbuilt {
    /// Checks out a new worktree, restores into it and keeps its index as the seed.
    fn cold(
        &self,
        ctx: &Context,
        located: &Located,
        path: &Path,
        opts: &BindOptions,
    ) -> Result<(PathBuf, Fill, Vec<Warning>)> {
        let revision = &self.record.bound_revision;
        let (admin_dir, fill, warnings) = build(ctx, located, path, revision, opts.submodules)?;
        if let Some(state) = &self.restore {
            restore(ctx, located, (path, &admin_dir), state)?;
        }
        keep_seed(ctx, located, path, &admin_dir)?;
        Ok((admin_dir, fill, warnings))
    }
}

/// Finishes a taken spare; if that fails, its tree goes and the bind checks out cold.
fn warm_or_cold(
    ctx: &Context,
    located: &Located,
    path: &Path,
    revision: &str,
    taken: crate::services::pool::Taken,
) -> Result<(PathBuf, bool, Fill)> {
    let fill = taken.fill();
    if let Ok(admin) = crate::services::pool::finish_take(ctx, located, taken, path, revision) {
        return Ok((admin, true, fill));
    }
    let admins = isolation::admin_dirs_for(&located.repo, path);
    isolation::remove(&located.repo, path, None)?;
    for admin in admins {
        isolation::remove_admin_dir(&located.repo, &admin)?;
    }
    let (admin, fill, _) = build(ctx, located, path, revision, false)?;
    keep_seed(ctx, located, path, &admin)?;
    Ok((admin, false, fill))
}

/// Keeps the index git just wrote: the seed of the session's snapshots, and what the pool's
/// cleaning compares the tree with.
fn keep_seed(ctx: &Context, located: &Located, path: &Path, admin: &Path) -> Result<()> {
    let seed = located.store.seed_index(admin)?;
    let git = HermeticGit::own(&ctx.git, path, admin, &located.repo.common_dir);
    crate::model::snapshot::keep_index(&git, admin, &seed)?;
    crate::model::snapshot::copy_index(&seed, &located.store.bound_index_path(admin))
}

/// Notes that the seed describes the bound tree exactly (the copied ignored files aside), so
/// the first `run` takes the fast path. Not with restored work, gitlinks or a sparse checkout.
/// Best effort: without the note, the first run snapshots the isolation.
fn note_bound_tree(located: &Located, admin: &Path, tree: &str) {
    let seed = located.store.seed_index_path(admin);
    if crate::recovery::run_layer::plain_seed(&seed).unwrap_or(false) {
        crate::model::snapshot::note_tree(&seed, tree);
        crate::recovery::run_layer::note_full_snapshot(&seed, true);
    }
}

/// `--copy-ignored` and `.worktreeinclude`: the source's ignored files they match, copied in.
fn copy_ignored(
    ctx: &Context,
    located: &Located,
    (path, revision): (&Path, &str),
    sets: &[crate::base::include::PatternSet],
) -> Result<Option<crate::services::copyignored::CopyReport>> {
    if sets.is_empty() {
        return Ok(None);
    }
    let top = &located.repo.toplevel;
    crate::services::copyignored::copy(&ctx.git, (top, path), revision, sets).map(Some)
}

/// A bind of this id still running elsewhere is refused; a dead one's leftovers are cleared.
fn refuse_bind_in_progress(located: &Located, session_id: &SessionId) -> Result<()> {
    let Some(claim) = located.store.load_claim(session_id)? else {
        return Ok(());
    };
    match claim.bind_process.liveness() {
        Liveness::Dead => isolation::clear_dead_claim(located, &claim),
        _ => Err(Error::from(Taken::BindInProgress {
            session_id: session_id.to_string(),
            process: claim.bind_process.describe(),
        })),
    }
}

/// Picks the isolation's path (clearing an empty leftover) and claims it before building.
fn claim_path(
    located: &Located,
    opts: &BindOptions,
    session_id: &SessionId,
    warnings: &mut Vec<Warning>,
) -> Result<ClaimRecord> {
    let (base, shared) = isolation_base(located, opts.base_dir.as_deref(), warnings)?;
    let names = located.store.isolation_names(&located.repo.toplevel);
    let path = base.join(names.name(session_id, shared));
    clear_path(&path, warnings)?;
    let claim = ClaimRecord {
        session_id: session_id.clone(),
        path,
        bind_process: Owner::this_process(),
        created_at_ms: now_ms(),
        // Inside a run's PID namespace the number would name another group on the host.
        process_group: crate::base::owner::sees_host_processes()
            .then(|| rustix::process::getpgrp().as_raw_nonzero().get()),
    };
    located.store.save_claim(&claim)?;
    Ok(claim)
}

/// Publishes a built isolation and drops its claim, under the lock; on failure the tree goes.
fn publish_isolation(
    held: &RepoLock,
    ctx: &Context,
    located: &Located,
    unbuilt: Unbuilt,
    (claim, admin_dir): (&ClaimRecord, PathBuf),
) -> Result<BindOutcome> {
    let Unbuilt {
        mut record,
        mut warnings,
        ..
    } = unbuilt;
    record.worktree = Some(claim.path.clone());
    record.admin_dir = Some(admin_dir);
    record.state = SessionState::Bound;
    record.swept = None;
    record.updated_at_ms = now_ms();
    if let Err(err) = publish(held, ctx, located, &record) {
        let _ = isolation::clear_dead_claim(located, claim);
        return Err(err);
    }
    located.store.remove_claim(&record.session_id)?;
    register_or_warn(located, &mut warnings);
    Ok(BindOutcome::from_record(&record, false, warnings))
}

/// `--resume`: a new isolation at the bound revision with the swept snapshot (else the latest
/// capture) restored uncommitted; the base tree stays. A healthy one is reused.
fn resume(
    ctx: &Context,
    located: &Located,
    session_id: &SessionId,
    owner: Option<Owner>,
    opts: &BindOptions,
) -> Result<BindOutcome> {
    let lock = crate::recovery::lock(ctx, &located.repo)?;
    refuse_outside_scope(ctx, located, session_id)?;
    let Some(mut record) = located.store.load_session(session_id)? else {
        return Err(crate::context::not_found(ctx, located, session_id));
    };
    if !located.owns(&record) {
        return Err(belongs_elsewhere(located, &record));
    }
    if record.state.has_tree() && (record.read_only || isolation::is_healthy(&record)) {
        return reuse(located, record, owner, opts.owner != OwnerChoice::Parent);
    }
    let mut warnings = Vec::new();
    let swept = swept_restore(ctx, located, &record)?;
    if let (Some(_), Some(summary)) = (&swept, record.swept_summary()) {
        warnings.push(BindWarning::RestoredUncommitted { summary }.into());
    } else if record.last_run.is_none() {
        warnings.push(BindWarning::NothingCaptured.into());
    }
    // The swept snapshot; else the latest capture; else, for carried WIP, the state the
    // session started from.
    let restore_state = swept.or(match (&record.last_run, record.carried_wip) {
        (Some(run), _) => Some(Restore {
            tree: run.result_tree.clone(),
            index_tree: None,
        }),
        (None, true) => Some(Restore {
            tree: record.base_tree.clone(),
            index_tree: record.carried_index_tree.clone(),
        }),
        (None, false) => None,
    });
    if let (Some(tree), Some(admin)) = (&record.worktree, &record.admin_dir)
        && record.state.has_tree()
    {
        // The old tree is damaged or gone: drop what is left of its registration.
        isolation::remove(&located.repo, tree, Some(admin))?;
    }
    record.owner = owner;
    record.read_only = false;
    // Resumed by a person (or a harness), the new isolation is theirs, not a hook's.
    record.created_by = opts.created_by.clone();
    let unbuilt = Unbuilt {
        record,
        restore: restore_state,
        warnings,
    };
    create(ctx, located, lock, unbuilt, opts)
}

/// A swept session's snapshot, if any. The record stays `swept` until the resumed session is
/// published, so a killed resume can be run again.
fn swept_restore(
    ctx: &Context,
    located: &Located,
    record: &SessionRecord,
) -> Result<Option<Restore>> {
    let reference = record
        .swept
        .as_ref()
        .filter(|_| record.state == SessionState::Swept)
        .and_then(|swept| swept.swept_ref.clone());
    let Some(reference) = reference else {
        return Ok(None);
    };
    let tree = ctx
        .git
        .rev_parse(&located.repo.toplevel, &format!("{reference}^{{tree}}"))?;
    tree.map(|tree| {
        Ok(Restore {
            tree: TreeId::new(tree)?,
            index_tree: None,
        })
    })
    .transpose()
}

/// Puts a state into a fresh isolation as uncommitted changes, keeping unchanged entries' stat
/// data. Runs through its own admin dir with every location named: with `submodule.recurse`,
/// `read-tree -u` updates the submodules, whose git dirs live there.
fn restore(
    ctx: &Context,
    located: &Located,
    (path, admin): (&Path, &Path),
    state: &Restore,
) -> Result<()> {
    let wt = HermeticGit::own(&ctx.git, path, admin, &located.repo.common_dir);
    wt.read_tree_reset(&state.tree)?;
    match &state.index_tree {
        Some(index_tree) => wt.read_tree_staged(&state.tree, index_tree),
        None => wt.reset_index(),
    }
}

/// The same owner (or a dead one's heir) gets the binding back; another live owner's is
/// refused. An ownerless session is shared unless an owner is named (`explicit`) to adopt it.
fn reuse(
    located: &Located,
    mut existing: SessionRecord,
    owner: Option<Owner>,
    explicit: bool,
) -> Result<BindOutcome> {
    if !existing.read_only && !isolation::is_healthy(&existing) {
        return Err(Error::from(Taken::Damaged {
            session_id: existing.session_id.to_string(),
            worktree: existing.worktree.clone(),
        }));
    }
    let mut warnings = Vec::new();
    if existing.owner != owner {
        let warning = match &existing.owner {
            None if !explicit => None,
            None => Some(BindWarning::OwnerGiven),
            Some(previous) if previous.liveness() == Liveness::Dead => {
                Some(BindWarning::TakenOver {
                    previous: previous.describe(),
                })
            }
            Some(previous) => return Err(owned_elsewhere(&existing.session_id, previous)),
        };
        if let Some(warning) = warning {
            warnings.push(warning.into());
            existing.owner = owner;
            existing.updated_at_ms = now_ms();
            located.store.save_session(&existing)?;
        }
    }
    Ok(BindOutcome::from_record(&existing, true, warnings))
}

/// `session_exists`: another owner, which may still be running, holds the session.
fn owned_elsewhere(session_id: &SessionId, owner: &Owner) -> Error {
    Error::from(Taken::OtherOwner {
        session_id: session_id.to_string(),
        owner: owner.describe(),
        pid: owner.pid,
    })
}

/// `--base-dir`, else the source's parent, else a per-user directory; and whether many sources
/// share it (then isolation names carry the source's hash).
fn isolation_base(
    located: &Located,
    base_dir: Option<&Path>,
    warnings: &mut Vec<Warning>,
) -> Result<(PathBuf, bool)> {
    let source = &located.repo.toplevel;
    if let Some(dir) = base_dir {
        let dir = fs::canonicalize(dir)
            .map_err(|e| Error::usage(format!("--base-dir {}: {e}", dir.display())))?;
        if dir.starts_with(source) {
            return Err(Error::usage(format!(
                "--base-dir {} is inside the source; isolations live outside it",
                dir.display()
            )));
        }
        return Ok((dir, true));
    }
    let parent = source.parent().unwrap_or(Path::new("/"));
    let writable = rustix::fs::access(
        parent,
        rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK,
    )
    .is_ok();
    if writable {
        return Ok((parent.to_path_buf(), false));
    }
    let fallback =
        crate::store::state::user_isolations_dir(source).ok_or_else(|| Unavailable::NoBaseDir {
            parent: parent.to_path_buf(),
        })?;
    fs::create_dir_all(&fallback).ctx(|| format!("cannot create {}", fallback.display()))?;
    warnings.push(
        BindWarning::FallbackParent {
            parent: parent.to_path_buf(),
            fallback: fallback.clone(),
        }
        .into(),
    );
    Ok((fallback, true))
}

/// An empty leftover directory is cleared; anything else at the path is refused, untouched.
fn clear_path(path: &Path, warnings: &mut Vec<Warning>) -> Result<()> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(format!("cannot inspect {}", path.display()), e)),
    };
    let file_type = meta.file_type();
    let found = if file_type.is_symlink() {
        "a symbolic link"
    } else if !file_type.is_dir() {
        "a file"
    } else if crate::base::fsutil::is_empty_dir(path)
        .ctx(|| format!("cannot read {}", path.display()))?
    {
        fs::remove_dir(path).ctx(|| format!("cannot remove empty {}", path.display()))?;
        let path = path.to_path_buf();
        warnings.push(BindWarning::ClearedLeftover { path }.into());
        return Ok(());
    } else {
        "a non-empty directory"
    };
    Err(Error::IsolationPathOccupied {
        path: path.to_path_buf(),
        found: found.into(),
    })
}

/// Checks out a new detached worktree at `path` (submodules initialised, if asked); built in
/// place, never renamed, so submodule links stay valid.
fn build(
    ctx: &Context,
    located: &Located,
    path: &Path,
    revision: &str,
    submodules: bool,
) -> Result<(PathBuf, Fill, Vec<Warning>)> {
    let (admin, fill) = crate::services::worktree::add_worktree(ctx, located, path, revision)?;
    let warnings = if submodules {
        // Nothing has run in the new tree yet, and the submodules' git dirs belong in its
        // admin dir (`<admin>/modules`), so git goes through the admin dir itself.
        crate::model::submodules::initialise(
            &ctx.git,
            (path, &admin, &located.repo.common_dir),
            &located.repo.toplevel,
        )?
    } else {
        Vec::new()
    };
    Ok((admin, fill, warnings))
}

/// Makes the session visible: base ref, then record. Called under the repository lock.
fn publish(
    _held: &RepoLock,
    ctx: &Context,
    located: &Located,
    record: &SessionRecord,
) -> Result<()> {
    crate::model::refs::pin_session(
        &ctx.git,
        &located.repo.toplevel,
        &located.store.refs(),
        record,
    )?;
    located.store.save_session(record)?;
    // The id is a session again: a purge of it is no longer `already_purged`.
    crate::base::fsutil::remove_file_if_exists(&located.store.purged_file(&record.session_id))
}

/// Registers the source for `--all`; a failure only warns.
fn register_or_warn(located: &Located, warnings: &mut Vec<Warning>) {
    let registered = register_source(&RegistryEntry {
        source: located.repo.toplevel.clone(),
        common_dir: located.repo.common_dir.clone(),
        state_dir: located.store.dir().to_path_buf(),
    });
    if let Err(err) = registered {
        let why = err.to_string();
        warnings.push(BindWarning::NotRegistered { why }.into());
    }
}
