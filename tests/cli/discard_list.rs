use crate::fixture::{Fixture, checkout_listing, error_code, snapshot_settings};

#[test]
fn discard_removes_the_isolation_and_leaves_the_source_byte_identical() {
    let fx = Fixture::new();
    // Some user state that must survive: staged, unstaged and untracked work.
    fx.bind("gone");
    fx.write("README.md", "edited by the user\n");
    fx.write("staged.txt", "staged\n");
    fx.git(&fx.src, &["add", "staged.txt"]);
    fx.write("untracked.bin", "\u{0}\u{1}binary");
    std::fs::write(fx.isolation("gone").join("agent.txt"), "agent work\n").unwrap();
    let before = checkout_listing(&fx.src);
    let (code, doc) = fx.json(&["discard", "-s", "gone"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["schema"], "a3s-iso.discard.v1");
    assert_eq!(doc["removed"], true);
    assert_eq!(checkout_listing(&fx.src), before);
    assert!(!fx.isolation("gone").exists());
    assert_eq!(fx.worktrees().len(), 1);
    // Idempotent.
    let (code, doc) = fx.json(&["discard", "-s", "gone"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["removed"], false);
    assert_eq!(checkout_listing(&fx.src), before);
    let (_, list) = fx.json(&["list", "--all"]);
    assert_eq!(list["sessions"][0]["state"], "discarded");
    // The evidence ref stays until --purge.
    fx.git(&fx.src, &["rev-parse", "refs/a3s-iso/sessions/gone/base"]);
    let (code, doc) = fx.json(&["discard", "-s", "gone", "--purge"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(fx.git(&fx.src, &["for-each-ref", "refs/a3s-iso/"]), "");
    let (code, doc) = fx.json(&["discard", "-s", "gone"]);
    assert_eq!(code, 1);
    assert_eq!(error_code(&doc), "session_not_found");
}

#[test]
fn a_discarded_id_can_be_bound_afresh() {
    let fx = Fixture::new();
    fx.bind("again");
    fx.json(&["discard", "-s", "again"]);
    fx.write("next.txt", "next\n");
    let head = fx.commit_all("next");
    let doc = fx.bind("again");
    assert_eq!(doc["reused"], false);
    assert_eq!(doc["bound_revision"], head.as_str());
}

#[test]
fn a_rewritten_git_file_does_not_redirect_a3s_iso() {
    let fx = Fixture::new();
    let other = fx.other_repository("other", "theirs.txt");
    fx.bind("redirect");
    let iso = fx.isolation("redirect");
    std::fs::write(
        iso.join(".git"),
        format!("gitdir: {}\n", other.join(".git").display()),
    )
    .unwrap();
    let other_before = crate::fixture::listing(&other);

    let (_, list) = fx.json(&["list"]);
    assert_eq!(list["sessions"][0]["state"], "bound", "{list}");
    let (code, doc) = fx.json(&["discard", "-s", "redirect"]);
    assert_eq!(code, 0, "{doc}");
    assert!(!iso.exists());
    assert_eq!(fx.worktrees().len(), 1);
    assert_eq!(
        crate::fixture::listing(&other),
        other_before,
        "the other repository is untouched"
    );
}

#[test]
fn sessions_are_found_without_an_id_where_it_is_unambiguous() {
    let fx = Fixture::new();
    let (code, doc) = fx.json(&["discard"]);
    assert_eq!(code, 1);
    assert_eq!(error_code(&doc), "session_not_found");
    fx.bind("a");
    fx.bind("b");
    let (code, doc) = fx.json(&["discard"]);
    assert_eq!(code, 1);
    assert_eq!(error_code(&doc), "session_not_found");
    assert_eq!(doc["error"]["candidates"], serde_json::json!(["a", "b"]));
    // Inside an isolation, that isolation's session.
    let (code, doc) = fx.json_in(&fx.isolation("b").join("src"), &["discard"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["session_id"], "b");
    // Now the source has exactly one live session.
    let (code, doc) = fx.json(&["discard"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["session_id"], "a");
}

#[test]
fn list_reports_state_head_movement_and_owner() {
    let fx = Fixture::new();
    let (code, doc) = fx.json(&["list"]);
    assert_eq!(code, 0);
    assert_eq!(doc["sessions"], serde_json::json!([]));
    fx.bind("one");
    fx.bind("two");
    std::fs::remove_dir_all(fx.isolation("two")).unwrap();
    fx.write("moved.txt", "x\n");
    fx.commit_all("move HEAD");
    let (_, doc) = fx.json(&["list"]);
    let sessions = &doc["sessions"];
    snapshot_settings(&fx).bind(|| {
        insta::assert_json_snapshot!(sessions, @r#"
        [
          {
            "bound_revision": "[HASH]",
            "conflicting_paths": [],
            "conflicts_with": [],
            "conflicts_with_head": [],
            "conflicts_with_your_changes": [],
            "disk": null,
            "fill": "[FILL]",
            "head_moved": true,
            "last_run": null,
            "owner": {
              "hostname": "[HOST]",
              "liveness": "alive",
              "name": "[NAME]",
              "pid": "[PID]",
              "start_identity": "linux-proc-start-ticks:[TICKS]"
            },
            "read_only": false,
            "session_id": "one",
            "source": "[ROOT]/work/src",
            "state": "bound",
            "swept_at_ms": null,
            "swept_ref": null,
            "worktree": "[ROOT]/work/.src.a3s-isolate-one"
          },
          {
            "bound_revision": "[HASH]",
            "conflicting_paths": [],
            "conflicts_with": [],
            "conflicts_with_head": [],
            "conflicts_with_your_changes": [],
            "disk": null,
            "fill": "[FILL]",
            "head_moved": true,
            "last_run": null,
            "owner": {
              "hostname": "[HOST]",
              "liveness": "alive",
              "name": "[NAME]",
              "pid": "[PID]",
              "start_identity": "linux-proc-start-ticks:[TICKS]"
            },
            "read_only": false,
            "session_id": "two",
            "source": "[ROOT]/work/src",
            "state": "missing",
            "swept_at_ms": null,
            "swept_ref": null,
            "worktree": "[ROOT]/work/.src.a3s-isolate-two"
          }
        ]
        "#)
    });
    // A missing isolation is not silently rebuilt.
    let (code, doc) = fx.json(&["bind", "-s", "two"]);
    assert_eq!(code, 1);
    assert_eq!(error_code(&doc), "session_exists");
}

#[test]
fn list_all_reaches_every_registered_source() {
    let fx = Fixture::new();
    fx.bind("here");
    let second = fx.root.join("work/second");
    std::fs::create_dir(&second).unwrap();
    fx.git(&second, &["init", "-q"]);
    std::fs::write(second.join("f"), "f\n").unwrap();
    fx.git(&second, &["add", "-A"]);
    fx.git(&second, &["commit", "-q", "-m", "s"]);
    let (code, doc) = fx.json_in(&second, &["bind", "-s", "there"]);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = fx.json_in(&fx.root, &["list", "--all"]);
    assert_eq!(code, 0, "{doc}");
    let ids: Vec<&str> = doc["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{doc}");
    assert!(ids.contains(&"here") && ids.contains(&"there"));
    // A separate store via --state-dir is registered too.
    let store = fx.root.join("tenant");
    let (code, doc) = fx.json(&[
        "--state-dir",
        store.to_str().unwrap(),
        "bind",
        "-s",
        "tenant",
    ]);
    assert_eq!(code, 0, "{doc}");
    assert!(store.join("sessions/tenant.json").is_file());
    let (_, doc) = fx.json_in(&fx.root, &["list", "--all"]);
    assert_eq!(doc["sessions"].as_array().unwrap().len(), 3, "{doc}");
}

#[test]
fn human_output_leads_with_the_isolation_path() {
    let fx = Fixture::new();
    let out = fx.cmd().args(["bind", "-s", "h"]).output().unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout.lines().next().unwrap(),
        fx.isolation("h").to_str().unwrap()
    );
    assert!(!stdout.contains('\x1b'));
    let out = fx.cmd().args(["bind", "-s", "../bad"]).output().unwrap();
    assert_eq!(out.status.code(), Some(5));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.starts_with("error[invalid_id]: "), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn usage_errors_exit_2_also_as_json() {
    let fx = Fixture::new();
    let out = fx.cmd().args(["bind", "--no-such-flag"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let (code, doc) = crate::fixture::json_of(
        fx.cmd()
            .args(["--json", "bind", "--no-such-flag"])
            .output()
            .unwrap(),
    );
    assert_eq!(code, 2);
    assert_eq!(error_code(&doc), "usage");
}

/// An isolation removed by hand (`rm -rf`): `list` and `show` say `missing`, and every command
/// that needs the tree answers `isolation_missing` (exit 4, `run` too) with the way back.
#[test]
fn a_hand_removed_isolation_is_missing_for_every_command_that_needs_it() {
    let fx = Fixture::new();
    fx.bind("gone");
    std::fs::write(fx.isolation("gone").join("work.txt"), "captured work\n").unwrap();
    let (code, doc) = fx.json(&["capture", "-s", "gone"]);
    assert_eq!(code, 0, "{doc}");
    std::fs::remove_dir_all(fx.isolation("gone")).unwrap();
    let before = checkout_listing(&fx.src);

    let (code, list) = fx.json(&["list"]);
    assert_eq!(code, 0, "{list}");
    assert_eq!(list["sessions"][0]["state"], "missing", "{list}");
    let (code, show) = fx.json(&["show", "-s", "gone"]);
    assert_eq!(code, 0, "{show}");
    assert_eq!(show["tree"], "missing", "{show}");

    for args in [
        &["run", "-s", "gone", "--", "touch", "ran.txt"][..],
        &[
            "run",
            "-s",
            "gone",
            "--no-sandbox",
            "--",
            "touch",
            "ran.txt",
        ],
        &["capture", "-s", "gone"],
        &["promote", "-s", "gone"],
        &["promote", "-s", "gone", "--mode", "branch"],
        &["diff", "-s", "gone"],
    ] {
        let (code, err) = fx.json(args);
        assert_eq!(code, 4, "{args:?}: {err}");
        assert_eq!(error_code(&err), "isolation_missing", "{args:?}: {err}");
        let hint = err["error"]["hint"].as_str().unwrap_or_default();
        assert!(
            hint.contains("bind -s gone --resume") && hint.contains("discard -s gone"),
            "{args:?}: {hint}"
        );
        let human = fx.cmd().args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&human.stderr);
        assert_eq!(human.status.code(), Some(4), "{args:?}: {stderr}");
        assert!(stderr.contains("error[isolation_missing]"), "{stderr}");
        assert!(stderr.contains("hint: "), "{stderr}");
        assert_eq!(
            checkout_listing(&fx.src),
            before,
            "{args:?}: the source is untouched"
        );
    }
    assert!(
        !fx.isolation("gone").exists(),
        "nothing ran, nothing was recreated"
    );

    // The way back the hint names.
    let (code, doc) = fx.json(&["bind", "-s", "gone", "--resume"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        std::fs::read_to_string(fx.isolation("gone").join("work.txt")).unwrap(),
        "captured work\n"
    );
    let (_, list) = fx.json(&["list"]);
    assert_eq!(list["sessions"][0]["state"], "bound", "{list}");

    // A registration removed by hand leaves the tree without its git: missing as well.
    fx.bind("unregistered");
    let admin = fx.src.join(".git/worktrees/-src.a3s-isolate-unregistered");
    assert!(admin.is_dir());
    std::fs::remove_dir_all(&admin).unwrap();
    let (code, err) = fx.json(&["capture", "-s", "unregistered"]);
    assert_eq!((code, error_code(&err)), (4, "isolation_missing"), "{err}");
    let (code, doc) = fx.json(&["discard", "-s", "unregistered"]);
    assert_eq!(code, 0, "{doc}");
}
