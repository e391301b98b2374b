//! Landlock, the second layer: writes confined to the writable paths even if a mount were
//! undone. Where the kernel has no Landlock, the mounts alone confine writes.

use std::path::PathBuf;

use landlock::{
    ABI, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, path_beneath_rules,
};

use super::sys;

/// Setting this makes a3s-iso behave as on a kernel without Landlock (for testing reports).
pub const SIMULATE_NO_LANDLOCK: &str = "A3S_ISO_SIMULATE_NO_LANDLOCK";

/// The Landlock ABI this kernel offers (none where it has none, or where simulated away).
pub fn landlock_abi() -> Option<i64> {
    if std::env::var_os(SIMULATE_NO_LANDLOCK).is_some_and(|v| !v.is_empty()) {
        return None;
    }
    sys::landlock_abi()
}

/// Confines writes with Landlock as a second layer (ABI 3 rights where the kernel has them;
/// best effort below). No Landlock at all is not an error: the mounts are the first layer.
pub(super) fn confine_writes(writable: &[PathBuf]) -> std::result::Result<(), String> {
    if landlock_abi().is_none() {
        return Ok(());
    }
    let abi = ABI::V3;
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_write(abi))
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(writable, AccessFs::from_write(abi))))
        .and_then(|r| r.restrict_self())
        .map_err(|e| format!("cannot set up Landlock: {e}"))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("Landlock is not enforced on this kernel".into());
    }
    Ok(())
}
