//! `promote --reapply` lands again a change set whose landing the user undid (plain promote
//! stays `idempotent`), recorded as a new landing, crash-safe like any promote; every
//! `--digest` takes a unique prefix of at least 8 hex digits, and an ambiguous one is
//! `digest_ambiguous` with the candidates.

use std::path::Path;

use serde_json::Value;

use std::collections::BTreeMap;

use crate::fixture::{
    Fixture, differences, error_code, journal, outcome, outcome_of, promoted, read_path, read_text,
    snapshot_settings_naming, source_state, spawn_json, wait_json,
};

/// The checkout's files and HEAD, without the index file's stat data.
fn checkout_listing(src: &Path) -> BTreeMap<String, String> {
    let mut listing = crate::fixture::checkout_listing(src);
    listing.remove(".git/index");
    listing
}

/// The user undoes the landing by hand.
fn undo(fx: &Fixture) {
    fx.git(&fx.src, &["checkout", "--", "README.md"]);
    std::fs::remove_file(fx.src.join("new.txt")).unwrap();
}

#[test]
fn reapply_lands_again_what_the_user_undid_and_only_then() {
    let fx = Fixture::new();
    let digest = promoted(&fx);
    let landed = checkout_listing(&fx.src);
    undo(&fx);
    let undone = checkout_listing(&fx.src);
    // Plain promote keeps its word: that change set landed once.
    let plain = fx.json(&["promote", "-s", "s"]);
    assert_eq!(outcome(&plain), (0, "idempotent"), "{}", plain.1);
    assert_eq!(checkout_listing(&fx.src), undone);
    let again = fx.json(&["promote", "-s", "s", "--reapply"]);
    assert_eq!(outcome(&again), (0, "applied"), "{}", again.1);
    assert_eq!(again.1["digest"], digest.as_str());
    assert_eq!(checkout_listing(&fx.src), landed, "byte for byte as landed");
    let entry = journal(&fx, &digest);
    let earlier = entry["earlier_landings"][0].to_string();
    let named = [
        (digest.as_str(), "[DIGEST]"),
        (earlier.as_str(), "[EARLIER_MS]"),
    ];
    snapshot_settings_naming(&fx, &named).bind(|| {
        insta::assert_json_snapshot!(entry, @r#"
        {
          "digest": "[DIGEST]",
          "earlier_landings": [
            [EARLIER_MS]
          ],
          "how": "reapplied",
          "mode": "patch",
          "patch_bytes": "[PATCH_BYTES]",
          "promoted_at_ms": "[MS]",
          "schema": "a3s-iso.journal.v1",
          "session_id": "s",
          "source_head": "[HASH]",
          "step": {
            "chain_tip": null,
            "files_changed": 2,
            "from_tree": "git-tree:[HASH]",
            "head_after": "[HASH]",
            "isolation_head": "[HASH]",
            "number": 1,
            "result_tree": "git-tree:[HASH]",
            "session_created_at_ms": "[MS]"
          }
        }
        "#)
    });
    // Still there: nothing to apply again.
    let twice = fx.json(&["promote", "-s", "s", "--reapply"]);
    assert_eq!(outcome(&twice), (0, "idempotent"), "{}", twice.1);
    assert!(
        twice.1["detail"]
            .as_str()
            .unwrap()
            .contains("still in your checkout"),
        "{}",
        twice.1
    );
    assert_eq!(checkout_listing(&fx.src), landed);
    assert_eq!(
        journal(&fx, &digest)["earlier_landings"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // Work the user wrote since at those paths is never merged into: a conflict, nothing applied.
    undo(&fx);
    std::fs::write(fx.src.join("README.md"), "the user's own\n").unwrap();
    let before = checkout_listing(&fx.src);
    let refused = fx.json(&["promote", "-s", "s", "--reapply"]);
    assert_eq!(outcome(&refused), (3, "conflict"), "{}", refused.1);
    assert_eq!(checkout_listing(&fx.src), before);
}

#[test]
fn reapply_by_a_digest_prefix_and_from_the_trees_once_artifacts_are_gone() {
    let fx = Fixture::new();
    let digest = promoted(&fx);
    undo(&fx);
    let hex = digest.trim_start_matches("sha256:");
    // The artifacts are gone (gc, or another --artifacts dir): the recorded trees make the patch.
    std::fs::remove_dir_all(fx.src.join(".git/a3s-iso/artifacts").join(hex)).unwrap();
    let again = fx.json(&["promote", "--reapply", "--digest", &hex[..8]]);
    assert_eq!(outcome(&again), (0, "applied"), "{}", again.1);
    assert_eq!(read_text(&fx.src, "README.md"), "hello, again\n");
    assert_eq!(read_text(&fx.src, "new.txt"), "new\n");
    // A prefix too short is a usage error; one that names nothing is invalid input.
    let short = fx.json(&["promote", "--reapply", "--digest", &hex[..7]]);
    assert_eq!((short.0, error_code(&short.1)), (2, "usage"), "{}", short.1);
    let other = if hex.starts_with('0') {
        "11111111"
    } else {
        "00000000"
    };
    let unknown = fx.json(&["promote", "--reapply", "--digest", other]);
    assert_eq!(
        (unknown.0, error_code(&unknown.1)),
        (5, "invalid_input"),
        "{}",
        unknown.1
    );
    // --digest alone says what it goes with.
    let alone = fx.json(&["promote", "--digest", &hex[..8]]);
    assert_eq!((alone.0, error_code(&alone.1)), (2, "usage"), "{}", alone.1);
    // diff takes the prefix too, with or without sha256:.
    let shown = fx.json(&["diff", "--digest", &format!("sha256:{}", &hex[..10])]);
    assert_eq!(shown.0, 0, "{}", shown.1);
}

#[test]
fn an_ambiguous_prefix_is_digest_ambiguous_and_lists_the_candidates() {
    let fx = Fixture::new();
    let digest = promoted(&fx);
    let hex = digest.trim_start_matches("sha256:");
    let shown = fx.json(&["diff", "--digest", &hex[..8]]);
    assert_eq!(shown.0, 0, "{}", shown.1);
    assert_eq!(shown.1["digest"], digest.as_str());
    // A second artifact that shares the first 12 digits.
    let twin = format!("{}{}", &hex[..12], "f".repeat(52));
    let twin = if twin == hex {
        format!("{}{}", &hex[..12], "e".repeat(52))
    } else {
        twin
    };
    std::fs::create_dir_all(fx.src.join(".git/a3s-iso/artifacts").join(&twin)).unwrap();
    let before = checkout_listing(&fx.src);
    for args in [
        vec!["diff", "--digest", &hex[..8]],
        vec!["promote", "--reapply", "--digest", &hex[..12]],
    ] {
        let refused = fx.json(&args);
        assert_eq!(
            (refused.0, error_code(&refused.1)),
            (5, "digest_ambiguous"),
            "{args:?}: {}",
            refused.1
        );
        let candidates = refused.1["error"]["candidates"].as_array().unwrap();
        assert_eq!(candidates.len(), 2, "{}", refused.1);
        assert!(candidates.contains(&Value::from(digest.as_str())));
        assert!(candidates.contains(&Value::from(format!("sha256:{twin}"))));
    }
    assert_eq!(checkout_listing(&fx.src), before);
    // One more digit than they share tells them apart.
    let exact = fx.json(&["diff", "--digest", &hex[..13]]);
    assert_eq!(exact.0, 0, "{}", exact.1);
}

/// A reapply killed after its intent, and after its files: the next command rolls it back or
/// finishes it, and the journal keeps both landings exactly once.
#[cfg(feature = "fault-injection")]
#[test]
fn a_killed_reapply_is_finished_or_rolled_back() {
    for (point, lands) in [
        ("promote-after-intent", false),
        ("promote-after-apply", true),
    ] {
        let fx = Fixture::new();
        let digest = promoted(&fx);
        let landed = checkout_listing(&fx.src);
        undo(&fx);
        let undone = checkout_listing(&fx.src);
        let status = fx
            .cmd()
            .args(["promote", "-s", "s", "--reapply"])
            .env("A3S_ISO_TEST_FAULT", point)
            .status()
            .unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9),
            "{point}"
        );
        let (code, _) = fx.json(&["list"]);
        assert_eq!(code, 0);
        let entry = journal(&fx, &digest);
        if lands {
            assert_eq!(checkout_listing(&fx.src), landed, "{point}");
            assert_eq!(
                entry["earlier_landings"].as_array().unwrap().len(),
                1,
                "{entry}"
            );
        } else {
            assert_eq!(checkout_listing(&fx.src), undone, "{point}");
            assert!(entry.get("earlier_landings").is_none(), "{entry}");
            let again = fx.json(&["promote", "-s", "s", "--reapply"]);
            assert_eq!(outcome(&again), (0, "applied"), "{point}: {}", again.1);
            assert_eq!(checkout_listing(&fx.src), landed, "{point}");
        }
        let plain = fx.json(&["promote", "-s", "s"]);
        assert_eq!(outcome(&plain), (0, "idempotent"), "{point}: {}", plain.1);
    }
}

/// A nested repository's change set is not a root change set: `--reapply --digest` of its
/// journal key says so (and changes nothing), rather than claiming no trees are recorded.
#[test]
fn reapply_of_a_nested_change_set_says_what_it_is() {
    let fx = crate::fixture::with_submodule("n");
    let sub = fx.isolation("n").join("vendor/lib");
    std::fs::write(sub.join("lib.txt"), "library, changed\n").unwrap();
    let applied = fx.json(&["promote", "-s", "n"]);
    assert_eq!(applied.0, 0, "{}", applied.1);
    let nested_key = applied.1["nested"][0]["journal_key"].clone();
    assert!(nested_key.is_string(), "{}", applied.1);
    let before = checkout_listing(&fx.src);
    let refused = fx.json(&[
        "promote",
        "--reapply",
        "--digest",
        nested_key.as_str().unwrap(),
    ]);
    assert_eq!(
        (refused.0, error_code(&refused.1)),
        (5, "invalid_input"),
        "{}",
        refused.1
    );
    assert!(
        refused.1["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nested repository vendor/lib"),
        "{}",
        refused.1
    );
    assert_eq!(checkout_listing(&fx.src), before);
}

// ---------------------------------------------------------------------------------------
// Attacks on `promote --reapply`
// ---------------------------------------------------------------------------------------

/// Only one of the two files of a landing undone (by hand, and by a commit after a squash
/// landing): `--reapply` must not write the other again, nor merge into anything; either it
/// says `conflict` with nothing changed, or the checkout ends exactly as the landing left it.
#[test]
fn attack_reapply_after_undoing_one_of_two_files() {
    // Patch mode: the landing is uncommitted; undo only README.md.
    let fx = Fixture::new();
    let digest = promoted(&fx);
    let landed = source_state(&fx);
    fx.git(&fx.src, &["checkout", "--", "README.md"]);
    let half = source_state(&fx);
    for args in [
        vec!["promote", "-s", "s", "--reapply"],
        vec!["promote", "--reapply", "--digest", &digest],
    ] {
        let (code, doc) = fx.json(&args);
        let now = source_state(&fx);
        assert!(
            (code == 3 && now == half) || (code == 0 && now == landed),
            "{args:?}: exit {code}: {:?}\n{doc}",
            differences(&now, &half)
        );
        if code == 0 {
            fx.git(&fx.src, &["checkout", "--", "README.md"]);
        }
    }
    // Squash landing (committed); the user commits a revert of new.txt only.
    let fx = Fixture::new();
    fx.bind("s");
    std::fs::write(fx.isolation("s").join("README.md"), "hello, again\n").unwrap();
    std::fs::write(fx.isolation("s").join("new.txt"), "new\n").unwrap();
    let (code, doc) = fx.json(&["land", "-s", "s"]);
    assert_eq!(code, 0, "{doc}");
    let digest = doc["sessions"][0]["digest"].as_str().unwrap().to_string();
    fx.git(&fx.src, &["rm", "-q", "new.txt"]);
    fx.git(&fx.src, &["commit", "-q", "-m", "the user drops new.txt"]);
    let before = source_state(&fx);
    let (code, doc) = fx.json(&["promote", "--reapply", "--digest", &digest]);
    let now = source_state(&fx);
    assert!(
        code == 3 && now == before,
        "exit {code}: {:?}\n{doc}",
        differences(&now, &before)
    );
    assert_eq!(read_path(fx.src.join("README.md")), "hello, again\n");
}

/// Steps: step 1 adds `a.txt`, step 2 changes it and adds `b.txt`, both promoted. Reapplying
/// step 1's digest while step 2 is in the checkout must not write `a.txt` back to step 1's
/// bytes (that is the session's later work, uncommitted); after the user removed everything,
/// it lands step 1 exactly, and a second reapply is `idempotent`.
#[test]
fn attack_reapply_step_one_after_step_two_landed() {
    let fx = Fixture::new();
    fx.bind("s");
    let iso = fx.isolation("s");
    std::fs::write(iso.join("a.txt"), "step 1\n").unwrap();
    let (code, one) = fx.json(&["promote", "-s", "s"]);
    assert_eq!((code, outcome_of(&one)), (0, "applied"), "{one}");
    let step1 = one["digest"].as_str().unwrap().to_string();
    std::fs::write(iso.join("a.txt"), "step 2\n").unwrap();
    std::fs::write(iso.join("b.txt"), "step 2\n").unwrap();
    let (code, two) = fx.json(&["promote", "-s", "s"]);
    assert_eq!((code, outcome_of(&two)), (0, "applied"), "{two}");
    let landed = source_state(&fx);
    let (code, doc) = fx.json(&["promote", "--reapply", "--digest", &step1[..20]]);
    assert!(code == 0 || code == 3, "{doc}");
    assert_eq!(source_state(&fx), landed, "{doc}");
    // The user removes both steps' files: step 1 alone lands again, once.
    std::fs::remove_file(fx.src.join("a.txt")).unwrap();
    std::fs::remove_file(fx.src.join("b.txt")).unwrap();
    let (code, doc) = fx.json(&["promote", "--reapply", "--digest", &step1]);
    assert_eq!((code, outcome_of(&doc)), (0, "applied"), "{doc}");
    assert_eq!(read_path(fx.src.join("a.txt")), "step 1\n");
    assert!(!fx.src.join("b.txt").exists());
    let (code, doc) = fx.json(&["promote", "--reapply", "--digest", &step1]);
    assert_eq!((code, outcome_of(&doc)), (0, "idempotent"), "{doc}");
    assert_eq!(read_path(fx.src.join("a.txt")), "step 1\n");
    let entry = journal(&fx, &step1);
    assert_eq!(
        entry["earlier_landings"].as_array().unwrap().len(),
        1,
        "{entry}"
    );
}

/// The artifacts' `change.patch` rewritten by someone else (a valid patch that would write a
/// different file): `--reapply` never applies those bytes. It lands the change set's real
/// bytes (made again from its recorded trees) or refuses; the stored patch is what landed.
#[test]
fn attack_reapply_with_a_tampered_change_patch() {
    let fx = Fixture::new();
    let digest = promoted(&fx);
    let landed = source_state(&fx);
    let hex = digest.trim_start_matches("sha256:");
    let stored = fx
        .src
        .join(".git/a3s-iso/artifacts")
        .join(hex)
        .join("change.patch");
    let evil = "diff --git a/evil.txt b/evil.txt\nnew file mode 100644\n--- /dev/null\n+++ b/evil.txt\n@@ -0,0 +1 @@\n+evil\n";
    for args in [
        vec!["promote", "-s", "s", "--reapply"],
        vec!["promote", "--reapply", "--digest", &hex[..8]],
    ] {
        fx.git(&fx.src, &["checkout", "--", "README.md"]);
        std::fs::remove_file(fx.src.join("new.txt")).unwrap();
        std::fs::write(&stored, evil).unwrap();
        let undone = source_state(&fx);
        let (code, doc) = fx.json(&args);
        assert!(!fx.src.join("evil.txt").exists(), "{args:?}: {doc}");
        let now = source_state(&fx);
        assert!(
            (code == 0 && now == landed) || (code != 0 && now == undone),
            "{args:?}: exit {code}: {:?}\n{doc}",
            differences(&now, &landed)
        );
        // The diff of that digest never shows the tampered bytes as the change set.
        let shown = fx.cmd().args(["diff", "--digest", hex]).output().unwrap();
        assert!(
            !String::from_utf8_lossy(&shown.stdout).contains("evil"),
            "{args:?}"
        );
    }
}

/// Two `promote --reapply` started together after the user undid the landing: exactly one
/// applies, the other is `idempotent` (or waits its turn and finds it there); the journal
/// counts one more landing, not two.
#[test]
fn attack_reapply_concurrently_lands_once() {
    for round in 0..3 {
        let fx = Fixture::new();
        let digest = promoted(&fx);
        let landed = source_state(&fx);
        fx.git(&fx.src, &["checkout", "--", "README.md"]);
        std::fs::remove_file(fx.src.join("new.txt")).unwrap();
        let one = spawn_json(&fx, &["promote", "-s", "s", "--reapply"]);
        let two = spawn_json(&fx, &["promote", "--reapply", "--digest", &digest[..15]]);
        let (c1, d1) = wait_json(one);
        let (c2, d2) = wait_json(two);
        let mut results = vec![outcome_of(&d1).to_string(), outcome_of(&d2).to_string()];
        results.sort();
        assert_eq!((c1, c2), (0, 0), "round {round}: {d1}\n{d2}");
        assert_eq!(
            results,
            ["applied", "idempotent"],
            "round {round}: {d1}\n{d2}"
        );
        assert_eq!(source_state(&fx), landed, "round {round}");
        let entry = journal(&fx, &digest);
        assert_eq!(
            entry["earlier_landings"].as_array().unwrap().len(),
            1,
            "round {round}: {entry}"
        );
    }
}
