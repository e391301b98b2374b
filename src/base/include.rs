//! The ignored files an isolation starts with, named by gitignore patterns from two places:
//! the command line (`bind --copy-ignored`, `pool --keep-ignored`) and the source's
//! `.worktreeinclude` file (as Claude Code and worktrunk read it: gitignore syntax, each pattern
//! naming ignored files to bring into a new worktree).
//!
//! Only the lines are read here (comments, blank lines, trailing spaces, as git reads an
//! ignore file); which paths a pattern matches is always git's to say (`git ls-files
//! --exclude`, `git check-ignore`, `git clean -e`), never decided here.

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

/// The patterns given with a command-line option (`flag`, for messages): one pattern each.
/// These options took pathspecs once; what such a value meant keeps working where a pattern
/// alone would match nothing: `.` (or `./`) is every ignored file (`*`), and a leading `./`
/// anchors at the top (`/`). A value starting with `:` (pathspec magic) is refused: escape a
/// leading colon of a name as `\:`.
pub(crate) fn from_args(values: &[String], flag: &str) -> Result<Vec<String>> {
    let mut patterns = Vec::new();
    for value in values {
        if value.starts_with(':') {
            return Err(Error::Usage {
                message: format!(
                    "{flag} {value:?}: takes gitignore patterns, not pathspec magic (escape a \
                     leading colon as \\:)"
                ),
            });
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

/// The patterns of an ignore file's bytes, read as git reads one: a UTF-8 byte order mark
/// goes, each line loses one trailing carriage return and its unescaped trailing spaces,
/// blank lines and lines starting with `#` are skipped. A line that is not UTF-8 is skipped
/// and counted in the second value.
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

/// The patterns of the source's `.worktreeinclude` (`None` when there is none), read beneath
/// the source's handle: a symbolic link there is not followed (its target could be anywhere),
/// and is reported in `warnings` like a file too large or lines that are not UTF-8.
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

/// What a new isolation copies from the source: the `--copy-ignored` patterns and the
/// source's `.worktreeinclude`, each a set when it holds a pattern.
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
