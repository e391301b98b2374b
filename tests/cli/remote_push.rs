//! Change sets through a git remote (a local bare repository): `push` in one clone,
//! `promote --from` in another, byte for byte and exactly once; every disagreement in what
//! the remote holds is refused with nothing applied.

use std::path::{Path, PathBuf};

use base64::Engine;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::fixture::{
    Fixture, checkout_listing, content_listing, error_code, json_of, snapshot_settings_naming,
};

/// A bare remote (`work/remote.git`), the fixture's source (clone A, `work/src`) pushed to it
/// as `origin`, and clone B (`work/b`) of it.
struct Net {
    fx: Fixture,
    remote: PathBuf,
    b: PathBuf,
}

impl Net {
    fn new() -> Net {
        let fx = Fixture::new();
        let work = fx.root.join("work");
        let remote = work.join("remote.git");
        fx.git(&work, &["init", "-q", "--bare", "-b", "main", "remote.git"]);
        fx.git(
            &fx.src,
            &["remote", "add", "origin", remote.to_str().unwrap()],
        );
        fx.git(&fx.src, &["push", "-q", "origin", "main"]);
        let net = Net {
            b: work.join("b"),
            fx,
            remote,
        };
        net.clone_as("b");
        net
    }

    /// Another clone of the remote at `work/<name>`.
    fn clone_as(&self, name: &str) -> PathBuf {
        let work = self.fx.root.join("work");
        let remote = self.remote.to_str().unwrap();
        self.fx.git(&work, &["clone", "-q", remote, name]);
        work.join(name)
    }

    /// `a3s-iso --json ARGS` in `dir`.
    fn json_in(&self, dir: &Path, args: &[&str]) -> (i32, Value) {
        self.fx.json_in(dir, args)
    }

    /// Binds `id` in `dir`, writes `files` into its isolation and pushes it; returns the push
    /// document and the isolation.
    fn bind_edit_push(&self, dir: &Path, id: &str, files: &[(&str, &[u8])]) -> (Value, PathBuf) {
        let (code, bind) = self.json_in(dir, &["bind", "-s", id]);
        assert_eq!(code, 0, "{bind}");
        let isolation = PathBuf::from(bind["worktree"].as_str().unwrap());
        for (rel, bytes) in files {
            let path = isolation.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
        let (code, pushed) = self.json_in(dir, &["push", "-s", id]);
        assert_eq!(code, 0, "{pushed}");
        (pushed, isolation)
    }

    /// Runs git in the remote.
    fn in_remote(&self, args: &[&str]) -> String {
        self.fx.git(&self.remote, args)
    }

    /// Git in the remote with `input` on stdin; returns trimmed stdout.
    fn in_remote_with(&self, args: &[&str], input: &[u8]) -> String {
        use std::io::Write;
        let mut cmd = std::process::Command::new("git");
        cmd.current_dir(&self.remote)
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        crate::fixture::isolate(&mut cmd, &self.fx.home);
        let mut child = cmd.spawn().unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Everything of clone B a refused promote must leave alone: the checkout (files, index,
    /// HEAD), its refs and a3s-iso's state (scratch aside).
    fn b_state(&self) -> (String, String, String) {
        let state: String = content_listing(&self.b.join(".git/a3s-iso"))
            .into_iter()
            .filter(|(path, _)| !path.starts_with("tmp"))
            .map(|(path, what)| format!("{path} {what}\n"))
            .collect();
        let checkout = format!("{:?}", checkout_listing(&self.b));
        let refs = self.fx.git(&self.b, &["for-each-ref"]);
        (checkout, refs, state)
    }
}

fn digest_of(doc: &Value) -> String {
    doc["digest"].as_str().unwrap().to_string()
}

fn hex_of(digest: &str) -> &str {
    digest.strip_prefix("sha256:").unwrap()
}

/// Bytes no compressor shrinks much: a xorshift stream.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// The push's document names the remote's ref the change set is at, and pushing it again is
/// a no-op reported as such; the digest.
fn pushed_once_to_its_ref(net: &Net, pushed: &Value) -> String {
    assert_eq!(pushed["schema"], "a3s-iso.push.v1");
    assert_eq!(pushed["outcome"], "pushed", "{pushed}");
    assert_eq!(pushed["remote"]["name"], "origin");
    let digest = digest_of(pushed);
    let reference = format!("refs/a3s-iso/changes/{}", hex_of(&digest));
    assert_eq!(pushed["ref"], reference.as_str());
    assert!(
        pushed["patch_bytes"].as_u64().unwrap() > 4_194_304,
        "{pushed}"
    );
    assert_eq!(
        net.in_remote(&["rev-parse", &reference]),
        pushed["commit"].as_str().unwrap()
    );

    // Pushing the same change set again is a no-op, reported as such.
    let (code, again) = net.json_in(&net.fx.src, &["push", "-s", "task", "origin"]);
    assert_eq!(
        (code, again["outcome"].as_str()),
        (0, Some("unchanged")),
        "{again}"
    );
    assert_eq!(again["digest"], digest.as_str());
    digest
}

/// The promote's document in the other clone: applied from the fetched change set.
fn the_fetched_promote_document_snapshot(
    net: &Net,
    promoted: &Value,
    digest: &str,
    pushed: &Value,
) {
    let named = [
        (digest, "[DIGEST]"),
        (pushed["commit"].as_str().unwrap(), "[PUSHED_COMMIT]"),
    ];
    snapshot_settings_naming(&net.fx, &named).bind(|| {
        insta::assert_json_snapshot!(promoted, @r#"
        {
          "artifacts": "[ROOT]/work/b/.git/a3s-iso/artifacts/[HASH]",
          "base_matches_head": true,
          "bound_revision": null,
          "conflicting_paths": [],
          "conflicting_paths_exact": [],
          "current_revision": "[HASH]",
          "detail": null,
          "digest": "[DIGEST]",
          "fetched": {
            "base_tree": "git-tree:[HASH]",
            "commit": "[PUSHED_COMMIT]",
            "digest": "[DIGEST]",
            "patch_bytes": "[PATCH_BYTES]",
            "ref": "refs/a3s-iso/fetched/[HASH]",
            "result_tree": "git-tree:[HASH]",
            "run_id": "[ID]",
            "session_id": "task",
            "state": "completed"
          },
          "files_changed": 2,
          "from_tree": null,
          "mode": "patch",
          "nested_repositories": [],
          "outcome": "applied",
          "patch_bytes": "[PATCH_BYTES]",
          "reason": null,
          "schema": "a3s-iso.promote.v1",
          "session_id": null,
          "step": null,
          "warnings": []
        }
        "#)
    });
}

#[test]
fn a_pushed_change_set_promotes_byte_for_byte_in_another_clone_exactly_once() {
    let net = Net::new();
    let big = noise(5 * 1024 * 1024, 7);
    let (pushed, isolation) = net.bind_edit_push(
        &net.fx.src,
        "task",
        &[
            ("assets/big.bin", &big),
            ("README.md", b"hello\nfrom the agent\n"),
        ],
    );
    let digest = pushed_once_to_its_ref(&net, &pushed);
    let (code, promoted) = net.json_in(
        &net.b,
        &["promote", "--from", "origin", "--digest", &digest],
    );
    assert_eq!(code, 0, "{promoted}");
    the_fetched_promote_document_snapshot(&net, &promoted, &digest, &pushed);
    assert_eq!(std::fs::read(net.b.join("assets/big.bin")).unwrap(), big);
    assert_eq!(
        std::fs::read(net.b.join("README.md")).unwrap(),
        std::fs::read(isolation.join("README.md")).unwrap()
    );
    let fetched = format!("refs/a3s-iso/fetched/{}", hex_of(&digest));
    assert_eq!(
        net.fx.git(&net.b, &["rev-parse", &fetched]),
        pushed["commit"].as_str().unwrap()
    );

    let before = net.b_state();
    let (code, again) = net.json_in(
        &net.b,
        &["promote", "--from", "origin", "--digest", &digest],
    );
    assert_eq!(
        (code, again["outcome"].as_str()),
        (0, Some("idempotent")),
        "{again}"
    );
    assert_eq!(net.b_state().0, before.0, "nothing applied twice");
}

/// A path or URL is not a configured remote: refused unless --allow-url, changing nothing.
fn a_url_is_refused_unless_allowed(net: &Net, digest: &str) {
    // A path or URL is not a configured remote: refused unless --allow-url.
    let url = net.remote.to_str().unwrap();
    for args in [
        vec!["list", "--remote", url],
        vec!["fetch", url, "--digest", &digest],
        vec!["promote", "--from", url, "--digest", &digest],
    ] {
        let before = net.b_state();
        let (code, doc) = net.json_in(&net.b, &args);
        assert_eq!(
            (code, error_code(&doc)),
            (5, "invalid_input"),
            "{args:?}: {doc}"
        );
        assert_eq!(net.b_state(), before, "{args:?}");
    }
    let (code, listed) = net.json_in(&net.b, &["list", "--remote", url, "--allow-url"]);
    assert_eq!(code, 0, "{listed}");
    assert_eq!(listed["change_sets"][0]["digest"], digest);
}

#[test]
fn list_and_fetch_read_the_remote_and_only_configured_remotes_are_taken() {
    let net = Net::new();
    let (pushed, _) = net.bind_edit_push(&net.fx.src, "one", &[("one.txt", b"one\n")]);
    let digest = digest_of(&pushed);

    // A server that filters sends only the commits; one that does not, everything: the
    // listing is the same.
    let (code, unfiltered) = net.json_in(&net.b, &["list", "--remote", "origin"]);
    assert_eq!(code, 0, "{unfiltered}");
    net.in_remote(&["config", "uploadpack.allowFilter", "true"]);
    let (code, listed) = net.json_in(&net.b, &["list", "--remote", "origin"]);
    assert_eq!(code, 0, "{listed}");
    assert_eq!(listed, unfiltered);
    // The patch's size depends on the object format: checked here, filtered in the snapshot.
    assert_eq!(
        listed["change_sets"][0]["patch_bytes"],
        pushed["patch_bytes"]
    );
    let named = [
        (digest.as_str(), "[DIGEST]"),
        (pushed["run_id"].as_str().unwrap(), "[PUSHED_RUN]"),
    ];
    snapshot_settings_naming(&net.fx, &named).bind(|| insta::assert_json_snapshot!(listed, @r#"
        {
          "change_sets": [
            {
              "commit": "[HASH]",
              "digest": "[DIGEST]",
              "observed_at_ms": "[MS]",
              "patch_bytes": "[PATCH_BYTES]",
              "ref": "refs/a3s-iso/changes/[HASH]",
              "run_id": "[PUSHED_RUN]",
              "session_id": "one",
              "state": "completed"
            }
          ],
          "reads": "ls-remote for refs/a3s-iso/changes/*, then each change set's commit (without its trees) for session, run, state, size and date; labels only, verified by fetch and promote",
          "remote": {
            "configured": true,
            "name": "origin"
          },
          "schema": "a3s-iso.remote-list.v1"
        }
        "#));
    // Listing does not turn the clone into a partial clone, nor fetch into it.
    let config = std::fs::read_to_string(net.b.join(".git/config")).unwrap();
    assert!(!config.contains("promisor"), "{config}");
    assert!(!net.fx.git(&net.b, &["for-each-ref"]).contains("a3s-iso"));

    a_url_is_refused_unless_allowed(&net, &digest);

    let (code, fetched) = net.json_in(&net.b, &["fetch", "origin"]);
    assert_eq!(code, 0, "{fetched}");
    assert_eq!(fetched["schema"], "a3s-iso.fetch.v1");
    assert_eq!(fetched["fetched"][0]["digest"], digest.as_str());
    assert_eq!(fetched["refused"], serde_json::json!([]));
    assert!(!net.b.join("one.txt").exists(), "fetch applies nothing");
    let fetched_ref = format!("refs/a3s-iso/fetched/{}", hex_of(&digest));
    assert_eq!(
        net.fx.git(&net.b, &["rev-parse", &fetched_ref]),
        pushed["commit"].as_str().unwrap()
    );
}

/// The tree of a change set's commit on the remote, with one entry replaced by a blob of
/// `bytes`; returns the new commit (parentless).
fn commit_with_blob(net: &Net, commit: &str, name: &str, bytes: &[u8]) -> String {
    let blob = net.in_remote_with(&["hash-object", "-w", "--stdin"], bytes);
    let entries: String = net
        .in_remote(&["ls-tree", &format!("{commit}^{{tree}}")])
        .lines()
        .map(|line| {
            let (meta, entry) = line.split_once('\t').unwrap();
            match entry == name {
                true => format!("100644 blob {blob}\t{name}\n"),
                false => format!("{meta}\t{entry}\n"),
            }
        })
        .collect();
    let tree = net.in_remote_with(&["mktree"], entries.as_bytes());
    net.in_remote(&["commit-tree", &tree, "-m", "forged"])
}

#[test]
fn a_remote_that_disagrees_with_itself_is_refused_and_clone_b_is_unchanged() {
    let net = Net::new();
    let (one, _) = net.bind_edit_push(&net.fx.src, "one", &[("one.txt", b"one\n")]);
    let (two, _) = net.bind_edit_push(&net.fx.src, "two", &[("two.txt", b"two\n")]);
    let (d1, d2) = (digest_of(&one), digest_of(&two));
    let c2 = two["commit"].as_str().unwrap();
    let b = &net.b;

    // The ref of one change set rewritten to point at another's commit.
    net.in_remote(&[
        "update-ref",
        &format!("refs/a3s-iso/changes/{}", hex_of(&d1)),
        c2,
    ]);
    // A commit whose document disagrees with its patch blob.
    let forged = commit_with_blob(&net, c2, "patch", b"diff --git a/x b/x\n");
    net.in_remote(&[
        "update-ref",
        &format!("refs/a3s-iso/changes/{}", hex_of(&d2)),
        &forged,
    ]);
    let missing = format!("sha256:{}", "ab".repeat(32));

    for (digest, code, expected, rule) in [
        (&d1, 5, "change_set_invalid", Some("digest_name")),
        (&d2, 5, "change_set_invalid", Some("patch_bytes")),
        (&missing, 1, "change_set_not_found", None),
    ] {
        let before = net.b_state();
        let (got, doc) = net.json_in(b, &["promote", "--from", "origin", "--digest", digest]);
        assert_eq!((got, error_code(&doc)), (code, expected), "{doc}");
        if let Some(rule) = rule {
            assert!(
                doc["error"]["message"].as_str().unwrap().contains(rule),
                "{doc}"
            );
        }
        assert_eq!(net.b_state(), before, "{digest}: clone B unchanged");
        let (got, doc) = net.json_in(b, &["fetch", "origin", "--digest", digest]);
        assert_eq!((got, error_code(&doc)), (code, expected), "fetch: {doc}");
        assert_eq!(net.b_state(), before, "{digest}: fetch keeps nothing");
    }
    assert!(!b.join("one.txt").exists() && !b.join("two.txt").exists());

    // Fetching everything lists both as refused, and keeps neither.
    let (code, fetched) = net.json_in(b, &["fetch", "origin"]);
    assert_eq!(code, 0, "{fetched}");
    assert_eq!(fetched["fetched"], serde_json::json!([]), "{fetched}");
    assert_eq!(fetched["refused"].as_array().unwrap().len(), 2, "{fetched}");
}

/// A valid document (every rule of the format) carrying `patch` against HEAD's tree.
fn document_for(fx: &Fixture, patch: &[u8]) -> Value {
    let tree = fx.git(&fx.src, &["rev-parse", "HEAD^{tree}"]);
    let digest = format!("sha256:{}", hex::encode(Sha256::digest(patch)));
    serde_json::json!({
        "schema": "a3s.code.agent-change-set.v1",
        "identity": {
            "schema": "a3s.code.agent-run-identity.v1",
            "protocol": "a3s.code.agent.v1",
            "agent_release_identity": digest,
            "session_id": "hostile",
            "run_id": "r1",
        },
        "state": "completed",
        "format": "git_unified_diff_v1",
        "encoding": "base64",
        "base_tree": format!("git-tree:{tree}"),
        "result_tree": format!("git-tree:{tree}"),
        "patch_digest": digest,
        "patch_bytes": patch.len(),
        "patch_base64": base64::engine::general_purpose::STANDARD.encode(patch),
        "observed_at_ms": 1_767_323_045_000u64,
    })
}

#[test]
fn a_hostile_remote_commit_is_refused_with_nothing_applied() {
    let net = Net::new();
    let b = &net.b;
    let outside = net.fx.root.join("work/outside.txt");

    // A patch that writes outside the repository: pushed as a well-formed change set, refused
    // by git apply's path checks.
    let escape = b"diff --git a/../outside.txt b/../outside.txt\nnew file mode 100644\n--- /dev/null\n+++ b/../outside.txt\n@@ -0,0 +1 @@\n+escaped\n";
    let doc_path = net.fx.root.join("hostile.json");
    std::fs::write(&doc_path, document_for(&net.fx, escape).to_string()).unwrap();
    let out = net
        .fx
        .cmd()
        .args(["--json", "push", "--change-set", doc_path.to_str().unwrap()])
        .output()
        .unwrap();
    let (code, pushed) = json_of(out);
    assert_eq!(code, 0, "{pushed}");
    let before = net.b_state();
    let digest = digest_of(&pushed);
    let (code, doc) = net.json_in(b, &["promote", "--from", "origin", "--digest", &digest]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["outcome"], "conflict", "{doc}");
    assert!(!outside.exists(), "nothing written outside the repository");
    assert_eq!(net.b_state().0, before.0, "nothing applied");

    // A patch over --max-bytes is refused by its size, before it is read.
    let (big, _) = net.bind_edit_push(&net.fx.src, "big", &[("big.bin", &noise(64 * 1024, 3))]);
    let before = net.b_state();
    let (code, doc) = net.json_in(
        b,
        &[
            "promote",
            "--from",
            "origin",
            "--digest",
            &digest_of(&big),
            "--max-bytes",
            "16K",
        ],
    );
    assert_eq!((code, error_code(&doc)), (5, "change_set_invalid"), "{doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("patch_size"),
        "{doc}"
    );
    assert_eq!(net.b_state(), before);

    // A document with a key twice.
    let (two, _) = net.bind_edit_push(&net.fx.src, "dup", &[("dup.txt", b"dup\n")]);
    let commit = two["commit"].as_str().unwrap();
    let document = net.in_remote(&["cat-file", "blob", &format!("{commit}:change-set.json")]);
    let duplicated = document.replacen("\"state\"", "\"state\": \"failed\",\n  \"state\"", 1);
    let forged = commit_with_blob(&net, commit, "change-set.json", duplicated.as_bytes());
    let digest = digest_of(&two);
    net.in_remote(&[
        "update-ref",
        &format!("refs/a3s-iso/changes/{}", hex_of(&digest)),
        &forged,
    ]);
    let before = net.b_state();
    let (code, doc) = net.json_in(b, &["promote", "--from", "origin", "--digest", &digest]);
    assert_eq!((code, error_code(&doc)), (5, "change_set_invalid"), "{doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .contains("duplicate_key"),
        "{doc}"
    );
    assert_eq!(net.b_state(), before);
    assert!(!b.join("dup.txt").exists() && !b.join("big.bin").exists());
}

/// Four clones each pushing five sessions' change sets, all at once; the digests pushed.
fn twenty_pushed_at_once(net: &Net) -> Vec<String> {
    let clones: Vec<PathBuf> = (0..4)
        .map(|n| match n {
            0 => net.fx.src.clone(),
            n => net.clone_as(&format!("c{n}")),
        })
        .collect();
    let digests: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = clones
            .iter()
            .enumerate()
            .map(|(n, clone)| {
                let net = &net;
                scope.spawn(move || {
                    (0..5)
                        .map(|k| {
                            let name = format!("c{n}-{k}.txt");
                            let id = format!("s{n}-{k}");
                            let (pushed, _) = net.bind_edit_push(
                                clone,
                                &id,
                                &[(&name, format!("{id}\n").as_bytes())],
                            );
                            assert_eq!(pushed["outcome"], "pushed", "{pushed}");
                            digest_of(&pushed)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    digests
}

/// The remote is cleaned by digest: the refs go, nothing else does.
fn deleting_two_by_digest_leaves_the_rest(net: &Net, digests: &[String]) {
    // The remote is cleaned by digest: the refs go, nothing else does.
    let (code, deleted) = net.json_in(
        &net.fx.src,
        &[
            "push",
            "--delete",
            "--digest",
            &digests[0],
            "--digest",
            &digests[1],
            "origin",
        ],
    );
    assert_eq!(code, 0, "{deleted}");
    assert_eq!(deleted["deleted"].as_array().unwrap().len(), 2, "{deleted}");
    let left = net.in_remote(&["for-each-ref", "refs/a3s-iso/changes/"]);
    assert_eq!(left.lines().count(), 18);
    assert_eq!(
        net.in_remote(&["rev-parse", "main"]).len(),
        net.fx.git(&net.fx.src, &["rev-parse", "HEAD"]).len()
    );
}

#[test]
fn twenty_change_sets_pushed_at_once_from_four_clones_are_all_listed_and_promotable() {
    let net = Net::new();
    let digests = twenty_pushed_at_once(&net);
    assert_eq!(digests.len(), 20);

    let (code, listed) = net.json_in(&net.b, &["list", "--remote", "origin"]);
    assert_eq!(code, 0, "{listed}");
    let mut on_remote: Vec<String> = listed["change_sets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["digest"].as_str().unwrap().to_string())
        .collect();
    let mut expected = digests.clone();
    on_remote.sort();
    expected.sort();
    assert_eq!(on_remote, expected);

    for digest in &digests {
        let (code, doc) = net.json_in(&net.b, &["promote", "--from", "origin", "--digest", digest]);
        assert_eq!(
            (code, doc["outcome"].as_str()),
            (0, Some("applied")),
            "{doc}"
        );
    }
    for n in 0..4 {
        for k in 0..5 {
            let text = std::fs::read_to_string(net.b.join(format!("c{n}-{k}.txt"))).unwrap();
            assert_eq!(text, format!("s{n}-{k}\n"));
        }
    }

    deleting_two_by_digest_leaves_the_rest(&net, &digests);
}

#[test]
fn a_run_pushes_its_stored_document_to_the_upstream_remote_and_old_ones_are_deleted() {
    let net = Net::new();
    // The current branch's upstream remote is the default: here `second`, not `origin`.
    let work = net.fx.root.join("work");
    net.fx
        .git(&work, &["init", "-q", "--bare", "-b", "main", "second.git"]);
    let second = work.join("second.git");
    net.fx.git(
        &net.fx.src,
        &["remote", "add", "second", second.to_str().unwrap()],
    );
    net.fx
        .git(&net.fx.src, &["config", "branch.main.remote", "second"]);
    net.fx.bind("task");
    std::fs::write(net.fx.isolation("task").join("run.txt"), "from a run\n").unwrap();
    let (code, captured) = net.fx.json(&["capture", "-s", "task", "--run-id", "r1"]);
    assert_eq!(code, 0, "{captured}");
    let (code, pushed) = net.fx.json(&["push", "-s", "task", "--run", "r1"]);
    assert_eq!(code, 0, "{pushed}");
    assert_eq!(pushed["remote"]["name"], "second");
    assert_eq!(pushed["digest"], captured["patch_digest"]);
    assert_eq!(pushed["run_id"], "r1");
    let digest = digest_of(&pushed);
    let reference = format!("refs/a3s-iso/changes/{}", hex_of(&digest));
    assert_eq!(
        net.fx.git(&second, &["rev-parse", &reference]),
        pushed["commit"].as_str().unwrap()
    );
    assert!(
        net.in_remote(&["for-each-ref", "refs/a3s-iso/"]).is_empty(),
        "origin untouched"
    );

    // The stored document's change set promotes from there like any other.
    net.fx.git(
        &net.b,
        &["remote", "add", "second", second.to_str().unwrap()],
    );
    let (code, doc) = net.json_in(
        &net.b,
        &["promote", "--from", "second", "--digest", &digest],
    );
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("applied")),
        "{doc}"
    );
    assert_eq!(
        std::fs::read_to_string(net.b.join("run.txt")).unwrap(),
        "from a run\n"
    );

    // Deleting by age: a window of a day keeps it, a window of nothing deletes it.
    let (code, kept) = net.fx.json(&["push", "--delete", "--older-than", "1d"]);
    assert_eq!(code, 0, "{kept}");
    assert_eq!(kept["deleted"], serde_json::json!([]), "{kept}");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let (code, deleted) = net.fx.json(&["push", "--delete", "--older-than", "0s"]);
    assert_eq!(code, 0, "{deleted}");
    assert_eq!(deleted["deleted"], serde_json::json!([digest]), "{deleted}");
    assert!(
        net.fx
            .git(&second, &["for-each-ref", "refs/a3s-iso/"])
            .is_empty()
    );
}

#[cfg(feature = "fault-injection")]
#[test]
fn a_fetch_killed_before_it_verified_leaves_a_ref_the_next_fetch_removes() {
    let net = Net::new();
    let (pushed, _) = net.bind_edit_push(&net.fx.src, "one", &[("one.txt", b"one\n")]);
    let digest = digest_of(&pushed);
    let out = net
        .fx
        .cmd_in(&net.b)
        .env("A3S_ISO_TEST_FAULT", "fetch-before-verify")
        .args(["fetch", "origin", "--digest", &digest])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let landing = net.fx.git(
        &net.b,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/a3s-iso/fetching/",
        ],
    );
    assert_eq!(landing.lines().count(), 1, "{landing}");

    let (code, fetched) = net.json_in(&net.b, &["fetch", "origin", "--digest", &digest]);
    assert_eq!(code, 0, "{fetched}");
    let refs = net.fx.git(
        &net.b,
        &["for-each-ref", "--format=%(refname)", "refs/a3s-iso/"],
    );
    assert_eq!(refs, format!("refs/a3s-iso/fetched/{}", hex_of(&digest)));
}

#[test]
fn push_from_inside_an_isolation_uses_the_source_remotes_not_the_isolations() {
    let net = Net::new();
    let work = net.fx.root.join("work");
    // A repository of the command's making, with an `origin` of its own, that the isolation's
    // `.git` file is pointed at.
    net.fx
        .git(&work, &["init", "-q", "--bare", "-b", "main", "evil.git"]);
    net.fx.git(&work, &["init", "-q", "-b", "main", "decoy"]);
    let decoy = work.join("decoy");
    let evil = work.join("evil.git");
    net.fx
        .git(&decoy, &["remote", "add", "origin", evil.to_str().unwrap()]);
    net.fx.bind("task");
    let isolation = net.fx.isolation("task");
    std::fs::write(isolation.join("work.txt"), "work\n").unwrap();
    std::fs::write(
        isolation.join(".git"),
        format!("gitdir: {}\n", decoy.join(".git").display()),
    )
    .unwrap();
    let (code, pushed) = net.json_in(&isolation, &["push", "-s", "task"]);
    assert_eq!(code, 0, "{pushed}");
    let reference = format!("refs/a3s-iso/changes/{}", hex_of(&digest_of(&pushed)));
    assert_eq!(
        net.in_remote(&["rev-parse", &reference]),
        pushed["commit"].as_str().unwrap()
    );
    assert!(
        net.fx.git(&evil, &["for-each-ref"]).is_empty(),
        "nothing reached the decoy's remote"
    );
}

#[test]
fn gc_cleans_the_remote_and_the_fetched_copies_by_age() {
    let net = Net::new();
    let (pushed, _) = net.bind_edit_push(&net.fx.src, "old", &[("old.txt", b"old\n")]);
    let digest = digest_of(&pushed);
    let (code, landed) = net.json_in(
        &net.b,
        &["promote", "--from", "origin", "--digest", &digest],
    );
    assert_eq!(
        (code, landed["outcome"].as_str()),
        (0, Some("applied")),
        "{landed}"
    );
    let fetched = format!("refs/a3s-iso/fetched/{}", hex_of(&digest));
    assert!(!net.fx.git(&net.b, &["for-each-ref", &fetched]).is_empty());

    // Inside the window nothing goes, here or there; a dry run of an empty window only lists.
    let (code, kept) = net.json_in(&net.b, &["gc", "--remote", "origin"]);
    assert_eq!(code, 0, "{kept}");
    assert_eq!(kept["remote"]["deleted"], serde_json::json!([]), "{kept}");
    assert!(!net.fx.git(&net.b, &["for-each-ref", &fetched]).is_empty());
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let dry = [
        "gc",
        "--older-than",
        "0s",
        "--remote",
        "origin",
        "--dry-run",
    ];
    let (code, planned) = net.json_in(&net.b, &dry);
    assert_eq!(code, 0, "{planned}");
    assert_eq!(planned["remote"]["deleted"], serde_json::json!([digest]));
    let remote_ref = format!("refs/a3s-iso/changes/{}", hex_of(&digest));
    assert!(
        !net.in_remote(&["for-each-ref", &remote_ref]).is_empty(),
        "dry run deleted it"
    );

    // Past the window: the remote's ref and the local fetched copy go; the journal entry of
    // the promote goes too (it is past the window), the promoted file stays.
    let (code, done) = net.json_in(&net.b, &["gc", "--older-than", "0s", "--remote", "origin"]);
    assert_eq!(code, 0, "{done}");
    assert_eq!(
        done["remote"]["deleted"],
        serde_json::json!([digest]),
        "{done}"
    );
    assert!(net.in_remote(&["for-each-ref", "refs/a3s-iso/"]).is_empty());
    assert!(
        net.fx
            .git(&net.b, &["for-each-ref", "refs/a3s-iso/"])
            .is_empty()
    );
    assert_eq!(
        std::fs::read_to_string(net.b.join("old.txt")).unwrap(),
        "old\n"
    );
    // A remote that is not configured is refused unless --allow-url.
    let url = net.remote.to_str().unwrap();
    let (code, refused) = net.json_in(&net.b, &["gc", "--remote", url]);
    assert_eq!(
        (code, error_code(&refused)),
        (5, "invalid_input"),
        "{refused}"
    );
    let (code, allowed) = net.json_in(&net.b, &["gc", "--remote", url, "--allow-url"]);
    assert_eq!(code, 0, "{allowed}");
}

#[test]
fn pushing_an_unchanged_session_again_reuses_its_last_capture() {
    let net = Net::new();
    let (first, isolation) = net.bind_edit_push(&net.fx.src, "same", &[("same.txt", b"one\n")]);
    let runs = || {
        net.fx
            .git(&net.fx.src, &["for-each-ref", "refs/a3s-iso/runs/same/"])
            .lines()
            .count()
    };
    assert_eq!(runs(), 1);
    let (code, again) = net.json_in(&net.fx.src, &["push", "-s", "same"]);
    assert_eq!(code, 0, "{again}");
    assert_eq!(again["outcome"], "unchanged", "{again}");
    assert_eq!(
        (&again["run_id"], &again["digest"]),
        (&first["run_id"], &first["digest"])
    );
    assert_eq!(runs(), 1, "no new run for an unchanged session");
    // A change is a new capture, and a new change set on the remote.
    std::fs::write(isolation.join("same.txt"), "two\n").unwrap();
    let (code, changed) = net.json_in(&net.fx.src, &["push", "-s", "same"]);
    assert_eq!(
        (code, changed["outcome"].as_str()),
        (0, Some("pushed")),
        "{changed}"
    );
    assert_ne!(changed["run_id"], first["run_id"]);
    assert_eq!(runs(), 2);
}

/// `a3s-iso ARGS` in `dir`, in a process group of its own, SIGKILLed whole after `delay`;
/// whether it was still running then.
fn kill_in_after(fx: &Fixture, dir: &Path, args: &[&str], delay: std::time::Duration) -> bool {
    use std::os::unix::process::CommandExt;
    let mut child = fx
        .cmd_in(dir)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    let group = rustix::process::Pid::from_child(&child);
    let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    let status = child.wait().unwrap();
    std::os::unix::process::ExitStatusExt::signal(&status) == Some(9)
}

#[test]
fn a_promote_from_a_remote_killed_at_random_points_lands_once_on_the_next_try() {
    let net = Net::new();
    let mut rng = crate::promote_crash::Rng::seeded("promote --from kills");
    let mut landed = 0;
    let mut expected = Vec::new();
    for round in 0..6 {
        let name = format!("r{round}.bin");
        let bytes = noise(64 * 1024, round);
        let id = format!("s{round}");
        let (pushed, _) = net.bind_edit_push(&net.fx.src, &id, &[(name.as_str(), &bytes[..])]);
        let digest = digest_of(&pushed);
        let from = ["promote", "--from", "origin", "--digest", digest.as_str()];
        // Each round's change set is based on the commit both clones share.
        let span = 400;
        let delay = std::time::Duration::from_millis(rng.below(span));
        landed += usize::from(kill_in_after(&net.fx, &net.b, &from, delay));
        let on_disk = std::fs::read(net.b.join(&name)).ok();
        assert!(
            on_disk.is_none() || on_disk.as_deref() == Some(&bytes[..]),
            "round {round}: a half-written file"
        );
        let (code, doc) = net.json_in(&net.b, &from);
        assert_eq!(code, 0, "round {round}: {doc}");
        let outcome = doc["outcome"].as_str().unwrap();
        assert!(["applied", "idempotent"].contains(&outcome), "{doc}");
        assert_eq!(
            std::fs::read(net.b.join(&name)).unwrap(),
            bytes,
            "round {round}"
        );
        let (code, again) = net.json_in(&net.b, &from);
        assert_eq!(
            (code, again["outcome"].as_str()),
            (0, Some("idempotent")),
            "{again}"
        );
        let fetching = net
            .fx
            .git(&net.b, &["for-each-ref", "refs/a3s-iso/fetching/"]);
        assert!(fetching.is_empty(), "round {round}: {fetching}");
        expected.push(format!("?? {name}"));
    }
    let status = net.fx.git(&net.b, &["status", "--porcelain"]);
    assert_eq!(
        status.lines().collect::<Vec<_>>(),
        expected,
        "only the promoted files"
    );
    eprintln!("promote --from kills: {landed} of 6 landed while it ran");
}

/// A commit on the remote whose `Session:` and `Run:` labels carry terminal escapes (anyone
/// who can push can write them): `list --remote`, `fetch` and `promote --from` show them
/// inert, colours on, and the forged change set is refused with nothing applied.
#[test]
fn hostile_labels_on_a_remote_reach_the_terminal_inert() {
    let net = Net::new();
    let (pushed, _) = net.bind_edit_push(&net.fx.src, "one", &[("one.txt", b"one\n")]);
    let commit = pushed["commit"].as_str().unwrap();
    let tree = net.in_remote(&["rev-parse", &format!("{commit}^{{tree}}")]);
    let fake = "f".repeat(64);
    let message = format!(
        "a3s-iso change set sha256:{fake}\n\nSession: s\u{1b}]0;pwned\u{7}\nRun: r\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2J\nState: completed\nPatch-Bytes: 1\nDigest: sha256:{fake}\n"
    );
    let forged = net.in_remote_with(&["commit-tree", &tree], message.as_bytes());
    net.in_remote(&[
        "update-ref",
        &format!("refs/a3s-iso/changes/{fake}"),
        &forged,
    ]);
    let before = net.b_state();
    let fake_digest = format!("sha256:{fake}");
    for args in [
        vec!["list", "--remote", "origin"],
        vec!["fetch", "origin"],
        vec!["promote", "--from", "origin", "--digest", &fake_digest],
    ] {
        let out = net
            .fx
            .cmd_in(&net.b)
            .args(["--color", "always"])
            .args(&args)
            .output()
            .unwrap();
        for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            crate::human_lifecycle::assert_inert(&format!("{args:?} {stream}"), bytes);
        }
    }
    assert!(!net.b.join("one.txt").exists(), "nothing applied");
    let (checkout, _, _) = net.b_state();
    assert_eq!(checkout, before.0);
}

/// `fetch`, `promote --from` and `push --delete` take a unique digest prefix of at least 8 hex
/// digits, as git takes abbreviated object ids; a prefix the remote does not hold is
/// `change_set_not_found`.
#[test]
fn remote_digests_take_a_unique_prefix() {
    let net = Net::new();
    let (pushed, _) = net.bind_edit_push(&net.fx.src, "task", &[("README.md", b"prefixed\n")]);
    let digest = digest_of(&pushed);
    let prefix = &hex_of(&digest)[..8];
    let (code, fetched) = net.json_in(&net.b, &["fetch", "origin", "--digest", prefix]);
    assert_eq!(code, 0, "{fetched}");
    assert_eq!(
        fetched["fetched"][0]["digest"],
        digest.as_str(),
        "{fetched}"
    );
    let (code, promoted) = net.json_in(
        &net.b,
        &[
            "promote",
            "--from",
            "origin",
            "--digest",
            &format!("sha256:{prefix}"),
        ],
    );
    assert_eq!(
        (code, promoted["outcome"].as_str()),
        (0, Some("applied")),
        "{promoted}"
    );
    assert_eq!(promoted["digest"], digest.as_str());
    assert_eq!(
        std::fs::read(net.b.join("README.md")).unwrap(),
        b"prefixed\n"
    );
    let other = if prefix.starts_with('0') {
        "11111111"
    } else {
        "00000000"
    };
    let (code, missing) = net.json_in(&net.b, &["fetch", "origin", "--digest", other]);
    assert_eq!(
        (code, error_code(&missing)),
        (1, "change_set_not_found"),
        "{missing}"
    );
    let (code, deleted) = net.json_in(
        &net.fx.src,
        &["push", "--delete", "origin", "--digest", prefix],
    );
    assert_eq!(code, 0, "{deleted}");
    assert_eq!(deleted["deleted"], serde_json::json!([digest]), "{deleted}");
    assert_eq!(
        net.in_remote(&["for-each-ref", "refs/a3s-iso/changes/"]),
        ""
    );
}
