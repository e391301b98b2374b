//! Which remotes a change set travels through: a remote configured in the source repository
//! (its URL, credentials and transport settings are the user's own configuration), or a raw
//! URL only when the caller says so (`--allow-url`).

use std::path::Path;

use serde::Serialize;

use crate::base::error::{Error, Result};
use crate::git::Git;

/// The remote every ref name of a change set lives under there: fixed, whatever the store.
pub const CHANGES_PREFIX: &str = "refs/a3s-iso/changes/";

/// The remote a change set travels through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Remote {
    /// The remote's name (or the URL, with `--allow-url`), as git is given it.
    pub name: String,
    /// Whether it is a remote configured in the source repository (else a raw URL).
    pub configured: bool,
}

/// The ref a change set with `digest` (`sha256:<hex>`) has on a remote.
pub fn changes_ref(digest: &str) -> String {
    format!("{CHANGES_PREFIX}{}", digest_hex(digest))
}

/// The change sets `remote` holds: `(commit, ref)` for each ref under [`CHANGES_PREFIX`] that
/// names a digest.
pub(crate) fn held(git: &Git, dir: &Path, remote: &Remote) -> Result<Vec<(String, String)>> {
    let mut refs = git.ls_remote(dir, &remote.name, &[format!("{CHANGES_PREFIX}*")])?;
    refs.retain(|(_, r)| ref_digest(r).is_some());
    Ok(refs)
}

/// The digest (`sha256:<hex>`) a change set's ref names, if it names one.
pub(crate) fn ref_digest(reference: &str) -> Option<String> {
    let digest = format!("sha256:{}", reference.strip_prefix(CHANGES_PREFIX)?);
    crate::model::changeset::is_sha256_digest(&digest).then_some(digest)
}

/// The hex of a `sha256:<hex>` digest.
pub(crate) fn digest_hex(digest: &str) -> &str {
    digest.strip_prefix("sha256:").unwrap_or(digest)
}

/// The remote to use: `given`, else the current branch's upstream remote, else `origin`; a
/// URL or a path only with `allow_url`, and never what git would read as an option.
pub(crate) fn choose(
    git: &Git,
    dir: &Path,
    given: Option<&str>,
    allow_url: bool,
) -> Result<Remote> {
    let configured = git.remote_names(dir)?;
    let name = match given {
        Some(name) => name.to_string(),
        None => git
            .upstream_remote(dir)?
            .filter(|r| configured.contains(r))
            .unwrap_or_else(|| "origin".into()),
    };
    if name.is_empty() || name.starts_with('-') {
        return Err(Error::usage(format!("{name:?} is not a remote")));
    }
    let is_configured = configured.contains(&name);
    if is_configured || (allow_url && given.is_some()) {
        return Ok(Remote {
            name,
            configured: is_configured,
        });
    }
    Err(Error::from(crate::base::invalid::Invalid::NotARemote {
        name,
        configured,
    }))
}
