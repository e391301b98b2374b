use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Stdio};

use base64::Engine;
use serde_json::{Value, json};

use crate::fixture::{
    Fixture, checkout_listing, error_code, json_of, listing, promote, snapshot_settings_naming,
};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The tree of the source's working state, through a throwaway index (the source's own index
/// is left alone).
fn worktree_tree(fx: &Fixture) -> String {
    let index = fx.root.join("probe-index");
    let _ = std::fs::remove_file(&index);
    let run = |args: &[&str]| {
        let mut cmd = std::process::Command::new("git");
        cmd.current_dir(&fx.src)
            .args(args)
            .env("GIT_INDEX_FILE", &index);
        crate::fixture::isolate(&mut cmd, &fx.home);
        cmd.env("GIT_INDEX_FILE", &index);
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    run(&["read-tree", "HEAD"]);
    run(&["add", "-A"]);
    run(&["write-tree"])
}

/// A change-set document around arbitrary patch bytes (valid digest and size).
fn document_for(patch: &[u8]) -> Value {
    let digest = format!(
        "sha256:{}",
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(patch))
    );
    json!({
        "schema": "a3s.code.agent-change-set.v1",
        "identity": {
            "schema": "a3s.code.agent-run-identity.v1",
            "protocol": "a3s.code.agent.v1",
            "agent_release_identity": format!("sha256:{}", "0".repeat(64)),
            "session_id": "crafted",
            "run_id": "r1"
        },
        "state": "completed",
        "format": "git_unified_diff_v1",
        "encoding": "base64",
        "base_tree": format!("git-tree:{}", "1".repeat(40)),
        "result_tree": format!("git-tree:{}", "2".repeat(40)),
        "patch_digest": digest,
        "patch_bytes": patch.len(),
        "patch_base64": B64.encode(patch),
        "observed_at_ms": 1
    })
}

fn write_doc(fx: &Fixture, name: &str, doc: &Value) -> String {
    let path = fx.root.join(name);
    std::fs::write(&path, serde_json::to_vec(doc).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn applied_once_then_idempotent_from_anywhere() {
    let fx = Fixture::new();
    fx.bind("a");
    std::fs::write(
        fx.isolation("a").join("README.md"),
        "hello\nfrom the agent\n",
    )
    .unwrap();
    let (code, doc) = promote(&fx, &["-s", "a"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["schema"], "a3s-iso.promote.v1");
    assert_eq!(doc["outcome"], "applied");
    assert_eq!(doc["mode"], "patch");
    let digest = doc["digest"].as_str().unwrap().to_string();
    assert_eq!(
        std::fs::read_to_string(fx.src.join("README.md")).unwrap(),
        "hello\nfrom the agent\n"
    );
    let after_first = checkout_listing(&fx.src);

    let (code, doc) = promote(&fx, &["-s", "a"]);
    assert_eq!(
        (code, doc["outcome"].as_str().unwrap()),
        (0, "idempotent"),
        "{doc}"
    );
    assert_eq!(doc["digest"], digest.as_str());
    assert_eq!(checkout_listing(&fx.src), after_first);

    // The same change from a second session: the same digest, idempotent.
    let copy = Fixture::new();
    drop(copy);
    let (code, doc) = fx.json(&["bind", "-s", "b", "--allow-dirty"]);
    assert_eq!(code, 0, "{doc}");
    std::fs::write(
        fx.isolation("b").join("README.md"),
        "hello\nfrom the agent\n",
    )
    .unwrap();
    let (code, doc) = promote(&fx, &["-s", "b"]);
    assert_eq!(
        (code, doc["outcome"].as_str().unwrap()),
        (0, "idempotent"),
        "{doc}"
    );
    // And from a file.
    let (_, captured) = fx.json(&["capture", "-s", "a"]);
    let file = write_doc(&fx, "a.json", &captured);
    let (code, doc) = promote(&fx, &["--change-set", &file]);
    assert_eq!(
        (code, doc["outcome"].as_str().unwrap()),
        (0, "idempotent"),
        "{doc}"
    );
    assert_eq!(checkout_listing(&fx.src), after_first);
    let journal: Vec<_> = std::fs::read_dir(fx.src.join(".git/a3s-iso/promoted"))
        .unwrap()
        .collect();
    assert_eq!(journal.len(), 1);
}

#[test]
fn a_moved_head_is_a_conflict_and_nothing_changes() {
    let fx = Fixture::new();
    let bound = fx.bind("m")["bound_revision"].as_str().unwrap().to_string();
    std::fs::write(fx.isolation("m").join("agent.txt"), "agent\n").unwrap();
    fx.write("user.txt", "user commit\n");
    let moved = fx.commit_all("user moved on");
    fx.write("wip.txt", "untracked wip\n");
    let before = checkout_listing(&fx.src);
    let (code, doc) = promote(&fx, &["-s", "m"]);
    assert_eq!(code, 3, "{doc}");
    let named = [(bound.as_str(), "[BOUND]"), (moved.as_str(), "[MOVED]")];
    snapshot_settings_naming(&fx, &named).bind(|| {
        insta::assert_json_snapshot!(doc, @r#"
        {
          "artifacts": null,
          "base_matches_head": null,
          "bound_revision": "[BOUND]",
          "conflicting_paths": [],
          "conflicting_paths_exact": [],
          "current_revision": "[MOVED]",
          "detail": null,
          "digest": "sha256:[HASH]",
          "files_changed": 1,
          "from_tree": "git-tree:[HASH]",
          "mode": "patch",
          "nested_repositories": [],
          "outcome": "conflict",
          "patch_bytes": "[PATCH_BYTES]",
          "reason": "head_moved",
          "schema": "a3s-iso.promote.v1",
          "session_id": "m",
          "step": 1,
          "warnings": []
        }
        "#)
    });
    assert_eq!(checkout_listing(&fx.src), before);
    assert!(!fx.src.join("agent.txt").exists());
    let human = fx.cmd().args(["promote", "-s", "m"]).output().unwrap();
    assert_eq!(human.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&human.stdout).starts_with("conflict (head_moved)"));
}

#[test]
fn wip_outside_the_patch_survives_and_wip_inside_is_a_conflict() {
    let fx = Fixture::new();
    fx.write("other.txt", "other\n");
    fx.commit_all("other");
    fx.bind("w");
    let iso = fx.isolation("w");
    std::fs::write(iso.join("README.md"), "hello\nagent line\n").unwrap();
    std::fs::write(iso.join("brand-new.txt"), "new from agent\n").unwrap();
    // Untouched WIP: staged, unstaged, untracked.
    fx.write("other.txt", "other\nuser wip\n");
    fx.write("mine.bin", "\u{0}user\u{1}");
    fx.write("src/lib.txt", "one\ntwo\nstaged\n");
    fx.git(&fx.src, &["add", "src/lib.txt"]);
    let wip_before: Vec<(String, Vec<u8>)> = ["other.txt", "mine.bin", "src/lib.txt"]
        .iter()
        .map(|p| (p.to_string(), std::fs::read(fx.src.join(p)).unwrap()))
        .collect();
    let staged = fx.git(&fx.src, &["diff", "--cached", "--name-only"]);

    // WIP in a file the patch touches (in a part the patch does not change).
    fx.write("README.md", "hello\n");
    std::fs::write(fx.src.join("README.md"), "HELLO (user)\n").unwrap();
    let before = checkout_listing(&fx.src);
    let (code, doc) = promote(&fx, &["-s", "w"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["reason"], "patch_does_not_apply");
    assert_eq!(checkout_listing(&fx.src), before, "nothing applied");
    assert!(
        !fx.src.join("brand-new.txt").exists(),
        "not even the files that would apply"
    );

    // Put README back: the patch applies and the other WIP survives byte for byte.
    std::fs::write(fx.src.join("README.md"), "hello\n").unwrap();
    let (code, doc) = promote(&fx, &["-s", "w"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "applied");
    for (path, bytes) in wip_before {
        assert_eq!(std::fs::read(fx.src.join(&path)).unwrap(), bytes, "{path}");
    }
    assert_eq!(
        fx.git(&fx.src, &["diff", "--cached", "--name-only"]),
        staged
    );
    assert_eq!(
        std::fs::read_to_string(fx.src.join("brand-new.txt")).unwrap(),
        "new from agent\n"
    );
}

#[test]
fn a_tampered_change_set_is_invalid_and_nothing_is_touched() {
    let fx = Fixture::new();
    fx.bind("t");
    std::fs::write(fx.isolation("t").join("README.md"), "changed\n").unwrap();
    let (_, good) = fx.json(&["capture", "-s", "t"]);
    let before = checkout_listing(&fx.src);
    let mut digest = good.clone();
    digest["patch_digest"] = json!(format!("sha256:{}", "f".repeat(64)));
    let mut bytes = good.clone();
    bytes["patch_bytes"] = json!(good["patch_bytes"].as_u64().unwrap() + 1);
    let mut extra = good.clone();
    extra["identity"]["note"] = json!("sneaky");
    for (name, doc) in [("digest", digest), ("bytes", bytes), ("extra", extra)] {
        let file = write_doc(&fx, &format!("{name}.json"), &doc);
        let (code, err) = promote(&fx, &["--change-set", &file]);
        assert_eq!(code, 5, "{name}: {err}");
        assert_eq!(error_code(&err), "change_set_invalid");
        assert_eq!(checkout_listing(&fx.src), before, "{name}");
    }
    assert!(!fx.src.join(".git/a3s-iso/promoted").exists());
}

#[test]
fn patches_that_escape_the_repository_are_refused() {
    let fx = Fixture::new();
    let outside = fx.root.join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink("../outside", fx.src.join("link")).unwrap();
    fx.commit_all("a symlink to a directory outside");
    let new_file = |path: &str| {
        format!(
            "diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+pwned\n"
        )
        .replace("e69de29bb2d1d6434b8b29ae775ad8c2e48c5391", "0000000000000000000000000000000000000000")
    };
    let absolute = fx.root.join("abs-escape.txt");
    let cases = [
        ("dotdot", new_file("../escape.txt")),
        (
            "absolute",
            new_file(absolute.to_str().unwrap().trim_start_matches('/'))
                .replace(" a/", " a//")
                .replace(" b/", " b//")
                .replace("+++ b/", "+++ /"),
        ),
        ("symlink", new_file("link/evil.txt")),
    ];
    // Everything but a3s-iso's own state (artifacts, lock) under .git.
    let everything = || {
        listing(&fx.root.join("work"))
            .into_iter()
            .filter(|(path, _)| !path.starts_with("src/.git/a3s-iso"))
            .chain(listing(&outside))
            .collect::<Vec<_>>()
    };
    for (name, patch) in cases {
        let before = everything();
        let file = write_doc(
            &fx,
            &format!("{name}.json"),
            &document_for(patch.as_bytes()),
        );
        let (code, doc) = promote(&fx, &["--change-set", &file]);
        assert_ne!(code, 0, "{name}: {doc}");
        if code == 3 {
            assert_eq!(doc["outcome"], "conflict", "{name}");
        }
        assert_eq!(everything(), before, "{name}: something was written");
        assert!(!fx.root.join("work/escape.txt").exists());
        assert!(!absolute.exists());
        assert!(!outside.join("evil.txt").exists());
    }
}

#[test]
fn every_kind_of_change_lands_exactly() {
    let fx = Fixture::new();
    fx.write("gone.txt", "bye\n");
    fx.write("run.sh", "#!/bin/sh\n");
    fx.commit_all("more");
    fx.bind("k");
    let iso = fx.isolation("k");
    std::fs::remove_file(iso.join("gone.txt")).unwrap();
    std::fs::set_permissions(iso.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("README.md", iso.join("alias")).unwrap();
    std::fs::create_dir_all(iso.join("deep/er")).unwrap();
    std::fs::write(iso.join("deep/er/file.txt"), "deep\n").unwrap();
    std::fs::write(
        iso.join("blob.bin"),
        (0..2048u32)
            .map(|i| (i * 7919 % 251) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    std::fs::write(iso.join("empty"), "").unwrap();
    let (_, captured) = fx.json(&["capture", "-s", "k"]);
    let (code, doc) = promote(&fx, &["-s", "k"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "applied");
    assert_eq!(
        worktree_tree(&fx),
        captured["result_tree"]
            .as_str()
            .unwrap()
            .trim_start_matches("git-tree:")
    );
    assert!(
        std::fs::symlink_metadata(fx.src.join("alias"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::metadata(fx.src.join("run.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o111,
        0o111
    );
}

/// A path that changes type is two sections of the patch (a removal and an addition): it
/// lands exactly, a file becoming a link and a file becoming a directory.
#[test]
fn paths_that_change_type_land_exactly() {
    let fx = Fixture::new();
    fx.write("link", "a file first\n");
    fx.write("dir", "a file first\n");
    fx.commit_all("to change type");
    fx.bind("t");
    let iso = fx.isolation("t");
    std::fs::remove_file(iso.join("link")).unwrap();
    std::os::unix::fs::symlink("README.md", iso.join("link")).unwrap();
    std::fs::remove_file(iso.join("dir")).unwrap();
    std::fs::create_dir(iso.join("dir")).unwrap();
    std::fs::write(iso.join("dir/inner.txt"), "inside\n").unwrap();
    std::fs::write(iso.join("README.md"), "changed too\n").unwrap();
    let (_, captured) = fx.json(&["capture", "-s", "t"]);
    let (code, doc) = promote(&fx, &["-s", "t"]);
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("applied")),
        "{doc}"
    );
    let result = captured["result_tree"].as_str().unwrap();
    assert_eq!(worktree_tree(&fx), result.trim_start_matches("git-tree:"));
    assert_eq!(
        std::fs::read_link(fx.src.join("link")).unwrap(),
        std::path::Path::new("README.md")
    );
    assert_eq!(
        std::fs::read(fx.src.join("dir/inner.txt")).unwrap(),
        b"inside\n"
    );
    assert_eq!(
        std::fs::read(fx.src.join("README.md")).unwrap(),
        b"changed too\n"
    );
}

/// With `core.filemode=false` git does not see the executable bit the user set on a file; a
/// session's change to that file lands with the bit still set, as git apply leaves it.
#[test]
fn an_executable_bit_git_ignores_stays_where_a_change_lands() {
    let fx = Fixture::new();
    fx.git(&fx.src, &["config", "core.filemode", "false"]);
    fx.bind("x");
    let file = fx.src.join("README.md");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), "");
    std::fs::write(fx.isolation("x").join("README.md"), "hello again\n").unwrap();
    let (code, doc) = promote(&fx, &["-s", "x"]);
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("applied")),
        "{doc}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), b"hello again\n");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o111, 0o111, "{mode:o}");
}

/// A SIGKILL between writing the checkout and the journal: the intent says what landed, so the
/// next promote completes the journal from it (never from whether the patch applies in
/// reverse) and is idempotent.
#[cfg(feature = "fault-injection")]
#[test]
fn a_crash_between_apply_and_journal_is_completed_from_the_intent() {
    let fx = Fixture::new();
    fx.bind("crash");
    std::fs::write(fx.isolation("crash").join("new.txt"), "landed\n").unwrap();
    let out = fx
        .cmd()
        .env("A3S_ISO_TEST_FAULT", "promote-after-apply")
        .args(["--json", "promote", "-s", "crash"])
        .output()
        .unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(9),
        "the fault point must kill it"
    );
    assert_eq!(
        std::fs::read_to_string(fx.src.join("new.txt")).unwrap(),
        "landed\n"
    );
    assert!(
        !fx.src.join(".git/a3s-iso/promoted").exists()
            || std::fs::read_dir(fx.src.join(".git/a3s-iso/promoted"))
                .unwrap()
                .next()
                .is_none()
    );
    let intents = fx.src.join(".git/a3s-iso/intents");
    assert_eq!(
        std::fs::read_dir(&intents).unwrap().count(),
        1,
        "the intent survives"
    );
    let before = checkout_listing(&fx.src);
    let (code, doc) = promote(&fx, &["-s", "crash"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "idempotent");
    assert!(
        doc["warnings"][0]
            .as_str()
            .unwrap()
            .starts_with("an interrupted promote of sha256:"),
        "{doc}"
    );
    assert!(
        doc["warnings"][0]
            .as_str()
            .unwrap()
            .contains("was completed")
    );
    assert_eq!(std::fs::read_dir(&intents).unwrap().count(), 0);
    assert_eq!(checkout_listing(&fx.src), before);
    let hex = doc["digest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:");
    let entry: Value = serde_json::from_slice(
        &std::fs::read(fx.src.join(format!(".git/a3s-iso/promoted/{hex}.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(entry["how"], "recovered");
}

fn spawn_promote(fx: &Fixture, args: &[&str]) -> Child {
    fx.cmd()
        .arg("--json")
        .arg("promote")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn eight_sessions_promote_concurrently_onto_one_source() {
    let fx = Fixture::new();
    for i in 0..8 {
        fx.bind(&format!("c{i}"));
        std::fs::write(
            fx.isolation(&format!("c{i}")).join(format!("file{i}.txt")),
            format!("{i}\n"),
        )
        .unwrap();
    }
    let children: Vec<Child> = (0..8)
        .map(|i| spawn_promote(&fx, &["-s", &format!("c{i}")]))
        .collect();
    for child in children {
        let (code, doc) = json_of(child.wait_with_output().unwrap());
        assert_eq!(code, 0, "{doc}");
        assert_eq!(doc["outcome"], "applied", "{doc}");
    }
    for i in 0..8 {
        assert_eq!(
            std::fs::read_to_string(fx.src.join(format!("file{i}.txt"))).unwrap(),
            format!("{i}\n")
        );
    }
    assert_eq!(
        std::fs::read_dir(fx.src.join(".git/a3s-iso/promoted"))
            .unwrap()
            .count(),
        8
    );
}

#[test]
fn eight_parallel_promotes_of_one_change_set_apply_once() {
    let fx = Fixture::new();
    fx.bind("one");
    std::fs::write(fx.isolation("one").join("once.txt"), "once\n").unwrap();
    let (_, captured) = fx.json(&["capture", "-s", "one"]);
    let file = write_doc(&fx, "once.json", &captured);
    let children: Vec<Child> = (0..8)
        .map(|_| spawn_promote(&fx, &["--change-set", &file]))
        .collect();
    let mut outcomes: Vec<String> = children
        .into_iter()
        .map(|c| {
            json_of(c.wait_with_output().unwrap()).1["outcome"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    outcomes.sort();
    assert_eq!(
        outcomes.iter().filter(|o| *o == "applied").count(),
        1,
        "{outcomes:?}"
    );
    assert_eq!(
        outcomes.iter().filter(|o| *o == "idempotent").count(),
        7,
        "{outcomes:?}"
    );
    assert_eq!(
        std::fs::read_to_string(fx.src.join("once.txt")).unwrap(),
        "once\n"
    );
}

#[test]
fn no_apply_writes_artifacts_and_leaves_the_source_alone() {
    let fx = Fixture::new();
    fx.bind("plan");
    std::fs::write(fx.isolation("plan").join("planned.txt"), "p\n").unwrap();
    let artifacts = fx.root.join("art");
    let before = checkout_listing(&fx.src);
    let (code, doc) = promote(
        &fx,
        &[
            "-s",
            "plan",
            "--no-apply",
            "--artifacts",
            artifacts.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "planned");
    assert_eq!(doc["artifacts"], artifacts.to_str().unwrap());
    assert_eq!(checkout_listing(&fx.src), before);
    let patch = std::fs::read(artifacts.join("change.patch")).unwrap();
    let digest = format!(
        "sha256:{}",
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&patch))
    );
    assert_eq!(doc["digest"], digest.as_str());
    let summary: Value =
        serde_json::from_slice(&std::fs::read(artifacts.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["outcome"], "planned");
    assert_eq!(summary["digest"], digest.as_str());
    // Planned is not promoted: a real promote still applies.
    let (_, doc) = promote(&fx, &["-s", "plan"]);
    assert_eq!(doc["outcome"], "applied");
}

#[test]
fn empty_and_noted_outcomes() {
    let fx = Fixture::new();
    fx.bind("e");
    let before = checkout_listing(&fx.src);
    let (code, doc) = promote(&fx, &["-s", "e"]);
    assert_eq!(
        (code, doc["outcome"].as_str().unwrap()),
        (0, "empty"),
        "{doc}"
    );
    assert_eq!(checkout_listing(&fx.src), before);

    std::fs::write(fx.isolation("e").join("by-hand.txt"), "x\n").unwrap();
    let (_, captured) = fx.json(&["capture", "-s", "e"]);
    let digest = captured["patch_digest"].as_str().unwrap();
    let (code, doc) = promote(&fx, &["--note", digest]);
    assert_eq!(
        (code, doc["outcome"].as_str().unwrap()),
        (0, "noted"),
        "{doc}"
    );
    let (code, doc) = promote(&fx, &["-s", "e"]);
    assert_eq!(
        (code, doc["outcome"].as_str().unwrap()),
        (0, "idempotent"),
        "{doc}"
    );
    assert!(!fx.src.join("by-hand.txt").exists());
    let (code, doc) = promote(&fx, &["--note", "sha256:nothex"]);
    assert_eq!((code, error_code(&doc)), (2, "usage"));
}

#[test]
fn nested_repositories_are_reported_not_folded_in() {
    let fx = Fixture::new();
    fx.bind("nest");
    let nested = fx.isolation("nest").join("vendor/lib");
    std::fs::create_dir_all(&nested).unwrap();
    fx.git(&nested, &["init", "-q"]);
    std::fs::write(nested.join("x.txt"), "x\n").unwrap();
    fx.git(&nested, &["add", "-A"]);
    fx.git(&nested, &["commit", "-q", "-m", "nested"]);
    std::fs::write(fx.isolation("nest").join("top.txt"), "top\n").unwrap();
    let out = fx
        .cmd()
        .args(["--json", "promote", "-s", "nest"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let (code, doc) = json_of(out);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["nested_repositories"], json!(["vendor/lib"]));
    assert!(stderr.contains("nested repository vendor/lib"), "{stderr}");
    let patch = std::fs::read_to_string(
        std::path::Path::new(doc["artifacts"].as_str().unwrap()).join("change.patch"),
    )
    .unwrap();
    assert!(
        !patch.contains("160000") && !patch.contains("vendor/lib"),
        "{patch}"
    );
    assert!(fx.src.join("top.txt").exists());
    assert!(!fx.src.join("vendor").exists());
}

#[test]
fn promote_waits_for_the_lock_and_times_out() {
    let fx = Fixture::new();
    fx.bind("l");
    std::fs::write(fx.isolation("l").join("l.txt"), "l\n").unwrap();
    let held = a3s_iso::store::lock::FileLock::acquire(
        &fx.src.join(".git/a3s-iso.lock"),
        std::time::Duration::ZERO,
    )
    .unwrap();
    let (code, doc) = fx.json(&["--lock-timeout", "200ms", "promote", "-s", "l"]);
    drop(held);
    assert_eq!((code, error_code(&doc)), (6, "lock_timeout"), "{doc}");
    assert!(!fx.src.join("l.txt").exists());
    let (code, doc) = fx.json(&["bind", "-s", "ro", "--read-only"]);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = promote(&fx, &["-s", "ro"]);
    assert_eq!((code, error_code(&doc)), (1, "read_only_session"));
}

#[cfg(feature = "fault-injection")]
#[test]
fn an_interrupt_while_applying_waits_for_the_promote_to_finish() {
    let fx = Fixture::new();
    fx.bind("int");
    std::fs::write(fx.isolation("int").join("a.txt"), "a\n").unwrap();
    std::fs::write(fx.isolation("int").join("b.txt"), "b\n").unwrap();
    // Test-only fault point: a3s-iso sends itself SIGINT between git apply and the journal.
    let out = fx
        .cmd()
        .env("A3S_ISO_TEST_FAULT", "promote-interrupt-during-apply")
        .args(["--json", "promote", "-s", "int"])
        .output()
        .unwrap();
    let (code, doc) = json_of(out);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "applied");
    assert!(
        doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("interrupt")),
        "{doc}"
    );
    assert!(
        fx.src.join("a.txt").exists() && fx.src.join("b.txt").exists(),
        "every file or none"
    );
    let hex = doc["digest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:");
    assert!(
        fx.src
            .join(format!(".git/a3s-iso/promoted/{hex}.json"))
            .exists()
    );
}

/// The fault points exist exactly in a build with the `fault-injection` feature: a release
/// build carries neither the points nor the variable that selects them.
#[test]
fn fault_points_are_compiled_only_with_their_feature() {
    let binary = std::fs::read(crate::fixture::BIN).unwrap();
    let needle = b"A3S_ISO_TEST_FAULT";
    let present = binary.windows(needle.len()).any(|w| w == needle);
    assert_eq!(present, cfg!(feature = "fault-injection"));
}

/// A WIP file whose name is not UTF-8 is checked like any other: a patch touching it is a
/// conflict naming it, and the user's bytes stay as they were.
#[test]
fn a_non_utf8_name_in_the_wip_overlapping_the_patch_is_a_conflict() {
    use std::os::unix::ffi::OsStrExt;
    let fx = Fixture::new();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    let lines = |first: &str, last: &str| {
        let middle: String = (2..10).map(|i| format!("line {i}\n")).collect();
        format!("{first}\n{middle}{last}\n")
    };
    std::fs::write(fx.src.join(name), lines("one", "ten")).unwrap();
    fx.git(&fx.src, &["add", "-A"]);
    fx.git(&fx.src, &["commit", "-qm", "latin-1 name"]);
    fx.bind("nonutf8");
    // The agent changes the first line, the user the last: git could merge them, a3s-iso won't.
    std::fs::write(fx.isolation("nonutf8").join(name), lines("ONE", "ten")).unwrap();
    std::fs::write(fx.src.join(name), lines("one", "mine")).unwrap();
    let before = crate::fixture::checkout_listing(&fx.src);
    let (code, doc) = fx.json(&["promote", "-s", "nonutf8"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["outcome"], "conflict");
    assert_eq!(doc["reason"], "patch_does_not_apply");
    let paths = doc["conflicting_paths"].as_array().unwrap();
    assert_eq!(paths.len(), 1, "{doc}");
    assert!(paths[0].as_str().unwrap().starts_with("caf"), "{doc}");
    // The exact name travels as bytes.
    assert_eq!(
        doc["conflicting_paths_exact"][0]["bytes_base64"], "Y2Fm6S50eHQ=",
        "{doc}"
    );
    assert_eq!(crate::fixture::checkout_listing(&fx.src), before);
    assert_eq!(
        std::fs::read(fx.src.join(name)).unwrap(),
        lines("one", "mine").as_bytes()
    );
}

/// A file of yours where the change set needs a directory (an untracked `k2`, the session
/// creates `k2/x`) is a conflict naming it, nothing applied and nothing journaled; a tracked
/// file the change set itself replaces by a directory still lands.
#[test]
fn a_file_of_yours_where_the_change_set_needs_a_directory_is_a_conflict() {
    let fx = Fixture::new();
    fx.write("k", "tracked file\n");
    fx.commit_all("k is a file");
    fx.bind("w");
    let iso = fx.isolation("w");
    std::fs::create_dir_all(iso.join("k2/deep")).unwrap();
    std::fs::write(iso.join("k2/deep/x"), "agent\n").unwrap();
    std::fs::write(iso.join("other.txt"), "agent\n").unwrap();
    fx.write("k2", "yours, untracked\n");
    let before = checkout_listing(&fx.src);
    let (code, doc) = promote(&fx, &["-s", "w"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["reason"], "patch_does_not_apply", "{doc}");
    assert_eq!(doc["conflicting_paths"], json!(["k2", "k2/deep/x"]));
    assert_eq!(checkout_listing(&fx.src), before);
    assert_eq!(
        std::fs::read(fx.src.join("k2")).unwrap(),
        b"yours, untracked\n"
    );
    assert!(!fx.src.join("other.txt").exists());
    assert!(!fx.src.join(".git/a3s-iso/promoted").exists());
    // Moved away, the same change set lands.
    std::fs::remove_file(fx.src.join("k2")).unwrap();
    let (code, doc) = promote(&fx, &["-s", "w"]);
    assert_eq!((code, &doc["outcome"]), (0, &json!("applied")), "{doc}");
    assert_eq!(std::fs::read(fx.src.join("k2/deep/x")).unwrap(), b"agent\n");
    // A file the session replaces by a directory is removed first: no conflict.
    fx.commit_all("landed");
    fx.bind("d");
    let iso = fx.isolation("d");
    std::fs::remove_file(iso.join("k")).unwrap();
    std::fs::create_dir(iso.join("k")).unwrap();
    std::fs::write(iso.join("k/inside"), "now a directory\n").unwrap();
    let (code, doc) = promote(&fx, &["-s", "d"]);
    assert_eq!((code, &doc["outcome"]), (0, &json!("applied")), "{doc}");
    assert_eq!(
        std::fs::read(fx.src.join("k/inside")).unwrap(),
        b"now a directory\n"
    );
}

/// Whether process `pid` is stopped (state `T` in `/proc/PID/stat`).
#[cfg(feature = "fault-injection")]
/// A change-set document promoted with `--artifacts DIR` lands the patch it verified, not the
/// copy in DIR, which an agent that may write DIR can swap after it was written: promote
/// paused right after writing the artifacts, the copy replaced by a patch that adds other
/// lines to other files, then promote continued.
#[cfg(feature = "fault-injection")]
#[test]
fn the_patch_that_lands_is_the_verified_one_not_the_artifacts_copy() {
    let fx = Fixture::new();
    fx.write("a.txt", "one\n");
    fx.write("b.txt", "two\n");
    fx.commit_all("two files");
    fx.bind("s1");
    std::fs::write(fx.isolation("s1").join("a.txt"), "one\nthe agent's line\n").unwrap();
    let doc = fx.root.join("doc.json").display().to_string();
    let (code, _) = fx.json(&["capture", "-s", "s1", "-o", &doc]);
    assert_eq!(code, 0);
    fx.write("a.txt", "one\nEVIL-A\n");
    fx.write("b.txt", "two\nEVIL-B\n");
    let evil = fx.git(&fx.src, &["diff"]) + "\n";
    fx.git(&fx.src, &["checkout", "--", "."]);
    let dir = fx.root.join("artifacts");
    let child = fx
        .cmd()
        .env("A3S_ISO_TEST_FAULT", "promote-pause-after-artifacts")
        .args(["--json", "promote", "--change-set", &doc, "--artifacts"])
        .arg(&dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    crate::fixture::wait_stopped(child.id(), "promote");
    std::fs::write(dir.join("change.patch"), evil).unwrap();
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).unwrap();
    let (code, doc) = json_of(child.wait_with_output().unwrap());
    assert_eq!((code, &doc["outcome"]), (0, &json!("applied")), "{doc}");
    let read = |rel: &str| std::fs::read_to_string(fx.src.join(rel)).unwrap();
    assert_eq!(read("a.txt"), "one\nthe agent's line\n");
    assert_eq!(read("b.txt"), "two\n");
}
