//! [`SessionId`] and [`RunId`]: the ids a user (or a3s-iso) gives sessions and runs, checked
//! by [`validate`] wherever they come in, since they become file names and ref components.

use serde::{Deserialize, Deserializer, Serialize};

use crate::base::error::{Error, Result};

/// The longest id accepted.
pub(crate) const MAX_ID_LEN: usize = 128;

/// Checks an id against `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`, without `..`, not ending in `.`
/// or `.lock`. Ids become file names and ref components, so nothing else is accepted.
pub(crate) fn validate(id: &str) -> Result<()> {
    let reason = if id.is_empty() {
        "it is empty"
    } else if id.len() > MAX_ID_LEN {
        "it is longer than 128 characters"
    } else if !id.as_bytes()[0].is_ascii_alphanumeric() {
        "it must start with a letter or a digit"
    } else if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        "only letters, digits, '.', '_' and '-' are allowed"
    } else if id.contains("..") {
        "it must not contain '..'"
    } else if id.ends_with('.') || id.ends_with(".lock") {
        "it must not end in '.' or '.lock'"
    } else {
        return Ok(());
    };
    Err(Error::InvalidId {
        id: id.to_string(),
        reason: reason.to_string(),
    })
}

/// A fresh id: `<prefix>-<ms since epoch, hex>-<random hex>`, so ids sort by creation time.
pub(crate) fn generate(prefix: &str) -> String {
    let mut random = [0u8; 4];
    if let Ok(mut file) = std::fs::File::open("/dev/urandom") {
        use std::io::Read;
        let _ = file.read_exact(&mut random);
    }
    if random == [0; 4] {
        // No urandom: fall back on what differs between two calls in one millisecond.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        random = (nanos ^ std::process::id().rotate_left(16)).to_be_bytes();
    }
    format!(
        "{prefix}-{:011x}-{}",
        crate::base::fsutil::now_ms(),
        hex::encode(random)
    )
}

macro_rules! checked_id {
    ($name:ident, $prefix:literal) => {
        impl $name {
            /// `id` if [`validate`] accepts it (`invalid_id` naming the reason if not).
            pub fn new(id: impl Into<String>) -> Result<$name> {
                let id = id.into();
                validate(&id)?;
                Ok($name(id))
            }

            /// A fresh id (see [`generate`]).
            pub(crate) fn generate() -> $name {
                $name(generate($prefix))
            }
        }

        impl TryFrom<String> for $name {
            type Error = Error;
            fn try_from(id: String) -> Result<$name> {
                $name::new(id)
            }
        }

        // A checked id is one path component: never empty, no '/', no '..'.
        impl AsRef<std::path::Path> for $name {
            fn as_ref(&self) -> &std::path::Path {
                std::path::Path::new(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<$name, D::Error> {
                $name::new(String::deserialize(d)?).map_err(serde::de::Error::custom)
            }
        }
    };
}

/// A session's id.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct SessionId(String);

string_id!(SessionId);
checked_id!(SessionId, "s");

/// A run's id, unique within its session.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct RunId(String);

string_id!(RunId);
checked_id!(RunId, "r");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::error::ErrorCode;

    #[test]
    fn ids_are_checked_as_validate_checks_them() {
        for id in ["task-42", "A.b_c-d", "0"] {
            assert_eq!(SessionId::new(id).unwrap(), *id);
            assert_eq!(RunId::new(id).unwrap().as_str(), id);
        }
        for bad in ["", "../x", "x.lock", "a b"] {
            let err = SessionId::new(bad).unwrap_err();
            assert_eq!(err.code(), ErrorCode::InvalidId);
            assert_eq!(err.to_string(), validate(bad).unwrap_err().to_string());
            assert!(RunId::new(bad).is_err());
        }
        assert!(SessionId::generate().starts_with("s-"));
        assert!(RunId::generate().starts_with("r-"));
    }

    #[test]
    fn ids_are_written_as_they_are_and_checked_when_read() {
        let id = SessionId::new("task-42").unwrap();
        let text = serde_json::to_string(&id).unwrap();
        assert_eq!(text, "\"task-42\"");
        assert_eq!(format!("{id:?} {id}"), "\"task-42\" task-42");
        assert_eq!(serde_json::from_str::<SessionId>(&text).unwrap(), id);
        assert_eq!(serde_json::from_str::<RunId>("\"r-1\"").unwrap(), "r-1");
        assert!(serde_json::from_str::<SessionId>("\"../x\"").is_err());
        assert!(serde_json::from_str::<RunId>("\"\"").is_err());
    }
}
