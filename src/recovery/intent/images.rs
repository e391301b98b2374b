//! Planning a patch promote without touching the checkout: the pre-images are the checkout's
//! files (hashed into the object store), the post-images what `git apply --cached` makes of
//! them in a temporary index. Both are objects before the intent is written, so recovery can
//! compare and write from blob ids alone.

use std::collections::BTreeMap;
use std::path::Path;

use crate::base::error::{IoContext, Result};
use crate::git::{Git, split_nul};
use crate::model::snapshot::TempFile;
use crate::recovery::intent::checkout::PathState;
use crate::recovery::intent::record::{Entry, PatchPlan, PathChange, RepoPath};

/// What planning found.
pub(crate) enum Planned {
    /// Every touched path's pre- and post-image.
    Plan(PatchPlan),
    /// The patch does not apply to the pre-images; git's explanation.
    DoesNotApply(String),
}

/// The paths a patch touches and, in the same order, their states in the checkout now.
pub(crate) struct Touched<'a> {
    pub(crate) paths: &'a [RepoPath],
    pub(crate) pre: &'a [PathState],
}

/// Plans the post-images of the touched paths under `patch_file`.
pub(crate) fn plan_patch(
    git: &Git,
    top: &Path,
    patch_file: &Path,
    touched: Touched<'_>,
    scratch: &Path,
) -> Result<Planned> {
    let Touched { paths, pre } = touched;
    let mut info = Vec::new();
    let mut pre_entries = Vec::with_capacity(paths.len());
    for (path, state) in paths.iter().zip(pre) {
        match state {
            PathState::Held(entry) => {
                info.extend_from_slice(format!("{} {}\t", entry.mode, entry.oid).as_bytes());
                info.extend_from_slice(&path.0);
                info.push(0);
                pre_entries.push(Some(entry.clone()));
            }
            PathState::Absent => pre_entries.push(None),
            PathState::Other => {
                return Ok(Planned::DoesNotApply(format!(
                    "{} is not a file the patch can change",
                    path.shown()
                )));
            }
        }
    }
    let index = TempFile::new(scratch, "intent-index")?;
    let on_index = git.on_index(top, index.path());
    if !info.is_empty() {
        on_index.index_info(info)?;
    }
    let applied = on_index.apply_cached(patch_file)?;
    if applied.exit_code != Some(0) {
        return Ok(Planned::DoesNotApply(applied.stderr.trim().to_string()));
    }
    let listed = on_index.staged_entries()?;
    let mut post: BTreeMap<&[u8], Entry> = Entry::listed(&listed, 1).collect();
    let changes: Vec<PathChange> = paths
        .iter()
        .zip(pre_entries)
        .map(|(path, pre)| PathChange {
            post: post.remove(path.0.as_slice()),
            path: path.clone(),
            pre,
        })
        .collect();
    Ok(Planned::Plan(PatchPlan {
        created_dirs: created_dirs(top, &changes),
        paths: changes,
    }))
}

/// The plan of a change set whose touched paths all hold their pre-image: the post-images are
/// known already (the change set's result tree).
pub(crate) fn plan_of_changes(top: &Path, changes: Vec<PathChange>) -> PatchPlan {
    PatchPlan {
        created_dirs: created_dirs(top, &changes),
        paths: changes,
    }
}

/// Every path that differs between the trees `base` and `result`, with both images, read with
/// one `diff-tree` (no renames: a path is one record). `None` when a tree is not here.
pub(crate) fn tree_changes(
    git: &Git,
    top: &Path,
    base: &str,
    result: &str,
) -> Result<Option<Vec<PathChange>>> {
    let Some(raw) = git.tree_diff_raw(top, base, result)? else {
        return Ok(None);
    };
    // Records: ":<old mode> <new mode> <old id> <new id> <status>\0<path>\0".
    let mut changes = Vec::new();
    let mut fields = split_nul(&raw);
    while let Some(meta) = fields.next() {
        let meta = String::from_utf8_lossy(meta);
        let words: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        let (Some(path), [old_mode, new_mode, old_id, new_id, _status]) =
            (fields.next(), words.as_slice())
        else {
            return Ok(None);
        };
        let image = |mode: &str, oid: &str| {
            (mode != "000000").then(|| Entry {
                mode: mode.into(),
                oid: oid.into(),
            })
        };
        changes.push(PathChange {
            path: RepoPath(path.to_vec()),
            pre: image(old_mode, old_id),
            post: image(new_mode, new_id),
        });
    }
    Ok(Some(changes))
}

/// Every path a patch a3s-iso made changes, with both images, read from its headers (no git).
/// `None` when a section does not say both: then ask the trees ([`tree_changes`]).
pub(crate) fn patch_changes(patch_file: &Path) -> Result<Option<Vec<PathChange>>> {
    let file =
        std::fs::File::open(patch_file).ctx(|| format!("cannot read {}", patch_file.display()))?;
    let sections = crate::model::patch_text::section_images(std::io::BufReader::new(file))
        .ctx(|| format!("cannot read {}", patch_file.display()))?;
    let image = |side: Option<(String, String)>| side.map(|(mode, oid)| Entry { mode, oid });
    Ok(sections.map(|sections| {
        sections
            .into_iter()
            .map(|s| PathChange {
                path: RepoPath(s.path),
                pre: image(s.old),
                post: image(s.new),
            })
            .collect()
    }))
}

/// The directories the post-images need that do not exist now, deepest first.
fn created_dirs(top: &Path, changes: &[PathChange]) -> Vec<RepoPath> {
    let mut dirs: Vec<RepoPath> = Vec::new();
    for change in changes.iter().filter(|c| c.post.is_some()) {
        let mut bytes = change.path.0.clone();
        while let Some(slash) = bytes.iter().rposition(|b| *b == b'/') {
            bytes.truncate(slash);
            let dir = RepoPath(bytes.clone());
            if dir.under(top).symlink_metadata().is_ok() || dirs.contains(&dir) {
                break;
            }
            dirs.push(dir);
        }
    }
    dirs.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
    dirs
}

/// What `tree` holds at each of `paths` (`None`: absent), by one `ls-tree`; `None`: no tree.
pub(crate) fn tree_images(
    git: &Git,
    top: &Path,
    tree: &str,
    paths: &[RepoPath],
) -> Result<Option<Vec<Option<Entry>>>> {
    let out = git.tree_entries_of(top, tree, paths.iter().map(RepoPath::as_os))?;
    if out.exit_code != Some(0) {
        return Ok(None);
    }
    let mut found: BTreeMap<&[u8], Entry> = Entry::listed(&out.stdout, 2).collect();
    Ok(Some(
        paths.iter().map(|p| found.remove(p.0.as_slice())).collect(),
    ))
}
