//! `log`: the source's promotions, newest first.

use serde_json::Value;

use crate::fixture::{Fixture, snapshot_settings_naming, stdout_of};

/// Binds `id`, changes `file` in its isolation, promotes it, commits the result; returns the
/// promote's digest.
fn promote_one(fx: &Fixture, id: &str, file: &str) -> String {
    fx.bind(id);
    std::fs::write(fx.isolation(id).join(file), format!("{id}\n")).unwrap();
    let (code, doc) = fx.json(&["promote", "-s", id]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "applied", "{doc}");
    fx.commit_all(&format!("promote {id}"));
    // Promotions a few milliseconds apart, so newest-first has one answer.
    std::thread::sleep(std::time::Duration::from_millis(20));
    doc["digest"].as_str().unwrap().to_string()
}

#[test]
fn log_lists_promotions_newest_first() {
    let fx = Fixture::new();
    let (code, doc) = fx.json(&["log"]);
    assert_eq!((code, doc["promotions"].clone()), (0, Value::Array(vec![])));
    let first = promote_one(&fx, "first", "a.txt");
    let second = promote_one(&fx, "second", "b.txt");
    let head_before_second = fx.git(&fx.src, &["rev-parse", "HEAD~1"]);
    // What the journal holds on disk, and what log reads from it.
    let journal = fx.src.join(".git/a3s-iso/promoted");
    for digest in [&first, &second] {
        let hex = digest.strip_prefix("sha256:").unwrap();
        assert!(journal.join(format!("{hex}.json")).is_file());
    }
    let (code, doc) = fx.json(&["log"]);
    assert_eq!(code, 0);
    assert_eq!(doc["schema"], "a3s-iso.log.v1");
    let promotions = doc["promotions"].as_array().unwrap();
    let digests: Vec<&str> = promotions
        .iter()
        .map(|p| p["digest"].as_str().unwrap())
        .collect();
    assert_eq!(digests, [second.as_str(), first.as_str()]);
    let newest = &promotions[0];
    let named = [
        (second.as_str(), "[SECOND]"),
        (head_before_second.as_str(), "[HEAD_BEFORE_SECOND]"),
    ];
    snapshot_settings_naming(&fx, &named).bind(|| {
        insta::assert_json_snapshot!(newest, @r#"
        {
          "digest": "[SECOND]",
          "earlier_landings": [],
          "files_changed": 1,
          "landing": "applied",
          "mode": "patch",
          "patch_bytes": "[PATCH_BYTES]",
          "promoted_at_ms": "[MS]",
          "session_id": "second",
          "source_head": "[HEAD_BEFORE_SECOND]"
        }
        "#)
    });
    assert!(
        newest["promoted_at_ms"].as_u64().unwrap()
            >= promotions[1]["promoted_at_ms"].as_u64().unwrap()
    );

    let (_, limited) = fx.json(&["log", "--limit", "1"]);
    assert_eq!(limited["promotions"].as_array().unwrap().len(), 1);
    assert_eq!(limited["promotions"][0]["digest"], second.as_str());
    let (_, only) = fx.json(&["log", "-s", "first"]);
    assert_eq!(only["promotions"].as_array().unwrap().len(), 1);
    assert_eq!(only["promotions"][0]["digest"], first.as_str());

    let table = stdout_of(fx.cmd().arg("log").output().unwrap());
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("TIME"), "{table}");
    assert!(
        lines[1].contains("second") && lines[1].contains(&second[..19]),
        "{table}"
    );
    assert!(
        lines[2].contains("first") && lines[2].contains("applied (patch)"),
        "{table}"
    );
}

/// A change set landed, undone and reapplied landed twice: `log` shows both landings, the
/// earlier one at its own time, and its JSON carries the journal's `earlier_landings`.
#[test]
fn log_shows_every_landing_of_a_reapplied_change_set() {
    let fx = Fixture::new();
    let digest = crate::fixture::promoted(&fx);
    fx.git(&fx.src, &["checkout", "--", "README.md"]);
    std::fs::remove_file(fx.src.join("new.txt")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (code, again) = fx.json(&["promote", "-s", "s", "--reapply"]);
    assert_eq!(
        (code, again["outcome"].as_str()),
        (0, Some("applied")),
        "{again}"
    );
    let entry = crate::fixture::journal(&fx, &digest);
    let earlier = entry["earlier_landings"].clone();
    assert_eq!(earlier.as_array().map(Vec::len), Some(1), "{entry}");
    let (code, doc) = fx.json(&["log"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["promotions"].as_array().unwrap().len(), 1, "{doc}");
    assert_eq!(doc["promotions"][0]["earlier_landings"], earlier, "{doc}");
    let table = stdout_of(fx.cmd().arg("log").output().unwrap());
    let short = &digest[..19];
    let rows: Vec<&str> = table.lines().filter(|l| l.contains(short)).collect();
    assert_eq!(rows.len(), 2, "{table}");
    assert!(rows[0].contains("reapplied (patch)"), "{table}");
    assert!(rows[1].contains("earlier landing (patch)"), "{table}");
    let (_, limited) = fx.json(&["log", "--limit", "1"]);
    assert_eq!(limited["promotions"][0]["earlier_landings"], earlier);
}
