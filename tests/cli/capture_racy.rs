//! What the isolation holds is what is captured: edits that git's stat check could miss
//! (made in the same instant as an index was written), and edits an index flag would hide,
//! are all captured with the file's content.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::fixture::Fixture;
use base64::Engine;

fn captured_patch(fx: &Fixture, session: &str) -> String {
    let (code, doc) = fx.json(&["capture", "-s", session]);
    assert_eq!(code, 0, "{doc}");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(doc["patch_base64"].as_str().unwrap())
        .unwrap();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Sleeps until 20 ms after the next whole second: the file system's clock, a tick behind
/// the one read here, has then reached that second too.
pub(crate) fn to_second_boundary() {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    std::thread::sleep(Duration::from_nanos(
        1_020_000_000 - u64::from(now.subsec_nanos()),
    ));
}

#[test]
fn a_same_size_edit_right_after_bind_is_captured() {
    let fx = Fixture::new();
    for round in 0..5 {
        let id = format!("racy{round}");
        to_second_boundary();
        fx.bind(&id);
        let iso = fx.isolation(&id);
        // Same size as "hello\n", written at once.
        std::fs::write(iso.join("README.md"), format!("hell{round}\n")).unwrap();
        std::thread::sleep(Duration::from_millis(1100));
        let patch = captured_patch(&fx, &id);
        assert!(
            patch.contains(&format!("+hell{round}")),
            "round {round}: {patch}"
        );
    }
}

#[test]
fn a_file_staged_then_modified_is_captured_as_it_is_on_disk() {
    let fx = Fixture::new();
    for round in 0..5 {
        let id = format!("staged{round}");
        fx.bind(&id);
        let iso = fx.isolation(&id);
        std::fs::write(iso.join("f.txt"), "v1\n").unwrap();
        fx.git(&iso, &["add", "f.txt"]);
        std::fs::write(iso.join("f.txt"), "v2\n").unwrap();
        let patch = captured_patch(&fx, &id);
        assert!(patch.contains("+v2"), "round {round}: {patch}");
        assert!(!patch.contains("+v1"), "round {round}: {patch}");
    }
}

#[test]
fn index_flags_set_in_the_isolation_hide_nothing() {
    let fx = Fixture::new();
    fx.write("other.txt", "x\n");
    fx.commit_all("another file");
    fx.bind("flags");
    let iso = fx.isolation("flags");
    // A first capture, so that a3s-iso's own index of the isolation exists.
    captured_patch(&fx, "flags");
    std::fs::write(iso.join("README.md"), "hidden by assume-unchanged\n").unwrap();
    std::fs::write(iso.join("other.txt"), "hidden by skip-worktree\n").unwrap();
    fx.git(&iso, &["update-index", "--assume-unchanged", "README.md"]);
    fx.git(&iso, &["update-index", "--skip-worktree", "other.txt"]);
    assert_eq!(
        fx.git(&iso, &["status", "--porcelain"]),
        "",
        "git itself is fooled"
    );
    let patch = captured_patch(&fx, "flags");
    assert!(patch.contains("+hidden by assume-unchanged"), "{patch}");
    assert!(patch.contains("+hidden by skip-worktree"), "{patch}");
}

#[test]
fn a_forged_index_in_the_isolation_hides_nothing() {
    let fx = Fixture::new();
    fx.bind("forged");
    let iso = fx.isolation("forged");
    captured_patch(&fx, "forged");
    // Edit, then make the isolation's index claim the file is unchanged: refresh it with the
    // old content, then put the new content back with the old times.
    std::fs::write(iso.join("README.md"), "HELLO\n").unwrap();
    let before = std::fs::metadata(iso.join("README.md")).unwrap();
    std::fs::write(iso.join("README.md"), "hello\n").unwrap();
    fx.git(&iso, &["update-index", "--refresh"]);
    std::fs::write(iso.join("README.md"), "HELLO\n").unwrap();
    let file = std::fs::File::options()
        .write(true)
        .open(iso.join("README.md"))
        .unwrap();
    file.set_modified(before.modified().unwrap()).unwrap();
    let patch = captured_patch(&fx, "forged");
    assert!(patch.contains("+HELLO"), "{patch}");
}

#[test]
fn a_same_size_edit_with_its_time_put_back_in_the_second_of_the_last_capture_is_captured() {
    let fx = Fixture::new();
    fx.bind("again");
    let iso = fx.isolation("again");
    let file = iso.join("README.md");
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    let put_back = || {
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(old)
            .unwrap()
    };
    for round in 0..4 {
        // Two edits of the same size around a capture, in one second, each with the same old
        // time put back (as `tar` or `cp -p` leave it): only the change time tells them apart,
        // and only by less than a second.
        to_second_boundary();
        std::fs::write(&file, format!("one{round}\n")).unwrap();
        put_back();
        assert!(captured_patch(&fx, "again").contains(&format!("+one{round}")));
        std::fs::write(&file, format!("two{round}\n")).unwrap();
        put_back();
        let patch = captured_patch(&fx, "again");
        assert!(
            patch.contains(&format!("+two{round}")),
            "round {round}: {patch}"
        );
    }
}

/// A repository whose `A.txt` ("first") has thousands of files after it: a bind's checkout
/// writes it well before its index, so its record is one a snapshot may keep unread when the
/// file still matches it.
pub(crate) fn first_of_many_files() -> Fixture {
    let fx = Fixture::new();
    fx.write("A.txt", "first\n");
    for n in 0..3000 {
        fx.write(&format!("many/{n:04}.txt"), &format!("{n}\n"));
    }
    fx.commit_all("many files");
    fx
}

#[test]
fn a_same_size_edit_with_its_time_put_back_after_a_large_bind_is_captured() {
    let fx = first_of_many_files();
    for round in 0..3 {
        let id = format!("large{round}");
        fx.bind(&id);
        let file = fx.isolation(&id).join("A.txt");
        let noted = std::fs::metadata(&file).unwrap().modified().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        std::fs::write(&file, format!("edit{round}\n")).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(noted)
            .unwrap();
        let patch = captured_patch(&fx, &id);
        assert!(patch.contains(&format!("+edit{round}")), "{round}: {patch}");
        assert_eq!(patch.matches("diff --git").count(), 1, "{round}: {patch}");
    }
}
/// Same-size edits that keep every time a person can set, each of a record a snapshot could
/// keep unread: `README.md` replaced by a rename (a new inode), `b.txt` written through a
/// hard link from outside the isolation, `c.sh` made executable, `link` pointed elsewhere with
/// a target of the same length.
fn edit_keeping_times(iso: &std::path::Path, outside: &std::path::Path) {
    let noted = |rel: &str| std::fs::symlink_metadata(iso.join(rel)).unwrap();
    let put_back = |path: &std::path::Path, meta: &std::fs::Metadata| {
        let file = std::fs::File::options().write(true).open(path).unwrap();
        file.set_modified(meta.modified().unwrap()).unwrap();
    };
    let readme = noted("README.md");
    let fresh = iso.join("README.md.new");
    std::fs::write(&fresh, "HELLO\n").unwrap();
    put_back(&fresh, &readme);
    std::fs::rename(&fresh, iso.join("README.md")).unwrap();
    let b = noted("b.txt");
    let _ = std::fs::remove_file(outside);
    std::fs::hard_link(iso.join("b.txt"), outside).unwrap();
    std::fs::write(outside, "BBBB\n").unwrap();
    put_back(outside, &b);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::Permissions::from_mode(0o755);
    std::fs::set_permissions(iso.join("c.sh"), mode).unwrap();
    std::fs::remove_file(iso.join("link")).unwrap();
    std::os::unix::fs::symlink("bbbb", iso.join("link")).unwrap();
}

#[test]
fn replaced_linked_chmodded_and_retargeted_files_in_the_second_of_the_seed_are_captured() {
    let fx = Fixture::new();
    fx.write("b.txt", "bbbb\n");
    fx.write("c.sh", "echo c\n");
    std::os::unix::fs::symlink("aaaa", fx.src.join("link")).unwrap();
    fx.commit_all("files of every kind");
    let outside = fx.root.join("b-hard-link");
    // Edited right after the bind, and right after a first capture: in the second the seed is
    // dated in, later than the records it holds by more than the clock's slack.
    for (round, capture_first) in [false, true].into_iter().enumerate() {
        let id = format!("kept{round}");
        to_second_boundary();
        fx.bind(&id);
        if capture_first {
            assert_eq!(captured_patch(&fx, &id), "");
            std::thread::sleep(Duration::from_millis(100));
        }
        edit_keeping_times(&fx.isolation(&id), &outside);
        let patch = captured_patch(&fx, &id);
        for expected in [
            "+HELLO",
            "+BBBB",
            "diff --git a/c.sh b/c.sh\nold mode 100644\nnew mode 100755",
            "-aaaa\n\\ No newline at end of file\n+bbbb",
        ] {
            assert!(
                patch.contains(expected),
                "round {round}: {expected}: {patch}"
            );
        }
    }
}
