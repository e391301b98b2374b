//! Where a run happens, claimed for it: session, isolation, new run id, lease, TMPDIR and
//! quarantine; dropped in reverse order, the lease last.

use std::path::{Path, PathBuf};

use crate::base::error::{Busy, Error, Held, IoContext, Result};
use crate::base::ids::{RunId, SessionId};
use crate::context::Context;
use crate::ops::run::quarantine::Quarantine;
use crate::ops::run::request::RunOptions;
use crate::services::evidence::Target;
use crate::store::lock::FileLock;

/// A run's place, claimed (its fields drop in this order: the lease after the directories).
pub(crate) struct Claimed {
    /// The objects the command writes, kept apart until they pass the checks.
    pub quarantine: Quarantine,
    /// The command's TMPDIR.
    pub private_tmp: PrivateTmp,
    /// The session's lease, naming the run.
    _lease: FileLock,
    /// The session, its isolation, the run's id and the release identity it records.
    pub target: Target,
}

impl Claimed {
    /// Finds the session, takes its lease for a new run id, and makes TMPDIR and quarantine.
    pub(crate) fn take(ctx: &Context, opts: &RunOptions) -> Result<Claimed> {
        let target = Target::prepare(
            ctx,
            opts.session_id.as_deref(),
            opts.run_id.as_deref(),
            opts.release_identity.as_deref(),
        )?;
        let explicit = opts.run_id.is_some() && !opts.run_id_fresh;
        let lease = lease(ctx, &target, explicit)?;
        let private_tmp = PrivateTmp::create(&target.run_id)?;
        let quarantine = Quarantine::for_isolation(
            &target.located.store,
            &target.run_id,
            &target.isolation.admin,
        )?;
        Ok(Claimed {
            quarantine,
            private_tmp,
            _lease: lease,
            target,
        })
    }

    pub(crate) fn session_id(&self) -> &SessionId {
        &self.target.record.session_id
    }

    pub(crate) fn run_id(&self) -> &RunId {
        &self.target.run_id
    }

    /// The isolation's counterpart of the caller's directory, else the isolation root.
    pub(crate) fn counterpart(&self, ctx: &Context) -> PathBuf {
        let tree = self.target.isolation.tree.as_path();
        let start = std::fs::canonicalize(&ctx.start_dir).unwrap_or_else(|_| ctx.start_dir.clone());
        if start.starts_with(tree) {
            return start;
        }
        match start
            .strip_prefix(&self.target.record.source)
            .or_else(|_| start.strip_prefix(&self.target.located.repo.toplevel))
        {
            Ok(rel) if tree.join(rel).is_dir() => tree.join(rel),
            _ => tree.to_path_buf(),
        }
    }
}

/// Takes the session's lease for the run, after checking that the run id is new.
fn lease(ctx: &Context, target: &Target, explicit: bool) -> Result<FileLock> {
    let (session_id, run_id) = (&target.record.session_id, &target.run_id);
    refuse_redo(ctx, target, explicit)?;
    target
        .located
        .store
        .try_lease_for_run(session_id, run_id)?
        .ok_or_else(|| Error::SessionBusy {
            session_id: session_id.to_string(),
            holder: match target.located.store.leasing_run(session_id) {
                Ok(None) => Busy::AnotherCommand,
                _ => Busy::AnotherRun,
            },
        })
}

/// Refuses a run id that already holds evidence: runs are never redone under the same id.
fn refuse_redo(ctx: &Context, target: &Target, explicit: bool) -> Result<()> {
    let (located, run_id) = (&target.located, &target.run_id);
    let session_id = &target.record.session_id;
    let redone = located.store.load_run_doc(session_id, run_id)?.is_some()
        || (explicit
            && crate::model::refs::SessionRefs {
                git: &ctx.git,
                dir: &located.repo.toplevel,
                ns: &located.store.refs(),
                session_id,
            }
            .run_exists(run_id)?);
    if redone {
        return Err(Error::CaptureConflict {
            session_id: session_id.to_string(),
            run_id: run_id.to_string(),
            held: Held::Evidence,
        });
    }
    Ok(())
}

/// A per-run TMPDIR, removed when the run ends.
pub(crate) struct PrivateTmp {
    path: PathBuf,
}

impl PrivateTmp {
    fn create(run_id: &RunId) -> Result<PrivateTmp> {
        use std::os::unix::fs::DirBuilderExt;
        // Named after this process, so that the next command removes it if the run is killed.
        let path = std::env::temp_dir().join(crate::base::maker::owned_name(&format!(
            "{}{run_id}",
            crate::store::scratch::PRIVATE_TMP_PREFIX
        )));
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .ctx(|| format!("cannot create {}", path.display()))?;
        Ok(PrivateTmp { path })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        // What the command left in it (links included) goes beneath the directory's handle.
        let _ = crate::base::beneath::remove_path(&self.path);
    }
}
