//! An index edited without git reading and writing it whole: some paths' entries set (a mode
//! and an object id, no stat data, so git compares those files' content the next time it
//! looks) or removed, every other entry kept byte for byte with its stat data. The cache tree
//! (`TREE`) is kept with the nodes above an edited path marked invalid, as git marks them;
//! offsets and a file system monitor's token are dropped (git makes them again), and the
//! untracked cache too unless the caller vouches for it (a3s-iso's own index, whose every
//! edit comes with the file created or removed, changing its directory's stat data). Only a plain index is edited: version 2 or 3, every entry merged and without
//! extended flags (skip-worktree, intent-to-add), no sparse directory, no mandatory extension
//! (a split or sparse index); for anything else the caller asks git.

use std::collections::BTreeMap;

use crate::git::index_file::reader::{ENTRY_STAT, IndexFile, SIZE_AT, be32, join_path, trailer};

/// What becomes of one path's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// The entry goes.
    Remove,
    /// The entry holds this mode and object id (raw bytes), with no stat data.
    Set { mode: u32, id: Vec<u8> },
}

/// The cache tree's extension.
const TREE: [u8; 4] = *b"TREE";

/// The resolve-undo extension: paths, not positions, so it stays true.
const RESOLVE_UNDO: [u8; 4] = *b"REUC";

/// The untracked cache's extension.
const UNTRACKED: [u8; 4] = *b"UNTR";

/// How an index is edited beside its changes.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Keep<'s> {
    /// Kept entries whose modification time is in or after this second lose their size (as
    /// git smudges a racily clean entry when it writes an index newer than the one it read).
    pub racy_from: Option<u32>,
    /// The untracked cache is kept as it is.
    pub untracked_cache: bool,
    /// The edited index's tree ids by directory, when the index is known to hold exactly a
    /// tree before the edit and its target after: the cache tree is then brought up to date
    /// rather than invalidated above each edit.
    pub subtrees: Option<&'s Subtrees>,
    /// The trailer is left null, as git's `index.skipHash` leaves it (git reads such an index
    /// since 2.13 without checking it): for an index only a3s-iso and its git calls read.
    pub null_trailer: bool,
}

/// Where an entry's modification time (seconds) is, in its stat data.
const MTIME_AT: usize = 8;

/// One entry kept: where its bytes are, and where its path is among them.
struct Kept {
    start: usize,
    end: usize,
    path: std::ops::Range<usize>,
    mtime: u32,
}

/// `bytes` (an index with `hash_len`-byte ids) with `changes` made, the rest as `keep` says;
/// `None` when the index is not one this edits.
pub(crate) fn edit(
    bytes: &[u8],
    hash_len: usize,
    changes: &BTreeMap<Vec<u8>, Change>,
    keep: Keep<'_>,
) -> Option<Vec<u8>> {
    let file = IndexFile::new(bytes, hash_len)?;
    if file.version > 3 {
        return None;
    }
    let mut kept: Vec<Kept> = Vec::new();
    let extensions = file.walk(|entry| {
        let plain = entry.stage() == 0 && entry.extended_flags() == 0 && entry.mode() != 0o040000;
        if let Some(last) = kept.last_mut() {
            last.end = entry.start;
        }
        // Versions 2 and 3 store a plain entry's whole path right after its flags.
        let at = entry.start + ENTRY_STAT + hash_len + 2;
        kept.push(Kept {
            start: entry.start,
            end: 0,
            path: at..at + entry.path.len(),
            mtime: entry.stat(2),
        });
        plain && bytes.get(at..at + entry.path.len()) == Some(entry.path)
    })?;
    let entries_end = file.entries_end(&extensions);
    if let Some(last) = kept.last_mut() {
        last.end = entries_end;
    }
    if extensions
        .iter()
        .any(|e| e.signature[0].is_ascii_lowercase())
    {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() + changes.len() * (ENTRY_STAT + 64));
    out.extend_from_slice(&bytes[..12]);
    let mut paths: Vec<&[u8]> = Vec::new();
    let listed = keep.subtrees.is_some().then_some(&mut paths);
    let count = merge_entries(
        bytes,
        (&kept, changes),
        hash_len,
        keep.racy_from,
        (&mut out, listed),
    );
    out[8..12].copy_from_slice(&count.to_be_bytes());
    for extension in &extensions {
        match extension.signature {
            TREE => {
                let data = updated_tree(
                    extension.data,
                    hash_len,
                    changes.keys(),
                    (keep.subtrees, &paths),
                )?;
                out.extend_from_slice(&TREE);
                out.extend_from_slice(&u32::try_from(data.len()).ok()?.to_be_bytes());
                out.extend_from_slice(&data);
            }
            RESOLVE_UNDO => out.extend_from_slice(&bytes[extension.start..extension.end()]),
            UNTRACKED if keep.untracked_cache => {
                out.extend_from_slice(&bytes[extension.start..extension.end()]);
            }
            _ => {}
        }
    }
    let trailer = match keep.null_trailer {
        true => vec![0; hash_len],
        false => trailer(&out, hash_len),
    };
    out.extend_from_slice(&trailer);
    Some(out)
}

/// An index of just the entries of `bytes` (an index of version 2 or 3 with `hash_len`-byte
/// ids) whose paths `wanted` takes, byte for byte and in order, without extensions and with a
/// null trailer: what `checkout-index` needs to write a few files, without reading the whole
/// index. `None` when `bytes` is not such an index.
pub(crate) fn subset(
    bytes: &[u8],
    hash_len: usize,
    wanted: impl Fn(&[u8]) -> bool,
) -> Option<Vec<u8>> {
    let file = IndexFile::new(bytes, hash_len)?;
    if file.version > 3 {
        return None;
    }
    // Where each entry starts, and whether it is taken; an entry ends where the next starts.
    let mut starts: Vec<(usize, bool)> = Vec::new();
    let extensions = file.walk(|entry| {
        starts.push((entry.start, wanted(entry.path)));
        true
    })?;
    let entries_end = file.entries_end(&extensions);
    let ends = starts
        .iter()
        .skip(1)
        .map(|(at, _)| *at)
        .chain([entries_end]);
    let mut out = bytes[..12].to_vec();
    let mut count = 0u32;
    for ((start, taken), end) in starts.iter().zip(ends) {
        if *taken {
            out.extend_from_slice(&bytes[*start..end]);
            count += 1;
        }
    }
    out[8..12].copy_from_slice(&count.to_be_bytes());
    out.resize(out.len() + hash_len, 0);
    Some(out)
}

/// Writes the kept entries and the set ones into `out`, in git's order (by path, bytewise),
/// listing their paths in `listed` when asked; the number of entries written.
fn merge_entries<'a>(
    bytes: &'a [u8],
    (kept, changes): (&[Kept], &'a BTreeMap<Vec<u8>, Change>),
    hash_len: usize,
    racy_from: Option<u32>,
    (out, mut listed): (&mut Vec<u8>, Option<&mut Vec<&'a [u8]>>),
) -> u32 {
    let mut count = 0u32;
    let mut sets = changes.iter().peekable();
    for entry in kept {
        let path = &bytes[entry.path.clone()];
        while let Some((p, change)) = sets.next_if(|(p, _)| p.as_slice() < path) {
            count += push_listed(out, listed.as_deref_mut(), p, change, hash_len);
        }
        if let Some((p, change)) = sets.next_if(|(p, _)| p.as_slice() == path) {
            count += push_listed(out, listed.as_deref_mut(), p, change, hash_len);
            continue;
        }
        let at = out.len();
        out.extend_from_slice(&bytes[entry.start..entry.end]);
        if racy_from.is_some_and(|from| entry.mtime >= from) {
            out[at + SIZE_AT..at + SIZE_AT + 4].copy_from_slice(&[0; 4]);
        }
        if let Some(listed) = listed.as_deref_mut() {
            listed.push(path);
        }
        count += 1;
    }
    for (p, change) in sets {
        count += push_listed(out, listed.as_deref_mut(), p, change, hash_len);
    }
    count
}

/// [`push_set`], listing the path when an entry was written and a list is asked for.
fn push_listed<'a>(
    out: &mut Vec<u8>,
    listed: Option<&mut Vec<&'a [u8]>>,
    path: &'a [u8],
    change: &Change,
    hash_len: usize,
) -> u32 {
    let added = push_set(out, path, change, hash_len);
    if let (1, Some(listed)) = (added, listed) {
        listed.push(path);
    }
    added
}

/// Appends the entry `change` sets at `path` (none for a removal); how many it appended.
fn push_set(out: &mut Vec<u8>, path: &[u8], change: &Change, hash_len: usize) -> u32 {
    let Change::Set { mode, id } = change else {
        return 0;
    };
    let start = out.len();
    let mut stat = [0u8; ENTRY_STAT];
    stat[24..28].copy_from_slice(&mode.to_be_bytes());
    out.extend_from_slice(&stat);
    out.extend_from_slice(&id[..hash_len.min(id.len())]);
    out.resize(start + ENTRY_STAT + hash_len, 0);
    let name_len = path.len().min(0xfff) as u16;
    out.extend_from_slice(&name_len.to_be_bytes());
    out.extend_from_slice(path);
    // The name and 1 to 8 NULs, padding the entry to a multiple of eight bytes.
    let len = (ENTRY_STAT + hash_len + 2 + path.len() + 8) & !7;
    out.resize(start + len, 0);
    1
}

/// One node of the cache tree: its name, how many entries it covers and its tree id (`None`:
/// invalid), and its subtrees.
struct Node<'a> {
    name: &'a [u8],
    valid: Option<(usize, Vec<u8>)>,
    children: Vec<Node<'a>>,
}

/// The cache tree's data brought up to the edit: every node above one of the changed paths
/// is set from `subtrees` (the edited index's tree ids by directory, `""` the whole tree)
/// with its entries counted in `paths` (every path of the edited index, sorted), dropped
/// when `subtrees` says its directory is gone, or marked invalid when `subtrees` is `None`.
/// `None` when the data does not read as a cache tree.
fn updated_tree<'p>(
    data: &[u8],
    hash_len: usize,
    changed: impl Iterator<Item = &'p Vec<u8>>,
    (subtrees, paths): (Option<&Subtrees>, &[&[u8]]),
) -> Option<Vec<u8>> {
    if data.is_empty() {
        return Some(Vec::new());
    }
    let mut at = 0;
    let mut root = read_node(data, &mut at, hash_len)?;
    if at != data.len() {
        return None;
    }
    for path in changed {
        update(&mut root, (b"", path), subtrees, paths);
    }
    let mut out = Vec::with_capacity(data.len());
    write_node(&root, &mut out);
    Some(out)
}

/// What differs between two trees, by path.
pub(crate) type TreeChanges = BTreeMap<Vec<u8>, Change>;

/// The tree ids of an edited index by directory (`""`: the whole tree); a directory not
/// listed is gone.
pub(crate) type Subtrees = BTreeMap<Vec<u8>, Vec<u8>>;

fn read_node<'a>(data: &'a [u8], at: &mut usize, hash_len: usize) -> Option<Node<'a>> {
    let head = read_node_head(data, at, hash_len)?;
    let (name, valid) = (
        head.name,
        head.valid.map(|(count, id)| (count, id.to_vec())),
    );
    let children = (0..head.subtrees)
        .map(|_| read_node(data, at, hash_len))
        .collect::<Option<Vec<_>>>()?;
    Some(Node {
        name,
        valid,
        children,
    })
}

/// One node of the cache tree as stored, without its subtrees.
struct NodeHead<'a> {
    name: &'a [u8],
    /// How many entries it covers and its tree id; `None`: invalid.
    valid: Option<(usize, &'a [u8])>,
    /// How many subtrees follow it.
    subtrees: usize,
}

/// The node at `at` (moved past it).
fn read_node_head<'a>(data: &'a [u8], at: &mut usize, hash_len: usize) -> Option<NodeHead<'a>> {
    let rest = data.get(*at..)?;
    let nul = rest.iter().position(|b| *b == 0)?;
    let name = &rest[..nul];
    let line_end = rest.iter().position(|b| *b == b'\n')?;
    let counts = std::str::from_utf8(rest.get(nul + 1..line_end)?).ok()?;
    let (entries, subtrees) = counts.split_once(' ')?;
    let entries: i64 = entries.parse().ok()?;
    let subtrees: usize = subtrees.parse().ok()?;
    *at += line_end + 1;
    let valid = match usize::try_from(entries) {
        Ok(count) => {
            let id = data.get(*at..*at + hash_len)?;
            *at += hash_len;
            Some((count, id))
        }
        Err(_) => None,
    };
    Some(NodeHead {
        name,
        valid,
        subtrees,
    })
}

/// The whole tree's entry count and id in a cache tree's `data`, when its root is valid.
pub(crate) fn cached_root(data: &[u8], hash_len: usize) -> Option<(usize, &[u8])> {
    let head = read_node_head(data, &mut 0, hash_len)?;
    head.name.is_empty().then_some(head.valid).flatten()
}

/// Sets (or invalidates) the node of the directory `dir` and every subtree on the way to
/// `rest` below it.
fn update(
    node: &mut Node<'_>,
    (dir, rest): (&[u8], &[u8]),
    subtrees: Option<&Subtrees>,
    paths: &[&[u8]],
) {
    node.valid = subtrees
        .and_then(|ids| ids.get(dir))
        .map(|id| (entries_under(paths, dir), id.clone()));
    let Some(slash) = rest.iter().position(|b| *b == b'/') else {
        return;
    };
    let name = &rest[..slash];
    let child_dir = join_path(dir, name);
    let Some(at) = node.children.iter().position(|c| c.name == name) else {
        return;
    };
    if subtrees.is_some_and(|ids| !ids.contains_key(&child_dir)) {
        node.children.remove(at);
        return;
    }
    update(
        &mut node.children[at],
        (&child_dir, &rest[slash + 1..]),
        subtrees,
        paths,
    );
}

/// How many of the sorted `paths` are below the directory `dir` (`""`: all of them).
fn entries_under(paths: &[&[u8]], dir: &[u8]) -> usize {
    if dir.is_empty() {
        return paths.len();
    }
    let prefix = [dir, b"/"].concat();
    let after = [dir, b"0"].concat();
    paths.partition_point(|p| *p < after.as_slice())
        - paths.partition_point(|p| *p < prefix.as_slice())
}

fn write_node(node: &Node<'_>, out: &mut Vec<u8>) {
    out.extend_from_slice(node.name);
    out.push(0);
    let count = node
        .valid
        .as_ref()
        .map_or("-1".to_string(), |(n, _)| n.to_string());
    out.extend_from_slice(format!("{count} {}\n", node.children.len()).as_bytes());
    if let Some((_, id)) = &node.valid {
        out.extend_from_slice(id);
    }
    for child in &node.children {
        write_node(child, out);
    }
}

/// Every directory above one of the changed paths (not `""`), each once.
#[cfg(test)]
fn dirs_above(changes: &BTreeMap<Vec<u8>, Change>) -> Vec<Vec<u8>> {
    let mut dirs = std::collections::BTreeSet::new();
    for path in changes.keys() {
        for (at, byte) in path.iter().enumerate() {
            if *byte == b'/' {
                dirs.insert(path[..at].to_vec());
            }
        }
    }
    dirs.into_iter().collect()
}

/// One entry as an index stores it.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    /// Its stat data (mode included).
    pub stat: [u8; ENTRY_STAT],
    /// Its object id, raw.
    pub id: Vec<u8>,
}

impl Stored {
    /// Its mode.
    pub(crate) fn mode(&self) -> u32 {
        be32(&self.stat, 24).unwrap_or(0)
    }

    /// The second its file was last modified, as noted.
    pub(crate) fn mtime(&self) -> u32 {
        be32(&self.stat, MTIME_AT).unwrap_or(0)
    }
}

/// The entry at stage 0 of each of `paths` the index holds, by path.
pub(crate) fn stored_entries(
    bytes: &[u8],
    hash_len: usize,
    paths: &BTreeMap<Vec<u8>, Change>,
) -> Option<BTreeMap<Vec<u8>, Stored>> {
    let file = IndexFile::new(bytes, hash_len)?;
    let mut found = BTreeMap::new();
    file.walk(|entry| {
        if entry.stage() == 0
            && paths.contains_key(entry.path)
            && let Some(stat) = bytes.get(entry.start..entry.start + ENTRY_STAT)
            && let Ok(stat) = <[u8; ENTRY_STAT]>::try_from(stat)
        {
            let id = entry.id().to_vec();
            found.insert(entry.path.to_vec(), Stored { stat, id });
        }
        true
    })?;
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn git(dir: &std::path::Path, args: &[&str], input: Option<&[u8]>) -> Vec<u8> {
        let cmd = crate::git::testing::isolated(dir);
        crate::git::testing::output(cmd, args, input.unwrap_or_default())
    }

    /// The changes that take the tree `from` to `to`, as `diff-tree` names them.
    fn changes_between(dir: &std::path::Path, from: &str, to: &str) -> BTreeMap<Vec<u8>, Change> {
        let raw = git(
            dir,
            &["diff-tree", "-r", "-z", "--no-renames", from, to],
            None,
        );
        let mut parts = raw.split(|b| *b == 0).filter(|p| !p.is_empty());
        let mut changes = BTreeMap::new();
        while let (Some(head), Some(path)) = (parts.next(), parts.next()) {
            let head = String::from_utf8_lossy(head).into_owned();
            let fields: Vec<&str> = head.trim_start_matches(':').split(' ').collect();
            let change = match fields[4] {
                "D" => Change::Remove,
                _ => Change::Set {
                    mode: u32::from_str_radix(fields[1], 8).unwrap(),
                    id: hex::decode(fields[3]).unwrap(),
                },
            };
            changes.insert(path.to_vec(), change);
        }
        changes
    }

    fn write(dir: &std::path::Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// A repository in `d` of `format` holding `files` (tree A), changed by `change` (tree
    /// B); its index is left holding A with a whole cache tree. A's and B's ids.
    fn two_trees(
        d: &Path,
        format: &str,
        files: &[&str],
        change: impl FnOnce(&Path),
    ) -> (String, String) {
        git(
            d,
            &["init", "-q", &format!("--object-format={format}")],
            None,
        );
        for rel in files {
            write(d, rel, rel);
        }
        git(d, &["add", "-A"], None);
        let a = String::from_utf8(git(d, &["write-tree"], None)).unwrap();
        change(d);
        git(d, &["add", "-A"], None);
        let b = String::from_utf8(git(d, &["write-tree"], None)).unwrap();
        git(d, &["read-tree", a.trim()], None);
        git(d, &["write-tree"], None);
        (a.trim().to_string(), b.trim().to_string())
    }

    /// An index of tree A edited by the changes from A to B is B's, for git (its `write-tree`,
    /// which trusts the kept cache tree where it is valid, gives B); a directory becoming a
    /// file and back, additions before, between and after kept entries, removals.
    /// The tree an index's cache tree names is `write-tree`'s, and only a whole cache tree of
    /// an index without conflicts names one.
    #[test]
    fn the_cached_tree_is_write_trees_and_only_a_whole_one_counts() {
        for format in ["sha1", "sha256"] {
            let tmp = tempfile::tempdir().unwrap();
            let d = tmp.path();
            let files = ["a.txt", "src/b.rs", "src/deep/c.rs", "z"];
            let (a, _) = two_trees(d, format, &files, |d| write(d, "src/new.rs", "new"));
            let index = d.join(".git/index");
            let cached = || crate::git::index_file::cached_tree(&std::fs::read(&index).unwrap());
            assert_eq!(cached().as_deref(), Some(a.as_str()), "{format}");
            // A staged change invalidates the nodes above it: git must be asked.
            write(d, "src/deep/c.rs", "changed");
            git(d, &["update-index", "src/deep/c.rs"], None);
            assert_eq!(cached(), None, "{format}");
            let written = String::from_utf8(git(d, &["write-tree"], None)).unwrap();
            assert_eq!(cached().as_deref(), Some(written.trim()), "{format}");
            // A conflict's stages name no tree, whatever the cache tree says.
            let blob = String::from_utf8(git(d, &["hash-object", "-w", "z"], None)).unwrap();
            let info = format!("100644 {} 1\tz\0100644 {} 2\tz\0", blob.trim(), blob.trim());
            git(
                d,
                &["update-index", "-z", "--index-info"],
                Some(info.as_bytes()),
            );
            assert_eq!(cached(), None, "{format}");
        }
    }

    #[test]
    fn an_index_edited_from_one_tree_to_another_writes_the_other_in_every_format() {
        for (format, hash_len) in [("sha1", 20), ("sha256", 32)] {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path();
            let files = ["a.txt", "b/c.txt", "b/d/e.txt", "f/g.txt", "z.txt", "b-x"];
            let (a, b) = two_trees(d, format, &files, |d| {
                std::fs::remove_dir_all(d.join("f")).unwrap();
                write(d, "f", "now a file");
                write(d, "b/d/e.txt", "changed");
                write(d, "0first", "new");
                write(d, "b/c0.txt", "new between");
                write(d, "zz/new.txt", "new last");
                std::fs::remove_file(d.join("a.txt")).unwrap();
            });
            let index = d.join(".git/index");
            let bytes = std::fs::read(&index).unwrap();
            let changes = changes_between(d, &a, &b);
            let keep = Keep {
                null_trailer: true,
                ..Keep::default()
            };
            let edited = edit(&bytes, hash_len, &changes, keep).unwrap();
            assert!(edited.ends_with(&vec![0; hash_len]), "{format}");
            std::fs::write(&index, &edited).unwrap();
            let written = String::from_utf8(git(d, &["write-tree"], None)).unwrap();
            assert_eq!(written.trim(), b, "{format}");
            // git reads the file (its trailer and layout) and lists the same entries as a
            // read-tree of B.
            let listed = git(d, &["ls-files", "-s"], None);
            git(d, &["read-tree", &b], None);
            assert_eq!(listed, git(d, &["ls-files", "-s"], None), "{format}");
        }
    }

    /// Given the target's tree ids, the edited index's cache tree is whole and true: git's
    /// `write-tree` trusts it (writes nothing back), and with one more entry (only the root
    /// invalid) builds the same tree as from an index read from the target itself.
    #[test]
    fn an_index_edited_with_the_targets_ids_has_a_true_cache_tree_in_every_format() {
        for (format, hash_len) in [("sha1", 20), ("sha256", 32)] {
            let dir = tempfile::tempdir().unwrap();
            let d = dir.path();
            let files = [
                "a.txt",
                "b/c.txt",
                "b/d/e.txt",
                "f/g.txt",
                "gone/x/y.txt",
                "k/l.txt",
            ];
            let (a, b) = two_trees(d, format, &files, |d| {
                std::fs::remove_dir_all(d.join("gone")).unwrap();
                write(d, "b/d/e.txt", "changed");
                write(d, "b/new/n.txt", "new dir");
                std::fs::remove_dir_all(d.join("f")).unwrap();
                write(d, "f", "now a file");
            });
            let b = b.as_str();
            let index = d.join(".git/index");
            let bytes = std::fs::read(&index).unwrap();
            let changes = changes_between(d, &a, b);
            let mut ids = Subtrees::new();
            ids.insert(Vec::new(), hex::decode(b).unwrap());
            for dir in dirs_above(&changes) {
                let spec = format!("{b}:{}", String::from_utf8_lossy(&dir));
                let out = std::process::Command::new("git")
                    .current_dir(d)
                    .args(["rev-parse", "--verify", "-q", &spec])
                    .output()
                    .unwrap();
                if out.status.success() {
                    let id = String::from_utf8(out.stdout).unwrap();
                    ids.insert(dir, hex::decode(id.trim()).unwrap());
                }
            }
            let keep = Keep {
                subtrees: Some(&ids),
                ..Keep::default()
            };
            let edited = edit(&bytes, hash_len, &changes, keep).unwrap();
            std::fs::write(&index, &edited).unwrap();
            let written = String::from_utf8(git(d, &["write-tree"], None)).unwrap();
            assert_eq!(written.trim(), b, "{format}");
            assert_eq!(
                std::fs::read(&index).unwrap(),
                edited,
                "{format}: git trusted it whole"
            );
            let blob =
                String::from_utf8(git(d, &["hash-object", "-w", "--stdin"], Some(b"top"))).unwrap();
            let info = format!("100644 {}\ttop.txt\n", blob.trim());
            git(d, &["update-index", "--index-info"], Some(info.as_bytes()));
            let trusted = git(d, &["write-tree"], None);
            git(d, &["read-tree", b], None);
            git(d, &["update-index", "--index-info"], Some(info.as_bytes()));
            assert_eq!(
                trusted,
                git(d, &["write-tree"], None),
                "{format}: inner nodes"
            );
        }
    }

    /// A valid cache tree beside the edit stays valid where nothing changed, so git trusts
    /// it: a kept subtree's id, planted wrong, comes out of `write-tree` as it was planted.
    #[test]
    fn only_the_nodes_above_an_edit_are_invalidated() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        git(d, &["init", "-q"], None);
        write(d, "keep/x.txt", "x");
        write(d, "edit/y.txt", "y");
        git(d, &["add", "-A"], None);
        git(d, &["write-tree"], None);
        let bytes = std::fs::read(d.join(".git/index")).unwrap();
        let id = hex::decode(
            String::from_utf8(git(d, &["hash-object", "-w", "--stdin"], Some(b"z")))
                .unwrap()
                .trim(),
        )
        .unwrap();
        let mut changes = BTreeMap::new();
        changes.insert(b"edit/y.txt".to_vec(), Change::Set { mode: 0o100644, id });
        let edited = edit(&bytes, 20, &changes, Keep::default()).unwrap();
        let tree = edited.windows(4).position(|w| w == b"TREE").unwrap();
        let data = &edited[tree + 8..edited.len() - 20];
        let text = String::from_utf8_lossy(data);
        assert!(text.starts_with("\0-1 2\n"), "{text:?}");
        assert!(text.contains("edit\0-1 0\n"), "{text:?}");
        assert!(text.contains("keep\u{0}1 0\n"), "{text:?}");
    }

    /// Kept entries noted in or after the racy second lose their size; others keep it. A
    /// conflicted or skip-worktree index is not edited.
    #[test]
    fn racy_entries_are_smudged_and_unplain_indexes_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        git(d, &["init", "-q"], None);
        write(d, "a.txt", "aaa");
        write(d, "b.txt", "bbb");
        git(d, &["add", "-A"], None);
        let bytes = std::fs::read(d.join(".git/index")).unwrap();
        let racy = |from| Keep {
            racy_from: Some(from),
            ..Keep::default()
        };
        let kept = edit(&bytes, 20, &BTreeMap::new(), racy(u32::MAX)).unwrap();
        assert_eq!(be32(&kept, 12 + SIZE_AT), Some(3));
        let smudged = edit(&bytes, 20, &BTreeMap::new(), racy(0)).unwrap();
        assert_eq!(be32(&smudged, 12 + SIZE_AT), Some(0));
        git(d, &["update-index", "--skip-worktree", "a.txt"], None);
        let sparse = std::fs::read(d.join(".git/index")).unwrap();
        assert!(edit(&sparse, 20, &BTreeMap::new(), Keep::default()).is_none());
    }
}
