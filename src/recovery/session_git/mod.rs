//! git inside a session's runs, with everything it creates private to the session.
//! May call: base, git, store, context, model and the rest of recovery.
//!
//! Inside the sandbox, the repository's git dir carries the session's own persistent layer
//! (`<state>/session-git/<id>/common/`): the branches, tags, stash and reflogs git writes land
//! there, for the session's later runs; the repository's own refs never change. The admin dir
//! carries a layer too (`admin/`), so a symbolic `HEAD` (`git switch -c feature`) never reaches
//! the admin dir git outside reads. After the run, [`settle`] moves what changed there down,
//! `HEAD` detached at the commit it resolves to, remembers the branch (`head.json`), and
//! mirrors the session's refs (`<ns>sessions/<id>/git/...`) so that `gc` keeps their objects.
//! A run that left nothing in the admin dir's layer and the git dir's layer as the last whole
//! mirror found it (`mirrored` keeps that layer's stamp) has nothing to settle.
//! Before the next run, [`prepare`] puts the symbolic `HEAD` back when the detached one still
//! is that branch's tip.
//!
//! The move is recorded first ([`TreeMove::SettleGit`]), so the next command finishes what a
//! crash interrupted; a run killed while its command ran never touched the admin dir, and its
//! layer is dropped before the session's next run.

mod movedown;
pub(crate) mod view;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::base::beneath::{Dir, Kind};
use crate::base::error::{IoContext, Result};
use crate::base::ids::SessionId;
use crate::base::names::RefNames;
use crate::base::sandbox::GitLayers;
use crate::base::warning::{RunWarning, Warning};
use crate::git::repo::Repo;
use crate::git::{Git, RefUpdate};
use crate::recovery::pending::{self, SettleGit, TreeMove};
use crate::store::lock::RepoLock;
use crate::store::state::Store;

use crate::recovery::session_git::view::RefView;

/// The session's branch, as the last run left `HEAD` on it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct HeadRecord {
    /// The branch (`refs/heads/...`) `HEAD` was on inside; `None`: detached.
    pub branch: Option<String>,
}

const HEAD_SCHEMA: &str = "a3s-iso.session-git-head.v1";

/// The most a `HEAD` file is read up to.
const HEAD_LIMIT: u64 = 4096;

struct Places {
    dir: PathBuf,
}

impl Places {
    fn of(store: &Store, id: &SessionId) -> Places {
        Places {
            dir: store.session_git_dir(id),
        }
    }

    fn upper(&self, which: &str) -> PathBuf {
        self.dir.join(which).join("upper")
    }

    fn work(&self, which: &str) -> PathBuf {
        self.dir.join(which).join("work")
    }

    fn head_record(&self) -> PathBuf {
        self.dir.join("head.json")
    }

    /// The stamp of the git dir's layer the last whole mirror was made of ([`layer_stamp`]).
    fn mirrored_stamp(&self) -> PathBuf {
        self.dir.join("mirrored")
    }

    /// Whether both layers were mounted by the last run (an overlay makes `work/work`).
    fn were_mounted(&self) -> bool {
        ["common", "admin"]
            .iter()
            .all(|w| std::fs::symlink_metadata(self.work(w).join("work")).is_ok_and(|m| m.is_dir()))
    }
}

/// Gets the session's layers ready for a sandboxed run (lease held): an interrupted move is
/// finished, what a killed run left in the admin layer is dropped (with its dangling refs),
/// and a symbolic `HEAD` is put back. Returns the spec's layers and warnings.
pub(crate) fn prepare(
    git: &Git,
    repo: &Repo,
    store: &Store,
    session_id: &SessionId,
    admin: &Path,
) -> Result<(GitLayers, Vec<Warning>)> {
    let places = Places::of(store, session_id);
    for which in ["common", "admin"] {
        for dir in [places.upper(which), places.work(which)] {
            std::fs::create_dir_all(&dir).ctx(|| format!("cannot create {}", dir.display()))?;
        }
    }
    open_up_layers(&places)?;
    let mut warnings = Vec::new();
    let settling = pending::left(store)
        .into_iter()
        .any(|intent| matches!(intent, TreeMove::SettleGit(ref s) if s.session_id == *session_id));
    if settling {
        warnings.extend(finish(git, repo, store, session_id, admin)?);
    }
    let admin_upper = open(&places.upper("admin"))?;
    if !admin_upper
        .entries()
        .ctx(|| "cannot list the admin layer".into())?
        .is_empty()
    {
        admin_upper
            .empty()
            .ctx(|| "cannot empty the admin layer".into())?;
        warnings.extend(drop_dangling(git, repo, &places)?);
    }
    for which in ["common", "admin"] {
        open(&places.work(which))?
            .empty()
            .ctx(|| format!("cannot empty {}", places.work(which).display()))?;
    }
    // A killed run never trimmed its git dir's layer: only its refs go on.
    keep_only_refs(&places)?;
    // The session's git is gone (its lease is ours): a lock file in its layer is a killed
    // git's, and would fail every later change of that ref.
    drop_locks(&open(&places.upper("common"))?)
        .ctx(|| "cannot drop the git dir layer's lock files".into())?;
    restore_branch(repo, &places, admin, &admin_upper)?;
    #[cfg(feature = "fault-injection")]
    if std::env::var(crate::base::fault::VAR).as_deref() == Ok("git-layers-unmountable") {
        // As on a file system that cannot hold the layer: the overlay over the git dir fails.
        let _ = std::fs::remove_dir(places.upper("common"));
    }
    let layers = GitLayers {
        dir: places.dir.clone(),
        admin: admin.to_path_buf(),
        sealed_otherwise: vec![repo.common_dir.join("refs")],
    };
    Ok((layers, warnings))
}

/// Gives the owner back what the command may have taken away by `chmod` inside the layers:
/// search, read and write on every directory and read on every file, so that a3s-iso can move
/// down, trim and empty them. Links and special files are left as they are.
fn open_up_layers(places: &Places) -> Result<()> {
    for which in ["common", "admin"] {
        let upper = places.upper(which);
        let open_up = || -> std::io::Result<()> {
            let Ok(meta) = std::fs::symlink_metadata(&upper) else {
                return Ok(());
            };
            if meta.is_dir() && meta.mode() & 0o700 != 0o700 {
                let mode = (meta.mode() & 0o777) | 0o700;
                std::fs::set_permissions(&upper, std::fs::Permissions::from_mode(mode))?;
            }
            open_up(&Dir::open(&upper)?)
        };
        open_up().ctx(|| format!("cannot open up {}", upper.display()))?;
    }
    Ok(())
}

/// [`open_up_layers`] beneath one directory.
fn open_up(dir: &Dir) -> std::io::Result<()> {
    use rustix::fs::{AtFlags, Mode, chmodat, statat};
    for entry in dir.entries()? {
        let name = Path::new(&entry.name);
        let wanted = match entry.kind {
            Kind::Dir => 0o700,
            Kind::File => 0o600,
            _ => continue,
        };
        let mode = statat(dir.fd(), name, AtFlags::SYMLINK_NOFOLLOW)?.st_mode & 0o777;
        if mode & wanted != wanted {
            // The entry is no link (the command is gone: nothing replaces it meanwhile).
            chmodat(
                dir.fd(),
                name,
                Mode::from_raw_mode(mode | wanted),
                AtFlags::empty(),
            )?;
        }
        if entry.kind == Kind::Dir {
            open_up(&dir.dir(name)?)?;
        }
    }
    Ok(())
}

/// Removes every `*.lock` file under `dir` (links and special files are left alone).
fn drop_locks(dir: &Dir) -> std::io::Result<()> {
    for entry in dir.entries()? {
        let name = Path::new(&entry.name);
        match entry.kind {
            Kind::File if entry.name.as_encoded_bytes().ends_with(b".lock") => {
                dir.remove(name)?;
            }
            Kind::Dir => drop_locks(&dir.dir(name)?)?,
            _ => {}
        }
    }
    Ok(())
}

fn open(path: &Path) -> Result<Dir> {
    Dir::open(path).ctx(|| format!("cannot open {}", path.display()))
}

/// Puts `ref: <branch>` in the admin layer when the last run left `HEAD` on a branch still
/// detached at its tip (else something outside moved it, and the run starts detached there).
fn restore_branch(repo: &Repo, places: &Places, admin: &Path, upper: &Dir) -> Result<()> {
    let record: Option<HeadRecord> = crate::base::fsutil::read_json(&places.head_record())?;
    let Some(branch) = record.and_then(|r| r.branch) else {
        return Ok(());
    };
    let view = RefView::new(&repo.common_dir, &places.upper("common"));
    let Some(tip) = view.resolve(&branch) else {
        return remember(places, None);
    };
    let head = open(admin)?
        .read_small(Path::new("HEAD"), HEAD_LIMIT)
        .unwrap_or_default();
    if String::from_utf8_lossy(&head).trim_end() == tip {
        upper
            .put(Path::new("HEAD"), format!("ref: {branch}\n").as_bytes())
            .ctx(|| "cannot write the admin layer's HEAD".into())?;
        return Ok(());
    }
    // Moved outside since: the session goes on detached there.
    remember(places, None)
}

/// After a sandboxed run (objects migrated, lease held): moves what git inside changed in the
/// admin dir down, `HEAD` detached, and mirrors the session's refs; or warns that the layers
/// could not be mounted (the run had a throwaway layer and `refs/` read-only).
pub(crate) fn settle(
    git: &Git,
    repo: &Repo,
    store: &Store,
    session_id: &SessionId,
    (admin, head_before): (&Path, &[u8]),
) -> Result<Vec<Warning>> {
    let places = Places::of(store, session_id);
    if !places.were_mounted() {
        open(&places.upper("admin"))?
            .empty()
            .ctx(|| "cannot empty the admin layer".into())?;
        let mut warnings = vec![RunWarning::GitLayersNotMounted.into()];
        warnings.extend(keep_head_detached(git, repo, admin, head_before));
        return Ok(warnings);
    }
    if untouched_since_mirrored(&places) {
        return Ok(Vec::new());
    }
    let intent = TreeMove::SettleGit(SettleGit {
        session_id: session_id.clone(),
        admin: admin.to_path_buf(),
    });
    pending::save(store, &intent)?;
    crate::fault_point!("settle-git-after-intent");
    finish(git, repo, store, session_id, admin)
}

/// Finishes every interrupted `SettleGit` whose session's lease is free, under the repository
/// lock. Best effort: one that fails stays pending.
pub(crate) fn recover(_held: &RepoLock, git: &Git, repo: &Repo, store: &Store) {
    for intent in pending::left(store) {
        if let TreeMove::SettleGit(settle) = intent
            && let Ok(Some(_lease)) = store.try_lease(&settle.session_id)
        {
            let _ = finish(git, repo, store, &settle.session_id, &settle.admin);
        }
    }
}

/// The admin dir's `HEAD` file as it is (empty when it cannot be read).
pub(crate) fn read_head(admin: &Path) -> Vec<u8> {
    Dir::open(admin)
        .and_then(|dir| dir.read_small(Path::new("HEAD"), HEAD_LIMIT))
        .unwrap_or_default()
}

/// Without the session's layers the command wrote the admin dir itself: a `HEAD` it left on a
/// branch is detached again, at the commit the repository's refs give that name, or else back
/// at `before`. Returns a warning when it was.
pub(crate) fn keep_head_detached(
    git: &Git,
    repo: &Repo,
    admin: &Path,
    before: &[u8],
) -> Vec<Warning> {
    let head = String::from_utf8_lossy(&read_head(admin))
        .trim_end()
        .to_string();
    let Some(name) = head.strip_prefix("ref: ").map(str::trim) else {
        return Vec::new();
    };
    let commit = git
        .rev_parse(&repo.toplevel, &format!("{name}^{{commit}}"))
        .ok()
        .flatten();
    let bytes = match &commit {
        Some(commit) => format!("{commit}\n").into_bytes(),
        None => before.to_vec(),
    };
    let written = !bytes.is_empty()
        && Dir::open(admin)
            .and_then(|dir| dir.put(Path::new("HEAD"), &bytes))
            .is_ok();
    let branch = name.to_string();
    vec![
        match written {
            true => RunWarning::HeadDetachedAgain { branch, at: commit },
            false => RunWarning::HeadNotDetached { branch },
        }
        .into(),
    ]
}

/// The move itself, and the intent's removal; each step can be done again.
pub(crate) fn finish(
    git: &Git,
    repo: &Repo,
    store: &Store,
    session_id: &SessionId,
    admin: &Path,
) -> Result<Vec<Warning>> {
    let places = Places::of(store, session_id);
    open_up_layers(&places)?;
    let mut warnings = Vec::new();
    if let (Some(upper), Ok(real)) = (
        Dir::open_if_any(&places.upper("admin")).ok().flatten(),
        Dir::open(admin),
    ) {
        // What a run wrote there must run nothing for your own git, from the moment it is
        // down (a `run` killed right after the move never gets to the rest).
        warnings.extend(crate::model::neutralize::layer_before_move_down(
            git,
            &repo.common_dir,
            &places.upper("admin"),
            admin,
        ));
        crate::recovery::session_git::movedown::move_down(&upper, &real, &mut warnings)
            .ctx(|| format!("cannot move the run's git state into {}", admin.display()))?;
        crate::fault_point!("settle-git-after-move");
        let view = RefView::new(&repo.common_dir, &places.upper("common"));
        settle_head(&view, &upper, &real, &places, &mut warnings)?;
    }
    keep_only_refs(&places)?;
    // The mirror is made again after every run: one that fails is a warning, never a move
    // left pending forever.
    match mirror(git, repo, &store.refs(), session_id, &places) {
        Ok(more) => {
            // Mirrored whole: a run that leaves the layer as it is now needs no settling.
            if more.is_empty()
                && let Some(stamp) = layer_stamp(&places.upper("common"))
            {
                let _ =
                    crate::base::fsutil::write_atomic(&places.mirrored_stamp(), stamp.as_bytes());
            }
            warnings.extend(more)
        }
        Err(e) => warnings.push(RunWarning::RefsNotMirrored { why: e.to_string() }.into()),
    }
    pending::remove(store, session_id)?;
    Ok(warnings)
}

/// Whether the run left the session's git as the last settle did: nothing in the admin dir's
/// layer, and the git dir's layer exactly as the last whole mirror found it (every entry's
/// kind, size, times and inode), so there is nothing to move down, detach or mirror.
fn untouched_since_mirrored(places: &Places) -> bool {
    let admin_empty =
        std::fs::read_dir(places.upper("admin")).is_ok_and(|mut d| d.next().is_none());
    let mirrored = std::fs::read_to_string(places.mirrored_stamp()).ok();
    admin_empty && mirrored.is_some() && mirrored == layer_stamp(&places.upper("common"))
}

/// The most entries [`layer_stamp`] reads: a larger layer is settled whole every time.
const STAMP_LIMIT: usize = 10_000;

/// A digest of the layer at `upper` as it is: each entry's path, mode, size, inode and times
/// (a change of any entry moves its change time), links never followed. `None` when it cannot
/// be read whole or holds more than [`STAMP_LIMIT`] entries.
fn layer_stamp(upper: &Path) -> Option<String> {
    use sha2::Digest;
    use std::os::unix::ffi::OsStrExt;
    let mut digest = sha2::Sha256::new();
    let mut pending = vec![PathBuf::new()];
    let mut seen = 0;
    while let Some(rel) = pending.pop() {
        seen += 1;
        let path = upper.join(&rel);
        let meta = std::fs::symlink_metadata(&path)
            .ok()
            .filter(|_| seen <= STAMP_LIMIT)?;
        digest.update(rel.as_os_str().as_bytes());
        let times = (
            meta.mtime(),
            meta.mtime_nsec(),
            meta.ctime(),
            meta.ctime_nsec(),
        );
        let line = format!(
            "\0{:o} {} {} {times:?}\n",
            meta.mode(),
            meta.len(),
            meta.ino()
        );
        digest.update(line.as_bytes());
        if meta.is_dir() {
            let mut names = Vec::new();
            for entry in std::fs::read_dir(&path).ok()? {
                names.push(entry.ok()?.file_name());
            }
            names.sort();
            pending.extend(names.into_iter().rev().map(|name| rel.join(name)));
        }
    }
    Some(hex::encode(digest.finalize()))
}

/// Drops all of the git dir's layer but `refs/`, `logs/` and `packed-refs` (hooks, `rr-cache`).
fn keep_only_refs(places: &Places) -> Result<()> {
    let upper = open(&places.upper("common"))?;
    let entries = upper
        .entries()
        .ctx(|| "cannot list the git dir's layer".into())?;
    for entry in entries {
        if !["refs", "logs", "packed-refs"]
            .iter()
            .any(|k| entry.name == *k)
        {
            upper
                .remove(std::path::Path::new(&entry.name))
                .ctx(|| "cannot trim the git dir's layer".into())?;
        }
    }
    Ok(())
}

/// Detaches the admin dir's `HEAD` at the layer's (then dropped); remembers its branch.
fn settle_head(
    view: &RefView,
    upper: &Dir,
    real: &Dir,
    places: &Places,
    warnings: &mut Vec<Warning>,
) -> Result<()> {
    let name = Path::new("HEAD");
    // No `HEAD` in the layer: the run left it as it was (or this moved it already).
    let Ok(bytes) = upper.read_small(name, HEAD_LIMIT) else {
        return Ok(());
    };
    let head = String::from_utf8_lossy(&bytes).trim_end().to_string();
    let (branch, commit) = match head.strip_prefix("ref: ") {
        Some(branch) => (Some(branch.trim().to_string()), view.resolve(branch.trim())),
        None if crate::base::ids::is_object_hex(&head) => (None, Some(head.clone())),
        None => (None, None),
    };
    match &commit {
        Some(commit) => real
            .put(name, format!("{commit}\n").as_bytes())
            .ctx(|| "cannot write the isolation's HEAD".into())?,
        None => warnings.push(RunWarning::HeadUnborn { head: head.clone() }.into()),
    }
    remember(places, branch.filter(|_| commit.is_some()))?;
    upper
        .remove(name)
        .ctx(|| "cannot drop the admin layer's HEAD".into())?;
    Ok(())
}

/// Records the branch `HEAD` was on (`None`: detached) for the session's next run.
fn remember(places: &Places, branch: Option<String>) -> Result<()> {
    let record = HeadRecord { branch };
    crate::base::fsutil::write_record_atomic(&places.head_record(), HEAD_SCHEMA, &record)
}

/// Whether git accepts a name from the layer as a ref (so that one odd file does not fail the
/// whole mirror's transaction).
fn mirrorable(name: &str) -> bool {
    let chars = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"._/-+".contains(&b));
    chars
        && !name.contains("..")
        && !name.contains("//")
        && !name.ends_with('/')
        && name
            .split('/')
            .all(|part| !part.is_empty() && !part.starts_with('.') && !part.ends_with(".lock"))
}

/// Points the session's mirror refs at what its layer's refs (and stash entries) name now, in
/// one transaction; refs naming objects the store does not hold are left out.
fn mirror(
    git: &Git,
    repo: &Repo,
    ns: &RefNames,
    session_id: &SessionId,
    places: &Places,
) -> Result<Vec<Warning>> {
    let view = RefView::new(&repo.common_dir, &places.upper("common"));
    let mut wanted: Vec<(String, String)> = view
        .private_refs()
        .into_iter()
        .filter(|(name, _)| mirrorable(name))
        .map(|(name, id)| (ns.session_git_ref(session_id, &name), id))
        .collect();
    wanted.extend(
        view.stash_entries()
            .into_iter()
            .enumerate()
            .map(|(n, id)| (ns.session_git_stash_entry(session_id, n), id)),
    );
    let ids: Vec<String> = wanted.iter().map(|(_, id)| id.clone()).collect();
    let present = git.objects_present(&repo.toplevel, &ids)?;
    let mut warnings = Vec::new();
    let mut kept = Vec::new();
    for ((name, id), present) in wanted.into_iter().zip(present) {
        if present {
            kept.push((name, id));
        } else {
            warnings.push(RunWarning::RefNotKept { name, id }.into());
        }
    }
    let existing = git.list_refs_targets(&repo.toplevel, &ns.session_git_dir(session_id))?;
    let mut updates: Vec<RefUpdate> = existing
        .iter()
        .filter(|(name, _)| !kept.iter().any(|(kept, _)| kept == name))
        .map(|(name, _)| RefUpdate::Delete { name: name.clone() })
        .collect();
    updates.extend(
        kept.into_iter()
            .filter(|pair| !existing.contains(pair))
            .map(|(name, target)| RefUpdate::Set { name, target }),
    );
    git.update_refs(&repo.toplevel, &updates, "a3s-iso: the session's own refs")?;
    Ok(warnings)
}

/// After a killed run: drops the loose refs of its layer naming objects the store never got
/// (they were in the run's quarantine), so the session's git finds no broken ref.
fn drop_dangling(git: &Git, repo: &Repo, places: &Places) -> Result<Vec<Warning>> {
    let upper = open(&places.upper("common"))?;
    let view = RefView::new(&repo.common_dir, &places.upper("common"));
    let refs: Vec<(String, String)> = view.private_refs().into_iter().collect();
    let ids: Vec<String> = refs.iter().map(|(_, id)| id.clone()).collect();
    let present = git.objects_present(&repo.toplevel, &ids)?;
    let mut warnings = Vec::new();
    for ((name, id), present) in refs.into_iter().zip(present) {
        if !present && upper.kind(Path::new(&name)).ok().flatten().is_some() {
            upper
                .remove(Path::new(&name))
                .ctx(|| format!("cannot drop {name} from the session's layer"))?;
            warnings.push(RunWarning::DanglingRefDropped { name, id }.into());
        }
    }
    Ok(warnings)
}

/// The session's own refs as mirrored after its last run, for `show`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PrivateRefs {
    /// Its branches: name (without `refs/heads/`) and commit.
    pub branches: Vec<NamedRef>,
    /// Its tags: name (without `refs/tags/`) and object.
    pub tags: Vec<NamedRef>,
    /// How many entries its stash holds.
    pub stash_entries: usize,
    /// The branch `HEAD` was on when its last run ended (`null`: detached).
    pub head_branch: Option<String>,
}

/// A ref and the object it names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedRef {
    /// The short name.
    pub name: String,
    /// The object id.
    pub object: String,
}

/// Reads the session's mirrored refs and remembered branch.
pub(crate) fn private_refs(
    git: &Git,
    repo: &Repo,
    store: &Store,
    session_id: &SessionId,
) -> Result<PrivateRefs> {
    let ns = store.refs();
    let prefix = ns.session_git_dir(session_id);
    let mut out = PrivateRefs::default();
    for (name, object) in git.list_refs_targets(&repo.toplevel, &prefix)? {
        let short = name.strip_prefix(&prefix).unwrap_or(&name);
        if let Some(branch) = short.strip_prefix("heads/") {
            out.branches.push(NamedRef {
                name: branch.to_string(),
                object,
            });
        } else if let Some(tag) = short.strip_prefix("tags/") {
            out.tags.push(NamedRef {
                name: tag.to_string(),
                object,
            });
        } else if short.starts_with("stash-entries/") {
            out.stash_entries += 1;
        }
    }
    let record: Option<HeadRecord> =
        crate::base::fsutil::read_json(&Places::of(store, session_id).head_record())?;
    out.head_branch = record
        .and_then(|r| r.branch)
        .map(|b| b.strip_prefix("refs/heads/").unwrap_or(&b).to_string());
    Ok(out)
}
