//! Completions driven in the shells themselves: flags and flag values after a subcommand,
//! session ids for `-s` (bound ones, not discarded ones), hidden subcommands never offered.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::fixture::{BIN, Fixture, isolate, require_tool};

const HIDDEN: &[&str] = &["sandbox-exec", "generate-assets", "__complete"];

/// PATH with the binary under test first, so the scripts' `a3s-iso __complete` finds it.
fn path_with_binary() -> std::ffi::OsString {
    let dir = Path::new(BIN).parent().unwrap().to_path_buf();
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(dir).chain(std::env::split_paths(&rest))).unwrap()
}

/// A shell started in the source, with git isolated and the binary on PATH.
pub fn shell(fx: &Fixture, program: &str) -> Command {
    let mut cmd = Command::new(program);
    isolate(&mut cmd, &fx.home);
    cmd.current_dir(&fx.src).env("PATH", path_with_binary());
    cmd
}

fn script(fx: &Fixture, shell: &str, name: &str) -> PathBuf {
    let out = fx
        .cmd_in(&fx.root)
        .args(["completions", shell])
        .output()
        .unwrap();
    assert!(out.status.success());
    let path = fx.root.join(name);
    std::fs::write(&path, out.stdout).unwrap();
    path
}

/// Sessions `alpha` and `beta` bound, `gone` bound and then discarded.
fn with_sessions() -> Fixture {
    let fx = Fixture::new();
    for id in ["alpha", "beta", "gone"] {
        fx.bind(id);
    }
    let (code, doc) = fx.json(&["discard", "-s", "gone"]);
    assert_eq!(code, 0, "{doc}");
    fx
}

fn run_ok(mut cmd: Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// What bash's completion function offers for `words`, the last being the word under the cursor.
fn bash_offers(fx: &Fixture, script: &Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let prev = if cword > 0 { words[cword - 1] } else { "" };
    let probe = format!(
        "source '{}' && COMP_WORDS=({}) && COMP_CWORD={cword} && _a3s__iso a3s-iso '{}' '{prev}' && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words[cword],
    );
    let mut cmd = shell(fx, "bash");
    cmd.args(["--norc", "--noprofile", "-c", &probe]);
    run_ok(cmd)
        .lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

#[test]
fn bash_completes_flags_and_their_values_after_the_subcommand() {
    if !require_tool("bash") {
        return;
    }
    let fx = Fixture::new();
    let script = script(&fx, "bash", "a3s-iso.bash");
    let flags = bash_offers(&fx, &script, &["a3s-iso", "promote", "--"]);
    for flag in ["--session", "--mode", "--json"] {
        assert!(flags.iter().any(|f| f == flag), "{flag} in {flags:?}");
    }
    let modes = bash_offers(&fx, &script, &["a3s-iso", "promote", "--mode", ""]);
    assert_eq!(modes, ["patch", "branch"]);
    let colours = bash_offers(&fx, &script, &["a3s-iso", "log", "--color", "n"]);
    assert_eq!(colours, ["never"]);
}

#[test]
fn bash_completes_session_ids_not_discarded_ones() {
    if !require_tool("bash") {
        return;
    }
    let fx = with_sessions();
    let script = script(&fx, "bash", "a3s-iso.bash");
    let ids = bash_offers(&fx, &script, &["a3s-iso", "promote", "-s", ""]);
    assert_eq!(ids, ["alpha", "beta"]);
    let ids = bash_offers(&fx, &script, &["a3s-iso", "path", "--session", "b"]);
    assert_eq!(ids, ["beta"]);
    let ids = bash_offers(&fx, &script, &["a3s-iso", "discard", "-s", "go"]);
    assert!(ids.is_empty(), "{ids:?}");
}

#[test]
fn bash_never_offers_hidden_subcommands() {
    if !require_tool("bash") {
        return;
    }
    let fx = Fixture::new();
    let script = script(&fx, "bash", "a3s-iso.bash");
    let top = bash_offers(&fx, &script, &["a3s-iso", ""]);
    assert!(top.iter().any(|w| w == "doctor"), "{top:?}");
    let help = bash_offers(&fx, &script, &["a3s-iso", "help", ""]);
    assert!(help.iter().any(|w| w == "log"), "{help:?}");
    for hidden in HIDDEN {
        assert!(!top.iter().any(|w| w == hidden), "{hidden} in {top:?}");
        assert!(!help.iter().any(|w| w == hidden), "{hidden} in {help:?}");
    }
}

fn fish_offers(fx: &Fixture, script: &Path, line: &str) -> Vec<String> {
    let probe = format!("source '{}'; complete -C '{line}'", script.display());
    let mut cmd = shell(fx, "fish");
    cmd.args(["--no-config", "-c", &probe]);
    run_ok(cmd)
        .lines()
        .map(|l| l.split('\t').next().unwrap_or("").to_string())
        .collect()
}

#[test]
fn fish_completes_session_ids_and_hides_hidden_subcommands() {
    if !require_tool("fish") {
        return;
    }
    let fx = with_sessions();
    let script = script(&fx, "fish", "a3s-iso.fish");
    assert_eq!(
        fish_offers(&fx, &script, "a3s-iso promote -s "),
        ["alpha", "beta"]
    );
    assert_eq!(
        fish_offers(&fx, &script, "a3s-iso run --session b"),
        ["beta"]
    );
    let top = fish_offers(&fx, &script, "a3s-iso ");
    assert!(top.iter().any(|w| w == "shell-init"), "{top:?}");
    for hidden in HIDDEN {
        assert!(!top.iter().any(|w| w == hidden), "{hidden} in {top:?}");
    }
}

/// Types `typed` followed by a Tab into an interactive zsh (driven through zpty) with the
/// completion loaded, and returns the command line as zle holds it after the completion (a
/// widget bound to ^T writes `$BUFFER` to a file). Waits for each step instead of sleeping,
/// so a loaded machine only makes it slower.
fn zsh_complete(fx: &Fixture, typed: &str) -> String {
    let dir = fx.root.join("zfunc");
    std::fs::create_dir_all(&dir).unwrap();
    let out = fx
        .cmd_in(&fx.root)
        .args(["completions", "zsh"])
        .output()
        .unwrap();
    std::fs::write(dir.join("_a3s-iso"), out.stdout).unwrap();
    let buffer = fx.root.join("zbuffer");
    let _ = std::fs::remove_file(&buffer);
    let driver = format!(
        r#"zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z "fpath=('{dir}' \$fpath); autoload -U compinit; compinit -u -d '{dump}'; bindkey -e"
zpty -w z "dump-buffer() {{ print -r -- \"\$BUFFER\" > '{buffer}.tmp' && mv '{buffer}.tmp' '{buffer}' }}; zle -N dump-buffer; bindkey '^T' dump-buffer; print READY-\$((20+22))"
seen=""
for i in {{1..400}}; do
  zpty -r -t z chunk && seen+=$chunk
  [[ $seen == *READY-42* ]] && break
  sleep 0.05
done
zpty -w -n z $'{typed}\t\x14'
for i in {{1..400}}; do
  [[ -s '{buffer}' ]] && break
  zpty -r -t z chunk
  sleep 0.05
done
zpty -d z
"#,
        dir = dir.display(),
        dump = fx.root.join("zcompdump").display(),
        buffer = buffer.display(),
    );
    let mut cmd = shell(fx, "zsh");
    cmd.args(["-f", "-c", &driver]);
    run_ok(cmd);
    std::fs::read_to_string(&buffer)
        .unwrap_or_else(|_| panic!("zsh never reached the completion of {typed:?}"))
        .trim_end_matches('\n')
        .to_string()
}

#[test]
fn zsh_completes_session_ids_not_discarded_ones() {
    if !require_tool("zsh") {
        return;
    }
    let fx = with_sessions();
    assert_eq!(
        zsh_complete(&fx, "a3s-iso promote -s al"),
        "a3s-iso promote -s alpha "
    );
    assert_eq!(
        zsh_complete(&fx, "a3s-iso path --session b"),
        "a3s-iso path --session beta "
    );
    assert_eq!(
        zsh_complete(&fx, "a3s-iso promote -s go"),
        "a3s-iso promote -s go"
    );
    assert_eq!(zsh_complete(&fx, "a3s-iso sandbox-e"), "a3s-iso sandbox-e");
    assert_eq!(zsh_complete(&fx, "a3s-iso shell-i"), "a3s-iso shell-init ");
}

#[test]
fn committed_scripts_name_no_hidden_subcommand_and_ask_for_sessions() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("completions");
    for name in ["a3s-iso.bash", "_a3s-iso", "a3s-iso.fish"] {
        let text = std::fs::read_to_string(repo.join(name)).unwrap();
        for hidden in ["sandbox-exec", "generate-assets", "sandbox__subcmd__exec"] {
            assert!(!text.contains(hidden), "{name} offers {hidden}");
        }
        assert!(text.contains("__complete sessions"), "{name}");
        assert!(!text.contains("A3S_ISO_SESSION_IDS"), "{name}");
    }
}

#[test]
fn complete_sessions_lists_live_ids_and_nothing_outside_a_repository() {
    let fx = with_sessions();
    let out = fx.cmd().args(["__complete", "sessions"]).output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "alpha\nbeta\n");
    let out = fx
        .cmd_in(&fx.root)
        .args(["__complete", "sessions"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(out.stdout.is_empty() && out.stderr.is_empty());
}
