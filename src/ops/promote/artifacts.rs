//! The artifacts of a promote: the patch exactly as applied and `summary.json`, written before
//! anything is applied (as `planned`) and rewritten with the final outcome.
//!
//! They are reports, not records (nothing is recovered from them; the intent and the journal
//! are fsynced with their directories): each is written whole by
//! rename and never synced, so a machine crash may leave one missing, old, empty or cut short.
//! Every reader copes: `--reapply` and `diff --digest` check the patch against its digest, and
//! `log` and `gc` read a summary that does not parse as none.

use std::path::{Path, PathBuf};

use crate::base::beneath::Dir;
use crate::base::error::{IoContext, Result};
use crate::base::fsutil::record_bytes;
use crate::context::Located;
use crate::model::snapshot::Patch;
use crate::ops::promote::options::PromoteOptions;
use crate::ops::promote::outcome::{Outcome, PromoteOutcome};
use crate::store::layout::StateDir;

/// Where a promote's artifacts are.
pub(crate) struct Artifacts {
    /// The artifacts directory.
    pub(crate) dir: PathBuf,
    /// `change.patch` inside it: the file `git apply` reads.
    pub(crate) patch: PathBuf,
    /// The directory, opened without following a link: every file is written beneath it.
    handle: Dir,
}

impl Artifacts {
    /// Copies the patch and writes a `planned` summary. The default place is reached without
    /// following a link; a caller's directory is taken as named or opened.
    pub(crate) fn write(
        located: &Located,
        opts: &PromoteOptions,
        patch: &Patch,
        out: &mut PromoteOutcome,
    ) -> Result<Artifacts> {
        let (dir, handle) = match (opts.artifacts.as_deref(), &opts.artifacts_opened) {
            (Some(dir), Some(opened)) => {
                let handle = opened
                    .0
                    .dir(Path::new("."))
                    .ctx(|| format!("cannot open {}", dir.display()))?;
                (dir.to_path_buf(), handle)
            }
            (Some(dir), None) => {
                std::fs::create_dir_all(dir).ctx(|| format!("cannot create {}", dir.display()))?;
                let real =
                    std::fs::canonicalize(dir).ctx(|| format!("cannot open {}", dir.display()))?;
                let handle = Dir::open(&real).ctx(|| format!("cannot open {}", dir.display()))?;
                (dir.to_path_buf(), handle)
            }
            (None, _) => {
                let state = located.store.dir();
                let rel = Path::new(StateDir::Artifacts.as_str())
                    .join(patch.digest.trim_start_matches("sha256:"));
                std::fs::create_dir_all(state)
                    .ctx(|| format!("cannot create {}", state.display()))?;
                let handle = Dir::open(state)
                    .and_then(|state| state.create_dirs(&rel))
                    .ctx(|| format!("cannot create {}", state.join(&rel).display()))?;
                (state.join(rel), handle)
            }
        };
        let artifacts = Artifacts {
            patch: dir.join("change.patch"),
            dir,
            handle,
        };
        let mut source = std::fs::File::open(patch.file.path())
            .ctx(|| format!("cannot read {}", patch.file.path().display()))?;
        artifacts
            .handle
            .put_with(Path::new("change.patch"), |file| {
                std::io::copy(&mut source, file).map(|_| ())
            })
            .ctx(|| format!("cannot write {}", artifacts.patch.display()))?;
        out.artifacts = Some(artifacts.dir.clone());
        out.outcome = Outcome::Planned;
        artifacts.summarise(out)?;
        Ok(artifacts)
    }

    /// Writes `summary.json` with the report as it stands.
    pub(crate) fn summarise(&self, out: &PromoteOutcome) -> Result<()> {
        let bytes = record_bytes(crate::ops::promote::outcome::SCHEMA, out)?;
        self.handle
            .put(Path::new("summary.json"), &bytes)
            .ctx(|| format!("cannot write {}", self.dir.join("summary.json").display()))
    }
}
