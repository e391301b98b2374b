//! Warm isolations: spare worktrees of a source, taken by bind and given back by discard.
//! May call: base, git, store, context, model, recovery and the rest of services.
//!
//! A spare is clean and checked out, kept beside the source's isolations (`<prefix>.pool-<slot>`,
//! see `names`). `bind` takes one instead of checking out (`take`, `finish_take`), `discard`
//! returns a session's tree instead of deleting it while the pool is below its size (`recycle`),
//! and `pool` sets the size and builds what is missing (`pool`).
//!
//! A spare is cleaned on its way in: through a private git dir and a3s-iso's own index of the
//! tree, only the tracked paths that differ are restored, everything untracked or ignored is
//! removed (except the `--keep-ignored` paths and the ignored files the source's
//! `.worktreeinclude` names), and the admin dir is emptied and written as a cold
//! bind writes it. Nothing in the tree or its admin dir chooses configuration, hooks or
//! filters for that git.

mod clean;
mod index;
mod inherit;
mod walk;

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use crate::recovery::spares::{PoolSettings, Spare, SpareState};

use crate::recovery::pending;
use crate::recovery::spares as spare;

use crate::base::error::{Error, IoContext, Result};
use crate::base::fsutil::now_ms;
use crate::base::owner::Owner;
use crate::context::{Context, Located};
use crate::services::pool::clean::Tree;
use crate::services::pool::inherit::Inherited;
use crate::store::lock::RepoLock;
use crate::store::state::SessionRecord;

/// What `pool` is asked to do.
#[derive(Debug, Clone, Default)]
pub struct PoolOptions {
    /// A new size (`None`: keep the recorded one).
    pub size: Option<usize>,
    /// New kept ignored paths (`None`: keep the recorded ones).
    pub keep_ignored: Option<Vec<String>>,
    /// Only report; build and remove nothing.
    pub status_only: bool,
    /// Record the settings and shrink, but check nothing out: spares then come only from
    /// trees that `discard` returns.
    pub no_fill: bool,
}

/// The pool, as `pool` reports it.
#[derive(Debug, Clone, Serialize)]
pub struct PoolOutcome {
    /// The source checkout.
    #[serde(with = "crate::base::paths::fs_path")]
    pub source: PathBuf,
    /// How many spares the pool keeps.
    pub size: usize,
    /// Ignored paths that survive recycling (gitignore patterns).
    pub keep_ignored: Vec<String>,
    /// The patterns of the source's `.worktreeinclude`: the ignored files they match survive
    /// recycling too (empty without one).
    pub worktreeinclude: Vec<String>,
    /// The spares now.
    pub spares: Vec<SpareReport>,
    /// Spares this call built.
    pub built: usize,
    /// Spares this call removed (the pool shrank).
    pub removed: usize,
    /// Whether files can be cloned (FICLONE) where the spares live; `null` when unknown.
    pub reflink: Option<bool>,
    /// Why reflink is unknown.
    pub reflink_detail: Option<String>,
}

/// One spare, as reported.
#[derive(Debug, Clone, Serialize)]
pub struct SpareReport {
    /// Its slot.
    pub slot: u32,
    /// Building or ready.
    pub state: SpareState,
    /// Its tree.
    #[serde(with = "crate::base::paths::fs_path")]
    pub path: PathBuf,
    /// The commit it holds.
    pub head: String,
    /// How its files were made (`clone`, `checkout`); `null` while building and for a spare
    /// recorded before fills were.
    pub fill: Option<crate::base::reflink::Fill>,
    /// With `--status`: what it costs on disk (apparent size, bytes held alone); `null`
    /// otherwise and while building.
    pub disk: Option<crate::base::reflink::DiskUse>,
}

/// `pool`: records the settings, removes spares above the size, builds missing ones
/// (`progress(done, total)` after each), and reports the pool.
pub fn pool(
    ctx: &Context,
    opts: &PoolOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<PoolOutcome> {
    let located = crate::recovery::locate(ctx)?;
    let (mut built, mut removed) = (0, 0);
    let settings = {
        let lock = crate::recovery::lock(ctx, &located.repo)?;
        spare::recover(&lock, &located)?;
        let mut settings = spare::settings(&located)?;
        if !opts.status_only {
            settings.size = opts.size.unwrap_or(settings.size);
            if let Some(keep) = &opts.keep_ignored {
                settings.keep_ignored = crate::base::include::from_args(keep, "--keep-ignored")?;
            }
            spare::save_settings(&located, &settings)?;
            removed = shrink(&lock, &located, settings.size)?;
        }
        settings
    };
    if !opts.status_only && !opts.no_fill {
        built = fill(ctx, &located, settings.size, progress)?;
    }
    let parent = located.repo.toplevel.parent().unwrap_or(Path::new("/"));
    let (reflink, reflink_detail) = match crate::base::probe::reflink_available(parent) {
        Ok(yes) => (Some(yes), None),
        Err(detail) => (None, Some(detail)),
    };
    let spares = spare::spares(&located)?
        .into_iter()
        .map(|s| SpareReport {
            disk: (opts.status_only && s.state == SpareState::Ready)
                .then(|| crate::base::reflink::disk_use(&s.path).ok())
                .flatten(),
            slot: s.slot,
            state: s.state,
            path: s.path,
            head: s.head,
            fill: s.fill,
        })
        .collect();
    Ok(PoolOutcome {
        source: located.repo.toplevel.clone(),
        size: settings.size,
        keep_ignored: settings.keep_ignored,
        worktreeinclude: crate::base::include::worktreeinclude(
            &located.repo.toplevel,
            &mut Vec::new(),
        )
        .unwrap_or_default(),
        spares,
        built,
        removed,
        reflink,
        reflink_detail,
    })
}

/// Removes ready spares above `size`, highest slots first; called under the lock.
fn shrink(_held: &RepoLock, located: &Located, size: usize) -> Result<usize> {
    let spares = spare::spares(located)?;
    let excess = spares.len().saturating_sub(size);
    let mut removed = 0;
    for spare in spares
        .iter()
        .rev()
        .filter(|s| s.state == SpareState::Ready)
        .take(excess)
    {
        spare::destroy(located, spare)?;
        removed += 1;
    }
    Ok(removed)
}

/// The lowest slot no record holds.
fn free_slot(located: &Located) -> Result<u32> {
    let taken: Vec<u32> = spare::spares(located)?.iter().map(|s| s.slot).collect();
    Ok((1..).find(|slot| !taken.contains(slot)).unwrap_or(u32::MAX))
}

/// Builds spares until the pool holds `size`: each slot is claimed under the lock (a
/// `building` record naming this process), checked out without it, then recorded ready.
fn fill(
    ctx: &Context,
    located: &Located,
    size: usize,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<usize> {
    let mut built = 0;
    loop {
        let mut spare = {
            let _lock = crate::recovery::lock(ctx, &located.repo)?;
            let have = spare::spares(located)?.len();
            // The size recorded now: `pool --size` or `gc --all` may have shrunk it meanwhile.
            let size = size.min(spare::settings(located)?.size);
            if have >= size {
                return Ok(built);
            }
            if built == 0 {
                progress(0, size - have);
            }
            let slot = free_slot(located)?;
            let spare = Spare {
                slot,
                state: SpareState::Building,
                path: spare::spare_path(located, slot),
                admin: None,
                head: String::new(),
                maker: Owner::this_process(),
                at_ms: now_ms(),
                fill: None,
            };
            spare::save(located, &spare)?;
            spare
        };
        let made = build(ctx, located, &mut spare);
        crate::fault_point!("pool-fill-after-checkout");
        let _lock = crate::recovery::lock(ctx, &located.repo)?;
        if let Err(err) = made {
            spare::destroy(located, &spare)?;
            return Err(err);
        }
        if spare::spares(located)?.len() > size.min(spare::settings(located)?.size) {
            // Drained while this one was built: it is not wanted any more.
            spare::destroy(located, &spare)?;
            return Ok(built);
        }
        spare.state = SpareState::Ready;
        spare.at_ms = now_ms();
        spare::save(located, &spare)?;
        built += 1;
        progress(
            built,
            built + size.saturating_sub(spare::spares(located)?.len()),
        );
    }
}

/// Checks a spare out at the source's HEAD (as a cold bind does) and stores its index.
fn build(ctx: &Context, located: &Located, spare: &mut Spare) -> Result<()> {
    let (head, _) = located.repo.head(&ctx.git)?;
    if fs::symlink_metadata(&spare.path).is_ok() {
        return Err(Error::IsolationPathOccupied {
            path: spare.path.clone(),
            found: "something".into(),
        });
    }
    let (admin, fill) = crate::services::worktree::add_worktree(ctx, located, &spare.path, &head)?;
    spare.fill = Some(fill);
    spare.admin = Some(admin.clone());
    let git = crate::git::HermeticGit::own(&ctx.git, &spare.path, &admin, &located.repo.common_dir);
    crate::model::snapshot::keep_index(&git, &admin, &spare::index_path(located, spare.slot))?;
    spare.head = head.into();
    Ok(())
}

/// A spare taken for a bind: moved to the bind's path, its record gone.
#[derive(Debug)]
pub(crate) struct Taken {
    admin: PathBuf,
    head: String,
    /// a3s-iso's index of the tree, moved to scratch.
    index: PathBuf,
    /// How its files were made.
    fill: crate::base::reflink::Fill,
}

impl Taken {
    /// How the spare's files were made (a spare recycled from a session's tree, or recorded
    /// before fills were, counts as a checkout).
    pub(crate) fn fill(&self) -> crate::base::reflink::Fill {
        self.fill
    }
}

/// Takes a ready spare for a bind at `dest` (claimed by the bind): under the repository lock
/// (which the caller holds), so two binds never take the same one. The tree is renamed to
/// `dest` and its admin dir relinked; `None` when there is no usable spare.
pub(crate) fn take(held: &RepoLock, located: &Located, dest: &Path) -> Result<Option<Taken>> {
    if spare::spares(located)?.is_empty() {
        return Ok(None);
    }
    spare::recover(held, located)?;
    let scratch = located.store.scratch_dir();
    for spare in spare::spares(located)? {
        let Some(admin) = spare.admin.clone() else {
            continue;
        };
        if !spare::is_healthy(located, &spare) {
            continue;
        }
        let index = clean::scratch_index(&scratch)?;
        fs::rename(spare::index_path(located, spare.slot), &index)
            .ctx(|| format!("cannot move the index of {}", spare.path.display()))?;
        crate::fault_point!("pool-take-after-index");
        if fs::rename(&spare.path, dest).is_err() {
            let _ = fs::remove_file(&index);
            spare::destroy(located, &spare)?;
            continue;
        }
        crate::fault_point!("pool-take-after-move");
        pending::relink(dest, &admin)?;
        spare::forget(located, spare.slot)?;
        return Ok(Some(Taken {
            admin,
            head: spare.head,
            index,
            fill: spare.fill.unwrap_or(crate::base::reflink::Fill::Checkout),
        }));
    }
    Ok(None)
}

/// Finishes a taken spare without the lock: moves its tree to `revision` touching only what
/// differs, writes its admin dir as a cold bind does, and stores a3s-iso's index of it as the
/// session's seed. Returns the admin dir.
pub(crate) fn finish_take(
    ctx: &Context,
    located: &Located,
    taken: Taken,
    dest: &Path,
    revision: &str,
) -> Result<PathBuf> {
    let scratch = located.store.scratch_dir();
    let tree = Tree {
        path: dest,
        common_dir: &located.repo.common_dir,
        scratch: &scratch,
    };
    let result = (|| {
        if taken.head != revision {
            clean::advance(&ctx.git, &tree, &taken.head, revision, &taken.index)?;
        }
        let inherited = Inherited::of(&ctx.git, &located.repo.toplevel, &scratch)?;
        inherited.conform(tree.private(&ctx.git, revision)?, revision, &taken.index)?;
        crate::fault_point!("pool-take-after-checkout");
        clean::reset_admin(
            &taken.admin,
            (dest, dest),
            revision,
            &taken.index,
            &inherited,
        )?;
        let seed = located.store.seed_index(&taken.admin)?;
        crate::model::snapshot::copy_index(&taken.index, &seed)?;
        crate::model::snapshot::copy_index(
            &taken.index,
            &located.store.bound_index_path(&taken.admin),
        )
    })();
    let _ = fs::remove_file(&taken.index);
    result.map(|()| taken.admin)
}

/// What became of a discarded session's tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Returned {
    /// Cleaned, and a ready spare now; the session is recorded discarded.
    ToPool,
    /// Its cleaning failed, so it was removed as a discard removes a tree.
    Removed,
    /// The pool is full or the tree cannot be recycled (initialised submodules, no index of
    /// a3s-iso's, not beside the source): the caller removes it.
    No,
}

/// Why a tree comes back: `discard`, or a `sweep` reclaim (with the swept snapshot's ref).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Return<'a> {
    /// The session is discarded.
    Discard,
    /// The session is swept; its snapshot is pinned under this ref, if any.
    Sweep(Option<&'a str>),
}

/// Returns a session's tree to the pool while the pool is below its size; called by `discard`
/// and `sweep` under the repository lock with the session's lease held. The tree is renamed
/// aside under the same intent a plain removal writes, so a crash is finished as one.
pub(crate) fn recycle(
    held: &RepoLock,
    ctx: &Context,
    located: &Located,
    record: &SessionRecord,
    how: Return,
) -> Result<Returned> {
    let (Some(tree), Some(admin)) = (&record.worktree, &record.admin_dir) else {
        return Ok(Returned::No);
    };
    let settings = spare::settings(located)?;
    if settings.size == 0 || !recyclable(located, tree, admin) {
        return Ok(Returned::No);
    }
    spare::recover(held, located)?;
    if spare::spares(located)?.len() >= settings.size {
        return Ok(Returned::No);
    }
    let intent = pending::Reclaim {
        session_id: record.session_id.clone(),
        path: tree.clone(),
        admin: Some(admin.clone()),
        trash: pending::trash_path(tree, &record.session_id),
        swept_ref: match how {
            Return::Discard => None,
            Return::Sweep(swept) => swept.map(str::to_string),
        },
        at_ms: now_ms(),
    };
    let saved = match how {
        Return::Discard => pending::TreeMove::Discard(intent.clone()),
        Return::Sweep(_) => pending::TreeMove::Reclaim(intent.clone()),
    };
    pending::save(&located.store, &saved)?;
    if let Err(err) = fs::rename(tree, &intent.trash) {
        pending::remove(&located.store, &record.session_id)?;
        return Err(err).ctx(|| format!("cannot move {} aside", tree.display()));
    }
    crate::fault_point!("pool-return-after-move");
    // From here the admin dir is the pool's (the intent still names it, for a crash).
    release_admin(located, record)?;
    let slot = free_slot(located)?;
    let made = make_spare(
        ctx,
        located,
        (&intent.trash, admin),
        record,
        slot,
        &settings,
    );
    let returned = if made.is_ok() {
        Returned::ToPool
    } else {
        // Not clean: it goes, as a plain removal (its admin dir may name the spare's path).
        crate::model::isolation::remove(&located.repo, &intent.trash, Some(admin))?;
        spare::forget(located, slot)?;
        Returned::Removed
    };
    match how {
        Return::Discard => pending::complete_discard(held, &located.repo, &located.store, &intent)?,
        Return::Sweep(_) => {
            pending::complete_reclaim(held, &ctx.git, &located.repo, &located.store, &intent)?
        }
    }
    Ok(returned)
}

/// Whether a tree can go back to the pool: a real directory beside the source, its admin
/// dir a directory without submodules' git dirs, and a3s-iso's index of it at hand.
fn recyclable(located: &Located, tree: &Path, admin: &Path) -> bool {
    // Looked at beneath the admin dir's handle: a link at `modules` is not followed.
    let no_modules = crate::base::beneath::Dir::open(admin)
        .and_then(|dir| dir.kind(Path::new("modules")))
        .is_ok_and(|kind| kind.is_none());
    fs::symlink_metadata(tree).is_ok_and(|m| m.file_type().is_dir())
        && no_modules
        && located.store.seed_index_path(admin).is_file()
        && located.repo.toplevel.parent() == tree.parent()
}

/// Cleans a session's tree waiting at `trash` to the revision `record` was bound at, resets its
/// admin dir for the spare's path, records the spare ready and moves the tree there.
fn make_spare(
    ctx: &Context,
    located: &Located,
    (trash, admin): (&Path, &Path),
    record: &SessionRecord,
    slot: u32,
    settings: &PoolSettings,
) -> Result<()> {
    let scratch = located.store.scratch_dir();
    let index = spare::index_path(located, slot);
    fs::create_dir_all(index.parent().unwrap_or(Path::new("/")))
        .ctx(|| format!("cannot create {}", index.display()))?;
    // The index as a3s-iso wrote it at bind, when there is one: its stat data tells what the
    // session touched (a capture refreshes the seed's).
    let bound = located.store.bound_index_path(admin);
    let pristine = fs::symlink_metadata(&bound).is_ok_and(|m| m.is_file());
    let from = if pristine {
        bound
    } else {
        located.store.seed_index_path(admin)
    };
    crate::model::snapshot::copy_index(&from, &index)?;
    let tree = Tree {
        path: trash,
        common_dir: &located.repo.common_dir,
        scratch: &scratch,
    };
    let head = record.bound_revision.as_str();
    // The source's `.worktreeinclude` (never the returned tree's, which the session wrote).
    let included = crate::base::include::worktreeinclude(&located.repo.toplevel, &mut Vec::new());
    let keep = clean::Keep {
        patterns: &settings.keep_ignored,
        included: included.as_deref().unwrap_or_default(),
    };
    clean::clean(&ctx.git, &tree, head, &index, (keep, pristine))?;
    let inherited = Inherited::of(&ctx.git, &located.repo.toplevel, &scratch)?;
    inherited.conform(tree.private(&ctx.git, head)?, head, &index)?;
    crate::fault_point!("pool-return-after-clean");
    let path = spare::spare_path(located, slot);
    clean::reset_admin(admin, (trash, &path), head, &index, &inherited)?;
    let spare = Spare {
        slot,
        state: SpareState::Ready,
        path: path.clone(),
        admin: Some(admin.to_path_buf()),
        head: head.to_string(),
        maker: Owner::this_process(),
        at_ms: now_ms(),
        fill: record.fill,
    };
    spare::save(located, &spare)?;
    crate::fault_point!("pool-return-after-record");
    fs::rename(trash, &path)
        .ctx(|| format!("cannot move {} to {}", trash.display(), path.display()))
}

/// The session's record no longer names the admin dir, which a spare is about to hold: nothing
/// that acts on the session later (a discard of a swept session, a resume) may remove it.
fn release_admin(located: &Located, record: &SessionRecord) -> Result<()> {
    let mut record = located
        .store
        .load_session(&record.session_id)?
        .unwrap_or_else(|| record.clone());
    record.admin_dir = None;
    record.updated_at_ms = now_ms();
    located.store.save_session(&record)
}
