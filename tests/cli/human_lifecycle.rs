//! What a person sees: the human output of each command, piped (no colour, no progress).

use crate::fixture::{Fixture, snapshot_settings};

struct Session<'a> {
    fx: &'a Fixture,
    transcript: String,
}

impl Session<'_> {
    fn run(&mut self, args: &[&str]) -> i32 {
        let out = self.fx.cmd().args(args).output().unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(
            !stdout.contains('\x1b') && !stderr.contains('\x1b'),
            "escape sequences in piped output"
        );
        let code = out.status.code().unwrap_or(-1);
        self.transcript
            .push_str(&format!("$ a3s-iso {}  (exit {code})\n", args.join(" ")));
        for line in stdout.lines() {
            self.transcript.push_str(&format!("{line}\n"));
        }
        for line in stderr.lines() {
            self.transcript.push_str(&format!("[stderr] {line}\n"));
        }
        code
    }
}

#[test]
fn the_whole_lifecycle_as_a_person_sees_it() {
    let fx = Fixture::new();
    let mut s = Session {
        fx: &fx,
        transcript: String::new(),
    };
    fx.write("wip.txt", "local work\n");
    s.run(&["bind", "-s", "demo"]);
    s.run(&["bind", "-s", "demo", "--allow-dirty"]);
    std::fs::remove_file(fx.src.join("wip.txt")).unwrap();
    s.run(&["bind", "-s", "demo"]);
    s.run(&[
        "run",
        "-s",
        "demo",
        "--no-sandbox",
        "--run-id",
        "edit",
        "--",
        "sh",
        "-c",
        "echo 'agent line' >> README.md; echo new > added.txt",
    ]);
    s.run(&["capture", "-s", "demo", "--run-id", "cap"]);
    s.run(&[
        "verify",
        fx.src
            .join(".git/a3s-iso/runs/demo/cap.json")
            .to_str()
            .unwrap(),
    ]);
    s.run(&["list"]);
    s.run(&["promote", "-s", "demo", "--no-apply"]);
    s.run(&["promote", "-s", "demo"]);
    s.run(&["promote", "-s", "demo"]);
    fx.commit_all("take the agent's work");
    s.run(&["bind", "-s", "late"]);
    std::fs::write(fx.isolation("late").join("late.txt"), "late\n").unwrap();
    fx.write("user.txt", "the user's own commit\n");
    fx.commit_all("the user moves on");
    s.run(&["promote", "-s", "late"]);
    s.run(&["bind", "-s", "idle"]);
    s.run(&["promote", "-s", "idle"]);
    s.run(&["retain", "-s", "late", "--reason", "look at it later"]);
    s.run(&["sweep", "--dry-run"]);
    s.run(&["discard", "-s", "idle"]);
    s.run(&["discard", "-s", "idle"]);
    s.run(&["capture", "-s", "nope"]);
    snapshot_settings(&fx).bind(|| insta::assert_snapshot!("lifecycle", s.transcript));
}

#[test]
fn colour_only_when_asked_and_never_in_json() {
    let fx = Fixture::new();
    fx.bind("c");
    let plain = fx.cmd().args(["--json", "list"]).output().unwrap();
    let forced = fx
        .cmd()
        .args(["--json", "--color", "always", "list"])
        .output()
        .unwrap();
    assert_eq!(plain.stdout, forced.stdout);
    let coloured = fx
        .cmd()
        .args(["--color", "always", "bind", "-s", "c"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&coloured.stdout).contains('\x1b'));
    let error = fx
        .cmd()
        .args(["--color", "always", "capture", "-s", "missing"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&error.stderr).contains("\x1b[31;1merror[session_not_found]:"));
    let never = fx
        .cmd()
        .args(["--color", "never", "bind", "-s", "c"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&never.stdout).contains('\x1b'));
}

/// Terminal escapes an attacker would plant: a window title (OSC 0), a clipboard write
/// (OSC 52), a screen clear, a bell, a carriage return that overwrites the line, and a C1 CSI.
const HOSTILE: &str = "x\u{1b}]0;pwned\u{7}\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2J\rY\u{9b}31m";

/// The bytes a3s-iso wrote, checked as a terminal would take them: every ESC starts one of
/// a3s-iso's own colour sequences (`ESC [ digits ; m`); no BEL, no CR, no C1 control, no other
/// control character but newline and tab.
pub(crate) fn assert_inert(what: &str, bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let mut rest = text.as_ref();
    while let Some(at) = rest.find('\u{1b}') {
        let after = &rest[at + 1..];
        let sgr = after.strip_prefix('[').and_then(|s| {
            let end = s.find(|c: char| !(c.is_ascii_digit() || c == ';'))?;
            (s.as_bytes()[end] == b'm').then_some(&s[end + 1..])
        });
        match sgr {
            Some(next) => rest = next,
            None => panic!("{what}: an escape sequence that is not a colour: {text:?}"),
        }
    }
    let bad: Vec<char> = text
        .chars()
        .filter(|&c| {
            (c.is_control() && !matches!(c, '\n' | '\t' | '\u{1b}'))
                || ('\u{80}'..='\u{9f}').contains(&c)
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{what}: control characters {bad:?} in {text:?}"
    );
}

fn coloured(fx: &Fixture, args: &[&str]) -> std::process::Output {
    fx.cmd()
        .args(["--color", "always"])
        .args(args)
        .output()
        .unwrap()
}

/// Ids and fields of a change-set document, file names of a session and of a document's patch
/// reach the terminal inert, in every command's human output, colours on.
#[test]
fn strings_from_outside_reach_the_terminal_inert() {
    let fx = Fixture::new();
    fx.bind("evil");
    let iso = fx.isolation("evil");
    let name = format!("note{HOSTILE}.txt");
    std::fs::write(iso.join(&name), "hello\n").unwrap();
    std::fs::write(iso.join("README.md"), format!("hello\n{HOSTILE}\n")).unwrap();
    let document = fx.root.join("evil.json");
    let (code, doc) = fx.json(&["capture", "-s", "evil", "-o", document.to_str().unwrap()]);
    assert_eq!(code, 0, "{doc}");
    // A run whose command line carries them (`show` and `log --runs` print it).
    let run = ["run", "-s", "evil", "--no-sandbox", "--", "true", HOSTILE];
    let (code, doc) = fx.json(&run);
    assert_eq!(code, 0, "{doc}");
    // A digest-valid document whose ids carry the escapes (the digest covers the patch only).
    let mut forged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&document).unwrap()).unwrap();
    // (ids may hold no CR: the document's rules refuse it.)
    let hostile_id = HOSTILE.replace('\r', "");
    forged["identity"]["session_id"] = format!("s{hostile_id}").into();
    forged["identity"]["run_id"] = format!("r{hostile_id}").into();
    let forged_path = fx.root.join("forged.json");
    std::fs::write(&forged_path, serde_json::to_vec_pretty(&forged).unwrap()).unwrap();
    let forged_arg = forged_path.to_str().unwrap();
    let commands: Vec<Vec<&str>> = vec![
        vec!["verify", forged_arg],
        vec!["diff", "-s", "evil", "--stat"],
        vec!["diff", "-s", "evil", "--name-only"],
        vec!["diff", "--change-set", forged_arg, "--stat"],
        vec!["capture", "-s", "evil"],
        vec!["show", "-s", "evil"],
        vec!["promote", "--change-set", forged_arg, "--no-apply"],
        vec!["promote", "--change-set", forged_arg],
        vec!["log"],
        vec!["log", "--runs"],
        vec!["list"],
    ];
    for args in commands {
        let out = coloured(&fx, &args);
        let what = args.join(" ");
        assert!(
            out.status.code().is_some(),
            "{what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_inert(&format!("{what} (stdout)"), &out.stdout);
        assert_inert(&format!("{what} (stderr)"), &out.stderr);
    }
    // And the landed file is there, byte for byte: inert output, not altered content.
    let landed = std::fs::read(fx.src.join(&name));
    assert_eq!(landed.ok().as_deref(), Some(&b"hello\n"[..]));
}

/// `diff --name-only` quotes an unusual name as `git diff --name-only` does, and `-z` gives its
/// exact bytes.
#[test]
fn name_only_quotes_as_git_does_and_z_gives_the_bytes() {
    use std::os::unix::ffi::OsStrExt;
    let fx = Fixture::new();
    fx.bind("names");
    let iso = fx.isolation("names");
    let name: &[u8] = b"new\nline\t\"q\"\xff.txt";
    std::fs::write(iso.join(std::ffi::OsStr::from_bytes(name)), "x\n").unwrap();
    let out = fx
        .cmd()
        .args(["diff", "-s", "names", "--name-only"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let shown = String::from_utf8(out.stdout).unwrap();
    // What git itself prints for the same change in the isolation.
    fx.git(&iso, &["add", "-A"]);
    let git = fx.git(&iso, &["diff", "--cached", "--name-only", "HEAD"]);
    assert_eq!(shown.trim_end(), git.trim_end());
    assert_eq!(shown.trim_end(), r#""new\nline\t\"q\"\377.txt""#);
    let out = fx
        .cmd()
        .args(["diff", "-s", "names", "--name-only", "-z"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout, [name, b"\0"].concat());
}
