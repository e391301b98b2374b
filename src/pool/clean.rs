//! Making a used isolation as a cold bind leaves one, without trusting anything in it: git runs
//! through a private git dir with a3s-iso's own index (never the tree's admin dir), restores
//! only the tracked paths that differ, removes what is untracked or ignored (but the kept
//! ignored paths), and the admin dir is emptied and written again as `git worktree add` writes
//! it.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, IoContext, Result};
use crate::git::{Git, HermeticGit};
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

/// Brings the tree to commit `head` with `index` (a3s-iso's own index of it, with stat data,
/// updated in place): tracked paths that differ are restored, everything untracked or ignored
/// is removed except ignored paths that `keep` (gitignore patterns) names. Costs one lstat pass
/// and one directory walk plus what differs: no full checkout, no read of unchanged subtrees.
pub(crate) fn clean(
    git: &Git,
    tree: &Tree,
    head: &str,
    index: &Path,
    keep: &[String],
) -> Result<()> {
    replace_dot_git(tree.path)?;
    let wt = HermeticGit::private(git, tree.path, tree.common_dir, head, tree.scratch)?;
    let cmd = || wt.cmd().env("GIT_INDEX_FILE", index);
    // a3s-iso's index of the tree was last written by a capture: the entries where it differs
    // from `head` (found through its cache tree, without reading the commit's unchanged
    // subtrees) go back to `head`'s, without stat data, and a path `head` lacks leaves it.
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
    // Then one lstat pass: a path whose stat data still matches the index is left alone; one
    // that differs (changed, touched, deleted, replaced, or just reset above) is written again
    // from the blob the index names, its stat data updated.
    let differing = cmd().args(["diff-files", "--name-only", "-z"]).run()?;
    if !differing.is_empty() {
        cmd()
            .args(["checkout-index", "-f", "-u", "-z", "--stdin"])
            .stdin(differing)
            .run()?;
    }
    if keep.is_empty() {
        cmd().args(["clean", "-ffdxq"]).run()?;
        return Ok(());
    }
    // Untracked paths go wherever they are; then ignored ones, but those a kept pattern
    // names: a negated pattern on the command line (which wins over every ignore file) makes
    // them not ignored for this one call. (An exclude pathspec would not do: git removes an
    // ignored directory whole.)
    cmd().args(["clean", "-ffdq"]).run()?;
    let mut remove_ignored = cmd().args(["clean", "-ffdXq"]);
    for pattern in keep {
        remove_ignored = remove_ignored.arg("-e").arg(format!("!{pattern}"));
    }
    remove_ignored.run()?;
    Ok(())
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
/// `gitdir` (naming `tree`), `HEAD` and `ORIG_HEAD` at `head`, the reflog of HEAD, and `index`
/// (a copy of a3s-iso's); then the tree's `.git` file naming the admin dir. The tree is at
/// `at` now and will be at `tree`.
pub(crate) fn reset_admin(
    admin: &Path,
    (at, tree): (&Path, &Path),
    head: &str,
    index: &Path,
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
