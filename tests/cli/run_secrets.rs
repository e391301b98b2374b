//! Credentials, agents' logins and a3s-iso's store of profile copies: each listed file is read
//! by a run under every profile and by a plain run, and only its own profile's run gets it.

use std::collections::BTreeSet;

use crate::fixture::{Fixture, require_tool};

/// Each credential a sandboxed run is kept from, and the profile whose runs see it.
const LISTED: &[(&str, Option<&str>)] = &[
    (".claude/.credentials.json", Some("claude")),
    (".codex/auth.json", Some("codex")),
    (".aider/oauth-keys.env", Some("aider")),
    (".config/gh/hosts.yml", None),
    (".docker/config.json", None),
    (".npmrc", None),
    (".pypirc", None),
    (".cargo/credentials.toml", None),
    (".kube/config", None),
    (".config/gcloud/application_default_credentials.json", None),
    (".azure/msal_token_cache.json", None),
];

/// The line a credential's file holds.
fn secret_line(rel: &str) -> String {
    format!("SECRET-{}", rel.replace(['/', '.'], "_"))
}

/// Reads every listed file at its real path and every file of every profile's copies (the
/// store), into `seen.txt` in the isolation.
fn reader_script() -> String {
    let mut script = String::from("{\n");
    for (rel, _) in LISTED {
        script.push_str(&format!("cat \"$HOME/{rel}\" 2>/dev/null\n"));
    }
    script.push_str(
        "find \"$HOME/.local/share/a3s-iso\" -type f -exec cat {} + 2>/dev/null\n} > seen.txt; true\n",
    );
    script
}

/// The secret lines in the change set of the session `id`, captured: what its run read
/// and wrote into its isolation.
fn secrets_in_change_set(fx: &Fixture, id: &str) -> BTreeSet<String> {
    let (code, doc) = fx.json(&["capture", "-s", id]);
    assert_eq!(code, 0, "{doc}");
    let patch = String::from_utf8_lossy(&crate::fixture::patch_of(&doc)).into_owned();
    assert!(patch.contains("seen.txt"), "{patch}");
    patch
        .lines()
        .filter_map(|l| l.strip_prefix('+'))
        .filter(|l| l.starts_with("SECRET-"))
        .map(str::to_string)
        .collect()
}

#[test]
fn each_credential_is_read_only_by_its_own_profiles_run() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    for (rel, _) in LISTED {
        let path = fx.home.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("{}\n", secret_line(rel))).unwrap();
    }
    // A profile of the user's that keeps Claude Code's directory without declaring its login.
    let config = fx.home.join(".config/a3s-iso/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "[profiles.mine]\nwritable = [\"~/.claude/\"]\n").unwrap();
    let script = reader_script();
    // The agents first, so that their copies (holding their logins) are there for the others.
    for profile in ["claude", "codex", "aider", "generic", "mine", "plain"] {
        let id = format!("sec-{profile}");
        fx.bind(&id);
        let mut args = vec!["run", "-s", &id];
        if profile != "plain" {
            args.extend(["--profile", profile]);
        }
        args.extend(["--", "sh", "-c", &script]);
        let (code, doc) = fx.json(&args);
        assert_eq!(code, 0, "{profile}: {doc}");
        let expected: BTreeSet<String> = LISTED
            .iter()
            .filter(|(_, own)| *own == Some(profile))
            .map(|(rel, _)| secret_line(rel))
            .collect();
        assert_eq!(
            secrets_in_change_set(&fx, &id),
            expected,
            "{profile}: {doc}"
        );
    }
    // The real files are untouched; the copies hold their own profile's login only.
    for (rel, _) in LISTED {
        let bytes = std::fs::read_to_string(fx.home.join(rel)).unwrap();
        assert_eq!(bytes, format!("{}\n", secret_line(rel)));
    }
    let store = fx.home.join(".local/share/a3s-iso/profiles");
    let holding: Vec<(String, String)> = crate::fixture::content_listing(&store)
        .into_keys()
        .filter_map(|path| {
            let content = std::fs::read_to_string(store.join(&path)).ok()?;
            content.contains("SECRET-").then_some((path, content))
        })
        .collect();
    assert_eq!(holding.len(), 3, "{holding:#?}");
    for (path, content) in &holding {
        let owner = path.split('/').next().unwrap();
        let (rel, _) = LISTED.iter().find(|(_, o)| *o == Some(owner)).unwrap();
        assert!(path.ends_with(rel), "{path}");
        assert_eq!(content.trim(), secret_line(rel), "{path}");
    }
}

#[test]
fn doctor_lists_the_hidden_set_and_who_sees_each_login() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.home.join(".codex")).unwrap();
    std::fs::write(fx.home.join(".codex/auth.json"), "{}").unwrap();
    let (_, doc) = fx.json(&["doctor"]);
    let hidden = doc["hidden"].as_array().unwrap();
    for (rel, own) in LISTED {
        let path = fx.home.join(rel);
        let path = path.to_str().unwrap();
        let found = hidden
            .iter()
            .find(|h| h["path"] == path || path.starts_with(h["path"].as_str().unwrap()))
            .unwrap_or_else(|| panic!("{rel} is not listed: {doc:#}"));
        let owners: Vec<&str> = found["visible_to"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(owners, own.iter().copied().collect::<Vec<_>>(), "{rel}");
    }
    let codex = hidden
        .iter()
        .find(|h| h["path"] == fx.home.join(".codex/auth.json").to_str().unwrap())
        .unwrap();
    assert_eq!(codex["kind"], "agent_login");
    assert_eq!(codex["present"], true);
    let store = fx.home.join(".local/share/a3s-iso/profiles");
    assert!(
        hidden
            .iter()
            .any(|h| h["path"] == store.to_str().unwrap() && h["kind"] == "profile_store"),
        "{doc:#}"
    );
    let (_, text, _) = crate::fixture::human(&fx, &["doctor"]);
    assert!(text.contains("hidden from every sandboxed run"), "{text}");
    let line = format!(
        "{}  (seen by --profile codex)",
        fx.home.join(".codex/auth.json").display()
    );
    assert!(text.contains(&line), "{text}");
}
