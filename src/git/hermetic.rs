//! Git on a working tree with every location it reads named by a3s-iso. An isolation is written by
//! the command that runs in it: its tree, its `.git` file, and its admin dir
//! (`<common>/worktrees/<name>`: `HEAD`, `index`, `commondir`, `gitdir`, and a `config.worktree`
//! that git reads when the repository sets `extensions.worktreeConfig`). A git that a3s-iso runs
//! outside the sandbox must take none of its configuration, links or HEAD from there, or the
//! command could choose the filters, hooks and repository it runs with.
//!
//! So git on an isolation runs with `GIT_DIR`, `GIT_COMMON_DIR`, `GIT_WORK_TREE` and
//! `GIT_INDEX_FILE` all set explicitly ([`HermeticGit`]). `GIT_DIR` is a *private* git dir that
//! a3s-iso creates in its scratch space and that holds only a `HEAD` a3s-iso wrote: the isolation's
//! HEAD resolved by [`resolve_head`]. Objects, refs, hooks, `info/` and `config` come from the
//! repository's common dir, which the command cannot write; the per-worktree files of the admin dir
//! are never read (`GIT_COMMON_DIR` wins over a `commondir` file, and the private dir has no
//! `config.worktree`). Attributes in the tree's `.gitattributes` are content and still apply, but
//! only drivers the user configured (system, global or the common `config`) can run.
//!
//! Patches are computed in an [`ObjectView`]: a private bare git dir that sees the repository's
//! objects and nothing else, so that no attributes file (not even `<common>/info/attributes`) and
//! no repository configuration can shape their bytes.

use std::fs;
use std::path::{Path, PathBuf};

use crate::base::error::{Error, HeadProblem, IoContext, NoDocument, Result};
use crate::git::ops::ObjectFormat;
use crate::git::runner::{Git, GitCmd};

/// Ref namespaces that belong to one worktree (stored in its admin dir): they cannot be
/// resolved against the common dir alone.
const PER_WORKTREE_REFS: &[&str] = &["refs/bisect/", "refs/worktree/", "refs/rewritten/"];

/// The most a HEAD file holds (`ref: ` and a long ref name); a larger one is not a HEAD.
const HEAD_LIMIT: u64 = 4096;

/// A directory a3s-iso made in its scratch space for one use, removed when dropped.
struct PrivateDir(PathBuf);

impl PrivateDir {
    fn create(scratch: &Path, stem: &str) -> Result<PrivateDir> {
        fs::create_dir_all(scratch).ctx(|| format!("cannot create {}", scratch.display()))?;
        let path = scratch.join(crate::base::maker::owned_name(stem));
        fs::create_dir(&path).ctx(|| format!("cannot create {}", path.display()))?;
        Ok(PrivateDir(path))
    }

    /// Writes the file `name` (a path inside), its directories created.
    fn write(&self, name: &str, content: impl AsRef<[u8]>) -> Result<()> {
        let path = self.0.join(name);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).ctx(|| format!("cannot create {}", parent.display()))?;
        }
        fs::write(&path, content).ctx(|| format!("cannot write {}", path.display()))
    }

    /// An empty `refs/`, which git needs to take the directory for a git dir.
    fn add_refs(&self) -> Result<()> {
        let refs = self.0.join("refs");
        fs::create_dir(&refs).ctx(|| format!("cannot create {}", refs.display()))
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Git on one working tree with `GIT_DIR`, `GIT_COMMON_DIR`, `GIT_WORK_TREE` and
/// `GIT_INDEX_FILE` set explicitly: nothing in the tree (its `.git` file) or in a git dir that
/// a3s-iso did not name chooses where git looks. The one way a3s-iso runs git on an isolation.
pub(crate) struct HermeticGit {
    git: Git,
    tree: PathBuf,
    git_dir: PathBuf,
    common_dir: PathBuf,
    index: PathBuf,
    /// For a nested repository: the object directory git writes to (the superproject's own)
    /// and the one it only reads (the nested repository's, in the isolation).
    objects: Option<(PathBuf, PathBuf)>,
    /// The private git dir, when `git_dir` is one: removed with this value.
    _private: Option<PrivateDir>,
    /// HEAD is not the revision the tree was bound at: commits made in it may track files
    /// a3s-iso's own index of it does not (ones an ignore rule matches, added with force).
    head_moved: bool,
}

impl HermeticGit {
    /// Says whether HEAD is not the revision the tree was bound at ([`HermeticGit::head_moved`]).
    pub(crate) fn with_head_moved(mut self, moved: bool) -> HermeticGit {
        self.head_moved = moved;
        self
    }

    /// Whether HEAD is not the revision the tree was bound at.
    pub(crate) fn head_moved(&self) -> bool {
        self.head_moved
    }

    /// A checkout through its own git dir: the user's source checkout, or an isolation that
    /// a3s-iso created a moment ago and in which nothing else has run yet (its admin dir holds
    /// only what `git worktree add` wrote, and per-worktree state such as submodules' git dirs
    /// must land there).
    pub(crate) fn own(git: &Git, tree: &Path, git_dir: &Path, common_dir: &Path) -> HermeticGit {
        HermeticGit {
            git: git.clone(),
            tree: tree.to_path_buf(),
            git_dir: git_dir.to_path_buf(),
            common_dir: common_dir.to_path_buf(),
            index: git_dir.join("index"),
            objects: None,
            _private: None,
            head_moved: false,
        }
    }

    /// An isolation through a private git dir, created under `scratch`, whose `HEAD` is the
    /// commit `head` (detached). The index defaults to one in the private dir (none); callers
    /// name theirs with `GIT_INDEX_FILE`.
    pub(crate) fn private(
        git: &Git,
        tree: &Path,
        common_dir: &Path,
        head: &str,
        scratch: &Path,
    ) -> Result<HermeticGit> {
        head_format(head)?;
        let dir = PrivateDir::create(scratch, "gitdir")?;
        dir.write("HEAD", format!("{head}\n"))?;
        let own = HermeticGit::own(git, tree, &dir.0, common_dir);
        Ok(HermeticGit {
            _private: Some(dir),
            ..own
        })
    }

    /// A nested repository of an isolation (a submodule, or a repository inside the tree)
    /// through a private git dir that is its own common dir: `HEAD` (the commit `head`),
    /// `config` (only the object format) and `refs/` are a3s-iso's. Nothing of the nested
    /// repository's git dir is read but its objects, as data, from `read_objects`; what git
    /// writes goes to `write_objects` (the superproject's store, which the command cannot
    /// write). Its config, hooks, `info/` and HEAD are never seen.
    pub(crate) fn nested(
        git: &Git,
        tree: &Path,
        head: &str,
        (write_objects, read_objects): (&Path, &Path),
        scratch: &Path,
    ) -> Result<HermeticGit> {
        let format = head_format(head)?;
        let dir = PrivateDir::create(scratch, "nested")?;
        dir.write("HEAD", format!("{head}\n"))?;
        // Not bare: the work tree is named by GIT_WORK_TREE.
        dir.write(
            "config",
            format_config(format).replace("\tbare = true\n", ""),
        )?;
        dir.add_refs()?;
        let own = HermeticGit::own(git, tree, &dir.0, &dir.0);
        Ok(HermeticGit {
            objects: Some((write_objects.to_path_buf(), read_objects.to_path_buf())),
            _private: Some(dir),
            ..own
        })
    }

    /// Puts a file into the private git dir (`info/sparse-checkout`, `config.worktree`): what
    /// git would read there for a worktree of the user's. Only a private git dir takes one.
    pub(crate) fn add_private_file(&self, name: &str, bytes: &[u8]) -> Result<()> {
        match &self._private {
            Some(dir) => dir.write(name, bytes),
            None => Err(Error::internal("only a private git dir takes files")),
        }
    }

    pub(crate) fn tree(&self) -> &Path {
        &self.tree
    }

    /// The repository's common dir, where its objects are.
    pub(super) fn common_dir(&self) -> &Path {
        &self.common_dir
    }

    /// A git command on the tree, run in it, with every location set.
    pub(super) fn cmd(&self) -> GitCmd<'_> {
        let cmd = self
            .git
            .at(&self.tree)
            .env("GIT_DIR", &self.git_dir)
            .env("GIT_COMMON_DIR", &self.common_dir)
            .env("GIT_WORK_TREE", &self.tree)
            .env("GIT_INDEX_FILE", &self.index);
        match &self.objects {
            Some((write, read)) => cmd
                .env("GIT_OBJECT_DIRECTORY", write)
                .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", read),
            None => cmd,
        }
    }
}

/// The hash of the full commit id a private HEAD holds (any other HEAD is a bug).
fn head_format(head: &str) -> Result<ObjectFormat> {
    ObjectFormat::of_full_id(head).ok_or_else(|| {
        Error::internal(format!(
            "a private HEAD must be a full commit id, not {head:?}"
        ))
    })
}

/// The `config` of a private bare git dir: nothing but the object format.
fn format_config(format: ObjectFormat) -> &'static str {
    match format {
        ObjectFormat::Sha1 => "[core]\n\trepositoryformatversion = 0\n\tbare = true\n",
        ObjectFormat::Sha256 => {
            "[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n\tobjectFormat = sha256\n"
        }
    }
}

/// The commit an isolation's HEAD names, decided without trusting its admin dir: `<admin>/HEAD` is
/// read as a small regular file (never followed if it is a link, never waited on if it is a FIFO);
/// a full object id of the repository's hash length is taken as it is, `ref: refs/…` must pass `git
/// check-ref-format`, must not be a per-worktree ref, and is resolved against the common dir only;
/// either way the result must name a commit there. Anything else is `change_set_unavailable`. A
/// full id equal to `pinned`, a commit this repository keeps under a ref of a3s-iso's own (a
/// session's bound revision), is that commit without asking git again.
pub(crate) fn resolve_head(
    git: &Git,
    common_dir: &Path,
    admin: &Path,
    pinned: Option<&str>,
) -> Result<String> {
    let path = admin.join("HEAD");
    let unusable = |problem: HeadProblem| Error::ChangeSetUnavailable {
        reason: NoDocument::Head {
            path: path.clone(),
            problem,
        },
    };
    let bytes = crate::base::fsutil::read_small_regular_file(&path, HEAD_LIMIT)
        .map_err(|e| unusable(HeadProblem::Unreadable(e.to_string())))?;
    let text = std::str::from_utf8(&bytes).map_err(|_| unusable(HeadProblem::NotText))?;
    let text = text.strip_suffix('\n').unwrap_or(text);
    let full_id = ObjectFormat::of_full_id(text).is_some();
    if full_id && pinned == Some(text) {
        return Ok(text.to_string());
    }
    let named = if full_id {
        text.to_string()
    } else if let Some(name) = text.strip_prefix("ref: ") {
        if !is_shared_ref_name(git, common_dir, name)? {
            return Err(unusable(HeadProblem::NotShared(name.to_string())));
        }
        shared_ref(git, common_dir, name)?
            .ok_or_else(|| unusable(HeadProblem::NoSuchRef(name.to_string())))?
    } else {
        return Err(unusable(HeadProblem::Malformed));
    };
    // The commit comes back as a full id of the repository's hash: an id of the other hash's
    // length (which git would take as an abbreviation) does not match it.
    git.rev_parse(common_dir, &format!("{named}^{{commit}}"))?
        .filter(|commit| !full_id || commit.len() == named.len())
        .ok_or_else(|| unusable(HeadProblem::NotACommit(named.clone())))
}

/// A well-formed ref name under `refs/` that lives in the common dir.
fn is_shared_ref_name(git: &Git, common_dir: &Path, name: &str) -> Result<bool> {
    if !name.starts_with("refs/") || PER_WORKTREE_REFS.iter().any(|p| name.starts_with(p)) {
        return Ok(false);
    }
    git.at(common_dir)
        .args(["check-ref-format", name])
        .succeeds()
}

/// The object id of the ref `name` in the common dir (exactly that ref, no abbreviation rules).
fn shared_ref(git: &Git, common_dir: &Path, name: &str) -> Result<Option<String>> {
    git.at(common_dir)
        .args(["show-ref", "--verify", "--hash", "--", name])
        .found_text()
}

/// The repository's objects and nothing else: a private bare git dir with an unborn `HEAD`, no
/// refs, no configuration of the repository (only its object format) and no `info/`, reading
/// objects from the common dir's object store (and its alternates). With no working tree, no
/// index and `GIT_ATTR_SOURCE` at the empty tree, `core.attributesFile` and the system file
/// turned off, git finds no attributes anywhere; with no repository config, none of its
/// settings apply either. Tree-to-tree diffs need nothing more.
pub(crate) struct ObjectView {
    git: Git,
    dir: PrivateDir,
    objects: PathBuf,
    format: ObjectFormat,
}

impl ObjectView {
    /// A view of the objects of the repository whose common dir is `common_dir`, to work on
    /// the objects `ids`: when they are full ids of one hash, that is the repository's, and git
    /// need not be asked.
    pub(crate) fn new(
        git: &Git,
        common_dir: &Path,
        ids: &[&str],
        scratch: &Path,
    ) -> Result<ObjectView> {
        let told = ObjectFormat::ALL
            .into_iter()
            .find(|format| !ids.is_empty() && ids.iter().all(|id| format.is_full_id(id)));
        let format = match told {
            Some(format) => format,
            None => git.object_format(common_dir)?,
        };
        let dir = PrivateDir::create(scratch, "objects")?;
        dir.add_refs()?;
        // Unborn: a bare repository of git 2.42 and later reads attributes from HEAD's tree.
        dir.write("HEAD", "ref: refs/heads/unborn\n")?;
        dir.write("config", format_config(format))?;
        Ok(ObjectView {
            git: git.clone(),
            dir,
            objects: common_dir.join("objects"),
            format,
        })
    }

    /// Names commit `oid` `refs/heads/<name>` in the view (only there: the repository's refs
    /// are not the view's), so that git takes `name` for it. `name` must be one
    /// `merge::is_side_name` accepts.
    pub(super) fn name_commit(&self, name: &str, oid: &str) -> Result<()> {
        self.dir
            .write(&format!("refs/heads/{name}"), format!("{oid}\n"))
    }

    /// A git command on the view. `GIT_ATTR_SOURCE` is set unconditionally: git 2.40 and later
    /// read attributes from that tree (the empty one) instead of `attr.tree` or HEAD; older
    /// gits do not know the variable and, in a bare repository, read no tree's attributes.
    pub(super) fn cmd(&self) -> GitCmd<'_> {
        self.git
            .at(&self.dir.0)
            .env("GIT_DIR", &self.dir.0)
            .env("GIT_OBJECT_DIRECTORY", &self.objects)
            .env("GIT_ATTR_NOSYSTEM", "1")
            .env("GIT_ATTR_SOURCE", self.format.empty_tree())
            .args(["-c", "core.attributesFile=/dev/null"])
    }
}
