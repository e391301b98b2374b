//! [`Digest`]: `sha256:` and 64 lowercase hex digits, the name of a change set's patch.

use serde::{Deserialize, Deserializer, Serialize};

use crate::base::error::{Error, Result};
use crate::base::ids::object::is_object_hex;

/// The prefix of every digest.
const PREFIX: &str = "sha256:";

/// `sha256:` followed by 64 lowercase hex digits.
pub(crate) fn is_sha256_digest(text: &str) -> bool {
    let hex = text.strip_prefix(PREFIX);
    hex.is_some_and(|hex| hex.len() == 64 && is_object_hex(hex))
}

/// A SHA-256 digest as a3s-iso writes it: `sha256:<64 lowercase hex>`, held, shown and
/// written in that form.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Digest(String);

string_id!(Digest);

impl Digest {
    /// `text` if it is `sha256:` and 64 lowercase hex digits.
    pub fn new(text: impl AsRef<str>) -> Result<Digest> {
        let text = text.as_ref();
        match is_sha256_digest(text) {
            true => Ok(Digest(text.to_string())),
            false => Err(Error::internal(format!(
                "{text:?} is not sha256: and 64 lowercase hex digits"
            ))),
        }
    }

    /// The 64 hex digits, without `sha256:`.
    pub fn hex(&self) -> &str {
        &self.0[PREFIX.len()..]
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Digest, D::Error> {
        let text = String::deserialize(d)?;
        match is_sha256_digest(&text) {
            true => Ok(Digest(text)),
            false => Err(serde::de::Error::custom(format!(
                "{text:?} is not sha256: and 64 lowercase hex digits"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEX: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn a_digest_is_sha256_and_64_lowercase_hex_digits() {
        let digest = Digest::new(format!("sha256:{HEX}")).unwrap();
        assert_eq!(digest.hex(), HEX);
        assert_eq!(digest.to_string(), format!("sha256:{HEX}"));
        assert_eq!(format!("{digest:?}"), format!("\"sha256:{HEX}\""));
        assert_eq!(digest, *format!("sha256:{HEX}").as_str());
        let upper = format!("sha256:{}", HEX.to_ascii_uppercase());
        let short = format!("sha256:{}", &HEX[1..]);
        let other = format!("sha512:{HEX}");
        for bad in ["", HEX, &upper, &short, &other] {
            assert!(Digest::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_digest_is_written_as_it_is_and_checked_when_read() {
        let digest = Digest::new(format!("sha256:{HEX}")).unwrap();
        let text = serde_json::to_string(&digest).unwrap();
        assert_eq!(text, format!("\"sha256:{HEX}\""));
        assert_eq!(serde_json::from_str::<Digest>(&text).unwrap(), digest);
        assert!(serde_json::from_str::<Digest>(&format!("\"{HEX}\"")).is_err());
        assert!(serde_json::from_str::<Digest>("\"sha256:xyz\"").is_err());
    }
}
