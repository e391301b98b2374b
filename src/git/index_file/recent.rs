//! Stat data noted in the second it could still change in. Git decides that a file or a
//! directory is unchanged when its stat data match what the index noted; unless it was built
//! to compare nanoseconds (many distributions' builds are not), it compares whole seconds. A
//! file noted in the same second as its last change, then changed again in that second with
//! its size kept and its modification time put back (as `tar`, `cp -p` or `rsync -t` do),
//! matches: git's own racy check looks at the modification time only, which was put back.
//!
//! So a snapshot dates the index it keeps from the second it began (a little before), and the
//! next snapshot, in its copy of that index, makes every record whose change time is not
//! older than that second fail the comparison: an entry's size is set to 0 (as git smudges a
//! racily clean entry: git then compares the file's content, and notes its stat data again),
//! and the times of such a directory or exclude file in the untracked cache are set to 0 (git
//! then reads that directory, or hashes that file, again); an untracked cache this cannot read
//! is dropped whole. The copy keeps its modification time, and its trailing hash is computed
//! again (unless it is git's null `index.skipHash` one). The kept index itself is left as git
//! wrote it: `read-tree -m -u` takes an entry smudged so as changed.
//!
//! Where the file system keeps nanoseconds, a recent record can be told apart without reading
//! the file (as a bind's fresh checkout has thousands of them): a file or link changed well
//! before the index was dated (by more than the clock's slack) whose stat data still match the
//! record to the nanosecond has not changed since, for any change after it would have dated
//! its change time later. Such a record is kept as it is, and the copy is dated after it, so
//! that git's own racy check, in whole seconds, does not read the file again either.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::Digest;

use crate::base::error::{IoContext, Result};
use crate::git::index_file::reader::{
    ENTRY_STAT, EntryView, IndexFile, SIZE_AT, be32, decode_varint,
};
use crate::git::index_file::writer::StatData;

/// The untracked cache's extension.
const UNTRACKED: [u8; 4] = *b"UNTR";

/// The untracked cache's stat data: an entry's, without the mode.
const CACHE_STAT: usize = 36;

/// How far the file system's clock (coarse, a tick behind) may lag the one read here.
const CLOCK_SLACK: Duration = Duration::from_millis(50);

/// Dates the index at `path`, which a snapshot that began at `began` wrote, from that moment
/// (allowing for the file system's coarser clock).
pub(crate) fn date_from(path: &Path, began: SystemTime) -> Result<()> {
    let at = began.checked_sub(CLOCK_SLACK).unwrap_or(began);
    File::options()
        .write(true)
        .open(path)
        .and_then(|file| file.set_modified(at))
        .ctx(|| format!("cannot set the time of {}", path.display()))
}

/// The second the index at `path` is dated from (its modification time).
pub(crate) fn written_second(path: &Path) -> Result<u32> {
    let modified = fs::metadata(path)
        .and_then(|m| m.modified())
        .ctx(|| format!("cannot read {}", path.display()))?;
    Ok(second_of(modified))
}

/// The second of `time`, as an index's stat data holds it.
pub(crate) fn second_of(time: SystemTime) -> u32 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as u32)
}

/// What [`distrusted`] changed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Distrusted {
    /// Entries whose size was set to 0.
    pub entries: usize,
    /// Directories and exclude files of the untracked cache whose times were set to 0.
    pub cached: usize,
    /// The untracked cache could not be read, and was dropped.
    pub cache_dropped: bool,
    /// Recent entries kept: their files match them to the nanosecond (see the module).
    pub verified: usize,
    /// The latest second a kept entry's modification time is in: a copy must be dated after it
    /// for git not to read those files again.
    pub verified_until: u32,
}

impl Distrusted {
    /// Whether the index's bytes stay as they were.
    fn changes_nothing(&self) -> bool {
        self.entries == 0 && self.cached == 0 && !self.cache_dropped
    }
}

/// Where the records of an index dated `dated` describe files (`tree`): what lets a recent
/// record be kept without reading its file (see the module).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Checked<'a> {
    pub tree: &'a Path,
    pub dated: SystemTime,
}

impl Checked<'_> {
    /// Whether the entry may be kept unread if its file still matches it: a file or a link
    /// noted with nanoseconds, changed before the index's date (the modification time not
    /// ahead of the change time, as only a put-back time is). The date is the file system's
    /// own (git's checkout) or already set back by the clock's slack ([`date_from`]): any
    /// change after it is dated later.
    fn may_keep(&self, entry: &EntryView<'_>) -> bool {
        let before = self.dated.duration_since(UNIX_EPOCH).unwrap_or_default();
        let before = (before.as_secs() as u32, before.subsec_nanos());
        let (ctime, mtime) = (
            (entry.stat(0), entry.stat(1)),
            (entry.stat(2), entry.stat(3)),
        );
        let plain = matches!(entry.mode() & 0o170000, 0o100000 | 0o120000);
        plain
            && entry.stage() == 0
            && ctime.1 != 0
            && mtime.1 != 0
            && mtime <= ctime
            && ctime < before
    }

    /// Which of `noted` (in the index's order) still match their files' stat data. A bind's
    /// checkout leaves thousands: a few threads share them in runs, each `lstat`ing a file by
    /// name beneath its directory's handle rather than walking the whole path again.
    fn still_matching(&self, noted: &[Noted]) -> Vec<bool> {
        let workers = match noted.len() {
            0..=1023 => 1,
            _ => std::thread::available_parallelism().map_or(2, |n| n.get().clamp(1, 4)),
        };
        let run = noted.len().div_ceil(workers).max(1);
        std::thread::scope(|scope| {
            let handles: Vec<_> = noted
                .chunks(run)
                .map(|part| scope.spawn(move || self.matching_run(part)))
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|_| vec![false; run]))
                .collect()
        })
    }

    /// [`Self::still_matching`] for one run of entries.
    fn matching_run(&self, noted: &[Noted]) -> Vec<bool> {
        use rustix::fs::{AtFlags, Mode, OFlags};
        let mut dir: Option<(&[u8], Option<rustix::fd::OwnedFd>)> = None;
        noted
            .iter()
            .map(|entry| {
                let (parent, name) = match entry.path.iter().rposition(|b| *b == b'/') {
                    Some(at) => (&entry.path[..at], &entry.path[at + 1..]),
                    None => (&entry.path[..0], &entry.path[..]),
                };
                if dir.as_ref().is_none_or(|(open, _)| *open != parent) {
                    let path = self.tree.join(OsStr::from_bytes(parent));
                    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
                    dir = Some((parent, rustix::fs::open(&path, flags, Mode::empty()).ok()));
                }
                let Some((_, Some(fd))) = &dir else {
                    return false;
                };
                rustix::fs::statat(fd, OsStr::from_bytes(name), AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|stat| StatData::of_stat(&stat).matches(&entry.stat))
            })
            .collect()
    }
}

/// A recent entry that may be kept unread: where it starts, its path and its stat data.
struct Noted {
    start: usize,
    path: Vec<u8>,
    stat: [u8; ENTRY_STAT],
}

#[cfg(test)]
/// Makes every record of the index at `path` changed in or after the second `since` fail the
/// next comparison (see the module). `None` when the file is not an index this reads (the
/// caller must then not keep it).
pub(crate) fn distrust_recent(path: &Path, since: u32) -> Result<Option<Distrusted>> {
    let bytes = fs::read(path).ctx(|| format!("cannot read {}", path.display()))?;
    let modified = fs::metadata(path)
        .and_then(|m| m.modified())
        .ctx(|| format!("cannot read {}", path.display()))?;
    let Some((bytes, done)) = distrusted(bytes, since, None) else {
        return Ok(None);
    };
    if done.changes_nothing() {
        return Ok(Some(done));
    }
    fs::write(path, &bytes).ctx(|| format!("cannot write {}", path.display()))?;
    File::options()
        .write(true)
        .open(path)
        .and_then(|file| file.set_modified(modified))
        .ctx(|| format!("cannot set the time of {}", path.display()))?;
    Ok(Some(done))
}

/// The index `bytes` with every record changed in or after the second `since` made to fail
/// the next comparison, but the entries `checked` finds unchanged, and what changed; `None`
/// when they are not an index this reads.
pub(crate) fn distrusted(
    mut bytes: Vec<u8>,
    since: u32,
    checked: Option<Checked<'_>>,
) -> Option<(Vec<u8>, Distrusted)> {
    let layout = [20, 32]
        .into_iter()
        .find_map(|hash_len| layout(&bytes, hash_len, since, checked))?;
    let done = layout.distrusted();
    if done.changes_nothing() {
        return Some((bytes, done));
    }
    for at in &layout.smudged {
        bytes[*at..*at + 4].fill(0);
    }
    // A stat data's change and modification seconds: no directory or file matches 0.
    for at in &layout.cached {
        bytes[*at..*at + 4].fill(0);
        bytes[*at + 8..*at + 12].fill(0);
    }
    Some((rewritten(bytes, &layout), done))
}

/// Where the parts of an index are, and what to change in it.
struct Layout {
    hash_len: usize,
    /// Where the size of each entry to smudge is.
    smudged: Vec<usize>,
    /// Where each stat data of the untracked cache to smudge starts.
    cached: Vec<usize>,
    /// The untracked cache's extension (header included), to leave out.
    dropped: Option<(usize, usize)>,
    /// How many recent entries were kept, and the latest second of their modification times.
    verified: (usize, u32),
}

impl Layout {
    fn distrusted(&self) -> Distrusted {
        Distrusted {
            entries: self.smudged.len(),
            cached: self.cached.len(),
            cache_dropped: self.dropped.is_some(),
            verified: self.verified.0,
            verified_until: self.verified.1,
        }
    }
}

/// Reads `bytes` as an index with `hash_len`-byte ids and finds the recent entries and the
/// untracked cache's recent stat data; `None` when the layout does not end exactly at the
/// trailer (nothing is changed before the layout is known).
fn layout(
    bytes: &[u8],
    hash_len: usize,
    since: u32,
    checked: Option<Checked<'_>>,
) -> Option<Layout> {
    let mut layout = Layout {
        hash_len,
        smudged: Vec::new(),
        cached: Vec::new(),
        dropped: None,
        verified: (0, 0),
    };
    let index = IndexFile::new(bytes, hash_len)?;
    // Read once for the layout alone: no file is looked at for a hash length that is wrong.
    index.walk(|_| true)?;
    let mut noted = Vec::new();
    let extensions = index.walk(|entry| {
        // Changed in or after the second (its ctime), and not smudged already.
        if entry.stat(0) >= since && entry.stat(9) != 0 {
            match checked.is_some_and(|checked| checked.may_keep(entry)) {
                true => noted.push(Noted {
                    start: entry.start,
                    path: entry.path.to_vec(),
                    stat: entry.stat_data().try_into().unwrap_or([0; ENTRY_STAT]),
                }),
                false => layout.smudged.push(entry.start + SIZE_AT),
            }
        }
        true
    })?;
    if let Some(checked) = checked {
        for (entry, kept) in noted.iter().zip(checked.still_matching(&noted)) {
            match kept {
                true => {
                    layout.verified.0 += 1;
                    layout.verified.1 = layout.verified.1.max(be32(&entry.stat, 8).unwrap_or(0));
                }
                false => layout.smudged.push(entry.start + SIZE_AT),
            }
        }
    }
    for ext in extensions.iter().filter(|e| e.signature == UNTRACKED) {
        let data_at = ext.start + 8;
        match cache_stats(ext.data, hash_len) {
            Some(stats) => layout.cached.extend(
                stats
                    .into_iter()
                    .filter(|&s| be32(bytes, data_at + s).is_some_and(|t| t >= since))
                    .map(|s| data_at + s),
            ),
            None => layout.dropped = Some((ext.start, ext.end())),
        }
    }
    Some(layout)
}

/// Where every stat data the untracked cache `data` notes starts (git's
/// `write_untracked_extension`): the exclude file's and `core.excludesFile`'s, then one per
/// directory marked valid, after the directory blocks and three EWAH bitmaps. `None` when
/// `data` is not laid out so.
fn cache_stats(data: &[u8], hash_len: usize) -> Option<Vec<usize>> {
    let varint = |at: &mut usize| -> Option<u64> {
        let (value, used) = decode_varint(data.get(*at..)?)?;
        *at += used;
        Some(value)
    };
    let mut at = 0;
    let ident = varint(&mut at)? as usize;
    at += ident;
    let mut stats = vec![at, at + CACHE_STAT];
    at += 2 * CACHE_STAT + 4 + 2 * hash_len;
    at += data.get(at..)?.iter().position(|b| *b == 0)? + 1;
    let blocks = varint(&mut at)?;
    if blocks == 0 {
        // No directory: the extension ends there.
        return (at == data.len()).then_some(stats);
    }
    // Each block: its untracked count, its child count, its name and its untracked names.
    let (mut read, mut pending) = (0u64, 1u64);
    while pending > 0 {
        let untracked = varint(&mut at)?;
        pending = pending - 1 + varint(&mut at)?;
        for _ in 0..=untracked {
            at += data.get(at..)?.iter().position(|b| *b == 0)? + 1;
        }
        read += 1;
    }
    let valid = ewah_ones(data, &mut at)?;
    ewah_ones(data, &mut at)?;
    let hashed = ewah_ones(data, &mut at)?;
    stats.extend((0..valid).map(|n| at + n * CACHE_STAT));
    at += valid * CACHE_STAT + hashed * hash_len;
    (read == blocks && at + 1 == data.len()).then_some(stats)
}

/// Reads one serialized EWAH bitmap at `at` (bit count, word count, the words, the position of
/// the last run word; big-endian) and counts its set bits.
fn ewah_ones(data: &[u8], at: &mut usize) -> Option<usize> {
    let words = be32(data, *at + 4)? as usize;
    let word = |n: usize| -> Option<u64> {
        let from = *at + 8 + n * 8;
        Some(u64::from_be_bytes(
            data.get(from..from + 8)?.try_into().ok()?,
        ))
    };
    let (mut ones, mut n) = (0usize, 0usize);
    while n < words {
        // A run word: bit 0 the run's bit, 32 bits of run length (in words), 31 bits counting
        // the literal words that follow it.
        let run = word(n)?;
        if run & 1 == 1 {
            ones += ((run >> 1) & 0xffff_ffff) as usize * 64;
        }
        let literals = (run >> 33) as usize;
        for k in 1..=literals {
            ones += word(n + k)?.count_ones() as usize;
        }
        n += 1 + literals;
    }
    *at += 8 + words * 8 + 4;
    (n == words).then_some(ones)
}

/// The index with the untracked cache left out where it was dropped, and its trailing hash
/// computed again (SHA-1 or SHA-256, as long as the ids), unless it is the null one.
fn rewritten(bytes: Vec<u8>, layout: &Layout) -> Vec<u8> {
    let body_end = bytes.len() - layout.hash_len;
    let null_trailer = bytes[body_end..].iter().all(|b| *b == 0);
    let mut body = match layout.dropped {
        Some((from, to)) => [&bytes[..from], &bytes[to..body_end]].concat(),
        None => bytes[..body_end].to_vec(),
    };
    let trailer = match (null_trailer, layout.hash_len) {
        (true, len) => vec![0; len],
        (false, 20) => sha1::Sha1::digest(&body).to_vec(),
        (false, _) => sha2::Sha256::digest(&body).to_vec(),
    };
    body.extend_from_slice(&trailer);
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    /// git in `dir`, isolated from the machine's configuration and files (no
    /// `core.excludesFile` default either); its stdout.
    fn git(dir: &Path, args: &[&str]) -> String {
        let out = isolated(dir).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    use crate::git::testing::isolated;

    /// A checkout whose index (of `version`, hashed or not) holds three files in two
    /// directories and an untracked cache noting an untracked file.
    fn checkout(format: &str, version: &str, skip_hash: bool) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q", &format!("--object-format={format}")]);
        git(dir, &["config", "index.version", version]);
        git(dir, &["config", "index.skipHash", &skip_hash.to_string()]);
        git(dir, &["config", "core.untrackedCache", "true"]);
        for (path, text) in [
            ("a.txt", "a\n"),
            ("d/b.txt", "bb\n"),
            ("d/e/c.txt", "ccc\n"),
        ] {
            fs::create_dir_all(dir.join(path).parent().unwrap()).unwrap();
            fs::write(dir.join(path), text).unwrap();
        }
        git(dir, &["add", "-A"]);
        fs::write(dir.join("d/untracked.txt"), "u\n").unwrap();
        git(
            dir,
            &[
                "-c",
                "status.showUntrackedFiles=all",
                "status",
                "--porcelain",
                "-uall",
            ],
        );
        assert!(holds_cache(&dir.join(".git/index")), "{format} v{version}");
        tmp
    }

    /// Whether the index at `path` (whose names do not hold the signature) has an untracked
    /// cache.
    fn holds_cache(path: &Path) -> bool {
        fs::read(path).unwrap().windows(4).any(|w| w == UNTRACKED)
    }

    /// The size each entry's stat data notes (`ls-files --debug`).
    fn noted_sizes(dir: &Path) -> Vec<u64> {
        git(dir, &["ls-files", "--debug"])
            .lines()
            .filter_map(|l| l.trim().strip_prefix("size: "))
            .map(|l| l.split_whitespace().next().unwrap().parse().unwrap())
            .collect()
    }

    /// How many directories `git status` opened, reading through the untracked cache.
    fn directories_opened(dir: &Path) -> usize {
        let trace = dir.join("../trace");
        let out = isolated(dir)
            .env("GIT_TRACE2_PERF", &trace)
            .env("GIT_OPTIONAL_LOCKS", "0")
            .args(["-c", "status.showUntrackedFiles=all", "status", "-uall"])
            .output()
            .unwrap();
        assert!(out.status.success());
        let text = fs::read_to_string(&trace).unwrap();
        fs::remove_file(&trace).unwrap();
        text.lines()
            .filter_map(|l| l.split("opendir:").nth(1))
            .map(|n| n.trim().parse::<usize>().unwrap())
            .sum()
    }

    #[test]
    fn recent_entries_and_directories_are_smudged_and_git_reads_the_result() {
        for (format, version, skip_hash) in [
            ("sha1", "2", false),
            ("sha1", "3", false),
            ("sha1", "4", true),
            ("sha256", "2", false),
            ("sha256", "4", false),
        ] {
            let case = format!("{format} v{version} skipHash={skip_hash}");
            let tmp = checkout(format, version, skip_hash);
            let (dir, index) = (tmp.path(), tmp.path().join(".git/index"));
            // Dated an hour ahead, the index's records are not racy for git: it trusts the
            // cache and opens no directory.
            let before = dated_ahead(&index);
            assert_eq!(directories_opened(dir), 0, "{case}: the cache is used");
            // Nothing is recent to a second far ahead: the file is left as it is.
            let bytes = fs::read(&index).unwrap();
            let none = distrust_recent(&index, u32::MAX).unwrap().unwrap();
            assert_eq!(none, Distrusted::default());
            assert_eq!(fs::read(&index).unwrap(), bytes);
            // Everything that exists is recent to the second 1.
            let all = distrust_recent(&index, 1).unwrap().unwrap();
            // git smudged those it noted in the second it wrote the index in already.
            assert!(all.entries <= 3, "{case}");
            // The three directories and `info/exclude`.
            assert_eq!(all.cached, 4, "{case}: {all:?}");
            assert!(!all.cache_dropped, "{case}");
            assert!(holds_cache(&index), "{case}");
            assert_eq!(noted_sizes(dir), vec![0, 0, 0], "{case}");
            assert_eq!(fs::metadata(&index).unwrap().modified().unwrap(), before);
            // git reads it (a wrong trailer is a corrupt index), reads each directory again,
            // finds no change, and keeps the untracked file.
            assert_eq!(directories_opened(dir), 3, "{case}");
            assert_eq!(
                git(dir, &["status", "--porcelain", "-uall"]),
                "A  a.txt\nA  d/b.txt\nA  d/e/c.txt\n?? d/untracked.txt\n",
                "{case}"
            );
        }
    }

    #[test]
    fn only_what_changed_in_or_after_the_second_is_distrusted() {
        let tmp = checkout("sha1", "2", false);
        let (dir, index) = (tmp.path(), tmp.path().join(".git/index"));
        // The entries and the cache's directories were noted just now: before the next
        // second, after five seconds ago.
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as u32;
        let done = distrust_recent(&index, now + 1).unwrap().unwrap();
        assert_eq!(done, Distrusted::default());
        let done = distrust_recent(&index, now.saturating_sub(5))
            .unwrap()
            .unwrap();
        // The three directories and `info/exclude` (`core.excludesFile` does not exist).
        assert_eq!(done.cached, 4, "{done:?}");
        assert_eq!(noted_sizes(dir), vec![0, 0, 0]);
        // What was smudged is not smudged again.
        let again = distrust_recent(&index, 1).unwrap().unwrap();
        assert_eq!(again, Distrusted::default());
    }

    /// Dates the index at `path` an hour ahead; that time.
    fn dated_ahead(path: &Path) -> SystemTime {
        let ahead = SystemTime::now() + Duration::from_secs(3600);
        let file = File::options().write(true).open(path).unwrap();
        file.set_modified(ahead).unwrap();
        ahead
    }

    /// A checkout whose index notes the real stat data of its three files (no entry smudged).
    fn noted_checkout() -> tempfile::TempDir {
        let tmp = checkout("sha1", "2", false);
        let (dir, index) = (tmp.path(), tmp.path().join(".git/index"));
        // Dated ahead, nothing is racy to git: the refresh notes every file and smudges none.
        dated_ahead(&index);
        git(dir, &["update-index", "--refresh"]);
        assert_eq!(noted_sizes(dir), vec![2, 3, 4]);
        tmp
    }

    /// What `distrusted` makes of the checkout's index, every record recent (second 0), with
    /// the index dated `dated`; the sizes git then reads.
    fn checked_at(dir: &Path, dated: SystemTime) -> Distrusted {
        let index = dir.join(".git/index");
        let checked = Checked { tree: dir, dated };
        let (bytes, done) = distrusted(fs::read(&index).unwrap(), 0, Some(checked)).unwrap();
        fs::write(&index, bytes).unwrap();
        done
    }

    #[test]
    fn recent_entries_whose_files_match_to_the_nanosecond_are_kept() {
        let tmp = noted_checkout();
        let dir = tmp.path();
        let done = checked_at(dir, SystemTime::now() + Duration::from_secs(1));
        assert_eq!((done.entries, done.verified), (0, 3), "{done:?}");
        assert_eq!(noted_sizes(dir), vec![2, 3, 4]);
        assert!(done.verified_until > 0);
    }

    #[test]
    fn a_recent_entry_changed_with_its_size_and_time_put_back_is_distrusted() {
        let tmp = noted_checkout();
        let dir = tmp.path();
        let file = dir.join("d/b.txt");
        let noted = fs::metadata(&file).unwrap().modified().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        fs::write(&file, "BB\n").unwrap();
        File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(noted)
            .unwrap();
        let done = checked_at(dir, SystemTime::now() + Duration::from_secs(1));
        assert_eq!((done.entries, done.verified), (1, 2), "{done:?}");
        assert_eq!(noted_sizes(dir), vec![2, 0, 4]);
        assert_eq!(git(dir, &["diff", "--name-only"]), "d/b.txt\n");
    }

    #[test]
    fn many_recent_entries_are_checked_in_runs_and_a_change_in_any_run_is_found() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q"]);
        // Enough entries for a few threads, each taking a run of whole and split directories.
        fs::write(dir.join("top.txt"), "top\n").unwrap();
        for d in 0..40 {
            fs::create_dir_all(dir.join(format!("d{d}/e"))).unwrap();
            for f in 0..40 {
                let sub = if f % 2 == 0 { "" } else { "e/" };
                let path = dir.join(format!("d{d}/{sub}f{f}.txt"));
                fs::write(path, format!("{d} {f}\n")).unwrap();
            }
        }
        git(dir, &["add", "-A"]);
        dated_ahead(&dir.join(".git/index"));
        git(dir, &["update-index", "--refresh"]);
        // In the first run, the middle, the last and at the top (no directory): files changed
        // with their size and time put back, and a file gone.
        let put_back = |path: &str, text: &str| {
            let file = dir.join(path);
            let noted = fs::metadata(&file).unwrap().modified().unwrap();
            fs::write(&file, text).unwrap();
            let file = File::options().write(true).open(&file).unwrap();
            file.set_modified(noted).unwrap();
        };
        std::thread::sleep(Duration::from_millis(20));
        put_back("d0/f0.txt", "0 X\n");
        fs::remove_file(dir.join("d20/e/f7.txt")).unwrap();
        put_back("d39/e/f39.txt", "39 3X\n");
        put_back("top.txt", "TOP\n");
        let done = checked_at(dir, SystemTime::now() + Duration::from_secs(1));
        assert_eq!((done.entries, done.verified), (4, 1597), "{done:?}");
        assert_eq!(
            git(dir, &["diff", "--name-only"]),
            "d0/f0.txt\nd20/e/f7.txt\nd39/e/f39.txt\ntop.txt\n"
        );
    }

    #[test]
    fn entries_changed_in_or_after_the_instant_of_the_date_or_without_nanoseconds_are_distrusted() {
        let tmp = noted_checkout();
        let dir = tmp.path();
        // Dated the instant the first file was changed: none was changed before it.
        use std::os::unix::fs::MetadataExt;
        let first = fs::metadata(dir.join("a.txt")).unwrap();
        let changed = UNIX_EPOCH + Duration::new(first.ctime() as u64, first.ctime_nsec() as u32);
        let done = checked_at(dir, changed);
        assert_eq!((done.entries, done.verified), (3, 0), "{done:?}");
        // A record without nanoseconds (a file system of whole seconds) is never kept.
        let tmp = noted_checkout();
        let (dir, index) = (tmp.path(), tmp.path().join(".git/index"));
        let mut bytes = fs::read(&index).unwrap();
        let first = 12;
        bytes[first + 4..first + 8].fill(0);
        fs::write(&index, &bytes).unwrap();
        let done = checked_at(dir, SystemTime::now() + Duration::from_secs(1));
        assert_eq!((done.entries, done.verified), (1, 2), "{done:?}");
        assert_eq!(noted_sizes(dir), vec![0, 3, 4]);
    }

    #[test]
    fn an_untracked_cache_that_cannot_be_read_is_dropped_and_git_reads_the_rest() {
        let tmp = checkout("sha1", "2", false);
        let (dir, index) = (tmp.path(), tmp.path().join(".git/index"));
        let mut bytes = fs::read(&index).unwrap();
        let at = bytes.windows(4).position(|w| w == UNTRACKED).unwrap();
        // The length of the cache's first string, made longer than the cache.
        bytes[at + 8] = 0x7f;
        fs::write(&index, &bytes).unwrap();
        let done = distrust_recent(&index, u32::MAX).unwrap().unwrap();
        assert!(done.cache_dropped, "{done:?}");
        assert!(!holds_cache(&index));
        assert_eq!(
            git(dir, &["status", "--porcelain", "-uall"]),
            "A  a.txt\nA  d/b.txt\nA  d/e/c.txt\n?? d/untracked.txt\n"
        );
    }

    #[test]
    fn a_file_that_is_not_an_index_is_not_read_as_one() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("index");
        for bytes in [
            &b""[..],
            b"DIRC",
            b"DIRC\0\0\0\x02\0\0\0\x05short",
            b"not an index at all",
        ] {
            fs::write(&path, bytes).unwrap();
            assert_eq!(distrust_recent(&path, 0).unwrap(), None, "{bytes:?}");
            assert_eq!(fs::read(&path).unwrap(), bytes);
        }
    }
}
