//! git inside `run` works as in a clone (branches, tags, the stash, rebase, cherry-pick), and
//! everything it creates stays the session's: the source's refs, packed refs and logs never
//! change, another session never sees it, and outside the isolation's HEAD stays detached.

use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fixture::{Fixture, content_listing, json_of, require_tool, snapshot_settings_naming};

/// Fails where the machine cannot give the sandbox, unless that is allowed (then skips).
macro_rules! require_sandbox {
    () => {
        if !require_tool("sandbox") {
            return;
        }
    };
}

/// The source's own refs as files and as git lists them (the store's private namespace left
/// out): `refs/heads`, `refs/tags`, `refs/stash`, `packed-refs` and `logs/`, byte for byte.
pub(crate) fn source_refs(fx: &Fixture) -> BTreeMap<String, String> {
    let git_dir = fx.src.join(".git");
    let mut out = BTreeMap::new();
    for dir in ["refs/heads", "refs/tags", "logs"] {
        for (path, entry) in content_listing(&git_dir.join(dir)) {
            out.insert(format!("{dir}/{path}"), entry);
        }
    }
    for file in ["refs/stash", "packed-refs"] {
        let bytes = std::fs::read(git_dir.join(file)).ok();
        out.insert(file.into(), format!("{bytes:?}"));
    }
    let listed = fx.git(
        &fx.src,
        &["for-each-ref", "--format=%(objectname) %(refname)"],
    );
    let own: Vec<&str> = listed
        .lines()
        .filter(|line| !line.contains(" refs/a3s-iso/"))
        .collect();
    out.insert("for-each-ref".into(), own.join("\n"));
    out
}

/// `run -s ID -- sh -c SCRIPT`: the exit status and the run's document.
pub(crate) fn run_script(fx: &Fixture, id: &str, script: &str) -> (i32, Value) {
    fx.json(&["run", "-s", id, "--", "sh", "-c", script])
}

/// What the session's mirror ref `git/<name>` names, if anything.
pub(crate) fn mirrored(fx: &Fixture, id: &str, name: &str) -> Option<String> {
    let full = format!("refs/a3s-iso/sessions/{id}/git/{name}");
    let out = fx.git(&fx.src, &["for-each-ref", "--format=%(objectname)", &full]);
    (!out.is_empty()).then_some(out)
}

/// Whether the isolation's HEAD is a symbolic ref, as git outside sees it.
pub(crate) fn symbolic_head(fx: &Fixture, iso: &Path) -> bool {
    let mut cmd = std::process::Command::new("git");
    cmd.current_dir(iso).args(["symbolic-ref", "-q", "HEAD"]);
    crate::fixture::isolate(&mut cmd, &fx.home);
    cmd.status().unwrap().success()
}

/// A source with a branch `side` one commit ahead of `main`, for the session to rebase onto
/// and cherry-pick from.
fn source_with_side(fx: &Fixture) {
    fx.git(&fx.src, &["branch", "side"]);
    fx.git(&fx.src, &["switch", "-q", "side"]);
    fx.write("side.txt", "side\n");
    fx.commit_all("side");
    fx.git(&fx.src, &["switch", "-q", "main"]);
}

/// Everything the session does with git inside one run.
const WORK: &str = "set -e
git checkout -q -b feature
echo f > f.txt
git add f.txt
git commit -q -m feature-commit
git tag v1
echo dirty >> README.md
git stash -q
git stash list | grep -q 'stash@{0}'
git rebase -q side
git switch -q -c picked main
git cherry-pick side >/dev/null
git switch -q feature
test \"$(git branch --show-current)\" = feature
";

/// `show` names the session's branches, HEAD's branch, stash and tags.
fn show_names_the_sessions_git_state(fx: &Fixture, feature: &str) {
    let (code, shown) = fx.json(&["show", "-s", "g"]);
    assert_eq!(code, 0, "{shown}");
    let git = &shown["git"];
    let named = [(feature, "[FEATURE]")];
    snapshot_settings_naming(fx, &named).bind(|| {
        insta::assert_json_snapshot!(git, @r#"
        {
          "branches": [
            {
              "name": "feature",
              "object": "[FEATURE]"
            },
            {
              "name": "picked",
              "object": "[HASH]"
            }
          ],
          "head_branch": "feature",
          "stash_entries": 1,
          "tags": [
            {
              "name": "v1",
              "object": "[HASH]"
            }
          ]
        }
        "#)
    });
    let human = fx.cmd().args(["show", "-s", "g"]).output().unwrap();
    let human = String::from_utf8_lossy(&human.stdout);
    assert!(human.contains("feature") && human.contains("v1"), "{human}");
}

#[test]
fn branches_tags_stash_rebase_and_cherry_pick_work_inside_and_stay_the_sessions() {
    require_sandbox!();
    let fx = Fixture::new();
    source_with_side(&fx);
    fx.bind("g");
    fx.bind("other");
    let before = source_refs(&fx);
    let (code, doc) = run_script(&fx, "g", WORK);
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    assert_eq!(source_refs(&fx), before, "the source's refs changed");
    let feature = mirrored(&fx, "g", "heads/feature").expect("feature is mirrored");
    assert!(mirrored(&fx, "g", "heads/picked").is_some());
    assert!(mirrored(&fx, "g", "tags/v1").is_some());
    assert!(mirrored(&fx, "g", "stash-entries/0").is_some());
    let side = fx.git(&fx.src, &["rev-parse", "side"]);
    let parent = fx.git(&fx.src, &["rev-parse", &format!("{feature}^")]);
    assert_eq!(parent, side, "feature was rebased onto side");

    // Outside, HEAD is detached at the branch's tip.
    let iso = fx.isolation("g");
    assert!(!symbolic_head(&fx, &iso));
    assert_eq!(fx.git(&iso, &["rev-parse", "HEAD"]), feature);

    // Another session sees none of it.
    let (code, doc) = run_script(
        &fx,
        "other",
        "git rev-parse -q --verify refs/heads/feature && exit 1
         git rev-parse -q --verify refs/tags/v1 && exit 2
         test -z \"$(git stash list)\" || exit 3",
    );
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    assert_eq!(source_refs(&fx), before);

    // The session's next run is on its branch again, with its stash.
    let (code, doc) = run_script(
        &fx,
        "g",
        &format!(
            "set -e
             test \"$(git branch --show-current)\" = feature
             test \"$(git rev-parse feature)\" = {feature}
             test \"$(git stash list | wc -l)\" -eq 1
             git rev-parse -q --verify v1 >/dev/null"
        ),
    );
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    assert_eq!(source_refs(&fx), before);

    show_names_the_sessions_git_state(&fx, &feature);
}

#[test]
fn a_head_moved_outside_is_kept_and_the_session_goes_on_detached() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("m");
    let (code, doc) = run_script(
        &fx,
        "m",
        "set -e; git switch -q -c feature; echo x > x; git add x; git commit -q -m x",
    );
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    let iso = fx.isolation("m");
    let base = fx.git(&fx.src, &["rev-parse", "main"]);
    fx.git(&iso, &["checkout", "-q", "--detach", &base]);
    let (code, doc) = run_script(
        &fx,
        "m",
        &format!(
            "set -e
             test -z \"$(git branch --show-current)\"
             test \"$(git rev-parse HEAD)\" = {base}
             git rev-parse -q --verify feature >/dev/null"
        ),
    );
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    assert_eq!(fx.git(&iso, &["rev-parse", "HEAD"]), base);
}

#[test]
fn commits_on_a_private_branch_are_captured_and_promoted_in_branch_mode() {
    require_sandbox!();
    let fx = Fixture::new();
    let old_tip = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    fx.bind("p");
    let (code, doc) = run_script(
        &fx,
        "p",
        "set -e
         git checkout -q -b feature
         echo one > one.txt; git add one.txt; git commit -q -m 'first on feature'
         echo two > two.txt; git add two.txt; git commit -q -m 'second on feature'",
    );
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    let (code, doc) = fx.json(&["capture", "-s", "p"]);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = fx.json(&["promote", "-s", "p", "--mode", "branch"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["outcome"], "applied", "{doc}");
    let landed = fx.git(
        &fx.src,
        &["log", "--format=%s", &format!("{old_tip}..HEAD")],
    );
    let landed: Vec<&str> = landed.lines().collect();
    assert_eq!(landed, ["second on feature", "first on feature"]);
    assert_eq!(
        std::fs::read_to_string(fx.src.join("two.txt")).unwrap(),
        "two\n"
    );
    // The user's branch moved by promote alone; no `feature` reached the source.
    assert!(fx.git(&fx.src, &["branch", "--list", "feature"]).is_empty());
}

/// Starts `run` in a process group of its own with `script`, waits until the script has
/// written `ready` in the isolation, and SIGKILLs the whole group.
pub(crate) fn kill_run_inside(fx: &Fixture, id: &str, script: &str) {
    let ready = fx.isolation(id).join("ready");
    let mut child = fx
        .cmd()
        // Full path: the test watches the isolation while the command runs, and a layered
        // run's writes show there only when it ends.
        .env("A3S_ISO_TEST_FULL_RUN", "1")
        .args(["run", "-s", id, "--", "sh", "-c", script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready.exists() {
        assert!(Instant::now() < deadline, "the command never got ready");
        std::thread::sleep(Duration::from_millis(20));
    }
    let group = rustix::process::Pid::from_child(&child);
    let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    child.wait().unwrap();
}

#[test]
fn a_run_killed_inside_leaves_head_detached_and_the_source_refs_unchanged() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("k");
    let iso = fx.isolation("k");
    let base = fx.git(&iso, &["rev-parse", "HEAD"]);
    let before = source_refs(&fx);
    kill_run_inside(
        &fx,
        "k",
        "git checkout -q -b feature && echo x > x && git add x && git commit -q -m x \
         && touch \"$(git rev-parse --git-common-dir)/refs/heads/stuck.lock\" \
         && touch ready && sleep 60",
    );
    let (code, doc) = fx.json(&["list"]);
    assert_eq!(code, 0, "{doc}");
    assert!(!symbolic_head(&fx, &iso));
    assert_eq!(fx.git(&iso, &["rev-parse", "HEAD"]), base);
    fx.git(&iso, &["status", "--short"]);
    assert_eq!(source_refs(&fx), before);
    // The session goes on: the killed run's commit never joined the store, and its branch
    // naming it is gone rather than broken.
    let (code, doc) = run_script(
        &fx,
        "k",
        "set -e
         test -z \"$(git branch --show-current)\"
         git rev-parse -q --verify refs/heads/feature && exit 1
         git branch stuck
         git status >/dev/null",
    );
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    assert_eq!(source_refs(&fx), before);
}

#[test]
fn a_run_killed_while_it_moves_git_state_down_is_finished_by_the_next_command() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("d");
    let iso = fx.isolation("d");
    let before = source_refs(&fx);
    let out = fx
        .cmd()
        .env("A3S_ISO_TEST_FAULT", "settle-git-after-move")
        .args(["run", "-s", "d", "--", "sh", "-c"])
        .arg("set -e; git switch -q -c feature; echo x > x; git add x; git commit -q -m x")
        .output()
        .unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&out.status),
        Some(9)
    );
    assert!(!symbolic_head(&fx, &iso));
    let (code, doc) = fx.json(&["list"]);
    assert_eq!(code, 0, "{doc}");
    assert!(!symbolic_head(&fx, &iso));
    let pending = fx.src.join(".git/a3s-iso/pending");
    let left: Vec<_> = std::fs::read_dir(&pending)
        .map(|d| d.flatten().collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    let feature = mirrored(&fx, "d", "heads/feature").expect("feature is mirrored");
    assert_eq!(fx.git(&iso, &["rev-parse", "HEAD"]), feature);
    assert_eq!(source_refs(&fx), before);
    let (code, doc) = run_script(&fx, "d", "test \"$(git branch --show-current)\" = feature");
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
}

#[test]
fn without_the_layers_git_inside_falls_back_and_never_writes_the_refs() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("f");
    let iso = fx.isolation("f");
    let base = fx.git(&iso, &["rev-parse", "HEAD"]);
    let before = source_refs(&fx);
    let out = fx
        .cmd()
        .env("A3S_ISO_TEST_FAULT", "git-layers-unmountable")
        .args(["--json", "run", "-s", "f", "--", "sh", "-c"])
        .arg("git checkout -b feature && exit 0; git symbolic-ref HEAD refs/heads/nowhere; exit 3")
        .output()
        .unwrap();
    let (_, doc) = json_of(out);
    // The branch is refused (refs/ read-only); the HEAD the command then forced onto a branch
    // is detached again, where it was.
    assert_eq!(doc["exit_code"], 3, "{doc}");
    let warned = doc["warnings"].as_array().unwrap().iter().any(|w| {
        w.as_str()
            .unwrap()
            .contains("git layers could not be mounted")
    });
    assert!(warned, "{doc}");
    assert_eq!(source_refs(&fx), before);
    assert!(!symbolic_head(&fx, &iso));
    assert_eq!(fx.git(&iso, &["rev-parse", "HEAD"]), base);
    assert!(mirrored(&fx, "f", "heads/feature").is_none());
}

#[test]
fn the_layers_of_a_session_are_out_of_reach_of_its_command_and_of_another_session() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("a");
    fx.bind("b");
    let (code, doc) = run_script(&fx, "b", "git switch -q -c mine");
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    let head = fx.git(&fx.src, &["rev-parse", "HEAD"]);
    let layers = fx.src.join(".git/a3s-iso/session-git");
    let planted = layers.join("b/common/upper/refs/heads/planted");
    // Session a writes where session b's layers are, and where its own were attached.
    let script = format!(
        "mkdir -p '{dir}' 2>/dev/null; echo {head} > '{file}' 2>/dev/null
         echo {head} > '{own}' 2>/dev/null
         for d in /tmp/.a3s-iso-layer/session /tmp/.a3s-iso-layer/admin; do
           test -e \"$d/common\" && exit 1
           test -e \"$d/HEAD\" && exit 2
         done
         true",
        dir = planted.parent().unwrap().display(),
        file = planted.display(),
        own = layers.join("a/admin/upper/HEAD").display(),
    );
    let (code, doc) = run_script(&fx, "a", &script);
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    assert!(!planted.exists(), "session a wrote into session b's layer");
    assert!(!symbolic_head(&fx, &fx.isolation("a")));
    let (code, doc) = run_script(
        &fx,
        "b",
        "set -e
         git rev-parse -q --verify refs/heads/planted && exit 1
         test \"$(git branch --show-current)\" = mine",
    );
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    // What session a wrote into its view of the git dir beyond refs did not stay.
    let kept: Vec<String> = std::fs::read_dir(layers.join("a/common/upper"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!kept.contains(&"a3s-iso".to_string()), "{kept:?}");
}

#[test]
fn discard_purge_removes_the_sessions_layers_and_mirrored_refs() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("gone");
    let (code, doc) = run_script(&fx, "gone", "git switch -q -c feature && git tag v1");
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    let layers = fx.src.join(".git/a3s-iso/session-git/gone");
    assert!(layers.is_dir());
    assert!(mirrored(&fx, "gone", "heads/feature").is_some());
    let (code, doc) = fx.json(&["discard", "-s", "gone", "--purge"]);
    assert_eq!(code, 0, "{doc}");
    let purged = doc["purged_items"].to_string();
    assert!(purged.contains("session_git"), "{doc}");
    assert!(!layers.exists());
    assert!(mirrored(&fx, "gone", "heads/feature").is_none());
    assert!(mirrored(&fx, "gone", "tags/v1").is_none());
}

#[test]
fn git_gc_in_the_source_keeps_what_only_the_sessions_branches_and_stash_reach() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("kept");
    let (code, doc) = run_script(
        &fx,
        "kept",
        "set -e
         git switch -q -c feature
         echo f > f.txt; git add f.txt; git commit -q -m only-on-feature
         echo s > s.txt; git add s.txt; git stash -q
         git switch -q --detach main",
    );
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    let feature = mirrored(&fx, "kept", "heads/feature").unwrap();
    let stash = mirrored(&fx, "kept", "stash").unwrap();
    fx.git(&fx.src, &["reflog", "expire", "--expire=now", "--all"]);
    fx.git(&fx.src, &["gc", "-q", "--prune=now"]);
    for id in [&feature, &stash] {
        fx.git(&fx.src, &["cat-file", "-e", id]);
    }
    let (code, doc) = run_script(
        &fx,
        "kept",
        &format!(
            "set -e
             test \"$(git log -1 --format=%s feature)\" = only-on-feature
             git stash pop -q
             test -f s.txt
             test \"$(git rev-parse feature)\" = {feature}"
        ),
    );
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    // The stash is empty now: its mirror went with it.
    assert!(mirrored(&fx, "kept", "stash").is_none());
    assert!(mirrored(&fx, "kept", "stash-entries/0").is_none());
}

#[test]
fn in_a_reftable_repository_refs_made_inside_never_reach_the_source() {
    require_sandbox!();
    let fx = Fixture::bare_root();
    std::fs::create_dir_all(&fx.src).unwrap();
    let mut init = std::process::Command::new("git");
    init.current_dir(&fx.src)
        .args(["init", "-q", "-b", "main", "--ref-format=reftable"]);
    crate::fixture::isolate(&mut init, &fx.home);
    if !init.status().unwrap().success() {
        eprintln!("this git has no reftable: nothing to check");
        return;
    }
    fx.write("README.md", "hello\n");
    fx.commit_all("initial");
    fx.bind("rt");
    let before = fx.git(&fx.src, &["for-each-ref"]);
    let (code, doc) = run_script(&fx, "rt", "git checkout -q -b feature && git tag v1");
    assert_eq!(code, 0, "{doc}");
    assert!(doc["warnings"].to_string().contains("reftable"), "{doc}");
    let after = fx.git(&fx.src, &["for-each-ref"]);
    let own: Vec<&str> = after
        .lines()
        .filter(|l| !l.contains("refs/a3s-iso/"))
        .collect();
    let before: Vec<&str> = before
        .lines()
        .filter(|l| !l.contains("refs/a3s-iso/"))
        .collect();
    assert_eq!(own, before);
    assert!(!fx.src.join(".git/a3s-iso/session-git/rt").exists());
}

#[test]
fn layers_that_cannot_be_made_ready_leave_the_run_as_without_them() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("nr");
    let iso = fx.isolation("nr");
    let base = fx.git(&iso, &["rev-parse", "HEAD"]);
    let before = source_refs(&fx);
    // Where the session's layers would go, a file.
    std::fs::write(fx.src.join(".git/a3s-iso/session-git"), "in the way\n").unwrap();
    let (code, doc) = run_script(&fx, "nr", "git checkout -q -b feature || exit 3");
    assert_eq!(code, 3, "{doc}");
    assert!(
        doc["warnings"].to_string().contains("cannot be made ready"),
        "{doc}"
    );
    assert_eq!(source_refs(&fx), before);
    assert!(!symbolic_head(&fx, &iso));
    assert_eq!(fx.git(&iso, &["rev-parse", "HEAD"]), base);
}

#[test]
fn a_packed_ref_deleted_inside_stays_in_the_source_and_gone_for_the_session() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.git(&fx.src, &["tag", "old"]);
    fx.git(&fx.src, &["branch", "kept"]);
    fx.git(&fx.src, &["pack-refs", "--all"]);
    fx.bind("pk");
    let before = source_refs(&fx);
    let (code, doc) = run_script(&fx, "pk", "set -e; git tag -d old >/dev/null; git tag new");
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    assert_eq!(source_refs(&fx), before);
    let (code, doc) = run_script(
        &fx,
        "pk",
        "set -e
         git rev-parse -q --verify refs/tags/old && exit 1
         git rev-parse -q --verify refs/heads/kept >/dev/null
         git rev-parse -q --verify refs/tags/new >/dev/null",
    );
    assert_eq!((code, &doc["exit_code"]), (0, &Value::from(0)), "{doc}");
    // Only what the session made is its own: the source's packed refs are not mirrored.
    let (code, shown) = fx.json(&["show", "-s", "pk"]);
    assert_eq!(code, 0, "{shown}");
    assert_eq!(shown["git"]["tags"].as_array().unwrap().len(), 1, "{shown}");
    assert_eq!(shown["git"]["tags"][0]["name"], "new");
    assert_eq!(
        shown["git"]["branches"].as_array().unwrap().len(),
        0,
        "{shown}"
    );
}

/// A run that changes nothing of the session's git is settled by doing nothing; every run
/// after it that changes something (a branch made, moved or deleted, HEAD switched, a
/// tag written) is settled and mirrored in full.
#[test]
fn a_run_after_one_that_changed_no_git_state_is_settled_in_full() {
    require_sandbox!();
    let fx = Fixture::new();
    fx.bind("s");
    let iso = fx.isolation("s");
    let run_ok = |script: &str| {
        let (code, doc) = run_script(&fx, "s", script);
        assert_eq!(code, 0, "{script}: {doc}");
    };
    let head = fx.git(&iso, &["rev-parse", "HEAD"]);
    run_ok("git branch kept");
    run_ok("true");
    assert_eq!(
        mirrored(&fx, "s", "heads/kept").as_deref(),
        Some(head.as_str())
    );
    run_ok("git branch feature");
    assert_eq!(
        mirrored(&fx, "s", "heads/feature").as_deref(),
        Some(head.as_str())
    );
    run_ok("true");
    run_ok(
        "git commit -q --allow-empty -m moved && git branch -f feature HEAD && git checkout -q --detach HEAD~1",
    );
    let moved = mirrored(&fx, "s", "heads/feature").unwrap();
    assert_ne!(moved, head);
    assert!(!symbolic_head(&fx, &iso));
    run_ok("true");
    run_ok("git branch -D feature");
    assert_eq!(mirrored(&fx, "s", "heads/feature"), None);
    run_ok("true");
    run_ok("git switch -q kept");
    assert!(!symbolic_head(&fx, &iso), "HEAD stays detached outside");
    run_ok("test \"$(git symbolic-ref HEAD)\" = refs/heads/kept");
    run_ok("git stash list >/dev/null; git tag -a -m t v1");
    assert!(mirrored(&fx, "s", "tags/v1").is_some());
    assert_eq!(
        mirrored(&fx, "s", "heads/kept").as_deref(),
        Some(head.as_str())
    );
}
