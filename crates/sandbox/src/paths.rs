//! Paths in the spec as their exact bytes: the spec goes from `run` to its own helper as
//! JSON, and a path need not be UTF-8. `#[serde(with = "crate::paths::fs_path")]` (and
//! `fs_path_list`, `fs_path_opt`) write a path as the array of its bytes.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

fn bytes(path: &Path) -> &[u8] {
    path.as_os_str().as_bytes()
}

fn path(bytes: Vec<u8>) -> PathBuf {
    PathBuf::from(OsString::from_vec(bytes))
}

/// One path.
pub mod fs_path {
    use super::*;

    /// Writes the path's bytes.
    pub fn serialize<S: Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
        bytes(p).serialize(s)
    }

    /// Reads a path's bytes.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        Vec::<u8>::deserialize(d).map(path)
    }
}

/// A list of paths.
pub mod fs_path_list {
    use super::*;

    /// Writes each path's bytes.
    pub fn serialize<S: Serializer>(paths: &[PathBuf], s: S) -> Result<S::Ok, S::Error> {
        let all: Vec<&[u8]> = paths.iter().map(|p| bytes(p)).collect();
        all.serialize(s)
    }

    /// Reads each path's bytes.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<PathBuf>, D::Error> {
        Vec::<Vec<u8>>::deserialize(d).map(|all| all.into_iter().map(path).collect())
    }
}

/// A path or none.
pub mod fs_path_opt {
    use super::*;

    /// Writes `null` or the path's bytes.
    pub fn serialize<S: Serializer>(p: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
        p.as_deref().map(bytes).serialize(s)
    }

    /// Reads `null` or a path's bytes.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<PathBuf>, D::Error> {
        Option::<Vec<u8>>::deserialize(d).map(|p| p.map(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Holder {
        #[serde(with = "fs_path")]
        one: PathBuf,
        #[serde(with = "fs_path_list")]
        many: Vec<PathBuf>,
        #[serde(with = "fs_path_opt")]
        maybe: Option<PathBuf>,
    }

    #[test]
    fn a_path_that_is_not_utf8_comes_back_byte_for_byte() {
        let odd = path(b"/tmp/a\xffb".to_vec());
        let held = Holder {
            one: odd.clone(),
            many: vec![odd.clone(), PathBuf::from("/x")],
            maybe: Some(odd),
        };
        let json = serde_json::to_string(&held).unwrap();
        assert_eq!(serde_json::from_str::<Holder>(&json).unwrap(), held);
    }
}
