//! Change sets through git remotes: push, fetch, list and deletion of their refs.
//! May call: base, git, store, context, model, recovery and the rest of services.
//!
//! `push` publishes a change set as the commit `refs/a3s-iso/changes/<digest hex>` on a remote
//! (`carrier.rs` says what the commit holds); `fetch` (and `promote --from`) fetches exactly that
//! ref into a private ref, verifies the commit completely and keeps it under `<ns>fetched/<digest
//! hex>`; `list_remote` reads what a remote holds; `delete_changes` removes change sets from a
//! remote (the library part of a remote clean-up). Transport and authentication are git's own,
//! through the remotes the source repository configures (`select.rs`).

mod carrier;
mod listing;
mod select;

use std::path::PathBuf;

use serde::Serialize;

pub use crate::services::remote::listing::{ListedChangeSet, RemoteListing, list_remote};
pub(crate) use crate::services::remote::select::choose as choose_remote;
pub use crate::services::remote::select::{CHANGES_PREFIX, Remote, changes_ref};
use crate::services::remote::select::{choose, digest_hex, ref_digest};

use crate::base::error::{Error, NoDocument, Result};
use crate::base::ids::{Digest, RunId, SessionId, TreeId};
use crate::base::warning::{PromoteWarning, Warning};
use crate::context::{Context, Located};
use crate::git::RefUpdate;
use crate::model::changeset::{self, RunState};
use crate::services::evidence::{self, Target};
use crate::services::remote::carrier::Carried;

/// The largest patch `fetch` and `promote --from` read from a remote by default (256 MiB).
pub const DEFAULT_MAX_BYTES: u64 = 256 * 1024 * 1024;

/// Where `push` takes the change set from.
#[derive(Debug, Clone)]
pub enum PushSource {
    /// A fresh cumulative capture of the session (resolved as for every command when `None`),
    /// recorded under a new run id.
    Session(Option<String>),
    /// A change-set document, verified completely first.
    Document(PathBuf),
    /// The stored document of a run of the session.
    Run {
        /// The session (resolved as for every command when `None`).
        session_id: Option<String>,
        /// The run.
        run_id: String,
    },
}

/// What `push` is asked to do.
#[derive(Debug, Clone)]
pub struct PushOptions {
    /// The change set.
    pub source: PushSource,
    /// The remote (default: the current branch's upstream remote, else `origin`).
    pub remote: Option<String>,
    /// Accept a URL that is not a configured remote.
    pub allow_url: bool,
}

/// What a push did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PushResult {
    /// The change set's ref is new on the remote.
    Pushed,
    /// The remote held the digest already; nothing was pushed.
    Unchanged,
}

/// The report of a push.
#[derive(Debug, Clone, Serialize)]
pub struct PushOutcome {
    /// `pushed` or `unchanged`.
    pub outcome: PushResult,
    /// `sha256:<hex>` of the patch.
    pub digest: Digest,
    /// The ref on the remote.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The remote.
    pub remote: Remote,
    /// The commit the ref points at on the remote.
    pub commit: String,
    /// The document's session.
    pub session_id: String,
    /// The document's run.
    pub run_id: String,
    /// How the run ended.
    pub state: RunState,
    /// The patch's size.
    pub patch_bytes: u64,
    /// How many files the patch touches.
    pub files_changed: u64,
    /// `git-tree:<hex>` the patch applies to.
    pub base_tree: TreeId,
    /// `git-tree:<hex>` the patch makes.
    pub result_tree: TreeId,
    /// What the user should know.
    pub warnings: Vec<Warning>,
}

/// Publishes a change set on a remote as `refs/a3s-iso/changes/<digest hex>`; a digest the
/// remote holds already is `unchanged`, and nothing is pushed.
pub fn push(ctx: &Context, opts: &PushOptions) -> Result<PushOutcome> {
    // The remote is checked before a session is captured for it.
    let dir = crate::recovery::locate(ctx)?.repo.toplevel;
    let remote = choose(&ctx.git, &dir, opts.remote.as_deref(), opts.allow_url)?;
    let (located, carried, warnings) = change_set_to_push(ctx, &opts.source)?;
    let dir = located.repo.toplevel.clone();
    let commit = crate::services::remote::carrier::write_commit(&ctx.git, &dir, &carried)?;
    let cs = &carried.change_set;
    let reference = changes_ref(&cs.patch_digest);
    // A digest already there is `unchanged`, whatever commit holds it (a capture of the same
    // patch under another run makes another commit): `commit` is the one the remote holds.
    let (outcome, commit) = publish(ctx, &dir, &remote, &commit, &reference)?;
    Ok(PushOutcome {
        outcome,
        digest: cs.patch_digest.clone(),
        reference,
        remote,
        commit,
        session_id: cs.identity.session_id.clone(),
        run_id: cs.identity.run_id.clone(),
        state: cs.state,
        patch_bytes: cs.patch_bytes,
        files_changed: carried.patch.files_changed,
        base_tree: cs.base_tree.clone(),
        result_tree: cs.result_tree.clone(),
        warnings,
    })
}

/// Pushes `commit` to `reference` unless the remote has that ref; returns what happened and
/// the commit the remote holds there.
fn publish(
    ctx: &Context,
    dir: &std::path::Path,
    remote: &Remote,
    commit: &str,
    reference: &str,
) -> Result<(PushResult, String)> {
    let there = |refs: Vec<(String, String)>| refs.into_iter().find(|(_, r)| r == reference);
    let patterns = [reference.to_string()];
    if let Some((oid, _)) = there(ctx.git.ls_remote(dir, &remote.name, &patterns)?) {
        return Ok((PushResult::Unchanged, oid));
    }
    let pushed = ctx
        .git
        .push_refs(dir, &remote.name, &[format!("{commit}:{reference}")]);
    if let Err(err) = pushed {
        // Another push of the same digest may have won the race: then it is there.
        return match there(ctx.git.ls_remote(dir, &remote.name, &patterns)?) {
            Some((oid, _)) => Ok((PushResult::Unchanged, oid)),
            None => Err(err),
        };
    }
    Ok((PushResult::Pushed, commit.to_string()))
}

/// The change set a push publishes, from where `source` says, with its trees in this repository.
fn change_set_to_push(
    ctx: &Context,
    source: &PushSource,
) -> Result<(Located, Carried, Vec<Warning>)> {
    let (located, verified) = match source {
        PushSource::Session(session) => return session_change_set(ctx, session.as_deref()),
        PushSource::Document(path) => {
            let verified = changeset::verify_file(&ctx.git, path)?;
            (crate::recovery::locate(ctx)?, verified)
        }
        PushSource::Run { session_id, run_id } => {
            let located = crate::recovery::locate(ctx)?;
            let record = ctx.resolve_session(&located, session_id.as_deref())?;
            // A run id a3s-iso could not have given names no stored document.
            let stored = match RunId::new(run_id.as_str()) {
                Ok(run) => located.store.load_run_doc(&record.session_id, &run)?,
                Err(_) => None,
            };
            let bytes = stored.ok_or_else(|| NoDocument::NotStored {
                session_id: record.session_id.to_string(),
                run_id: run_id.clone(),
            })?;
            (located, changeset::verify(&bytes)?)
        }
    };
    let cs = &verified.change_set;
    let trees = [cs.base_tree.as_str(), cs.result_tree.as_str()];
    let found = ctx
        .git
        .object_info(&located.repo.toplevel, &trees.map(str::to_string))?;
    if let Some((tree, _)) = trees.iter().zip(&found).find(|(_, info)| {
        info.as_ref()
            .is_none_or(|i| !crate::git::is_tree_type(&i.kind))
    }) {
        return Err(Error::from(crate::base::invalid::Invalid::TreeNotHere {
            tree: tree.to_string(),
        }));
    }
    let patch =
        crate::model::snapshot::Patch::from_bytes(&verified.patch, &located.store.scratch_dir())?;
    let carried = Carried {
        change_set: cs.detached(),
        patch,
    };
    Ok((located, carried, Vec::new()))
}

/// A session's change set as `push` publishes it: its digest, base tree and result tree, and
/// what it leaves behind (nested change sets do not travel).
pub(crate) struct SessionChangeSet {
    pub(crate) digest: Digest,
    pub(crate) base_tree: TreeId,
    pub(crate) result_tree: TreeId,
    pub(crate) warnings: Vec<Warning>,
}

/// The session's change set now, as [`push`] takes it (its last capture when nothing changed
/// since, else a fresh one): the same work gives the same digest, run after run.
pub(crate) fn session_change_set_now(
    ctx: &Context,
    session: &SessionId,
) -> Result<SessionChangeSet> {
    let (_, carried, warnings) = session_change_set(ctx, Some(session))?;
    let cs = carried.change_set;
    Ok(SessionChangeSet {
        digest: cs.patch_digest,
        base_tree: cs.base_tree,
        result_tree: cs.result_tree,
        warnings,
    })
}

/// The session's change set now: its last capture when nothing changed since (as `capture`
/// reuses it), else a fresh cumulative capture under a new run id, without the document's
/// size limit. Nested change sets do not travel: the push carries the root.
fn session_change_set(
    ctx: &Context,
    session: Option<&str>,
) -> Result<(Located, Carried, Vec<Warning>)> {
    let target = Target::prepare(ctx, session, None, None)?;
    let (snap, nested) = evidence::snapshot_all(ctx, &target.located, &target.isolation)?;
    if let Some(last) = evidence::reusable(ctx, &target, &snap.tree, &nested.sets())? {
        let stored = PushSource::Run {
            session_id: Some(target.record.session_id.to_string()),
            run_id: last.change_set.identity.run_id,
        };
        let (located, carried, _) = change_set_to_push(ctx, &stored)?;
        return Ok((located, carried, nested_warnings(&nested, &snap.nested)));
    }
    let (patch, change_set) = evidence::record_run(
        ctx,
        &target.located,
        &target.completed(&TreeId::new(&snap.tree)?),
    )?;
    let warnings = nested_warnings(&nested, &snap.nested);
    Ok((target.located, Carried { change_set, patch }, warnings))
}

/// What a push of the root change set leaves behind: nested change sets and nested
/// repositories, which do not travel.
fn nested_warnings(nested: &crate::services::nested::Nested, left_out: &[String]) -> Vec<Warning> {
    let mut warnings = nested.warnings();
    let sets = nested.sets().into_iter();
    warnings.extend(sets.map(|set| PromoteWarning::NestedNotPushed { path: set.path }.into()));
    let left_out = left_out.iter().cloned();
    warnings.extend(left_out.map(|path| PromoteWarning::NestedLeftOut { path }.into()));
    warnings
}

/// What `fetch` (and `promote --from`) asks for.
#[derive(Debug, Clone)]
pub struct FetchRequest {
    /// The remote: a configured name, or a URL with `allow_url`.
    pub remote: String,
    /// One change set (`sha256:<hex>`), or every change set on the remote.
    pub digest: Option<String>,
    /// Accept a URL that is not a configured remote.
    pub allow_url: bool,
    /// The largest patch read (checked by its size before it is read).
    pub max_bytes: u64,
}

/// A change set fetched and verified, pinned under a private ref.
#[derive(Debug, Clone, Serialize)]
pub struct FetchedChangeSet {
    /// `sha256:<hex>` of the patch.
    pub digest: Digest,
    /// The private ref that pins its commit here.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The commit.
    pub commit: String,
    /// The document's session.
    pub session_id: String,
    /// The document's run.
    pub run_id: String,
    /// How the run ended.
    pub state: RunState,
    /// The patch's size.
    pub patch_bytes: u64,
    /// `git-tree:<hex>` the patch applies to.
    pub base_tree: TreeId,
    /// `git-tree:<hex>` the patch makes.
    pub result_tree: TreeId,
}

/// A change set on the remote that failed verification (nothing of it is kept).
#[derive(Debug, Clone, Serialize)]
pub struct RefusedChangeSet {
    /// The digest its ref name claims.
    pub digest: String,
    /// The rule it breaks.
    pub rule: crate::base::error::ChangeSetRule,
    /// The field concerned.
    pub field: String,
    /// What is wrong.
    pub detail: String,
}

/// The report of a fetch.
#[derive(Debug, Clone, Serialize)]
pub struct FetchOutcome {
    /// The remote.
    pub remote: Remote,
    /// The change sets fetched and verified.
    pub fetched: Vec<FetchedChangeSet>,
    /// The change sets refused (only when fetching every change set; one asked for by digest
    /// that fails is an error).
    pub refused: Vec<RefusedChangeSet>,
}

/// A change set fetched for a promote: verified, with its patch on disk.
pub(crate) struct Fetched {
    pub(crate) patch: crate::model::snapshot::Patch,
    pub(crate) base_tree: TreeId,
    pub(crate) result_tree: TreeId,
    /// What the report says of it.
    pub(crate) report: FetchedChangeSet,
}

/// Fetches one change set or every one (`req.digest`), verifies each and pins it under
/// `<ns>fetched/<digest hex>`.
pub fn fetch(ctx: &Context, req: &FetchRequest) -> Result<FetchOutcome> {
    let located = crate::recovery::locate(ctx)?;
    let dir = &located.repo.toplevel;
    let remote = choose(&ctx.git, dir, Some(&req.remote), req.allow_url)?;
    let mut out = FetchOutcome {
        remote: remote.clone(),
        fetched: Vec::new(),
        refused: Vec::new(),
    };
    if let Some(digest) = &req.digest {
        let fetched = fetch_verified(ctx, &located, &remote, digest, req.max_bytes)?;
        out.fetched.push(fetched.report);
        return Ok(out);
    }
    let held = select::held(&ctx.git, dir, &remote)?;
    let digests: Vec<String> = held.iter().filter_map(|(_, r)| ref_digest(r)).collect();
    for (digest, result) in fetch_many(ctx, &located, &remote, &digests, req.max_bytes)? {
        match result {
            Ok(fetched) => out.fetched.push(fetched.report),
            Err(Error::ChangeSetInvalid {
                rule,
                field,
                detail,
            }) => out.refused.push(RefusedChangeSet {
                digest,
                rule,
                field,
                detail,
            }),
            Err(other) => return Err(other),
        }
    }
    Ok(out)
}

/// Fetches the change set `digest` from `remote` and verifies it; see [`fetch_many`].
pub(crate) fn fetch_verified(
    ctx: &Context,
    located: &Located,
    remote: &Remote,
    digest: &str,
    max_bytes: u64,
) -> Result<Fetched> {
    let query = changeset::DigestQuery::parse("--digest", digest)?;
    let pattern = match &query {
        changeset::DigestQuery::Full(full) => changes_ref(full),
        changeset::DigestQuery::Prefix(prefix) => format!("{CHANGES_PREFIX}{prefix}*"),
    };
    let dir = &located.repo.toplevel;
    let listed = ctx
        .git
        .ls_remote(dir, &remote.name, std::slice::from_ref(&pattern))?;
    let held = listed
        .iter()
        .filter_map(|(_, r)| r.strip_prefix(CHANGES_PREFIX).map(str::to_string));
    let digest = match query.resolve("--digest", held)? {
        Some(digest) if listed.iter().any(|(_, r)| *r == changes_ref(&digest)) => digest,
        _ => {
            return Err(Error::ChangeSetNotFound {
                remote: remote.name.clone(),
                digest: query.shown(),
                reference: pattern,
            });
        }
    };
    let mut results = fetch_many(ctx, located, remote, &[digest.into()], max_bytes)?;
    let none = || Err(Error::internal("a fetch of one change set reported none"));
    results.pop().map_or_else(none, |(_, result)| result)
}

/// Fetches the change sets `digests` from `remote` in one fetch, each into a private ref unique to
/// this fetch, verifies each and moves the verified ones to `<ns>fetched/<digest hex>`; a refused
/// one's ref is deleted, so nothing of it stays reachable.
fn fetch_many(
    ctx: &Context,
    located: &Located,
    remote: &Remote,
    digests: &[String],
    max_bytes: u64,
) -> Result<Vec<(String, Result<Fetched>)>> {
    if digests.is_empty() {
        return Ok(Vec::new());
    }
    let dir = &located.repo.toplevel;
    let ns = located.store.refs();
    drop_dead_fetches(ctx, located)?;
    let temps: Vec<String> = digests
        .iter()
        .map(|_| ns.fetching(&crate::base::maker::owned_name("f")))
        .collect();
    let refspecs: Vec<String> = digests
        .iter()
        .zip(&temps)
        .map(|(digest, temp)| format!("+{}:{temp}", changes_ref(digest)))
        .collect();
    ctx.git.fetch_refs(dir, &remote.name, &refspecs)?;
    crate::fault_point!("fetch-before-verify");
    let mut results = Vec::new();
    for (digest, temp) in digests.iter().zip(&temps) {
        let checked = check_fetched(ctx, located, temp, digest, max_bytes);
        let mut updates = vec![RefUpdate::Delete { name: temp.clone() }];
        if let Ok(fetched) = &checked {
            updates.push(RefUpdate::Set {
                name: fetched.report.reference.clone(),
                target: fetched.report.commit.clone(),
            });
        }
        ctx.git.update_refs(dir, &updates, "a3s-iso: fetch")?;
        results.push((digest.clone(), checked));
    }
    Ok(results)
}

/// Deletes the landing refs of fetches whose process died before it verified them.
pub(crate) fn drop_dead_fetches(ctx: &Context, located: &Located) -> Result<()> {
    let dir = &located.repo.toplevel;
    let prefix = located.store.refs().fetching("");
    let dead: Vec<RefUpdate> = ctx
        .git
        .list_refs(dir, std::slice::from_ref(&prefix))?
        .into_iter()
        .filter(|name| {
            name.strip_prefix(&prefix)
                .is_some_and(crate::base::maker::made_by_dead)
        })
        .map(|name| RefUpdate::Delete { name })
        .collect();
    ctx.git.update_refs(dir, &dead, "a3s-iso: fetch")
}

/// Verifies the commit at `temp` as the change set `digest`.
fn check_fetched(
    ctx: &Context,
    located: &Located,
    temp: &str,
    digest: &str,
    max_bytes: u64,
) -> Result<Fetched> {
    let dir = &located.repo.toplevel;
    let scratch = located.store.scratch_dir();
    let verifier = crate::services::remote::carrier::Verifier {
        git: &ctx.git,
        dir,
        max_bytes,
        scratch: &scratch,
    };
    let (carried, commit) = verifier.verify(temp, digest)?;
    let cs = carried.change_set;
    let report = FetchedChangeSet {
        digest: cs.patch_digest.clone(),
        reference: located.store.refs().fetched(digest_hex(&cs.patch_digest)),
        commit,
        session_id: cs.identity.session_id.clone(),
        run_id: cs.identity.run_id.clone(),
        state: cs.state,
        patch_bytes: cs.patch_bytes,
        base_tree: cs.base_tree.clone(),
        result_tree: cs.result_tree.clone(),
    };
    Ok(Fetched {
        base_tree: cs.base_tree,
        result_tree: cs.result_tree,
        patch: carried.patch,
        report,
    })
}

/// Resolves the remote a promote takes a change set from and fetches it, verified.
pub(crate) fn fetch_for_promote(
    ctx: &Context,
    located: &Located,
    req: &FetchRequest,
) -> Result<Fetched> {
    let remote = choose(
        &ctx.git,
        &located.repo.toplevel,
        Some(&req.remote),
        req.allow_url,
    )?;
    let digest = (req.digest.as_deref())
        .ok_or_else(|| Error::usage("promote --from REMOTE needs --digest sha256:<hex>"))?;
    fetch_verified(ctx, located, &remote, digest, req.max_bytes)
}

/// Which change sets [`delete_changes`] removes from a remote.
#[derive(Debug, Clone)]
pub enum DeleteSelection {
    /// These digests (`sha256:<hex>`).
    Digests(Vec<String>),
    /// Every change set whose commit is dated (its document's `observed_at_ms`) more than this
    /// long ago.
    OlderThan(std::time::Duration),
}

/// The report of a deletion on a remote.
#[derive(Debug, Clone, Serialize)]
pub struct DeleteOutcome {
    /// The remote.
    pub remote: Remote,
    /// The digests whose refs were deleted.
    pub deleted: Vec<String>,
    /// The digests asked for that the remote did not hold.
    pub absent: Vec<String>,
    /// Nothing was deleted: `deleted` is what would go.
    pub dry_run: bool,
}

/// Deletes change sets (`refs/a3s-iso/changes/*`) from a remote, in one atomic push (with
/// `dry_run`, only says which): `push --delete` and `gc --remote`.
pub fn delete_changes(
    ctx: &Context,
    remote: Option<&str>,
    allow_url: bool,
    selection: &DeleteSelection,
    dry_run: bool,
) -> Result<DeleteOutcome> {
    let located = crate::recovery::locate(ctx)?;
    let dir = &located.repo.toplevel;
    let remote = choose(&ctx.git, dir, remote, allow_url)?;
    let held: Vec<String> = ctx
        .git
        .ls_remote(dir, &remote.name, &[format!("{CHANGES_PREFIX}*")])?
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let (wanted, absent) = match selection {
        DeleteSelection::Digests(digests) => {
            let on_remote: Vec<String> = held
                .iter()
                .filter_map(|r| r.strip_prefix(CHANGES_PREFIX).map(str::to_string))
                .collect();
            let (mut wanted, mut absent) = (Vec::new(), Vec::new());
            for given in digests {
                let query = changeset::DigestQuery::parse("--digest", given)?;
                match query.resolve("--digest", on_remote.iter().cloned())? {
                    Some(d) if held.contains(&changes_ref(&d)) => wanted.push(d.into()),
                    Some(d) => absent.push(d.into()),
                    None => absent.push(query.shown()),
                }
            }
            (wanted, absent)
        }
        DeleteSelection::OlderThan(window) => {
            let listing = list_remote(ctx, Some(&remote.name), allow_url)?;
            let cutoff = crate::base::fsutil::now_ms().saturating_sub(window.as_millis() as u64);
            let old = listing
                .change_sets
                .into_iter()
                .filter(|c| c.observed_at_ms.is_some_and(|at| at < cutoff))
                .map(|c| c.digest)
                .collect();
            (old, Vec::new())
        }
    };
    let refspecs: Vec<String> = wanted
        .iter()
        .map(|d| format!(":{}", changes_ref(d)))
        .collect();
    if !refspecs.is_empty() && !dry_run {
        ctx.git.push_refs(dir, &remote.name, &refspecs)?;
    }
    Ok(DeleteOutcome {
        remote,
        deleted: wanted,
        absent,
        dry_run,
    })
}
