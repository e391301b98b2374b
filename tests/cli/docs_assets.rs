use std::path::Path;
use std::process::Command;

use crate::fixture::{Fixture, content_listing, require_tool};

#[test]
fn committed_completions_man_pages_and_options_table_are_fresh() {
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
        // Names and contents: the modes depend on the umask of the checkout and of this run.
        let fresh = content_listing(&fx.root.join(dir));
        let committed = content_listing(&repo.join(dir));
        assert!(!committed.is_empty(), "nothing committed under {dir}/");
        assert_eq!(
            fresh, committed,
            "{dir}/ is stale: run scripts/gen-assets.sh and commit the result"
        );
    }
    let fresh = std::fs::read_to_string(fx.root.join("docs/options.md")).unwrap();
    let committed = std::fs::read_to_string(repo.join("docs/options.md")).unwrap();
    assert_eq!(
        fresh, committed,
        "docs/options.md is stale: run scripts/gen-assets.sh and commit the result"
    );
}

fn completion_script(fx: &Fixture, shell: &str, name: &str) -> std::path::PathBuf {
    let script = fx.root.join(name);
    let out = fx
        .cmd_in(&fx.root)
        .args(["completions", shell])
        .output()
        .unwrap();
    assert!(out.status.success());
    std::fs::write(&script, out.stdout).unwrap();
    script
}

#[test]
fn fish_completion_completes_subcommands() {
    if !require_tool("fish") {
        return;
    }
    let fx = Fixture::bare_root();
    let script = completion_script(&fx, "fish", "a3s-iso.fish");
    let probe = format!("source '{}'; complete -C 'a3s-iso pro'", script.display());
    let out = Command::new("fish")
        .args(["--no-config", "-c", &probe])
        .env("HOME", &fx.home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let offered = String::from_utf8(out.stdout).unwrap();
    assert!(
        offered.lines().any(|l| l.starts_with("promote")),
        "{offered}"
    );
}

#[test]
fn zsh_completion_loads() {
    if !require_tool("zsh") {
        return;
    }
    let fx = Fixture::bare_root();
    let dir = fx.root.join("zfunc");
    std::fs::create_dir(&dir).unwrap();
    let out = fx
        .cmd_in(&fx.root)
        .args(["completions", "zsh"])
        .output()
        .unwrap();
    std::fs::write(dir.join("_a3s-iso"), out.stdout).unwrap();
    let probe = format!(
        "fpath=('{}' $fpath); autoload -U compinit; compinit -u -d '{}/zcompdump'; autoload -U +X _a3s-iso && (( $+functions[_a3s-iso] )) && print loaded",
        dir.display(),
        fx.root.display()
    );
    let out = Command::new("zsh")
        .args(["-f", "-c", &probe])
        .env("HOME", &fx.home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "loaded");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn man_pages_render_without_warnings() {
    if !require_tool("man") {
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    for entry in std::fs::read_dir(repo.join("man")).unwrap() {
        let page = entry.unwrap().path();
        let out = Command::new("man")
            .args(["--warnings", "-l"])
            .arg(&page)
            .env("MANWIDTH", "80")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            page.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.stderr.is_empty(),
            "{}: {}",
            page.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("EXIT STATUS") && text.contains("ENVIRONMENT"),
            "{}",
            page.display()
        );
    }
}

#[test]
fn bash_completion_loads_and_completes_subcommands() {
    if !require_tool("bash") {
        return;
    }
    let fx = Fixture::bare_root();
    let script = fx.root.join("a3s-iso.bash");
    let out = fx
        .cmd_in(&fx.root)
        .args(["completions", "bash"])
        .output()
        .unwrap();
    std::fs::write(&script, out.stdout).unwrap();
    let probe = format!(
        "source '{}' && COMP_WORDS=(a3s-iso pro) COMP_CWORD=1 && _a3s__iso a3s-iso pro a3s-iso && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
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
    assert!(offered.lines().any(|l| l == "promote"), "{offered}");
}

#[test]
fn man_pages_link_only_to_pages_that_exist() {
    let man = Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    let pages: Vec<String> = std::fs::read_dir(&man)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(pages.iter().any(|p| p == "a3s-iso.1"));
    for page in &pages {
        let text = std::fs::read_to_string(man.join(page)).unwrap();
        let text = text.replace("\\-", "-");
        // Every `name(1)` reference of a3s-iso names a generated page.
        for (at, _) in text.match_indices("(1)") {
            let start = text[..at]
                .rfind(|c: char| c.is_whitespace())
                .map_or(0, |i| i + 1);
            let name = &text[start..at];
            if name.starts_with("a3s-iso") {
                assert!(
                    pages.contains(&format!("{name}.1")),
                    "{page} links {name}(1), which is not generated"
                );
            }
        }
        // One of each closing section.
        for section in [".SH \"EXIT STATUS\"", ".SH ENVIRONMENT", ".SH EXAMPLES"] {
            assert_eq!(text.matches(section).count(), 1, "{page}: {section}");
        }
        assert!(!text.contains(".SH EXTRA"), "{page}");
    }
}
