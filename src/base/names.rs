//! How isolations and private refs are named, so that two repositories in one parent directory
//! and two tenants (state stores) of one repository never collide.
//!
//! ```text
//! .<source name>.a3s-isolate-<id>                 default tenant, beside the source
//! .<source name>.<tag>.a3s-isolate-<id>           a tenant (`--state-dir`), beside the source
//! .<source name>-<hash>[.<tag>].a3s-isolate-<id>  under --base-dir or the per-user directory
//! .a3s-isolate-<id>                               legacy (default tenant), still recognised
//! <any of these>.retained-<ms>                    retained
//! ```
//!
//! `<tag>` is `t` + the first 8 lowercase hex of sha256 of the canonical state-dir path;
//! `<hash>` the first 8 lowercase hex of sha256 of the canonical source path. Names are bytes:
//! a source directory name that is not UTF-8 works.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::base::ids::{RunId, SessionId};

/// What every isolation's name carries just before the session id.
pub const MARKER: &str = crate::base::ids::ISOLATION_NAME_PREFIX;

/// The suffix a retained isolation's name gets, followed by the UTC time it was retained
/// (`yyyymmdd-hhmmss`; isolations retained by earlier versions carry milliseconds instead).
const RETAINED: &str = ".retained-";

/// Where an isolation at `path` retained at `at_ms` goes: `<path>.retained-<yyyymmdd-hhmmss>`.
pub(crate) fn retained_path(path: &Path, at_ms: u64) -> PathBuf {
    let [year, month, day, hour, minute, second] = crate::base::fsutil::utc_parts(at_ms);
    let mut name = path.as_os_str().to_os_string();
    name.push(format!(
        "{RETAINED}{year:04}{month:02}{day:02}-{hour:02}{minute:02}{second:02}"
    ));
    PathBuf::from(name)
}

/// Whether `suffix` is what follows `.retained-`: `yyyymmdd-hhmmss`, or earlier milliseconds.
fn is_retained_stamp(suffix: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match suffix.split_once('-') {
        Some((date, time)) => date.len() == 8 && time.len() == 6 && digits(date) && digits(time),
        None => digits(suffix),
    }
}

/// The longest a file name may be.
const NAME_MAX: usize = 255;

/// The most bytes of the source's directory name an isolation's name keeps, so that the
/// longest id, a tenant tag, the hash and the retained suffix still fit in one file name.
const SOURCE_NAME_MAX: usize =
    NAME_MAX - RETAINED.len() - 15 - 1 - 9 - 1 - 9 - MARKER.len() - crate::base::ids::MAX_ID_LEN;

/// The first 8 lowercase hex digits of the sha256 of `bytes`.
fn short_hash(bytes: &[u8]) -> String {
    hex::encode(&Sha256::digest(bytes)[..4])
}

/// `path` made absolute with every existing ancestor's links resolved: the canonical form of a
/// path that may not exist yet (a state dir named before its first use).
pub(crate) fn canonical(path: &Path) -> PathBuf {
    let mut rest: Vec<OsString> = Vec::new();
    let mut at = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|cwd| cwd.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    loop {
        if let Ok(real) = std::fs::canonicalize(&at) {
            return rest.iter().rev().fold(real, |p, c| p.join(c));
        }
        match (at.file_name().map(OsStr::to_os_string), at.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                at = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// A tenant's tag: `t` + 8 hex of sha256 of the canonical state-dir path.
pub(crate) fn tenant_tag(state_dir: &Path) -> String {
    format!(
        "t{}",
        short_hash(canonical(state_dir).as_os_str().as_bytes())
    )
}

/// The private ref namespace of one state store: `refs/a3s-iso/` for the default tenant,
/// `refs/a3s-iso-tenants/<tag>/` for a tenant, and the retained branches under
/// `a3s-iso/` or `a3s-iso-tenants/<tag>/` likewise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefNames {
    tag: Option<String>,
}

impl RefNames {
    /// The namespace of the default tenant (`None`) or of the tenant with `tag`.
    pub(crate) fn new(tag: Option<&str>) -> RefNames {
        RefNames {
            tag: tag.map(str::to_string),
        }
    }

    /// The namespace every private ref of this store lives under (ends in `/`).
    pub fn root(&self) -> String {
        format!("refs/{}", self.branch_prefix())
    }

    /// Where a session's pinned base (and carried WIP) refs live (ends in `/`).
    pub fn session_dir(&self, id: &SessionId) -> String {
        format!("{}sessions/{id}/", self.root())
    }

    /// Where the mirror of the refs git made inside a session's runs lives (ends in `/`).
    pub fn session_git_dir(&self, id: &SessionId) -> String {
        format!("{}git/", self.session_dir(id))
    }

    /// The mirror of a ref (`refs/...`) git made inside a session's runs.
    pub fn session_git_ref(&self, id: &SessionId, name: &str) -> String {
        let short = name.strip_prefix("refs/").unwrap_or(name);
        format!("{}{short}", self.session_git_dir(id))
    }

    /// The mirror of the `n`th entry (newest first) of a session's own stash.
    pub fn session_git_stash_entry(&self, id: &SessionId, n: usize) -> String {
        format!("{}stash-entries/{n}", self.session_git_dir(id))
    }

    /// The ref pinning a session's bound commit.
    pub fn session_base(&self, id: &SessionId) -> String {
        format!("{}base", self.session_dir(id))
    }

    /// The ref pinning a session's carried WIP (its base tree).
    pub fn session_wip(&self, id: &SessionId) -> String {
        format!("{}wip", self.session_dir(id))
    }

    /// The ref pinning what the source had staged when WIP was carried.
    pub fn session_wip_index(&self, id: &SessionId) -> String {
        format!("{}wip-index", self.session_dir(id))
    }

    /// Where a session's run results live (ends in `/`).
    pub fn runs_dir(&self, id: &SessionId) -> String {
        format!("{}runs/{id}/", self.root())
    }

    /// The ref pinning a run's result tree.
    pub fn run_result(&self, id: &SessionId, run_id: &RunId) -> String {
        format!("{}{run_id}", self.runs_dir(id))
    }

    /// Where a session's nested change sets pin their trees (ends in `/`).
    pub fn nested_dir(&self, id: &SessionId) -> String {
        format!("{}nested/{id}/", self.root())
    }

    /// The ref pinning one side (`base` or `result`) of a run's `n`th nested change set.
    pub fn nested_tree(&self, id: &SessionId, run_id: &RunId, n: usize, side: &str) -> String {
        format!("{}{run_id}/{n}/{side}", self.nested_dir(id))
    }

    /// The ref pinning a change set fetched from a remote and verified.
    pub fn fetched(&self, digest_hex: &str) -> String {
        format!("{}fetched/{digest_hex}", self.root())
    }

    /// Where a fetch lands before the change set is verified (`token`: unique to the fetch).
    pub fn fetching(&self, token: &str) -> String {
        format!("{}fetching/{token}", self.root())
    }

    /// The ref pinning the snapshot a sweep took before it removed the isolation.
    pub fn swept(&self, id: &SessionId) -> String {
        format!("{}swept/{id}", self.root())
    }

    /// The session a private ref of this namespace belongs to (`sessions/<id>/…`,
    /// `runs/<id>/…`, `nested/<id>/…`, `swept/<id>`).
    pub(crate) fn session_of<'a>(&self, name: &'a str) -> Option<&'a str> {
        let rest = name.strip_prefix(&self.root())?;
        let (kind, rest) = rest.split_once('/')?;
        let id = rest.split('/').next()?;
        let known = matches!(kind, "sessions" | "runs" | "nested" | "swept");
        (known && !id.is_empty()).then_some(id)
    }

    /// The session a retained branch of this store belongs to (full name), if it is one.
    pub(crate) fn branch_session<'a>(&self, name: &'a str) -> Option<&'a str> {
        let id = name.strip_prefix(&self.branch_root())?;
        (!id.is_empty() && !id.contains('/')).then_some(id)
    }

    /// Where the retained branches of this store live (full name, ends in `/`).
    pub fn branch_root(&self) -> String {
        format!("refs/heads/{}", self.branch_prefix())
    }

    /// The short name of branch mode's retained branch.
    pub fn retained_branch(&self, id: &SessionId) -> String {
        format!("{}{id}", self.branch_prefix())
    }

    /// What every retained branch's short name (and under `refs/`, every private ref) starts with.
    fn branch_prefix(&self) -> String {
        match &self.tag {
            None => "a3s-iso/".to_string(),
            Some(tag) => format!("a3s-iso-tenants/{tag}/"),
        }
    }
}

/// The isolation names of one source for one state store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsolationNames {
    /// The source's directory name, as bytes (shortened when too long).
    source_name: Vec<u8>,
    /// The source name was shortened: every name carries the hash, wherever it lives.
    shortened: bool,
    /// 8 hex of sha256 of the canonical source path.
    source_hash: String,
    /// The tenant's tag; `None` for the default tenant.
    tag: Option<String>,
}

impl IsolationNames {
    /// The names of `source`'s isolations for the store with tenant `tag`.
    pub(crate) fn new(source: &Path, tag: Option<&str>) -> IsolationNames {
        let mut source_name = source
            .file_name()
            .map(|n| n.as_bytes().to_vec())
            .unwrap_or_default();
        let shortened = source_name.len() > SOURCE_NAME_MAX;
        source_name.truncate(SOURCE_NAME_MAX);
        IsolationNames {
            source_name,
            shortened,
            source_hash: short_hash(canonical(source).as_os_str().as_bytes()),
            tag: tag.map(str::to_string),
        }
    }

    /// `.<source name>[-<hash>]`: what every name of this source starts with.
    fn stem(&self, hashed: bool) -> Vec<u8> {
        let mut stem = b".".to_vec();
        stem.extend_from_slice(&self.source_name);
        if hashed || self.shortened {
            stem.push(b'-');
            stem.extend_from_slice(self.source_hash.as_bytes());
        }
        stem
    }

    /// This store's prefix for this source, before the session id; `hashed` in a directory
    /// shared by many sources (`--base-dir`, the per-user directory).
    pub fn prefix(&self, hashed: bool) -> OsString {
        let mut prefix = self.stem(hashed);
        if let Some(tag) = &self.tag {
            prefix.push(b'.');
            prefix.extend_from_slice(tag.as_bytes());
        }
        prefix.extend_from_slice(MARKER.as_bytes());
        OsString::from_vec(prefix)
    }

    /// The name of session `id`'s isolation.
    pub fn name(&self, id: &SessionId, hashed: bool) -> OsString {
        let mut name = self.prefix(hashed);
        name.push(id.as_str());
        name
    }

    /// The name of this store's spare isolation in pool slot `slot`: `<prefix>.pool-<slot>`.
    pub fn spare_name(&self, slot: u32) -> OsString {
        let mut name = self.prefix(false);
        name.push(format!("{SPARE_INFIX}{slot}"));
        name
    }

    /// The pool slot a name of this store's spares carries; `None` for any other name.
    pub fn spare_slot(&self, name: &OsStr) -> Option<u32> {
        let prefix = self.prefix(false);
        let rest = name.as_bytes().strip_prefix(prefix.as_bytes())?;
        let digits = std::str::from_utf8(rest.strip_prefix(SPARE_INFIX.as_bytes())?).ok()?;
        let slot: u32 = digits.parse().ok()?;
        (slot.to_string() == digits).then_some(slot)
    }

    /// This store's prefixes for this source: beside it, in a shared directory, and (default
    /// tenant only) the legacy `.a3s-isolate-`.
    fn own_prefixes(&self) -> Vec<OsString> {
        let mut prefixes = vec![self.prefix(false), self.prefix(true)];
        if self.tag.is_none() {
            prefixes.push(MARKER.into());
        }
        prefixes
    }

    /// The session id in a name with one of this store's prefixes for this source
    /// (`<prefix><id>[.retained-<ms>]`); `None` for any other name.
    pub fn id_of(&self, name: &OsStr) -> Option<SessionId> {
        let bytes = name.as_bytes();
        self.own_prefixes().iter().find_map(|prefix| {
            let rest = bytes.strip_prefix(prefix.as_bytes())?;
            let rest = std::str::from_utf8(rest).ok()?;
            let id = match rest.rfind(RETAINED) {
                Some(at) if is_retained_stamp(&rest[at + RETAINED.len()..]) => &rest[..at],
                _ => rest,
            };
            SessionId::new(id).ok()
        })
    }

    /// Whether a name is another tenant's isolation of this source (the default tenant included).
    pub fn is_other_tenants(&self, name: &OsStr) -> bool {
        let bytes = name.as_bytes();
        [false, true].iter().any(|&hashed| {
            let mut stem = self.stem(hashed);
            stem.push(b'.');
            let Some(rest) = bytes.strip_prefix(stem.as_slice()) else {
                return false;
            };
            if rest.starts_with(&MARKER.as_bytes()[1..]) {
                return self.tag.is_some();
            }
            let tagged = rest.len() > 10
                && rest[0] == b't'
                && rest[1..9]
                    .iter()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
                && rest[9..].starts_with(MARKER.as_bytes());
            tagged && Some(&rest[..9]) != self.tag.as_deref().map(str::as_bytes)
        })
    }
}

/// Whether a file name looks like any isolation's (anyone's: the marker is in it).
pub fn looks_like_isolation(name: &OsStr) -> bool {
    let marker = MARKER.as_bytes();
    let bytes = name.as_bytes();
    let has = |part: &[u8]| bytes.windows(part.len()).any(|w| w == part);
    // A pool's spare is no session's isolation: its pool keeps it or removes it; nor are the
    // pristine trees that clones are made from (`gc` removes them).
    !has(SPARE_MARKER.as_bytes()) && !has(PRISTINE_MARKER.as_bytes()) && has(marker)
}

/// What the directory of a store's pristine trees carries after its prefix (no session id
/// starts with a dot, so no session's name can carry it).
pub const PRISTINE_INFIX: &str = ".pristine";

/// The marker and pristine infix together: `.a3s-isolate-.pristine`.
const PRISTINE_MARKER: &str = ".a3s-isolate-.pristine";

/// What a spare isolation's name carries after the store's prefix (no session id starts with
/// a dot, so no session's name can carry it).
const SPARE_INFIX: &str = ".pool-";

/// The marker and spare infix together: `.a3s-isolate-.pool-`.
const SPARE_MARKER: &str = ".a3s-isolate-.pool-";

#[cfg(test)]
mod tests {
    use crate::base::ids::{RunId, SessionId};
    use crate::base::names::*;

    fn sid(id: &str) -> SessionId {
        SessionId::new(id).unwrap()
    }

    fn rid(id: &str) -> RunId {
        RunId::new(id).unwrap()
    }

    #[test]
    fn names_follow_the_scheme() {
        let names = IsolationNames::new(Path::new("/nowhere/src"), None);
        let hash = short_hash(b"/nowhere/src");
        assert_eq!(names.name(&sid("t1"), false), ".src.a3s-isolate-t1");
        assert_eq!(
            names.name(&sid("t1"), true),
            OsString::from(format!(".src-{hash}.a3s-isolate-t1"))
        );
        let tenant = IsolationNames::new(Path::new("/nowhere/src"), Some("t0123abcd"));
        assert_eq!(
            tenant.name(&sid("t1"), false),
            ".src.t0123abcd.a3s-isolate-t1"
        );
        assert_eq!(tag_len(), 9);
    }

    #[test]
    fn refs_name_their_session_only_in_their_own_namespace() {
        let default = RefNames::new(None);
        let tenant = RefNames::new(Some("t0123abcd"));
        for ns in [&default, &tenant] {
            assert_eq!(ns.session_of(&ns.session_base(&sid("s1"))), Some("s1"));
            assert_eq!(
                ns.session_of(&ns.run_result(&sid("s1"), &rid("r1"))),
                Some("s1")
            );
            assert_eq!(
                ns.session_of(&ns.nested_tree(&sid("s1"), &rid("r1"), 0, "base")),
                Some("s1")
            );
            assert_eq!(ns.session_of(&ns.swept(&sid("s1"))), Some("s1"));
            assert_eq!(ns.session_of(&format!("{}other/x", ns.root())), None);
            let branch = format!("refs/heads/{}", ns.retained_branch(&sid("s1")));
            assert_eq!(ns.branch_session(&branch), Some("s1"));
        }
        assert_eq!(default.session_of(&tenant.session_base(&sid("s1"))), None);
        assert_eq!(tenant.session_of(&default.session_base(&sid("s1"))), None);
        let tenant_branch = format!("refs/heads/{}", tenant.retained_branch(&sid("s1")));
        assert_eq!(default.branch_session(&tenant_branch), None);
    }

    fn tag_len() -> usize {
        tenant_tag(Path::new("/nowhere/state")).len()
    }

    #[test]
    fn ids_parse_only_against_this_stores_prefix() {
        let names = IsolationNames::new(Path::new("/p/src"), None);
        let tenant = IsolationNames::new(Path::new("/p/src"), Some("t0123abcd"));
        let other = IsolationNames::new(Path::new("/p/other"), None);
        let id = |n: &IsolationNames, s: &str| n.id_of(OsStr::new(s)).map(|i| i.to_string());
        assert_eq!(id(&names, ".src.a3s-isolate-abc"), Some("abc".into()));
        assert_eq!(
            id(&names, ".src.a3s-isolate-a.b.retained-17"),
            Some("a.b".into())
        );
        assert_eq!(
            id(&names, ".src.a3s-isolate-a.b.retained-20261130-183000"),
            Some("a.b".into())
        );
        assert_eq!(
            id(&names, ".src.a3s-isolate-a.retained-2026-1"),
            Some("a.retained-2026-1".into()),
            "not a retained stamp: part of the id"
        );
        assert_eq!(id(&names, ".a3s-isolate-legacy"), Some("legacy".into()));
        assert_eq!(id(&names, ".src.a3s-isolate-"), None);
        assert_eq!(id(&names, ".src.t0123abcd.a3s-isolate-abc"), None);
        assert_eq!(id(&other, ".src.a3s-isolate-abc"), None);
        assert_eq!(
            id(&tenant, ".src.t0123abcd.a3s-isolate-abc"),
            Some("abc".into())
        );
        assert_eq!(id(&tenant, ".src.a3s-isolate-abc"), None);
        assert_eq!(id(&tenant, ".a3s-isolate-abc"), None);
        assert!(names.is_other_tenants(OsStr::new(".src.t0123abcd.a3s-isolate-abc")));
        assert!(tenant.is_other_tenants(OsStr::new(".src.a3s-isolate-abc")));
        assert!(!tenant.is_other_tenants(OsStr::new(".src.t0123abcd.a3s-isolate-abc")));
        assert!(!other.is_other_tenants(OsStr::new(".src.t0123abcd.a3s-isolate-abc")));
    }

    #[test]
    fn a_name_that_is_not_utf8_works_and_long_names_fit() {
        let raw = OsStr::from_bytes(b"caf\xe9");
        let names = IsolationNames::new(&Path::new("/p").join(raw), Some("t0123abcd"));
        let name = names.name(&sid("x"), false);
        assert_eq!(names.id_of(&name).as_deref(), Some("x"));
        let long = "r".repeat(250);
        let names = IsolationNames::new(&Path::new("/p").join(&long), Some("t0123abcd"));
        let name = names.name(&sid(&"i".repeat(128)), false);
        let retained = retained_path(Path::new(&name), 1_796_061_810_999);
        assert!(retained.as_os_str().len() <= NAME_MAX);
        assert!(
            retained
                .as_os_str()
                .to_string_lossy()
                .ends_with(".retained-20261130-180330")
        );
        assert_eq!(
            names.id_of(&name).map(|i| i.to_string()),
            Some("i".repeat(128))
        );
    }

    #[test]
    fn spare_names_are_no_sessions() {
        let names = IsolationNames::new(Path::new("/p/src"), None);
        let tenant = IsolationNames::new(Path::new("/p/src"), Some("t0123abcd"));
        let spare = names.spare_name(3);
        assert_eq!(spare, OsString::from(".src.a3s-isolate-.pool-3"));
        assert_eq!(names.spare_slot(&spare), Some(3));
        assert_eq!(names.id_of(&spare), None);
        assert_eq!(tenant.spare_slot(&spare), None);
        assert_eq!(tenant.spare_slot(&tenant.spare_name(1)), Some(1));
        assert_eq!(
            names.spare_slot(OsStr::new(".src.a3s-isolate-.pool-03")),
            None
        );
        assert!(!looks_like_isolation(&spare));
        let mut pristine = names.prefix(false);
        pristine.push(PRISTINE_INFIX);
        assert!(!looks_like_isolation(&pristine));
        assert_eq!(names.id_of(&pristine), None);
        assert!(looks_like_isolation(&names.name(&sid("s"), false)));
    }

    #[test]
    fn ref_names_per_tenant() {
        let default = RefNames::new(None);
        let tenant = RefNames::new(Some("t0123abcd"));
        assert_eq!(
            default.session_base(&sid("s")),
            "refs/a3s-iso/sessions/s/base"
        );
        assert_eq!(
            tenant.swept(&sid("s")),
            "refs/a3s-iso-tenants/t0123abcd/swept/s"
        );
        assert_eq!(default.retained_branch(&sid("s")), "a3s-iso/s");
        assert_eq!(
            tenant.retained_branch(&sid("s")),
            "a3s-iso-tenants/t0123abcd/s"
        );
    }
}
