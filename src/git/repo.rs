//! The source: which repository a directory belongs to, and whether it can be isolated.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::base::error::{Result, Unavailable};
use crate::base::ids::{CommitId, TreeId};
use crate::git::runner::{Git, GitCmd};

/// The memo's question for a directory's repository: its common dir and checkout.
const DISCOVERED: &str = "repository";

/// A source repository: its checkout and its common git dir.
#[derive(Debug, Clone)]
pub struct Repo {
    /// The checkout's top level (`git rev-parse --show-toplevel`).
    pub toplevel: PathBuf,
    /// Shared by the main checkout and its linked worktrees.
    pub common_dir: PathBuf,
}

impl Repo {
    /// The repository of the checkout `toplevel` whose common dir is `common_dir`. A checkout
    /// without a `.git` of its own is the main worktree of a repository whose `core.worktree`
    /// names it (git finds it only from the git dir, which is then the common dir): `git`
    /// learns to name that git dir for it.
    pub(crate) fn new(git: &Git, toplevel: PathBuf, common_dir: PathBuf) -> Repo {
        if std::fs::symlink_metadata(toplevel.join(".git")).is_err() && toplevel.is_dir() {
            git.name_git_dir(&toplevel, &common_dir);
        }
        Repo {
            toplevel,
            common_dir,
        }
    }

    /// Finds the repository of `dir`. Not a repository, a bare one, or a `.git` directory →
    /// `isolation_unavailable`; nothing is written.
    pub(crate) fn discover(git: &Git, dir: &Path) -> Result<Repo> {
        if !dir.is_dir() {
            let dir = dir.to_path_buf();
            return Err(Unavailable::NotADirectory { dir }.into());
        }
        // Found once per command: the repository a directory is in does not change under it.
        if let Some((common_dir, toplevel)) = git
            .recall(dir, DISCOVERED)
            .as_deref()
            .and_then(|known| known.split_once('\0'))
        {
            return Ok(Repo::new(git, toplevel.into(), common_dir.into()));
        }
        let out = git
            .at(dir)
            .args(["rev-parse", "--is-bare-repository"])
            .args([
                "--path-format=absolute",
                "--git-common-dir",
                "--show-toplevel",
            ])
            .output()?;
        // Paths as bytes: a directory name need not be UTF-8.
        let path = |line: &[u8]| PathBuf::from(std::ffi::OsStr::from_bytes(line));
        let lines: Vec<&[u8]> = out
            .stdout
            .strip_suffix(b"\n")
            .unwrap_or(&out.stdout)
            .split(|b| *b == b'\n')
            .collect();
        match (out.exit_code, lines.as_slice()) {
            (Some(0), [b"false", common_dir, toplevel]) => {
                if let (Ok(common), Ok(top)) = (
                    std::str::from_utf8(common_dir),
                    std::str::from_utf8(toplevel),
                ) {
                    git.remember(dir, DISCOVERED, &format!("{common}\0{top}"));
                }
                Ok(Repo::new(git, path(toplevel), path(common_dir)))
            }
            (_, [b"true", ..]) => Err(Unavailable::Bare { dir: dir.into() }.into()),
            (_, [b"false", ..]) => Err(Unavailable::InsideGitDir { dir: dir.into() }.into()),
            _ => Err(Unavailable::NotARepository { dir: dir.into() }.into()),
        }
    }

    /// The commit and tree at HEAD; `isolation_unavailable` for an unborn HEAD.
    pub(crate) fn head(&self, git: &Git) -> Result<(CommitId, TreeId)> {
        let Some(commit) = self.head_lookup(git).found_text()? else {
            let toplevel = self.toplevel.clone();
            return Err(Unavailable::UnbornHead { toplevel }.into());
        };
        let tree = git
            .at(&self.toplevel)
            .args(["rev-parse", &format!("{commit}^{{tree}}")])
            .run_text()?;
        Ok((CommitId::new(commit)?, TreeId::new(tree)?))
    }

    /// The commit at HEAD and its tree, read by one git at one moment; `None` for an unborn
    /// HEAD or a missing checkout.
    pub(crate) fn head_commit_and_tree(&self, git: &Git) -> Option<(CommitId, TreeId)> {
        let out = git
            .at(&self.toplevel)
            .args(["rev-list", "--max-count=1", "--format=%H %T"])
            .args(["--end-of-options", "HEAD", "--"])
            .output()
            .ok()
            .filter(|out| out.exit_code == Some(0))?;
        let text = String::from_utf8_lossy(&out.stdout);
        // After the `commit <id>` line that git older than 2.33 cannot leave out.
        let line = text.lines().rfind(|line| !line.is_empty())?;
        let (commit, tree) = line.split_once(' ')?;
        let (commit, tree) = (CommitId::new(commit).ok()?, TreeId::new(tree).ok()?);
        git.remember(&self.toplevel, &format!("{commit}^{{commit}}"), &commit);
        git.remember(&self.toplevel, &format!("{commit}^{{tree}}"), &tree);
        Some((commit, tree))
    }

    /// The commit at HEAD, or `None` for an unborn HEAD or a missing checkout.
    pub(crate) fn head_commit(&self, git: &Git) -> Option<CommitId> {
        let commit = CommitId::new(self.head_lookup(git).found_text().ok()??).ok()?;
        // A commit peels to itself: a later `<id>^{commit}` of it needs no git.
        git.remember(&self.toplevel, &format!("{commit}^{{commit}}"), &commit);
        Some(commit)
    }

    fn head_lookup<'g>(&self, git: &'g Git) -> GitCmd<'g> {
        git.at(&self.toplevel)
            .args(["rev-parse", "-q", "--verify", "HEAD^{commit}"])
    }

    /// Local changes (modified tracked files, untracked non-ignored files): the first `limit`
    /// paths and how many more there are.
    pub(crate) fn local_changes(&self, git: &Git, limit: usize) -> Result<(Vec<String>, usize)> {
        // The tracked changes and the walk for untracked files are independent reads of the
        // index and the tree: side by side they cost the slower of the two, not the sum (on a
        // large checkout this is most of a warm bind).
        let (tracked, untracked) = std::thread::scope(|scope| {
            let untracked = scope.spawn(|| {
                git.at(&self.toplevel)
                    .args(["ls-files", "-z", "--others", "--exclude-standard"])
                    .args(["--directory", "--no-empty-directory"])
                    .run()
            });
            let tracked = git
                .at(&self.toplevel)
                .args(["status", "--porcelain=v1", "-z", "--untracked-files=no"])
                .arg("--ignore-submodules=none")
                .run();
            (tracked, untracked.join())
        });
        let untracked = untracked
            .map_err(|_| crate::base::error::Error::internal("the untracked walk panicked"))??;
        let mut paths = Vec::new();
        let mut total = 0;
        let mut note = |path: &[u8]| {
            total += 1;
            if paths.len() < limit {
                paths.push(String::from_utf8_lossy(path).into_owned());
            }
        };
        let tracked = tracked?;
        let mut records = crate::git::runner::split_nul(&tracked);
        while let Some(record) = records.next() {
            if record.len() < 4 {
                continue;
            }
            let status = &record[..2];
            if status.contains(&b'R') || status.contains(&b'C') {
                // Renames and copies carry their origin as the next record.
                records.next();
            }
            note(&record[3..]);
        }
        crate::git::runner::split_nul(&untracked).for_each(&mut note);
        let more = total - paths.len();
        Ok((paths, more))
    }

    /// The lock that serialises every change to the source, the worktree registry and the state
    /// of this repository (shared by its linked worktrees).
    pub(crate) fn lock_path(&self) -> PathBuf {
        self.common_dir.join("a3s-iso.lock")
    }

    /// Where git keeps the admin directories of linked worktrees.
    pub(crate) fn worktrees_dir(&self) -> PathBuf {
        self.common_dir.join("worktrees")
    }
}
