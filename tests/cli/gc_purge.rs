//! `gc`, `discard --purge` and capture reuse: what goes, what stays, checked on disk and in
//! the refs.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use crate::fixture::{Fixture, listing, ok, state_dir, worked};

fn refs(fx: &Fixture) -> String {
    fx.git(&fx.src, &["for-each-ref"])
}

fn ns_refs(fx: &Fixture, prefix: &str) -> Vec<String> {
    fx.git(&fx.src, &["for-each-ref", "--format=%(refname)", prefix])
        .lines()
        .map(str::to_string)
        .collect()
}

/// (kind, path or ref) of each item of a list.
fn items(list: &Value) -> BTreeSet<(String, String)> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let at = i["ref"].as_str().or(i["path"].as_str()).unwrap();
            (i["kind"].as_str().unwrap().to_string(), at.to_string())
        })
        // The machine's temp dir holds the scratch of every a3s-iso process, those of the
        // tests running beside this one too: which of them died meanwhile is not this test's.
        .filter(|(kind, at)| {
            kind != "temp" || !at.starts_with(&*std::env::temp_dir().to_string_lossy())
        })
        .collect()
}

fn tenant_args<'a>(dir: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["--state-dir", dir];
    all.extend_from_slice(args);
    all
}

/// The dry run lists the discarded session's evidence, with its reason, and nothing of the
/// live, the retained or the other tenant's.
fn the_dry_run_lists_only_the_discarded(
    fx: &Fixture,
    dry: &Value,
    listed: &BTreeSet<(String, String)>,
) {
    // The discarded session's evidence is listed, with its reason; nothing of the others.
    for (kind, at) in [
        ("ref", "refs/a3s-iso/sessions/old/base".to_string()),
        (
            "session_record",
            state_dir(fx)
                .join("sessions/old.json")
                .display()
                .to_string(),
        ),
        ("runs", state_dir(fx).join("runs/old").display().to_string()),
    ] {
        assert!(listed.contains(&(kind.into(), at.clone())), "{at} in {dry}");
    }
    for item in dry["removed"].as_array().unwrap() {
        let at = item["ref"].as_str().or(item["path"].as_str()).unwrap();
        assert!(!at.contains("/live") && !at.contains("/kept"), "{item}");
        assert!(
            !at.contains("tenant") && !at.contains("a3s-iso-tenants"),
            "{item}"
        );
        assert!(item["reason"].is_string(), "{item}");
    }
}

/// The live and the retained session keep their record, refs and runs.
fn live_and_retained_keep_everything(fx: &Fixture) {
    // The live and the retained session keep everything; the tenant is untouched.
    for id in ["live", "kept"] {
        assert!(state_dir(fx).join(format!("sessions/{id}.json")).exists());
        assert_eq!(ns_refs(fx, &format!("refs/a3s-iso/runs/{id}/")).len(), 1);
        assert_eq!(
            ns_refs(fx, &format!("refs/a3s-iso/sessions/{id}/")).len(),
            1
        );
        assert_eq!(
            std::fs::read_dir(state_dir(fx).join("runs").join(id))
                .unwrap()
                .count(),
            1
        );
    }
}

#[test]
fn gc_dry_run_changes_nothing_and_gc_removes_exactly_what_it_listed() {
    let fx = Fixture::new();
    worked(&fx, "live", "live.txt");
    worked(&fx, "kept", "kept.txt");
    ok(&fx, &["retain", "-s", "kept", "--reason", "inspect"]);
    worked(&fx, "old", "old.txt");
    ok(&fx, &["promote", "-s", "old", "--no-apply"]);
    ok(&fx, &["discard", "-s", "old"]);
    let tenant = fx.root.join("tenant-state");
    let tenant_dir = tenant.to_str().unwrap();
    ok(
        &fx,
        &tenant_args(tenant_dir, &["bind", "-s", "other", "--owner", "none"]),
    );
    ok(&fx, &tenant_args(tenant_dir, &["capture", "-s", "other"]));
    ok(&fx, &tenant_args(tenant_dir, &["discard", "-s", "other"]));
    let before = (listing(&state_dir(&fx)), refs(&fx), listing(&tenant));

    let dry = ok(&fx, &["gc", "--dry-run", "--older-than", "0s"]);
    assert_eq!(dry["schema"], "a3s-iso.gc.v1");
    assert_eq!(dry["dry_run"], true);
    assert_eq!(
        (listing(&state_dir(&fx)), refs(&fx), listing(&tenant)),
        before
    );
    let listed = items(&dry["removed"]);
    the_dry_run_lists_only_the_discarded(&fx, &dry, &listed);

    let done = ok(&fx, &["gc", "--older-than", "0s"]);
    assert_eq!(done["dry_run"], false);
    assert_eq!(items(&done["removed"]), listed);
    for (_, at) in &listed {
        if at.starts_with("refs/") {
            assert!(ns_refs(&fx, at).is_empty(), "{at} is still there");
        } else {
            assert!(!Path::new(at).exists(), "{at} is still there");
        }
    }
    live_and_retained_keep_everything(&fx);
    assert!(fx.isolation("live").join("live.txt").exists());
    assert_eq!(listing(&tenant), before.2);
    assert_eq!(ns_refs(&fx, "refs/a3s-iso-tenants/").len(), 2);
    // Run again: nothing left to do.
    let again = ok(&fx, &["gc", "--older-than", "0s"]);
    assert_eq!(again["removed"], serde_json::json!([]), "{again}");
}

#[test]
fn a_digest_promoted_inside_the_window_stays_idempotent_after_gc() {
    let fx = Fixture::new();
    worked(&fx, "doc", "doc.txt");
    let document = fx.root.join("doc.json");
    ok(
        &fx,
        &["capture", "-s", "doc", "-o", document.to_str().unwrap()],
    );
    let promote = ["promote", "--change-set", document.to_str().unwrap()];
    assert_eq!(ok(&fx, &promote)["outcome"], "applied");
    ok(&fx, &["discard", "-s", "doc", "--purge"]);
    let journal = state_dir(&fx).join("promoted");
    assert_eq!(std::fs::read_dir(&journal).unwrap().count(), 1);
    // The default window (30 days) keeps the journal entry: still idempotent.
    let done = ok(&fx, &["gc"]);
    assert!(
        items(&done["kept"])
            .iter()
            .any(|(k, _)| k == "journal_entry"),
        "{done}"
    );
    assert_eq!(std::fs::read_dir(&journal).unwrap().count(), 1);
    assert_eq!(ok(&fx, &promote)["outcome"], "idempotent");
    // Outside the window the entry goes; the digest is then no longer known as promoted.
    let done = ok(&fx, &["gc", "--older-than", "0s"]);
    assert!(
        items(&done["removed"])
            .iter()
            .any(|(k, _)| k == "journal_entry"),
        "{done}"
    );
    assert_eq!(std::fs::read_dir(&journal).unwrap().count(), 0);
    let (_, doc) = fx.json(&promote);
    assert_ne!(doc["outcome"], "idempotent", "{doc}");
    assert_eq!(
        std::fs::read_to_string(fx.src.join("doc.txt")).unwrap(),
        "doc\n"
    );
}

#[test]
fn discard_purge_then_gc_all_leaves_no_refs_and_no_state_dir() {
    let fx = Fixture::new();
    worked(&fx, "gone", "gone.txt");
    ok(&fx, &["capture", "-s", "gone"]);
    let promoted = ok(&fx, &["promote", "-s", "gone", "--mode", "branch"]);
    assert_eq!(promoted["outcome"], "applied", "{promoted}");
    assert_eq!(ns_refs(&fx, "refs/heads/a3s-iso/").len(), 1);
    let purge = ok(&fx, &["discard", "-s", "gone", "--purge"]);
    let purged = items(&purge["purged_items"]);
    for kind in [
        "ref",
        "branch",
        "runs",
        "artifacts",
        "session_record",
        "lease",
    ] {
        assert!(purged.iter().any(|(k, _)| k == kind), "{kind} in {purge}");
    }
    let kept = items(&purge["kept"]);
    assert_eq!(kept.len(), 1, "{purge}");
    assert!(kept.iter().all(|(k, _)| k == "journal_entry"));
    assert!(ns_refs(&fx, "refs/a3s-iso/").is_empty());
    assert!(ns_refs(&fx, "refs/heads/a3s-iso/").is_empty());
    // What stays after a purge: the journal, the mark that the session was purged, and the
    // store's empty directories.
    let left: Vec<String> = listing(&state_dir(&fx))
        .into_iter()
        .filter(|(_, kind)| !kind.starts_with("dir"))
        .map(|(path, _)| path)
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
    assert!(left[0].starts_with("promoted/"), "{left:?}");
    assert_eq!(left[1], "purged/gone.json", "{left:?}");

    // A session only discarded goes with --all too, whatever its age.
    worked(&fx, "left", "left.txt");
    ok(&fx, &["discard", "-s", "left"]);
    let registry = fx.home.join(".local/share/a3s-iso/sources");
    assert_eq!(std::fs::read_dir(&registry).unwrap().count(), 1);
    ok(&fx, &["gc", "--all"]);
    assert!(ns_refs(&fx, "refs/a3s-iso/").is_empty());
    assert!(!state_dir(&fx).exists(), "{:?}", listing(&state_dir(&fx)));
    assert_eq!(std::fs::read_dir(&registry).unwrap().count(), 0);
    assert_eq!(
        fx.git(&fx.src, &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
}

#[test]
fn tenant_purge_and_gc_all_empty_its_namespace_only() {
    let fx = Fixture::new();
    worked(&fx, "mine", "mine.txt");
    let tenant = fx.root.join("tenant-state");
    let dir = tenant.to_str().unwrap();
    ok(
        &fx,
        &tenant_args(dir, &["bind", "-s", "theirs", "--owner", "none"]),
    );
    std::fs::write(
        fx.root
            .join("work")
            .join(
                std::fs::read_dir(fx.root.join("work"))
                    .unwrap()
                    .flatten()
                    .map(|e| e.file_name().into_string().unwrap())
                    .find(|n| n.ends_with("a3s-isolate-theirs"))
                    .unwrap(),
            )
            .join("t.txt"),
        "t\n",
    )
    .unwrap();
    ok(&fx, &tenant_args(dir, &["capture", "-s", "theirs"]));
    ok(
        &fx,
        &tenant_args(dir, &["promote", "-s", "theirs", "--mode", "branch"]),
    );
    assert_eq!(ns_refs(&fx, "refs/heads/a3s-iso-tenants/").len(), 1);
    ok(
        &fx,
        &tenant_args(dir, &["discard", "-s", "theirs", "--purge"]),
    );
    assert!(ns_refs(&fx, "refs/a3s-iso-tenants/").is_empty());
    assert!(ns_refs(&fx, "refs/heads/a3s-iso-tenants/").is_empty());
    let default_before = (listing(&state_dir(&fx)), ns_refs(&fx, "refs/a3s-iso/"));
    ok(&fx, &tenant_args(dir, &["gc", "--all"]));
    assert!(ns_refs(&fx, "refs/a3s-iso-tenants/").is_empty());
    // The tenant's own directories are emptied; the default store is untouched.
    let left: Vec<String> = listing(&tenant)
        .into_iter()
        .filter(|(_, kind)| !kind.starts_with("dir"))
        .map(|(path, _)| path)
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(
        (listing(&state_dir(&fx)), ns_refs(&fx, "refs/a3s-iso/")),
        default_before
    );
}

#[test]
fn gc_all_keeps_live_and_retained_sessions_whole() {
    let fx = Fixture::new();
    worked(&fx, "live", "live.txt");
    worked(&fx, "kept", "kept.txt");
    ok(&fx, &["retain", "-s", "kept", "--reason", "inspect"]);
    worked(&fx, "old", "old.txt");
    ok(&fx, &["discard", "-s", "old"]);
    let live: Vec<String> = ["live", "kept"]
        .iter()
        .flat_map(|id| {
            ns_refs(&fx, &format!("refs/a3s-iso/sessions/{id}/"))
                .into_iter()
                .chain(ns_refs(&fx, &format!("refs/a3s-iso/runs/{id}/")))
        })
        .collect();
    let files = |fx: &Fixture| -> Vec<String> {
        listing(&state_dir(fx))
            .into_keys()
            .filter(|p| p.contains("live") || p.contains("kept"))
            .collect()
    };
    let live_files = files(&fx);
    let done = ok(&fx, &["gc", "--all"]);
    let kept = items(&done["kept"]);
    assert!(
        kept.iter()
            .any(|(_, at)| at.ends_with("sessions/live.json")),
        "{done}"
    );
    assert!(
        kept.iter()
            .any(|(_, at)| at.ends_with("sessions/kept.json")),
        "{done}"
    );
    let mut after = ns_refs(&fx, "refs/a3s-iso/");
    after.sort();
    let mut expected = live.clone();
    expected.sort();
    assert_eq!(after, expected);
    assert_eq!(files(&fx), live_files);
    assert!(fx.isolation("live").join("live.txt").exists());
    let (_, list) = fx.json(&["list"]);
    assert_eq!(list["sessions"].as_array().unwrap().len(), 2, "{list}");
}

#[test]
fn capturing_an_unchanged_session_twice_records_one_run() {
    let fx = Fixture::new();
    let first = worked(&fx, "same", "a.txt");
    let again = fx
        .cmd()
        .args(["--json", "capture", "-s", "same"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&again.stderr).into_owned();
    let (code, second) = crate::fixture::json_of(again);
    assert_eq!(code, 0);
    assert_eq!(second, first, "the stored document, unchanged");
    assert!(stderr.contains("reused"), "{stderr}");
    assert_eq!(ns_refs(&fx, "refs/a3s-iso/runs/same/").len(), 1);
    assert_eq!(
        std::fs::read_dir(state_dir(&fx).join("runs/same"))
            .unwrap()
            .count(),
        1
    );
    let human = fx.cmd().args(["capture", "-s", "same"]).output().unwrap();
    assert!(String::from_utf8_lossy(&human.stdout).contains("reused"));
    assert_eq!(ns_refs(&fx, "refs/a3s-iso/runs/same/").len(), 1);
    // A change is a new run.
    std::fs::write(fx.isolation("same").join("b.txt"), "b\n").unwrap();
    let third = ok(&fx, &["capture", "-s", "same"]);
    assert_ne!(third["identity"]["run_id"], first["identity"]["run_id"]);
    assert_eq!(ns_refs(&fx, "refs/a3s-iso/runs/same/").len(), 2);
    assert_eq!(
        std::fs::read_dir(state_dir(&fx).join("runs/same"))
            .unwrap()
            .count(),
        2
    );
}

#[cfg(feature = "fault-injection")]
#[test]
fn a_gc_or_purge_killed_half_way_is_finished_by_the_next_one() {
    let fx = Fixture::new();
    for id in ["one", "two"] {
        worked(&fx, id, "x.txt");
        ok(&fx, &["discard", "-s", id]);
    }
    let killed = fx
        .cmd()
        .args(["gc", "--older-than", "0s"])
        .env("A3S_ISO_TEST_FAULT", "gc-after-refs")
        .output()
        .unwrap();
    assert!(!killed.status.success());
    // Killed after the refs went, before any file: the records still name the sessions.
    assert!(ns_refs(&fx, "refs/a3s-iso/").is_empty());
    assert!(state_dir(&fx).join("sessions/one.json").exists());
    let done = ok(&fx, &["gc", "--older-than", "0s"]);
    assert!(!done["removed"].as_array().unwrap().is_empty(), "{done}");
    assert!(!state_dir(&fx).join("sessions/one.json").exists());
    assert!(!state_dir(&fx).join("runs/two").exists());

    worked(&fx, "three", "y.txt");
    let killed = fx
        .cmd()
        .args(["discard", "-s", "three", "--purge"])
        .env("A3S_ISO_TEST_FAULT", "gc-after-refs")
        .output()
        .unwrap();
    assert!(!killed.status.success());
    assert!(ns_refs(&fx, "refs/a3s-iso/").is_empty());
    assert!(state_dir(&fx).join("sessions/three.json").exists());
    let purge = ok(&fx, &["discard", "-s", "three", "--purge"]);
    assert!(
        items(&purge["purged_items"])
            .iter()
            .any(|(k, _)| k == "session_record")
    );
    assert!(!state_dir(&fx).join("sessions/three.json").exists());
    assert!(!state_dir(&fx).join("runs/three").exists());
    assert!(!fx.isolation("three").exists());
}

#[test]
fn refs_of_a_session_without_record_and_registry_entries_of_gone_sources_go() {
    let fx = Fixture::new();
    worked(&fx, "live", "x.txt");
    let tree = fx.git(&fx.src, &["rev-parse", "HEAD^{tree}"]);
    fx.git(
        &fx.src,
        &["update-ref", "refs/a3s-iso/runs/ghost/r1", &tree],
    );
    std::fs::create_dir_all(state_dir(&fx).join("runs/ghost")).unwrap();
    std::fs::write(state_dir(&fx).join("runs/ghost/r1.json"), "{}").unwrap();
    let registry = fx.home.join(".local/share/a3s-iso/sources");
    let stale = registry.join("0000000000000000.json");
    std::fs::write(
        &stale,
        r#"{"source":"/nonexistent/src","common_dir":"/nonexistent/src/.git","state_dir":"/nonexistent/src/.git/a3s-iso"}"#,
    )
    .unwrap();
    let registered = std::fs::read_dir(&registry).unwrap().count();
    assert_eq!(registered, 2);
    // Inside the default window, nothing of it goes.
    let dry = ok(&fx, &["gc", "--dry-run"]);
    assert_eq!(dry["removed"], serde_json::json!([]), "{dry}");
    let dry = ok(&fx, &["gc", "--dry-run", "--older-than", "0s"]);
    let reasons: BTreeSet<(String, String)> = dry["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let at = i["ref"].as_str().or(i["path"].as_str()).unwrap();
            (at.to_string(), i["reason"].as_str().unwrap().to_string())
        })
        .collect();
    assert!(
        reasons.contains(&("refs/a3s-iso/runs/ghost/r1".into(), "gone".into())),
        "{dry}"
    );
    assert!(
        reasons.contains(&(stale.display().to_string(), "source_gone".into())),
        "{dry}"
    );
    ok(&fx, &["gc", "--older-than", "0s"]);
    assert!(ns_refs(&fx, "refs/a3s-iso/runs/ghost/").is_empty());
    assert!(!state_dir(&fx).join("runs/ghost").exists());
    assert!(!stale.exists());
    assert_eq!(std::fs::read_dir(&registry).unwrap().count(), 1);
    assert_eq!(ns_refs(&fx, "refs/a3s-iso/runs/live/").len(), 1);
}

#[test]
fn capture_reuse_sees_nested_change_sets_and_purge_removes_them() {
    let fx = crate::fixture::with_submodule("s");
    let lib = fx.isolation("s").join(crate::fixture::SUB).join("lib.txt");
    std::fs::write(&lib, "library, edited\n").unwrap();
    let first = ok(&fx, &["capture", "-s", "s"]);
    let second = ok(&fx, &["capture", "-s", "s"]);
    assert_eq!(second["identity"]["run_id"], first["identity"]["run_id"]);
    assert_eq!(ns_refs(&fx, "refs/a3s-iso/runs/s/").len(), 1);
    // Only the submodule's work changed: the root tree is the same, the nested set is not.
    std::fs::write(&lib, "library, edited twice\n").unwrap();
    let third = ok(&fx, &["capture", "-s", "s"]);
    assert_eq!(third["result_tree"], first["result_tree"]);
    assert_ne!(third["identity"]["run_id"], first["identity"]["run_id"]);
    assert_eq!(ns_refs(&fx, "refs/a3s-iso/runs/s/").len(), 2);
    assert_eq!(ns_refs(&fx, "refs/a3s-iso/nested/s/").len(), 4);
    let seeds = || {
        std::fs::read_dir(state_dir(&fx).join("seeds"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains("isolate-s"))
            .count()
    };
    assert!(seeds() >= 2, "the isolation's seed and its submodule's");
    let purge = ok(&fx, &["discard", "-s", "s", "--purge"]);
    assert!(
        items(&purge["purged_items"])
            .iter()
            .any(|(k, _)| k == "nested"),
        "{purge}"
    );
    assert!(ns_refs(&fx, "refs/a3s-iso/").is_empty());
    assert!(!state_dir(&fx).join("nested/s").exists());
    assert_eq!(seeds(), 0);
}

#[test]
fn gc_killed_at_random_points_never_touches_a_live_session_and_the_next_gc_finishes() {
    let fx = Fixture::new();
    worked(&fx, "live", "live.txt");
    let live_refs = ns_refs(&fx, "refs/a3s-iso/");
    let live_files = listing(&state_dir(&fx));
    // How long an uninterrupted gc of three discarded sessions takes: kills land within it.
    for n in 0..3 {
        let id = format!("timed{n}");
        worked(&fx, &id, "x.txt");
        ok(&fx, &["discard", "-s", &id]);
    }
    let started = std::time::Instant::now();
    ok(&fx, &["gc", "--older-than", "0s"]);
    let span = started.elapsed().as_millis() as u64;
    let mut landed = 0;
    let mut rng = crate::promote_crash::Rng::seeded("gc kills");
    let rounds = crate::fixture::repetitions("A3S_ISO_CRASH_ITERATIONS", 8);
    // A loaded machine can make every kill miss the gc it aims at: then more rounds, with
    // earlier kills, until one lands.
    for round in 0.. {
        if round >= rounds && (landed > 0 || round >= 3 * rounds) {
            break;
        }
        let ids: Vec<String> = (0..3).map(|n| format!("old{round}-{n}")).collect();
        for id in &ids {
            worked(&fx, id, "x.txt");
            ok(&fx, &["discard", "-s", id]);
        }
        let reach = if round < rounds { span } else { span / 4 };
        let delay = std::time::Duration::from_millis(rng.below(reach + 1));
        let args = ["gc", "--older-than", "0s"];
        landed += usize::from(crate::promote_crash::kill_after(&fx, &args, delay));
        // Whatever the point: the live session is whole, and the next gc leaves nothing of
        // the discarded ones.
        let mut refs_now = ns_refs(&fx, "refs/a3s-iso/");
        refs_now.retain(|r| r.contains("/live"));
        assert_eq!(refs_now, live_refs, "round {round}");
        assert!(fx.isolation("live").join("live.txt").exists());
        ok(&fx, &["gc", "--older-than", "0s"]);
        assert_eq!(ns_refs(&fx, "refs/a3s-iso/"), live_refs, "round {round}");
        let files = listing(&state_dir(&fx));
        for id in &ids {
            assert!(
                !files.keys().any(|p| p.contains(id.as_str())),
                "round {round}: {id} left {:?}",
                files
                    .keys()
                    .filter(|p| p.contains(id.as_str()))
                    .collect::<Vec<_>>()
            );
        }
        for (path, entry) in &live_files {
            if path.contains("sessions/live") || path.contains("runs/live") {
                assert_eq!(files.get(path), Some(entry), "round {round}: {path}");
            }
        }
        let (code, show) = fx.json(&["show", "-s", "live"]);
        assert_eq!(code, 0, "round {round}: {show}");
    }
    assert!(landed > 0, "no kill landed while gc ran ({span} ms)");
    eprintln!("gc kills: {landed} landed while gc ran");
}
