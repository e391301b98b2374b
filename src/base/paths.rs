//! Paths as git holds them: bytes. In JSON every path, in a repository or on disk, is a string
//! when it is UTF-8 and `{"bytes_base64": "…"}` (standard base64 with padding) otherwise, so
//! that any path survives the round trip exactly (file names on Linux need not be UTF-8).

use std::ffi::OsStr;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use base64::Engine;
use serde::{Deserialize, Serialize};

/// A path inside the checkout, relative to its top level, as the bytes git holds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "PathText", into = "PathText")]
pub struct RepoPath(pub Vec<u8>);

/// How a path is written in JSON ([`FsPathText`]); older records' `{"text": "…"}` is still read.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum PathText {
    Plain(FsPathText),
    Tagged(TaggedText),
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaggedText {
    text: String,
}

impl From<RepoPath> for PathText {
    fn from(path: RepoPath) -> PathText {
        PathText::Plain(fs_path_text(Path::new(path.as_os())))
    }
}

impl TryFrom<PathText> for RepoPath {
    type Error = String;

    fn try_from(text: PathText) -> std::result::Result<RepoPath, String> {
        match text {
            PathText::Tagged(TaggedText { text }) => Ok(RepoPath(text.into_bytes())),
            PathText::Plain(plain) => {
                fs_path_from(plain).map(|p| RepoPath(p.into_os_string().into_vec()))
            }
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
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.0))
    }
}

/// Paths git printed one per line (`rev-parse` has no `-z` for them), as bytes: a repository
/// may live under a directory whose name is not UTF-8.
pub(crate) fn path_lines(out: &[u8]) -> Vec<PathBuf> {
    out.strip_suffix(b"\n")
        .unwrap_or(out)
        .split(|b| *b == b'\n')
        .map(|line| PathBuf::from(OsStr::from_bytes(line)))
        .collect()
}

/// A file-system path as a3s-iso writes it in records and JSON output: a string when it is
/// UTF-8 (almost always), else `{"bytes_base64": "…"}`.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum FsPathText {
    Text(String),
    Bytes(PathBytes),
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PathBytes {
    bytes_base64: String,
}

fn fs_path_text(path: &Path) -> FsPathText {
    match path.to_str() {
        Some(text) => FsPathText::Text(text.to_string()),
        None => FsPathText::Bytes(PathBytes {
            bytes_base64: base64::engine::general_purpose::STANDARD
                .encode(path.as_os_str().as_bytes()),
        }),
    }
}

fn fs_path_from(text: FsPathText) -> std::result::Result<PathBuf, String> {
    match text {
        FsPathText::Text(text) => Ok(PathBuf::from(text)),
        FsPathText::Bytes(PathBytes { bytes_base64 }) => base64::engine::general_purpose::STANDARD
            .decode(bytes_base64)
            .map(|bytes| PathBuf::from(OsStr::from_bytes(&bytes)))
            .map_err(|e| format!("a path's bytes_base64 is not base64: {e}")),
    }
}

/// `#[serde(with = "crate::base::paths::fs_path")]` for a `PathBuf` (see [`FsPathText`]).
pub mod fs_path {
    use std::path::{Path, PathBuf};

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::base::paths::{FsPathText, fs_path_from, fs_path_text};

    /// Writes the path as a string, or as its bytes when it is not UTF-8.
    pub fn serialize<S: Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
        fs_path_text(path).serialize(s)
    }

    /// Reads either form.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        fs_path_from(FsPathText::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

/// `#[serde(with = "crate::base::paths::fs_path_opt")]` for an `Option<PathBuf>` (`null` for none).
pub mod fs_path_opt {
    use std::path::PathBuf;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::base::paths::{FsPathText, fs_path_from, fs_path_text};

    /// Writes `null` or the path as [`crate::base::paths::fs_path`] does.
    pub fn serialize<S: Serializer>(path: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
        path.as_deref().map(fs_path_text).serialize(s)
    }

    /// Reads `null` or either form of a path.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<PathBuf>, D::Error> {
        Option::<FsPathText>::deserialize(d)?
            .map(fs_path_from)
            .transpose()
            .map_err(serde::de::Error::custom)
    }
}

/// `#[serde(with = "crate::base::paths::fs_path_list")]` for a `Vec<PathBuf>`, or a command's
/// arguments (`Vec<OsString>`): each written as a path is (see [`FsPathText`]).
pub mod fs_path_list {
    use std::path::{Path, PathBuf};

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::base::paths::{FsPathText, fs_path_from, fs_path_text};

    /// Writes each path as [`crate::base::paths::fs_path`] does.
    pub fn serialize<P: AsRef<Path>, S: Serializer>(paths: &[P], s: S) -> Result<S::Ok, S::Error> {
        let texts: Vec<FsPathText> = paths.iter().map(|p| fs_path_text(p.as_ref())).collect();
        texts.serialize(s)
    }

    /// Reads a list of paths in either form.
    pub fn deserialize<'de, T: From<PathBuf>, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<T>, D::Error> {
        Vec::<FsPathText>::deserialize(d)?
            .into_iter()
            .map(|text| fs_path_from(text).map(T::from))
            .collect::<Result<_, _>>()
            .map_err(serde::de::Error::custom)
    }
}

/// Whether the repository path `path` names an attributes file (`.gitattributes`).
pub(crate) fn is_attributes_file(path: &[u8]) -> bool {
    path.rsplit(|b| *b == b'/').next() == Some(b".gitattributes".as_slice())
}
