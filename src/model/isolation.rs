//! The isolation as a linked worktree (its name comes from `names`): how it is located
//! (through the admin dir a3s-iso recorded, never the `.git` file inside the tree), checked,
//! snapshotted and removed, and how a dead bind's claim is cleared.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::base::beneath::{Dir, Kind};
use crate::base::error::{Error, IoContext, NoDocument, Result};
use crate::base::ids::CommitId;
use crate::context::{Context, Located};
use crate::git::repo::Repo;
use crate::git::{Git, HermeticGit};
use crate::model::snapshot;
use crate::store::state::{ClaimRecord, SessionRecord, SessionState};

/// The admin dir a fresh worktree's `.git` file names, accepted only under `<common>/worktrees`.
/// Read once, right after `git worktree add` created it, and recorded from then on.
pub fn read_admin_dir(repo: &Repo, worktree: &Path) -> Result<PathBuf> {
    let dot_git = worktree.join(".git");
    let bytes = crate::base::fsutil::read_small_regular_file(&dot_git, LINK_LIMIT)
        .ctx(|| format!("cannot read {}", dot_git.display()))?;
    // Bytes: the path need not be UTF-8.
    let admin = bytes
        .strip_prefix(b"gitdir: ")
        .map(|rest| path_of(rest.trim_ascii_end()))
        .ok_or_else(|| Error::internal(format!("{} is not a gitdir link", dot_git.display())))?;
    // Joining an absolute path gives that path.
    let admin = worktree.join(admin);
    let admin = fs::canonicalize(&admin).ctx(|| format!("cannot resolve {}", admin.display()))?;
    let worktrees = fs::canonicalize(repo.worktrees_dir())
        .ctx(|| format!("cannot resolve {}", repo.worktrees_dir().display()))?;
    if admin.parent() != Some(worktrees.as_path()) {
        return Err(Error::internal(format!(
            "{} does not belong to {}",
            admin.display(),
            repo.common_dir.display()
        )));
    }
    Ok(admin)
}

/// The most a link file of an admin dir (`gitdir`, `commondir`) holds: one path.
const LINK_LIMIT: u64 = 64 * 1024;

/// A path from the bytes git wrote (a path need not be UTF-8).
fn path_of(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

/// The contents of a link file naming `path`, as git writes them: the path and a newline.
pub(crate) fn link_contents(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut bytes = path.as_os_str().as_bytes().to_vec();
    bytes.push(b'\n');
    bytes
}

/// The first line of a link file in an admin dir, read without following a link or waiting on
/// a FIFO planted there (the isolation's command can write the admin dir).
fn read_link_file(path: &Path) -> Option<PathBuf> {
    let bytes = crate::base::fsutil::read_small_regular_file(path, LINK_LIMIT).ok()?;
    let mut line = bytes.as_slice();
    while let Some(rest) = line.strip_suffix(b"\n") {
        line = rest;
    }
    Some(path_of(line))
}

/// The admin dir's own record of where its tree is (`<admin>/gitdir` → `<tree>/.git`).
fn admin_points_at(admin: &Path, worktree: &Path) -> bool {
    read_link_file(&admin.join("gitdir")).is_some_and(|named| named == worktree.join(".git"))
}

/// Puts back the admin dir's links (`gitdir`, `commondir`) if the isolation's user rewrote
/// them, so that the command's own git in the isolation (and `git worktree` in the source)
/// reaches this repository again. a3s-iso's own git on the isolation does not depend on them:
/// it names every location itself (`Isolation::git`).
pub fn repair_links(record: &SessionRecord) -> Result<()> {
    let (Some(tree), Some(admin)) = (&record.worktree, &record.admin_dir) else {
        return Ok(());
    };
    let tree_is_dir = fs::symlink_metadata(tree).is_ok_and(|m| m.is_dir());
    // A link at the admin dir's path is not followed to write anything.
    let Ok(Some(dir)) = Dir::open_if_any(admin) else {
        return Ok(());
    };
    if !tree_is_dir {
        return Ok(());
    }
    if !admin_points_at(admin, tree) {
        dir.replace(Path::new("gitdir"), &link_contents(&tree.join(".git")))
            .ctx(|| format!("cannot write {}", admin.join("gitdir").display()))?;
    }
    let points_home = read_link_file(&admin.join("commondir"))
        .map(|text| admin.join(text))
        .and_then(|dir| fs::canonicalize(dir).ok())
        .zip(fs::canonicalize(&record.common_dir).ok())
        .is_some_and(|(found, expected)| found == expected);
    if !points_home {
        // Admin dirs live in <common>/worktrees/<name>: the common dir is two levels up.
        dir.replace(Path::new("commondir"), b"../..\n")
            .ctx(|| format!("cannot write {}", admin.join("commondir").display()))?;
    }
    Ok(())
}

/// A healthy isolation: a real directory (not a symlink) registered with the source's repository
/// through the recorded admin dir, whose `HEAD` is a file.
pub fn is_healthy(record: &SessionRecord) -> bool {
    // HEAD a regular file, looked at beneath the admin dir's handle (a link is not followed).
    is_present(record)
        && record.admin_dir.as_ref().is_some_and(|admin| {
            Dir::open(admin)
                .and_then(|dir| dir.kind(Path::new("HEAD")))
                .is_ok_and(|kind| kind == Some(Kind::File))
        })
}

/// The isolation is there: its tree a real directory, registered through the recorded admin
/// dir. One that is not was removed outside a3s-iso (the tree, or its registration).
fn is_present(record: &SessionRecord) -> bool {
    let (Some(tree), Some(admin)) = (&record.worktree, &record.admin_dir) else {
        return false;
    };
    fs::symlink_metadata(tree).is_ok_and(|m| m.is_dir()) && admin_points_at(admin, tree)
}

/// Removes a linked worktree and its registration directly: the tree, then its admin dir (only
/// ever a direct child of `<common>/worktrees`). That is what `git worktree remove --force
/// --force` does, but git would first read the admin dir (`gitdir`, `commondir`, `HEAD`),
/// which the isolation's command can rewrite (a FIFO there hangs every `git worktree`); the
/// session record or the bind's claim is what proves the tree and the admin dir are
/// a3s-iso's. An empty `<common>/worktrees` is left for git (it is harmless, and removing it
/// could race with a concurrent `git worktree add`). Returns whether anything was removed. A
/// symlink at the path is never followed.
pub fn remove(repo: &Repo, tree: &Path, admin: Option<&Path>) -> Result<bool> {
    let tree_is_dir = fs::symlink_metadata(tree).is_ok_and(|m| m.file_type().is_dir());
    let mut removed = false;
    if tree_is_dir {
        // The tree first: a removal that fails halfway keeps the registration, so the session
        // still knows where its leftovers are and a later attempt finishes the job.
        crate::base::beneath::remove_path(tree)
            .ctx(|| format!("cannot remove {}", tree.display()))?;
        removed = true;
    }
    if let Some(admin) = admin.filter(|a| fs::symlink_metadata(a).is_ok()) {
        removed |= remove_admin_dir(repo, admin)?;
    }
    Ok(removed)
}

/// Drops a registration, only ever a direct child of `<common>/worktrees`; whether it did.
pub fn remove_admin_dir(repo: &Repo, admin: &Path) -> Result<bool> {
    let worktrees = repo.worktrees_dir();
    let in_worktrees = admin.parent() == Some(worktrees.as_path())
        || admin
            .parent()
            .and_then(|p| fs::canonicalize(p).ok())
            .is_some_and(|p| Some(p) == fs::canonicalize(&worktrees).ok());
    if !in_worktrees {
        return Ok(false);
    }
    crate::base::beneath::remove_path(admin)
        .ctx(|| format!("cannot remove {}", admin.display()))?;
    Ok(true)
}

/// Admin dirs whose recorded tree is `tree` (for leftovers whose admin dir was never recorded).
pub fn admin_dirs_for(repo: &Repo, tree: &Path) -> Vec<PathBuf> {
    admin_dirs(repo)
        .into_iter()
        .filter(|admin| admin_points_at(admin, tree))
        .collect()
}

/// The admin dirs in `<common>/worktrees`: its real directories (a link there is nobody's).
fn admin_dirs(repo: &Repo) -> Vec<PathBuf> {
    let worktrees = repo.worktrees_dir();
    let Ok(Some(dir)) = Dir::open_if_any(&worktrees) else {
        return Vec::new();
    };
    dir.entries()
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.kind == Kind::Dir)
        .map(|e| worktrees.join(e.name))
        .collect()
}

/// A session's isolation, located through its record (never through its `.git` file).
#[derive(Debug, Clone)]
pub struct Isolation {
    /// The isolation's working tree.
    pub tree: PathBuf,
    /// Its git admin dir (`<common>/worktrees/<name>`). The command in the isolation can write
    /// it: a3s-iso's own git never reads configuration, links or HEAD from it.
    pub admin: PathBuf,
    /// The repository's common dir: where a3s-iso's git finds objects, refs and configuration.
    pub common_dir: PathBuf,
    /// The commit the session was bound at, when a session record says so.
    pub bound_revision: Option<String>,
}

impl Isolation {
    /// The commit the isolation's HEAD names, resolved without trusting the admin dir
    /// ([`crate::git::resolve_head`]); `change_set_unavailable` when it names none. The bound
    /// revision is pinned by the session's base ref, so a HEAD still there needs no git.
    pub(crate) fn head(&self, git: &Git) -> Result<CommitId> {
        CommitId::new(crate::git::resolve_head(
            git,
            &self.common_dir,
            &self.admin,
            self.bound_revision.as_deref(),
        )?)
    }

    /// Git on this isolation through a private git dir under `scratch`: the way every git call
    /// a3s-iso makes on an isolation runs. Its HEAD is the isolation's HEAD, or, when that
    /// names no commit of the repository, the bound revision: a snapshot is the working
    /// tree's content and uses HEAD only to seed an index it cannot copy, so a rewritten HEAD
    /// must not cost the work in the tree. (Branch mode, which promotes the commits HEAD
    /// names, asks for [`Isolation::head`] and refuses an unusable one.)
    pub(crate) fn git(&self, git: &Git, scratch: &Path) -> Result<HermeticGit> {
        let head = match (self.head(git), &self.bound_revision) {
            (Ok(head), _) => head.into(),
            (Err(_), Some(bound)) => bound.clone(),
            (Err(err), None) => return Err(err),
        };
        let moved = self
            .bound_revision
            .as_ref()
            .is_some_and(|bound| *bound != head);
        Ok(
            HermeticGit::private(git, &self.tree, &self.common_dir, &head, scratch)?
                .with_head_moved(moved),
        )
    }

    /// The snapshot of the isolation as it is now (nested repositories left out).
    pub fn snapshot(&self, ctx: &Context, located: &Located) -> Result<snapshot::Snapshot> {
        let scratch = located.store.scratch_dir();
        let wt = self.git(&ctx.git, &scratch)?;
        let seed = located.store.seed_index(&self.admin)?;
        snapshot::snapshot(&wt, snapshot::Seed::Own(&seed), &scratch)
    }

    /// The snapshot of the isolation as it is now, leaving a3s-iso's own index of it as it was
    /// (only objects are written, as for any snapshot), with its temporary files in `scratch`.
    pub(crate) fn peek(
        &self,
        ctx: &Context,
        located: &Located,
        scratch: &Path,
    ) -> Result<snapshot::Snapshot> {
        let wt = self.git(&ctx.git, scratch)?;
        let seed = located.store.seed_index_path(&self.admin);
        snapshot::snapshot(&wt, snapshot::Seed::Peek(&seed), scratch)
    }
}

/// The isolation of a session that can be written and captured.
pub fn writable_isolation(record: &SessionRecord) -> Result<Isolation> {
    if record.read_only {
        return Err(Error::ReadOnlySession {
            session_id: record.session_id.to_string(),
        });
    }
    if record.state != SessionState::Discarded {
        repair_links(record)?;
    }
    if record.state == SessionState::Discarded {
        let session_id = record.session_id.to_string();
        return Err(NoDocument::Discarded { session_id }.into());
    }
    if !is_present(record) {
        return Err(Error::IsolationMissing {
            session_id: record.session_id.to_string(),
            worktree: record.worktree.clone(),
        });
    }
    if !is_healthy(record) {
        // There, but its HEAD is no file (the command can rewrite it): nothing is guessed.
        return Err(NoDocument::NoHeadFile {
            session_id: record.session_id.to_string(),
            head: record.admin_dir.as_deref().map(|a| a.join("HEAD")),
        }
        .into());
    }
    match (&record.worktree, &record.admin_dir) {
        (Some(tree), Some(admin)) => Ok(Isolation {
            tree: tree.clone(),
            admin: admin.clone(),
            common_dir: record.common_dir.clone(),
            bound_revision: Some(record.bound_revision.clone()),
        }),
        _ => Err(Error::internal("a healthy isolation without paths")),
    }
}

/// Removes what a bind that died (or failed) left: its tree and registration, then its claim.
/// The claim proves the tree is a3s-iso's: the path was free when the claim was taken.
pub fn clear_dead_claim(located: &Located, claim: &ClaimRecord) -> Result<()> {
    let tree = &claim.path;
    let published = located
        .store
        .load_session(&claim.session_id)?
        .is_some_and(|s| s.worktree.as_deref() == Some(tree.as_path()));
    if !published {
        // A checkout killed early may leave an admin dir git itself no longer accepts; the
        // claim proves the tree and whatever registration records it are ours.
        let admins = admin_dirs_for(&located.repo, tree);
        remove(&located.repo, tree, None)?;
        for admin in admins {
            remove_admin_dir(&located.repo, &admin)?;
        }
    }
    located.store.remove_claim(&claim.session_id)
}

/// Every registered linked worktree of the repository: `<tree>/.git` → its admin dir.
pub fn registered_admins(repo: &Repo) -> HashMap<PathBuf, PathBuf> {
    admin_dirs(repo)
        .into_iter()
        .filter_map(|admin| Some((read_link_file(&admin.join("gitdir"))?, admin)))
        .collect()
}
