//! Scratch entries that name their maker (`tmp/`, `quarantine/`, runs' private TMPDIRs): each
//! name ends in `-<pid>-<start ticks>-<host key>-<n>-<nanos>`, so that the next command can
//! remove what a provably dead process left (of this host and PID namespace, its pid gone or
//! another process's now). What any other maker left stays.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::base::error::IoContext;
use crate::base::maker::{is_dead, maker_of};
use crate::base::owner::start_identity;
use crate::store::layout::StateDir;

/// The prefix of a run's private TMPDIR in the system's temporary directory.
pub(crate) const PRIVATE_TMP_PREFIX: &str = "a3s-iso-";

/// Where a dead process's leftover was found, which says how it is removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LeftoverKind {
    /// A temporary index or patch under `<state>/tmp/`, or a run's quarantine object dir.
    Scratch,
    /// A run's private TMPDIR in the system's temporary directory.
    PrivateTmp,
    /// The temporary file of an atomic write of a record.
    AtomicWrite,
    /// A live-run file (`live/<id>.json`) whose session's lease no run holds: its run was killed.
    LiveRun,
}

/// One entry a provably dead process left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Leftover {
    pub(crate) path: PathBuf,
    pub(crate) kind: LeftoverKind,
}

/// The entries of `dir` that `dead` (given each with its name) says a dead process left.
fn left_in(
    dir: &Path,
    kind: LeftoverKind,
    dead: impl Fn(&std::fs::DirEntry, &str) -> bool,
) -> Vec<Leftover> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| dead(entry, &entry.file_name().to_string_lossy()))
        .map(|entry| Leftover {
            path: entry.path(),
            kind,
        })
        .collect()
}

/// The entries of `dir` named `<prefix>…` whose maker is provably dead; with `own_only`, only
/// those this user owns (in a directory other users share).
fn dead_in(dir: &Path, prefix: &str, own_only: bool, kind: LeftoverKind) -> Vec<Leftover> {
    let uid = rustix::process::geteuid().as_raw();
    left_in(dir, kind, |entry, name| {
        let maker = name.strip_prefix(prefix).and_then(|_| maker_of(name));
        let owned = || {
            std::fs::symlink_metadata(entry.path()).is_ok_and(|meta| !own_only || meta.uid() == uid)
        };
        maker.is_some_and(|maker| is_dead(&maker)) && owned()
    })
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

/// The temporary files of atomic writes in `dir` whose writer no longer runs (no process has
/// its pid: a pid in use now, even by another process, keeps the file).
fn dead_writes(dir: &Path) -> Vec<Leftover> {
    left_in(dir, LeftoverKind::AtomicWrite, |entry, name| {
        writer_of(name).is_some_and(|pid| start_identity(pid).is_none())
            && entry.file_type().is_ok_and(|t| t.is_file())
    })
}

/// The state dirs that records are written into atomically.
const RECORD_DIRS: [StateDir; 5] = [
    StateDir::Sessions,
    StateDir::Claims,
    StateDir::Pending,
    StateDir::Promoted,
    StateDir::Live,
];

/// The live-run files whose session no run holds (see [`LeftoverKind::LiveRun`]).
fn dead_live_runs(state_dir: &Path) -> Vec<Leftover> {
    let live = StateDir::Live.under(state_dir);
    left_in(&live, LeftoverKind::LiveRun, |_, name| {
        let Some(id) = name
            .strip_suffix(".json")
            .filter(|_| !name.starts_with('.'))
        else {
            return false;
        };
        let lease = StateDir::Leases.file(state_dir, id, ".lock");
        // A lease that cannot be probed counts as held: the file stays.
        !crate::store::lock::FileLock::is_held(&lease).unwrap_or(true)
    })
}

/// Everything provably dead processes left in a state store and the system's temporary
/// directory: what [`clean`] removes, `doctor` counts and `gc` lists. Nothing where this process
/// cannot tell the host's dead processes (see `sees_host_processes`).
pub(crate) fn leftovers(state_dir: &Path) -> Vec<Leftover> {
    if !crate::base::owner::sees_host_processes() {
        return Vec::new();
    }
    let mut found: Vec<Leftover> = RECORD_DIRS
        .iter()
        .flat_map(|dir| dead_writes(&dir.under(state_dir)))
        .collect();
    if let Ok(runs) = std::fs::read_dir(StateDir::Runs.under(state_dir)) {
        found.extend(
            runs.flatten()
                .flat_map(|session| dead_writes(&session.path())),
        );
    }
    found.extend(dead_live_runs(state_dir));
    for scratch in [StateDir::Tmp, StateDir::Quarantine] {
        found.extend(dead_in(
            &scratch.under(state_dir),
            "",
            false,
            LeftoverKind::Scratch,
        ));
    }
    let tmp = std::env::temp_dir();
    found.extend(dead_in(
        &tmp,
        PRIVATE_TMP_PREFIX,
        true,
        LeftoverKind::PrivateTmp,
    ));
    found
}

/// Removes one leftover; whether it went. A run's quarantine or TMPDIR holds what its command
/// left: links in it are removed as entries, never followed.
fn remove(leftover: &Leftover) -> bool {
    match leftover.kind {
        LeftoverKind::AtomicWrite | LeftoverKind::LiveRun => {
            std::fs::remove_file(&leftover.path).is_ok()
        }
        LeftoverKind::Scratch | LeftoverKind::PrivateTmp => {
            crate::base::beneath::remove_path(&leftover.path).is_ok()
        }
    }
}

/// Removes what [`leftovers`] lists, best effort; how many entries went.
pub(crate) fn clean(state_dir: &Path) -> usize {
    leftovers(state_dir).iter().filter(|l| remove(l)).count()
}

/// Scratch space for a command that writes nothing into the store: a directory of its own under
/// the system's temporary directory, removed with it.
pub(crate) struct ReadScratch {
    dir: PathBuf,
}

impl ReadScratch {
    pub(crate) fn new() -> crate::base::error::Result<ReadScratch> {
        let dir = std::env::temp_dir().join(crate::base::maker::owned_name("a3s-iso-read"));
        std::fs::create_dir(&dir).ctx(|| format!("cannot create {}", dir.display()))?;
        Ok(ReadScratch { dir })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for ReadScratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use crate::base::maker::{maker_tag, owned_name};
    use crate::store::scratch::*;

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
        let found = dead_in(dir.path(), "", true, LeftoverKind::Scratch);
        assert_eq!(found.len(), 2);
        assert_eq!(found.iter().filter(|l| remove(l)).count(), 2);
        assert!(mine.exists() && foreign.exists() && !dead.exists());
    }

    #[test]
    fn atomic_writes_name_their_writer() {
        let suffix = crate::base::fsutil::unique_suffix();
        assert_eq!(
            writer_of(&format!(".s-1.json.tmp-{suffix}")),
            Some(std::process::id())
        );
        assert_eq!(writer_of("s-1.json"), None);
        assert_eq!(writer_of(".s.json.tmp-x-1-0000abcd"), None);
    }
}
