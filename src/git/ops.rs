//! Typed git operations: the plumbing that domain code needs, so that it never assembles argv
//! itself. Each takes the directory git runs in (a repository or a checkout of it).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::base::error::{Error, IoContext, Result};
use crate::base::paths::RepoPath;
use crate::git::runner::{Git, failure_of, fields_and_path, hermetic_env, split_nul};

/// One change in an `update-ref --stdin` transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RefUpdate {
    /// Point `name` at `target` (created if missing).
    Set { name: String, target: String },
    /// Point `name` at `target` only if it does not exist yet.
    Create { name: String, target: String },
    /// Delete `name` (nothing happens when it does not exist).
    Delete { name: String },
}

impl RefUpdate {
    /// [`RefUpdate::Set`] of `name` to `target`.
    pub(crate) fn set(name: String, target: impl ToString) -> RefUpdate {
        RefUpdate::Set {
            name,
            target: target.to_string(),
        }
    }

    fn line(&self) -> String {
        match self {
            RefUpdate::Set { name, target } => format!("update {name} {target}\n"),
            RefUpdate::Create { name, target } => format!("create {name} {target}\n"),
            RefUpdate::Delete { name } => format!("delete {name}\n"),
        }
    }
}

/// A running `cat-file --batch`: its answers on `stdout`.
pub(crate) struct Batch {
    child: std::process::Child,
    /// Where git answers.
    pub(crate) stdout: std::process::ChildStdout,
    feeder: std::thread::JoinHandle<std::io::Result<()>>,
}

impl Batch {
    /// Waits for git (killing it first when the reader `gave_up`) and the feeder.
    pub(crate) fn finish(mut self, gave_up: bool) -> Result<std::process::ExitStatus> {
        if gave_up {
            let _ = self.child.kill();
        }
        let _ = self.feeder.join();
        self.child
            .wait()
            .ctx(|| "cannot wait for git cat-file".to_string())
    }
}

/// A patch to read: in memory, or in a file.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PatchInput<'a> {
    /// The patch's bytes.
    Bytes(&'a [u8]),
    /// A file holding the patch.
    File(&'a Path),
}

/// What `cat-file --batch` found for one object name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CatFile {
    /// The object exists: its type (`blob`, `tree`, `commit`, `tag`) and content.
    Found { kind: String, content: Vec<u8> },
    /// No such object.
    Missing,
}

crate::base::wire::wire_enum! {
    /// The hash a repository names its objects with, by git's name for it (`--object-format`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
    pub(crate) enum ObjectFormat {
        /// 40 hex digits.
        Sha1 = "sha1",
        /// 64 hex digits.
        Sha256 = "sha256",
    }
}

impl ObjectFormat {
    /// The hash `text` is a full object id of, if it is one.
    pub(crate) fn of_full_id(text: &str) -> Option<ObjectFormat> {
        ObjectFormat::ALL
            .into_iter()
            .find(|format| format.is_full_id(text))
    }

    /// How many hex digits a full object id has.
    pub(crate) fn hex_len(self) -> usize {
        match self {
            ObjectFormat::Sha1 => 40,
            ObjectFormat::Sha256 => 64,
        }
    }

    /// The id of the empty tree (which every git knows without storing it).
    pub(crate) fn empty_tree(self) -> &'static str {
        match self {
            ObjectFormat::Sha1 => "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
            ObjectFormat::Sha256 => {
                "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"
            }
        }
    }

    /// Whether `text` is a full object id of this hash, in lowercase hex.
    pub(crate) fn is_full_id(self, text: &str) -> bool {
        text.len() == self.hex_len() && crate::base::ids::is_object_hex(text)
    }
}

/// Whether git's name of an object's type (`cat-file`, `ls-tree`) is a commit's.
pub(crate) fn is_commit_type(kind: &str) -> bool {
    kind == "commit"
}

/// Whether git's name of an object's type (`cat-file`, `ls-tree`) is a tree's.
pub(crate) fn is_tree_type(kind: &str) -> bool {
    kind == "tree"
}

impl Git {
    /// The entries of one config file, read as data: `(key, value)` in file order, `None` for a
    /// bare boolean key. Run in `dir`, which a3s-iso trusts (the file's repository may not be).
    pub(crate) fn config_file_entries(
        &self,
        dir: &Path,
        file: &Path,
    ) -> Result<Vec<(String, Option<Vec<u8>>)>> {
        let out = self
            .at(dir)
            .args(["config", "--no-includes", "--list", "-z", "--file"])
            .arg(file)
            .run()?;
        Ok(out
            .split(|b| *b == 0)
            .filter(|entry| !entry.is_empty())
            .map(|entry| match entry.iter().position(|b| *b == b'\n') {
                Some(at) => (
                    String::from_utf8_lossy(&entry[..at]).into_owned(),
                    Some(entry[at + 1..].to_vec()),
                ),
                None => (String::from_utf8_lossy(entry).into_owned(), None),
            })
            .collect())
    }

    /// The hash of the repository at `dir` (`rev-parse --show-object-format`).
    pub(crate) fn object_format(&self, dir: &Path) -> Result<ObjectFormat> {
        let format = self
            .at(dir)
            .args(["rev-parse", "--show-object-format"])
            .run_text()?;
        ObjectFormat::ALL
            .into_iter()
            .find(|known| known.as_str() == format)
            .ok_or_else(|| {
                Error::internal(format!(
                    "{} uses an object format a3s-iso does not know: {format}",
                    dir.display()
                ))
            })
    }

    /// The object id `rev` names (`rev-parse --verify`), or `None` when it names nothing. A
    /// full object id peeled to a commit or tree names the same object all along: asked once.
    pub(crate) fn rev_parse(&self, dir: &Path, rev: &str) -> Result<Option<String>> {
        let lasting = names_one_object(rev);
        if let Some(known) = lasting.then(|| self.recall(dir, rev)).flatten() {
            return Ok(Some(known));
        }
        let found = self
            .at(dir)
            .args(["rev-parse", "-q", "--verify", "--end-of-options", rev])
            .found_text()?;
        if let (true, Some(id)) = (lasting, &found) {
            self.remember(dir, rev, id);
        }
        Ok(found)
    }

    /// The checkout's `core.filemode`, `core.autocrlf` and `core.sparseCheckout`, once a command.
    pub(crate) fn core_settings(&self, top: &Path) -> Result<CoreSettings> {
        const KEYS: &str = r"^core\.(filemode|autocrlf|sparsecheckout)$";
        let raw = self.memoized(top, KEYS, || {
            let out = self
                .at(top)
                .args(["config", "-z", "--get-regexp", KEYS])
                .output()?;
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        })?;
        let mut settings = CoreSettings {
            filemode: true,
            autocrlf: false,
            sparse_checkout: false,
        };
        for record in raw.split('\0').filter(|r| !r.is_empty()) {
            let text = record.to_ascii_lowercase();
            let (key, value) = text.split_once('\n').unwrap_or((&text, "true"));
            let yes = matches!(value, "true" | "yes" | "on" | "1");
            match key {
                "core.filemode" => settings.filemode = yes,
                "core.autocrlf" => settings.autocrlf = yes,
                "core.sparsecheckout" => settings.sparse_checkout = yes,
                _ => {}
            }
        }
        Ok(settings)
    }

    /// Like [`Git::rev_parse`], failing with `git_failed` when `rev` names nothing.
    pub(crate) fn rev_parse_required(&self, dir: &Path, rev: &str) -> Result<String> {
        self.at(dir)
            .args(["rev-parse", "--verify", "--end-of-options", rev])
            .run_text()
    }

    /// The tree of the index at `index` (`write-tree` with `GIT_INDEX_FILE`).
    pub(crate) fn write_tree(&self, dir: &Path, index: &Path) -> Result<String> {
        self.at(dir)
            .env("GIT_INDEX_FILE", index)
            .arg("write-tree")
            .run_text()
    }

    /// Whether commit `ancestor` is in the history of `commit`.
    pub(crate) fn is_ancestor(&self, dir: &Path, ancestor: &str, commit: &str) -> Result<bool> {
        self.at(dir)
            .args(["merge-base", "--is-ancestor", ancestor, commit])
            .succeeds()
    }

    /// The paths that differ between two trees, recursively, renames off.
    pub(crate) fn diff_trees(&self, dir: &Path, a: &str, b: &str) -> Result<Vec<Vec<u8>>> {
        let ask = || {
            self.at(dir)
                .without_index()
                .args(["diff-tree", "-r", "-z", "--name-only", "--no-renames"])
                .args([a, b])
                .run()
        };
        let out = self.object_diff(dir, "diff-tree", (a, b), ask)?;
        Ok(split_nul(&out).map(<[u8]>::to_vec).collect())
    }

    /// Whether trees `a` and `b` hold the same at each of `paths` (literal paths).
    pub(crate) fn tree_paths_match(
        &self,
        dir: &Path,
        a: &str,
        b: &str,
        paths: &[Vec<u8>],
    ) -> Result<bool> {
        use std::os::unix::ffi::OsStrExt;
        let ask = || {
            self.at(dir)
                .env("GIT_LITERAL_PATHSPECS", "1")
                .without_index()
                .args(["diff-tree", "--quiet", "-r", "--no-renames", a, b, "--"])
                .args(paths.iter().map(|p| std::ffi::OsStr::from_bytes(p)))
                .succeeds()
        };
        if !(crate::base::ids::is_object_hex(a) && crate::base::ids::is_object_hex(b)) {
            return ask();
        }
        // Object ids and paths: the same answer all command long (a queue's plan asks it of
        // a session, and its landing again when HEAD has not moved since).
        let paths_digest = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(paths.join(&0u8)));
        let question = format!("diff-tree --quiet {a} {b} {paths_digest}");
        let known = self.memoized(dir, &question, || Ok(ask()?.to_string()))?;
        Ok(known == "true")
    }

    /// The branch HEAD is on in the checkout at `dir` (`refs/heads/…`), `None` when detached.
    pub(crate) fn current_branch(&self, dir: &Path) -> Result<Option<String>> {
        self.at(dir)
            .args(["symbolic-ref", "-q", "HEAD"])
            .found_text()
    }

    /// Whether the patch at `patch` applies to `dir`, forwards or in reverse; `Err(stderr)` if not.
    pub(crate) fn apply_check(
        &self,
        dir: &Path,
        patch: &Path,
        reverse: bool,
    ) -> Result<std::result::Result<(), String>> {
        let out = self
            .at(dir)
            .args(["-c", "apply.whitespace=nowarn"])
            .args(["apply", "--binary", "--check"])
            .args(reverse.then_some("--reverse"))
            .arg(patch)
            .output()?;
        Ok(if out.exit_code == Some(0) {
            Ok(())
        } else {
            Err(out.stderr.trim().to_string())
        })
    }

    /// Applies `updates` in one `update-ref --stdin` transaction: all or nothing. The git runs
    /// shielded: an interrupt, or a kill of a3s-iso's process group, does not cut it off while it
    /// holds the ref locks (and `packed-refs.lock`), which a killed git leaves behind for every
    /// later change to trip over.
    pub(crate) fn update_refs(
        &self,
        dir: &Path,
        updates: &[RefUpdate],
        message: &str,
    ) -> Result<()> {
        if updates.is_empty() {
            return Ok(());
        }
        let script: String = updates.iter().map(RefUpdate::line).collect();
        self.at(dir)
            .shielded()
            .args(["update-ref", "-m", message, "--stdin"])
            .stdin(script.into_bytes())
            .finish()
    }

    /// The full names of the refs under each prefix (a prefix ending in `/` is a folder; one
    /// without names exactly that ref).
    pub(crate) fn list_refs(&self, dir: &Path, prefixes: &[String]) -> Result<Vec<String>> {
        let text = self
            .at(dir)
            .args(["for-each-ref", "--format=%(refname)"])
            .args(prefixes)
            .run_text()?;
        Ok(text
            .lines()
            .filter(|l| !l.is_empty())
            .map(str::to_string)
            .collect())
    }

    /// The refs under `prefix` and the object each names, sorted by name.
    pub(crate) fn list_refs_targets(
        &self,
        dir: &Path,
        prefix: &str,
    ) -> Result<Vec<(String, String)>> {
        self.refs_with(dir, "%(objectname)", prefix)
    }

    /// The refs under `prefix`, each with the `for-each-ref` atom `field` of what it names.
    fn refs_with(&self, dir: &Path, field: &str, prefix: &str) -> Result<Vec<(String, String)>> {
        let format = format!("--format={field} %(refname)");
        let text = self
            .at(dir)
            .args(["for-each-ref", &format, prefix])
            .run_text()?;
        Ok(text
            .lines()
            .filter_map(|line| line.split_once(' '))
            .map(|(value, name)| (name.to_string(), value.to_string()))
            .collect())
    }

    /// Which of `ids` the repository at `dir` holds (`cat-file --batch-check`), in order.
    pub(crate) fn objects_present(&self, dir: &Path, ids: &[String]) -> Result<Vec<bool>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let input: String = ids.iter().map(|id| format!("{id}\n")).collect();
        let out = self
            .at(dir)
            .args(["cat-file", "--batch-check=%(objectname) %(objecttype)"])
            .stdin(input.into_bytes())
            .run_text()?;
        let present: Vec<bool> = out
            .lines()
            .map(|line| !line.ends_with(" missing") && !line.ends_with(" ambiguous"))
            .collect();
        if present.len() != ids.len() {
            return Err(crate::base::error::Error::internal(
                "git cat-file answered for a different number of objects",
            ));
        }
        Ok(present)
    }

    /// The refs under `prefix` with the date of what each names (a commit's committer date,
    /// in milliseconds since the epoch; 0 for an object without a date).
    pub(crate) fn list_refs_dated(&self, dir: &Path, prefix: &str) -> Result<Vec<(String, u64)>> {
        let dated = self.refs_with(dir, "%(creatordate:unix)", prefix)?;
        Ok(dated
            .into_iter()
            .map(|(name, date)| {
                let secs: u64 = date.parse().unwrap_or(0);
                (name, secs.saturating_mul(1000))
            })
            .collect())
    }

    /// `git worktree add --detach --no-checkout` of `revision` at `path`: only the admin dir
    /// and the tree's `.git` file, which other git processes may read half written (see
    /// `services::worktree::add_worktree`). [`Git::check_out_new_worktree`] fills the tree.
    pub(crate) fn worktree_add_detached(
        &self,
        dir: &Path,
        path: &Path,
        revision: &str,
    ) -> Result<()> {
        self.at(dir)
            .args(["worktree", "add", "--detach", "--no-checkout", "--quiet"])
            .arg(path)
            .arg(revision)
            .finish()
    }

    /// Fills a worktree that `worktree add --no-checkout` registered: its index and files at
    /// its HEAD, as `worktree add` itself does it (`reset --hard`, submodules left alone).
    pub(crate) fn check_out_new_worktree(&self, path: &Path) -> Result<()> {
        self.at(path)
            .args(["-c", "checkout.workers=0", "reset", "--hard", "--quiet"])
            .arg("--no-recurse-submodules")
            .finish()
    }

    /// Whether `patch` (bytes, or a file), which has `sections` `diff --git` headers, is a
    /// patch git reads whole: `git apply --numstat` parses every section (binary literals
    /// decoded and inflated) and touches nothing. git stops at a section it cannot read and
    /// still succeeds with those before it, so it must also name a file for every section and
    /// complain of nothing. It runs in an empty directory of its own where no repository is
    /// found, so no repository's configuration has a say. `Err(why)` is git's first complaint.
    pub(crate) fn parse_patch(
        &self,
        patch: PatchInput<'_>,
        sections: u64,
    ) -> Result<std::result::Result<(), String>> {
        let base = std::env::temp_dir();
        let dir = base.join(crate::base::maker::owned_name("patch-parse"));
        std::fs::create_dir(&dir).ctx(|| format!("cannot create {}", dir.display()))?;
        let cmd = self
            .at(&dir)
            .env("GIT_CEILING_DIRECTORIES", &base)
            .args(["apply", "--numstat"]);
        let out = match patch {
            PatchInput::Bytes(bytes) => cmd.arg("-").stdin(bytes.to_vec()).output(),
            PatchInput::File(path) => cmd.arg(path).output(),
        };
        let _ = std::fs::remove_dir(&dir);
        let out = out?;
        // One line a file (a name with a line break in it is quoted).
        let read = out
            .stdout
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count();
        let complaint = out.stderr.lines().find(|l| !l.trim().is_empty());
        Ok(match (out.exit_code, complaint) {
            (Some(0), None) if read as u64 >= sections => Ok(()),
            (Some(0), None) => Err(format!("git reads {read} of its {sections} files")),
            (_, Some(line)) => Err(line.trim_start_matches("error: ").to_string()),
            (_, None) => Err("git apply cannot read it".into()),
        })
    }

    /// The git dir of the checkout at `dir` (for a linked worktree, its admin dir).
    pub(crate) fn git_dir(&self, dir: &Path) -> Result<std::path::PathBuf> {
        let out = self
            .at(dir)
            .args(["rev-parse", "--absolute-git-dir"])
            .run()?;
        let line = out.strip_suffix(b"\n").unwrap_or(&out);
        Ok(std::path::PathBuf::from(std::ffi::OsStr::from_bytes(line)))
    }

    /// A boolean setting as git reads it in the checkout at `dir` (`None`: not set).
    pub(crate) fn config_bool(&self, dir: &Path, key: &str) -> Result<Option<bool>> {
        let out = self
            .at(dir)
            .args(["config", "--type=bool", "--get", key])
            .output()?;
        match (out.exit_code, out.stdout.trim_ascii()) {
            (Some(0), b"true") => Ok(Some(true)),
            (Some(0), _) => Ok(Some(false)),
            (Some(1), _) => Ok(None),
            _ => Err(failure_of(
                vec!["config".into(), "--get".into(), key.into()],
                out.exit_code,
                out.stderr,
            )),
        }
    }

    /// Removes every value of `key` from the config file `file` (none there is fine).
    pub(crate) fn config_file_unset(&self, dir: &Path, file: &Path, key: &str) -> Result<()> {
        let out = self
            .at(dir)
            .args(["config", "--file"])
            .arg(file)
            .args(["--unset-all", key])
            .output()?;
        match out.exit_code {
            // 5: there was nothing to unset.
            Some(0) | Some(5) => Ok(()),
            code => Err(failure_of(
                vec!["config".into(), "--unset-all".into(), key.into()],
                code,
                out.stderr,
            )),
        }
    }

    /// A boolean setting of the config file `file` alone (`None`: not set).
    pub(crate) fn config_file_bool(
        &self,
        dir: &Path,
        file: &Path,
        key: &str,
    ) -> Result<Option<bool>> {
        let out = self
            .at(dir)
            .args(["config", "--file"])
            .arg(file)
            .args(["--type=bool", "--get", key])
            .output()?;
        Ok(match (out.exit_code, out.stdout.trim_ascii()) {
            (Some(0), b"true") => Some(true),
            (Some(0), _) => Some(false),
            _ => None,
        })
    }

    /// The branches (full ref names) checked out in any worktree of `dir`'s repository.
    pub(crate) fn checked_out_branches(&self, dir: &Path) -> Result<Vec<String>> {
        let text = self
            .at(dir)
            .args(["worktree", "list", "--porcelain"])
            .run_text()?;
        Ok(text
            .lines()
            .filter_map(|line| line.strip_prefix("branch "))
            .map(str::to_string)
            .collect())
    }

    /// Looks up many objects with one `cat-file --batch` process.
    pub(crate) fn cat_file_batch(&self, dir: &Path, names: &[String]) -> Result<Vec<CatFile>> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let mut batch = self.start_batch(dir, names)?;
        let found = read_batch(BufReader::new(&mut batch.stdout), names.len());
        let status = batch.finish(found.is_err())?;
        match found {
            Ok(found) if status.success() => Ok(found),
            _ => Err(failure_of(
                vec!["cat-file".into(), "--batch".into()],
                status.code(),
                String::new(),
            )),
        }
    }

    /// Starts one `git cat-file --batch` in `dir` and feeds it `names` from a thread: git
    /// answers while it reads, and both pipes have bounded buffers.
    pub(crate) fn start_batch(&self, dir: &Path, names: &[String]) -> Result<Batch> {
        let mut child = self
            .command(dir, &["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ctx(|| "cannot run git cat-file --batch".to_string())?;
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| Error::internal("no stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| Error::internal("no stdout"))?;
        let input: String = names.iter().map(|n| format!("{n}\n")).collect();
        let feeder = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        Ok(Batch {
            child,
            stdout,
            feeder,
        })
    }

    /// `path → "mode oid"` for the given paths of a tree (absent paths are left out).
    pub(crate) fn tree_entries(
        &self,
        dir: &Path,
        tree: &str,
        paths: &[RepoPath],
    ) -> Result<BTreeMap<RepoPath, String>> {
        let out = self
            .at(dir)
            .args(["--literal-pathspecs", "ls-tree", "-r", "-z", "--full-tree"])
            .args([tree, "--"])
            .args(paths.iter().map(RepoPath::as_os))
            .run()?;
        Ok(split_nul(&out)
            .filter_map(|record| {
                let ([mode, _kind, oid], path) = fields_and_path(record)?;
                Some((RepoPath(path.to_vec()), format!("{mode} {oid}")))
            })
            .collect())
    }

    /// The all-zero object id of the repository's hash (40 or 64 digits).
    pub(crate) fn null_oid(&self, dir: &Path) -> Result<String> {
        Ok("0".repeat(self.object_format(dir)?.hex_len()))
    }

    /// Copies the objects reachable from `revs` (`rev-list` arguments: tips, and `^base` for
    /// what the receiver has) from the object directory `from`, read as data, into the
    /// repository at `into`. `from` is read with `seen` as its alternate (objects that moved
    /// elsewhere, such as a run's quarantine migrated into the superproject's store), and
    /// nothing of the repository `from` belongs to is read but objects. The receiver checks
    /// every object (`index-pack --strict`), as for a push. With `skip_seen`, objects `seen`
    /// already holds are not sent (when `seen` is the receiver's own store).
    pub(crate) fn copy_reachable(
        &self,
        into: &Path,
        (from, seen): (&Path, &Path),
        revs: &[String],
        skip_seen: bool,
    ) -> Result<()> {
        fn objects<'g>(
            cmd: crate::git::runner::GitCmd<'g>,
            from: &Path,
            seen: &Path,
        ) -> crate::git::runner::GitCmd<'g> {
            cmd.env("GIT_OBJECT_DIRECTORY", from)
                .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", seen)
        }
        // The listing runs in the receiver (its config is trusted), reading `from`'s objects.
        let listed = objects(self.at(into), from, seen)
            .args(["rev-list", "--objects", "--stdin"])
            .stdin(
                revs.iter()
                    .flat_map(|r| format!("{r}\n").into_bytes())
                    .collect(),
            )
            .run()?;
        let ids: Vec<u8> = listed
            .split(|b| *b == b'\n')
            .filter(|l| l.len() >= 40)
            .flat_map(|l| {
                l.split(|b| *b == b' ')
                    .next()
                    .unwrap_or_default()
                    .iter()
                    .copied()
                    .chain([b'\n'])
            })
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        let pack = objects(self.at(into), from, seen)
            .args(["pack-objects", "--stdout", "-q"])
            .args(skip_seen.then_some("--local"))
            .stdin(ids);
        pipe_into(pack, self.at(into))
    }

    fn command(&self, dir: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(self.path());
        cmd.current_dir(dir)
            .args(["--no-pager", "-c", "core.fsmonitor=false"])
            .args(args);
        hermetic_env(&mut cmd);
        if let Some(git_dir) = self.named_git_dir(dir) {
            cmd.env("GIT_DIR", git_dir).env("GIT_WORK_TREE", dir);
        }
        cmd
    }
}

fn read_batch(mut reader: impl BufRead, count: usize) -> std::io::Result<Vec<CatFile>> {
    let mut found = Vec::with_capacity(count);
    let mut header = String::new();
    for _ in 0..count {
        header.clear();
        reader.read_line(&mut header)?;
        let fields: Vec<&str> = header.trim_end().split(' ').collect();
        match fields.as_slice() {
            [_, "missing"] | [_, "ambiguous"] => found.push(CatFile::Missing),
            [_, kind, size] => {
                let size: usize = size.parse().map_err(std::io::Error::other)?;
                let mut content = vec![0u8; size + 1];
                reader.read_exact(&mut content)?;
                content.pop();
                found.push(CatFile::Found {
                    kind: (*kind).to_string(),
                    content,
                });
            }
            _ => return Err(std::io::Error::other(format!("unexpected {header:?}"))),
        }
    }
    Ok(found)
}

/// `pack | receiver index-pack --stdin --strict`: the receiver checks every object as for a
/// push, but for `.gitmodules`' `update = !command`: git never runs a command that a
/// `.gitmodules` names (only one from a repository's own config), and a3s-iso never updates
/// submodules, so refusing it would only stick a session whose commit holds one.
pub(super) fn pipe_into(
    pack: crate::git::runner::GitCmd<'_>,
    receiver: crate::git::runner::GitCmd<'_>,
) -> Result<()> {
    let index = receiver.args(["index-pack", "--stdin", "--strict=gitmodulesupdate=ignore"]);
    let args = index.shown_args();
    let out = pack
        .expression()
        .pipe(index.piped_expression())
        .stdout_capture()
        .stderr_capture()
        .run()
        .map_err(|e| Error::io("cannot run git pack-objects | git index-pack", e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(failure_of(
            args,
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ))
    }
}

/// A checkout's settings that decide how files are written (see [`Git::core_settings`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CoreSettings {
    /// `core.filemode`: whether the executable bit counts.
    pub filemode: bool,
    /// `core.autocrlf=true`: every text file is converted on checkout.
    pub autocrlf: bool,
    /// `core.sparseCheckout`.
    pub sparse_checkout: bool,
}

/// Whether `rev` is a full object id peeled to a commit or a tree (`<id>^{commit}`), which
/// names the same object for as long as it exists.
fn names_one_object(rev: &str) -> bool {
    let Some((id, peel)) = rev.split_once('^') else {
        return false;
    };
    matches!(peel, "{commit}" | "{tree}")
        && matches!(id.len(), 40 | 64)
        && id.bytes().all(|b| b.is_ascii_hexdigit())
}

impl Git {
    /// Every path that differs between the trees `base` and `result`, as `diff-tree --raw -z`
    /// records them; `None` when git cannot compare them (a tree is not here).
    pub(crate) fn tree_diff_raw(
        &self,
        dir: &Path,
        base: &str,
        result: &str,
    ) -> Result<Option<Vec<u8>>> {
        let out = self
            .at(dir)
            .without_index()
            .args(["diff-tree", "-r", "-z", "--no-renames", "--full-index"])
            .args(["--no-abbrev", "--no-ext-diff", "-O/dev/null", base, result])
            .output()?;
        Ok((out.exit_code == Some(0)).then_some(out.stdout))
    }
}

#[cfg(test)]
mod tests {
    use crate::git::ops::*;

    #[test]
    fn only_a_full_id_peeled_to_a_commit_or_tree_names_one_object_for_good() {
        let sha1 = "a".repeat(40);
        let sha256 = "b".repeat(64);
        assert!(names_one_object(&format!("{sha1}^{{commit}}")));
        assert!(names_one_object(&format!("{sha256}^{{tree}}")));
        assert!(!names_one_object("HEAD^{commit}"));
        assert!(!names_one_object(&format!("{}^{{commit}}", &sha1[..39])));
        assert!(!names_one_object(&format!("{sha1}^{{blob}}")));
        assert!(!names_one_object(&format!("{sha1}^1")));
        assert!(!names_one_object(&sha1));
    }
}
