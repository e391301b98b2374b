//! `promote --mode branch`: the session's commits, kept on `a3s-iso/<id>`, are replayed onto
//! the source's branch with their messages, authors and dates; uncommitted leftovers become one
//! trailing commit. Carried WIP is filtered out: the user's uncommitted work is never committed.
//!
//! Planning writes nothing but objects; [`execute`] moves refs and the checkout after an intent
//! is recorded, so the next command completes or rolls back a crash, and the WIP never stays
//! only in a stash.

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::base::error::{Error, GitFailure, Result};
use crate::base::fsutil::{now_ms, unique_suffix};
use crate::base::ids::{CommitId, Digest};
use crate::base::paths::RepoPath;
use crate::base::warning::{LandWarning, PromoteWarning};
use crate::context::{Context, Located};
use crate::git::{CatFile, Git, GitOutput, Identity, Marked, Person, Untracked};
use crate::model::isolation::writable_isolation;
use crate::model::refs::SessionRefs;
use crate::model::snapshot::TempFile;
use crate::ops::promote::artifacts::Artifacts;
use crate::ops::promote::as_picked::{lands_as_picked, picks_do_more_here};
use crate::ops::promote::journal::landed_before;
use crate::ops::promote::options::{Candidate, PromoteOptions};
use crate::ops::promote::outcome::{
    BranchReport, Mode, Outcome, PromoteOutcome, Reason, ReplayedCommit, SkipReason, SkippedCommit,
};
use crate::ops::promote::patch::touched_paths;
use crate::recovery::intent::{self, BranchPlan, Changes, Intent};
use crate::store::state::{JournalEntry, Landing, SessionRecord, Step, Store};

/// A commit to replay: the commit object and its subject line.
struct Pick {
    /// The commit that lands (or is cherry-picked).
    commit: String,
    /// The session's commit it stands for, as the retained branch keeps it.
    session: String,
    subject: String,
    /// Made by this promote, by whom a pick commits: landed as it is, it reads as picked.
    fresh: bool,
}

/// Where the replay lands and who commits.
struct Target {
    /// The source's current branch (`refs/heads/…`).
    branch: String,
    /// Its tip before the replay.
    old_tip: CommitId,
    /// Who commits (a3s-iso when git has no identity of its own).
    ident: Identity,
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
pub(crate) fn promote_branch(
    ctx: &Context,
    located: &Located,
    session: SessionRecord,
    opts: &PromoteOptions,
    known: Option<crate::ops::promote::options::Known<'_>>,
) -> Result<PromoteOutcome> {
    let isolation = writable_isolation(&session)?;
    let _lock = crate::recovery::lock(ctx, &located.repo)?;
    let mut candidate = Candidate::of_session(ctx, located, session, known)?;
    let mut out = replay_root(ctx, located, &candidate, &isolation, opts)?;
    // Branch mode commits the nested change sets after the root replay.
    let nested = std::mem::take(&mut candidate.nested_found);
    out.warnings.extend(nested.warnings());
    let (Some(session), Some(snap)) = (&candidate.session, &candidate.snapshot) else {
        return Err(Error::internal("a branch promote without a session"));
    };
    let ident = ctx.git.identity(&session.source);
    let branch = crate::ops::promote::nested::BranchNested {
        session,
        snap,
        ident: &ident,
    };
    branch.commit_nested(ctx, located, nested, opts, &mut out)?;
    Ok(out)
}

/// Branch mode for the root change set: the session's commits since its last step, replayed.
fn replay_root(
    ctx: &Context,
    located: &Located,
    candidate: &Candidate,
    isolation: &crate::model::isolation::Isolation,
    opts: &PromoteOptions,
) -> Result<PromoteOutcome> {
    let mut out = PromoteOutcome::new(Outcome::Empty, Mode::Branch);
    out.warnings.extend(ctx.take_notices());
    out.session_id = candidate.session_id().map(str::to_string);
    out.bound_revision = candidate.session.as_ref().map(|s| s.bound_revision.clone());
    if stops_before_planning(&ctx.git, located, candidate, &mut out)? {
        return Ok(out);
    }
    let artifacts = Artifacts::write(located, opts, &candidate.patch, &mut out)?;
    if opts.no_apply {
        return Ok(out);
    }
    let session = candidate.branch_session()?;
    let scratch = located.store.scratch_dir();
    let changed = changed_since_last_step(ctx, candidate, session, &scratch)?;
    if !changed.is_empty() {
        out.conflict(
            Reason::PatchDoesNotApply,
            Some("the checkout no longer holds what the last step left at these paths, which this step changes".into()),
        );
        out.set_conflicting_paths(changed);
        artifacts.summarise(&out)?;
        return Ok(out);
    }
    let target = target(&ctx.git, &session.source)?;
    out.current_revision = Some(target.old_tip.clone());
    if opts
        .tested_on
        .as_ref()
        .is_some_and(|tested| *tested != target.old_tip)
    {
        out.conflict(Reason::HeadMoved, None);
        out.warnings.push(LandWarning::HeadMovedDuringTest.into());
        artifacts.summarise(&out)?;
        return Ok(out);
    }
    // The commits to replay are the ones HEAD named when the work was captured (or as the
    // caller knew it): an unusable HEAD is refused, never replaced by a guess.
    let isolation_head = match &candidate.isolation_head {
        Some(head) => head.clone(),
        None => isolation.head(&ctx.git)?,
    };
    let planned = plan_any(ctx, (located, candidate), &target, &isolation_head, opts)?;
    match planned {
        Planned::Chain(chain) => {
            let job = Job {
                located,
                candidate,
                session,
                target: &target,
            };
            let (in_the_way, retained_before) = in_the_way_and_retained(ctx, &job, &chain)?;
            if !in_the_way.is_empty() {
                out.conflict(Reason::PatchDoesNotApply, Some(IN_THE_WAY.into()));
                out.set_conflicting_paths(in_the_way);
                artifacts.summarise(&out)?;
                return Ok(out);
            }
            execute(ctx, &job, (&chain, retained_before), &mut out)?
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

/// What a branch promote of `candidate` onto `tested_on` plans, worked out ahead of it (a
/// landing does it while the session's test runs): the commits the plan makes and the paths
/// a fast-forward to them moves are asked of git once and kept in the command's memo, so the
/// promote, under its lock and with HEAD read there, asks nothing again when it plans the
/// same. Writes only objects; any failure is the promote's to meet and report.
pub(crate) fn plan_ahead(
    ctx: &Context,
    located: &Located,
    candidate: &Candidate,
    (opts, tested_on): (&PromoteOptions, &CommitId),
) -> Result<()> {
    let session = candidate.branch_session()?;
    let isolation_head = (candidate.isolation_head.as_ref())
        .ok_or_else(|| Error::internal("a known change set without its HEAD"))?;
    let target = Target {
        branch: String::new(),
        old_tip: tested_on.clone(),
        ident: ctx.git.identity(&session.source),
    };
    let Planned::Chain(chain) = plan_any(ctx, (located, candidate), &target, isolation_head, opts)?
    else {
        return Ok(());
    };
    let job = Job {
        located,
        candidate,
        session,
        target: &target,
    };
    if let Some(to) = fast_forward_to(&job, &chain) {
        ctx.git.paths_by_kind(&session.source, (tested_on, to))?;
    }
    Ok(())
}

/// Your files in the way of the chain (see [`yours_where_it_moves`] for a fast-forward), and,
/// read beside them, the commit the session's retained branch names before the chain moves it.
fn in_the_way_and_retained(
    ctx: &Context,
    job: &Job<'_>,
    chain: &[Pick],
) -> Result<(Vec<RepoPath>, Option<String>)> {
    let (git, source) = (&ctx.git, job.session.source.as_path());
    let ns = job.located.store.refs();
    let retained = format!(
        "refs/heads/{}^{{commit}}",
        ns.retained_branch(&job.session.session_id)
    );
    let (in_the_way, retained_before) = std::thread::scope(|scope| {
        let before = scope.spawn(|| git.rev_parse(source, &retained));
        let in_the_way = match fast_forward_to(job, chain) {
            Some(to) => yours_where_it_moves(git, source, (&job.target.old_tip, to)),
            None => job.your_files_in_the_way(git, chain),
        };
        let before = before
            .join()
            .unwrap_or_else(|_| Err(Error::internal("the read of the retained branch stopped")));
        (in_the_way, before)
    });
    Ok((in_the_way?, retained_before?))
}

/// The squash or the replay, as `opts` asks.
fn plan_any(
    ctx: &Context,
    (located, candidate): (&Located, &Candidate),
    target: &Target,
    isolation_head: &str,
    opts: &PromoteOptions,
) -> Result<Planned> {
    let planner = Planner {
        git: &ctx.git,
        candidate,
        target,
        isolation_head,
        scratch: &located.store.scratch_dir(),
    };
    if opts.squash {
        return planner.squash(opts.message.as_deref());
    }
    let session = candidate.branch_session()?;
    let message = match &opts.message {
        Some(message) => message.clone(),
        None => leftover_message(&located.store, session, &candidate.patch.digest)?,
    };
    planner.replay(&message)
}

/// Whether the promote stops before planning: empty, journaled, an interrupted promote
/// pending, or an earlier step landed in patch mode.
fn stops_before_planning(
    git: &Git,
    located: &Located,
    candidate: &Candidate,
    out: &mut PromoteOutcome,
) -> Result<bool> {
    candidate.report_step(out);
    if candidate.patch.bytes == 0 {
        candidate.replay_last_step(out);
        return Ok(true);
    }
    out.digest = Some(Digest::new(&candidate.patch.digest)?);
    if landed_before(&located.store, candidate)? {
        out.outcome = Outcome::Idempotent;
        return Ok(true);
    }
    if intent::load(&located.store, &candidate.patch.digest)?.is_some() {
        // Recovery under the lock could not finish it (see the warnings): never start over it.
        out.conflict(Reason::ReplayFailed, Some(PENDING.into()));
        return Ok(true);
    }
    if let Some(previous) = &candidate.previous
        && previous.mode == Mode::Patch
    {
        if let Some(session) = &candidate.session
            && crate::ops::promote::journal::committed_since(git, &session.source, &previous.step)?
        {
            // Not uncommitted any more: the user committed it, which moved HEAD.
            out.conflict(
                Reason::HeadMoved,
                Some(format!(
                    "step {} of this session landed in patch mode and you committed it: a3s-iso rebase -s {} moves the session onto your commit, and the next promote lands only what is new",
                    previous.step.number, session.session_id
                )),
            );
            return Ok(true);
        }
        out.conflict(
            Reason::ModeChanged,
            Some(format!(
                "step {} of this session landed in patch mode, as uncommitted changes; the session continues in patch mode",
                previous.step.number
            )),
        );
        return Ok(true);
    }
    Ok(false)
}

/// The paths this step changes where the user changed what the last step left since.
fn changed_since_last_step(
    ctx: &Context,
    candidate: &Candidate,
    session: &SessionRecord,
    scratch: &Path,
) -> Result<Vec<RepoPath>> {
    let Some(previous) = &candidate.previous else {
        return Ok(Vec::new());
    };
    let source = session.source.as_path();
    let touched = touched_paths(ctx, source, candidate.patch.file.path())?;
    let last = &previous.step.result_tree;
    crate::model::wip::changed_since(&ctx.git, source, (last, None), &touched, scratch)
}

/// What a branch promote lands and where.
struct Job<'a> {
    located: &'a Located,
    candidate: &'a Candidate,
    session: &'a SessionRecord,
    target: &'a Target,
}

impl Job<'_> {
    /// Where the session's chain ends: its last commit, else where it starts.
    fn tip<'a>(&'a self, chain: &'a [Pick]) -> &'a str {
        let start = chain_start(self.candidate, self.session);
        chain.last().map_or(start, |p| p.session.as_str())
    }

    /// The paths the chain changes where your checkout holds work of yours.
    fn your_files_in_the_way(&self, git: &Git, chain: &[Pick]) -> Result<Vec<RepoPath>> {
        let start = chain_start(self.candidate, self.session);
        your_files_in_the_way(git, &self.session.source, start, chain)
    }

    /// The step this promote lands, ending at `chain_tip`.
    fn step(&self, chain_tip: &str, head_after: Option<&str>) -> Result<Option<Step>> {
        let chain_tip = CommitId::new(chain_tip)?;
        let head_after = head_after.map(CommitId::new).transpose()?;
        Ok(self.candidate.step(head_after.as_ref()).map(|mut step| {
            step.chain_tip = Some(chain_tip);
            step
        }))
    }
}

/// The commit a step's chain is rebuilt on: the last step's chain tip, else the bound revision.
fn chain_start<'a>(candidate: &'a Candidate, session: &'a SessionRecord) -> &'a str {
    candidate
        .previous
        .as_ref()
        .and_then(|p| p.step.chain_tip.as_deref())
        .unwrap_or(&session.bound_revision)
}

/// The tree of the commit `commit`.
fn tree_of(git: &Git, source: &Path, commit: &str) -> Result<String> {
    git.rev_parse(source, &format!("{commit}^{{tree}}"))?
        .ok_or_else(|| Error::internal(format!("the commit {commit} has no tree here")))
}

/// The source's current branch and tip; a detached source has no branch to replay onto.
fn target(git: &Git, source: &Path) -> Result<Target> {
    // Two reads of HEAD, side by side: its branch and its commit.
    let (branch, tip) = std::thread::scope(|scope| {
        let tip = scope.spawn(|| git.rev_parse_required(source, "HEAD"));
        let branch = git.current_branch(source);
        let tip = tip
            .join()
            .unwrap_or_else(|_| Err(Error::internal("the read of HEAD stopped")));
        (branch, tip)
    });
    let Some(branch) = branch? else {
        return Err(Error::DetachedSource {
            source_path: source.to_path_buf(),
        });
    };
    Ok(Target {
        branch,
        old_tip: CommitId::new(tip?)?,
        ident: git.identity(source),
    })
}

/// What a branch plan is made from.
struct Planner<'a> {
    git: &'a Git,
    candidate: &'a Candidate,
    target: &'a Target,
    isolation_head: &'a str,
    scratch: &'a Path,
}

impl Planner<'_> {
    /// Plans the replay: the session's first-parent commits since its last step, rebuilt
    /// without the carried WIP on where that step's chain ended, plus one commit with
    /// `message` for uncommitted leftovers. Writes only objects.
    fn replay(&self, message: &str) -> Result<Planned> {
        let (git, candidate, isolation_head) = (self.git, self.candidate, self.isolation_head);
        let session = candidate.branch_session()?;
        let snapshot_tree = candidate.result_tree.as_deref().unwrap_or_default();
        let source = session.source.as_path();
        let wip = WipFilter::new(git, source, session, self.scratch)?;
        let since = candidate.commits_since(session);
        let originals = first_parent_chain(git, source, since, isolation_head)?;
        let raw = raw_commits(git, source, &originals)?;
        let mut filtered = Vec::with_capacity(originals.len());
        for original in &originals {
            match wip.filter(&original.tree)? {
                Filtered::Tree(tree) => filtered.push(tree),
                Filtered::Inseparable(path) => {
                    return Ok(Planned::Refused {
                        detail: format!(
                            "commit {} changes {path}, which carries your uncommitted work; promote it in patch mode",
                            original.commit
                        ),
                        commit: original.commit.clone(),
                    });
                }
            }
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
        let start = chain_start(candidate, session);
        let start_tree = tree_of(git, source, start)?;
        let replayer = self.replayer(source);
        let mut chain = ChainBuilder {
            replayer: &replayer,
            as_picked: start == self.target.old_tip.as_str()
                && lands_as_picked(&start_tree, &filtered, &raw)
                && (originals.is_empty() || !picks_do_more_here(git, source)?),
            start,
            parent: start.to_string(),
            chain: Vec::new(),
        };
        for ((original, raw), tree) in originals.iter().zip(&raw).zip(&filtered) {
            chain.push(original, raw, tree)?;
        }
        if leftovers != *filtered.last().unwrap_or(&start_tree) {
            chain.push_leftovers(message, &leftovers)?;
        }
        Ok(Planned::Chain(chain.chain))
    }

    /// Plans a squash: the session's result since its last step, carried WIP filtered out, as
    /// one commit on where that step ended. Writes only objects.
    fn squash(&self, message: Option<&str>) -> Result<Planned> {
        let (git, candidate, isolation_head) = (self.git, self.candidate, self.isolation_head);
        let session = candidate.branch_session()?;
        let source = session.source.as_path();
        let wip = WipFilter::new(git, source, session, self.scratch)?;
        let tree = match wip.filter(candidate.result_tree.as_deref().unwrap_or_default())? {
            Filtered::Tree(tree) => tree,
            Filtered::Inseparable(path) => {
                return Ok(Planned::Refused {
                    commit: isolation_head.to_string(),
                    detail: format!(
                        "changes to {path} sit on top of your uncommitted work; promote in patch mode"
                    ),
                });
            }
        };
        let parent = chain_start(candidate, session).to_string();
        if tree == tree_of(git, source, &parent)? {
            return Ok(Planned::Chain(Vec::new()));
        }
        let message = match message {
            Some(message) => message.to_string(),
            None => {
                let since = candidate.commits_since(session);
                let subjects: Vec<String> = first_parent_chain(git, source, since, isolation_head)?
                    .into_iter()
                    .map(|c| format!("- {}", c.subject))
                    .collect();
                let mut message = format!("a3s-iso: the work of session {}", session.session_id);
                if !subjects.is_empty() {
                    message.push_str(&format!("\n\n{}", subjects.join("\n")));
                }
                message
            }
        };
        let commit = self.replayer(source).commit_of(&message, &tree, &parent)?;
        Ok(Planned::Chain(vec![commit]))
    }

    fn replayer<'b>(&'b self, source: &'b Path) -> Replayer<'b> {
        Replayer {
            git: self.git,
            source,
            ident: &self.target.ident,
        }
    }
}

/// The default message of the leftovers' commit: the session, its runs and the digest, so that
/// `git log` tells where the commit came from.
fn leftover_message(store: &Store, session: &SessionRecord, digest: &str) -> Result<String> {
    let runs = match store.run_ids(&session.session_id)?.as_slice() {
        [] => "No run recorded.".to_string(),
        [one] => format!("Run: {one}"),
        many => format!("Runs: {}", many.join(", ")),
    };
    let id = &session.session_id;
    Ok(format!(
        "a3s-iso: uncommitted changes of session {id}\n\n{runs}\nChange set: {digest}\n"
    ))
}

/// Why a replay stops before it starts: work of the user's at paths it changes.
const IN_THE_WAY: &str = "your uncommitted, untracked or ignored files are at paths the session's commits change; setting them aside and back would merge them (or lose an ignored one): nothing was done";

/// The paths the chain changes (or adds on the way) where the checkout holds the user's work,
/// ignored files included: a replay would merge it back with conflict markers, or write over
/// an ignored file, which no stash keeps.
fn your_files_in_the_way(
    git: &Git,
    source: &Path,
    start: &str,
    chain: &[Pick],
) -> Result<Vec<RepoPath>> {
    let Some(last) = chain.last() else {
        return Ok(Vec::new());
    };
    let changed = |from: &str, to: &str, filter: &str| -> Result<Vec<Vec<u8>>> {
        let out = git.diff_trees_filtered(source, (from, to), filter)?;
        Ok(crate::git::split_nul(&out).map(<[u8]>::to_vec).collect())
    };
    let mut paths = changed(start, &last.commit, "ACDMRTUXB")?;
    let mut parent = start.to_string();
    for pick in chain {
        // What the chain's own pair adds is among the paths it changes, listed already.
        let whole = (parent.as_str(), pick.commit.as_str()) == (start, last.commit.as_str());
        let added = match whole {
            true => Vec::new(),
            false => changed(&parent, &pick.commit, "A")?,
        };
        for added in added {
            if !paths.contains(&added) {
                paths.push(added);
            }
        }
        parent = pick.commit.clone();
    }
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let status = git.status_of(
        source,
        Untracked::AndIgnored,
        paths.iter().map(|p| std::ffi::OsStr::from_bytes(p)),
    )?;
    Ok(crate::ops::promote::patch::status_paths(&status))
}

/// The paths a fast-forward from `from` to `to` would move where your checkout is not as
/// `from` has it in a way git's two-way `read-tree` lets pass: a file or directory of yours
/// (untracked, or ignored: git writes over those) where it adds one, or a file where it needs
/// a directory; a file it changes or deletes that you deleted, or that sits under a directory
/// you replaced with a link or a file (git would put it back). Files sparse checkout keeps out
/// of the tree (`skip-worktree`) are absent by design. git itself refuses, before it writes,
/// every other file of yours in its way (changed, staged, untracked).
fn yours_where_it_moves(
    git: &Git,
    source: &Path,
    (from, to): (&str, &str),
) -> Result<Vec<RepoPath>> {
    let crate::git::PathsByKind {
        added,
        deleted,
        changed,
    } = git.paths_by_kind(source, (from, to))?;
    let on_disk =
        |path: &[u8]| std::fs::symlink_metadata(source.join(std::ffi::OsStr::from_bytes(path)));
    let not_a_dir = |dir: &[u8]| on_disk(dir).is_ok_and(|meta| !meta.is_dir());
    // A directory it needs where the old tree has a file: that file is tracked, and git's.
    let gone: std::collections::HashSet<&[u8]> = deleted.iter().map(Vec::as_slice).collect();
    // Where it adds a file in place of a directory, that directory may hold only the files
    // the move deletes (git writes over an ignored one).
    let in_the_way = |path: &[u8]| match on_disk(path) {
        Ok(meta) if meta.is_dir() => !only_files_it_deletes(source, path, &gone),
        Ok(_) => true,
        Err(_) => false,
    };
    let mut taken: Vec<RepoPath> = added
        .iter()
        .filter(|path| {
            in_the_way(path) || dirs_above(path).any(|d| !gone.contains(d) && not_a_dir(d))
        })
        .map(|path| RepoPath(path.clone()))
        .collect();
    let mut missing = Vec::new();
    for path in deleted.iter().chain(&changed) {
        if dirs_above(path).any(not_a_dir) {
            taken.push(RepoPath(path.clone()));
        } else if on_disk(path).is_err() {
            missing.push(path.as_slice());
        }
    }
    taken.extend(deleted_by_you(git, source, &missing)?);
    Ok(taken)
}

/// Whether the directory at `dir` (a path of the checkout) holds, all the way down, only
/// files among `gone`; one that cannot be read holds something else.
fn only_files_it_deletes(
    source: &Path,
    dir: &[u8],
    gone: &std::collections::HashSet<&[u8]>,
) -> bool {
    let Ok(entries) = std::fs::read_dir(source.join(std::ffi::OsStr::from_bytes(dir))) else {
        return false;
    };
    entries.into_iter().all(|entry| {
        let Ok(entry) = entry else {
            return false;
        };
        let mut path = dir.to_vec();
        path.push(b'/');
        path.extend_from_slice(entry.file_name().as_bytes());
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => only_files_it_deletes(source, &path, gone),
            Ok(_) => gone.contains(path.as_slice()),
            Err(_) => false,
        }
    })
}

/// The directories above `path`, outermost first.
fn dirs_above(path: &[u8]) -> impl Iterator<Item = &[u8]> {
    let slashes = path.iter().enumerate().filter(|(_, byte)| **byte == b'/');
    slashes.map(move |(at, _)| &path[..at])
}

/// Among `missing` (tracked paths not on the disk), those you deleted: all but the ones sparse
/// checkout keeps out of the tree (`skip-worktree`).
fn deleted_by_you(git: &Git, source: &Path, missing: &[&[u8]]) -> Result<Vec<RepoPath>> {
    if missing.is_empty() {
        return Ok(Vec::new());
    }
    let paths = missing.iter().map(|p| std::ffi::OsStr::from_bytes(p));
    let tagged = git.tagged_entries_of(source, paths)?;
    let sparse: std::collections::HashSet<&[u8]> = crate::git::split_nul(&tagged)
        .filter_map(|entry| entry.strip_prefix(b"S "))
        .collect();
    Ok(missing
        .iter()
        .filter(|path| !sparse.contains(**path))
        .map(|path| RepoPath(path.to_vec()))
        .collect())
}

/// The branch promote's intent, rewritten (fsynced) before the WIP is stashed, once the stash
/// exists, after every replayed commit, and when the replay finished.
struct Recorder<'a> {
    store: &'a Store,
    intent: Intent,
    plan: BranchPlan,
}

impl<'a> Recorder<'a> {
    /// Writes the intent before anything in the checkout changes.
    fn begin(
        job: &Job<'a>,
        chain: &[Pick],
        had_wip: bool,
        fast_forward: Option<&str>,
    ) -> Result<Recorder<'a>> {
        let patch = &job.candidate.patch;
        let tip = job.tip(chain);
        let plan = BranchPlan {
            branch: job.target.branch.clone(),
            old_tip: job.target.old_tip.to_string(),
            retained_tip: tip.to_string(),
            had_wip,
            token: format!("{}-{}", intent::tag(&patch.digest), unique_suffix()),
            stash: None,
            chain: chain.iter().map(|p| p.commit.clone()).collect(),
            // A fast-forward lands the chain's commits as they are.
            processed: fast_forward.map_or(0, |_| chain.len()),
            replayed: match fast_forward {
                Some(_) => chain.iter().map(|p| p.commit.clone()).collect(),
                None => Vec::new(),
            },
            done: None,
            fast_forward: fast_forward.map(str::to_string),
            fast_forward_refused: false,
        };
        let recorder = Recorder {
            store: &job.located.store,
            intent: Intent {
                schema: intent::SCHEMA.into(),
                digest: Digest::new(&patch.digest)?,
                session_id: Some(job.session.session_id.to_string()),
                mode: Mode::Branch,
                source: job.session.source.clone(),
                source_head: Some(job.target.old_tip.clone()),
                patch_bytes: patch.bytes,
                created_at_ms: now_ms(),
                pid: std::process::id(),
                changes: Changes::Branch(plan.clone()),
                // Recovery fills in where HEAD ends up.
                step: job.step(tip, None)?,
                reapply_of: None,
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

/// Keeps the chain, records the intent, moves the checkout (a fast-forward that leaves the WIP
/// in place, else a replay with the WIP set aside and restored) and journals. Nothing may stop
/// halfway: interrupts wait, git runs where a Ctrl-C cannot reach it, and the next command
/// finishes (or rolls back) a crash from the intent.
fn execute(
    ctx: &Context,
    job: &Job<'_>,
    (chain, retained_before): (&[Pick], Option<String>),
    out: &mut PromoteOutcome,
) -> Result<()> {
    let git = &ctx.git;
    let source = job.session.source.as_path();
    let id = &job.session.session_id;
    let tip = job.tip(chain);
    let ns = job.located.store.refs();
    let refs = SessionRefs {
        git,
        dir: source,
        ns: &ns,
        session_id: id,
    };
    let fast = fast_forward_to(job, chain);
    let (kept, had_wip) = keep_chain_reading_wip(&refs, tip, fast.is_none(), out)?;
    let mut report = BranchReport::new(&job.target.branch, kept.then(|| ns.retained_branch(id)));
    // Read only for a replay: a fast-forward leaves the WIP where it is.
    let had_wip = had_wip.unwrap_or(false);
    let mut recorder = Recorder::begin(job, chain, had_wip, fast)?;
    crate::fault_point!("promote-branch-after-intent");
    let interrupts = crate::base::signals::Signals::register()?;
    let (failure, done, stash) = match fast {
        Some(to) => match fast_forward(git, job, (chain, to), &mut recorder, &mut report)? {
            FastForward::Done => (None, Some(to.to_string()), None),
            FastForward::Failed(detail) => {
                (Some(Stopped::Replay(tip.to_string(), detail)), None, None)
            }
            FastForward::InTheWay(paths) => (Some(Stopped::InTheWay(paths)), None, None),
        },
        None => {
            let aside = WipAside { had_wip, out };
            replay_with_wip_aside(git, job, chain, aside, (&mut recorder, &mut report))?
        }
    };
    crate::fault_point!("promote-branch-after-restore");
    let step = job.step(tip, done.as_deref())?;
    if failure.is_some() && kept {
        // The replay was undone: so is its retained branch (back to an earlier step's).
        refs.reset_retained_branch(retained_before.as_deref())?;
        report.retained_branch = retained_before.as_ref().map(|_| ns.retained_branch(id));
    }
    conclude(job, step, failure, &mut report, out)?;
    recorder.end()?;
    if out.outcome == Outcome::Applied && interrupts.received().is_some() {
        out.warnings
            .push(PromoteWarning::InterruptedDuringReplay.into());
    }
    // Nothing since `done` was read wrote the checkout, unless a stash was restored.
    let head_now = done.filter(|_| stash.is_none());
    let head_now = head_now.map_or_else(|| git.rev_parse_required(source, "HEAD"), Ok)?;
    out.current_revision = Some(CommitId::new(head_now)?);
    if out.outcome == Outcome::Applied {
        out.replayed_head = out.current_revision.clone();
    }
    // Refused before anything moved, as when the paths were looked for first.
    out.branch = (out.reason != Some(Reason::PatchDoesNotApply)).then_some(report);
    Ok(())
}

/// Why a promote's move stopped, with nothing of it left in the checkout (but what a commit of
/// yours took along, when one came on top of the branch meanwhile).
enum Stopped {
    /// A commit could not be replayed (or the branch moved under a fast-forward): which, and
    /// what git said.
    Replay(String, String),
    /// Files of yours are at paths the chain changes.
    InTheWay(Vec<RepoPath>),
}

impl Stopped {
    /// Says that `branch` moved under the replay, which was then not undone.
    fn branch_moved(&mut self, branch: &str, replayed: usize) {
        if let Stopped::Replay(_, detail) = self {
            *detail = format!(
                "{branch} moved while the session's commits were replayed onto it (a commit of yours came on top): nothing was reset, and the {replayed} commit(s) replayed before it stay under yours"
            );
        }
    }
}

/// The commit the chain lands as a fast-forward to: its tip, when it starts at the branch's
/// tip and this promote made every commit of it (as a pick would have made them).
fn fast_forward_to<'a>(job: &Job<'_>, chain: &'a [Pick]) -> Option<&'a str> {
    let on_tip = chain_start(job.candidate, job.session) == job.target.old_tip.as_str();
    let last = chain.last()?;
    (on_tip && chain.iter().all(|pick| pick.fresh)).then_some(last.commit.as_str())
}

/// How a fast-forward ended. Whatever stops it leaves the checkout as it was: it never falls
/// back on the replay, whose rollback resets the branch.
enum FastForward {
    /// The index, the files and the branch are at the chain's tip.
    Done,
    /// git refused to move the files, or the branch moved while they did (they were moved
    /// back): nothing changed. Why, for the report.
    Failed(String),
    /// git refused because files of yours are at paths it changes: nothing changed.
    InTheWay(Vec<RepoPath>),
}

/// Moves the index and files to `to` (two-way: the user's work elsewhere stays as it is), then
/// the branch, recording every commit of the chain as replayed.
fn fast_forward(
    git: &Git,
    job: &Job<'_>,
    (chain, to): (&[Pick], &str),
    recorder: &mut Recorder<'_>,
    report: &mut BranchReport,
) -> Result<FastForward> {
    let source = job.session.source.as_path();
    let (branch, old) = (&job.target.branch, job.target.old_tip.as_str());
    let marked = git.marked(source, recorder.token());
    let mut moved = marked.read_tree_two_way(old, to)?;
    killed_midway(&moved, (old, to))?;
    if moved.exit_code != Some(0) {
        // A stale record of a file it changes (the same bytes, another time) is refused as
        // a change: refreshed, the move is tried once more.
        let _ = marked.refresh_index();
        moved = marked.read_tree_two_way(old, to)?;
        killed_midway(&moved, (old, to))?;
    }
    if moved.exit_code != Some(0) {
        // Said before the paths are looked for: a kill then leaves no doubt that git wrote
        // nothing, whatever lock another git holds when the next command looks.
        recorder.record(|plan| plan.fast_forward_refused = true)?;
        crate::fault_point!("promote-branch-after-refusal");
        let in_the_way = job.your_files_in_the_way(git, chain)?;
        if !in_the_way.is_empty() {
            return Ok(FastForward::InTheWay(in_the_way));
        }
        return Ok(FastForward::Failed(format!(
            "the fast-forward stopped before it changed anything (your branch, index and work are as before): {}",
            git_said(&moved.stderr, "git read-tree failed")
        )));
    }
    crate::fault_point!("promote-branch-after-checkout");
    let message = format!("a3s-iso: promote {} (fast-forward)", job.session.session_id);
    if let Some(stopped) = branch_moved_or_back(git, &marked, (branch, old, to), &message)? {
        return Ok(stopped);
    }
    recorder.record(|plan| plan.done = Some(to.to_string()))?;
    report.replayed = chain
        .iter()
        .map(|pick| ReplayedCommit {
            commit: pick.session.clone(),
            replayed: pick.commit.clone(),
            subject: pick.subject.clone(),
        })
        .collect();
    Ok(FastForward::Done)
}

/// Moves `branch` from `old` to `to` once the checkout moved there: `None` when the branch
/// holds `to` (a git that died after it moved the branch moved it all the same, and a commit
/// of yours may be on top since), else why not: the checkout moved back, or left as it is when
/// a commit of yours on the branch holds anything but the old tip's at the paths it changes.
fn branch_moved_or_back(
    git: &Git,
    marked: &Marked<'_>,
    (branch, old, to): (&str, &str, &str),
    message: &str,
) -> Result<Option<FastForward>> {
    let Err(err) = marked.move_branch(branch, message, to, old) else {
        return Ok(None);
    };
    let source = marked.dir();
    let now = git.rev_parse(source, branch)?;
    let Some(now) = now.filter(|now| now != old) else {
        let why = format!("git did not move {branch} to the session's commit ({err})");
        return moved_back(marked, (old, to), why).map(Some);
    };
    // Moved by git before it failed, and maybe a commit of yours on top since: it is there.
    if now == to || git.is_ancestor(source, to, &now)? {
        return Ok(None);
    }
    let why = format!("{branch} moved to {now} while your checkout moved to the session's commit");
    let moved: Vec<Vec<u8>> = git.diff_trees(source, old, to)?;
    if !git.tree_paths_match(source, &now, old, &moved)? {
        // A commit of yours took some of the session's changes along (or holds others
        // there): moving back would stage their revert under it.
        return Ok(Some(FastForward::Failed(format!(
            "{why}, and that commit holds changes at paths the session changes: your checkout is left as it is"
        ))));
    }
    moved_back(marked, (old, to), why).map(Some)
}

/// Moves the checkout back from `to` to `old` after the branch stayed put (`why`); a move
/// back git refuses fails, the intent kept.
fn moved_back(marked: &Marked<'_>, (old, to): (&str, &str), why: String) -> Result<FastForward> {
    let back = marked.read_tree_two_way(to, old)?;
    if back.exit_code != Some(0) {
        // The intent stays: the next command moves the branch, or leaves it all as it is.
        return Err(Error::GitStoppedMidway {
            message: format!(
                "{why}, and the checkout could not be moved back ({}); the next a3s-iso command finishes or leaves it, and says which",
                git_said(&back.stderr, "git read-tree failed")
            ),
            failure: read_tree_failure(&back, (to, old)),
        });
    }
    Ok(FastForward::Failed(format!(
        "{why}; the checkout was moved back (your work is as before)"
    )))
}

/// Fails when a signal killed the move's git midway: some files may be written and the index
/// not, which the intent, kept, lets the next command put back.
fn killed_midway(moved: &GitOutput, (from, to): (&str, &str)) -> Result<()> {
    match moved.exit_code {
        Some(_) => Ok(()),
        None => Err(Error::GitStoppedMidway {
            message: "git read-tree was killed while it moved your checkout; the next a3s-iso command puts back the files it wrote".into(),
            failure: read_tree_failure(moved, (from, to)),
        }),
    }
}

/// The two-way `read-tree` from `from` to `to` that ended as `out`, for the error's `git`.
fn read_tree_failure(out: &GitOutput, (from, to): (&str, &str)) -> GitFailure {
    GitFailure {
        args: ["read-tree", "-m", "-u", from, to]
            .map(String::from)
            .to_vec(),
        exit_code: out.exit_code,
        stderr: out.stderr.clone(),
    }
}

/// Whether the source held work to set aside (as the intent records it), and the outcome the
/// restore reports to.
struct WipAside<'o> {
    had_wip: bool,
    out: &'o mut PromoteOutcome,
}

/// The replay by cherry-pick: the WIP stashed first and restored after, the branch reset to
/// its old tip when a pick fails. What failed, the tip it left, and the stash.
type Replayed = (Option<Stopped>, Option<String>, Option<String>);

fn replay_with_wip_aside(
    git: &Git,
    job: &Job<'_>,
    chain: &[Pick],
    aside: WipAside<'_>,
    (recorder, report): (&mut Recorder<'_>, &mut BranchReport),
) -> Result<Replayed> {
    let source = job.session.source.as_path();
    let target = job.target;
    let stash = match aside.had_wip {
        true => intent::stash_push(
            git,
            source,
            &target.ident,
            recorder.token(),
            &job.session.session_id,
        )?,
        false => None,
    };
    recorder.record(|plan| plan.stash = stash.clone())?;
    let replayer = Replayer {
        git,
        source,
        ident: &target.ident,
    };
    let Replay { failure, head } = replayer.replay(chain, recorder, report)?;
    let mut failure = failure.map(|(commit, detail)| Stopped::Replay(commit, detail));
    let marked = || git.marked(source, recorder.token());
    let done = match &mut failure {
        Some(stopped) => {
            // Abort the whole replay: the branch goes back to where it was, unless a commit
            // of yours came on top meanwhile; then nothing is reset.
            let _ = marked().cherry_pick_abort();
            let tip = git.rev_parse(source, &target.branch)?;
            let ours = |tip: &str| {
                tip == target.old_tip.as_str() || report.replayed.iter().any(|r| r.replayed == tip)
            };
            match tip.as_deref().is_some_and(ours) {
                true => (marked().reset_hard(&target.old_tip))
                    .map_err(|err| undo_not_done(err, stash.as_deref()))?,
                false => stopped.branch_moved(&target.branch, report.replayed.len()),
            }
            None
        }
        None => {
            let done = head.map_or_else(|| git.rev_parse_required(source, "HEAD"), Ok)?;
            recorder.record(|plan| plan.done = Some(done.clone()))?;
            Some(done)
        }
    };
    if let Some(stash) = &stash {
        put_back_wip(git, (source, recorder.token()), stash, report, aside.out);
    }
    Ok((failure, done, stash))
}

/// The error of a replay whose undo (`reset --hard`) git refused: it says where your WIP is
/// meanwhile, which the next command's recovery finishes the undo and puts back.
fn undo_not_done(err: Error, stash: Option<&str>) -> Error {
    let Error::GitFailed { failure } = err else {
        return err;
    };
    let wip = stash.map_or_else(
        || "your uncommitted work is in its files".to_string(),
        |stash| format!("your uncommitted work is kept in stash {stash}"),
    );
    Error::GitStoppedMidway {
        message: format!(
            "the replay could not be undone ({}): {wip}, and the next a3s-iso command finishes the undo and puts it back",
            failure
                .stderr
                .lines()
                .next()
                .unwrap_or("git reset failed")
                .trim()
        ),
        failure,
    }
}

/// Puts your uncommitted work back; a stash that does not apply stays, with a warning.
fn put_back_wip(
    git: &Git,
    (source, token): (&Path, &str),
    stash: &str,
    report: &mut BranchReport,
    out: &mut PromoteOutcome,
) {
    if !intent::restore_stash(git, source, token, stash) {
        let stash = stash.to_string();
        report.kept_stash = Some(stash.clone());
        out.warnings
            .push(PromoteWarning::StashKept { stash }.into());
    }
}

/// Whether the retained branch now points at `tip` ([`keep_chain`]), and, when `wip` asks, whether your checkout holds work to set aside: read while the branch
/// moves (a ref and your checkout: neither touches the other), so that read ends no earlier
/// before the replay than it did after the branch moved.
fn keep_chain_reading_wip(
    refs: &SessionRefs<'_>,
    tip: &str,
    wip: bool,
    out: &mut PromoteOutcome,
) -> Result<(bool, Option<bool>)> {
    let (git, source) = (refs.git, refs.dir);
    let (kept, had_wip) = std::thread::scope(|scope| {
        let read = wip.then(|| scope.spawn(|| intent::has_wip(git, source)));
        let kept = keep_chain(refs, tip, out);
        let had_wip = read.map(|read| {
            read.join()
                .unwrap_or_else(|_| Err(Error::internal("the read of your work stopped")))
        });
        (kept, had_wip)
    });
    Ok((kept, had_wip.transpose()?))
}

/// Points the retained branch at `tip`: a convenience, so a branch in its way only warns.
fn keep_chain(refs: &SessionRefs<'_>, tip: &str, out: &mut PromoteOutcome) -> bool {
    match refs.set_retained_branch(tip) {
        Ok(()) => true,
        Err(err) => {
            let branch = refs.ns.retained_branch(refs.session_id);
            let why = err.to_string();
            out.warnings
                .push(PromoteWarning::RetainedBranchNotMade { branch, why }.into());
            false
        }
    }
}

/// The outcome of a replay: a conflict naming the commit, or journaled and `applied`.
fn conclude(
    job: &Job<'_>,
    step: Option<Step>,
    failure: Option<Stopped>,
    report: &mut BranchReport,
    out: &mut PromoteOutcome,
) -> Result<()> {
    match failure {
        Some(Stopped::Replay(commit, detail)) => {
            out.conflict(Reason::ReplayFailed, Some(detail));
            report.failed_commit = Some(commit);
            report.replayed.clear();
        }
        Some(Stopped::InTheWay(paths)) => {
            out.conflict(Reason::PatchDoesNotApply, Some(IN_THE_WAY.into()));
            out.set_conflicting_paths(paths);
        }
        None => {
            let patch = &job.candidate.patch;
            job.located.store.record_promoted(&JournalEntry {
                digest: Digest::new(&patch.digest)?,
                session_id: Some(job.session.session_id.as_str().to_string()),
                promoted_at_ms: now_ms(),
                source_head: Some(job.target.old_tip.clone()),
                patch_bytes: patch.bytes,
                how: Landing::Applied,
                mode: Mode::Branch,
                step,
                earlier_landings: Vec::new(),
            })?;
            out.outcome = Outcome::Applied;
        }
    }
    Ok(())
}

/// How a replay ended.
struct Replay {
    /// The commit that failed and why, if one did.
    failure: Option<(String, String)>,
    /// HEAD as read right after the last pick, when that pick made a commit.
    head: Option<String>,
}

/// Who writes the replayed commits, and where.
struct Replayer<'a> {
    git: &'a Git,
    source: &'a Path,
    ident: &'a Identity,
}

impl Replayer<'_> {
    /// Cherry-picks the chain onto the branch, recording each commit in the intent and
    /// skipping one whose change is already there.
    fn replay(
        &self,
        chain: &[Pick],
        recorder: &mut Recorder<'_>,
        report: &mut BranchReport,
    ) -> Result<Replay> {
        let (git, source) = (self.git, self.source);
        let failed = |commit: &str, detail: String| Replay {
            failure: Some((commit.to_string(), detail)),
            head: None,
        };
        let mut head = None;
        for pick in chain {
            head = None;
            let result = git
                .marked(source, recorder.token())
                .cherry_pick(self.ident, &pick.commit);
            let Ok(result) = result else {
                return Ok(failed(&pick.commit, "git cherry-pick could not run".into()));
            };
            if result.exit_code == Some(0) {
                let replayed = git.rev_parse_required(source, "HEAD")?;
                head = Some(replayed.clone());
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
                return Ok(failed(&pick.commit, undone_detail(&result.stderr)));
            }
        }
        Ok(Replay {
            failure: None,
            head,
        })
    }

    /// One commit of `tree` on `parent` with `message` (its first line is the subject).
    fn commit_of(&self, message: &str, tree: &str, parent: &str) -> Result<Pick> {
        let subject = message.lines().next().unwrap_or_default().to_string();
        let commit = self.git.commit_tree(
            self.source,
            self.ident,
            &[],
            (tree, parent),
            format!("{}\n", message.trim_end()),
        )?;
        Ok(Pick {
            subject,
            session: commit.clone(),
            commit,
            fresh: true,
        })
    }

    /// A copy of a raw commit with another tree and parent, keeping message, author, committer.
    fn recommit(&self, raw: &[u8], tree: &str, parent: &str) -> Result<String> {
        self.copy_of(raw, (tree, parent), &["AUTHOR", "COMMITTER"])
    }

    /// The commit a cherry-pick of the raw commit would make with `tree` on `parent`: its
    /// message and author kept, you committing now.
    fn recommit_as_picked(&self, raw: &[u8], tree: &str, parent: &str) -> Result<String> {
        self.copy_of(raw, (tree, parent), &["AUTHOR"])
    }

    /// A commit of `tree` on `parent` with the raw commit's message and its people of `roles`.
    fn copy_of(&self, raw: &[u8], (tree, parent): (&str, &str), roles: &[&str]) -> Result<String> {
        let text = String::from_utf8_lossy(raw);
        let (headers, message) = text.split_once("\n\n").unwrap_or((&text, ""));
        let mut people = Vec::new();
        for line in headers.lines() {
            for (prefix, role) in [("author ", "AUTHOR"), ("committer ", "COMMITTER")] {
                if let Some(rest) = line.strip_prefix(prefix)
                    && roles.contains(&role)
                    && let Some((name, rest)) = rest.split_once(" <")
                    && let Some((email, date)) = rest.split_once("> ")
                {
                    people.push(Person {
                        role,
                        name,
                        email,
                        date,
                    });
                }
            }
        }
        self.git.commit_tree(
            self.source,
            self.ident,
            &people,
            (tree, parent),
            message.to_string(),
        )
    }
}

/// What a failed cherry-pick said, without git's advice on a cherry-pick in progress (there is
/// none: a3s-iso undid it).
fn undone_detail(stderr: &str) -> String {
    format!(
        "the replay stopped and was undone (your branch, index and work are as before): {}",
        git_said(stderr, "git cherry-pick failed")
    )
}

/// What git said on `stderr`, one line after another, without its hints and its advice on an
/// operation in progress; `otherwise` when that is nothing.
fn git_said(stderr: &str, otherwise: &str) -> String {
    let said: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("hint:"))
        .filter(|line| {
            !["--continue", "--abort", "--skip", "--quit"]
                .iter()
                .any(|advice| line.contains(advice))
        })
        .collect();
    match said.is_empty() {
        true => otherwise.to_string(),
        false => said.join("; "),
    }
}

/// The chain as it is built: the session's commits rebuilt on where its last step ended and,
/// when that is your branch's tip, the very commits a cherry-pick of each would make there
/// (author and message kept, you as committer), which then land as a fast-forward.
struct ChainBuilder<'r> {
    replayer: &'r Replayer<'r>,
    as_picked: bool,
    /// Where the chain starts.
    start: &'r str,
    /// The rebuilt chain's tip so far.
    parent: String,
    chain: Vec<Pick>,
}

impl ChainBuilder<'_> {
    /// Where the next commit to land goes: the last one that lands, else the start.
    fn landing_parent(&self) -> String {
        self.chain
            .last()
            .map_or_else(|| self.start.to_string(), |pick| pick.commit.clone())
    }

    /// Adds the session's commit `original` (`raw`), its tree filtered to `tree`.
    fn push(&mut self, original: &Original, raw: &[u8], tree: &str) -> Result<()> {
        let rebuilt =
            if tree == original.tree && self.parent == original.first_parent && !original.merge {
                original.commit.clone()
            } else {
                self.replayer.recommit(raw, tree, &self.parent)?
            };
        let commit = match self.as_picked {
            true => (self.replayer).recommit_as_picked(raw, tree, &self.landing_parent())?,
            false => rebuilt.clone(),
        };
        self.chain.push(Pick {
            subject: original.subject.clone(),
            commit,
            session: rebuilt.clone(),
            fresh: self.as_picked,
        });
        self.parent = rebuilt;
        Ok(())
    }

    /// Adds the commit of the uncommitted leftovers' tree `tree`, with `message`.
    fn push_leftovers(&mut self, message: &str, tree: &str) -> Result<()> {
        let mut pick = self.replayer.commit_of(message, tree, &self.parent)?;
        let landing_parent = self.landing_parent();
        if self.as_picked && landing_parent != self.parent {
            pick.commit = (self.replayer.commit_of(message, tree, &landing_parent)?).commit;
        }
        self.chain.push(pick);
        Ok(())
    }
}

/// After a failed pick: skips it when its change is already on the branch.
fn skip_if_empty(git: &Git, source: &Path, token: &str) -> bool {
    let unmerged = git.unmerged(source).unwrap_or_default();
    let nothing_staged = git.nothing_staged(source).unwrap_or(false);
    unmerged.is_empty() && nothing_staged && git.marked(source, token).cherry_pick_skip().is_ok()
}

/// A commit of the session's chain, as one `git log` lists it.
struct Original {
    commit: String,
    tree: String,
    first_parent: String,
    /// It has more than one parent: replayed as one commit of its tree on the chain, as
    /// `rebase` replays a merge (a cherry-pick of it would need a parent to diff against).
    merge: bool,
    subject: String,
}

/// The first-parent commits from `bound` (excluded) to `head`, oldest first, in one process.
fn first_parent_chain(git: &Git, source: &Path, bound: &str, head: &str) -> Result<Vec<Original>> {
    // `X..X` is empty: no git needed.
    if bound == head {
        return Ok(Vec::new());
    }
    let out = git.first_parent_log(source, &format!("{bound}..{head}"))?;
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
                merge: ids.next().is_some(),
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

/// A tree with the carried WIP taken out, or the path where that is impossible.
enum Filtered {
    Tree(String),
    Inseparable(RepoPath),
}

/// Takes the carried WIP back out of trees: a path still holding the WIP goes back to HEAD's
/// version; one the agent changed further cannot be separated and is refused.
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
        let on_index = self.git.on_index(self.source, index.path());
        on_index.read_tree(tree)?;
        on_index.index_info(info)?;
        Ok(Filtered::Tree(
            self.git.write_tree(self.source, index.path())?,
        ))
    }
}
