//! The review of a profile's kept copies. A run writes its profile's copies for one
//! repository (`<data>/profiles/<name>/repos/<key>/home/`); what it changes there is kept for
//! the next run only where the profile declares the agent's state (its history, caches,
//! login) and, in a JSON settings file reviewed key by key, in keys that run no code (a
//! theme, a model). Any other change (hooks, MCP servers, instructions, rc files) is taken
//! out of the copy again and held as a pending change beside it (`pending/`), out of every
//! run's reach, until the user accepts it (`profile accept`) or rejects it.
//!
//! `accepted/` beside the copy holds what the user accepted of every reviewed file: the copy is
//! compared with it before each run (a run killed before its review is reviewed then) and after it.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::beneath::{Dir, Kind};
use crate::base::error::{Error, IoContext, Result};
use crate::base::warning::{RunWarning, Warning};
use crate::services::profile::{HomeEntry, Profile};

/// The largest reviewed file read (settings and instructions are small).
const MAX_BYTES: u64 = 16 << 20;

/// One reviewed entry: a file's bytes and mode, or what is never put back nor held (a link, a
/// file too large, a FIFO…), named by what tells a change of it (target, size and digest).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Leaf {
    File { bytes: Vec<u8>, exec: bool },
    Other(String),
}

/// How a pending change is reviewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewKind {
    /// The whole file.
    File,
    /// The code-running keys of a JSON settings file; its other keys are state.
    Keys,
}

/// What a pending change does to its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// The path is new.
    Added,
    /// The path's content changes.
    Modified,
    /// The path goes.
    Deleted,
}

/// One held change, as `pending/changes.json` records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Held {
    kind: ReviewKind,
    /// Whether the run left the path (its content is `pending/files/<path>`).
    present: bool,
    exec: bool,
}

/// One change `profile diff` shows and `profile accept` applies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PendingChange {
    /// The home path (`~/.claude/settings.json`).
    pub path: String,
    /// Whole file, or the keys of a settings file.
    pub review: ReviewKind,
    /// Added, modified or deleted.
    pub change: ChangeKind,
    /// The keys whose value changes (for `keys`), dotted.
    pub keys: Vec<String>,
    /// A unified diff of the file as it is and as accepting makes it.
    pub patch: String,
    #[serde(skip)]
    after: Option<Vec<u8>>,
    #[serde(skip)]
    exec: bool,
    #[serde(skip)]
    rel: PathBuf,
}

/// A profile's copies for one repository: `home/`, `accepted/`, `pending/` and its lock.
#[derive(Debug, Clone)]
pub struct Kept {
    /// `<data>/profiles/<name>/repos/<key>`.
    pub root: PathBuf,
}

impl Kept {
    /// The copies the run sees at the real home paths.
    pub fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    fn accepted(&self) -> PathBuf {
        self.root.join("accepted")
    }

    fn pending(&self) -> PathBuf {
        self.root.join("pending")
    }

    /// Whether the profile keeps copies for the repository (an unreadable store is an error,
    /// never "none").
    fn exists(&self) -> Result<bool> {
        match std::fs::symlink_metadata(&self.root) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io(format!("cannot read {}", self.root.display()), e)),
        }
    }

    /// Held while the copies are reviewed or changed by `profile accept`/`reject`.
    pub(crate) fn lock(&self) -> Result<crate::store::lock::FileLock> {
        crate::store::lock::FileLock::acquire(
            &self.root.join("lock"),
            std::time::Duration::from_secs(30),
        )
    }
}

/// The reviewed entries of `entries` under `root`, by home-relative path; state left out,
/// nothing followed.
fn walk(root: &Dir, profile: &Profile, entries: &[HomeEntry]) -> Result<BTreeMap<PathBuf, Leaf>> {
    let mut found = BTreeMap::new();
    for entry in entries {
        visit(root, &entry.rel, profile, &mut found)?;
    }
    Ok(found)
}

fn visit(
    root: &Dir,
    rel: &Path,
    profile: &Profile,
    found: &mut BTreeMap<PathBuf, Leaf>,
) -> Result<()> {
    // A state directory is read only where a reviewed path may lie beneath it.
    let state = profile.is_state(rel);
    if state && !profile.reviews_below(rel) {
        return Ok(());
    }
    let at = root.path().join(rel);
    let cannot_read = || format!("cannot read {}", at.display());
    match root.kind(rel).ctx(cannot_read)? {
        None => {}
        Some(Kind::Dir) => {
            let dir = root.dir(rel).ctx(cannot_read)?;
            let entries = dir
                .entries()
                .ctx(|| format!("cannot list {}", at.display()))?;
            for entry in entries {
                visit(root, &rel.join(&entry.name), profile, found)?;
            }
        }
        Some(_) if state => {}
        Some(Kind::File) => {
            let meta = std::fs::symlink_metadata(&at).ok();
            let exec = meta
                .as_ref()
                .is_some_and(|m| m.permissions().mode() & 0o111 != 0);
            let leaf = if meta.is_some_and(|m| m.len() > MAX_BYTES) {
                Leaf::Other(large_file(root, rel).ctx(cannot_read)?)
            } else {
                let bytes = root.read_small(rel, MAX_BYTES).ctx(cannot_read)?;
                Leaf::File { bytes, exec }
            };
            found.insert(rel.to_path_buf(), leaf);
        }
        Some(kind) => {
            let what = match std::fs::read_link(&at) {
                Ok(target) => format!("link to {}", target.display()),
                Err(_) => format!("{kind:?}"),
            };
            found.insert(rel.to_path_buf(), Leaf::Other(what));
        }
    }
    Ok(())
}

/// A large file's size and sha256, read beneath `root`.
fn large_file(root: &Dir, rel: &Path) -> std::io::Result<String> {
    use sha2::Digest;
    use std::io::Read;
    let mut file = root.open_file(rel)?;
    let mut hasher = sha2::Sha256::new();
    let (mut size, mut buf) = (0u64, vec![0u8; 1 << 16]);
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        size += n as u64;
    }
    Ok(format!(
        "file of {size} bytes, sha256 {}",
        hex::encode(hasher.finalize())
    ))
}

/// Writes `leaf` at `rel` under `root` (atomically, with its mode), or removes what is there.
fn put(root: &Dir, rel: &Path, leaf: Option<&Leaf>) -> Result<()> {
    let at = root.path().join(rel);
    match leaf {
        Some(Leaf::File { bytes, exec }) => {
            if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
                root.create_dirs(parent)
                    .ctx(|| format!("cannot create {}", root.path().join(parent).display()))?;
            }
            if root.kind(rel).ok().flatten() == Some(Kind::Dir) {
                crate::base::beneath::remove_path(&at)
                    .ctx(|| format!("cannot remove {}", at.display()))?;
            }
            let mode = if *exec { 0o700 } else { 0o600 };
            root.replace_with(rel, |file| {
                use std::io::Write;
                file.set_permissions(std::fs::Permissions::from_mode(mode))?;
                file.write_all(bytes)
            })
            .ctx(|| format!("cannot write {}", at.display()))
        }
        // A link or another kind is never put anywhere: what was there goes.
        Some(Leaf::Other(_)) | None => root
            .clear_way(rel)
            .ctx(|| format!("cannot remove {}", at.display())),
    }
}

/// Makes `accepted/` from the copy as it is when there is none, or adds to it the paths just
/// seeded (`fresh`): a copy made from the user's own home is what the user has already.
pub(crate) fn accept_seeded(kept: &Kept, profile: &Profile, fresh: &[HomeEntry]) -> Result<()> {
    let _lock = kept.lock()?;
    let home = open(&kept.home())?;
    if std::fs::symlink_metadata(kept.accepted()).is_ok() {
        let accepted = open(&kept.accepted())?;
        for (rel, leaf) in walk(&home, profile, fresh)? {
            put(&accepted, &rel, Some(&leaf))?;
        }
        return Ok(());
    }
    let aside = kept.root.join(crate::base::maker::owned_name(".accepting"));
    make_private(&aside)?;
    let target = open(&aside)?;
    for (rel, leaf) in walk(&home, profile, &profile.writable)? {
        put(&target, &rel, Some(&leaf))?;
    }
    std::fs::rename(&aside, kept.accepted()).or_else(|e| {
        let _ = crate::base::beneath::remove_path(&aside);
        match std::fs::symlink_metadata(kept.accepted()) {
            // Made meanwhile: that one stands.
            Ok(_) => Ok(()),
            Err(_) => Err(e).ctx(|| format!("cannot rename {}", aside.display())),
        }
    })
}

/// Makes `path` and the directories on the way, only the user's.
pub(crate) fn make_private(path: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(path)
        .ctx(|| format!("cannot create {}", path.display()))
}

fn open(path: &Path) -> Result<Dir> {
    make_private(path)?;
    Dir::open(path).ctx(|| format!("cannot open {}", path.display()))
}

/// Compares the copy with what was accepted: a change to state stays, any other is put back
/// and held in `pending/`, with a warning per path held.
pub(crate) fn review(kept: &Kept, profile: &Profile) -> Result<Vec<Warning>> {
    let _lock = kept.lock()?;
    let (home, accepted) = (open(&kept.home())?, open(&kept.accepted())?);
    let live = walk(&home, profile, &profile.writable)?;
    let was = walk(&accepted, profile, &profile.writable)?;
    let paths: BTreeSet<&PathBuf> = live.keys().chain(was.keys()).collect();
    let mut held = Vec::new();
    for rel in paths {
        let (now, before) = (live.get(rel), was.get(rel));
        if now == before {
            continue;
        }
        if let Some(Leaf::Other(what)) = now {
            // Nothing to hold: what was accepted goes back, or the entry goes.
            put(&home, rel, before)?;
            let (path, max_bytes) = (rel.to_path_buf(), MAX_BYTES);
            let taken = RunWarning::ProfileEntryTakenOut {
                path,
                what: what.clone(),
                max_bytes,
            };
            held.push(taken.into());
            continue;
        }
        match verdict(profile, rel, (now, before)) {
            Verdict::State => put(&accepted, rel, now)?,
            Verdict::Hold(kind, back) => {
                // Held first: a review cut short never loses the run's version.
                hold(kept, rel, now, kind)?;
                put(&home, rel, back.as_ref())?;
                if kind == ReviewKind::Keys {
                    put(&accepted, rel, back.as_ref())?;
                }
                let (path, profile) = (rel.to_path_buf(), profile.name.clone());
                held.push(RunWarning::ProfileChangeHeld { path, profile }.into());
            }
        }
    }
    Ok(held)
}

/// What the review does with a changed file.
enum Verdict {
    /// The change is state: it becomes what is accepted.
    State,
    /// The change is held; the copy goes back to the entry given (none: the path goes).
    Hold(ReviewKind, Option<Leaf>),
}

/// A keyed settings file is state when its code-running keys are as accepted, else held with
/// those keys put back (the run's other changes kept); any other file is held whole.
fn verdict(
    profile: &Profile,
    rel: &Path,
    (now, before): (Option<&Leaf>, Option<&Leaf>),
) -> Verdict {
    let whole = || Verdict::Hold(ReviewKind::File, before.cloned());
    let Some(keyed) = profile.keyed(rel) else {
        return whole();
    };
    let (Some(now_json), Some(before_json)) = (json_of(now), json_of(before)) else {
        // Not JSON any more (or never was): the whole file is reviewed.
        return whole();
    };
    if code_of(&now_json, &keyed.keys) == code_of(&before_json, &keyed.keys) {
        return Verdict::State;
    }
    let exec = matches!(now.or(before), Some(Leaf::File { exec: true, .. }));
    let back = with_code_of(&now_json, &before_json, &keyed.keys);
    Verdict::Hold(
        ReviewKind::Keys,
        Some(Leaf::File {
            bytes: to_bytes(&back),
            exec,
        }),
    )
}

/// A file's JSON object; an absent file is an empty object, anything else not JSON `None`.
fn json_of(leaf: Option<&Leaf>) -> Option<Value> {
    match leaf {
        None => Some(Value::Object(Default::default())),
        Some(Leaf::File { bytes, .. }) => object_of(bytes),
        Some(Leaf::Other(_)) => None,
    }
}

fn object_of(bytes: &[u8]) -> Option<Value> {
    serde_json::from_slice::<Value>(bytes)
        .ok()
        .filter(Value::is_object)
}

fn to_bytes(value: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(value).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// The values at the code-running keys (dotted, `*` for any key), by their concrete path.
fn code_of(doc: &Value, keys: &[String]) -> BTreeMap<Vec<String>, Value> {
    let mut found = BTreeMap::new();
    for key in keys {
        let parts: Vec<&str> = key.split('.').collect();
        collect(doc, &parts, &mut Vec::new(), &mut found);
    }
    found
}

fn collect(
    at: &Value,
    parts: &[&str],
    path: &mut Vec<String>,
    found: &mut BTreeMap<Vec<String>, Value>,
) {
    let Some((first, rest)) = parts.split_first() else {
        found.insert(path.clone(), at.clone());
        return;
    };
    let Some(object) = at.as_object() else { return };
    for (name, value) in object {
        if *first == "*" || first == name {
            path.push(name.clone());
            collect(value, rest, path, found);
            path.pop();
        }
    }
}

/// `base` with its code-running keys as `from` has them (set, replaced or removed).
fn with_code_of(base: &Value, from: &Value, keys: &[String]) -> Value {
    let mut out = base.clone();
    let (mine, theirs) = (code_of(base, keys), code_of(from, keys));
    for path in mine.keys().chain(theirs.keys()) {
        set_at(&mut out, path, theirs.get(path).cloned());
    }
    out
}

fn set_at(doc: &mut Value, path: &[String], value: Option<Value>) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut at = doc;
    for part in parents {
        let Some(object) = at.as_object_mut() else {
            return;
        };
        if value.is_none() && !object.contains_key(part) {
            return;
        }
        at = object
            .entry(part.clone())
            .or_insert_with(|| Value::Object(Default::default()));
    }
    let Some(object) = at.as_object_mut() else {
        return;
    };
    match value {
        Some(value) => object.insert(last.clone(), value),
        None => object.remove(last),
    };
}

/// Records the run's version of `rel` in `pending/` (replacing an earlier one).
fn hold(kept: &Kept, rel: &Path, now: Option<&Leaf>, kind: ReviewKind) -> Result<()> {
    let pending = open(&kept.pending())?;
    let mut changes = read_changes(&pending)?;
    let files = Path::new("files").join(rel);
    put(&pending, &files, now)?;
    changes.insert(
        rel.to_string_lossy().into_owned(),
        Held {
            kind,
            present: matches!(now, Some(Leaf::File { .. })),
            exec: matches!(now, Some(Leaf::File { exec: true, .. })),
        },
    );
    write_changes(&pending, &changes)
}

const CHANGES: &str = "changes.json";

fn read_changes(pending: &Dir) -> Result<BTreeMap<String, Held>> {
    if !matches!(pending.kind(Path::new(CHANGES)), Ok(Some(Kind::File))) {
        return Ok(BTreeMap::new());
    }
    let cannot_read = || format!("cannot read {}", pending.path().join(CHANGES).display());
    let bytes = (pending.read_small(Path::new(CHANGES), MAX_BYTES)).ctx(cannot_read)?;
    serde_json::from_slice(&bytes)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
        .ctx(cannot_read)
}

fn write_changes(pending: &Dir, changes: &BTreeMap<String, Held>) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(changes).unwrap_or_default();
    pending
        .replace(Path::new(CHANGES), &bytes)
        .ctx(|| format!("cannot write {}", pending.path().join(CHANGES).display()))
}

/// The pending changes of a copy, each as accepting it would make the file now.
pub fn pending(kept: &Kept, profile: &Profile) -> Result<Vec<PendingChange>> {
    let Some(pending) = Dir::open_if_any(&kept.pending())
        .ctx(|| format!("cannot open {}", kept.pending().display()))?
    else {
        return Ok(Vec::new());
    };
    let home = open(&kept.home())?;
    let mut out = Vec::new();
    for (path, held) in read_changes(&pending)? {
        let rel = PathBuf::from(&path);
        let proposed = held
            .present
            .then(|| pending.read_small(&Path::new("files").join(&rel), MAX_BYTES))
            .transpose()
            .ctx(|| format!("cannot read the pending {path}"))?;
        let current = match home.kind(&rel) {
            Ok(Some(Kind::File)) => Some(
                home.read_small(&rel, MAX_BYTES)
                    .ctx(|| format!("cannot read {path}"))?,
            ),
            _ => None,
        };
        out.push(change_of(profile, rel, held, current, proposed));
    }
    Ok(out)
}

/// What accepting one held change makes of the file as it is now.
fn change_of(
    profile: &Profile,
    rel: PathBuf,
    held: Held,
    current: Option<Vec<u8>>,
    proposed: Option<Vec<u8>>,
) -> PendingChange {
    let mut keys = Vec::new();
    let after = match (held.kind, profile.keyed(&rel)) {
        (ReviewKind::Keys, Some(keyed)) => {
            let parse = |b: &Option<Vec<u8>>| {
                (b.as_deref().and_then(object_of))
                    .unwrap_or_else(|| Value::Object(Default::default()))
            };
            let (now, theirs) = (parse(&current), parse(&proposed));
            let (mine, wanted) = (code_of(&now, &keyed.keys), code_of(&theirs, &keyed.keys));
            let changed: BTreeSet<&Vec<String>> = mine
                .keys()
                .chain(wanted.keys())
                .filter(|k| mine.get(*k) != wanted.get(*k))
                .collect();
            keys = changed.into_iter().map(|k| k.join(".")).collect();
            Some(to_bytes(&with_code_of(&now, &theirs, &keyed.keys)))
        }
        _ => proposed,
    };
    let change = match (&current, &after) {
        (None, Some(_)) => ChangeKind::Added,
        (Some(_), None) => ChangeKind::Deleted,
        _ => ChangeKind::Modified,
    };
    let path = format!("~/{}", rel.display());
    PendingChange {
        patch: unified(&path, current.as_deref(), after.as_deref()),
        path,
        review: held.kind,
        change,
        keys,
        after,
        exec: held.exec,
        rel,
    }
}

/// Applies every pending change to the copy and to what is accepted, then forgets them.
pub fn accept(kept: &Kept, profile: &Profile) -> Result<Vec<PendingChange>> {
    settle(kept, profile, true)
}

/// Drops every pending change: the copy stays as accepted.
pub fn reject(kept: &Kept, profile: &Profile) -> Result<Vec<PendingChange>> {
    settle(kept, profile, false)
}

/// Forgets every pending change, applied first when `apply`.
fn settle(kept: &Kept, profile: &Profile, apply: bool) -> Result<Vec<PendingChange>> {
    if !kept.exists()? {
        return Ok(Vec::new());
    }
    let _lock = kept.lock()?;
    let changes = pending(kept, profile)?;
    if apply {
        let (home, accepted) = (open(&kept.home())?, open(&kept.accepted())?);
        for change in &changes {
            let leaf = change.after.as_ref().map(|bytes| Leaf::File {
                bytes: bytes.clone(),
                exec: change.exec,
            });
            put(&accepted, &change.rel, leaf.as_ref())?;
            put(&home, &change.rel, leaf.as_ref())?;
        }
    }
    let pending = kept.pending();
    crate::base::beneath::remove_path(&pending)
        .ctx(|| format!("cannot remove {}", pending.display()))?;
    Ok(changes)
}

/// A unified diff of a whole file, before and after (`/dev/null` for an absent side).
fn unified(path: &str, before: Option<&[u8]>, after: Option<&[u8]>) -> String {
    let text = |b: Option<&[u8]>| -> Vec<String> {
        String::from_utf8_lossy(b.unwrap_or_default())
            .lines()
            .map(str::to_string)
            .collect()
    };
    let (old, new) = (text(before), text(after));
    let mut out = format!(
        "--- {}\n+++ {}\n@@ -{} +{} @@\n",
        before.map_or("/dev/null".to_string(), |_| format!("a/{path}")),
        after.map_or("/dev/null".to_string(), |_| format!("b/{path}")),
        range(old.len()),
        range(new.len()),
    );
    for (sign, line) in line_diff(&old, &new) {
        out.push(sign);
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn range(lines: usize) -> String {
    match lines {
        0 => "0,0".into(),
        n => format!("1,{n}"),
    }
}

/// The lines of a longest-common-subsequence diff, each with ` `, `-` or `+`.
fn line_diff<'a>(old: &'a [String], new: &'a [String]) -> Vec<(char, &'a str)> {
    // Settings and instructions are short; past this size the diff is all out, all in.
    if old.len() * new.len() > 4_000_000 {
        let gone = old.iter().map(|l| ('-', l.as_str()));
        return gone.chain(new.iter().map(|l| ('+', l.as_str()))).collect();
    }
    let (n, m) = (old.len(), new.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if old[i] == new[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n || j < m {
        if i < n && j < m && old[i] == new[j] {
            out.push((' ', old[i].as_str()));
            (i, j) = (i + 1, j + 1);
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push(('+', new[j].as_str()));
            j += 1;
        } else {
            out.push(('-', old[i].as_str()));
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_keys_are_taken_from_one_side_and_the_rest_kept() {
        let keys = vec!["hooks".to_string(), "projects.*.mcpServers".to_string()];
        let now: Value = serde_json::json!({"theme": "dark", "hooks": {"Stop": 1},
            "projects": {"/a": {"mcpServers": {"x": 1}, "history": [1]}}});
        let before: Value = serde_json::json!({"theme": "light", "projects": {"/a": {}}});
        let kept = with_code_of(&now, &before, &keys);
        assert_eq!(
            kept,
            serde_json::json!({"theme": "dark", "projects": {"/a": {"history": [1]}}})
        );
        assert_ne!(code_of(&now, &keys), code_of(&before, &keys));
        assert_eq!(code_of(&kept, &keys), code_of(&before, &keys));
    }

    #[test]
    fn the_diff_shows_each_line_once() {
        let out = unified("~/x", Some(b"a\nb\nc\n"), Some(b"a\nc\nd\n"));
        assert_eq!(
            out,
            "--- a/~/x\n+++ b/~/x\n@@ -1,3 +1,3 @@\n a\n-b\n c\n+d\n"
        );
        assert!(unified("~/x", None, Some(b"n\n")).starts_with("--- /dev/null\n"));
    }
}
