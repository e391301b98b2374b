//! The scripts a user runs from the README: the demo and the CI step.

use std::path::Path;
use std::process::Command;

use sha2::Digest;

use crate::fixture::{BIN, Fixture, isolate, require_tool};

fn script(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(name)
}

#[test]
fn the_demo_runs_the_whole_lifecycle() {
    let fx = Fixture::bare_root();
    let mut cmd = Command::new("bash");
    cmd.arg(script("demo.sh"));
    isolate(&mut cmd, &fx.home);
    let out = cmd
        .env("A3S_ISO_BIN", BIN)
        .env("TMPDIR", &fx.root)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Each command it shows can be pasted: the shell reads back the words it ran.
    let run = stdout
        .lines()
        .find(|l| l.starts_with("$ ") && l.contains(" sh -c "))
        .expect("the demo shows the agent's run");
    // (In a throwaway directory: a line that is not quoted would redirect there.)
    let words = Command::new("bash")
        .current_dir(&fx.root)
        .args([
            "-c",
            "eval \"set -- $1\"; printf '%s\\n' \"${@: -1}\"",
            "_",
            &run[2..],
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&words.stdout),
        "printf \"hello\\nfrom the agent\\n\" > README.md; printf \"notes\\n\" > NOTES.md\n",
        "{run}"
    );
    for expected in [
        "applied: 2 files changed",
        "idempotent",
        "conflict (head_moved)",
        "would reclaim 1 isolation",
        "== done",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in:\n{stdout}"
        );
    }
}

/// A clone of the fixture's source at `<root>/<name>`.
fn clone_source(fx: &Fixture, name: &str) -> std::path::PathBuf {
    let clone = fx.root.join(name);
    fx.git(
        &fx.root,
        &[
            "clone",
            "-q",
            fx.src.to_str().unwrap(),
            clone.to_str().unwrap(),
        ],
    );
    clone
}

/// The CI step promoting `doc` into `checkout`, its artifacts under `tmp`, retrying onto a
/// moved HEAD as `retry` says.
fn ci_job(
    fx: &Fixture,
    doc: &Path,
    tmp: &Path,
    checkout: &Path,
    retry: &str,
) -> std::process::Output {
    let mut cmd = Command::new("bash");
    cmd.arg(script("ci-promote.sh"))
        .arg(doc)
        .arg(checkout)
        .current_dir(&fx.root);
    isolate(&mut cmd, &fx.home);
    cmd.env("A3S_ISO_BIN", BIN)
        .env("TMPDIR", tmp)
        .env("A3S_ISO_RETRY_ONTO_HEAD", retry)
        .output()
        .unwrap()
}

/// The job applies the document into a fresh clone, its artifacts beside it; a re-run reports
/// its own outcome, idempotent.
fn applied_then_idempotent(fx: &Fixture, doc: &Path, tmp: &Path, clone: &Path) {
    let out = ci_job(fx, doc, tmp, clone, "true");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.starts_with("a3s-iso promote: applied sha256:"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_to_string(clone.join("README.md")).unwrap(),
        "agent change\n"
    );
    // The artifacts go beside, not into, the checkout: only the promoted path is changed.
    assert_eq!(fx.git(clone, &["status", "--porcelain"]), " M README.md");
    let artifacts: Vec<_> = std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(artifacts.len(), 1, "{artifacts:?}");
    assert!(artifacts[0].join("summary.json").is_file());
    let outcome = |dir: &Path| std::fs::read_to_string(dir.join("outcome.env")).unwrap();
    assert!(outcome(&artifacts[0]).starts_with("A3S_ISO_OUTCOME=applied\n"));
    // A re-run reports its own outcome, not the first run's.
    let out = ci_job(fx, doc, tmp, clone, "true");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.starts_with("a3s-iso promote: idempotent: sha256:"),
        "{stdout}"
    );
    assert!(outcome(&artifacts[0]).starts_with("A3S_ISO_OUTCOME=idempotent\n"));
    assert!(
        std::fs::read_to_string(artifacts[0].join("promote.json"))
            .unwrap()
            .contains("\"outcome\": \"idempotent\"")
    );
}

/// Another checkout whose README moved on: the job fails as a conflict, with and without the
/// retry onto the moved HEAD, and nothing is applied.
fn a_moved_checkout_is_a_conflict(fx: &Fixture, doc: &Path, tmp: &Path) {
    let moved = clone_source(fx, "moved");
    std::fs::write(moved.join("README.md"), "someone else's change\n").unwrap();
    fx.git(&moved, &["commit", "-qam", "moved"]);
    // Without the retry onto the moved HEAD, the conflict is the moved base.
    let out = ci_job(fx, doc, tmp, &moved, "false");
    assert_eq!(out.status.code(), Some(3), "a conflict exits 3");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("error: conflict (base_differs)"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // With it (the default), the change set is tried on the moved HEAD, where it does not apply.
    let out = ci_job(fx, doc, tmp, &moved, "true");
    assert_eq!(out.status.code(), Some(3), "a conflict exits 3");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(
            "a3s-iso promote: the branch moved since the change set was taken (base_differs)"
        ),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "error: conflict (patch_does_not_apply) onto the moved HEAD (the branch moved since the change set was taken: base_differs): the change set does not fit this checkout; nothing was applied; conflicting paths: README.md"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(moved.join("README.md")).unwrap(),
        "someone else's change\n"
    );
    assert_eq!(fx.git(&moved, &["status", "--porcelain"]), "");
    let out = ci_job(fx, doc, tmp, &moved, "sometimes");
    assert_eq!(out.status.code(), Some(2), "a bad setting is a usage error");
}

/// A document that breaks a rule: exit 5, the rule and field said, nothing applied.
fn a_broken_document_exits_5(fx: &Fixture, doc: &Path, tmp: &Path) {
    let mut tampered: serde_json::Value =
        serde_json::from_slice(&std::fs::read(doc).unwrap()).unwrap();
    tampered["patch_bytes"] = serde_json::json!(1);
    std::fs::write(doc, serde_json::to_vec_pretty(&tampered).unwrap()).unwrap();
    let fresh = clone_source(fx, "fresh");
    let out = ci_job(fx, doc, tmp, &fresh, "true");
    assert_eq!(out.status.code(), Some(5));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(
            "a3s-iso promote: error: the change set is invalid: rule patch_bytes broken at field patch_bytes"
        ),
        "{stderr}"
    );
    assert_eq!(fx.git(&fresh, &["status", "--porcelain"]), "");
}

#[test]
fn the_ci_step_passes_applied_and_idempotent_and_fails_on_conflict() {
    if !require_tool("jq") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("ci");
    std::fs::write(fx.isolation("ci").join("README.md"), "agent change\n").unwrap();
    let doc = fx.root.join("ci.json");
    let (code, _) = fx.json(&["capture", "-s", "ci", "-o", doc.to_str().unwrap()]);
    assert_eq!(code, 0);
    let tmp = fx.root.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let clone = clone_source(&fx, "job");
    applied_then_idempotent(&fx, &doc, &tmp, &clone);
    // Another checkout whose README moved on: the job fails and nothing is applied.
    a_moved_checkout_is_a_conflict(&fx, &doc, &tmp);
    a_broken_document_exits_5(&fx, &doc, &tmp);
}

/// The CI step reads a3s-iso's documents with jq: without it, it stops before running
/// anything, saying so, rather than misreading a document.
#[test]
fn the_ci_step_stops_at_once_without_jq() {
    let fx = Fixture::new();
    // A PATH with bash alone: no jq (nor git, nor a3s-iso).
    let bin = fx.root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(which_tool("bash"), bin.join("bash")).unwrap();
    let mut cmd = Command::new(bin.join("bash"));
    cmd.arg(script("ci-promote.sh"))
        .arg(fx.root.join("change-set.json"))
        .current_dir(&fx.src);
    isolate(&mut cmd, &fx.home);
    let out = cmd
        .env("PATH", &bin)
        .env("A3S_ISO_BIN", BIN)
        .env("A3S_ISO_CI", "plain")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with("a3s-iso promote: error: jq is missing"),
        "{stderr}"
    );
    assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), "");
}

#[test]
fn the_install_step_installs_only_a_tarball_whose_sha256_matches() {
    let fx = Fixture::bare_root();
    let pkg = fx.root.join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::copy(BIN, pkg.join("a3s-iso")).unwrap();
    let tarball = fx.root.join("a3s-iso.tar.gz");
    let tar = Command::new("tar")
        .arg("-czf")
        .arg(&tarball)
        .arg("-C")
        .arg(&fx.root)
        .arg("pkg")
        .status()
        .unwrap();
    assert!(tar.success());
    let sha256 = hex::encode(sha2::Sha256::digest(std::fs::read(&tarball).unwrap()));
    let installed = fx.home.join(".local/bin/a3s-iso");
    let install = |sum: Option<&str>| {
        let mut cmd = Command::new("bash");
        cmd.arg(script("install.sh"));
        isolate(&mut cmd, &fx.home);
        cmd.env(
            "A3S_ISO_RELEASE_URL",
            format!("file://{}", tarball.display()),
        )
        .env("TMPDIR", &fx.root);
        if let Some(sum) = sum {
            cmd.env("A3S_ISO_RELEASE_SHA256", sum);
        }
        cmd.output().unwrap()
    };
    assert_eq!(
        install(None).status.code(),
        Some(2),
        "a URL needs its sha256"
    );
    let wrong = if sha256.starts_with('0') { "1" } else { "0" }.repeat(64);
    let out = install(Some(&wrong));
    assert_eq!(
        out.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("sha256 mismatch"));
    assert!(!installed.exists(), "nothing installed on a mismatch");
    let out = install(Some(&sha256));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        installed.to_str().unwrap()
    );
    assert_eq!(
        std::fs::read(&installed).unwrap(),
        std::fs::read(BIN).unwrap()
    );
}

#[test]
fn the_install_step_builds_a_pinned_revision_with_cargo_when_there_is_no_release() {
    let fx = Fixture::bare_root();
    // A stand-in cargo on PATH: records its arguments and puts a binary where --root says.
    let fake = fx.root.join("fake-bin");
    std::fs::create_dir_all(&fake).unwrap();
    let args_file = fx.root.join("cargo-args");
    std::fs::write(
        fake.join("cargo"),
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nwhile [ \"$1\" != --root ]; do shift; done\nmkdir -p \"$2/bin\" && cp '{BIN}' \"$2/bin/a3s-iso\"\n",
            args_file.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        fake.join("cargo"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let root = fx.root.join("tools");
    let install = |rev: Option<&str>| {
        let mut cmd = Command::new("bash");
        cmd.arg(script("install.sh"));
        isolate(&mut cmd, &fx.home);
        let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap());
        cmd.env("PATH", path)
            .env("A3S_ISO_INSTALL_GIT", "https://git.example.com/a3s-iso.git")
            .env("A3S_ISO_INSTALL_ROOT", &root);
        if let Some(rev) = rev {
            cmd.env("A3S_ISO_INSTALL_REV", rev);
        }
        cmd.output().unwrap()
    };
    let out = install(None);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a build is pinned to a revision"
    );
    assert!(!args_file.exists(), "cargo never ran");
    let out = install(Some("0123abcd"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let root_arg = root.display().to_string();
    assert_eq!(
        std::fs::read_to_string(&args_file)
            .unwrap()
            .lines()
            .collect::<Vec<_>>(),
        [
            "install",
            "--locked",
            "--force",
            "--git",
            "https://git.example.com/a3s-iso.git",
            "--rev",
            "0123abcd",
            "--root",
            root_arg.as_str(),
            "a3s-iso"
        ]
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        root.join("bin/a3s-iso").to_str().unwrap()
    );
}

/// The commands of the first `sh` block after `heading` in a markdown file, comments dropped.
fn commands_under(file: &str, heading: &str) -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
    let section = &text[text
        .find(heading)
        .unwrap_or_else(|| panic!("{file}: no {heading}"))..];
    let block = section.split("```").nth(1).expect("a code block");
    block
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(String::from)
        .collect()
}

/// One test command everywhere: the README's, CONTRIBUTING.md's and the one `.ci/run` runs
/// are the same line, and it is the script that installs what the suite needs.
#[test]
fn ci_runs_exactly_the_readmes_test_command() {
    let readme = commands_under("README.md", "## Development");
    assert_eq!(readme, ["scripts/test.sh"], "the README's test command");
    let contributing = commands_under("CONTRIBUTING.md", "## Test");
    assert_eq!(contributing, readme, "CONTRIBUTING.md's test command");
    let ci =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/run")).unwrap();
    let ci_commands: Vec<&str> = ci
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(
        ci_commands.contains(&readme[0].as_str()),
        ".ci/run does not run {:?}:\n{ci}",
        readme[0]
    );
    // Nothing else in CI runs tests: the test command is the whole of it.
    let other_tests: Vec<&&str> = ci_commands
        .iter()
        .filter(|l| l.contains("cargo test") || l.contains("nextest"))
        .collect();
    assert!(other_tests.is_empty(), "{other_tests:?}");
    let script = std::fs::read_to_string(script("test.sh")).unwrap();
    assert!(script.contains("cargo test --locked --workspace --features fault-injection"));
    assert!(script.contains("A3S_ISO_TEST_OBJECT_FORMAT=sha256"));
}

/// The test command stops at once, naming the tool it cannot install and the variable that
/// lets its tests skip, instead of running a suite that would fail on it.
#[test]
fn the_test_command_names_a_tool_it_cannot_install() {
    let fx = Fixture::new();
    // A PATH with bash and coreutils only: no git, zsh, fish … and no apt-get to install them.
    let bin = fx.root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["bash", "env", "dirname", "id", "cat"] {
        let found = which_tool(tool);
        std::os::unix::fs::symlink(found, bin.join(tool)).unwrap();
    }
    let out = Command::new(bin.join("bash"))
        .arg(script("test.sh"))
        .env_clear()
        .env("PATH", &bin)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("missing git"), "{stderr}");
    assert!(
        stderr.contains("zsh") && stderr.contains("fish"),
        "{stderr}"
    );
    assert!(stderr.contains("A3S_ISO_TEST_ALLOW_MISSING="), "{stderr}");
}

fn which_tool(tool: &str) -> std::path::PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|dir| dir.join(tool))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{tool} not on PATH"))
}

/// A release directory as scripts/package.sh writes it: install.sh picks this machine's
/// tarball, checks it against the `.sha256` beside it (or a pinned sum, which wins), and
/// refuses a tarball that does not match either, installing nothing.
#[test]
fn the_install_step_takes_this_machines_tarball_from_a_release_directory() {
    let fx = Fixture::bare_root();
    let (release, tarball, sha256) = release_dir(&fx);
    let installed = fx.home.join(".local/bin/a3s-iso");
    let install = |pinned: Option<&str>| {
        let mut cmd = Command::new("bash");
        cmd.arg(script("install.sh"));
        isolate(&mut cmd, &fx.home);
        cmd.env(
            "A3S_ISO_RELEASE_BASE",
            format!("file://{}/", release.display()),
        )
        .env("TMPDIR", &fx.root);
        if let Some(sum) = pinned {
            cmd.env("A3S_ISO_RELEASE_SHA256", sum);
        }
        cmd.output().unwrap()
    };
    // A pinned sum that differs wins over the file beside the tarball.
    let wrong = if sha256.starts_with('0') { "1" } else { "0" }.repeat(64);
    let out = install(Some(&wrong));
    assert_eq!(
        out.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!installed.exists());
    // The tarball replaced after its sum was written: refused.
    let good = std::fs::read(&tarball).unwrap();
    let mut bad = good.clone();
    bad.extend_from_slice(b"tampered");
    std::fs::write(&tarball, &bad).unwrap();
    let out = install(None);
    assert_eq!(
        out.status.code(),
        Some(5),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!installed.exists(), "nothing installed on a mismatch");
    // The release as published: installed, byte for byte.
    std::fs::write(&tarball, &good).unwrap();
    let out = install(None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(&installed).unwrap(),
        std::fs::read(BIN).unwrap()
    );
    // Installed again from the same release (a CI cache restored the install root): kept,
    // without the tarball, pinned or not.
    std::fs::remove_file(&tarball).unwrap();
    for pinned in [None, Some(sha256.as_str())] {
        let out = install(pinned);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(stderr.contains("already: kept"), "{stderr}");
    }
    // A binary that is not the one the kept tarball holds is not kept: it is installed again
    // from that tarball, whose sum is still the release's.
    let mut changed = std::fs::read(BIN).unwrap();
    changed.extend_from_slice(b"changed");
    std::fs::write(&installed, &changed).unwrap();
    let out = install(None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("kept"), "{stderr}");
    assert_eq!(
        std::fs::read(&installed).unwrap(),
        std::fs::read(BIN).unwrap()
    );
}

/// The comment of the CI recipes is written from a3s-iso's documents only: anything else is
/// refused (exit 2) before a line is printed.
#[test]
fn the_comment_step_refuses_what_is_not_a_document_of_a3s_iso() {
    if !require_tool("jq") {
        return;
    }
    let fx = Fixture::bare_root();
    let comment = |args: &[&Path]| {
        let mut cmd = Command::new("bash");
        cmd.arg(script("ci-comment.sh")).args(args);
        isolate(&mut cmd, &fx.home);
        cmd.env("TMPDIR", &fx.root).output().unwrap()
    };
    let other = fx.root.join("other.json");
    std::fs::write(
        &other,
        r#"{"schema": "something.else.v1", "outcome": "applied"}"#,
    )
    .unwrap();
    let text = fx.root.join("text.json");
    std::fs::write(&text, "applied\n").unwrap();
    let missing = fx.root.join("missing.json");
    for args in [
        &[][..],
        &[other.as_path()],
        &[text.as_path()],
        &[missing.as_path()],
    ] {
        let out = comment(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // A promote document, with a change set that is not one.
    let promote = fx.root.join("promote.json");
    std::fs::write(
        &promote,
        r#"{"schema": "a3s-iso.promote.v1", "outcome": "empty", "digest": null}"#,
    )
    .unwrap();
    let out = comment(&[promote.as_path(), other.as_path()]);
    assert_eq!(out.status.code(), Some(2));
    let out = comment(&[promote.as_path()]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "### a3s-iso: the agent's change set\n\n**Empty**: the agent changed nothing; there is nothing to commit.\n"
    );
}

/// The release workflow packs both static targets with scripts/package.sh, each checked by the
/// lifecycle before it is published, and CI packs, installs and runs the x86_64 one.
#[test]
fn the_release_workflow_and_ci_build_the_static_binary_the_installer_takes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workflow = std::fs::read_to_string(root.join(".github/workflows/release.yml")).unwrap();
    for target in ["x86_64-unknown-linux-musl", "aarch64-unknown-linux-musl"] {
        assert!(workflow.contains(&format!("target: {target}")), "{target}");
    }
    for needed in [
        "scripts/package.sh",
        "scripts/install.sh",
        "scripts/demo.sh",
        "timeout-minutes:",
        "concurrency:",
        "SHA256SUMS",
    ] {
        assert!(workflow.contains(needed), "release.yml lacks {needed}");
    }
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    for needed in [
        "scripts/package.sh x86_64-unknown-linux-musl",
        "scripts/install.sh",
        "scripts/demo.sh",
    ] {
        assert!(ci.contains(needed), ".ci/run lacks {needed}");
    }
    let package = std::fs::read_to_string(script("package.sh")).unwrap();
    assert!(package.contains("rustup target add"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    assert!(manifest.contains("[package.metadata.binstall]"));
    assert!(manifest.contains("a3s-iso-{ target }.tar.gz"));
}

/// A release directory under `fx.root` as scripts/package.sh writes it: this machine's tarball
/// holding the binary under test, and its `.sha256` beside it. Returns the directory, the
/// tarball and its sum.
fn release_dir(fx: &Fixture) -> (std::path::PathBuf, std::path::PathBuf, String) {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x86_64",
        "aarch64" => "aarch64",
        other => panic!("no release target for {other}"),
    };
    let name = format!("a3s-iso-{arch}-unknown-linux-musl");
    let release = fx.root.join("release");
    std::fs::create_dir_all(release.join(&name)).unwrap();
    std::fs::copy(BIN, release.join(&name).join("a3s-iso")).unwrap();
    let tarball = release.join(format!("{name}.tar.gz"));
    let tar = Command::new("tar")
        .arg("-czf")
        .arg(&tarball)
        .arg("-C")
        .arg(&release)
        .arg(&name)
        .status()
        .unwrap();
    assert!(tar.success());
    let sha256 = hex::encode(sha2::Sha256::digest(std::fs::read(&tarball).unwrap()));
    let sum_file = release.join(format!("{name}.tar.gz.sha256"));
    std::fs::write(&sum_file, format!("{sha256}  {name}.tar.gz\n")).unwrap();
    (release, tarball, sha256)
}

/// Whoever writes a CI cache writes everything in it: a binary planted in a restored install
/// root, with a record beside it that names the release and the planted binary's own sum (as
/// the record install.sh writes), is neither kept nor run. Only the release's sum, pinned or
/// published beside the tarball, vouches for a binary.
/// An install root restored from a cache someone else wrote: install.sh run into it, and a
/// binary planted in it that would leave `marker` behind if it ran.
struct PlantedRoot<'a> {
    fx: &'a Fixture,
    base: String,
    tarball: std::path::PathBuf,
    sha256: String,
    root: std::path::PathBuf,
    installed: std::path::PathBuf,
    marker: std::path::PathBuf,
    planted: String,
}

impl PlantedRoot<'_> {
    fn new(fx: &Fixture) -> PlantedRoot<'_> {
        let (release, tarball, sha256) = release_dir(fx);
        std::fs::copy(&tarball, fx.root.join("release-copy.tar.gz")).unwrap();
        let root = fx.root.join("tools");
        let marker = fx.root.join("planted-ran");
        let planted = format!(
            "#!/bin/sh\ntouch '{}'\necho 'a3s-iso 9.9.9'\n",
            marker.display()
        );
        PlantedRoot {
            fx,
            base: format!("file://{}/", release.display()),
            tarball,
            sha256,
            installed: root.join("bin/a3s-iso"),
            root,
            marker,
            planted,
        }
    }

    /// The planted binary in the install root, with a record naming the release and the
    /// binary's own sum.
    fn plant(&self) {
        let binary = self.planted.as_bytes();
        let origin = format!(
            "release file://{} sha256:{}",
            self.tarball.display(),
            self.sha256
        );
        std::fs::create_dir_all(self.root.join("bin")).unwrap();
        std::fs::create_dir_all(self.root.join("share/a3s-iso")).unwrap();
        std::fs::write(&self.installed, binary).unwrap();
        std::fs::set_permissions(
            &self.installed,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let own = hex::encode(sha2::Sha256::digest(binary));
        std::fs::write(
            self.root.join("share/a3s-iso/installed"),
            format!("{origin}\nbinary sha256:{own}\n"),
        )
        .unwrap();
    }

    /// install.sh into the root, with the release's sum pinned or not.
    fn install(&self, pinned: Option<&str>) -> std::process::Output {
        let mut cmd = Command::new("bash");
        cmd.arg(script("install.sh"));
        isolate(&mut cmd, &self.fx.home);
        cmd.env("A3S_ISO_RELEASE_BASE", &self.base)
            .env("A3S_ISO_INSTALL_ROOT", &self.root)
            .env("TMPDIR", &self.fx.root);
        if let Some(sum) = pinned {
            cmd.env("A3S_ISO_RELEASE_SHA256", sum);
        }
        cmd.output().unwrap()
    }

    /// The install failed for want of the release, and the planted binary neither ran nor left.
    fn refused(&self, out: &std::process::Output) {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("could not download"), "{stderr}");
        assert!(!self.marker.exists(), "the planted binary ran: {stderr}");
        assert_eq!(
            std::fs::read(&self.installed).unwrap(),
            self.planted.as_bytes()
        );
    }
}

/// Links where install.sh writes its new files point at a file of the user's: the release is
/// installed, the user's file untouched, the planted binary never run.
fn links_where_install_writes_reach_nothing(planted: &PlantedRoot<'_>) {
    let (fx, root) = (planted.fx, &planted.root);
    let victim = fx.root.join("victim");
    std::fs::write(&victim, "the user's\n").unwrap();
    for pinned in [None, Some(planted.sha256.as_str())] {
        planted.plant();
        for link in ["bin/a3s-iso.new", "share/a3s-iso/release.tar.gz.new"] {
            std::os::unix::fs::symlink(&victim, root.join(link)).unwrap();
        }
        let out = planted.install(pinned);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(!stderr.contains("kept"), "{stderr}");
        assert!(!planted.marker.exists(), "the planted binary ran: {stderr}");
        assert_eq!(
            std::fs::read(&planted.installed).unwrap(),
            std::fs::read(BIN).unwrap()
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "the user's\n");
        // The tarball kept is the release's, byte for byte; no record vouches for anything.
        let kept = root.join("share/a3s-iso/release.tar.gz");
        assert_eq!(
            std::fs::read(&kept).unwrap(),
            std::fs::read(&planted.tarball).unwrap()
        );
        assert!(!root.join("share/a3s-iso/installed").exists());
        std::fs::remove_file(kept).unwrap();
    }
}

/// A tarball of the planted binary where the install root keeps the release's.
fn plant_a_tarball(planted: &PlantedRoot<'_>) {
    let cached_tarball = planted.root.join("share/a3s-iso/release.tar.gz");
    let fake_release = planted.fx.root.join("fake");
    std::fs::create_dir_all(fake_release.join("pkg")).unwrap();
    std::fs::write(fake_release.join("pkg/a3s-iso"), &planted.planted).unwrap();
    let tar = Command::new("tar")
        .arg("-czf")
        .arg(&cached_tarball)
        .arg("-C")
        .arg(&fake_release)
        .arg("pkg")
        .status()
        .unwrap();
    assert!(tar.success());
}

/// Installed from the release, then the binary replaced while the tarball the install root
/// keeps is the release's: that tarball is installed again, without the release.
fn the_kept_release_tarball_is_installed_again(planted: &PlantedRoot<'_>) {
    let (fx, sha256) = (planted.fx, &planted.sha256);
    std::fs::rename(fx.root.join("away.tar.gz"), &planted.tarball).unwrap();
    let out = planted.install(Some(sha256));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_file(&planted.tarball).unwrap();
    planted.plant();
    for pinned in [Some(sha256.as_str()), None] {
        let out = planted.install(pinned);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(!planted.marker.exists(), "the planted binary ran: {stderr}");
        assert_eq!(
            std::fs::read(&planted.installed).unwrap(),
            std::fs::read(BIN).unwrap()
        );
    }
    assert_eq!(
        std::fs::read(planted.root.join("share/a3s-iso/release.tar.gz")).unwrap(),
        std::fs::read(fx.root.join("release-copy.tar.gz")).unwrap()
    );
    assert!(!planted.root.join("share/a3s-iso/installed").exists());
}

#[test]
fn the_install_step_never_keeps_or_runs_a_cached_binary_that_vouches_for_itself() {
    let fx = Fixture::bare_root();
    let planted = PlantedRoot::new(&fx);
    links_where_install_writes_reach_nothing(&planted);
    // Without the release, a planted binary is refused and never run; nothing is installed.
    std::fs::rename(&planted.tarball, fx.root.join("away.tar.gz")).unwrap();
    planted.plant();
    planted.refused(&planted.install(Some(&planted.sha256)));
    // A planted tarball beside it does not vouch either: its sum is not the release's.
    plant_a_tarball(&planted);
    planted.plant();
    planted.refused(&planted.install(Some(&planted.sha256)));
    the_kept_release_tarball_is_installed_again(&planted);
}

/// A build from source has no published sum: a binary a cache restored is built again, never
/// kept on the word of the record beside it, and never run before.
#[test]
fn the_install_step_builds_again_rather_than_keep_a_cached_build() {
    let fx = Fixture::bare_root();
    let fake = fx.root.join("fake-bin");
    std::fs::create_dir_all(&fake).unwrap();
    let args_file = fx.root.join("cargo-args");
    std::fs::write(
        fake.join("cargo"),
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nwhile [ \"$1\" != --root ]; do shift; done\nmkdir -p \"$2/bin\" && cp '{BIN}' \"$2/bin/a3s-iso\"\n",
            args_file.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        fake.join("cargo"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let root = fx.root.join("tools");
    let installed = root.join("bin/a3s-iso");
    let marker = fx.root.join("planted-ran");
    let planted = format!(
        "#!/bin/sh\ntouch '{}'\necho 'a3s-iso 9.9.9'\n",
        marker.display()
    );
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::create_dir_all(root.join("share/a3s-iso")).unwrap();
    std::fs::write(&installed, &planted).unwrap();
    std::fs::set_permissions(
        &installed,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let own = hex::encode(sha2::Sha256::digest(planted.as_bytes()));
    std::fs::write(
        root.join("share/a3s-iso/installed"),
        format!("source https://git.example.com/a3s-iso.git 0123abcd\nbinary sha256:{own}\n"),
    )
    .unwrap();
    let mut cmd = Command::new("bash");
    cmd.arg(script("install.sh"));
    isolate(&mut cmd, &fx.home);
    let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap());
    cmd.env("PATH", path)
        .env("A3S_ISO_INSTALL_GIT", "https://git.example.com/a3s-iso.git")
        .env("A3S_ISO_INSTALL_REV", "0123abcd")
        .env("A3S_ISO_INSTALL_ROOT", &root);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("kept"), "{stderr}");
    assert!(!marker.exists(), "the planted binary ran: {stderr}");
    assert!(args_file.exists(), "cargo built it again: {stderr}");
    assert_eq!(
        std::fs::read(&installed).unwrap(),
        std::fs::read(BIN).unwrap()
    );
}
