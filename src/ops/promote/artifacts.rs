//! The artifacts of a promote: the patch exactly as applied and `summary.json`, written before
//! anything is applied (as `planned`) and rewritten with the final outcome.
//!
//! They are reports, not records: nothing is recovered from them (the intent and the journal
//! are fsynced with their directories; `--reapply` checks a stored patch against its digest
//! and makes it again from the recorded trees when it is gone). So each is written whole by
//! rename with its contents synced, never half of one after a crash, but its directory is not
//! synced: a crash of the machine may leave the earlier summary, or no artifact at all.

use std::path::{Path, PathBuf};

use crate::base::beneath::Dir;
use crate::base::error::{IoContext, Result};
use crate::base::fsutil::record_bytes;
use crate::model::snapshot::Patch;
use crate::ops::promote::outcome::{Outcome, PromoteOutcome};
use crate::store::layout::StateDir;
use crate::workspace::context::Located;

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
    /// Copies the patch (streamed, file to file) and writes a `planned` summary. The default
    /// place, `<state>/artifacts/<digest>`, is reached without following a link (one found
    /// there is refused); a directory the caller chose is taken as the caller named it.
    pub(crate) fn write(
        located: &Located,
        chosen: Option<&Path>,
        patch: &Patch,
        out: &mut PromoteOutcome,
    ) -> Result<Artifacts> {
        let (dir, handle) = match chosen {
            Some(dir) => {
                std::fs::create_dir_all(dir).ctx(|| format!("cannot create {}", dir.display()))?;
                let real =
                    std::fs::canonicalize(dir).ctx(|| format!("cannot open {}", dir.display()))?;
                let handle = Dir::open(&real).ctx(|| format!("cannot open {}", dir.display()))?;
                (dir.to_path_buf(), handle)
            }
            None => {
                let state = located.store.dir();
                let rel = Path::new(StateDir::Artifacts.name())
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
            .replace_report_with(Path::new("change.patch"), |file| {
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
            .replace_report(Path::new("summary.json"), &bytes)
            .ctx(|| format!("cannot write {}", self.dir.join("summary.json").display()))
    }
}
