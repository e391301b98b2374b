use serde_json::Value;
use std::os::unix::fs::PermissionsExt;

use crate::fixture::{Fixture, error_code};

/// Random-looking but deterministic bytes.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn decode_patch(doc: &Value) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(doc["patch_base64"].as_str().unwrap())
        .unwrap()
}

fn tree(doc: &Value, field: &str) -> String {
    doc[field]
        .as_str()
        .unwrap()
        .strip_prefix("git-tree:")
        .unwrap()
        .to_string()
}

/// A source with a few more kinds of files to change.
fn rich_fixture() -> Fixture {
    let fx = Fixture::new();
    fx.write("delete-me.txt", "bye\n");
    fx.write("script.sh", "#!/bin/sh\necho hi\n");
    fx.write(".gitignore", "*.log\nbuild/\n");
    fx.commit_all("more files");
    fx
}

#[test]
fn a_patch_reproduces_the_result_tree_exactly() {
    let fx = rich_fixture();
    fx.bind("rich");
    let iso = fx.isolation("rich");
    std::fs::write(iso.join("README.md"), "hello\nmodified\n").unwrap();
    std::fs::remove_file(iso.join("delete-me.txt")).unwrap();
    std::fs::write(iso.join("untracked.txt"), "new\n").unwrap();
    std::fs::create_dir_all(iso.join("new/dir")).unwrap();
    std::fs::write(iso.join("new/dir/deep.txt"), "deep\n").unwrap();
    std::fs::set_permissions(
        iso.join("script.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::os::unix::fs::symlink("README.md", iso.join("link")).unwrap();
    std::fs::write(iso.join("empty"), "").unwrap();
    std::fs::write(iso.join("random.bin"), noise(3000, 7)).unwrap();
    std::fs::write(iso.join("sp ace \"quoted\" é ü.txt"), "unicode\n").unwrap();
    std::fs::write(iso.join("ignored.log"), "noise\n").unwrap();
    std::fs::create_dir_all(iso.join("build")).unwrap();
    std::fs::write(iso.join("build/out"), "artifact\n").unwrap();

    let (code, doc) = fx.json(&["capture", "-s", "rich"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["schema"], "a3s.code.agent-change-set.v1");
    assert_eq!(doc["state"], "completed");
    assert_eq!(
        tree(&doc, "base_tree"),
        fx.git(&fx.src, &["rev-parse", "HEAD^{tree}"])
    );
    let patch = decode_patch(&doc);
    let text = String::from_utf8_lossy(&patch);
    assert!(
        !text.contains("ignored.log") && !text.contains("build/out"),
        "ignored files leak:\n{text}"
    );
    assert!(text.contains("GIT binary patch"));

    // Plain `git apply` on a copy of the bound revision gives exactly the result tree.
    let copy = fx.root.join("copy");
    fx.git(
        &fx.root,
        &[
            "clone",
            "-q",
            fx.src.to_str().unwrap(),
            copy.to_str().unwrap(),
        ],
    );
    let patch_file = fx.root.join("p.diff");
    std::fs::write(&patch_file, &patch).unwrap();
    fx.git(&copy, &["apply", patch_file.to_str().unwrap()]);
    fx.git(&copy, &["add", "-A"]);
    assert_eq!(fx.git(&copy, &["write-tree"]), tree(&doc, "result_tree"));
    // And the digest is of exactly those bytes.
    assert_eq!(doc["patch_bytes"], patch.len());
    let digest = format!(
        "sha256:{}",
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&patch))
    );
    assert_eq!(doc["patch_digest"], digest.as_str());
}

#[test]
fn capture_leaves_every_index_untouched() {
    let fx = Fixture::new();
    fx.bind("idx");
    let iso = fx.isolation("idx");
    let admin = std::path::PathBuf::from(fx.git(&iso, &["rev-parse", "--absolute-git-dir"]));
    // The agent stages one change and leaves another unstaged.
    std::fs::write(iso.join("README.md"), "staged\n").unwrap();
    fx.git(&iso, &["add", "README.md"]);
    std::fs::write(iso.join("README.md"), "staged then edited\n").unwrap();
    std::fs::write(iso.join("new.txt"), "untracked\n").unwrap();
    let own_index = std::fs::read(admin.join("index")).unwrap();
    let source_index = std::fs::read(fx.src.join(".git/index")).unwrap();
    let staged = fx.git(&iso, &["diff", "--cached", "--name-only"]);
    let (code, doc) = fx.json(&["capture", "-s", "idx"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(std::fs::read(admin.join("index")).unwrap(), own_index);
    assert_eq!(
        std::fs::read(fx.src.join(".git/index")).unwrap(),
        source_index
    );
    assert_eq!(fx.git(&iso, &["diff", "--cached", "--name-only"]), staged);
    // The snapshot is the working tree, not the staging.
    let text = String::from_utf8(decode_patch(&doc)).unwrap();
    assert!(
        text.contains("+staged then edited") && text.contains("+untracked"),
        "{text}"
    );
}

#[test]
fn a_hostile_user_config_gives_byte_identical_patches() {
    let fx = Fixture::new();
    fx.write(
        "many.txt",
        &(0..60).map(|i| format!("line {i}\n")).collect::<String>(),
    );
    fx.write("old name.txt", "to be renamed\nwith content\n");
    fx.commit_all("base");
    fx.bind("cfg");
    let iso = fx.isolation("cfg");
    let edited: String = (0..60)
        .map(|i| {
            if i % 9 == 0 {
                format!("changed {i}\n")
            } else {
                format!("line {i}\n")
            }
        })
        .collect();
    std::fs::write(iso.join("many.txt"), edited).unwrap();
    std::fs::rename(iso.join("old name.txt"), iso.join("nëw name.txt")).unwrap();
    std::fs::write(iso.join("bin.dat"), noise(500, 3)).unwrap();
    let (code, plain) = fx.json(&["capture", "-s", "cfg", "--run-id", "plain"]);
    assert_eq!(code, 0, "{plain}");

    let hostile = fx.root.join("hostile.gitconfig");
    std::fs::write(fx.root.join("order.txt"), "nëw name.txt\nbin.dat\n").unwrap();
    std::fs::write(
        &hostile,
        format!("[diff]\n\tnoprefix = true\n\tmnemonicPrefix = true\n\talgorithm = patience\n\trenames = copies\n\
         \texternal = /bin/false\n\tcontext = 9\n\tsuppressBlankEmpty = true\n\tinterHunkContext = 5\n\
         \tindentHeuristic = false\n\trelative = true\n\torderFile = {order}\n\tdirstat = files\n\
         [color]\n\tui = always\n[core]\n\tquotePath = false\n\tbigFileThreshold = 1\n\tautocrlf = true\n",
        order = fx.root.join("order.txt").display()
        ),
    )
    .unwrap();
    let out = fx
        .cmd()
        .env("GIT_CONFIG_GLOBAL", &hostile)
        .args(["--json", "capture", "-s", "cfg", "--run-id", "hostile"])
        .output()
        .unwrap();
    let (code, hostile_doc) = crate::fixture::json_of(out);
    assert_eq!(code, 0, "{hostile_doc}");
    assert_eq!(decode_patch(&hostile_doc), decode_patch(&plain));
    assert_eq!(hostile_doc["patch_digest"], plain["patch_digest"]);
}

#[test]
fn the_pinned_tree_survives_worktree_removal_and_gc() {
    let fx = Fixture::new();
    fx.bind("pin");
    std::fs::write(fx.isolation("pin").join("only-here.txt"), "precious\n").unwrap();
    let (_, doc) = fx.json(&["capture", "-s", "pin", "--run-id", "r1"]);
    let result = tree(&doc, "result_tree");
    assert_eq!(
        fx.git(&fx.src, &["rev-parse", "refs/a3s-iso/runs/pin/r1"]),
        result
    );
    fx.git(
        &fx.src,
        &[
            "worktree",
            "remove",
            "--force",
            fx.isolation("pin").to_str().unwrap(),
        ],
    );
    fx.git(
        &fx.src,
        &[
            "-c",
            "gc.reflogExpire=now",
            "-c",
            "gc.reflogExpireUnreachable=now",
            "gc",
            "-q",
            "--prune=now",
        ],
    );
    assert_eq!(fx.git(&fx.src, &["cat-file", "-t", &result]), "tree");
    assert_eq!(
        fx.git(&fx.src, &["show", &format!("{result}:only-here.txt")]),
        "precious"
    );
}

#[test]
fn a_run_id_is_immutable_evidence() {
    let fx = Fixture::new();
    fx.bind("imm");
    let iso = fx.isolation("imm");
    std::fs::write(iso.join("a.txt"), "a\n").unwrap();
    let first = fx
        .cmd()
        .args(["--json", "capture", "-s", "imm", "--run-id", "r"])
        .output()
        .unwrap();
    let again = fx
        .cmd()
        .args(["--json", "capture", "-s", "imm", "--run-id", "r"])
        .output()
        .unwrap();
    assert!(first.status.success() && again.status.success());
    assert_eq!(
        first.stdout, again.stdout,
        "a replay returns the identical document"
    );
    let stored_path = fx.src.join(".git/a3s-iso/runs/imm/r.json");
    let stored = std::fs::read(&stored_path).unwrap();
    let pinned = fx.git(&fx.src, &["rev-parse", "refs/a3s-iso/runs/imm/r"]);

    std::fs::write(iso.join("a.txt"), "changed\n").unwrap();
    let (code, doc) = fx.json(&["capture", "-s", "imm", "--run-id", "r"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(error_code(&doc), "capture_conflict");
    assert_eq!(std::fs::read(&stored_path).unwrap(), stored);
    assert_eq!(
        fx.git(&fx.src, &["rev-parse", "refs/a3s-iso/runs/imm/r"]),
        pinned
    );
}

#[test]
fn an_oversized_patch_is_refused_but_its_tree_is_pinned() {
    let fx = Fixture::new();
    fx.bind("big");
    std::fs::write(fx.isolation("big").join("big.bin"), noise(4_000_000, 11)).unwrap();
    let (code, doc) = fx.json(&["capture", "-s", "big", "--run-id", "huge"]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(error_code(&doc), "change_set_too_large");
    let pinned = fx.git(&fx.src, &["rev-parse", "refs/a3s-iso/runs/big/huge"]);
    assert_eq!(fx.git(&fx.src, &["cat-file", "-t", &pinned]), "tree");
    assert!(!fx.src.join(".git/a3s-iso/runs/big/huge.json").exists());
}

#[test]
fn release_identity_is_recorded_and_checked() {
    let fx = Fixture::new();
    fx.bind("rel");
    let identity = format!("sha256:{}", "ab".repeat(32));
    let (code, doc) = fx.json(&["capture", "-s", "rel", "--release-identity", &identity]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["identity"]["agent_release_identity"], identity.as_str());
    assert!(
        doc["patch_base64"] == "" && doc["patch_bytes"] == 0,
        "nothing changed: {doc}"
    );
    let out = fx
        .cmd()
        .env("A3S_ISO_RELEASE_IDENTITY", "nope")
        .args(["--json", "capture", "-s", "rel"])
        .output()
        .unwrap();
    let (code, doc) = crate::fixture::json_of(out);
    assert_eq!((code, error_code(&doc)), (2, "usage"));
}

fn verify_file(fx: &Fixture, doc: &[u8]) -> (i32, Value) {
    let path = fx.root.join("doc.json");
    std::fs::write(&path, doc).unwrap();
    fx.json(&["verify", path.to_str().unwrap()])
}

/// A change to a document.
type Mutation = Box<dyn Fn(&mut Value)>;

/// A change of each rule's field, by `rule@field`.
fn broken_fields() -> Vec<(&'static str, Mutation)> {
    vec![
        ("unknown_field@extra", Box::new(|d| d["extra"] = 1.into())),
        (
            "unknown_field@identity.extra",
            Box::new(|d| d["identity"]["extra"] = 1.into()),
        ),
        (
            "exact_string@schema",
            Box::new(|d| d["schema"] = "a3s.code.agent-change-set.v2".into()),
        ),
        (
            "digest@patch_digest",
            Box::new(|d| d["patch_digest"] = format!("sha256:{}", "0".repeat(64)).into()),
        ),
        (
            "patch_bytes@patch_bytes",
            Box::new(|d| d["patch_bytes"] = 1.into()),
        ),
        (
            "base64@patch_base64",
            Box::new(|d| d["patch_base64"] = "not base64!".into()),
        ),
        (
            "tree_format@base_tree",
            Box::new(|d| d["base_tree"] = "git-tree:xyz".into()),
        ),
        (
            "observed_at@observed_at_ms",
            Box::new(|d| d["observed_at_ms"] = 0.into()),
        ),
        (
            "id_format@identity.session_id",
            Box::new(|d| d["identity"]["session_id"] = "a\nb".into()),
        ),
    ]
}

#[test]
fn verify_names_the_broken_rule_and_field() {
    let fx = Fixture::new();
    fx.bind("v");
    std::fs::write(fx.isolation("v").join("x.txt"), "x\n").unwrap();
    let (_, good) = fx.json(&["capture", "-s", "v"]);
    let (code, ok) = verify_file(&fx, good.to_string().as_bytes());
    assert_eq!(code, 0, "{ok}");
    assert_eq!(ok["schema"], "a3s-iso.verify.v1");
    assert_eq!(ok["valid"], true);
    assert_eq!(ok["patch_digest"], good["patch_digest"]);

    let cases = broken_fields();
    for (expected, mutate) in cases {
        let mut doc = good.clone();
        mutate(&mut doc);
        let (code, err) = verify_file(&fx, doc.to_string().as_bytes());
        assert_eq!(code, 5, "{expected}: {err}");
        // The rule and the field are data, not only words in the message.
        let (rule, field) = expected.split_once('@').unwrap();
        let (found_rule, found_field, message) = crate::fixture::broken_rule(&err);
        assert_eq!(
            (found_rule.as_str(), found_field.as_str()),
            (rule, field),
            "{err}"
        );
        assert!(
            message.contains(&format!("({rule})")),
            "{expected}: {message}"
        );
    }
    let mut huge = good.to_string().into_bytes();
    huge.extend(std::iter::repeat_n(b' ', 5_800_000));
    let (code, err) = verify_file(&fx, &huge);
    assert_eq!(code, 5);
    assert_eq!(
        crate::fixture::broken_rule(&err).0,
        "document_size",
        "{err}"
    );
    // An empty patch is valid.
    let (_, empty) = {
        fx.json(&["discard", "-s", "v"]);
        fx.bind("e");
        fx.json(&["capture", "-s", "e"])
    };
    assert_eq!(verify_file(&fx, empty.to_string().as_bytes()).0, 0);
}

#[test]
fn resume_restores_the_last_capture_into_a_new_isolation() {
    let fx = Fixture::new();
    let bound = fx.bind("res")["bound_revision"]
        .as_str()
        .unwrap()
        .to_string();
    let iso = fx.isolation("res");
    std::fs::write(iso.join("README.md"), "edited\n").unwrap();
    std::fs::remove_file(iso.join("src/lib.txt")).unwrap();
    std::fs::write(iso.join("added.txt"), "added\n").unwrap();
    let (_, captured) = fx.json(&["capture", "-s", "res"]);
    fx.json(&["discard", "-s", "res"]);
    assert!(!iso.exists());
    fx.write("moved.txt", "the source moved on\n");
    fx.commit_all("moved");

    let (code, doc) = fx.json(&["bind", "-s", "res", "--resume"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["bound_revision"], bound.as_str());
    assert_eq!(fx.git(&iso, &["rev-parse", "HEAD"]), bound);
    // Uncommitted changes on the bound revision: index at HEAD, new file untracked.
    assert_eq!(fx.git(&iso, &["diff", "--cached", "--name-only"]), "");
    assert!(
        fx.git(&iso, &["status", "--porcelain"])
            .contains("?? added.txt")
    );
    let (_, again) = fx.json(&["capture", "-s", "res"]);
    assert_eq!(tree(&again, "result_tree"), tree(&captured, "result_tree"));
}

#[test]
fn capture_refuses_sessions_without_an_isolation() {
    let fx = Fixture::new();
    fx.json(&["bind", "-s", "ro", "--read-only"]);
    let (code, doc) = fx.json(&["capture", "-s", "ro"]);
    assert_eq!((code, error_code(&doc)), (1, "read_only_session"));
    fx.bind("gone");
    fx.json(&["discard", "-s", "gone"]);
    let (code, doc) = fx.json(&["capture", "-s", "gone"]);
    assert_eq!((code, error_code(&doc)), (1, "change_set_unavailable"));
    let (code, doc) = fx.json(&["capture", "-s", "gone", "--run-id", "bad/id"]);
    assert_eq!((code, error_code(&doc)), (5, "invalid_id"));
    let missing = fx.root.join("nope.json");
    let (code, doc) = fx.json(&["verify", missing.to_str().unwrap()]);
    assert_eq!((code, error_code(&doc)), (1, "change_set_unavailable"));
}

#[test]
fn an_isolation_index_the_command_split_is_left_untouched() {
    let fx = Fixture::new();
    fx.bind("split");
    let iso = fx.isolation("split");
    fx.git(&iso, &["update-index", "--split-index"]);
    let admin = std::path::PathBuf::from(fx.git(&iso, &["rev-parse", "--absolute-git-dir"]));
    assert!(
        std::fs::read_dir(&admin)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("sharedindex.")),
        "git made no shared index"
    );
    std::fs::write(iso.join("README.md"), "split\n").unwrap();
    let index_before = std::fs::read(admin.join("index")).unwrap();
    let (code, doc) = fx.json(&["capture", "-s", "split"]);
    assert_eq!(code, 0, "{doc}");
    let patch = String::from_utf8(decode_patch(&doc)).unwrap();
    assert!(
        patch.contains("+split") && patch.matches("diff --git").count() == 1,
        "{patch}"
    );
    assert_eq!(std::fs::read(admin.join("index")).unwrap(), index_before);
}

#[test]
fn rewritten_admin_links_are_put_back_before_a_capture() {
    let fx = Fixture::new();
    let other = fx.root.join("work/other");
    std::fs::create_dir(&other).unwrap();
    fx.git(&other, &["init", "-q"]);
    fx.bind("links");
    let iso = fx.isolation("links");
    let admin = std::path::PathBuf::from(fx.git(&iso, &["rev-parse", "--absolute-git-dir"]));
    std::fs::write(
        admin.join("commondir"),
        format!("{}\n", other.join(".git").display()),
    )
    .unwrap();
    std::fs::write(admin.join("gitdir"), "/nowhere/.git\n").unwrap();
    std::fs::write(iso.join("work.txt"), "work\n").unwrap();
    let (code, doc) = fx.json(&["capture", "-s", "links", "--run-id", "r"]);
    assert_eq!(code, 0, "{doc}");
    let result = tree(&doc, "result_tree");
    assert_eq!(
        fx.git(&fx.src, &["cat-file", "-t", &result]),
        "tree",
        "the objects landed in this repository"
    );
    assert_eq!(
        fx.git(&other, &["count-objects"]).split_whitespace().next(),
        Some("0")
    );
    assert_eq!(
        std::fs::read_to_string(admin.join("commondir")).unwrap(),
        "../..\n"
    );
}

#[test]
fn resume_rebuilds_an_isolation_deleted_behind_a3s_isos_back() {
    let fx = Fixture::new();
    fx.bind("lost");
    let iso = fx.isolation("lost");
    std::fs::write(iso.join("kept.txt"), "captured before the loss\n").unwrap();
    let (_, captured) = fx.json(&["capture", "-s", "lost"]);
    std::fs::remove_dir_all(&iso).unwrap();
    let (code, doc) = fx.json(&["bind", "-s", "lost"]);
    assert_eq!((code, error_code(&doc)), (1, "session_exists"));
    assert!(doc["error"]["hint"].as_str().unwrap().contains("--resume"));
    let (code, doc) = fx.json(&["bind", "-s", "lost", "--resume"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        std::fs::read_to_string(iso.join("kept.txt")).unwrap(),
        "captured before the loss\n"
    );
    let (_, again) = fx.json(&["capture", "-s", "lost"]);
    assert_eq!(again["result_tree"], captured["result_tree"]);
    assert_eq!(
        fx.worktrees().len(),
        2,
        "the stale registration was replaced, not duplicated"
    );
}

#[test]
fn a_nested_repository_without_a_commit_is_left_out_and_the_rest_is_captured() {
    // An agent that scaffolds a project with `git init` and nothing more: git cannot add such
    // a repository, and the capture must not fail for it.
    let fx = Fixture::new();
    fx.bind("scaffold");
    let tree = fx.isolation("scaffold");
    for name in ["new-project", "deeper/other"] {
        fx.git(&tree, &["init", "-q", name]);
        std::fs::write(tree.join(name).join("main.txt"), "scaffold\n").unwrap();
    }
    std::fs::write(tree.join("top.txt"), "captured\n").unwrap();
    let (code, doc) = fx.json(&["capture", "-s", "scaffold"]);
    assert_eq!(code, 0, "{doc}");
    let patch = String::from_utf8(decode_patch(&doc)).unwrap();
    assert!(patch.contains("b/top.txt"), "{patch}");
    assert!(!patch.contains("main.txt"), "{patch}");
    let out = fx
        .cmd()
        .args(["capture", "-s", "scaffold"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    for name in ["new-project", "deeper/other"] {
        assert!(stderr.contains(name), "{stderr}");
    }
    let (code, promoted) = fx.json(&["promote", "-s", "scaffold"]);
    assert_eq!(code, 0, "{promoted}");
    assert_eq!(
        std::fs::read_to_string(fx.src.join("top.txt")).unwrap(),
        "captured\n"
    );
    assert!(!fx.src.join("new-project").exists());
}
