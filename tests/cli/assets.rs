use std::path::Path;
use std::process::Command;

use crate::fixture::Fixture;

#[test]
fn committed_completions_and_man_pages_are_fresh() {
    let fx = Fixture::bare_root();
    let out = fx
        .cmd_in(&fx.root)
        .args(["generate-assets", "."])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in ["completions", "man"] {
        let fresh = crate::fixture::listing(&fx.root.join(dir));
        let committed = crate::fixture::listing(&repo.join(dir));
        assert_eq!(
            fresh, committed,
            "{dir}/ is stale: run scripts/gen-assets.sh and commit the result"
        );
    }
}

#[test]
fn bash_completion_loads_and_completes_subcommands() {
    let fx = Fixture::bare_root();
    let script = fx.root.join("a3s-iso.bash");
    let out = fx
        .cmd_in(&fx.root)
        .args(["completions", "bash"])
        .output()
        .unwrap();
    std::fs::write(&script, out.stdout).unwrap();
    let probe = format!(
        "source '{}' && COMP_WORDS=(a3s-iso ca) COMP_CWORD=1 && _a3s__iso a3s-iso ca a3s-iso && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let out = Command::new("bash")
        .args(["--norc", "-c", &probe])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let offered = String::from_utf8(out.stdout).unwrap();
    assert!(offered.lines().any(|l| l == "capture"), "{offered}");
}
