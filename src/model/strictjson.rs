//! Strict JSON: finding a key that an object holds twice. serde_json keeps the last of
//! duplicate keys without a word (into a `Value` as into a struct), so a document could carry
//! one value for a strict reader and another for a lenient one; the change-set format rejects
//! such documents outright.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;

use serde::Deserializer;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// The path of the first key (in document order) that its object holds more than once, as
/// `identity.session_id` (array elements as `[n]`); `None` when every key is unique or when the
/// bytes are not JSON at all (that is for the parser to report).
pub(crate) fn first_duplicate_key(bytes: &[u8]) -> Option<String> {
    let found = RefCell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let _ = Walk {
        path: String::new(),
        found: &found,
    }
    .deserialize(&mut de);
    found.into_inner()
}

/// Walks one value at `path`, recording the first duplicate key into `found`.
struct Walk<'a> {
    path: String,
    found: &'a RefCell<Option<String>>,
}

impl Walk<'_> {
    fn child(&self, name: &str) -> String {
        match self.path.is_empty() {
            true => name.to_string(),
            false if name.starts_with('[') => format!("{}{name}", self.path),
            false => format!("{}.{name}", self.path),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        loop {
            let walk = Walk {
                path: self.child(&format!("[{i}]")),
                found: self.found,
            };
            if seq.next_element_seed(walk)?.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        // Keys are unescaped by the parser: `"a"` and `"\u0061"` are the same key.
        while let Some(key) = map.next_key::<String>()? {
            let path = self.child(&key);
            if !seen.insert(key) {
                *self.found.borrow_mut() = Some(path);
                // Stop at the first one: the rest of the document does not matter.
                return Err(de::Error::custom("duplicate key"));
            }
            map.next_value_seed(Walk {
                path,
                found: self.found,
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::model::strictjson::first_duplicate_key;

    #[test]
    fn finds_the_first_duplicate_at_any_depth() {
        assert_eq!(first_duplicate_key(br#"{"a":1,"b":{"c":1}}"#), None);
        assert_eq!(
            first_duplicate_key(br#"{"a":1,"a":2}"#),
            Some("a".to_string())
        );
        assert_eq!(
            first_duplicate_key(br#"{"a":1,"b":{"c":1,"\u0063":2}}"#),
            Some("b.c".to_string())
        );
        assert_eq!(
            first_duplicate_key(br#"{"l":[{"x":1},{"x":1,"x":2}]}"#),
            Some("l[1].x".to_string())
        );
        assert_eq!(first_duplicate_key(b"not json"), None);
    }
}
