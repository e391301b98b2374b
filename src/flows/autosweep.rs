//! Reclaiming as a command starts: `bind` and `land` reclaim dead owners' sessions as `sweep`
//! would, so those of headless runs do not pile up. On unless `sweep.auto = false` or
//! `A3S_ISO_SWEEP_AUTO=0`, like git's `gc.auto`.

use crate::base::ids::SessionId;
use crate::base::warning::{LandWarning, Warning};
use crate::context::{Context, Located};
use crate::services::reclaimed::Reclaimed;

/// Turns reclaiming off (`0`, `false`) or on (`1`, `true`) for one command, whatever the config.
pub const ENV: &str = "A3S_ISO_SWEEP_AUTO";

/// Whether reclaiming is on: the environment's word, else `configured` (`sweep.auto`).
pub fn enabled(configured: bool) -> bool {
    match std::env::var(ENV).as_deref().map(str::trim) {
        Ok("0" | "false" | "no" | "off") => false,
        Ok("1" | "true" | "yes" | "on") => true,
        _ => configured,
    }
}

/// Reclaims the dead-owner sessions the caller may act on, never one `spare` names; a failure
/// only warns (nothing is removed that was not snapshotted first).
pub fn reclaim(
    ctx: &Context,
    located: &Located,
    configured: bool,
    spare: &dyn Fn(&SessionId) -> bool,
) -> (Vec<Reclaimed>, Option<Warning>) {
    if !enabled(configured) {
        return (Vec::new(), None);
    }
    match crate::ops::sweep::reclaim_dead(ctx, located, spare) {
        Ok(reclaimed) => (reclaimed, None),
        Err(err) => {
            let why = err.to_string();
            (Vec::new(), Some(LandWarning::NotReclaimed { why }.into()))
        }
    }
}
