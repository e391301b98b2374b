//! `.worktreeinclude`: the ignored files of the source it names come into every new isolation
//! (exactly: content, mode, link target), the pool keeps them through recycling, and no link
//! in the source makes bind copy anything from outside it. `--copy-ignored` and
//! `--keep-ignored` take the same gitignore patterns.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::{Value, json};

use crate::fixture::{Fixture, error_code, listing, snapshot_settings};

/// A source that ignores `.env`, `node_modules/`, `build/` and `*.log`, with a committed
/// `.worktreeinclude` naming `.env`, `node_modules/` and `notes.txt` (which is not ignored),
/// and in its working tree: `.env` (0600), a `node_modules/` tree with nested files, an
/// executable and a link, ignored files nothing names, and `notes.txt`.
fn source() -> Fixture {
    let fx = Fixture::new();
    fx.write(".gitignore", ".env\nnode_modules/\nbuild/\n*.log\n");
    fx.write(
        ".worktreeinclude",
        "# local settings and dependencies\n.env\nnode_modules/\n\nnotes.txt\n",
    );
    fx.commit_all("ignore local files; name the ones worktrees need");
    fx.write(".env", "API_KEY=secret\n");
    chmod(&fx.src.join(".env"), 0o600);
    fx.write("node_modules/pkg/index.js", "module.exports = 1;\n");
    fx.write(
        "node_modules/pkg/lib/deep/util.js",
        "exports.deep = true;\n",
    );
    fx.write("node_modules/.bin/tool", "#!/bin/sh\necho tool\n");
    chmod(&fx.src.join("node_modules/.bin/tool"), 0o755);
    std::os::unix::fs::symlink("../pkg/index.js", fx.src.join("node_modules/.bin/pkg")).unwrap();
    fx.write("build/out.o", "object\n");
    fx.write("debug.log", "log\n");
    fx.write("notes.txt", "untracked, not ignored\n");
    fx
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The files and links of `dir` under `.env` and `node_modules/` (kind, mode, content or
/// link target).
fn included(dir: &Path) -> BTreeMap<String, String> {
    listing(dir)
        .into_iter()
        .filter(|(path, entry)| {
            (path == ".env" || path.starts_with("node_modules/")) && !entry.starts_with("dir")
        })
        .collect()
}

/// `bind -s ID --allow-dirty` (the untracked `notes.txt` is a local change), which must
/// succeed.
fn bind(fx: &Fixture, id: &str) -> Value {
    let (code, doc) = fx.json(&["bind", "-s", id, "--allow-dirty"]);
    assert_eq!(code, 0, "{doc}");
    doc
}

fn copied(doc: &Value) -> &Value {
    &doc["copied_ignored"]
}

#[test]
fn worktreeinclude_copies_the_ignored_files_it_names_exactly() {
    let fx = source();
    let doc = bind(&fx, "env");
    let tree = fx.isolation("env");
    assert_eq!(included(&tree), included(&fx.src));
    assert_eq!(included(&tree).len(), 5, "{:#?}", included(&tree));
    assert_eq!(
        std::fs::read_link(tree.join("node_modules/.bin/pkg")).unwrap(),
        Path::new("../pkg/index.js")
    );
    assert_eq!(
        std::fs::metadata(tree.join(".env"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    let report = copied(&doc);
    // Sizes are filtered in snapshots: checked here.
    assert_eq!(report["bytes"], 15 + 20 + 21 + 20, "{doc}");
    snapshot_settings(&fx).bind(|| {
        insta::assert_json_snapshot!(report, @r#"
        {
          "bytes": "[BYTES]",
          "cloned": 0,
          "files": 5,
          "skipped": 0,
          "sources": [
            {
              "files": 5,
              "from": "worktreeinclude"
            }
          ]
        }
        "#)
    });
    // Not named, or named but not ignored: not copied.
    for absent in ["build", "debug.log", "notes.txt"] {
        assert!(!tree.join(absent).exists(), "{absent}");
    }
    // The tracked files are the commit's; git sees only the ignored copies.
    assert_eq!(
        std::fs::read_to_string(tree.join(".worktreeinclude")).unwrap(),
        std::fs::read_to_string(fx.src.join(".worktreeinclude")).unwrap()
    );
    assert_eq!(
        fx.git(&tree, &["status", "--porcelain", "--ignored"]),
        "!! .env\n!! node_modules/"
    );
    // A change in the copy does not reach the source.
    std::fs::write(tree.join("node_modules/pkg/index.js"), "changed\n").unwrap();
    assert_eq!(
        std::fs::read_to_string(fx.src.join("node_modules/pkg/index.js")).unwrap(),
        "module.exports = 1;\n"
    );
}

#[test]
fn worktreeinclude_files_are_kept_through_the_pool_and_stay_the_sources() {
    let fx = source();
    let (code, pool) = fx.json(&["pool", "--size", "1", "--no-fill"]);
    assert_eq!(code, 0, "{pool}");
    assert_eq!(
        pool["worktreeinclude"],
        json!([".env", "node_modules/", "notes.txt"])
    );
    let first = bind(&fx, "first");
    assert_eq!(copied(&first)["files"], 5, "{first}");
    let inode =
        |path: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(path).unwrap());
    let cached = inode(
        &fx.isolation("first")
            .join("node_modules/pkg/lib/deep/util.js"),
    );
    let (code, doc) = fx.json(&["discard", "-s", "first"]);
    assert_eq!((code, &doc["recycled"]), (0, &Value::Bool(true)), "{doc}");

    // Kept through recycling: the next bind takes the spare and finds them, the same files.
    // Only `.env` is copied again: the cleaning gave the kept copy the mode git gives a file,
    // and the source's is 0600.
    let second = bind(&fx, "second");
    assert_eq!(second["warm"], true, "{second}");
    let tree = fx.isolation("second");
    assert_eq!(included(&tree), included(&fx.src));
    assert_eq!(
        inode(&tree.join("node_modules/pkg/lib/deep/util.js")),
        cached
    );
    assert_eq!(copied(&second)["files"], 1, "{second}");
    assert_eq!(copied(&second)["skipped"], 4, "{second}");
    assert_eq!(
        fx.git(&tree, &["status", "--porcelain", "--ignored"]),
        "!! .env\n!! node_modules/"
    );

    // What the session changes in them is the source's again at the next bind; a matched
    // path no ignore rule ignores, and anything else untracked, is not kept.
    std::fs::write(tree.join(".env"), "API_KEY=stolen\n").unwrap();
    std::fs::write(tree.join("node_modules/pkg/extra.js"), "cache\n").unwrap();
    std::fs::write(tree.join("notes.txt"), "session's\n").unwrap();
    std::fs::write(tree.join("other.txt"), "session's\n").unwrap();
    let (code, doc) = fx.json(&["discard", "-s", "second"]);
    assert_eq!((code, &doc["recycled"]), (0, &Value::Bool(true)), "{doc}");
    let third = bind(&fx, "third");
    assert_eq!(third["warm"], true, "{third}");
    let tree = fx.isolation("third");
    assert_eq!(copied(&third)["files"], 1, "{third}");
    assert_eq!(
        std::fs::read_to_string(tree.join(".env")).unwrap(),
        "API_KEY=secret\n"
    );
    assert!(!tree.join("notes.txt").exists() && !tree.join("other.txt").exists());
    // A kept cache keeps what the session added to it.
    assert_eq!(
        std::fs::read_to_string(tree.join("node_modules/pkg/extra.js")).unwrap(),
        "cache\n"
    );
    let mut expected = included(&fx.src);
    expected.extend(
        included(&tree)
            .into_iter()
            .filter(|(path, _)| path == "node_modules/pkg/extra.js"),
    );
    assert_eq!(included(&tree), expected);
}

#[test]
fn worktreeinclude_never_follows_a_link_out_of_the_source() {
    let fx = source();
    let outside = fx.root.join("work/outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "outside secret\n").unwrap();
    std::fs::write(fx.root.join("work/top-secret.txt"), "outside secret\n").unwrap();
    // A link to a file outside, inside a named directory; a named link to a directory
    // outside; patterns that try to climb out.
    std::os::unix::fs::symlink(
        outside.join("secret.txt"),
        fx.src.join("node_modules/secret"),
    )
    .unwrap();
    std::os::unix::fs::symlink(&outside, fx.src.join("vendor-cache")).unwrap();
    fx.write(".git/info/exclude", "vendor-cache\n");
    fx.write(
        ".worktreeinclude",
        ".env\nnode_modules/\nvendor-cache\nvendor-cache/\nvendor-cache/**\n../top-secret.txt\n\
         /../outside/*\n**/secret.txt\n",
    );
    fx.commit_all("name more");
    fx.write(".env", "API_KEY=secret\n");
    let doc = bind(&fx, "links");
    let tree = fx.isolation("links");
    assert_eq!(
        std::fs::read_link(tree.join("node_modules/secret")).unwrap(),
        outside.join("secret.txt")
    );
    assert_eq!(
        std::fs::read_link(tree.join("vendor-cache")).unwrap(),
        outside
    );
    // Every file in the isolation is the commit's or the source's own: none holds the secret.
    for (path, entry) in listing(&tree) {
        if entry.starts_with("file") {
            let bytes = std::fs::read(tree.join(&path)).unwrap();
            assert!(
                !bytes.starts_with(b"outside secret"),
                "{path} came from outside"
            );
        }
    }
    assert!(!tree.join("top-secret.txt").exists());
    assert_eq!(copied(&doc)["files"], 7, "{doc}");
    // The file outside is as it was.
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
        "outside secret\n"
    );
}

#[test]
fn worktreeinclude_that_is_a_link_is_not_read() {
    let fx = Fixture::new();
    fx.write(".gitignore", ".env\n");
    fx.commit_all("ignore .env");
    std::fs::write(fx.root.join("work/patterns"), "*\n").unwrap();
    std::os::unix::fs::symlink(
        fx.root.join("work/patterns"),
        fx.src.join(".worktreeinclude"),
    )
    .unwrap();
    fx.write(".git/info/exclude", ".worktreeinclude\n");
    fx.write(".env", "API_KEY=secret\n");
    let doc = bind(&fx, "linked");
    assert_eq!(copied(&doc), &Value::Null, "{doc}");
    assert!(!fx.isolation("linked").join(".env").exists());
    let warnings = doc["warnings"].to_string();
    assert!(warnings.contains("symbolic link"), "{doc}");
}

#[test]
fn worktreeinclude_and_copy_ignored_take_gitignore_patterns() {
    let fx = source();
    fx.write("build/sub/lib.o", "lib\n");
    fx.write("build/keep.txt", "text\n");
    // The pathspec a user passed before (`./build`) still names the top-level `build/`;
    // `*.o` is a pattern of names.
    let (code, doc) = fx.json(&[
        "bind",
        "-s",
        "both",
        "--allow-dirty",
        "--copy-ignored",
        "./build",
        "debug.log",
    ]);
    assert_eq!(code, 0, "{doc}");
    let report = copied(&doc);
    assert_eq!(
        report["sources"],
        json!([
            {"from": "worktreeinclude", "files": 5},
            {"from": "copy_ignored", "files": 4}
        ]),
        "{doc}"
    );
    let tree = fx.isolation("both");
    for path in [
        "build/out.o",
        "build/sub/lib.o",
        "build/keep.txt",
        "debug.log",
    ] {
        assert!(tree.join(path).is_file(), "{path}");
    }
    let (code, doc) = fx.json(&[
        "bind",
        "-s",
        "objects",
        "--allow-dirty",
        "--copy-ignored",
        "*.o",
    ]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(copied(&doc)["sources"][1]["files"], 2, "{doc}");
    assert!(!fx.isolation("objects").join("build/keep.txt").exists());
    // Pathspec magic is refused before anything is built.
    let (code, doc) = fx.json(&[
        "bind",
        "-s",
        "magic",
        "--allow-dirty",
        "--copy-ignored",
        ":(glob)**/*.o",
    ]);
    assert_eq!((code, error_code(&doc)), (2, "usage"), "{doc}");
    assert!(!fx.isolation("magic").exists());
    let (code, doc) = fx.json(&["pool", "--size", "0", "--keep-ignored", "./build", "."]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["keep_ignored"], json!(["/build", "*"]), "{doc}");
}
