//! A snapshot reads again only the directories whose stat data moved since a3s-iso's own index
//! of the isolation noted them (git's untracked cache, kept in that index). These tests try to
//! make it miss something: files made, removed and renamed with their directories' times put
//! back, directories swapped for others, ignore rules changed in place, and random edits, each
//! compared with what `git add -A` stages on a fresh index.

use std::fs::{self, File, FileTimes};
use std::path::Path;

use crate::fixture::Fixture;

/// The tree a capture of `session` records (`result_tree`, without its prefix).
fn captured_tree(fx: &Fixture, session: &str) -> String {
    let (code, doc) = fx.json(&["capture", "-s", session]);
    assert_eq!(code, 0, "{doc}");
    doc["result_tree"]
        .as_str()
        .unwrap()
        .trim_start_matches("git-tree:")
        .to_string()
}

/// What `git add -A` stages in `iso` on an index made afresh from `tree` (a temporary index):
/// what a snapshot seeded with the index of the snapshot that wrote `tree` must give.
fn fresh_tree(fx: &Fixture, iso: &Path, tree: &str) -> String {
    let index = fx.root.join("fresh-index");
    let _ = fs::remove_file(&index);
    let cmd = |args: &[&str]| -> String {
        let mut git = std::process::Command::new("git");
        git.current_dir(iso)
            .args(args)
            .env("GIT_INDEX_FILE", &index);
        crate::fixture::isolate(&mut git, &fx.home);
        let out = git.output().unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    cmd(&["read-tree", tree]);
    cmd(&["add", "-A"]);
    cmd(&["write-tree"])
}

/// Captures `session` and checks the tree against [`fresh_tree`] from `last`; returns it.
fn capture_matches(fx: &Fixture, session: &str, iso: &Path, last: &str) -> String {
    let tree = captured_tree(fx, session);
    let fresh = fresh_tree(fx, iso, last);
    if tree != fresh {
        let differ = fx.git(iso, &["diff-tree", "-r", "--name-status", &tree, &fresh]);
        panic!("captured {tree}, add -A gives {fresh} (after {last}):\n{differ}");
    }
    tree
}

/// Runs `edit` on the directories `dirs` of `iso` and puts back their access and modification
/// times as they were before it.
fn with_times_kept(iso: &Path, dirs: &[&str], edit: impl FnOnce()) {
    let kept: Vec<_> = dirs
        .iter()
        .map(|dir| {
            let meta = fs::metadata(iso.join(dir)).unwrap();
            (dir, meta.accessed().unwrap(), meta.modified().unwrap())
        })
        .collect();
    edit();
    for (dir, accessed, modified) in kept {
        let times = FileTimes::new()
            .set_accessed(accessed)
            .set_modified(modified);
        // A directory the edit removed has no times to put back.
        if let Ok(dir) = File::open(iso.join(dir)) {
            dir.set_times(times).unwrap();
        }
    }
}

#[test]
fn files_made_removed_or_renamed_with_their_directories_times_put_back_are_captured() {
    let fx = Fixture::new();
    fx.write("deep/a/b/kept.txt", "kept\n");
    fx.write("deep/a/b/gone.txt", "gone\n");
    fx.commit_all("a deep tree");
    fx.bind("times");
    let iso = fx.isolation("times");
    // The first capture notes every directory in the cache; each edit below follows a capture
    // at once, in the same second, and leaves the directory's times as the cache noted them.
    let mut tree = captured_tree(&fx, "times");
    with_times_kept(&iso, &["."], || {
        fs::write(iso.join("new-top.txt"), "1\n").unwrap()
    });
    tree = capture_matches(&fx, "times", &iso, &tree);
    with_times_kept(&iso, &["deep/a/b"], || {
        fs::write(iso.join("deep/a/b/new-deep.txt"), "2\n").unwrap()
    });
    tree = capture_matches(&fx, "times", &iso, &tree);
    with_times_kept(&iso, &["deep/a/b"], || {
        fs::remove_file(iso.join("deep/a/b/gone.txt")).unwrap()
    });
    tree = capture_matches(&fx, "times", &iso, &tree);
    with_times_kept(&iso, &["deep/a/b"], || {
        fs::rename(
            iso.join("deep/a/b/new-deep.txt"),
            iso.join("deep/a/b/moved.txt"),
        )
        .unwrap()
    });
    tree = capture_matches(&fx, "times", &iso, &tree);
    // A new directory inside one the cache knows, both times put back.
    with_times_kept(&iso, &["deep/a"], || {
        fs::create_dir(iso.join("deep/a/c")).unwrap();
        fs::write(iso.join("deep/a/c/inner.txt"), "3\n").unwrap();
    });
    tree = capture_matches(&fx, "times", &iso, &tree);
    let listed = fx.git(&iso, &["ls-tree", "-r", "--name-only", &tree]);
    for path in ["new-top.txt", "deep/a/b/moved.txt", "deep/a/c/inner.txt"] {
        assert!(listed.lines().any(|l| l == path), "{path} in {listed}");
    }
    assert!(!listed.contains("gone.txt"), "{listed}");
    assert!(!listed.contains("new-deep.txt"), "{listed}");
}

#[test]
fn a_file_made_in_the_second_of_a_capture_that_read_its_directory_is_captured() {
    let fx = Fixture::new();
    fx.write("dir/kept.txt", "kept\n");
    fx.write(".gitignore", "*.log\n");
    fx.commit_all("a directory");
    fx.bind("second");
    let iso = fx.isolation("second");
    let mut tree = captured_tree(&fx, "second");
    for round in 0..3 {
        // An ignored file changes the directory but not the index, so the capture notes the
        // directory as read; a file made in the same second, with the directory's times put
        // back, differs from that note by the change time's fraction only.
        crate::capture_racy::to_second_boundary();
        with_times_kept(&iso, &["dir"], || {
            fs::write(iso.join(format!("dir/ignored{round}.log")), "1\n").unwrap()
        });
        tree = capture_matches(&fx, "second", &iso, &tree);
        with_times_kept(&iso, &["dir"], || {
            fs::write(iso.join(format!("dir/made{round}.txt")), "2\n").unwrap()
        });
        tree = capture_matches(&fx, "second", &iso, &tree);
        let listed = fx.git(&iso, &["ls-tree", "-r", "--name-only", &tree]);
        assert!(listed.contains(&format!("dir/made{round}.txt")), "{listed}");
    }
}

#[test]
fn a_directory_swapped_for_another_with_the_same_times_is_read_again() {
    let fx = Fixture::new();
    fx.write("swap/one.txt", "one\n");
    fx.commit_all("a directory");
    fx.bind("swap");
    let iso = fx.isolation("swap");
    fs::write(iso.join("swap/untracked.txt"), "u\n").unwrap();
    let tree = captured_tree(&fx, "swap");
    // Another directory with the same names but one more, put where the first was, given the
    // first one's times; the parent's times put back too.
    with_times_kept(&iso, &[".", "swap"], || {
        fs::create_dir(iso.join("swap.new")).unwrap();
        for name in ["one.txt", "untracked.txt", "extra.txt"] {
            fs::write(iso.join("swap.new").join(name), "x\n").unwrap();
        }
        fs::rename(iso.join("swap"), iso.join("swap.old")).unwrap();
        fs::rename(iso.join("swap.new"), iso.join("swap")).unwrap();
        fs::remove_dir_all(iso.join("swap.old")).unwrap();
    });
    let tree = capture_matches(&fx, "swap", &iso, &tree);
    let listed = fx.git(&iso, &["ls-tree", "-r", "--name-only", &tree]);
    assert!(listed.lines().any(|l| l == "swap/extra.txt"), "{listed}");
}

#[test]
fn ignore_rules_changed_in_place_are_obeyed_by_the_next_capture() {
    let fx = Fixture::new();
    fx.write(".gitignore", "*.log\n");
    fx.write("sub/.gitignore", "*.tmp\n");
    fx.commit_all("ignore rules");
    fx.bind("rules");
    let iso = fx.isolation("rules");
    fs::write(iso.join("a.log"), "log\n").unwrap();
    fs::write(iso.join("sub/b.tmp"), "tmp\n").unwrap();
    let tree = captured_tree(&fx, "rules");
    // A file the next rules ignore, made with its directory's times put back; then rules of
    // the same size, rewritten in place with their own and their directories' times put back.
    with_times_kept(&iso, &["sub"], || {
        fs::write(iso.join("sub/e.bak"), "bak\n").unwrap()
    });
    for (file, rules) in [(".gitignore", "*.bak\n"), ("sub/.gitignore", "*.log\n")] {
        let meta = fs::metadata(iso.join(file)).unwrap();
        let dir = Path::new(file).parent().unwrap().to_str().unwrap();
        let dir = if dir.is_empty() { "." } else { dir };
        with_times_kept(&iso, &[dir], || {
            fs::write(iso.join(file), rules).unwrap();
            File::options()
                .write(true)
                .open(iso.join(file))
                .unwrap()
                .set_modified(meta.modified().unwrap())
                .unwrap();
        });
    }
    let tree = capture_matches(&fx, "rules", &iso, &tree);
    let listed = fx.git(&iso, &["ls-tree", "-r", "--name-only", &tree]);
    assert!(listed.lines().any(|l| l == "a.log"), "{listed}");
    assert!(listed.lines().any(|l| l == "sub/b.tmp"), "{listed}");
    assert!(!listed.contains("e.bak"), "{listed}");
    // The repository's own exclude file, changed between two captures, over a file made with
    // its directory's times put back.
    with_times_kept(&iso, &["."], || {
        fs::write(iso.join("late.txt"), "late\n").unwrap()
    });
    let exclude = fx.src.join(".git/info/exclude");
    fs::create_dir_all(exclude.parent().unwrap()).unwrap();
    fs::write(&exclude, "late.txt\n").unwrap();
    let tree = capture_matches(&fx, "rules", &iso, &tree);
    let listed = fx.git(&iso, &["ls-tree", "-r", "--name-only", &tree]);
    assert!(!listed.contains("late.txt"), "{listed}");
}

/// A small deterministic generator (xorshift), so that a failing sequence can be replayed.
struct Steps(u64);

impl Steps {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Applies one random edit to `iso`: a file made, rewritten, removed or moved, a directory made
/// or removed, an ignore rule changed, a directory replaced by a file or a link, a file by a
/// directory; the directories' times are put back half of the time.
fn random_edit(iso: &Path, steps: &mut Steps, n: usize) {
    let dirs = ["", "d0", "d0/e", "d1", "d1/e/f"];
    let dir = dirs[steps.below(dirs.len())];
    let at = iso.join(dir);
    let keep = steps.below(2) == 0 && at.is_dir();
    let shown = if dir.is_empty() { "." } else { dir };
    let edit = || match steps_kind(n) {
        // (Where a file or a link took the directory's place, nothing is made.)
        0 if fs::create_dir_all(&at).is_ok() => {
            fs::write(at.join(format!("n{n}.txt")), format!("{n}\n")).unwrap();
        }
        1 => {
            if let Some(victim) = first_file(&at) {
                let _ = fs::remove_file(victim);
            }
        }
        2 => {
            if let Some(victim) = first_file(&at) {
                let _ = fs::rename(&victim, at.join(format!("m{n}.txt")));
            }
        }
        3 => {
            let _ = fs::create_dir_all(at.join(format!("x{n}")));
            let _ = fs::write(at.join(format!("x{n}/y.txt")), "y\n");
        }
        4 => {
            let _ = fs::write(at.join(".gitignore"), format!("n{}.txt\n", n / 2));
        }
        5 if !dir.is_empty() => {
            let _ = fs::remove_dir_all(&at);
        }
        // A directory replaced by a file of its name.
        6 if !dir.is_empty() => {
            let _ = fs::remove_dir_all(&at);
            let _ = fs::write(&at, format!("was a directory {n}\n"));
        }
        // A file replaced by a directory of its name.
        7 => {
            if let Some(victim) = first_file(&at) {
                let _ = fs::remove_file(&victim);
                let _ = fs::create_dir(&victim);
                let _ = fs::write(victim.join("inner.txt"), "inner\n");
            }
        }
        // A directory replaced by a link to another: what it held is reached through a link.
        8 if !dir.is_empty() => {
            let other = if dir.starts_with("d0") { "d1" } else { "d0" };
            let _ = fs::remove_dir_all(&at);
            let _ = fs::remove_file(&at);
            let _ = std::os::unix::fs::symlink(iso.join(other), &at);
        }
        _ => {}
    };
    if keep {
        with_times_kept(iso, &[shown], edit);
    } else {
        edit();
    }
}

fn steps_kind(n: usize) -> usize {
    (n * 7 + n / 3) % 9
}

fn first_file(dir: &Path) -> Option<std::path::PathBuf> {
    let mut names: Vec<_> = fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        // Not the isolation's `.git` file, nor an ignore rule.
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.path())
        .collect();
    names.sort();
    names.into_iter().next()
}

#[test]
fn random_edits_between_captures_give_what_add_all_gives_on_a_fresh_index() {
    let rounds: usize = std::env::var("A3S_ISO_UNTRACKED_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    let fx = Fixture::new();
    for path in ["d0/a.txt", "d0/e/b.txt", "d1/e/f/c.txt", "d1/d.txt"] {
        fx.write(path, "tracked\n");
    }
    fx.commit_all("directories");
    fx.bind("random");
    let iso = fx.isolation("random");
    let mut steps = Steps(0x9e37_79b9_7f4a_7c15);
    let mut tree = captured_tree(&fx, "random");
    for round in 0..rounds {
        for n in 0..1 + steps.below(3) {
            random_edit(&iso, &mut steps, round * 3 + n);
        }
        tree = capture_matches(&fx, "random", &iso, &tree);
    }
}

/// a3s-iso's own index of the isolation `id` (its seed, in the state dir).
fn seed_of(fx: &Fixture, id: &str) -> std::path::PathBuf {
    let seeds = fx.src.join(".git/a3s-iso/seeds");
    let name = format!("a3s-isolate-{id}.index");
    fs::read_dir(&seeds)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(&name))
        .unwrap_or_else(|| panic!("no seed {name} in {}", seeds.display()))
}

#[test]
fn a_directory_where_the_seed_index_goes_is_replaced_by_the_next_capture() {
    let fx = Fixture::new();
    fx.bind("seed");
    let iso = fx.isolation("seed");
    let tree = captured_tree(&fx, "seed");
    let seed = seed_of(&fx, "seed");
    fs::remove_file(&seed).unwrap();
    fs::create_dir_all(seed.join("inside")).unwrap();
    fs::write(seed.join("inside/file"), "x").unwrap();
    fs::write(iso.join("new.txt"), "new\n").unwrap();
    capture_matches(&fx, "seed", &iso, &tree);
    assert!(fs::symlink_metadata(&seed).unwrap().is_file());
}

#[test]
fn captures_while_a_command_makes_and_deletes_files_do_not_fail() {
    let fx = Fixture::new();
    fx.bind("churn");
    let iso = fx.isolation("churn");
    captured_tree(&fx, "churn");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, dir) = (stop.clone(), iso.join("tmp"));
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = fs::create_dir_all(&dir);
                let path = dir.join(format!("f{}", n % 7));
                let _ = fs::write(&path, n.to_string());
                if n.is_multiple_of(3) {
                    let _ = fs::remove_file(&path);
                }
                if n % 50 == 49 {
                    let _ = fs::remove_dir_all(&dir);
                }
                n += 1;
            }
        })
    };
    let (mut failed, mut last) = (Vec::new(), String::new());
    for _ in 0..25 {
        let (code, doc) = fx.json(&["capture", "-s", "churn"]);
        match doc["result_tree"].as_str() {
            Some(tree) if code == 0 => last = tree.trim_start_matches("git-tree:").to_string(),
            _ => failed.push(doc.to_string()),
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert!(
        failed.is_empty(),
        "{} failed: {:?}",
        failed.len(),
        failed.first()
    );
    // Once the command stopped, the next capture holds exactly what is there.
    capture_matches(&fx, "churn", &iso, &last);
}
