//! The attempts of one `land --push` landing, shared by sessions and documents: fetch, search
//! for the trailer, merge, commit, test, push with a lease; a lost race goes round again.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::base::error::{Error, Result};
use crate::base::ids::{CommitId, Digest, SessionId, TreeId};
use crate::base::warning::LandWarning;
use crate::context::{Context, Located};
use crate::git::{LeasedPush, RefUpdate};
use crate::ops::promote::Reason;

use super::land::{LandOptions, LandResult, LandedSession, PushReport};

/// What `land --push` is asked beyond `land`'s options.
#[derive(Debug, Clone)]
pub struct PushOptions {
    /// The remote's branch to land onto.
    pub target: PushTarget,
    /// The most pushes of one landing (a lost race fetches and tries again).
    pub attempts: u32,
    /// Change-set documents to land after the sessions, in order (each verified first).
    pub change_sets: Vec<std::path::PathBuf>,
    /// Change sets pushed to a remote to land after the documents (each fetched and verified).
    pub fetched: Option<FetchedEntries>,
}

/// The change sets `land --push --from REMOTE --digest D …` takes from a remote.
#[derive(Debug, Clone)]
pub struct FetchedEntries {
    /// The configured remote that holds them.
    pub remote: String,
    /// Their digests (`sha256:<hex>`, or a unique prefix), in order.
    pub digests: Vec<String>,
    /// The largest patch read.
    pub max_bytes: u64,
}

/// The trailer that names a landing commit's change set.
pub const TRAILER: &str = "A3S-Change-Set";

/// The schema of a session's record of what `land --push` pushes (`land-push/<id>.json`).
pub const PUSHING_SCHEMA: &str = "a3s-iso.land_push.v1";

/// How many pushes one landing makes at most, by default.
pub const DEFAULT_ATTEMPTS: u32 = 10;

/// Where `land --push` lands: a branch of a configured remote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushTarget {
    /// The remote's name.
    pub remote: String,
    /// The branch there (`refs/heads/<branch>`).
    pub branch: String,
}

impl PushTarget {
    /// `REMOTE/BRANCH`: the remote is what comes before the first `/`.
    pub fn parse(text: &str) -> Result<PushTarget> {
        let usage = || {
            Error::usage(format!(
                "--push {text:?}: expected REMOTE/BRANCH (a configured remote, then a branch on it)"
            ))
        };
        let (remote, branch) = text.split_once('/').ok_or_else(usage)?;
        let plain_branch = !branch.is_empty()
            && !branch.starts_with(['-', '/'])
            && !branch.ends_with(['/', '.'])
            && !branch.contains("..")
            && !branch.contains("//")
            && !branch.ends_with(".lock")
            && !branch.bytes().any(|b| {
                b <= b' ' || matches!(b, b'~' | b'^' | b':' | b'?' | b'*' | b'[' | b'\\' | 0x7f)
            })
            && !branch.contains("@{");
        if remote.is_empty() || remote.starts_with('-') || !plain_branch {
            return Err(usage());
        }
        Ok(PushTarget {
            remote: remote.to_string(),
            branch: branch.to_string(),
        })
    }
}

/// What a session's landing through the server pushes, recorded before its first push.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Pushing {
    pub(super) remote: String,
    pub(super) branch: String,
    /// The change set's digest: the trailer the branch is searched for.
    pub(super) digest: Digest,
    /// The change set's base commit, where the search starts (empty: the whole history).
    pub(super) base: String,
}

/// The prefix of the scratch sessions a change-set document's test runs in.
pub(super) const SCRATCH: &str = "landing";

/// The change set one entry lands.
pub(super) struct Change<'a> {
    /// What the landing commit's default message names (the session).
    pub(super) id: &'a str,
    /// The session whose isolation the test runs in (the session's own, or a scratch one).
    pub(super) tested_in: Option<&'a SessionId>,
    pub(super) pushing: &'a Pushing,
    pub(super) base_tree: &'a str,
    pub(super) result_tree: &'a str,
    /// Branch mode: the session's commits, replayed before its uncommitted work.
    pub(super) replay: Option<&'a super::land_push_branch::Replay>,
}

/// Fetch, search, merge, commit, test, push; again after each lost race, to `push.attempts`.
pub(super) fn attempts(
    ctx: &Context,
    located: &Located,
    (opts, push): (&LandOptions, &PushOptions),
    change: &Change<'_>,
    pins: &mut Pins,
    landed: &mut LandedSession,
) -> Result<()> {
    let (dir, target) = (&located.repo.toplevel, &push.target);
    let limit = push.attempts.max(1);
    for attempt in 1..=limit {
        let tip = pins.fetch_tip(target)?;
        if let Some(commit) = pins.landed_in(&tip, change.pushing)? {
            landed.outcome = LandResult::Idempotent;
            landed.commit = Some(CommitId::new(commit)?);
            return Ok(());
        }
        let Some((commit, tree)) = build_on(ctx, located, (opts, change), &tip, landed)? else {
            return Ok(());
        };
        pins.pin(&commit)?;
        if let (Some(test), Some(place)) = (opts.test.as_deref(), change.tested_in) {
            let tested = super::land_gate::test_on_tree(ctx, located, (place, &tree), || {
                super::land::test_passes(ctx, located, (test, opts.no_sandbox), place, landed)
            })?;
            landed.test_wrote = tested.wrote;
            report(landed).tested_tree = Some(TreeId::new(&tested.tested)?);
            if !tested.passed {
                landed.outcome = LandResult::TestFailed;
                return Ok(());
            }
        }
        report(landed).attempts = attempt;
        report(landed).built_on = Some(CommitId::new(&tip)?);
        crate::fault_point!("land-push-before-push");
        match ctx
            .git
            .push_leased(dir, &target.remote, (&commit, &target.branch), &tip)?
        {
            LeasedPush::Pushed => {
                crate::fault_point!("land-push-after-push");
                landed.outcome = LandResult::Landed;
                landed.commit = Some(CommitId::new(&commit)?);
                return Ok(());
            }
            LeasedPush::AlreadyThere => {
                landed.outcome = LandResult::Idempotent;
                landed.commit = Some(CommitId::new(&commit)?);
                return Ok(());
            }
            LeasedPush::Moved => back_off(attempt),
            // Two pushes that passed the lease at once: the server's ref update refuses the
            // later one. A branch moved from the tip lost a race; one still there is refused.
            LeasedPush::Refused { .. } if moved_from(ctx, dir, target, &tip)? => back_off(attempt),
            LeasedPush::Refused { message } => {
                return Err(Error::PushRefused {
                    remote: target.remote.clone(),
                    branch: target.branch.clone(),
                    message,
                });
            }
        }
    }
    Err(Error::PushContended {
        remote: target.remote.clone(),
        branch: target.branch.clone(),
        attempts: limit,
    })
}

/// Whether the branch is no longer at `tip` on the remote (asked afresh).
fn moved_from(
    ctx: &Context,
    dir: &std::path::Path,
    target: &PushTarget,
    tip: &str,
) -> Result<bool> {
    let branch = format!("refs/heads/{}", target.branch);
    let listed = ctx
        .git
        .ls_remote(dir, &target.remote, std::slice::from_ref(&branch))?;
    Ok(!listed
        .iter()
        .any(|(oid, name)| *name == branch && oid == tip))
}

/// The landing commit on `tip` and its tree; `None` with the result set.
fn build_on(
    ctx: &Context,
    located: &Located,
    (opts, change): (&LandOptions, &Change<'_>),
    tip: &str,
    landed: &mut LandedSession,
) -> Result<Option<(String, String)>> {
    if let Some(replay) = change.replay {
        use super::land_push_branch::{Replayed, replay_onto};
        let message = landing_message(opts, change);
        let trailer = format!("{TRAILER}: {}", change.pushing.digest);
        let replayed = replay_onto(
            ctx,
            located,
            replay,
            (tip, change.result_tree),
            (&message, &trailer),
        )?;
        return Ok(match replayed {
            Replayed::Built { commit, tree } => Some((commit, tree)),
            Replayed::Conflict(merged) => {
                record_conflict(&merged, landed);
                None
            }
            Replayed::Empty => {
                record_empty(landed);
                None
            }
        });
    }
    let Some(tree) = merge_onto(ctx, located, change, tip, landed)? else {
        return Ok(None);
    };
    let dir = &located.repo.toplevel;
    let commit = ctx
        .git
        .commit_landing(dir, (&tree, tip), &landing_message(opts, change))?;
    Ok(Some((commit, tree)))
}

/// The change set merged onto `tip`, objects only; `None` with the result set.
fn merge_onto(
    ctx: &Context,
    located: &Located,
    change: &Change<'_>,
    tip: &str,
    landed: &mut LandedSession,
) -> Result<Option<String>> {
    ctx.git.require_merge_tree()?;
    let scratch = located.store.scratch_dir();
    let view = crate::git::ObjectView::new(&ctx.git, &located.repo.common_dir, &[tip], &scratch)?;
    // Commits only to carry the trees: a merge with its base given reads nothing else.
    let base = view.commit_tree(change.base_tree, tip, None, b"base")?;
    let work = view.commit_tree(change.result_tree, tip, None, b"work")?;
    let merged = view.merge(&base, tip, &work)?;
    if !merged.conflicts.is_empty() {
        record_conflict(&merged, landed);
        return Ok(None);
    }
    let tip_tree = ctx
        .git
        .rev_parse_required(&located.repo.toplevel, &format!("{tip}^{{tree}}"))?;
    if merged.tree == tip_tree {
        record_empty(landed);
        return Ok(None);
    }
    Ok(Some(merged.tree))
}

/// A merge onto the tip conflicted: the entry is `conflict`, with the paths.
fn record_conflict(merged: &crate::git::Merged, landed: &mut LandedSession) {
    landed.outcome = LandResult::Conflict;
    landed.reason = Some(Reason::PatchDoesNotApply);
    landed.conflicting_paths = merged
        .paths()
        .iter()
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect();
}

/// The tip holds the change already: the entry is `empty`.
fn record_empty(landed: &mut LandedSession) {
    landed.outcome = LandResult::Empty;
    landed.warnings.push(LandWarning::AlreadyOnBranch.into());
}

/// The landing commit's message: the one given, or one naming the session; then the trailer.
fn landing_message(opts: &LandOptions, change: &Change<'_>) -> String {
    let head = opts
        .message
        .clone()
        .unwrap_or_else(|| format!("a3s-iso: the work of session {}", change.id));
    format!(
        "{}\n\n{TRAILER}: {}\n",
        head.trim_end(),
        change.pushing.digest
    )
}

/// The entry's push report (always set by the entry's landing).
fn report(landed: &mut LandedSession) -> &mut PushReport {
    landed.push.get_or_insert_with(PushReport::default)
}

/// After a lost race: a growing, jittered pause, so the losers do not all come back at once.
fn back_off(attempt: u32) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let jitter = (nanos ^ std::process::id().wrapping_mul(2_654_435_761)) % 1000;
    let ceiling = 40 * u64::from(attempt.min(8));
    std::thread::sleep(Duration::from_millis(ceiling * u64::from(jitter) / 1000));
}

/// One landing's private refs, named for this process (a later run drops a killed one's).
pub(super) struct Pins<'a> {
    ctx: &'a Context,
    located: &'a Located,
    refs: Vec<String>,
}

impl<'a> Pins<'a> {
    pub(super) fn new(ctx: &'a Context, located: &'a Located) -> Pins<'a> {
        Pins {
            ctx,
            located,
            refs: Vec::new(),
        }
    }

    fn fresh_ref(&mut self) -> String {
        let name = self
            .located
            .store
            .refs()
            .fetching(&crate::base::maker::owned_name("l"));
        self.refs.push(name.clone());
        name
    }

    /// Fetches the branch; its tip. A branch the remote does not have is a usage error.
    pub(super) fn fetch_tip(&mut self, target: &PushTarget) -> Result<String> {
        let into = self.fresh_ref();
        let dir = &self.located.repo.toplevel;
        self.ctx
            .git
            .fetch_branch(dir, &target.remote, &target.branch, &into)?
            .ok_or_else(|| {
                Error::usage(format!(
                    "{} has no branch {:?}: land --push lands onto a branch that exists there",
                    target.remote, target.branch
                ))
            })
    }

    /// Keeps `commit` reachable while the landing lasts.
    fn pin(&mut self, commit: &str) -> Result<()> {
        let name = self.fresh_ref();
        let update = RefUpdate::Set {
            name,
            target: commit.to_string(),
        };
        let dir = &self.located.repo.toplevel;
        self.ctx
            .git
            .update_refs(dir, &[update], "a3s-iso: land --push")
    }

    /// The commit of `tip`'s history since the change set's base that carries its trailer.
    pub(super) fn landed_in(&self, tip: &str, pushing: &Pushing) -> Result<Option<String>> {
        let dir = &self.located.repo.toplevel;
        let base = Some(pushing.base.as_str()).filter(|b| {
            self.ctx
                .git
                .rev_parse(dir, &format!("{b}^{{commit}}"))
                .is_ok_and(|c| c.is_some())
        });
        let found = self.ctx.git.commits_with_trailer(
            dir,
            (tip, base),
            (TRAILER, pushing.digest.as_str()),
        )?;
        Ok(found.into_iter().next())
    }

    pub(super) fn release(self) {
        let updates: Vec<RefUpdate> = self
            .refs
            .iter()
            .map(|name| RefUpdate::Delete { name: name.clone() })
            .collect();
        let dir = &self.located.repo.toplevel;
        let _ = self
            .ctx
            .git
            .update_refs(dir, &updates, "a3s-iso: land --push");
    }
}
