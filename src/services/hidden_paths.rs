//! The paths a failed sandboxed command named that the sandbox kept from it: under a private
//! directory (`/tmp`, `/var/tmp`, the runtime dir: empty inside), under a hidden secret, or a
//! write target outside the writable set. Found from what the command line says (its
//! arguments, a `sh -c` script, a script file a shell or interpreter runs), since nothing
//! records the paths a process merely tried to open. Pure planning: the caller passes the
//! spec, the command and `$HOME`; only existence on the host is looked up.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;

use crate::base::sandbox::SandboxSpec;

/// At most this many paths are named: the first are the likely cause.
const MOST: usize = 8;

/// A script file read for the paths it names is read only up to this size.
const SCRIPT_BYTES: u64 = 64 * 1024;

/// Programs that run a script file given as their first operand.
const INTERPRETERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "fish", "python", "python3", "perl", "ruby", "node",
];

/// Shells, whose `-c` operand is a script.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "fish"];

/// Commands whose path operands are written (`cp`, `mv`, `ln`, `install`: the last one only).
const WRITERS: &[&str] = &["touch", "mkdir", "rm", "rmdir", "tee", "truncate"];
const COPIERS: &[&str] = &["cp", "mv", "ln", "install"];

/// Why the command could not reach a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HiddenReason {
    /// Under a directory that is fresh and empty inside the sandbox.
    Private,
    /// Under a secret the sandbox covers.
    Hidden,
    /// A write target outside the paths the command may write.
    ReadOnly,
}

/// What the caller can allow to let the command through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    /// `--allow-read`.
    Read,
    /// `--allow-write`.
    Write,
}

/// One path the command named that the sandbox kept from it (`hidden_paths` in `a3s-iso.run.v1`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HiddenPath {
    /// The path as the command named it (absolute, `~` and `$HOME` expanded).
    #[serde(with = "crate::base::paths::fs_path")]
    pub path: PathBuf,
    /// Why it was out of reach.
    pub reason: HiddenReason,
    /// The private directory or the secret it is under; `null` for a read-only target.
    #[serde(with = "crate::base::paths::fs_path_opt")]
    pub under: Option<PathBuf>,
    /// What to allow.
    pub allow: Access,
    /// The existing path to allow it with (the target's nearest existing directory for a
    /// file that does not exist yet).
    #[serde(with = "crate::base::paths::fs_path")]
    pub allow_path: PathBuf,
}

/// One word of a command line, and whether the command writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    text: Vec<u8>,
    written: bool,
}

/// The paths `command` named that `spec` kept from it, most likely cause first.
pub fn find(spec: &SandboxSpec, command: &[OsString], home: Option<&Path>) -> Vec<HiddenPath> {
    let mut words = command_words(command);
    if let Some(script) = script_file(spec, command, home) {
        words.extend(script_words(&script));
    }
    let mut found: Vec<HiddenPath> = Vec::new();
    for word in words {
        let Some(path) = absolute(&word.text, home) else {
            continue;
        };
        if found.iter().any(|f| f.path == path) {
            continue;
        }
        if let Some(hidden) = classify(spec, &path, word.written) {
            found.push(hidden);
        }
        if found.len() == MOST {
            break;
        }
    }
    found
}

/// Whether `path` was out of the command's reach, and why.
fn classify(spec: &SandboxSpec, path: &Path, written: bool) -> Option<HiddenPath> {
    // Devices and kernel views are no files of the user's (`/dev/tcp/…` is bash's own).
    if ["/dev", "/proc", "/sys"]
        .iter()
        .any(|d| path.starts_with(d))
    {
        return None;
    }
    let exists = std::fs::symlink_metadata(path).is_ok();
    if let Some(secret) = spec.hidden.iter().find(|h| path.starts_with(h)) {
        return Some(hint(path, HiddenReason::Hidden, Some(secret), Access::Read));
    }
    let private = spec
        .private
        .iter()
        .find(|d| path.starts_with(d) && !restored(spec, path));
    match private {
        Some(dir) if exists => Some(hint(path, HiddenReason::Private, Some(dir), Access::Read)),
        // Writes there land in the sandbox's own tmpfs; reads of what is not there fail
        // on the host as well.
        Some(_) => None,
        None if written && !spec.writable.iter().any(|w| path.starts_with(w)) => {
            Some(hint(path, HiddenReason::ReadOnly, None, Access::Write))
        }
        None => None,
    }
}

/// Whether `path` is under a path the sandbox lets through (writable or visible) again.
pub(crate) fn restored(spec: &SandboxSpec, path: &Path) -> bool {
    (spec.writable.iter().chain(&spec.visible)).any(|r| path.starts_with(r))
}

/// The first `limit` bytes of the regular file at `path`, read as a file the command could
/// have planted: no link followed at the end, no FIFO waited on.
pub(crate) fn read_planted(path: &Path, limit: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

fn hint(path: &Path, reason: HiddenReason, under: Option<&PathBuf>, allow: Access) -> HiddenPath {
    let allow_path = path
        .ancestors()
        .find(|p| std::fs::symlink_metadata(p).is_ok())
        .unwrap_or(Path::new("/"))
        .to_path_buf();
    HiddenPath {
        path: path.to_path_buf(),
        reason,
        under: under.cloned(),
        allow,
        allow_path,
    }
}

/// An absolute, lexically normal path from a word: `/…`, `~/…` or `$HOME/…`.
fn absolute(word: &[u8], home: Option<&Path>) -> Option<PathBuf> {
    let from_home = |rest: &[u8]| home.map(|h| h.join(OsStr::from_bytes(rest)));
    let path = if word.starts_with(b"/") {
        PathBuf::from(OsStr::from_bytes(word))
    } else if let Some(rest) = word.strip_prefix(b"~/") {
        from_home(rest)?
    } else if let Some(rest) = word
        .strip_prefix(b"$HOME/")
        .or_else(|| word.strip_prefix(b"${HOME}/"))
    {
        from_home(rest)?
    } else {
        return None;
    };
    let normal = Path::new("/").join(lexical(&path));
    (normal != Path::new("/")).then_some(normal)
}

/// `path` without `.` and with each `..` taking the name before it away (no link looked up).
fn lexical(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                normal.pop();
            }
            Component::CurDir => {}
            other => normal.push(other),
        }
    }
    normal
}

/// The file name of a program word (`/usr/bin/sh` → `sh`).
fn program_name(word: &[u8]) -> &[u8] {
    word.rsplit(|b| *b == b'/').next().unwrap_or(word)
}

fn is_one_of(word: &[u8], names: &[&str]) -> bool {
    let name = program_name(word);
    names.iter().any(|n| n.as_bytes() == name)
}

/// The words of the command line: each argument, with a shell's `-c` script split into its
/// words, and the operands of a writing command marked written.
fn command_words(command: &[OsString]) -> Vec<Word> {
    let args: Vec<&[u8]> = command.iter().map(|a| a.as_bytes()).collect();
    let Some(program) = args.first() else {
        return Vec::new();
    };
    let shell = is_one_of(program, SHELLS);
    let mut words = Vec::new();
    let mut script_next = false;
    let mut operands = Vec::new();
    for arg in &args[1..] {
        if script_next {
            words.extend(script_words(arg));
            script_next = false;
        } else if shell && arg.starts_with(b"-") && !arg.starts_with(b"--") && arg.contains(&b'c') {
            script_next = true;
        } else {
            operands.push(arg.to_vec());
        }
    }
    words.extend(simple_command(program, operands));
    words
}

/// The words of one simple command after its program word, written ones marked.
fn simple_command(program: &[u8], operands: Vec<Vec<u8>>) -> Vec<Word> {
    let writes_all = is_one_of(program, WRITERS);
    let writes_last = is_one_of(program, COPIERS);
    let last = operands.iter().rposition(|o| !o.starts_with(b"-"));
    operands
        .into_iter()
        .enumerate()
        .flat_map(|(i, text)| {
            let written = writes_all || (writes_last && Some(i) == last);
            // An option's value: `--file=/tmp/x`, `-o/tmp/x` stays whole (not a path).
            let text = match text.iter().position(|b| *b == b'=') {
                Some(eq) if text.starts_with(b"-") => text[eq + 1..].to_vec(),
                _ => text,
            };
            let parts = match text.iter().any(|b| b" '\"();".contains(b)) {
                // Code given as an argument (`python3 -c '…'`): the paths in it.
                true => script_words(&text).into_iter().map(|w| w.text).collect(),
                false => split_list(&text),
            };
            parts.into_iter().map(move |text| Word { text, written })
        })
        .collect()
}

/// `a:/b:/c` (a search path) is three words; anything else is one.
fn split_list(text: &[u8]) -> Vec<Vec<u8>> {
    if text.starts_with(b"/") && text.contains(&b':') {
        text.split(|b| *b == b':').map(<[u8]>::to_vec).collect()
    } else {
        vec![text.to_vec()]
    }
}

/// The words of a shell script, roughly as the shell splits them: quotes removed, the word
/// after `>` or `>>` written, and each simple command's operands by its program.
fn script_words(script: &[u8]) -> Vec<Word> {
    let (mut words, mut command, mut current) = (Vec::new(), Vec::new(), Vec::new());
    let mut redirected = false;
    // A last newline ends the last word and command.
    for &byte in script.iter().chain(b"\n") {
        if !b" \t<'\"`(){},>\n;|&".contains(&byte) {
            current.push(byte);
            continue;
        }
        if !current.is_empty() {
            let text = std::mem::take(&mut current);
            match std::mem::take(&mut redirected) {
                true => words.push(Word {
                    text,
                    written: true,
                }),
                false => command.push(text),
            }
        }
        match byte {
            b'>' => redirected = true,
            b'\n' | b';' | b'|' | b'&' => end_command(&mut command, &mut words),
            _ => {}
        }
    }
    words
}

/// Ends a simple command of a script: its words, and its operands as its program uses them.
fn end_command(command: &mut Vec<Vec<u8>>, words: &mut Vec<Word>) {
    let mut parts = std::mem::take(command).into_iter();
    // `.` and `source` read a file; `VAR=value` words before the program are skipped.
    let program = parts.find(|w| !w.contains(&b'=') || w.starts_with(b"/"));
    let Some(program) = program else {
        return;
    };
    words.push(Word {
        text: program.clone(),
        written: false,
    });
    words.extend(simple_command(&program, parts.collect()));
}

/// The script a shell or interpreter was asked to run (its first operand), when the host
/// holds it as a small file the command could read too (a relative name is found from the
/// command's working directory). The command could have left a link where the script is named
/// (in its isolation): the file is read only when no link leads to it, it lies under no secret
/// the sandbox hides nor in a kernel view, and never waited on nor read past its bound.
fn script_file(spec: &SandboxSpec, command: &[OsString], home: Option<&Path>) -> Option<Vec<u8>> {
    let (program, rest) = command.split_first()?;
    if !is_one_of(program.as_bytes(), INTERPRETERS) {
        return None;
    }
    let operand = rest.iter().find(|a| !a.as_bytes().starts_with(b"-"))?;
    let path =
        absolute(operand.as_bytes(), home).unwrap_or_else(|| lexical(&spec.workdir.join(operand)));
    // Only a script the command could read itself: never a file it could not see.
    if classify(spec, &path, false).is_some() {
        return None;
    }
    let real = std::fs::canonicalize(&path).ok()?;
    let covered = |dir: &Path| {
        real.starts_with(dir) || std::fs::canonicalize(dir).is_ok_and(|d| real.starts_with(d))
    };
    let kernel = ["/proc", "/sys", "/dev"].map(Path::new);
    let hidden = &spec.hidden;
    if real != path || kernel.iter().any(|d| covered(d)) || hidden.iter().any(|h| covered(h)) {
        return None;
    }
    // A script over the bound is not read at all.
    read_planted(&real, SCRIPT_BYTES + 1).filter(|bytes| bytes.len() as u64 <= SCRIPT_BYTES)
}

#[cfg(test)]
mod tests {
    use crate::services::hidden_paths::*;

    fn texts(words: &[Word]) -> Vec<(String, bool)> {
        words
            .iter()
            .map(|w| (String::from_utf8_lossy(&w.text).into_owned(), w.written))
            .collect()
    }

    #[test]
    fn a_script_is_split_into_words_with_its_write_targets_marked() {
        let words = script_words(b"cat '/a b' > \"/out\"; X=1 touch /t && cp /s /d | tee -a /log");
        assert_eq!(
            texts(&words),
            [
                ("/out", true),
                ("cat", false),
                ("/a", false),
                ("b", false),
                ("touch", false),
                ("/t", true),
                ("cp", false),
                ("/s", false),
                ("/d", true),
                ("tee", false),
                ("-a", true),
                ("/log", true),
            ]
            .map(|(t, w)| (t.to_string(), w))
        );
    }

    #[test]
    fn paths_are_made_absolute_from_home_and_normalised() {
        let home = Path::new("/home/u");
        assert_eq!(
            absolute(b"~/x/../y", Some(home)),
            Some(PathBuf::from("/home/u/y"))
        );
        assert_eq!(
            absolute(b"$HOME/.ssh", Some(home)),
            Some(PathBuf::from("/home/u/.ssh"))
        );
        assert_eq!(absolute(b"rel/x", Some(home)), None);
        assert_eq!(absolute(b"/", Some(home)), None);
    }

    #[test]
    fn option_values_and_search_paths_are_words_of_their_own() {
        let command = ["tool", "--config=/etc/x", "/a:/b"].map(OsString::from);
        assert_eq!(
            texts(&command_words(&command)),
            [("/etc/x", false), ("/a", false), ("/b", false)].map(|(t, w)| (t.to_string(), w))
        );
        let shell = ["bash", "-ec", "echo hi > /o"].map(OsString::from);
        assert_eq!(
            texts(&command_words(&shell)),
            [("/o", true), ("echo", false), ("hi", false)].map(|(t, w)| (t.to_string(), w))
        );
    }

    #[test]
    fn a_path_is_classified_by_what_covers_it() {
        let spec = SandboxSpec {
            writable: vec!["/w".into()],
            visible: vec!["/tmp/home".into()],
            private: vec!["/tmp".into(), "/dev".into()],
            hidden: vec!["/tmp/home/.ssh".into()],
            ..SandboxSpec::default()
        };
        let secret = classify(&spec, Path::new("/tmp/home/.ssh/key"), false).unwrap();
        assert_eq!(secret.reason, HiddenReason::Hidden);
        assert_eq!(classify(&spec, Path::new("/tmp/home/x"), false), None);
        assert_eq!(classify(&spec, Path::new("/w/x"), true), None);
        let ro = classify(&spec, Path::new("/etc/x"), true).unwrap();
        assert_eq!(
            (ro.reason, ro.allow),
            (HiddenReason::ReadOnly, Access::Write)
        );
        assert_eq!(ro.allow_path, PathBuf::from("/etc"));
        assert_eq!(classify(&spec, Path::new("/dev/null"), false), None);
        assert_eq!(
            classify(&spec, Path::new("/dev/tcp/192.0.2.1/80"), true),
            None
        );
    }

    #[test]
    fn a_script_the_command_could_not_read_is_not_read_for_paths_either() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::create_dir(&secret).unwrap();
        let script = secret.join("s.sh");
        std::fs::write(&script, "echo x > /etc/planted\n").unwrap();
        let spec = SandboxSpec {
            hidden: vec![secret.clone()],
            workdir: dir.path().to_path_buf(),
            ..SandboxSpec::default()
        };
        let command = [OsString::from("sh"), script.clone().into_os_string()];
        let found = find(&spec, &command, None);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].path, script);
        assert_eq!(found[0].reason, HiddenReason::Hidden);
    }
}
