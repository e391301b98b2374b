//! The environment a `run` command gets: an allowlist of the caller's variables, the ones the
//! caller names with `--env`, and run's own. Everything else stays outside, credentials first
//! of all: a variable whose name looks like one passes only when it is named exactly.

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use crate::base::error::{Error, Result};

/// The caller's variables every command gets (`*` matches any run of characters).
pub const ALLOWED: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "COLORTERM",
    "LANG",
    "LC_*",
    "TZ",
    "TMPDIR",
    "EDITOR",
    "PAGER",
    "A3S_ISO_*",
    // Who commits, and which configuration git reads: a commit made inside is the caller's.
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_DEFAULT_HASH",
];

/// Names that look like credentials (compared in upper case): such a variable passes only
/// when `--env` names it exactly, never through a pattern.
pub const CREDENTIAL_NAMES: &[&str] = &[
    "*TOKEN*",
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*_KEY",
    "*API_KEY*",
    "AWS_*",
    "GITHUB_*",
    "GH_*",
    "*CREDENTIAL*",
];

/// One `--env` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvRequest {
    /// `NAME` or a pattern (`NODE_*`): pass the caller's variables of that name.
    Pass(String),
    /// `NAME=VALUE`: set one.
    Set(String, OsString),
}

impl EnvRequest {
    /// Parses `NAME`, `PATTERN` or `NAME=VALUE`.
    pub fn parse(arg: &OsStr) -> Result<EnvRequest> {
        let bytes = arg.as_encoded_bytes();
        let (name, value) = match bytes.iter().position(|b| *b == b'=') {
            Some(at) => (&bytes[..at], Some(&bytes[at + 1..])),
            None => (bytes, None),
        };
        let invalid = |why: &str| Error::InvalidInput {
            reason: crate::base::invalid::Invalid::Env {
                given: arg.to_string_lossy().into_owned(),
                why: why.to_string(),
            },
        };
        let name = std::str::from_utf8(name).map_err(|_| invalid("the name is not UTF-8"))?;
        if name.is_empty() || name.contains('\0') {
            return Err(invalid("a variable needs a name"));
        }
        match value {
            None => Ok(EnvRequest::Pass(name.to_string())),
            Some(_) if name.contains('*') => Err(invalid("only a name can be set, not a pattern")),
            Some(value) => Ok(EnvRequest::Set(
                name.to_string(),
                OsStr::from_bytes(value).to_os_string(),
            )),
        }
    }

    /// Whether this grant lets through everything `asked` passes (a value set needs no grant).
    pub fn covers(&self, asked: &EnvRequest) -> bool {
        match (self, asked) {
            (_, EnvRequest::Set(..)) => true,
            (EnvRequest::Pass(granted), EnvRequest::Pass(name)) => {
                granted == name || (!name.contains('*') && passes(name, &[granted.as_str()]))
            }
            (EnvRequest::Set(..), EnvRequest::Pass(_)) => false,
        }
    }
}

/// What the command's environment is, and what of the caller's stayed outside (names only).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandEnv {
    /// The variables, in the order they are set (later ones win).
    pub vars: Vec<(OsString, OsString)>,
    /// Every name the command gets, sorted.
    pub passed: Vec<String>,
    /// The caller's names it does not get, sorted.
    pub dropped: Vec<String>,
}

/// Whether `name` matches `pattern`, where `*` matches any run of characters.
fn matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Whether a variable of this name looks like it holds a credential.
pub fn looks_like_credential(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    CREDENTIAL_NAMES.iter().any(|p| matches(p, &upper))
}

/// Whether the caller's variable `name` passes: named exactly, or matched by a pattern when it
/// does not look like a credential.
fn passes(name: &str, patterns: &[&str]) -> bool {
    if patterns.contains(&name) {
        return true;
    }
    !looks_like_credential(name) && patterns.iter().any(|p| p.contains('*') && matches(p, name))
}

/// Plans the command's environment from the caller's, the `--env` requests and run's own
/// variables (`own`, set last); never one named in `never`.
pub fn plan(
    caller: impl IntoIterator<Item = (OsString, OsString)>,
    requests: &[EnvRequest],
    own: &[(String, OsString)],
    never: &[&str],
) -> CommandEnv {
    let mut patterns: Vec<&str> = ALLOWED.to_vec();
    patterns.extend(requests.iter().filter_map(|r| match r {
        EnvRequest::Pass(name) => Some(name.as_str()),
        EnvRequest::Set(..) => None,
    }));
    let mut env = CommandEnv::default();
    let mut dropped = BTreeSet::new();
    for (name, value) in caller {
        let text = name.to_string_lossy().into_owned();
        if passes(&text, &patterns) && !never.contains(&text.as_str()) {
            env.vars.push((name, value));
        } else {
            dropped.insert(text);
        }
    }
    for request in requests {
        if let EnvRequest::Set(name, value) = request
            && !never.contains(&name.as_str())
        {
            env.vars.push((name.into(), value.clone()));
        }
    }
    env.vars
        .extend(own.iter().map(|(name, value)| (name.into(), value.clone())));
    let passed: BTreeSet<String> = env
        .vars
        .iter()
        .map(|(name, _)| name.to_string_lossy().into_owned())
        .collect();
    env.dropped = dropped.difference(&passed).cloned().collect();
    env.passed = passed.into_iter().collect();
    env
}

#[cfg(test)]
mod tests {
    use crate::base::command_env::*;

    fn caller(names: &[&str]) -> Vec<(OsString, OsString)> {
        names.iter().map(|n| ((*n).into(), "v".into())).collect()
    }

    #[test]
    fn patterns_match_as_globs() {
        assert!(matches("LC_*", "LC_ALL"));
        assert!(matches("*TOKEN*", "NPM_TOKEN"));
        assert!(matches("*_KEY", "FOO_KEY"));
        assert!(!matches("*_KEY", "FOO_KEYS"));
        assert!(matches("A*B*C", "AxxBxxC"));
        assert!(!matches("A*B*C", "AxxC"));
        assert!(matches("PATH", "PATH"));
        assert!(!matches("PATH", "PATHS"));
        assert!(matches("*", ""));
    }

    #[test]
    fn credentials_pass_only_by_their_exact_name() {
        let names = [
            "PATH",
            "GITHUB_TOKEN",
            "OPENAI_API_KEY",
            "LC_SECRET",
            "NODE_ENV",
            "db_password",
        ];
        let env = plan(caller(&names), &[], &[], &[]);
        assert_eq!(env.passed, ["PATH"]);
        let asked = [
            EnvRequest::Pass("*_API_KEY".into()),
            EnvRequest::Pass("NODE_*".into()),
            EnvRequest::Pass("GITHUB_TOKEN".into()),
        ];
        let env = plan(caller(&names), &asked, &[], &[]);
        assert_eq!(env.passed, ["GITHUB_TOKEN", "NODE_ENV", "PATH"]);
        assert_eq!(env.dropped, ["LC_SECRET", "OPENAI_API_KEY", "db_password"]);
    }

    #[test]
    fn run_sets_its_own_last_and_never_passes_what_it_must_not() {
        let asked = [
            EnvRequest::Set("TMPDIR".into(), "/mine".into()),
            EnvRequest::Pass("GIT_DIR".into()),
        ];
        let own = [("TMPDIR".to_string(), OsString::from("/run-tmp"))];
        let env = plan(caller(&["GIT_DIR", "TMPDIR"]), &asked, &own, &["GIT_DIR"]);
        assert_eq!(env.vars.last().unwrap().1, "/run-tmp");
        assert_eq!(env.passed, ["TMPDIR"]);
        assert_eq!(env.dropped, ["GIT_DIR"]);
    }

    #[test]
    fn an_argument_is_a_name_a_pattern_or_an_assignment() {
        let parse = |s: &str| EnvRequest::parse(OsStr::new(s));
        assert_eq!(parse("FOO").unwrap(), EnvRequest::Pass("FOO".into()));
        assert_eq!(
            parse("FOO=a=b").unwrap(),
            EnvRequest::Set("FOO".into(), "a=b".into())
        );
        assert_eq!(
            parse("FOO=").unwrap(),
            EnvRequest::Set("FOO".into(), "".into())
        );
        assert!(parse("=x").is_err());
        assert!(parse("").is_err());
        assert!(parse("A*=x").is_err());
    }
}
