//! The refs as git inside a session's runs sees them: the repository's own, with the
//! session's upper layer over its git dir (`refs/`, `logs/`, `packed-refs`). Read outside the
//! sandbox, from the layer's files (beneath its handle: the command wrote them), without git.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::base::beneath::{Dir, Kind};
use crate::base::ids::is_object_hex;

/// The most a ref file, a `packed-refs` or a stash's log is read up to.
const REF_LIMIT: u64 = 4096;
const PACKED_LIMIT: u64 = 64 * 1024 * 1024;

/// How deep a chain of symbolic refs is followed.
const SYMREF_DEPTH: usize = 5;

/// What a layer says of a path.
#[derive(Debug, PartialEq, Eq)]
enum Layered {
    /// A file there, with its bytes.
    File(Vec<u8>),
    /// Removed in the layer (a whiteout at or above it, or an opaque directory above it).
    Hidden,
    /// The layer says nothing: the lower one counts.
    Through,
}

/// The session's view of the repository's refs.
pub(crate) struct RefView {
    /// The session's upper layer over the git dir (`None`: it has none yet).
    upper: Option<Dir>,
    lower: PathBuf,
    /// The `packed-refs` of the view, read once.
    packed: std::cell::OnceCell<BTreeMap<String, String>>,
}

/// Whether an entry of a layer is a whiteout: a character device 0/0.
pub(crate) fn is_whiteout(dir: &Dir, name: &Path) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let Ok(Some(Kind::Special)) = dir.kind(name) else {
        return false;
    };
    let path = dir.path().join(name);
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_char_device() && m.rdev() == 0)
}

/// Whether a layer's directory is opaque (hides the lower one's entries).
pub(crate) fn is_opaque(dir: &Dir) -> bool {
    ["user.overlay.opaque", "trusted.overlay.opaque"]
        .iter()
        .any(|name| {
            let mut value = [0u8; 4];
            rustix::fs::fgetxattr(dir.fd(), *name, &mut value).is_ok_and(|n| value[..n] == *b"y")
        })
}

/// A ref's name, checked to be a plain path under `refs/` (or `HEAD`-like, one component).
fn plain_name(name: &str) -> Option<&Path> {
    let path = Path::new(name);
    let plain = path
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)))
        && !name.ends_with(".lock");
    plain.then_some(path)
}

impl RefView {
    /// The view of the repository at `common_dir` with the session's layer `upper`.
    pub(crate) fn new(common_dir: &Path, upper: &Path) -> RefView {
        RefView {
            upper: Dir::open_if_any(upper).ok().flatten(),
            lower: common_dir.to_path_buf(),
            packed: std::cell::OnceCell::new(),
        }
    }

    /// What the layer says of `rel`.
    fn layered(&self, rel: &Path, limit: u64) -> Layered {
        let Some(upper) = &self.upper else {
            return Layered::Through;
        };
        let mut at = PathBuf::new();
        let mut opaque_above = false;
        let parts: Vec<_> = rel.components().collect();
        for (i, part) in parts.iter().enumerate() {
            at.push(part);
            let last = i + 1 == parts.len();
            if is_whiteout(upper, &at) {
                return Layered::Hidden;
            }
            match upper.kind(&at) {
                Ok(None) if opaque_above => return Layered::Hidden,
                Ok(None) => return Layered::Through,
                Ok(Some(Kind::File)) if last => {
                    return match upper.read_small(&at, limit) {
                        Ok(bytes) => Layered::File(bytes),
                        Err(_) => Layered::Hidden,
                    };
                }
                Ok(Some(Kind::Dir)) if !last => {
                    opaque_above |= upper.dir(&at).is_ok_and(|d| is_opaque(&d));
                }
                // A link, a special file, a directory where a ref is: nothing usable.
                _ => return Layered::Hidden,
            }
        }
        Layered::Through
    }

    /// The bytes of `rel` in the session's view of the git dir.
    fn read(&self, rel: &Path, limit: u64) -> Option<Vec<u8>> {
        match self.layered(rel, limit) {
            Layered::File(bytes) => Some(bytes),
            Layered::Hidden => None,
            Layered::Through => Dir::open(&self.lower).ok()?.read_small(rel, limit).ok(),
        }
    }

    /// The refs of the view's `packed-refs`: name to object id.
    fn packed(&self) -> &BTreeMap<String, String> {
        self.packed.get_or_init(|| {
            let bytes = self
                .read(Path::new("packed-refs"), PACKED_LIMIT)
                .unwrap_or_default();
            parse_packed(&bytes)
        })
    }

    /// The object id `name` (`refs/...`) names in the session's view, symbolic refs followed.
    pub(crate) fn resolve(&self, name: &str) -> Option<String> {
        let mut name = name.to_string();
        for _ in 0..SYMREF_DEPTH {
            let rel = plain_name(&name)?;
            let value = match self.read(rel, REF_LIMIT) {
                Some(bytes) => String::from_utf8(bytes).ok()?.trim_end().to_string(),
                None => self.packed().get(&name)?.clone(),
            };
            match value.strip_prefix("ref: ") {
                Some(target) => name = target.trim().to_string(),
                None if is_object_hex(&value) => return Some(value),
                None => return None,
            }
        }
        None
    }

    /// The refs (loose, or in a rewritten `packed-refs`) the session's layer holds that the
    /// repository does not, or at another object: name to object id.
    pub(crate) fn private_refs(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let Some(upper) = &self.upper else {
            return out;
        };
        let mut names = Vec::new();
        if let Ok(Some(refs)) = upper.dir_if_any(Path::new("refs")) {
            loose_names(&refs, "refs", &mut names);
        }
        if let Ok(bytes) = upper.read_small(Path::new("packed-refs"), PACKED_LIMIT) {
            names.extend(parse_packed(&bytes).into_keys());
        }
        let own = RefView {
            upper: None,
            lower: self.lower.clone(),
            packed: std::cell::OnceCell::new(),
        };
        for name in names {
            if let Some(id) = self.resolve(&name)
                && own.resolve(&name).as_deref() != Some(id.as_str())
            {
                out.insert(name, id);
            }
        }
        out
    }

    /// The session's own stash entries, newest first: those the repository's stash log lacks.
    pub(crate) fn stash_entries(&self) -> Vec<String> {
        let log = |bytes: Option<Vec<u8>>| -> Vec<String> {
            let text = String::from_utf8_lossy(&bytes.unwrap_or_default()).into_owned();
            text.lines()
                .filter_map(|line| line.split(' ').nth(1))
                .filter(|id| is_object_hex(id))
                .map(str::to_string)
                .collect()
        };
        let rel = Path::new("logs/refs/stash");
        let own = Dir::open(&self.lower)
            .ok()
            .and_then(|d| d.read_small(rel, PACKED_LIMIT).ok());
        let own = log(own);
        let mut seen = log(self.read(rel, PACKED_LIMIT));
        seen.retain(|id| !own.contains(id));
        seen.reverse();
        seen
    }
}

/// The names of the loose refs under `dir` (reached as `prefix`), but links and lock files.
fn loose_names(dir: &Dir, prefix: &str, out: &mut Vec<String>) {
    for entry in dir.entries().unwrap_or_default() {
        let Some(name) = entry.name.to_str() else {
            continue;
        };
        let full = format!("{prefix}/{name}");
        match entry.kind {
            Kind::File if !name.ends_with(".lock") => out.push(full),
            Kind::Dir => {
                if let Ok(sub) = dir.dir(Path::new(name)) {
                    loose_names(&sub, &full, out);
                }
            }
            _ => {}
        }
    }
}

/// The refs a `packed-refs` file names.
fn parse_packed(bytes: &[u8]) -> BTreeMap<String, String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter(|line| !line.starts_with('#') && !line.starts_with('^'))
        .filter_map(|line| line.split_once(' '))
        .filter(|(id, _)| is_object_hex(id))
        .map(|(id, name)| (name.to_string(), id.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::recovery::session_git::view::*;

    #[test]
    fn packed_refs_are_read_without_peeled_lines() {
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        let text = format!("# pack-refs with: peeled\n{a} refs/heads/x\n^{b}\n{b} refs/tags/t\n");
        let packed = parse_packed(text.as_bytes());
        assert_eq!(packed.get("refs/heads/x"), Some(&a));
        assert_eq!(packed.get("refs/tags/t"), Some(&b));
        assert_eq!(packed.len(), 2);
    }

    #[test]
    fn only_plain_names_are_looked_up() {
        assert!(plain_name("refs/heads/x").is_some());
        assert!(plain_name("refs/../config").is_none());
        assert!(plain_name("/etc/passwd").is_none());
        assert!(plain_name("refs/heads/x.lock").is_none());
    }
}
