//! Copy-on-write fills. Where the file system clones files (`FICLONE`), a new isolation (or spare)
//! is filled by cloning every file from a *pristine tree* of its revision instead of checking it
//! out: the clones share the pristine's blocks until a session writes them, and then only the
//! written blocks part. The isolation's index is the pristine's own exact index with each entry's
//! stat data replaced by its clone's, so git finds every file clean without reading one.
//!
//! A pristine tree is kept per revision beside the isolations (`<prefix>.pristine/<revision>/`:
//! `tree/` and `index`), built once by git (`read-tree -u` into an empty directory, exactly as a
//! checkout), then made read-only and its index rewritten with the read-only files' stat data.
//! Before each use it is verified: the tree of its index is the revision's, and every file's stat
//! data is what its index says (a write, a chmod, a replaced file all change the ctime, which no
//! one can set back). One that is not exact is removed and built again. `gc` removes those no
//! session or spare is bound at ([`unused`]).

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::base::error::{IoContext, Result};
use crate::base::reflink::Fill;
use crate::context::{Context, Located};
use crate::git::HermeticGit;
use crate::git::index_file::writer::{StatData, Template};

/// What a pristine root's name ends with, after the isolations' prefix.
const PRISTINE_SUFFIX: &str = crate::base::names::PRISTINE_INFIX;

/// What the lock file of a revision's pristine tree is named with (`<revision>.lock`).
const LOCK_SUFFIX: &str = ".lock";

/// How long a bind waits for another process's build of the pristine tree it needs before it
/// checks out instead.
const BUILD_PATIENCE: Duration = Duration::from_secs(600);

/// `A3S_ISO_FILL=checkout` makes every new isolation a checkout, even where files clone.
pub const FILL_VAR: &str = "A3S_ISO_FILL";

/// The directory holding the pristine trees for isolations at `path` (one of `located`'s
/// isolation or spare paths): beside it, named with the same prefix.
pub(crate) fn root_for(located: &Located, path: &Path) -> PathBuf {
    let names = located.store.isolation_names(&located.repo.toplevel);
    let name = path.file_name().unwrap_or_default().as_bytes();
    let hashed = name.starts_with(names.prefix(true).as_bytes());
    let mut root = names.prefix(hashed);
    root.push(PRISTINE_SUFFIX);
    path.parent().unwrap_or(Path::new("/")).join(root)
}

/// The directory holding the pristine trees its clones came from, for an isolation or spare
/// at `tree`: its name up to the isolations' marker, with the pristine suffix.
pub(crate) fn root_beside(tree: &Path) -> Option<PathBuf> {
    let name = tree.file_name()?.as_bytes();
    let marker = crate::base::names::MARKER.as_bytes();
    let end = name.windows(marker.len()).rposition(|w| w == marker)? + marker.len();
    let mut root = name[..end].to_vec();
    root.extend_from_slice(PRISTINE_SUFFIX.as_bytes());
    Some(tree.parent()?.join(OsStr::from_bytes(&root)))
}

/// One revision's pristine tree.
struct Pristine {
    dir: PathBuf,
}

impl Pristine {
    fn tree(&self) -> PathBuf {
        self.dir.join("tree")
    }

    fn index(&self) -> PathBuf {
        self.dir.join("index")
    }
}

/// Fills the worktree `path` that `git worktree add --no-checkout` just registered (admin dir
/// `admin`, HEAD at `revision`) by cloning, when this file system clones; `Checkout` when it
/// did not (nothing is left in the tree but its `.git` file then, for the caller to check out).
pub(crate) fn fill(
    ctx: &Context,
    located: &Located,
    (path, admin): (&Path, &Path),
    revision: &str,
) -> Result<Fill> {
    if std::env::var(FILL_VAR).is_ok_and(|v| v == "checkout") {
        return Ok(Fill::Checkout);
    }
    let parent = path.parent().unwrap_or(Path::new("/"));
    if !crate::base::probe::reflink_available(parent).unwrap_or(false) {
        return Ok(Fill::Checkout);
    }
    let root = root_for(located, path);
    let Some((pristine, index)) = ensure(ctx, located, &root, revision)? else {
        return Ok(Fill::Checkout);
    };
    let hash_len = revision.len() / 2;
    let Some(template) = Template::read(&index, hash_len) else {
        return Ok(Fill::Checkout);
    };
    match clone_entries(&pristine.tree(), path, &template) {
        Ok(stats) => {
            crate::fault_point!("clone-before-index");
            write_index(&admin.join("index"), &template.restat(&stats))?;
            Ok(Fill::Clone)
        }
        Err(_) => {
            empty_but_git_link(path)?;
            Ok(Fill::Checkout)
        }
    }
}

/// The verified pristine tree of `revision` under `root` and its index's bytes, built (or
/// rebuilt) when it is missing or not exact; `None` when the revision's checkout is not one a
/// clone can copy (gitlinks, a sparse checkout).
fn ensure(
    ctx: &Context,
    located: &Located,
    root: &Path,
    revision: &str,
) -> Result<Option<(Pristine, Vec<u8>)>> {
    let pristine = Pristine {
        dir: root.join(revision),
    };
    fs::create_dir_all(root).ctx(|| format!("cannot create {}", root.display()))?;
    // One process verifies or builds a revision's tree at a time: binds started together wait
    // for the first one's build instead of each building its own.
    let lock = root.join(format!("{revision}{LOCK_SUFFIX}"));
    let Ok(_building) = crate::store::lock::FileLock::acquire(&lock, BUILD_PATIENCE) else {
        return Ok(None);
    };
    let tree = ctx
        .git
        .rev_parse_required(&located.repo.toplevel, &format!("{revision}^{{tree}}"))?;
    if pristine.dir.exists() {
        if let Some(bytes) = verified(ctx, located, &pristine, &tree)? {
            return Ok(Some((pristine, bytes)));
        }
        remove_files(&pristine.dir)?;
    }
    if !build(ctx, located, root, &pristine, revision)? {
        return Ok(None);
    }
    Ok(verified(ctx, located, &pristine, &tree)?.map(|bytes| (pristine, bytes)))
}

/// The pristine's index, if the pristine is exact: its tree is `tree`, and each file's stat
/// data is the one its entry records.
fn verified(
    ctx: &Context,
    located: &Located,
    pristine: &Pristine,
    tree: &str,
) -> Result<Option<Vec<u8>>> {
    let Ok(bytes) = fs::read(pristine.index()) else {
        return Ok(None);
    };
    let Some(template) = Template::read(&bytes, tree.len() / 2) else {
        return Ok(None);
    };
    let files = pristine.tree();
    let exact = template.entries.iter().enumerate().all(|(n, entry)| {
        let path = files.join(OsStr::from_bytes(&entry.path));
        fs::symlink_metadata(&path).is_ok_and(|meta| {
            let link = entry.mode & 0o170000 == 0o120000;
            meta.file_type().is_symlink() == link
                && StatData::of(&meta).matches(template.stored_stat(n))
        })
    });
    if !exact {
        return Ok(None);
    }
    let written = ctx
        .git
        .on_index(&located.repo.toplevel, &pristine.index())
        .try_write_tree()?;
    Ok((written.as_deref() == Some(tree)).then_some(bytes))
}

/// Checks `revision` out into a new directory under `root`, makes it read-only with an index
/// of the read-only files, and moves it into place (another process's, already there, wins).
/// False when the checkout is not one a clone can copy.
fn build(
    ctx: &Context,
    located: &Located,
    root: &Path,
    pristine: &Pristine,
    revision: &str,
) -> Result<bool> {
    let making = Pristine {
        dir: root.join(crate::base::maker::owned_name("building")),
    };
    let made = (|| {
        fs::create_dir_all(making.tree())
            .ctx(|| format!("cannot create {}", making.dir.display()))?;
        let scratch = located.store.scratch_dir();
        let git = HermeticGit::private(
            &ctx.git,
            &making.tree(),
            &located.repo.common_dir,
            revision,
            &scratch,
        )?;
        git.on_index(&making.index()).check_out(revision)?;
        crate::fault_point!("pristine-after-checkout");
        seal(&making, revision.len() / 2)
    })();
    let result = match made {
        Ok(true) => move_into_place(&making, pristine),
        other => other,
    };
    // Whatever was not moved into place goes (a build that failed, or lost to another).
    remove_files(&making.dir)?;
    result
}

/// Moves a sealed build to its revision's place; true when a tree is there now (this one, or
/// one another bind built meanwhile, which is used once verified).
fn move_into_place(making: &Pristine, pristine: &Pristine) -> Result<bool> {
    crate::fault_point!("pristine-before-move");
    match fs::rename(&making.dir, &pristine.dir) {
        Ok(()) => Ok(true),
        Err(_) if pristine.dir.exists() => Ok(true),
        Err(err) => Err(crate::base::error::Error::io(
            format!("cannot move a pristine tree to {}", pristine.dir.display()),
            err,
        )),
    }
}

/// Makes a fresh checkout read-only and rewrites its index with the files' stat data as they
/// are now (the mode change moved their ctime). False when its index is not a plain one.
fn seal(making: &Pristine, hash_len: usize) -> Result<bool> {
    let bytes =
        fs::read(making.index()).ctx(|| format!("cannot read {}", making.index().display()))?;
    let Some(template) = Template::read(&bytes, hash_len) else {
        return Ok(false);
    };
    let files = making.tree();
    let mut stats = Vec::with_capacity(template.entries.len());
    for entry in &template.entries {
        let path = files.join(OsStr::from_bytes(&entry.path));
        let meta = fs::symlink_metadata(&path).ctx(|| format!("cannot read {}", path.display()))?;
        if meta.is_file() {
            let mode = meta.permissions().mode() & 0o555;
            fs::set_permissions(&path, fs::Permissions::from_mode(mode))
                .ctx(|| format!("cannot make {} read-only", path.display()))?;
        }
        let meta = fs::symlink_metadata(&path).ctx(|| format!("cannot read {}", path.display()))?;
        stats.push(StatData::of(&meta));
    }
    write_index(&making.index(), &template.restat(&stats))?;
    set_dirs_writable(&files, false).ctx(|| format!("cannot seal {}", files.display()))?;
    Ok(true)
}

/// Clones every entry of `template` from `from` into `to`, each file made as git makes a
/// checked-out one and its modification time set a second before the fill began (so the index
/// written after it is never "racily clean" and any later write shows); the stat data of each.
fn clone_entries(
    from: &Path,
    to: &Path,
    template: &Template<'_>,
) -> std::io::Result<Vec<StatData>> {
    let began = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let stamp = SystemTime::UNIX_EPOCH + Duration::from_secs(began.saturating_sub(1));
    let entries = &template.entries;
    let mut made_dir: Option<&Path> = None;
    for entry in entries {
        let parent = Path::new(OsStr::from_bytes(&entry.path)).parent();
        if let Some(parent) = parent.filter(|p| Some(*p) != made_dir) {
            fs::create_dir_all(to.join(parent))?;
            made_dir = Some(parent);
        }
    }
    // A clone costs system calls, not bandwidth: a few threads share the entries in runs.
    let workers = match entries.len() {
        0..=511 => 1,
        _ => std::thread::available_parallelism().map_or(2, |n| n.get().clamp(1, 4)),
    };
    let chunk = entries.len().div_ceil(workers).max(1);
    let parts: Vec<std::io::Result<Vec<StatData>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = entries
            .chunks(chunk)
            .map(|part| scope.spawn(move || clone_run(from, to, part, stamp)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("a clone thread panicked")))
            })
            .collect()
    });
    Ok(parts
        .into_iter()
        .collect::<std::io::Result<Vec<_>>>()?
        .concat())
}

/// Clones a run of entries (their directories made), each stamped with `stamp`.
fn clone_run(
    from: &Path,
    to: &Path,
    entries: &[crate::git::index_file::writer::Listed],
    stamp: SystemTime,
) -> std::io::Result<Vec<StatData>> {
    let mut stats = Vec::with_capacity(entries.len());
    for entry in entries {
        let rel = Path::new(OsStr::from_bytes(&entry.path));
        let (src, dst) = (from.join(rel), to.join(rel));
        let meta = if entry.mode & 0o170000 == 0o120000 {
            std::os::unix::fs::symlink(fs::read_link(&src)?, &dst)?;
            set_link_time(&dst, stamp)?;
            fs::symlink_metadata(&dst)?
        } else {
            let mode = if entry.mode & 0o111 != 0 {
                0o777
            } else {
                0o666
            };
            let file = crate::base::reflink::clone_new(&src, &dst, mode)?;
            file.set_times(fs::FileTimes::new().set_accessed(stamp).set_modified(stamp))?;
            file.metadata()?
        };
        stats.push(StatData::of(&meta));
    }
    Ok(stats)
}

/// Sets a symbolic link's own times (not its target's).
fn set_link_time(link: &Path, at: SystemTime) -> std::io::Result<()> {
    let since = at
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let time = rustix::fs::Timespec {
        tv_sec: since.as_secs() as i64,
        tv_nsec: 0,
    };
    let times = rustix::fs::Timestamps {
        last_access: time,
        last_modification: time,
    };
    rustix::fs::utimensat(
        rustix::fs::CWD,
        link,
        &times,
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    )
    .map_err(std::io::Error::from)
}

/// Writes an index whole, by rename, so git never reads half of one.
fn write_index(to: &Path, bytes: &[u8]) -> Result<()> {
    let dir = to.parent().unwrap_or(Path::new("/"));
    let temp = dir.join(crate::base::maker::owned_name("index"));
    let written = fs::write(&temp, bytes).and_then(|()| fs::rename(&temp, to));
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written.ctx(|| format!("cannot write {}", to.display()))
}

/// Removes everything in a worktree a failed clone began to fill except its `.git` file.
fn empty_but_git_link(path: &Path) -> Result<()> {
    for entry in fs::read_dir(path).ctx(|| format!("cannot read {}", path.display()))? {
        let entry = entry.ctx(|| format!("cannot read {}", path.display()))?;
        if entry.file_name() == ".git" {
            continue;
        }
        let at = entry.path();
        let removed = if entry.file_type().is_ok_and(|t| t.is_dir()) {
            fs::remove_dir_all(&at)
        } else {
            fs::remove_file(&at)
        };
        removed.ctx(|| format!("cannot remove {}", at.display()))?;
    }
    Ok(())
}

/// Gives (or takes away) the owner's write permission on `dir` and every directory in it.
fn set_dirs_writable(dir: &Path, writable: bool) -> std::io::Result<()> {
    let mode = if writable { 0o755 } else { 0o555 };
    let mut pending = vec![dir.to_path_buf()];
    // Either mode keeps a directory readable and searchable: it is set before it is read.
    while let Some(at) = pending.pop() {
        fs::set_permissions(&at, fs::Permissions::from_mode(mode))?;
        for entry in fs::read_dir(&at)? {
            let entry = entry?;
            if entry.file_type()?.is_dir() {
                pending.push(entry.path());
            }
        }
    }
    Ok(())
}

/// Removes a pristine tree (or one half built), its read-only directories opened up first.
/// A process that waited on its lock and builds it again meanwhile races no one: a build is
/// moved into place only where nothing is.
pub(crate) fn remove_tree(dir: &Path) -> Result<()> {
    remove_files(dir)?;
    let mut lock = dir.as_os_str().to_owned();
    lock.push(LOCK_SUFFIX);
    crate::base::fsutil::remove_file_if_exists(Path::new(&lock))?;
    // The root goes with its last tree.
    let _ = fs::remove_dir(dir.parent().unwrap_or(dir));
    Ok(())
}

/// Removes a pristine tree's directory (its lock stays with the process that holds it).
fn remove_files(dir: &Path) -> Result<()> {
    if fs::symlink_metadata(dir).is_ok() {
        let _ = set_dirs_writable(dir, true);
        fs::remove_dir_all(dir).ctx(|| format!("cannot remove {}", dir.display()))?;
    }
    Ok(())
}

/// Why a pristine tree can go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unneeded {
    /// No session or spare is bound at its revision.
    Unused,
    /// A build whose process is gone.
    DeadBuild,
}

/// The pristine trees (and leftovers of builds) under `root`, each with why it can go; `None`
/// for one that stays (its revision is in `in_use`, or a build still running).
pub(crate) fn listed(root: &Path, in_use: &[String]) -> Vec<(PathBuf, Option<Unneeded>)> {
    let Ok(entries) = fs::read_dir(root) else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok())
        .map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let reason = if name.starts_with("building-") {
                crate::base::maker::made_by_dead(&name).then_some(Unneeded::DeadBuild)
            } else {
                (!in_use.contains(&name)).then_some(Unneeded::Unused)
            };
            (entry.path(), reason)
        })
        // A lock goes with its tree ([`remove_tree`]).
        .filter(|(path, _)| {
            !path
                .as_os_str()
                .as_bytes()
                .ends_with(LOCK_SUFFIX.as_bytes())
        })
        .collect()
}
