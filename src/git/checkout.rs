//! Operations on a checkout of the user's (or a nested repository's): what its status is, what
//! a patch touches, commits written and moved, one config value. Each names git's arguments
//! here so that the callers never do.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::base::error::{Error, Result};
use crate::git::runner::{Git, GitOutput, split_nul};
use crate::git::stash::Identity;

/// Which untracked files a status of some paths lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Untracked {
    /// Untracked files, not ignored ones.
    All,
    /// Untracked files and the ignored ones an ignore rule matches itself.
    AndIgnored,
}

/// A commit's author or committer, set through git's variables.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Person<'a> {
    /// `AUTHOR` or `COMMITTER`.
    pub role: &'a str,
    pub name: &'a str,
    pub email: &'a str,
    /// Seconds and zone, as a commit object holds them (`1700000000 +0100`).
    pub date: &'a str,
}

impl Git {
    /// `status --porcelain --untracked-files=no`: empty when no tracked file changed.
    pub(crate) fn status_tracked(&self, dir: &Path) -> Result<Vec<u8>> {
        self.at(dir)
            .args(["status", "--porcelain", "--untracked-files=no"])
            .run()
    }

    /// The status (`--porcelain=v1 -z`, no renames) of the literal `paths`.
    pub(crate) fn status_of(
        &self,
        dir: &Path,
        untracked: Untracked,
        paths: impl IntoIterator<Item = impl AsRef<OsStr>>,
    ) -> Result<Vec<u8>> {
        self.at(dir)
            .args(["--literal-pathspecs", "status", "--porcelain=v1", "-z"])
            .arg("--untracked-files=all")
            .args((untracked == Untracked::AndIgnored).then_some("--ignored=matching"))
            .args(["--no-renames", "--"])
            .args(paths)
            .run()
    }

    /// Among the literal `paths`, the index's entries with their tags (`ls-files -t -z`).
    pub(crate) fn tagged_entries_of(
        &self,
        dir: &Path,
        paths: impl IntoIterator<Item = impl AsRef<OsStr>>,
    ) -> Result<Vec<u8>> {
        self.at(dir)
            .args(["--literal-pathspecs", "ls-files", "-t", "-z", "--"])
            .args(paths)
            .run()
    }

    /// Which of the literal `paths` the index tracks (`ls-files -z`).
    pub(crate) fn tracked_among(
        &self,
        dir: &Path,
        paths: impl IntoIterator<Item = impl AsRef<OsStr>>,
    ) -> Result<Vec<u8>> {
        self.at(dir)
            .args(["--literal-pathspecs", "ls-files", "-z", "--"])
            .args(paths)
            .run()
    }

    /// The unmerged entries of the checkout's index (`ls-files -u`).
    pub(crate) fn unmerged(&self, dir: &Path) -> Result<Vec<u8>> {
        self.at(dir).args(["ls-files", "-u"]).run()
    }

    /// Whether the index holds what HEAD does (`diff --cached --quiet`).
    pub(crate) fn nothing_staged(&self, dir: &Path) -> Result<bool> {
        self.at(dir)
            .args(["diff", "--cached", "--quiet"])
            .succeeds()
    }

    /// The top level of the repository `dir` is in (`rev-parse --show-toplevel`).
    pub(crate) fn toplevel(&self, dir: &Path) -> Result<String> {
        self.at(dir)
            .args(["rev-parse", "--show-toplevel"])
            .run_text()
    }

    /// The checkout's git dir and common dir, absolute, one a line.
    pub(crate) fn git_dirs(&self, dir: &Path) -> Result<Vec<u8>> {
        self.at(dir)
            .args(["rev-parse", "--absolute-git-dir"])
            .args(["--path-format=absolute", "--git-common-dir"])
            .run()
    }

    /// Detaches the checkout at `commit` (`checkout -q --detach`).
    pub(crate) fn check_out_detached(&self, dir: &Path, commit: &str) -> Result<()> {
        self.at(dir)
            .args(["checkout", "-q", "--detach", commit])
            .finish()
    }

    /// Sets the entries `info` describes in the checkout's index (`update-index -z --index-info`).
    pub(crate) fn index_info(&self, dir: &Path, info: Vec<u8>) -> Result<()> {
        self.at(dir)
            .args(["update-index", "-z", "--index-info"])
            .stdin(info)
            .finish()
    }

    /// The paths the patch at `patch` touches, as `apply --numstat -z` lists them.
    pub(crate) fn patch_numstat(&self, dir: &Path, patch: &Path) -> Result<Vec<u8>> {
        self.at(dir)
            .args(["apply", "--numstat", "-z"])
            .arg(patch)
            .run()
    }

    /// A commit of `tree` on `parent` with `message`, by `ident` or the `people` given.
    pub(crate) fn commit_tree(
        &self,
        dir: &Path,
        ident: &Identity,
        people: &[Person<'_>],
        (tree, parent): (&str, &str),
        message: String,
    ) -> Result<String> {
        let ask = || {
            let mut cmd = self.at(dir).args(ident.args());
            for person in people {
                let role = person.role;
                cmd = cmd
                    .env(format!("GIT_{role}_NAME"), person.name)
                    .env(format!("GIT_{role}_EMAIL"), person.email)
                    .env(format!("GIT_{role}_DATE"), format!("@{}", person.date));
            }
            cmd.args(["commit-tree", tree, "-p", parent])
                .stdin(message.clone().into_bytes())
                .run_text()
        };
        if !(crate::base::ids::is_object_hex(tree) && crate::base::ids::is_object_hex(parent)) {
            return ask();
        }
        // The same commit, asked again in this command (a landing plans its promote while its
        // test runs): the one made first, a moment older, is as good.
        let people: Vec<String> = (people.iter())
            .map(|p| format!("{} {} {} {}", p.role, p.name, p.email, p.date))
            .collect();
        let asked = format!("{:?}\0{}\0{message}", ident.args(), people.join("\0"));
        let digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(asked.as_bytes()));
        let question = format!("commit-tree {tree} {parent} {digest}");
        self.memoized(dir, &question, ask)
    }

    /// The paths where the checkout's index differs from `tree`, NUL-separated.
    pub(crate) fn index_differs_from(&self, dir: &Path, tree: &str) -> Result<Vec<u8>> {
        self.at(dir)
            .args([
                "diff-index",
                "--cached",
                "-z",
                "--name-only",
                "--no-renames",
            ])
            .args(["--ignore-submodules=none", tree, "--"])
            .run()
    }

    /// Moves HEAD from `old` to `new` (`update-ref -m`), failing if it moved meanwhile.
    pub(crate) fn move_head(&self, dir: &Path, message: &str, new: &str, old: &str) -> Result<()> {
        self.at(dir)
            .args(["update-ref", "-m", message, "HEAD", new, old])
            .finish()
    }

    /// The first-parent commits of `range`, oldest first, NUL-separated as
    /// `<commit> <tree> <parents>\n<subject>`.
    pub(crate) fn first_parent_log(&self, dir: &Path, range: &str) -> Result<Vec<u8>> {
        self.at(dir)
            .args(["log", "-z", "--reverse", "--first-parent"])
            .args(["--format=%H %T %P%n%s", range, "--"])
            .run()
    }

    /// The paths that differ from `a` to `b` with a kind `filter` names, NUL-separated.
    pub(crate) fn diff_trees_filtered(
        &self,
        dir: &Path,
        (a, b): (&str, &str),
        filter: &str,
    ) -> Result<Vec<u8>> {
        self.at(dir)
            .without_index()
            .args(["diff-tree", "-r", "-z", "--name-only", "--no-renames"])
            .args([&format!("--diff-filter={filter}"), a, b])
            .run()
    }

    /// The paths `b` adds to `a`, those it deletes and those it changes otherwise
    /// (`diff-tree --name-status`, renames off).
    pub(crate) fn paths_by_kind(&self, dir: &Path, (a, b): (&str, &str)) -> Result<PathsByKind> {
        let ask = || {
            self.at(dir)
                .without_index()
                .args([
                    "diff-tree",
                    "-r",
                    "-z",
                    "--name-status",
                    "--no-renames",
                    a,
                    b,
                ])
                .run()
        };
        let out = self.object_diff(dir, "diff-tree --name-status", (a, b), ask)?;
        let mut kinds = PathsByKind::default();
        let mut fields = split_nul(&out);
        while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
            let list = match status {
                b"A" => &mut kinds.added,
                b"D" => &mut kinds.deleted,
                b"M" | b"T" => &mut kinds.changed,
                _ => return Err(Error::internal("diff-tree listed a change it cannot")),
            };
            list.push(path.to_vec());
        }
        Ok(kinds)
    }

    /// Where the checkout at `top` keeps `name` in its git dir (`rev-parse --git-path`).
    pub(crate) fn git_path(&self, top: &Path, name: &str) -> Result<std::path::PathBuf> {
        let out = self
            .at(top)
            .args(["rev-parse", "--path-format=absolute", "--git-path", name])
            .run()?;
        let line = out.strip_suffix(b"\n").unwrap_or(&out);
        Ok(std::path::PathBuf::from(std::ffi::OsStr::from_bytes(line)))
    }

    /// Where the checkout at `top` keeps each of `names` in its git dir, in one git.
    pub(crate) fn git_paths(
        &self,
        top: &Path,
        names: &[String],
    ) -> Result<Vec<std::path::PathBuf>> {
        let mut cmd = self.at(top).args(["rev-parse", "--path-format=absolute"]);
        for name in names {
            cmd = cmd.args(["--git-path", name.as_str()]);
        }
        let out = cmd.run()?;
        Ok(out
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| std::path::PathBuf::from(std::ffi::OsStr::from_bytes(line)))
            .collect())
    }

    /// HEAD's symbolic ref, the output whatever the status (`symbolic-ref -q HEAD`).
    pub(crate) fn symbolic_head(&self, dir: &Path) -> Result<GitOutput> {
        self.at(dir).args(["symbolic-ref", "-q", "HEAD"]).output()
    }

    /// The settings whose names match `pattern` (`config --get-regexp`); the output whatever
    /// the status (1: none).
    pub(crate) fn config_matching(&self, dir: &Path, pattern: &str) -> Result<GitOutput> {
        self.at(dir)
            .args(["config", "--get-regexp", pattern])
            .output()
    }

    /// The value of `key` in the repository's configuration; the output whatever the status.
    pub(crate) fn config_get(&self, dir: &Path, key: &str) -> Result<GitOutput> {
        self.at(dir).args(["config", "--get", key]).output()
    }

    /// The `submodule.*.path` entries of `tree`'s `.gitmodules`, read as data, whatever the status.
    pub(crate) fn gitmodules_paths(&self, dir: &Path, tree: &str) -> Result<GitOutput> {
        self.at(dir)
            .args(["config", "-z", "--blob"])
            .arg(format!("{tree}:.gitmodules"))
            .args(["--get-regexp", r"^submodule\..*\.path$"])
            .output()
    }

    /// Unlocks the worktree at `path` (`worktree unlock`), the output whatever the status.
    pub(crate) fn worktree_unlock(&self, dir: &Path, path: &Path) -> Result<GitOutput> {
        self.at(dir).args(["worktree", "unlock"]).arg(path).output()
    }

    /// Locks the worktree at `path` with `reason` (`worktree lock`).
    pub(crate) fn worktree_lock(&self, dir: &Path, path: &Path, reason: &str) -> Result<()> {
        self.at(dir)
            .args(["worktree", "lock", "--reason", reason])
            .arg(path)
            .finish()
    }

    /// Whether `commit` is a commit in the object store `objects` (or `common_dir`'s).
    pub(crate) fn has_commit_in(&self, common_dir: &Path, objects: &Path, commit: &str) -> bool {
        self.at(common_dir)
            .env("GIT_OBJECT_DIRECTORY", objects)
            .env(
                "GIT_ALTERNATE_OBJECT_DIRECTORIES",
                common_dir.join("objects"),
            )
            .args(["cat-file", "-e"])
            .arg(format!("{commit}^{{commit}}"))
            .succeeds()
            .unwrap_or(false)
    }

    /// Every entry of the tree `tree` names, recursively (`ls-tree -r -z --full-tree`).
    pub(crate) fn ls_tree_full(&self, dir: &Path, tree: &str) -> Result<Vec<u8>> {
        self.at(dir)
            .args(["ls-tree", "-r", "-z", "--full-tree", tree])
            .run()
    }

    /// The paths `revision` tracks, NUL-separated (`ls-tree -r -z --name-only --full-tree`).
    pub(crate) fn tracked_names(&self, dir: &Path, revision: &str) -> Result<Vec<u8>> {
        self.at(dir)
            .args(["ls-tree", "-r", "-z"])
            .args(["--name-only", "--full-tree", revision])
            .run()
    }

    /// The entries of the literal `paths` in `tree`; the output whatever the status.
    pub(crate) fn tree_entries_of(
        &self,
        dir: &Path,
        tree: &str,
        paths: impl IntoIterator<Item = impl AsRef<OsStr>>,
    ) -> Result<GitOutput> {
        self.at(dir)
            .args(["--literal-pathspecs", "ls-tree", "-r", "-z"])
            .args(["--full-tree", tree, "--"])
            .args(paths)
            .output()
    }

    /// The untracked files the `exclude` patterns match, NUL-separated.
    pub(crate) fn others_matching(
        &self,
        dir: &Path,
        exclude: impl IntoIterator<Item = impl std::fmt::Display>,
    ) -> Result<Vec<u8>> {
        let mut list = self
            .at(dir)
            .args(["ls-files", "-z", "--others", "--ignored"]);
        for pattern in exclude {
            list = list.arg(format!("--exclude={pattern}"));
        }
        list.run()
    }

    /// Which of the NUL-separated `paths` the checkout's ignore rules ignore, NUL-separated.
    pub(crate) fn ignored_among(&self, dir: &Path, paths: Vec<u8>) -> Result<Vec<u8>> {
        // Exit 1: none of them is ignored.
        let out = self
            .at(dir)
            .args(["check-ignore", "--stdin", "-z"])
            .stdin(paths)
            .run_allowing(&[1])?;
        Ok(out.stdout)
    }

    /// Whether the checkout's ignore rules ignore `path` (`check-ignore -q`).
    pub(crate) fn is_ignored(&self, dir: &Path, path: &str) -> Result<bool> {
        self.at(dir)
            .args(["check-ignore", "-q", "--", path])
            .succeeds()
    }

    /// Locks the worktree at `path` with `reason`, shielded from the terminal's interrupts.
    pub(crate) fn worktree_lock_shielded(
        &self,
        dir: &Path,
        path: &Path,
        reason: &str,
    ) -> Result<()> {
        self.at(dir)
            .shielded()
            .args(["worktree", "lock", "--reason", reason])
            .arg(path)
            .finish()
    }

    /// The index's entry for the literal `path` (`ls-files -s -z`).
    pub(crate) fn staged_entry(&self, dir: &Path, path: &OsStr) -> Result<Vec<u8>> {
        self.at(dir)
            .args(["--literal-pathspecs", "ls-files", "-s", "-z", "--"])
            .arg(path)
            .run()
    }

    /// A blob as checked out at `path` (`cat-file --filters --path=`), streamed into `file`.
    pub(crate) fn filtered_blob_to(
        &self,
        dir: &Path,
        path: &OsStr,
        oid: &str,
        file: std::fs::File,
    ) -> Result<()> {
        let mut path_arg = std::ffi::OsString::from("--path=");
        path_arg.push(path);
        self.at(dir)
            .args(["cat-file", "--filters"])
            .arg(path_arg)
            .arg(oid)
            .run_to_file(file)
    }

    /// The checkout attributes (`filter`, `text`, `eol`, `ident`, `working-tree-encoding`)
    /// of the NUL-terminated `paths` (`check-attr -z --stdin`): path, attribute, value.
    pub(crate) fn checkout_attrs(&self, dir: &Path, paths: Vec<u8>) -> Result<Vec<u8>> {
        self.at(dir)
            .args(["check-attr", "-z", "--stdin"])
            .args(["filter", "text", "eol", "ident", "working-tree-encoding"])
            .stdin(paths)
            .run()
    }
}

/// The paths one tree adds to another, those it deletes, and those it changes otherwise.
#[derive(Default)]
pub(crate) struct PathsByKind {
    pub(crate) added: Vec<Vec<u8>>,
    pub(crate) deleted: Vec<Vec<u8>>,
    pub(crate) changed: Vec<Vec<u8>>,
}
