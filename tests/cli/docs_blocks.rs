//! The documentation's command blocks run. In README.md and every `docs/*.md`, each block
//! fenced ```` ```sh ```` is executed: one file's blocks in file order, as one
//! `bash -euo pipefail` script, in a fresh throwaway repository (one commit holding
//! `README.md`, git isolated from the machine as the fixture does, `a3s-iso` on PATH).
//! Blocks fenced ```` ```sh no-run ```` are skipped, and allowed only where running them in a
//! test makes no sense (installing, uninstalling, the network) or with a `# no-run:` reason.
//! A fence without a language is refused. CONTRIBUTING.md describes the convention.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::fixture::{BIN, Fixture, isolate, object_format, require_tool};

/// How long one file's script may take before it counts as hung.
const FILE_TIMEOUT: Duration = Duration::from_secs(300);

/// What a `sh no-run` block must contain: a command that cannot run in a test, or a reason.
const NO_RUN_MARKERS: &[&str] = &[
    "cargo install",
    "cargo uninstall",
    "curl ",
    "git push",
    "rm -rf ~/",
    "rm -rf \"$HOME",
    "# no-run:",
];

/// One fenced block of a Markdown file.
#[derive(Debug)]
struct Block {
    /// The info string after the opening fence (`sh`, `sh no-run`, `text`, …).
    info: String,
    /// The line of the opening fence, 1-based.
    line: usize,
    /// Its content, without the fences.
    body: String,
}

/// The fenced blocks of `text`, or what is wrong with its fences.
fn blocks(text: &str) -> Result<Vec<Block>, String> {
    let mut found = Vec::new();
    let mut open: Option<Block> = None;
    for (n, line) in text.lines().enumerate() {
        let fence = line.trim_start();
        if fence.trim_end() == "```" && open.is_some() {
            found.extend(open.take());
            continue;
        }
        match open.as_mut() {
            Some(block) => {
                block.body.push_str(line);
                block.body.push('\n');
            }
            None => {
                if let Some(info) = fence.strip_prefix("```") {
                    let info = info.trim().to_string();
                    if info.is_empty() {
                        return Err(format!(
                            "line {}: a block without a language (use sh, sh no-run, text, \
                             json, yaml, …)",
                            n + 1
                        ));
                    }
                    open = Some(Block {
                        info,
                        line: n + 1,
                        body: String::new(),
                    });
                }
            }
        }
    }
    match open {
        Some(block) => Err(format!("line {}: a block is never closed", block.line)),
        None => Ok(found),
    }
}

/// The blocks to run, after checking that every `sh no-run` block says why it cannot run.
fn runnable(text: &str) -> Result<Vec<Block>, String> {
    let mut run = Vec::new();
    for block in blocks(text)? {
        let words: Vec<&str> = block.info.split_whitespace().collect();
        match words[..] {
            ["sh"] => run.push(block),
            ["sh", "no-run"] if !NO_RUN_MARKERS.iter().any(|m| block.body.contains(m)) => {
                return Err(format!(
                    "line {}: a `sh no-run` block that installs nothing, uninstalls nothing \
                     and needs no network: make it run, or say why with a `# no-run: …` \
                     comment",
                    block.line
                ));
            }
            ["sh", "no-run"] => {}
            ["sh", ..] | ["bash", ..] | ["shell", ..] | ["console", ..] => {
                return Err(format!(
                    "line {}: `{}`: shell blocks are `sh` (run by the docs test) or \
                     `sh no-run`",
                    block.line, block.info
                ));
            }
            _ => {}
        }
    }
    Ok(run)
}

/// A fresh repository at `<root>/work/myrepo` with one commit holding `README.md`.
fn throwaway_repo(fx: &Fixture) -> PathBuf {
    let repo = fx.root.join("work/myrepo");
    std::fs::create_dir_all(&repo).unwrap();
    let format = format!("--object-format={}", object_format());
    fx.git(&repo, &["init", "-q", "-b", "main", &format]);
    std::fs::write(repo.join("README.md"), "hello\n").unwrap();
    fx.git(&repo, &["add", "README.md"]);
    fx.git(&repo, &["commit", "-q", "-m", "initial"]);
    repo
}

/// The script for one file: each block preceded by a line recording which block runs.
fn script(blocks: &[Block], progress: &Path) -> String {
    let mut out = String::new();
    for (i, block) in blocks.iter().enumerate() {
        out.push_str(&format!(
            "printf '%s\\n' '{} {}' >> '{}'\n",
            i + 1,
            block.line,
            progress.display()
        ));
        out.push_str(&block.body);
    }
    out
}

/// Runs one file's blocks; on failure, says which block failed and what it printed.
fn run_file(name: &str, text: &str) -> Result<(Fixture, PathBuf), String> {
    let blocks = runnable(text).map_err(|e| format!("{name}: {e}"))?;
    let fx = Fixture::bare_root();
    let repo = throwaway_repo(&fx);
    let bin_dir = fx.root.join("bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    std::os::unix::fs::symlink(BIN, bin_dir.join("a3s-iso")).unwrap();
    let progress = fx.root.join("docs-progress");
    let script_path = fx.root.join("docs-script.sh");
    std::fs::write(&script_path, script(&blocks, &progress)).unwrap();

    let mut cmd = Command::new("bash");
    cmd.args(["-euo", "pipefail"])
        .arg(&script_path)
        .current_dir(&repo)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    isolate(&mut cmd, &fx.home);
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin_dir];
    dirs.extend(std::env::split_paths(&path));
    cmd.env("PATH", std::env::join_paths(dirs).unwrap())
        .env("TMPDIR", &fx.root)
        .env("PAGER", "cat");
    // The test runs in its own process group, so that a hung script can be ended whole.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let (code, stdout, stderr) = wait_bounded(cmd.spawn().unwrap());
    if code == Some(0) {
        return Ok((fx, repo));
    }
    let last = std::fs::read_to_string(&progress).unwrap_or_default();
    let (block, line) = last
        .lines()
        .last()
        .and_then(|l| l.split_once(' '))
        .unwrap_or(("?", "?"));
    let why = code.map_or("timed out".to_string(), |c| format!("exit {c}"));
    Err(format!(
        "{name}: sh block {block} (opening at line {line}) failed ({why})\n\
         --- stdout ---\n{stdout}\n--- stderr ---\n{stderr}"
    ))
}

/// Waits for the script up to [`FILE_TIMEOUT`], killing its process group after that;
/// returns its exit code (none when it was killed) and its output.
fn wait_bounded(mut child: std::process::Child) -> (Option<i32>, String, String) {
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stdout.read_to_end(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > FILE_TIMEOUT {
            let pgid = i32::try_from(child.id()).unwrap();
            // SAFETY: signalling a process group this test created.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = |v: Vec<u8>| String::from_utf8_lossy(&v).into_owned();
    (
        status.and_then(|s| s.code()),
        text(out.join().unwrap()),
        text(err.join().unwrap()),
    )
}

/// README.md and every `docs/*.md`, in a stable order.
fn documentation() -> Vec<PathBuf> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![repo.join("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(repo.join("docs"))
        .map(|dir| {
            dir.map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "md"))
                .collect()
        })
        .unwrap_or_default();
    pages.sort();
    files.extend(pages);
    files
}

#[test]
fn every_sh_block_of_the_documentation_runs() {
    // The examples read a3s-iso's JSON with jq, as scripts should.
    if !require_tool("sandbox") || !require_tool("jq") {
        return;
    }
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = documentation();
    assert!(files.len() > 1, "no docs/*.md found: {files:?}");
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .iter()
            .map(|file| {
                scope.spawn(move || {
                    let name = file.strip_prefix(repo).unwrap().display().to_string();
                    let text = std::fs::read_to_string(file).unwrap();
                    run_file(&name, &text).err()
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_readme_quick_start_runs_from_bind_to_promote() {
    if !require_tool("sandbox") || !require_tool("jq") {
        return;
    }
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let run: String = runnable(&text)
        .unwrap()
        .iter()
        .map(|b| b.body.clone())
        .collect();
    for step in [
        "a3s-iso bind",
        "a3s-iso run",
        "a3s-iso capture",
        "a3s-iso promote",
    ] {
        assert!(run.contains(step), "README's runnable blocks lack `{step}`");
    }
    let (_fx, repo) = run_file("README.md", &text).unwrap_or_else(|e| panic!("{e}"));
    // The quick start's agent work is in the checkout afterwards, byte for byte.
    assert_eq!(
        std::fs::read_to_string(repo.join("NOTES.md")).unwrap(),
        "notes from the agent\n"
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("README.md")).unwrap(),
        "hello\na line from the agent\n"
    );
}

#[test]
fn a_failing_block_is_named_with_its_file_and_line() {
    if !require_tool("sandbox") {
        return;
    }
    let text =
        "# Page\n\n```sh\na3s-iso bind -s ok\n```\n\ntext\n\n```sh\ntrue\nfalse\necho never\n```\n";
    let err = run_file("docs/broken.md", text).err().unwrap();
    assert!(
        err.starts_with("docs/broken.md: sh block 2 (opening at line 9) failed (exit 1)"),
        "{err}"
    );
    assert!(!err.contains("never"), "{err}");
    // An unset variable fails too (`-u`), and so does a failure inside a pipe (`pipefail`).
    for body in ["echo \"$NOT_SET\"", "false | cat"] {
        let text = format!("```sh\n{body}\n```\n");
        let err = run_file("docs/strict.md", &text).err().unwrap();
        assert!(err.contains("sh block 1 (opening at line 1)"), "{err}");
    }
}

#[test]
fn fences_without_a_language_and_unexplained_no_run_blocks_are_refused() {
    let bare = "text\n\n```\na3s-iso list\n```\n";
    assert!(
        runnable(bare)
            .unwrap_err()
            .contains("line 3: a block without a language")
    );
    let lazy = "```sh no-run\na3s-iso list\n```\n";
    assert!(
        runnable(lazy)
            .unwrap_err()
            .contains("line 1: a `sh no-run` block")
    );
    let bash = "```bash\na3s-iso list\n```\n";
    assert!(runnable(bash).unwrap_err().contains("`bash`"));
    let unclosed = "```sh\na3s-iso list\n";
    assert!(runnable(unclosed).unwrap_err().contains("never closed"));
    let fine = "```sh no-run\ncargo install --locked --path .\n```\n\n```sh no-run\n\
                # no-run: edits your shell's startup file\necho x >> ~/.bashrc\n```\n\n\
                ```text\nout\n```\n\n```sh\na3s-iso list\n```\n";
    let run = runnable(fine).unwrap();
    assert_eq!(run.len(), 1);
    assert_eq!((run[0].line, run[0].body.as_str()), (14, "a3s-iso list\n"));
}

/// A `grep` or `sed` whose quoted pattern holds a JSON key or value (`grep '"outcome":
/// "applied"'`, `sed 's/"patch_bytes": …/'`): reading a document by its text.
fn greps_json(line: &str) -> bool {
    static PATTERN: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    PATTERN
        .get_or_init(|| {
            regex::Regex::new(r#"\b(?:grep|sed)\b[^|\n]*'[^'\n]*"[A-Za-z_]+""#).unwrap()
        })
        .is_match(line)
}

/// The documentation's examples, the scripts and the CI recipes read a3s-iso's JSON with jq,
/// as docs/json.md tells scripts to: the layout of the text is no part of the contract.
#[test]
fn examples_and_scripts_read_json_with_jq_not_grep_or_sed() {
    assert!(greps_json(r#"grep '"outcome": "applied"' promote.json"#));
    assert!(greps_json(
        r#"sed 's/"patch_bytes": [0-9]*/"patch_bytes": 1/' a.json"#
    ));
    assert!(greps_json(
        r#"a3s-iso --json list | grep -A 2 '"session_id": "x"'"#
    ));
    assert!(!greps_json(r#"grep -q "a fix from the agent" README.md"#));
    assert!(!greps_json(r#"jq -e '.outcome == "applied"' promote.json"#));
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for file in documentation() {
        let name = file.strip_prefix(repo).unwrap().display().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        for block in runnable(&text).unwrap() {
            for (n, line) in block.body.lines().enumerate() {
                if greps_json(line) {
                    found.push(format!("{name}:{}: {line}", block.line + 1 + n));
                }
            }
        }
    }
    let mut sources: Vec<PathBuf> = std::fs::read_dir(repo.join("scripts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    sources.extend([
        repo.join("examples/github-actions/promote.yml"),
        repo.join("examples/gitlab-ci/.gitlab-ci.yml"),
    ]);
    for file in sources {
        let name = file.strip_prefix(repo).unwrap().display().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in text.lines().enumerate() {
            if greps_json(line) && !line.trim_start().starts_with('#') {
                found.push(format!("{name}:{}: {line}", n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "read these with jq:\n{}",
        found.join("\n")
    );
}

/// The sandbox page says what downloading crates needs: the `@crates` preset, never the whole
/// network, where it shows cargo fetching them.
#[test]
fn the_sandbox_page_gives_cargo_its_preset_not_the_whole_network() {
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/sandbox.md"),
    )
    .unwrap();
    for line in page.lines().filter(|l| l.contains("cargo ")) {
        assert!(!line.contains("--allow-network"), "{line}");
    }
    assert!(page.contains("--allow-host @crates -- cargo test"));
}
