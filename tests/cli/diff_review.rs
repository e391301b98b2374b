//! `diff` and `show`: reviewing a session before promoting it, without changing anything.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::fixture::{
    Fixture, checkout_listing, error_code, listing, snapshot_settings, snapshot_settings_naming,
};

/// Everything `diff` and `show` must leave as it was: the state dir, the source as a user
/// sees it, the isolation, and the repository's refs.
fn everything(fx: &Fixture, iso: &Path) -> (BTreeMap<String, String>, String) {
    let mut all = BTreeMap::new();
    for (tag, part) in [
        ("state", listing(&fx.src.join(".git/a3s-iso"))),
        ("source", checkout_listing(&fx.src)),
        ("isolation", listing(iso)),
    ] {
        all.extend(part.into_iter().map(|(k, v)| (format!("{tag}/{k}"), v)));
    }
    // A rewrite with the same bytes is still a write: the state dir's times count too.
    let mut stack = vec![fx.src.join(".git/a3s-iso")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let meta = entry.metadata().unwrap();
            let when = meta.modified().unwrap();
            all.insert(
                format!("mtime/{}", entry.path().display()),
                format!("{when:?}"),
            );
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    (all, fx.git(&fx.src, &["for-each-ref"]))
}

fn stdout(fx: &Fixture, args: &[&str]) -> Vec<u8> {
    let out = fx.cmd().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The `change.patch` that `promote --no-apply` writes for the session now.
fn planned_patch(fx: &Fixture, id: &str) -> (String, Vec<u8>) {
    let (code, doc) = fx.json(&["promote", "-s", id, "--no-apply"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "planned", "{doc}");
    let dir = PathBuf::from(doc["artifacts"].as_str().unwrap());
    let digest = doc["digest"].as_str().unwrap().to_string();
    (digest, std::fs::read(dir.join("change.patch")).unwrap())
}

fn file<'a>(doc: &'a Value, path: &str) -> &'a Value {
    doc["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("{path} in {doc}"))
}

/// A modification, an addition, a deletion, binary data and a file (`link`) that becomes a
/// link.
fn edit(iso: &Path) {
    std::fs::write(iso.join("src/lib.txt"), "one\nTWO\nthree\n").unwrap();
    std::fs::write(iso.join("new.txt"), "a\nb\n").unwrap();
    std::fs::remove_file(iso.join("README.md")).unwrap();
    std::fs::write(iso.join("blob.bin"), [0u8, 1, 2, 255]).unwrap();
    std::fs::remove_file(iso.join("link")).unwrap();
    std::os::unix::fs::symlink("new.txt", iso.join("link")).unwrap();
}

/// `diff`'s document of the isolation `edit` made: every kind of change, by path.
fn the_diff_document_snapshot(fx: &Fixture, doc: &Value) {
    snapshot_settings(fx).bind(|| {
        insta::assert_json_snapshot!(doc, @r#"
        {
          "digest": "sha256:[HASH]",
          "files": [
            {
              "additions": 0,
              "binary": false,
              "deletions": 1,
              "path": "README.md",
              "status": "deleted"
            },
            {
              "additions": 0,
              "binary": true,
              "deletions": 0,
              "path": "blob.bin",
              "status": "added"
            },
            {
              "additions": 1,
              "binary": false,
              "deletions": 1,
              "path": "link",
              "status": "type_changed"
            },
            {
              "additions": 2,
              "binary": false,
              "deletions": 0,
              "path": "new.txt",
              "status": "added"
            },
            {
              "additions": 2,
              "binary": false,
              "deletions": 1,
              "path": "src/lib.txt",
              "status": "modified"
            }
          ],
          "from_tree": "git-tree:[HASH]",
          "head_moved": false,
          "nested_change_sets": [],
          "patch_bytes": "[PATCH_BYTES]",
          "schema": "a3s-iso.diff.v1",
          "scope": "since_promote",
          "session_id": "r",
          "to_tree": "git-tree:[HASH]",
          "warnings": []
        }
        "#)
    });
}

/// Coloured when asked: the same lines, each wrapped in its colour.
fn coloured_diff_is_the_same_lines(fx: &Fixture, patch: &[u8]) {
    let painted = stdout(fx, &["--color", "always", "diff", "-s", "r"]);
    let text = String::from_utf8_lossy(&painted);
    assert!(text.contains("\x1b[32m+TWO\x1b[m\n"), "{text}");
    assert!(text.contains("\x1b[31m-two\x1b[m\n"), "{text}");
    let plain = text.replace("\x1b[32m", "").replace("\x1b[31m", "");
    let plain = plain
        .replace("\x1b[36m", "")
        .replace("\x1b[1m", "")
        .replace("\x1b[m", "");
    assert_eq!(plain, String::from_utf8_lossy(patch));
}

#[test]
fn diff_prints_what_promote_would_write_and_changes_nothing() {
    let fx = Fixture::new();
    fx.write("link", "a file for now\n");
    fx.commit_all("a file that becomes a link");
    fx.bind("r");
    let iso = fx.isolation("r");
    edit(&iso);
    // A file in the isolation's seed (so that a snapshot has written one) before looking.
    let (code, doc) = fx.json(&["capture", "-s", "r"]);
    assert_eq!(code, 0, "{doc}");

    let before = everything(&fx, &iso);
    let patch = stdout(&fx, &["diff", "-s", "r"]);
    let stat = String::from_utf8(stdout(&fx, &["diff", "-s", "r", "--stat"])).unwrap();
    let names = String::from_utf8(stdout(&fx, &["diff", "-s", "r", "--name-only"])).unwrap();
    let (code, doc) = fx.json(&["diff", "-s", "r"]);
    assert_eq!(code, 0, "{doc}");
    let (code, show) = fx.json(&["show", "-s", "r"]);
    assert_eq!(code, 0, "{show}");
    assert_eq!(everything(&fx, &iso), before, "diff and show only read");

    assert_eq!(
        names, "README.md\nblob.bin\nlink\nnew.txt\nsrc/lib.txt\n",
        "--name-only"
    );
    for name in ["README.md", "blob.bin", "link", "new.txt", "src/lib.txt"] {
        assert!(stat.contains(&format!(" {name} ")), "{name} in {stat}");
    }
    assert!(stat.contains("5 files changed"), "{stat}");

    // The patch's size depends on the object format: checked here, filtered in the snapshot.
    assert_eq!(doc["patch_bytes"], patch.len() as u64);
    the_diff_document_snapshot(&fx, &doc);

    coloured_diff_is_the_same_lines(&fx, &patch);

    let (digest, planned) = planned_patch(&fx, "r");
    assert_eq!(patch, planned, "diff prints exactly promote's patch");
    assert_eq!(doc["digest"], digest.as_str());
    // The planned change set, again from its artifacts.
    assert_eq!(stdout(&fx, &["diff", "--digest", &digest]), planned);
}

#[test]
fn diff_after_a_promoted_step_is_the_next_step() {
    let fx = Fixture::new();
    fx.bind("s");
    let iso = fx.isolation("s");
    std::fs::write(iso.join("README.md"), "hello\nstep one\n").unwrap();
    let (code, first) = fx.json(&["promote", "-s", "s"]);
    assert_eq!(
        (code, first["outcome"].as_str()),
        (0, Some("applied")),
        "{first}"
    );
    // Right after a step there is nothing new to promote.
    assert!(stdout(&fx, &["diff", "-s", "s"]).is_empty());

    std::fs::write(iso.join("README.md"), "hello\nstep one\nstep two\n").unwrap();
    std::fs::write(iso.join("notes.txt"), "new\n").unwrap();
    let before = everything(&fx, &iso);
    let step = stdout(&fx, &["diff", "-s", "s"]);
    let explicit = stdout(&fx, &["diff", "-s", "s", "--since-promote"]);
    let cumulative = stdout(&fx, &["diff", "-s", "s", "--cumulative"]);
    let (_, doc) = fx.json(&["diff", "-s", "s"]);
    assert_eq!(everything(&fx, &iso), before, "diff only reads");
    assert_eq!(step, explicit);
    let (_, planned) = planned_patch(&fx, "s");
    assert_eq!(step, planned, "the delta since the promoted step");
    let text = String::from_utf8(step).unwrap();
    assert!(
        text.contains("+step two") && !text.contains("+step one"),
        "{text}"
    );
    let whole = String::from_utf8(cumulative).unwrap();
    assert!(
        whole.contains("+step one") && whole.contains("+step two"),
        "{whole}"
    );
    assert_eq!(file(&doc, "README.md")["additions"], 1, "{doc}");
    assert_eq!(file(&doc, "notes.txt")["status"], "added", "{doc}");
    assert_eq!(doc["head_moved"], false, "{doc}");

    // The source moves on: promote would refuse, and diff says so.
    fx.write("other.txt", "user\n");
    fx.commit_all("the user's own commit");
    let out = fx.cmd().args(["diff", "-s", "s"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("head_moved"));
    let (_, moved) = fx.json(&["diff", "-s", "s"]);
    assert_eq!(moved["head_moved"], true, "{moved}");

    // A promoted step from its artifacts, and a document's patch.
    let promoted = stdout(
        &fx,
        &["diff", "--digest", first["digest"].as_str().unwrap()],
    );
    assert!(String::from_utf8(promoted).unwrap().contains("+step one"));
    let doc_path = fx.root.join("cs.json");
    let out = fx
        .cmd()
        .args(["capture", "-s", "s", "-o"])
        .arg(&doc_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = stdout(&fx, &["diff", "--change-set", doc_path.to_str().unwrap()]);
    assert_eq!(shown, whole.as_bytes(), "a capture is cumulative");
}

#[test]
fn diff_refuses_what_it_cannot_show() {
    let fx = Fixture::new();
    fx.bind("e");
    let missing = format!("sha256:{}", "ab".repeat(32));
    let (code, doc) = fx.json(&["diff", "--digest", &missing]);
    assert_eq!(error_code(&doc), "change_set_unavailable", "{doc}");
    assert_ne!(code, 0);
    let (code, doc) = fx.json(&["diff", "--digest", "sha256:nothex"]);
    assert_eq!((code, error_code(&doc)), (2, "usage"), "{doc}");
    let bad = fx.root.join("bad.json");
    std::fs::write(&bad, "{}").unwrap();
    let (code, doc) = fx.json(&["diff", "--change-set", bad.to_str().unwrap()]);
    assert_eq!((code, error_code(&doc)), (5, "change_set_invalid"), "{doc}");
    // A change to an artifact is noticed, not shown.
    let iso = fx.isolation("e");
    std::fs::write(iso.join("README.md"), "changed\n").unwrap();
    let (digest, _) = planned_patch(&fx, "e");
    let hex = digest.strip_prefix("sha256:").unwrap();
    let artifact = fx
        .src
        .join(".git/a3s-iso/artifacts")
        .join(hex)
        .join("change.patch");
    std::fs::write(&artifact, "tampered\n").unwrap();
    let (_, doc) = fx.json(&["diff", "--digest", &digest]);
    assert_eq!(error_code(&doc), "change_set_unavailable", "{doc}");
}

/// `show`'s document of a session with one capture and one promote, its digests named.
fn the_show_document_snapshot(fx: &Fixture, doc: &Value, named: &[(&str, &str)]) {
    snapshot_settings_naming(fx, named).bind(|| {
        insta::assert_json_snapshot!(doc, @r#"
        {
          "base_tree": "git-tree:[HASH]",
          "bound_revision": "[HASH]",
          "carried_wip": false,
          "conflicting_paths": [],
          "created_at_ms": "[MS]",
          "disk": {
            "allocated_bytes": "[BYTES]",
            "apparent_bytes": "[BYTES]",
            "files": 3,
            "own_bytes": "[BYTES]"
          },
          "files_changed": 1,
          "files_to_promote": 0,
          "fill": "[FILL]",
          "git": {
            "branches": [],
            "head_branch": null,
            "stash_entries": 0,
            "tags": []
          },
          "head_moved": false,
          "interrupted": [],
          "live_run": null,
          "owner": {
            "hostname": "[HOST]",
            "liveness": "alive",
            "name": "[NAME]",
            "pid": "[PID]",
            "start_identity": "linux-proc-start-ticks:[TICKS]"
          },
          "promotions": [
            {
              "digest": "[CAPTURED]",
              "files_changed": 1,
              "how": "applied",
              "mode": "patch",
              "patch_bytes": "[PATCH_BYTES]",
              "promoted_at_ms": "[MS]",
              "step": 1
            }
          ],
          "read_only": false,
          "retained_at_ms": null,
          "retained_reason": null,
          "runs": [
            {
              "argv": null,
              "cwd": null,
              "digest": "[CAPTURED]",
              "ended_at_ms": null,
              "exit_code": null,
              "network": null,
              "observed_at_ms": "[MS]",
              "patch_bytes": "[PATCH_BYTES]",
              "profile": null,
              "run_id": "r1",
              "sandbox": null,
              "signal": null,
              "started_at_ms": null,
              "state": "completed",
              "timeout_ms": null
            }
          ],
          "schema": "a3s-iso.show.v1",
          "session_id": "w",
          "source": "[ROOT]/work/src",
          "state": "bound",
          "swept_at_ms": null,
          "swept_ref": null,
          "tree": "healthy",
          "worktree": "[ROOT]/work/.src.a3s-isolate-w"
        }
        "#)
    });
}

#[test]
fn show_names_runs_and_promotions() {
    let fx = Fixture::new();
    fx.bind("w");
    let iso = fx.isolation("w");
    std::fs::write(iso.join("README.md"), "hello\nwork\n").unwrap();
    let (code, run) = fx.json(&["capture", "-s", "w", "--run-id", "r1"]);
    assert_eq!(code, 0, "{run}");
    let (code, promoted) = fx.json(&["promote", "-s", "w"]);
    assert_eq!(code, 0, "{promoted}");
    let digest = promoted["digest"].as_str().unwrap();

    let (code, doc) = fx.json(&["show", "-s", "w"]);
    assert_eq!(code, 0, "{doc}");
    // A capture runs no command: the run's exit code is null.
    let captured = run["patch_digest"].as_str().unwrap();
    let named = [(captured, "[CAPTURED]"), (digest, "[PROMOTED]")];
    the_show_document_snapshot(&fx, &doc, &named);

    let human = String::from_utf8(stdout(&fx, &["show", "-s", "w"])).unwrap();
    let hex = digest.strip_prefix("sha256:").unwrap();
    assert!(human.contains("r1  completed"), "{human}");
    assert!(
        human.contains(&format!("step 1  sha256:{}", &hex[..12])),
        "{human}"
    );
    assert!(human.contains(iso.to_str().unwrap()), "{human}");

    // A retained session says why; a swept one where its work is.
    let (code, doc) = fx.json(&["retain", "-s", "w", "--reason", "look later"]);
    assert_eq!(code, 0, "{doc}");
    let (_, doc) = fx.json(&["show", "-s", "w"]);
    assert_eq!(doc["state"], "retained");
    assert_eq!(doc["retained_reason"], "look later");
}

/// A run's exit code is recorded beside its document, and `show` reports it.
#[test]
fn show_reports_a_runs_exit_code() {
    let fx = Fixture::new();
    fx.bind("x");
    let (code, run) = fx.json(&[
        "run",
        "-s",
        "x",
        "--no-sandbox",
        "--run-id",
        "r",
        "--",
        "sh",
        "-c",
        "echo a > a; exit 7",
    ]);
    assert_eq!(code, 7, "{run}");
    let (code, doc) = fx.json(&["show", "-s", "x"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["runs"][0]["run_id"], "r", "{doc}");
    assert_eq!(doc["runs"][0]["state"], "failed", "{doc}");
    assert_eq!(doc["runs"][0]["exit_code"], 7, "{doc}");
}
