//! A command line as a run records it: its arguments exactly, as bytes (in JSON each one a
//! string when it is UTF-8, else `{"bytes_base64": …}`), and for people as one line a POSIX
//! shell reads back as the same arguments.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

use serde::{Deserialize, Serialize};

/// A command and its arguments, exactly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Argv(#[serde(with = "crate::base::paths::fs_path_list")] pub Vec<OsString>);

impl Argv {
    /// The command line, each argument quoted as a shell needs it ([`shell_quote`]): pasting it
    /// runs the same command, and it never carries a control character.
    pub fn shell_line(&self) -> String {
        self.0
            .iter()
            .map(|arg| shell_quote(arg))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Bytes a shell takes literally anywhere in a word.
fn is_plain(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"_-./,:=+@%".contains(&byte)
}

/// One argument (or path) quoted for a POSIX shell: bare when no shell treats its characters
/// specially, in single quotes when it is printable UTF-8, else in bash, zsh and ksh's `$'…'`.
pub fn shell_quote(arg: &std::ffi::OsStr) -> String {
    let arg = arg.as_bytes();
    if !arg.is_empty() && arg.iter().copied().all(is_plain) {
        // Plain bytes are ASCII.
        return String::from_utf8_lossy(arg).into_owned();
    }
    match std::str::from_utf8(arg) {
        Ok(text) if !text.chars().any(char::is_control) => {
            format!("'{}'", text.replace('\'', r"'\''"))
        }
        _ => ansi_c_quoted(arg),
    }
}

/// `$'…'`: printable characters as they are (`\` and `'` escaped), any other byte as `\xHH`.
fn ansi_c_quoted(arg: &[u8]) -> String {
    let mut out = String::from("$'");
    let escape = |out: &mut String, bytes: &[u8]| {
        for byte in bytes {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    };
    for chunk in arg.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str(r"\\"),
                '\'' => out.push_str(r"\'"),
                c if c.is_control() => escape(&mut out, c.encode_utf8(&mut [0; 4]).as_bytes()),
                c => out.push(c),
            }
        }
        escape(&mut out, chunk.invalid());
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    use crate::base::argv::Argv;

    fn line(args: &[&[u8]]) -> String {
        Argv(
            args.iter()
                .map(|a| OsString::from_vec(a.to_vec()))
                .collect(),
        )
        .shell_line()
    }

    #[test]
    fn quotes_only_what_needs_it() {
        assert_eq!(
            line(&[b"cargo", b"test", b"--", b"a=b/c.rs"]),
            "cargo test -- a=b/c.rs"
        );
        assert_eq!(
            line(&[b"sh", b"-c", b"echo 'hi' > x"]),
            r"sh -c 'echo '\''hi'\'' > x'"
        );
        assert_eq!(line(&[b"", b"~", b"$HOME", b"*"]), "'' '~' '$HOME' '*'");
        assert_eq!(line(&[b"caf\xc3\xa9"]), "'caf\u{e9}'");
    }

    #[test]
    fn escapes_control_characters_and_bytes_that_are_not_utf8() {
        assert_eq!(line(&[b"a\nb"]), r"$'a\x0ab'");
        assert_eq!(line(&[b"\xff'\\x"]), r"$'\xff\'\\x'");
        assert_eq!(line(&[b"\x1b[31m"]), r"$'\x1b[31m'");
        assert_eq!(line(&[b"\xc2\x85"]), r"$'\xc2\x85'");
    }

    #[test]
    fn round_trips_through_json() {
        let argv = Argv(vec![
            OsString::from("printf"),
            OsString::from_vec(b"\xffname".to_vec()),
        ]);
        let json = serde_json::to_string(&argv).unwrap();
        assert_eq!(json, r#"["printf",{"bytes_base64":"/25hbWU="}]"#);
        assert_eq!(serde_json::from_str::<Argv>(&json).unwrap(), argv);
    }
}
