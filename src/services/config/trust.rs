//! Which repository configuration files this user approved: one record per repository (keyed
//! by the source's canonical path) in the user's data directory, holding the digest of the
//! file as approved. A file that changed since is untrusted again.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::base::error::{Error, Result};
use crate::base::fsutil::{path_key, read_json, write_record_atomic};
use crate::base::wire::wire_enum;

/// The schema of a trust record.
const TRUST_SCHEMA: &str = "a3s-iso.config-trust.v1";

wire_enum! {
    /// Whether the user approved the repository's configuration file.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
    pub enum Trust {
        /// The repository has no configuration file.
        Absent = "absent",
        /// Approved as it is now.
        Trusted = "trusted",
        /// Never approved.
        Untrusted = "untrusted",
        /// Approved once, but its content changed since.
        Changed = "changed",
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    /// The source, canonical.
    #[serde(with = "crate::base::paths::fs_path")]
    source: PathBuf,
    /// The digest of the file as approved.
    sha256: String,
}

/// Where the trust record of `source` is.
fn record_path(source: &Path) -> Result<PathBuf> {
    let canonical = std::fs::canonicalize(source).unwrap_or_else(|_| source.to_path_buf());
    crate::store::state::user_data_dir()
        .map(|dir| {
            dir.join("trusted")
                .join(format!("{}.json", path_key(&[&canonical])))
        })
        .ok_or(Error::from(crate::base::invalid::Invalid::NoTrustStore))
}

/// The trust state of the file of `source` whose digest is `sha256`.
pub(crate) fn state(source: &Path, sha256: &str) -> Result<Trust> {
    let Ok(path) = record_path(source) else {
        return Ok(Trust::Untrusted);
    };
    Ok(match read_json::<Record>(&path)? {
        Some(record) if record.sha256 == sha256 => Trust::Trusted,
        Some(_) => Trust::Changed,
        None => Trust::Untrusted,
    })
}

/// Records that this user trusts the configuration file of `source` whose digest is `sha256`.
pub fn record_trust(source: &Path, sha256: &str) -> Result<()> {
    let path = record_path(source)?;
    let canonical = std::fs::canonicalize(source).unwrap_or_else(|_| source.to_path_buf());
    write_record_atomic(
        &path,
        TRUST_SCHEMA,
        &Record {
            source: canonical,
            sha256: sha256.to_string(),
        },
    )
}
