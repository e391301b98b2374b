//! Git object ids as a3s-iso keeps them: [`TreeId`] and [`CommitId`], 40 (SHA-1) or 64
//! (SHA-256) lowercase hex digits, checked where they come in.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::base::error::{Error, Result};

/// The prefix of a tree id in JSON: `git-tree:<hex>` (commit ids stay plain hex).
pub const TREE_PREFIX: &str = "git-tree:";

/// 40 or 64 lowercase hex digits: a SHA-1 or SHA-256 object id.
pub(crate) fn is_object_hex(text: &str) -> bool {
    matches!(text.len(), 40 | 64)
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The bare object id of a tree id in either form.
fn bare_tree(text: &str) -> &str {
    text.strip_prefix(TREE_PREFIX).unwrap_or(text)
}

/// What both object ids share: their check.
macro_rules! object_id {
    ($name:ident, $what:literal) => {
        impl $name {
            /// An id from bare hex, as git prints it.
            pub fn new(hex: impl AsRef<str>) -> Result<$name> {
                let hex = hex.as_ref();
                $name::checked(hex).ok_or_else(|| $name::refused(hex))
            }

            /// `hex` if it is 40 or 64 lowercase hex digits.
            fn checked(hex: &str) -> Option<$name> {
                is_object_hex(hex).then(|| $name(hex.to_string()))
            }

            fn refused(text: &str) -> Error {
                Error::internal(format!(
                    "{text:?} is not a {} id (40 or 64 lowercase hex digits)",
                    $what
                ))
            }
        }
    };
}

/// A tree's object id. Held and shown as bare hex (what git is given); written to JSON as
/// `git-tree:<hex>` and read in either form (records written before the prefix are bare).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TreeId(String);

string_id!(TreeId);
object_id!(TreeId, "tree");

impl TreeId {
    /// A tree id in either form: `git-tree:<hex>` or bare hex.
    pub fn parse(text: &str) -> Result<TreeId> {
        TreeId::checked(bare_tree(text)).ok_or_else(|| TreeId::refused(text))
    }

    /// The JSON form: `git-tree:<hex>`.
    pub fn field(&self) -> String {
        format!("{TREE_PREFIX}{}", self.0)
    }
}

impl Serialize for TreeId {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.field())
    }
}

impl<'de> Deserialize<'de> for TreeId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<TreeId, D::Error> {
        let text = String::deserialize(d)?;
        TreeId::checked(bare_tree(&text)).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "{text:?} is not git-tree: and 40 or 64 lowercase hex digits"
            ))
        })
    }
}

/// A commit's object id, held, shown and written as bare hex.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct CommitId(String);

string_id!(CommitId);
object_id!(CommitId, "commit");

impl<'de> Deserialize<'de> for CommitId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<CommitId, D::Error> {
        let text = String::deserialize(d)?;
        CommitId::checked(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("{text:?} is not 40 or 64 lowercase hex digits"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA1: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
    const SHA256: &str = "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321";

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Trees {
        tree: TreeId,
        maybe: Option<TreeId>,
    }

    #[test]
    fn tree_ids_take_both_object_formats_and_nothing_else() {
        for hex in [SHA1, SHA256] {
            let tree = TreeId::new(hex).unwrap();
            assert_eq!((tree.as_str(), tree.to_string()), (hex, hex.to_string()));
            assert_eq!(format!("{tree:?}"), format!("{hex:?}"));
            assert_eq!(tree.field(), format!("git-tree:{hex}"));
            assert_eq!(TreeId::parse(&tree.field()).unwrap(), tree);
            assert_eq!(TreeId::parse(hex).unwrap(), tree);
        }
        let upper = SHA1.to_ascii_uppercase();
        for bad in ["", "xyz", &SHA1[1..], &upper, &format!("git-tree:{SHA1}")] {
            assert!(TreeId::new(bad).is_err(), "{bad:?}");
        }
        assert!(TreeId::parse("git-tree:xyz").is_err());
    }

    #[test]
    fn tree_ids_are_written_prefixed_and_read_in_either_form() {
        let trees = Trees {
            tree: TreeId::new(SHA1).unwrap(),
            maybe: None,
        };
        let text = serde_json::to_string(&trees).unwrap();
        assert_eq!(
            text,
            format!(r#"{{"tree":"git-tree:{SHA1}","maybe":null}}"#)
        );
        assert_eq!(serde_json::from_str::<Trees>(&text).unwrap(), trees);
        let old = format!(r#"{{"tree":"{SHA1}","maybe":"{SHA1}"}}"#);
        let read: Trees = serde_json::from_str(&old).unwrap();
        assert_eq!(read.maybe.as_ref(), Some(&trees.tree));
        let again = serde_json::to_value(&read).unwrap();
        assert_eq!(again["maybe"], format!("git-tree:{SHA1}"));
        let bad = r#"{"tree":"git-tree:xyz","maybe":null}"#;
        assert!(serde_json::from_str::<Trees>(bad).is_err());
    }

    #[test]
    fn commit_ids_are_plain_hex_both_ways() {
        for hex in [SHA1, SHA256] {
            let commit = CommitId::new(hex).unwrap();
            assert_eq!(commit, *hex);
            let text = serde_json::to_string(&commit).unwrap();
            assert_eq!(text, format!("\"{hex}\""));
            assert_eq!(serde_json::from_str::<CommitId>(&text).unwrap(), commit);
        }
        for bad in ["", "HEAD", &SHA1[2..], &format!("git-tree:{SHA1}")] {
            assert!(CommitId::new(bad).is_err(), "{bad:?}");
            assert!(serde_json::from_value::<CommitId>(bad.into()).is_err());
        }
    }
}
