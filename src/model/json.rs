//! A JSON value whose objects keep their members in the order of the file (and every member,
//! a repeated key included): a settings file a3s-iso adds to is written back with everything
//! else where it was, and a key an object holds twice can be found. serde_json keeps the last
//! of duplicate keys without a word (into a `Value` as into a struct), so a document could carry
//! one value for a strict reader and another for a lenient one; the change-set format rejects
//! such documents outright.

use std::collections::HashSet;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, Serializer};

/// One JSON value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    /// Members in file order.
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The value of `key` (its last occurrence, as JavaScript's `JSON.parse` keeps it).
    pub(crate) fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// The path of the first key (in document order) that its object holds more than once, as
/// `identity.session_id` (array elements as `[n]`); `None` when every key is unique or when the
/// bytes are not JSON at all (that is for the parser to report).
pub(crate) fn first_duplicate_key(bytes: &[u8]) -> Option<String> {
    serde_json::from_slice::<Json>(bytes)
        .ok()?
        .first_duplicate(String::new())
}

impl Json {
    /// The path of the first duplicate key in this value, found at `path`.
    fn first_duplicate(&self, path: String) -> Option<String> {
        let child = |name: &str| match path.is_empty() {
            true => name.to_string(),
            false if name.starts_with('[') => format!("{path}{name}"),
            false => format!("{path}.{name}"),
        };
        match self {
            Json::Array(items) => (items.iter().enumerate())
                .find_map(|(i, item)| item.first_duplicate(child(&format!("[{i}]")))),
            Json::Object(members) => {
                let mut seen = HashSet::new();
                // Keys are unescaped by the parser: `"a"` and `"\u0061"` are the same key.
                members
                    .iter()
                    .find_map(|(key, value)| match seen.insert(key) {
                        true => value.first_duplicate(child(key)),
                        false => Some(child(key)),
                    })
            }
            _ => None,
        }
    }
}

/// The value of `key` in `members` (its last occurrence), inserted at the end as `default`
/// when it is missing.
pub(crate) fn member_or_insert<'a>(
    members: &'a mut Vec<(String, Json)>,
    key: &str,
    default: Json,
) -> &'a mut Json {
    let at = match members.iter().rposition(|(k, _)| k == key) {
        Some(at) => at,
        None => {
            members.push((key.to_string(), default));
            members.len() - 1
        }
    };
    &mut members[at].1
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Number(n) => n.serialize(s),
            Json::String(text) => s.serialize_str(text),
            Json::Array(items) => s.collect_seq(items),
            // Every member, a repeated key included.
            Json::Object(members) => s.collect_map(members.iter().map(|(k, v)| (k, v))),
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Json, E> {
        serde_json::Number::from_f64(n)
            .map(Json::Number)
            .ok_or_else(|| E::custom("a number JSON cannot hold"))
    }

    fn visit_str<E>(self, text: &str) -> Result<Json, E> {
        Ok(Json::String(text.to_string()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut members = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Json>()? {
            members.push((key, value));
        }
        Ok(Json::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use crate::model::json::*;

    #[test]
    fn order_and_values_survive_a_round_trip() {
        let text = r#"{"z":1,"a":[true,null,-2,1.5,"s"],"m":{"y":{},"b":[]},"z":2}"#;
        let value: Json = serde_json::from_str(text).unwrap();
        assert_eq!(serde_json::to_string(&value).unwrap(), text);
        assert_eq!(value.get("z"), Some(&Json::Number(2.into())));
    }

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
