//! `run`'s fast path: the command writes to a layer over the isolation, and the run's change
//! set comes from the paths the layer holds. It must record what the full path records, lose
//! no edit (a run's, or one made outside any run), and survive a kill at any point.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::fixture::{Fixture, processes_with, require_tool, stdout_of};
use crate::promote_crash::Rng;

/// A source of generated files: text, binary, executable, links, nested directories, an
/// ignore file and a tracked file that its rules ignore.
fn generated_source(fx: &Fixture, rng: &mut Rng) {
    for n in 0..40 {
        let dir = format!("g{}/h{}", rng.below(4), rng.below(3));
        let text = format!("{n} {}\n", rng.below(1_000_000)).repeat(1 + rng.below(20) as usize);
        fx.write(&format!("{dir}/f{n}.txt"), &text);
    }
    std::fs::write(fx.src.join("blob.bin"), [0u8, 1, 2, 255, 0, 7]).unwrap();
    fx.write("tool.sh", "#!/bin/sh\necho tool\n");
    let tool = fx.src.join("tool.sh");
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("README.md", fx.src.join("readme-link")).unwrap();
    fx.write(".gitignore", "*.log\nbuild/\n");
    fx.write("g0/kept.log", "tracked though ignored\n");
    fx.git(&fx.src, &["add", "-A"]);
    fx.git(&fx.src, &["add", "-f", "g0/kept.log"]);
    fx.git(&fx.src, &["commit", "-q", "-m", "generated"]);
}

/// Changes of every kind the layer must carry, as shell scripts run one after the other: the
/// third changes the root's `.gitignore` (every path is staged again), the others leave it alone
/// (the layer's paths edit the last tree), the last writing only an ignored file.
const CHANGES: [&str; 4] = [
    "set -e
rm g0/h0/f*.txt 2>/dev/null || true
mv g1 g1-renamed
chmod +x g2/h1/f*.txt 2>/dev/null || true
chmod -x tool.sh
ln -sf src/lib.txt readme-link
ln -s g3 dir-link
printf '\\000\\377\\001' > blob.bin
mkdir -p fresh/deep && echo new > fresh/deep/file && printf 'x\\000y' > fresh/bin
rm -r g3
mkdir g3 && echo again > g3/replaced.txt
echo 'more' >> g0/kept.log
echo 'skipped' > debug.log
mkdir -p build && echo out > build/artifact
printf 'secret*\\n' > g2/.gitignore
echo hidden > g2/secret.txt
echo shown > g2/shown.txt
",
    "set -e
echo again >> fresh/deep/file
rm fresh/bin
rm -r g1-renamed/h0 2>/dev/null || true
rm g3/replaced.txt && echo file > g3-file && rmdir g3 && mv g3-file g3
rm blob.bin && mkdir blob.bin && echo inside > blob.bin/now-a-dir
mkdir -p a/b/c/d && echo deep > a/b/c/d/e
chmod +x fresh/deep/file
rm g2/.gitignore
printf odd > \"$(printf 'g0/tab\\there\\nnew\\377line')\"
mkdir \"$(printf 'odd\\376dir')\" && printf odd > \"$(printf 'odd\\376dir/x y')\"
",
    "set -e
printf '*.log\\n' > .gitignore
echo 'kept now' > build/artifact2
echo last >> fresh/deep/file
",
    "echo ignored > only.log\n",
];

/// The stored change-set document of a run.
fn stored_doc(fx: &Fixture, session: &str, run: &str) -> Value {
    let path = fx
        .src
        .join(".git/a3s-iso/runs")
        .join(session)
        .join(format!("{run}.json"));
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Runs `script` sandboxed in `session` (on the full path with `full`) and returns the run's
/// JSON and the git calls it made (through a logging `--git`).
fn run_script(fx: &Fixture, session: &str, script: &str, full: bool) -> (Value, Vec<String>) {
    let log = fx.root.join(format!("git-{session}.log"));
    let wrapper = fx.root.join("logging-git");
    if !wrapper.exists() {
        let real = crate::fixture::git_on_path();
        let body = format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> \"$A3S_ISO_TEST_GIT_LOG\"\nexec '{}' \"$@\"\n",
            real.display()
        );
        std::fs::write(&wrapper, body).unwrap();
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let _ = std::fs::remove_file(&log);
    let mut cmd = fx.cmd();
    cmd.env("A3S_ISO_TEST_GIT_LOG", &log)
        .arg("--git")
        .arg(&wrapper);
    if full {
        cmd.env("A3S_ISO_TEST_FULL_RUN", "1");
    }
    let out = cmd
        .args(["run", "--json", "-s", session, "--", "sh", "-c", script])
        .output()
        .unwrap();
    let (code, doc) = crate::fixture::json_of(out);
    assert_eq!(code, 0, "{doc}");
    // Lossy: a path given to git need not be UTF-8.
    let calls = String::from_utf8_lossy(&std::fs::read(&log).unwrap_or_default()).into_owned();
    (doc, calls.lines().map(str::to_string).collect())
}

/// Whether a whole snapshot was taken: `add -A`, or the `status` of every path through the
/// untracked cache of a3s-iso's own index.
fn adds_all(calls: &[String]) -> bool {
    calls.iter().any(|c| {
        c.contains(" add ") || c.ends_with(" add") || c.contains(" status --porcelain=v1 -z --untracked-files=all --no-renames --ignore-submodules=all")
    })
}

#[test]
fn the_layer_and_the_full_path_record_the_same_change_set_byte_for_byte() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    let mut rng = Rng::seeded("layer-vs-full");
    generated_source(&fx, &mut rng);
    for session in ["fast", "full"] {
        fx.bind(session);
        // The first run's full snapshot is what later runs' layers start from.
        run_script(&fx, session, "true", true);
    }
    for (step, changes) in CHANGES.iter().enumerate() {
        let (fast, fast_calls) = run_script(&fx, "fast", changes, false);
        let (full, full_calls) = run_script(&fx, "full", changes, true);
        assert!(
            !adds_all(&fast_calls),
            "the fast path snapshots nothing whole: {fast_calls:#?}"
        );
        assert!(adds_all(&full_calls), "{full_calls:#?}");
        // Until the root's ignore rules change, only the trees above the paths are written.
        let edits = fast_calls.iter().any(|c| c.contains(" mktree "));
        assert_eq!(edits, step != 2, "step {step}: {fast_calls:#?}");
        // ... and no index of the whole tree is written or read.
        let whole = ["write-tree", "read-tree"]
            .iter()
            .any(|op| fast_calls.iter().any(|c| c.contains(&format!(" {op}"))));
        assert_eq!(whole, step == 2, "step {step}: {fast_calls:#?}");
        same_documents(&fx, &fast, &full);
    }
    // Both isolations hold the same bytes, and the layer's directory is gone.
    assert_same_isolations(&fx);
    assert!(!fx.isolation("fast").join("g3/replaced.txt").is_symlink());
    let layers = fx.src.join(".git/a3s-iso/run-layers/fast");
    assert!(
        !layers.exists(),
        "{:?}",
        std::fs::read_dir(&layers).map(|d| d.count())
    );
}

/// The isolations of sessions `fast` and `full` hold the same bytes (each names its own
/// admin dir in `.git`).
fn assert_same_isolations(fx: &Fixture) {
    let listings = ["fast", "full"].map(|s| {
        let mut listing = crate::fixture::content_listing(&fx.isolation(s));
        listing.remove(".git");
        listing
    });
    assert_eq!(listings[0], listings[1]);
}

/// The two runs' outputs and stored documents say the same, byte for byte.
fn same_documents(fx: &Fixture, fast: &Value, full: &Value) {
    for field in ["base_tree", "result_tree", "change_set"] {
        assert_eq!(fast[field], full[field], "{field}: {fast} / {full}");
    }
    let docs = [("fast", fast), ("full", full)]
        .map(|(s, doc)| stored_doc(fx, s, doc["run_id"].as_str().unwrap()));
    for field in [
        "base_tree",
        "result_tree",
        "patch_digest",
        "patch_bytes",
        "patch_base64",
    ] {
        assert_eq!(docs[0][field], docs[1][field], "{field}");
    }
}

/// The blob `path` has in `tree`, as text.
fn blob(fx: &Fixture, tree: &str, path: &str) -> String {
    let tree = tree.trim_start_matches("git-tree:");
    fx.git(&fx.src, &["cat-file", "-p", &format!("{tree}:{path}")])
}

#[test]
fn capture_holds_an_edit_made_outside_any_run_between_two_runs() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    fx.write("same.txt", "before\n");
    fx.commit_all("same");
    fx.bind("out");
    let iso = fx.isolation("out");
    run_script(&fx, "out", "echo one > one.txt", true);
    let (first, _) = run_script(&fx, "out", "echo two > two.txt", false);
    // Outside any run, in the second the run's index was written: same size, mtime put back.
    let same = iso.join("same.txt");
    let mtime = std::fs::metadata(&same).unwrap().modified().unwrap();
    std::fs::write(&same, "AFTER!\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&same)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let (second, calls) = run_script(&fx, "out", "echo three > three.txt", false);
    assert!(!adds_all(&calls), "{calls:#?}");
    assert_eq!(second["base_tree"], first["result_tree"]);
    let result = second["result_tree"].as_str().unwrap();
    assert_eq!(blob(&fx, result, "three.txt"), "three");
    // Not the run's: its change set has only what it did.
    assert_eq!(blob(&fx, result, "same.txt"), "before");
    assert_eq!(second["change_set"]["files_changed"], 1);
    let (code, capture) = fx.json(&["capture", "-s", "out"]);
    assert_eq!(code, 0, "{capture}");
    let captured = capture["result_tree"].as_str().unwrap();
    assert_eq!(blob(&fx, captured, "same.txt"), "AFTER!");
    for (file, text) in [
        ("one.txt", "one"),
        ("two.txt", "two"),
        ("three.txt", "three"),
    ] {
        assert_eq!(blob(&fx, captured, file), text);
    }
}

#[test]
fn a_run_on_the_full_path_after_layered_runs_starts_from_the_last_result() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    fx.write("kept.txt", "kept\n");
    fx.commit_all("kept");
    fx.bind("mixed");
    run_script(&fx, "mixed", "true", true);
    let (first, _) = run_script(&fx, "mixed", "echo one > one.txt", false);
    let (second, calls) = run_script(&fx, "mixed", "echo two >> kept.txt", false);
    assert!(calls.iter().any(|c| c.contains(" mktree ")), "{calls:#?}");
    assert_eq!(second["base_tree"], first["result_tree"]);
    // A directory named `.git` sends the run to the full path; its base is still the last
    // run's result, so its change set holds only what it did.
    let (third, calls) = run_script(
        &fx,
        "mixed",
        "mkdir -p n/.git && echo three > three.txt",
        false,
    );
    assert!(adds_all(&calls), "{calls:#?}");
    assert_eq!(third["base_tree"], second["result_tree"]);
    let result = third["result_tree"].as_str().unwrap();
    assert_eq!(blob(&fx, result, "three.txt"), "three");
    assert_eq!(blob(&fx, result, "one.txt"), "one");
    assert_eq!(blob(&fx, result, "kept.txt"), "kept\ntwo");
    assert_eq!(third["change_set"]["files_changed"], 1, "{third}");
}

/// Waits until nothing of a killed run (whose command line holds `marker`) is left.
fn wait_gone(marker: &str) {
    for _ in 0..500 {
        if processes_with(marker).is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    crate::fixture::kill_leftovers(marker);
    panic!("the killed run's processes outlived it");
}

/// The files a killed run's command wrote (it notes each, once whole, outside the isolation).
fn written(progress: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(progress).unwrap_or_default();
    text.lines().map(str::to_string).collect()
}

/// The command of a crash round: writes files one by one, noting each once it is whole.
fn writer(progress: &Path, marker: &str) -> String {
    format!(
        "for i in $(seq 1 60); do printf '%0512d' $i > w$i.txt; rm -f src/lib.txt; \
         echo w$i.txt >> '{}'; done; sleep 0.2 # {marker}",
        progress.display()
    )
}

/// Checks that every file the killed command noted is whole in the isolation.
fn assert_kept(fx: &Fixture, iso: &Path, progress: &Path, round: &str) {
    let (code, doc) = fx.json(&["list"]);
    assert_eq!(code, 0, "{round}: {doc}");
    let pending = fx.src.join(".git/a3s-iso/pending");
    let left = std::fs::read_dir(&pending).map(|d| d.count()).unwrap_or(0);
    assert_eq!(left, 0, "{round}: an intent is left after the next command");
    for file in written(progress) {
        let n: usize = file
            .trim_start_matches('w')
            .trim_end_matches(".txt")
            .parse()
            .unwrap();
        let bytes = std::fs::read(iso.join(&file)).unwrap_or_default();
        assert_eq!(
            bytes,
            format!("{n:0512}").into_bytes(),
            "{round}: {file} lost"
        );
    }
    if !written(progress).is_empty() {
        assert!(
            !iso.join("src/lib.txt").exists(),
            "{round}: a deletion lost"
        );
    }
}

#[test]
fn a_run_killed_at_any_point_after_its_command_wrote_loses_none_of_its_writes() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("k");
    let iso = fx.isolation("k");
    run_script(&fx, "k", "true", true);
    let notes = fx.root.join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    let mut rng = Rng::seeded("run-layer-kills");
    let marker = format!("run-layer-kill-{}", std::process::id());
    for round in 0..12 {
        let progress = notes.join(format!("progress-{round}"));
        let delay = Duration::from_millis(100 + rng.below(900));
        let script = writer(&progress, &marker);
        let notes_dir = notes.to_str().unwrap();
        let args = [
            "run",
            "-s",
            "k",
            "--allow-write",
            notes_dir,
            "--",
            "sh",
            "-c",
            &script,
        ];
        crate::promote_crash::kill_after(&fx, &args, delay);
        wait_gone(&marker);
        assert_kept(&fx, &iso, &progress, &format!("round {round} ({delay:?})"));
        fx.git(&iso, &["checkout", "-q", "--", "src/lib.txt"]);
    }
}

#[cfg(feature = "fault-injection")]
#[test]
fn a_run_killed_before_during_or_after_its_merge_is_merged_by_the_next_command() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("f");
    let iso = fx.isolation("f");
    run_script(&fx, "f", "true", true);
    let notes = fx.root.join("notes");
    std::fs::create_dir_all(&notes).unwrap();
    let faults = [
        "run-layer-before-merge",
        "run-layer-merge-entry",
        "run-layer-after-merge",
    ];
    for fault in faults {
        let progress = notes.join(fault);
        let script = writer(&progress, fault).replace("sleep 0.2", "true");
        let out = fx
            .cmd()
            .env("A3S_ISO_TEST_FAULT", fault)
            .args(["run", "-s", "f", "--allow-write", notes.to_str().unwrap()])
            .args(["--", "sh", "-c", &script])
            .output()
            .unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&out.status),
            Some(9),
            "the fault point {fault} must kill it: {out:?}"
        );
        assert_eq!(written(&progress).len(), 60, "{fault}");
        assert_kept(&fx, &iso, &progress, fault);
        fx.git(&iso, &["checkout", "-q", "--", "src/lib.txt"]);
        let (code, capture) = fx.json(&["capture", "-s", "f"]);
        assert_eq!(code, 0, "{capture}");
        let tree = capture["result_tree"].as_str().unwrap();
        assert_eq!(blob(&fx, tree, "w60.txt"), format!("{:0512}", 60));
    }
}

/// A command that never started (not found) leaves no run half done: its layer is merged
/// before `run` fails, and the next command has nothing to finish or to warn about.
#[test]
fn a_command_that_cannot_start_leaves_nothing_to_finish() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("x");
    run_script(&fx, "x", "true", true);
    let out = fx
        .cmd()
        .args(["run", "-s", "x", "--", "no-such-command"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127), "{out:?}");
    let pending = fx.src.join(".git/a3s-iso/pending");
    let left: Vec<_> = std::fs::read_dir(&pending)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert_eq!(left, Vec::<std::ffi::OsString>::new(), "no record is left");
    let (code, _, stderr) = crate::fixture::human(&fx, &["list"]);
    assert_eq!((code, stderr.as_str()), (0, ""));
}

/// A run killed before its merge is finished by the next command, which names it.
#[cfg(feature = "fault-injection")]
#[test]
fn the_warning_of_a_finished_run_names_the_run_and_its_session() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    fx.bind("x");
    run_script(&fx, "x", "true", true);
    let out = fx
        .cmd()
        .env("A3S_ISO_TEST_FAULT", "run-layer-before-merge")
        .args(["run", "-s", "x", "--", "sh", "-c", "echo new > new.txt"])
        .output()
        .unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(9)
    );
    let (code, _, stderr) = crate::fixture::human(&fx, &["list"]);
    assert_eq!(
        (code, stderr.as_str()),
        (0, "warning: an interrupted run of session x was finished\n")
    );
    assert_eq!(
        crate::fixture::read_text(&fx.isolation("x"), "new.txt"),
        "new\n"
    );
}

/// A session's first run after its bind, and its first after a rebase, take the fast path
/// (bind and the rebase leave a3s-iso's index noted with the tree they wrote) and record
/// exactly what the full path records.
#[test]
fn the_first_run_after_a_bind_or_a_rebase_takes_the_fast_path_and_records_the_same() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    let mut rng = Rng::seeded("first-run");
    generated_source(&fx, &mut rng);
    for session in ["fast", "full"] {
        fx.bind(session);
    }
    let (fast, calls) = run_script(&fx, "fast", CHANGES[0], false);
    let (full, full_calls) = run_script(&fx, "full", CHANGES[0], true);
    assert!(!adds_all(&calls), "after bind: {calls:#?}");
    assert!(adds_all(&full_calls), "{full_calls:#?}");
    same_documents(&fx, &fast, &full);
    fx.write("by-the-user.txt", "moved on\n");
    fx.commit_all("the user moves on");
    for session in ["fast", "full"] {
        let (code, doc) = fx.json(&["rebase", "-s", session]);
        assert_eq!(code, 0, "{doc}");
    }
    let (fast, calls) = run_script(&fx, "fast", CHANGES[1], false);
    let (full, _) = run_script(&fx, "full", CHANGES[1], true);
    assert!(!adds_all(&calls), "after rebase: {calls:#?}");
    same_documents(&fx, &fast, &full);
    assert_same_isolations(&fx);
}

/// An edit made in a fresh isolation before its first run, outside any run (same size, its
/// time put back), is not the run's, and the next capture holds it.
#[test]
fn an_edit_before_the_first_run_is_not_the_runs_and_capture_holds_it() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    fx.write("same.txt", "before\n");
    fx.commit_all("same");
    fx.bind("early");
    let same = fx.isolation("early").join("same.txt");
    let mtime = std::fs::metadata(&same).unwrap().modified().unwrap();
    std::fs::write(&same, "AFTER!\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&same)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let (run, calls) = run_script(&fx, "early", "echo one > one.txt", false);
    assert!(!adds_all(&calls), "{calls:#?}");
    assert_eq!(run["change_set"]["files_changed"], 1, "{run}");
    let result = run["result_tree"].as_str().unwrap();
    assert_eq!(blob(&fx, result, "same.txt"), "before");
    let (code, capture) = fx.json(&["capture", "-s", "early"]);
    assert_eq!(code, 0, "{capture}");
    let captured = capture["result_tree"].as_str().unwrap();
    assert_eq!(blob(&fx, captured, "same.txt"), "AFTER!");
    assert_eq!(blob(&fx, captured, "one.txt"), "one");
}

/// Writes `text` to `path` and puts its modification time back to `mtime`, as `cp -p` or
/// `tar` leave a file: only the change time tells the edit apart.
fn write_keeping_mtime(path: &Path, text: &str, mtime: std::time::SystemTime) {
    std::fs::write(path, text).unwrap();
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
}

/// The second of `path`'s change time.
fn ctime_second(path: &Path) -> i64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).unwrap().ctime()
}

/// A full snapshot of session `id` after `same` was written as `bbbb` with its time put back
/// to [`old`]: `capture`'s, or that of a run on the full path whose command wrote it.
fn noted_after_first_edit(fx: &Fixture, id: &str, same: &Path, by_run: bool) {
    if by_run {
        let name = same.file_name().unwrap().to_str().unwrap();
        let script = format!("printf 'bbbb\\n' > {name} && touch -d @1000000000 {name}");
        run_script(fx, id, &script, true);
    } else {
        write_keeping_mtime(same, "bbbb\n", old());
        let (code, doc) = fx.json(&["capture", "-s", id]);
        assert_eq!(code, 0, "{doc}");
    }
}

/// The old instant edits put a file's modification time back to (`touch -d @1000000000`).
fn old() -> std::time::SystemTime {
    std::time::UNIX_EPOCH + Duration::from_secs(1_000_000_000)
}

/// A run that changes the root `.gitignore` stages every path of a3s-iso's index of the
/// isolation, then keeps that index dated when git wrote it: a record it kept as it was must
/// not pass from then on for one noted before the second the file last changed in.
#[test]
fn an_edit_outside_any_run_survives_a_run_that_changes_the_root_ignore_file() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = Fixture::new();
    for round in 0..8 {
        fx.write(&format!("same{round}.txt"), "aaaa\n");
    }
    fx.commit_all("same");
    let mut tried = [0, 0];
    for round in 0..8 {
        let (id, by_run) = (format!("ignore{round}"), round % 2 == 1);
        let name = format!("same{round}.txt");
        fx.bind(&id);
        let same = fx.isolation(&id).join(&name);
        // Two same-size edits with one old mtime around a full snapshot, both in one second:
        // the snapshot notes the first with a change time whose second the second edit keeps.
        crate::capture_racy::to_second_boundary();
        noted_after_first_edit(&fx, &id, &same, by_run);
        let noted = ctime_second(&same);
        write_keeping_mtime(&same, "cccc\n", old());
        if ctime_second(&same) != noted {
            // The snapshot took too long to keep both edits in one second.
            continue;
        }
        tried[usize::from(by_run)] += 1;
        // The seed must be written in a later second than both edits.
        std::thread::sleep(Duration::from_millis(1100));
        // The root's ignore file changed: the run stages every path of a3s-iso's index.
        let ignore = format!("printf '*.log{round}\\n' > .gitignore");
        let (run, _) = run_script(&fx, &id, &ignore, false);
        let result = run["result_tree"].as_str().unwrap();
        assert_eq!(blob(&fx, result, ".gitignore"), format!("*.log{round}"));
        // Every later snapshot must hold the second edit: `diff`'s, `capture`'s, `land`'s.
        let diffed = stdout_of(fx.cmd().args(["diff", "-s", &id]).output().unwrap());
        let (code, capture) = fx.json(&["capture", "-s", &id]);
        assert_eq!(code, 0, "{capture}");
        let captured = blob(&fx, capture["result_tree"].as_str().unwrap(), &name);
        let (code, landed) = fx.json(&["land", "-s", &id, "--keep", "--test", "true"]);
        assert_eq!(code, 0, "{landed}");
        let landed = fx.git(&fx.src, &["show", &format!("HEAD:{name}")]);
        assert_eq!(
            (
                diffed.contains("+cccc"),
                captured.as_str(),
                landed.trim_end()
            ),
            (true, "cccc", "cccc"),
            "round {round} (noted by a run: {by_run}): the second edit escaped: {diffed}"
        );
        assert_eq!(std::fs::read_to_string(&same).unwrap(), "cccc\n");
        if tried.iter().all(|n| *n > 0) {
            break;
        }
    }
    assert!(
        tried.iter().any(|n| *n > 0),
        "no round kept both edits in one second"
    );
}

/// Same-size edits of one file with its modification time put back to one old instant, each
/// its own way (`touch -d`, `cp -p`, `os.utime`), by runs in one second: only change times
/// tell them apart.
const PUT_BACK: [(&str, &str); 3] = [
    (
        "printf 'bbbb\\n' > same.txt && touch -d @1000000000 same.txt",
        "bbbb",
    ),
    (
        "printf 'cccc\\n' > c.tmp && touch -d @1000000000 c.tmp && cp -p c.tmp same.txt && rm c.tmp",
        "cccc",
    ),
    (
        "python3 -c \"import os; open('same.txt', 'w').write('dddd\\n'); os.utime('same.txt', (1e9, 1e9))\"",
        "dddd",
    ),
];

#[test]
fn same_size_edits_with_their_time_put_back_by_runs_and_between_them_are_all_landed() {
    if !require_tool("sandbox") || !require_tool("python3") {
        return;
    }
    let fx = Fixture::new();
    fx.write("same.txt", "aaaa\n");
    fx.commit_all("same");
    let old = std::time::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    for full in [false, true] {
        let id = format!("put-back-{full}");
        fx.bind(&id);
        run_script(&fx, &id, "true", true);
        let same = fx.isolation(&id).join("same.txt");
        crate::capture_racy::to_second_boundary();
        for (script, text) in PUT_BACK {
            let (run, _) = run_script(&fx, &id, script, full);
            let result = run["result_tree"].as_str().unwrap();
            assert_eq!(blob(&fx, result, "same.txt"), text, "{full}: {script}");
        }
        // Outside any run, right after the last run's snapshot.
        write_keeping_mtime(&same, "eeee\n", old);
        let diffed = stdout_of(fx.cmd().args(["diff", "-s", &id]).output().unwrap());
        assert!(diffed.contains("\n+eeee\n"), "{full}: {diffed}");
        // Once more after a commit in the source: `land` rebases the session first.
        write_keeping_mtime(&same, "ffff\n", old);
        fx.write(&format!("other-{full}.txt"), "other\n");
        fx.commit_all("other");
        let (code, landed) = fx.json(&["land", "--all", "--keep", "--test", "true"]);
        assert_eq!(code, 0, "{landed}");
        let landed = fx.git(&fx.src, &["show", "HEAD:same.txt"]);
        assert_eq!(landed.trim_end(), "ffff", "{full}");
        assert_eq!(std::fs::read_to_string(&same).unwrap(), "ffff\n");
    }
}

#[test]
fn a_same_size_edit_with_its_time_put_back_after_a_large_bind_is_diffed_and_landed_after_a_run() {
    if !require_tool("sandbox") {
        return;
    }
    let fx = crate::capture_racy::first_of_many_files();
    fx.bind("large");
    let file = fx.isolation("large").join("A.txt");
    let noted = std::fs::metadata(&file).unwrap().modified().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    write_keeping_mtime(&file, "edit!\n", noted);
    // Not the run's: the run's change set holds only what its command wrote.
    let (run, _) = run_script(&fx, "large", "echo new > new.txt", false);
    assert_eq!(run["change_set"]["files_changed"], 1, "{run}");
    let diffed = stdout_of(fx.cmd().args(["diff", "-s", "large"]).output().unwrap());
    assert!(diffed.contains("-first\n+edit!\n"), "{diffed}");
    assert!(diffed.contains("+new\n"), "{diffed}");
    assert_eq!(diffed.matches("diff --git").count(), 2, "{diffed}");
    // Edited again right after `diff`'s snapshot, then landed after a commit in the source:
    // the session is rebased first.
    write_keeping_mtime(&file, "again\n", noted);
    fx.write("other.txt", "other\n");
    fx.commit_all("other");
    let (code, landed) = fx.json(&["land", "--all", "--keep", "--test", "true"]);
    assert_eq!(code, 0, "{landed}");
    let landed = fx.git(&fx.src, &["show", "HEAD:A.txt"]);
    assert_eq!(landed.trim_end(), "again");
    assert_eq!(fx.git(&fx.src, &["show", "HEAD:new.txt"]).trim_end(), "new");
}
