//! The checkout as an intent sees it: what each touched path holds now (hashed as `git add`
//! would, without touching the index), and the writer of post-images. Every path is written to
//! a temporary sibling and renamed over its target, so a crash leaves each path wholly before
//! or wholly after, which recovery tells apart from the recorded blob ids.

use std::collections::BTreeSet;
use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::base::error::{Error, IoContext, Result};
use crate::git::Git;
use crate::recovery::intent::record::{Entry, PatchPlan, PathChange, RepoPath};

/// Which recorded image a write puts in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// What the path held before the promote (a rollback).
    Pre,
    /// What the promote makes of it.
    Post,
}

impl Side {
    /// The image of `change` on this side.
    pub(crate) fn of(self, change: &PathChange) -> Option<&Entry> {
        match self {
            Side::Pre => change.pre.as_ref(),
            Side::Post => change.post.as_ref(),
        }
    }
}

/// What a path holds in the checkout now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PathState {
    /// Nothing (or a parent is not a directory).
    Absent,
    /// A file, a symlink or a submodule's directory, as a git entry.
    Held(Entry),
    /// A directory, a special file, a path under a symlink: nothing a patch puts there.
    Other,
}

/// A checkout, its git, and the settings that decide how files are compared and written.
pub(crate) struct Checkout<'a> {
    /// The git that hashes and reads blobs.
    pub(crate) git: &'a Git,
    pub(crate) top: &'a Path,
    /// `core.filemode`: whether the executable bit counts.
    filemode: bool,
    /// `core.autocrlf=true`: every text file is converted on checkout.
    autocrlf: bool,
}

impl<'a> Checkout<'a> {
    /// The checkout at `top`, with its `core.filemode` and `core.autocrlf`.
    pub(crate) fn open(git: &'a Git, top: &'a Path) -> Result<Checkout<'a>> {
        let settings = git.core_settings(top)?;
        Ok(Checkout {
            git,
            top,
            filemode: settings.filemode,
            autocrlf: settings.autocrlf,
        })
    }

    /// What each path holds now; `write` also stores the blobs (to serve as pre-images).
    pub(crate) fn states(&self, paths: &[RepoPath], write: bool) -> Result<Vec<PathState>> {
        let mut states = vec![PathState::Absent; paths.len()];
        let mut files: Vec<(usize, &'static str)> = Vec::new();
        for (i, path) in paths.iter().enumerate() {
            if self.behind_symlink(path) {
                states[i] = PathState::Other;
                continue;
            }
            let full = path.under(self.top);
            let meta = match fs::symlink_metadata(&full) {
                Ok(meta) => meta,
                Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                    continue;
                }
                Err(e) => return Err(Error::io(format!("cannot inspect {}", full.display()), e)),
            };
            states[i] = if meta.file_type().is_symlink() {
                let target =
                    fs::read_link(&full).ctx(|| format!("cannot read {}", full.display()))?;
                let oid = self.git.hash_object(
                    self.top,
                    "blob",
                    target.as_os_str().as_bytes().to_vec(),
                    write,
                )?;
                PathState::Held(Entry {
                    mode: "120000".into(),
                    oid,
                })
            } else if meta.is_file() {
                let exec = meta.mode() & 0o100 != 0;
                files.push((i, if exec { "100755" } else { "100644" }));
                continue;
            } else if meta.is_dir() {
                self.gitlink(path)?
            } else {
                PathState::Other
            };
        }
        let names: Vec<&[u8]> = files.iter().map(|(i, _)| paths[*i].0.as_slice()).collect();
        let oids = self.git.hash_paths(self.top, &names, write)?;
        for ((i, mode), oid) in files.into_iter().zip(oids) {
            states[i] = PathState::Held(Entry {
                mode: mode.into(),
                oid,
            });
        }
        Ok(states)
    }

    /// Whether `state` is `want` (`None`: absent), the executable bit only with `core.filemode`.
    pub(crate) fn holds(&self, state: &PathState, want: Option<&Entry>) -> bool {
        match (state, want) {
            (PathState::Absent, None) => true,
            (PathState::Held(have), Some(want)) => {
                have.oid == want.oid
                    && (have.mode == want.mode
                        || (!self.filemode
                            && [&have.mode, &want.mode]
                                .iter()
                                .all(|m| *m == "100644" || *m == "100755")))
            }
            _ => false,
        }
    }

    /// A directory is a submodule's when the index says so.
    fn gitlink(&self, path: &RepoPath) -> Result<PathState> {
        let out = self.git.staged_entry(self.top, path.as_os())?;
        let gitlink = Entry::listed(&out, 1)
            .find(|(name, entry)| *name == path.0.as_slice() && entry.is_gitlink());
        Ok(gitlink.map_or(PathState::Other, |(_, entry)| PathState::Held(entry)))
    }

    /// Whether a directory above `path` is a symlink (a write would go outside the checkout).
    fn behind_symlink(&self, path: &RepoPath) -> bool {
        let mut dir = PathBuf::from(self.top);
        let components: Vec<_> = Path::new(path.as_os()).components().collect();
        for component in components.iter().take(components.len().saturating_sub(1)) {
            dir.push(component);
            if fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink()) {
                return true;
            }
        }
        false
    }

    /// The writer's temporary sibling for path `i` of a plan tagged `tag`: a fixed name, so that
    /// recovery can remove what a crash left.
    fn temp_for(&self, path: &RepoPath, tag: &str, i: usize) -> PathBuf {
        let full = path.under(self.top);
        full.parent()
            .unwrap_or(self.top)
            .join(format!(".a3s-iso-{tag}-{i}"))
    }

    /// Removes the temporary files a crashed writer may have left.
    pub(crate) fn clear_temps(&self, tag: &str, plan: &PatchPlan) {
        for (i, change) in plan.paths.iter().enumerate() {
            let _ = fs::remove_file(self.temp_for(&change.path, tag, i));
        }
    }

    /// Removes the directories a promote created, if they are empty (deepest first).
    pub(crate) fn remove_created_dirs(&self, plan: &PatchPlan) {
        for dir in &plan.created_dirs {
            let _ = fs::remove_dir(dir.under(self.top));
        }
    }

    /// Writes one side's image of the changes `todo`: removals first, then each file by rename.
    pub(crate) fn write(
        &self,
        tag: &str,
        plan: &PatchPlan,
        todo: &[usize],
        side: Side,
    ) -> Result<()> {
        for &i in todo {
            let change = &plan.paths[i];
            if self.behind_symlink(&change.path) {
                return Err(Error::internal(format!(
                    "{} is beyond a symbolic link; not written",
                    change.path.shown()
                )));
            }
            if side.of(change).is_none() {
                self.remove(change)?;
            }
        }
        let writes: Vec<usize> = todo
            .iter()
            .copied()
            .filter(|i| side.of(&plan.paths[*i]).is_some())
            .collect();
        let filtered = self.filtered(tag, writes.iter().map(|i| &plan.paths[*i].path))?;
        let (streamed, direct): (Vec<usize>, Vec<usize>) = writes.into_iter().partition(|i| {
            let change = &plan.paths[*i];
            side.of(change).is_some_and(|e| e.mode.starts_with("100"))
                && !filtered.contains(&change.path)
        });
        let half = streamed.len() / 2;
        let oids: Vec<String> = streamed
            .iter()
            .map(|i| {
                side.of(&plan.paths[*i])
                    .map_or(String::new(), |e| e.oid.clone())
            })
            .collect();
        self.git.each_blob(self.top, &oids, |n, content| {
            if n == half {
                crate::fault_point!("promote-during-apply");
            }
            let change = &plan.paths[streamed[n]];
            let exec = side.of(change).is_some_and(|e| e.mode == "100755");
            self.put(
                change,
                &self.temp_for(&change.path, tag, streamed[n]),
                exec,
                content,
            )
        })?;
        crate::fault_point!("promote-before-direct-writes");
        for i in direct {
            let change = &plan.paths[i];
            if let Some(entry) = side.of(change) {
                self.put_direct(change, entry, &self.temp_for(&change.path, tag, i))?;
            }
        }
        Ok(())
    }

    /// Removes a path the patch deletes, then its parent directories while they are empty.
    fn remove(&self, change: &PathChange) -> Result<()> {
        let full = change.path.under(self.top);
        if change.is_gitlink() {
            let _ = fs::remove_dir(&full);
            return Ok(());
        }
        if let Err(e) = fs::remove_file(&full)
            && !matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory)
        {
            return Err(Error::io(format!("cannot remove {}", full.display()), e));
        }
        let mut dir = full.parent();
        while let Some(d) = dir.filter(|d| d.starts_with(self.top) && *d != self.top) {
            if fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
        Ok(())
    }

    /// Writes a regular file's post-image from `content` to `temp`, then renames it in place.
    fn put(
        &self,
        change: &PathChange,
        temp: &Path,
        exec: bool,
        content: &mut dyn Read,
    ) -> Result<()> {
        let full = change.path.under(self.top);
        let mut file = self.create_temp(&full, temp, exec)?;
        std::io::copy(content, &mut file).ctx(|| format!("cannot write {}", temp.display()))?;
        drop(file);
        fs::rename(temp, &full).ctx(|| format!("cannot write {}", full.display()))
    }

    /// Symlinks, submodule directories and files with checkout filters.
    fn put_direct(&self, change: &PathChange, post: &Entry, temp: &Path) -> Result<()> {
        let full = change.path.under(self.top);
        match post.mode.as_str() {
            "160000" => {
                fs::create_dir_all(&full).ctx(|| format!("cannot create {}", full.display()))?;
                self.move_gitlink(&change.path, post)
            }
            "120000" => {
                let target = self.git.object_bytes(self.top, "blob", &post.oid)?;
                self.make_parent(&full)?;
                let _ = fs::remove_file(temp);
                std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(&target), temp)
                    .ctx(|| format!("cannot create {}", temp.display()))?;
                fs::rename(temp, &full).ctx(|| format!("cannot write {}", full.display()))
            }
            mode => {
                let file = self.create_temp(&full, temp, mode == "100755")?;
                self.git
                    .filtered_blob_to(self.top, change.path.as_os(), &post.oid, file)?;
                fs::rename(temp, &full).ctx(|| format!("cannot write {}", full.display()))
            }
        }
    }

    /// A submodule's image is its commit: the superproject's index entry, and an initialised
    /// submodule checked out (detached) at it. The promote checked that it is clean and has the
    /// commit; recovery writes it the same way.
    fn move_gitlink(&self, path: &RepoPath, entry: &Entry) -> Result<()> {
        let dir = path.under(self.top);
        if fs::symlink_metadata(dir.join(".git")).is_ok()
            && self.git.rev_parse(&dir, "HEAD")?.as_deref() != Some(entry.oid.as_str())
        {
            self.git.check_out_detached(&dir, &entry.oid)?;
        }
        let mut info = format!("160000 {}\t", entry.oid).into_bytes();
        info.extend_from_slice(&path.0);
        info.push(0);
        self.git.index_info(self.top, info)
    }

    fn make_parent(&self, full: &Path) -> Result<()> {
        match full.parent() {
            Some(dir) => fs::create_dir_all(dir).ctx(|| format!("cannot create {}", dir.display())),
            None => Ok(()),
        }
    }

    fn create_temp(&self, full: &Path, temp: &Path, exec: bool) -> Result<fs::File> {
        self.make_parent(full)?;
        let _ = fs::remove_file(temp);
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(if exec { 0o777 } else { 0o666 })
            .open(temp)
            .ctx(|| format!("cannot create {}", temp.display()))
    }

    /// Asks git now which of `paths` have checkout filters, so that the writer of the promote
    /// tagged `tag` asks nothing; not when the change touches a `.gitattributes`: the writer
    /// asks once the removals are done.
    pub(crate) fn learn_filters(&self, tag: &str, paths: &[RepoPath]) -> Result<()> {
        let sets_attributes = paths
            .iter()
            .any(|p| p.0.rsplit(|b| *b == b'/').next() == Some(&b".gitattributes"[..]));
        if sets_attributes {
            return Ok(());
        }
        self.filtered(tag, paths.iter()).map(|_| ())
    }

    /// The paths whose checkout form may differ from the blob (filters, end-of-line conversion),
    /// written through `cat-file --filters`. Each answer is kept for the promote tagged `tag`
    /// only: another promote of the same command (`land`) may find the attributes changed.
    fn filtered<'p>(
        &self,
        tag: &str,
        paths: impl Iterator<Item = &'p RepoPath>,
    ) -> Result<BTreeSet<RepoPath>> {
        let paths: Vec<&RepoPath> = paths.collect();
        if self.autocrlf {
            return Ok(paths.into_iter().cloned().collect());
        }
        let question = |path: &RepoPath| format!("filtered {tag} {}", hex::encode(&path.0));
        let known: Option<Vec<bool>> = paths
            .iter()
            .map(|p| self.git.recall(self.top, &question(p)).map(|a| a == "yes"))
            .collect();
        if let Some(known) = known {
            return Ok(paths
                .into_iter()
                .zip(known)
                .filter(|(_, filtered)| *filtered)
                .map(|(p, _)| p.clone())
                .collect());
        }
        let input = paths.iter().flat_map(|p| p.0.iter().chain(&[0])).copied();
        let out = self.git.checkout_attrs(self.top, input.collect())?;
        let fields: Vec<&[u8]> = out.split(|b| *b == 0).collect();
        let found: BTreeSet<RepoPath> = fields
            .chunks(3)
            .filter(|t| t.len() == 3 && !matches!(t[2], b"unspecified" | b"unset"))
            .map(|t| RepoPath(t[0].to_vec()))
            .collect();
        for path in paths {
            let answer = if found.contains(path) { "yes" } else { "no" };
            self.git.remember(self.top, &question(path), answer);
        }
        Ok(found)
    }
}
