//! Change-set documents that know their base (`base_unknown`, `base_differs`, `--onto-head`),
//! strict documents (duplicate keys, the size bound on stdin), the paths a conflict names, and
//! `capture -o` with a bare file name.

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::fixture::{Fixture, checkout_listing, patch_of};

/// A session's captured document (`capture --json`), written to `name` under the tempdir.
fn captured(fx: &Fixture, id: &str, name: &str) -> (Value, String) {
    let (code, doc) = fx.json(&["capture", "-s", id]);
    assert_eq!(code, 0, "{doc}");
    let path = fx.root.join(name);
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    (doc, path.to_str().unwrap().to_string())
}

fn read(fx: &Fixture, rel: &str) -> String {
    std::fs::read_to_string(fx.src.join(rel)).unwrap()
}

#[test]
fn a_document_from_another_repository_is_base_unknown() {
    let theirs = Fixture::new();
    theirs.bind("t");
    std::fs::write(theirs.isolation("t").join("README.md"), "hello\nagent\n").unwrap();
    let (_, file) = captured(&theirs, "t", "theirs.json");

    // Another repository whose README.md the patch would apply to cleanly.
    let ours = Fixture::bare_root();
    std::fs::create_dir_all(&ours.src).unwrap();
    ours.git(&ours.src, &["init", "-q", "-b", "main"]);
    ours.write("README.md", "hello\n");
    ours.write("ours.txt", "ours\n");
    ours.commit_all("our own history");
    let before = checkout_listing(&ours.src);
    let (code, doc) = ours.json(&["promote", "--change-set", &file]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["outcome"], "conflict");
    assert_eq!(doc["reason"], "base_unknown");
    assert_eq!(doc["base_matches_head"], Value::Null);
    assert_eq!(checkout_listing(&ours.src), before, "nothing applied");
    assert_eq!(read(&ours, "README.md"), "hello\n");
    assert!(!ours.src.join(".git/a3s-iso/promoted").exists());
    // --onto-head does not make an unknown base known.
    let (code, doc) = ours.json(&["promote", "--change-set", &file, "--onto-head"]);
    assert_eq!((code, doc["reason"].as_str()), (3, Some("base_unknown")));
    assert_eq!(checkout_listing(&ours.src), before);
}

#[test]
fn a_document_on_another_base_differs_unless_onto_head() {
    let fx = Fixture::new();
    fx.bind("d");
    std::fs::write(fx.isolation("d").join("README.md"), "hello\nagent\n").unwrap();
    let (_, file) = captured(&fx, "d", "d.json");
    fx.json(&["discard", "-s", "d"]);

    // HEAD moves (elsewhere): the document's base is in the repository but is not HEAD's tree.
    fx.write("other.txt", "the user's commit\n");
    fx.commit_all("user moved on");
    let before = checkout_listing(&fx.src);
    let (code, doc) = fx.json(&["promote", "--change-set", &file]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["reason"], "base_differs");
    assert_eq!(doc["base_matches_head"], false);
    assert_eq!(checkout_listing(&fx.src), before, "nothing applied");

    let (code, doc) = fx.json(&["promote", "--change-set", &file, "--onto-head"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "applied");
    assert_eq!(doc["base_matches_head"], false);
    assert_eq!(read(&fx, "README.md"), "hello\nagent\n");
    assert_eq!(read(&fx, "other.txt"), "the user's commit\n");
}

#[test]
fn onto_head_still_refuses_what_does_not_apply_and_names_the_path() {
    let fx = Fixture::new();
    fx.bind("n");
    std::fs::write(fx.isolation("n").join("README.md"), "hello\nagent\n").unwrap();
    let (_, file) = captured(&fx, "n", "n.json");
    fx.json(&["discard", "-s", "n"]);
    fx.write("README.md", "rewritten by a commit\n");
    fx.commit_all("user rewrote README");
    let before = checkout_listing(&fx.src);
    let (code, doc) = fx.json(&["promote", "--change-set", &file, "--onto-head"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["reason"], "patch_does_not_apply");
    assert_eq!(doc["conflicting_paths"], json!(["README.md"]));
    assert_eq!(checkout_listing(&fx.src), before);
}

#[test]
fn a_document_on_heads_tree_says_so() {
    let fx = Fixture::new();
    fx.bind("h");
    std::fs::write(fx.isolation("h").join("README.md"), "hello\nagent\n").unwrap();
    let (_, file) = captured(&fx, "h", "h.json");
    fx.json(&["discard", "-s", "h"]);
    let (code, doc) = fx.json(&["promote", "--change-set", &file]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "applied");
    assert_eq!(doc["base_matches_head"], true);
    assert_eq!(doc["step"], Value::Null);
    assert_eq!(read(&fx, "README.md"), "hello\nagent\n");
}

#[test]
fn each_kind_of_overlap_names_its_path() {
    type Overlap = fn(&Fixture);
    let cases: [(&str, Overlap, &str); 3] = [
        (
            "unstaged",
            |fx| fx.write("README.md", "hello\nthe user's edit\n"),
            "README.md",
        ),
        (
            "staged",
            |fx| {
                fx.write("README.md", "staged by the user\n");
                fx.git(&fx.src, &["add", "README.md"]);
            },
            "README.md",
        ),
        (
            "untracked",
            |fx| fx.write("new.txt", "the user's own new file\n"),
            "new.txt",
        ),
    ];
    for (kind, overlap, path) in cases {
        let fx = Fixture::new();
        fx.bind("o");
        let iso = fx.isolation("o");
        std::fs::write(iso.join("README.md"), "hello\nagent\n").unwrap();
        std::fs::write(iso.join("new.txt"), "agent's new file\n").unwrap();
        overlap(&fx);
        let before = checkout_listing(&fx.src);
        let (code, doc) = fx.json(&["promote", "-s", "o"]);
        assert_eq!(code, 3, "{kind}: {doc}");
        assert_eq!(doc["reason"], "patch_does_not_apply", "{kind}");
        assert_eq!(doc["conflicting_paths"], json!([path]), "{kind}: {doc}");
        assert_eq!(checkout_listing(&fx.src), before, "{kind}: nothing applied");
    }
}

#[test]
fn capture_writes_to_a_bare_file_name() {
    let fx = Fixture::new();
    fx.bind("c");
    std::fs::write(fx.isolation("c").join("x.txt"), "x\n").unwrap();
    let out = fx
        .cmd()
        .args(["capture", "-s", "c", "-o", "cs.json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = fx.src.join("cs.json");
    let (code, doc) = fx.json(&["verify", written.to_str().unwrap()]);
    assert_eq!(code, 0, "{doc}");
    let leftovers: Vec<_> = std::fs::read_dir(&fx.src)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn duplicate_keys_are_refused_by_verify_and_promote() {
    let fx = Fixture::new();
    fx.bind("k");
    std::fs::write(fx.isolation("k").join("README.md"), "hello\nagent\n").unwrap();
    let (doc, _) = captured(&fx, "k", "k.json");
    fx.json(&["discard", "-s", "k"]);
    let text = serde_json::to_string(&doc).unwrap();
    let cases = [
        (text.replacen("{", r#"{"state":"failed","#, 1), "state"),
        (
            text.replacen(
                r#""identity":{"#,
                r#""identity":{"session_id":"someone else","#,
                1,
            ),
            "identity.session_id",
        ),
    ];
    let before = checkout_listing(&fx.src);
    for (bytes, field) in cases {
        assert_ne!(bytes, text, "the duplicate is in the document");
        let path = fx.root.join("dup.json");
        std::fs::write(&path, &bytes).unwrap();
        for args in [
            vec!["verify", path.to_str().unwrap()],
            vec!["promote", "--change-set", path.to_str().unwrap()],
        ] {
            let (code, err) = fx.json(&args);
            assert_eq!(code, 5, "{args:?}: {err}");
            let (rule, found, _) = crate::fixture::broken_rule(&err);
            assert_eq!(
                (rule.as_str(), found.as_str()),
                ("duplicate_key", field),
                "{args:?}: {err}"
            );
        }
        assert_eq!(checkout_listing(&fx.src), before, "nothing applied");
    }
}

#[test]
fn verify_stdin_refuses_a_document_over_the_bound_without_reading_it_all() {
    let fx = Fixture::new();
    let mut child = fx
        .cmd()
        .args(["--json", "verify", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // 64 MiB offered; a3s-iso stops after the bound, and the writer sees a broken pipe.
    let writer = std::thread::spawn(move || {
        let chunk = vec![b' '; 1 << 20];
        let mut sent = 0usize;
        for _ in 0..64 {
            if stdin.write_all(&chunk).is_err() {
                break;
            }
            sent += chunk.len();
        }
        sent
    });
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    let sent = writer.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(5));
    let err: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        crate::fixture::broken_rule(&err).0,
        "document_size",
        "{err}"
    );
    assert!(sent < 64 << 20, "the whole input was read: {sent} bytes");
}

/// A document whose patch is replaced, with `patch_bytes` and `patch_digest` made to match: it
/// passes every rule of the fields, and only reading the patch tells.
fn with_patch(doc: &Value, patch: &[u8]) -> Value {
    use base64::Engine;
    use sha2::Digest;
    let mut doc = doc.clone();
    doc["patch_base64"] = json!(base64::engine::general_purpose::STANDARD.encode(patch));
    doc["patch_bytes"] = json!(patch.len());
    doc["patch_digest"] = json!(format!(
        "sha256:{}",
        hex::encode(sha2::Sha256::digest(patch))
    ));
    doc
}

#[test]
fn a_digest_valid_document_whose_patch_git_cannot_read_breaks_the_patch_rule() {
    let fx = Fixture::new();
    fx.bind("p");
    let iso = fx.isolation("p");
    std::fs::write(iso.join("README.md"), "hello\nfrom\nthe\nagent\n").unwrap();
    let binary: Vec<u8> = (0..600u32).map(|i| (i * 7919 % 251) as u8).collect();
    std::fs::write(iso.join("blob.bin"), &binary).unwrap();
    let (doc, _) = captured(&fx, "p", "p.json");
    let real = patch_of(&doc);
    let text = String::from_utf8(real.clone()).unwrap();
    assert!(text.contains("GIT binary patch"), "{text}");

    let garbage: Vec<u8> = (0..512u32).map(|i| (i * 131 % 256) as u8).collect();
    // Cut inside the text hunk: the hunk promises more lines than it has.
    let hunk_end = text.find("+agent\n").unwrap();
    let truncated = real[..hunk_end].to_vec();
    // One character of the binary literal that base85 does not have.
    let literal = text.find("literal ").unwrap();
    let data_line = text[literal..].find('\n').unwrap() + literal + 1;
    let mut broken = real.clone();
    broken[data_line + 3] = b'.';
    // A remote to push to: the document is refused before anything travels.
    let remote = fx.root.join("remote.git");
    fx.git(
        &fx.root,
        &["init", "-q", "--bare", remote.to_str().unwrap()],
    );
    fx.git(
        &fx.src,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    let before = checkout_listing(&fx.src);
    for (case, patch) in [
        ("garbage", garbage),
        ("truncated", truncated),
        ("broken base85", broken),
    ] {
        let path = fx.root.join("bad.json");
        std::fs::write(
            &path,
            serde_json::to_vec(&with_patch(&doc, &patch)).unwrap(),
        )
        .unwrap();
        let path = path.to_str().unwrap();
        for args in [
            vec!["verify", path],
            vec!["promote", "--change-set", path],
            vec!["diff", "--change-set", path],
            vec!["push", "--change-set", path],
        ] {
            let (code, err) = fx.json(&args);
            assert_eq!(code, 5, "{case}: {args:?}: {err}");
            let (rule, field, message) = crate::fixture::broken_rule(&err);
            assert_eq!(
                (rule.as_str(), field.as_str()),
                ("patch", "patch_base64"),
                "{case}: {args:?}: {err}"
            );
            assert!(message.contains("not a patch git can read"), "{message}");
        }
        assert_eq!(checkout_listing(&fx.src), before, "{case}: nothing applied");
        assert_eq!(
            fx.git(&remote, &["for-each-ref"]),
            "",
            "{case}: nothing pushed"
        );
    }
    // The real patch still verifies and lands.
    let path = fx.root.join("good.json");
    std::fs::write(&path, serde_json::to_vec(&with_patch(&doc, &real)).unwrap()).unwrap();
    let (code, ok) = fx.json(&["verify", path.to_str().unwrap()]);
    assert_eq!((code, &ok["valid"]), (0, &json!(true)), "{ok}");
}
