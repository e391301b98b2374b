//! What a new worktree takes from the checkout it is added from, which a spare must be given
//! as `git worktree add` gives it to a cold bind: the checkout's `config.worktree` (where
//! `extensions.worktreeConfig` is set; without `core.worktree`, and without `core.bare` when it
//! is true) and, where the checkout is sparse, its sparse-checkout patterns, applied to the tree.
//! Both are read from the source when a tree is returned and when it is taken, so a spare
//! follows the source's patterns of the moment, as a cold bind would.

use std::fs;
use std::path::Path;

use crate::base::error::{IoContext, Result};
use crate::git::{Git, HermeticGit};

/// The admin dir's files a new worktree of the source gets, and whether its tree is sparse.
#[derive(Debug, Clone, Default)]
pub(crate) struct Inherited {
    /// Files by their name in the admin dir.
    files: Vec<(&'static str, Vec<u8>)>,
    /// The source is a sparse checkout: the tree holds only what its patterns name.
    sparse: bool,
}

const CONFIG_WORKTREE: &str = "config.worktree";
const PATTERNS: &str = "info/sparse-checkout";

impl Inherited {
    /// What a worktree added from the checkout `source` inherits.
    pub(crate) fn of(git: &Git, source: &Path, scratch: &Path) -> Result<Inherited> {
        let git_dir = git.git_dir(source)?;
        let mut files = Vec::new();
        let own_config = git_dir.join(CONFIG_WORKTREE);
        if git.config_bool(source, "extensions.worktreeConfig")? == Some(true)
            && own_config.is_file()
        {
            files.push((CONFIG_WORKTREE, filtered_config(git, &own_config, scratch)?));
        }
        let sparse = git.config_bool(source, "core.sparseCheckout")? == Some(true);
        let patterns = git_dir.join(PATTERNS);
        if sparse && patterns.is_file() {
            let bytes =
                fs::read(&patterns).ctx(|| format!("cannot read {}", patterns.display()))?;
            files.push((PATTERNS, bytes));
        }
        Ok(Inherited { files, sparse })
    }

    /// Writes the files into `dir` (an admin dir, or a private git dir).
    pub(crate) fn write_into(&self, dir: &Path) -> Result<()> {
        for (name, bytes) in &self.files {
            let path = dir.join(name);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).ctx(|| format!("cannot create {}", parent.display()))?;
            }
            fs::write(&path, bytes).ctx(|| format!("cannot write {}", path.display()))?;
        }
        Ok(())
    }

    /// Makes the tree `wt` works on (through a private git dir at `head`) and a3s-iso's index
    /// of it (`index`, clean) hold what a checkout of `head` from the source holds: only what
    /// the source's patterns name where it is sparse (`read-tree -mu`, with the patterns and
    /// `config.worktree` in the private git dir, removes the rest and writes what they newly
    /// name), else every file (the marks an earlier sparse checkout left are cleared and their
    /// files written).
    pub(crate) fn conform(&self, wt: HermeticGit, head: &str, index: &Path) -> Result<()> {
        let on_index = wt.on_index_attrs_from(index, head);
        if self.sparse {
            for (name, bytes) in &self.files {
                wt.add_private_file(name, bytes)?;
            }
            // The patterns apply only where git reads them as the worktree's.
            return on_index.read_tree_sparse("HEAD");
        }
        if !crate::git::index_file::summary(index)?.skip_worktree {
            return Ok(());
        }
        let listed = on_index.tagged_entries()?;
        let mut marked = Vec::new();
        for path in crate::git::split_nul(&listed).filter_map(|r| r.strip_prefix(b"S ")) {
            marked.extend_from_slice(path);
            marked.push(0);
        }
        if marked.is_empty() {
            return Ok(());
        }
        on_index.unskip_listed(marked.clone())?;
        on_index.check_out_listed(marked)
    }
}

/// The checkout's `config.worktree` as `git worktree add` copies it: without `core.worktree`
/// (which names the checkout's own tree), and without `core.bare` when it is true.
fn filtered_config(git: &Git, file: &Path, scratch: &Path) -> Result<Vec<u8>> {
    let copy = crate::model::snapshot::TempFile::new(scratch, "config-worktree")?;
    fs::copy(file, copy.path()).ctx(|| format!("cannot copy {}", file.display()))?;
    git.config_file_unset(scratch, copy.path(), "core.worktree")?;
    if git.config_file_bool(scratch, copy.path(), "core.bare")? == Some(true) {
        git.config_file_unset(scratch, copy.path(), "core.bare")?;
    }
    fs::read(copy.path()).ctx(|| format!("cannot read {}", copy.path().display()))
}
