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
