//! The words of every warning: what the library reports as data, told as the command line and
//! the MCP tools print it, and as JSON carries it (one string each).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::base::interrupted::{Interrupted, Operation};
use crate::base::warning::{
    BindWarning, LandWarning, PromoteWarning, RebaseEnd, RecoveryWarning, RunWarning, Warning,
    YourWork,
};

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::Recovery(w) => w.fmt(f),
            Warning::Bind(w) => w.fmt(f),
            Warning::Run(w) => w.fmt(f),
            Warning::Promote(w) => w.fmt(f),
            Warning::Land(w) => w.fmt(f),
            Warning::Recorded(words) => f.write_str(words),
        }
    }
}

impl Serialize for Warning {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A warning read back from a record is its words.
impl<'de> Deserialize<'de> for Warning {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Warning, D::Error> {
        String::deserialize(d).map(Warning::Recorded)
    }
}

impl fmt::Display for RecoveryWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use RecoveryWarning as W;
        match self {
            W::Finished(done) => finished(f, done),
            W::InProgress(left) => in_progress(f, left),
            W::PoolNotRepaired { why } => write!(f, "the pool could not be repaired: {why}"),
            W::UnreadablePromoteIntent { why } => {
                write!(f, "an unreadable promote intent was left alone: {why}")
            }
            W::PromoteNotFinishedNow { digest, why } => write!(
                f,
                "the interrupted promote of {digest} could not be finished now ({why}); the next command tries again"
            ),
            W::PromoteCheckoutMissing { digest, checkout } => write!(
                f,
                "the interrupted promote of {digest} is pending: its checkout {} is not there",
                checkout.display()
            ),
            W::PromoteCompletedLanded { digest } => write!(
                f,
                "an interrupted promote of {digest} was completed: all of it had landed; journaled now"
            ),
            W::PromoteRolledBack { digest } => write!(
                f,
                "an interrupted promote of {digest} was rolled back: none of it had landed"
            ),
            W::PromoteCompletedHalfway {
                digest,
                to_write,
                of,
            } => write!(
                f,
                "an interrupted promote of {digest} was completed: {to_write} of {of} files were still to be written"
            ),
            W::PromoteCannotComplete { digest, paths } => write!(
                f,
                "an interrupted promote of {digest} cannot be completed: {} changed since it stopped; promoting it reports a conflict until they hold what it recorded",
                paths.join(", ")
            ),
            W::PromoteGitRunning { digest, pids } => write!(
                f,
                "the interrupted promote of {digest} still has git running (pid {pids:?}); a later command finishes it"
            ),
            W::BranchPromoteCompleted { .. }
            | W::BranchPromoteRolledBack { .. }
            | W::BranchPromoteLeft { .. }
            | W::RebaseDropped { .. }
            | W::RebaseFinished { .. }
            | W::RebaseNotFinished { .. } => recovery_rest(self, f),
        }
    }
}

/// The words of interrupted branch promotes and rebases.
fn recovery_rest(warning: &RecoveryWarning, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    use RecoveryWarning as W;
    match warning {
        W::BranchPromoteCompleted {
            digest,
            branch,
            work,
        } => write!(
            f,
            "an interrupted promote of {digest} was completed: its commits are on {branch}; {work}"
        ),
        W::BranchPromoteRolledBack {
            digest,
            branch,
            old_tip,
            work,
        } => write!(
            f,
            "an interrupted promote of {digest} was rolled back: {branch} is back at {old_tip}; {work}"
        ),
        W::BranchPromoteLeft { digest, why, work } => write!(
            f,
            "an interrupted promote of {digest} was left as it is ({why}); nothing was reset; {work}"
        ),
        W::RebaseDropped { session_id } => write!(
            f,
            "an interrupted rebase of session {session_id} was dropped: the session has no isolation any more"
        ),
        W::RebaseFinished { session_id, end } => {
            let end = match end {
                RebaseEnd::Completed => "completed",
                RebaseEnd::CompletedToConflict => "completed up to its conflict",
                RebaseEnd::Undone => "undone",
            };
            write!(f, "an interrupted rebase of session {session_id} was {end}")
        }
        W::RebaseNotFinished { session_id, why } => write!(
            f,
            "an interrupted rebase of session {session_id} could not be finished: {why}"
        ),
        // Worded by `fmt` itself.
        _ => Ok(()),
    }
}

/// An operation recovery finished (or undid) under the lock.
fn finished(f: &mut fmt::Formatter<'_>, done: &Interrupted) -> fmt::Result {
    match (done.operation, &done.session_id) {
        (Operation::Pool, _) => {
            f.write_str("an interrupted build or cleaning of a pool spare was finished")
        }
        (operation, Some(id)) => {
            write!(f, "an interrupted {operation} of session {id} was finished")
        }
        (operation, None) => write!(f, "an interrupted {operation} was finished"),
    }
}

/// An operation in progress (or interrupted) while another command holds the lock, and what
/// finishes it.
fn in_progress(f: &mut fmt::Formatter<'_>, left: &Interrupted) -> fmt::Result {
    let command = left.operation.as_str();
    let what = match (&left.digest, &left.session_id) {
        (Some(digest), _) => format!("a {command} of {digest}"),
        (None, Some(id)) => format!("a {command} of session {id}"),
        (None, None) => format!("a {command}"),
    };
    write!(
        f,
        "{what} is in progress or was interrupted, and another a3s-iso holds the repository \
         lock; the next a3s-iso command that takes the lock (any command, `a3s-iso list` \
         say) finishes it"
    )
}

impl fmt::Display for YourWork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            YourWork::Restored => f.write_str("your uncommitted work was restored"),
            YourWork::InPlace => f.write_str("your uncommitted work is in place"),
            YourWork::KeptInStash(stash) => kept_in_stash(f, stash),
        }
    }
}

/// Uncommitted work a branch promote set aside and could not put back.
fn kept_in_stash(f: &mut fmt::Formatter<'_>, stash: &str) -> fmt::Result {
    write!(
        f,
        "your uncommitted work could not be restored on top of the promoted commits; it is kept in stash {stash} (git stash apply --index {stash})"
    )
}

impl fmt::Display for BindWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use BindWarning as W;
        match self {
            W::DirtyLeftOut { paths } => write!(
                f,
                "the source's local changes ({paths} path{}) are not in the isolation (--allow-dirty)",
                if *paths == 1 { "" } else { "s" }
            ),
            W::RestoredUncommitted { summary } => {
                write!(f, "{summary}: restored it as uncommitted changes")
            }
            W::NothingCaptured => f.write_str(
                "nothing was captured in this session: the isolation starts as the session did",
            ),
            W::OwnerGiven => f.write_str("the ownerless session now has an owner"),
            W::TakenOver { previous } => write!(
                f,
                "took the session over from its previous owner ({previous}), which has exited"
            ),
            W::FallbackParent { parent, fallback } => write!(
                f,
                "{} is not writable; the isolation lives under {} instead",
                parent.display(),
                fallback.display()
            ),
            W::ClearedLeftover { path } => write!(
                f,
                "cleared an empty leftover directory at {}",
                path.display()
            ),
            W::NotRegistered { why } => write!(
                f,
                "the source could not be added to the user registry: {why}"
            ),
            W::IncludeUnreadable { path, why } => {
                write!(f, "{} is not read: {why}", path.display())
            }
            W::IncludeLinesNotUtf8 { path, lines } => write!(
                f,
                "{}: {lines} line{} that {} not UTF-8 left out",
                path.display(),
                if *lines == 1 { "" } else { "s" },
                if *lines == 1 { "is" } else { "are" }
            ),
            W::SubmodulesTooDeep { max, inside } => write!(
                f,
                "submodules nested deeper than {max} levels (inside {inside}) are left uninitialised"
            ),
            W::SubmoduleUninitialised { submodule, why } => write!(
                f,
                "submodule {submodule} is left uninitialised in the isolation: {why}"
            ),
        }
    }
}

impl fmt::Display for RunWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use RunWarning as W;
        match self {
            W::UntrustedConfig { file, trust } => write!(
                f,
                "{} is not trusted ({trust}): its settings are ignored; a3s-iso config trust approves it",
                file.display()
            ),
            W::GitCodeTakenAway { place, took } => write!(
                f,
                "{}: took away what would run code for your own git there: {}",
                place.display(),
                took.join(", ")
            ),
            W::GitLayersNotMounted => f.write_str(
                "the session's git layers could not be mounted (a file system or kernel without overlay support): git inside could not create branches, tags or stash entries, and nothing it tried reached the repository's refs",
            ),
            W::HostsNotApplied => f.write_str(
                "run.allow_host and run.publish are not applied: the run has the whole network",
            ),
            W::Reftable => f.write_str(REFTABLE),
            W::GitLayersNotReady { why } => write!(
                f,
                "the session's git layers cannot be made ready ({why}): git inside cannot keep branches, tags or stash entries in this run"
            ),
            W::QuarantineLinksRemoved { count } => write!(
                f,
                "the run's new objects: {count} symbolic links or special files left in its object directory were removed, never followed"
            ),
            W::ModuleObjectsNotUsed { why } => {
                write!(f, "no submodule's objects were used: {why}")
            }
            W::ModuleGitDirNotUsed { git_dir, why } => write!(
                f,
                "the submodule git dir {} was not used: {why}",
                git_dir.display()
            ),
            W::NotWrittenBack { path, why } => {
                write!(f, "{} was not written back: {why}", path.display())
            }
            W::ProfileNotReviewed { home, why } => write!(
                f,
                "the profile's copies ({}) were not reviewed: {why}; its next run reviews them first",
                home.display()
            ),
            W::ProfileEntryTakenOut {
                path,
                what,
                max_bytes,
            } => write!(
                f,
                "~/{} ({what}) was taken out of the profile's copies: a run may leave only regular files of at most {max_bytes} bytes where the profile is reviewed",
                path.display()
            ),
            W::ProfileChangeHeld { path, profile } => write!(
                f,
                "the run's change to ~/{} is held for review: a3s-iso profile diff {profile}",
                path.display()
            ),
            W::GitNotSettled { .. }
            | W::TreePinnedOnly { .. }
            | W::AdminLinkNotKept { .. }
            | W::HeadDetachedAgain { .. }
            | W::HeadNotDetached { .. }
            | W::HeadUnborn { .. }
            | W::RefsNotMirrored { .. }
            | W::RefNotKept { .. }
            | W::DanglingRefDropped { .. } => run_git(self, f),
        }
    }
}

/// What a run in a reftable repository cannot keep.
const REFTABLE: &str = "this repository keeps its refs in reftable: git inside cannot keep branches, tags or stash entries between runs (what it writes to the refs is thrown away after the run)";

/// The words of what git inside a run left.
fn run_git(warning: &RunWarning, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    use RunWarning as W;
    match warning {
        W::GitNotSettled { why } => write!(
            f,
            "the run's git state (branches, HEAD) is not settled yet: {why}; the next a3s-iso command finishes it"
        ),
        W::TreePinnedOnly { why } => write!(f, "{why}; the result tree is pinned"),
        W::AdminLinkNotKept { path } => write!(
            f,
            "{}: a symbolic link or special file git inside the run left in the isolation's admin dir was not kept",
            path.display()
        ),
        W::HeadDetachedAgain { branch, at } => {
            let at = match at {
                Some(commit) => format!("at {commit}"),
                None => "where it was before the run".into(),
            };
            write!(
                f,
                "the command left the isolation's HEAD on {branch}: it is detached again, {at}"
            )
        }
        W::HeadNotDetached { branch } => write!(
            f,
            "the command left the isolation's HEAD on {branch}, and it could not be detached again"
        ),
        W::HeadUnborn { head } => write!(
            f,
            "HEAD inside the run was {head:?}, which names no commit yet: the isolation's HEAD stays where it was"
        ),
        W::RefsNotMirrored { why } => {
            write!(f, "the session's own refs are not mirrored: {why}")
        }
        W::RefNotKept { name, id } => write!(
            f,
            "{name}: names {id}, which the repository does not hold; not kept"
        ),
        W::DanglingRefDropped { name, id } => write!(
            f,
            "{name} named {id}, which a killed run never got to keep; dropped"
        ),
        // Worded by `fmt` itself.
        _ => Ok(()),
    }
}

impl fmt::Display for PromoteWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use PromoteWarning as W;
        match self {
            W::NestedLeftOut { path } => {
                write!(f, "nested repository {path} is not part of the change set")
            }
            W::NestedNotInSource { path } => write!(
                f,
                "nested repository {path} is not part of the change set: the source has no repository there"
            ),
            W::NestedNotCaptured { path, why } => {
                write!(f, "nested repository {path} could not be captured: {why}")
            }
            W::NestedNotPushed { path } => write!(
                f,
                "the nested change set of {path} does not travel with the push; promote the session locally for it"
            ),
            W::NestedOnItsOwn { path } => write!(
                f,
                "nested repository {path} is not part of the change set; promote it on its own"
            ),
            W::InterruptedDuringReplay => {
                f.write_str("an interrupt arrived during the replay; the promote finished first")
            }
            W::InterruptedWhileApplying => f.write_str(
                "an interrupt arrived while the patch was being applied; the promote finished first",
            ),
            W::SubmoduleStays { path, why } => write!(
                f,
                "submodule {path} stays where it was ({why}); git submodule update moves it"
            ),
            W::RetainedBranchNotMade { branch, why } => write!(
                f,
                "the branch {branch} that keeps the session's commits could not be made (is a branch of yours in the way?): {why}"
            ),
            W::StashKept { stash } => kept_in_stash(f, stash),
        }
    }
}

impl fmt::Display for LandWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use LandWarning as W;
        match self {
            W::TestWritesDropped { paths } => write!(
                f,
                "an interrupted test had written {}: dropped from the isolation before landing",
                paths.join(", ")
            ),
            W::MovedBack => f.write_str(
                "an interrupted landing had moved the isolation to its tree: moved back",
            ),
            W::BaseNotTaken { base, head } => write!(
                f,
                "Claude Code proposed to start from {base:?}; the isolation is at the source's HEAD ({head})"
            ),
            W::NotCleanedUp { session_id, why } => write!(
                f,
                "its isolation was not cleaned up: {why} (a3s-iso discard -s {session_id} does it; its work is landed)"
            ),
            W::AlreadyOnBranch => f.write_str(
                "the branch holds these changes already (without this change set's trailer): nothing to land",
            ),
            W::HeadMovedDuringTest => f.write_str(
                "the source's HEAD moved while the session's test ran: it would land on a tree its test never saw; land it again to rebase and test it anew",
            ),
            W::TestUnderSh => f.write_str(
                "bash was not found on PATH: the test ran under `sh -e`, with pipefail only if that sh has it (a failure before the last command of a pipeline may pass)",
            ),
            W::PromoteStopped { detail } => f.write_str(detail),
            W::NotReclaimed { why } => write!(f, "dead sessions were not reclaimed: {why}"),
            W::OtherHooks {
                settings,
                count,
                event,
            } => write!(
                f,
                "{} has {count} other {event} hook{}: Claude Code runs every one, and takes the worktree path a3s-iso prints only if no other prints one",
                settings.display(),
                if *count == 1 { "" } else { "s" }
            ),
            W::SettingsNotIgnored { file } => write!(
                f,
                "{file} is not ignored by git: it would count as a local change of the source (add it to .git/info/exclude)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::base::ids::SessionId;

    /// One warning of each kind.
    fn one_of_each() -> Vec<Warning> {
        let id = || SessionId::new("s1").unwrap();
        let done = Interrupted {
            operation: Operation::Rebase,
            session_id: Some("s1".into()),
            digest: None,
        };
        let path = || PathBuf::from("/p");
        let t = || "t".to_string();
        let mut all: Vec<Warning> = vec![
            RecoveryWarning::Finished(done.clone()).into(),
            RecoveryWarning::InProgress(done).into(),
            RecoveryWarning::PoolNotRepaired { why: t() }.into(),
            RecoveryWarning::UnreadablePromoteIntent { why: t() }.into(),
            RecoveryWarning::PromoteNotFinishedNow {
                digest: t(),
                why: t(),
            }
            .into(),
            RecoveryWarning::PromoteCheckoutMissing {
                digest: t(),
                checkout: path(),
            }
            .into(),
            RecoveryWarning::PromoteCompletedLanded { digest: t() }.into(),
            RecoveryWarning::PromoteRolledBack { digest: t() }.into(),
            RecoveryWarning::PromoteCompletedHalfway {
                digest: t(),
                to_write: 1,
                of: 2,
            }
            .into(),
            RecoveryWarning::PromoteCannotComplete {
                digest: t(),
                paths: vec![t()],
            }
            .into(),
            RecoveryWarning::PromoteGitRunning {
                digest: t(),
                pids: vec![1],
            }
            .into(),
            RecoveryWarning::BranchPromoteCompleted {
                digest: t(),
                branch: t(),
                work: YourWork::Restored,
            }
            .into(),
            RecoveryWarning::BranchPromoteRolledBack {
                digest: t(),
                branch: t(),
                old_tip: t(),
                work: YourWork::InPlace,
            }
            .into(),
            RecoveryWarning::BranchPromoteLeft {
                digest: t(),
                why: t(),
                work: YourWork::KeptInStash(t()),
            }
            .into(),
            RecoveryWarning::RebaseDropped { session_id: id() }.into(),
            RecoveryWarning::RebaseFinished {
                session_id: id(),
                end: RebaseEnd::Undone,
            }
            .into(),
            RecoveryWarning::RebaseNotFinished {
                session_id: id(),
                why: t(),
            }
            .into(),
        ];
        all.extend(bind_and_run(path, t));
        all.extend(promote_and_land(path, t));
        all.push(Warning::Recorded(t()));
        all
    }

    fn bind_and_run(path: fn() -> PathBuf, t: fn() -> String) -> Vec<Warning> {
        vec![
            BindWarning::DirtyLeftOut { paths: 2 }.into(),
            BindWarning::RestoredUncommitted { summary: t() }.into(),
            BindWarning::NothingCaptured.into(),
            BindWarning::OwnerGiven.into(),
            BindWarning::TakenOver { previous: t() }.into(),
            BindWarning::FallbackParent {
                parent: path(),
                fallback: path(),
            }
            .into(),
            BindWarning::ClearedLeftover { path: path() }.into(),
            BindWarning::NotRegistered { why: t() }.into(),
            BindWarning::IncludeUnreadable {
                path: path(),
                why: t(),
            }
            .into(),
            BindWarning::IncludeLinesNotUtf8 {
                path: path(),
                lines: 1,
            }
            .into(),
            BindWarning::SubmodulesTooDeep {
                max: 8,
                inside: t(),
            }
            .into(),
            BindWarning::SubmoduleUninitialised {
                submodule: t(),
                why: t(),
            }
            .into(),
            RunWarning::UntrustedConfig {
                file: path(),
                trust: t(),
            }
            .into(),
            RunWarning::HostsNotApplied.into(),
            RunWarning::Reftable.into(),
            RunWarning::GitCodeTakenAway {
                place: path(),
                took: vec![t()],
            }
            .into(),
            RunWarning::GitLayersNotMounted.into(),
            RunWarning::GitLayersNotReady { why: t() }.into(),
            RunWarning::QuarantineLinksRemoved { count: 1 }.into(),
            RunWarning::ModuleObjectsNotUsed { why: t() }.into(),
            RunWarning::ModuleGitDirNotUsed {
                git_dir: path(),
                why: t(),
            }
            .into(),
            RunWarning::NotWrittenBack {
                path: path(),
                why: t(),
            }
            .into(),
            RunWarning::ProfileNotReviewed {
                home: path(),
                why: t(),
            }
            .into(),
            RunWarning::GitNotSettled { why: t() }.into(),
            RunWarning::TreePinnedOnly { why: t() }.into(),
            RunWarning::AdminLinkNotKept { path: path() }.into(),
            RunWarning::HeadDetachedAgain {
                branch: t(),
                at: None,
            }
            .into(),
            RunWarning::HeadNotDetached { branch: t() }.into(),
            RunWarning::HeadUnborn { head: t() }.into(),
            RunWarning::RefsNotMirrored { why: t() }.into(),
            RunWarning::RefNotKept { name: t(), id: t() }.into(),
            RunWarning::DanglingRefDropped { name: t(), id: t() }.into(),
            RunWarning::ProfileEntryTakenOut {
                path: path(),
                what: t(),
                max_bytes: 1,
            }
            .into(),
            RunWarning::ProfileChangeHeld {
                path: path(),
                profile: t(),
            }
            .into(),
        ]
    }

    fn promote_and_land(path: fn() -> PathBuf, t: fn() -> String) -> Vec<Warning> {
        vec![
            PromoteWarning::NestedLeftOut { path: t() }.into(),
            PromoteWarning::NestedNotInSource { path: t() }.into(),
            PromoteWarning::NestedNotCaptured {
                path: t(),
                why: t(),
            }
            .into(),
            PromoteWarning::NestedNotPushed { path: t() }.into(),
            PromoteWarning::NestedOnItsOwn { path: t() }.into(),
            PromoteWarning::InterruptedWhileApplying.into(),
            PromoteWarning::InterruptedDuringReplay.into(),
            PromoteWarning::SubmoduleStays {
                path: t(),
                why: t(),
            }
            .into(),
            PromoteWarning::RetainedBranchNotMade {
                branch: t(),
                why: t(),
            }
            .into(),
            PromoteWarning::StashKept { stash: t() }.into(),
            LandWarning::TestWritesDropped { paths: vec![t()] }.into(),
            LandWarning::NotCleanedUp {
                session_id: t(),
                why: t(),
            }
            .into(),
            LandWarning::AlreadyOnBranch.into(),
            LandWarning::HeadMovedDuringTest.into(),
            LandWarning::TestUnderSh.into(),
            LandWarning::PromoteStopped {
                detail: "a detail".into(),
            }
            .into(),
            LandWarning::NotReclaimed { why: t() }.into(),
            LandWarning::MovedBack.into(),
            LandWarning::BaseNotTaken {
                base: t(),
                head: t(),
            }
            .into(),
            LandWarning::OtherHooks {
                settings: path(),
                count: 2,
                event: t(),
            }
            .into(),
            LandWarning::SettingsNotIgnored { file: t() }.into(),
        ]
    }

    #[test]
    fn every_warning_has_words_of_its_own_and_json_carries_them_as_one_string() {
        let all = one_of_each();
        let words: Vec<String> = all.iter().map(Warning::to_string).collect();
        for (warning, said) in all.iter().zip(&words) {
            assert!(!said.trim().is_empty(), "{warning:?} says nothing");
            let json = serde_json::to_value(warning).unwrap();
            assert_eq!(json, serde_json::Value::String(said.clone()));
        }
        let mut distinct = words.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(
            distinct.len(),
            words.len(),
            "two kinds of warning read alike"
        );
    }

    #[test]
    fn a_warning_read_back_from_a_record_says_what_it_said() {
        let said = LandWarning::HeadMovedDuringTest;
        let text = serde_json::to_string(&Warning::from(said.clone())).unwrap();
        let back: Warning = serde_json::from_str(&text).unwrap();
        assert_eq!(back.to_string(), said.to_string());
        assert!(matches!(back, Warning::Recorded(_)));
    }
}
