//! Making a used isolation as a cold bind leaves one, without trusting anything in it: git runs
//! through a private git dir with a3s-iso's own index (never the tree's admin dir), restores
//! only the tracked paths that differ, removes what is untracked or ignored (but the kept
//! ignored paths), and the admin dir is emptied and written again as `git worktree add` writes
//! it.

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::inherit::Inherited;
use crate::error::{Error, IoContext, Result};
use crate::git::{Git, GitCmd, HermeticGit};
use crate::isolation::link_contents;

/// Where git and a3s-iso's files for one tree are.
pub(crate) struct Tree<'a> {
    /// The working tree.
    pub path: &'a Path,
    /// The repository's common dir.
    pub common_dir: &'a Path,
    /// Scratch space for the private git dir.
    pub scratch: &'a Path,
}

impl Tree<'_> {
    /// Git on the tree through a private git dir whose HEAD is `head`.
    pub(crate) fn private(&self, git: &Git, head: &str) -> Result<HermeticGit> {
        HermeticGit::private(git, self.path, self.common_dir, head, self.scratch)
    }
}

/// Brings the tree to commit `head` with `index` (a3s-iso's own index of it, with stat data,
/// updated in place): everything untracked or ignored is removed except the paths that `keep`
/// (gitignore patterns) names, and tracked paths that differ are restored. Costs one directory
/// walk and one lstat pass plus what differs: no full checkout, no read of unchanged subtrees.
pub(crate) fn clean(
    git: &Git,
    tree: &Tree,
    head: &str,
    index: &Path,
    keep: &[String],
) -> Result<()> {
    replace_dot_git(tree.path)?;
    let wt = HermeticGit::private(git, tree.path, tree.common_dir, head, tree.scratch)?;
    // Attributes come from the bound commit alone (git 2.40 and later; older gits read the
    // tree's `.gitattributes`, which the order below makes the commit's before they are used).
    let cmd = || {
        wt.cmd()
            .env("GIT_INDEX_FILE", index)
            .env("GIT_ATTR_SOURCE", head)
    };
    reset_captured(&cmd, head)?;
    // A file the session wrote where a sparse checkout marks the entry skip-worktree is
    // looked at like any other (and written again or removed below).
    if crate::indexfile::summary(index)?.skip_worktree {
        crate::snapshot::unskip_present(&cmd, tree.path)?;
    }
    // Untracked and ignored paths go first, so that no `.gitignore` or `.gitattributes` the
    // session wrote is read by what follows. `-x` uses none of the ignore files (the session
    // may have written those too): only the kept patterns, given on the command line, keep a
    // path.
    let mut remove = cmd().args(["clean", "-ffdxq"]);
    for pattern in keep {
        remove = remove.arg("-e").arg(pattern);
    }
    // Meanwhile one lstat pass over the tracked paths (which `clean` never touches): a path
    // whose stat data still matches the index is left alone (a change always moves its
    // ctime); one that differs (changed, touched, deleted, replaced, or reset above) is
    // written again from the blob the index names, once `clean` is done, with its stat data
    // updated: the `.gitattributes` files first, so that every other file is written under
    // the commit's attributes.
    let (removed, differing) = std::thread::scope(|scope| {
        let differing = scope.spawn(|| cmd().args(["diff-files", "--name-only", "-z"]).run());
        (remove.run(), differing.join())
    });
    removed?;
    let differing =
        differing.map_err(|_| crate::error::Error::internal("the lstat pass panicked"))??;
    let (rules, rest): (Vec<&[u8]>, Vec<&[u8]>) =
        crate::git::split_nul(&differing).partition(|path| is_attributes_file(path));
    for path in &rules {
        remove_entry(&tree.path.join(std::ffi::OsStr::from_bytes(path)))?;
    }
    for paths in [rules, rest] {
        if !paths.is_empty() {
            cmd()
                .args(["checkout-index", "-f", "-u", "-z", "--stdin"])
                .stdin(paths.join(&0u8))
                .run()?;
        }
    }
    Ok(())
}

/// a3s-iso's index of the tree was last written by a capture: the entries where it differs
/// from `head` (found through its cache tree, without reading the commit's unchanged
/// subtrees) go back to `head`'s, without stat data, and a path `head` lacks leaves it.
fn reset_captured<'g>(cmd: &dyn Fn() -> GitCmd<'g>, head: &str) -> Result<()> {
    let captured = cmd()
        .args(["diff-index", "--cached", "--name-only", "-z", head])
        .run()?;
    if !captured.is_empty() {
        cmd()
            .env("GIT_LITERAL_PATHSPECS", "1")
            .args(["reset", "-q", head, "--pathspec-from-file=-"])
            .arg("--pathspec-file-nul")
            .stdin(captured)
            .run()?;
    }
    Ok(())
}

/// Whether a repository path names a `.gitattributes` file.
fn is_attributes_file(path: &[u8]) -> bool {
    path.rsplit(|b| *b == b'/').next() == Some(b".gitattributes".as_slice())
}

/// Removes whatever is at `path` (a file, a link, a directory); nothing there is fine.
fn remove_entry(path: &Path) -> Result<()> {
    let removed = match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(_) => Ok(()),
    };
    removed.ctx(|| format!("cannot remove {}", path.display()))
}

/// Moves `tree` from commit `from` to commit `to` touching only the paths that differ
/// (`index` holds `from`, with stat data, and is updated in place).
pub(crate) fn advance(git: &Git, tree: &Tree, from: &str, to: &str, index: &Path) -> Result<()> {
    let wt = HermeticGit::private(git, tree.path, tree.common_dir, from, tree.scratch)?;
    wt.cmd()
        .env("GIT_INDEX_FILE", index)
        .args(["read-tree", "-m", "-u", from, to])
        .run()?;
    Ok(())
}

/// Whatever the session left at `<tree>/.git` goes (a file, a directory, a link); the link to
/// the admin dir is written again by [`reset_admin`].
fn replace_dot_git(tree: &Path) -> Result<()> {
    let dot_git = tree.join(".git");
    match fs::symlink_metadata(&dot_git) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(&dot_git),
        Ok(_) => fs::remove_file(&dot_git),
        Err(_) => Ok(()),
    }
    .ctx(|| format!("cannot remove {}", dot_git.display()))
}

/// Empties the admin dir and writes what `git worktree add --detach` writes: `commondir`,
/// `gitdir` (naming `tree`), `HEAD` and `ORIG_HEAD` at `head`, the reflog of HEAD, `index`
/// (a copy of a3s-iso's), and what the source passes on (`inherited`); then the tree's `.git`
/// file naming the admin dir. The tree is at `at` now and will be at `tree`.
pub(crate) fn reset_admin(
    admin: &Path,
    (at, tree): (&Path, &Path),
    head: &str,
    index: &Path,
    inherited: &Inherited,
) -> Result<()> {
    let meta = fs::symlink_metadata(admin).ctx(|| format!("cannot read {}", admin.display()))?;
    if !meta.file_type().is_dir() {
        return Err(Error::internal(format!(
            "{} is not a directory",
            admin.display()
        )));
    }
    for entry in fs::read_dir(admin).ctx(|| format!("cannot read {}", admin.display()))? {
        let path = entry
            .ctx(|| format!("cannot read {}", admin.display()))?
            .path();
        let is_dir = fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        if is_dir {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        }
        .ctx(|| format!("cannot remove {}", path.display()))?;
    }
    let write = |name: &str, bytes: &[u8]| -> Result<()> {
        let path = admin.join(name);
        fs::write(&path, bytes).ctx(|| format!("cannot write {}", path.display()))
    };
    write("commondir", b"../..\n")?;
    write("gitdir", &link_contents(&tree.join(".git")))?;
    write("HEAD", format!("{head}\n").as_bytes())?;
    write("ORIG_HEAD", format!("{head}\n").as_bytes())?;
    for dir in ["logs", "refs"] {
        fs::create_dir(admin.join(dir))
            .ctx(|| format!("cannot create {}/{dir}", admin.display()))?;
    }
    write("logs/HEAD", &reflog_line(head))?;
    inherited.write_into(admin)?;
    crate::snapshot::copy_index(index, &admin.join("index"))?;
    let mut dot_git = b"gitdir: ".to_vec();
    dot_git.extend_from_slice(&link_contents(admin));
    replace_dot_git(at)?;
    let path = at.join(".git");
    fs::write(&path, dot_git).ctx(|| format!("cannot write {}", path.display()))
}

/// The reflog entry of a detached HEAD set to `head`.
fn reflog_line(head: &str) -> Vec<u8> {
    let null = "0".repeat(head.len());
    let secs = crate::fsutil::now_ms() / 1000;
    format!("{null} {head} a3s-iso <a3s-iso> {secs} +0000\tbind: warm isolation\n").into_bytes()
}

/// A scratch file for an index, in `scratch`.
pub(crate) fn scratch_index(scratch: &Path) -> Result<PathBuf> {
    fs::create_dir_all(scratch).ctx(|| format!("cannot create {}", scratch.display()))?;
    Ok(scratch.join(crate::scratch::owned_name("pool-index")))
}
