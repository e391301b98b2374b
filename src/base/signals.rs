//! Interrupts a3s-iso defers: while registered, SIGINT, SIGTERM and SIGHUP only set a flag, so
//! a step that must finish (applying a patch and journaling it, a replay and the restore of the
//! user's WIP, waiting for a run's command) is not cut in half. Dropping restores the defaults.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use signal_hook::SigId;

use crate::base::error::{Error, Result};

/// SIGINT, SIGTERM and SIGHUP held back while this lives.
pub(crate) struct Signals {
    flags: Vec<(i32, Arc<AtomicBool>, SigId)>,
}

impl Signals {
    /// Starts deferring the interrupts.
    pub(crate) fn register() -> Result<Signals> {
        let mut flags = Vec::new();
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            let flag = Arc::new(AtomicBool::new(false));
            let id = signal_hook::flag::register(signal, flag.clone())
                .map_err(|e| Error::io("cannot install a signal handler", e))?;
            flags.push((signal, flag, id));
        }
        Ok(Signals { flags })
    }

    /// The first signal received since the last call, if any (and forgets it).
    pub(crate) fn take(&self) -> Option<i32> {
        self.flags
            .iter()
            .find(|(_, flag, _)| flag.swap(false, Ordering::SeqCst))
            .map(|(signal, _, _)| *signal)
    }

    /// Whether any signal arrived (without forgetting it).
    pub(crate) fn received(&self) -> Option<i32> {
        self.flags
            .iter()
            .find(|(_, flag, _)| flag.load(Ordering::SeqCst))
            .map(|(signal, _, _)| *signal)
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        for (_, _, id) in self.flags.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}
