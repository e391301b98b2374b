//! Every way `land` stops prints a hint whose commands, run as printed once what it asks for
//! is done, move the queue on: each test here stops a queue one way, follows the
//! printed hint literally and checks the session landed.

use crate::fixture::{Fixture, wait_for};
use crate::land_queue::session_adding_its_file;

/// Runs `a3s-iso ARGS` with human output; its exit code and the commands of its hint (each
/// between backticks on the `hint:` line of stderr).
fn stop(fx: &Fixture, args: &[&str]) -> (i32, Vec<String>) {
    let out = fx.cmd().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.code().unwrap_or(-1), commands_of(&stderr))
}

/// Runs each command of a hint as printed; each must succeed.
fn follow(fx: &Fixture, commands: &[String]) {
    for command in commands {
        let words: Vec<&str> = command.split_whitespace().collect();
        assert_eq!(words[0], "a3s-iso", "{command}");
        let out = fx.cmd().args(&words[1..]).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "`{command}` did not move on:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The session's file is in HEAD's tree and no queue waits.
fn landed(fx: &Fixture, file: &str, content: &str) {
    assert_eq!(fx.git(&fx.src, &["show", &format!("HEAD:{file}")]), content);
    assert!(!fx.src.join(".git/a3s-iso/land.json").exists());
}

#[test]
fn land_hint_after_a_rebase_conflict_moves_on() {
    let fx = Fixture::new();
    fx.bind("s");
    std::fs::write(fx.isolation("s").join("README.md"), "session\n").unwrap();
    fx.write("README.md", "user\n");
    fx.commit_all("the user's README");
    let (code, commands) = stop(&fx, &["land", "-s", "s"]);
    assert_eq!(code, 3);
    std::fs::write(fx.isolation("s").join("README.md"), "both\n").unwrap();
    crate::fixture::iso_git(&fx, "s", &["add", "README.md"]);
    follow(&fx, &commands);
    landed(&fx, "README.md", "both");
}

#[test]
fn land_hint_after_a_failed_test_moves_on() {
    let fx = Fixture::new();
    session_adding_its_file(&fx, "s");
    std::fs::write(fx.isolation("s").join("fail-me"), "\n").unwrap();
    let args = [
        "land",
        "-s",
        "s",
        "--no-sandbox",
        "--test",
        "test ! -e fail-me",
    ];
    let (code, commands) = stop(&fx, &args);
    assert_eq!(code, 3);
    std::fs::remove_file(fx.isolation("s").join("fail-me")).unwrap();
    follow(&fx, &commands);
    landed(&fx, "s.txt", "s");
}

#[test]
fn land_hint_after_your_uncommitted_file_in_the_way_moves_on() {
    let fx = Fixture::new();
    session_adding_its_file(&fx, "s");
    fx.write("s.txt", "the user's own\n");
    let (code, commands) = stop(&fx, &["land", "-s", "s"]);
    assert_ne!(code, 0);
    std::fs::rename(fx.src.join("s.txt"), fx.root.join("moved-away.txt")).unwrap();
    follow(&fx, &commands);
    landed(&fx, "s.txt", "s");
}

#[test]
fn land_hint_after_head_moved_during_the_test_moves_on() {
    let fx = Fixture::new();
    session_adding_its_file(&fx, "a");
    session_adding_its_file(&fx, "b");
    let flags = fx.root.join("flags");
    std::fs::create_dir_all(&flags).unwrap();
    std::fs::write(flags.join("block"), "").unwrap();
    let dir = flags.display();
    let test = format!(
        "if [ -e {dir}/block ]; then touch {dir}/started; \
         while [ ! -e {dir}/go ]; do sleep 0.05; done; rm -f {dir}/block; fi"
    );
    let args = ["land", "-s", "a", "--no-sandbox", "--test", test.as_str()];
    let first = spawn_human(&fx, &args);
    wait_for(&flags.join("started"), std::time::Duration::from_secs(20));
    let (code, b) = fx.json(&["land", "-s", "b"]);
    assert_eq!(code, 0, "{b}");
    std::fs::write(flags.join("go"), "").unwrap();
    let out = first.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let commands = commands_of(&stderr);
    follow(&fx, &commands);
    landed(&fx, "a.txt", "a");
    landed(&fx, "b.txt", "b");
}

/// HEAD moved after the landing read it, while the session was rebased onto it: the test
/// passes on a base that is no longer HEAD, so nothing lands; the hint moves on.
#[cfg(feature = "fault-injection")]
#[test]
fn land_hint_after_head_moved_during_the_rebase_moves_on() {
    let fx = Fixture::new();
    session_adding_its_file(&fx, "a");
    fx.write("user-1.txt", "one\n");
    fx.commit_all("the user's first commit");
    let first = fx
        .cmd()
        .env("A3S_ISO_TEST_FAULT", "land-pause-after-rebase")
        .args(["land", "-s", "a", "--no-sandbox", "--test", "true"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    crate::fixture::wait_stopped(first.id(), "land");
    fx.write("user-2.txt", "two\n");
    let moved_to = fx.commit_all("the user's second commit");
    let pid = rustix::process::Pid::from_raw(first.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).unwrap();
    let out = first.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    // Nothing landed: HEAD is the user's commit, and the session's file is only in its
    // isolation.
    assert_eq!(
        fx.git(&fx.src, &["rev-parse", "HEAD"]).trim(),
        moved_to.trim()
    );
    assert!(!fx.src.join("a.txt").exists());
    assert_eq!(
        std::fs::read_to_string(fx.isolation("a").join("a.txt")).unwrap(),
        "a\n"
    );
    follow(&fx, &commands_of(&stderr));
    landed(&fx, "a.txt", "a");
    landed(&fx, "user-2.txt", "two");
}

fn spawn_human(fx: &Fixture, args: &[&str]) -> std::process::Child {
    fx.cmd()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

fn commands_of(stderr: &str) -> Vec<String> {
    let hint = stderr
        .lines()
        .find(|l| l.trim_start().starts_with("hint:"))
        .unwrap_or_else(|| panic!("no hint:\n{stderr}"));
    let mut commands: Vec<String> = hint
        .split('`')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect();
    if commands.is_empty() {
        commands = bare_commands(hint);
    }
    assert!(!commands.is_empty(), "no command in the hint: {hint}");
    commands
}

/// The commands a hint names without quoting them, in order: `a3s-iso rebase -s ID …` (its
/// options) and `a3s-iso land`, leaving out those inside `$(…)`.
fn bare_commands(hint: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in hint.match_indices("a3s-iso ") {
        if hint[..at].ends_with("$(") {
            continue;
        }
        let words: Vec<&str> = hint[at..].split_whitespace().collect();
        let taken = match words.get(1) {
            Some(&"rebase") => 5,
            Some(w) if w.starts_with("land") => 2,
            _ => continue,
        };
        let line: Vec<&str> = words
            .iter()
            .take(taken)
            .map(|w| w.trim_end_matches([',', ';', ')']))
            .collect();
        found.push(line.join(" "));
    }
    found
}

/// `--json` carries the same commands as the human hint.
#[test]
fn land_hint_json_names_the_commands() {
    let fx = Fixture::new();
    session_adding_its_file(&fx, "s");
    std::fs::write(fx.isolation("s").join("fail-me"), "\n").unwrap();
    let args = [
        "land",
        "-s",
        "s",
        "--no-sandbox",
        "--test",
        "test ! -e fail-me",
    ];
    let (code, doc) = fx.json(&args);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(
        doc["next_commands"],
        serde_json::json!(["a3s-iso land"]),
        "{doc}"
    );
    assert!(
        doc["hint"].as_str().unwrap().contains("`a3s-iso land`"),
        "{doc}"
    );
}

/// A run that holds the session's lease stops its landing (`session_busy`); once the run
/// ended, the hint's command lands it.
#[test]
fn land_hint_after_a_run_holds_the_session_moves_on() {
    let fx = Fixture::new();
    session_adding_its_file(&fx, "s");
    let flags = fx.root.join("flags");
    std::fs::create_dir_all(&flags).unwrap();
    let dir = flags.display();
    let script = format!("touch {dir}/started; while [ ! -e {dir}/go ]; do sleep 0.05; done");
    let run = spawn_human(
        &fx,
        &["run", "-s", "s", "--no-sandbox", "--", "sh", "-c", &script],
    );
    wait_for(&flags.join("started"), std::time::Duration::from_secs(20));
    let (code, commands) = stop(&fx, &["land", "-s", "s"]);
    assert_eq!(code, 1);
    std::fs::write(flags.join("go"), "").unwrap();
    assert!(run.wait_with_output().unwrap().status.success());
    follow(&fx, &commands);
    landed(&fx, "s.txt", "s");
}
