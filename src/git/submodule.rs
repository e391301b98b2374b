//! Submodules: what a commit records of them, and initialising them in a new isolation from git
//! dirs on this machine (the source's own copies), never from the URLs `.gitmodules` names.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::base::error::Result;
use crate::base::paths::RepoPath;
use crate::git::hermetic::HermeticGit;
use crate::git::runner::{Git, fields_and_path, split_nul};

/// The mode of a gitlink in a tree.
const GITLINK_MODE: &str = "160000";

/// A submodule a commit records: a gitlink with a `.gitmodules` entry naming its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Gitlink {
    pub(crate) path: RepoPath,
    /// Its name (`submodule.<name>.path` in `.gitmodules`).
    pub(crate) name: RepoPath,
    pub(crate) commit: String,
}

/// One submodule to clone from a git dir on this machine.
pub(crate) struct LocalClone<'a> {
    pub(crate) link: &'a Gitlink,
    /// The git dir its objects come from.
    pub(crate) from: &'a Path,
}

/// `(path, name)` of every `submodule.<name>.path` entry in the output of `git config -z
/// --get-regexp '^submodule\..*\.path$'`.
pub(crate) fn module_paths(out: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    split_nul(out)
        .filter_map(|record| {
            let newline = record.iter().position(|b| *b == b'\n')?;
            let key = &record[..newline];
            let name = key.strip_prefix(b"submodule.")?.strip_suffix(b".path")?;
            Some((record[newline + 1..].to_vec(), name.to_vec()))
        })
        .collect()
}

/// `file://` and the absolute path `dir`, percent-encoded (git decodes a `file://` URL): the
/// URL of a local git dir that git clones through its transport, copying objects rather than
/// hard-linking them as it would for a plain path.
pub(crate) fn file_url(dir: &Path) -> Vec<u8> {
    let mut url = b"file://".to_vec();
    for &b in dir.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            url.push(b);
        } else {
            url.extend_from_slice(format!("%{b:02X}").as_bytes());
        }
    }
    url
}

impl HermeticGit {
    /// The submodules HEAD's commit records: `.gitmodules` read from the commit as data, each
    /// path's gitlink from its tree (an entry that is not a gitlink is no submodule).
    pub(crate) fn head_submodules(&self) -> Result<Vec<Gitlink>> {
        let out = self
            .cmd()
            .args(["config", "-z", "--blob", "HEAD:.gitmodules", "--get-regexp"])
            .arg(r"^submodule\..*\.path$")
            .output()?;
        let names = module_paths(&out.stdout);
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let listed = self
            .cmd()
            .args(["--literal-pathspecs", "ls-tree", "-r", "-z", "--full-tree"])
            .args(["HEAD", "--"])
            .args(names.iter().map(|(path, _)| OsStr::from_bytes(path)))
            .run()?;
        Ok(split_nul(&listed)
            .filter_map(|record| {
                let ([mode, _kind, commit], path) = fields_and_path(record)?;
                let (_, name) = names.iter().find(|(p, _)| p == path)?;
                (mode == GITLINK_MODE).then(|| Gitlink {
                    path: RepoPath(path.to_vec()),
                    name: RepoPath(name.clone()),
                    commit: commit.to_string(),
                })
            })
            .collect())
    }

    /// `git submodule init` of `paths`: registers each in the repository's config (its URL
    /// from `.gitmodules`) unless it is registered already, as git does.
    pub(crate) fn submodule_init(&self, paths: &[&RepoPath]) -> Result<()> {
        self.cmd()
            .args(["--literal-pathspecs", "submodule", "init", "--quiet", "--"])
            .args(paths.iter().map(|p| p.as_os()))
            .finish()
    }

    /// `git submodule update` of the submodules `clones`, each cloned from its git dir on this
    /// machine: for this one command, its URL is that git dir's (the configuration keeps the URL it
    /// has) and the file transport is allowed. Nothing is fetched from the URL `.gitmodules` names.
    pub(crate) fn submodule_update_from(&self, clones: &[LocalClone<'_>]) -> Result<()> {
        let mut cmd = self
            .cmd()
            .args(["--literal-pathspecs", "-c", "protocol.file.allow=always"])
            .args(["-c", "uploadpack.allowAnySHA1InWant=true"])
            .args(["-c", "checkout.workers=0"]);
        for (i, clone) in clones.iter().enumerate() {
            // The URL travels in a variable: neither a name nor a path can break the argument
            // (git splits `--config-env` at its last `=`).
            let var = format!("A3S_ISO_SUBMODULE_URL_{i}");
            let mut spec = b"--config-env=submodule.".to_vec();
            spec.extend_from_slice(&clone.link.name.0);
            spec.extend_from_slice(b".url=");
            spec.extend_from_slice(var.as_bytes());
            cmd = cmd
                .arg(OsString::from_vec(spec))
                .env(&var, OsString::from_vec(file_url(clone.from)));
        }
        cmd.args(["submodule", "update", "--quiet", "--"])
            .args(clones.iter().map(|c| c.link.path.as_os()))
            .finish()
    }

    /// The value of `key` in the repository's configuration (`None`: not set).
    pub(crate) fn config_value(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let out = self
            .cmd()
            .args(["config", "-z", "--get"])
            .arg(OsStr::from_bytes(key))
            .output()?;
        let value = out.stdout.strip_suffix(b"\0").unwrap_or(&out.stdout);
        Ok((out.exit_code == Some(0)).then(|| value.to_vec()))
    }

    /// Every remote of the repository whose URL is `from` gets the URL `to` instead.
    pub(crate) fn replace_remote_url(&self, from: &[u8], to: &[u8]) -> Result<()> {
        let out = self
            .cmd()
            .args(["config", "-z", "--get-regexp", r"^remote\..*\.url$"])
            .output()?;
        for record in split_nul(&out.stdout) {
            let Some(newline) = record.iter().position(|b| *b == b'\n') else {
                continue;
            };
            if &record[newline + 1..] == from {
                self.cmd()
                    .args(["config", "--replace-all"])
                    .arg(OsStr::from_bytes(&record[..newline]))
                    .arg(OsStr::from_bytes(to))
                    .run()?;
            }
        }
        Ok(())
    }
}

impl Git {
    /// Where the checkout at `top` keeps the git dir of its submodule `name`
    /// (`modules/<name>` of its git dir), as an absolute path.
    pub(crate) fn module_git_dir(&self, top: &Path, name: &RepoPath) -> Result<PathBuf> {
        let mut spec = b"modules/".to_vec();
        spec.extend_from_slice(&name.0);
        let out = self
            .at(top)
            .args(["rev-parse", "--path-format=absolute", "--git-path"])
            .arg(OsStr::from_bytes(&spec))
            .run()?;
        let line = out.strip_suffix(b"\n").unwrap_or(&out);
        Ok(PathBuf::from(OsStr::from_bytes(line)))
    }

    /// Whether the git dir `git_dir` holds the commit `commit`.
    pub(crate) fn git_dir_has_commit(&self, git_dir: &Path, commit: &str) -> bool {
        self.at(git_dir)
            .env("GIT_DIR", git_dir)
            .args(["cat-file", "-e"])
            .arg(format!("{commit}^{{commit}}"))
            .succeeds()
            .unwrap_or(false)
    }

    /// The git dir of the checkout at `dir` when `dir` is the top level of a repository of
    /// its own (not a directory inside an enclosing one); `None` otherwise.
    pub(crate) fn own_git_dir(&self, dir: &Path) -> Option<PathBuf> {
        std::fs::symlink_metadata(dir.join(".git")).ok()?;
        let out = self
            .at(dir)
            .args(["rev-parse", "--show-toplevel", "--absolute-git-dir"])
            .run()
            .ok()?;
        let mut lines = out.split(|b| *b == b'\n');
        let top = PathBuf::from(OsStr::from_bytes(lines.next()?));
        let git_dir = PathBuf::from(OsStr::from_bytes(lines.next()?));
        let same = std::fs::canonicalize(dir).ok()? == std::fs::canonicalize(&top).ok()?;
        same.then_some(git_dir)
    }
}

#[cfg(test)]
mod tests {
    use crate::git::submodule::*;

    #[test]
    fn file_urls_survive_any_byte() {
        let url = file_url(Path::new(OsStr::from_bytes(b"/a b/%41/\xc3\xa9\n/x_y-z.~")));
        assert_eq!(url, b"file:///a%20b/%2541/%C3%A9%0A/x_y-z.~".to_vec());
    }

    #[test]
    fn module_paths_pairs_path_and_name() {
        let out = b"submodule.lib.path\nvendor/lib\0submodule.a.b.path\nx y\0other.key\nv\0";
        assert_eq!(
            module_paths(out),
            vec![
                (b"vendor/lib".to_vec(), b"lib".to_vec()),
                (b"x y".to_vec(), b"a.b".to_vec())
            ]
        );
    }
}
