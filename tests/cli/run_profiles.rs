//! Run profiles (`run --profile`) and allowed files that survive write-then-rename.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::fixture::{Fixture, error_code, require_tool};

macro_rules! require_sandbox {
    () => {
        if !require_tool("sandbox") {
            return;
        }
    };
}

/// A stand-in for Claude Code: saves its settings the way it does (write a temporary file,
/// rename it over the real one) and prints the key it was given.
const FAKE_CLAUDE: &str = r#"#!/bin/sh
set -e
mkdir -p "$HOME/.claude"
printf '{"theme":"%s"}' "$1" > "$HOME/.claude/settings.json.tmp"
mv "$HOME/.claude/settings.json.tmp" "$HOME/.claude/settings.json"
printf '{"userID":"%s"}' "$1" > "$HOME/.claude.json.tmp"
mv "$HOME/.claude.json.tmp" "$HOME/.claude.json"
echo "key=$ANTHROPIC_API_KEY"
if ls -A "$HOME/.ssh" | grep -q .; then echo ssh-visible; fi
"#;

fn write_script(fx: &Fixture, name: &str, text: &str) -> String {
    let path = fx.root.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_str().unwrap().to_string()
}

/// The profile's copies for the fixture's source: the one repository its runs used.
fn profile_home(fx: &Fixture, name: &str) -> std::path::PathBuf {
    let repos = fx
        .home
        .join(".local/share/a3s-iso/profiles")
        .join(name)
        .join("repos");
    let keys: Vec<_> = std::fs::read_dir(&repos).unwrap().collect();
    assert_eq!(keys.len(), 1, "{}", repos.display());
    keys[0].as_ref().unwrap().path().join("home")
}

fn run_with_key(fx: &Fixture, args: &[&str]) -> (i32, serde_json::Value, String) {
    let out = fx
        .cmd()
        .env("ANTHROPIC_API_KEY", "sk-test-123")
        .env("OPENAI_API_KEY", "sk-openai")
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let (code, doc) = crate::fixture::json_of(out);
    (code, doc, stderr)
}

/// The user's real claude settings, and a key the profile must not see.
fn real_claude_settings_and_a_key(fx: &Fixture) {
    std::fs::create_dir_all(fx.home.join(".claude")).unwrap();
    std::fs::write(
        fx.home.join(".claude/settings.json"),
        b"{\"theme\":\"real\"}",
    )
    .unwrap();
    std::fs::write(fx.home.join(".claude.json"), b"{\"userID\":\"real\"}").unwrap();
    std::fs::create_dir_all(fx.home.join(".ssh")).unwrap();
    std::fs::write(fx.home.join(".ssh/id_ed25519"), b"PRIVATE").unwrap();
}

/// The run's document names the profile, its hosts, and the one key it passed.
fn the_run_names_the_profile_and_its_key(doc: &serde_json::Value) {
    assert_eq!(doc["profile"], "claude");
    let profile = &doc["sandbox"]["profile"];
    assert_eq!(profile["name"], "claude", "{doc}");
    assert!(
        profile["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h == "@anthropic"),
        "{doc}"
    );
    let passed = doc["sandbox"]["env_passed"].as_array().unwrap();
    assert!(passed.iter().any(|n| n == "ANTHROPIC_API_KEY"), "{doc}");
    assert!(!passed.iter().any(|n| n == "OPENAI_API_KEY"), "{doc}");
}

/// The settings are in the profile's own home, seeded from the real one on first use; the
/// real ones are unchanged, byte for byte, and nothing was left beside them.
fn the_settings_stay_in_the_profiles_home(
    fx: &Fixture,
    before: &std::collections::BTreeMap<String, String>,
) {
    // The settings are in the profile's own home, seeded from the real one on first use.
    let home = profile_home(fx, "claude");
    assert_eq!(
        std::fs::read(home.join(".claude/settings.json")).unwrap(),
        b"{\"theme\":\"dark\"}"
    );
    assert_eq!(
        std::fs::read(home.join(".claude.json")).unwrap(),
        b"{\"userID\":\"dark\"}"
    );
    assert!(!home.join(".ssh").exists());
    // The real ones are unchanged, byte for byte, and nothing was left beside them.
    assert_eq!(
        crate::fixture::content_listing(&fx.home.join(".claude")),
        *before
    );
    assert_eq!(
        std::fs::read(fx.home.join(".claude.json")).unwrap(),
        b"{\"userID\":\"real\"}"
    );
    assert!(!fx.home.join(".claude.json.tmp").exists());
}

#[test]
fn claude_profile_keeps_its_settings_in_its_own_home_and_never_writes_the_real_one() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("c1");
    fx.bind("c2");
    real_claude_settings_and_a_key(&fx);
    let before = crate::fixture::content_listing(&fx.home.join(".claude"));
    let script = write_script(&fx, "fake-claude", FAKE_CLAUDE);
    let (code, doc, stderr) = run_with_key(
        &fx,
        &[
            "run",
            "-s",
            "c1",
            "--profile",
            "claude",
            "--",
            &script,
            "dark",
        ],
    );
    assert_eq!(code, 0, "{doc}\n{stderr}");
    assert!(stderr.contains("key=sk-test-123"), "{stderr}");
    assert!(!stderr.contains("ssh-visible"), "{stderr}");
    the_run_names_the_profile_and_its_key(&doc);
    the_settings_stay_in_the_profiles_home(&fx, &before);
    // The next run, in another session, sees what the first one saved.
    let reader = write_script(
        &fx,
        "reader",
        "#!/bin/sh\ncat \"$HOME/.claude/settings.json\" \"$HOME/.claude.json\"\n",
    );
    let (code, doc, stderr) = run_with_key(
        &fx,
        &["run", "-s", "c2", "--profile", "claude", "--", &reader],
    );
    assert_eq!(code, 0, "{doc}\n{stderr}");
    assert!(
        stderr.contains("{\"theme\":\"dark\"}{\"userID\":\"dark\"}"),
        "{stderr}"
    );
    // show says which profile the run used.
    let (code, show) = fx.json(&["show", "-s", "c1"]);
    assert_eq!(code, 0, "{show}");
    let run = &show["runs"][0];
    assert_eq!(run["profile"], "claude", "{show}");
    assert_eq!(run["sandbox"]["profile"]["name"], "claude", "{show}");
    let out = fx.cmd().args(["show", "-s", "c1"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("--profile claude"), "{text}");
}

#[test]
fn an_allowed_file_survives_write_then_rename() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("wr");
    let file = fx.home.join(".claude.json");
    std::fs::write(&file, b"old").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(fx.home.join(".other"), b"keep").unwrap();
    let listing = |dir: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let before = listing(&fx.home);
    let script = "printf new > \"$HOME/.claude.json.tmp\" && mv \"$HOME/.claude.json.tmp\" \"$HOME/.claude.json\" \
                  && echo changed > \"$HOME/.other\" && echo x > \"$HOME/stray\"";
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "wr",
        "--allow-write",
        file.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(std::fs::read(&file).unwrap(), b"new");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(std::fs::read(fx.home.join(".other")).unwrap(), b"keep");
    assert_eq!(listing(&fx.home), before);
    assert_eq!(doc["profile"], serde_json::Value::Null);
}

#[test]
fn an_unknown_profile_runs_nothing_and_a_user_profile_works() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("up");
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "up",
        "--profile",
        "nosuch",
        "--",
        "touch",
        "ran.txt",
    ]);
    assert_eq!(code, 5, "{doc}");
    assert_eq!(error_code(&doc), "invalid_input");
    assert!(!fx.isolation("up").join("ran.txt").exists());
    let (_, show) = fx.json(&["show", "-s", "up"]);
    assert_eq!(show["runs"].as_array().map_or(0, Vec::len), 0, "{show}");
    // A profile of the user's own.
    let config = fx.home.join(".config/a3s-iso/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(
        &config,
        "[profiles.mytool]\nwritable = [\"~/.mytool/\", \"~/.mytoolrc\"]\nstate = [\"~/.mytool/\", \"~/.mytoolrc\"]\nenv = [\"MYTOOL_TOKEN\"]\nhosts = [\"api.example.com\"]\n",
    )
    .unwrap();
    let script = "mkdir -p \"$HOME/.mytool\" && echo $MYTOOL_TOKEN > \"$HOME/.mytool/t\" \
                  && echo rc > \"$HOME/.mytoolrc.new\" && mv \"$HOME/.mytoolrc.new\" \"$HOME/.mytoolrc\"";
    let out = fx
        .cmd()
        .env("MYTOOL_TOKEN", "tok")
        .args([
            "--json",
            "run",
            "-s",
            "up",
            "--profile",
            "mytool",
            "--",
            "sh",
            "-c",
            script,
        ])
        .output()
        .unwrap();
    let (code, doc) = crate::fixture::json_of(out);
    assert_eq!(code, 0, "{doc}");
    let home = profile_home(&fx, "mytool");
    assert_eq!(std::fs::read(home.join(".mytool/t")).unwrap(), b"tok\n");
    assert_eq!(std::fs::read(home.join(".mytoolrc")).unwrap(), b"rc\n");
    assert!(!fx.home.join(".mytool").exists());
    assert!(!fx.home.join(".mytoolrc").exists());
    assert_eq!(doc["sandbox"]["profile"]["hosts"][0], "api.example.com");
    // config lists the built-in profiles and the user's.
    let (code, cfg) = fx.json(&["config"]);
    assert_eq!(code, 0, "{cfg}");
    let names: Vec<&str> = cfg["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for name in ["aider", "claude", "codex", "generic", "mytool"] {
        assert!(names.contains(&name), "{cfg}");
    }
    let mine = cfg["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "mytool")
        .unwrap();
    assert_eq!(mine["source"], "user", "{cfg}");
}

#[test]
fn a_trusted_repository_file_selects_a_profile_and_a_profile_may_not_open_a_secret() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.write(".a3s-iso.toml", "[run]\nprofile = \"codex\"\n");
    fx.commit_all("config");
    let (code, doc) = fx.json(&["config", "trust"]);
    assert_eq!(code, 0, "{doc}");
    fx.bind("rp");
    let (code, doc) = fx.json(&["run", "-s", "rp", "--", "true"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["profile"], "codex", "{doc}");
    // The flag wins.
    let (code, doc) = fx.json(&["run", "-s", "rp", "--profile", "generic", "--", "true"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["profile"], "generic", "{doc}");
    // A profile that would open a hidden secret is refused.
    let config = fx.home.join(".config/a3s-iso/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "[profiles.bad]\nwritable = [\"~/.ssh/\"]\n").unwrap();
    let (code, doc) = fx.json(&["run", "-s", "rp", "--profile", "bad", "--", "true"]);
    assert_eq!(code, 5, "{doc}");
    assert_eq!(error_code(&doc), "invalid_input");
}

/// A run killed while it writes an allowed file back leaves the file as it was: the new
/// content goes to a temporary file first, renamed over the file only once complete.
#[cfg(feature = "fault-injection")]
#[test]
fn a_run_killed_during_the_write_back_never_leaves_a_half_written_file() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("wk");
    let file = fx.home.join(".claude.json");
    std::fs::write(&file, b"old content").unwrap();
    let script = "printf 'new content, longer' > \"$HOME/.claude.json.tmp\" && mv \"$HOME/.claude.json.tmp\" \"$HOME/.claude.json\"";
    let out = fx
        .cmd()
        .env("A3S_ISO_TEST_FAULT", "run-write-back-half-written")
        .args(["run", "-s", "wk", "--allow-write", file.to_str().unwrap()])
        .args(["--", "sh", "-c", script])
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(9), "{out:?}");
    assert_eq!(std::fs::read(&file).unwrap(), b"old content");
    // Without the fault, the same run writes it back whole.
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "wk",
        "--allow-write",
        file.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        script,
    ]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(std::fs::read(&file).unwrap(), b"new content, longer");
}

/// An allowed file in a directory that is writable already (the isolation) is not layered:
/// the directory's other writes are kept and captured.
#[test]
fn an_allowed_file_in_the_isolation_keeps_the_isolations_writes() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("iw");
    let readme = fx.isolation("iw").join("README.md");
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "iw",
        "--allow-write",
        readme.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        "echo other > other.txt && printf renamed > README.md.tmp && mv README.md.tmp README.md",
    ]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["change_set"]["files_changed"], 2, "{doc}");
    assert_eq!(std::fs::read(&readme).unwrap(), b"renamed");
    assert!(fx.isolation("iw").join("other.txt").is_file());
}

/// A stand-in API host on the host's loopback: answers one request with `ok` and hands back
/// the `x-api-key` header it got.
fn fake_api_host() -> (u16, std::sync::mpsc::Receiver<String>) {
    use std::io::{BufRead, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (sent, got) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let Ok((stream, _)) = listener.accept() else {
            return;
        };
        let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
        let mut key = String::new();
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("x-api-key:") {
                key = value.trim().to_string();
            }
            line.clear();
        }
        let _ = (&stream).write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        let _ = sent.send(key);
    });
    (port, got)
}

/// The agent a profile is for, end to end: it saves its settings by write-then-rename, reads
/// its key from the variable the profile passes, reaches its API host through the proxy (the
/// host allowed by address and port) and nothing else, which the run records.
#[test]
fn a_fake_agent_saves_its_settings_reaches_its_api_host_and_nothing_else() {
    require_sandbox!();
    if !require_tool("curl") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("e2e");
    let (port, got) = fake_api_host();
    // The stand-in is on loopback, which NO_PROXY sends straight (to the sandbox's own
    // loopback): `--noproxy ''` sends it through the proxy, as a real API host's name goes.
    let agent = write_script(
        &fx,
        "fake-agent",
        &format!(
            "{FAKE_CLAUDE}curl -sf --noproxy '' -H \"x-api-key: $ANTHROPIC_API_KEY\" http://127.0.0.1:{port}/v1/messages > api.txt\n\
             if curl -sf --max-time 5 http://other.example/ > /dev/null 2>&1; then echo reached > other.txt; fi\n"
        ),
    );
    let allowed = format!("127.0.0.1:{port}");
    let args = [
        "run",
        "-s",
        "e2e",
        "--profile",
        "claude",
        "--allow-host",
        &allowed,
        "--",
        &agent,
        "light",
    ];
    let (code, doc, _) = run_with_key(&fx, &args);
    assert_eq!(code, 0, "{doc}");
    let iso = fx.isolation("e2e");
    assert_eq!(std::fs::read_to_string(iso.join("api.txt")).unwrap(), "ok");
    assert!(!iso.join("other.txt").exists(), "another host was reached");
    let key = got.recv_timeout(std::time::Duration::from_secs(5)).unwrap();
    assert_eq!(key, "sk-test-123", "{doc}");
    assert_eq!(doc["sandbox"]["network"], "allowlist", "{doc}");
    let refused = doc["network"]["refused"].as_array().unwrap();
    assert!(
        refused
            .iter()
            .any(|r| r["host"] == "other.example" && r["reason"] == "host_not_allowed"),
        "{doc}"
    );
    // The profile's own hosts are on the allowlist too.
    let entries: Vec<&str> = doc["network"]["allowed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["entry"].as_str().unwrap())
        .collect();
    assert_eq!(entries, [allowed.as_str(), "@anthropic"], "{doc}");
    let settings = profile_home(&fx, "claude").join(".claude/settings.json");
    assert_eq!(
        std::fs::read_to_string(settings).unwrap(),
        "{\"theme\":\"light\"}"
    );
    assert!(!fx.home.join(".claude.json").exists());
}
