//! The CI recipes under `examples/`: each job's shell steps are taken from the YAML and run in
//! order against throwaway repositories (a bare origin, one clone per runner), the way the CI
//! would run them. Checkouts are shallow (one commit fetched by id or branch, as both CIs do by
//! default); artifact upload and download, and the caches, are simulated by copying a
//! directory; the install step runs for real against a release directory made here from the
//! test binary, as scripts/package.sh lays one out. The forge's CLIs (`gh`, and `curl` for
//! GitLab's notes API) are stand-ins on the runner's PATH that record what they were asked.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use crate::fixture::{BIN, Fixture, isolate, require_tool, sandbox_available};

/// The parsed YAML: the subset the recipes use (block maps and sequences, literal block
/// scalars, plain and quoted scalars; flow collections are kept as their text).
#[derive(Debug, Clone)]
enum Yaml {
    Map(Vec<(String, Yaml)>),
    Seq(Vec<Yaml>),
    Str(String),
}

impl Yaml {
    fn get(&self, key: &str) -> Option<&Yaml> {
        match self {
            Yaml::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn str(&self) -> &str {
        match self {
            Yaml::Str(s) => s,
            other => panic!("not a scalar: {other:?}"),
        }
    }

    fn seq(&self) -> &[Yaml] {
        match self {
            Yaml::Seq(items) => items,
            other => panic!("not a sequence: {other:?}"),
        }
    }

    fn entries(&self) -> &[(String, Yaml)] {
        match self {
            Yaml::Map(entries) => entries,
            other => panic!("not a mapping: {other:?}"),
        }
    }
}

struct Parser {
    lines: Vec<String>,
    pos: usize,
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// `key:` or `key: value`, with a plain key, as YAML reads a line.
fn split_key(text: &str) -> Option<(&str, &str)> {
    let end = text.find(':')?;
    let key = &text[..end];
    let rest = &text[end + 1..];
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
    (plain && (rest.is_empty() || rest.starts_with(' '))).then_some((key, rest.trim()))
}

/// A scalar on one line: quoted, a flow collection (kept as text), or plain (a ` #` starts a
/// comment). A plain scalar holding `: ` would be a mapping to YAML: refused, not guessed.
fn scalar(text: &str) -> String {
    let text = text.trim();
    if let Some(inner) = text.strip_prefix('\'') {
        let end = inner.rfind('\'').expect("a closing quote");
        return inner[..end].replace("''", "'");
    }
    if let Some(inner) = text.strip_prefix('"') {
        let end = inner.rfind('"').expect("a closing quote");
        return inner[..end].replace("\\\"", "\"").replace("\\\\", "\\");
    }
    if text.starts_with('[') || text.starts_with('{') {
        return text.to_string();
    }
    let text = text.split(" #").next().unwrap().trim_end();
    assert!(
        !text.contains(": ") && !text.ends_with(':'),
        "ambiguous plain scalar: {text:?}"
    );
    text.to_string()
}

impl Parser {
    fn parse(text: &str) -> Yaml {
        let mut parser = Parser {
            lines: text.lines().map(String::from).collect(),
            pos: 0,
        };
        parser.skip();
        let doc = parser.node(0);
        parser.skip();
        assert_eq!(parser.pos, parser.lines.len(), "unparsed YAML left");
        doc
    }

    fn skip(&mut self) {
        while let Some(line) = self.lines.get(self.pos) {
            let t = line.trim();
            if !(t.is_empty() || t.starts_with('#')) {
                break;
            }
            self.pos += 1;
        }
    }

    /// The next meaningful line's indent, if there is one.
    fn peek_indent(&mut self) -> Option<usize> {
        self.skip();
        self.lines.get(self.pos).map(|l| indent_of(l))
    }

    fn is_item(&self, indent: usize) -> bool {
        let rest = &self.lines[self.pos][indent..];
        rest == "-" || rest.starts_with("- ")
    }

    fn node(&mut self, indent: usize) -> Yaml {
        assert!(
            !self.lines[self.pos].contains('\t'),
            "tabs in YAML indentation"
        );
        if self.is_item(indent) {
            self.sequence(indent)
        } else {
            self.mapping(indent)
        }
    }

    fn sequence(&mut self, indent: usize) -> Yaml {
        let mut items = Vec::new();
        while self.peek_indent() == Some(indent) && self.is_item(indent) {
            let content = self.lines[self.pos][indent + 1..].trim().to_string();
            if content.is_empty() {
                self.pos += 1;
                let inner = self.peek_indent().expect("an item");
                assert!(inner > indent);
                items.push(self.node(inner));
            } else if content.starts_with('|') {
                self.pos += 1;
                items.push(Yaml::Str(self.block_scalar(indent, &content)));
            } else if split_key(&content).is_some() {
                // A mapping that starts on the item's line: read it as if the dash were a space.
                self.lines[self.pos].replace_range(indent..indent + 1, " ");
                items.push(self.mapping(indent + 2));
            } else {
                self.pos += 1;
                items.push(Yaml::Str(scalar(&content)));
            }
        }
        Yaml::Seq(items)
    }

    fn mapping(&mut self, indent: usize) -> Yaml {
        let mut entries = Vec::new();
        while self.peek_indent() == Some(indent) && !self.is_item(indent) {
            let line = self.lines[self.pos][indent..].to_string();
            let (key, rest) =
                split_key(&line).unwrap_or_else(|| panic!("not a mapping entry: {line:?}"));
            self.pos += 1;
            let value = if rest.is_empty() {
                match self.peek_indent() {
                    Some(inner) if inner > indent || (inner == indent && self.is_item(indent)) => {
                        self.node(inner)
                    }
                    _ => Yaml::Str(String::new()),
                }
            } else if rest.starts_with('|') || rest.starts_with('>') {
                Yaml::Str(self.block_scalar(indent, rest))
            } else {
                Yaml::Str(scalar(rest))
            };
            entries.push((key.to_string(), value));
        }
        Yaml::Map(entries)
    }

    /// A literal block scalar (`|`, clipped) whose lines are indented deeper than `parent`.
    fn block_scalar(&mut self, parent: usize, header: &str) -> String {
        assert_eq!(header, "|", "only plain literal block scalars are used");
        let mut lines = Vec::new();
        while let Some(line) = self.lines.get(self.pos) {
            if !line.trim().is_empty() && indent_of(line) <= parent {
                break;
            }
            lines.push(line.clone());
            self.pos += 1;
        }
        while lines.last().is_some_and(|l| l.trim().is_empty()) {
            lines.pop();
        }
        let cut = lines
            .iter()
            .filter(|l| !l.trim().is_empty())
            .map(|l| indent_of(l))
            .min()
            .expect("a block scalar with content");
        let mut text: String = lines
            .iter()
            .map(|l| l.get(cut..).unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        text.push('\n');
        text
    }
}

#[test]
fn the_yaml_reader_reads_what_the_recipes_use() {
    let doc = Parser::parse(
        "# c\na:\n  b: 'x: y'\n  c: [1, 2]\n  d:\n    - one # note\n    - e: f\n      g: |\n        l1\n\n          l2\n    - |\n      s\nh: \"q\"\n",
    );
    let a = doc.get("a").unwrap();
    assert_eq!(a.get("b").unwrap().str(), "x: y");
    assert_eq!(a.get("c").unwrap().str(), "[1, 2]");
    let d = a.get("d").unwrap().seq();
    assert_eq!(d[0].str(), "one");
    assert_eq!(d[1].get("e").unwrap().str(), "f");
    assert_eq!(d[1].get("g").unwrap().str(), "l1\n\n  l2\n");
    assert_eq!(d[2].str(), "s\n");
    assert_eq!(doc.get("h").unwrap().str(), "q");
    let refused = std::panic::catch_unwind(|| Parser::parse("a:\n  - echo x: y\n"));
    assert!(
        refused.is_err(),
        "a plain scalar with ': ' is a mapping to YAML"
    );
}

/// What a test sets up once: an origin with the scripts vendored, the release directory.
struct World {
    fx: Fixture,
    origin: PathBuf,
    /// The uploaded artifacts, by name (GitHub) or job (GitLab).
    store: PathBuf,
    /// The saved caches, by key.
    caches: PathBuf,
    /// The release's download directory: this machine's tarball and its `.sha256`.
    release: PathBuf,
    tarball_sha256: String,
    /// The branch's commit the agent starts from.
    base: String,
    runners: usize,
}

/// The agent: changes one file and adds another (and proves it got its environment).
const AGENT: &str =
    "test -n \"$AGENT_API_KEY\"; echo fixed > src/lib.txt; mkdir -p docs; echo new > docs/agent.md";
const AGENT_PATHS: [&str; 2] = ["docs/agent.md", "src/lib.txt"];

impl World {
    fn new() -> World {
        let fx = Fixture::new();
        let vendored = fx.src.join("ci/a3s-iso");
        std::fs::create_dir_all(&vendored).unwrap();
        let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts");
        for script in ["install.sh", "ci-promote.sh", "ci-comment.sh"] {
            std::fs::copy(scripts.join(script), vendored.join(script)).unwrap();
        }
        fx.git(&fx.src, &["checkout", "-q", "-b", "feature"]);
        let base = fx.commit_all("vendor the CI scripts");
        let origin = fx.root.join("origin.git");
        fx.git(
            &fx.root,
            &[
                "clone",
                "-q",
                "--bare",
                "work/src",
                origin.to_str().unwrap(),
            ],
        );
        fx.git(&origin, &["config", "receive.advertisePushOptions", "true"]);
        // Both CIs fetch a commit by its id.
        fx.git(
            &origin,
            &["config", "uploadpack.allowReachableSHA1InWant", "true"],
        );
        // A release as scripts/package.sh writes one: the binary in a directory of its own,
        // tarred, and the tarball's sha256 beside it.
        let release = fx.root.join("release");
        let name = release_name();
        std::fs::create_dir_all(release.join(&name)).unwrap();
        std::fs::copy(BIN, release.join(&name).join("a3s-iso")).unwrap();
        let tarball = release.join(format!("{name}.tar.gz"));
        let status = Command::new("tar")
            .arg("-czf")
            .arg(&tarball)
            .arg("-C")
            .arg(&release)
            .arg(&name)
            .status()
            .unwrap();
        assert!(status.success());
        std::fs::remove_dir_all(release.join(&name)).unwrap();
        let tarball_sha256 = hex::encode(Sha256::digest(std::fs::read(&tarball).unwrap()));
        std::fs::write(
            release.join(format!("{name}.tar.gz.sha256")),
            format!("{tarball_sha256}  {name}.tar.gz\n"),
        )
        .unwrap();
        let store = fx.root.join("artifact-store");
        let caches = fx.root.join("cache-store");
        for d in [&store, &caches] {
            std::fs::create_dir_all(d).unwrap();
        }
        World {
            fx,
            origin,
            store,
            caches,
            release,
            tarball_sha256,
            base,
            runners: 0,
        }
    }

    /// Takes the release's tarball away: an install that needs it now fails, one the cache
    /// serves does not.
    fn withdraw_the_tarball(&self) {
        std::fs::remove_file(self.release.join(format!("{}.tar.gz", release_name()))).unwrap();
    }

    /// Pushes a commit to the branch's tip in the origin that writes `content` to `path`, as
    /// someone else working on the branch would; returns it.
    fn push_to_the_branch(&self, path: &str, content: &str) -> String {
        let tip = self.tip();
        let src = &self.fx.src;
        let origin = self.origin.to_str().unwrap();
        self.fx.git(src, &["fetch", "-q", origin, "feature"]);
        self.fx.git(src, &["reset", "-q", "--hard", &tip]);
        self.fx.write(path, content);
        let moved = self.fx.commit_all("someone else's change");
        self.fx.git(src, &["push", "-q", origin, "feature"]);
        assert_eq!(self.tip(), moved);
        moved
    }

    /// Someone else's commit of `path` on the branch, made now but pushed only when the next
    /// push reaches the origin: its `pre-receive` hook moves the branch there once, so that the
    /// push that started on the old tip loses the race. Returns that commit.
    fn move_on_the_first_push(&self, path: &str, content: &str) -> String {
        let tip = self.tip();
        let moved = self.push_to_the_branch(path, content);
        self.fx
            .git(&self.origin, &["update-ref", "refs/heads/feature", &tip]);
        let hook = self.origin.join("hooks/pre-receive");
        std::fs::write(
            &hook,
            format!(
                "#!/bin/sh\ncat > /dev/null\nif [ ! -e moved-once ]; then\n  touch moved-once\n  env -u GIT_QUARANTINE_PATH git update-ref refs/heads/feature {moved}\nfi\nexit 0\n"
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        moved
    }

    /// A file of the branch's tip in the origin.
    fn file_at_tip(&self, path: &str) -> String {
        self.fx.git(
            &self.origin,
            &["show", &format!("refs/heads/feature:{path}")],
        )
    }

    /// A fresh runner: its own home, temp dir, tool cache and workspace, and the forge's
    /// CLIs as stand-ins.
    fn runner(&mut self) -> Runner {
        self.runners += 1;
        let dir = self.fx.root.join(format!("runner-{}", self.runners));
        let runner = Runner {
            home: dir.join("home"),
            temp: dir.join("temp"),
            tool_cache: dir.join("toolcache"),
            builds: dir.join("builds"),
            workspace: dir.join("builds/project"),
            tools: dir.join("tools"),
            calls: dir.join("calls"),
            log: String::new(),
        };
        for d in [
            &runner.home,
            &runner.temp,
            &runner.tool_cache,
            &runner.builds,
            &runner.tools,
            &runner.calls,
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        forge_stand_ins(&runner.tools, &runner.calls);
        runner
    }

    /// The branch's tip in the origin.
    fn tip(&self) -> String {
        self.fx
            .git(&self.origin, &["rev-parse", "refs/heads/feature"])
    }

    fn run_flags(&self) -> &'static str {
        // The recipes are not what tests the sandbox: a machine without one runs unsandboxed.
        if sandbox_available() {
            ""
        } else {
            "--no-sandbox"
        }
    }
}

struct Runner {
    home: PathBuf,
    temp: PathBuf,
    tool_cache: PathBuf,
    builds: PathBuf,
    workspace: PathBuf,
    /// On PATH before the system's: the stand-ins for `gh` and `curl`.
    tools: PathBuf,
    /// What the stand-ins recorded: `gh-args`, `gh-env`, `curl-args`, and `body.md`, the
    /// comment they were given.
    calls: PathBuf,
    /// Everything the steps printed, in order.
    log: String,
}

impl Runner {
    /// A command with the runner's environment: git isolated, the runner's home, a PATH
    /// without a3s-iso (the install step provides it).
    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        isolate(&mut cmd, &self.home);
        cmd.env("TMPDIR", &self.temp)
            .env_remove("GITHUB_ACTIONS")
            .env_remove("GITLAB_CI")
            .current_dir(&self.workspace);
        cmd
    }

    /// The PATH of a step: `first`, then the stand-ins, then the system's.
    fn path(&self, first: &[String]) -> String {
        let mut dirs = first.to_vec();
        dirs.push(self.tools.display().to_string());
        dirs.push(std::env::var("PATH").unwrap());
        dirs.join(":")
    }

    /// The comment posted on the pull request (merge request), if one was.
    fn posted_comment(&self) -> Option<String> {
        std::fs::read_to_string(self.calls.join("body.md")).ok()
    }

    /// What the promote step left in outcome.env, by name.
    fn outcome_env(&self, artifacts: &Path) -> BTreeMap<String, String> {
        std::fs::read_to_string(artifacts.join("outcome.env"))
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn porcelain(&self) -> Vec<String> {
        let out = self
            .command("git")
            .args(["status", "--porcelain", "-uall"])
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    }
}

/// The release's name for this machine, as scripts/package.sh names it.
fn release_name() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x86_64",
        "aarch64" => "aarch64",
        other => panic!("no release target for {other}"),
    };
    format!("a3s-iso-{arch}-unknown-linux-musl")
}

/// The forge's CLIs in `tools`: `gh`, and a `curl` that takes GitLab's notes API calls (any
/// other call goes to the real curl, which install.sh uses to download). Each records its
/// arguments and the comment's body in `calls`.
fn forge_stand_ins(tools: &Path, calls: &Path) {
    let calls = calls.display();
    let gh = format!(
        r#"#!/usr/bin/env bash
set -euo pipefail
printf '%s\n' "$@" > '{calls}/gh-args'
printf 'GH_REPO=%s\nGH_TOKEN=%s\n' "${{GH_REPO:-}}" "${{GH_TOKEN:-}}" > '{calls}/gh-env'
while [ $# -gt 0 ]; do
  if [ "$1" = --body-file ]; then cp -- "$2" '{calls}/body.md'; fi
  shift
done
"#
    );
    let real_curl = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|dir| dir.join("curl"))
        .find(|p| p.is_file())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "false".into());
    let curl = format!(
        r#"#!/usr/bin/env bash
set -euo pipefail
for arg in "$@"; do
  case "$arg" in
    https://gitlab.example.com/api/v4/*/notes)
      printf '%s\n' "$@" > '{calls}/curl-args'
      for a in "$@"; do
        case "$a" in body@*) cp -- "${{a#body@}}" '{calls}/body.md' ;; esac
      done
      exit 0
      ;;
  esac
done
exec '{real_curl}' "$@"
"#
    );
    for (name, text) in [("gh", gh), ("curl", curl)] {
        let path = tools.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let status = Command::new("cp")
        .arg("-R")
        .arg(format!("{}/.", from.display()))
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success(), "cp {from:?} {to:?}");
}

/// A checkout as the CIs make one by default: the one commit fetched at depth 1 from the
/// origin's URL, detached, or as a local `branch` when one is named.
fn shallow_checkout(w: &World, runner: &Runner, reference: &str, branch: Option<&str>) {
    let url = format!("file://{}", w.origin.display());
    let git = |args: &[&str]| w.fx.git(&runner.workspace, args);
    std::fs::create_dir_all(&runner.workspace).unwrap();
    git(&["init", "-q"]);
    git(&["remote", "add", "origin", &url]);
    match branch {
        Some(branch) => {
            let spec = format!("+refs/heads/{branch}:refs/remotes/origin/{branch}");
            git(&["fetch", "-q", "--depth", "1", "origin", &spec]);
            git(&["checkout", "-q", "-B", branch, &format!("origin/{branch}")]);
        }
        None => {
            git(&["fetch", "-q", "--depth", "1", "origin", reference]);
            git(&["checkout", "-q", "--detach", reference]);
        }
    }
}

/// The commit's changed paths.
fn changed_paths(w: &World, commit: &str) -> Vec<String> {
    w.fx.git(
        &w.origin,
        &["diff-tree", "--no-commit-id", "--name-only", "-r", commit],
    )
    .lines()
    .map(String::from)
    .collect()
}

/// The digest of the change set the agent job uploaded.
fn uploaded_digest(document: &Path) -> String {
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(document).unwrap()).unwrap();
    doc["patch_digest"].as_str().unwrap().to_string()
}

/// Breaks a rule of an uploaded change set: its stated patch size.
fn tamper(document: &Path) {
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(document).unwrap()).unwrap();
    doc["patch_bytes"] = serde_json::json!(1);
    std::fs::write(document, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
}

/// Whether jq, which the promote job's step reads a3s-iso's JSON with, is on this machine:
/// the recipes would install it, which a test must not do here.
fn jq_present() -> bool {
    require_tool("jq")
}

/// How a step ended and what it printed.
struct StepRun {
    name: String,
    status: Option<i32>,
    output: String,
}

// ---------------------------------------------------------------------------------------------
// GitHub Actions

/// The values of the `${{ }}` expressions the GitHub recipe uses (an unknown one fails).
fn github_expressions(w: &World, runner: &Runner, run_id: &str) -> BTreeMap<&'static str, String> {
    BTreeMap::from([
        (
            "vars.A3S_ISO_RELEASE_BASE",
            format!("file://{}/", w.release.display()),
        ),
        ("vars.A3S_ISO_RELEASE_URL", String::new()),
        // Pinned here; the GitLab tests take the sum from the .sha256 beside the tarball.
        ("vars.A3S_ISO_RELEASE_SHA256", w.tarball_sha256.clone()),
        ("vars.A3S_ISO_INSTALL_GIT", String::new()),
        ("vars.A3S_ISO_INSTALL_REV", String::new()),
        ("vars.AGENT_COMMAND", AGENT.to_string()),
        ("vars.A3S_ISO_RUN_FLAGS", w.run_flags().to_string()),
        ("vars.A3S_ISO_LAND_TEST", String::new()),
        ("secrets.AGENT_API_KEY", "key-for-the-test".to_string()),
        ("github.event.pull_request.number", "7".to_string()),
        ("github.run_id", run_id.to_string()),
        ("github.event.pull_request.head.sha", w.base.clone()),
        ("github.event.pull_request.head.ref", "feature".to_string()),
        ("github.repository", "example/project".to_string()),
        ("github.token", "token-for-the-test".to_string()),
        ("runner.temp", runner.temp.display().to_string()),
        ("runner.tool_cache", runner.tool_cache.display().to_string()),
        ("runner.os", "Linux".to_string()),
        ("runner.arch", "X64".to_string()),
    ])
}

fn expand_github(text: &str, values: &BTreeMap<&'static str, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("}}").expect("a closing }}") + start;
        let expr = rest[start + 3..end].trim();
        out.push_str(
            values
                .get(expr)
                .unwrap_or_else(|| panic!("the test has no value for ${{{{ {expr} }}}}")),
        );
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

fn github_workflow() -> Yaml {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/github-actions/promote.yml");
    Parser::parse(&std::fs::read_to_string(path).unwrap())
}

/// Runs one job of the workflow on `runner`, step by step as the runner does: each `run:` a
/// `bash --noprofile --norc -eo pipefail` script of its own with the job's and the step's
/// `env:`, `$GITHUB_ENV` and `$GITHUB_PATH` carried to the next steps, the `uses:` steps
/// simulated (a cache that missed is saved at the end of a job that passed, as
/// actions/cache's post step does). `before` is called before each step with its script
/// (empty for a `uses:` step). After a failed step only `if: always()` steps run, as on
/// GitHub.
fn run_github_job(
    w: &World,
    runner: &mut Runner,
    job: &str,
    run_id: &str,
    before: &mut dyn FnMut(&str, &Runner),
) -> Vec<StepRun> {
    let workflow = github_workflow();
    let values = github_expressions(w, runner, run_id);
    let job_yaml = workflow.get("jobs").unwrap().get(job).unwrap();
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    for scope in [workflow.get("env"), job_yaml.get("env")]
        .into_iter()
        .flatten()
    {
        for (key, value) in scope.entries() {
            env.insert(key.clone(), expand_github(value.str(), &values));
        }
    }
    let mut path_dirs: Vec<String> = Vec::new();
    let mut runs = Vec::new();
    let mut failed = false;
    let mut saves = Vec::new();
    for (n, step) in job_yaml.get("steps").unwrap().seq().iter().enumerate() {
        let always = step.get("if").map(Yaml::str) == Some("always()");
        assert!(step.get("if").is_none() || always, "unknown if: {step:?}");
        if failed && !always {
            continue;
        }
        let name = step
            .get("name")
            .or(step.get("uses"))
            .map(|v| v.str().to_string())
            .unwrap();
        let with =
            |key: &str| expand_github(step.get("with").unwrap().get(key).unwrap().str(), &values);
        let script = step
            .get("run")
            .map(|r| r.str().to_string())
            .unwrap_or_default();
        assert!(
            !script.contains("${{"),
            "expressions belong in env:, not in run: ({name})"
        );
        let step_env: BTreeMap<String, String> = step
            .get("env")
            .map(|e| {
                e.entries()
                    .iter()
                    .map(|(k, v)| (k.clone(), expand_github(v.str(), &values)))
                    .collect()
            })
            .unwrap_or_default();
        before(&script, runner);
        let run = if let Some(uses) = step.get("uses").map(Yaml::str) {
            github_action(w, runner, uses, &with, &mut saves)
        } else {
            github_shell_step(runner, &script, n, &step_env, &mut env, &mut path_dirs)
        };
        failed |= run.0 != Some(0);
        runner
            .log
            .push_str(&format!("== {name} (exit {:?})\n{}", run.0, run.1));
        runs.push(StepRun {
            name,
            status: run.0,
            output: run.1,
        });
    }
    if !failed {
        for (path, stored) in saves.into_iter().filter(|(path, _)| path.exists()) {
            copy_dir(&path, &stored);
        }
    }
    runs
}

/// One `run:` step: a `bash --noprofile --norc -eo pipefail` script with the job's environment
/// and the step's own; what it writes to `$GITHUB_ENV` and `$GITHUB_PATH` goes into `env` and
/// `path_dirs` for the steps after it.
fn github_shell_step(
    runner: &Runner,
    script: &str,
    n: usize,
    step_env: &BTreeMap<String, String>,
    env: &mut BTreeMap<String, String>,
    path_dirs: &mut Vec<String>,
) -> (Option<i32>, String) {
    let files = [
        "GITHUB_ENV",
        "GITHUB_PATH",
        "GITHUB_OUTPUT",
        "GITHUB_STEP_SUMMARY",
    ]
    .map(|f| (f, runner.temp.join(format!("{f}-{n}"))));
    let file = runner.temp.join(format!("step-{n}.sh"));
    std::fs::write(&file, script).unwrap();
    let mut cmd = runner.command("bash");
    cmd.args(["--noprofile", "--norc", "-eo", "pipefail"])
        .arg(&file);
    let first: Vec<String> = path_dirs.iter().rev().cloned().collect();
    cmd.envs(&*env)
        .envs(step_env)
        .env("PATH", runner.path(&first))
        .env("GITHUB_ACTIONS", "true")
        .env("CI", "true")
        .env("RUNNER_TEMP", &runner.temp)
        .env("RUNNER_TOOL_CACHE", &runner.tool_cache)
        .env("GITHUB_WORKSPACE", &runner.workspace);
    for (var, path) in &files {
        std::fs::write(path, "").unwrap();
        cmd.env(var, path);
    }
    let out = cmd.output().unwrap();
    for line in std::fs::read_to_string(&files[0].1).unwrap().lines() {
        let (k, v) = line.split_once('=').expect("KEY=VALUE in GITHUB_ENV");
        env.insert(k.to_string(), v.to_string());
    }
    path_dirs.extend(
        std::fs::read_to_string(&files[1].1)
            .unwrap()
            .lines()
            .map(String::from),
    );
    let output = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), output)
}

/// The actions the recipe uses, simulated: a checkout is a clone of the origin; an upload
/// copies a directory into the store, a download copies it back out; a cache restores a
/// directory saved under its key, or, missing, adds the directory and where to save it to
/// `saves` for the end of the job.
fn github_action(
    w: &World,
    runner: &Runner,
    uses: &str,
    with: &dyn Fn(&str) -> String,
    saves: &mut Vec<(PathBuf, PathBuf)>,
) -> (Option<i32>, String) {
    let action = uses.split('@').next().unwrap();
    match action {
        "actions/cache" => {
            let key = with("key");
            let path = PathBuf::from(with("path"));
            assert!(!key.contains(','), "a cache key holds no comma: {key}");
            assert!(
                !path.starts_with(&runner.workspace),
                "the cache is outside the checkout"
            );
            let stored = w
                .caches
                .join(hex::encode(Sha256::digest(format!("github {key}"))));
            if stored.is_dir() {
                copy_dir(&stored, &path);
                return (Some(0), format!("Cache restored from key: {key}\n"));
            }
            saves.push((path, stored));
            return (Some(0), format!("Cache not found for input keys: {key}\n"));
        }
        "actions/checkout" => {
            let reference = with("ref");
            let branch = (reference.len() < 40).then_some(reference.as_str());
            shallow_checkout(w, runner, &reference, branch);
        }
        "actions/upload-artifact" => {
            let from = PathBuf::from(with("path"));
            assert!(
                !from.starts_with(&runner.workspace),
                "uploads from outside the checkout"
            );
            if from.exists() {
                copy_dir(&from, &w.store.join(with("name")));
            }
        }
        "actions/download-artifact" => {
            copy_dir(&w.store.join(with("name")), Path::new(&with("path")));
        }
        other => panic!("the test does not simulate {other}"),
    }
    (Some(0), String::new())
}

fn step<'a>(runs: &'a [StepRun], name: &str) -> &'a StepRun {
    runs.iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no step {name:?} ran"))
}

fn all_passed(runs: &[StepRun], runner: &Runner) {
    assert!(
        runs.iter().all(|r| r.status == Some(0)),
        "a step failed:\n{}",
        runner.log
    );
}

/// What the stand-in `gh` was asked: `pr comment <number> --body-file <file>`, with the
/// repository and the token in its environment; returns the body.
fn github_comment(runner: &Runner) -> String {
    let args = std::fs::read_to_string(runner.calls.join("gh-args"))
        .unwrap_or_else(|_| panic!("no comment posted:\n{}", runner.log));
    let body_file = runner.temp.join("a3s-iso-comment.md");
    assert_eq!(
        args.lines().collect::<Vec<_>>(),
        [
            "pr",
            "comment",
            "7",
            "--body-file",
            body_file.to_str().unwrap()
        ]
    );
    assert_eq!(
        std::fs::read_to_string(runner.calls.join("gh-env")).unwrap(),
        "GH_REPO=example/project\nGH_TOKEN=token-for-the-test\n"
    );
    runner.posted_comment().unwrap()
}

/// The step outputs the job's steps wrote to `$GITHUB_OUTPUT`, by name.
fn github_outputs(runner: &Runner) -> BTreeMap<String, String> {
    let mut outputs = BTreeMap::new();
    for entry in std::fs::read_dir(&runner.temp).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("GITHUB_OUTPUT-") {
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                let (k, v) = line.split_once('=').unwrap();
                outputs.insert(k.to_string(), v.to_string());
            }
        }
    }
    outputs
}

/// The agent's change in the tip's tree, on top of `under`: one commit whose parent is
/// `under`, changing exactly the agent's paths, with the change set's trailer.
fn assert_landed_on(w: &World, under: &str, digest: &str) -> String {
    let tip = w.tip();
    assert_eq!(
        w.fx.git(&w.origin, &["rev-parse", &format!("{tip}^")]),
        under
    );
    assert_eq!(changed_paths(w, &tip), AGENT_PATHS);
    assert_eq!(w.file_at_tip("src/lib.txt"), "fixed");
    assert_eq!(w.file_at_tip("docs/agent.md"), "new");
    let message = w.fx.git(&w.origin, &["log", "-1", "--format=%B", &tip]);
    assert!(
        message.contains(&format!("A3s-Iso-Change-Set: {digest}"))
            || message.contains(&format!("A3S-Change-Set: {digest}")),
        "{message}"
    );
    tip
}

/// Both recipes bound their jobs in time and let one promote at a time run per pull (merge)
/// request, never cancelling a running one; both cache the binary, keyed on the release.
/// The GitHub workflow: every job has a timeout and restores its cache (keyed by the release)
/// before the install; the promote job runs one at a time per pull request.
fn the_github_jobs_are_bounded_and_serialised() {
    let workflow = github_workflow();
    let jobs = workflow.get("jobs").unwrap();
    for (name, job) in jobs.entries() {
        let minutes: u32 = job
            .get("timeout-minutes")
            .unwrap_or_else(|| panic!("{name} has no timeout-minutes"))
            .str()
            .parse()
            .unwrap();
        assert!((1..=360).contains(&minutes), "{name}: {minutes}");
        let steps = job.get("steps").unwrap().seq();
        let uses = |action: &str| {
            steps.iter().position(|s| {
                s.get("uses")
                    .is_some_and(|u| u.str().starts_with(&format!("{action}@")))
            })
        };
        let install = steps
            .iter()
            .position(|s| s.get("name").map(Yaml::str) == Some("Install a3s-iso"))
            .unwrap();
        let cache = uses("actions/cache").unwrap_or_else(|| panic!("{name} caches nothing"));
        assert!(
            cache < install,
            "{name}: the cache is restored before the install"
        );
        let key = steps[cache].get("with").unwrap().get("key").unwrap().str();
        for part in ["vars.A3S_ISO_RELEASE_BASE", "vars.A3S_ISO_RELEASE_SHA256"] {
            assert!(key.contains(part), "{name}: the cache key lacks {part}");
        }
    }
    let promote = jobs.get("promote").unwrap();
    let concurrency = promote.get("concurrency").unwrap();
    assert!(
        concurrency
            .get("group")
            .unwrap()
            .str()
            .contains("${{ github.event.pull_request.number }}")
    );
    assert_eq!(
        concurrency.get("cancel-in-progress").unwrap().str(),
        "false"
    );
    let permissions = promote.get("permissions").unwrap();
    assert_eq!(permissions.get("contents").unwrap().str(), "write");
    assert_eq!(permissions.get("pull-requests").unwrap().str(), "write");
}

#[test]
fn the_recipes_bound_their_jobs_and_serialise_the_promote() {
    the_github_jobs_are_bounded_and_serialised();
    let pipeline = gitlab_pipeline();
    for name in ["agent", "promote"] {
        let timeout = pipeline.get(name).unwrap().get("timeout");
        assert!(timeout.is_some(), "{name} has no timeout");
    }
    let group = pipeline.get("promote").unwrap().get("resource_group");
    assert!(group.unwrap().str().contains("${CI_MERGE_REQUEST_IID}"));
    let cache = pipeline.get("default").unwrap().get("cache").unwrap();
    assert!(
        cache
            .get("key")
            .unwrap()
            .str()
            .contains("${A3S_ISO_RELEASE_SHA256}")
    );
    assert_eq!(cache.get("paths").unwrap().seq()[0].str(), ".a3s-iso/");

    // What their headers tell to copy is what the tests vendor.
    for recipe in [
        "examples/github-actions/promote.yml",
        "examples/gitlab-ci/.gitlab-ci.yml",
    ] {
        let text =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(recipe)).unwrap();
        for script in ["install.sh", "ci-promote.sh", "ci-comment.sh"] {
            assert!(
                text.contains(&format!("scripts/{script}")),
                "{recipe} does not say to copy {script}"
            );
        }
    }
}

/// The agent job on a runner with an empty cache: it installs a3s-iso and uploads the change
/// set; its digest.
fn github_agent_job_uploads_a_change_set(w: &mut World) -> String {
    let mut agent = w.runner();
    let runs = run_github_job(w, &mut agent, "agent", "100", &mut |_, _| {});
    all_passed(&runs, &agent);
    let document = w.store.join("change-set/change-set.json");
    let digest = uploaded_digest(&document);
    assert!(w.store.join("change-set/run.json").is_file());
    assert!(
        step(&runs, "Restore a3s-iso from the cache")
            .output
            .starts_with("Cache not found"),
        "{}",
        agent.log
    );
    assert!(
        step(&runs, "Install a3s-iso")
            .output
            .contains("runner-1/toolcache/a3s-iso/bin/a3s-iso"),
        "{}",
        agent.log
    );
    digest
}

/// The promote job, its binary from the cache only, lands the change set once and tells the
/// pull request; the commit pushed.
fn github_promote_job_lands(w: &mut World, digest: &str) -> String {
    // The promote job's binary can only come from the cache now.
    w.withdraw_the_tarball();
    let mut promote = w.runner();
    let runs = run_github_job(w, &mut promote, "promote", "100", &mut |_, _| {});
    all_passed(&runs, &promote);
    assert!(
        runs.iter().all(|r| r.name != "Commit and push"),
        "land --push pushes"
    );
    assert!(
        step(&runs, "Restore a3s-iso from the cache")
            .output
            .starts_with("Cache restored"),
        "{}",
        promote.log
    );
    let install = &step(&runs, "Install a3s-iso").output;
    assert!(install.contains("already: kept"), "{install}");
    assert!(
        install.contains("runner-2/toolcache/a3s-iso/bin/a3s-iso"),
        "{install}"
    );
    // The checkout is neither needed nor touched: the landing is pushed from objects.
    assert_eq!(promote.porcelain(), Vec::<String>::new(), "{}", promote.log);
    let tip = assert_landed_on(w, &w.base, digest);
    let output = &step(&runs, "Verify and land").output;
    assert!(
        output.contains(&format!(
            "::notice title=a3s-iso promote::landed {digest}: pushed {tip} to feature in 1 push attempt(s)"
        )),
        "{output}"
    );
    // The artifacts are outside the checkout, and hold this run's outcome.
    let artifacts = promote.temp.join("a3s-iso-artifacts");
    assert!(
        std::fs::read_to_string(artifacts.join("land.json"))
            .unwrap()
            .contains("\"outcome\": \"landed\"")
    );
    assert!(w.store.join("a3s-iso-artifacts/land.json").is_file());
    let outcome = promote.outcome_env(&artifacts);
    assert_eq!(outcome["A3S_ISO_OUTCOME"], "applied");
    assert_eq!(outcome["A3S_ISO_REBASED"], "false");
    assert_eq!(outcome["A3S_ISO_PUSHED"], tip);
    assert_eq!(outcome["A3S_ISO_ATTEMPTS"], "1");
    assert_eq!(github_outputs(&promote)["rebased"], "false");
    // The pull request is told: the files, the digest, the commit pushed, the attempts.
    let comment = github_comment(&promote);
    for expected in [
        "**Landed**: merged onto the branch's tip and pushed as",
        "in 1 push attempt(s).",
        &format!("`{tip}`"),
        "- `docs/agent.md`\n- `src/lib.txt`\n",
        &format!("Change set `{digest}`"),
    ] {
        assert!(comment.contains(expected), "{expected:?} in:\n{comment}");
    }
    assert!(!comment.contains("rebased"), "{comment}");
    tip
}

/// The job again on a fresh runner: the branch has the commit; nothing lands twice.
fn github_promote_job_again_is_idempotent(w: &mut World, digest: &str, tip: &str) {
    // The job again on a fresh runner: the branch has the commit; nothing lands twice.
    let mut again = w.runner();
    let runs = run_github_job(w, &mut again, "promote", "101", &mut |_, _| {});
    all_passed(&runs, &again);
    assert!(
        step(&runs, "Verify and land").output.contains(&format!(
            "::notice title=a3s-iso promote::idempotent: {digest} landed before, as {tip}; nothing was pushed"
        )),
        "{}",
        again.log
    );
    assert_eq!(w.tip(), tip);
    assert_eq!(
        std::fs::read_to_string(again.temp.join("a3s-iso-artifacts/outcome.env"))
            .unwrap()
            .lines()
            .next(),
        Some("A3S_ISO_OUTCOME=idempotent")
    );
    assert_eq!(again.porcelain(), Vec::<String>::new());
    let comment = github_comment(&again);
    assert!(
        comment.contains("**Landed before** (idempotent)"),
        "{comment}"
    );
    assert!(comment.contains("- `src/lib.txt`"), "{comment}");
}

#[test]
fn the_github_recipe_promotes_the_agents_paths_onto_the_branch_once() {
    if !jq_present() {
        return;
    }
    let mut w = World::new();
    let digest = github_agent_job_uploads_a_change_set(&mut w);
    let tip = github_promote_job_lands(&mut w, &digest);
    github_promote_job_again_is_idempotent(&mut w, &digest, &tip);
}

#[test]
fn the_github_recipe_annotates_a_broken_change_set_and_pushes_nothing() {
    if !jq_present() {
        return;
    }
    let mut w = World::new();
    let mut agent = w.runner();
    let runs = run_github_job(&w, &mut agent, "agent", "100", &mut |_, _| {});
    all_passed(&runs, &agent);
    tamper(&w.store.join("change-set/change-set.json"));
    let mut promote = w.runner();
    let runs = run_github_job(&w, &mut promote, "promote", "100", &mut |_, _| {});
    let verify = step(&runs, "Verify and land");
    assert_eq!(verify.status, Some(5), "{}", promote.log);
    assert!(
        verify.output.contains(
            "::error title=a3s-iso promote::the change set is invalid: rule patch_bytes broken at field patch_bytes"
        ),
        "{}",
        verify.output
    );
    assert!(runs.iter().all(|r| r.name != "Commit and push"));
    assert_eq!(w.tip(), w.base);
    assert_eq!(promote.porcelain(), Vec::<String>::new());
    // The comment runs after the failure, and names the rule.
    assert_eq!(
        step(&runs, "Comment on the pull request").status,
        Some(0),
        "{}",
        promote.log
    );
    let comment = github_comment(&promote);
    assert!(
        comment.contains(
            "**Invalid**: the change-set document breaks rule `patch_bytes` at field `patch_bytes`"
        ),
        "{comment}"
    );
}

/// The branch moved while the agent worked, in a file the agent did not touch: the change set
/// is promoted again onto the moved branch, and lands on top of it.
#[test]
fn the_github_recipe_lands_the_change_on_a_branch_that_moved_elsewhere_under_the_agent() {
    if !jq_present() {
        return;
    }
    let mut w = World::new();
    let mut agent = w.runner();
    let runs = run_github_job(&w, &mut agent, "agent", "100", &mut |_, _| {});
    all_passed(&runs, &agent);
    let digest = uploaded_digest(&w.store.join("change-set/change-set.json"));
    let moved = w.push_to_the_branch("README.md", "someone else's line\n");
    let mut promote = w.runner();
    let runs = run_github_job(&w, &mut promote, "promote", "100", &mut |_, _| {});
    all_passed(&runs, &promote);
    let output = &step(&runs, "Verify and land").output;
    let tip = assert_landed_on(&w, &moved, &digest);
    let expected = format!(
        "::notice title=a3s-iso promote::landed {digest}: pushed {tip} to feature in 1 push attempt(s)"
    );
    assert!(output.contains(&expected), "{expected:?} in:\n{output}");
    assert_eq!(w.file_at_tip("README.md"), "someone else's line");
    let outcome = promote.outcome_env(&promote.temp.join("a3s-iso-artifacts"));
    assert_eq!(outcome["A3S_ISO_OUTCOME"], "applied");
    assert_eq!(outcome["A3S_ISO_REBASED"], "true");
    assert_eq!(outcome["A3S_ISO_PUSHED"], tip);
    let outputs = github_outputs(&promote);
    assert_eq!(outputs["outcome"], "applied");
    assert_eq!(outputs["rebased"], "true");
    let comment = github_comment(&promote);
    assert!(
        comment.contains("in 1 push attempt(s); rebased onto the moved branch"),
        "{comment}"
    );
    assert!(comment.contains(&format!("`{tip}`")), "{comment}");
}

/// The branch moved while the agent worked, in the lines the agent changed: nothing lands,
/// the job fails, and the pull request is told which paths conflict.
#[test]
fn the_github_recipe_fails_with_nothing_applied_when_the_branch_moved_under_the_agent() {
    if !jq_present() {
        return;
    }
    let mut w = World::new();
    let mut agent = w.runner();
    let runs = run_github_job(&w, &mut agent, "agent", "100", &mut |_, _| {});
    all_passed(&runs, &agent);
    let moved = w.push_to_the_branch("src/lib.txt", "someone else\n");
    let mut promote = w.runner();
    let runs = run_github_job(&w, &mut promote, "promote", "100", &mut |_, _| {});
    let verify = step(&runs, "Verify and land");
    assert_eq!(verify.status, Some(3), "{}", promote.log);
    let expected = "::error title=a3s-iso promote::conflict (patch_does_not_apply): the change set does not fit feature; nothing was pushed; conflicting paths: src/lib.txt";
    assert!(
        verify.output.contains(expected),
        "{expected:?} in:\n{}",
        verify.output
    );
    assert!(runs.iter().all(|r| r.name != "Commit and push"));
    assert_eq!(w.tip(), moved, "nothing pushed");
    assert_eq!(promote.porcelain(), Vec::<String>::new(), "nothing applied");
    let outcome = promote.outcome_env(&promote.temp.join("a3s-iso-artifacts"));
    assert_eq!(outcome["A3S_ISO_OUTCOME"], "conflict");
    assert_eq!(outcome["A3S_ISO_REBASED"], "false");
    let comment = github_comment(&promote);
    for expected in [
        "**Conflict** (`patch_does_not_apply`): the change set does not fit the branch's tip; nothing was pushed.",
        "Conflicting paths:\n\n- `src/lib.txt`\n",
    ] {
        assert!(comment.contains(expected), "{expected:?} in:\n{comment}");
    }
}

/// The branch moves while the change set is landed (another job's push wins the race between
/// land's fetch and its push): the server refuses the push built on the old tip, and land
/// merges it onto the new tip and pushes again, in the same step; the comment says 2 attempts.
#[test]
fn the_github_recipe_lands_again_when_the_branch_moves_before_the_push() {
    if !jq_present() {
        return;
    }
    let mut w = World::new();
    let mut agent = w.runner();
    let runs = run_github_job(&w, &mut agent, "agent", "100", &mut |_, _| {});
    all_passed(&runs, &agent);
    let digest = uploaded_digest(&w.store.join("change-set/change-set.json"));
    let moved = w.move_on_the_first_push("README.md", "moved during the landing\n");
    let mut promote = w.runner();
    let runs = run_github_job(&w, &mut promote, "promote", "100", &mut |_, _| {});
    all_passed(&runs, &promote);
    let output = &step(&runs, "Verify and land").output;
    let tip = assert_landed_on(&w, &moved, &digest);
    assert_eq!(w.file_at_tip("README.md"), "moved during the landing");
    let expected = format!(
        "::notice title=a3s-iso promote::landed {digest}: pushed {tip} to feature in 2 push attempt(s)"
    );
    assert!(output.contains(&expected), "{expected:?} in:\n{output}");
    let outcome = promote.outcome_env(&promote.temp.join("a3s-iso-artifacts"));
    assert_eq!(outcome["A3S_ISO_REBASED"], "true");
    assert_eq!(outcome["A3S_ISO_PUSHED"], tip);
    assert_eq!(outcome["A3S_ISO_ATTEMPTS"], "2");
    assert_eq!(promote.porcelain(), Vec::<String>::new(), "{}", promote.log);
    let comment = github_comment(&promote);
    assert!(
        comment.contains("in 2 push attempt(s) (the branch moved under the earlier ones"),
        "{comment}"
    );
    assert!(comment.contains(&format!("`{tip}`")), "{comment}");
}

// ---------------------------------------------------------------------------------------------
// GitLab CI

fn gitlab_pipeline() -> Yaml {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/gitlab-ci/.gitlab-ci.yml");
    Parser::parse(&std::fs::read_to_string(path).unwrap())
}

/// `$NAME` and `${NAME}` replaced from `vars`, as GitLab expands its variables.
fn expand_gitlab(text: &str, vars: &BTreeMap<String, String>) -> String {
    let re =
        regex::Regex::new(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)").unwrap();
    re.replace_all(text, |c: &regex::Captures| {
        let name = c.get(1).or(c.get(2)).unwrap().as_str();
        vars.get(name)
            .cloned()
            .unwrap_or_else(|| panic!("the test has no value for ${name}"))
    })
    .into_owned()
}

/// Feeds `lines` to one `bash -eo pipefail` reading its standard input, as the runner does,
/// one at a time: `before` sees each before it runs. Returns the status of the first line that
/// failed (the shell exits there), or 0, and the output.
fn feed_shell(
    mut cmd: Command,
    lines: &[String],
    runner: &Runner,
    before: &mut dyn FnMut(&str, &Runner),
) -> (Option<i32>, String) {
    let mut child = cmd
        .args(["-eo", "pipefail"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    let mut output = String::new();
    for (n, line) in lines.iter().enumerate() {
        before(line, runner);
        let marker = format!("__line_done_{n}__");
        if writeln!(stdin, "{line}\nprintf '\\n{marker}\\n'").is_err() {
            break;
        }
        stdin.flush().unwrap();
        let mut done = false;
        let mut text = String::new();
        while stdout.read_line(&mut text).unwrap() > 0 {
            if text.trim_end() == marker {
                done = true;
                text.clear();
                break;
            }
            output.push_str(&text);
            text.clear();
        }
        if !done {
            break;
        }
    }
    drop(stdin);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    output.push_str(&rest);
    let status = child.wait().unwrap();
    output.push_str(&errors.join().unwrap());
    (status.code(), output)
}

/// The variables GitLab gives job `job_id`: its own, then the pipeline's and the job's
/// `variables`, expanded in order.
fn gitlab_variables(
    w: &World,
    runner: &Runner,
    job_id: &str,
    (pipeline, job_yaml): (&Yaml, &Yaml),
) -> BTreeMap<String, String> {
    let mut vars: BTreeMap<String, String> = BTreeMap::from([
        ("CI".into(), "true".into()),
        ("GITLAB_CI".into(), "true".into()),
        ("CI_JOB_ID".into(), job_id.into()),
        ("CI_PIPELINE_ID".into(), "100".into()),
        ("CI_MERGE_REQUEST_IID".into(), "7".into()),
        ("CI_COMMIT_SHA".into(), w.base.clone()),
        (
            "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME".into(),
            "feature".into(),
        ),
        (
            "CI_PROJECT_DIR".into(),
            runner.workspace.display().to_string(),
        ),
        ("CI_BUILDS_DIR".into(), runner.builds.display().to_string()),
        // A directory, not a URL; and no pinned sum: the .sha256 beside the tarball is taken.
        (
            "A3S_ISO_RELEASE_BASE".into(),
            w.release.display().to_string(),
        ),
        ("A3S_ISO_RELEASE_SHA256".into(), String::new()),
        ("A3S_ISO_INSTALL_REV".into(), String::new()),
        ("AGENT_COMMAND".into(), AGENT.into()),
        ("AGENT_API_KEY".into(), "key-for-the-test".into()),
        ("A3S_ISO_RUN_FLAGS".into(), w.run_flags().into()),
        ("A3S_ISO_PUSH_URL".into(), w.origin.display().to_string()),
        ("A3S_ISO_PUSH_TOKEN".into(), "token-for-the-test".into()),
        (
            "CI_API_V4_URL".into(),
            "https://gitlab.example.com/api/v4".into(),
        ),
        ("CI_PROJECT_ID".into(), "42".into()),
    ]);
    for scope in [pipeline.get("variables"), job_yaml.get("variables")]
        .into_iter()
        .flatten()
    {
        for (key, value) in scope.entries() {
            let value = expand_gitlab(value.str(), &vars);
            vars.insert(key.clone(), value);
        }
    }
    vars
}

/// The job's cache (else the pipeline's default), restored into the workspace: where it is
/// stored and the paths it keeps.
fn restore_gitlab_cache(
    w: &World,
    runner: &Runner,
    (pipeline, job_yaml): (&Yaml, &Yaml),
    vars: &BTreeMap<String, String>,
) -> Option<(PathBuf, Vec<String>)> {
    let cache = job_yaml
        .get("cache")
        .or_else(|| pipeline.get("default").and_then(|d| d.get("cache")));

    cache.map(|cache| {
        let key = expand_gitlab(cache.get("key").unwrap().str(), vars);
        assert!(!key.contains('/'), "a cache key holds no '/': {key}");
        let stored = w.caches.join(format!("gitlab {key}"));
        if stored.is_dir() {
            copy_dir(&stored, &runner.workspace);
        }
        let paths: Vec<String> = cache
            .get("paths")
            .unwrap()
            .seq()
            .iter()
            .map(|p| p.str().trim_end_matches('/').to_string())
            .collect();
        (stored, paths)
    })
}

/// The job's `artifacts:paths` uploaded to the store, on success or when it says `always`.
fn upload_gitlab_artifacts(
    w: &World,
    runner: &Runner,
    job: &str,
    job_yaml: &Yaml,
    status: Option<i32>,
) {
    let artifacts = job_yaml.get("artifacts").unwrap();
    let always = artifacts.get("when").map(Yaml::str) == Some("always");
    if status == Some(0) || always {
        for path in artifacts.get("paths").unwrap().seq() {
            let rel = path.str().trim_end_matches('/');
            let from = runner.workspace.join(rel);
            if from.exists() {
                copy_dir(&from, &w.store.join(job).join(rel));
            }
        }
    }
}

/// Runs one job on `runner` as GitLab does: a checkout of the commit (detached), the
/// artifacts of earlier jobs put back at their paths, the cache restored, `before_script`
/// and `script` in one shell, `after_script` in another, then the cache saved (when the job
/// passed) and the job's `artifacts:paths` uploaded.
fn run_gitlab_job(
    w: &World,
    runner: &mut Runner,
    job: &str,
    job_id: &str,
    before: &mut dyn FnMut(&str, &Runner),
) -> StepRun {
    let pipeline = gitlab_pipeline();
    let job_yaml = pipeline.get(job).unwrap();
    let vars = gitlab_variables(w, runner, job_id, (&pipeline, job_yaml));
    // GitLab fetches the pipeline's commit, shallow, and checks it out detached.
    shallow_checkout(w, runner, &w.base, None);
    if let Some(needs) = job_yaml.get("needs") {
        for need in needs.seq() {
            copy_dir(&w.store.join(need.str()), &runner.workspace);
        }
    }
    let cached = restore_gitlab_cache(w, runner, (&pipeline, job_yaml), &vars);
    let lines = |key: &str| -> Vec<String> {
        job_yaml
            .get(key)
            .map(|s| {
                s.seq()
                    .iter()
                    .map(|l| l.str().trim_end().to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let shell = || {
        let mut cmd = runner.command("bash");
        cmd.envs(&vars)
            .env("PATH", runner.path(&[]))
            .env_remove("NO_COLOR");
        cmd
    };
    let mut script = lines("before_script");
    script.extend(lines("script"));
    let (status, mut output) = feed_shell(shell(), &script, runner, before);
    let (_, after) = feed_shell(shell(), &lines("after_script"), runner, &mut |_, _| {});
    output.push_str(&after);
    if let (Some((stored, paths)), Some(0)) = (cached, status) {
        for rel in paths {
            let from = runner.workspace.join(&rel);
            if from.exists() {
                copy_dir(&from, &stored.join(&rel));
            }
        }
    }
    upload_gitlab_artifacts(w, runner, job, job_yaml, status);
    runner
        .log
        .push_str(&format!("== {job} (exit {status:?})\n{output}"));
    StepRun {
        name: job.into(),
        status,
        output,
    }
}

/// The agent job: the cache saved from the project directory, the binary kept out of the
/// work, the change set uploaded; its digest.
fn gitlab_agent_job_uploads_a_change_set(w: &mut World) -> String {
    let mut agent = w.runner();
    let run = run_gitlab_job(w, &mut agent, "agent", "1", &mut |_, _| {});
    assert_eq!(run.status, Some(0), "{}", agent.log);
    let document = w.store.join("agent/change-set/change-set.json");
    let digest = uploaded_digest(&document);
    // The cache was saved from the project directory, and the binary kept out of the work.
    assert!(agent.workspace.join(".a3s-iso/bin/a3s-iso").is_file());
    assert_eq!(
        agent.porcelain(),
        ["?? change-set/change-set.json", "?? change-set/run.json"],
        "{}",
        agent.log
    );
    digest
}

/// The promote job, its binary from the cache only, lands the change set once and tells the
/// merge request; the commit pushed.
fn gitlab_promote_job_lands(w: &mut World, digest: &str) -> String {
    // The promote job's binary can only come from the cache now.
    w.withdraw_the_tarball();
    let mut promote = w.runner();
    let run = run_gitlab_job(w, &mut promote, "promote", "2", &mut |_, _| {});
    assert_eq!(run.status, Some(0), "{}", promote.log);
    let kept = format!(
        "install.sh: {}/.a3s-iso/bin/a3s-iso is installed from",
        promote.workspace.display()
    );
    assert!(run.output.contains(&kept), "{}", run.output);
    assert!(run.output.contains("already: kept"), "{}", run.output);
    // GitLab's log: a section around the step, and a green NOTICE line.
    assert!(
        run.output.contains("\x1b[0Ksection_start:"),
        "{}",
        run.output
    );
    assert!(run.output.contains("\x1b[0Ksection_end:"));
    let tip = assert_landed_on(w, &w.base, digest);
    assert!(
        run.output.contains(&format!(
            "\x1b[32;1mNOTICE: a3s-iso promote: landed {digest}: pushed {tip} to feature in 1 push attempt(s)"
        )),
        "{}",
        run.output
    );
    // The checkout was not touched (after_script's copy for upload is ignored).
    assert_eq!(promote.porcelain(), Vec::<String>::new(), "{}", promote.log);
    assert!(
        w.store
            .join("promote/a3s-iso-artifacts/land.json")
            .is_file()
    );
    let artifacts = promote.builds.join("a3s-iso-2/artifacts");
    assert!(artifacts.join("land.json").is_file());
    let outcome = promote.outcome_env(&artifacts);
    assert_eq!(outcome["A3S_ISO_REBASED"], "false");
    assert_eq!(outcome["A3S_ISO_PUSHED"], tip);
    assert_eq!(outcome["A3S_ISO_ATTEMPTS"], "1");
    // The merge request is told, through the notes API, with the push token.
    let note = gitlab_note(&promote);
    for expected in [
        format!(
            "**Landed**: merged onto the branch's tip and pushed as `{tip}`, in 1 push attempt(s)."
        ),
        "- `docs/agent.md`\n- `src/lib.txt`\n".to_string(),
        format!("Change set `{digest}`"),
    ] {
        assert!(note.contains(&expected), "{expected:?} in:\n{note}");
    }
    tip
}

#[test]
fn the_gitlab_recipe_promotes_the_agents_paths_onto_the_branch_once() {
    if !jq_present() {
        return;
    }
    let mut w = World::new();
    let digest = gitlab_agent_job_uploads_a_change_set(&mut w);
    let tip = gitlab_promote_job_lands(&mut w, &digest);
    // A retried promote job on a fresh runner: the branch has the commit now.
    let mut again = w.runner();
    let run = run_gitlab_job(&w, &mut again, "promote", "3", &mut |_, _| {});
    assert_eq!(run.status, Some(0), "{}", again.log);
    assert!(
        run.output.contains(&format!(
            "NOTICE: a3s-iso promote: idempotent: {digest} landed before, as {tip}; nothing was pushed"
        )),
        "{}",
        run.output
    );
    assert_eq!(w.tip(), tip);
    assert!(gitlab_note(&again).contains("**Landed before** (idempotent)"));
}

#[test]
fn the_gitlab_recipe_reports_a_broken_change_set_in_red_and_pushes_nothing() {
    if !jq_present() {
        return;
    }
    let mut w = World::new();
    let mut agent = w.runner();
    let run = run_gitlab_job(&w, &mut agent, "agent", "1", &mut |_, _| {});
    assert_eq!(run.status, Some(0), "{}", agent.log);
    tamper(&w.store.join("agent/change-set/change-set.json"));
    let mut promote = w.runner();
    let run = run_gitlab_job(&w, &mut promote, "promote", "2", &mut |_, _| {});
    assert_eq!(run.status, Some(5), "{}", promote.log);
    assert!(
        run.output.contains(
            "\x1b[31;1mERROR: a3s-iso promote: the change set is invalid: rule patch_bytes broken at field patch_bytes"
        ),
        "{}",
        run.output
    );
    assert_eq!(w.tip(), w.base);
    let note = gitlab_note(&promote);
    assert!(
        note.contains(
            "**Invalid**: the change-set document breaks rule `patch_bytes` at field `patch_bytes`"
        ),
        "{note}"
    );
    // What the failed job uploads (when: always) is this run's verify result.
    let uploaded = w.store.join("promote/a3s-iso-artifacts");
    let verify = std::fs::read_to_string(uploaded.join("verify.json")).unwrap();
    assert!(verify.contains("\"valid\": false"), "{verify}");
    let outcome = std::fs::read_to_string(uploaded.join("outcome.env")).unwrap();
    assert!(
        outcome.starts_with("A3S_ISO_OUTCOME=invalid\n"),
        "{outcome}"
    );
    assert_eq!(promote.porcelain(), Vec::<String>::new(), "{}", promote.log);
}

/// What the stand-in `curl` was asked: a POST of the note to the merge request's notes API,
/// with the push token; returns the note.
fn gitlab_note(runner: &Runner) -> String {
    let args = std::fs::read_to_string(runner.calls.join("curl-args"))
        .unwrap_or_else(|_| panic!("no note posted:\n{}", runner.log));
    let args: Vec<&str> = args.lines().collect();
    for expected in [
        "POST",
        "PRIVATE-TOKEN: token-for-the-test",
        "https://gitlab.example.com/api/v4/projects/42/merge_requests/7/notes",
    ] {
        assert!(args.contains(&expected), "{expected:?} in {args:?}");
    }
    assert!(
        args.iter().any(|a| a.starts_with("body@")),
        "the note is sent from a file: {args:?}"
    );
    runner.posted_comment().unwrap()
}

/// The merge request's branch moved while the agent worked, in the lines the agent changed:
/// the job fails with nothing applied or pushed, and the note names the paths.
#[test]
fn the_gitlab_recipe_fails_and_names_the_paths_when_the_branch_moved_under_the_agent() {
    if !jq_present() {
        return;
    }
    let mut w = World::new();
    let mut agent = w.runner();
    let run = run_gitlab_job(&w, &mut agent, "agent", "1", &mut |_, _| {});
    assert_eq!(run.status, Some(0), "{}", agent.log);
    let moved = w.push_to_the_branch("src/lib.txt", "someone else\n");
    let mut promote = w.runner();
    let run = run_gitlab_job(&w, &mut promote, "promote", "2", &mut |_, _| {});
    assert_eq!(run.status, Some(3), "{}", promote.log);
    assert!(
        run.output.contains(
            "ERROR: a3s-iso promote: conflict (patch_does_not_apply): the change set does not fit feature; nothing was pushed"
        ),
        "{}",
        run.output
    );
    assert!(
        run.output.contains("conflicting paths: src/lib.txt"),
        "{}",
        run.output
    );
    assert_eq!(w.tip(), moved, "nothing pushed");
    assert_eq!(promote.porcelain(), Vec::<String>::new(), "nothing applied");
    let note = gitlab_note(&promote);
    assert!(
        note.contains("**Conflict** (`patch_does_not_apply`)"),
        "{note}"
    );
    assert!(
        note.contains("Conflicting paths:\n\n- `src/lib.txt`\n"),
        "{note}"
    );
}

/// The branch moves while the change set is landed: the push built on the old tip is
/// refused, and land merges it onto the new tip and pushes that, in the same step.
#[test]
fn the_gitlab_recipe_lands_again_when_the_branch_moves_before_the_push() {
    if !jq_present() {
        return;
    }
    let mut w = World::new();
    let mut agent = w.runner();
    let run = run_gitlab_job(&w, &mut agent, "agent", "1", &mut |_, _| {});
    assert_eq!(run.status, Some(0), "{}", agent.log);
    let digest = uploaded_digest(&w.store.join("agent/change-set/change-set.json"));
    let moved = w.move_on_the_first_push("README.md", "moved during the landing\n");
    let mut promote = w.runner();
    let run = run_gitlab_job(&w, &mut promote, "promote", "2", &mut |_, _| {});
    assert_eq!(run.status, Some(0), "{}", promote.log);
    let tip = assert_landed_on(&w, &moved, &digest);
    let expected = format!(
        "NOTICE: a3s-iso promote: landed {digest}: pushed {tip} to feature in 2 push attempt(s)"
    );
    assert!(
        run.output.contains(&expected),
        "{expected:?} in:\n{}",
        run.output
    );
    assert_eq!(w.file_at_tip("README.md"), "moved during the landing");
    let outcome = promote.outcome_env(&promote.builds.join("a3s-iso-2/artifacts"));
    assert_eq!(outcome["A3S_ISO_REBASED"], "true");
    assert_eq!(outcome["A3S_ISO_PUSHED"], tip);
    assert_eq!(outcome["A3S_ISO_ATTEMPTS"], "2");
    assert_eq!(promote.porcelain(), Vec::<String>::new(), "{}", promote.log);
    let note = gitlab_note(&promote);
    assert!(note.contains("rebased onto the moved branch"), "{note}");
    assert!(note.contains(&format!("`{tip}`")), "{note}");
}
