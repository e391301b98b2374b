//! Scratch entries that name their maker: temporary indexes and patches under `<state>/tmp/`,
//! runs' quarantine object dirs under `<state>/quarantine/`, and runs' private TMPDIRs. Every
//! such name ends in `-<pid>-<start ticks>-<host key>-<n>-<nanos>`, so that the next command can
//! remove what a process left that is provably dead: a process of this host (and PID namespace)
//! whose pid is gone or now belongs to another process (its start identity differs). What a live
//! process, a process of another host or namespace, or an unknown maker left stays.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::owner::{hostname, start_identity};

/// Set for a run's command (see `run`): a3s-iso started by it cleans nothing.
const INSIDE_RUN: &str = "A3S_ISO_RUN_ID";

/// The prefix of a run's private TMPDIR in the system's temporary directory.
pub(crate) const PRIVATE_TMP_PREFIX: &str = "a3s-iso-";

/// This process's start ticks (field 22 of `/proc/<pid>/stat`), when they can be read.
fn start_ticks(pid: u32) -> Option<u64> {
    start_identity(pid)?
        .strip_prefix("linux-proc-start-ticks:")?
        .parse()
        .ok()
}

/// Eight hex digits standing for where a pid means this process: the host name and the PID
/// namespace. A command in a run's sandbox (a PID namespace of its own, where the host's pids
/// are not visible) sees the makers outside as foreign, never as dead.
fn host_key() -> &'static str {
    static KEY: OnceLock<String> = OnceLock::new();
    KEY.get_or_init(|| {
        use sha2::{Digest, Sha256};
        let namespace = std::fs::read_link("/proc/self/ns/pid").unwrap_or_default();
        let mut hasher = Sha256::new();
        hasher.update(hostname().as_bytes());
        hasher.update([0u8]);
        hasher.update(namespace.as_os_str().as_encoded_bytes());
        hex::encode(&hasher.finalize()[..4])
    })
}

/// `<pid>-<start ticks>-<host key>` of this process (ticks 0 when they cannot be read: then
/// nothing it makes is ever judged dead).
fn maker_tag() -> &'static str {
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| {
        let pid = std::process::id();
        let ticks = start_ticks(pid).unwrap_or(0);
        format!("{pid}-{ticks}-{}", host_key())
    })
}

/// A fresh name for a scratch entry of this process: `<stem>-<maker>-<n>-<nanos>`.
pub(crate) fn owned_name(stem: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{stem}-{}-{n}-{nanos:08x}", maker_tag())
}

/// Who made a scratch entry, as its name says.
#[derive(Debug, PartialEq, Eq)]
struct Maker {
    pid: u32,
    ticks: u64,
    host: String,
}

/// The maker an entry's name carries (a `.lock` beside a temporary index counts as the
/// index's); `None` for a name not made by [`owned_name`].
fn maker_of(name: &str) -> Option<Maker> {
    let name = name.strip_suffix(".lock").unwrap_or(name);
    let mut parts = name.rsplitn(6, '-');
    let nanos = parts.next()?;
    let n = parts.next()?;
    let host = parts.next()?;
    let ticks = parts.next()?;
    let pid = parts.next()?;
    let stem = parts.next()?;
    let hex8 = |s: &str| s.len() == 8 && s.bytes().all(|b| b.is_ascii_hexdigit());
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if stem.is_empty() || !hex8(nanos) || !digits(n) || !hex8(host) || !digits(ticks) {
        return None;
    }
    let maker = Maker {
        pid: pid.parse().ok()?,
        ticks: ticks.parse().ok()?,
        host: host.to_string(),
    };
    (maker.pid > 0 && maker.ticks > 0).then_some(maker)
}

/// Whether a maker is provably dead: of this host and PID namespace, and its pid gone, a
/// zombie, or another process now.
fn is_dead(maker: &Maker) -> bool {
    maker.host == host_key() && start_ticks(maker.pid) != Some(maker.ticks)
}

/// Whether `name` (made by [`owned_name`]) names a provably dead maker; false for any other
/// name (a private ref's token, say).
pub(crate) fn made_by_dead(name: &str) -> bool {
    maker_of(name).is_some_and(|maker| is_dead(&maker))
}

/// What the cleaning may remove in one directory.
struct Sweepable<'a> {
    dir: &'a Path,
    /// Only names starting with this.
    prefix: &'a str,
    /// Only entries this user owns (in a directory other users share).
    own_only: bool,
}

/// Removes the entries of a directory whose maker is provably dead; returns how many went.
fn remove_dead(what: &Sweepable<'_>) -> usize {
    let Ok(entries) = std::fs::read_dir(what.dir) else {
        return 0;
    };
    let uid = rustix::process::geteuid().as_raw();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(maker) = name.strip_prefix(what.prefix).and_then(|_| maker_of(&name)) else {
            continue;
        };
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if (what.own_only && meta.uid() != uid) || !is_dead(&maker) {
            continue;
        }
        // A run's quarantine or TMPDIR holds what its command left: links in it are
        // removed as entries, never followed.
        let gone = crate::beneath::remove_path(&entry.path());
        removed += usize::from(gone.is_ok());
    }
    removed
}

/// The pid in the name of an atomic write's temporary file (`.<name>.tmp-<pid>-<n>-<nanos>`,
/// see `fsutil::write_atomic`).
fn writer_of(name: &str) -> Option<u32> {
    let (_, suffix) = name.strip_prefix('.')?.rsplit_once(".tmp-")?;
    let mut parts = suffix.splitn(3, '-');
    let pid = parts.next()?.parse().ok()?;
    let n = parts.next()?;
    let nanos = parts.next()?;
    let valid = !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    (valid && nanos.len() == 8 && nanos.bytes().all(|b| b.is_ascii_hexdigit())).then_some(pid)
}

/// Removes the temporary files of atomic writes in `dir` whose writer no longer runs (no
/// process has its pid: a pid in use now, even by another process, keeps the file).
fn remove_dead_writes(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(pid) = writer_of(&name)
            && start_identity(pid).is_none()
            && entry.file_type().is_ok_and(|t| t.is_file())
        {
            removed += usize::from(std::fs::remove_file(entry.path()).is_ok());
        }
    }
    removed
}

/// The state dirs that records are written into atomically.
const RECORD_DIRS: &[&str] = &["sessions", "claims", "pending", "promoted"];

/// Removes what dead processes left in a state store: its scratch (`tmp/`), its quarantine
/// object dirs, the temporary files of atomic writes, and runs' private TMPDIRs in the
/// system's temporary directory; returns how many entries went. Best effort: what cannot be
/// removed stays for the next command.
pub(crate) fn clean(state_dir: &Path) -> usize {
    // Nothing can be proven dead where this process cannot read its own start identity, nor
    // from inside a run (perhaps in its sandbox, whose PID namespace hides the host's pids).
    if start_ticks(std::process::id()).is_none() || std::env::var_os(INSIDE_RUN).is_some() {
        return 0;
    }
    let mut removed: usize = RECORD_DIRS
        .iter()
        .map(|dir| remove_dead_writes(&state_dir.join(dir)))
        .sum();
    if let Ok(runs) = std::fs::read_dir(state_dir.join("runs")) {
        removed += runs
            .flatten()
            .map(|session| remove_dead_writes(&session.path()))
            .sum::<usize>();
    }
    removed + remove_dead_scratch(state_dir)
}

/// How many entries of the scratch (`tmp/`) and quarantine dirs a provably dead process left
/// (what the next command that cleans will remove). Reads only.
pub(crate) fn dead_leftovers(state_dir: &Path) -> usize {
    ["tmp", "quarantine"]
        .iter()
        .filter_map(|sub| std::fs::read_dir(state_dir.join(sub)).ok())
        .flat_map(|entries| entries.flatten())
        .filter(|entry| {
            maker_of(&entry.file_name().to_string_lossy()).is_some_and(|maker| is_dead(&maker))
        })
        .count()
}

/// The entries of the scratch (`tmp/`) and quarantine dirs a provably dead process left, by
/// path (what `gc` lists and removes). Reads only.
pub(crate) fn dead_entries(state_dir: &Path) -> Vec<PathBuf> {
    if start_ticks(std::process::id()).is_none() || std::env::var_os(INSIDE_RUN).is_some() {
        return Vec::new();
    }
    ["tmp", "quarantine"]
        .iter()
        .filter_map(|sub| std::fs::read_dir(state_dir.join(sub)).ok())
        .flat_map(|entries| entries.flatten())
        .filter(|entry| {
            maker_of(&entry.file_name().to_string_lossy()).is_some_and(|maker| is_dead(&maker))
        })
        .map(|entry| entry.path())
        .collect()
}

/// Removes the scratch entries of dead makers (see [`clean`]).
fn remove_dead_scratch(state_dir: &Path) -> usize {
    let tmp = std::env::temp_dir();
    [
        Sweepable {
            dir: &state_dir.join("tmp"),
            prefix: "",
            own_only: false,
        },
        Sweepable {
            dir: &state_dir.join("quarantine"),
            prefix: "",
            own_only: false,
        },
        Sweepable {
            dir: &tmp,
            prefix: PRIVATE_TMP_PREFIX,
            own_only: true,
        },
    ]
    .iter()
    .map(remove_dead)
    .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_their_maker() {
        let name = owned_name("index");
        let maker = maker_of(&name).expect("a maker");
        assert_eq!(maker.pid, std::process::id());
        assert!(!is_dead(&maker), "this process is alive");
        assert_eq!(maker_of(&format!("{name}.lock")), Some(maker));
        let run_dir = owned_name("a3s-iso-r-0190a1b2c3d-0a1b2c3d");
        assert_eq!(maker_of(&run_dir).unwrap().pid, std::process::id());
        for foreign in [
            "index-12-0-1a2b3c4d",
            "a3s-iso-escape-4242",
            "x",
            "-1-2-abcdabcd-0-1a2b3c4d",
        ] {
            assert_eq!(maker_of(foreign), None, "{foreign}");
        }
    }

    #[test]
    fn only_the_dead_makers_entries_go() {
        let dir = tempfile::tempdir().unwrap();
        let mine = dir.path().join(owned_name("index"));
        std::fs::write(&mine, "live").unwrap();
        let tag = maker_tag();
        let (pid, rest) = tag.split_once('-').unwrap();
        let host = rest.split_once('-').unwrap().1;
        // This pid with other start ticks: the pid was reused, its maker is dead.
        let dead = dir.path().join(format!("index-{pid}-1-{host}-0-0000abcd"));
        std::fs::write(&dead, "dead").unwrap();
        std::fs::write(
            dir.path()
                .join(format!("index-{pid}-1-{host}-0-0000abcd.lock")),
            "",
        )
        .unwrap();
        let foreign = dir
            .path()
            .join(format!("index-{pid}-1-00000000-0-0000abcd"));
        std::fs::write(&foreign, "another host").unwrap();
        let sweepable = Sweepable {
            dir: dir.path(),
            prefix: "",
            own_only: true,
        };
        assert_eq!(remove_dead(&sweepable), 2);
        assert!(mine.exists() && foreign.exists() && !dead.exists());
    }

    #[test]
    fn atomic_writes_name_their_writer() {
        let suffix = crate::fsutil::unique_suffix();
        assert_eq!(
            writer_of(&format!(".s-1.json.tmp-{suffix}")),
            Some(std::process::id())
        );
        assert_eq!(writer_of("s-1.json"), None);
        assert_eq!(writer_of(".s.json.tmp-x-1-0000abcd"), None);
    }
}
