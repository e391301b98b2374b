//! Three-way merges of trees with `git merge-tree --write-tree`, and commits made from trees,
//! in an [`ObjectView`]: nothing of the repository's configuration or attributes (no merge
//! driver, no hook) and no working tree takes part; the results are objects in the store.

use crate::base::error::{Error, Result};
use crate::git::hermetic::ObjectView;
use crate::git::runner::{Git, failure_of, fields_and_path, parse_version};

/// The oldest git whose `merge-tree` writes a tree and takes a merge base (`--merge-base`).
pub(crate) const MERGE_TREE_VERSION: (u32, u32) = (2, 40);

/// One entry of a conflicted path, as `merge-tree` lists it: `<mode> <oid> <stage>\t<path>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConflictEntry {
    pub(crate) mode: String,
    pub(crate) oid: String,
    pub(crate) stage: u8,
    pub(crate) path: Vec<u8>,
}

/// What a three-way merge made: its tree (with conflict markers where it conflicted) and the
/// stages of the conflicted paths (none: clean).
#[derive(Debug, Clone)]
pub(crate) struct Merged {
    pub(crate) tree: String,
    pub(crate) conflicts: Vec<ConflictEntry>,
}

impl Merged {
    /// The conflicted paths, each once, in git's order.
    pub(crate) fn paths(&self) -> Vec<Vec<u8>> {
        let mut paths: Vec<Vec<u8>> = self.conflicts.iter().map(|e| e.path.clone()).collect();
        paths.dedup();
        paths
    }
}

/// What the conflict markers of a merge call its sides (`<<<<<<< ours`, `||||||| base`,
/// `>>>>>>> theirs`) instead of their commit ids: git writes the revisions it is given, so each
/// side is given by a branch of that name in the view. A name git could take for something
/// else, or one clashing with another side's, leaves that side's commit id.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SideNames<'a> {
    pub(crate) base: &'a str,
    pub(crate) ours: &'a str,
    pub(crate) theirs: &'a str,
}

/// Whether `name` is one git takes, in the view, for the branch `refs/heads/<name>` and
/// nothing else: plain components (letters, digits, `-`, `_`, `.`), none hidden, none a lock
/// file, the first not a name of the git dir's own, and not hex digits only (an abbreviated id).
pub(crate) fn is_side_name(name: &str) -> bool {
    let components: Vec<&str> = name.split('/').collect();
    let plain = |c: &&str| {
        !c.is_empty()
            && !c.starts_with('.')
            && !c.starts_with('-')
            && !c.ends_with(".lock")
            && !c.contains("..")
            && c.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    };
    let own = [
        "HEAD", "config", "refs", "objects", "index", "info", "hooks", "logs",
    ];
    components.iter().all(plain)
        && !own.contains(&components[0])
        && !components[0]
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b == b'_')
        && !name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Whether two branch names can both exist (neither is the other, nor a directory of it).
fn side_names_clash(a: &str, b: &str) -> bool {
    a == b || b.starts_with(&format!("{a}/")) || a.starts_with(&format!("{b}/"))
}

/// Who made a commit and what it says, read from the commit object.
#[derive(Debug, Clone)]
pub(crate) struct CommitInfo {
    pub(crate) tree: String,
    pub(crate) parents: Vec<String>,
    /// `Name <email> <seconds> <zone>`.
    pub(crate) author: String,
    pub(crate) committer: String,
    pub(crate) message: Vec<u8>,
}

impl CommitInfo {
    /// The first line of the message.
    pub(crate) fn subject(&self) -> String {
        let text = String::from_utf8_lossy(&self.message);
        text.lines().next().unwrap_or("").to_string()
    }
}

/// An identity line split into name, email and date (`<seconds> <zone>`).
fn split_ident(ident: &str) -> Option<(&str, &str, &str)> {
    let open = ident.find('<')?;
    let close = ident[open..].find('>')? + open;
    Some((
        ident[..open].trim_end(),
        &ident[open + 1..close],
        ident[close + 1..].trim(),
    ))
}

impl Git {
    /// Whether this git's `merge-tree` can do what a rebase needs; `git_too_old` if not.
    pub(crate) fn require_merge_tree(&self) -> Result<()> {
        let (major, minor) = MERGE_TREE_VERSION;
        if parse_version(self.version()).is_some_and(|found| found >= MERGE_TREE_VERSION) {
            return Ok(());
        }
        Err(Error::GitTooOld {
            found: self.version().to_string(),
            required: format!("{major}.{minor} (for merge-tree --write-tree --merge-base)"),
        })
    }
}

impl ObjectView {
    /// Merges `theirs` into `ours` with `base` as their merge base (all commits).
    pub(crate) fn merge(&self, base: &str, ours: &str, theirs: &str) -> Result<Merged> {
        self.merge_tree(Some(base), ours, theirs)
    }

    /// `merge-tree --write-tree` of two commits, at `base` or at their own merge base.
    fn merge_tree(&self, base: Option<&str>, ours: &str, theirs: &str) -> Result<Merged> {
        let mut args = vec!["merge-tree".to_string(), "--write-tree".into(), "-z".into()];
        args.extend(base.map(|base| format!("--merge-base={base}")));
        args.extend([ours.into(), theirs.into()]);
        let out = self.cmd().args(&args).output()?;
        parse_merged(args, out)
    }

    /// [`ObjectView::merge`], its conflict markers naming the sides as `names` says.
    pub(crate) fn merge_named(
        &self,
        (base, ours, theirs): (&str, &str, &str),
        names: SideNames<'_>,
    ) -> Result<Merged> {
        let mut named: Vec<&str> = Vec::new();
        let mut args: Vec<String> = Vec::new();
        for (name, oid) in [
            (names.ours, ours),
            (names.theirs, theirs),
            (names.base, base),
        ] {
            let usable = is_side_name(name) && !named.iter().any(|n| side_names_clash(n, name));
            // A ref the view cannot hold leaves the commit id: the merge is the same.
            if usable && self.name_commit(name, oid).is_ok() {
                named.push(name);
                args.push(name.to_string());
            } else {
                args.push(oid.to_string());
            }
        }
        self.merge(&args[2], &args[0], &args[1])
    }

    /// Merges each pair of commits at their own merge base, as `git merge` would, in one
    /// `merge-tree --stdin` when this git has it; only objects are written.
    pub(crate) fn merge_pairs(&self, pairs: &[(String, String)]) -> Result<Vec<Merged>> {
        self.batched(
            pairs,
            |(a, b)| format!("{a} {b}"),
            |(ours, theirs)| self.merge_tree(None, ours, theirs),
        )
    }

    /// Merges each `(base, ours, theirs)` with that merge base, in one `merge-tree --stdin`
    /// when this git takes a merge base there, else one process each.
    pub(crate) fn merge_based(&self, merges: &[(String, String, String)]) -> Result<Vec<Merged>> {
        self.batched(
            merges,
            |(base, ours, theirs)| format!("{base} -- {ours} {theirs}"),
            |(base, ours, theirs)| self.merge(base, ours, theirs),
        )
    }

    /// Each of `merges`, as `line` puts it to `merge-tree --stdin`, in one process when there
    /// are several and this git takes those lines, else one process each (`one`).
    fn batched<T>(
        &self,
        merges: &[T],
        line: impl Fn(&T) -> String,
        one: impl Fn(&T) -> Result<Merged>,
    ) -> Result<Vec<Merged>> {
        let lines: Vec<String> = merges.iter().map(line).collect();
        if merges.len() > 1
            && let Some(merged) = self.merge_batch(&lines)?
        {
            return Ok(merged);
        }
        merges.iter().map(one).collect()
    }

    /// `merge-tree --stdin`: per line, `<status>\0<tree>\0`, a conflict entry per record,
    /// then an empty record. `None` when this git cannot batch these lines (`--stdin` came in
    /// 2.42, a merge base on its lines later).
    fn merge_batch(&self, lines: &[String]) -> Result<Option<Vec<Merged>>> {
        let input: String = lines.iter().map(|line| format!("{line}\n")).collect();
        let args = ["merge-tree", "--stdin", "--write-tree", "--no-messages"];
        let out = self.cmd().args(args).stdin(input.into_bytes()).output()?;
        if out.exit_code != Some(0) {
            return Ok(None);
        }
        let mut records = out.stdout.split(|b| *b == 0);
        let mut merged = Vec::with_capacity(lines.len());
        let bad = || Error::internal("merge-tree --stdin printed what a3s-iso cannot read");
        for _ in lines {
            let status = records.next().ok_or_else(bad)?;
            let tree = records.next().ok_or_else(bad)?;
            let listed = records.by_ref().take_while(|r| !r.is_empty());
            let conflicts = listed.map(parse_entry).collect::<Result<_>>()?;
            if tree.is_empty() || !matches!(status, b"0" | b"1") {
                return Err(bad());
            }
            merged.push(Merged {
                tree: String::from_utf8_lossy(tree).into_owned(),
                conflicts,
            });
        }
        Ok(Some(merged))
    }

    /// Reads a commit: its tree, parents, author, committer and message.
    pub(crate) fn commit_info(&self, commit: &str) -> Result<CommitInfo> {
        let raw = self.cmd().args(["cat-file", "commit", commit]).run()?;
        let split = raw
            .windows(2)
            .position(|w| w == b"\n\n")
            .unwrap_or(raw.len());
        let header = String::from_utf8_lossy(&raw[..split]).into_owned();
        let message = raw.get(split + 2..).unwrap_or_default().to_vec();
        let mut info = CommitInfo {
            tree: String::new(),
            parents: Vec::new(),
            author: String::new(),
            committer: String::new(),
            message,
        };
        for line in header.lines() {
            match line.split_once(' ') {
                Some(("tree", v)) => info.tree = v.to_string(),
                Some(("parent", v)) => info.parents.push(v.to_string()),
                Some(("author", v)) => info.author = v.to_string(),
                Some(("committer", v)) => info.committer = v.to_string(),
                _ => {}
            }
        }
        Ok(info)
    }

    /// A commit of `tree` on `parent`: `like`'s author (date included), committer and message,
    /// or, without one, a3s-iso's own identity and `message`. Never signed.
    pub(crate) fn commit_tree(
        &self,
        tree: &str,
        parent: &str,
        like: Option<&CommitInfo>,
        message: &[u8],
    ) -> Result<String> {
        const OWN: (&str, &str) = ("a3s-iso", "a3s-iso@localhost");
        let mut cmd = self
            .cmd()
            .args(["commit-tree", "--no-gpg-sign", tree, "-p", parent]);
        let (author, committer) = match like {
            Some(info) => (split_ident(&info.author), split_ident(&info.committer)),
            None => (None, None),
        };
        let (an, ae) = author.map_or(OWN, |(n, e, _)| (n, e));
        let (cn, ce) = committer.map_or(OWN, |(n, e, _)| (n, e));
        cmd = cmd
            .env("GIT_AUTHOR_NAME", an)
            .env("GIT_AUTHOR_EMAIL", ae)
            .env("GIT_COMMITTER_NAME", cn)
            .env("GIT_COMMITTER_EMAIL", ce);
        if let Some((_, _, date)) = author {
            cmd = cmd.env("GIT_AUTHOR_DATE", format!("@{date}"));
        }
        let text = like.map_or(message, |info| info.message.as_slice());
        Ok(String::from_utf8_lossy(&cmd.stdin(text.to_vec()).run()?)
            .trim()
            .to_string())
    }

    /// The commits from `from` (excluded) to `to` along first parents, oldest first;
    /// `None` when `from` is not an ancestor of `to`.
    pub(crate) fn first_parent_chain(&self, from: &str, to: &str) -> Result<Option<Vec<String>>> {
        if from == to {
            return Ok(Some(Vec::new()));
        }
        let ancestor = self
            .cmd()
            .args(["merge-base", "--is-ancestor", from, to])
            .succeeds()?;
        if !ancestor {
            return Ok(None);
        }
        let out = self
            .cmd()
            .args(["rev-list", "--reverse", "--first-parent", "-z"])
            .arg(format!("{from}..{to}"))
            .run()?;
        let listed = String::from_utf8_lossy(&out).into_owned();
        Ok(Some(
            listed
                .split(['\0', '\n'])
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        ))
    }
}

/// `<tree>\0`, then `<mode> <oid> <stage>\t<path>\0` for each conflicted entry (exit 1), then an
/// empty record and the informational messages.
fn parse_merged(args: Vec<String>, out: crate::git::runner::GitOutput) -> Result<Merged> {
    if !matches!(out.exit_code, Some(0 | 1)) {
        return Err(failure_of(args, out.exit_code, out.stderr));
    }
    let mut records = out.stdout.split(|b| *b == 0);
    let tree = records
        .next()
        .map(|r| String::from_utf8_lossy(r).into_owned())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| Error::internal("merge-tree printed no tree"))?;
    let listed = records.take_while(|r| out.exit_code == Some(1) && !r.is_empty());
    let conflicts = listed.map(parse_entry).collect::<Result<_>>()?;
    Ok(Merged { tree, conflicts })
}

fn parse_entry(record: &[u8]) -> Result<ConflictEntry> {
    let bad = || Error::internal("merge-tree printed a conflict entry a3s-iso cannot read");
    let ([mode, oid, stage], path) = fields_and_path(record).ok_or_else(bad)?;
    Ok(ConflictEntry {
        mode: mode.to_string(),
        oid: oid.to_string(),
        stage: stage.parse().map_err(|_| bad())?,
        path: path.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only names git takes for the view's branch and nothing else become marker labels: a
    /// name that could leave `refs/heads`, name a git dir entry, a pseudo-ref or an
    /// abbreviated id is refused (its side keeps its commit id).
    #[test]
    fn side_names_are_plain_branch_names_only() {
        for good in [
            "main",
            "feature/x",
            "session/C/uncommitted",
            "session/a.b/1a2b3c4",
            "base",
        ] {
            assert!(is_side_name(good), "{good}");
        }
        for bad in [
            "",
            "HEAD",
            "FETCH_HEAD",
            "config",
            "refs/x",
            "objects",
            "../x",
            "a/../b",
            "a//b",
            ".hidden",
            "a/.b",
            "-opt",
            "x.lock",
            "a b",
            "a:b",
            "a~1",
            "a^",
            "deadbeef",
            "1234567",
            "a\nb",
            "ä",
        ] {
            assert!(!is_side_name(bad), "{bad:?}");
        }
        assert!(side_names_clash("session", "session/C"));
        assert!(side_names_clash("main", "main"));
        assert!(!side_names_clash("main", "mainline"));
    }
}
