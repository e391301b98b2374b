//! The artifacts of a promote: the patch exactly as applied and `summary.json`, written before
//! anything is applied (as `planned`) and rewritten with the final outcome.

use std::path::{Path, PathBuf};

use super::outcome::{Outcome, PromoteOutcome};
use crate::context::Located;
use crate::error::Result;
use crate::fsutil::{copy_atomic, write_record_atomic};
use crate::snapshot::Patch;

/// Where a promote's artifacts are.
pub(super) struct Artifacts {
    /// The artifacts directory.
    pub(super) dir: PathBuf,
    /// `change.patch` inside it: the file `git apply` reads.
    pub(super) patch: PathBuf,
}

impl Artifacts {
    /// Copies the patch (streamed, file to file) and writes a `planned` summary.
    pub(super) fn write(
        located: &Located,
        chosen: Option<&Path>,
        patch: &Patch,
        out: &mut PromoteOutcome,
    ) -> Result<Artifacts> {
        let dir = chosen.map(Path::to_path_buf).unwrap_or_else(|| {
            located
                .store
                .dir()
                .join("artifacts")
                .join(patch.digest.trim_start_matches("sha256:"))
        });
        let artifacts = Artifacts {
            patch: dir.join("change.patch"),
            dir,
        };
        copy_atomic(patch.file.path(), &artifacts.patch)?;
        out.artifacts = Some(artifacts.dir.clone());
        out.outcome = Outcome::Planned;
        artifacts.summarise(out)?;
        Ok(artifacts)
    }

    /// Writes `summary.json` with the report as it stands.
    pub(super) fn summarise(&self, out: &PromoteOutcome) -> Result<()> {
        write_record_atomic(&self.dir.join("summary.json"), super::outcome::SCHEMA, out)
    }
}
