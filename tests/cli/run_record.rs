//! What a run records of what it ran (its exit record, `run-exits/<id>/<run>.json`): the exact
//! command line, the working directory, the sandbox settings, the times and how it ended; and
//! how `run`, `show` and `log --runs` give it back.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use base64::Engine;
use serde_json::{Value, json};

use crate::contract_schemas::assert_conforms;
use crate::fixture::{Fixture, json_of, now_ms, sandbox_available};

/// An argument that is not UTF-8, and one a shell would split and unquote.
const NOT_UTF8: &[u8] = b"\xffname\xfe";
const QUOTED: &str = "it's \"quoted\" with  spaces";

/// The bytes of a recorded argv: each argument a string, or `{"bytes_base64": …}`.
fn argv_bytes(argv: &Value) -> Vec<Vec<u8>> {
    argv.as_array()
        .unwrap_or_else(|| panic!("argv is not an array: {argv}"))
        .iter()
        .map(|arg| match arg {
            Value::String(text) => text.as_bytes().to_vec(),
            other => base64::engine::general_purpose::STANDARD
                .decode(other["bytes_base64"].as_str().unwrap())
                .unwrap(),
        })
        .collect()
}

/// The command the test runs: it exits 4 after writing a file, so the run is `failed`.
fn expected_argv() -> Vec<Vec<u8>> {
    [
        b"sh".as_slice(),
        b"-c",
        b"echo ran > ran.txt; exit 4",
        b"sh",
        NOT_UTF8,
        QUOTED.as_bytes(),
    ]
    .map(<[u8]>::to_vec)
    .to_vec()
}

/// The fields every view of the test's run must give back exactly.
fn assert_ran(what: &str, run: &Value, (before, after): (u64, u64)) {
    assert_eq!(argv_bytes(&run["argv"]), expected_argv(), "{what}: {run}");
    assert_eq!(run["cwd"], "sub/dir", "{what}: {run}");
    assert_eq!(run["exit_code"], 4, "{what}: {run}");
    assert_eq!(run["state"], "failed", "{what}: {run}");
    assert_eq!(run["profile"], Value::Null, "{what}: {run}");
    assert_eq!(run["timeout_ms"], 600_000, "{what}: {run}");
    let started = run["started_at_ms"].as_u64().expect(what);
    let ended = run["ended_at_ms"].as_u64().expect(what);
    assert!(
        before <= started && started <= ended && ended <= after,
        "{what}: {before} {started} {ended} {after}"
    );
    let sandbox = &run["sandbox"];
    assert_eq!(sandbox["enabled"], false, "{what}: {run}");
    assert_eq!(sandbox["network"], "allowed", "{what}: {run}");
    assert_eq!(sandbox["allow_write"], json!([]), "{what}: {run}");
    let passed = sandbox["env_passed"].as_array().unwrap();
    assert!(passed.contains(&json!("NAMED_FOR_THE_RECORD")), "{what}");
    assert!(!run.to_string().contains("value-never-recorded"), "{what}");
}

/// Runs the test's command in `sub/dir` of session `rec`, unsandboxed; returns the `run`
/// document and the times around it.
fn run_the_command(fx: &Fixture) -> (Value, (u64, u64)) {
    let before = now_ms();
    let out = fx
        .cmd_in(&fx.src.join("sub/dir"))
        .args([
            "--json",
            "run",
            "-s",
            "rec",
            "--run-id",
            "odd",
            "--no-sandbox",
        ])
        .args([
            "--timeout",
            "10m",
            "--env",
            "NAMED_FOR_THE_RECORD=value-never-recorded",
        ])
        .args(["--", "sh", "-c", "echo ran > ran.txt; exit 4", "sh"])
        .arg(OsStr::from_bytes(NOT_UTF8))
        .arg(QUOTED)
        .output()
        .unwrap();
    let (code, doc) = json_of(out);
    assert_eq!(code, 4, "{doc}");
    (doc, (before, now_ms()))
}

#[test]
fn run_show_and_log_give_back_exactly_what_a_run_ran() {
    let fx = Fixture::new();
    fx.write("sub/dir/keep.txt", "k\n");
    fx.commit_all("sub dir");
    fx.bind("rec");
    let (ran, times) = run_the_command(&fx);
    assert_ran("run", &ran, times);
    let record = fx.src.join(".git/a3s-iso/run-exits/rec/odd.json");
    let record: Value = serde_json::from_slice(&std::fs::read(record).unwrap()).unwrap();
    assert_conforms(&record);
    assert_ran("the exit record", &record, times);

    let (code, show) = fx.json(&["show", "-s", "rec"]);
    assert_eq!(code, 0, "{show}");
    assert_ran("show", &show["runs"][0], times);
    let (code, log) = fx.json(&["log", "--runs"]);
    assert_eq!(code, 0, "{log}");
    assert_conforms(&log);
    assert_eq!(log["runs"][0]["session_id"], "rec", "{log}");
    assert_ran("log --runs", &log["runs"][0], times);

    // People read the command line shell-quoted, with where it ran and without the sandbox.
    let line = r#"sh -c 'echo ran > ran.txt; exit 4' sh $'\xffname\xfe' 'it'\''s "quoted" with  spaces'  (in sub/dir, --no-sandbox)"#;
    let human = human(&fx, &["show", "-s", "rec"]);
    assert!(human.contains(&format!("exit 4  {line}")), "{human}");
    let human = human_log(&fx);
    assert!(human.contains(line), "{human}");
    assert!(human.contains("rec      odd  failed"), "{human}");
}

fn human(fx: &Fixture, args: &[&str]) -> String {
    let out = fx.cmd().args(args).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn human_log(fx: &Fixture) -> String {
    human(fx, &["log", "--runs"])
}

/// Sandboxed, a run records what `--allow-network` and `--allow-write` granted; a capture
/// records no command; `log --runs` lists the newest first and keeps to `-s` and `--limit`.
#[test]
fn sandbox_settings_captures_and_the_order_of_log_runs() {
    let fx = Fixture::new();
    fx.bind("box");
    fx.bind("other");
    let allowed = fx.root.join("allowed dir");
    std::fs::create_dir(&allowed).unwrap();
    let mut args = vec!["run", "-s", "box", "--run-id", "first"];
    if sandbox_available() {
        args.extend([
            "--allow-network",
            "--allow-write",
            allowed.to_str().unwrap(),
        ]);
    } else {
        args.push("--no-sandbox");
    }
    args.extend(["--", "true"]);
    let (code, doc) = fx.json(&args);
    assert_eq!(code, 0, "{doc}");
    std::fs::write(fx.isolation("box").join("f.txt"), "f\n").unwrap();
    let (code, doc) = fx.json(&["capture", "-s", "box", "--run-id", "cap"]);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = fx.json(&["run", "-s", "other", "--no-sandbox", "--", "true"]);
    assert_eq!(code, 0, "{doc}");

    let (_, log) = fx.json(&["log", "--runs", "-s", "box"]);
    let runs = log["runs"].as_array().unwrap();
    let ids: Vec<&str> = runs.iter().map(|r| r["run_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["cap", "first"], "{log}");
    let capture = &runs[0];
    for field in ["argv", "cwd", "sandbox", "started_at_ms", "exit_code"] {
        assert_eq!(
            capture[field],
            Value::Null,
            "a capture runs nothing: {field}"
        );
    }
    let first = &runs[1];
    assert_eq!(first["argv"], json!(["true"]), "{first}");
    assert_eq!(first["cwd"], ".", "{first}");
    if sandbox_available() {
        let canonical = std::fs::canonicalize(&allowed).unwrap();
        assert_eq!(first["sandbox"]["enabled"], true, "{first}");
        assert_eq!(first["sandbox"]["network"], "allowed", "{first}");
        assert_eq!(
            first["sandbox"]["allow_write"],
            json!([canonical.to_str().unwrap()]),
            "{first}"
        );
        let human = human(&fx, &["show", "-s", "box"]);
        let quoted = format!("--allow-write '{}'", canonical.display());
        assert!(
            human.contains(&format!("true  (--allow-network, {quoted})")),
            "{human}"
        );
    }
    let (_, all) = fx.json(&["log", "--runs", "--limit", "2"]);
    let sessions: Vec<&str> = all["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(sessions, ["other", "box"], "{all}");
    let (_, none) = fx.json(&["log", "--runs", "-s", "nothing-here"]);
    assert_eq!(none["runs"], json!([]), "{none}");
    assert!(human(&fx, &["log", "--runs", "-s", "nothing-here"]).contains("no runs"));
}

/// An exit record written before a3s-iso kept what a run ran still reads: its exit code shows,
/// what it ran is `null`.
#[test]
fn an_exit_record_without_what_the_run_ran_still_loads() {
    let fx = Fixture::new();
    fx.bind("old");
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "old",
        "--no-sandbox",
        "--run-id",
        "r",
        "--",
        "sh",
        "-c",
        "exit 5",
    ]);
    assert_eq!(code, 5, "{doc}");
    let record = fx.src.join(".git/a3s-iso/run-exits/old/r.json");
    write_old_record(&record);
    let (code, show) = fx.json(&["show", "-s", "old"]);
    assert_eq!(code, 0, "{show}");
    assert_conforms(&show);
    let run = &show["runs"][0];
    assert_eq!(run["exit_code"], 5, "{run}");
    assert_eq!(run["state"], "failed", "{run}");
    for field in ["argv", "cwd", "sandbox", "started_at_ms", "ended_at_ms"] {
        assert_eq!(run[field], Value::Null, "{field}: {run}");
    }
    let (code, log) = fx.json(&["log", "--runs"]);
    assert_eq!(code, 0, "{log}");
    assert_eq!(log["runs"][0]["exit_code"], 5, "{log}");
    let human = human(&fx, &["show", "-s", "old"]);
    assert!(human.contains("  r  failed  "), "{human}");
    assert!(human.trim_end().ends_with("exit 5"), "{human}");
}

/// The exit record as a3s-iso wrote it before: how the command ended, nothing more.
fn write_old_record(path: &Path) {
    let old = json!({
        "schema": "a3s-iso.run_exit.v1",
        "exit_code": 5,
        "signal": null,
        "timed_out": false,
    });
    std::fs::write(path, serde_json::to_vec_pretty(&old).unwrap()).unwrap();
}
