//! Session and run identifiers: validation and generation.

use crate::error::{Error, Result};

/// Every isolation's directory name starts with this, followed by the session id.
pub const ISOLATION_NAME_PREFIX: &str = ".a3s-isolate-";

/// The longest id accepted.
pub(crate) const MAX_ID_LEN: usize = 128;

/// Checks an id against `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`, without `..`, not ending in `.`
/// or `.lock`. Ids become file names and ref components, so nothing else is accepted.
pub(crate) fn validate(id: &str) -> Result<()> {
    let reason = if id.is_empty() {
        Some("it is empty")
    } else if id.len() > MAX_ID_LEN {
        Some("it is longer than 128 characters")
    } else if !id.as_bytes()[0].is_ascii_alphanumeric() {
        Some("it must start with a letter or a digit")
    } else if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        Some("only letters, digits, '.', '_' and '-' are allowed")
    } else if id.contains("..") {
        Some("it must not contain '..'")
    } else if id.ends_with('.') || id.ends_with(".lock") {
        Some("it must not end in '.' or '.lock'")
    } else {
        None
    };
    match reason {
        None => Ok(()),
        Some(reason) => Err(Error::InvalidId {
            id: id.to_string(),
            reason: reason.to_string(),
        }),
    }
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
        crate::fsutil::now_ms(),
        hex::encode(random)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_good_ids() {
        for id in ["a", "task-42", "A.b_c-d", "0", &"x".repeat(128), "s-1.2"] {
            validate(id).unwrap();
        }
    }

    #[test]
    fn rejects_bad_ids() {
        for id in [
            "",
            "../x",
            "a/b",
            ".hidden",
            "x.lock",
            "a..b",
            "x.",
            "-x",
            "_x",
            "a b",
            "a\0b",
            "a\nb",
            "é",
            &"x".repeat(129),
        ] {
            assert!(validate(id).is_err(), "{id:?} should be rejected");
        }
    }

    /// The rules as the contract states them, for comparison with the validator.
    fn contract_accepts(id: &str) -> bool {
        let bytes = id.as_bytes();
        !bytes.is_empty()
            && bytes.len() <= 128
            && bytes[0].is_ascii_alphanumeric()
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(b))
            && !id.contains("..")
            && !id.ends_with('.')
            && !id.ends_with(".lock")
    }

    proptest::proptest! {
        #[test]
        fn validator_matches_the_contract(id in "[A-Za-z0-9._/ \\n\\x00-]{0,140}") {
            proptest::prop_assert_eq!(validate(&id).is_ok(), contract_accepts(&id));
        }

        #[test]
        fn valid_ids_are_safe_file_and_ref_names(id in "[A-Za-z0-9][A-Za-z0-9._-]{0,127}") {
            if validate(&id).is_ok() {
                proptest::prop_assert!(!id.contains('/') && !id.starts_with('.') && id != "..");
            }
        }
    }

    #[test]
    fn generated_ids_are_valid_and_distinct() {
        let a = generate("s");
        let b = generate("s");
        validate(&a).unwrap();
        assert!(a.starts_with("s-"));
        assert_ne!(a, b);
    }
}
