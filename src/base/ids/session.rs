//! [`SessionId`] and [`RunId`]: the ids a user (or a3s-iso) gives sessions and runs, checked
//! by [`validate`] wherever they come in, since they become file names and ref components.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::base::error::Result;
use crate::base::ids::validate;

macro_rules! checked_id {
    ($name:ident, $prefix:literal) => {
        impl $name {
            /// `id` if [`validate`] accepts it (`invalid_id` naming the reason if not).
            pub fn new(id: impl Into<String>) -> Result<$name> {
                let id = id.into();
                validate(&id)?;
                Ok($name(id))
            }

            /// A fresh id (see [`crate::base::ids::generate`]).
            pub(crate) fn generate() -> $name {
                $name(crate::base::ids::generate($prefix))
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
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
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SessionId(String);

string_id!(SessionId);
checked_id!(SessionId, "s");

/// A run's id, unique within its session.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
