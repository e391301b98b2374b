//! Source configurations users have: the whole lifecycle (bind, run, capture, diff, promote in
//! both modes, discard, the pool) on a source with each of them, landing byte for byte. One
//! test per configuration, from one table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::fixture::{Fixture, content_listing, isolate, json_of, patch_of, require_tool};

/// A source configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Config {
    SplitIndex,
    IndexVersion4,
    ManyFiles,
    UntrackedCache,
    FsmonitorBuiltin,
    FsmonitorHook,
    SkipHash,
    SparseCone,
    SparseNoCone,
    LinkedWorktree,
    CoreWorktree,
}

/// One test per configuration: a failure names its configuration.
macro_rules! configurations {
    ($($name:ident => $config:expr),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                lifecycle($config);
            }
        )*
    };
}

configurations! {
    split_index_source => Config::SplitIndex,
    index_version_4_source => Config::IndexVersion4,
    many_files_source => Config::ManyFiles,
    untracked_cache_source => Config::UntrackedCache,
    builtin_fsmonitor_source => Config::FsmonitorBuiltin,
    fsmonitor_hook_source => Config::FsmonitorHook,
    skip_hash_index_source => Config::SkipHash,
    sparse_cone_source => Config::SparseCone,
    sparse_non_cone_source => Config::SparseNoCone,
    linked_worktree_source => Config::LinkedWorktree,
    core_worktree_source => Config::CoreWorktree,
}

/// A committed binary file, and what the agent makes of it (a NUL and a high byte: binary).
const BLOB: &[u8] = b"\x00\x01\x02 binary \xff\xfe\n";
const BLOB_AFTER: &[u8] = b"\x00\x01\x02 binary, changed by the agent \xff\n";

/// The source of one configuration: the checkout is always `work/src`, so that isolations
/// are named as for any fixture.
struct Source {
    fx: Fixture,
    config: Config,
    /// Where a3s-iso is started: the checkout, or the git dir when only `core.worktree` leads
    /// from one to the other (as git itself is started there).
    start: PathBuf,
    /// The git dir the test's own git names, when the checkout has no `.git`.
    git_dir: Option<PathBuf>,
    /// What the fsmonitor hook writes if anything ever runs it.
    marker: PathBuf,
}

impl Source {
    fn new(config: Config) -> Source {
        let fx = Fixture::bare_root();
        let marker = fx.root.join("fsmonitor-ran");
        let mut source = Source {
            start: fx.src.clone(),
            git_dir: None,
            marker,
            config,
            fx,
        };
        source.create();
        source
    }

    /// The repository, its first commit, and the configuration under test.
    fn create(&mut self) {
        let work = self.fx.root.join("work");
        let src = self.fx.src.clone();
        let format = format!("--object-format={}", crate::fixture::object_format());
        match self.config {
            Config::LinkedWorktree => {
                let main = work.join("main");
                std::fs::create_dir_all(&main).unwrap();
                self.raw_git(&main, &["init", "-q", "-b", "main", &format]);
                write_files(&main);
                self.raw_git(&main, &["add", "-A"]);
                self.raw_git(&main, &["commit", "-q", "-m", "initial"]);
                self.raw_git(&main, &["worktree", "add", "-q", "-b", "feature", "../src"]);
                return;
            }
            Config::CoreWorktree => {
                let git_dir = work.join("repo.git");
                std::fs::create_dir_all(&src).unwrap();
                let (dir, tree) = (git_dir.to_str().unwrap(), src.to_str().unwrap());
                let init = [
                    "--git-dir",
                    dir,
                    "--work-tree",
                    tree,
                    "init",
                    "-q",
                    "-b",
                    "main",
                ];
                let mut init = init.to_vec();
                init.push(&format);
                self.raw_git(&work, &init);
                assert_eq!(
                    self.raw_git(&work, &["--git-dir", dir, "config", "core.worktree"]),
                    tree
                );
                assert!(!src.join(".git").exists());
                self.start = git_dir.clone();
                self.git_dir = Some(git_dir);
            }
            _ => {
                std::fs::create_dir_all(&src).unwrap();
                self.raw_git(&src, &["init", "-q", "-b", "main", &format]);
            }
        }
        for (key, value) in self.settings() {
            self.git(&src, &["config", key, &value]);
        }
        write_files(&src);
        self.git(&src, &["add", "-A"]);
        self.git(&src, &["commit", "-q", "-m", "initial"]);
        match self.config {
            Config::SparseCone => {
                self.git(&src, &["sparse-checkout", "set", "--cone", "src"]);
            }
            Config::SparseNoCone => {
                self.git(
                    &src,
                    &["sparse-checkout", "set", "--no-cone", "/src/", "/README.md"],
                );
            }
            Config::FsmonitorHook => {
                let hook = self.fx.root.join("fsmonitor-hook");
                let script = format!(
                    "#!/bin/sh\necho \"$@\" >> '{}'\nexit 1\n",
                    self.marker.display()
                );
                std::fs::write(&hook, script).unwrap();
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
                self.git(&src, &["config", "core.fsmonitor", hook.to_str().unwrap()]);
            }
            _ => {}
        }
        self.git(&src, &["status", "--porcelain"]);
    }

    /// The configuration set before the first commit.
    fn settings(&self) -> Vec<(&'static str, String)> {
        let set = |key, value: &str| vec![(key, value.to_string())];
        match self.config {
            Config::SplitIndex => set("core.splitIndex", "true"),
            Config::IndexVersion4 => set("index.version", "4"),
            Config::ManyFiles => set("feature.manyFiles", "true"),
            Config::UntrackedCache => set("core.untrackedCache", "true"),
            Config::FsmonitorBuiltin => set("core.fsmonitor", "true"),
            Config::SkipHash => set("index.skipHash", "true"),
            _ => Vec::new(),
        }
    }

    /// What the configuration did to the source's index, so that the test runs against it.
    fn check_precondition(&self) {
        let index = self.index_path();
        let bytes = std::fs::read(&index).unwrap();
        let version = u32::from_be_bytes(bytes[4..8].try_into().unwrap());
        let hash_len = if crate::fixture::object_format() == "sha256" {
            32
        } else {
            20
        };
        let trailer = &bytes[bytes.len() - hash_len..];
        let has = |ext: &[u8]| bytes.windows(4).any(|w| w == ext);
        match self.config {
            Config::SplitIndex => {
                assert!(has(b"link"), "the source's index is split");
                let shared = std::fs::read_dir(index.parent().unwrap())
                    .unwrap()
                    .flatten()
                    .any(|e| e.file_name().to_string_lossy().starts_with("sharedindex."));
                assert!(shared, "a shared index beside the source's index");
            }
            Config::IndexVersion4 => assert_eq!(version, 4),
            Config::ManyFiles => {
                assert_eq!(version, 4);
                assert!(trailer.iter().all(|b| *b == 0), "manyFiles skips the hash");
            }
            Config::UntrackedCache => assert!(has(b"UNTR"), "an untracked cache"),
            Config::SkipHash => assert!(trailer.iter().all(|b| *b == 0), "no index hash"),
            Config::SparseCone | Config::SparseNoCone => {
                assert!(!self.fx.src.join("docs/guide.txt").exists());
                assert!(self.fx.src.join("src/lib.txt").is_file());
            }
            Config::LinkedWorktree => assert!(self.fx.src.join(".git").is_file()),
            Config::CoreWorktree => assert!(!self.fx.src.join(".git").exists()),
            Config::FsmonitorBuiltin | Config::FsmonitorHook => {}
        }
    }

    /// The source checkout's index file.
    fn index_path(&self) -> PathBuf {
        let dir = self.git(&self.fx.src, &["rev-parse", "--absolute-git-dir"]);
        PathBuf::from(dir).join("index")
    }

    /// The test's own git in `dir`, with the fixture's environment and never an fsmonitor (so
    /// that only a3s-iso's git could have run the hook), through the git dir where the
    /// checkout has none.
    fn git(&self, dir: &Path, args: &[&str]) -> String {
        let mut all: Vec<String> = vec!["-c".into(), "core.fsmonitor=false".into()];
        if let Some(git_dir) = self.git_dir.as_ref().filter(|_| dir == self.fx.src) {
            all.push("--git-dir".into());
            all.push(git_dir.to_str().unwrap().into());
        }
        all.extend(args.iter().map(|a| a.to_string()));
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        self.raw_git(dir, &all)
    }

    fn raw_git(&self, dir: &Path, args: &[&str]) -> String {
        let mut cmd = Command::new("git");
        cmd.current_dir(dir).args(args);
        isolate(&mut cmd, &self.fx.home);
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{:?}: git {args:?} failed: {}",
            self.config,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim_end().to_string()
    }

    /// `a3s-iso --json ARGS` started where a user starts it for this source.
    fn json(&self, args: &[&str]) -> (i32, Value) {
        json_of(
            self.fx
                .cmd_in(&self.start)
                .arg("--json")
                .args(args)
                .output()
                .unwrap(),
        )
    }

    /// `a3s-iso --json ARGS` that must succeed.
    fn ok(&self, args: &[&str]) -> Value {
        let (code, doc) = self.json(args);
        assert_eq!(code, 0, "{:?}: {args:?}: {doc:#}", self.config);
        doc
    }

    fn isolation(&self, id: &str) -> PathBuf {
        self.fx.isolation(id)
    }

    /// Commits whatever a promote left in the checkout.
    fn commit_all(&self, message: &str) {
        self.git(&self.fx.src, &["add", "-A"]);
        self.git(&self.fx.src, &["commit", "-q", "-m", message]);
    }

    /// What the user sees of the checkout: every file outside `.git`, by content.
    fn files(&self, dir: &Path) -> BTreeMap<String, String> {
        let mut files = content_listing(dir);
        files.retain(|path, _| path != ".git" && !path.starts_with(".git/"));
        files
    }

    /// The fsmonitor hook never ran (a3s-iso's git turns it off; the test's git too).
    fn assert_no_fsmonitor_ran(&self, step: &str) {
        assert!(
            !self.marker.exists(),
            "{:?}: the fsmonitor hook ran by {step}: {}",
            self.config,
            std::fs::read_to_string(&self.marker).unwrap_or_default()
        );
    }
}

/// The first commit: a text file at the top, files under `src/` (one to change, one to delete,
/// a binary), and `docs/` (outside the sparse patterns).
fn write_files(dir: &Path) {
    let write = |rel: &str, bytes: &[u8]| {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    };
    write("README.md", b"hello\n");
    write("src/lib.txt", b"one\ntwo\n");
    write("src/gone.txt", b"to be deleted\n");
    write("src/data.bin", BLOB);
    write("docs/guide.txt", b"guide\n");
}

/// The agent's edits, as a shell script run in its isolation: a changed, an added, a deleted
/// and a changed binary file, all where every configuration has files.
fn agent_script() -> String {
    format!(
        "echo 'an agent line' >> README.md && printf 'one\\ntwo\\nthree\\n' > src/lib.txt && \
         echo 'added' > src/new.txt && rm src/gone.txt && printf '{}' > src/data.bin",
        BLOB_AFTER
            .iter()
            .map(|b| format!("\\{b:03o}"))
            .collect::<String>()
    )
}

/// What `git status --porcelain` shows in the checkout after a patch promote of the edits.
const PROMOTED_STATUS: &str =
    " M README.md\n M src/data.bin\n D src/gone.txt\n M src/lib.txt\n?? src/new.txt";

/// How many files a patch touches.
fn sections(patch: &[u8]) -> usize {
    String::from_utf8_lossy(patch)
        .lines()
        .filter(|l| l.starts_with("diff --git "))
        .count()
}

fn lifecycle(config: Config) {
    if !require_tool("sandbox") {
        return;
    }
    let source = Source::new(config);
    source.check_precondition();
    patch_mode(&source);
    source.assert_no_fsmonitor_ran("the patch-mode lifecycle");
    branch_mode(&source);
    source.assert_no_fsmonitor_ran("the branch-mode lifecycle");
    pool(&source);
    source.assert_no_fsmonitor_ran("the pool");
    if matches!(config, Config::SparseCone | Config::SparseNoCone) {
        outside_the_patterns(&source);
    }
    source.assert_no_fsmonitor_ran("the whole lifecycle");
    if config == Config::FsmonitorHook {
        // The hook is live: a git that does not turn it off runs it.
        source.raw_git(&source.fx.src, &["status", "--porcelain"]);
        assert!(source.marker.is_file(), "git runs the configured hook");
    }
}

/// bind, run (the command runs), capture, verify, diff, promote, discard.
fn patch_mode(source: &Source) {
    let config = source.config;
    let src = &source.fx.src;
    source.ok(&["bind", "-s", "a"]);
    let iso = source.isolation("a");
    assert_eq!(
        source.files(&iso),
        source.files(src),
        "{config:?}: the isolation holds what the checkout holds"
    );
    let run = source.ok(&["run", "-s", "a", "--", "sh", "-c", &agent_script()]);
    assert_eq!(run["state"], "completed", "{config:?}: {run}");
    assert_eq!(run["exit_code"], 0, "{config:?}: {run}");
    assert_eq!(std::fs::read(iso.join("src/data.bin")).unwrap(), BLOB_AFTER);
    let document = source.fx.root.join("a.json");
    source.ok(&["capture", "-s", "a", "-o", document.to_str().unwrap()]);
    let verified = source.ok(&["verify", document.to_str().unwrap()]);
    assert_eq!(verified["valid"], true, "{config:?}: {verified}");
    let stored: Value = serde_json::from_slice(&std::fs::read(&document).unwrap()).unwrap();
    let patch = patch_of(&stored);
    assert_eq!(
        sections(&patch),
        5,
        "{config:?}: {}",
        String::from_utf8_lossy(&patch)
    );
    let diff = source
        .fx
        .cmd_in(&source.start)
        .args(["diff", "-s", "a"])
        .output()
        .unwrap();
    assert!(diff.status.success(), "{config:?}: {diff:?}");
    assert_eq!(
        diff.stdout, patch,
        "{config:?}: diff prints the captured patch"
    );
    let promoted = source.ok(&["promote", "-s", "a"]);
    assert_eq!(promoted["outcome"], "applied", "{config:?}: {promoted}");
    assert_eq!(
        source.files(src),
        source.files(&iso),
        "{config:?}: the checkout holds the isolation's files byte for byte"
    );
    assert_eq!(
        source.git(src, &["status", "--porcelain"]),
        PROMOTED_STATUS,
        "{config:?}"
    );
    let again = source.ok(&["promote", "-s", "a"]);
    assert_eq!(again["outcome"], "idempotent", "{config:?}: {again}");
    let discarded = source.ok(&["discard", "-s", "a"]);
    assert_eq!(discarded["removed"], true, "{config:?}: {discarded}");
    assert!(!iso.exists());
    source.commit_all("the agent's work");
}

/// The agent's commits come back as commits.
fn branch_mode(source: &Source) {
    let config = source.config;
    let src = &source.fx.src;
    let old_tip = source.git(src, &["rev-parse", "HEAD"]);
    source.ok(&["bind", "-s", "b"]);
    let iso = source.isolation("b");
    std::fs::write(iso.join("src/committed.txt"), "committed by the agent\n").unwrap();
    source.git(&iso, &["add", "-A"]);
    source.git(&iso, &["commit", "-q", "-m", "the agent's commit"]);
    std::fs::write(iso.join("README.md"), "left uncommitted\n").unwrap();
    let promoted = source.ok(&["promote", "-s", "b", "--mode", "branch"]);
    assert_eq!(promoted["outcome"], "applied", "{config:?}: {promoted}");
    let subjects = source.git(src, &["log", "--format=%s", &format!("{old_tip}..HEAD")]);
    assert_eq!(subjects.lines().count(), 2, "{config:?}: {subjects}");
    assert!(
        subjects.ends_with("the agent's commit"),
        "{config:?}: {subjects}"
    );
    assert_eq!(
        source.files(src),
        source.files(&iso),
        "{config:?}: the checkout holds the isolation's files byte for byte"
    );
    assert_eq!(
        source.git(src, &["status", "--porcelain"]),
        "",
        "{config:?}"
    );
    source.ok(&["discard", "-s", "b"]);
    assert!(!iso.exists());
}

/// What a session sees of its isolation, without stat data and paths that name the tree.
fn observed(source: &Source, tree: &Path) -> BTreeMap<String, String> {
    let git = |args: &[&str]| source.git(tree, args);
    let mut seen = BTreeMap::new();
    seen.insert(
        "status".into(),
        git(&["status", "--porcelain", "--ignored"]),
    );
    seen.insert("HEAD".into(), git(&["rev-parse", "HEAD"]));
    seen.insert("ls-files -s".into(), git(&["ls-files", "-s"]));
    seen.insert("ls-files -t".into(), git(&["ls-files", "-t"]));
    let mut config = Command::new("git");
    config
        .current_dir(tree)
        .args(["config", "--get-all", "core.sparseCheckout"]);
    isolate(&mut config, &source.fx.home);
    let config = config.output().unwrap();
    seen.insert(
        "sparse".into(),
        String::from_utf8_lossy(&config.stdout).into_owned(),
    );
    let admin = PathBuf::from(git(&["rev-parse", "--absolute-git-dir"]));
    for name in ["config.worktree", "info/sparse-checkout"] {
        seen.insert(
            name.into(),
            std::fs::read_to_string(admin.join(name)).unwrap_or_else(|_| "(none)".into()),
        );
    }
    seen.insert("files".into(), format!("{:?}", source.files(tree)));
    seen
}

/// A pool of one: a warm bind looks like a cold one, its work lands, and its tree goes back.
fn pool(source: &Source) {
    let config = source.config;
    let src = &source.fx.src;
    let filled = source.ok(&["pool", "--size", "1"]);
    assert_eq!(
        filled["spares"].as_array().unwrap().len(),
        1,
        "{config:?}: {filled}"
    );
    let warm = source.ok(&["bind", "-s", "w"]);
    assert_eq!(warm["warm"], true, "{config:?}: {warm}");
    let cold = source.ok(&["bind", "-s", "c"]);
    assert_eq!(cold["warm"], false, "{config:?}: {cold}");
    let (w, c) = (source.isolation("w"), source.isolation("c"));
    assert_eq!(
        observed(source, &w),
        observed(source, &c),
        "{config:?}: warm and cold binds"
    );
    // The cold tree is not what goes back to the pool.
    source.ok(&["pool", "--size", "0"]);
    source.ok(&["discard", "-s", "c"]);

    let run = source.ok(&[
        "run",
        "-s",
        "w",
        "--",
        "sh",
        "-c",
        "echo 'warm work' > src/warm.txt",
    ]);
    assert_eq!(run["exit_code"], 0, "{config:?}: {run}");
    source.ok(&["capture", "-s", "w"]);
    let promoted = source.ok(&["promote", "-s", "w"]);
    assert_eq!(promoted["outcome"], "applied", "{config:?}: {promoted}");
    assert_eq!(
        std::fs::read(src.join("src/warm.txt")).unwrap(),
        b"warm work\n",
        "{config:?}"
    );
    assert_eq!(source.files(src), source.files(&w), "{config:?}");
    source.commit_all("the warm session's work");
    source.ok(&["pool", "--size", "1", "--no-fill"]);
    let returned = source.ok(&["discard", "-s", "w"]);
    assert_eq!(returned["recycled"], true, "{config:?}: {returned}");
    assert!(!w.exists());

    let next = source.ok(&["bind", "-s", "next"]);
    assert_eq!(next["warm"], true, "{config:?}: {next}");
    let cold = source.ok(&["bind", "-s", "cold"]);
    assert_eq!(cold["warm"], false, "{config:?}: {cold}");
    let (n, c) = (source.isolation("next"), source.isolation("cold"));
    assert_eq!(
        observed(source, &n),
        observed(source, &c),
        "{config:?}: a recycled tree and a cold bind"
    );
    assert_eq!(source.files(&n), source.files(src), "{config:?}");
    source.ok(&["pool", "--size", "0"]);
    for id in ["next", "cold"] {
        source.ok(&["discard", "-s", id]);
    }
}

/// A sparse source: the isolation has its patterns; what the agent writes outside them is
/// captured all the same (a tracked file it wrote back, a new file), never lost.
fn outside_the_patterns(source: &Source) {
    let config = source.config;
    source.ok(&["bind", "-s", "out"]);
    let iso = source.isolation("out");
    assert!(
        !iso.join("docs/guide.txt").exists(),
        "{config:?}: the patterns hold"
    );
    let script =
        "mkdir -p docs && echo 'written outside' > docs/guide.txt && echo new > docs/new.txt";
    let run = source.ok(&["run", "-s", "out", "--", "sh", "-c", script]);
    assert_eq!(run["exit_code"], 0, "{config:?}: {run}");
    let captured = source.ok(&["capture", "-s", "out"]);
    assert_eq!(sections(&patch_of(&captured)), 2, "{config:?}: {captured}");
    let (code, stat) = source.json(&["diff", "-s", "out", "--stat"]);
    assert_eq!(code, 0, "{config:?}: {stat}");
    let paths: Vec<&str> = stat["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        ["docs/guide.txt", "docs/new.txt"],
        "{config:?}: {stat}"
    );
    // The checkout leaves those files out: the change set does not land until it has them.
    let src = &source.fx.src;
    let before = source.files(src);
    let (code, refused) = source.json(&["promote", "-s", "out"]);
    assert_eq!(code, 3, "{config:?}: {refused}");
    assert_eq!(
        refused["reason"], "patch_does_not_apply",
        "{config:?}: {refused}"
    );
    assert_eq!(
        refused["conflicting_paths"],
        serde_json::json!(["docs/guide.txt"])
    );
    let detail = refused["detail"].as_str().unwrap();
    assert!(
        detail.contains("git sparse-checkout add"),
        "{config:?}: {detail}"
    );
    assert_eq!(source.files(src), before, "{config:?}: nothing landed");
    let widen: &[&str] = match config {
        Config::SparseCone => &["sparse-checkout", "add", "docs"],
        _ => &["sparse-checkout", "add", "/docs/"],
    };
    source.git(src, widen);
    let promoted = source.ok(&["promote", "-s", "out"]);
    assert_eq!(promoted["outcome"], "applied", "{config:?}: {promoted}");
    for (path, content) in [
        ("docs/guide.txt", "written outside\n"),
        ("docs/new.txt", "new\n"),
    ] {
        assert_eq!(
            std::fs::read_to_string(src.join(path)).unwrap(),
            content,
            "{config:?}"
        );
    }
    source.ok(&["discard", "-s", "out"]);
}

/// A seed index that names a shared index (as one copied from a split index before seeds were
/// kept whole) is rebuilt from HEAD rather than read: the session's runs and captures work.
#[test]
fn a_split_seed_is_rebuilt_instead_of_read() {
    if !require_tool("sandbox") {
        return;
    }
    let source = Source::new(Config::SplitIndex);
    source.ok(&["bind", "-s", "old"]);
    let iso = source.isolation("old");
    let admin = PathBuf::from(source.git(&iso, &["rev-parse", "--absolute-git-dir"]));
    let seeds = source.fx.src.join(".git/a3s-iso/seeds");
    let name = admin.file_name().unwrap().to_string_lossy().into_owned();
    let seed = seeds.join(format!("{name}.index"));
    assert!(seed.is_file());
    let split = std::fs::read(admin.join("index")).unwrap();
    assert!(
        split.windows(4).any(|w| w == b"link"),
        "git split the new isolation's index"
    );
    std::fs::write(&seed, &split).unwrap();
    let run = source.ok(&["run", "-s", "old", "--", "sh", "-c", "echo work > work.txt"]);
    assert_eq!(run["exit_code"], 0, "{run}");
    let captured = source.ok(&["capture", "-s", "old"]);
    assert_eq!(sections(&patch_of(&captured)), 1, "{captured}");
}

/// `bind --carry-wip` from a source whose index is split: the source's index is read as it is
/// (git finds its shared index in the source's git dir), and left as it was.
#[test]
fn carry_wip_reads_a_split_index_and_leaves_it_alone() {
    let source = Source::new(Config::SplitIndex);
    let src = &source.fx.src;
    std::fs::write(src.join("README.md"), "hello\nunstaged\n").unwrap();
    std::fs::write(src.join("src/staged.txt"), "staged\n").unwrap();
    source.git(src, &["add", "src/staged.txt"]);
    let index = source.index_path();
    let before = std::fs::read(&index).unwrap();
    assert!(
        before.windows(4).any(|w| w == b"link"),
        "the index is split"
    );
    let shared: Vec<String> = std::fs::read_dir(index.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("sharedindex."))
        .collect();
    let bound = source.ok(&["bind", "-s", "wip", "--carry-wip"]);
    assert_eq!(bound["carried_wip"], true, "{bound}");
    let iso = source.isolation("wip");
    assert_eq!(
        std::fs::read_to_string(iso.join("README.md")).unwrap(),
        "hello\nunstaged\n"
    );
    assert_eq!(
        std::fs::read_to_string(iso.join("src/staged.txt")).unwrap(),
        "staged\n"
    );
    assert_eq!(
        source.git(&iso, &["diff", "--cached", "--name-only"]),
        "src/staged.txt"
    );
    assert_eq!(
        std::fs::read(&index).unwrap(),
        before,
        "the source's index is untouched"
    );
    let after: Vec<String> = std::fs::read_dir(index.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("sharedindex."))
        .collect();
    assert_eq!(
        after, shared,
        "no shared index was added to the source's git dir"
    );
    let captured = source.ok(&["capture", "-s", "wip"]);
    assert_eq!(
        captured["patch_bytes"], 0,
        "the carried work is the base: {captured}"
    );
}
