//! The CI recipes under `examples/`: each job's shell steps are taken from the YAML and run in
//! order against throwaway repositories (a bare origin, one clone per runner), the way the CI
//! would run them. Checkouts are shallow (one commit fetched by id or branch, as both CIs do by
//! default); artifact upload and download are simulated by copying a directory; the
//! install step runs for real against a release tarball made here from the test binary.

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

/// What a test sets up once: an origin with the scripts vendored, the release tarball.
struct World {
    fx: Fixture,
    origin: PathBuf,
    /// The uploaded artifacts, by name (GitHub) or job (GitLab).
    store: PathBuf,
    tarball: PathBuf,
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
        for script in ["install.sh", "ci-promote.sh"] {
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
        // A release: the binary in a directory of its own, tarred, and its sha256.
        let pkg = fx.root.join("release/a3s-iso-0.1.0");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::copy(BIN, pkg.join("a3s-iso")).unwrap();
        let tarball = fx.root.join("a3s-iso.tar.gz");
        let status = Command::new("tar")
            .arg("-czf")
            .arg(&tarball)
            .arg("-C")
            .arg(fx.root.join("release"))
            .arg("a3s-iso-0.1.0")
            .status()
            .unwrap();
        assert!(status.success());
        let tarball_sha256 = hex::encode(Sha256::digest(std::fs::read(&tarball).unwrap()));
        let store = fx.root.join("artifact-store");
        std::fs::create_dir_all(&store).unwrap();
        World {
            fx,
            origin,
            store,
            tarball,
            tarball_sha256,
            base,
            runners: 0,
        }
    }

    /// A fresh runner: its own home, temp dir and workspace.
    fn runner(&mut self) -> Runner {
        self.runners += 1;
        let dir = self.fx.root.join(format!("runner-{}", self.runners));
        let runner = Runner {
            home: dir.join("home"),
            temp: dir.join("temp"),
            builds: dir.join("builds"),
            workspace: dir.join("builds/project"),
            log: String::new(),
        };
        for d in [&runner.home, &runner.temp, &runner.builds] {
            std::fs::create_dir_all(d).unwrap();
        }
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
    builds: PathBuf,
    workspace: PathBuf,
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
            "vars.A3S_ISO_RELEASE_URL",
            format!("file://{}", w.tarball.display()),
        ),
        ("vars.A3S_ISO_RELEASE_SHA256", w.tarball_sha256.clone()),
        ("vars.A3S_ISO_INSTALL_GIT", String::new()),
        ("vars.A3S_ISO_INSTALL_REV", String::new()),
        ("vars.AGENT_COMMAND", AGENT.to_string()),
        ("vars.A3S_ISO_RUN_FLAGS", w.run_flags().to_string()),
        ("secrets.AGENT_API_KEY", "key-for-the-test".to_string()),
        ("github.event.pull_request.number", "7".to_string()),
        ("github.run_id", run_id.to_string()),
        ("github.event.pull_request.head.sha", w.base.clone()),
        ("github.event.pull_request.head.ref", "feature".to_string()),
        ("runner.temp", runner.temp.display().to_string()),
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
/// `bash --noprofile --norc -eo pipefail` script of its own, `$GITHUB_ENV` and `$GITHUB_PATH`
/// carried to the next steps, the `uses:` steps simulated. `before` is called before each
/// step with its script (empty for a `uses:` step). After a failed step only `if: always()`
/// steps run, as on GitHub.
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
        before(&script, runner);
        let run = if let Some(uses) = step.get("uses").map(Yaml::str) {
            github_action(w, runner, uses, &with)
        } else {
            github_shell_step(runner, &script, n, &mut env, &mut path_dirs)
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
    runs
}

/// One `run:` step: a `bash --noprofile --norc -eo pipefail` script with the job's environment;
/// what it writes to `$GITHUB_ENV` and `$GITHUB_PATH` goes into `env` and `path_dirs` for the
/// steps after it.
fn github_shell_step(
    runner: &Runner,
    script: &str,
    n: usize,
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
    let base_path = std::env::var("PATH").unwrap();
    let path = path_dirs
        .iter()
        .rev()
        .cloned()
        .chain([base_path])
        .collect::<Vec<_>>();
    cmd.envs(&*env)
        .env("PATH", path.join(":"))
        .env("GITHUB_ACTIONS", "true")
        .env("CI", "true")
        .env("RUNNER_TEMP", &runner.temp)
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
/// copies a directory into the store, a download copies it back out.
fn github_action(
    w: &World,
    runner: &Runner,
    uses: &str,
    with: &dyn Fn(&str) -> String,
) -> (Option<i32>, String) {
    let action = uses.split('@').next().unwrap();
    match action {
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

#[test]
fn the_github_recipe_promotes_the_agents_paths_onto_the_branch_once() {
    if !jq_present() {
        return;
    }
    let mut w = World::new();
    let mut agent = w.runner();
    let runs = run_github_job(&w, &mut agent, "agent", "100", &mut |_, _| {});
    all_passed(&runs, &agent);
    let document = w.store.join("change-set/change-set.json");
    let digest = uploaded_digest(&document);
    assert!(w.store.join("change-set/run.json").is_file());
    assert!(
        step(&runs, "Install a3s-iso")
            .output
            .contains("runner-1/home/.local/bin/a3s-iso"),
        "{}",
        agent.log
    );

    let mut promote = w.runner();
    let mut checked = false;
    let runs = run_github_job(&w, &mut promote, "promote", "100", &mut |script, runner| {
        if script.contains("git add -A") {
            // Before the commit: only the agent's paths differ.
            assert_eq!(runner.porcelain(), [" M src/lib.txt", "?? docs/agent.md"]);
            checked = true;
        }
    });
    all_passed(&runs, &promote);
    assert!(checked, "the commit step ran");
    assert_eq!(promote.porcelain(), Vec::<String>::new(), "{}", promote.log);
    let output = &step(&runs, "Verify and promote").output;
    assert!(
        output.contains(&format!(
            "::notice title=a3s-iso promote::applied {digest}: 2 file(s)"
        )),
        "{output}"
    );
    // The artifacts are outside the checkout, and hold this run's outcome.
    let artifacts = promote.temp.join("a3s-iso-artifacts");
    assert!(artifacts.join("summary.json").is_file());
    assert!(
        std::fs::read_to_string(artifacts.join("promote.json"))
            .unwrap()
            .contains("\"outcome\": \"applied\"")
    );
    assert!(w.store.join("a3s-iso-artifacts/promote.json").is_file());
    let tip = w.tip();
    assert_eq!(changed_paths(&w, &tip), AGENT_PATHS);
    assert_eq!(
        w.fx.git(&w.origin, &["rev-parse", &format!("{tip}^")]),
        w.base
    );
    let message = w.fx.git(&w.origin, &["log", "-1", "--format=%B", &tip]);
    assert!(
        message.contains(&format!("A3s-Iso-Change-Set: {digest}")),
        "{message}"
    );

    // The job again on a fresh runner: the branch has the commit; nothing lands twice.
    let mut again = w.runner();
    let runs = run_github_job(&w, &mut again, "promote", "101", &mut |_, _| {});
    all_passed(&runs, &again);
    assert!(
        step(&runs, "Verify and promote").output.contains(&format!(
            "::notice title=a3s-iso promote::idempotent: {digest}"
        )),
        "{}",
        again.log
    );
    assert!(
        step(&runs, "Commit and push")
            .output
            .contains("idempotent: nothing to commit")
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
    let verify = step(&runs, "Verify and promote");
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

/// Runs one job on `runner` as GitLab does: a checkout of the commit (detached), the
/// artifacts of earlier jobs put back at their paths, `before_script` and `script` in one
/// shell, `after_script` in another, then the job's `artifacts:paths` uploaded.
fn run_gitlab_job(
    w: &World,
    runner: &mut Runner,
    job: &str,
    job_id: &str,
    before: &mut dyn FnMut(&str, &Runner),
) -> StepRun {
    let pipeline = gitlab_pipeline();
    let job_yaml = pipeline.get(job).unwrap();
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
        (
            "A3S_ISO_RELEASE_URL".into(),
            w.tarball.display().to_string(),
        ),
        ("A3S_ISO_RELEASE_SHA256".into(), w.tarball_sha256.clone()),
        ("AGENT_COMMAND".into(), AGENT.into()),
        ("AGENT_API_KEY".into(), "key-for-the-test".into()),
        ("A3S_ISO_RUN_FLAGS".into(), w.run_flags().into()),
        ("A3S_ISO_PUSH_URL".into(), w.origin.display().to_string()),
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
    // GitLab fetches the pipeline's commit, shallow, and checks it out detached.
    shallow_checkout(w, runner, &w.base, None);
    if let Some(needs) = job_yaml.get("needs") {
        for need in needs.seq() {
            copy_dir(&w.store.join(need.str()), &runner.workspace);
        }
    }
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
        cmd.envs(&vars).env_remove("NO_COLOR");
        cmd
    };
    let mut script = lines("before_script");
    script.extend(lines("script"));
    let (status, mut output) = feed_shell(shell(), &script, runner, before);
    let (_, after) = feed_shell(shell(), &lines("after_script"), runner, &mut |_, _| {});
    output.push_str(&after);
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
    runner
        .log
        .push_str(&format!("== {job} (exit {status:?})\n{output}"));
    StepRun {
        name: job.into(),
        status,
        output,
    }
}

#[test]
fn the_gitlab_recipe_promotes_the_agents_paths_onto_the_branch_once() {
    if !jq_present() {
        return;
    }
    let mut w = World::new();
    let mut agent = w.runner();
    let run = run_gitlab_job(&w, &mut agent, "agent", "1", &mut |_, _| {});
    assert_eq!(run.status, Some(0), "{}", agent.log);
    let document = w.store.join("agent/change-set/change-set.json");
    let digest = uploaded_digest(&document);

    let mut promote = w.runner();
    let mut checked = false;
    let run = run_gitlab_job(&w, &mut promote, "promote", "2", &mut |line, runner| {
        if line.contains("git add -A") {
            assert_eq!(runner.porcelain(), [" M src/lib.txt", "?? docs/agent.md"]);
            checked = true;
        }
    });
    assert_eq!(run.status, Some(0), "{}", promote.log);
    assert!(checked);
    // GitLab's log: a section around the step, and a green NOTICE line.
    assert!(
        run.output.contains("\x1b[0Ksection_start:"),
        "{}",
        run.output
    );
    assert!(run.output.contains("\x1b[0Ksection_end:"));
    assert!(
        run.output.contains(&format!(
            "\x1b[32;1mNOTICE: a3s-iso promote: applied {digest}: 2 file(s)"
        )),
        "{}",
        run.output
    );
    // After the commit nothing is left (after_script's copy for upload is ignored).
    assert_eq!(promote.porcelain(), Vec::<String>::new(), "{}", promote.log);
    assert!(
        w.store
            .join("promote/a3s-iso-artifacts/summary.json")
            .is_file()
    );
    let artifacts = promote.builds.join("a3s-iso-2/artifacts");
    assert!(artifacts.join("promote.json").is_file());
    let tip = w.tip();
    assert_eq!(changed_paths(&w, &tip), AGENT_PATHS);
    assert_eq!(
        w.fx.git(&w.origin, &["rev-parse", &format!("{tip}^")]),
        w.base
    );

    // A retried promote job on a fresh runner: the branch has the commit now.
    let mut again = w.runner();
    let run = run_gitlab_job(&w, &mut again, "promote", "3", &mut |_, _| {});
    assert_eq!(run.status, Some(0), "{}", again.log);
    assert!(
        run.output
            .contains(&format!("NOTICE: a3s-iso promote: idempotent: {digest}")),
        "{}",
        run.output
    );
    assert!(run.output.contains("idempotent: nothing to commit"));
    assert_eq!(w.tip(), tip);
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

#[test]
fn the_github_recipe_fails_with_nothing_applied_when_the_branch_moved_under_the_agent() {
    if !jq_present() {
        return;
    }
    let mut w = World::new();
    let mut agent = w.runner();
    let runs = run_github_job(&w, &mut agent, "agent", "100", &mut |_, _| {});
    all_passed(&runs, &agent);
    // Someone pushes to the branch while the agent worked.
    w.fx.write("src/lib.txt", "someone else\n");
    let moved = w.fx.commit_all("moved on");
    w.fx.git(
        &w.fx.src,
        &["push", "-q", w.origin.to_str().unwrap(), "feature"],
    );
    let mut promote = w.runner();
    let runs = run_github_job(&w, &mut promote, "promote", "100", &mut |_, _| {});
    let verify = step(&runs, "Verify and promote");
    assert_eq!(verify.status, Some(3), "{}", promote.log);
    assert!(
        verify
            .output
            .contains("::error title=a3s-iso promote::conflict (base_differs)"),
        "{}",
        verify.output
    );
    assert_eq!(w.tip(), moved, "nothing pushed");
    assert_eq!(promote.porcelain(), Vec::<String>::new(), "nothing applied");
}
