//! Snapshots and patches. A snapshot is the tree of an isolation's tracked plus untracked
//! non-ignored content, written through a temporary index seeded from a copy of the
//! isolation's own index (so unchanged files are not re-hashed). A patch is the diff of two
//! trees with every output-shaping option fixed, so the same trees give the same bytes
//! whatever the user's git configuration.

use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Error, IoContext, Result};
use crate::git::Git;

/// The tree of git's empty tree object (SHA-1 repositories).
pub const EMPTY_TREE_SHA1: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// Options that pin every aspect of `git diff` output that user configuration could change.
const PATCH_CONFIG: &[&str] = &[
    "-c",
    "core.quotePath=true",
    "-c",
    "diff.suppressBlankEmpty=false",
    "-c",
    "core.attributesFile=/dev/null",
];
const PATCH_FLAGS: &[&str] = &[
    "--binary",
    "--full-index",
    "--no-renames",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--diff-algorithm=myers",
    "--indent-heuristic",
    "-U3",
    "--inter-hunk-context=0",
    "--no-relative",
    "--ignore-submodules=none",
    "--submodule=short",
    "-O/dev/null",
];

/// A worktree to snapshot: its tree and the admin dir that git metadata is read from.
pub(crate) struct Worktree<'a> {
    pub tree: &'a Path,
    pub admin_dir: &'a Path,
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
            path: dir.join(crate::scratch::owned_name(stem)),
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
}

const EMBEDDED_REPO_WARNING: &str = "warning: adding embedded git repository: ";

/// Writes the snapshot tree of `wt`. Neither the isolation's index nor any other index is
/// modified; `scratch` is where the temporary index lives.
pub(crate) fn snapshot(git: &Git, wt: &Worktree<'_>, scratch: &Path) -> Result<Snapshot> {
    let index = TempFile::new(scratch, "index")?;
    let own_index = wt.admin_dir.join("index");
    if own_index.is_file() && !is_split(wt.admin_dir) {
        fs::copy(&own_index, index.path())
            .ctx(|| format!("cannot copy {}", own_index.display()))?;
    } else {
        // A split index keeps its entries in a shared file beside it: a copy of the index
        // file alone is not the index, so rebuild from HEAD (everything is re-hashed).
        git.worktree(wt.admin_dir, wt.tree)
            .env("GIT_INDEX_FILE", index.path())
            .args(["read-tree", "HEAD"])
            .run()?;
    }
    let on_index = || {
        git.worktree(wt.admin_dir, wt.tree)
            .env("GIT_INDEX_FILE", index.path())
            .args(["-c", "core.splitIndex=false"])
    };
    let added = on_index()
        .args(["-c", "advice.addEmbeddedRepo=false", "add", "-A", "--", "."])
        .output()?;
    if added.exit_code != Some(0) {
        return Err(Error::GitFailed {
            failure: crate::error::GitFailure {
                args: vec!["add".into(), "-A".into()],
                exit_code: added.exit_code,
                stderr: added.stderr,
            },
        });
    }
    // git names each nested repository it would fold in as a gitlink; take them out again.
    let nested: Vec<String> = added
        .stderr
        .lines()
        .filter_map(|line| line.strip_prefix(EMBEDDED_REPO_WARNING))
        .map(str::to_string)
        .collect();
    if !nested.is_empty() {
        on_index()
            .args(["update-index", "--force-remove", "--"])
            .args(&nested)
            .run()?;
    }
    let tree = on_index().arg("write-tree").run_text()?;
    Ok(Snapshot { tree, nested })
}

/// Whether the worktree's index is split (its entries live partly in `sharedindex.*`).
fn is_split(admin_dir: &Path) -> bool {
    fs::read_dir(admin_dir)
        .map(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("sharedindex."))
        })
        .unwrap_or(false)
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
    /// The patch's bytes, for a document (which is bounded in size); everything else streams.
    pub(crate) fn read(&self) -> Result<Vec<u8>> {
        fs::read(self.file.path()).ctx(|| format!("cannot read {}", self.file.path().display()))
    }

    /// A patch held in memory (a decoded document), written to a scratch file and measured.
    pub(crate) fn from_bytes(bytes: &[u8], scratch: &Path) -> Result<Patch> {
        let file = TempFile::new(scratch, "patch")?;
        fs::write(file.path(), bytes).ctx(|| format!("cannot write {}", file.path().display()))?;
        let (bytes, digest, files_changed) = digest_file(file.path())?;
        Ok(Patch {
            file,
            bytes,
            digest,
            files_changed,
        })
    }
}

/// The patch from `base` to `result` (tree ids), streamed to a scratch file and hashed.
pub(crate) fn patch(
    git: &Git,
    repo_dir: &Path,
    base: &str,
    result: &str,
    scratch: &Path,
) -> Result<Patch> {
    let file = TempFile::new(scratch, "patch")?;
    let out =
        File::create(file.path()).ctx(|| format!("cannot create {}", file.path().display()))?;
    git.at(repo_dir)
        .args(PATCH_CONFIG)
        .arg("diff")
        .args(PATCH_FLAGS)
        .arg(base)
        .arg(result)
        .arg("--")
        .run_to_file(out)?;
    let (bytes, digest, files_changed) = digest_file(file.path())?;
    Ok(Patch {
        file,
        bytes,
        digest,
        files_changed,
    })
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

/// `sha256:<hex>` of bytes in memory.
pub(crate) fn digest_bytes(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}
