//! Identifiers: the typed ids, the check and making of session and run ids, digests.
//! May call: the rest of base only.

use crate::base::error::{Error, Result};

/// What every typed id shares: its text, shown, compared and given back as a string (`Debug`
/// quoted, since messages name ids with `{:?}`).
macro_rules! string_id {
    ($name:ident) => {
        impl $name {
            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&self.0, f)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }
    };
}

mod digest;
mod object;
mod session;

pub use digest::Digest;
pub(crate) use digest::is_sha256_digest;
pub(crate) use session::{MAX_ID_LEN, generate, validate};
pub use session::{RunId, SessionId};

pub(crate) use object::is_object_hex;
pub use object::{CommitId, TREE_PREFIX, TreeId};

/// What every isolation's directory name carries just before the session id (see `names`):
/// `.<source name>[-<hash>][.<tenant>].a3s-isolate-<id>`, or the legacy `.a3s-isolate-<id>`.
pub const ISOLATION_NAME_PREFIX: &str = ".a3s-isolate-";

/// The ids among `known` within two edits (insert, delete, substitute a character) of `id`,
/// closest first: the "did you mean" of an unknown session id.
pub(crate) fn near_misses<'a>(id: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut close: Vec<(usize, &str)> = known
        .into_iter()
        .filter(|k| *k != id)
        .map(|k| (edit_distance(id, k), k))
        .filter(|(d, _)| *d <= 2)
        .collect();
    close.sort();
    close.dedup();
    close.into_iter().map(|(_, k)| k.to_string()).collect()
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != *cb))
                .min(above + 1)
                .min(row[j] + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The fewest hex digits a digest prefix may have (git's own floor for abbreviations is 4;
/// digests are named across repositories, so a few more).
pub const MIN_DIGEST_PREFIX: usize = 8;

/// A digest as a user gives it to an option: the whole `sha256:<hex>`, or a prefix of at
/// least [`MIN_DIGEST_PREFIX`] hex digits (with or without `sha256:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DigestQuery {
    /// A whole digest.
    Full(String),
    /// The lowercase hex a digest starts with.
    Prefix(String),
}

impl DigestQuery {
    /// Reads `given` (an option's value; `flag` names the option in errors).
    pub(crate) fn parse(flag: &str, given: &str) -> Result<DigestQuery> {
        let hex = given.strip_prefix("sha256:").unwrap_or(given);
        let lower = hex.to_ascii_lowercase();
        let hex_ok = !lower.is_empty() && lower.bytes().all(|b| b.is_ascii_hexdigit());
        match (hex_ok, lower.len()) {
            (true, 64) => Ok(DigestQuery::Full(format!("sha256:{lower}"))),
            (true, n) if (MIN_DIGEST_PREFIX..64).contains(&n) => Ok(DigestQuery::Prefix(lower)),
            _ => Err(Error::usage(format!(
                "{flag} {given:?} is not sha256:<64 hex digits> or a prefix of at least {MIN_DIGEST_PREFIX} of them"
            ))),
        }
    }

    /// The one digest among `known` this names (`digest_ambiguous` for more than one).
    pub(crate) fn resolve(
        &self,
        flag: &str,
        known: impl IntoIterator<Item = String>,
    ) -> Result<Option<Digest>> {
        let prefix = match self {
            DigestQuery::Full(digest) => return Digest::new(digest).map(Some),
            DigestQuery::Prefix(prefix) => prefix,
        };
        let mut found: Vec<String> = known
            .into_iter()
            .map(|d| match d.starts_with("sha256:") {
                true => d,
                false => format!("sha256:{d}"),
            })
            .filter(|d| is_sha256_digest(d) && d["sha256:".len()..].starts_with(prefix.as_str()))
            .collect();
        found.sort();
        found.dedup();
        match found.len() {
            0 => Ok(None),
            1 => found.pop().map(Digest::new).transpose(),
            _ => Err(Error::DigestAmbiguous {
                flag: flag.to_string(),
                given: prefix.clone(),
                candidates: found,
            }),
        }
    }

    /// What was asked for, as the user can recognise it.
    pub(crate) fn shown(&self) -> String {
        match self {
            DigestQuery::Full(digest) => digest.clone(),
            DigestQuery::Prefix(prefix) => format!("sha256:{prefix}…"),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::base::ids::*;

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

    /// The contract's own words: the pattern of §3, without `..`, not ending in `.` or `.lock`.
    fn contract_accepts(id: &str) -> bool {
        static PATTERN: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
        PATTERN
            .get_or_init(|| regex::Regex::new(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$").unwrap())
            .is_match(id)
            && !id.contains("..")
            && !id.ends_with('.')
            && !id.ends_with(".lock")
    }

    /// A name that is safe as one file name and as one component of a git ref, by the rules of
    /// `git check-ref-format` (and of the file system), written out independently of `validate`.
    fn safe_file_and_ref_component(id: &str) -> Result<(), String> {
        let bad_char = |c: char| {
            c.is_ascii_control() || matches!(c, ' ' | '~' | '^' | ':' | '?' | '*' | '[' | '\\')
        };
        let problems = [
            (id.is_empty(), "empty"),
            (id.len() > 255, "longer than a file name may be"),
            (id == "." || id == "..", "a directory entry of its own"),
            (id.contains('/'), "contains a path separator"),
            (id.contains('\0'), "contains NUL"),
            (
                id.starts_with('.'),
                "starts with '.' (hidden file, invalid ref component)",
            ),
            (id.starts_with('-'), "starts with '-' (read as an option)"),
            (id.contains(".."), "contains '..'"),
            (id.ends_with('.'), "ends with '.'"),
            (id.ends_with(".lock"), "ends with '.lock'"),
            (id.contains("@{"), "contains '@{'"),
            (id == "@", "is '@'"),
            (
                id.chars().any(bad_char),
                "contains a control character, a space or ~^:?*[\\",
            ),
            (!id.is_ascii(), "is not ASCII"),
        ];
        match problems.iter().find(|(bad, _)| *bad) {
            Some((_, why)) => Err(format!("{id:?} {why}")),
            None => Ok(()),
        }
    }

    /// Ids of every kind the rules are about: arbitrary text over an alphabet that holds every
    /// troublesome character, and well-formed ids with one flaw put in at the start, in the
    /// middle or at the end, and ids around the length limit.
    fn any_id() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let troublesome = prop_oneof![
            Just("/".to_string()),
            Just("..".to_string()),
            Just(".".to_string()),
            Just("-".to_string()),
            Just("_".to_string()),
            Just(" ".to_string()),
            Just("\0".to_string()),
            Just("\n".to_string()),
            Just("\r".to_string()),
            Just("\t".to_string()),
            Just("\x7f".to_string()),
            Just(".lock".to_string()),
            Just("@{".to_string()),
            Just("~".to_string()),
            Just(":".to_string()),
            Just("\\".to_string()),
            Just("é".to_string()),
            Just("\u{301}".to_string()),
            Just("\u{ff0e}".to_string()),
            Just("🦀".to_string()),
        ];
        let core = "[A-Za-z0-9][A-Za-z0-9._-]{0,20}";
        prop_oneof![
            // Free text, mostly short, over an alphabet of good and bad characters.
            r"[A-Za-z0-9._/ @{}~^:?*\[\\\x00-\x1f\x7fé🦀-]{0,12}",
            // One flaw at the start, inside or at the end of a well-formed id.
            (troublesome.clone(), core).prop_map(|(bad, id)| format!("{bad}{id}")),
            (core, troublesome.clone(), core).prop_map(|(a, bad, b)| format!("{a}{bad}{b}")),
            (core, troublesome).prop_map(|(id, bad)| format!("{id}{bad}")),
            // Around the length limit, in bytes (a multi-byte character counts as its bytes).
            (
                120usize..=136,
                "[A-Za-z0-9]",
                proptest::option::of(Just("é"))
            )
                .prop_map(|(n, c, wide)| format!(
                    "{}{}",
                    c.repeat(n),
                    wide.unwrap_or("")
                )),
            // Well-formed ids of every length.
            "[A-Za-z0-9][A-Za-z0-9._-]{0,127}",
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config {
            cases: 2048,
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        })]

        #[test]
        fn validate_rejects_exactly_what_the_contract_rejects(id in any_id()) {
            let accepted = validate(&id).is_ok();
            proptest::prop_assert_eq!(accepted, contract_accepts(&id), "{:?}", id);
            if let Err(err) = validate(&id) {
                proptest::prop_assert_eq!(err.code(), crate::base::error::ErrorCode::InvalidId);
            }
        }

        #[test]
        fn valid_ids_are_safe_file_and_ref_names(id in any_id()) {
            if validate(&id).is_ok() {
                if let Err(why) = safe_file_and_ref_component(&id) {
                    return Err(proptest::test_runner::TestCaseError::fail(why));
                }
                // And as the file and ref names a3s-iso builds from it.
                for name in [format!(".a3s-isolate-{id}"), format!("{id}.json"), format!("{id}.lock")] {
                    proptest::prop_assert!(name.len() <= 255, "{}", name);
                }
            }
        }
    }

    /// The generator reaches every kind of id the two properties above are about; without that
    /// they could not fail (an earlier version only ever generated well-formed ids).
    #[test]
    fn the_generator_produces_every_kind_of_id() {
        use proptest::strategy::{Strategy, ValueTree};
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = any_id();
        let samples: Vec<String> = (0..4096)
            .map(|_| strategy.new_tree(&mut runner).unwrap().current())
            .collect();
        type Kind<'a> = (&'a str, &'a dyn Fn(&str) -> bool);
        let kinds: &[Kind] = &[
            ("empty", &|s| s.is_empty()),
            ("with '/'", &|s| s.contains('/')),
            ("with '..'", &|s| s.contains("..")),
            ("leading '.'", &|s| s.starts_with('.')),
            ("leading '-'", &|s| s.starts_with('-')),
            ("leading '_'", &|s| s.starts_with('_')),
            ("trailing '.'", &|s| s.ends_with('.')),
            ("trailing '.lock'", &|s| s.ends_with(".lock")),
            ("with a space", &|s| s.contains(' ')),
            ("with NUL", &|s| s.contains('\0')),
            ("with a newline", &|s| s.contains('\n')),
            ("with '@{'", &|s| s.contains("@{")),
            ("non-ASCII", &|s| !s.is_ascii()),
            ("exactly 128 bytes", &|s| s.len() == 128),
            ("over 128 bytes", &|s| s.len() > 128),
            ("accepted", &|s| validate(s).is_ok()),
            ("accepted, 128 bytes", &|s| {
                s.len() == 128 && validate(s).is_ok()
            }),
            ("accepted, with '.' inside", &|s| {
                s.contains('.') && validate(s).is_ok()
            }),
        ];
        for (kind, is) in kinds {
            let n = samples.iter().filter(|s| is(s)).count();
            assert!(
                n >= 5,
                "only {n} of {} generated ids are {kind}",
                samples.len()
            );
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
