//! Files a sandboxed command may write although their directory is read-only: an allowed file
//! (`--allow-write ~/.claude.json`) or a profile's file. A program that saves such a file by
//! writing a temporary file beside it and renaming it over the file needs to create and rename
//! in the directory, so the directory gets a private writable layer: an overlay whose upper
//! layer is a throwaway directory on the host. After the command, `run` writes the allowed
//! entries from that layer back where they are kept (the real file, or the profile's copy)
//! atomically, keeping the kept file's mode; every other change in the directory is thrown
//! away with the layer.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::base::beneath::Dir;
use crate::base::error::{Error, IoContext, Result};
use crate::base::ids::RunId;
use crate::base::sandbox::FileLayer;
use crate::base::warning::{RunWarning, Warning};

/// One file the command may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileGrant {
    /// Where the command sees it.
    pub at: PathBuf,
    /// Where its content is kept between runs: the file itself, or a profile's copy.
    pub kept: PathBuf,
}

/// The layers of one run, on the host, removed when the run ends.
pub(crate) struct Layers {
    /// Holds one numbered directory per layered directory; `None` when nothing is layered.
    root: Option<PathBuf>,
    /// Each layered directory, its layer, and the files written back from it.
    layers: Vec<(FileLayer, Vec<FileGrant>)>,
}

impl Layers {
    /// Makes a layer for each of `dirs` and for the directory of each granted file not in one
    /// of them, under a directory named after this process (so that a run killed before
    /// removing it is cleaned up by the next command), and puts in the layers the kept copies
    /// of the files not kept where the command sees them.
    pub(crate) fn create(
        run_id: &RunId,
        dirs: &[PathBuf],
        grants: Vec<FileGrant>,
    ) -> Result<Layers> {
        let mut layers: Vec<(FileLayer, Vec<FileGrant>)> = Vec::new();
        if grants.is_empty() && dirs.is_empty() {
            return Ok(Layers { root: None, layers });
        }
        let root = std::env::temp_dir().join(crate::base::maker::owned_name(&format!(
            "{}{run_id}-layers",
            crate::store::scratch::PRIVATE_TMP_PREFIX
        )));
        make_private_dir(&root)?;
        let add = |dir: PathBuf, layers: &mut Vec<(FileLayer, Vec<FileGrant>)>| {
            let base = root.join(layers.len().to_string());
            for made in [&base, &base.join("upper"), &base.join("work")] {
                make_private_dir(made)?;
            }
            let layer = FileLayer {
                dir,
                base,
                volatile: false,
            };
            layers.push((layer, Vec::new()));
            Ok::<(), Error>(())
        };
        for dir in dirs {
            add(dir.clone(), &mut layers)?;
        }
        for grant in grants {
            let at = match layers
                .iter()
                .position(|(l, _)| grant.at.starts_with(&l.dir))
            {
                Some(at) => at,
                None => {
                    let dir = grant.at.parent().map(Path::to_path_buf).unwrap_or_default();
                    add(dir, &mut layers)?;
                    layers.len() - 1
                }
            };
            layers[at].1.push(grant);
        }
        let made = Layers {
            root: Some(root),
            layers,
        };
        made.seed_upper()?;
        Ok(made)
    }

    /// Puts each kept copy that is not the file itself in its layer (with the directories on
    /// the way, in the modes they have below), so the command sees it over the real file.
    fn seed_upper(&self) -> Result<()> {
        for (layer, files) in &self.layers {
            let upper = layer.base.join("upper");
            for grant in files.iter().filter(|g| g.kept != g.at && g.kept.is_file()) {
                let rel = in_layer(layer, grant);
                let mut made = upper.clone();
                let mut below = layer.dir.clone();
                for part in rel.parent().into_iter().flat_map(Path::components) {
                    made.push(part);
                    below.push(part);
                    let mode = std::fs::metadata(&below).map_or(0o700, |m| m.permissions().mode());
                    if !made.is_dir() {
                        std::fs::create_dir(&made)
                            .and_then(|()| {
                                std::fs::set_permissions(&made, PermissionsExt::from_mode(mode))
                            })
                            .ctx(|| format!("cannot create {}", made.display()))?;
                    }
                }
                let to = upper.join(&rel);
                std::fs::copy(&grant.kept, &to)
                    .ctx(|| format!("cannot copy {} to {}", grant.kept.display(), to.display()))?;
            }
        }
        Ok(())
    }

    /// The layers as the sandbox spec takes them.
    pub(crate) fn spec(&self) -> Vec<FileLayer> {
        self.layers.iter().map(|(l, _)| l.clone()).collect()
    }

    /// The directory holding every layer (writable in the sandbox, where the overlays need
    /// it); `None` when nothing is layered.
    pub(crate) fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// Writes each granted file the command changed back where it is kept. Returns what the
    /// user should know: a file that could not be written back, or that the command replaced
    /// with something other than a regular file (left as it was).
    pub(crate) fn write_back(&self) -> Vec<Warning> {
        let mut warnings = Vec::new();
        // The command could write the layers' directory itself (the overlays need it): each
        // upper layer is reached beneath it, so a link made of one is never read through.
        let root = self.root.as_deref().map(Dir::open);
        for (layer, files) in &self.layers {
            let upper = match &root {
                Some(Ok(root)) => layer
                    .base
                    .strip_prefix(root.path())
                    .map_err(|e| e.to_string())
                    .and_then(|base| root.dir(&base.join("upper")).map_err(|e| e.to_string())),
                Some(Err(e)) => Err(e.to_string()),
                None => Err("no layers".to_string()),
            };
            for grant in files {
                let rel = in_layer(layer, grant);
                let done = upper
                    .as_ref()
                    .map_err(Clone::clone)
                    .and_then(|upper| write_back_one(upper, &rel, grant));
                if let Err(why) = done {
                    let (path, why) = (grant.kept.clone(), why.to_string());
                    warnings.push(RunWarning::NotWrittenBack { path, why }.into());
                }
            }
        }
        warnings
    }
}

impl Drop for Layers {
    fn drop(&mut self) {
        if let Some(root) = &self.root {
            let _ = crate::base::beneath::remove_path(root);
        }
    }
}

fn make_private_dir(path: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(path)
        .ctx(|| format!("cannot create {}", path.display()))
}

/// Where a granted file is in its layer.
fn in_layer(layer: &FileLayer, grant: &FileGrant) -> PathBuf {
    grant
        .at
        .strip_prefix(&layer.dir)
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| PathBuf::from(file_name(&grant.at)))
}

fn file_name(path: &Path) -> OsString {
    path.file_name().map(OsString::from).unwrap_or_default()
}

/// The largest granted file written back (settings and logins are small).
const MAX_FILE_BYTES: u64 = 64 << 20;

/// Writes one granted file back from the layer when the command changed it: never following
/// a link the command left, by a temporary file renamed over the kept one (a reader, or a
/// run killed meanwhile, sees the old content or the new, never half), with the kept file's
/// mode (0600 for a new one). Unchanged (absent from the layer, or the same bytes): nothing.
fn write_back_one(layer: &Dir, rel: &Path, grant: &FileGrant) -> std::result::Result<(), String> {
    let Some(kind) = layer.kind(rel).map_err(|e| e.to_string())? else {
        return Ok(());
    };
    if kind != crate::base::beneath::Kind::File {
        return Err("the command left something other than a regular file there".into());
    }
    let mut bytes = Vec::new();
    layer
        .open_file(rel)
        .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("larger than {MAX_FILE_BYTES} bytes"));
    }
    let kept = std::fs::symlink_metadata(&grant.kept).ok();
    if kept.as_ref().is_some_and(|m| m.is_file())
        && std::fs::read(&grant.kept).is_ok_and(|old| old == bytes)
    {
        return Ok(());
    }
    let mode = kept
        .filter(|m| m.is_file())
        .map_or(0o600, |m| m.permissions().mode() & 0o7777);
    let parent = grant.kept.parent().ok_or("no directory")?;
    std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    let dir = Dir::open(parent).map_err(|e| e.to_string())?;
    dir.replace_with(Path::new(&file_name(&grant.kept)), |file| {
        use std::io::Write;
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        let (first, rest) = bytes.split_at(bytes.len() / 2);
        file.write_all(first)?;
        crate::fault_point!("run-write-back-half-written");
        file.write_all(rest)
    })
    .map_err(|e| e.to_string())
}

/// A run's granted file is layered unless its directory is `/` or one the sandbox replaces
/// with a private one: those stay plain writable paths.
pub(crate) fn layerable(file: &Path, private: &[PathBuf]) -> bool {
    file.parent()
        .is_some_and(|dir| dir != Path::new("/") && !private.iter().any(|p| p == dir))
}

/// The error for a profile that needs a home directory when there is none.
pub(crate) fn no_home(profile: &str) -> Error {
    Error::from(crate::base::invalid::Invalid::ProfileNeedsHome {
        name: profile.to_string(),
    })
}
