//! `profile diff|accept|reject [NAME]`: the changes runs made to what in a profile's copies
//! makes code run or instructs the agent, held for this repository until the user accepts
//! them (see `services::profile_review`).

use std::path::PathBuf;

use serde::Serialize;

use crate::base::error::Result;
use crate::base::invalid::Invalid;
use crate::context::Context;
use crate::services::profile::{Profile, repo_key};
use crate::services::profile_copies::kept_for;
use crate::services::profile_review::PendingChange;

/// What `profile` does with the held changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileAction {
    /// Show them, changing nothing.
    Diff,
    /// Apply them to the profile's copies: the next run sees them.
    Accept,
    /// Drop them: the copies stay as accepted.
    Reject,
}

/// One profile's held changes for the repository.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileChanges {
    /// The profile's name.
    pub profile: String,
    /// Where its copies for this repository are.
    #[serde(with = "crate::base::paths::fs_path")]
    pub kept_in: PathBuf,
    /// The changes, as accepting them makes each file now.
    pub changes: Vec<PendingChange>,
}

/// What `profile` reports (`a3s-iso.profile.v1`).
#[derive(Debug, Clone, Serialize)]
pub struct ProfileOutcome {
    /// What was done.
    pub action: ProfileAction,
    /// The repository whose copies these are.
    #[serde(with = "crate::base::paths::fs_path")]
    pub source: PathBuf,
    /// Every profile asked about (all that keep copies, without a name).
    pub profiles: Vec<ProfileChanges>,
}

/// Shows, accepts or rejects the held changes of profile `name` (else of every profile).
pub fn profile(ctx: &Context, action: ProfileAction, name: Option<&str>) -> Result<ProfileOutcome> {
    let located = crate::recovery::locate(ctx)?;
    let user = crate::services::config::user_profiles()?;
    let profiles: Vec<Profile> = match name {
        Some(name) => vec![crate::services::profile::resolve(name, user.as_ref())?],
        None => crate::services::profile::all(user.as_ref())?
            .into_iter()
            .filter(|p| !p.writable.is_empty())
            .collect(),
    };
    let key = repo_key(&located.repo.common_dir);
    let mut out = Vec::new();
    for profile in profiles {
        let kept = kept_for(&profile.name, &key).ok_or_else(|| Invalid::ProfileNeedsDataDir {
            name: profile.name.clone(),
        })?;
        let changes = match action {
            ProfileAction::Diff => crate::services::profile_review::pending(&kept, &profile)?,
            ProfileAction::Accept => crate::services::profile_review::accept(&kept, &profile)?,
            ProfileAction::Reject => crate::services::profile_review::reject(&kept, &profile)?,
        };
        out.push(ProfileChanges {
            profile: profile.name.clone(),
            kept_in: kept.home(),
            changes,
        });
    }
    Ok(ProfileOutcome {
        action,
        source: located.repo.toplevel.clone(),
        profiles: out,
    })
}
