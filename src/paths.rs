//! Paths as git holds them: bytes. In JSON a path is `{"text": "…"}` when it is UTF-8 and
//! `{"bytes_base64": "…"}` (standard base64 with padding) otherwise, so that any path survives
//! the round trip exactly (file names on Linux need not be UTF-8).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use base64::Engine;
use serde::{Deserialize, Serialize};

/// A path inside the checkout, relative to its top level, as the bytes git holds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "PathText", into = "PathText")]
pub struct RepoPath(pub Vec<u8>);

/// How a path is written in JSON.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum PathText {
    Text(String),
    BytesBase64(String),
}

impl From<RepoPath> for PathText {
    fn from(path: RepoPath) -> PathText {
        match String::from_utf8(path.0) {
            Ok(text) => PathText::Text(text),
            Err(e) => PathText::BytesBase64(
                base64::engine::general_purpose::STANDARD.encode(e.into_bytes()),
            ),
        }
    }
}

impl TryFrom<PathText> for RepoPath {
    type Error = String;

    fn try_from(text: PathText) -> std::result::Result<RepoPath, String> {
        match text {
            PathText::Text(text) => Ok(RepoPath(text.into_bytes())),
            PathText::BytesBase64(b64) => base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map(RepoPath)
                .map_err(|e| format!("a path's bytes_base64 is not base64: {e}")),
        }
    }
}

impl RepoPath {
    /// The path as an OS string (relative).
    pub fn as_os(&self) -> &OsStr {
        OsStr::from_bytes(&self.0)
    }

    /// Where the path is in the checkout at `top`.
    pub fn under(&self, top: &Path) -> PathBuf {
        top.join(self.as_os())
    }

    /// The path for people to read (invalid UTF-8 replaced).
    pub fn shown(&self) -> String {
        String::from_utf8_lossy(&self.0).into_owned()
    }
}

impl std::fmt::Display for RepoPath {
    /// The path for people to read (invalid UTF-8 replaced).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.0))
    }
}

/// A file-system path as a state record stores it: a string when it is UTF-8 (as every record
/// always did), else `{"bytes_base64": "…"}`, so that a directory name that is not UTF-8
/// survives the round trip. For `#[serde(with = "…")]`.
pub(crate) mod os_path {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::path::{Path, PathBuf};

    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Stored {
        Text(String),
        Bytes { bytes_base64: String },
    }

    fn stored(path: &Path) -> Stored {
        match path.to_str() {
            Some(text) => Stored::Text(text.to_string()),
            None => Stored::Bytes {
                bytes_base64: base64::engine::general_purpose::STANDARD
                    .encode(path.as_os_str().as_bytes()),
            },
        }
    }

    fn path<E: serde::de::Error>(stored: Stored) -> Result<PathBuf, E> {
        match stored {
            Stored::Text(text) => Ok(PathBuf::from(text)),
            Stored::Bytes { bytes_base64 } => base64::engine::general_purpose::STANDARD
                .decode(bytes_base64)
                .map(|bytes| PathBuf::from(OsStr::from_bytes(&bytes)))
                .map_err(E::custom),
        }
    }

    /// Writes a path.
    pub(crate) fn serialize<S: Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
        stored(path).serialize(s)
    }

    /// Reads a path.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        path(Stored::deserialize(d)?)
    }

    /// The same for an optional path (`null` when absent).
    pub(crate) mod opt {
        use super::*;

        /// Writes an optional path.
        pub(crate) fn serialize<S: Serializer>(
            path: &Option<PathBuf>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            path.as_deref().map(stored).serialize(s)
        }

        /// Reads an optional path.
        pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Option<PathBuf>, D::Error> {
            Option::<Stored>::deserialize(d)?.map(path).transpose()
        }
    }
}
