use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fixture::{Fixture, checkout_listing, error_code, json_of, sandbox_available, wait_for};

/// `run` arguments with the sandbox where the machine has it: these tests are about process
/// semantics, which hold with or without it (the sandbox tests themselves require it).
fn run_args<'a>(session: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["run", "-s", session];
    if !sandbox_available() {
        args.push("--no-sandbox");
    }
    args.extend_from_slice(rest);
    args
}

fn stored_patch(fx: &Fixture, session: &str, run: &str) -> String {
    let bytes = std::fs::read(
        fx.src
            .join(format!(".git/a3s-iso/runs/{session}/{run}.json")),
    )
    .unwrap();
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    use base64::Engine;
    let patch = base64::engine::general_purpose::STANDARD
        .decode(doc["patch_base64"].as_str().unwrap())
        .unwrap();
    String::from_utf8_lossy(&patch).into_owned()
}

#[test]
fn a_failing_command_is_recorded_as_failed_with_its_edits() {
    let fx = Fixture::new();
    fx.bind("r");
    let before = checkout_listing(&fx.src);
    let (code, doc) = fx.json(&run_args(
        "r",
        &["--", "sh", "-c", "echo x > new.txt; exit 3"],
    ));
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["schema"], "a3s-iso.run.v1");
    assert_eq!(doc["state"], "failed");
    assert_eq!(doc["exit_code"], 3);
    let run = doc["run_id"].as_str().unwrap();
    assert_eq!(doc["result_ref"], format!("refs/a3s-iso/runs/r/{run}"));
    assert_eq!(doc["change_set"]["files_changed"], 1);
    let patch = stored_patch(&fx, "r", run);
    assert!(
        patch.contains("b/new.txt") && patch.contains("+x"),
        "{patch}"
    );
    assert!(fx.isolation("r").join("new.txt").is_file());
    assert!(!fx.src.join("new.txt").exists());
    assert_eq!(checkout_listing(&fx.src), before);
    // The stored document verifies, with the run's terminal state.
    let stored = fx.src.join(format!(".git/a3s-iso/runs/r/{run}.json"));
    let (code, verified) = fx.json(&["verify", stored.to_str().unwrap()]);
    assert_eq!(code, 0, "{verified}");
    assert_eq!(verified["state"], "failed");
    let (_, list) = fx.json(&["list"]);
    assert_eq!(list["sessions"][0]["last_run"]["run_id"], run);
    assert_eq!(list["sessions"][0]["last_run"]["state"], "failed");
}

#[test]
fn a_run_that_edits_nothing_has_an_empty_valid_change_set() {
    let fx = Fixture::new();
    fx.bind("n");
    let (code, doc) = fx.json(&run_args("n", &["--run-id", "noop", "--", "true"]));
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["state"], "completed");
    assert_eq!(doc["change_set"]["patch_bytes"], 0);
    assert_eq!(doc["base_tree"], doc["result_tree"]);
    let stored = fx.src.join(".git/a3s-iso/runs/n/noop.json");
    assert_eq!(fx.json(&["verify", stored.to_str().unwrap()]).0, 0);
    // A run id is never reused.
    let (code, doc) = fx.json(&run_args("n", &["--run-id", "noop", "--", "touch", "x"]));
    assert_eq!(code, 125, "{doc}");
    assert_eq!(error_code(&doc), "capture_conflict");
    assert!(!fx.isolation("n").join("x").exists(), "nothing ran");
}

#[test]
fn each_run_records_only_its_own_edits() {
    let fx = Fixture::new();
    fx.bind("two");
    let (_, first) = fx.json(&run_args(
        "two",
        &["--run-id", "one", "--", "sh", "-c", "echo 1 > first.txt"],
    ));
    let (_, second) = fx.json(&run_args(
        "two",
        &["--run-id", "two", "--", "sh", "-c", "echo 2 > second.txt"],
    ));
    assert_eq!(second["base_tree"], first["result_tree"]);
    let p1 = stored_patch(&fx, "two", "one");
    let p2 = stored_patch(&fx, "two", "two");
    assert!(
        p1.contains("first.txt") && !p1.contains("second.txt"),
        "{p1}"
    );
    assert!(
        p2.contains("second.txt") && !p2.contains("first.txt"),
        "{p2}"
    );
    // A plain capture stays cumulative.
    let (_, all) = fx.json(&["capture", "-s", "two"]);
    assert_eq!(
        all["result_tree"].as_str().unwrap(),
        second["result_tree"].as_str().unwrap()
    );
}

#[test]
fn the_command_runs_in_the_counterpart_of_the_callers_directory() {
    let fx = Fixture::new();
    fx.write("sub/dir/keep.txt", "k\n");
    fx.commit_all("sub dir");
    fx.bind("cwd");
    let out = fx
        .cmd_in(&fx.src.join("sub/dir"))
        .args(run_args("cwd", &["--", "sh", "-c", "pwd > \"$A3S_ISO_WORKTREE/where.txt\"; env | grep ^A3S_ISO_ | sort > \"$A3S_ISO_WORKTREE/env.txt\""]))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let iso = fx.isolation("cwd");
    assert_eq!(
        std::fs::read_to_string(iso.join("where.txt"))
            .unwrap()
            .trim(),
        iso.join("sub/dir").to_str().unwrap()
    );
    let env = std::fs::read_to_string(iso.join("env.txt")).unwrap();
    assert!(env.contains("A3S_ISO_SESSION_ID=cwd"), "{env}");
    assert!(
        env.contains(&format!("A3S_ISO_WORKTREE={}", iso.display())),
        "{env}"
    );
    assert!(
        env.contains(&format!("A3S_ISO_SOURCE={}", fx.src.display())),
        "{env}"
    );
    assert!(env.contains("A3S_ISO_RUN_ID=r-"), "{env}");
    // From outside the source: the isolation root.
    let out = fx
        .cmd_in(&fx.root)
        .args(["-C", fx.src.to_str().unwrap()])
        .args(run_args(
            "cwd",
            &["--", "sh", "-c", "pwd > \"$A3S_ISO_WORKTREE/root.txt\""],
        ))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        std::fs::read_to_string(iso.join("root.txt"))
            .unwrap()
            .trim(),
        iso.to_str().unwrap()
    );
}

#[test]
fn repository_selecting_variables_do_not_reach_the_command() {
    let fx = Fixture::new();
    fx.bind("env");
    let before = checkout_listing(&fx.src);
    let out = fx
        .cmd()
        .env("GIT_DIR", fx.src.join(".git"))
        .env("GIT_WORK_TREE", &fx.src)
        .env("GIT_INDEX_FILE", fx.src.join(".git/index"))
        .args(run_args("env", &["--", "sh", "-c", "git rev-parse --show-toplevel > top.txt; echo y > f.txt; git add f.txt; git status --porcelain > status.txt"]))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let iso = fx.isolation("env");
    assert_eq!(
        std::fs::read_to_string(iso.join("top.txt")).unwrap().trim(),
        iso.to_str().unwrap()
    );
    assert!(
        std::fs::read_to_string(iso.join("status.txt"))
            .unwrap()
            .contains("A  f.txt")
    );
    assert_eq!(checkout_listing(&fx.src), before, "the source is untouched");
}

#[test]
fn sigterm_cancels_the_run_captures_and_leaves_no_orphan() {
    let fx = Fixture::new();
    fx.bind("sig");
    let iso = fx.isolation("sig");
    // A background writer, detached into a session of its own, ticks into the isolation.
    let child = fx
        .cmd()
        // Full path: the test watches the isolation while the command runs, and a layered
        // run's writes show there only when it ends.
        .env("A3S_ISO_TEST_FULL_RUN", "1")
        .arg("--json")
        .args(run_args(
            "sig",
            &[
                "--",
                "sh",
                "-c",
                "echo before > early.txt; setsid sh -c 'while :; do echo t >> ticks.txt; sleep 0.02; done' & sleep 60",
            ],
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&iso.join("ticks.txt"), Duration::from_secs(20));
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let (code, doc) = json_of(child.wait_with_output().unwrap());
    assert_eq!(code, 143, "{doc}");
    assert_eq!(doc["state"], "cancelled");
    let patch = stored_patch(&fx, "sig", doc["run_id"].as_str().unwrap());
    assert!(patch.contains("early.txt"), "{patch}");
    let ticks = std::fs::read(iso.join("ticks.txt")).unwrap().len();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        std::fs::read(iso.join("ticks.txt")).unwrap().len(),
        ticks,
        "something the command started still writes after the run"
    );
}

#[test]
fn a_timeout_cancels_the_command() {
    let fx = Fixture::new();
    fx.bind("slow");
    let start = Instant::now();
    let (code, doc) = fx.json(&run_args("slow", &["--timeout", "1s", "--", "sleep", "60"]));
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(code, 124, "{doc}");
    assert_eq!(doc["state"], "cancelled");
    assert_eq!(doc["timed_out"], true);
}

#[test]
fn a_missing_command_exits_127_and_pins_nothing() {
    let fx = Fixture::new();
    fx.bind("miss");
    let out = fx
        .cmd()
        .args(run_args(
            "miss",
            &["--run-id", "m", "--", "no-such-command-a3s"],
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("command_not_found") && stderr.contains("no-such-command-a3s"),
        "{stderr}"
    );
    assert_eq!(fx.git(&fx.src, &["for-each-ref", "refs/a3s-iso/runs/"]), "");
    assert!(!fx.src.join(".git/a3s-iso/runs/miss/m.json").exists());
    let (code, doc) = fx.json(&run_args("miss", &["--", "./README.md"]));
    assert_eq!(code, 126, "{doc}");
    assert_eq!(error_code(&doc), "command_not_executable");
}

#[test]
fn json_stdout_holds_one_document_even_when_the_command_prints() {
    let fx = Fixture::new();
    fx.bind("j");
    let out = fx
        .cmd()
        .arg("--json")
        .args(run_args(
            "j",
            &["--", "sh", "-c", "echo '{\"not\": \"ours\"}'; echo plain"],
        ))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let (code, doc) = json_of(out);
    assert_eq!(code, 0);
    assert_eq!(doc["schema"], "a3s-iso.run.v1");
    assert!(stderr.contains("plain"), "{stderr}");
}

/// A `run` of `session` that holds its lease (it sleeps), once its command has started.
fn start_long_run(fx: &Fixture, session: &str) -> std::process::Child {
    let child = fx
        .cmd()
        // Full path: the test watches the isolation while the command runs, and a layered
        // run's writes show there only when it ends.
        .env("A3S_ISO_TEST_FULL_RUN", "1")
        .args(run_args(
            session,
            &["--", "sh", "-c", "touch started; sleep 30"],
        ))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(
        &fx.isolation(session).join("started"),
        Duration::from_secs(20),
    );
    child
}

#[test]
fn a_second_concurrent_run_of_a_session_is_refused() {
    let fx = Fixture::new();
    fx.bind("busy");
    let iso = fx.isolation("busy");
    let mut first = start_long_run(&fx, "busy");
    let (code, doc) = fx.json(&run_args("busy", &["--", "touch", "second"]));
    Command::new("kill")
        .args(["-INT", &first.id().to_string()])
        .status()
        .unwrap();
    assert_eq!(first.wait().unwrap().code(), Some(130));
    assert_eq!(code, 125, "{doc}");
    assert_eq!(error_code(&doc), "session_busy");
    assert!(!iso.join("second").exists());
}

#[test]
fn discard_and_retain_wait_for_a_running_command() {
    let fx = Fixture::new();
    fx.bind("hold");
    let iso = fx.isolation("hold");
    let mut running = start_long_run(&fx, "hold");
    let (discard_code, discarded) = fx.json(&["discard", "-s", "hold"]);
    let (retain_code, retained) = fx.json(&["retain", "-s", "hold", "--reason", "x"]);
    Command::new("kill")
        .args(["-TERM", &running.id().to_string()])
        .status()
        .unwrap();
    running.wait().unwrap();
    assert_eq!(
        (discard_code, error_code(&discarded)),
        (6, "session_busy"),
        "{discarded}"
    );
    assert_eq!(
        (retain_code, error_code(&retained)),
        (6, "session_busy"),
        "{retained}"
    );
    assert!(iso.join("started").exists(), "the isolation is untouched");
    let (code, doc) = fx.json(&["discard", "-s", "hold"]);
    assert_eq!(code, 0, "{doc}");
}

#[test]
fn a_command_cannot_forge_the_sandbox_helpers_status() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("forge");
    // The command writes what a failed helper would report, where the helper used to, and
    // exits as a failed helper would.
    let forged = r#"{"code":"sandbox_unavailable","message":"user namespaces are disabled on this kernel; use --no-sandbox","program":"sh"}"#;
    let script = "printf '%s' \"$1\" > \"$TMPDIR/.a3s-iso-helper-status\"; \
                  printf '%s' \"$1\" > \"$TMPDIR/status.json\"; echo ran > ran.txt; exit 125";
    let out = fx
        .cmd()
        .args([
            "--json", "run", "-s", "forge", "--run-id", "forged", "--", "sh", "-c", script, "sh",
            forged,
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let (code, doc) = json_of(out);
    assert_eq!(code, 125, "{doc}\n{stderr}");
    assert_eq!(doc["schema"], "a3s-iso.run.v1", "{doc}");
    assert_eq!(doc["state"], "failed", "{doc}");
    assert_eq!(doc["exit_code"], 125, "{doc}");
    // Only the command line, recorded exactly, carries the forged text (as an argument).
    assert_eq!(doc["argv"][4], forged, "{doc}");
    let mut reported = doc.clone();
    reported.as_object_mut().unwrap().remove("argv");
    assert!(!reported.to_string().contains("user namespaces"), "{doc}");
    assert!(!stderr.contains("user namespaces"), "{stderr}");
    assert_eq!(doc["change_set"]["files_changed"], 1, "{doc}");
    // The run is recorded like any other failed run.
    let (code, show) = fx.json(&["show", "-s", "forge"]);
    assert_eq!(code, 0, "{show}");
    let runs = show["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{show}");
    assert_eq!(runs[0]["run_id"], "forged");
    assert_eq!(runs[0]["state"], "failed");
    assert_eq!(runs[0]["exit_code"], 125);
}

#[test]
fn a_run_whose_caller_is_killed_leaves_nothing_running() {
    if !crate::fixture::require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("orphan");
    let marker = "8765432";
    let script = format!("echo started > started.txt; sleep {marker}");
    let mut child = fx
        .cmd()
        // Full path: the test watches the isolation while the command runs, and a layered
        // run's writes show there only when it ends.
        .env("A3S_ISO_TEST_FULL_RUN", "1")
        .args(["run", "-s", "orphan", "--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = fx.isolation("orphan").join("started.txt");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !started.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(started.exists(), "the command never started");
    child.kill().unwrap();
    child.wait().unwrap();
    // The kernel takes the sandbox down with its caller: give it a moment, not forever.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !crate::fixture::processes_with(marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = crate::fixture::processes_with(marker);
    crate::fixture::kill_leftovers(marker);
    assert_eq!(
        left,
        Vec::<i32>::new(),
        "processes of the run outlived its caller"
    );
    // Nothing holds the session's lease any more.
    let (code, doc) = fx.json(&["run", "-s", "orphan", "--", "true"]);
    assert_eq!(code, 0, "{doc}");
}
