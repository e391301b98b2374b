//! Nested change sets: the work done inside an isolation's submodules, and inside nested
//! repositories that the source has at the same path, captured per repository beside the
//! root change set (which stays flat: gitlinks are all the root patch knows of them).
//!
//! A nested repository's git dir is written by the sandboxed command (a submodule's lives in
//! the isolation's admin dir, `<admin>/modules/<name>`; a nested repository's is its `.git`
//! directory in the tree). So a3s-iso reads nothing from it but objects, as data: git runs
//! through a private git dir whose `HEAD` (the commit the superproject's snapshot recorded, or
//! HEAD read as a plain file) and `config` a3s-iso wrote ([`HermeticGit::nested`]), new
//! objects go to the superproject's store, and a nested object store that names alternates is
//! not read at all. Captured trees are copied into the superproject's store, where private refs
//! keep them through `git gc` and a promote finds them after the isolation is gone.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::base::beneath::{Dir, Kind};
use crate::base::error::Result;
use crate::base::ids::{RunId, SessionId, TreeId};
use crate::base::paths::RepoPath;
use crate::base::warning::{PromoteWarning, RunWarning, Warning};
use crate::base::wire::wire_enum;
use crate::git::{Git, HermeticGit};
use crate::model::isolation::Isolation;
use crate::model::snapshot::{self, Patch, Seed};
use crate::store::layout::StateDir;
use crate::store::state::Store;

wire_enum! {
    /// What kind of repository a nested change set belongs to.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    pub enum NestedKind {
        /// A submodule of the superproject (a gitlink with a `.gitmodules` entry).
        Submodule = "submodule",
        /// A directory with its own `.git` that is not a submodule.
        Repository = "repository",
    }
}

/// One nested change set: the uncommitted work of one nested repository, against the tree of
/// the commit its HEAD names (commits in a submodule travel as the root patch's gitlink).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NestedChangeSet {
    /// The repository's path in the superproject, for people (invalid UTF-8 replaced).
    pub path: String,
    /// The same path exactly, as bytes.
    pub path_exact: RepoPath,
    /// Submodule or nested repository.
    pub kind: NestedKind,
    /// The commit the nested repository's HEAD named.
    pub head: String,
    /// That commit's tree: the nested change set's base.
    pub base_tree: TreeId,
    /// The snapshot of the nested repository's working tree.
    pub result_tree: TreeId,
    /// `sha256:` of the nested patch.
    pub patch_digest: crate::base::ids::Digest,
    /// The nested patch's size.
    pub patch_bytes: u64,
}

/// A nested change set with its patch on disk.
pub(crate) struct Captured {
    /// What is reported and stored.
    pub(crate) set: NestedChangeSet,
    /// The patch (the same fixed diff options as the root patch).
    pub(crate) patch: Patch,
}

/// What capturing the nested repositories found.
#[derive(Default)]
pub(crate) struct Nested {
    /// The nested repositories with uncommitted work.
    pub(crate) captured: Vec<Captured>,
    /// Nested repositories that could not be captured (they may hold work that does not
    /// travel: a promote never reports `applied` while there are any).
    pub(crate) skipped: Vec<Skipped>,
    /// Where each submodule's objects are in the isolation (for a promote that must copy
    /// the commits a gitlink bump names).
    pub(crate) objects: Vec<(RepoPath, PathBuf)>,
    /// Every nested repository found, captured or unchanged.
    pub(crate) covered: Vec<RepoPath>,
}

/// A nested repository that could not be captured.
#[derive(Debug, Clone)]
pub(crate) struct Skipped {
    pub(crate) path: RepoPath,
    pub(crate) kind: NestedKind,
    /// Why it could not be captured.
    pub(crate) why: String,
}

/// A nested repository of the isolation, located by a3s-iso.
struct Found {
    path: RepoPath,
    kind: NestedKind,
    /// Its git dir's object directory (read as data only).
    objects: PathBuf,
    /// The commit its HEAD names.
    head: String,
}

/// Where the superproject is: its common dir and the store.
pub(crate) struct Superproject<'a> {
    /// The superproject's common dir (objects, trusted configuration).
    pub(crate) common_dir: &'a Path,
    /// The source checkout (nested repositories count only where it has one too).
    pub(crate) source: &'a Path,
    /// The state store (seed indexes, scratch).
    pub(crate) store: &'a Store,
    /// A capture, or a look that writes nothing into the store.
    pub(crate) look: Look<'a>,
}

/// What a nested snapshot may write besides objects.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Look<'a> {
    /// A capture: a3s-iso's index of each nested repository moves with its snapshot, and
    /// temporary files go to the store's scratch dir.
    Capture,
    /// A look that writes nothing into the state store (`diff`): the indexes are read and left
    /// as they were, and temporary files go to this directory.
    Peek(&'a Path),
}

/// Captures every initialised submodule of the isolation (its gitlinks in `result_tree`, the
/// root snapshot) and every nested repository in `embedded` that the source also has.
pub(crate) fn capture(
    git: &Git,
    iso: &Isolation,
    top: &Superproject<'_>,
    result_tree: &str,
    (gitlinks, embedded): (&[RepoPath], &[String]),
) -> Result<Nested> {
    let mut out = Nested::default();
    let mut found = Vec::new();
    if !gitlinks.is_empty() {
        let heads =
            crate::recovery::intent::tree_images(git, top.common_dir, result_tree, gitlinks)?
                .unwrap_or_default();
        let names = module_names(git, top.common_dir, result_tree)?;
        for (path, entry) in gitlinks.iter().zip(heads) {
            let Some(entry) = entry.filter(|e| e.is_gitlink()) else {
                continue;
            };
            match submodule(iso, path, &names, entry.oid) {
                Ok(Some(repo)) => found.push(repo),
                Ok(None) => {}
                Err(why) => out.skip(path.clone(), NestedKind::Submodule, why),
            }
        }
    }
    for name in embedded {
        let path = RepoPath(name.trim_end_matches('/').as_bytes().to_vec());
        match nested_repository(git, iso, top, &path) {
            Ok(Some(repo)) => found.push(repo),
            Ok(None) => {}
            Err(why) => out.skip(path, NestedKind::Repository, why),
        }
    }
    for repo in found {
        out.covered.push(repo.path.clone());
        if repo.kind == NestedKind::Submodule {
            out.objects.push((repo.path.clone(), repo.objects.clone()));
        }
        match capture_one(git, iso, top, &repo) {
            Ok(Some(captured)) => out.captured.push(captured),
            Ok(None) => {}
            // Its HEAD's objects missing, say: reported, never silently left out.
            Err(e) => out.skip(repo.path.clone(), repo.kind, e.to_string()),
        }
    }
    Ok(out)
}

/// Snapshots one nested repository; `None` when its working tree is its HEAD's tree.
fn capture_one(
    git: &Git,
    iso: &Isolation,
    top: &Superproject<'_>,
    repo: &Found,
) -> Result<Option<Captured>> {
    let scratch = match top.look {
        Look::Capture => top.store.scratch_dir(),
        Look::Peek(dir) => dir.to_path_buf(),
    };
    let root_objects = top.common_dir.join("objects");
    let tree = repo.path.under(&iso.tree);
    let objects = (root_objects.as_path(), repo.objects.as_path());
    let wt = HermeticGit::nested(git, &tree, &repo.head, objects, &scratch)?;
    let seed = seed_index(top.store, iso, &repo.path, top.look)?;
    let seed = match top.look {
        Look::Capture => Seed::Own(&seed),
        Look::Peek(_) => Seed::Peek(&seed),
    };
    let snap = snapshot::snapshot(&wt, seed, &scratch)?;
    let base_tree = wt.tree_of(&repo.head)?;
    if base_tree == snap.tree {
        return Ok(None);
    }
    // Both trees into the superproject's store: the patch is computed there, and its refs pin them.
    git.copy_reachable(
        top.common_dir,
        (&repo.objects, &root_objects),
        &[base_tree.clone(), snap.tree.clone()],
        true,
    )?;
    let patch = snapshot::patch(git, top.common_dir, &base_tree, &snap.tree, &scratch)?;
    Ok(Some(Captured {
        set: NestedChangeSet {
            path: repo.path.shown(),
            path_exact: repo.path.clone(),
            kind: repo.kind,
            head: repo.head.clone(),
            base_tree: TreeId::new(base_tree)?,
            result_tree: TreeId::new(snap.tree)?,
            patch_digest: crate::base::ids::Digest::new(&patch.digest)?,
            patch_bytes: patch.bytes,
        },
        patch,
    }))
}

/// What separates an isolation's seed name from a nested repository's in a nested seed's name.
pub(crate) const NESTED_SEED_MARK: &str = "+nested-";

/// The seed index of one nested repository of an isolation, beside the isolation's own. The
/// `+` (never in a session id) keeps it apart from the seed of a session whose id extends this
/// one's (`a` and `a.nested-x`). A look creates nothing.
fn seed_index(store: &Store, iso: &Isolation, path: &RepoPath, look: Look<'_>) -> Result<PathBuf> {
    let own = match look {
        Look::Capture => store.seed_index(&iso.admin)?,
        Look::Peek(_) => store.seed_index_path(&iso.admin),
    };
    let name = own
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok(own.with_file_name(format!(
        "{name}{NESTED_SEED_MARK}{}.index",
        hex::encode(&path.0)
    )))
}

/// `path` → submodule name, from the `.gitmodules` of `tree` (parsed as data).
fn module_names(git: &Git, common_dir: &Path, tree: &str) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let out = git.gitmodules_paths(common_dir, tree)?;
    Ok(crate::git::module_paths(&out.stdout))
}

/// The submodule at `path`, if it is initialised in the isolation: its git dir must be
/// `<admin>/modules/<name>` exactly (a real directory there, not reached through a link).
fn submodule(
    iso: &Isolation,
    path: &RepoPath,
    names: &[(Vec<u8>, Vec<u8>)],
    head: String,
) -> std::result::Result<Option<Found>, String> {
    let tree = Dir::open(&iso.tree).map_err(|e| e.to_string())?;
    let rel = Path::new(path.as_os());
    match tree.kind(&rel.join(".git")) {
        // Not initialised: nothing in it to capture.
        Ok(None) => return Ok(None),
        Ok(Some(_)) => {}
        Err(_) => return Err("its directory is reached through a symbolic link".into()),
    }
    let name = names.iter().find(|(p, _)| *p == path.0);
    let name = RepoPath(name.map_or_else(|| path.0.clone(), |(_, name)| name.clone()));
    let git_dir = Dir::open(&iso.admin)
        .and_then(|admin| admin.dir(&Path::new("modules").join(name.as_os())))
        .map_err(|_| {
            format!(
                "its git dir is not where a3s-iso expects it ({})",
                name.under(&iso.admin.join("modules")).display()
            )
        })?;
    Ok(Some(Found {
        path: path.clone(),
        kind: NestedKind::Submodule,
        objects: object_dir(&git_dir)?,
        head,
    }))
}

/// A nested repository (not a submodule) at `path` in the isolation, counted only where the
/// source has a repository at the same path; its `.git` must be a directory.
fn nested_repository(
    git: &Git,
    iso: &Isolation,
    top: &Superproject<'_>,
    path: &RepoPath,
) -> std::result::Result<Option<Found>, String> {
    let in_source = path.under(top.source).join(".git");
    if fs::symlink_metadata(&in_source).is_err() {
        return Ok(None);
    }
    let git_dir = Dir::open(&iso.tree)
        .and_then(|tree| tree.dir(&Path::new(path.as_os()).join(".git")))
        .map_err(|_| "its .git is not a directory of its own".to_string())?;
    let objects = object_dir(&git_dir)?;
    let head = read_head(&git_dir)?;
    // The commit must be there, read through the same private git as the snapshot.
    if !git.has_commit_in(top.common_dir, &objects, &head) {
        return Err(format!(
            "its HEAD names {head}, which is not a commit there"
        ));
    }
    Ok(Some(Found {
        path: path.clone(),
        kind: NestedKind::Repository,
        objects,
        head,
    }))
}

/// How deep an object directory's folders go (`objects/pack`, `objects/info/commit-graphs`).
const OBJECTS_DEPTH: usize = 3;

/// The object directory of a git dir the command could write, checked beneath the git dir's
/// handle: a real directory, naming no alternates (they would choose where a3s-iso's git
/// reads from), and holding nothing but directories and regular files (git reads and writes
/// there by path, and would follow a link). Its path is returned, for git.
fn object_dir(git_dir: &Dir) -> std::result::Result<PathBuf, String> {
    let objects = git_dir
        .dir(Path::new("objects"))
        .map_err(|_| "its object directory is not a directory of its own".to_string())?;
    if !matches!(objects.kind(Path::new("info/alternates")), Ok(None)) {
        return Err("its object directory names alternates, which a3s-iso does not follow".into());
    }
    if let Some(found) = stray_entry(&objects, OBJECTS_DEPTH) {
        return Err(format!(
            "its object directory holds {found}, which a3s-iso does not follow"
        ));
    }
    Ok(objects.path().to_path_buf())
}

/// The first entry under `dir` that is neither a directory nor a regular file (a link, a
/// FIFO, a socket), or a directory deeper than `depth`, as words; `None` when there is none.
fn stray_entry(dir: &Dir, depth: usize) -> Option<String> {
    let entries = match dir.entries() {
        Ok(entries) => entries,
        Err(e) => return Some(format!("an unreadable directory ({e})")),
    };
    for entry in entries {
        let path = dir.path().join(&entry.name);
        match entry.kind {
            Kind::File => {}
            Kind::Dir if depth == 0 => {
                return Some(format!("a directory too deep ({})", path.display()));
            }
            Kind::Dir => {
                let found = match dir.dir(Path::new(&entry.name)) {
                    Ok(inner) => stray_entry(&inner, depth - 1),
                    Err(e) => Some(e.to_string()),
                };
                if found.is_some() {
                    return found;
                }
            }
            Kind::Symlink => return Some(format!("a symbolic link ({})", path.display())),
            Kind::Special => return Some(format!("a special file ({})", path.display())),
        }
    }
    None
}

/// The object directories of an isolation's initialised submodules (`<admin>/modules/…`,
/// names may hold slashes), each reached beneath the admin dir without a link and checked as
/// [`object_dir`] checks one; and why the others are left out.
pub(crate) fn module_stores(admin: &Path) -> (Vec<PathBuf>, Vec<Warning>) {
    let (mut found, mut skipped) = (Vec::new(), Vec::new());
    let modules = Dir::open(admin).and_then(|admin| admin.dir_if_any(Path::new("modules")));
    let modules = match modules {
        Ok(Some(modules)) => modules,
        Ok(None) => return (found, skipped),
        Err(e) => {
            skipped.push(RunWarning::ModuleObjectsNotUsed { why: e.to_string() }.into());
            return (found, skipped);
        }
    };
    let mut todo = vec![(modules, 0)];
    while let Some((dir, depth)) = todo.pop() {
        let Ok(entries) = dir.entries() else {
            continue;
        };
        for entry in entries.into_iter().filter(|e| e.kind == Kind::Dir) {
            let Ok(inner) = dir.dir(Path::new(&entry.name)) else {
                continue;
            };
            if matches!(inner.kind(Path::new("HEAD")), Ok(Some(Kind::File))) {
                match object_dir(&inner) {
                    Ok(objects) => found.push(objects),
                    Err(why) => {
                        let git_dir = inner.path().to_path_buf();
                        skipped.push(RunWarning::ModuleGitDirNotUsed { git_dir, why }.into());
                    }
                }
            } else if depth < 8 {
                todo.push((inner, depth + 1));
            }
        }
    }
    found.sort();
    (found, skipped)
}

/// The most a HEAD or loose ref file holds.
const REF_LIMIT: u64 = 4096;

/// The commit a nested repository's HEAD names, read as plain files beneath its git dir: a
/// full id, or `ref: refs/heads/<name>` resolved through its loose ref or `packed-refs`.
fn read_head(git_dir: &Dir) -> std::result::Result<String, String> {
    let read = |rel: &Path| -> std::result::Result<String, String> {
        let bytes = git_dir
            .read_small(rel, REF_LIMIT)
            .map_err(|e| format!("{} cannot be read: {e}", git_dir.path().join(rel).display()))?;
        Ok(String::from_utf8_lossy(&bytes).trim_end().to_string())
    };
    let head = read(Path::new("HEAD"))?;
    let Some(name) = head.strip_prefix("ref: ") else {
        return full_id(&head);
    };
    let safe = name.starts_with("refs/heads/")
        && !name
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..");
    if !safe {
        return Err(format!("its HEAD points at {name:?}, not a branch"));
    }
    if let Ok(id) = read(Path::new(name)) {
        return full_id(&id);
    }
    let missing = || format!("its HEAD points at {name}, which does not exist");
    let packed = (git_dir.read_small(Path::new("packed-refs"), 1 << 24)).map_err(|_| missing())?;
    let packed = String::from_utf8_lossy(&packed);
    let id = (packed.lines()).find_map(|line| line.strip_suffix(name)?.strip_suffix(' '));
    full_id(id.ok_or_else(missing)?)
}

fn full_id(text: &str) -> std::result::Result<String, String> {
    match matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        true => Ok(text.to_ascii_lowercase()),
        false => Err(format!("its HEAD ({text:?}) is not a commit id")),
    }
}

/// The stored nested change sets of one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredNested {
    schema: String,
    nested: Vec<NestedChangeSet>,
}

const STORED_SCHEMA: &str = "a3s-iso.nested.v1";

/// Where a run's nested change sets are kept: `<state>/nested/<id>/<run>.json` (the patches
/// themselves are computed again from the pinned trees).
fn stored_path(store: &Store, session_id: &SessionId, run_id: &RunId) -> PathBuf {
    StateDir::Nested.run_file(store.dir(), session_id, run_id)
}

/// The nested change sets stored beside a run's document (none when there is no record or
/// it cannot be read).
pub(crate) fn stored(
    store: &Store,
    session_id: &SessionId,
    run_id: &RunId,
) -> Option<Vec<NestedChangeSet>> {
    let path = stored_path(store, session_id, run_id);
    let doc = crate::base::fsutil::read_json::<StoredNested>(&path).ok()?;
    Some(doc.map_or_else(Vec::new, |doc| doc.nested))
}

/// Pins a run's nested trees and stores their change sets beside the run's document.
pub(crate) fn record(
    ctx: &crate::context::Context,
    located: &crate::context::Located,
    session_id: &SessionId,
    run_id: &RunId,
    nested: &Nested,
) -> Result<()> {
    let sets = nested.sets();
    if sets.is_empty() {
        return Ok(());
    }
    let trees: Vec<(TreeId, TreeId)> = sets
        .iter()
        .map(|s| (s.base_tree.clone(), s.result_tree.clone()))
        .collect();
    crate::model::refs::SessionRefs {
        git: &ctx.git,
        dir: &located.repo.common_dir,
        ns: &located.store.refs(),
        session_id,
    }
    .pin_nested(run_id, &trees)?;
    let path = stored_path(&located.store, session_id, run_id);
    let doc = StoredNested {
        schema: STORED_SCHEMA.into(),
        nested: sets,
    };
    let bytes = serde_json::to_vec_pretty(&doc)
        .map_err(|e| crate::base::error::Error::internal(format!("cannot encode: {e}")))?;
    crate::base::fsutil::write_atomic(&path, &bytes)
}

impl Nested {
    /// The change sets, as reported and stored.
    pub(crate) fn sets(&self) -> Vec<NestedChangeSet> {
        self.captured.iter().map(|c| c.set.clone()).collect()
    }

    /// Warnings for what was not captured: the nested repositories of the snapshot that are
    /// not the source's too (never folded in as gitlinks), and those that could not be read.
    pub(crate) fn warnings(&self) -> Vec<Warning> {
        self.skipped
            .iter()
            .map(|s| {
                let (path, why) = (s.path.to_string(), s.why.clone());
                PromoteWarning::NestedNotCaptured { path, why }.into()
            })
            .collect()
    }

    fn skip(&mut self, path: RepoPath, kind: NestedKind, why: String) {
        self.skipped.push(Skipped { path, kind, why });
    }
}

/// The nested change sets of an isolation whose root snapshot is `snap`; names in `snap.nested`
/// that are not the source's nested repositories stay there (reported as before).
pub(crate) fn capture_isolation(
    git: &Git,
    located: &crate::context::Located,
    iso: &Isolation,
    snap: &mut snapshot::Snapshot,
    look: Look<'_>,
) -> Result<Nested> {
    let top = Superproject {
        common_dir: &located.repo.common_dir,
        source: &located.repo.toplevel,
        store: &located.store,
        look,
    };
    let nested = capture(git, iso, &top, &snap.tree, (&snap.gitlinks, &snap.nested))?;
    // Those found, captured or not, are reported as nested change sets or skipped ones.
    let covered = |name: &String| {
        let path = name.trim_end_matches('/').as_bytes();
        nested.covered.iter().any(|p| p.0 == path)
            || nested.skipped.iter().any(|s| s.path.0 == path)
    };
    snap.nested.retain(|name| !covered(name));
    Ok(nested)
}
