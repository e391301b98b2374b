//! Git on one index file a3s-iso names (`GIT_INDEX_FILE`): a temporary index, its own index
//! of an isolation, or a copy of the user's. Every operation on such an index is a method here,
//! so that the callers name what they do and never git's arguments.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::path::{Path, PathBuf};

use crate::base::error::Result;
use crate::git::hermetic::HermeticGit;
use crate::git::index_file::edit::{Change, Subtrees, TreeChanges};
use crate::git::runner::{Git, GitCmd, GitOutput};

/// Settings that make git's stat check compare everything a command cannot forge (ctime and inode
/// included), and keep caches of the checkout's state out of the snapshot (the one call that reads
/// an untracked cache asks for it, on an index of a3s-iso's own). These indexes are a3s-iso's own,
/// read only by its git calls and its own reader: git writes them with the null trailer of
/// `index.skipHash` (2.40 and later) rather than hashing every byte of the index on each write.
const SNAPSHOT_CONFIG: &[&str] = &[
    "-c",
    "index.skipHash=true",
    "-c",
    "core.splitIndex=false",
    "-c",
    "core.checkStat=default",
    "-c",
    "core.trustctime=true",
    "-c",
    "core.untrackedCache=false",
    "-c",
    "core.ignoreStat=false",
];

/// A git pointed at one index file; each call starts a new process with the same setup.
pub(crate) struct OnIndex<'g> {
    make: Box<dyn Fn() -> GitCmd<'g> + 'g>,
}

impl HermeticGit {
    /// Git on the tree with `index` as its index, each command set up by `setup`.
    fn index_with<'g>(
        &'g self,
        index: &'g Path,
        setup: impl Fn(GitCmd<'g>) -> GitCmd<'g> + 'g,
    ) -> OnIndex<'g> {
        OnIndex {
            make: Box::new(move || setup(self.cmd().env("GIT_INDEX_FILE", index))),
        }
    }

    /// Git on the tree with `index` as its index.
    pub(crate) fn on_index<'g>(&'g self, index: &'g Path) -> OnIndex<'g> {
        self.index_with(index, |cmd| cmd)
    }

    /// Git on the tree with `index` as its index, attributes read from `commit` only (git 2.40+).
    pub(crate) fn on_index_attrs_from<'g>(
        &'g self,
        index: &'g Path,
        commit: &'g str,
    ) -> OnIndex<'g> {
        self.index_with(index, move |cmd| cmd.env("GIT_ATTR_SOURCE", commit))
    }

    /// Git on the tree with `index` as its index and the snapshot's stat settings.
    pub(crate) fn on_snapshot_index<'g>(&'g self, index: &'g Path) -> OnIndex<'g> {
        self.index_with(index, |cmd| cmd.args(SNAPSHOT_CONFIG))
    }

    /// [`HermeticGit::on_snapshot_index`] with every pathspec taken literally (a run's paths).
    pub(crate) fn on_snapshot_index_literal<'g>(&'g self, index: &'g Path) -> OnIndex<'g> {
        self.index_with(index, |cmd| {
            cmd.env("GIT_LITERAL_PATHSPECS", "1").args(SNAPSHOT_CONFIG)
        })
    }

    /// Git on the tree with `index` as its index, objects also read from `alternate`.
    pub(crate) fn on_index_with_alternate<'g>(
        &'g self,
        index: &'g Path,
        alternate: Option<&'g Path>,
    ) -> OnIndex<'g> {
        self.index_with(index, move |cmd| match alternate {
            Some(dir) => cmd.env("GIT_ALTERNATE_OBJECT_DIRECTORIES", dir),
            None => cmd,
        })
    }

    /// Turns the split index at `index` into a whole one (`update-index --no-split-index`).
    pub(crate) fn unsplit_index(&self, index: &Path) -> Result<()> {
        self.cmd()
            .env("GIT_INDEX_FILE", index)
            .args(["update-index", "--no-split-index"])
            .finish()
    }

    /// Moves the tree and its index (which names `from`) to `to`, touching only what differs.
    pub(crate) fn read_tree_move(&self, index: &Path, from: &str, to: &str) -> Result<()> {
        self.cmd()
            .env("GIT_INDEX_FILE", index)
            .args(["read-tree", "-m", "-u", from, to])
            .finish()
    }

    /// Resets the tree and its index to `tree` (`read-tree -u --reset`).
    pub(crate) fn read_tree_reset(&self, tree: &str) -> Result<()> {
        self.cmd()
            .args(["read-tree", "-u", "--reset", tree])
            .finish()
    }

    /// Stages `index_tree` over `tree` (`read-tree -m`), the tree left as it is.
    pub(crate) fn read_tree_staged(&self, tree: &str, index_tree: &str) -> Result<()> {
        self.cmd()
            .args(["read-tree", "-m", tree, index_tree])
            .finish()
    }

    /// Resets the index to HEAD (`reset -q`), the tree left as it is.
    pub(crate) fn reset_index(&self) -> Result<()> {
        self.cmd().args(["reset", "-q"]).finish()
    }
}

impl Git {
    /// Git in `dir` with `index` as its index.
    pub(crate) fn on_index<'g>(&'g self, dir: &'g Path, index: &'g Path) -> OnIndex<'g> {
        OnIndex {
            make: Box::new(move || self.at(dir).env("GIT_INDEX_FILE", index)),
        }
    }
}

impl OnIndex<'_> {
    /// Runs `args` with `input` (NUL-terminated paths, or entries) on its standard input.
    fn feed(&self, args: &[&str], input: Vec<u8>) -> Result<()> {
        self.cmd().args(args).stdin(input).finish()
    }

    fn cmd(&self) -> GitCmd<'_> {
        (self.make)()
    }

    /// Fills the index from `revision` and checks every file out into the (empty) tree.
    pub(crate) fn check_out(&self, revision: &str) -> Result<()> {
        self.cmd()
            .args(["read-tree", "-u", "--reset", revision])
            .finish()
    }

    /// Fills the index from `tree` (`read-tree`).
    pub(crate) fn read_tree(&self, tree: &str) -> Result<()> {
        self.cmd()
            .args(["read-tree", "--end-of-options", tree])
            .finish()
    }

    /// Fills the index from `tree` and updates the files of the sparse checkout's patterns.
    pub(crate) fn read_tree_sparse(&self, tree: &str) -> Result<()> {
        self.cmd()
            .args(["-c", "core.sparseCheckout=true"])
            .args(["read-tree", "-m", "-u", tree])
            .finish()
    }

    /// The index's tree (`write-tree`).
    pub(crate) fn write_tree(&self) -> Result<String> {
        self.cmd().arg("write-tree").run_text()
    }

    /// The index's tree, or `None` when git cannot write it (unmerged entries).
    pub(crate) fn try_write_tree(&self) -> Result<Option<String>> {
        self.cmd().arg("write-tree").found_text()
    }

    /// Sets the entries `info` describes (`update-index -z --index-info`).
    pub(crate) fn index_info(&self, info: Vec<u8>) -> Result<()> {
        self.feed(&["update-index", "-z", "--index-info"], info)
    }

    /// Takes the files at `paths` as they are on disk, removing the gone ones.
    pub(crate) fn add_or_remove(
        &self,
        paths: impl IntoIterator<Item = impl AsRef<OsStr>>,
    ) -> Result<()> {
        self.cmd()
            .args(["update-index", "--add", "--remove", "--"])
            .args(paths)
            .finish()
    }

    /// Drops the entries at `paths` (`update-index --force-remove`).
    pub(crate) fn force_remove(
        &self,
        paths: impl IntoIterator<Item = impl AsRef<OsStr>>,
    ) -> Result<()> {
        self.cmd()
            .args(["update-index", "--force-remove", "--"])
            .args(paths)
            .finish()
    }

    /// Takes the files named by the NUL-terminated `paths` as they are on disk.
    pub(crate) fn add_listed(&self, paths: Vec<u8>) -> Result<()> {
        self.feed(&["update-index", "--add", "-z", "--stdin"], paths)
    }

    /// Takes the files named by the NUL-terminated `paths` as they are on disk, replacing a
    /// directory or file in the way (`update-index --add --replace`); one that is gone by the
    /// time git looks (a command still deleting files) is removed (`--remove`), not an error.
    pub(crate) fn add_replacing_listed(&self, paths: Vec<u8>) -> Result<()> {
        self.cmd()
            .args(["update-index", "--add", "--remove", "--replace"])
            .args(["-z", "--stdin"])
            .stdin(paths)
            .finish()
    }

    /// Writes the files of the NUL-terminated `paths` from the index; the index stays as it is.
    pub(crate) fn write_listed(&self, paths: Vec<u8>) -> Result<()> {
        self.feed(&["checkout-index", "-f", "-q", "-z", "--stdin"], paths)
    }

    /// Drops the entries named by the NUL-terminated `paths` (`update-index --force-remove`).
    pub(crate) fn force_remove_listed(&self, paths: Vec<u8>) -> Result<()> {
        self.feed(&["update-index", "--force-remove", "-z", "--stdin"], paths)
    }

    /// What in the tree differs from the index, for every path (`status --porcelain=v1 -z`,
    /// untracked files one by one, no renames, submodules not entered), read through the
    /// index's untracked cache: a directory whose stat data (ctime and inode included) is
    /// what the cache noted is not read again. The cache is made or brought up to date in the
    /// index itself, with the refreshed stat data, so only for an index of a3s-iso's own.
    pub(crate) fn changes_through_untracked_cache(&self) -> Result<Vec<u8>> {
        self.cmd()
            .env("GIT_OPTIONAL_LOCKS", "1")
            .args(["-c", "core.untrackedCache=true"])
            .args(["-c", "status.showUntrackedFiles=all"])
            .args(["status", "--porcelain=v1", "-z", "--untracked-files=all"])
            .args(["--no-renames", "--ignore-submodules=all"])
            .run()
    }

    /// The paths `add -A` would stage among `paths` (all when empty), NUL-separated.
    pub(crate) fn stageable(&self, paths: &[PathBuf]) -> Result<Vec<u8>> {
        self.cmd()
            .args(["ls-files", "-z", "--cached", "--others"])
            .args(["--exclude-standard", "--"])
            .args(paths)
            .run()
    }

    /// Clears the skip-worktree mark of the NUL-terminated `paths`.
    pub(crate) fn unskip_listed(&self, paths: Vec<u8>) -> Result<()> {
        self.feed(
            &["update-index", "--no-skip-worktree", "-z", "--stdin"],
            paths,
        )
    }

    /// `ls-files -t -z`: each entry with its tag (`S ` when marked skip-worktree).
    pub(crate) fn tagged_entries(&self) -> Result<Vec<u8>> {
        self.cmd().args(["ls-files", "-t", "-z"]).run()
    }

    /// `ls-files -s -z`: each entry's mode, object, stage and path.
    pub(crate) fn staged_entries(&self) -> Result<Vec<u8>> {
        self.cmd().args(["ls-files", "-s", "-z"]).run()
    }

    /// `ls-files --stage -z`, streamed into `file`.
    pub(crate) fn staged_entries_to(&self, file: File) -> Result<()> {
        self.cmd()
            .args(["ls-files", "--stage", "-z"])
            .run_to_file(file)
    }

    /// `ls-files -u -z`: the unmerged entries.
    pub(crate) fn unmerged_entries(&self) -> Result<Vec<u8>> {
        self.cmd().args(["ls-files", "-u", "-z"]).run()
    }

    /// `add -A` of the whole tree but the `excluded` pathspecs; the output whatever the status.
    pub(crate) fn add_all_but(
        &self,
        excluded: impl IntoIterator<Item = OsString>,
    ) -> Result<GitOutput> {
        self.cmd()
            .args(["-c", "advice.addEmbeddedRepo=false", "add", "-A", "--", "."])
            .args(excluded)
            .output()
    }

    /// The paths the index lacks that `commit` has, among `paths` (all of them when empty).
    pub(crate) fn deleted_since(&self, commit: &str, paths: &[PathBuf]) -> Result<Vec<u8>> {
        self.cmd()
            .args(["diff-index", "--cached", "-z"])
            .args(["--name-only", "--no-renames"])
            .args(["--diff-filter=D", commit, "--"])
            .args(paths)
            .run()
    }

    /// The paths where the index differs from `tree`, NUL-separated.
    pub(crate) fn changed_since(&self, tree: &str) -> Result<Vec<u8>> {
        self.cmd()
            .args(["diff-index", "--cached", "--name-only", "-z", tree])
            .run()
    }

    /// Among the literal `paths`, those where the index differs from `tree`.
    pub(crate) fn changed_among(
        &self,
        tree: &str,
        paths: impl IntoIterator<Item = impl AsRef<OsStr>>,
    ) -> Result<Vec<u8>> {
        self.cmd()
            .args(["--literal-pathspecs", "diff-index", "--cached"])
            .args(["--name-only", "-z", "--no-renames", tree, "--"])
            .args(paths)
            .run()
    }

    /// Puts the entries named by the NUL-separated literal `paths` back to `commit`'s.
    pub(crate) fn reset_listed(&self, commit: &str, paths: Vec<u8>) -> Result<()> {
        self.cmd()
            .env("GIT_LITERAL_PATHSPECS", "1")
            .args(["reset", "-q", commit, "--pathspec-from-file=-"])
            .arg("--pathspec-file-nul")
            .stdin(paths)
            .finish()
    }

    /// Writes the files of the NUL-separated `paths` from the index, which notes their stat data.
    pub(crate) fn check_out_listed(&self, paths: Vec<u8>) -> Result<()> {
        self.feed(&["checkout-index", "-f", "-u", "-z", "--stdin"], paths)
    }

    /// Removes every untracked file of the tree, ignored ones included, but what `kept` match.
    pub(crate) fn clean_all(
        &self,
        kept: impl IntoIterator<Item = impl AsRef<OsStr>>,
    ) -> Result<()> {
        self.clean("-ffdxq", kept)
    }

    /// Removes the untracked files no ignore rule ignores, but what one of `kept` matches.
    pub(crate) fn clean_unignored(
        &self,
        kept: impl IntoIterator<Item = impl AsRef<OsStr>>,
    ) -> Result<()> {
        self.clean("-ffdq", kept)
    }

    fn clean(&self, flags: &str, kept: impl IntoIterator<Item = impl AsRef<OsStr>>) -> Result<()> {
        let mut cmd = self.cmd().args(["clean", flags]);
        for pattern in kept {
            cmd = cmd.arg("-e").arg(pattern);
        }
        cmd.finish()
    }

    /// Applies the patch at `patch` to the index only; the output whatever the status.
    pub(crate) fn apply_cached(&self, patch: &Path) -> Result<GitOutput> {
        self.cmd()
            .args(["-c", "apply.whitespace=nowarn"])
            .args(["apply", "--cached", "--binary"])
            .arg(patch)
            .output()
    }
}

impl HermeticGit {
    /// What each path whose entry differs between the trees `from` and `to` holds in `to`, the
    /// paths `to` adds, and the tree id (raw) in `to` of every directory above a change (`""`:
    /// `to` itself), in one `diff-tree -t`: a changed path changes the tree of each directory
    /// above it, so git lists them all.
    pub(crate) fn tree_diff(&self, from: &str, to: &str) -> Result<TreeDiff> {
        let raw = self
            .cmd()
            .without_index()
            .args(["diff-tree", "-r", "-t", "-z", "--raw"])
            .args(["--no-renames", "--no-abbrev"])
            .args([from, to])
            .run()?;
        let mut subtrees = Subtrees::new();
        subtrees.insert(Vec::new(), hex::decode(to).unwrap_or_default());
        let (changes, added) = parse_raw_records(&raw, |path, id| {
            subtrees.insert(path.to_vec(), id);
        })
        .ok_or_else(|| {
            crate::base::error::Error::internal("git diff-tree printed what a3s-iso cannot read")
        })?;
        Ok(TreeDiff {
            changes,
            added,
            subtrees,
        })
    }

    /// Which of the literal `paths` `tree` holds, NUL-separated (`ls-tree -r --name-only`).
    pub(crate) fn names_in_tree(
        &self,
        tree: &str,
        paths: impl IntoIterator<Item = impl AsRef<OsStr>>,
    ) -> Result<Vec<u8>> {
        self.cmd()
            .args(["--literal-pathspecs", "ls-tree", "-r", "-z"])
            .args(["--name-only", tree, "--"])
            .args(paths)
            .run()
    }

    /// The tree of `commit` (`rev-parse --verify <commit>^{tree}`).
    pub(crate) fn tree_of(&self, commit: &str) -> Result<String> {
        self.cmd()
            .args(["rev-parse", "--verify"])
            .arg(format!("{commit}^{{tree}}"))
            .run_text()
    }
}

/// What differs between two trees: each path's entry in the second, the paths it adds, and
/// the tree ids of the directories above the changes.
pub(crate) struct TreeDiff {
    pub(crate) changes: TreeChanges,
    pub(crate) added: Vec<Vec<u8>>,
    pub(crate) subtrees: Subtrees,
}

/// `diff-tree -z --raw -t` records (`:OLDMODE NEWMODE OLD NEW STATUS\0PATH\0`) as changes
/// and the paths added; each directory the new side has goes to `subtree` with its id, and no
/// tree is an entry's change.
fn parse_raw_records(
    raw: &[u8],
    mut subtree: impl FnMut(&[u8], Vec<u8>),
) -> Option<(TreeChanges, Vec<Vec<u8>>)> {
    const TREE: &str = "040000";
    let mut changes = TreeChanges::new();
    let mut added = Vec::new();
    let mut parts = raw.split(|b| *b == 0);
    while let Some(head) = parts.next().filter(|h| !h.is_empty()) {
        let path = parts.next()?;
        let head = std::str::from_utf8(head.strip_prefix(b":")?).ok()?;
        let fields: Vec<&str> = head.split(' ').collect();
        let [old_mode, mode, _, id, status] = fields.as_slice() else {
            return None;
        };
        if *mode == TREE {
            subtree(path, hex::decode(id).ok()?);
            continue;
        }
        if *old_mode == TREE && *status == "D" {
            continue;
        }
        let change = match *status {
            "D" => Change::Remove,
            _ => Change::Set {
                mode: u32::from_str_radix(mode, 8).ok()?,
                id: hex::decode(id).ok()?,
            },
        };
        if *status == "A" {
            added.push(path.to_vec());
        }
        changes.insert(path.to_vec(), change);
    }
    Some((changes, added))
}

#[cfg(test)]
mod tests {
    use crate::git::index::*;

    /// `diff-tree -r -t` of a file that became a directory and a directory that became a file:
    /// entries for the files only, ids for the directories the new side has.
    #[test]
    fn tree_records_give_subtree_ids_and_no_entry() {
        let id = |c: char| c.to_string().repeat(40);
        let zero = id('0');
        let records = [
            format!(":000000 100644 {zero} {} A\0d\0", id('1')),
            format!(":040000 000000 {} {zero} D\0d\0", id('2')),
            format!(":100644 000000 {} {zero} D\0d/z\0", id('3')),
            format!(":100644 000000 {} {zero} D\0x\0", id('4')),
            format!(":000000 040000 {zero} {} A\0x\0", id('5')),
            format!(":000000 100644 {zero} {} A\0x/f\0", id('6')),
        ];
        let mut trees = Vec::new();
        let (changes, added) = parse_raw_records(records.concat().as_bytes(), |path, id| {
            trees.push((path.to_vec(), id))
        })
        .unwrap();
        assert_eq!(trees, vec![(b"x".to_vec(), hex::decode(id('5')).unwrap())]);
        let set = |c: char| Change::Set {
            mode: 0o100644,
            id: hex::decode(id(c)).unwrap(),
        };
        let expected: TreeChanges = [
            (b"d".to_vec(), set('1')),
            (b"d/z".to_vec(), Change::Remove),
            (b"x".to_vec(), Change::Remove),
            (b"x/f".to_vec(), set('6')),
        ]
        .into_iter()
        .collect();
        assert_eq!(changes, expected);
        assert_eq!(added, vec![b"d".to_vec(), b"x/f".to_vec()]);
    }
}
