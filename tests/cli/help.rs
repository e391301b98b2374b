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

#[test]
fn help_texts() {
    insta::assert_snapshot!("help", help(&[]));
    for sub in [
        "bind",
        "capture",
        "completions",
        "discard",
        "list",
        "run",
        "verify",
    ] {
        insta::assert_snapshot!(format!("help_{sub}"), help(&[sub]));
    }
}
