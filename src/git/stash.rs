//! The git a branch promote starts on the user's checkout: shielded from the terminal's
//! interrupts and marked with the promote's token (so that recovery can wait for a git a crash
//! left running), and the identity it commits with.

use std::path::Path;

use crate::base::error::Result;
use crate::git::runner::{Git, GitCmd, GitOutput};

/// The variable every git a branch promote starts carries (`<token>`).
pub(crate) const TOKEN_VAR: &str = "A3S_ISO_PROMOTE_TOKEN";

/// Who commits: git's own identity, or a3s-iso's when git has none (`-c user.name/-c user.email`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Identity {
    /// git knows who commits.
    Own,
    /// git has no identity: a3s-iso's is given.
    Fallback,
}

impl Identity {
    pub(super) fn args(&self) -> &'static [&'static str] {
        match self {
            Identity::Own => &[],
            Identity::Fallback => &[
                "-c",
                "user.name=a3s-iso",
                "-c",
                "user.email=a3s-iso@localhost",
            ],
        }
    }
}

/// How often a step that another git's `index.lock` refused is tried, and how long apart:
/// your own git holds that lock for milliseconds at a time.
pub(crate) const LOCK_TRIES: u32 = 40;
pub(crate) const LOCK_PAUSE: std::time::Duration = std::time::Duration::from_millis(25);

/// Git in a checkout of the user's, shielded and marked with a promote's token.
pub(crate) struct Marked<'g> {
    git: &'g Git,
    dir: &'g Path,
    token: &'g str,
}

impl Git {
    /// Who commits in `dir`: [`Identity::Own`] when `var GIT_COMMITTER_IDENT` succeeds. The
    /// configuration it depends on does not change while a command runs: asked once.
    pub(crate) fn identity(&self, dir: &Path) -> Identity {
        const QUESTION: &str = "var GIT_COMMITTER_IDENT";
        let known = self.memoized(dir, QUESTION, || {
            let out = self.at(dir).args(["var", "GIT_COMMITTER_IDENT"]).output()?;
            Ok(match out.exit_code {
                Some(0) => "own",
                _ => "fallback",
            }
            .to_string())
        });
        match known.as_deref() {
            Ok("own") => Identity::Own,
            _ => Identity::Fallback,
        }
    }

    /// Git in `dir` that a Ctrl-C at the terminal cannot reach, marked with `token`.
    pub(crate) fn marked<'g>(&'g self, dir: &'g Path, token: &'g str) -> Marked<'g> {
        Marked {
            git: self,
            dir,
            token,
        }
    }

    /// The stash list from its reflog (`reflog show --format=%H %gs refs/stash`), newest first.
    pub(crate) fn stash_reflog(&self, dir: &Path) -> Result<GitOutput> {
        self.at(dir)
            .args(["reflog", "show", "--format=%H %gs", "refs/stash", "--"])
            .output()
    }
}

impl Marked<'_> {
    /// The checkout this git runs in.
    pub(crate) fn dir(&self) -> &Path {
        self.dir
    }

    fn cmd(&self) -> GitCmd<'_> {
        self.git.at(self.dir).shielded().env(TOKEN_VAR, self.token)
    }

    /// Stashes the WIP, untracked files included, under `message`: with `refused_ok`, a
    /// failure is the output, not an error.
    pub(crate) fn stash_push(
        &self,
        ident: &Identity,
        message: &str,
        refused_ok: bool,
    ) -> Result<GitOutput> {
        let cmd = (self.cmd().args(ident.args()))
            .args(["stash", "push", "--include-untracked", "-q", "-m"])
            .arg(message);
        match refused_ok {
            true => cmd.output(),
            false => cmd.run_allowing(&[]),
        }
    }

    /// Applies `stash` with its index (`stash apply --index`); the output whatever the status.
    pub(crate) fn stash_apply(&self, stash: &str) -> Result<GitOutput> {
        self.cmd()
            .args(["stash", "apply", "--index", "-q", stash])
            .output()
    }

    /// Drops the stash at `position` of the list; the output whatever the status.
    pub(crate) fn stash_drop(&self, position: usize) -> Result<GitOutput> {
        self.cmd()
            .args(["stash", "drop", "-q", &format!("stash@{{{position}}}")])
            .output()
    }

    /// Resets the index to HEAD (`reset -q`); the output whatever the status.
    pub(crate) fn reset_index(&self) -> Result<GitOutput> {
        self.cmd().args(["reset", "-q"]).output()
    }

    /// Moves the branch, index and files to `commit` (`reset -q --hard`), tried again while
    /// another git of yours holds the index's lock.
    pub(crate) fn reset_hard(&self, commit: &str) -> Result<()> {
        let reset = || self.cmd().args(["reset", "-q", "--hard", commit]);
        for _ in 1..LOCK_TRIES {
            let out = reset().output()?;
            if out.exit_code == Some(0) {
                return Ok(());
            }
            if !out.index_lock_held() {
                // Refused for another reason: the last run below says which.
                break;
            }
            std::thread::sleep(LOCK_PAUSE);
        }
        reset().finish()
    }

    /// Moves the index and files from `from` to `to` as a fast-forward does (`read-tree -m -u`,
    /// two-way): what differs elsewhere (the user's work) stays; refused with nothing changed
    /// when a path it changes is not as `from` has it. The output whatever the status.
    pub(crate) fn read_tree_two_way(&self, from: &str, to: &str) -> Result<GitOutput> {
        self.cmd()
            .args(["read-tree", "-m", "-u", from, to])
            .output()
    }

    /// Refreshes the index's stat data (`update-index -q --refresh`); the output whatever the
    /// status (it fails when a file changed, having refreshed the others).
    pub(crate) fn refresh_index(&self) -> Result<GitOutput> {
        self.cmd()
            .args(["update-index", "-q", "--refresh"])
            .output()
    }

    /// Moves `branch` from `old` to `new` (`update-ref -m`), failing if it moved meanwhile.
    pub(crate) fn move_branch(
        &self,
        branch: &str,
        message: &str,
        new: &str,
        old: &str,
    ) -> Result<()> {
        self.cmd()
            .args(["update-ref", "-m", message, branch, new, old])
            .finish()
    }

    /// Replays `commit` onto HEAD (`cherry-pick`, unsigned); the output whatever the status.
    pub(crate) fn cherry_pick(&self, ident: &Identity, commit: &str) -> Result<GitOutput> {
        self.cmd()
            .args(ident.args())
            .args(["-c", "commit.gpgSign=false", "cherry-pick", "--no-edit"])
            .args(["--allow-empty-message", commit])
            .output()
    }

    /// Skips the pick under way (`cherry-pick --skip`).
    pub(crate) fn cherry_pick_skip(&self) -> Result<()> {
        self.cmd().args(["cherry-pick", "--skip"]).finish()
    }

    /// Aborts the pick under way (`cherry-pick --abort`); the output whatever the status.
    pub(crate) fn cherry_pick_abort(&self) -> Result<GitOutput> {
        self.cmd().args(["cherry-pick", "--abort"]).output()
    }

    /// Forgets the pick under way, files left as they are (`cherry-pick --quit`).
    pub(crate) fn cherry_pick_quit(&self) -> Result<GitOutput> {
        self.cmd().args(["cherry-pick", "--quit"]).output()
    }
}
