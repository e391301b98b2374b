//! Typed operations for change sets that travel through git remotes: the transport (`ls-remote`,
//! `push`, `fetch`) and the object plumbing that builds and reads a change set's commit. The
//! transport is git's own (its remotes, credential helpers, ssh); a3s-iso adds nothing to it.

use std::fs::File;
use std::path::Path;

use crate::base::error::{Error, IoContext, Result};
use crate::git::runner::{Git, GitCmd, fields_and_path, split_nul};

/// One entry of a tree's top level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TopEntry {
    /// `100644`, `040000`, ….
    pub(crate) mode: String,
    /// `blob`, `tree` or `commit`.
    pub(crate) kind: String,
    pub(crate) oid: String,
    pub(crate) name: Vec<u8>,
}

/// What `cat-file --batch-check` says of one object: its type and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ObjectInfo {
    /// `blob`, `tree`, `commit` or `tag`.
    pub(crate) kind: String,
    pub(crate) size: u64,
}

/// What a server answered to a push with a lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum LeasedPush {
    /// The branch moved to the commit.
    Pushed,
    /// The branch was at the commit already: another push of the very same commit (the same
    /// tree, parent, message, identity and time) landed it.
    AlreadyThere,
    /// The branch was not where the lease expected (another push won the race): nothing
    /// changed there.
    Moved,
    /// The server refused it for another reason (a protected branch, a hook): its words.
    Refused {
        /// The server's summary and every `remote:` line it sent.
        message: String,
    },
}

/// What a refused push says: the porcelain summary and the server's own lines (`remote: …`,
/// a hook's output).
fn refusal_text(summary: &str, stderr: &str) -> String {
    let remote: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("remote: "))
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect();
    match remote.is_empty() {
        true => summary.trim().to_string(),
        false => format!("{} ({})", remote.join("\n"), summary.trim()),
    }
}

/// Options every transport call carries: no hooks a3s-iso did not ask for, no submodule
/// recursion, no tags, no maintenance started behind the caller's back.
fn transport<'g>(git: &'g Git, dir: &Path) -> GitCmd<'g> {
    git.at(dir).args(["-c", "fetch.fsckObjects=true"])
}

impl Git {
    /// The names of the remotes configured in the repository at `dir` (`git remote`).
    pub(crate) fn remote_names(&self, dir: &Path) -> Result<Vec<String>> {
        let text = self.at(dir).arg("remote").run_text()?;
        Ok(text.lines().map(str::to_string).collect())
    }

    /// The remote of the current branch's upstream, if there is a current branch with one.
    pub(crate) fn upstream_remote(&self, dir: &Path) -> Result<Option<String>> {
        let Some(branch) = self
            .at(dir)
            .args(["symbolic-ref", "-q", "--short", "HEAD"])
            .found_text()?
        else {
            return Ok(None);
        };
        self.at(dir)
            .args(["config", "--get", &format!("branch.{branch}.remote")])
            .found_text()
    }

    /// `(object id, ref name)` of the refs on `remote` that match `patterns` (`ls-remote`).
    pub(crate) fn ls_remote(
        &self,
        dir: &Path,
        remote: &str,
        patterns: &[String],
    ) -> Result<Vec<(String, String)>> {
        let text = transport(self, dir)
            .args(["ls-remote", "--refs", "--end-of-options", remote])
            .args(patterns)
            .run_text()?;
        Ok(text
            .lines()
            .filter_map(|line| {
                let (oid, name) = line.split_once('\t')?;
                Some((oid.to_string(), name.to_string()))
            })
            .collect())
    }

    /// Pushes `refspecs` to `remote` in one push, all or nothing (`--atomic`), without the
    /// repository's push hooks: these are a3s-iso's own refs, not the user's branches.
    pub(crate) fn push_refs(&self, dir: &Path, remote: &str, refspecs: &[String]) -> Result<()> {
        transport(self, dir)
            .args(["push", "--quiet", "--no-verify", "--atomic"])
            .args(["--end-of-options", remote])
            .args(refspecs)
            .finish()
    }

    /// Fetches exactly `refspecs` from `remote`: no tags, no `FETCH_HEAD`, no submodules, no
    /// pruning, no maintenance, no remote-tracking branch of yours moved (`--refmap=`: git
    /// would otherwise update `refs/remotes/<remote>/…` beside, and a stale lock a killed fetch
    /// left there would fail the fetch), every object checked as it arrives.
    pub(crate) fn fetch_refs(&self, dir: &Path, remote: &str, refspecs: &[String]) -> Result<()> {
        self.fetch_cmd(dir, remote, refspecs, None).finish()
    }

    /// The fetch of [`Git::fetch_refs`] into the bare repository `git_dir` (run in `dir`), with
    /// `filter` (a partial fetch: only for a repository of a3s-iso's own, since a filter makes
    /// the repository a partial clone of `remote`).
    pub(crate) fn fetch_filtered_into(
        &self,
        (dir, git_dir): (&Path, &Path),
        remote: &str,
        refspecs: &[String],
        filter: &str,
    ) -> Result<()> {
        self.fetch_cmd(dir, remote, refspecs, Some(filter))
            .env("GIT_DIR", git_dir)
            .finish()
    }

    fn fetch_cmd<'g>(
        &'g self,
        dir: &Path,
        remote: &str,
        refspecs: &[String],
        filter: Option<&str>,
    ) -> GitCmd<'g> {
        transport(self, dir)
            .args([
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-write-fetch-head",
                "--refmap=",
            ])
            .args([
                "--no-recurse-submodules",
                "--no-auto-maintenance",
                "--no-prune",
            ])
            .args(filter.map(|f| format!("--filter={f}")))
            .args(["--end-of-options", remote])
            .args(refspecs)
    }

    /// Fetches the branch `branch` of `remote` into the private ref `into`: `None` when the
    /// remote answers but has no such branch; a remote that does not answer is
    /// `remote_unreachable`, naming it.
    pub(crate) fn fetch_branch(
        &self,
        dir: &Path,
        remote: &str,
        branch: &str,
        into: &str,
    ) -> Result<Option<String>> {
        let refspec = format!("+refs/heads/{branch}:{into}");
        let out = self
            .fetch_cmd(dir, remote, std::slice::from_ref(&refspec), None)
            .output()?;
        if out.exit_code == Some(0) {
            return self
                .at(dir)
                .args(["rev-parse", "--verify", "--quiet", "--end-of-options", into])
                .run_text()
                .map(Some);
        }
        if out.stderr.contains("couldn't find remote ref") {
            return Ok(None);
        }
        Err(Error::RemoteUnreachable {
            remote: remote.to_string(),
            detail: out.stderr.trim().to_string(),
        })
    }

    /// Pushes `commit` to the branch `branch` of `remote` with a lease: only if the branch is
    /// at `expected` there (`--force-with-lease`, a compare-and-swap every git server honours),
    /// without the repository's push hooks. What the server said, as a [`LeasedPush`].
    pub(crate) fn push_leased(
        &self,
        dir: &Path,
        remote: &str,
        (commit, branch): (&str, &str),
        expected: &str,
    ) -> Result<LeasedPush> {
        let target = format!("refs/heads/{branch}");
        let out = transport(self, dir)
            .args(["push", "--porcelain", "--no-verify"])
            .arg(format!("--force-with-lease={target}:{expected}"))
            .args(["--end-of-options", remote])
            .arg(format!("{commit}:{target}"))
            .output()?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        // `<flag>\t<from>:<to>\t<summary>` per ref (see git push --porcelain).
        let line = stdout
            .lines()
            .find(|l| l.split('\t').nth(1).is_some_and(|r| r.ends_with(&target)));
        let Some(line) = line else {
            return Err(Error::RemoteUnreachable {
                remote: remote.to_string(),
                detail: out.stderr.trim().to_string(),
            });
        };
        let summary = line.split('\t').nth(2).unwrap_or_default().to_string();
        Ok(match (out.exit_code, line.chars().next()) {
            (Some(0), Some('=')) => LeasedPush::AlreadyThere,
            (Some(0), Some(' ' | '+' | '*')) => LeasedPush::Pushed,
            _ if summary.contains("stale info")
                || summary.contains("fetch first")
                || summary.contains("non-fast-forward") =>
            {
                LeasedPush::Moved
            }
            _ => LeasedPush::Refused {
                message: refusal_text(&summary, &out.stderr),
            },
        })
    }

    /// The commits of `tip`'s history, not in `since`'s, whose message holds the trailer
    /// `key: value` exactly (newest first).
    pub(crate) fn commits_with_trailer(
        &self,
        dir: &Path,
        (tip, since): (&str, Option<&str>),
        (key, value): (&str, &str),
    ) -> Result<Vec<String>> {
        let format = format!("--format=%H %(trailers:key={key},valueonly,separator=%x20)");
        let text = self
            .at(dir)
            .args(["log", "-z", "-F", "--no-show-signature", "--no-color"])
            .arg(format!("--grep={key}: {value}"))
            .arg(format)
            .args(["--end-of-options", tip])
            .args(since.map(|s| format!("^{s}")))
            .run()?;
        Ok(split_nul(&text)
            .filter_map(|record| {
                let record = String::from_utf8_lossy(record);
                let (commit, values) = record.trim().split_once(' ')?;
                values
                    .split_whitespace()
                    .any(|v| v == value)
                    .then(|| commit.to_string())
            })
            .collect())
    }

    /// A commit of `tree` on `parent` with `message`, made in `dir` with the identity git
    /// commits with there (a3s-iso's when it has none); never signed, no hook runs.
    pub(crate) fn commit_landing(
        &self,
        dir: &Path,
        (tree, parent): (&str, &str),
        message: &str,
    ) -> Result<String> {
        self.at(dir)
            .args(self.identity(dir).args())
            .args(["commit-tree", "--no-gpg-sign", tree, "-p", parent])
            .stdin(message.as_bytes().to_vec())
            .run_text()
    }

    /// The tree `patch` (a file) makes of `base`, applied to a temporary index (`index`, which
    /// must not exist) and written as objects; `None` when it does not apply there.
    pub(crate) fn tree_with_patch(
        &self,
        dir: &Path,
        (base, patch): (&str, &Path),
        index: &Path,
    ) -> Result<Option<String>> {
        let index = self.on_index(dir, index);
        index.read_tree(base)?;
        if index.apply_cached(patch)?.exit_code != Some(0) {
            return Ok(None);
        }
        index.write_tree().map(Some)
    }

    /// Writes `bytes` as they are (no filters: none applies to `--stdin` without a path) as an
    /// object of `kind` (`blob`, `tree`, `commit`) and returns its id; with `write` false, only
    /// computes the id.
    pub(crate) fn hash_object(
        &self,
        dir: &Path,
        kind: &str,
        bytes: Vec<u8>,
        write: bool,
    ) -> Result<String> {
        self.at(dir)
            .args(["hash-object", "-t", kind, "--stdin"])
            .args(write.then_some("-w"))
            .stdin(bytes)
            .run_text()
    }

    /// Writes the file at `path` as a blob, byte for byte (no filters, no attributes).
    pub(crate) fn hash_file(&self, dir: &Path, path: &Path) -> Result<String> {
        self.at(dir)
            .args(["hash-object", "-w", "-t", "blob", "--no-filters", "--"])
            .arg(path)
            .run_text()
    }

    /// Type and size of each object, `None` for a missing one; no content is read.
    pub(crate) fn object_info(
        &self,
        dir: &Path,
        names: &[String],
    ) -> Result<Vec<Option<ObjectInfo>>> {
        let input: Vec<u8> = names
            .iter()
            .flat_map(|n| format!("{n}\n").into_bytes())
            .collect();
        let text = self
            .at(dir)
            .args(["cat-file", "--batch-check=%(objecttype) %(objectsize)"])
            .stdin(input)
            .run_text()?;
        let found: Vec<Option<ObjectInfo>> = text
            .lines()
            .map(|line| {
                let (kind, size) = line.split_once(' ')?;
                Some(ObjectInfo {
                    kind: kind.to_string(),
                    size: size.parse().ok()?,
                })
            })
            .collect();
        if found.len() != names.len() {
            return Err(Error::internal(
                "cat-file --batch-check answered too few lines",
            ));
        }
        Ok(found)
    }

    /// Streams the blob `oid` into `file`.
    pub(crate) fn blob_to_file(&self, dir: &Path, oid: &str, file: File) -> Result<()> {
        self.at(dir)
            .args(["cat-file", "blob", oid])
            .run_to_file(file)
    }

    /// The raw content of a small object of `kind` (a commit, a document).
    pub(crate) fn object_bytes(&self, dir: &Path, kind: &str, oid: &str) -> Result<Vec<u8>> {
        self.at(dir).args(["cat-file", kind, oid]).run()
    }

    /// The top level of `tree` (`ls-tree -z`, not recursive).
    pub(crate) fn top_entries(&self, dir: &Path, tree: &str) -> Result<Vec<TopEntry>> {
        let out = self
            .at(dir)
            .args(["ls-tree", "-z", "--end-of-options", tree])
            .run()?;
        split_nul(&out)
            .map(|record| {
                let ([mode, kind, oid], name) = fields_and_path(record).ok_or_else(|| {
                    Error::internal("ls-tree printed an entry git does not print")
                })?;
                Ok(TopEntry {
                    mode: mode.to_string(),
                    kind: kind.to_string(),
                    oid: oid.to_string(),
                    name: name.to_vec(),
                })
            })
            .collect()
    }

    /// Creates a bare repository at `dir` with the object format `format` (`sha1`, `sha256`).
    pub(crate) fn init_bare(&self, dir: &Path, format: &str) -> Result<()> {
        std::fs::create_dir_all(dir).ctx(|| format!("cannot create {}", dir.display()))?;
        self.at(dir)
            .args(["init", "-q", "--bare", &format!("--object-format={format}")])
            .arg(dir)
            .finish()
    }
}
