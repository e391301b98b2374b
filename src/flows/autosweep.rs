//! Reclaiming as a command starts: `bind` and `land` reclaim the repository's dead isolations
//! as `sweep` would (its decision table, its lock, a snapshot before any removal), so that
//! sessions whose owner exited without a word (a headless run) do not pile up. On unless
//! `sweep.auto = false` or `A3S_ISO_SWEEP_AUTO=0`.

use crate::services::reclaimed::Reclaimed;
use crate::workspace::context::Context;

/// Turns reclaiming off (`0`, `false`) or on (`1`, `true`) for one command, whatever the
/// configuration says.
pub const ENV: &str = "A3S_ISO_SWEEP_AUTO";

/// Whether reclaiming is on: the environment's word, else the configuration's `sweep.auto`
/// (`configured`).
pub fn enabled(configured: bool) -> bool {
    match std::env::var(ENV).as_deref().map(str::trim) {
        Ok("0" | "false" | "no" | "off") => false,
        Ok("1" | "true" | "yes" | "on") => true,
        _ => configured,
    }
}

/// Reclaims the current repository's dead isolations, sparing `spare`, when `configured` allows
/// it. What was reclaimed, and a warning when the reclaim failed: a failed reclaim never stops
/// the command (nothing was removed that was not snapshotted first).
pub fn reclaim(
    ctx: &Context,
    configured: bool,
    spare: Vec<String>,
) -> (Vec<Reclaimed>, Option<String>) {
    // A scoped caller (an MCP server) acts only on its own sessions: it reclaims nothing.
    if !enabled(configured) || ctx.is_scoped() {
        return (Vec::new(), None);
    }
    match crate::ops::sweep::reclaim_dead(ctx, spare) {
        Ok(reclaimed) => (reclaimed, None),
        Err(err) => (
            Vec::new(),
            Some(format!("dead sessions were not reclaimed: {err}")),
        ),
    }
}
