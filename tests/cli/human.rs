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
