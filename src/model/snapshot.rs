//! Snapshots and patches. A snapshot is the tree of an isolation's tracked plus untracked
//! non-ignored content, written through a temporary index seeded from a copy of a3s-iso's own index
//! of the isolation (so unchanged files are not re-hashed, and nothing the command wrote into its
//! index decides what is captured). A patch is the diff of two trees with every output-shaping
//! option fixed, so the same trees give the same bytes whatever the user's git configuration.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::base::error::{Error, IoContext, Result};
use crate::git::index_file::Summary;
use crate::git::{Git, HermeticGit, ObjectView, OnIndex};

/// The tree of git's empty tree object (SHA-1 repositories).
pub const EMPTY_TREE_SHA1: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// The index a snapshot starts from, so that unchanged files are not hashed again.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Seed<'a> {
    /// An index the caller trusts (the source's own, which only its user writes).
    Trusted(&'a Path),
    /// a3s-iso's own index of an isolation, kept in the state store: the command in the
    /// isolation cannot have written it, so no flag (`assume-unchanged`, `skip-worktree`,
    /// `intent-to-add`) and no forged stat data hide an edit. The snapshot's index replaces
    /// it afterwards; where there is none yet, the index is rebuilt from HEAD.
    Own(&'a Path),
    /// a3s-iso's own index read as [`Seed::Own`] is, but left as it was (a look that writes
    /// nothing into the state store: `diff`, `show`).
    Peek(&'a Path),
}

/// Copies an index file with its modification time, so that git's racy-entry check still
/// knows when the index was really written (a fresh time would make a same-size edit made in
/// the same instant as the index look unchanged).
pub(crate) fn copy_index(from: &Path, to: &Path) -> Result<()> {
    let modified = modified_of(from)?;
    fs::copy(from, to).ctx(|| format!("cannot copy {}", from.display()))?;
    set_modified(to, modified)
}

/// When the file at `path` was last modified.
pub(crate) fn modified_of(path: &Path) -> Result<std::time::SystemTime> {
    fs::metadata(path)
        .and_then(|m| m.modified())
        .ctx(|| format!("cannot read {}", path.display()))
}

fn set_modified(path: &Path, modified: std::time::SystemTime) -> Result<()> {
    fs::File::options()
        .write(true)
        .open(path)
        .and_then(|file| file.set_modified(modified))
        .ctx(|| format!("cannot set the time of {}", path.display()))
}

/// Keeps the index git just wrote for a new checkout (`git worktree add` of an isolation or a
/// spare, in whose tree nothing has run yet) as a3s-iso's own at `to`, with its time. A split index
/// (`core.splitIndex`) is written whole first: its entries live mostly in a shared index in the
/// admin dir, which a copy does not carry and which the isolation's command can rewrite later.
pub(crate) fn keep_index(git: &HermeticGit, admin: &Path, to: &Path) -> Result<()> {
    copy_index(&admin.join("index"), to)?;
    if crate::git::index_file::is_split(to)? {
        git.unsplit_index(to)?;
    }
    Ok(())
}

/// A scratch file removed on drop.
pub(crate) struct TempFile {
    path: PathBuf,
}

impl TempFile {
    /// A fresh name in `dir` (created if needed) that names this process, so that the next
    /// command removes it if this process dies first; the file itself is not created.
    pub(crate) fn new(dir: &Path, stem: &str) -> Result<TempFile> {
        fs::create_dir_all(dir).ctx(|| format!("cannot create {}", dir.display()))?;
        Ok(TempFile {
            path: dir.join(crate::base::maker::owned_name(stem)),
        })
    }

    /// Where the file is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
        let _ = fs::remove_file(self.path.with_extension("lock"));
    }
}

/// A snapshot: its tree, and the nested repositories that were left out of it.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The snapshot's tree id.
    pub tree: String,
    /// Directories with their own `.git` that are not submodules. They are never folded into
    /// the snapshot as gitlinks; callers report them.
    pub nested: Vec<String>,
    /// The gitlinks (submodules) the snapshot recorded, whose content is captured apart.
    pub gitlinks: Vec<crate::base::paths::RepoPath>,
}

impl Snapshot {
    /// A snapshot of `tree` with nothing nested.
    pub(crate) fn flat(tree: &str) -> Snapshot {
        Snapshot {
            tree: tree.to_string(),
            nested: Vec::new(),
            gitlinks: Vec::new(),
        }
    }
}

const EMBEDDED_REPO_WARNING: &str = "warning: adding embedded git repository: ";

/// A gitlink's mode (`0o160000`) as every index version (2 to 4) stores it: four raw bytes,
/// big-endian. An index without them has no gitlink.
const GITLINK_MODE: [u8; 4] = [0, 0, 0xe0, 0];

/// Writes the snapshot tree of the working tree `wt` is pointed at, seeding the temporary
/// index from `seed` (copied with its time) where that is a plain, unsplit index file. The
/// checkout's own index is never read or modified; `scratch` is where the temporary index lives.
///
/// Gitlinks (submodules, and any the command registered in its index) are kept out of
/// `git add -A`: for each one whose commit is unchanged, `add` runs `git status` inside it to
/// see whether it is dirty, and that git takes the nested repository's configuration (and
/// filters) from wherever the `.git` file in the tree points, which the command in the
/// isolation controls. `git update-index` reads their HEADs instead, running nothing.
pub(crate) fn snapshot(wt: &HermeticGit, seed: Seed<'_>, scratch: &Path) -> Result<Snapshot> {
    let index = TempFile::new(scratch, "index")?;
    let on_index = wt.on_snapshot_index(index.path());
    let seed_path = match seed {
        Seed::Trusted(path) | Seed::Own(path) | Seed::Peek(path) => path,
    };
    // Never follow a link or wait on a FIFO planted where the index should be.
    let plain = fs::symlink_metadata(seed_path).is_ok_and(|m| m.is_file());
    // A trusted index may be split: git finds its shared index in the git dir it runs with,
    // which is the checkout's own. a3s-iso's own are kept whole (`keep_index`); one that is
    // not (kept by an older a3s-iso) names a shared index nobody has.
    let noted = noted_tree(seed_path);
    let (held, seeded) = match plain {
        true => seed_copied(seed, seed_path, index.path(), wt.tree())?,
        false => Default::default(),
    };
    // The tree the copy writes, when the seed was noted to write it before and after it was
    // read (a seed is replaced whole, never written in place).
    let noted = noted.filter(|tree| {
        seeded && !held.skip_worktree && noted_tree(seed_path).as_ref() == Some(tree)
    });
    if seeded {
        if held.skip_worktree {
            unskip_present(&on_index, wt.tree())?;
        }
    } else {
        // No seed yet, or one that cannot be read alone: rebuild from HEAD, and everything
        // is hashed once.
        on_index.read_tree("HEAD")?;
    }
    // An index read whole that holds no gitlink needs no listing.
    let gitlinks = match seeded && held.parsed && !held.gitlink {
        true => Vec::new(),
        false => gitlinks(&on_index, index.path(), scratch)?,
    };
    // Stat data git notes from here on may share a second with a change still to come.
    let began = std::time::SystemTime::now();
    let (nested, mut staged) = match (seed, gitlinks.is_empty()) {
        (Seed::Own(_) | Seed::Peek(_), true) => add_changes_seen(&on_index, wt.tree())?,
        _ => (add_all(&on_index, &gitlinks)?, true),
    };
    if wt.head_moved() && !matches!(seed, Seed::Trusted(_)) {
        add_tracked_by_head(&on_index, wt.tree(), &[])?;
        staged = true;
    }
    if !gitlinks.is_empty() {
        on_index.add_or_remove(&gitlinks)?;
    }
    // Nothing staged over the copy: its entries are the seed's, so is its tree.
    let tree = match noted.filter(|_| !staged) {
        Some(tree) => tree,
        None => on_index.write_tree()?,
    };
    if let Seed::Own(path) = seed {
        keep_seed(index.path(), path, began, &tree)?;
    }
    let gitlinks = gitlinks
        .into_iter()
        .map(|p| crate::base::paths::RepoPath(p.into_vec()))
        .collect();
    Ok(Snapshot {
        tree,
        nested,
        gitlinks,
    })
}

/// Reads the seed at `from` once: what it holds, and whether it was copied to `to` with its
/// time. In a copy of a3s-iso's own index, whatever the snapshot that wrote it noted in or
/// after the second it began (the seed's time) is distrusted (`index_recent`), so this
/// snapshot looks at it again. Not copied: a split index that is not trusted, and a copy of
/// a3s-iso's own that cannot be read as an index.
fn seed_copied(seed: Seed<'_>, from: &Path, to: &Path, tree: &Path) -> Result<(Summary, bool)> {
    use crate::git::index_file::recent::{Checked, distrusted, second_of};
    let modified = modified_of(from)?;
    let bytes = fs::read(from).ctx(|| format!("cannot read {}", from.display()))?;
    let held = crate::git::index_file::summary_of(&bytes);
    let mut dated = modified;
    let bytes = match seed {
        Seed::Trusted(_) => bytes,
        Seed::Own(_) | Seed::Peek(_) if held.split => return Ok((held, false)),
        Seed::Own(_) | Seed::Peek(_) => {
            let checked = Checked {
                tree,
                dated: modified,
            };
            match distrusted(bytes, second_of(modified), Some(checked)) {
                Some((bytes, done)) => {
                    // Dated after the entries kept unread, for git not to read them either.
                    if done.verified > 0 {
                        let after = std::time::UNIX_EPOCH
                            + std::time::Duration::from_secs(u64::from(done.verified_until) + 1);
                        dated = dated.max(after);
                    }
                    bytes
                }
                None => return Ok((held, false)),
            }
        }
    };
    fs::write(to, bytes).ctx(|| format!("cannot write {}", to.display()))?;
    set_modified(to, dated)?;
    Ok((held, true))
}

/// Copies a3s-iso's own index at `from` of the tree `wt` works in to `to`, as a snapshot
/// starts from it ([`seed_copied`]): every record that may have changed since the index was dated fails
/// git's comparison, so git reads its file. Where `from` cannot be read so, `to` is rebuilt
/// from HEAD instead, and everything is read once.
pub(crate) fn copy_distrusted(wt: &HermeticGit, from: &Path, to: &Path) -> Result<()> {
    let plain = fs::symlink_metadata(from).is_ok_and(|m| m.is_file());
    if !(plain && seed_copied(Seed::Own(from), from, to, wt.tree())?.1) {
        wt.on_snapshot_index(to).read_tree("HEAD")?;
    }
    Ok(())
}

/// Keeps the index a snapshot that began at `began` wrote as the next snapshot's seed at
/// `seed`, dated when the snapshot began: git's racy check then looks harder at what changed
/// since, and the next snapshot knows from when on nothing noted is trusted.
pub(crate) fn keep_seed(
    index: &Path,
    seed: &Path,
    began: std::time::SystemTime,
    tree: &str,
) -> Result<()> {
    crate::git::index_file::recent::date_from(index, began)?;
    clear_the_way(seed)?;
    fs::rename(index, seed).ctx(|| format!("cannot keep {}", seed.display()))?;
    note_tree(seed, tree);
    Ok(())
}

/// Removes a directory found where a seed index goes: the seed is a cache of a3s-iso's own,
/// and a directory there would refuse every snapshot's index. A link or a file is replaced by
/// the rename as an entry.
fn clear_the_way(seed: &Path) -> Result<()> {
    match fs::symlink_metadata(seed) {
        Ok(meta) if meta.is_dir() => {
            fs::remove_dir_all(seed).ctx(|| format!("cannot remove {}", seed.display()))
        }
        _ => Ok(()),
    }
}

/// Files the session's own commits track (HEAD has them) that a3s-iso's index does not, and
/// that `add -A` therefore leaves out when an ignore rule matches them (the agent added them
/// with force): each one on disk as a file or link, reached through real directories only,
/// joins the snapshot.
fn add_tracked_by_head(on_index: &OnIndex<'_>, tree: &Path, paths: &[PathBuf]) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let missing = on_index.deleted_since("HEAD", paths)?;
    let mut present: Vec<u8> = Vec::new();
    for path in crate::git::split_nul(&missing) {
        if plain_entry(tree, std::ffi::OsStr::from_bytes(path)) {
            present.extend_from_slice(path);
            present.push(0);
        }
    }
    if !present.is_empty() {
        on_index.add_listed(present)?;
    }
    Ok(())
}

/// Entries marked skip-worktree (outside a sparse checkout's patterns) whose path is in the tree
/// lose the mark, so that `git add -A` looks at them: a file the command wrote there is its work,
/// and git itself (2.37 and later, in a sparse checkout) takes such a file as changed rather than
/// as absent. The other marked entries stay as they are: what is not in the tree is not deleted.
pub(crate) fn unskip_present(on_index: &OnIndex<'_>, tree: &Path) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let listed = on_index.tagged_entries()?;
    let mut present = Vec::new();
    for path in crate::git::split_nul(&listed).filter_map(|r| r.strip_prefix(b"S ")) {
        if fs::symlink_metadata(tree.join(std::ffi::OsStr::from_bytes(path))).is_ok() {
            present.extend_from_slice(path);
            present.push(0);
        }
    }
    if !present.is_empty() {
        on_index.unskip_listed(present)?;
    }
    Ok(())
}

/// `git add -A` of everything but the gitlinks; returns the nested repositories it found,
/// taken out of the index again (they are never folded in as gitlinks).
fn add_all(on_index: &OnIndex<'_>, gitlinks: &[OsString]) -> Result<Vec<String>> {
    let mut excluded: Vec<OsString> = gitlinks.to_vec();
    // A nested repository without a commit (`git init` and nothing more) makes `git add` fail
    // outright: it is left out like any nested repository, and the add runs again without it.
    let mut unborn: Vec<String> = Vec::new();
    let added = loop {
        let specs = excluded.iter().map(|path| {
            let mut spec = OsString::from(":(exclude,literal)");
            spec.push(path);
            spec
        });
        let added = on_index.add_all_but(specs)?;
        if added.exit_code == Some(0) {
            break added;
        }
        let fresh: Vec<String> = unborn_repositories(&added.stderr)
            .filter(|path| !unborn.contains(path))
            .collect();
        if fresh.is_empty() {
            return Err(Error::GitFailed {
                failure: crate::base::error::GitFailure {
                    args: vec!["add".into(), "-A".into()],
                    exit_code: added.exit_code,
                    stderr: added.stderr,
                },
            });
        }
        excluded.extend(fresh.iter().map(OsString::from));
        unborn.extend(fresh);
    };
    // git names each nested repository it would fold in as a gitlink; take them out again.
    let nested: Vec<String> = added
        .stderr
        .lines()
        .filter_map(|line| line.strip_prefix(EMBEDDED_REPO_WARNING))
        .map(str::to_string)
        .collect();
    if !nested.is_empty() {
        on_index.force_remove(&nested)?;
    }
    Ok(nested.into_iter().chain(unborn).collect())
}

/// What `git add -A` stages, for an index of a3s-iso's own without gitlinks: `status` names
/// every path that differs from the index, read through the index's untracked cache (so only
/// directories whose stat data moved are read again), and exactly those are staged
/// ([`update_listed`]). A nested repository is named `?? <path>/`: it is left out, and
/// returned, as `add_all` leaves it out; with whether anything was staged.
fn add_changes_seen(on_index: &OnIndex<'_>, tree: &Path) -> Result<(Vec<String>, bool)> {
    // A file a command is still writing can change between `status` and its staging (git
    // then reads less than it was told): looked at again, up to three times in all.
    let mut attempt = 1;
    loop {
        let (changed, nested) = changes_seen(on_index)?;
        match update_listed(on_index, tree, &changed) {
            Err(Error::GitFailed { .. }) if attempt < STAGING_ATTEMPTS => attempt += 1,
            staged => return staged.map(|()| (nested, !changed.is_empty())),
        }
    }
}

/// How many times a snapshot stages what `status` named before it gives up.
const STAGING_ATTEMPTS: u32 = 3;

/// The paths `status` names as differing from the index (NUL-terminated) and the nested
/// repositories it names (`?? <path>/`).
fn changes_seen(on_index: &OnIndex<'_>) -> Result<(Vec<u8>, Vec<String>)> {
    let listing = on_index.changes_through_untracked_cache()?;
    let (mut changed, mut nested) = (Vec::new(), Vec::new());
    for record in crate::git::split_nul(&listing) {
        // `XY <path>`: X compares the index with HEAD, Y the tree with the index.
        let (Some(status), Some(path)) = (record.get(..2), record.get(3..)) else {
            continue;
        };
        if status == b"??" {
            if let Some(repository) = path.strip_suffix(b"/") {
                nested.push(String::from_utf8_lossy(repository).into_owned());
                continue;
            }
        } else if status[1] == b' ' {
            continue;
        }
        changed.extend_from_slice(path);
        changed.push(0);
    }
    Ok((changed, nested))
}

/// The nested repositories without a commit that `git add` refused, from its stderr
/// (`error: 'PATH/' does not have a commit checked out`), without the trailing `/`.
fn unborn_repositories(stderr: &str) -> impl Iterator<Item = String> + '_ {
    stderr.lines().filter_map(|line| {
        let quoted = line
            .strip_prefix("error: '")?
            .strip_suffix("' does not have a commit checked out")?;
        Some(quoted.trim_end_matches('/').to_string())
    })
}

/// The paths of the gitlink entries of the index at `index` (as bytes: paths need not be
/// UTF-8). git is asked only when the file holds a gitlink's mode somewhere.
fn gitlinks(on_index: &OnIndex<'_>, index: &Path, scratch: &Path) -> Result<Vec<OsString>> {
    if !holds_bytes(index, &GITLINK_MODE)? {
        return Ok(Vec::new());
    }
    let listing = TempFile::new(scratch, "ls-files")?;
    let file = File::create(listing.path())
        .ctx(|| format!("cannot create {}", listing.path().display()))?;
    on_index.staged_entries_to(file)?;
    let file =
        File::open(listing.path()).ctx(|| format!("cannot open {}", listing.path().display()))?;
    let mut paths = Vec::new();
    for record in BufReader::new(file).split(0) {
        let record = record.ctx(|| format!("cannot read {}", listing.path().display()))?;
        // `<mode> <oid> <stage>\t<path>`
        let Some(rest) = record.strip_prefix(b"160000 ") else {
            continue;
        };
        if let Some(tab) = rest.iter().position(|b| *b == b'\t') {
            paths.push(OsString::from_vec(rest[tab + 1..].to_vec()));
        }
    }
    paths.dedup();
    Ok(paths)
}

/// What identifies one version of an index file: its inode, size and change time (which no
/// one can set: any write of the file moves it).
fn index_version(index: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = fs::symlink_metadata(index).ok().filter(|m| m.is_file())?;
    Some(format!(
        "{} {} {}.{}",
        meta.ino(),
        meta.len(),
        meta.ctime(),
        meta.ctime_nsec()
    ))
}

/// Where the tree of a3s-iso's own index `index` is noted (`<name>.tree`).
fn tree_note(index: &Path) -> PathBuf {
    index.with_extension("tree")
}

/// Notes that the index at `index`, as it is now, writes `tree` (best effort: without the
/// note, the tree is written again from the index).
pub(crate) fn note_tree(index: &Path, tree: &str) {
    note_tree_at(&tree_note(index), index, tree);
}

/// The tree the index at `index` writes, when it is noted for this very version of the file.
pub(crate) fn noted_tree(index: &Path) -> Option<String> {
    noted_tree_at(&tree_note(index), index)
}

/// [`note_tree`] with the note at `note`.
pub(crate) fn note_tree_at(note: &Path, index: &Path, tree: &str) {
    if let Some(version) = index_version(index) {
        let _ = fs::write(note, format!("{tree} {version}\n"));
    }
}

/// [`noted_tree`] with the note at `note`.
pub(crate) fn noted_tree_at(note: &Path, index: &Path) -> Option<String> {
    let note = fs::read_to_string(note).ok()?;
    let (tree, version) = note.trim_end().split_once(' ')?;
    let plain = !tree.is_empty() && tree.bytes().all(|b| b.is_ascii_hexdigit());
    (plain && Some(version) == index_version(index).as_deref()).then(|| tree.to_string())
}

/// The tree of the index at `index`, written as a snapshot writes it.
pub(crate) fn write_tree(wt: &HermeticGit, index: &Path) -> Result<String> {
    wt.on_snapshot_index(index).write_tree()
}

/// The most pathspec bytes one git command line carries.
const PATHSPEC_CHUNK: usize = 64 * 1024;

/// Stages `paths` (`None`: every path) of the working tree into the index at `index` exactly
/// as `git add -A` would stage them: their tracked entries (kept even where an ignore rule
/// matches them now) and the untracked files in them that no ignore rule matches, each added
/// when it is a file or a link reached through real directories, removed otherwise.
pub(crate) fn stage_paths(wt: &HermeticGit, index: &Path, paths: Option<&[PathBuf]>) -> Result<()> {
    let on_index = wt.on_snapshot_index_literal(index);
    let chunks = paths.map_or_else(|| vec![&[][..]], pathspec_chunks);
    let mut listed = Vec::new();
    for chunk in &chunks {
        listed.extend(on_index.stageable(chunk)?);
    }
    update_listed(&on_index, wt.tree(), &listed)?;
    if wt.head_moved() {
        for chunk in &chunks {
            add_tracked_by_head(&on_index, wt.tree(), chunk)?;
        }
    }
    Ok(())
}

/// `paths` in runs of at most [`PATHSPEC_CHUNK`] bytes (one path at least).
fn pathspec_chunks(paths: &[PathBuf]) -> Vec<&[PathBuf]> {
    let mut chunks = Vec::new();
    let mut rest = paths;
    while !rest.is_empty() {
        let mut bytes = 0;
        let n = rest
            .iter()
            .take_while(|p| {
                bytes += p.as_os_str().len() + 1;
                bytes <= PATHSPEC_CHUNK
            })
            .count()
            .max(1);
        chunks.push(&rest[..n]);
        rest = &rest[n..];
    }
    chunks
}

/// Stages what `ls-files` listed (NUL-separated): present files and links added, the rest
/// removed. A path simply gone (nothing there, or a file where a directory on its way was)
/// is removed by the same `update-index` that adds, as git removes a missing file; only one
/// that something else stands for (a directory, or a path through a link) is force-removed
/// apart: each `update-index` writes the whole index.
fn update_listed(on_index: &OnIndex<'_>, tree: &Path, listed: &[u8]) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let (mut present, mut gone) = (Vec::new(), Vec::new());
    for path in crate::git::split_nul(listed) {
        let path_in_tree = std::ffi::OsStr::from_bytes(path);
        let to = match plain_entry(tree, path_in_tree) || simply_gone(tree, path_in_tree) {
            true => &mut present,
            false => &mut gone,
        };
        to.extend_from_slice(path);
        to.push(0);
    }
    if !gone.is_empty() {
        on_index.force_remove_listed(gone)?;
    }
    if !present.is_empty() {
        on_index.add_replacing_listed(present)?;
    }
    Ok(())
}

/// Whether nothing is at `path` in `tree` and no link is on its way: each directory on the
/// way is a real one up to the first that is gone or is a file, or the last entry is gone
/// (what `update-index --remove` takes for a missing file; git refuses a path beyond a link).
fn simply_gone(tree: &Path, path: &std::ffi::OsStr) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let mut at = tree.to_path_buf();
    let parts: Vec<&[u8]> = path.as_bytes().split(|b| *b == b'/').collect();
    for (n, part) in parts.iter().enumerate() {
        at.push(std::ffi::OsStr::from_bytes(part));
        match fs::symlink_metadata(&at) {
            Err(e) => return e.kind() == std::io::ErrorKind::NotFound,
            Ok(m) if n + 1 == parts.len() || m.file_type().is_symlink() => return false,
            Ok(m) if !m.is_dir() => return true,
            Ok(_) => {}
        }
    }
    false
}

/// Whether `path` in `tree` is a file or a link reached through real directories only.
fn plain_entry(tree: &Path, path: &std::ffi::OsStr) -> bool {
    let mut at = tree.to_path_buf();
    use std::os::unix::ffi::OsStrExt;
    let parts: Vec<&[u8]> = path.as_bytes().split(|b| *b == b'/').collect();
    parts.iter().enumerate().all(|(n, part)| {
        at.push(std::ffi::OsStr::from_bytes(part));
        fs::symlink_metadata(&at).is_ok_and(|m| match n + 1 == parts.len() {
            true => m.is_file() || m.is_symlink(),
            false => m.is_dir(),
        })
    })
}

/// Whether the file at `path` contains `needle` anywhere, read in chunks.
fn holds_bytes(path: &Path, needle: &[u8]) -> Result<bool> {
    let mut file = File::open(path).ctx(|| format!("cannot open {}", path.display()))?;
    let mut buf = vec![0u8; 256 * 1024];
    // The tail of the previous chunk, so that a match across chunks is seen.
    let keep = needle.len().saturating_sub(1);
    let mut filled = 0;
    loop {
        let n = file
            .read(&mut buf[filled..])
            .ctx(|| format!("cannot read {}", path.display()))?;
        if n == 0 {
            return Ok(false);
        }
        let end = filled + n;
        if buf[..end].windows(needle.len()).any(|w| w == needle) {
            return Ok(true);
        }
        let tail = end.saturating_sub(keep);
        buf.copy_within(tail..end, 0);
        filled = end - tail;
    }
}

/// A patch on disk with its digest and size.
pub(crate) struct Patch {
    pub file: TempFile,
    pub bytes: u64,
    /// `sha256:<64 lowercase hex>` of exactly the patch bytes.
    pub digest: String,
    pub files_changed: u64,
}

impl Patch {
    /// The first paths the patch touches, for people (best effort: none if it cannot be read).
    pub(crate) fn listed_paths(&self) -> Vec<String> {
        match fs::File::open(self.file.path()) {
            Ok(file) => patch_paths(std::io::BufReader::new(file), LISTED_PATHS),
            Err(_) => Vec::new(),
        }
    }

    /// The patch's bytes, for a document (which is bounded in size); everything else streams.
    pub(crate) fn read(&self) -> Result<Vec<u8>> {
        fs::read(self.file.path()).ctx(|| format!("cannot read {}", self.file.path().display()))
    }

    /// A patch already in a scratch file (a fetched blob), measured and hashed.
    pub(crate) fn from_file(file: TempFile) -> Result<Patch> {
        let (bytes, digest, files_changed) = digest_file(file.path())?;
        Ok(Patch {
            file,
            bytes,
            digest,
            files_changed,
        })
    }

    /// A patch held in memory (a decoded document), written to a scratch file and measured.
    pub(crate) fn from_bytes(bytes: &[u8], scratch: &Path) -> Result<Patch> {
        let file = TempFile::new(scratch, "patch")?;
        fs::write(file.path(), bytes).ctx(|| format!("cannot write {}", file.path().display()))?;
        Patch::from_file(file)
    }
}

/// The patch from `base` to `result` (tree ids of the repository whose common dir is
/// `common_dir`), streamed to a scratch file and hashed. Its bytes depend on the two trees
/// only: the diff runs in an [`ObjectView`] with every output option pinned.
pub(crate) fn patch(
    git: &Git,
    common_dir: &Path,
    base: &str,
    result: &str,
    scratch: &Path,
) -> Result<Patch> {
    patch_with(git, common_dir, (base, result), None, scratch)
}

/// The patch from `base` to `result` as [`patch`] makes it, with every path under `prefix`
/// (`a/<prefix>/<path>`): a nested repository's change set shown within its superproject, as
/// `git diff --submodule=diff` shows one. For people only: its digest is not the change set's.
pub(crate) fn patch_under(
    git: &Git,
    common_dir: &Path,
    (base, result): (&str, &str),
    prefix: &crate::base::paths::RepoPath,
    scratch: &Path,
) -> Result<Patch> {
    patch_with(git, common_dir, (base, result), Some(&prefix.0), scratch)
}

/// The patch with the pinned options, its paths under `prefix` when one is given.
fn patch_with(
    git: &Git,
    common_dir: &Path,
    (base, result): (&str, &str),
    prefix: Option<&[u8]>,
    scratch: &Path,
) -> Result<Patch> {
    let file = TempFile::new(scratch, "patch")?;
    let out =
        File::create(file.path()).ctx(|| format!("cannot create {}", file.path().display()))?;
    // The same tree on both sides: the empty patch, without starting git.
    if base == result {
        drop(out);
        return Patch::from_file(file);
    }
    ObjectView::new(git, common_dir, &[base, result], scratch)?.write_patch(
        (base, result),
        prefix,
        out,
    )?;
    Patch::from_file(file)
}

/// Size, `sha256:` digest and number of `diff --git` sections of a patch file, in one pass.
fn digest_file(path: &Path) -> Result<(u64, String, u64)> {
    let mut file = File::open(path).ctx(|| format!("cannot open {}", path.display()))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0u64;
    let mut sections = 0u64;
    let mut at_line_start = true;
    // Carries a partial "diff --git " prefix across buffer boundaries.
    let mut pending: Vec<u8> = Vec::new();
    const MARK: &[u8] = b"diff --git ";
    loop {
        let n = file
            .read(&mut buf)
            .ctx(|| format!("cannot read {}", path.display()))?;
        if n == 0 {
            break;
        }
        let chunk = &buf[..n];
        hasher.update(chunk);
        total += n as u64;
        for &b in chunk {
            if at_line_start || !pending.is_empty() {
                pending.push(b);
                if !MARK.starts_with(&pending) {
                    pending.clear();
                } else if pending.len() == MARK.len() {
                    sections += 1;
                    pending.clear();
                }
            }
            at_line_start = b == b'\n';
        }
    }
    Ok((
        total,
        format!("sha256:{}", hex::encode(hasher.finalize())),
        sections,
    ))
}

/// How many files a patch touches (its `diff --git` sections).
pub(crate) fn count_files(patch: &[u8]) -> u64 {
    let mut count = u64::from(patch.starts_with(b"diff --git "));
    count += patch.windows(12).filter(|w| w == b"\ndiff --git ").count() as u64;
    count
}

/// How many paths a report lists for people before it says "and N more".
pub const LISTED_PATHS: usize = 10;

/// The first `limit` paths a patch touches (the new side of each `diff --git` header), read
/// line by line so that a large patch is not held in memory. Quoted names are unquoted; a
/// name that is not UTF-8 is shown with replacement characters.
pub(crate) fn patch_paths(patch: impl std::io::BufRead, limit: usize) -> Vec<String> {
    let mut paths = Vec::new();
    for line in patch.split(b'\n') {
        if paths.len() >= limit {
            break;
        }
        let Ok(line) = line else { break };
        if let Some(header) = line.strip_prefix(b"diff --git ") {
            paths.push(
                String::from_utf8_lossy(&crate::model::patch_text::header_path(header))
                    .into_owned(),
            );
        }
    }
    paths
}

/// `sha256:<hex>` of bytes in memory.
pub(crate) fn digest_bytes(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn patch_paths_reads_plain_and_quoted_headers() {
        let patch = b"diff --git a/x y b/x y\n--- a/x y\n+++ b/x y\n@@ -1 +1 @@\n-a\n+b\ndiff --git \"a/t\\tb\\303\\251\" \"b/t\\tb\\303\\251\"\nnew file mode 100644\n";
        assert_eq!(
            crate::model::snapshot::patch_paths(&patch[..], 10),
            vec!["x y".to_string(), "t\tb\u{e9}".to_string()]
        );
        assert_eq!(crate::model::snapshot::patch_paths(&patch[..], 1).len(), 1);
    }
}
