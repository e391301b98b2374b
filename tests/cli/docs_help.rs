use std::path::Path;

use crate::fixture::Fixture;

fn help(args: &[&str]) -> String {
    let fx = Fixture::bare_root();
    let out = fx
        .cmd_in(&fx.root)
        .args(args)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands `a3s-iso --help` lists (its `Commands:` section), `help` itself left out.
fn subcommands(help: &str) -> Vec<String> {
    let section = help
        .split_once("\nCommands:\n")
        .expect("a Commands: section")
        .1;
    section
        .lines()
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(String::from)
        .collect()
}

#[test]
fn help_texts() {
    let top = help(&[]);
    insta::assert_snapshot!("help", top);
    let subs = subcommands(&top);
    // Every command of the contract is there (and so has its help pinned below).
    for required in [
        "bind",
        "run",
        "capture",
        "promote",
        "sweep",
        "retain",
        "list",
        "discard",
        "gc",
        "verify",
        "completions",
        "path",
        "log",
        "doctor",
        "version",
        "shell-init",
        "diff",
        "show",
    ] {
        assert!(subs.iter().any(|s| s == required), "{required} in {subs:?}");
    }
    for sub in &subs {
        insta::assert_snapshot!(format!("help_{sub}"), help(&[sub]));
    }
}

#[test]
fn help_shows_examples_global_options_and_defaults() {
    let fx = Fixture::bare_root();
    for sub in ["bind", "promote", "run", "sweep", "list"] {
        let out = fx.cmd_in(&fx.root).args([sub, "--help"]).output().unwrap();
        let help = String::from_utf8(out.stdout).unwrap();
        assert!(help.contains("\nExamples:\n  a3s-iso "), "{sub}: {help}");
        assert!(help.contains("\nGlobal options:\n"), "{sub}: {help}");
        assert!(help.contains("[default: 60s]"), "{sub}: {help}");
    }
    let out = fx.cmd_in(&fx.root).arg("--help").output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .unwrap()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let line = help
        .lines()
        .find(|l| l.starts_with("Exit status: "))
        .unwrap();
    assert!(readme.contains(line), "README and help disagree: {line}");
    assert!(line.contains("6 busy (lock timeout, session busy)"));
    // The README's command overview names every command the help lists.
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect();
    assert!(commands.len() > 10, "{help}");
    for name in commands {
        assert!(
            readme.contains(&format!("`{name}`")),
            "the README's command overview lacks `{name}`"
        );
    }
}
