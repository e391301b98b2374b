//! Finishing what a crashed promote started, under the repository lock. Each decision is
//! planned from what the intent recorded and what the checkout holds now (blob ids, branch
//! tips, the stash list), then acted on; a state neither before nor after is never guessed at.

use std::path::Path;
use std::time::Duration;

use crate::base::error::Result;
use crate::base::fsutil::now_ms;
use crate::base::warning::{RecoveryWarning as W, Warning, YourWork};
use crate::git::Git;
use crate::recovery::intent::checkout::{Checkout, PathState, Side};
use crate::recovery::intent::orphans;
use crate::recovery::intent::record::{self, BranchPlan, Changes, Intent, PatchPlan, RepoPath};
use crate::recovery::intent::stash;
use crate::store::lock::RepoLock;
use crate::store::state::{JournalEntry, Landing, Store};

/// How long recovery waits for a git that a crashed branch promote left running.
const ORPHAN_PATIENCE: Duration = Duration::from_secs(30);

/// Where a patch promote stopped, decided from the recorded blob ids alone.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PatchVerdict {
    /// Every path holds its post-image.
    Landed,
    /// Every path holds its pre-image: nothing landed.
    Untouched,
    /// Some paths hold their post-image, the rest (numbered here) their pre-image.
    Halfway(Vec<usize>),
    /// Paths that hold neither: changed by someone since.
    Changed(Vec<RepoPath>),
}

/// Plans: compares each path's state with its recorded pre- and post-image.
pub(crate) fn classify(
    checkout: &Checkout<'_>,
    plan: &PatchPlan,
    states: &[PathState],
) -> PatchVerdict {
    // A submodule's state is the superproject's index entry (its commit), moved together with
    // its checkout when written: it counts like any other path.
    let (mut landed, mut pending, mut changed) = (0, Vec::new(), Vec::new());
    for (i, (change, state)) in plan.paths.iter().zip(states).enumerate() {
        if checkout.holds(state, change.post.as_ref()) {
            landed += 1;
        } else if checkout.holds(state, change.pre.as_ref()) {
            pending.push(i);
        } else {
            changed.push(change.path.clone());
        }
    }
    if !changed.is_empty() {
        PatchVerdict::Changed(changed)
    } else if pending.is_empty() {
        PatchVerdict::Landed
    } else if landed == 0 {
        PatchVerdict::Untouched
    } else {
        PatchVerdict::Halfway(pending)
    }
}

/// Completes (or rolls back) every unfinished intent; returns what to tell the user.
pub(crate) fn recover(_held: &RepoLock, git: &Git, store: &Store) -> Vec<Warning> {
    let mut notices = Vec::new();
    for found in record::pending(store) {
        match found {
            Err(e) => notices.push(W::UnreadablePromoteIntent { why: e.to_string() }.into()),
            Ok(intent) => match recover_one(git, store, &intent) {
                Ok(Some(notice)) => notices.push(notice.into()),
                Ok(None) => {}
                Err(e) => notices.push(
                    W::PromoteNotFinishedNow {
                        digest: intent.digest.to_string(),
                        why: e.to_string(),
                    }
                    .into(),
                ),
            },
        }
    }
    notices
}

fn recover_one(git: &Git, store: &Store, intent: &Intent) -> Result<Option<W>> {
    if !intent.source.is_dir() {
        return Ok(Some(W::PromoteCheckoutMissing {
            digest: intent.digest.to_string(),
            checkout: intent.source.clone(),
        }));
    }
    match &intent.changes {
        Changes::Patch(plan) => recover_patch(git, store, intent, plan),
        Changes::Branch(plan) => recover_branch(git, store, intent, plan),
    }
}

fn paths_of(plan: &PatchPlan) -> Vec<RepoPath> {
    plan.paths.iter().map(|c| c.path.clone()).collect()
}

/// Completes a patch promote from its recorded images: journaled already → only the intent is
/// left; all post → journal; all pre → nothing landed; some of each → the rest is written;
/// anything else → kept, and promote of the digest reports a conflict.
fn recover_patch(git: &Git, store: &Store, intent: &Intent, plan: &PatchPlan) -> Result<Option<W>> {
    if intent.journaled_by(store.journal_entry(&intent.digest)?.as_ref()) {
        record::remove(store, &intent.digest)?;
        return Ok(None);
    }
    let checkout = Checkout::open(git, &intent.source)?;
    let tag = record::tag(&intent.digest);
    checkout.clear_temps(&tag, plan);
    let states = checkout.states(&paths_of(plan), false)?;
    let digest = &intent.digest;
    let notice = match classify(&checkout, plan, &states) {
        PatchVerdict::Landed => {
            journal(store, intent)?;
            W::PromoteCompletedLanded {
                digest: digest.to_string(),
            }
        }
        PatchVerdict::Untouched => {
            checkout.remove_created_dirs(plan);
            W::PromoteRolledBack {
                digest: digest.to_string(),
            }
        }
        PatchVerdict::Halfway(todo) => {
            checkout.write(&tag, plan, &todo, Side::Post)?;
            journal(store, intent)?;
            W::PromoteCompletedHalfway {
                digest: digest.to_string(),
                to_write: todo.len(),
                of: plan.paths.len(),
            }
        }
        PatchVerdict::Changed(paths) => {
            return Ok(Some(W::PromoteCannotComplete {
                digest: digest.to_string(),
                paths: paths.iter().map(RepoPath::shown).collect(),
            }));
        }
    };
    record::remove(store, digest)?;
    Ok(Some(notice))
}

/// The paths that keep the still-pending intent of `digest` from completing (empty for a
/// branch promote's).
pub(crate) fn blocking(git: &Git, store: &Store, digest: &str) -> Result<Option<Vec<RepoPath>>> {
    let Some(intent) = record::load(store, digest)? else {
        return Ok(None);
    };
    let Changes::Patch(plan) = &intent.changes else {
        return Ok(Some(Vec::new()));
    };
    let checkout = Checkout::open(git, &intent.source)?;
    let states = checkout.states(&paths_of(plan), false)?;
    Ok(Some(match classify(&checkout, plan, &states) {
        PatchVerdict::Changed(paths) => paths,
        _ => paths_of(plan),
    }))
}

/// Journals a recovered landing with its step (branch mode: HEAD where the replay left it).
fn journal(store: &Store, intent: &Intent) -> Result<()> {
    let mut step = intent.step.clone();
    if let (Some(step), Changes::Branch(plan)) = (&mut step, &intent.changes) {
        let tip = plan.done.as_ref().or(plan.replayed.last());
        step.head_after = Some(crate::base::ids::CommitId::new(
            tip.unwrap_or(&plan.old_tip),
        )?);
    }
    store.record_promoted(&JournalEntry {
        step,
        digest: intent.digest.clone(),
        session_id: intent.session_id.clone(),
        promoted_at_ms: now_ms(),
        source_head: intent.source_head.clone(),
        patch_bytes: intent.patch_bytes,
        how: Landing::Recovered,
        mode: intent.mode,
        earlier_landings: Vec::new(),
    })
}

/// Where a branch promote stopped.
#[derive(Debug, PartialEq, Eq)]
enum BranchVerdict {
    /// The replay finished: restore the WIP (after a reset to the tip when the stash is still
    /// there, to clear a half-done restore) and journal.
    Forward { reset: bool },
    /// Not finished: back to the old tip (when something may have moved), restore the WIP.
    Back { reset: bool },
    /// A fast-forward moved the index and files but not the branch: move it, and journal.
    MoveBranch,
    /// The branch is not where this promote left it: nothing is reset.
    Foreign(String),
}

/// What recovery found of a branch promote's traces.
struct BranchFound {
    on_branch: bool,
    tip: Option<String>,
    tip_parent: Option<String>,
    stash: Option<String>,
    /// A fast-forward's: the index holds its commit at every path it changes.
    checkout_moved: bool,
}

/// Plans: where the branch is against what the intent recorded.
fn decide_branch(plan: &BranchPlan, found: &BranchFound) -> BranchVerdict {
    let Some(tip) = found.tip.as_deref() else {
        return BranchVerdict::Foreign(format!("{} is gone", plan.branch));
    };
    if !found.on_branch {
        return BranchVerdict::Foreign(format!("HEAD is no longer on {}", plan.branch));
    }
    if let Some(to) = &plan.fast_forward {
        return decide_fast_forward(plan, to, tip, found.checkout_moved);
    }
    let stashed = found.stash.is_some();
    // Finished: the tip recorded at the end, or every commit of the chain dealt with and the
    // branch at the last one replayed (a crash just before the end was recorded).
    let last = plan.replayed.last().unwrap_or(&plan.old_tip);
    let finished = plan.processed == plan.chain.len() && tip == last;
    if plan.done.as_deref() == Some(tip) || finished {
        return BranchVerdict::Forward { reset: stashed };
    }
    let ours_or_next =
        |commit: &str| commit == plan.old_tip || plan.replayed.iter().any(|c| c == commit);
    if !(ours_or_next(tip) || found.tip_parent.as_deref().is_some_and(ours_or_next)) {
        return BranchVerdict::Foreign(format!("{} moved since", plan.branch));
    }
    match (plan.had_wip, stashed) {
        (true, false) if tip == plan.old_tip => BranchVerdict::Back { reset: false },
        (true, false) => BranchVerdict::Foreign("the stash of your WIP is gone".into()),
        _ => BranchVerdict::Back { reset: true },
    }
}

/// A fast-forward moves the files, then the branch, and stashes nothing: nothing is ever
/// reset (the user's work is where it was all along).
fn decide_fast_forward(plan: &BranchPlan, to: &str, tip: &str, moved: bool) -> BranchVerdict {
    match tip {
        _ if tip == to => BranchVerdict::Forward { reset: false },
        _ if tip == plan.old_tip && moved => BranchVerdict::MoveBranch,
        _ if tip == plan.old_tip => BranchVerdict::Back { reset: false },
        _ => BranchVerdict::Foreign(format!("{} moved since", plan.branch)),
    }
}

/// Whether the index holds `to` at every path where `from` and `to` differ (a two-way
/// `read-tree` that moved them finished).
fn index_moved(git: &Git, source: &Path, from: &str, to: &str) -> Result<bool> {
    let changed = git.diff_trees(source, from, to)?;
    let differing = git.index_differs_from(source, to)?;
    let differing: std::collections::HashSet<&[u8]> = crate::git::split_nul(&differing).collect();
    Ok(!changed
        .iter()
        .any(|path| differing.contains(path.as_slice())))
}

/// Gathers what a crashed branch promote left: the branch, its tip and the stash.
fn find_branch(git: &Git, source: &Path, plan: &BranchPlan) -> Result<BranchFound> {
    let head = git.symbolic_head(source)?;
    let tip = git.rev_parse(source, &plan.branch)?;
    let tip_parent = match &tip {
        Some(tip) => git.rev_parse(source, &format!("{tip}^"))?,
        None => None,
    };
    let stash = match &plan.stash {
        Some(recorded) if stash::position(git, source, recorded).is_some() => {
            Some(recorded.clone())
        }
        _ => stash::find(git, source, &plan.token).map(|(_, oid)| oid),
    };
    let checkout_moved = match (&plan.fast_forward, &tip) {
        (Some(to), Some(tip)) if *tip == plan.old_tip => index_moved(git, source, tip, to)?,
        _ => false,
    };
    Ok(BranchFound {
        on_branch: String::from_utf8_lossy(&head.stdout).trim() == plan.branch,
        tip,
        tip_parent,
        stash,
        checkout_moved,
    })
}

/// Completes or rolls back a branch promote, once no git it started is still running.
fn recover_branch(
    git: &Git,
    store: &Store,
    intent: &Intent,
    plan: &BranchPlan,
) -> Result<Option<W>> {
    let running = orphans::wait_for(&plan.token, ORPHAN_PATIENCE);
    if !running.is_empty() {
        return Ok(Some(W::PromoteGitRunning {
            digest: intent.digest.to_string(),
            pids: running,
        }));
    }
    if intent.journaled_by(store.journal_entry(&intent.digest)?.as_ref()) {
        record::remove(store, &intent.digest)?;
        return Ok(None);
    }
    let source = intent.source.as_path();
    // A cherry-pick the crash cut short: forget it (the reset below puts the files back).
    let _ = git.marked(source, &plan.token).cherry_pick_quit();
    let found = find_branch(git, source, plan)?;
    settle_branch(git, store, intent, plan, &found)
}

/// The rest of a fast-forward whose files moved: the branch, from the old tip to its commit.
fn move_branch_on(git: &Git, intent: &Intent, plan: &BranchPlan) -> BranchVerdict {
    let Some(to) = plan.fast_forward.as_deref() else {
        return BranchVerdict::Foreign("the fast-forward names no commit".into());
    };
    let message = format!(
        "a3s-iso: promote {} (fast-forward, recovered)",
        intent.session_id.as_deref().unwrap_or("change set")
    );
    let source = intent.source.as_path();
    match git
        .marked(source, &plan.token)
        .move_branch(&plan.branch, &message, to, &plan.old_tip)
    {
        Ok(()) => BranchVerdict::Forward { reset: false },
        Err(err) => BranchVerdict::Foreign(format!("{} could not be moved: {err}", plan.branch)),
    }
}

/// The files a fast-forward's git wrote before it was killed with its index still unwritten
/// (the git itself killed: the OOM killer, a whole cgroup stopped, a power cut), put back to
/// the old tip's, each by rename. Why not, when a file holds neither side (changed since, or
/// cut short): then nothing is guessed at and nothing written.
fn put_back_written(
    git: &Git,
    source: &Path,
    plan: &BranchPlan,
    to: &str,
) -> Result<std::result::Result<(), String>> {
    let Some(changes) =
        crate::recovery::intent::images::tree_changes(git, source, &plan.old_tip, to)?
    else {
        return Ok(Err(format!("the commit {to} it moved to is not here")));
    };
    let files = crate::recovery::intent::images::plan_of_changes(source, changes);
    let checkout = Checkout::open(git, source)?;
    let paths: Vec<RepoPath> = files.paths.iter().map(|c| c.path.clone()).collect();
    let states = checkout.states(&paths, false)?;
    let (written, neither): (Vec<usize>, Vec<RepoPath>) = match classify(&checkout, &files, &states)
    {
        PatchVerdict::Untouched => return Ok(Ok(())),
        // A git killed mid-file leaves that file cut short: the others it wrote go back, and
        // that one, which holds neither side (or is yours since), is never guessed at.
        PatchVerdict::Changed(paths) => {
            let post = files.paths.iter().zip(&states).enumerate();
            let written = post
                .filter(|(_, (change, state))| checkout.holds(state, change.post.as_ref()))
                .map(|(i, _)| i)
                .collect();
            (written, paths)
        }
        PatchVerdict::Landed => ((0..files.paths.len()).collect(), Vec::new()),
        PatchVerdict::Halfway(old) => {
            let written = (0..files.paths.len()).filter(|i| !old.contains(i));
            (written.collect(), Vec::new())
        }
    };
    checkout.write(&plan.token, &files, &written, Side::Pre)?;
    checkout.clear_temps(&plan.token, &files);
    if neither.is_empty() {
        return Ok(Ok(()));
    }
    let shown: Vec<String> = neither.iter().map(RepoPath::shown).collect();
    Ok(Err(format!(
        "the files its git wrote were put back, but for {}, which holds neither side now and is left as it is; the killed git left its .git/index.lock, yours to remove once no git of yours runs, and then `git checkout -- <path>` gives back your branch's file",
        shown.join(", ")
    )))
}

/// Acts on the verdict: reset, restore the WIP, journal, drop the intent.
fn settle_branch(
    git: &Git,
    store: &Store,
    intent: &Intent,
    plan: &BranchPlan,
    found: &BranchFound,
) -> Result<Option<W>> {
    let mut verdict = decide_branch(plan, found);
    let stash = found.stash.as_deref();
    let source = intent.source.as_path();
    let digest = &intent.digest;
    if verdict == BranchVerdict::MoveBranch {
        verdict = move_branch_on(git, intent, plan);
    }
    // A git that ends, refusing or not, leaves no lock: one left (and no refusal recorded)
    // means it was killed midway.
    if let (Some(to), BranchVerdict::Back { .. }) = (&plan.fast_forward, &verdict)
        && !plan.fast_forward_refused
        && git.git_path(source, "index.lock")?.exists()
        && let Err(why) = put_back_written(git, source, plan, to)?
    {
        verdict = BranchVerdict::Foreign(why);
    }
    let (target, reset) = match &verdict {
        BranchVerdict::Forward { reset } => (plan.done.clone(), *reset),
        BranchVerdict::Back { reset } => (Some(plan.old_tip.clone()), *reset),
        BranchVerdict::MoveBranch | BranchVerdict::Foreign(_) => (None, false),
    };
    if let (Some(target), true) = (&target, reset) {
        git.marked(source, &plan.token).reset_hard(target)?;
    }
    let work = match stash {
        Some(stash) => {
            if target.is_some() {
                stash::clear_stashed_untracked(git, source, stash)?;
            }
            match stash::restore(git, source, &plan.token, stash) {
                true => YourWork::Restored,
                false => YourWork::KeptInStash(stash.to_string()),
            }
        }
        None => YourWork::InPlace,
    };
    if matches!(verdict, BranchVerdict::Forward { .. }) {
        journal(store, intent)?;
    }
    record::remove(store, digest)?;
    Ok(Some(match verdict {
        BranchVerdict::Forward { .. } => W::BranchPromoteCompleted {
            digest: digest.to_string(),
            branch: plan.branch.clone(),
            work,
        },
        BranchVerdict::Back { .. } => W::BranchPromoteRolledBack {
            digest: digest.to_string(),
            branch: plan.branch.clone(),
            old_tip: plan.old_tip.clone(),
            work,
        },
        BranchVerdict::Foreign(why) => W::BranchPromoteLeft {
            digest: digest.to_string(),
            why,
            work,
        },
        // Settled above, into one of the others.
        BranchVerdict::MoveBranch => W::BranchPromoteLeft {
            digest: digest.to_string(),
            why: format!("{} was not moved", plan.branch),
            work,
        },
    }))
}

#[cfg(test)]
mod tests {
    use crate::recovery::intent::recover::*;

    fn plan() -> BranchPlan {
        BranchPlan {
            branch: "refs/heads/main".into(),
            old_tip: "old".into(),
            retained_tip: "chain".into(),
            had_wip: true,
            token: "t".into(),
            stash: None,
            chain: vec!["c1".into(), "c2".into()],
            processed: 1,
            replayed: vec!["r1".into()],
            done: None,
            fast_forward: None,
            fast_forward_refused: false,
        }
    }

    fn found(tip: &str, parent: &str, stash: bool) -> BranchFound {
        BranchFound {
            on_branch: true,
            tip: Some(tip.into()),
            tip_parent: Some(parent.into()),
            stash: stash.then(|| "s".to_string()),
            checkout_moved: false,
        }
    }

    #[test]
    fn branch_verdicts() {
        let mut p = plan();
        assert_eq!(
            decide_branch(&p, &found("old", "x", false)),
            BranchVerdict::Back { reset: false }
        );
        assert_eq!(
            decide_branch(&p, &found("old", "x", true)),
            BranchVerdict::Back { reset: true }
        );
        assert_eq!(
            decide_branch(&p, &found("r2", "r1", true)),
            BranchVerdict::Back { reset: true }
        );
        assert!(matches!(
            decide_branch(&p, &found("user", "other", true)),
            BranchVerdict::Foreign(_)
        ));
        assert!(matches!(
            decide_branch(&p, &found("r1", "old", false)),
            BranchVerdict::Foreign(_)
        ));
        p.processed = 2;
        p.replayed.push("r2".into());
        assert_eq!(
            decide_branch(&p, &found("r2", "r1", true)),
            BranchVerdict::Forward { reset: true }
        );
        p.processed = 1;
        p.replayed.pop();
        p.done = Some("r2".into());
        assert_eq!(
            decide_branch(&p, &found("r2", "r1", true)),
            BranchVerdict::Forward { reset: true }
        );
        assert_eq!(
            decide_branch(&p, &found("r2", "r1", false)),
            BranchVerdict::Forward { reset: false }
        );
        p.had_wip = false;
        p.done = None;
        assert_eq!(
            decide_branch(&p, &found("r2", "r1", false)),
            BranchVerdict::Back { reset: true }
        );
    }

    /// A fast-forward is never reset: the user's work stayed in place all along.
    #[test]
    fn fast_forward_verdicts() {
        let mut p = plan();
        p.had_wip = false;
        p.chain = vec!["f1".into()];
        p.replayed = vec!["f1".into()];
        p.processed = 1;
        p.fast_forward = Some("f1".into());
        let moved = |tip: &str, moved: bool| BranchFound {
            checkout_moved: moved,
            ..found(tip, "x", false)
        };
        assert_eq!(
            decide_branch(&p, &moved("f1", false)),
            BranchVerdict::Forward { reset: false }
        );
        assert_eq!(
            decide_branch(&p, &moved("old", true)),
            BranchVerdict::MoveBranch
        );
        assert_eq!(
            decide_branch(&p, &moved("old", false)),
            BranchVerdict::Back { reset: false }
        );
        assert!(matches!(
            decide_branch(&p, &moved("other", true)),
            BranchVerdict::Foreign(_)
        ));
        let detached = BranchFound {
            on_branch: false,
            ..moved("f1", true)
        };
        assert!(matches!(
            decide_branch(&p, &detached),
            BranchVerdict::Foreign(_)
        ));
    }
}
