//! `discard --all`: a report per session, `-q` that quiets, and with `--purge` and `gc --all`
//! nothing of a3s-iso left but the lock file.

use std::path::Path;

use crate::fixture::{Fixture, checkout_listing};

/// Every file and directory under `dir`, relative, sorted (links not followed).
fn tree_names(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(at) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            out.push(path.strip_prefix(dir).unwrap().display().to_string());
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn discard_all_purge_then_gc_all_leaves_only_the_lock_file_and_says_nothing_with_q() {
    let fx = Fixture::new();
    for id in ["a", "b", "c"] {
        fx.bind(id);
        std::fs::write(fx.isolation(id).join(format!("{id}.txt")), "work\n").unwrap();
    }
    let (code, doc) = fx.json(&["run", "-s", "b", "--no-sandbox", "--", "true"]);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = fx.json(&["promote", "-s", "c"]);
    assert_eq!(code, 0, "{doc}");
    fx.json(&["discard", "-s", "a"]);
    let before = checkout_listing(&fx.src);
    let git_dir = fx.src.join(".git");
    let git_before: Vec<String> = tree_names(&git_dir)
        .into_iter()
        .filter(|n| !n.starts_with("a3s-iso") && !n.starts_with("worktrees"))
        .filter(|n| !n.starts_with("refs") && !n.starts_with("logs") && !n.starts_with("objects"))
        .collect();

    let out = fx
        .cmd()
        .args(["-q", "discard", "--all", "--purge"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "",
        "discard -q says nothing"
    );
    let out = fx.cmd().args(["-q", "gc", "--all"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "",
        "gc -q says nothing"
    );

    // The checkout is as it was (c's landing included), and of a3s-iso only the lock is left.
    assert_eq!(checkout_listing(&fx.src), before);
    let ours: Vec<String> = tree_names(&git_dir)
        .into_iter()
        .filter(|n| n.contains("a3s-iso"))
        .collect();
    assert_eq!(ours, ["a3s-iso.lock"], "{ours:?}");
    assert_eq!(
        fx.git(
            &fx.src,
            &["for-each-ref", "refs/a3s-iso/", "refs/heads/a3s-iso/"]
        ),
        ""
    );
    assert_eq!(fx.worktrees().len(), 1, "{:?}", fx.worktrees());
    for id in ["a", "b", "c"] {
        assert!(!fx.isolation(id).exists(), "{id}");
    }
    let git_after: Vec<String> = tree_names(&git_dir)
        .into_iter()
        .filter(|n| !n.starts_with("a3s-iso") && !n.starts_with("worktrees"))
        .filter(|n| !n.starts_with("refs") && !n.starts_with("logs") && !n.starts_with("objects"))
        .collect();
    assert_eq!(git_after, git_before);
    assert_eq!(
        tree_names(&fx.home.join(".local/share/a3s-iso/sources")),
        Vec::<String>::new()
    );
}

#[test]
fn discard_all_reports_each_session_and_refuses_a_named_one_too() {
    let fx = Fixture::new();
    fx.bind("one");
    fx.bind("two");
    let (code, doc) = fx.json(&["discard", "--all"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["schema"], "a3s-iso.discard-all.v1");
    let ids: Vec<&str> = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["one", "two"]);
    assert!(
        doc["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["removed"] == true)
    );
    assert_eq!(doc["failed"], serde_json::json!([]));
    // Nothing left to discard: an empty report, not an error.
    let (code, doc) = fx.json(&["discard", "--all"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["sessions"], serde_json::json!([]));
    // Naming a session as well is a usage error.
    let out = fx
        .cmd()
        .args(["discard", "--all", "-s", "one"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
