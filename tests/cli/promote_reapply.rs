//! `promote --reapply` lands again a change set whose landing the user undid (plain promote
//! stays `idempotent`), recorded as a new landing, crash-safe like any promote; every
//! `--digest` takes a unique prefix of at least 8 hex digits, and an ambiguous one is
//! `digest_ambiguous` with the candidates.

use std::path::Path;

use serde_json::Value;

use std::collections::BTreeMap;

use crate::fixture::{Fixture, error_code, journal, outcome, read_text, snapshot_settings_naming};

/// The checkout's files and HEAD, without the index file's stat data.
fn checkout_listing(src: &Path) -> BTreeMap<String, String> {
    let mut listing = crate::fixture::checkout_listing(src);
    listing.remove(".git/index");
    listing
}

/// Session `s` changes `README.md` and adds `new.txt`; promoted; returns its digest.
fn promoted(fx: &Fixture) -> String {
    fx.bind("s");
    std::fs::write(fx.isolation("s").join("README.md"), "hello, again\n").unwrap();
    std::fs::write(fx.isolation("s").join("new.txt"), "new\n").unwrap();
    let applied = fx.json(&["promote", "-s", "s"]);
    assert_eq!(outcome(&applied), (0, "applied"), "{}", applied.1);
    applied.1["digest"].as_str().unwrap().to_string()
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
