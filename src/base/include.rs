//! The ignored files an isolation starts with, named by gitignore patterns of the command line
//! (`bind --copy-ignored`, `pool --keep-ignored`) and the source's `.worktreeinclude` (as
//! Claude Code and worktrunk read it). Only the lines are read here: which paths a pattern
//! matches is always git's to say.

use std::path::Path;

use serde::Serialize;

use crate::base::beneath::Dir;
use crate::base::error::{Error, Result};
use crate::base::warning::{BindWarning, Warning};

/// The file at the top of the source that names the ignored files a new isolation gets.
pub const WORKTREEINCLUDE: &str = ".worktreeinclude";

/// The largest `.worktreeinclude` read.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// Where a set of patterns came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PatternOrigin {
    /// `bind --copy-ignored`.
    CopyIgnored,
    /// The source's `.worktreeinclude`.
    Worktreeinclude,
}

/// Gitignore patterns from one place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternSet {
    /// Where they came from.
    pub origin: PatternOrigin,
    /// One pattern each, as a line of a `.gitignore` (after comments and blank lines went).
    pub patterns: Vec<String>,
}

/// The patterns given with a command-line option (`flag`, for messages). What a pathspec meant
/// keeps working where a pattern would match nothing: `.` (or `./`) is `*`, a leading `./` is
/// `/`; a leading `:` (pathspec magic) is refused.
pub(crate) fn from_args(values: &[String], flag: &str) -> Result<Vec<String>> {
    let mut patterns = Vec::new();
    for value in values {
        if value.starts_with(':') {
            return Err(Error::usage(format!(
                "{flag} {value:?}: takes gitignore patterns, not pathspec magic (escape a \
                 leading colon as \\:)"
            )));
        }
        let pattern = match value.as_str() {
            "" => continue,
            "." | "./" => "*".to_string(),
            other => match other.strip_prefix("./") {
                Some(rest) => format!("/{rest}"),
                None => other.to_string(),
            },
        };
        patterns.push(pattern);
    }
    Ok(patterns)
}

/// The patterns of an ignore file's bytes, read as git reads one, and how many lines were
/// skipped for not being UTF-8.
pub(crate) fn parse_lines(bytes: &[u8]) -> (Vec<String>, usize) {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let (mut patterns, mut unreadable) = (Vec::new(), 0);
    for line in bytes.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() || line.starts_with(b"#") {
            continue;
        }
        match std::str::from_utf8(line) {
            Ok(text) => {
                let pattern = trim_trailing_spaces(text);
                if !pattern.is_empty() {
                    patterns.push(pattern.to_string());
                }
            }
            Err(_) => unreadable += 1,
        }
    }
    (patterns, unreadable)
}

/// `line` without its trailing spaces, unless a backslash escapes them (git's rule).
fn trim_trailing_spaces(line: &str) -> &str {
    let bytes = line.as_bytes();
    let (mut i, mut last_space) = (0, None);
    while i < bytes.len() {
        match bytes[i] {
            b' ' => {
                last_space.get_or_insert(i);
            }
            b'\\' => {
                i += 1;
                if i == bytes.len() {
                    return line;
                }
                last_space = None;
            }
            _ => last_space = None,
        }
        i += 1;
    }
    last_space.map_or(line, |at| &line[..at])
}

/// The patterns of the source's `.worktreeinclude` (`None` when there is none); a link there is
/// not followed (its target could be anywhere) but reported in `warnings`, like other faults.
pub(crate) fn worktreeinclude(source: &Path, warnings: &mut Vec<Warning>) -> Option<Vec<String>> {
    let path = source.join(WORKTREEINCLUDE);
    let name = Path::new(WORKTREEINCLUDE);
    let read = Dir::open(source).and_then(|dir| dir.read_small_file(name, MAX_FILE_BYTES));
    let bytes = match read {
        Ok(bytes) => bytes?,
        Err(err) => {
            let why = err.to_string();
            warnings.push(BindWarning::IncludeUnreadable { path, why }.into());
            return None;
        }
    };
    let (patterns, unreadable) = parse_lines(&bytes);
    if unreadable > 0 {
        warnings.push(
            BindWarning::IncludeLinesNotUtf8 {
                path,
                lines: unreadable,
            }
            .into(),
        );
    }
    Some(patterns)
}

/// What a new isolation copies from the source: `.worktreeinclude` and `--copy-ignored`'s sets.
pub(crate) fn copy_sets(
    source: &Path,
    copy_ignored: &[String],
    warnings: &mut Vec<Warning>,
) -> Result<Vec<PatternSet>> {
    let given = from_args(copy_ignored, "--copy-ignored")?;
    let included = worktreeinclude(source, warnings).unwrap_or_default();
    Ok([
        (PatternOrigin::Worktreeinclude, included),
        (PatternOrigin::CopyIgnored, given),
    ]
    .into_iter()
    .filter(|(_, patterns)| !patterns.is_empty())
    .map(|(origin, patterns)| PatternSet { origin, patterns })
    .collect())
}

#[cfg(test)]
mod tests {
    use crate::base::include::*;

    #[test]
    fn lines_are_read_as_git_reads_an_ignore_file() {
        let text = b"\xEF\xBB\xBF# comment\n.env\r\n\n  \nnode_modules/\ntrail  \nkept\\ \n!neg\n\\#hash\n";
        let (patterns, bad) = parse_lines(text);
        assert_eq!(
            patterns,
            [
                ".env",
                "node_modules/",
                "trail",
                "kept\\ ",
                "!neg",
                "\\#hash"
            ]
        );
        assert_eq!(bad, 0);
        let (patterns, bad) = parse_lines(b"ok\n\xff\xfe\n");
        assert_eq!((patterns, bad), (vec!["ok".to_string()], 1));
    }

    #[test]
    fn former_pathspecs_keep_their_meaning() {
        let values: Vec<String> = [".", "./target", "target", "", "src/gen"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            from_args(&values, "--copy-ignored").unwrap(),
            ["*", "/target", "target", "src/gen"]
        );
        assert!(from_args(&[":(glob)x".into()], "--copy-ignored").is_err());
    }
}
