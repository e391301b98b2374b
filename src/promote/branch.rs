//! `promote --mode branch`: the session's commits come back as commits. They are kept on the
//! retained branch `a3s-iso/<id>` and replayed onto the source's current branch with their
//! messages, authors and dates; uncommitted leftovers become one trailing commit. Carried WIP is
//! filtered out of every replayed commit: the user's uncommitted work is never committed.
//!
//! [`plan`] decides what would happen and writes nothing but objects (no ref, no checkout);
//! [`execute`] moves refs and the checkout, recording an intent first (the old tip, the stash
//! of the user's WIP, each replayed commit, the finished tip) so that a crash is completed or
//! rolled back by the next command, and the WIP never stays only in a stash.

use std::collections::BTreeMap;
use std::path::Path;

use super::artifacts::Artifacts;
use super::journal::journal;
use super::options::PromoteOptions;
use super::outcome::{
    BranchReport, Mode, Outcome, PromoteOutcome, Reason, ReplayedCommit, SkipReason, SkippedCommit,
};
use crate::context::{Context, Located};
use crate::error::{Error, Result};
use crate::fsutil::{now_ms, unique_suffix};
use crate::git::{CatFile, Git};
use crate::intent::{self, BranchPlan, Changes, Intent};
use crate::isolation::writable_isolation;
use crate::paths::RepoPath;
use crate::snapshot::{self, Patch, TempFile};
use crate::state::{Landing, SessionRecord, Store};

/// A commit to replay: the commit object and its subject line.
struct Pick {
    commit: String,
    subject: String,
}

/// Where the replay lands and who commits.
struct Target {
    /// The source's current branch (`refs/heads/…`).
    branch: String,
    /// Its tip before the replay.
    old_tip: String,
    /// `-c user.name/-c user.email` when git has no identity of its own.
    ident: Vec<String>,
}

/// What the plan found: the chain to replay, or why there is none.
enum Planned {
    /// The commits to replay in order (WIP filtered out), ending at the retained branch's tip.
    Chain(Vec<Pick>),
    /// A commit that cannot be separated from the carried WIP.
    Refused { commit: String, detail: String },
}

/// The detail of a promote whose earlier, interrupted promote is still pending.
const PENDING: &str = "an interrupted promote of this change set is still pending and could not be finished now (see the warnings); nothing was done";

/// Promotes a session in branch mode, under the repository lock.
pub(super) fn promote_branch(
    ctx: &Context,
    located: &Located,
    session: SessionRecord,
    opts: &PromoteOptions,
) -> Result<PromoteOutcome> {
    let isolation = writable_isolation(&session)?;
    let _lock = ctx.lock(&located.repo)?;
    let (snap, nested) = crate::capture::snapshot_all(ctx, located, &isolation)?;
    let mut out = replay_root(ctx, located, &session, &isolation, &snap, opts)?;
    out.warnings.extend(nested.warnings());
    let ident = identity_args(&ctx.git, &session.source);
    let branch = super::nested::BranchNested {
        session: &session,
        snap: &snap,
        ident: &ident,
    };
    super::nested::commit_nested(ctx, located, &branch, nested, opts, &mut out)?;
    Ok(out)
}

/// Branch mode for the root change set: the session's commits replayed onto the source's
/// branch, with a trailing commit for the uncommitted leftovers.
fn replay_root(
    ctx: &Context,
    located: &Located,
    session: &SessionRecord,
    isolation: &crate::isolation::Isolation,
    snap: &crate::snapshot::Snapshot,
    opts: &PromoteOptions,
) -> Result<PromoteOutcome> {
    let session = session.clone();
    let mut out = PromoteOutcome::new(Outcome::Empty, Mode::Branch);
    out.warnings.extend(ctx.take_notices());
    out.session_id = Some(session.session_id.clone());
    out.bound_revision = Some(session.bound_revision.clone());
    out.nested_repositories = snap.nested.clone();
    let scratch = located.store.scratch_dir();
    let patch = snapshot::patch(
        &ctx.git,
        &located.repo.common_dir,
        &session.base_tree,
        &snap.tree,
        &scratch,
    )?;
    out.patch_bytes = patch.bytes;
    out.files_changed = patch.files_changed;
    if patch.bytes == 0 {
        return Ok(out);
    }
    out.digest = Some(patch.digest.clone());
    if located.store.journal_entry(&patch.digest)?.is_some() {
        out.outcome = Outcome::Idempotent;
        return Ok(out);
    }
    if intent::load(&located.store, &patch.digest)?.is_some() {
        // Recovery under the lock could not finish it (see the warnings): never start over it.
        out.conflict(Reason::ReplayFailed, Some(PENDING.into()));
        return Ok(out);
    }
    let artifacts = Artifacts::write(located, opts.artifacts.as_deref(), &patch, &mut out)?;
    if opts.no_apply {
        return Ok(out);
    }
    let target = target(&ctx.git, &session.source)?;
    out.current_revision = Some(target.old_tip.clone());
    // The commits to replay are the ones HEAD names: an unusable HEAD is refused, never
    // replaced by a guess.
    let isolation_head = isolation.head(&ctx.git)?;
    match plan(
        ctx,
        &session,
        &target,
        &isolation_head,
        &snap.tree,
        &scratch,
    )? {
        Planned::Chain(chain) => {
            execute(ctx, located, &session, &target, &chain, &patch, &mut out)?
        }
        Planned::Refused { commit, detail } => {
            out.conflict(Reason::ReplayFailed, Some(detail));
            let mut report = BranchReport::new(&target.branch, None);
            report.failed_commit = Some(commit);
            out.branch = Some(report);
        }
    }
    artifacts.summarise(&out)?;
    Ok(out)
}

/// The source's current branch and tip; a detached source has no branch to replay onto.
fn target(git: &Git, source: &Path) -> Result<Target> {
    let symbolic = git
        .at(source)
        .args(["symbolic-ref", "-q", "HEAD"])
        .output()?;
    let branch = String::from_utf8_lossy(&symbolic.stdout).trim().to_string();
    if branch.is_empty() {
        return Err(Error::DetachedSource {
            source_path: source.to_path_buf(),
        });
    }
    Ok(Target {
        branch,
        old_tip: git.rev_parse_required(source, "HEAD")?,
        ident: identity_args(git, source),
    })
}

/// Plans the replay: the session's first-parent commits since the bound revision, rebuilt
/// without the carried WIP where needed, plus one commit for uncommitted leftovers. Writes
/// only objects.
fn plan(
    ctx: &Context,
    session: &SessionRecord,
    target: &Target,
    isolation_head: &str,
    snapshot_tree: &str,
    scratch: &Path,
) -> Result<Planned> {
    let git = &ctx.git;
    let source = session.source.as_path();
    let wip = WipFilter::new(git, source, session, scratch)?;
    let originals = first_parent_chain(git, source, &session.bound_revision, isolation_head)?;
    let raw = raw_commits(git, source, &originals)?;
    let mut chain: Vec<Pick> = Vec::new();
    let mut parent = session.bound_revision.clone();
    for (original, raw) in originals.iter().zip(&raw) {
        let filtered = match wip.filter(&original.tree)? {
            Filtered::Tree(tree) => tree,
            Filtered::Inseparable(path) => {
                return Ok(Planned::Refused {
                    detail: format!(
                        "commit {} changes {path}, which carries your uncommitted work; promote it in patch mode",
                        original.commit
                    ),
                    commit: original.commit.clone(),
                });
            }
        };
        let rebuilt = if filtered == original.tree && parent == original.first_parent {
            original.commit.clone()
        } else {
            recommit(git, source, &target.ident, raw, &filtered, &parent)?
        };
        chain.push(Pick {
            subject: original.subject.clone(),
            commit: rebuilt.clone(),
        });
        parent = rebuilt;
    }
    let leftovers = match wip.filter(snapshot_tree)? {
        Filtered::Tree(tree) => tree,
        Filtered::Inseparable(path) => {
            return Ok(Planned::Refused {
                commit: isolation_head.to_string(),
                detail: format!(
                    "uncommitted changes to {path} sit on top of your uncommitted work; promote in patch mode"
                ),
            });
        }
    };
    if leftovers != git.rev_parse_required(source, &format!("{parent}^{{tree}}"))? {
        chain.push(leftovers_commit(
            git, source, target, session, &leftovers, &parent,
        )?);
    }
    Ok(Planned::Chain(chain))
}

/// One commit holding the session's uncommitted leftovers, on top of the chain.
fn leftovers_commit(
    git: &Git,
    source: &Path,
    target: &Target,
    session: &SessionRecord,
    tree: &str,
    parent: &str,
) -> Result<Pick> {
    let subject = format!(
        "a3s-iso: uncommitted changes of session {}",
        session.session_id
    );
    let commit = git
        .at(source)
        .args(&target.ident)
        .args(["commit-tree", tree, "-p", parent])
        .stdin(format!("{subject}\n").into_bytes())
        .run_text()?;
    Ok(Pick { subject, commit })
}

/// The branch promote's intent, rewritten (fsynced) as the promote goes: before the WIP is
/// stashed, once the stash exists, after every replayed commit, and when the replay finished.
struct Recorder<'a> {
    store: &'a Store,
    intent: Intent,
    plan: BranchPlan,
}

impl<'a> Recorder<'a> {
    /// Writes the intent before anything in the checkout changes.
    fn begin(
        located: &'a Located,
        session: &SessionRecord,
        target: &Target,
        chain: &[Pick],
        patch: &Patch,
        had_wip: bool,
    ) -> Result<Recorder<'a>> {
        let plan = BranchPlan {
            branch: target.branch.clone(),
            old_tip: target.old_tip.clone(),
            retained_tip: chain
                .last()
                .map_or(session.bound_revision.clone(), |p| p.commit.clone()),
            had_wip,
            token: format!("{}-{}", intent::tag(&patch.digest), unique_suffix()),
            stash: None,
            chain: chain.iter().map(|p| p.commit.clone()).collect(),
            processed: 0,
            replayed: Vec::new(),
            done: None,
        };
        let recorder = Recorder {
            store: &located.store,
            intent: Intent {
                schema: intent::SCHEMA.into(),
                digest: patch.digest.clone(),
                session_id: Some(session.session_id.clone()),
                mode: Mode::Branch,
                source: session.source.clone(),
                source_head: Some(target.old_tip.clone()),
                patch_bytes: patch.bytes,
                created_at_ms: now_ms(),
                pid: std::process::id(),
                changes: Changes::Branch(plan.clone()),
            },
            plan,
        };
        intent::save(recorder.store, &recorder.intent)?;
        Ok(recorder)
    }

    /// Changes the plan and writes the intent again.
    fn record(&mut self, change: impl FnOnce(&mut BranchPlan)) -> Result<()> {
        change(&mut self.plan);
        self.intent.changes = Changes::Branch(self.plan.clone());
        intent::save(self.store, &self.intent)
    }

    fn token(&self) -> &str {
        &self.plan.token
    }

    /// Nothing is left to finish.
    fn end(self) -> Result<()> {
        intent::remove(self.store, &self.intent.digest)
    }
}

/// Keeps the chain on the retained branch, records the intent, sets the user's WIP aside,
/// replays, restores the WIP and journals. From the stash to the journal nothing may stop
/// halfway: interrupts wait, git runs where a Ctrl-C at the terminal cannot reach it, and a
/// crash is finished (or rolled back) by the next command from the intent.
fn execute(
    ctx: &Context,
    located: &Located,
    session: &SessionRecord,
    target: &Target,
    chain: &[Pick],
    patch: &Patch,
    out: &mut PromoteOutcome,
) -> Result<()> {
    let git = &ctx.git;
    let source = session.source.as_path();
    let id = &session.session_id;
    let tip = chain
        .last()
        .map_or(session.bound_revision.as_str(), |p| p.commit.as_str());
    crate::refs::set_retained_branch(git, source, id, tip)?;
    let mut report = BranchReport::new(&target.branch, Some(crate::refs::retained_branch(id)));
    let had_wip = intent::has_wip(git, source)?;
    let mut recorder = Recorder::begin(located, session, target, chain, patch, had_wip)?;
    crate::fault_point!("promote-branch-after-intent");
    let interrupts = crate::signals::Signals::register()?;
    let stash = match had_wip {
        true => intent::stash_push(git, source, &target.ident, recorder.token(), id)?,
        false => None,
    };
    recorder.record(|plan| plan.stash = stash.clone())?;
    let failure = replay(
        git,
        source,
        &target.ident,
        chain,
        &mut recorder,
        &mut report,
    )?;
    let marked = || intent::marked(git, source, recorder.token());
    if failure.is_some() {
        // Abort the whole replay: the branch goes back to where it was.
        let _ = marked().args(["cherry-pick", "--abort"]).output();
        marked()
            .args(["reset", "-q", "--hard", &target.old_tip])
            .run()?;
    } else {
        let done = git.rev_parse_required(source, "HEAD")?;
        recorder.record(|plan| plan.done = Some(done))?;
    }
    if let Some(stash) = &stash
        && let Err(warning) = intent::restore_stash(git, source, recorder.token(), stash)
    {
        out.warnings.push(warning);
        report.kept_stash = Some(stash.clone());
    }
    crate::fault_point!("promote-branch-after-restore");
    conclude(located, session, target, patch, failure, &mut report, out)?;
    recorder.end()?;
    if out.outcome == Outcome::Applied && interrupts.received().is_some() {
        out.warnings
            .push("an interrupt arrived during the replay; the promote finished first".into());
    }
    out.current_revision = Some(git.rev_parse_required(source, "HEAD")?);
    out.branch = Some(report);
    Ok(())
}

/// The outcome of a replay: a conflict naming the commit, or the journal entry and `applied`.
fn conclude(
    located: &Located,
    session: &SessionRecord,
    target: &Target,
    patch: &Patch,
    failure: Option<(String, String)>,
    report: &mut BranchReport,
    out: &mut PromoteOutcome,
) -> Result<()> {
    match failure {
        Some((commit, detail)) => {
            out.conflict(Reason::ReplayFailed, Some(detail));
            report.failed_commit = Some(commit);
            report.replayed.clear();
        }
        None => {
            journal(
                located,
                &patch.digest,
                Some(&session.session_id),
                Some(&target.old_tip),
                patch.bytes,
                Landing::Applied,
                Mode::Branch,
            )?;
            out.outcome = Outcome::Applied;
        }
    }
    Ok(())
}

/// Cherry-picks the chain onto the current branch, recording each new commit in the intent; a
/// commit whose change is already there is skipped. Returns the commit that failed and why,
/// if any.
fn replay(
    git: &Git,
    source: &Path,
    ident: &[String],
    chain: &[Pick],
    recorder: &mut Recorder<'_>,
    report: &mut BranchReport,
) -> Result<Option<(String, String)>> {
    for pick in chain {
        let result = intent::marked(git, source, recorder.token())
            .args(ident)
            .args(["-c", "commit.gpgSign=false", "cherry-pick", "--no-edit"])
            .args(["--allow-empty-message", &pick.commit])
            .output();
        let Ok(result) = result else {
            return Ok(Some((
                pick.commit.clone(),
                "git cherry-pick could not run".into(),
            )));
        };
        if result.exit_code == Some(0) {
            let replayed = git.rev_parse_required(source, "HEAD")?;
            recorder.record(|plan| {
                plan.replayed.push(replayed.clone());
                plan.processed += 1;
            })?;
            report.replayed.push(ReplayedCommit {
                commit: pick.commit.clone(),
                replayed,
                subject: pick.subject.clone(),
            });
        } else if skip_if_empty(git, source, recorder.token()) {
            recorder.record(|plan| plan.processed += 1)?;
            report.skipped.push(SkippedCommit {
                commit: pick.commit.clone(),
                subject: pick.subject.clone(),
                reason: SkipReason::Empty,
            });
        } else {
            return Ok(Some((
                pick.commit.clone(),
                result.stderr.trim().to_string(),
            )));
        }
    }
    Ok(None)
}

/// After a failed pick: when nothing is left to commit (its change is already on the branch),
/// skips it and says so.
fn skip_if_empty(git: &Git, source: &Path, token: &str) -> bool {
    let unmerged = git
        .at(source)
        .args(["ls-files", "-u"])
        .run_text()
        .unwrap_or_default();
    let nothing_staged = git
        .at(source)
        .args(["diff", "--cached", "--quiet"])
        .succeeds()
        .unwrap_or(false);
    unmerged.is_empty()
        && nothing_staged
        && intent::marked(git, source, token)
            .args(["cherry-pick", "--skip"])
            .run()
            .is_ok()
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

/// A commit of the session's chain, as one `git log` lists it.
struct Original {
    commit: String,
    tree: String,
    first_parent: String,
    subject: String,
}

/// The first-parent commits from `bound` (excluded) to `head`, oldest first, in one process.
fn first_parent_chain(git: &Git, source: &Path, bound: &str, head: &str) -> Result<Vec<Original>> {
    let out = git
        .at(source)
        .args([
            "log",
            "-z",
            "--reverse",
            "--first-parent",
            "--format=%H %T %P%n%s",
        ])
        .arg(format!("{bound}..{head}"))
        .arg("--")
        .run()?;
    // Records are NUL-separated; a subject never holds a newline (%s joins its lines).
    Ok(out
        .split(|b| *b == 0)
        .filter(|record| !record.is_empty())
        .filter_map(|record| {
            let text = String::from_utf8_lossy(record);
            let (ids, subject) = text.split_once('\n').unwrap_or((&text, ""));
            let mut ids = ids.split(' ');
            Some(Original {
                commit: ids.next()?.to_string(),
                tree: ids.next()?.to_string(),
                first_parent: ids.next().unwrap_or_default().to_string(),
                subject: subject.to_string(),
            })
        })
        .collect())
}

/// The raw commit objects of the chain, in one `cat-file --batch`.
fn raw_commits(git: &Git, source: &Path, chain: &[Original]) -> Result<Vec<Vec<u8>>> {
    let names: Vec<String> = chain.iter().map(|c| c.commit.clone()).collect();
    git.cat_file_batch(source, &names)?
        .into_iter()
        .zip(&names)
        .map(|(found, name)| match found {
            CatFile::Found { content, .. } => Ok(content),
            CatFile::Missing => Err(Error::internal(format!("commit {name} is missing"))),
        })
        .collect()
}

/// A copy of a commit (its raw object) with another tree and parent, keeping message, author
/// and committer.
fn recommit(
    git: &Git,
    source: &Path,
    ident: &[String],
    raw: &[u8],
    tree: &str,
    parent: &str,
) -> Result<String> {
    let text = String::from_utf8_lossy(raw);
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

/// A tree with the carried WIP taken out, or the path where that is impossible.
enum Filtered {
    Tree(String),
    Inseparable(RepoPath),
}

/// Takes the carried WIP back out of trees: a WIP path whose content in the tree is still the
/// WIP's goes back to its HEAD version. A WIP path the agent changed further cannot be
/// separated from the WIP and is refused.
struct WipFilter<'a> {
    git: &'a Git,
    source: &'a Path,
    scratch: std::path::PathBuf,
    /// The all-zero object id of the repository's hash, for removals.
    null_oid: String,
    /// path → (entry at HEAD, entry in the WIP); an entry is `mode oid`, or None when absent.
    paths: BTreeMap<RepoPath, (Option<String>, Option<String>)>,
}

impl<'a> WipFilter<'a> {
    fn new(
        git: &'a Git,
        source: &'a Path,
        session: &SessionRecord,
        scratch: &Path,
    ) -> Result<WipFilter<'a>> {
        let mut paths = BTreeMap::new();
        let mut null_oid = String::new();
        if session.carried_wip {
            let head_tree =
                git.rev_parse_required(source, &format!("{}^{{tree}}", session.bound_revision))?;
            let names: Vec<RepoPath> = git
                .diff_trees(source, &head_tree, &session.base_tree)?
                .into_iter()
                .map(RepoPath)
                .collect();
            let at_head = git.tree_entries(source, &head_tree, &names)?;
            let in_wip = git.tree_entries(source, &session.base_tree, &names)?;
            for name in names {
                let pair = (at_head.get(&name).cloned(), in_wip.get(&name).cloned());
                paths.insert(name, pair);
            }
            null_oid = git.null_oid(source)?;
        }
        Ok(WipFilter {
            git,
            source,
            scratch: scratch.to_path_buf(),
            null_oid,
            paths,
        })
    }

    /// The tree without the WIP, or the path that cannot be separated from it.
    fn filter(&self, tree: &str) -> Result<Filtered> {
        if self.paths.is_empty() {
            return Ok(Filtered::Tree(tree.to_string()));
        }
        let names: Vec<RepoPath> = self.paths.keys().cloned().collect();
        let current = self.git.tree_entries(self.source, tree, &names)?;
        // `--index-info -z` records: `<mode> <oid>\t<path>\0`, the path as bytes.
        let mut info: Vec<u8> = Vec::new();
        for (name, (at_head, in_wip)) in &self.paths {
            let now = current.get(name);
            if now == in_wip.as_ref() {
                let entry = at_head
                    .clone()
                    .unwrap_or_else(|| format!("0 {}", self.null_oid));
                info.extend_from_slice(entry.as_bytes());
                info.push(b'\t');
                info.extend_from_slice(&name.0);
                info.push(0);
            } else if now != at_head.as_ref() && now.is_some() {
                return Ok(Filtered::Inseparable(name.clone()));
            }
        }
        if info.is_empty() {
            return Ok(Filtered::Tree(tree.to_string()));
        }
        let index = TempFile::new(&self.scratch, "index")?;
        let on_index = || self.git.at(self.source).env("GIT_INDEX_FILE", index.path());
        on_index().args(["read-tree", tree]).run()?;
        on_index()
            .args(["update-index", "-z", "--index-info"])
            .stdin(info)
            .run()?;
        Ok(Filtered::Tree(
            self.git.write_tree(self.source, index.path())?,
        ))
    }
}
