//! `a3s-iso mcp` driven by the official MCP Python SDK (`tests/mcp_sdk/grants.py`): every
//! argument of every tool, asked beyond the server's grants, is refused; asked of a server
//! granted it, honoured. `scripts/test.sh` installs the SDK in a virtual environment of its
//! own and names its interpreter in `A3S_ISO_TEST_MCP_PYTHON`.

use std::path::PathBuf;
use std::process::Command;

use serde_json::json;

use crate::fixture::{BIN, Fixture, isolate, ok, require_tool};

/// The interpreter that has the SDK: `A3S_ISO_TEST_MCP_PYTHON`, else the virtual environment
/// `scripts/test.sh` makes under `target/`.
fn sdk_python() -> Option<PathBuf> {
    let python = std::env::var_os("A3S_ISO_TEST_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/mcp-sdk/bin/python")
        });
    let has_sdk = Command::new(&python)
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|out| out.status.success());
    has_sdk.then_some(python)
}

/// Runs the SDK script's `phase`; panics with its output when it reports a broken promise.
fn sdk_phase(fx: &Fixture, python: &PathBuf, config: &PathBuf, phase: &str) -> String {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_sdk/grants.py");
    let mut command = Command::new(python);
    command
        .arg(&script)
        .arg(config)
        .arg(phase)
        .current_dir(&fx.root);
    isolate(&mut command, &fx.home);
    command.env("GITHUB_TOKEN", "gh-secret-of-the-user");
    let out = command.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{phase}:\n{text}");
    text
}

/// The user's sessions, records and checkout, as bytes.
fn users_state(fx: &Fixture) -> Vec<(String, String)> {
    let state = crate::fixture::state_dir(fx);
    let mut seen: Vec<(String, String)> = Vec::new();
    for id in ["mine", "victim1", "victim2"] {
        let record = std::fs::read(state.join(format!("sessions/{id}.json"))).unwrap();
        seen.push((id.into(), String::from_utf8_lossy(&record).into_owned()));
        let tree = crate::fixture::listing(&fx.isolation(id));
        seen.push((format!("{id} tree"), format!("{tree:?}")));
    }
    let checkout = crate::fixture::checkout_listing(&fx.src);
    seen.push(("checkout".into(), format!("{checkout:?}")));
    let refs = fx.git(
        &fx.src,
        &["for-each-ref", "--format=%(refname) %(objectname)"],
    );
    let users: Vec<&str> = refs.lines().filter(|l| !l.contains("/s-")).collect();
    seen.push(("refs".into(), users.join("\n")));
    seen
}

#[test]
fn every_argument_of_every_tool_is_refused_beyond_the_grants_and_honoured_within() {
    if !require_tool("sandbox") {
        return;
    }
    let Some(python) = sdk_python() else {
        assert!(
            !require_tool("mcp-sdk"),
            "the MCP Python SDK is missing: scripts/test.sh installs it"
        );
        return;
    };
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.home.join(".ssh")).unwrap();
    std::fs::write(fx.home.join(".ssh/id_rsa"), "PRIVATE KEY LINE\n").unwrap();
    let (out, docs) = (fx.root.join("out"), fx.root.join("docs"));
    std::fs::create_dir_all(&out).unwrap();
    std::fs::create_dir_all(&docs).unwrap();
    // The user's own session (no owner: a server granted it may bind it again), promoted once
    // (its digest is journaled) and working on.
    ok(&fx, &["bind", "-s", "mine", "--owner", "none"]);
    std::fs::write(fx.isolation("mine").join("MINE.txt"), "the user's work\n").unwrap();
    let promoted = ok(&fx, &["promote", "-s", "mine"]);
    fx.git(&fx.src, &["add", "-A"]);
    fx.git(&fx.src, &["commit", "-q", "-m", "the user's promote"]);
    std::fs::write(fx.isolation("mine").join("MORE.txt"), "more work\n").unwrap();
    let document = docs.join("cs.json");
    ok(
        &fx,
        &["capture", "-s", "mine", "-o", document.to_str().unwrap()],
    );
    fx.bind("victim1");
    fx.bind("victim2");
    let config = fx.root.join("sdk.json");
    let settings = json!({
        "bin": BIN, "src": fx.src, "home": fx.home, "out": out,
        "document": document, "digest": promoted["digest"],
    });
    std::fs::write(&config, settings.to_string()).unwrap();

    let before = users_state(&fx);
    let refused = sdk_phase(&fx, &python, &config, "refuse");
    assert!(refused.contains("refuse: 57 properties"), "{refused}");
    assert_eq!(
        users_state(&fx),
        before,
        "refused calls changed the user's sessions"
    );
    assert!(!out.join("run.log").exists() && !out.join("cs.json").exists());

    let honoured = sdk_phase(&fx, &python, &config, "honour");
    assert!(honoured.contains("honour: 57 properties"), "{honoured}");
    eprintln!("{refused}{honoured}");
    // Granted, the calls did what they asked: a file written where output was granted, the
    // user's sessions discarded by a server granted every session.
    assert!(out.join("run.log").is_file() && out.join("cs.json").is_file());
    let (code, listed) = fx.json(&["list"]);
    assert_eq!(code, 0, "{listed}");
    assert_eq!(listed["sessions"], json!([]), "{listed}");
}
