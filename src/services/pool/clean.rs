//! Making a used isolation as a cold bind leaves one, without trusting anything in it: git runs
//! through a private git dir with a3s-iso's own index (never the tree's admin dir), restores
//! only the tracked paths that differ, removes what is untracked or ignored (but the kept
//! ignored paths: `--keep-ignored`, and the ignored files `.worktreeinclude` names), and the
//! admin dir is emptied and written again as `git worktree add` writes it.

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::base::beneath::Dir;
use crate::base::error::{Error, IoContext, Result};
use crate::git::{Git, HermeticGit, OnIndex};
use crate::model::isolation::link_contents;
use crate::services::pool::inherit::Inherited;
use crate::services::pool::walk::{self, Expected};

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

/// The untracked paths a returned tree keeps, as gitignore patterns.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Keep<'a> {
    /// `pool --keep-ignored`: kept whether the commit ignores them or not.
    pub patterns: &'a [String],
    /// The source's `.worktreeinclude`: kept only where the commit's ignore rules (and the
    /// repository's `info/exclude` and `core.excludesFile`) ignore them.
    pub included: &'a [String],
}

impl Keep<'_> {
    /// Whether any path may be kept.
    fn any(&self) -> bool {
        !self.patterns.is_empty() || !self.included.is_empty()
    }
}

/// Brings the tree to commit `head` with `index` (a3s-iso's own index of it, with stat data,
/// updated in place): everything untracked or ignored is removed except the paths that `keep`
/// names, tracked paths that differ are restored, and every entry gets the kind, owner, mode
/// and extended attributes a cold bind gives it (`walk`). `pristine`: the index's stat data is
/// from when a3s-iso last wrote the tree. Costs one directory walk (beside `git clean`'s) plus
/// what differs: no full checkout, no read of unchanged files.
pub(crate) fn clean(
    git: &Git,
    tree: &Tree,
    head: &str,
    index: &Path,
    (keep, pristine): (Keep, bool),
) -> Result<()> {
    let root = Dir::open(tree.path).ctx(|| format!("cannot open {}", tree.path.display()))?;
    // Whatever the session left at `<tree>/.git` goes (a file, a directory, a link); the link
    // to the admin dir is written again by [`reset_admin`].
    root.remove(Path::new(".git"))
        .ctx(|| format!("cannot remove {}", tree.path.join(".git").display()))?;
    let expected = Expected::in_parent(tree.path.parent().unwrap_or(Path::new("/")))?;
    let wt = tree.private(git, head)?;
    // Attributes come from the bound commit alone (git 2.40 and later; older gits read the
    // tree's `.gitattributes`, which the order below makes the commit's before they are used).
    let on_index = wt.on_index_attrs_from(index, head);
    // When the index was written, before a reset below may write it again (git then marks
    // the entries it cannot vouch for, so either time is safe; the older is stricter).
    let written = crate::services::pool::index::written(index)?;
    reset_captured(&on_index, head)?;
    // A file the session wrote where a sparse checkout marks the entry skip-worktree is
    // looked at like any other (and written again or removed below).
    if crate::git::index_file::summary(index)?.skip_worktree {
        crate::model::snapshot::unskip_present(&on_index, tree.path)?;
    }
    let (entries, pristine) = match crate::services::pool::index::read(index, head.len() / 2)? {
        Some(mut parsed) => {
            parsed.written = parsed.written.min(written);
            (parsed, pristine)
        }
        // A form of index this reader does not take: its paths, and no file is untouched.
        None => (listed(&on_index, index)?, false),
    };
    // Untracked and ignored paths go first, so that no `.gitignore` or `.gitattributes` the session
    // wrote is read by what follows; `-x` reads no ignore file (the session may have written those
    // too): only the kept patterns, given on the command line, keep a path.
    let remove = || on_index.clean_all(keep.patterns.iter().chain(keep.included));
    // Meanwhile the walk: every entry once, a tracked file whose stat data still matches the
    // index left alone (a change always moves its ctime), any other removed, to be written
    // again from the blob the index names once `clean` is done, with its stat data updated:
    // the `.gitattributes` files first, so that every other file is written under the
    // commit's attributes.
    let (removed, found) = std::thread::scope(|scope| {
        let found = scope.spawn(|| walk::walk(&root, &entries, pristine, expected, keep.any()));
        (remove(), found.join())
    });
    let found = found.map_err(|_| Error::internal("the cleaning's walk panicked"))??;
    // A directory `git clean` could not read before the walk fixed its mode: again.
    if found.unreadable {
        remove()?;
    } else {
        removed?;
    }
    restore(&on_index, &root, tree.path, &found.differing)?;
    if !keep.included.is_empty() {
        // With the commit's ignore files back: what only `.worktreeinclude` kept and no ignore rule
        // ignores goes (`--keep-ignored` paths stay, kept by the first pass ignored or not).
        on_index.clean_unignored(keep.patterns)?;
    }
    Ok(())
}

/// Writes again from the index the tracked files the walk found changed or gone: the
/// `.gitattributes` files first, so that every other file is written under the commit's attributes.
fn restore(on_index: &OnIndex<'_>, root: &Dir, tree: &Path, differing: &[Vec<u8>]) -> Result<()> {
    let (rules, rest): (Vec<&[u8]>, Vec<&[u8]>) = differing
        .iter()
        .map(Vec::as_slice)
        .partition(|path| crate::base::paths::is_attributes_file(path));
    for path in &rules {
        root.clear_way(Path::new(std::ffi::OsStr::from_bytes(path)))
            .ctx(|| format!("cannot clean {}", tree.display()))?;
    }
    for paths in [rules, rest] {
        if !paths.is_empty() {
            on_index.check_out_listed(paths.join(&0u8))?;
        }
    }
    Ok(())
}

/// The index's entries as `git ls-files` lists them, without stat data.
fn listed(on_index: &OnIndex<'_>, index: &Path) -> Result<crate::services::pool::index::Index> {
    let out = on_index.staged_entries()?;
    crate::services::pool::index::from_listing(&out)
        .ok_or_else(|| Error::internal(format!("cannot list {}", index.display())))
}

/// a3s-iso's index of the tree was last written by a capture: the entries where it differs
/// from `head` (found through its cache tree, without reading the commit's unchanged
/// subtrees) go back to `head`'s, without stat data, and a path `head` lacks leaves it.
fn reset_captured(on_index: &OnIndex<'_>, head: &str) -> Result<()> {
    let captured = on_index.changed_since(head)?;
    if !captured.is_empty() {
        on_index.reset_listed(head, captured)?;
    }
    Ok(())
}

/// Moves `tree` from commit `from` to commit `to` touching only the paths that differ
/// (`index` holds `from`, with stat data, and is updated in place).
pub(crate) fn advance(git: &Git, tree: &Tree, from: &str, to: &str, index: &Path) -> Result<()> {
    tree.private(git, from)?.read_tree_move(index, from, to)
}

/// Empties the admin dir and writes what `git worktree add --detach` writes: `commondir`,
/// `gitdir` (naming `tree`), `HEAD` and `ORIG_HEAD` at `head`, the reflog of HEAD, `index`
/// (a copy of a3s-iso's), and what the source passes on (`inherited`); then the tree's `.git`
/// file naming the admin dir. The tree is at `at` now and will be at `tree`. Everything is
/// reached beneath the admin dir's and the tree's handles: a link the session left there is
/// removed as an entry, never followed.
pub(crate) fn reset_admin(
    admin: &Path,
    (at, tree): (&Path, &Path),
    head: &str,
    index: &Path,
    inherited: &Inherited,
) -> Result<()> {
    let dir = Dir::open(admin).ctx(|| format!("cannot open {}", admin.display()))?;
    dir.empty()
        .ctx(|| format!("cannot empty {}", admin.display()))?;
    // Each file appears whole (a temporary file renamed into place): a `git worktree add`
    // beside this reads every admin dir's `commondir`, and an empty one stops it.
    let write = |name: &str, bytes: &[u8]| -> Result<()> {
        dir.put(Path::new(name), bytes)
            .ctx(|| format!("cannot write {}", admin.join(name).display()))
    };
    write("commondir", b"../..\n")?;
    write("gitdir", &link_contents(&tree.join(".git")))?;
    write("HEAD", format!("{head}\n").as_bytes())?;
    write("ORIG_HEAD", format!("{head}\n").as_bytes())?;
    for name in ["logs", "refs"] {
        dir.mkdir(Path::new(name), 0o777)
            .ctx(|| format!("cannot create {}/{name}", admin.display()))?;
    }
    write("logs/HEAD", &reflog_line(head))?;
    inherited.write_into(admin)?;
    copy_index_into(index, &dir, Path::new("index"))?;
    let mut dot_git = b"gitdir: ".to_vec();
    dot_git.extend_from_slice(&link_contents(admin));
    let at_dir = Dir::open(at).ctx(|| format!("cannot open {}", at.display()))?;
    at_dir
        .remove(Path::new(".git"))
        .ctx(|| format!("cannot remove {}", at.join(".git").display()))?;
    at_dir
        .put(Path::new(".git"), &dot_git)
        .ctx(|| format!("cannot write {}", at.join(".git").display()))
}

/// Copies the index at `from` (a3s-iso's own) to `rel` beneath `dir`, with its modification
/// time (see `snapshot::copy_index`).
pub(crate) fn copy_index_into(from: &Path, dir: &Dir, rel: &Path) -> Result<()> {
    let copy = || -> std::io::Result<()> {
        let mut source = fs::File::open(from)?;
        let modified = source.metadata()?.modified()?;
        dir.put_with(rel, |file| {
            std::io::copy(&mut source, file)?;
            file.set_modified(modified)
        })
    };
    copy().ctx(|| {
        format!(
            "cannot copy {} to {}",
            from.display(),
            dir.path().join(rel).display()
        )
    })
}

/// The reflog entry of a detached HEAD set to `head`.
fn reflog_line(head: &str) -> Vec<u8> {
    let null = "0".repeat(head.len());
    let secs = crate::base::fsutil::now_ms() / 1000;
    format!("{null} {head} a3s-iso <a3s-iso> {secs} +0000\tbind: warm isolation\n").into_bytes()
}

/// A scratch file for an index, in `scratch`.
pub(crate) fn scratch_index(scratch: &Path) -> Result<PathBuf> {
    fs::create_dir_all(scratch).ctx(|| format!("cannot create {}", scratch.display()))?;
    Ok(scratch.join(crate::base::maker::owned_name("pool-index")))
}
