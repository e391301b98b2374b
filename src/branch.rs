//! `promote --mode branch`: the session's commits come back as commits. They are kept on the
//! retained branch `a3s-iso/<id>` and replayed onto the source's current branch with their
//! messages, authors and dates; uncommitted leftovers become one trailing commit. Carried WIP is
//! filtered out of every replayed commit: the user's uncommitted work is never committed.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::context::{Context, Located};
use crate::error::{Error, Result};
use crate::fsutil::now_ms;
use crate::git::{Git, split_nul};
use crate::isolation::writable_isolation;
use crate::promote::{Mode, PromoteOptions, PromoteOutcome, write_artifacts, write_summary};
use crate::snapshot::{self, TempFile};
use crate::state::{JournalEntry, SessionRecord};

#[derive(Debug, Clone, Serialize)]
pub struct ReplayedCommit {
    /// The commit on the retained branch.
    pub commit: String,
    /// The commit it became on the source's branch.
    pub replayed: String,
    pub subject: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SkippedCommit {
    pub commit: String,
    pub subject: String,
    pub reason: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct BranchReport {
    /// `a3s-iso/<id>`: the session's commits (WIP filtered out), kept whatever happens; null
    /// when the commits could not be rebuilt without the WIP.
    pub retained_branch: Option<String>,
    /// The source's branch the commits were replayed onto.
    pub target_branch: String,
    pub replayed: Vec<ReplayedCommit>,
    pub skipped: Vec<SkippedCommit>,
    /// For `replay_failed`: the commit that could not be replayed.
    pub failed_commit: Option<String>,
    /// A stash of the source's WIP that could not be restored (kept, see warnings).
    pub kept_stash: Option<String>,
}

/// A commit to replay: the commit object and its subject line.
struct Pick {
    commit: String,
    subject: String,
}

pub fn promote_branch(
    ctx: &Context,
    located: &Located,
    session: SessionRecord,
    opts: &PromoteOptions,
) -> Result<PromoteOutcome> {
    let isolation = writable_isolation(&session)?;
    let source = session.source.clone();
    let git = &ctx.git;
    let _lock = ctx.lock(&located.repo)?;
    let mut out = PromoteOutcome::new("empty", Mode::Branch);
    out.session_id = Some(session.session_id.clone());
    out.bound_revision = Some(session.bound_revision.clone());

    let snap = isolation.snapshot(ctx, located)?;
    out.nested_repositories = snap.nested.clone();
    let patch = snapshot::patch(
        git,
        &source,
        &session.base_tree,
        &snap.tree,
        &located.store.scratch_dir(),
    )?;
    out.patch_bytes = patch.bytes;
    out.files_changed = patch.files_changed;
    if patch.bytes == 0 {
        return Ok(out);
    }
    out.digest = Some(patch.digest.clone());
    if located.store.journal_entry(&patch.digest)?.is_some() {
        out.outcome = "idempotent";
        return Ok(out);
    }
    let (artifacts, _) = write_artifacts(located, opts, &patch.digest, &patch.read()?, &mut out)?;
    if opts.no_apply {
        return Ok(out);
    }
    let target = git
        .at(&source)
        .args(["symbolic-ref", "-q", "HEAD"])
        .output()?;
    let target = String::from_utf8_lossy(&target.stdout).trim().to_string();
    if target.is_empty() {
        return Err(Error::DetachedSource {
            source_path: source.clone(),
        });
    }
    let old_tip = git.at(&source).args(["rev-parse", "HEAD"]).run_text()?;
    out.current_revision = Some(old_tip.clone());
    let ident = identity_args(git, &source);

    // The chain to replay, WIP filtered out, kept on the retained branch.
    let wip = WipFilter::new(git, &source, &session, &located.store.scratch_dir())?;
    let isolation_head = git
        .worktree(&isolation.admin, &isolation.tree)
        .args(["rev-parse", "HEAD"])
        .run_text()?;
    let originals = git
        .at(&source)
        .args(["rev-list", "--reverse", "--first-parent"])
        .arg(format!("{}..{isolation_head}", session.bound_revision))
        .run_text()?;
    let mut chain: Vec<Pick> = Vec::new();
    let mut parent = session.bound_revision.clone();
    let retained = format!("a3s-iso/{}", session.session_id);
    for original in originals.lines().filter(|l| !l.is_empty()) {
        let commit_tree = git
            .at(&source)
            .args(["rev-parse", &format!("{original}^{{tree}}")])
            .run_text()?;
        let filtered = match wip.filter(&commit_tree)? {
            Ok(tree) => tree,
            Err(path) => {
                return replay_failed(
                    out,
                    &artifacts,
                    &target,
                    original,
                    format!(
                        "commit {original} changes {path}, which carries your uncommitted work; promote it in patch mode"
                    ),
                );
            }
        };
        let rebuilt = if filtered == commit_tree && parent == first_parent(git, &source, original)?
        {
            original.to_string()
        } else {
            recommit(git, &source, &ident, original, &filtered, &parent)?
        };
        chain.push(Pick {
            subject: subject(git, &source, &rebuilt)?,
            commit: rebuilt.clone(),
        });
        parent = rebuilt;
    }
    let leftovers = match wip.filter(&snap.tree)? {
        Ok(tree) => tree,
        Err(path) => {
            return replay_failed(
                out,
                &artifacts,
                &target,
                &isolation_head,
                format!(
                    "uncommitted changes to {path} sit on top of your uncommitted work; promote in patch mode"
                ),
            );
        }
    };
    let parent_tree = git
        .at(&source)
        .args(["rev-parse", &format!("{parent}^{{tree}}")])
        .run_text()?;
    if leftovers != parent_tree {
        let message = format!(
            "a3s-iso: uncommitted changes of session {}\n",
            session.session_id
        );
        let commit = git
            .at(&source)
            .args(&ident)
            .args(["commit-tree", &leftovers, "-p", &parent])
            .stdin(message.into_bytes())
            .run_text()?;
        chain.push(Pick {
            subject: format!(
                "a3s-iso: uncommitted changes of session {}",
                session.session_id
            ),
            commit: commit.clone(),
        });
        parent = commit;
    }
    git.at(&source)
        .args([
            "update-ref",
            "-m",
            "a3s-iso: retained commits of the session",
            &format!("refs/heads/{retained}"),
            &parent,
        ])
        .run()?;

    let mut report = BranchReport {
        retained_branch: Some(retained.clone()),
        target_branch: target.clone(),
        replayed: Vec::new(),
        skipped: Vec::new(),
        failed_commit: None,
        kept_stash: None,
    };
    // From the stash to the journal nothing may stop halfway: interrupts wait, and git runs
    // where a Ctrl-C at the terminal cannot reach it.
    let interrupts = crate::signals::Signals::register()?;
    let stash = stash_wip(git, &source, &ident, &session.session_id)?;
    let failure = replay(git, &source, &ident, &chain, &mut report);
    if failure.is_some() {
        // Abort the whole replay: the branch goes back to where it was.
        let _ = git
            .at(&source)
            .shielded()
            .args(["cherry-pick", "--abort"])
            .output();
        git.at(&source)
            .shielded()
            .args(["reset", "-q", "--hard", &old_tip])
            .run()?;
    }
    if let Some(stash) = &stash {
        if let Err(warning) = restore_wip(git, &source, stash) {
            out.warnings.push(warning);
            report.kept_stash = Some(stash.clone());
        }
    }
    match failure {
        Some((commit, detail)) => {
            out.outcome = "conflict";
            out.reason = Some("replay_failed");
            out.detail = Some(detail);
            report.failed_commit = Some(commit);
            report.replayed.clear();
        }
        None => {
            located.store.record_promoted(&JournalEntry {
                digest: patch.digest.clone(),
                session_id: Some(session.session_id.clone()),
                promoted_at_ms: now_ms(),
                source_head: Some(old_tip),
                patch_bytes: patch.bytes,
                how: "applied".into(),
                mode: "branch".into(),
            })?;
            out.outcome = "applied";
            if interrupts.received().is_some() {
                out.warnings.push(
                    "an interrupt arrived during the replay; the promote finished first".into(),
                );
            }
            out.current_revision = Some(git.at(&source).args(["rev-parse", "HEAD"]).run_text()?);
        }
    }
    out.branch = Some(report);
    write_summary(&artifacts, &out)?;
    Ok(out)
}

fn replay_failed(
    mut out: PromoteOutcome,
    artifacts: &Path,
    target: &str,
    commit: &str,
    detail: String,
) -> Result<PromoteOutcome> {
    out.outcome = "conflict";
    out.reason = Some("replay_failed");
    out.detail = Some(detail);
    out.branch = Some(BranchReport {
        retained_branch: None,
        target_branch: target.to_string(),
        replayed: Vec::new(),
        skipped: Vec::new(),
        failed_commit: Some(commit.to_string()),
        kept_stash: None,
    });
    write_summary(artifacts, &out)?;
    Ok(out)
}

/// Cherry-picks the chain onto the current branch. Returns the commit that failed, if any.
fn replay(
    git: &Git,
    source: &Path,
    ident: &[String],
    chain: &[Pick],
    report: &mut BranchReport,
) -> Option<(String, String)> {
    for pick in chain {
        let result = git
            .at(source)
            .shielded()
            .args(ident)
            .args([
                "-c",
                "commit.gpgSign=false",
                "cherry-pick",
                "--no-edit",
                "--allow-empty-message",
                &pick.commit,
            ])
            .output();
        let Ok(result) = result else {
            return Some((pick.commit.clone(), "git cherry-pick could not run".into()));
        };
        if result.exit_code == Some(0) {
            let replayed = git
                .at(source)
                .args(["rev-parse", "HEAD"])
                .run_text()
                .unwrap_or_default();
            report.replayed.push(ReplayedCommit {
                commit: pick.commit.clone(),
                replayed,
                subject: pick.subject.clone(),
            });
            continue;
        }
        let unmerged = git
            .at(source)
            .shielded()
            .args(["ls-files", "-u"])
            .run_text()
            .unwrap_or_default();
        let staged = git
            .at(source)
            .shielded()
            .args(["diff", "--cached", "--quiet"])
            .succeeds()
            .unwrap_or(false);
        if unmerged.is_empty() && staged {
            // Nothing left to commit: its change is already on the branch.
            if git
                .at(source)
                .shielded()
                .args(["cherry-pick", "--skip"])
                .run()
                .is_ok()
            {
                report.skipped.push(SkippedCommit {
                    commit: pick.commit.clone(),
                    subject: pick.subject.clone(),
                    reason: "empty",
                });
                continue;
            }
        }
        return Some((pick.commit.clone(), result.stderr.trim().to_string()));
    }
    None
}

/// Stashes the source's WIP (untracked included) and returns the stash commit, found by
/// identity afterwards, never by position.
fn stash_wip(
    git: &Git,
    source: &Path,
    ident: &[String],
    session_id: &str,
) -> Result<Option<String>> {
    let status = git
        .at(source)
        .shielded()
        .args(["status", "--porcelain", "--untracked-files=normal"])
        .run_text()?;
    if status.is_empty() {
        return Ok(None);
    }
    let before = stash_top(git, source);
    git.at(source)
        .shielded()
        .args(ident)
        .args(["stash", "push", "--include-untracked", "-q", "-m"])
        .arg(format!(
            "a3s-iso: your WIP, set aside while promoting session {session_id}"
        ))
        .run()?;
    let after = stash_top(git, source);
    Ok(if after != before { after } else { None })
}

fn stash_top(git: &Git, source: &Path) -> Option<String> {
    git.at(source)
        .args(["rev-parse", "-q", "--verify", "refs/stash"])
        .run_text()
        .ok()
        .filter(|s| !s.is_empty())
}

/// Restores a stash with its index and drops it; on failure the stash is kept and no unmerged
/// entries are left behind. The error is the warning to show.
fn restore_wip(git: &Git, source: &Path, stash: &str) -> std::result::Result<(), String> {
    let applied = git
        .at(source)
        .shielded()
        .args(["stash", "apply", "--index", "-q", stash])
        .output();
    if !matches!(&applied, Ok(out) if out.exit_code == Some(0)) {
        let unmerged = git
            .at(source)
            .shielded()
            .args(["ls-files", "-u"])
            .run_text()
            .unwrap_or_default();
        if !unmerged.is_empty() {
            let _ = git.at(source).shielded().args(["reset", "-q"]).output();
        }
        return Err(format!(
            "your uncommitted work could not be restored on top of the promoted commits; it is kept in stash {stash} (git stash apply --index {stash})"
        ));
    }
    // Drop exactly this stash, wherever it now sits in the list.
    let list = git
        .at(source)
        .shielded()
        .args(["reflog", "show", "--format=%H", "refs/stash"])
        .run_text()
        .unwrap_or_default();
    if let Some(position) = list.lines().position(|oid| oid == stash) {
        let _ = git
            .at(source)
            .shielded()
            .args(["stash", "drop", "-q", &format!("stash@{{{position}}}")])
            .output();
    }
    Ok(())
}

/// `-c user.name/-c user.email` when git has no identity of its own to commit with.
fn identity_args(git: &Git, source: &Path) -> Vec<String> {
    let known = git.at(source).args(["var", "GIT_COMMITTER_IDENT"]).output();
    if matches!(known, Ok(out) if out.exit_code == Some(0)) {
        Vec::new()
    } else {
        [
            "-c",
            "user.name=a3s-iso",
            "-c",
            "user.email=a3s-iso@localhost",
        ]
        .map(String::from)
        .to_vec()
    }
}

fn first_parent(git: &Git, source: &Path, commit: &str) -> Result<String> {
    git.at(source)
        .args(["rev-parse", &format!("{commit}^")])
        .run_text()
}

fn subject(git: &Git, source: &Path, commit: &str) -> Result<String> {
    git.at(source)
        .args(["log", "-1", "--format=%s", commit])
        .run_text()
}

/// A copy of `original` with another tree and parent, keeping message, author and committer.
fn recommit(
    git: &Git,
    source: &Path,
    ident: &[String],
    original: &str,
    tree: &str,
    parent: &str,
) -> Result<String> {
    let raw = git
        .at(source)
        .args(["cat-file", "commit", original])
        .run()?;
    let text = String::from_utf8_lossy(&raw);
    let (headers, message) = text.split_once("\n\n").unwrap_or((&text, ""));
    let mut cmd = git.at(source).args(ident);
    for line in headers.lines() {
        for (prefix, kind) in [("author ", "AUTHOR"), ("committer ", "COMMITTER")] {
            if let Some(rest) = line.strip_prefix(prefix)
                && let Some((name, rest)) = rest.split_once(" <")
                && let Some((email, date)) = rest.split_once("> ")
            {
                cmd = cmd
                    .env(format!("GIT_{kind}_NAME"), name)
                    .env(format!("GIT_{kind}_EMAIL"), email)
                    .env(format!("GIT_{kind}_DATE"), format!("@{date}"));
            }
        }
    }
    cmd.args(["commit-tree", tree, "-p", parent])
        .stdin(message.as_bytes().to_vec())
        .run_text()
}

/// Takes the carried WIP back out of trees: a WIP path whose content in the tree is still the
/// WIP's goes back to its HEAD version. A WIP path the agent changed further cannot be
/// separated from the WIP and is refused.
struct WipFilter<'a> {
    git: &'a Git,
    source: &'a Path,
    scratch: std::path::PathBuf,
    /// path → (entry at HEAD, entry in the WIP); an entry is `mode oid`, or None when absent.
    paths: BTreeMap<String, (Option<String>, Option<String>)>,
}

impl<'a> WipFilter<'a> {
    fn new(
        git: &'a Git,
        source: &'a Path,
        session: &SessionRecord,
        scratch: &Path,
    ) -> Result<WipFilter<'a>> {
        let mut paths = BTreeMap::new();
        if session.carried_wip {
            let head_tree = git
                .at(source)
                .args(["rev-parse", &format!("{}^{{tree}}", session.bound_revision)])
                .run_text()?;
            let changed = git
                .at(source)
                .args([
                    "diff-tree",
                    "-r",
                    "-z",
                    "--name-only",
                    "--no-renames",
                    &head_tree,
                    &session.base_tree,
                ])
                .run()?;
            let names: Vec<String> = split_nul(&changed)
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect();
            let at_head = entries(git, source, &head_tree, &names)?;
            let in_wip = entries(git, source, &session.base_tree, &names)?;
            for name in names {
                let pair = (at_head.get(&name).cloned(), in_wip.get(&name).cloned());
                paths.insert(name, pair);
            }
        }
        Ok(WipFilter {
            git,
            source,
            scratch: scratch.to_path_buf(),
            paths,
        })
    }

    /// The tree without the WIP, or the path that cannot be separated from it.
    fn filter(&self, tree: &str) -> Result<std::result::Result<String, String>> {
        if self.paths.is_empty() {
            return Ok(Ok(tree.to_string()));
        }
        let names: Vec<String> = self.paths.keys().cloned().collect();
        let current = entries(self.git, self.source, tree, &names)?;
        let mut info = String::new();
        for (name, (at_head, in_wip)) in &self.paths {
            let now = current.get(name);
            if now == in_wip.as_ref() {
                match at_head {
                    Some(entry) => info.push_str(&format!("{entry}\t{name}\0")),
                    None => info.push_str(&format!(
                        "0 0000000000000000000000000000000000000000\t{name}\0"
                    )),
                }
            } else if now != at_head.as_ref() && now.is_some() {
                return Ok(Err(name.clone()));
            }
        }
        if info.is_empty() {
            return Ok(Ok(tree.to_string()));
        }
        let index = TempFile::new(&self.scratch, "index")?;
        let on_index = || self.git.at(self.source).env("GIT_INDEX_FILE", index.path());
        on_index().args(["read-tree", tree]).run()?;
        on_index()
            .args(["update-index", "-z", "--index-info"])
            .stdin(info.into_bytes())
            .run()?;
        Ok(Ok(on_index().arg("write-tree").run_text()?))
    }
}

/// `path → "mode oid"` for the given paths of a tree.
fn entries(
    git: &Git,
    source: &Path,
    tree: &str,
    paths: &[String],
) -> Result<BTreeMap<String, String>> {
    let out = git
        .at(source)
        .args([
            "--literal-pathspecs",
            "ls-tree",
            "-r",
            "-z",
            "--full-tree",
            tree,
            "--",
        ])
        .args(paths)
        .run()?;
    Ok(split_nul(&out)
        .filter_map(|record| {
            let text = String::from_utf8_lossy(record);
            let (meta, path) = text.split_once('\t')?;
            let mut parts = meta.split(' ');
            let mode = parts.next()?;
            let _kind = parts.next()?;
            let oid = parts.next()?;
            Some((path.to_string(), format!("{mode} {oid}")))
        })
        .collect())
}
