//! Temporary repositories with git isolated from the machine: no global or system config,
//! HOME and XDG dirs inside the tempdir, pinned identities and dates.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::Value;
use sha2::{Digest, Sha256};

pub const BIN: &str = env!("CARGO_BIN_EXE_a3s-iso");

pub struct Fixture {
    /// A file system mounted for the test (dropped, so unmounted, before the tempdir goes).
    _mount: Option<CowMount>,
    _tmp: tempfile::TempDir,
    /// The tempdir (canonical): holds `home/` and `work/`.
    pub root: PathBuf,
    pub home: PathBuf,
    /// The source checkout, `work/src`.
    pub src: PathBuf,
}

/// The object format every repository a test creates uses: `sha1` (git's default), or
/// `sha256` when `A3S_ISO_TEST_OBJECT_FORMAT=sha256` (CI runs the whole suite both ways).
pub fn object_format() -> &'static str {
    static FORMAT: OnceLock<&'static str> = OnceLock::new();
    FORMAT.get_or_init(
        || match std::env::var("A3S_ISO_TEST_OBJECT_FORMAT").as_deref() {
            Ok("sha256") => "sha256",
            Ok("sha1") | Err(_) => "sha1",
            Ok(other) => panic!("A3S_ISO_TEST_OBJECT_FORMAT={other}: expected sha1 or sha256"),
        },
    )
}

/// How many times a stress test repeats (kills, rounds, generated cases): `var` when it is set
/// (scripts/test.sh sets CI's counts; `--thorough` leaves them unset), else `default`. A
/// value that is not a number is a mistake, not a default.
pub fn repetitions(var: &str, default: usize) -> usize {
    match std::env::var(var) {
        Ok(n) => n
            .parse()
            .unwrap_or_else(|_| panic!("{var}={n}: expected a number")),
        Err(_) => default,
    }
}

/// Applies the isolated environment to any command (git or a3s-iso).
pub fn isolate(cmd: &mut Command, home: &Path) {
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("GIT_") || key.starts_with("A3S_ISO_") || key.starts_with("XDG_") {
            cmd.env_remove(&key);
        }
    }
    cmd.env("HOME", home)
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Ada Agent")
        .env("GIT_AUTHOR_EMAIL", "ada@example.com")
        .env("GIT_AUTHOR_DATE", "2026-01-02T03:04:05Z")
        .env("GIT_COMMITTER_NAME", "Ada Agent")
        .env("GIT_COMMITTER_EMAIL", "ada@example.com")
        .env("GIT_COMMITTER_DATE", "2026-01-02T03:04:05Z")
        .env("TZ", "UTC")
        .env("NO_COLOR", "1")
        .env_remove("LC_ALL");
    // Every `git init` (the fixture's, a test's own, or one a3s-iso runs) picks the format.
    cmd.env("GIT_DEFAULT_HASH", object_format());
}

impl Fixture {
    /// A source with one commit (`README.md`, `src/lib.txt`) at `work/src`.
    pub fn new() -> Fixture {
        Fixture::with_object_format(object_format())
    }

    /// Like [`Fixture::new`], whatever format the run uses otherwise (`sha1` or `sha256`).
    pub fn with_object_format(format: &str) -> Fixture {
        let fx = Fixture::bare_root();
        std::fs::create_dir_all(&fx.src).unwrap();
        let format = format!("--object-format={format}");
        fx.git(&fx.src, &["init", "-q", "-b", "main", &format]);
        fx.write("README.md", "hello\n");
        fx.write("src/lib.txt", "one\ntwo\n");
        fx.commit_all("initial");
        fx
    }

    /// Like [`Fixture::new`], on a memory file system (`/dev/shm`) when there is one: for
    /// tests that rewrite thousands of files many times over, where a slow disk's writeback
    /// would dominate. Elsewhere, the usual temporary directory.
    pub fn in_memory() -> Fixture {
        let shm = Path::new("/dev/shm");
        let usable =
            std::fs::metadata(shm).is_ok_and(|m| m.is_dir()) && tempfile::tempdir_in(shm).is_ok();
        let fx = Fixture::bare_root_in(usable.then_some(shm));
        std::fs::create_dir_all(&fx.src).unwrap();
        fx.git(&fx.src, &["init", "-q", "-b", "main"]);
        fx.write("README.md", "hello\n");
        fx.write("src/lib.txt", "one\ntwo\n");
        fx.commit_all("initial");
        fx
    }

    /// Like [`Fixture::new`], outside `/tmp` and `/dev/shm` (which a sandboxed run sees as
    /// fresh, empty directories): in cargo's temporary directory under `target/`, where the
    /// source checkout is visible to a run as it is, read-only.
    pub fn outside_tmp() -> Fixture {
        let fx = Fixture::bare_root_in(Some(Path::new(env!("CARGO_TARGET_TMPDIR"))));
        std::fs::create_dir_all(&fx.src).unwrap();
        let format = format!("--object-format={}", object_format());
        fx.git(&fx.src, &["init", "-q", "-b", "main", &format]);
        fx.write("README.md", "hello\n");
        fx.write("src/lib.txt", "one\ntwo\n");
        fx.commit_all("initial");
        fx
    }

    /// Like [`Fixture::new`], on a copy-on-write file system of `kind` that the test makes
    /// and mounts (a loop device of a small sparse image), source and isolations on it. Fails
    /// the test when it cannot be made, unless [`ALLOW_MISSING`] names `kind` (`xfs`,
    /// `btrfs`), its `mkfs.<kind>` tool, or `root`: then `None`, and the test returns.
    pub fn on_cow(kind: CowKind) -> Option<Fixture> {
        let tmp = tempfile::tempdir().unwrap();
        let mount = match CowMount::make(kind, tmp.path()) {
            Ok(mount) => mount,
            Err(why)
                if missing_allowed(&[kind.name(), &format!("mkfs.{}", kind.name()), "root"]) =>
            {
                eprintln!(
                    "SKIPPED: no {} file system ({why}), allowed by {ALLOW_MISSING}",
                    kind.name()
                );
                return None;
            }
            Err(why) => panic!(
                "this test needs a {} file system it mounts itself, as root: {why}; or let the \
                 tests that need it skip with {ALLOW_MISSING}={}",
                kind.name(),
                kind.name()
            ),
        };
        let root = mount.dir.join("fx");
        let home = root.join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(root.join("work")).unwrap();
        let fx = Fixture {
            src: root.join("work/src"),
            _mount: Some(mount),
            _tmp: tmp,
            root,
            home,
        };
        std::fs::create_dir_all(&fx.src).unwrap();
        let format = format!("--object-format={}", object_format());
        fx.git(&fx.src, &["init", "-q", "-b", "main", &format]);
        fx.write("README.md", "hello\n");
        fx.write("src/lib.txt", "one\ntwo\n");
        fx.commit_all("initial");
        Some(fx)
    }

    /// Only the tempdir layout; nothing at `work/src`.
    pub fn bare_root() -> Fixture {
        Fixture::bare_root_in(None)
    }

    /// The tempdir layout in `dir` (default: the system's temporary directory).
    fn bare_root_in(dir: Option<&Path>) -> Fixture {
        let tmp = match dir {
            Some(dir) => tempfile::tempdir_in(dir).unwrap(),
            None => tempfile::tempdir().unwrap(),
        };
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let home = root.join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(root.join("work")).unwrap();
        Fixture {
            src: root.join("work/src"),
            _mount: None,
            _tmp: tmp,
            root,
            home,
        }
    }

    pub fn write(&self, rel: &str, content: &str) {
        let path = self.src.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// Commits 3,000 small files, so that a checkout takes long enough to be interrupted.
    pub fn commit_many_files(&self) {
        for dir in 0..20 {
            for file in 0..150 {
                self.write(
                    &format!("d{dir}/f{file}.txt"),
                    &format!("{dir} {file}\n").repeat(20),
                );
            }
        }
        self.commit_all("many files");
    }

    pub fn commit_all(&self, message: &str) -> String {
        self.git(&self.src, &["add", "-A"]);
        self.git(&self.src, &["commit", "-q", "-m", message]);
        self.git(&self.src, &["rev-parse", "HEAD"])
    }

    /// A repository `work/lib` with one commit (`lib.txt`), added to the source as the
    /// submodule `vendor/lib` and committed; returns the submodule's path in the source.
    pub fn add_submodule(&self) -> PathBuf {
        let lib = self.root.join("work/lib");
        std::fs::create_dir(&lib).unwrap();
        self.git(&lib, &["init", "-q", "-b", "main"]);
        std::fs::write(lib.join("lib.txt"), "library\n").unwrap();
        self.git(&lib, &["add", "-A"]);
        self.git(&lib, &["commit", "-q", "-m", "lib"]);
        let mut add = Command::new("git");
        add.current_dir(&self.src)
            .args(["submodule", "add", "-q", lib.to_str().unwrap(), SUB]);
        isolate(&mut add, &self.home);
        add.envs(ALLOW_FILE);
        assert!(add.status().unwrap().success());
        self.commit_all("add a submodule");
        self.src.join(SUB)
    }

    /// Runs git in `dir`; panics on failure; returns trimmed stdout.
    pub fn git(&self, dir: &Path, args: &[&str]) -> String {
        let mut cmd = Command::new("git");
        cmd.current_dir(dir).args(args);
        isolate(&mut cmd, &self.home);
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim_end().to_string()
    }

    /// An a3s-iso command started in the source.
    pub fn cmd(&self) -> Command {
        self.cmd_in(&self.src)
    }

    /// An a3s-iso command started in `dir`. Its stdin is `/dev/null` unless a test gives it one:
    /// a3s-iso never gets the terminal the tests were started from.
    pub fn cmd_in(&self, dir: &Path) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.current_dir(dir).stdin(Stdio::null());
        isolate(&mut cmd, &self.home);
        cmd
    }

    /// Runs a3s-iso with `--json` in the source; returns the exit status and the document.
    pub fn json(&self, args: &[&str]) -> (i32, Value) {
        json_of(self.cmd().arg("--json").args(args).output().unwrap())
    }

    pub fn json_in(&self, dir: &Path, args: &[&str]) -> (i32, Value) {
        json_of(self.cmd_in(dir).arg("--json").args(args).output().unwrap())
    }

    /// `--json changes --request -` with `request` on standard input, in the source; the exit
    /// status and the document (the run's change set, or an error document).
    pub fn changes(&self, request: &[u8]) -> (i32, Value) {
        use std::io::Write;
        let mut child = self
            .cmd()
            .args(["--json", "changes", "--request", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // a3s-iso may refuse before it reads all of a large request: a broken pipe is fine.
        let _ = child.stdin.take().unwrap().write_all(request);
        json_of(child.wait_with_output().unwrap())
    }

    /// `bind -s ID` that must succeed; returns the document.
    pub fn bind(&self, id: &str) -> Value {
        let (code, doc) = self.json(&["bind", "-s", id]);
        assert_eq!(code, 0, "{doc}");
        doc
    }

    pub fn isolation(&self, id: &str) -> PathBuf {
        self.root
            .join("work")
            .join(format!(".src.a3s-isolate-{id}"))
    }

    /// Another repository at `work/NAME`, beside the source, with one commit of `FILE`.
    pub fn other_repository(&self, name: &str, file: &str) -> PathBuf {
        let other = self.root.join("work").join(name);
        std::fs::create_dir(&other).unwrap();
        self.git(&other, &["init", "-q"]);
        std::fs::write(other.join(file), format!("{name}\n")).unwrap();
        self.git(&other, &["add", "-A"]);
        self.git(&other, &["commit", "-q", "-m", name]);
        other
    }

    /// Registered worktree paths of the source.
    pub fn worktrees(&self) -> Vec<String> {
        self.git(&self.src, &["worktree", "list", "--porcelain"])
            .lines()
            .filter_map(|l| l.strip_prefix("worktree "))
            .map(String::from)
            .collect()
    }
}

/// The variable that lets a test whose tool is missing skip instead of failing: a
/// comma-separated list of tool names (as given to [`require_tool`]), or `all`.
pub const ALLOW_MISSING: &str = "A3S_ISO_TEST_ALLOW_MISSING";

/// What a test needs besides git and the binary. `tool` is a program looked up on PATH, or
/// `sandbox` (this kernel gives the run sandbox: Landlock and namespaces), or `root` (the
/// tests run as root). Returns true when it is there. When it is missing the test fails,
/// unless [`ALLOW_MISSING`] names it: then this says so, returns false, and the test returns.
///
/// ```ignore
/// if !require_tool("zsh") {
///     return;
/// }
/// ```
pub fn require_tool(tool: &str) -> bool {
    let present = match tool {
        "sandbox" => sandbox_available(),
        "root" => is_root(),
        "volatile-overlay" => kernel_at_least((5, 10)),
        program => on_path(program),
    };
    if present {
        return true;
    }
    let allowed = std::env::var(ALLOW_MISSING).unwrap_or_default();
    if allowed
        .split(',')
        .map(str::trim)
        .any(|name| name == tool || name == "all")
    {
        eprintln!("SKIPPED: {tool} missing, allowed by {ALLOW_MISSING}");
        return false;
    }
    panic!(
        "this test needs {tool}, which is missing here: {}; or let the tests that need it skip \
         with {ALLOW_MISSING}={tool}",
        match tool {
            "sandbox" => "the kernel cannot give the run sandbox (Landlock, namespaces)",
            "root" => "run the tests as root",
            "volatile-overlay" => "overlays mounted `volatile` need Linux 5.10 or later",
            _ => "install it (scripts/test.sh does)",
        }
    );
}

/// Whether [`ALLOW_MISSING`] names one of `names` (or `all`).
fn missing_allowed(names: &[&str]) -> bool {
    std::env::var(ALLOW_MISSING)
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .any(|name| name == "all" || names.contains(&name))
}

/// A copy-on-write file system a test can make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CowKind {
    /// XFS with reflinks (`mkfs.xfs -m reflink=1`).
    Xfs,
    /// btrfs.
    Btrfs,
}

impl CowKind {
    pub fn name(self) -> &'static str {
        match self {
            CowKind::Xfs => "xfs",
            CowKind::Btrfs => "btrfs",
        }
    }
}

/// A file system made in a small sparse image and mounted through a loop device; unmounted
/// (and its image removed) when dropped.
pub struct CowMount {
    /// Where it is mounted.
    pub dir: PathBuf,
    image: PathBuf,
}

impl CowMount {
    /// Makes and mounts a `kind` file system in `parent` (image and mount point).
    pub fn make(kind: CowKind, parent: &Path) -> Result<CowMount, String> {
        let image = parent.join(format!("{}.img", kind.name()));
        let dir = parent.join("mnt");
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        // XFS wants at least 300 MiB; the image is sparse, so it costs what is written.
        std::fs::File::create(&image)
            .and_then(|f| f.set_len(320 << 20))
            .map_err(|e| format!("cannot make {}: {e}", image.display()))?;
        let mkfs: &[&str] = match kind {
            CowKind::Xfs => &["mkfs.xfs", "-q", "-m", "reflink=1"],
            CowKind::Btrfs => &["mkfs.btrfs", "-q"],
        };
        run_tool(mkfs[0], &[&mkfs[1..], &[image.to_str().unwrap()]].concat())?;
        run_tool(
            "mount",
            &["-o", "loop", image.to_str().unwrap(), dir.to_str().unwrap()],
        )?;
        let dir = std::fs::canonicalize(&dir).map_err(|e| e.to_string())?;
        Ok(CowMount { dir, image })
    }
}

impl Drop for CowMount {
    fn drop(&mut self) {
        let dir = self.dir.to_str().unwrap_or_default().to_string();
        if run_tool("umount", &[&dir]).is_err() {
            let _ = run_tool("umount", &["-l", &dir]);
        }
        let _ = std::fs::remove_file(&self.image);
    }
}

/// Runs a system tool; its stderr when it fails or cannot start.
fn run_tool(program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    Err(format!(
        "{program} {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// The git on `PATH`.
pub fn git_on_path() -> PathBuf {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("git"))
        .find(|git| git.is_file())
        .expect("git on PATH")
}

fn on_path(program: &str) -> bool {
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    std::env::split_paths(&path).any(|dir| {
        std::fs::metadata(dir.join(program))
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// Whether the running kernel is at least `(major, minor)`.
fn kernel_at_least(wanted: (u32, u32)) -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse::<u32>().ok());
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= wanted
}

/// Whether this machine can give the sandbox (Landlock and namespaces): a sandboxed run of
/// `true` succeeds. Probed once per test binary.
pub fn sandbox_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        let fx = Fixture::new();
        fx.bind("probe");
        let (code, doc) = fx.json(&["run", "-s", "probe", "--", "true"]);
        if code != 0 {
            eprintln!("sandbox unavailable on this machine: {doc}");
        }
        code == 0
    })
}

/// Parses the one JSON document a3s-iso printed and checks the schema name.
pub fn json_of(out: Output) -> (i32, Value) {
    let code = out.status.code().unwrap_or(-1);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}):\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let schema = doc["schema"].as_str().expect("a schema field");
    // Every document any test reads is checked against its published schema.
    crate::contract_schemas::assert_conforms(&doc);
    assert!(
        (schema.starts_with("a3s-iso.") && schema.ends_with(".v1"))
            || schema == "a3s.code.agent-change-set.v1",
        "{schema}"
    );
    // Failures are error documents; a run's, a promote's or doctor's outcome may carry a non-zero
    // status, and so may `discard --all`'s (its first failure's).
    if schema == "a3s-iso.error.v1" {
        assert_ne!(code, 0, "{doc}");
        assert!(doc["error"]["message"].is_string(), "{doc}");
        assert!(doc["error"]["code"].is_string(), "{doc}");
    } else if code != 0 {
        // An invalid document is a verify result with `valid: false` (exit 5).
        let invalid = schema == "a3s-iso.verify.v1" && doc["valid"] == false && code == 5;
        assert!(
            invalid
                || [
                    "a3s-iso.run.v1",
                    "a3s-iso.promote.v1",
                    "a3s-iso.doctor.v1",
                    "a3s-iso.rebase.v1",
                    "a3s-iso.land.v1",
                    "a3s-iso.discard-all.v1",
                ]
                .contains(&schema),
            "exit {code} with {doc}"
        );
    }
    (code, doc)
}

/// A change-set request (`a3s.code.agent-change-set-request.v1`) for the run of `session` and
/// `run` recorded with `release` as its `agent_release_identity`.
pub fn change_set_request(release: &str, session: &str, run: &str) -> Value {
    serde_json::json!({
        "schema": "a3s.code.agent-change-set-request.v1",
        "identity": {
            "schema": "a3s.code.agent-run-identity.v1",
            "protocol": "a3s.code.agent.v1",
            "agent_release_identity": release,
            "session_id": session,
            "run_id": run,
        },
    })
}

pub fn error_code(doc: &Value) -> &str {
    doc["error"]["code"].as_str().unwrap_or("")
}

/// Every entry under `dir` (symlinks not followed): relative path → kind, mode and content hash.
pub fn listing(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out, &|_| true, true);
    out
}

/// [`listing`] of a fixture's root without the user's cache dir (`home/.cache`): every command
/// asks git's version before anything else, and keeps the answer there per git binary, whatever
/// it is refused for next. Nothing in it is about a repository.
pub fn listing_but_cache(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    walk(
        root,
        root,
        &mut out,
        &|rel| !rel.starts_with("home/.cache"),
        true,
    );
    out
}

/// Every entry under `dir` by name and content only: relative path → `dir`, `link <target>`
/// or `file <size> <sha256>`. Modes are left out, so the umask a file was written under does
/// not count.
pub fn content_listing(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out, &|_| true, false);
    out
}

/// A checkout as a user sees it: every file outside `.git`, plus the index and HEAD.
pub fn checkout_listing(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    walk(src, src, &mut out, &|rel| rel != Path::new(".git"), true);
    for extra in [".git/index", ".git/HEAD"] {
        if let Some(entry) = describe(&src.join(extra), true) {
            out.insert(extra.into(), entry);
        }
    }
    out
}

fn walk(
    base: &Path,
    dir: &Path,
    out: &mut BTreeMap<String, String>,
    keep: &dyn Fn(&Path) -> bool,
    modes: bool,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let rel = path.strip_prefix(base).unwrap().to_path_buf();
        if !keep(&rel) {
            continue;
        }
        if let Some(desc) = describe(&path, modes) {
            out.insert(rel.to_string_lossy().into_owned(), desc);
        }
        if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            walk(base, &path, out, keep, modes);
        }
    }
}

/// `link <target>`, `dir [mode]` or `file [mode] <size> <sha256>`.
fn describe(path: &Path, modes: bool) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let mode = match modes {
        true => format!(" {:o}", meta.permissions().mode() & 0o7777),
        false => String::new(),
    };
    let ft = meta.file_type();
    Some(if ft.is_symlink() {
        format!("link {}", std::fs::read_link(path).ok()?.display())
    } else if ft.is_dir() {
        format!("dir{mode}")
    } else {
        let bytes = std::fs::read(path).ok()?;
        format!(
            "file{mode} {} {}",
            meta.size(),
            hex::encode(Sha256::digest(&bytes))
        )
    })
}

/// Snapshot settings for output of a3s-iso run in `fx`: insta filters replace what differs
/// from run to run (the tempdir, generated ids, object ids and digests, pids, host names,
/// start identities, times, sizes that count the tempdir's path, the kernel's Landlock ABI,
/// the names of the machine's environment variables).
pub fn snapshot_settings(fx: &Fixture) -> insta::Settings {
    snapshot_settings_naming(fx, &[])
}

/// [`snapshot_settings`] that first replaces each of `named`'s values (an object id the test
/// knows, say) by its name, so that a snapshot still pins which value a field holds.
pub fn snapshot_settings_naming(fx: &Fixture, named: &[(&str, &str)]) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    for (value, name) in named {
        settings.add_filter(&regex::escape(value), *name);
    }
    let root = regex::escape(fx.root.to_str().unwrap());
    let tmp = regex::escape(std::env::temp_dir().to_str().unwrap().trim_end_matches('/'));
    let filters: &[(&str, &str)] = &[
        (&root, "[ROOT]"),
        (&format!("{tmp}/"), "[TMP]/"),
        // Scratch names carry their maker: -<pid>-<start ticks>-<host key>-<n>-<nanos>.
        (r"-\d+-\d+-[0-9a-f]{8}-\d+-[0-9a-f]{8}\b", "-[MAKER]"),
        // Generated session and run ids: <letter>-<ms, 11 hex>-<random, 8 hex>.
        (r"\b[a-z]-[0-9a-f]{11}-[0-9a-f]{8}\b", "[ID]"),
        // Object ids (sha1 or sha256) and sha256 digests.
        (r"\b[0-9a-f]{40}([0-9a-f]{24})?\b", "[HASH]"),
        (
            r"\bpid \d+ (\([^)\s]+\) )?on [^\s)]+",
            "pid [PID] on [HOST]",
        ),
        // The owner's command name: the test binary's, whose name carries a build hash.
        (r#"("liveness": "\w+",\s*"name": )"[^"]*""#, r#"$1"[NAME]""#),
        (r"--owner-pid \d+", "--owner-pid [PID]"),
        (r#"("--owner-pid",\s*)"\d+""#, r#"$1"[PID]""#),
        (r#""pid": \d+"#, r#""pid": "[PID]""#),
        (r#""hostname": "[^"]*""#, r#""hostname": "[HOST]""#),
        (
            r"linux-proc-start-ticks:\d+",
            "linux-proc-start-ticks:[TICKS]",
        ),
        (r#""(\w+_ms)": \d+"#, r#""$1": "[MS]""#),
        (r"\.retained-\d{8}-\d{6}", ".retained-[TIME]"),
        (r#""(bytes|bytes_freed)": \d+"#, r#""$1": "[BYTES]""#),
        // Whether the file system clones files depends on the machine's: so does the fill.
        (r#""fill": "(clone|checkout)""#, r#""fill": "[FILL]""#),
        (
            r#""(apparent_bytes|allocated_bytes|own_bytes)": \d+"#,
            r#""$1": "[BYTES]""#,
        ),
        // Patches name object ids, so their size and bytes depend on the object format (the
        // suite runs with SHA-1 and SHA-256); `verify` checks size against content.
        (r#""patch_bytes": \d+"#, r#""patch_bytes": "[PATCH_BYTES]""#),
        (
            r#""patch_base64": "[A-Za-z0-9+/=]+""#,
            r#""patch_base64": "[PATCH]""#,
        ),
        (r"\b\d+ bytes\b", "[N] bytes"),
        (r"the decoded patch has \d+", "the decoded patch has [N]"),
        (r"(?m)^bytes +\d+$", "bytes    [N]"),
        // Abbreviated revisions in human output.
        (r"\b[0-9a-f]{12}\b", "[REV]"),
        // What this kernel offers.
        (r#""landlock_abi": \d+"#, r#""landlock_abi": "[ABI]""#),
        // The names in the environment of the machine running the tests.
        (
            r#""(env_passed|env_dropped)": \[[^\]]*\]"#,
            r#""$1": "[NAMES]""#,
        ),
    ];
    for (pattern, replacement) in filters {
        settings.add_filter(pattern, *replacement);
    }
    settings
}

/// The rule, field and message of a refused change-set document: `verify --json`'s result
/// (`valid: false` with `rule` and `field`), or another command's `change_set_invalid` error
/// (`change set invalid (<rule>) at <field>: …`).
pub fn broken_rule(doc: &Value) -> (String, String, String) {
    if doc["schema"] == "a3s-iso.verify.v1" {
        assert_eq!(doc["valid"], false, "{doc}");
        let text = |key: &str| doc[key].as_str().unwrap_or_else(|| panic!("{key}: {doc}"));
        return (
            text("rule").into(),
            text("field").into(),
            text("message").into(),
        );
    }
    assert_eq!(error_code(doc), "change_set_invalid", "{doc}");
    let message = doc["error"]["message"].as_str().unwrap().to_string();
    let rest = message
        .strip_prefix("change set invalid (")
        .expect("a rule");
    let (rule, rest) = rest.split_once(") at ").expect("a field");
    let (field, _) = rest.split_once(": ").expect("a detail");
    (rule.into(), field.into(), message.clone())
}

/// The host pids of processes whose command line holds `marker` (zombies have none).
pub fn processes_with(marker: &str) -> Vec<i32> {
    let own = std::process::id() as i32;
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != own)
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).contains(marker)
        })
        .collect()
}

/// Kills what a failed test left behind (stopped processes would stay forever).
pub fn kill_leftovers(marker: &str) {
    for pid in processes_with(marker) {
        if let Some(pid) = rustix::process::Pid::from_raw(pid) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}

/// Runs a3s-iso with `args` from a shell script that exits as soon as it returns, and so
/// owns what it binds (a shell reading its script, not a `sh -c` command string, which a3s-iso
/// skips for its parent): the owner is dead when this returns.
pub fn from_dying_script(fx: &Fixture, dir: &Path, args: &[&str]) -> (i32, Value) {
    use std::io::Write;
    let mut cmd = Command::new("sh");
    cmd.current_dir(dir)
        .args(["-s", "--", BIN])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    isolate(&mut cmd, &fx.home);
    let mut child = cmd.spawn().unwrap();
    // `; exit` keeps the shell from replacing itself with a3s-iso: the shell is the parent.
    let script = b"bin=$1; shift; \"$bin\" \"$@\"; exit $?\n";
    child.stdin.take().unwrap().write_all(script).unwrap();
    json_of(child.wait_with_output().unwrap())
}

// Helpers the test modules share: each is defined here once.

/// Adding a local submodule needs the file transport allowed (the fixture isolates git's
/// config); `bind --submodules` does not, it clones from the source's own copy.
pub const ALLOW_FILE: [(&str, &str); 3] = [
    ("GIT_CONFIG_COUNT", "1"),
    ("GIT_CONFIG_KEY_0", "protocol.file.allow"),
    ("GIT_CONFIG_VALUE_0", "always"),
];

/// Where [`Fixture::add_submodule`] puts the submodule in the superproject.
pub const SUB: &str = "vendor/lib";

/// A source with a submodule at `vendor/lib` (from a local repository `work/lib`, one commit
/// holding `lib.txt`), and a session `id` bound with `--submodules`.
pub fn with_submodule(id: &str) -> Fixture {
    let fx = Fixture::new();
    fx.add_submodule();
    let (code, doc) = json_of(
        fx.cmd()
            .args(["--json", "bind", "-s", id, "--submodules"])
            .output()
            .unwrap(),
    );
    assert_eq!(code, 0, "{doc}");
    fx
}

/// Runs `a3s-iso ARGS` with the fault point `fault` armed and checks that it killed the process.
#[cfg(feature = "fault-injection")]
pub fn killed_at(fx: &Fixture, fault: &str, args: &[&str]) {
    let out = fx
        .cmd()
        .env("A3S_ISO_TEST_FAULT", fault)
        .args(args)
        .output()
        .unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(9),
        "the fault point {fault} must kill it: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Runs `promote` with the fault point `fault` armed and checks that it killed the process.
#[cfg(feature = "fault-injection")]
pub fn promote_killed_at(fx: &Fixture, fault: &str, args: &[&str]) {
    let mut all = vec!["--json", "promote"];
    all.extend_from_slice(args);
    killed_at(fx, fault, &all);
}

/// Runs `list`, which must succeed and say that it finished one interrupted operation first,
/// naming it: `finished` is that line of its stderr, without `warning: `. (Only the crash
/// tests, which need the fault points, use it.)
#[cfg_attr(not(feature = "fault-injection"), allow(dead_code))]
pub fn list_finishing_one(fx: &Fixture, finished: &str) {
    let out = fx.cmd().args(["list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr, format!("warning: {finished}\n"));
}

/// A running process's start identity as a3s-iso records it (`linux-proc-start-ticks:N`).
pub fn start_identity(pid: u32) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let ticks = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .to_string();
    format!("linux-proc-start-ticks:{ticks}")
}

/// `promote --json` with `args`.
pub fn promote(fx: &Fixture, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["promote"];
    all.extend_from_slice(args);
    fx.json(&all)
}

/// The exit code and `outcome` of a command's result.
pub fn outcome(result: &(i32, Value)) -> (i32, &str) {
    (result.0, result.1["outcome"].as_str().unwrap_or("?"))
}

/// `args` with `--json`, which must exit 0; its document.
pub fn ok(fx: &Fixture, args: &[&str]) -> Value {
    let (code, doc) = fx.json(args);
    assert_eq!(code, 0, "{args:?}: {doc}");
    doc
}

/// The source's state dir.
pub fn state_dir(fx: &Fixture) -> PathBuf {
    fx.src.join(".git/a3s-iso")
}

/// The admin dir of a session's isolation, from its record.
pub fn admin_dir(fx: &Fixture, id: &str) -> PathBuf {
    let record = fx.src.join(format!(".git/a3s-iso/sessions/{id}.json"));
    let record: Value = serde_json::from_slice(&std::fs::read(record).unwrap()).unwrap();
    PathBuf::from(record["admin_dir"].as_str().unwrap())
}

/// The worktree a `bind` document names.
pub fn worktree_of(doc: &Value) -> PathBuf {
    PathBuf::from(doc["worktree"].as_str().expect("a worktree"))
}

/// The promote journal entry of a digest.
pub fn journal(fx: &Fixture, digest: &str) -> Value {
    let hex = digest.trim_start_matches("sha256:");
    let path = fx.src.join(format!(".git/a3s-iso/promoted/{hex}.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The subjects of the source's commits after `base`, oldest first.
pub fn subjects_since(fx: &Fixture, base: &str) -> Vec<String> {
    fx.git(
        &fx.src,
        &["log", "--reverse", "--format=%s", &format!("{base}..HEAD")],
    )
    .lines()
    .map(String::from)
    .collect()
}

/// `git add -A` and a commit in `dir`, as the agent would run them there.
pub fn agent_commit(fx: &Fixture, dir: &Path, message: &str) {
    for args in [vec!["add", "-A"], vec!["commit", "-q", "-m", message]] {
        let mut cmd = Command::new("git");
        cmd.current_dir(dir).args(&args);
        isolate(&mut cmd, &fx.home);
        assert!(cmd.status().unwrap().success());
    }
}

/// The text of `rel` under `dir`.
pub fn read_text(dir: &Path, rel: &str) -> String {
    std::fs::read_to_string(dir.join(rel)).unwrap()
}

/// A process that lives long enough to own sessions; the test ends it.
pub fn sleeper() -> std::process::Child {
    Command::new("sleep")
        .arg("300")
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// Milliseconds since the epoch.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The hex sha256 of `text`.
pub fn sha(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The source as a user would compare it: its checkout and git dir file by file (without the
/// index file, whose bytes carry stat data), its index entries, HEAD and stash list.
pub fn source_state(fx: &Fixture) -> BTreeMap<String, String> {
    let mut state = checkout_listing(&fx.src);
    state.remove(".git/index");
    state.insert(
        "<index entries>".into(),
        sha(&fx.git(&fx.src, &["ls-files", "-s"])),
    );
    state.insert("<HEAD>".into(), fx.git(&fx.src, &["rev-parse", "HEAD"]));
    state.insert(
        "<stash list>".into(),
        fx.git(&fx.src, &["stash", "list", "--format=%H %gs"]),
    );
    state
}

/// The first keys on which two states differ, with both values, for a failure message.
pub fn differences(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<String> {
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .take(8)
        .map(|k| format!("{k}: {:?} vs {:?}", a.get(k), b.get(k)))
        .collect()
}

/// The `outcome` of a document.
pub fn outcome_of(doc: &Value) -> &str {
    doc["outcome"].as_str().unwrap_or("?")
}

/// The text of the file at `path`; panics naming the path.
pub fn read_path(path: impl AsRef<Path>) -> String {
    std::fs::read_to_string(path.as_ref())
        .unwrap_or_else(|e| panic!("{}: {e}", path.as_ref().display()))
}

/// An a3s-iso `--json` command started in the source, running on while the test goes on.
pub fn spawn_json(fx: &Fixture, args: &[&str]) -> std::process::Child {
    fx.cmd()
        .arg("--json")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The exit code and document of a command [`spawn_json`] started.
pub fn wait_json(child: std::process::Child) -> (i32, Value) {
    json_of(child.wait_with_output().unwrap())
}

/// Session `s` changes `README.md` and adds `new.txt`; promoted (patch mode); its digest.
pub fn promoted(fx: &Fixture) -> String {
    fx.bind("s");
    std::fs::write(fx.isolation("s").join("README.md"), "hello, again\n").unwrap();
    std::fs::write(fx.isolation("s").join("new.txt"), "new\n").unwrap();
    let (code, doc) = fx.json(&["promote", "-s", "s"]);
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("applied")),
        "{doc}"
    );
    doc["digest"].as_str().unwrap().to_string()
}

/// Pairs of strings, owned.
pub fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The source's HEAD commit.
pub fn head(fx: &Fixture) -> String {
    fx.git(&fx.src, &["rev-parse", "HEAD"])
}

/// The stdout of a command that must have succeeded (its stderr in the failure message).
pub fn stdout_of(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Waits until `path` exists; panics after `within`.
pub fn wait_for(path: &Path, within: std::time::Duration) {
    let started = std::time::Instant::now();
    while !path.exists() {
        assert!(
            started.elapsed() < within,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Runs git in a session's isolation; panics on failure; returns trimmed stdout.
pub fn iso_git(fx: &Fixture, id: &str, args: &[&str]) -> String {
    let mut cmd = Command::new("git");
    cmd.current_dir(fx.isolation(id)).args(args);
    isolate(&mut cmd, &fx.home);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "git {args:?} in {id}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

/// The patch a change-set document carries, decoded.
pub fn patch_of(doc: &Value) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(doc["patch_base64"].as_str().unwrap())
        .unwrap()
}

/// A session with one file of work captured.
pub fn worked(fx: &Fixture, id: &str, file: &str) -> Value {
    ok(fx, &["bind", "-s", id, "--owner", "none"]);
    std::fs::write(fx.isolation(id).join(file), format!("{id}\n")).unwrap();
    ok(fx, &["capture", "-s", id])
}

/// Runs a3s-iso in the source; returns the status, stdout and stderr.
pub fn human(fx: &Fixture, args: &[&str]) -> (i32, String, String) {
    let out = fx.cmd().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// `n` new files `f01.txt`… in the session's isolation, each `size` bytes.
pub fn write_files(fx: &Fixture, id: &str, n: usize, size: usize) {
    for i in 1..=n {
        let line = "x".repeat(size.saturating_sub(1));
        std::fs::write(
            fx.isolation(id).join(format!("f{i:02}.txt")),
            format!("{line}\n"),
        )
        .unwrap();
    }
}

/// The fixture's pinned commit date as a3s-iso prints times (`format_utc`): kept as it is in
/// transcripts, since it is the same on every machine.
const PINNED_TIME: &str = "2026-01-02 03:04:05Z";

/// What a person sees, as one text: each command a3s-iso ran in the fixture (human output:
/// no `--json`, colour off, 80 columns), its stdout, its stderr (`[stderr] ` lines) and its
/// exit code; then [`Transcript::text`] replaces what differs from machine to machine or
/// from run to run, and nothing else, so that any change of wording shows.
pub struct Transcript<'a> {
    fx: &'a Fixture,
    raw: String,
    /// Variables every command of the transcript gets.
    envs: Vec<(String, PathBuf)>,
}

impl Fixture {
    /// A git wrapper at `<root>/<name>`: the shell script `body`, then the real git (found on
    /// PATH) with the same arguments; `{real}` in `body` names the real git.
    pub fn git_wrapper(&self, name: &str, body: &str) -> PathBuf {
        let real = String::from_utf8(
            std::process::Command::new("sh")
                .args(["-c", "command -v git"])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        let real = real.trim();
        let wrapper = self.root.join(name);
        let script = format!(
            "#!/bin/sh\n{}\nexec {real} \"$@\"\n",
            body.replace("{real}", real)
        );
        std::fs::write(&wrapper, script).unwrap();
        std::fs::set_permissions(
            &wrapper,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        wrapper
    }

    /// A transcript of one command run in the source (see [`Transcript`]).
    pub fn transcript(&self, args: &[&str]) -> String {
        let mut t = Transcript::new(self);
        t.run(args);
        t.text()
    }
}

impl<'a> Transcript<'a> {
    pub fn new(fx: &'a Fixture) -> Transcript<'a> {
        Transcript {
            fx,
            raw: String::new(),
            envs: Vec::new(),
        }
    }

    /// Gives every command from now on `key` set to `value`.
    pub fn env(&mut self, key: &str, value: &Path) {
        self.envs.push((key.to_string(), value.to_path_buf()));
    }

    /// Runs a3s-iso with `args` in the source; returns its exit code.
    pub fn run(&mut self, args: &[&str]) -> i32 {
        let src = self.fx.src.clone();
        self.run_in(&src, args)
    }

    /// Runs a3s-iso with `args` in `dir`; returns its exit code.
    pub fn run_in(&mut self, dir: &Path, args: &[&str]) -> i32 {
        let out = self
            .fx
            .cmd_in(dir)
            .env("COLUMNS", "80")
            .envs(self.envs.iter().map(|(key, value)| (key, value)))
            .args(["--color", "never"])
            .args(args)
            .output()
            .unwrap();
        let code = out.status.code().unwrap_or(-1);
        let words: Vec<String> = args.iter().map(|a| shell_word(a)).collect();
        self.raw
            .push_str(&format!("$ a3s-iso {}\n", words.join(" ")));
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            self.raw.push_str(&format!("{line}\n"));
        }
        for line in String::from_utf8_lossy(&out.stderr).lines() {
            self.raw.push_str(&format!("[stderr] {line}\n"));
        }
        self.raw.push_str(&format!("[exit {code}]\n"));
        code
    }

    /// The transcript so far, normalised.
    pub fn text(&self) -> String {
        normalised(self.fx, &self.raw)
    }
}

/// `raw` output of a3s-iso in `fx` with what differs by machine, run or object format
/// replaced (see [`Transcript`]).
pub fn normalised(fx: &Fixture, raw: &str) -> String {
    let text = machine_parts(fx, raw);
    let text = ids_by_appearance(&text);
    numbered_objects(fx, &text)
}

/// `arg` as a shell would need it: bare when it is plain, else single-quoted.
fn shell_word(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+%^".contains(c));
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// Replaces the tempdir, the host, pids, times and durations, by placeholders.
fn machine_parts(fx: &Fixture, raw: &str) -> String {
    let root = regex::escape(fx.root.to_str().unwrap());
    let tmp = regex::escape(std::env::temp_dir().to_str().unwrap().trim_end_matches('/'));
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let mut text = raw.to_string();
    let mut rules: Vec<(String, &str)> = vec![
        (root, "[ROOT]"),
        (format!("{tmp}/"), "[TMP]/"),
        // Scratch names carry their maker: -<pid>-<start ticks>-<host key>-<n>-<nanos>.
        (r"-\d+-\d+-[0-9a-f]{8}-\d+-[0-9a-f]{8}\b".into(), "-[MAKER]"),
        (r"\bpid \d+".into(), "pid [PID]"),
        (r"\.retained-\d{8}-\d{6}\b".into(), ".retained-[TIME]"),
        // Measured durations, as land prints them (`, 0.3s`); not `0s` given as an argument.
        (r"\b\d+\.\ds\b".into(), "[DUR]"),
        // Sizes (`human_bytes`): patches hold full object ids, so they are longer under
        // SHA-256, and what gc counts depends on them too. Nothing is shown as nothing.
        (r"\b[1-9]\d* bytes?\b".into(), "[SIZE]"),
        (r"\b\d+\.\d [KMGTP]iB\b".into(), "[SIZE]"),
        (r#""patch_bytes": \d+"#.into(), r#""patch_bytes": [SIZE]"#),
        (r#""patch_base64": "[A-Za-z0-9+/=]+""#.into(), r#""patch_base64": "[PATCH]""#),
        (r#""(\w+_at_ms)": \d+"#.into(), r#""$1": [MS]"#),
        // A source's registry entry is named by a hash of its path.
        (r"/sources/[0-9a-f]{16}\.json\b".into(), "/sources/[SOURCE].json"),
        // Whether the file system clones files depends on the machine's: so does the fill.
        (r#""fill": "(clone|checkout)""#.into(), r#""fill": "[FILL]""#),
        (
            r"(?m)^reflink( +)(available \(spares are clones of a pristine tree; kept and copied caches are cloned\)|not available \(caches are copied\))$".into(),
            "reflink${1}[REFLINK]",
        ),
    ];
    // The owner's command name: the test binary's, whose name carries a build hash.
    let comm = std::fs::read_to_string("/proc/self/comm").unwrap_or_default();
    if !comm.trim().is_empty() {
        rules.push((
            format!(r"\(({})\)", regex::escape(comm.trim())),
            "([TEST-BINARY])",
        ));
    }
    if !host.trim().is_empty() {
        rules.push((
            format!(r"\bon {}\b", regex::escape(host.trim())),
            "on [HOST]",
        ));
    }
    for (pattern, replacement) in &rules {
        text = regex::Regex::new(pattern)
            .unwrap()
            .replace_all(&text, *replacement)
            .into_owned();
    }
    // A document's claimed size against its patch's: both sizes, and whether they differ by one.
    let claim = regex::Regex::new(r"says (\d+), the decoded patch has (\d+)").unwrap();
    let text = claim.replace_all(&text, |c: &regex::Captures| {
        let (said, has): (u64, u64) = (c[1].parse().unwrap(), c[2].parse().unwrap());
        let said = match said.checked_sub(has) {
            Some(0) => "[SIZE]".to_string(),
            Some(more) => format!("[SIZE]+{more}"),
            None => format!("[SIZE]-{}", has - said),
        };
        format!("says {said}, the decoded patch has [SIZE]")
    });
    // Times a3s-iso took from the clock; the fixture's pinned commit date stays as it is.
    let time = regex::Regex::new(r"\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}Z").unwrap();
    replace_in_columns(&time, &text, |c| match &c[0] {
        PINNED_TIME => PINNED_TIME.to_string(),
        _ => "[TIME]".to_string(),
    })
}

/// Replaces each match of `pattern` by `with(match)`; when a column gap (two spaces or more)
/// follows the match, widens or narrows it by the difference in length, so that tables stay
/// aligned as a3s-iso aligned them (a gap keeps at least two spaces).
fn replace_in_columns(
    pattern: &regex::Regex,
    text: &str,
    mut with: impl FnMut(&regex::Captures) -> String,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for c in pattern.captures_iter(text) {
        let whole = c.get(0).unwrap();
        let replacement = with(&c);
        out.push_str(&text[last..whole.start()]);
        out.push_str(&replacement);
        let after = &text[whole.end()..];
        let gap = after.len() - after.trim_start_matches(' ').len();
        last = whole.end();
        if gap >= 2 {
            let width =
                (gap + whole.as_str().chars().count()).saturating_sub(replacement.chars().count());
            out.push_str(&" ".repeat(width.max(2)));
            last += gap;
        }
    }
    out.push_str(&text[last..]);
    out
}

/// Generated session and run ids (`<letter>-<ms, 11 hex>-<random, 8 hex>`) as `[RUN-n]`,
/// `[SESSION-n]` (or `[ID-n]`), numbered by first appearance.
fn ids_by_appearance(text: &str) -> String {
    let id = regex::Regex::new(r"\b([a-z])-[0-9a-f]{11}-[0-9a-f]{8}\b").unwrap();
    let mut names = ObjectNames::default();
    id.replace_all(text, |c: &regex::Captures| {
        let kind = match &c[1] {
            "r" => "RUN",
            "s" => "SESSION",
            _ => "ID",
        };
        format!("[{}]", names.name(kind, &c[0]))
    })
    .into_owned()
}

/// Object ids (40 hex digits for SHA-1, 64 for SHA-256) and sha256 digests as
/// `[COMMIT-n]`, `[TREE-n]`, `[BLOB-n]`, `[DIGEST-n]` (`[HEX-n]` for what is neither in the
/// source's object store), numbered by first appearance within each kind: the same text for
/// either object format, and still saying which value each place holds. Abbreviations
/// (7 to 12 digits) of a full id in the text, or of an object in the store, become the same
/// name in lower case (`[commit-n]`); those of a digest never shown in full, `[digest]`. The
/// all-zero id (no object) is `[ZERO]`.
fn numbered_objects(fx: &Fixture, text: &str) -> String {
    let full = regex::Regex::new(r"\b(sha256:)?([0-9a-f]{64}|[0-9a-f]{40})\b").unwrap();
    let digests: Vec<String> = full
        .captures_iter(text)
        .filter(|c| c.get(1).is_some())
        .map(|c| c[2].to_string())
        .collect();
    let mut names = ObjectNames::default();
    // Full ids are 40 or 64 digits long: no column is widened for them, or the text would
    // depend on the object format.
    let text = full.replace_all(text, |c: &regex::Captures| {
        if c[2].bytes().all(|b| b == b'0') {
            return "[ZERO]".to_string();
        }
        let kind = if digests.iter().any(|d| d == &c[2]) {
            "DIGEST"
        } else {
            object_kind(fx, &c[2])
        };
        let prefix = c.get(1).map_or("", |m| m.as_str());
        format!("{prefix}[{}]", names.name(kind, &c[2]))
    });
    let short = regex::Regex::new(r"\b(sha256:)?([0-9a-f]{7,12})\b").unwrap();
    replace_in_columns(&short, &text, |c| {
        let prefix = c.get(1).map_or("", |m| m.as_str());
        match names.expand(fx, &c[2], prefix.is_empty()) {
            Some(name) => format!("{prefix}[{}]", name.to_lowercase()),
            // A digest's abbreviation whose full form this transcript never showed.
            None if !prefix.is_empty() => format!("{prefix}[digest]"),
            None => c[0].to_string(),
        }
    })
}

/// Names by kind and order of first appearance (`COMMIT-1`, `RUN-2`).
#[derive(Default)]
struct ObjectNames {
    /// (kind, full text), in order of first appearance.
    seen: Vec<(String, String)>,
}

impl ObjectNames {
    /// `KIND-n`: `full`'s place among the ids of its kind.
    fn name(&mut self, kind: &str, full: &str) -> String {
        if !self.seen.iter().any(|(_, f)| f == full) {
            self.seen.push((kind.to_string(), full.to_string()));
        }
        let n = self
            .seen
            .iter()
            .filter(|(k, _)| k == kind)
            .position(|(_, f)| f == full)
            .unwrap();
        format!("{kind}-{}", n + 1)
    }

    /// The name of the one full id `short` abbreviates: one seen already, else (for an
    /// object id, `in_store`) one the source's object store resolves it to.
    fn expand(&mut self, fx: &Fixture, short: &str, in_store: bool) -> Option<String> {
        let matching: Vec<(String, String)> = self
            .seen
            .iter()
            .filter(|(_, f)| f.starts_with(short))
            .cloned()
            .collect();
        if let [(kind, full)] = matching.as_slice() {
            return Some(self.name(kind, full));
        }
        if !in_store || !matching.is_empty() {
            return None;
        }
        let object = format!("{short}^{{object}}");
        let full = git_quiet(fx, &["rev-parse", "--verify", "-q", &object])
            // A ref of that name is not an abbreviation.
            .filter(|full| full.starts_with(short))?;
        let kind = object_kind(fx, &full);
        Some(self.name(kind, &full))
    }
}

/// `COMMIT`, `TREE` or `BLOB` for an object of the source's store; `HEX` otherwise.
fn object_kind(fx: &Fixture, hex: &str) -> &'static str {
    match git_quiet(fx, &["cat-file", "-t", hex]).as_deref() {
        Some("commit") => "COMMIT",
        Some("tree") => "TREE",
        Some("blob") => "BLOB",
        _ => "HEX",
    }
}

/// Runs git in the source; its trimmed stdout when it succeeded.
fn git_quiet(fx: &Fixture, args: &[&str]) -> Option<String> {
    let mut cmd = Command::new("git");
    cmd.current_dir(&fx.src).args(args);
    isolate(&mut cmd, &fx.home);
    let out = cmd.stderr(Stdio::null()).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Whether the process `pid` is stopped (a `pause` fault point sent it SIGSTOP).
fn stopped(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
    state == Some(Some('T'))
}

/// Waits (a minute at most) until the process `pid` (`what`) stops at its `pause` fault point.
pub fn wait_stopped(pid: u32, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !stopped(pid) {
        assert!(std::time::Instant::now() < deadline, "{what} never paused");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
