//! Copy-on-write binds on real copy-on-write file systems the tests make and mount (XFS with
//! reflinks, btrfs): the isolation is filled with clones of a pristine tree of the revision,
//! git finds it clean without reading a file, each session's bytes are its own whatever way
//! they are written, the pristine tree never changes, and one that did is rebuilt.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::fixture::{CowKind, Fixture, isolate, require_tool};

const KINDS: [CowKind; 2] = [CowKind::Xfs, CowKind::Btrfs];

/// The files of the source's second commit: nested, executable, a link, a larger file whose
/// blocks are worth sharing, and a name that is not UTF-8.
fn populate(fx: &Fixture) {
    for n in 0..40 {
        fx.write(
            &format!("deep/a/b/f{n}.txt"),
            &format!("file {n}\n").repeat(30),
        );
    }
    fx.write("big.bin", &"0123456789abcdef".repeat(64 * 1024));
    fx.write("run.sh", "#!/bin/sh\necho run\n");
    let run = fx.src.join("run.sh");
    std::fs::set_permissions(&run, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("deep/a/b/f1.txt", fx.src.join("link")).unwrap();
    std::fs::write(
        fx.src.join(OsStr::from_bytes(b"caf\xe9.txt")),
        "latin-1 name\n",
    )
    .unwrap();
    fx.commit_all("files of every kind");
}

fn cow_source(kind: CowKind) -> Option<Fixture> {
    let fx = Fixture::on_cow(kind)?;
    populate(&fx);
    Some(fx)
}

fn bind(fx: &Fixture, id: &str) -> (PathBuf, Value) {
    let doc = fx.bind(id);
    (PathBuf::from(doc["worktree"].as_str().unwrap()), doc)
}

/// Git in `dir` as the user runs it (no a3s-iso in between).
fn git_in(fx: &Fixture, dir: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir).args(args);
    isolate(&mut cmd, &fx.home);
    cmd.output().unwrap()
}

/// Git's stdout in the source, as bytes.
fn git_bytes(fx: &Fixture, args: &[&OsStr]) -> Vec<u8> {
    let mut cmd = Command::new("git");
    cmd.current_dir(&fx.src).args(args);
    isolate(&mut cmd, &fx.home);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    out.stdout
}

/// The bytes the revision holds at `path`.
fn committed(fx: &Fixture, path: &[u8]) -> Vec<u8> {
    let mut spec = b"HEAD:".to_vec();
    spec.extend_from_slice(path);
    git_bytes(
        fx,
        &[
            OsStr::new("cat-file"),
            OsStr::new("blob"),
            OsStr::from_bytes(&spec),
        ],
    )
}

/// Every tracked file of the revision, with its bytes (links: their target).
fn revision_files(fx: &Fixture) -> Vec<(Vec<u8>, Vec<u8>)> {
    let listed = git_bytes(fx, &[OsStr::new("ls-files"), OsStr::new("-z")]);
    listed
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| (p.to_vec(), committed(fx, p)))
        .collect()
}

/// Whether `tree` holds exactly the revision's bytes at every tracked path.
fn holds_revision(fx: &Fixture, tree: &Path) -> Result<(), String> {
    for (path, bytes) in revision_files(fx) {
        let at = tree.join(OsStr::from_bytes(&path));
        let meta = std::fs::symlink_metadata(&at).map_err(|e| format!("{}: {e}", at.display()))?;
        let found = if meta.file_type().is_symlink() {
            std::fs::read_link(&at).unwrap().into_os_string().into_vec()
        } else {
            std::fs::read(&at).unwrap()
        };
        if found != bytes {
            return Err(format!("{} differs", at.display()));
        }
    }
    Ok(())
}

use std::os::unix::ffi::OsStringExt;

/// The pristine tree of the source's HEAD.
fn pristine(fx: &Fixture) -> PathBuf {
    let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    fx.root
        .join("work/.src.a3s-isolate-.pristine")
        .join(head)
        .join("tree")
}

/// The paths of the isolation's tracked files that `git status` opened (git opens a tracked
/// file only to read its content: hashing it).
fn files_git_status_reads(fx: &Fixture, tree: &Path) -> Vec<String> {
    let trace = fx.root.join("status.strace");
    let mut cmd = Command::new("strace");
    cmd.current_dir(tree)
        .args(["-f", "-qq", "-e", "trace=open,openat", "-o"])
        .arg(&trace)
        .args(["git", "status", "--porcelain"]);
    isolate(&mut cmd, &fx.home);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "status not clean");
    let traced = std::fs::read_to_string(&trace).unwrap();
    let tracked = fx.git(tree, &["ls-files"]);
    tracked
        .lines()
        .filter(|path| {
            let quoted = format!("\"{path}\"");
            traced
                .lines()
                .any(|l| l.contains(&quoted) && !l.contains("O_DIRECTORY") && !l.contains("ENOENT"))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn a_cow_bind_clones_the_revision_and_git_finds_it_clean_without_reading_a_file() {
    if !require_tool("strace") {
        return;
    }
    for kind in KINDS {
        let Some(fx) = cow_source(kind) else { continue };
        let (tree, doc) = bind(&fx, "s1");
        assert_eq!(doc["fill"], "clone", "{kind:?}: {doc}");
        holds_revision(&fx, &tree).unwrap();
        holds_revision(&fx, &pristine(&fx)).unwrap();
        let exec = std::fs::metadata(tree.join("run.sh")).unwrap().mode();
        assert_ne!(exec & 0o111, 0, "{kind:?}: the executable bit is lost");
        // The index: the revision's entries, and no entry git would call racily clean.
        assert_eq!(
            fx.git(&tree, &["ls-files", "-s"]),
            fx.git(&fx.src, &["ls-files", "-s"])
        );
        let index = fx.git(&tree, &["rev-parse", "--git-path", "index"]);
        let index_mtime = std::fs::metadata(tree.join(&index)).unwrap().mtime();
        for (path, _) in revision_files(&fx) {
            let meta = std::fs::symlink_metadata(tree.join(OsStr::from_bytes(&path))).unwrap();
            assert!(meta.mtime() < index_mtime, "{kind:?}: racily clean entry");
        }
        assert!(
            git_in(&fx, &tree, &["diff-files", "--quiet"])
                .status
                .success()
        );
        assert_eq!(
            files_git_status_reads(&fx, &tree),
            Vec::<String>::new(),
            "{kind:?}"
        );
        // a3s-iso's own view agrees: nothing to capture.
        let (code, captured) = fx.json(&["capture", "-s", "s1"]);
        assert_eq!(code, 0, "{captured}");
        assert_eq!(captured["patch_bytes"], 0, "{kind:?}: {captured}");
    }
}

/// Writes in place every way a program does: append, truncate, a write through `mmap`, a
/// rewrite with `O_TRUNC`, a new file renamed over an old one, a same-size rewrite within the
/// second of the bind, a removal.
fn edit_every_way(tree: &Path) {
    use std::io::Write;
    let mut append = std::fs::OpenOptions::new()
        .append(true)
        .open(tree.join("deep/a/b/f1.txt"))
        .unwrap();
    append.write_all(b"appended\n").unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(tree.join("deep/a/b/f2.txt"))
        .unwrap()
        .set_len(5)
        .unwrap();
    let script = "import mmap,sys\nf=open(sys.argv[1],'r+b')\nm=mmap.mmap(f.fileno(),0)\nm[0:4]=b'MMAP'\nm.flush()\n";
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(tree.join("big.bin"))
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::write(tree.join("deep/a/b/f3.txt"), "rewritten with O_TRUNC\n").unwrap();
    std::fs::write(tree.join("renamed.tmp"), "renamed over\n").unwrap();
    std::fs::rename(tree.join("renamed.tmp"), tree.join("deep/a/b/f4.txt")).unwrap();
    // Same size, same second as the bind: only the modification time can tell.
    let same = std::fs::read(tree.join("deep/a/b/f5.txt")).unwrap();
    let flipped: Vec<u8> = same
        .iter()
        .map(|b| if *b == b'5' { b'X' } else { *b })
        .collect();
    std::fs::OpenOptions::new()
        .write(true)
        .open(tree.join("deep/a/b/f5.txt"))
        .unwrap()
        .write_all(&flipped)
        .unwrap();
    std::fs::remove_file(tree.join("deep/a/b/f6.txt")).unwrap();
}

/// The edits [`edit_every_way`] makes, as `git status --porcelain` lists them.
const EDITED: &[&str] = &[
    " M big.bin",
    " M deep/a/b/f1.txt",
    " M deep/a/b/f2.txt",
    " M deep/a/b/f3.txt",
    " M deep/a/b/f4.txt",
    " M deep/a/b/f5.txt",
    " D deep/a/b/f6.txt",
];

#[test]
fn each_cow_session_s_bytes_are_its_own_and_capture_and_promote_carry_them() {
    if !require_tool("python3") {
        return;
    }
    for kind in KINDS {
        let Some(fx) = cow_source(kind) else { continue };
        let (one, _) = bind(&fx, "one");
        let (two, doc) = bind(&fx, "two");
        assert_eq!(doc["fill"], "clone");
        edit_every_way(&one);
        let status = fx.git(&one, &["status", "--porcelain"]);
        assert_eq!(status.lines().collect::<Vec<_>>(), EDITED, "{kind:?}");
        // The other session and the pristine tree hold the revision, byte for byte.
        holds_revision(&fx, &two).unwrap();
        holds_revision(&fx, &pristine(&fx)).unwrap();
        assert_eq!(fx.git(&two, &["status", "--porcelain"]), "");
        let (code, captured) = fx.json(&["capture", "-s", "one"]);
        assert_eq!(code, 0, "{captured}");
        let (code, promoted) = fx.json(&["promote", "-s", "one"]);
        assert_eq!(code, 0, "{promoted}");
        assert_eq!(promoted["outcome"], "applied", "{promoted}");
        for path in [
            "deep/a/b/f1.txt",
            "deep/a/b/f2.txt",
            "deep/a/b/f3.txt",
            "deep/a/b/f4.txt",
        ] {
            assert_eq!(
                std::fs::read(fx.src.join(path)).unwrap(),
                std::fs::read(one.join(path)).unwrap(),
                "{kind:?}: {path}"
            );
        }
        assert_eq!(
            std::fs::read(fx.src.join("deep/a/b/f5.txt")).unwrap(),
            std::fs::read(one.join("deep/a/b/f5.txt")).unwrap()
        );
        assert!(
            std::fs::read(fx.src.join("big.bin"))
                .unwrap()
                .starts_with(b"MMAP")
        );
        assert!(!fx.src.join("deep/a/b/f6.txt").exists());
        holds_revision(&fx, &two).unwrap();
        holds_revision(&fx, &pristine(&fx)).unwrap();
    }
}

#[test]
fn a_pristine_tree_that_changed_is_rebuilt_before_a_bind_clones_it() {
    for kind in KINDS {
        let Some(fx) = cow_source(kind) else { continue };
        bind(&fx, "first");
        let file = pristine(&fx).join("deep/a/b/f7.txt");
        let dir = file.parent().unwrap().to_path_buf();
        let writable = std::os::unix::fs::PermissionsExt::from_mode(0o755);
        std::fs::set_permissions(&dir, writable).unwrap();
        let writable = std::os::unix::fs::PermissionsExt::from_mode(0o644);
        std::fs::set_permissions(&file, writable).unwrap();
        // Same size, so only the stat data the pristine's index records can tell.
        let before = std::fs::read(&file).unwrap();
        std::fs::write(&file, vec![b'!'; before.len()]).unwrap();
        let (tree, doc) = bind(&fx, "second");
        assert_eq!(doc["fill"], "clone", "{doc}");
        holds_revision(&fx, &tree).unwrap();
        holds_revision(&fx, &pristine(&fx)).unwrap();
        assert_eq!(fx.git(&tree, &["status", "--porcelain"]), "");
    }
}

#[test]
fn a_recycled_cow_tree_holds_nothing_of_its_last_session() {
    if !require_tool("python3") {
        return;
    }
    for kind in KINDS {
        let Some(fx) = cow_source(kind) else { continue };
        let (code, doc) = fx.json(&["pool", "--size", "1"]);
        assert_eq!(code, 0, "{doc}");
        let (one, doc) = bind(&fx, "one");
        assert_eq!(doc["warm"], true, "{doc}");
        assert_eq!(
            doc["fill"], "clone",
            "{kind:?}: the spare was cloned: {doc}"
        );
        edit_every_way(&one);
        let (code, doc) = fx.json(&["discard", "-s", "one"]);
        assert_eq!(code, 0, "{doc}");
        let (two, doc) = bind(&fx, "two");
        assert_eq!(doc["warm"], true, "{doc}");
        holds_revision(&fx, &two).unwrap();
        holds_revision(&fx, &pristine(&fx)).unwrap();
        assert_eq!(fx.git(&two, &["status", "--porcelain"]), "");
    }
}

#[test]
fn where_files_do_not_clone_bind_checks_out_as_before() {
    let fx = Fixture::in_memory();
    let doc = fx.bind("plain");
    assert_eq!(doc["fill"], "checkout", "{doc}");
    assert!(!fx.root.join("work/.src.a3s-isolate-.pristine").exists());
    let (code, shown) = fx.json(&["show", "-s", "plain"]);
    assert_eq!(code, 0, "{shown}");
    assert_eq!(shown["fill"], "checkout", "{shown}");
}

/// Overwrites the first `bytes` of a file in place.
fn overwrite_start(path: &Path, bytes: usize) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.write_all(&vec![b'w'; bytes]).unwrap();
    file.sync_all().unwrap();
}

fn session<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == id)
        .unwrap()
}

fn number(value: &Value) -> u64 {
    value
        .as_u64()
        .unwrap_or_else(|| panic!("not a number: {value}"))
}

#[test]
fn disk_use_counts_what_each_cow_session_holds_alone_and_gc_drops_unused_pristine_trees() {
    const WRITTEN: u64 = 256 * 1024;
    for kind in KINDS {
        let Some(fx) = cow_source(kind) else { continue };
        let (one, _) = bind(&fx, "one");
        bind(&fx, "two");
        overwrite_start(&one.join("big.bin"), WRITTEN as usize);
        let (code, listed) = fx.json(&["list", "--disk"]);
        assert_eq!(code, 0, "{listed}");
        let big = std::fs::metadata(fx.src.join("big.bin")).unwrap().len();
        for id in ["one", "two"] {
            let disk = &session(&listed, id)["disk"];
            assert!(
                number(&disk["apparent_bytes"]) >= big,
                "{kind:?} {id}: {disk}"
            );
            assert_eq!(session(&listed, id)["fill"], "clone");
        }
        let alone = |id: &str| number(&session(&listed, id)["disk"]["own_bytes"]);
        // The written blocks are the writer's alone; the rest is shared with the pristine.
        assert!(alone("one") >= WRITTEN, "{kind:?}: {listed}");
        assert!(alone("one") < big, "{kind:?}: {listed}");
        assert!(alone("two") < big / 4, "{kind:?}: {listed}");
        let total = &listed["disk"]["total"];
        let shared = number(&listed["disk"]["pristine"]["allocated_bytes"]);
        assert!(shared >= big, "{listed}");
        assert_eq!(
            number(&total["own_bytes"]),
            shared + alone("one") + alone("two")
        );
        let (code, shown) = fx.json(&["show", "-s", "one"]);
        assert_eq!(code, 0, "{shown}");
        assert!(number(&shown["disk"]["own_bytes"]) >= WRITTEN, "{shown}");
        // The pool's spares say what they cost too.
        let (code, status) = fx.json(&["pool", "--size", "1"]);
        assert_eq!(code, 0, "{status}");
        let (code, status) = fx.json(&["pool", "--status"]);
        assert_eq!(code, 0, "{status}");
        let spare = &status["spares"][0];
        assert_eq!(spare["fill"], "clone", "{status}");
        assert!(number(&spare["disk"]["own_bytes"]) < big / 4, "{status}");
        // In use, the pristine tree stays; once nothing is bound at its revision, gc drops it.
        let (code, kept) = fx.json(&["gc"]);
        assert_eq!(code, 0, "{kept}");
        let pristine_items = |doc: &Value, list: &str| -> Vec<String> {
            doc[list]
                .as_array()
                .unwrap()
                .iter()
                .filter(|i| i["kind"] == "pristine")
                .map(|i| i["reason"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(pristine_items(&kept, "kept"), ["in_use"], "{kept}");
        let root = pristine(&fx).parent().unwrap().to_path_buf();
        for id in ["one", "two"] {
            let (code, doc) = fx.json(&["discard", "-s", id]);
            assert_eq!(code, 0, "{doc}");
        }
        let (code, doc) = fx.json(&["pool", "--size", "0"]);
        assert_eq!(code, 0, "{doc}");
        let (code, removed) = fx.json(&["gc"]);
        assert_eq!(code, 0, "{removed}");
        assert_eq!(pristine_items(&removed, "removed"), ["unused"], "{removed}");
        assert!(
            !root.exists(),
            "{kind:?}: {} is still there",
            root.display()
        );
        // The next bind builds it again.
        let (tree, doc) = bind(&fx, "three");
        assert_eq!(doc["fill"], "clone");
        holds_revision(&fx, &tree).unwrap();
    }
}

#[cfg(feature = "fault-injection")]
#[test]
fn a_cow_bind_killed_anywhere_leaves_nothing_a_later_bind_clones_wrongly() {
    for kind in KINDS {
        let Some(fx) = cow_source(kind) else { continue };
        let points = [
            "pristine-after-checkout",
            "pristine-before-move",
            "clone-before-index",
        ];
        for (n, point) in points.iter().enumerate() {
            // A new revision each time, so that its pristine tree is built.
            fx.write("round.txt", &format!("{n}\n"));
            fx.commit_all("another round");
            crate::fixture::killed_at(&fx, point, &["bind", "-s", &format!("killed{n}")]);
            let (tree, doc) = bind(&fx, &format!("after{n}"));
            assert_eq!(doc["fill"], "clone", "{kind:?} {point}: {doc}");
            holds_revision(&fx, &tree).unwrap();
            holds_revision(&fx, &pristine(&fx)).unwrap();
            assert_eq!(fx.git(&tree, &["status", "--porcelain"]), "", "{point}");
        }
        // What the killed builds left is a dead process's: gc removes it, keeps the tree in use.
        let (code, gc) = fx.json(&["gc"]);
        assert_eq!(code, 0, "{gc}");
        let reasons: Vec<&str> = gc["removed"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["kind"] == "pristine")
            .map(|i| i["reason"].as_str().unwrap())
            .collect();
        assert_eq!(reasons, ["dead_maker", "dead_maker"], "{kind:?}: {gc}");
        let root = pristine(&fx)
            .parent()
            .unwrap()
            .parent()
            .unwrap()
            .to_path_buf();
        let mut left: Vec<String> = std::fs::read_dir(&root)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| !name.ends_with(".lock"))
            .collect();
        left.sort();
        let mut bound: Vec<String> = (0..points.len())
            .map(|n| {
                fx.json(&["show", "-s", &format!("after{n}")]).1["bound_revision"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        bound.sort();
        assert_eq!(left, bound, "{kind:?}");
    }
}

#[test]
fn cow_binds_started_together_share_one_pristine_tree_and_each_is_exact() {
    for kind in KINDS {
        let Some(fx) = cow_source(kind) else { continue };
        let children: Vec<_> = (0..4)
            .map(|n| {
                fx.cmd()
                    .args(["--json", "bind", "-s", &format!("c{n}")])
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let (code, doc) = crate::fixture::json_of(child.wait_with_output().unwrap());
            assert_eq!(code, 0, "{doc}");
            assert_eq!(doc["fill"], "clone", "{kind:?}: {doc}");
            let tree = PathBuf::from(doc["worktree"].as_str().unwrap());
            holds_revision(&fx, &tree).unwrap();
            assert_eq!(fx.git(&tree, &["status", "--porcelain"]), "");
        }
        let root = pristine(&fx)
            .parent()
            .unwrap()
            .parent()
            .unwrap()
            .to_path_buf();
        let trees = std::fs::read_dir(&root)
            .unwrap()
            .filter(|e| {
                !e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".lock")
            })
            .count();
        assert_eq!(
            trees, 1,
            "{kind:?}: one pristine tree, no build left behind"
        );
    }
}

#[test]
fn copied_ignored_files_are_clones_and_doctor_says_isolations_are() {
    for kind in KINDS {
        let Some(fx) = cow_source(kind) else { continue };
        fx.write(".gitignore", "node_modules/\n");
        fx.commit_all("ignore dependencies");
        for n in 0..20 {
            fx.write(
                &format!("node_modules/pkg{n}/index.js"),
                &"module.exports = 1;\n".repeat(500),
            );
        }
        let (code, doc) = fx.json(&["bind", "-s", "deps", "--copy-ignored", "node_modules/"]);
        assert_eq!(code, 0, "{doc}");
        assert_eq!(doc["copied_ignored"]["files"], 20, "{doc}");
        assert_eq!(doc["copied_ignored"]["cloned"], 20, "{kind:?}: {doc}");
        let tree = PathBuf::from(doc["worktree"].as_str().unwrap());
        assert_eq!(
            std::fs::read(tree.join("node_modules/pkg3/index.js")).unwrap(),
            std::fs::read(fx.src.join("node_modules/pkg3/index.js")).unwrap()
        );
        let (code, doctor) = fx.json(&["doctor"]);
        assert!(code == 0 || code == 1, "{doctor}");
        let reflink = doctor["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == "reflink")
            .unwrap_or_else(|| panic!("{doctor}"));
        assert_eq!(reflink["status"], "ok", "{reflink}");
        assert!(
            reflink["detail"].as_str().unwrap().contains("clones"),
            "{reflink}"
        );
    }
    let plain = Fixture::in_memory();
    let (_, doctor) = plain.json(&["doctor"]);
    let reflink = doctor["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "reflink")
        .unwrap_or_else(|| panic!("{doctor}"));
    assert!(
        reflink["detail"].as_str().unwrap().contains("checkouts"),
        "{reflink}"
    );
}

#[test]
fn a_sandboxed_run_writes_its_clones_but_never_the_pristine_tree() {
    if !require_tool("sandbox") {
        return;
    }
    for kind in KINDS {
        let Some(fx) = cow_source(kind) else { continue };
        let (tree, _) = bind(&fx, "agent");
        bind(&fx, "other");
        let target = pristine(&fx).join("README.md");
        let script = format!(
            "echo mine >> README.md; chmod u+w {p} 2>/dev/null; echo evil > {p} 2>/dev/null; \
             rm -f {p} 2>/dev/null; ln -sf /etc/passwd {p} 2>/dev/null; true",
            p = target.display()
        );
        let (code, doc) = fx.json(&["run", "-s", "agent", "--", "sh", "-c", &script]);
        assert_eq!(code, 0, "{kind:?}: {doc}");
        assert_eq!(
            std::fs::read(tree.join("README.md")).unwrap(),
            b"hello\nmine\n"
        );
        holds_revision(&fx, &pristine(&fx)).unwrap();
        holds_revision(&fx, &fx.isolation("other")).unwrap();
        // The pristine tree is still exact: the next bind clones it as it is.
        let (next, _) = bind(&fx, "next");
        holds_revision(&fx, &next).unwrap();
    }
}

#[test]
fn sweep_never_takes_a_pristine_tree_for_an_isolation() {
    let Some(fx) = cow_source(CowKind::Xfs) else {
        return;
    };
    let (tree, _) = bind(&fx, "gone");
    let root = pristine(&fx)
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let (code, doc) = fx.json(&["discard", "-s", "gone"]);
    assert_eq!(code, 0, "{doc}");
    assert!(!tree.exists());
    let (code, swept) = fx.json(&["sweep", "--grace", "0s"]);
    assert_eq!(code, 0, "{swept}");
    let text = swept.to_string();
    assert!(!text.contains(".pristine"), "sweep looked at it: {swept}");
    holds_revision(&fx, &pristine(&fx)).unwrap();
    assert!(root.is_dir());
}

#[test]
fn a_cow_bind_that_carries_work_in_progress_restores_it_over_the_clones() {
    let Some(fx) = cow_source(CowKind::Btrfs) else {
        return;
    };
    fx.write("deep/a/b/f1.txt", "work in progress\n");
    fx.write("untracked.txt", "new\n");
    let (code, doc) = fx.json(&["bind", "-s", "wip", "--carry-wip"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["fill"], "clone", "{doc}");
    assert_eq!(doc["carried_wip"], true, "{doc}");
    let tree = PathBuf::from(doc["worktree"].as_str().unwrap());
    assert_eq!(
        std::fs::read(tree.join("deep/a/b/f1.txt")).unwrap(),
        b"work in progress\n"
    );
    assert_eq!(std::fs::read(tree.join("untracked.txt")).unwrap(), b"new\n");
    let status = fx.git(&tree, &["status", "--porcelain"]);
    assert_eq!(status, " M deep/a/b/f1.txt\n?? untracked.txt", "{status}");
    holds_revision(&fx, &pristine(&fx)).unwrap();
    // Nothing of the session's own yet: the carried work is its base.
    let (code, captured) = fx.json(&["capture", "-s", "wip"]);
    assert_eq!(code, 0, "{captured}");
    assert_eq!(captured["patch_bytes"], 0, "{captured}");
}
