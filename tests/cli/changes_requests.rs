//! `changes --request`: a change-set request (`a3s.code.agent-change-set-request.v1`) is
//! answered with the stored change-set document of exactly the run its identity names, or
//! refused with a code that says why: `change_set_pending` while the run has not ended,
//! `change_set_invalid` naming the rule and the field, `session_not_found`, `run_not_found`,
//! `change_set_unavailable`.

use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::fixture::{Fixture, change_set_request, error_code, kill_leftovers, wait_for};

/// The `agent_release_identity` the runs of these tests are recorded with.
fn release() -> String {
    format!("sha256:{}", "a1".repeat(32))
}

fn text(request: &Value) -> Vec<u8> {
    serde_json::to_vec_pretty(request).unwrap()
}

/// Session `s` with a finished run `r1` that changed `README.md`; the request for it.
fn finished_run(fx: &Fixture) -> Value {
    fx.bind("s");
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "s",
        "--no-sandbox",
        "--run-id",
        "r1",
        "--release-identity",
        &release(),
        "--",
        "sh",
        "-c",
        "echo 'from the agent' >> README.md",
    ]);
    assert_eq!(code, 0, "{doc}");
    change_set_request(&release(), "s", "r1")
}

#[test]
fn a_finished_run_is_answered_with_what_capture_gives_for_it() {
    let fx = Fixture::new();
    let request = finished_run(&fx);
    let file = fx.root.join("request.json");
    std::fs::write(&file, text(&request)).unwrap();
    let answer = fx
        .cmd()
        .args(["changes", "--request", file.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&answer.stderr);
    assert!(answer.status.success(), "{stderr}");
    let captured = fx
        .cmd()
        .args(["--json", "capture", "-s", "s", "--run-id", "r1"])
        .output()
        .unwrap();
    assert!(captured.status.success());
    assert_eq!(
        String::from_utf8_lossy(&answer.stdout),
        String::from_utf8_lossy(&captured.stdout),
        "changes and capture --run-id give the run's document byte for byte"
    );
    // From standard input, with --json: the same document.
    let (code, doc) = fx.changes(&text(&request));
    assert_eq!(code, 0, "{doc}");
    let captured: Value = serde_json::from_slice(&captured.stdout).unwrap();
    assert_eq!(doc, captured);
    assert_eq!(doc["identity"], request["identity"]);
    assert_eq!(doc["state"], "completed");
    let answered = fx.root.join("answer.json");
    std::fs::write(&answered, &answer.stdout).unwrap();
    let (code, verified) = fx.json(&["verify", answered.to_str().unwrap()]);
    assert_eq!(code, 0, "{verified}");
    assert_eq!(verified["valid"], true, "{verified}");
    assert_eq!(verified["run_id"], "r1", "{verified}");
}

/// Ends a background `a3s-iso run` as Ctrl-C would: it cancels its command and records it.
fn interrupt(run: &mut Child) {
    let pid = rustix::process::Pid::from_raw(run.id() as i32).unwrap();
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
    run.wait().unwrap();
}

#[test]
fn a_running_run_is_pending_until_it_has_ended() {
    let fx = Fixture::new();
    fx.bind("s");
    let marker = "a3s-iso-changes-pending-test";
    let script = format!("echo one > one.txt; sleep 30; : {marker}");
    let mut run = fx
        .cmd()
        .args(["run", "-s", "s", "--no-sandbox", "--run-id", "r2"])
        .args(["--release-identity", &release(), "--", "sh", "-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&fx.isolation("s").join("one.txt"), Duration::from_secs(20));
    let request = change_set_request(&release(), "s", "r2");
    let (code, doc) = fx.changes(&text(&request));
    let human = fx
        .cmd()
        .args(["changes", "--request", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let human = {
        use std::io::Write;
        let mut human = human;
        human
            .stdin
            .take()
            .unwrap()
            .write_all(&text(&request))
            .unwrap();
        human.wait_with_output().unwrap()
    };
    interrupt(&mut run);
    kill_leftovers(marker);
    assert_eq!(
        (code, error_code(&doc)),
        (75, "change_set_pending"),
        "{doc}"
    );
    assert_eq!(human.status.code(), Some(75));
    assert!(human.stdout.is_empty());
    let said = String::from_utf8_lossy(&human.stderr);
    assert!(said.starts_with("error[change_set_pending]: "), "{said}");
    // Ended (cancelled, its change set recorded): the document is the answer.
    let (code, doc) = fx.changes(&text(&request));
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["state"], "cancelled", "{doc}");
    assert_eq!(doc["identity"], request["identity"], "{doc}");
}

/// `(exit, code, rule, field)` of a refused request.
type Refusal = (i32, String, String, String);

fn refusal(fx: &Fixture, request: &[u8]) -> Refusal {
    let (exit, doc) = fx.changes(request);
    let field = |key: &str| doc["error"][key].as_str().unwrap_or("").to_string();
    (
        exit,
        error_code(&doc).to_string(),
        field("rule"),
        field("field"),
    )
}

fn invalid(rule: &str, field: &str) -> Refusal {
    (5, "change_set_invalid".into(), rule.into(), field.into())
}

fn not_found(code: &str) -> Refusal {
    (1, code.into(), String::new(), String::new())
}

/// Each field of a request changed, and the refusal that names its rule.
fn changed_fields(other_release: &str) -> Vec<(&'static str, Value, Refusal)> {
    vec![
        (
            "/schema",
            json!("a3s.code.agent-change-set.v1"),
            invalid("exact_string", "schema"),
        ),
        (
            "/identity/schema",
            json!("a3s.code.agent-run-identity.v2"),
            invalid("exact_string", "identity.schema"),
        ),
        (
            "/identity/protocol",
            json!("a3s.code.agent.v2"),
            invalid("exact_string", "identity.protocol"),
        ),
        (
            "/identity/agent_release_identity",
            json!(other_release),
            invalid("identity_mismatch", "identity.agent_release_identity"),
        ),
        (
            "/identity/agent_release_identity",
            json!(release().to_uppercase()),
            invalid("sha256_format", "identity.agent_release_identity"),
        ),
        (
            "/identity/session_id",
            json!("t"),
            not_found("session_not_found"),
        ),
        ("/identity/run_id", json!("r9"), not_found("run_not_found")),
        (
            "/identity/run_id",
            json!("r\n1"),
            invalid("id_format", "identity.run_id"),
        ),
        ("/identity", json!("s/r1"), invalid("type", "identity")),
    ]
}

/// An extra field, at the top and inside the identity; a missing one.
fn extra_and_missing_fields_are_refused(fx: &Fixture, request: &Value) {
    // An extra field, at the top and inside the identity; a missing one.
    let mut extra = request.clone();
    extra["extra"] = json!(1);
    assert_eq!(
        refusal(fx, &text(&extra)),
        invalid("unknown_field", "extra")
    );
    let mut extra = request.clone();
    extra["identity"]["extra"] = json!(1);
    assert_eq!(
        refusal(fx, &text(&extra)),
        invalid("unknown_field", "identity.extra")
    );
    let mut missing = request.clone();
    missing["identity"]
        .as_object_mut()
        .unwrap()
        .remove("run_id");
    assert_eq!(
        refusal(fx, &text(&missing)),
        invalid("missing_field", "identity.run_id")
    );
}

/// A key twice, not JSON, too large.
fn malformed_documents_are_refused(fx: &Fixture, request: &Value) {
    // A key twice, not JSON, too large.
    let twice = String::from_utf8(text(request)).unwrap().replace(
        "\"run_id\": \"r1\"",
        "\"run_id\": \"r1\", \"run_id\": \"r2\"",
    );
    assert_eq!(
        refusal(fx, twice.as_bytes()),
        invalid("duplicate_key", "identity.run_id")
    );
    assert_eq!(refusal(fx, b"{"), invalid("json", "(document)"));
    let mut padded = vec![b' '; 20_000];
    padded.extend(text(request));
    assert_eq!(refusal(fx, &padded), invalid("document_size", "(document)"));
}

#[test]
fn a_request_that_differs_in_any_field_is_refused_naming_the_rule() {
    let fx = Fixture::new();
    let request = finished_run(&fx);
    let other_release = format!("sha256:{}", "b2".repeat(32));
    let cases = changed_fields(&other_release);
    for (pointer, value, expected) in cases {
        let mut changed = request.clone();
        *changed.pointer_mut(pointer).unwrap() = value.clone();
        assert_eq!(
            refusal(&fx, &text(&changed)),
            expected,
            "{pointer} = {value}"
        );
    }
    extra_and_missing_fields_are_refused(&fx, &request);
    malformed_documents_are_refused(&fx, &request);
    // The human form names the rule and the field as well.
    let mut mismatch = request.clone();
    mismatch["identity"]["agent_release_identity"] = json!(other_release);
    let file = fx.root.join("mismatch.json");
    std::fs::write(&file, text(&mismatch)).unwrap();
    let out = fx
        .cmd()
        .args(["changes", "--request", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5));
    assert!(out.stdout.is_empty());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("(identity_mismatch) at identity.agent_release_identity"),
        "{said}"
    );
}

#[test]
fn unknown_sessions_and_runs_are_not_found_and_evidence_outlives_the_isolation() {
    let fx = Fixture::new();
    let request = finished_run(&fx);
    let asking = |session: &str, run: &str| {
        let (exit, doc) = fx.changes(&text(&change_set_request(&release(), session, run)));
        (exit, error_code(&doc).to_string())
    };
    let session_not_found = (1, "session_not_found".to_string());
    let run_not_found = (1, "run_not_found".to_string());
    assert_eq!(asking("nope", "r1"), session_not_found);
    assert_eq!(asking("../s", "r1"), session_not_found);
    assert_eq!(asking("s", "r9"), run_not_found);
    assert_eq!(asking("s", "../r1"), run_not_found);
    // A request file that cannot be read is the caller's: invalid_input.
    let missing = fx.root.join("missing.json");
    let (exit, doc) = fx.json(&["changes", "--request", missing.to_str().unwrap()]);
    assert_eq!((exit, error_code(&doc)), (5, "invalid_input"), "{doc}");
    // Discarded, the session keeps its evidence: still the answer. Purged, it is gone.
    let (exit, doc) = fx.json(&["discard", "-s", "s"]);
    assert_eq!(exit, 0, "{doc}");
    let (exit, doc) = fx.changes(&text(&request));
    assert_eq!(exit, 0, "{doc}");
    assert_eq!(doc["identity"], request["identity"]);
    let (exit, doc) = fx.json(&["discard", "-s", "s", "--purge"]);
    assert_eq!(exit, 0, "{doc}");
    assert_eq!(asking("s", "r1"), session_not_found);
}

#[test]
fn a_change_set_that_cannot_be_produced_is_unavailable() {
    let fx = Fixture::new();
    let request = change_set_request(&release(), "s", "big");
    // Outside a git repository.
    let file = fx.root.join("request.json");
    std::fs::write(&file, text(&request)).unwrap();
    let outside = ["changes", "--request", file.to_str().unwrap()];
    let (exit, doc) = fx.json_in(&fx.root, &outside);
    assert_eq!(
        (exit, error_code(&doc)),
        (1, "change_set_unavailable"),
        "{doc}"
    );
    // A patch over the bound of a document: the run ended, its result is pinned, no document.
    fx.bind("s");
    let (exit, doc) = fx.json(&[
        "run",
        "-s",
        "s",
        "--no-sandbox",
        "--run-id",
        "big",
        "--release-identity",
        &release(),
        "--",
        "sh",
        "-c",
        "head -c 3300000 /dev/urandom | base64 > big.txt",
    ]);
    assert_eq!(exit, 0, "{doc}");
    assert!(doc["change_set"].is_null(), "{doc}");
    let (exit, doc) = fx.changes(&text(&request));
    assert_eq!(
        (exit, error_code(&doc)),
        (1, "change_set_unavailable"),
        "{doc}"
    );
    let message = doc["error"]["message"].as_str().unwrap();
    assert!(message.contains("refs/a3s-iso/runs/s/big"), "{message}");
}
