//! `diff`: a change set to review before promoting it: a session's, a verified document's, or a
//! promoted one's. It writes nothing but the snapshot's unreferenced objects, and leaves
//! a3s-iso's own index of the isolation as it was.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::base::error::{Error, IoContext, NoDocument, Result};
use crate::base::ids::TreeId;
use crate::base::paths::RepoPath;
use crate::base::warning::{PromoteWarning, Warning};
use crate::base::wire::wire_enum;
use crate::context::Context;
use crate::model::snapshot::{self, Patch};
use crate::services::nested::NestedKind;
use crate::store::scratch::ReadScratch;

/// What `diff` is asked to show.
#[derive(Debug, Clone, Default)]
pub struct DiffOptions {
    /// The session (default: the one `-s` resolution finds).
    pub session_id: Option<String>,
    /// A change-set document to show instead of a session.
    pub change_set: Option<PathBuf>,
    /// A promoted change set to show from its artifacts.
    pub digest: Option<String>,
    /// The whole session since its base tree, not the delta since its last promoted step.
    pub cumulative: bool,
}

/// Which change set a diff shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// A session's delta since its last promoted step (or its base): what promote applies now.
    SincePromote,
    /// A session's work since its base tree, steps already promoted included.
    Cumulative,
    /// A change-set document's patch.
    ChangeSet,
    /// A promoted (or planned) change set's patch, from its artifacts.
    Promoted,
}

wire_enum! {
    /// How a file changes.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum FileStatus {
        /// The file is new.
        Added = "added",
        /// The file's content or mode changes.
        Modified = "modified",
        /// The file is removed.
        Deleted = "deleted",
        /// The path changes kind (file, symbolic link, submodule).
        TypeChanged = "type_changed",
    }
}

/// One file of a patch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileChange {
    /// The path in the repository.
    pub path: RepoPath,
    /// How it changes.
    pub status: FileStatus,
    /// Lines added (0 for a binary file).
    pub additions: u64,
    /// Lines removed (0 for a binary file).
    pub deletions: u64,
    /// Whether the patch carries the file as binary data.
    pub binary: bool,
}

/// Where the patch's bytes are.
enum Body {
    /// A scratch file, removed when the outcome is dropped (before its directory).
    Scratch { patch: Patch, _dir: ReadScratch },
    /// A decoded document's patch.
    Memory(Vec<u8>),
    /// A promote's artifact.
    Stored(PathBuf),
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Body::Scratch { patch, .. } => write!(f, "Scratch({})", patch.file.path().display()),
            Body::Memory(bytes) => write!(f, "Memory({} bytes)", bytes.len()),
            Body::Stored(path) => write!(f, "Stored({})", path.display()),
        }
    }
}

/// What `diff` found: the patch (see [`DiffOutcome::open_patch`]) and its files.
#[derive(Debug, Serialize)]
pub struct DiffOutcome {
    /// The session the change set is of (a document's identity, a journal entry's session).
    pub session_id: Option<String>,
    /// Which change set this is.
    pub scope: Scope,
    /// `sha256:` of exactly the patch bytes.
    pub digest: crate::base::ids::Digest,
    /// The patch's size.
    pub patch_bytes: u64,
    /// Whether a promote now would be refused `head_moved`; `null` but for a session's delta.
    pub head_moved: Option<bool>,
    /// The tree the patch applies to, where known.
    pub from_tree: Option<TreeId>,
    /// The tree it makes, where known.
    pub to_tree: Option<TreeId>,
    /// The files, in the patch's order.
    pub files: Vec<FileChange>,
    /// Submodules and nested repositories of the isolation: their own change sets travel
    /// beside the root's and are not part of this patch.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nested: Vec<RepoPath>,
    /// The nested change sets a promote would land after the root's (a session's only).
    pub nested_change_sets: Vec<NestedDiff>,
    /// What the user should know: nested repositories whose work is not shown, and why.
    pub warnings: Vec<Warning>,
    #[serde(skip)]
    body: Body,
}

/// The change set of one submodule or nested repository of a session, as `diff` shows it.
#[derive(Serialize)]
pub struct NestedDiff {
    /// The repository's path in the superproject.
    pub path: RepoPath,
    /// Submodule or nested repository.
    pub kind: NestedKind,
    /// `sha256:` of the nested patch as a promote would land it in that repository.
    pub digest: crate::base::ids::Digest,
    /// That patch's size.
    pub patch_bytes: u64,
    /// The tree of the repository the patch applies to.
    pub from_tree: TreeId,
    /// The tree it makes.
    pub to_tree: TreeId,
    /// The files, with their paths in the superproject, in the patch's order.
    pub files: Vec<FileChange>,
    /// The patch as shown: every path under the repository's (`a/<repository path>/<file>`).
    #[serde(skip)]
    shown: Patch,
}

impl std::fmt::Debug for NestedDiff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NestedDiff")
            .field("path", &self.path)
            .field("kind", &self.kind)
            .field("digest", &self.digest)
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

impl NestedDiff {
    /// The nested patch with superproject paths, as `git diff --submodule=diff` shows it.
    pub fn open_patch(&self) -> Result<Box<dyn Read + '_>> {
        Ok(Box::new(open(self.shown.file.path())?))
    }
}

impl DiffOutcome {
    /// The patch's bytes, exactly as promote would write them to `change.patch`.
    pub fn open_patch(&self) -> Result<Box<dyn Read + '_>> {
        Ok(match &self.body {
            Body::Scratch { patch, .. } => Box::new(open(patch.file.path())?),
            Body::Memory(bytes) => Box::new(bytes.as_slice()),
            Body::Stored(path) => Box::new(open(path)?),
        })
    }
}

fn open(path: &Path) -> Result<File> {
    File::open(path).ctx(|| format!("cannot open {}", path.display()))
}

/// Shows a change set; see [`DiffOptions`]. Reads only.
pub fn diff(ctx: &Context, opts: &DiffOptions) -> Result<DiffOutcome> {
    if let Some(path) = &opts.change_set {
        return document(ctx, path);
    }
    if let Some(digest) = &opts.digest {
        return promoted(ctx, digest);
    }
    session(ctx, opts)
}

/// The source's `core.pager`, if it sets one (the caller's environment comes first).
pub fn configured_pager(ctx: &Context) -> Option<String> {
    let located = crate::recovery::locate(ctx).ok()?;
    let out = ctx
        .git
        .config_get(&located.repo.toplevel, "core.pager")
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.exit_code == Some(0) && !text.is_empty()).then_some(text)
}

/// A session's change set from a fresh snapshot, with its nested change sets.
fn session(ctx: &Context, opts: &DiffOptions) -> Result<DiffOutcome> {
    let located = crate::recovery::locate(ctx)?;
    let session = ctx.resolve_session(&located, opts.session_id.as_deref())?;
    let isolation = crate::model::isolation::writable_isolation(&session)?;
    // The snapshots need no lock: they read the isolation and write objects only.
    let scratch = ReadScratch::new()?;
    let mut snap = isolation.peek(ctx, &located, scratch.path())?;
    let mut nested = snap.gitlinks.clone();
    nested.extend(snap.nested.iter().map(|name| nested_path(name)));
    let look = crate::services::nested::Look::Peek(scratch.path());
    let found = crate::services::nested::capture_isolation(
        &ctx.git, &located, &isolation, &mut snap, look,
    )?;
    let bases = bases(ctx, &located, &session, opts, &found)?;
    let patch = snapshot::patch(
        &ctx.git,
        &located.repo.common_dir,
        &bases.root,
        &snap.tree,
        scratch.path(),
    )?;
    let files = files_of(BufReader::new(open(patch.file.path())?))?;
    let nested_change_sets = nested_diffs(ctx, &located, &found, &bases.nested, scratch.path())?;
    let mut warnings = found.warnings();
    warnings.extend(snap.nested.iter().map(|name| {
        let path = nested_path(name).to_string();
        Warning::from(PromoteWarning::NestedNotInSource { path })
    }));
    Ok(DiffOutcome {
        session_id: Some(session.session_id.into()),
        scope: bases.scope,
        head_moved: bases.head_moved,
        digest: crate::base::ids::Digest::new(&patch.digest)?,
        patch_bytes: patch.bytes,
        from_tree: Some(bases.root),
        to_tree: Some(TreeId::new(snap.tree)?),
        files,
        nested,
        nested_change_sets,
        warnings,
        body: Body::Scratch {
            patch,
            _dir: scratch,
        },
    })
}

/// A nested repository's name as the snapshot gives it (`dir/`), as a path.
fn nested_path(name: &str) -> RepoPath {
    RepoPath(name.trim_end_matches('/').as_bytes().to_vec())
}

/// Where a session's change sets start.
struct Bases {
    scope: Scope,
    /// The root's from-tree.
    root: TreeId,
    head_moved: Option<bool>,
    /// Each captured nested change set's from-tree, in order (`None`: nothing new).
    nested: Vec<Option<TreeId>>,
}

/// Where the session's change sets start: their base (`cumulative`), else after the last step.
fn bases(
    ctx: &Context,
    located: &crate::context::Located,
    session: &crate::store::state::SessionRecord,
    opts: &DiffOptions,
    found: &crate::services::nested::Nested,
) -> Result<Bases> {
    let sets = found.captured.iter().map(|c| &c.set);
    if opts.cumulative {
        return Ok(Bases {
            scope: Scope::Cumulative,
            root: session.base_tree.clone(),
            head_moved: None,
            nested: sets.map(|set| Some(set.base_tree.clone())).collect(),
        });
    }
    // The lock while the journal is read, so that an in-flight promote's step counts.
    let _lock = crate::recovery::lock(ctx, &located.repo)?;
    let previous = crate::services::steps::last_step(&located.store, session, None)?;
    let expected = previous
        .as_ref()
        .and_then(|p| p.step.head_after.as_deref())
        .unwrap_or(&session.bound_revision);
    let head = located.repo.head_commit(&ctx.git);
    let mut nested = Vec::new();
    for set in sets {
        let base = crate::services::steps::nested_delta_base(&located.store, Some(session), set)?;
        nested.push(base.map(|(from, _)| from));
    }
    Ok(Bases {
        scope: Scope::SincePromote,
        root: crate::services::steps::delta_base(session, previous.as_ref()),
        head_moved: head.map(|head| head != expected),
        nested,
    })
}

/// The nested change sets from their bases (`None`: left out), each as a promote would land it
/// and as shown within the superproject.
fn nested_diffs(
    ctx: &Context,
    located: &crate::context::Located,
    found: &crate::services::nested::Nested,
    bases: &[Option<TreeId>],
    scratch: &Path,
) -> Result<Vec<NestedDiff>> {
    let common = &located.repo.common_dir;
    let mut out = Vec::new();
    for (captured, base) in found.captured.iter().zip(bases) {
        let Some(from) = base else {
            continue;
        };
        let set = &captured.set;
        let (digest, patch_bytes) = if *from == set.base_tree {
            (set.patch_digest.clone(), set.patch_bytes)
        } else {
            let delta = snapshot::patch(&ctx.git, common, from, &set.result_tree, scratch)?;
            (crate::base::ids::Digest::new(delta.digest)?, delta.bytes)
        };
        let trees = (from.as_str(), set.result_tree.as_str());
        let shown = snapshot::patch_under(&ctx.git, common, trees, &set.path_exact, scratch)?;
        out.push(NestedDiff {
            path: set.path_exact.clone(),
            kind: set.kind,
            digest,
            patch_bytes,
            from_tree: from.clone(),
            to_tree: set.result_tree.clone(),
            files: files_of(BufReader::new(open(shown.file.path())?))?,
            shown,
        });
    }
    Ok(out)
}

/// A change-set document, verified completely first.
fn document(ctx: &Context, path: &Path) -> Result<DiffOutcome> {
    let verified = crate::model::changeset::verify_file(&ctx.git, path)?;
    let cs = verified.change_set;
    let files = files_of(verified.patch.as_slice())?;
    Ok(DiffOutcome {
        session_id: Some(cs.identity.session_id),
        scope: Scope::ChangeSet,
        head_moved: None,
        digest: cs.patch_digest,
        patch_bytes: cs.patch_bytes,
        from_tree: Some(cs.base_tree),
        to_tree: Some(cs.result_tree),
        files,
        nested: Vec::new(),
        nested_change_sets: Vec::new(),
        warnings: Vec::new(),
        body: Body::Memory(verified.patch),
    })
}

/// A promoted change set from its artifacts, whose bytes must still hash to the digest.
fn promoted(ctx: &Context, digest: &str) -> Result<DiffOutcome> {
    let located = crate::recovery::locate(ctx)?;
    let digest = match located.store.resolve_digest("--digest", digest)? {
        Some(found) => found.into(),
        None => crate::model::changeset::DigestQuery::parse("--digest", digest)?.shown(),
    };
    let digest = digest.as_str();
    ctx.require_granted_digest(&located, digest)?;
    let hex = digest.trim_start_matches("sha256:");
    let path = located.store.artifacts_dir().join(hex).join("change.patch");
    let plain = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
    if !plain {
        return Err(Error::from(NoDocument::PatchMissing {
            digest: digest.to_string(),
            path,
        }));
    }
    let mut hashing = Hashing::new(open(&path)?);
    let files = files_of(BufReader::new(&mut hashing))?;
    let (bytes, found) = hashing.finish();
    if found != digest {
        return Err(Error::from(NoDocument::PatchChanged {
            digest: digest.to_string(),
            path,
            found,
        }));
    }
    let entry = located.store.journal_entry(digest)?;
    let step = entry.as_ref().and_then(|e| e.step.clone());
    Ok(DiffOutcome {
        session_id: entry.and_then(|e| e.session_id),
        scope: Scope::Promoted,
        head_moved: None,
        digest: crate::base::ids::Digest::new(digest)?,
        patch_bytes: bytes,
        from_tree: step.as_ref().map(|s| s.from_tree.clone()),
        to_tree: step.map(|s| s.result_tree),
        files,
        nested: Vec::new(),
        nested_change_sets: Vec::new(),
        warnings: Vec::new(),
        body: Body::Stored(path),
    })
}

/// A reader that hashes what passes through it.
struct Hashing<R> {
    inner: R,
    hasher: Sha256,
    bytes: u64,
}

impl<R: Read> Hashing<R> {
    fn new(inner: R) -> Self {
        Hashing {
            inner,
            hasher: Sha256::new(),
            bytes: 0,
        }
    }

    /// Reads what is left (a parse may stop early), then the size and `sha256:` digest.
    fn finish(mut self) -> (u64, String) {
        let _ = std::io::copy(&mut self, &mut std::io::sink());
        let digest = format!("sha256:{}", hex::encode(self.hasher.finalize()));
        (self.bytes, digest)
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

/// The files of a patch as a3s-iso writes them, with their line counts; a type change is one.
pub(crate) fn files_of(mut reader: impl BufRead) -> Result<Vec<FileChange>> {
    let mut files: Vec<FileChange> = Vec::new();
    let mut line = Vec::new();
    // Lines of the current hunk still to come, old side and new side.
    let mut hunk = (0u64, 0u64);
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .ctx(|| "cannot read the patch".to_string())?;
        if n == 0 {
            break;
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        if (hunk.0 > 0 || hunk.1 > 0)
            && let Some(file) = files.last_mut()
        {
            match text.first() {
                Some(b'-') => {
                    hunk.0 = hunk.0.saturating_sub(1);
                    file.deletions += 1;
                }
                Some(b'+') => {
                    hunk.1 = hunk.1.saturating_sub(1);
                    file.additions += 1;
                }
                Some(b'\\') => {}
                _ => hunk = (hunk.0.saturating_sub(1), hunk.1.saturating_sub(1)),
            }
            continue;
        }
        header_line(text, &mut files, &mut hunk);
    }
    Ok(merge_type_changes(files))
}

/// A line outside a hunk: a file's header, or a hunk's.
fn header_line(text: &[u8], files: &mut Vec<FileChange>, hunk: &mut (u64, u64)) {
    if let Some(rest) = text.strip_prefix(b"diff --git ") {
        files.push(FileChange {
            path: RepoPath(crate::model::patch_text::header_path(rest)),
            status: FileStatus::Modified,
            additions: 0,
            deletions: 0,
            binary: false,
        });
        return;
    }
    let Some(file) = files.last_mut() else {
        return;
    };
    if text.starts_with(b"new file mode ") {
        file.status = FileStatus::Added;
    } else if text.starts_with(b"deleted file mode ") {
        file.status = FileStatus::Deleted;
    } else if text == b"GIT binary patch" || text.starts_with(b"Binary files ") {
        file.binary = true;
    } else if let Some(rest) = text.strip_prefix(b"@@ -") {
        *hunk = hunk_lengths(rest);
    }
}

/// `a,b +c,d @@…` → (b, d); a length left out is 1.
fn hunk_lengths(rest: &[u8]) -> (u64, u64) {
    let text = String::from_utf8_lossy(rest);
    let mut sides = text.split(' ');
    let length = |side: Option<&str>| {
        side.map_or(0, |s| match s.split_once(',') {
            Some((_, n)) => n.parse().unwrap_or(0),
            None => 1,
        })
    };
    let old = length(sides.next());
    let new = length(sides.next().and_then(|s| s.strip_prefix('+')));
    (old, new)
}

/// A deletion and an addition of one path (git's type change) as one file, `type_changed`.
fn merge_type_changes(files: Vec<FileChange>) -> Vec<FileChange> {
    let mut out: Vec<FileChange> = Vec::with_capacity(files.len());
    for file in files {
        if let Some(last) = out.last_mut()
            && last.path == file.path
            && matches!(
                (last.status, file.status),
                (FileStatus::Deleted, FileStatus::Added) | (FileStatus::Added, FileStatus::Deleted)
            )
        {
            last.status = FileStatus::TypeChanged;
            last.additions += file.additions;
            last.deletions += file.deletions;
            last.binary |= file.binary;
            continue;
        }
        out.push(file);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::ops::diff::*;

    #[test]
    fn files_and_counts() {
        let patch = b"diff --git a/a b/a\nindex 1..2 100644\n--- a/a\n+++ b/a\n@@ -1,2 +1,2 @@\n-- x\n+++ y\n ctx\ndiff --git \"a/\\303\\251 q\" \"b/\\303\\251 q\"\nnew file mode 100644\nindex 0..1\nGIT binary patch\nliteral 1\nIc${\n\nliteral 0\nHcmV?d00001\n\ndiff --git a/l b/l\ndeleted file mode 100644\n--- a/l\n+++ /dev/null\n@@ -1 +0,0 @@\n-t\ndiff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+t\n\\ No newline at end of file\n";
        let files = files_of(&patch[..]).unwrap();
        assert_eq!(files.len(), 3);
        assert_eq!(files[0].path.0, b"a");
        assert_eq!((files[0].additions, files[0].deletions), (1, 1));
        assert_eq!(files[0].status, FileStatus::Modified);
        assert_eq!(files[1].path.0, "é q".as_bytes());
        assert_eq!(files[1].status, FileStatus::Added);
        assert!(files[1].binary);
        assert_eq!(files[2].status, FileStatus::TypeChanged);
        assert_eq!((files[2].additions, files[2].deletions), (1, 1));
    }
}
