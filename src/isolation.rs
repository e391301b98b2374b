//! The isolation as a linked worktree: how it is named, located (through the admin dir a3s-iso
//! recorded, never the `.git` file inside the tree), checked, snapshotted and removed, and how a
//! dead bind's claim is cleared.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::context::{Context, Located};
use crate::error::{Error, IoContext, Result};
use crate::git::{Git, HermeticGit};
use crate::repo::Repo;
use crate::snapshot;
use crate::state::{ClaimRecord, SessionRecord, SessionState};

/// Every isolation's directory name starts with this, followed by the session id.
pub const NAME_PREFIX: &str = ".a3s-isolate-";

/// The admin dir a fresh worktree's `.git` file names, accepted only under `<common>/worktrees`.
/// Read once, right after `git worktree add` created it, and recorded from then on.
pub fn read_admin_dir(repo: &Repo, worktree: &Path) -> Result<PathBuf> {
    let dot_git = worktree.join(".git");
    let text = fs::read_to_string(&dot_git).ctx(|| format!("cannot read {}", dot_git.display()))?;
    let admin = text
        .strip_prefix("gitdir: ")
        .map(|rest| PathBuf::from(rest.trim_end()))
        .ok_or_else(|| Error::internal(format!("{} is not a gitdir link", dot_git.display())))?;
    let admin = if admin.is_absolute() {
        admin
    } else {
        worktree.join(admin)
    };
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

/// The admin dir's own record of where its tree is (`<admin>/gitdir` → `<tree>/.git`).
fn admin_points_at(admin: &Path, worktree: &Path) -> bool {
    fs::read_to_string(admin.join("gitdir"))
        .map(|text| Path::new(text.trim_end()) == worktree.join(".git"))
        .unwrap_or(false)
}

/// Puts back the admin dir's links (`gitdir`, `commondir`) if the isolation's user rewrote
/// them: a3s-iso's own git calls go through the admin dir and must reach this repository.
pub fn repair_links(record: &SessionRecord) -> Result<()> {
    let (Some(tree), Some(admin)) = (&record.worktree, &record.admin_dir) else {
        return Ok(());
    };
    if !admin.is_dir()
        || !fs::symlink_metadata(tree)
            .map(|m| m.is_dir())
            .unwrap_or(false)
    {
        return Ok(());
    }
    let gitdir = format!("{}\n", tree.join(".git").display());
    if fs::read_to_string(admin.join("gitdir")).ok().as_deref() != Some(gitdir.as_str()) {
        crate::fsutil::write_atomic(&admin.join("gitdir"), gitdir.as_bytes())?;
    }
    let points_home = fs::read_to_string(admin.join("commondir"))
        .ok()
        .map(|text| admin.join(text.trim_end()))
        .and_then(|dir| fs::canonicalize(dir).ok())
        .zip(fs::canonicalize(&record.common_dir).ok())
        .is_some_and(|(found, expected)| found == expected);
    if !points_home {
        // Admin dirs live in <common>/worktrees/<name>: the common dir is two levels up.
        crate::fsutil::write_atomic(&admin.join("commondir"), b"../..\n")?;
    }
    Ok(())
}

/// A healthy isolation: a real directory (not a symlink) registered with the source's repository
/// through the recorded admin dir.
pub fn is_healthy(record: &SessionRecord) -> bool {
    let (Some(tree), Some(admin)) = (&record.worktree, &record.admin_dir) else {
        return false;
    };
    let is_dir = fs::symlink_metadata(tree)
        .map(|m| m.file_type().is_dir())
        .unwrap_or(false);
    is_dir && admin.join("HEAD").is_file() && admin_points_at(admin, tree)
}

/// Removes a linked worktree and its registration. The `.git` file inside the tree is restored
/// first if it was rewritten, so git removes this tree and no other. Returns whether anything
/// was removed. A symlink at the path is never followed.
pub fn remove(git: &Git, repo: &Repo, tree: &Path, admin: Option<&Path>) -> Result<bool> {
    let meta = fs::symlink_metadata(tree);
    let tree_is_dir = meta
        .as_ref()
        .map(|m| m.file_type().is_dir())
        .unwrap_or(false);
    let admin_exists = admin.is_some_and(|a| a.is_dir());
    if tree_is_dir && let Some(admin) = admin.filter(|_| admin_exists) {
        let expected = format!("gitdir: {}\n", admin.display());
        let dot_git = tree.join(".git");
        if fs::read_to_string(&dot_git).ok().as_deref() != Some(expected.as_str()) {
            crate::fsutil::write_atomic(&dot_git, expected.as_bytes())?;
        }
        if !admin_points_at(admin, tree) {
            git.at(&repo.common_dir)
                .args(["worktree", "repair"])
                .arg(tree)
                .run()?;
        }
        git.at(&repo.common_dir)
            .args(["worktree", "remove", "--force", "--force"])
            .arg(tree)
            .run()?;
        return Ok(true);
    }
    let mut removed = false;
    if tree_is_dir {
        // Not (or no longer) registered: only a3s-iso's own record led here.
        fs::remove_dir_all(tree).ctx(|| format!("cannot remove {}", tree.display()))?;
        removed = true;
    }
    if let Some(admin) = admin.filter(|_| admin_exists) {
        remove_admin_dir(repo, admin)?;
        removed = true;
    }
    Ok(removed)
}

/// Drops a stale registration, only ever a direct child of `<common>/worktrees`.
pub fn remove_admin_dir(repo: &Repo, admin: &Path) -> Result<()> {
    if admin.parent() == Some(repo.worktrees_dir().as_path())
        || fs::canonicalize(admin.parent().unwrap_or(admin)).ok()
            == fs::canonicalize(repo.worktrees_dir()).ok()
    {
        fs::remove_dir_all(admin).ctx(|| format!("cannot remove {}", admin.display()))?;
    }
    Ok(())
}

/// Admin dirs whose recorded tree is `tree` (for leftovers whose admin dir was never recorded).
pub fn admin_dirs_for(repo: &Repo, tree: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(repo.worktrees_dir()) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|admin| admin_points_at(admin, tree))
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
    /// ([`crate::git::resolve_head`]); `change_set_unavailable` when it names none.
    pub(crate) fn head(&self, git: &Git) -> Result<String> {
        crate::git::resolve_head(git, &self.common_dir, &self.admin)
    }

    /// Git on this isolation through a private git dir under `scratch`: the way every git call
    /// a3s-iso makes on an isolation runs. Its HEAD is the isolation's HEAD, or, when that
    /// names no commit of the repository, the bound revision: a snapshot is the working
    /// tree's content and uses HEAD only to seed an index it cannot copy, so a rewritten HEAD
    /// must not cost the work in the tree. (Branch mode, which promotes the commits HEAD
    /// names, asks for [`Isolation::head`] and refuses an unusable one.)
    pub(crate) fn git(&self, git: &Git, scratch: &Path) -> Result<HermeticGit> {
        let head = match (self.head(git), &self.bound_revision) {
            (Ok(head), _) => head,
            (Err(_), Some(bound)) => bound.clone(),
            (Err(err), None) => return Err(err),
        };
        HermeticGit::private(git, &self.tree, &self.common_dir, &head, scratch)
    }

    /// The snapshot of the isolation as it is now (nested repositories left out).
    pub fn snapshot(&self, ctx: &Context, located: &Located) -> Result<snapshot::Snapshot> {
        let scratch = located.store.scratch_dir();
        let wt = self.git(&ctx.git, &scratch)?;
        snapshot::snapshot(&wt, &self.admin.join("index"), &scratch)
    }
}

/// The isolation of a session that can be written and captured.
pub fn writable_isolation(record: &SessionRecord) -> Result<Isolation> {
    if record.read_only {
        return Err(Error::ReadOnlySession {
            session_id: record.session_id.clone(),
        });
    }
    if record.state != SessionState::Discarded {
        repair_links(record)?;
    }
    if record.state == SessionState::Discarded || !is_healthy(record) {
        return Err(Error::ChangeSetUnavailable {
            message: format!(
                "session {:?} has no isolation to capture ({})",
                record.session_id,
                if record.state == SessionState::Discarded {
                    "discarded"
                } else {
                    "missing"
                }
            ),
        });
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
pub fn clear_dead_claim(ctx: &Context, located: &Located, claim: &ClaimRecord) -> Result<()> {
    let tree = &claim.path;
    {
        let published = located
            .store
            .load_session(&claim.session_id)?
            .is_some_and(|s| s.worktree.as_deref() == Some(tree.as_path()));
        if published {
            return located.store.remove_claim(&claim.session_id);
        }
        let admins = admin_dirs_for(&located.repo, tree);
        let is_dir = fs::symlink_metadata(tree)
            .map(|m| m.file_type().is_dir())
            .unwrap_or(false);
        if admins.is_empty() {
            if is_dir {
                remove(&ctx.git, &located.repo, tree, None)?;
            }
        } else {
            for admin in admins {
                // A checkout killed early leaves an admin dir git itself no longer accepts;
                // the claim proves both are ours, so remove them directly then.
                if remove(&ctx.git, &located.repo, tree, Some(&admin)).is_err() {
                    if tree.is_dir() {
                        fs::remove_dir_all(tree)
                            .ctx(|| format!("cannot remove {}", tree.display()))?;
                    }
                    remove_admin_dir(&located.repo, &admin)?;
                }
            }
        }
    }
    located.store.remove_claim(&claim.session_id)
}

/// Every registered linked worktree of the repository: `<tree>/.git` → its admin dir.
pub fn registered_admins(repo: &Repo) -> HashMap<PathBuf, PathBuf> {
    let Ok(entries) = std::fs::read_dir(repo.worktrees_dir()) else {
        return HashMap::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let admin = e.path();
            let gitdir = std::fs::read_to_string(admin.join("gitdir")).ok()?;
            Some((PathBuf::from(gitdir.trim_end()), admin))
        })
        .collect()
}
