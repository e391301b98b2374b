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

/// A source with one commit, and a state dir, under a parent directory whose name is not UTF-8.
struct NonUtf8<'a> {
    fx: &'a Fixture,
    parent: PathBuf,
    src: PathBuf,
    state: PathBuf,
}

impl NonUtf8<'_> {
    fn new(fx: &Fixture) -> NonUtf8<'_> {
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
        NonUtf8 {
            fx,
            parent,
            src,
            state,
        }
    }

    /// `a3s-iso --json --state-dir STATE ARGS` in the source.
    fn a3s(&self, args: &[&str]) -> (i32, Value) {
        let mut cmd = self.fx.cmd_in(&self.src);
        cmd.arg("--json")
            .arg("--state-dir")
            .arg(&self.state)
            .args(args);
        json_of(cmd.output().unwrap())
    }
}

/// Carried WIP and branch mode there too, and a retained isolation's new name keeps the bytes
/// of the old one with a readable stamp.
fn carried_wip_branch_mode_and_retain(w: &NonUtf8<'_>) {
    w.fx.git(&w.src, &["add", "-A"]);
    w.fx.git(&w.src, &["commit", "-q", "-m", "promoted"]);
    std::fs::write(w.src.join("wip.txt"), "the user's work\n").unwrap();
    let (code, bound) = w.a3s(&["bind", "-s", "br", "--carry-wip"]);
    assert_eq!(code, 0, "{bound}");
    let iso = json_path(&bound["worktree"]);
    std::fs::write(iso.join("agent.txt"), "agent\n").unwrap();
    let (code, promoted) = w.a3s(&["promote", "-s", "br", "--mode", "branch"]);
    assert_eq!(code, 0, "{promoted}");
    assert_eq!(promoted["outcome"], "applied", "{promoted}");
    assert_eq!(
        w.fx.git(&w.src, &["show", "--name-only", "--format=", "HEAD"]),
        "agent.txt"
    );
    assert_eq!(
        std::fs::read(w.src.join("wip.txt")).unwrap(),
        b"the user's work\n"
    );
    // Retained there: the new name keeps the bytes of the old one and gets a readable stamp.
    let (code, retained) = w.a3s(&["retain", "-s", "br", "--reason", "look"]);
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

/// bind, run (sandboxed), capture and promote with the source, its isolation and the state dir
/// all under a parent directory whose name is not UTF-8.
#[test]
fn the_lifecycle_under_a_non_utf8_parent_directory() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::bare_root();
    let w = NonUtf8::new(&fx);
    let (code, bound) = w.a3s(&["bind", "-s", "nu"]);
    assert_eq!(code, 0, "{bound}");
    let iso = json_path(&bound["worktree"]);
    assert!(iso.starts_with(&w.parent), "{}", iso.display());
    assert_eq!(json_path(&bound["source"]), w.src);

    let (code, run) = w.a3s(&[
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
    let (code, listed) = w.a3s(&["list"]);
    assert_eq!(code, 0, "{listed}");
    assert_eq!(json_path(&listed["sessions"][0]["worktree"]), iso);

    // `-o` takes its path as bytes too.
    let out = w.parent.join(OsStr::from_bytes(b"cs-\xff.json"));
    let mut cmd = w.fx.cmd_in(&w.src);
    cmd.arg("--json").arg("--state-dir").arg(&w.state);
    cmd.args(["capture", "-s", "nu", "-o"]).arg(&out);
    let (code, doc) = json_of(cmd.output().unwrap());
    assert_eq!(code, 0, "{doc}");
    assert!(
        out.is_file(),
        "the document is written under the non-UTF-8 name"
    );

    let (code, promoted) = w.a3s(&["promote", "-s", "nu"]);
    assert_eq!(code, 0, "{promoted}");
    assert_eq!(promoted["outcome"], "applied", "{promoted}");
    assert_eq!(
        std::fs::read(w.src.join("README.md")).unwrap(),
        b"hello\nagent\n"
    );
    assert_eq!(std::fs::read(w.src.join("added.txt")).unwrap(), b"new\n");

    let (code, discarded) = w.a3s(&["discard", "-s", "nu"]);
    assert_eq!(code, 0, "{discarded}");
    assert!(!iso.exists());

    carried_wip_branch_mode_and_retain(&w);
}
