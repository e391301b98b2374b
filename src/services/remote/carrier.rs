//! The commit a change set travels in, and its verification. The commit's tree holds
//!
//! ```text
//! base/            the base tree       (040000)
//! change-set.json  the document, without its patch (`patch_base64` empty)
//! patch            the patch, a plain blob: no 4 MiB bound, no base64
//! result/          the result tree     (040000)
//! ```
//!
//! and nothing else; the commit has no parent, a fixed author and committer
//! (`a3s-iso <a3s-iso@localhost>`) dated at the document's `observed_at_ms`, and a message
//! naming the digest, session, run, state and size. Everything in it follows from the
//! document, so the same document always makes the same commit, and a fetched commit is
//! accepted only when it is exactly the commit its own document makes.

use std::path::Path;

use crate::base::error::{ChangeSetRule, Error, IoContext, Result};
use crate::git::{Git, ObjectInfo, PatchInput, TopEntry};
use crate::model::changeset::{self, ChangeSet};
use crate::model::snapshot::{Patch, TempFile};

/// The document's name in the commit's tree.
pub(crate) const DOCUMENT: &str = "change-set.json";
/// The patch's name in the commit's tree.
pub(crate) const PATCH: &str = "patch";
/// The base tree's name in the commit's tree.
pub(crate) const BASE: &str = "base";
/// The result tree's name in the commit's tree.
pub(crate) const RESULT: &str = "result";
/// Who authored and committed every change-set commit.
const IDENTITY: &str = "a3s-iso <a3s-iso@localhost>";
/// The largest commit object a change set's commit can be (its message names ids only).
const MAX_COMMIT_BYTES: u64 = 8_192;

/// A change set as it travels: the document (detached), its patch on disk, its trees.
pub(crate) struct Carried {
    /// The document, `patch_base64` empty.
    pub(crate) change_set: ChangeSet,
    pub(crate) patch: Patch,
}

fn invalid(rule: ChangeSetRule, field: &str, detail: impl Into<String>) -> Error {
    Error::ChangeSetInvalid {
        rule,
        field: field.into(),
        detail: detail.into(),
    }
}

/// The message of a change set's commit: a subject naming the digest, then one `Key: value`
/// line per field a listing shows.
pub(crate) fn message(cs: &ChangeSet) -> String {
    format!(
        "a3s-iso change set {digest}\n\nSession: {session}\nRun: {run}\nState: {state}\nPatch-Bytes: {bytes}\nDigest: {digest}\n",
        digest = cs.patch_digest,
        session = cs.identity.session_id,
        run = cs.identity.run_id,
        state = cs.state,
        bytes = cs.patch_bytes,
    )
}

/// The commit object's content for `tree` and the document: no parent, fixed identity, the
/// document's time.
pub(crate) fn commit_bytes(tree: &str, cs: &ChangeSet) -> Vec<u8> {
    let when = format!("{} +0000", cs.observed_at_ms / 1000);
    format!(
        "tree {tree}\nauthor {IDENTITY} {when}\ncommitter {IDENTITY} {when}\n\n{}",
        message(cs)
    )
    .into_bytes()
}

/// The tree object's content: the four entries in git's order (a tree's name sorts as if it
/// ended in `/`).
fn tree_bytes(document: &str, patch: &str, base: &str, result: &str) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    for (mode, name, oid) in [
        ("40000", BASE, base),
        ("100644", DOCUMENT, document),
        ("100644", PATCH, patch),
        ("40000", RESULT, result),
    ] {
        let raw = hex::decode(oid)
            .map_err(|e| Error::internal(format!("object id {oid:?} is not hex: {e}")))?;
        bytes.extend_from_slice(format!("{mode} {name}\0").as_bytes());
        bytes.extend_from_slice(&raw);
    }
    Ok(bytes)
}

/// Writes the change set's blobs, tree and commit into the repository at `dir` (whose store
/// holds both trees) and returns the commit's id.
pub(crate) fn write_commit(git: &Git, dir: &Path, carried: &Carried) -> Result<String> {
    let cs = &carried.change_set;
    let document = git.hash_object(dir, "blob", cs.to_json()?, true)?;
    let patch = git.hash_file(dir, carried.patch.file.path())?;
    let (base, result) = (cs.base_tree.as_str(), cs.result_tree.as_str());
    let tree = git.hash_object(
        dir,
        "tree",
        tree_bytes(&document, &patch, base, result)?,
        true,
    )?;
    git.hash_object(dir, "commit", commit_bytes(&tree, cs), true)
}

/// What the checks of a fetched commit read: the commit's tree and its four entries.
struct Layout {
    tree: String,
    document: TopEntry,
    patch: TopEntry,
    base: TopEntry,
    result: TopEntry,
}

/// Checks fetched change-set commits: the repository they are in, the most bytes a patch may
/// have, and the scratch directory a patch is streamed to.
pub(crate) struct Verifier<'a> {
    pub(crate) git: &'a Git,
    pub(crate) dir: &'a Path,
    pub(crate) max_bytes: u64,
    pub(crate) scratch: &'a Path,
}

impl Verifier<'_> {
    /// Verifies the commit `rev` as the change set `digest` its ref claims, trusting nothing and
    /// reading no blob past its bound: its document passes every rule and names that digest,
    /// its patch blob matches the document, its trees are the document's, and the commit is
    /// exactly the one the document makes. Any disagreement is `change_set_invalid`.
    pub(crate) fn verify(&self, rev: &str, digest: &str) -> Result<(Carried, String)> {
        let (git, dir) = (self.git, self.dir);
        let commit = git.rev_parse_required(dir, rev)?;
        let layout = read_layout(git, dir, &commit)?;
        let document = small_object(
            git,
            dir,
            &layout.document.oid,
            changeset::MAX_DETACHED_BYTES,
        )?;
        let change_set = changeset::verify_detached(&document)?;
        if change_set.patch_digest != digest {
            return Err(invalid(
                ChangeSetRule::DigestName,
                "patch_digest",
                format!(
                    "the ref names {digest}, the document it points to is {}",
                    change_set.patch_digest
                ),
            ));
        }
        let patch = self.read_patch(&layout.patch.oid, &change_set)?;
        for (entry, field, name) in [
            (&layout.base, &change_set.base_tree, "base_tree"),
            (&layout.result, &change_set.result_tree, "result_tree"),
        ] {
            if entry.oid != field.as_str() {
                return Err(invalid(
                    ChangeSetRule::CarriedTree,
                    name,
                    format!(
                        "the commit carries tree {}, the document says {field}",
                        entry.oid
                    ),
                ));
            }
        }
        let content = small_object(git, dir, &commit, MAX_COMMIT_BYTES)?;
        if content != commit_bytes(&layout.tree, &change_set) {
            return Err(invalid(
                ChangeSetRule::Commit,
                "(commit)",
                "the commit is not the one its document makes (parents, author, date or message differ)",
            ));
        }
        Ok((Carried { change_set, patch }, commit))
    }

    /// The patch blob, checked against `max_bytes` by its size before it is streamed to scratch,
    /// then against the document's size and digest.
    fn read_patch(&self, oid: &str, cs: &ChangeSet) -> Result<Patch> {
        let (git, dir, max_bytes) = (self.git, self.dir, self.max_bytes);
        let info = git.object_info(dir, &[oid.to_string()])?;
        let size = info.into_iter().next().flatten().map_or(0, |i| i.size);
        if size > max_bytes {
            return Err(invalid(
                ChangeSetRule::PatchSize,
                PATCH,
                format!("{size} bytes, over --max-bytes {max_bytes}"),
            ));
        }
        if size != cs.patch_bytes {
            return Err(invalid(
                ChangeSetRule::PatchBytes,
                "patch_bytes",
                format!("says {}, the patch blob has {size}", cs.patch_bytes),
            ));
        }
        let file = TempFile::new(self.scratch, "patch")?;
        let out = std::fs::File::create(file.path())
            .ctx(|| format!("cannot create {}", file.path().display()))?;
        git.blob_to_file(dir, oid, out)?;
        let patch = Patch::from_file(file)?;
        if patch.digest != cs.patch_digest || patch.bytes != cs.patch_bytes {
            return Err(invalid(
                ChangeSetRule::Digest,
                "patch_digest",
                format!("the patch blob's sha256 is {}", patch.digest),
            ));
        }
        changeset::check_patch(
            git,
            PatchInput::File(patch.file.path()),
            patch.files_changed,
            PATCH,
        )?;
        Ok(patch)
    }
}

/// The commit's tree and its entries: exactly the four of the layout, each of its kind.
fn read_layout(git: &Git, dir: &Path, commit: &str) -> Result<Layout> {
    let info = git.object_info(dir, &[commit.to_string()])?;
    if !matches!(info.first(), Some(Some(ObjectInfo { kind, .. })) if crate::git::is_commit_type(kind))
    {
        return Err(invalid(
            ChangeSetRule::Commit,
            "(commit)",
            "the ref does not name a commit",
        ));
    }
    let tree = git.rev_parse_required(dir, &format!("{commit}^{{tree}}"))?;
    let mut entries = git.top_entries(dir, &tree)?;
    let mut take = |name: &str, mode: &str, kind: &str| -> Result<TopEntry> {
        let at = entries.iter().position(|e| e.name == name.as_bytes());
        match at.map(|at| entries.remove(at)) {
            Some(entry) if entry.mode == mode && entry.kind == kind => Ok(entry),
            _ => Err(invalid(
                ChangeSetRule::Layout,
                name,
                format!("the commit's tree must hold {name} as a {kind} ({mode})"),
            )),
        }
    };
    let layout = Layout {
        document: take(DOCUMENT, "100644", "blob")?,
        patch: take(PATCH, "100644", "blob")?,
        base: take(BASE, "040000", "tree")?,
        result: take(RESULT, "040000", "tree")?,
        tree: tree.clone(),
    };
    if let Some(extra) = entries.first() {
        return Err(invalid(
            ChangeSetRule::Layout,
            &String::from_utf8_lossy(&extra.name),
            "the commit's tree holds an entry the layout does not have",
        ));
    }
    Ok(layout)
}

/// An object's content, read only after its size was checked against `limit`.
fn small_object(git: &Git, dir: &Path, oid: &str, limit: u64) -> Result<Vec<u8>> {
    let info = git.object_info(dir, &[oid.to_string()])?;
    match info.into_iter().next().flatten() {
        Some(ObjectInfo { size, kind }) if size <= limit => git.object_bytes(dir, &kind, oid),
        Some(ObjectInfo { size, .. }) => Err(invalid(
            ChangeSetRule::DocumentSize,
            "(document)",
            format!("{size} bytes, over the {limit}-byte limit"),
        )),
        None => Err(invalid(
            ChangeSetRule::Layout,
            "(document)",
            format!("object {oid} is missing"),
        )),
    }
}

/// The fields a listing reads from a change set's commit message (`Key: value` lines after
/// the subject); `None` for one a3s-iso did not write.
pub(crate) fn parse_message(message: &str) -> Option<Labels> {
    let (subject, body) = message.split_once("\n\n")?;
    subject.strip_prefix("a3s-iso change set ")?;
    let field = |key: &str| {
        body.lines()
            .find_map(|line| line.strip_prefix(key)?.strip_prefix(": "))
            .map(str::to_string)
    };
    Some(Labels {
        session_id: field("Session")?,
        run_id: field("Run")?,
        state: field("State")?,
        patch_bytes: field("Patch-Bytes")?.parse().ok()?,
        digest: field("Digest")?,
    })
}

/// What a change set's commit message says of it: labels for a listing, not verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Labels {
    pub(crate) session_id: String,
    pub(crate) run_id: String,
    pub(crate) state: String,
    pub(crate) patch_bytes: u64,
    pub(crate) digest: String,
}

#[cfg(test)]
mod tests {
    use crate::model::changeset::{NewChangeSet, RunState};
    use crate::services::remote::carrier::*;

    fn sample(patch: &[u8], observed_at_ms: u64) -> ChangeSet {
        ChangeSet::new(NewChangeSet {
            release_identity: &crate::model::changeset::default_release_identity(),
            session_id: "task",
            run_id: "r-1",
            state: RunState::Failed,
            base_tree: &crate::base::ids::TreeId::new("a".repeat(40)).unwrap(),
            result_tree: &crate::base::ids::TreeId::new("b".repeat(40)).unwrap(),
            patch,
            patch_digest: &crate::base::ids::Digest::new(crate::model::snapshot::digest_bytes(
                patch,
            ))
            .unwrap(),
            observed_at_ms,
        })
        .detached()
    }

    #[test]
    fn the_commit_follows_from_the_document_alone() {
        let cs = sample(b"diff --git a/x b/x\n", 1_767_323_045_999);
        let tree = "c".repeat(40);
        let bytes = String::from_utf8(commit_bytes(&tree, &cs)).unwrap();
        assert_eq!(
            bytes,
            String::from_utf8(commit_bytes(&tree, &cs.clone())).unwrap()
        );
        assert!(bytes.starts_with(&format!("tree {tree}\nauthor a3s-iso <a3s-iso@localhost> 1767323045 +0000\ncommitter a3s-iso <a3s-iso@localhost> 1767323045 +0000\n\na3s-iso change set sha256:")), "{bytes}");
        assert!(!bytes.contains("parent "));
        let later = sample(b"diff --git a/x b/x\n", 1_767_323_046_000);
        assert_ne!(commit_bytes(&tree, &later), commit_bytes(&tree, &cs));
    }

    #[test]
    fn the_message_reads_back_as_labels() {
        let cs = sample(b"abc", 5_000);
        let labels = parse_message(&message(&cs)).unwrap();
        assert_eq!(
            labels,
            Labels {
                session_id: "task".into(),
                run_id: "r-1".into(),
                state: "failed".into(),
                patch_bytes: 3,
                digest: cs.patch_digest.to_string(),
            }
        );
        assert_eq!(
            parse_message("a commit of someone else's\n\nSession: x\n"),
            None
        );
    }

    #[test]
    fn the_tree_lists_its_four_entries_in_git_order() {
        let ids = ["1", "2", "3", "4"].map(|d| d.repeat(40));
        let bytes = tree_bytes(&ids[0], &ids[1], &ids[2], &ids[3]).unwrap();
        let names: Vec<&[u8]> = bytes
            .split(|b| *b == 0)
            .filter_map(|chunk| {
                chunk
                    .iter()
                    .position(|b| *b == b' ')
                    .map(|at| &chunk[at + 1..])
            })
            .collect();
        assert_eq!(
            names,
            [&b"base"[..], b"change-set.json", b"patch", b"result"]
        );
        assert_eq!(
            bytes.len(),
            4 * 20
                + [
                    "40000 base",
                    "100644 change-set.json",
                    "100644 patch",
                    "40000 result"
                ]
                .iter()
                .map(|entry| entry.len() + 1)
                .sum::<usize>()
        );
    }
}
