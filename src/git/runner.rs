//! The runner: how one git process is started (fixed environment, stdin closed or fed,
//! output captured) and how its failure becomes a typed error.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::base::error::{Error, GitFailure, Result, Unavailable};

/// The environment every git process gets: C messages, no pager, no prompt, no editor, and
/// reads that never rewrite an index behind its owner's back.
const FIXED_ENV: &[(&str, &str)] = &[
    ("LC_MESSAGES", "C"),
    ("GIT_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_EDITOR", "true"),
    ("GIT_OPTIONAL_LOCKS", "0"),
];

/// Removed from every git's environment: locale variables (so that `LC_MESSAGES=C` is what git
/// obeys), the variables that would reshape diff output behind the pinned options
/// (`GIT_DIFF_OPTS` overrides `-U`; `GIT_EXTERNAL_DIFF` names a program to run), and the ones
/// that change what a pathspec means (a3s-iso spells its pathspecs' magic itself).
const REMOVED_ENV: &[&str] = &[
    "LC_ALL",
    "LANGUAGE",
    "GIT_DIFF_OPTS",
    "GIT_EXTERNAL_DIFF",
    "GIT_LITERAL_PATHSPECS",
    "GIT_GLOB_PATHSPECS",
    "GIT_NOGLOB_PATHSPECS",
    "GIT_ICASE_PATHSPECS",
];

/// Applies the fixed environment to a process started without duct (for streaming protocols).
pub(crate) fn hermetic_env(cmd: &mut std::process::Command) {
    for var in REMOVED_ENV.iter().chain(REPO_SELECTING_VARS) {
        cmd.env_remove(var);
    }
    for (key, value) in FIXED_ENV {
        cmd.env(key, value);
    }
}

/// The subcommands that read a gitlink's `ignore` setting from `.gitmodules` unless told how
/// to treat submodules ([`GitCmd::args_with_submodules_pinned`]).
const DIFF_SUBCOMMANDS: &[&str] = &["diff", "diff-index", "diff-files", "diff-tree", "status"];

/// The oldest git whose features a3s-iso relies on (`rev-parse --path-format`, `worktree repair`).
pub(crate) const MIN_VERSION: (u32, u32) = (2, 31);

/// Variables that would make git operate on another repository, index or object store than the
/// one a3s-iso names explicitly. They are never passed on to git or to a run's command.
pub(crate) const REPO_SELECTING_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_INTERNAL_SUPER_PREFIX",
    "GIT_QUARANTINE_PATH",
    "GIT_REPLACE_REF_BASE",
    "GIT_SHALLOW_FILE",
    "GIT_GRAFT_FILE",
    "GIT_IMPLICIT_WORK_TREE",
];

/// The git binary a3s-iso runs, found and version-checked once.
#[derive(Debug, Clone)]
pub struct Git {
    bin: PathBuf,
    version: String,
    /// Checkouts with no `.git` of their own, whose git dir names them in `core.worktree`
    /// (git finds such a repository only from its git dir): a git started in one is told
    /// where its git dir is. Shared by every clone.
    checkouts: Arc<Mutex<Vec<(PathBuf, PathBuf)>>>,
    /// Values that cannot change while one command runs, by directory and question (a full
    /// object id's commit, a checkout's core settings), so that a command asks git once.
    /// Shared by every clone; [`Git::for_one_command`] starts a new one.
    memo: Arc<Memo>,
}

/// [`Git`]'s memo: the answers kept, and the questions being asked (a thread asking one that
/// another is asking waits for its answer, so that git is asked once).
#[derive(Debug, Default)]
struct Memo {
    known: Mutex<HashMap<(PathBuf, String), String>>,
    asking: Mutex<std::collections::HashSet<(PathBuf, String)>>,
    answered: std::sync::Condvar,
}

/// What a git process produced, whatever its exit status.
#[derive(Debug)]
pub(crate) struct GitOutput {
    /// `None` when a signal ended it.
    pub exit_code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl GitOutput {
    /// Whether git refused because another git held the index's lock (it says so, or only
    /// that it could not write the index): refused before it changed anything.
    pub(crate) fn index_lock_held(&self) -> bool {
        self.exit_code != Some(0)
            && ["index.lock': File exists", "could not write index"]
                .iter()
                .any(|said| self.stderr.contains(said))
    }
}

impl Git {
    /// Finds git (`explicit`, else `git` on PATH) and checks its version: asked once per git
    /// binary, then recalled from the user's cache dir.
    pub fn locate(explicit: Option<&Path>) -> Result<Git> {
        let bin = match explicit {
            Some(path) => which::which(path).map_err(|e| Error::Usage {
                message: format!("cannot use git at {}: {e}", path.display()),
            })?,
            None => which::which("git").map_err(|e| Unavailable::NoGit {
                error: e.to_string(),
            })?,
        };
        let mut git = Git {
            bin,
            version: String::new(),
            checkouts: Arc::default(),
            memo: Arc::default(),
        };
        let version = match crate::git::version_cache::recalled(&git.bin) {
            Some(known) => known,
            None => {
                let out = git.at(Path::new(".")).arg("--version").run_text()?;
                let version = out
                    .strip_prefix("git version ")
                    .unwrap_or(&out)
                    .trim()
                    .to_string();
                crate::git::version_cache::keep(&git.bin, &version);
                version
            }
        };
        if parse_version(&version).is_none_or(|found| found < MIN_VERSION) {
            return Err(Error::GitTooOld {
                found: version,
                required: Git::minimum_version(),
            });
        }
        git.version = version;
        Ok(git)
    }

    /// The same git with an empty memo: what a long-lived host (the MCP server) uses for each
    /// command, so that nothing one command learnt outlives it.
    pub fn for_one_command(&self) -> Git {
        Git {
            memo: Arc::default(),
            ..self.clone()
        }
    }

    /// The memoised answer to `question` about `dir`, computed (and kept) the first time.
    pub(crate) fn memoized(
        &self,
        dir: &Path,
        question: &str,
        compute: impl FnOnce() -> Result<String>,
    ) -> Result<String> {
        let key = (dir.to_path_buf(), question.to_string());
        loop {
            if let Some(known) = self.recall(dir, question) {
                return Ok(known);
            }
            let mut asking = self.memo.asking.lock().unwrap_or_else(|e| e.into_inner());
            if !asking.contains(&key) {
                asking.insert(key.clone());
                break;
            }
            // Another thread asks it now: its answer (or its failure) wakes this one.
            let _woken = self.memo.answered.wait(asking);
        }
        let answer = compute();
        if let Ok(answer) = &answer {
            self.remember(dir, question, answer);
        }
        let mut asking = self.memo.asking.lock().unwrap_or_else(|e| e.into_inner());
        asking.remove(&key);
        self.memo.answered.notify_all();
        answer
    }

    /// The output of a diff (`kind`) between `a` and `b`, asked once a command when both are
    /// object ids: they name the same objects all command long (a queue asks per session).
    pub(crate) fn object_diff(
        &self,
        dir: &Path,
        kind: &str,
        (a, b): (&str, &str),
        ask: impl FnOnce() -> Result<Vec<u8>>,
    ) -> Result<Vec<u8>> {
        use crate::base::ids::is_object_hex;
        if !(is_object_hex(a) && is_object_hex(b)) {
            return ask();
        }
        let question = format!("{kind} {a} {b}");
        let known = self.memoized(dir, &question, || ask().map(hex::encode))?;
        hex::decode(known).map_err(|_| Error::internal("a kept diff is not hex"))
    }

    /// What this command already learnt of `question` about `dir`.
    pub(crate) fn recall(&self, dir: &Path, question: &str) -> Option<String> {
        let memo = self.memo.known.lock().ok()?;
        memo.get(&(dir.to_path_buf(), question.to_string()))
            .cloned()
    }

    /// Keeps an answer that cannot change while this command runs.
    pub(crate) fn remember(&self, dir: &Path, question: &str, answer: &str) {
        if let Ok(mut memo) = self.memo.known.lock() {
            memo.insert(
                (dir.to_path_buf(), question.to_string()),
                answer.to_string(),
            );
        }
    }

    /// Where the git binary is.
    pub fn path(&self) -> &Path {
        &self.bin
    }

    /// The oldest git a3s-iso accepts (`2.31`).
    pub fn minimum_version() -> String {
        format!("{}.{}", MIN_VERSION.0, MIN_VERSION.1)
    }

    /// The version git reported (`2.47.3`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Remembers that the checkout `tree`, which has no `.git`, belongs to the git dir
    /// `git_dir` (whose `core.worktree` names it): from now on a git started in `tree` is
    /// told both (`GIT_DIR`, `GIT_WORK_TREE`), as the user tells their own git.
    pub(crate) fn name_git_dir(&self, tree: &Path, git_dir: &Path) {
        let mut checkouts = self.checkouts.lock().unwrap_or_else(|e| e.into_inner());
        if !checkouts.iter().any(|(known, _)| known == tree) {
            checkouts.push((tree.to_path_buf(), git_dir.to_path_buf()));
        }
    }

    /// The git dir named for the checkout `dir` ([`Git::name_git_dir`]).
    pub(crate) fn named_git_dir(&self, dir: &Path) -> Option<PathBuf> {
        let checkouts = self.checkouts.lock().unwrap_or_else(|e| e.into_inner());
        checkouts
            .iter()
            .find(|(tree, _)| tree == dir)
            .map(|(_, git_dir)| git_dir.clone())
    }

    /// A git command run with `dir` as its working directory.
    pub(super) fn at(&self, dir: &Path) -> GitCmd<'_> {
        let cmd = self.plain_at(dir);
        match self.named_git_dir(dir) {
            Some(git_dir) => cmd.env("GIT_DIR", git_dir).env("GIT_WORK_TREE", dir),
            None => cmd,
        }
    }

    fn plain_at(&self, dir: &Path) -> GitCmd<'_> {
        GitCmd {
            git: self,
            dir: dir.to_path_buf(),
            args: vec![
                "--no-pager".into(),
                "-c".into(),
                "core.fsmonitor=false".into(),
            ],
            shown_args_from: 3,
            envs: Vec::new(),
            stdin: None,
            shielded: false,
            whole_index: false,
        }
    }
}

/// `major.minor` of a version string git reported.
pub(super) fn parse_version(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor_text: String = parts
        .next()?
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    Some((major, minor_text.parse().ok()?))
}

/// One git invocation being put together; run it with one of the `run*` methods or `output`.
pub(super) struct GitCmd<'g> {
    git: &'g Git,
    dir: PathBuf,
    args: Vec<OsString>,
    /// Arguments before this index are the fixed preamble, left out of error reports.
    shown_args_from: usize,
    envs: Vec<(OsString, OsString)>,
    stdin: Option<Vec<u8>>,
    /// In a process group of its own: a Ctrl-C at the terminal does not reach it.
    shielded: bool,
    /// The index is one a3s-iso names (`GIT_INDEX_FILE`): written whole.
    whole_index: bool,
}

impl<'g> GitCmd<'g> {
    /// Keeps the terminal's interrupts away from this git, for steps that must not stop halfway
    /// (the caller defers its own interrupts meanwhile, see `signals`).
    pub(crate) fn shielded(mut self) -> Self {
        self.shielded = true;
        self
    }

    pub(crate) fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub(crate) fn args(mut self, args: impl IntoIterator<Item = impl AsRef<OsStr>>) -> Self {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Runs git with an empty index, for a command that compares trees alone (`diff-tree`):
    /// git would otherwise read the whole index (of a large checkout, the longest part of the
    /// command) for nothing. The path cannot exist, so git finds no index there.
    pub(crate) fn without_index(self) -> Self {
        self.env("GIT_INDEX_FILE", "/proc/self/a3s-iso-no-index")
    }

    /// Sets a variable for this git only (`GIT_INDEX_FILE` for a temporary index). Setting a
    /// variable again replaces the earlier value.
    pub(crate) fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        let key = key.as_ref().to_owned();
        if key == "GIT_INDEX_FILE" {
            self.write_index_whole();
        }
        self.envs.retain(|(k, _)| *k != key);
        self.envs.push((key, value.as_ref().to_owned()));
        self
    }

    /// An index a3s-iso names (a temporary index, its own index of an isolation, a new
    /// isolation's before anything ran in it) is never split, whatever `core.splitIndex`
    /// says: a split index keeps most entries in a `sharedindex.*` file of the git dir, which
    /// a copy of the index does not carry, which goes with a private git dir, and which in
    /// the user's git dir would be a file a3s-iso left there.
    fn write_index_whole(&mut self) {
        if !self.whole_index {
            let at = self.shown_args_from;
            self.args
                .splice(at..at, ["-c".into(), "core.splitIndex=false".into()]);
            self.shown_args_from += 2;
            self.whole_index = true;
        }
    }

    /// Feeds `bytes` to git's stdin (closed otherwise).
    pub(crate) fn stdin(mut self, bytes: Vec<u8>) -> Self {
        self.stdin = Some(bytes);
        self
    }

    /// The process with its input as chosen (bytes, or nothing).
    pub(crate) fn expression(&self) -> duct::Expression {
        let expr = self.piped_expression();
        match &self.stdin {
            Some(bytes) => expr.stdin_bytes(bytes.clone()),
            None => expr.stdin_null(),
        }
    }

    /// The process reading whatever its input is connected to (the right side of a pipe).
    pub(crate) fn piped_expression(&self) -> duct::Expression {
        let mut expr = duct::cmd(&self.git.bin, self.args_with_submodules_pinned())
            .dir(&self.dir)
            .stderr_capture()
            .unchecked();
        for var in REMOVED_ENV {
            expr = expr.env_remove(var);
        }
        // A variable this command sets itself (`GIT_OPTIONAL_LOCKS` for an index of a3s-iso's
        // own that git may refresh) replaces the fixed value.
        for (key, value) in FIXED_ENV {
            if !self.envs.iter().any(|(set, _)| set == key) {
                expr = expr.env(key, value);
            }
        }
        // duct lets the innermost modifier win, so a variable this command sets explicitly
        // (GIT_INDEX_FILE for a temporary index) must not also be removed.
        for var in REPO_SELECTING_VARS {
            if !self.envs.iter().any(|(key, _)| key == var) {
                expr = expr.env_remove(var);
            }
        }
        for (key, value) in &self.envs {
            expr = expr.env(key, value);
        }
        if self.shielded {
            expr = expr.before_spawn(|cmd| {
                std::os::unix::process::CommandExt::process_group(cmd, 0);
                Ok(())
            });
        }
        expr
    }

    /// The arguments, with `--ignore-submodules=none` after a diff or status subcommand that
    /// does not choose: git then never reads `.gitmodules` for a gitlink's `ignore` setting,
    /// and that file is the command's to write. A value git refuses there (`update = !cmd`, a
    /// word for a boolean, a line that is no config) would otherwise fail the diff, and with
    /// it every capture, diff and promote of the session; `none` is git's default.
    fn args_with_submodules_pinned(&self) -> Vec<OsString> {
        let mut args = self.args.clone();
        let mut at = self.shown_args_from;
        while at < args.len() {
            let arg = args[at].as_encoded_bytes();
            if arg == b"-c" {
                at += 2;
            } else if arg.starts_with(b"-") {
                at += 1;
            } else {
                break;
            }
        }
        let diffs = args.get(at).is_some_and(|sub| {
            DIFF_SUBCOMMANDS
                .iter()
                .any(|d| sub.as_encoded_bytes() == d.as_bytes())
        });
        let chosen = args[at..]
            .iter()
            .take_while(|a| a.as_encoded_bytes() != b"--")
            .any(|a| a.as_encoded_bytes().starts_with(b"--ignore-submodules"));
        if diffs && !chosen {
            args.insert(at + 1, "--ignore-submodules=none".into());
        }
        args
    }

    pub(crate) fn shown_args(&self) -> Vec<String> {
        self.args[self.shown_args_from..]
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    fn spawn_error(&self, err: std::io::Error) -> Error {
        Error::io(
            format!(
                "cannot run {} {}",
                self.git.bin.display(),
                self.shown_args().join(" ")
            ),
            err,
        )
    }

    /// Runs and returns the output whatever the exit status.
    pub(crate) fn output(self) -> Result<GitOutput> {
        let out = self
            .expression()
            .stdout_capture()
            .run()
            .map_err(|e| self.spawn_error(e))?;
        Ok(GitOutput {
            exit_code: out.status.code(),
            stdout: out.stdout,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// Runs and fails with `git_failed` unless git exits 0; returns stdout.
    pub(crate) fn run(self) -> Result<Vec<u8>> {
        self.run_allowing(&[]).map(|out| out.stdout)
    }

    /// Like `run`, for what git does: its output is not wanted.
    pub(crate) fn finish(self) -> Result<()> {
        self.run().map(|_| ())
    }

    /// Runs and fails with `git_failed` unless git exits 0 or one of `also`.
    pub(crate) fn run_allowing(self, also: &[i32]) -> Result<GitOutput> {
        let args = self.shown_args();
        let out = self.output()?;
        match out.exit_code {
            Some(code) if code == 0 || also.contains(&code) => Ok(out),
            code => Err(failure_of(args, code, out.stderr)),
        }
    }

    /// Runs and returns stdout trimmed, `None` unless git exits 0 with something to say (for
    /// git's lookups that answer nothing, or fail, when there is nothing to find).
    pub(crate) fn found_text(self) -> Result<Option<String>> {
        let out = self.output()?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Ok((out.exit_code == Some(0) && !text.is_empty()).then_some(text))
    }

    /// Like `run`, as text without the trailing newline.
    pub(crate) fn run_text(self) -> Result<String> {
        let stdout = self.run()?;
        let mut text = String::from_utf8_lossy(&stdout).into_owned();
        while text.ends_with('\n') {
            text.pop();
        }
        Ok(text)
    }

    /// Runs with stdout streamed into `file` (for output that grows with the repository).
    pub(crate) fn run_to_file(self, file: File) -> Result<()> {
        let out = self
            .expression()
            .stdout_file(file)
            .run()
            .map_err(|e| self.spawn_error(e))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(failure_of(
                self.shown_args(),
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            ))
        }
    }

    /// For git's yes/no questions: exit 0 is yes, exit 1 is no, anything else a failure.
    pub(crate) fn succeeds(self) -> Result<bool> {
        Ok(self.run_allowing(&[1])?.exit_code == Some(0))
    }
}

/// The `git_failed` error for a git process that did not succeed.
pub(crate) fn failure_of(args: Vec<String>, exit_code: Option<i32>, stderr: String) -> Error {
    Error::GitFailed {
        failure: GitFailure {
            args,
            exit_code,
            stderr,
        },
    }
}

/// A `<field> <field> <field>\t<path>` record (`ls-tree`, `merge-tree`): the three fields,
/// ASCII, and the path, bytes.
pub(crate) fn fields_and_path(record: &[u8]) -> Option<([&str; 3], &[u8])> {
    let tab = record.iter().position(|b| *b == b'\t')?;
    let mut fields = std::str::from_utf8(&record[..tab]).ok()?.split(' ');
    let three = [fields.next()?, fields.next()?, fields.next()?];
    Some((three, &record[tab + 1..]))
}

/// Splits NUL-terminated git output (`-z`) into its records.
pub(crate) fn split_nul(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes.split(|b| *b == 0).filter(|record| !record.is_empty())
}

#[cfg(test)]
mod tests {
    use crate::git::runner::*;

    #[test]
    fn parses_versions() {
        assert_eq!(parse_version("2.47.3"), Some((2, 47)));
        assert_eq!(parse_version("2.31.0.windows.1"), Some((2, 31)));
        assert_eq!(parse_version("2.30rc1"), Some((2, 30)));
        assert_eq!(parse_version("junk"), None);
    }

    #[test]
    fn diffs_and_status_name_how_submodules_count_unless_they_chose() {
        let git = Git {
            bin: PathBuf::from("git"),
            version: String::new(),
            checkouts: Arc::default(),
            memo: Arc::default(),
        };
        let args = |cmd: GitCmd<'_>| -> Vec<String> {
            let all = cmd.args_with_submodules_pinned();
            all[3..]
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        let here = Path::new(".");
        let index = git.at(here).env("GIT_INDEX_FILE", "/i");
        assert_eq!(
            args(index.args(["--literal-pathspecs", "diff-index", "--cached", "HEAD"])),
            [
                "-c",
                "core.splitIndex=false",
                "--literal-pathspecs",
                "diff-index",
                "--ignore-submodules=none",
                "--cached",
                "HEAD"
            ]
        );
        assert_eq!(
            args(
                git.at(here)
                    .args(["status", "--ignore-submodules=all", "--", "x"])
            ),
            ["status", "--ignore-submodules=all", "--", "x"]
        );
        // A path named like the option is no choice.
        assert_eq!(
            args(
                git.at(here)
                    .args(["diff-tree", "a", "b", "--", "--ignore-submodules"])
            ),
            [
                "diff-tree",
                "--ignore-submodules=none",
                "a",
                "b",
                "--",
                "--ignore-submodules"
            ]
        );
        for other in [["ls-files", "-z"], ["cat-file", "diff"]] {
            assert_eq!(args(git.at(here).args(other)), other);
        }
    }
}
