//! Trees written from another tree with a few of its paths replaced, reading only the trees
//! above those paths: a run's layer names what changed, and an index of the whole tree would
//! cost in proportion to the repository instead.
//!
//! The new trees' ids are computed here (git's tree format, hashed with the repository's
//! hash) so that one `git mktree --batch` writes them all, children first; each id git prints
//! must be the one computed, or nothing is used.

use std::collections::BTreeMap;

use crate::base::error::{Error, Result};
use crate::git::hermetic::HermeticGit;
use crate::git::ops::{CatFile, ObjectFormat};
use crate::git::runner::{Git, fields_and_path, split_nul};

/// A tree's mode.
const TREE_MODE: u32 = 0o40000;
/// A gitlink's mode.
const GITLINK_MODE: u32 = 0o160000;

/// One entry as an index or a tree holds it: a mode and an object id (hex), at a path
/// (relative to the root for an index entry, a single name inside a tree).
pub(crate) use crate::git::index_file::Staged as Entry;
use crate::git::index_file::reader::{join_path, object_id};

impl Entry {
    fn is_tree(&self) -> bool {
        self.mode == TREE_MODE
    }

    /// Git's order of a tree's entries: by name, a tree's name taken with a `/` after it.
    fn order_key(&self) -> Vec<u8> {
        let mut key = self.path.clone();
        if self.is_tree() {
            key.push(b'/');
        }
        key
    }

    fn kind(&self) -> &'static str {
        match self.mode {
            TREE_MODE => "tree",
            GITLINK_MODE => "commit",
            _ => "blob",
        }
    }
}

/// What a tree holds at and under some paths (`ls-tree -r -t`): the trees on the way (by
/// path) and every other entry under them.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    pub trees: BTreeMap<Vec<u8>, String>,
    pub entries: Vec<Entry>,
}

impl Listing {
    /// Whether a gitlink is among the entries.
    pub(crate) fn has_gitlink(&self) -> bool {
        self.entries.iter().any(|e| e.mode == GITLINK_MODE)
    }

    /// The entries as `update-index -z --index-info` reads them.
    pub(crate) fn index_info(&self) -> Vec<u8> {
        let mut info = Vec::new();
        for entry in &self.entries {
            info.extend_from_slice(format!("{:o} {}\t", entry.mode, entry.id).as_bytes());
            info.extend_from_slice(&entry.path);
            info.push(0);
        }
        info
    }
}

/// Parses `<mode> <type> <id>\t<path>` records, NUL-separated (`ls-tree -z`).
fn parse_listing(out: &[u8]) -> Option<Listing> {
    let mut listing = Listing::default();
    for record in split_nul(out) {
        let ([mode, _kind, id], path) = fields_and_path(record)?;
        let entry = Entry {
            mode: u32::from_str_radix(mode, 8).ok()?,
            id: id.to_string(),
            path: path.to_vec(),
        };
        if entry.is_tree() {
            listing.trees.insert(entry.path, entry.id);
        } else {
            listing.entries.push(entry);
        }
    }
    Some(listing)
}

/// Parses a tree object's content: `<mode> <name>\0<raw id>` each.
fn parse_tree(content: &[u8], format: ObjectFormat) -> Option<Vec<Entry>> {
    let raw_len = format.hex_len() / 2;
    let mut entries = Vec::new();
    let mut rest = content;
    while !rest.is_empty() {
        let space = rest.iter().position(|b| *b == b' ')?;
        let nul = space + rest[space..].iter().position(|b| *b == 0)?;
        let id = rest.get(nul + 1..nul + 1 + raw_len)?;
        entries.push(Entry {
            mode: u32::from_str_radix(std::str::from_utf8(&rest[..space]).ok()?, 8).ok()?,
            id: hex::encode(id),
            path: rest[space + 1..nul].to_vec(),
        });
        rest = &rest[nul + 1 + raw_len..];
    }
    Some(entries)
}

/// A directory of the edited tree: kept (the original's entries, less those named below) or
/// replaced (only what is below), and what is below by name.
#[derive(Debug, Default)]
struct Dir {
    kept: bool,
    below: BTreeMap<Vec<u8>, Node>,
}

#[derive(Debug)]
enum Node {
    Dir(Dir),
    Leaf { mode: u32, id: String },
}

/// The edit as a tree of directories: every path of `replaced` empty, then filled with the
/// `staged` entries under it. A replaced path under another one is part of it.
fn plan(replaced: &[Vec<u8>], staged: &[Entry]) -> Result<Dir> {
    let mut root = Dir {
        kept: true,
        ..Dir::default()
    };
    let mut replaced = replaced.to_vec();
    replaced.sort();
    'paths: for path in &replaced {
        let mut at = &mut root;
        let parts: Vec<&[u8]> = path.split(|b| *b == b'/').collect();
        for (n, part) in parts.iter().enumerate() {
            if !at.kept {
                continue 'paths;
            }
            let last = n + 1 == parts.len();
            let node = at.below.entry(part.to_vec()).or_insert_with(|| {
                Node::Dir(Dir {
                    kept: !last,
                    ..Dir::default()
                })
            });
            at = match node {
                Node::Dir(dir) => dir,
                Node::Leaf { .. } => return Err(Error::internal("a replaced path is a file")),
            };
        }
        *at = Dir::default();
    }
    for entry in staged {
        place(&mut root, entry)?;
    }
    Ok(root)
}

/// Puts one staged entry in the plan: it must fall under a replaced path.
fn place(root: &mut Dir, entry: &Entry) -> Result<()> {
    let outside = || Error::internal("a staged path is outside the paths replaced");
    let parts: Vec<&[u8]> = entry.path.split(|b| *b == b'/').collect();
    let mut at = root;
    for (n, part) in parts.iter().enumerate() {
        let last = n + 1 == parts.len();
        let kept = at.kept;
        if kept && !at.below.contains_key(*part) {
            return Err(outside());
        }
        let node = at.below.entry(part.to_vec()).or_insert_with(|| {
            Node::Dir(Dir {
                kept: false,
                ..Dir::default()
            })
        });
        if last {
            let replaceable =
                !kept || matches!(node, Node::Dir(d) if !d.kept && d.below.is_empty());
            if !replaceable {
                return Err(outside());
            }
            *node = Node::Leaf {
                mode: entry.mode,
                id: entry.id.clone(),
            };
            return Ok(());
        }
        at = match node {
            Node::Dir(dir) => dir,
            Node::Leaf { .. } => return Err(outside()),
        };
    }
    Err(outside())
}

/// The kept directories of a plan, by path: the trees to read.
fn kept_dirs(dir: &Dir, path: &[u8], out: &mut Vec<Vec<u8>>) {
    if !dir.kept {
        return;
    }
    out.push(path.to_vec());
    for (name, node) in &dir.below {
        if let Node::Dir(below) = node {
            kept_dirs(below, &join_path(path, name), out);
        }
    }
}

/// Trees to write, children before parents, each with its computed id.
struct Writer<'a> {
    format: ObjectFormat,
    originals: &'a BTreeMap<Vec<u8>, Vec<Entry>>,
    trees: Vec<(String, Vec<Entry>)>,
}

impl Writer<'_> {
    /// Writes `dir` at `path`; `None` when it holds nothing (git records no empty directory,
    /// but the root).
    fn write(&mut self, dir: &Dir, path: &[u8]) -> Result<Option<String>> {
        let mut entries: Vec<Entry> = match dir.kept {
            true => self.originals.get(path).cloned().unwrap_or_default(),
            false => Vec::new(),
        };
        entries.retain(|e| !dir.below.contains_key(&e.path));
        for (name, node) in &dir.below {
            let (mode, id) = match node {
                Node::Leaf { mode, id } => (*mode, Some(id.clone())),
                Node::Dir(below) => (TREE_MODE, self.write(below, &join_path(path, name))?),
            };
            if let Some(id) = id {
                entries.push(Entry {
                    mode,
                    id,
                    path: name.clone(),
                });
            }
        }
        if entries.is_empty() && !path.is_empty() {
            return Ok(None);
        }
        entries.sort_by_key(Entry::order_key);
        let id = tree_id(self.format, &entries)?;
        self.trees.push((id.clone(), entries));
        Ok(Some(id))
    }
}

/// A tree's content in git's format.
fn tree_content(entries: &[Entry]) -> Result<Vec<u8>> {
    let mut content = Vec::new();
    for entry in entries {
        content.extend_from_slice(format!("{:o} ", entry.mode).as_bytes());
        content.extend_from_slice(&entry.path);
        content.push(0);
        content.extend(hex::decode(&entry.id).map_err(|_| Error::internal("a bad object id"))?);
    }
    Ok(content)
}

/// A tree's id: its content hashed as a git object with the repository's hash.
fn tree_id(format: ObjectFormat, entries: &[Entry]) -> Result<String> {
    let content = tree_content(entries)?;
    Ok(hex::encode(object_id(
        "tree",
        &content,
        format.hex_len() / 2,
    )))
}

/// One tree edit: `root` with, at and under each of `replaced`, exactly the `staged` entries
/// there (none: the path is gone).
pub(crate) struct TreeEdit<'a> {
    pub root: &'a str,
    pub replaced: &'a [Vec<u8>],
    pub staged: &'a [Entry],
}

impl HermeticGit {
    /// What `tree` holds at and under the literal `paths`, with the trees on the way
    /// (`ls-tree -r -t -z --full-tree`).
    pub(crate) fn listing_under(&self, tree: &str, paths: &[Vec<u8>]) -> Result<Listing> {
        use std::os::unix::ffi::OsStrExt;
        let out = self
            .cmd()
            .args(["--literal-pathspecs", "ls-tree", "-r", "-t"])
            .args(["-z", "--full-tree", tree, "--"])
            .args(paths.iter().map(|p| std::ffi::OsStr::from_bytes(p)))
            .run()?;
        parse_listing(&out).ok_or_else(|| Error::internal("cannot read git ls-tree's listing"))
    }

    /// Writes each edit (all from one listing of their common root) and returns their trees,
    /// in order: the trees they keep are read with one `cat-file --batch`, the new ones written
    /// with one `mktree --batch`.
    pub(crate) fn write_edits(
        &self,
        git: &Git,
        listing: &Listing,
        edits: &[TreeEdit<'_>],
    ) -> Result<Vec<String>> {
        let format = match edits.first().map(|e| e.root.len()) {
            Some(64) => ObjectFormat::Sha256,
            _ => ObjectFormat::Sha1,
        };
        let plans = edits
            .iter()
            .map(|e| plan(e.replaced, e.staged))
            .collect::<Result<Vec<_>>>()?;
        let originals = self.read_kept(git, listing, edits, &plans, format)?;
        let mut writer = Writer {
            format,
            originals: &originals,
            trees: Vec::new(),
        };
        let mut roots = Vec::new();
        for plan in &plans {
            let root = writer.write(plan, b"")?;
            roots.push(root.ok_or_else(|| Error::internal("no root tree"))?);
        }
        self.make_trees(&writer.trees)?;
        Ok(roots)
    }

    /// The entries of every tree the edits keep, by path (read by id).
    fn read_kept(
        &self,
        git: &Git,
        listing: &Listing,
        edits: &[TreeEdit<'_>],
        plans: &[Dir],
        format: ObjectFormat,
    ) -> Result<BTreeMap<Vec<u8>, Vec<Entry>>> {
        let mut paths = Vec::new();
        for plan in plans {
            kept_dirs(plan, b"", &mut paths);
        }
        paths.sort();
        paths.dedup();
        let root = edits.first().map_or("", |e| e.root);
        let found: Vec<(Vec<u8>, String)> = paths
            .into_iter()
            .filter_map(|path| match path.is_empty() {
                true => Some((path, root.to_string())),
                false => listing.trees.get(&path).map(|id| (path, id.clone())),
            })
            .collect();
        let ids: Vec<String> = found.iter().map(|(_, id)| id.clone()).collect();
        let read = git.cat_file_batch(self.common_dir(), &ids)?;
        let mut kept = BTreeMap::new();
        for ((path, _), object) in found.into_iter().zip(read) {
            let CatFile::Found { kind, content } = object else {
                return Err(Error::internal("a tree to keep is missing"));
            };
            let entries = crate::git::ops::is_tree_type(&kind)
                .then(|| parse_tree(&content, format))
                .flatten()
                .ok_or_else(|| Error::internal("cannot read a tree to keep"))?;
            kept.insert(path, entries);
        }
        Ok(kept)
    }

    /// Writes `trees` (children before parents) with one `mktree --batch -z`, and checks that
    /// git names each as computed.
    fn make_trees(&self, trees: &[(String, Vec<Entry>)]) -> Result<()> {
        // An empty tree must come first: a blank record at the end of the input is no tree.
        let (empty, full): (Vec<_>, Vec<_>) = trees.iter().partition(|(_, e)| e.is_empty());
        let ordered: Vec<&(String, Vec<Entry>)> = empty.into_iter().chain(full).collect();
        let mut input = Vec::new();
        for (n, (_, entries)) in ordered.iter().enumerate() {
            if n > 0 {
                input.push(0);
            }
            for entry in entries {
                let head = format!("{:06o} {} {}\t", entry.mode, entry.kind(), entry.id);
                input.extend_from_slice(head.as_bytes());
                input.extend_from_slice(&entry.path);
                input.push(0);
            }
        }
        let out = self
            .cmd()
            .args(["mktree", "--batch", "-z"])
            .stdin(input)
            .run_text()?;
        let written: Vec<&str> = out.lines().collect();
        let expected: Vec<&str> = ordered.iter().map(|(id, _)| id.as_str()).collect();
        match written == expected {
            true => Ok(()),
            false => Err(Error::internal("git wrote other trees than computed")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(mode: u32, id: &str, path: &str) -> Entry {
        Entry {
            mode,
            id: id.repeat(40 / id.len()),
            path: path.as_bytes().to_vec(),
        }
    }

    #[test]
    fn the_empty_tree_hashes_as_git_names_it() {
        assert_eq!(
            tree_id(ObjectFormat::Sha1, &[]).unwrap(),
            ObjectFormat::Sha1.empty_tree()
        );
        assert_eq!(
            tree_id(ObjectFormat::Sha256, &[]).unwrap(),
            ObjectFormat::Sha256.empty_tree()
        );
    }

    #[test]
    fn a_tree_sorts_as_if_its_name_ended_in_a_slash() {
        let mut entries = [
            entry(TREE_MODE, "a", "a"),
            entry(0o100644, "b", "a.c"),
            entry(0o100644, "c", "a-b"),
        ];
        entries.sort_by_key(Entry::order_key);
        let names: Vec<&[u8]> = entries.iter().map(|e| e.path.as_slice()).collect();
        assert_eq!(names, [&b"a-b"[..], b"a.c", b"a"]);
    }

    #[test]
    fn a_plan_replaces_paths_and_keeps_what_is_around_them() {
        let staged = [entry(0o100644, "1", "d/new"), entry(0o100755, "2", "x/y/z")];
        let replaced = [
            b"d".to_vec(),
            b"d/old".to_vec(),
            b"x/y".to_vec(),
            b"gone".to_vec(),
        ];
        let plan = plan(&replaced, &staged).unwrap();
        let mut kept = Vec::new();
        kept_dirs(&plan, b"", &mut kept);
        assert_eq!(kept, [b"".to_vec(), b"x".to_vec()]);
        let Some(Node::Dir(d)) = plan.below.get(&b"d"[..]) else {
            panic!("d is a directory")
        };
        assert!(!d.kept && d.below.len() == 1);
        assert!(matches!(plan.below.get(&b"gone"[..]), Some(Node::Dir(g)) if g.below.is_empty()));
    }

    #[test]
    fn a_staged_path_outside_the_replaced_ones_is_refused() {
        let staged = [entry(0o100644, "1", "elsewhere")];
        assert!(plan(&[b"d".to_vec()], &staged).is_err());
    }

    #[test]
    fn a_tree_reads_back_as_written() {
        let entries = vec![entry(0o100644, "ab", "f"), entry(TREE_MODE, "cd", "sub")];
        let content = tree_content(&entries).unwrap();
        assert_eq!(parse_tree(&content, ObjectFormat::Sha1).unwrap(), entries);
    }
}
