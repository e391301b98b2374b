//! How `rebase` moves an isolation's files: only the paths that differ between what the
//! isolation held and the rebased tree are written or removed, and its index changes only
//! where the new base differs, so every other entry keeps the stat data git noted (no file is
//! read again by the next `git status`). Checked against a plain worktree that git itself
//! checks out at the new base and the same work done by hand.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::fixture::{Fixture, iso_git, listing, outcome};

/// The source's first commit: files the session and the new base each change, a link, a
/// script, a file that becomes a directory, and enough others to tell stat data apart.
fn base_files(fx: &Fixture) {
    for n in 0..40 {
        fx.write(&format!("many/f{n}.txt"), &format!("file {n}\n"));
    }
    for rel in [
        "ours.txt",
        "theirs.txt",
        "gone-by-head.txt",
        "gone-by-session.txt",
        "becomes-dir",
        "deep/a/b/only.txt",
        "plain.sh",
        "target.txt",
    ] {
        fx.write(rel, &format!("{rel}\n"));
    }
    std::os::unix::fs::symlink("target.txt", fx.src.join("link")).unwrap();
    fx.commit_all("base");
}

/// The session's work, done the same way in `dir` (the isolation, or a plain worktree).
fn session_work(dir: &Path) {
    std::fs::write(dir.join("ours.txt"), "ours changed by the session\n").unwrap();
    std::fs::write(dir.join("notes.txt"), "untracked notes\n").unwrap();
    std::fs::remove_file(dir.join("gone-by-session.txt")).unwrap();
    let script = dir.join("plain.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::remove_file(dir.join("link")).unwrap();
    std::os::unix::fs::symlink("ours.txt", dir.join("link")).unwrap();
}

/// The new base: a change, a removal, a file that becomes a directory, a new deep file and
/// link, a directory emptied.
fn move_head(fx: &Fixture) -> String {
    fx.write("theirs.txt", "theirs changed on the new base\n");
    std::fs::remove_file(fx.src.join("gone-by-head.txt")).unwrap();
    std::fs::remove_file(fx.src.join("becomes-dir")).unwrap();
    fx.write("becomes-dir/inner.txt", "now a directory\n");
    fx.write("new/deep/file.txt", "added deep\n");
    std::fs::remove_dir_all(fx.src.join("deep")).unwrap();
    std::os::unix::fs::symlink("theirs.txt", fx.src.join("new/link")).unwrap();
    fx.commit_all("the new base")
}

/// A plain worktree that git itself checks out at `head`, beside the source.
fn raw_checkout(fx: &Fixture, head: &str) -> std::path::PathBuf {
    let raw = fx.root.join("work/raw");
    let at = raw.to_str().unwrap();
    fx.git(&fx.src, &["worktree", "add", "-q", "--detach", at, head]);
    raw
}

/// Rebases session `s` onto `head` and checks that its isolation then holds, byte for byte,
/// what git's own checkout of `head` holds with the session's `work` done on it; that checkout.
fn rebased_as_git_checks_out(fx: &Fixture, head: &str, work: impl Fn(&Path)) -> std::path::PathBuf {
    let done = fx.json(&["rebase", "-s", "s"]);
    assert_eq!(outcome(&done), (0, "rebased"), "{}", done.1);
    let raw = raw_checkout(fx, head);
    work(&raw);
    same_files(&fx.isolation("s"), &raw);
    raw
}

/// The isolation holds what the plain worktree holds, byte for byte (their `.git` aside).
fn same_files(iso: &Path, raw: &Path) {
    let (mut found, mut expected) = (listing(iso), listing(raw));
    found.remove(".git");
    expected.remove(".git");
    assert_eq!(
        found, expected,
        "the isolation holds the new base and the work"
    );
}

/// Only what the new base changed lost its stat data in the isolation's index (read before
/// any git refreshes it).
fn only_the_bases_changes_lost_their_stat_data(fx: &Fixture) {
    let unstated = unstated_entries(fx, "s");
    let moved = fx.git(&fx.src, &["diff", "--name-only", "HEAD^", "HEAD"]);
    assert!(
        !unstated.is_empty(),
        "the entries the new base changed are new"
    );
    for path in &unstated {
        assert!(
            moved.lines().any(|m| m == path),
            "{path} lost its stat data: {unstated:?}"
        );
    }
}

/// Paths whose index entry holds no stat data (git reads those files again).
fn unstated_entries(fx: &Fixture, id: &str) -> Vec<String> {
    let debug = iso_git(fx, id, &["ls-files", "--debug"]);
    let mut unstated = Vec::new();
    let mut path = String::new();
    for line in debug.lines() {
        if !line.starts_with(' ') {
            path = line.to_string();
        } else if line.trim() == "mtime: 0:0" {
            unstated.push(path.clone());
        }
    }
    unstated
}

#[test]
fn a_rebase_writes_exactly_the_moved_tree_and_keeps_the_stat_data_of_the_rest() {
    let fx = Fixture::new();
    base_files(&fx);
    fx.bind("s");
    let iso = fx.isolation("s");
    session_work(&iso);
    // Stat data noted before the rebase, in a second of its own.
    assert_eq!(
        iso_git(&fx, "s", &["status", "--porcelain"])
            .lines()
            .count(),
        5
    );
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let head = move_head(&fx);
    let done = fx.json(&["rebase", "-s", "s"]);
    assert_eq!(outcome(&done), (0, "rebased"), "{}", done.1);
    only_the_bases_changes_lost_their_stat_data(&fx);
    // The same work done by hand on a plain checkout of the new base.
    let raw = raw_checkout(&fx, &head);
    session_work(&raw);
    same_files(&iso, &raw);
    assert!(
        !iso.join("deep").exists(),
        "a directory the base emptied is gone"
    );
    assert_eq!(iso_git(&fx, "s", &["rev-parse", "HEAD"]), head);
    assert_eq!(
        iso_git(&fx, "s", &["status", "--porcelain"]),
        fx.git(&raw, &["status", "--porcelain"])
    );
    // The next capture sees exactly the session's work.
    let names = fx
        .cmd()
        .args(["diff", "-s", "s", "--name-only"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&names.stdout)
            .lines()
            .collect::<Vec<_>>(),
        [
            "gone-by-session.txt",
            "link",
            "notes.txt",
            "ours.txt",
            "plain.sh"
        ],
        "{names:?}"
    );
}

/// Rebased back and forth, the isolation ends where each move put it, byte for byte, and
/// `--abort` of a conflicting move puts back the very index file it found.
#[test]
fn rebases_back_and_forth_and_an_abort_leave_exact_trees() {
    let fx = Fixture::new();
    base_files(&fx);
    let old = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    fx.bind("s");
    let iso = fx.isolation("s");
    session_work(&iso);
    let before = listing(&iso);
    // A base that changes, adds and removes files (a file becoming a directory and back is
    // refused on the way back: see `rebase_sessions`).
    fx.write("theirs.txt", "theirs changed on the new base\n");
    std::fs::remove_file(fx.src.join("gone-by-head.txt")).unwrap();
    fx.write("new/deep/file.txt", "added deep\n");
    std::fs::remove_dir_all(fx.src.join("deep")).unwrap();
    let new = fx.commit_all("the new base");
    for (onto, expect_head) in [(&new, &new), (&old, &old), (&new, &new)] {
        let done = fx.json(&["rebase", "-s", "s", "--onto", onto]);
        assert_eq!(outcome(&done), (0, "rebased"), "{}", done.1);
        assert_eq!(&iso_git(&fx, "s", &["rev-parse", "HEAD"]), expect_head);
    }
    let back = fx.json(&["rebase", "-s", "s", "--onto", &old]);
    assert_eq!(outcome(&back), (0, "rebased"), "{}", back.1);
    assert_eq!(
        listing(&iso),
        before,
        "back on the old base, the files are as they were"
    );
    // A conflicting move, aborted: the index file and the tree as before, byte for byte.
    fx.write("ours.txt", "ours changed on the base too\n");
    fx.commit_all("a conflicting base");
    let index = std::fs::read(crate::fixture::admin_dir(&fx, "s").join("index")).unwrap();
    let conflicted = fx.json(&["rebase", "-s", "s"]);
    assert_eq!(outcome(&conflicted), (3, "conflicted"), "{}", conflicted.1);
    let aborted = fx.json(&["rebase", "-s", "s", "--abort"]);
    assert_eq!(outcome(&aborted), (0, "aborted"), "{}", aborted.1);
    assert_eq!(listing(&iso), before);
    let after = std::fs::read(crate::fixture::admin_dir(&fx, "s").join("index")).unwrap();
    assert_eq!(after, index, "the index file as it was");
}

/// An agent that swapped a directory of its isolation for a link to a directory outside (with
/// the same file in it), then left the new base to change that file: the rebase writes and
/// removes nothing outside the isolation, whatever it makes of the link.
#[test]
fn attack_a_link_in_place_of_a_directory_carries_no_write_outside() {
    let fx = Fixture::new();
    fx.write("dir/file.txt", "the file\n");
    fx.write("dir/other.txt", "another\n");
    fx.commit_all("a directory");
    fx.bind("s");
    let iso = fx.isolation("s");
    let outside = fx.root.join("work/outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("file.txt"), "the file\n").unwrap();
    std::fs::write(outside.join("other.txt"), "another\n").unwrap();
    let before = listing(&outside);
    std::fs::remove_dir_all(iso.join("dir")).unwrap();
    std::os::unix::fs::symlink(&outside, iso.join("dir")).unwrap();
    fx.write("dir/file.txt", "changed on the base\n");
    std::fs::remove_file(fx.src.join("dir/other.txt")).unwrap();
    fx.commit_all("the base changes the directory");
    let done = fx.json(&["rebase", "-s", "s"]);
    assert!(
        matches!(outcome(&done), (0, "rebased") | (3, "conflicted")),
        "{}",
        done.1
    );
    assert_eq!(
        listing(&outside),
        before,
        "nothing outside the isolation changed"
    );
    let link = std::fs::symlink_metadata(iso.join("dir")).unwrap();
    if link.file_type().is_symlink() {
        assert_eq!(std::fs::read_link(iso.join("dir")).unwrap(), outside);
    }
}

/// Names that are not UTF-8, in a repository whose indexes git splits: the new base changes
/// and adds such files beside the session's own, and the isolation ends as a plain worktree
/// of the new base with the same work, byte for byte.
#[test]
fn non_utf8_names_in_a_split_index_repository_move_byte_for_byte() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let fx = Fixture::new();
    fx.git(&fx.src, &["config", "core.splitIndex", "true"]);
    let name = |dir: &Path, bytes: &[u8]| dir.join(OsStr::from_bytes(bytes));
    std::fs::create_dir_all(name(&fx.src, b"d\xff")).unwrap();
    std::fs::write(name(&fx.src, b"d\xff/f\xfe.txt"), "base\n").unwrap();
    std::fs::write(name(&fx.src, b"ours\xfd.txt"), "ours\n").unwrap();
    fx.commit_all("names that are not UTF-8");
    fx.bind("s");
    let work = |dir: &Path| {
        std::fs::write(name(dir, b"ours\xfd.txt"), "ours by the session\n").unwrap();
        std::fs::write(name(dir, b"new\xfc.txt"), "untracked\n").unwrap();
    };
    work(&fx.isolation("s"));
    std::fs::write(name(&fx.src, b"d\xff/f\xfe.txt"), "changed by the base\n").unwrap();
    std::fs::write(name(&fx.src, b"d\xff/g\xfb.txt"), "added by the base\n").unwrap();
    let head = fx.commit_all("the new base");
    let raw = rebased_as_git_checks_out(&fx, &head, work);
    assert_eq!(
        iso_git(&fx, "s", &["status", "--porcelain"]),
        fx.git(&raw, &["status", "--porcelain"])
    );
}

/// The files a rebase writes are written as git checks them out, with the attributes of the
/// tree they move to: one the new base adds and one it leaves alone, and a file written before
/// the attributes file beside it that the same move changes.
#[test]
fn moved_files_are_written_with_the_target_trees_attributes() {
    let fx = Fixture::new();
    fx.write(".gitattributes", "*.txt text eol=crlf\n");
    fx.write("a.txt", "one\ntwo\n");
    fx.write("sub/.gitattributes", "*.md text eol=crlf\n");
    fx.write("sub/keep.md", "kept\n");
    fx.commit_all("attributes");
    fx.bind("s");
    let work = |dir: &Path| std::fs::write(dir.join("mine.bin"), "the session's\n").unwrap();
    work(&fx.isolation("s"));
    // Stat data noted a second before the rebase's snapshot: the files the move changes are
    // known unchanged by their stat data (their bytes differ from the blobs: eol=crlf).
    std::thread::sleep(std::time::Duration::from_millis(1100));
    fx.write("a.txt", "one\ntwo\nthree\n");
    fx.write(
        "sub/.gitattributes",
        "*.md text eol=crlf\n*.dat text eol=crlf\n",
    );
    fx.write(
        "sub/-early.dat",
        "written before the attributes beside it\n",
    );
    fx.write("sub/z.dat", "after\n");
    fx.write("sub/deep/new.txt", "deep\nnew\n");
    let head = fx.commit_all("the new base");
    rebased_as_git_checks_out(&fx, &head, work);
    let early = std::fs::read(fx.isolation("s").join("sub/-early.dat")).unwrap();
    assert_eq!(early, b"written before the attributes beside it\r\n");
    assert_eq!(iso_git(&fx, "s", &["status", "--porcelain"]), "?? mine.bin");
}

/// Two rebases in a row: each starts from the index as it finds it (the tree noted for the
/// index the first wrote is not trusted once git staged more), and the index ends holding
/// exactly the new base (the session's staged changes are carried as work, unstaged).
#[test]
fn a_second_rebase_starts_from_the_index_as_it_finds_it() {
    let fx = Fixture::new();
    base_files(&fx);
    fx.bind("s");
    let work = |dir: &Path| {
        std::fs::write(dir.join("ours.txt"), "staged by the session\n").unwrap();
        std::fs::write(dir.join("many/f3.txt"), "not staged\n").unwrap();
    };
    let iso = fx.isolation("s");
    work(&iso);
    iso_git(&fx, "s", &["add", "ours.txt"]);
    fx.write("theirs.txt", "the first new base\n");
    fx.commit_all("first");
    let done = fx.json(&["rebase", "-s", "s"]);
    assert_eq!(outcome(&done), (0, "rebased"), "{}", done.1);
    // Staged between the rebases: the index is git's again, no longer the one noted.
    iso_git(&fx, "s", &["add", "many/f3.txt"]);
    fx.write("many/f7.txt", "the second new base\n");
    std::fs::remove_file(fx.src.join("target.txt")).unwrap();
    let head = fx.commit_all("second");
    let done = fx.json(&["rebase", "-s", "s"]);
    assert_eq!(outcome(&done), (0, "rebased"), "{}", done.1);
    let raw = raw_checkout(&fx, &head);
    work(&raw);
    assert_eq!(
        iso_git(&fx, "s", &["write-tree"]),
        fx.git(&raw, &["write-tree"]),
        "the isolation's index holds the new base"
    );
    assert_eq!(
        iso_git(&fx, "s", &["status", "--porcelain"]),
        fx.git(&raw, &["status", "--porcelain"])
    );
}

/// In a sparse checkout (whose index the editor refuses: its entries outside the cone are
/// skip-worktree), a rebase moves what differs with the new base's bytes, keeps the session's
/// work, and leaves the index holding the new base with every file on disk as it says.
#[test]
fn a_sparse_checkouts_rebase_moves_what_differs_and_keeps_the_work() {
    let fx = Fixture::new();
    fx.write("src/a.txt", "a\n");
    fx.write("docs/d.txt", "d\n");
    fx.commit_all("two directories");
    fx.git(&fx.src, &["sparse-checkout", "set", "--cone", "src"]);
    fx.bind("s");
    let iso = fx.isolation("s");
    assert!(!iso.join("docs").exists(), "the isolation is sparse too");
    std::fs::write(iso.join("src/mine.txt"), "the session's\n").unwrap();
    fx.git(&fx.src, &["sparse-checkout", "disable"]);
    fx.write("src/a.txt", "a changed by the base\n");
    fx.write("docs/d.txt", "d changed by the base\n");
    let head = fx.commit_all("the new base");
    fx.git(&fx.src, &["sparse-checkout", "set", "--cone", "src"]);
    let done = fx.json(&["rebase", "-s", "s"]);
    assert_eq!(outcome(&done), (0, "rebased"), "{}", done.1);
    assert_eq!(iso_git(&fx, "s", &["rev-parse", "HEAD"]), head);
    assert_eq!(
        std::fs::read_to_string(iso.join("src/a.txt")).unwrap(),
        "a changed by the base\n"
    );
    // A path outside the cone the new base changed is written, not left skipped: the index
    // is written whole, without the sparse marks (the isolation's cone is not kept).
    assert_eq!(
        std::fs::read_to_string(iso.join("docs/d.txt")).unwrap(),
        "d changed by the base\n"
    );
    assert_eq!(
        iso_git(&fx, "s", &["status", "--porcelain"]),
        "?? src/mine.txt"
    );
    assert_eq!(
        iso_git(&fx, "s", &["write-tree"]),
        fx.git(&fx.src, &["rev-parse", "HEAD^{tree}"])
    );
}
