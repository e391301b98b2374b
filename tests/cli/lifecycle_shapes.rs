//! Repository shapes beyond the plain case: a source, an isolation and a state dir under
//! directories whose names are not UTF-8.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use serde_json::Value;

use crate::fixture::{Fixture, json_of, require_tool};

/// A path as a3s-iso writes it in JSON: a string, or `{"bytes_base64": …}` when not UTF-8.
fn json_path(value: &Value) -> PathBuf {
    use base64::Engine;
    match value {
        Value::String(text) => PathBuf::from(text),
        Value::Object(map) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(map["bytes_base64"].as_str().unwrap())
                .unwrap();
            PathBuf::from(OsStr::from_bytes(&bytes))
        }
        other => panic!("not a path: {other}"),
    }
}

/// bind, run (sandboxed), capture and promote with the source, its isolation and the state dir
/// all under a parent directory whose name is not UTF-8.
#[test]
fn the_lifecycle_under_a_non_utf8_parent_directory() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::bare_root();
    let parent = fx
        .root
        .join("work")
        .join(OsStr::from_bytes(b"proj-\xff\xfe"));
    let src = parent.join("src");
    std::fs::create_dir_all(&src).unwrap();
    fx.git(&src, &["init", "-q", "-b", "main"]);
    std::fs::write(src.join("README.md"), "hello\n").unwrap();
    fx.git(&src, &["add", "-A"]);
    fx.git(&src, &["commit", "-q", "-m", "initial"]);
    let state = parent.join(OsStr::from_bytes(b"state-\xff"));
    let a3s = |args: &[&str]| {
        let mut cmd = fx.cmd_in(&src);
        cmd.arg("--json").arg("--state-dir").arg(&state).args(args);
        json_of(cmd.output().unwrap())
    };

    let (code, bound) = a3s(&["bind", "-s", "nu"]);
    assert_eq!(code, 0, "{bound}");
    let iso = json_path(&bound["worktree"]);
    assert!(iso.starts_with(&parent), "{}", iso.display());
    assert_eq!(json_path(&bound["source"]), src);

    let (code, run) = a3s(&[
        "run",
        "-s",
        "nu",
        "--",
        "sh",
        "-c",
        "echo agent >> README.md; echo new > added.txt",
    ]);
    assert_eq!(code, 0, "{run}");
    assert_eq!(run["state"], "completed", "{run}");
    let (code, listed) = a3s(&["list"]);
    assert_eq!(code, 0, "{listed}");
    assert_eq!(json_path(&listed["sessions"][0]["worktree"]), iso);

    // `-o` takes its path as bytes too.
    let out = parent.join(OsStr::from_bytes(b"cs-\xff.json"));
    let mut cmd = fx.cmd_in(&src);
    cmd.arg("--json").arg("--state-dir").arg(&state);
    cmd.args(["capture", "-s", "nu", "-o"]).arg(&out);
    let (code, doc) = json_of(cmd.output().unwrap());
    assert_eq!(code, 0, "{doc}");
    assert!(
        out.is_file(),
        "the document is written under the non-UTF-8 name"
    );

    let (code, promoted) = a3s(&["promote", "-s", "nu"]);
    assert_eq!(code, 0, "{promoted}");
    assert_eq!(promoted["outcome"], "applied", "{promoted}");
    assert_eq!(
        std::fs::read(src.join("README.md")).unwrap(),
        b"hello\nagent\n"
    );
    assert_eq!(std::fs::read(src.join("added.txt")).unwrap(), b"new\n");

    let (code, discarded) = a3s(&["discard", "-s", "nu"]);
    assert_eq!(code, 0, "{discarded}");
    assert!(!iso.exists());

    // Carried WIP and branch mode there too.
    fx.git(&src, &["add", "-A"]);
    fx.git(&src, &["commit", "-q", "-m", "promoted"]);
    std::fs::write(src.join("wip.txt"), "the user's work\n").unwrap();
    let (code, bound) = a3s(&["bind", "-s", "br", "--carry-wip"]);
    assert_eq!(code, 0, "{bound}");
    let iso = json_path(&bound["worktree"]);
    std::fs::write(iso.join("agent.txt"), "agent\n").unwrap();
    let (code, promoted) = a3s(&["promote", "-s", "br", "--mode", "branch"]);
    assert_eq!(code, 0, "{promoted}");
    assert_eq!(promoted["outcome"], "applied", "{promoted}");
    assert_eq!(
        fx.git(&src, &["show", "--name-only", "--format=", "HEAD"]),
        "agent.txt"
    );
    assert_eq!(
        std::fs::read(src.join("wip.txt")).unwrap(),
        b"the user's work\n"
    );
    // Retained there: the new name keeps the bytes of the old one and gets a readable stamp.
    let (code, retained) = a3s(&["retain", "-s", "br", "--reason", "look"]);
    assert_eq!(code, 0, "{retained}");
    let moved = json_path(&retained["worktree"]);
    let (old, new) = (iso.as_os_str().as_bytes(), moved.as_os_str().as_bytes());
    assert!(new.starts_with(old), "{}", moved.display());
    let stamp = std::str::from_utf8(&new[old.len()..]).unwrap();
    assert!(
        regex::Regex::new(r"^\.retained-\d{8}-\d{6}$")
            .unwrap()
            .is_match(stamp),
        "{stamp}"
    );
    assert!(moved.join("agent.txt").is_file());
}
