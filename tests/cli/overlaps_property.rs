//! `overlaps` against `rebase`, for any work of two sessions: whatever lines and files each
//! edits, adds, deletes, moves, re-modes or turns into a directory (the same ones, adjacent
//! ones, different ones; the same new file with the same or other contents; a file where the
//! other makes a directory), committed in its isolation or not, `overlaps` predicts `clean` for
//! the pair exactly when, once the first is promoted and committed, `rebase` of the second ends
//! `rebased`, and `conflict` (with the same paths) exactly when it ends `conflicted`. Neither
//! command changes a byte of the checkout.
//!
//! `A3S_ISO_OVERLAPS_CASES` sets the number of generated pairs (default 50).
//!
//! The plain tests after the property are the smallest cases where the two disagree: a
//! directory of the new HEAD where the isolation has a file (rebase refuses with
//! `invalid_input`, whether the merge is clean or not), and a change committed in the isolation
//! and undone in its uncommitted work (`overlaps` merges the work as a whole, `rebase` replays
//! the commit).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::Value;

use crate::fixture::{
    Fixture, checkout_listing, head, iso_git, listing, pairs, read_path, subjects_since,
};
use crate::land_queue::outcomes;

/// The files of the source the sessions work on (beside the fixture's `README.md` and
/// `src/lib.txt`, which they leave alone), and where a session moves each one.
const FILES: [(&str, &str); 3] = [
    ("f0.txt", "moved/f0.txt"),
    ("f1.txt", "f1-moved.txt"),
    ("src/f2.txt", "src/f2-moved.txt"),
];

/// Lines of each of those files.
const LINES: usize = 5;

/// Paths no commit has, which a session may add.
const NEW: [&str; 2] = ["new.txt", "src/new.txt"];

/// A path that one session may make a file and the other a directory.
const GEN: &str = "gen";

/// Text a session writes: the same for every session that picks it, or its own.
#[derive(Debug, Clone, Copy)]
enum Text {
    Shared(u8),
    Own,
}

impl Text {
    fn render(self, id: &str, what: &str) -> String {
        match self {
            Text::Shared(k) => format!("{what}: shared {k}"),
            Text::Own => format!("{what}: from {id}"),
        }
    }
}

/// What a session does to one line of a file.
#[derive(Debug, Clone, Copy)]
enum LineOp {
    Keep,
    Replace(Text),
    Delete,
    InsertAfter(Text),
}

/// What a session does to one of [`FILES`].
#[derive(Debug, Clone)]
enum FileOp {
    Keep,
    Lines(Vec<LineOp>),
    Delete,
    /// Its whole content replaced by three new lines.
    Rewrite(Text),
    /// Made executable.
    Chmod,
    /// Renamed to its second name, content unchanged.
    Move,
    /// Replaced by a directory of its name holding it as `inner.txt`.
    IntoDir,
}

/// What a session does at [`GEN`].
#[derive(Debug, Clone, Copy)]
enum GenOp {
    Absent,
    /// A file `gen`.
    File(Text),
    /// A directory `gen` holding `gen/inner.txt`.
    Dir(Text),
}

/// One session's work.
#[derive(Debug, Clone)]
struct Work {
    files: Vec<FileOp>,
    new: Vec<Option<Text>>,
    gen_op: GenOp,
    /// The session commits its work in its isolation (else it stays uncommitted).
    commit: bool,
}

/// Path → (content, executable).
type Tree = BTreeMap<String, (String, bool)>;

fn base_lines(file: &str) -> Vec<String> {
    (1..=LINES).map(|n| format!("{file} line {n}")).collect()
}

fn joined(lines: &[String]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// The files the sessions work on, as committed in the source.
fn base() -> Tree {
    FILES
        .iter()
        .map(|(file, _)| (file.to_string(), (joined(&base_lines(file)), false)))
        .collect()
}

fn edit_lines(file: &str, ops: &[LineOp], id: &str) -> String {
    let mut out = Vec::new();
    for (n, (line, op)) in base_lines(file).into_iter().zip(ops).enumerate() {
        let what = format!("{file} line {}", n + 1);
        match op {
            LineOp::Keep => out.push(line),
            LineOp::Replace(text) => out.push(text.render(id, &what)),
            LineOp::Delete => {}
            LineOp::InsertAfter(text) => {
                out.push(line);
                out.push(text.render(id, &format!("after {what}")));
            }
        }
    }
    joined(&out)
}

/// The files the session `id` leaves, as [`base`] with its work done.
fn result(work: &Work, id: &str) -> Tree {
    let mut tree = base();
    for ((file, moved), op) in FILES.iter().zip(&work.files) {
        let content = tree[*file].0.clone();
        match op {
            FileOp::Keep => {}
            FileOp::Lines(ops) => {
                tree.insert(file.to_string(), (edit_lines(file, ops, id), false));
            }
            FileOp::Delete => {
                tree.remove(*file);
            }
            FileOp::Rewrite(text) => {
                let lines: Vec<String> = (1..=3)
                    .map(|n| text.render(id, &format!("{file} rewritten {n}")))
                    .collect();
                tree.insert(file.to_string(), (joined(&lines), false));
            }
            FileOp::Chmod => {
                tree.insert(file.to_string(), (content, true));
            }
            FileOp::Move => {
                tree.remove(*file);
                tree.insert(moved.to_string(), (content, false));
            }
            FileOp::IntoDir => {
                tree.remove(*file);
                tree.insert(format!("{file}/inner.txt"), (content, false));
            }
        }
    }
    for (path, text) in NEW.iter().zip(&work.new) {
        if let Some(text) = text {
            let lines = [text.render(id, path), format!("{path}: second line")];
            tree.insert(path.to_string(), (joined(&lines), false));
        }
    }
    match work.gen_op {
        GenOp::Absent => {}
        GenOp::File(text) => {
            tree.insert(GEN.into(), (joined(&[text.render(id, GEN)]), false));
        }
        GenOp::Dir(text) => {
            let inner = format!("{GEN}/inner.txt");
            let line = text.render(id, &inner);
            tree.insert(inner, (joined(&[line]), false));
        }
    }
    tree
}

fn text() -> impl Strategy<Value = Text> {
    prop_oneof![(0u8..2).prop_map(Text::Shared), Just(Text::Own)]
}

fn line_op() -> impl Strategy<Value = LineOp> {
    prop_oneof![
        5 => Just(LineOp::Keep),
        2 => text().prop_map(LineOp::Replace),
        1 => Just(LineOp::Delete),
        1 => text().prop_map(LineOp::InsertAfter),
    ]
}

fn file_op() -> impl Strategy<Value = FileOp> {
    prop_oneof![
        3 => Just(FileOp::Keep),
        4 => proptest::collection::vec(line_op(), LINES).prop_map(FileOp::Lines),
        1 => Just(FileOp::Delete),
        1 => text().prop_map(FileOp::Rewrite),
        1 => Just(FileOp::Chmod),
        1 => Just(FileOp::Move),
        1 => Just(FileOp::IntoDir),
    ]
}

fn gen_op() -> impl Strategy<Value = GenOp> {
    prop_oneof![
        4 => Just(GenOp::Absent),
        1 => text().prop_map(GenOp::File),
        1 => text().prop_map(GenOp::Dir),
    ]
}

fn work() -> impl Strategy<Value = Work> {
    (
        proptest::collection::vec(file_op(), FILES.len()),
        proptest::collection::vec(proptest::option::weighted(0.3, text()), NEW.len()),
        gen_op(),
        proptest::bool::weighted(0.3),
    )
        .prop_map(|(files, new, gen_op, commit)| Work {
            files,
            new,
            gen_op,
            commit,
        })
}

/// Two sessions' work, each of which changes something.
fn pair_of_works() -> impl Strategy<Value = (Work, Work)> {
    (work(), work()).prop_filter("each session changes something", |(a, b)| {
        result(a, "A") != base() && result(b, "B") != base()
    })
}

fn write_file(root: &Path, rel: &str, content: &str, exec: bool) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, content).unwrap();
    let mode = if exec { 0o755 } else { 0o644 };
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Does the session's work in its isolation, as files on disk (and a commit if it commits).
fn do_work(fx: &Fixture, id: &str, work: &Work) {
    let iso = fx.isolation(id);
    let (from, to) = (base(), result(work, id));
    for path in from.keys().filter(|p| !to.contains_key(*p)) {
        std::fs::remove_file(iso.join(path)).unwrap();
    }
    for (path, (content, exec)) in &to {
        if from.get(path) != Some(&(content.clone(), *exec)) {
            write_file(&iso, path, content, *exec);
        }
    }
    if work.commit {
        iso_git(fx, id, &["add", "-A"]);
        iso_git(
            fx,
            id,
            &["commit", "-q", "-m", &format!("the work of {id}")],
        );
    }
}

/// A source with [`FILES`] committed, and sessions `A` and `B` bound at it with their work.
fn sessions(a: &Work, b: &Work) -> Fixture {
    let fx = Fixture::new();
    for (path, (content, _)) in base() {
        fx.write(&path, &content);
    }
    fx.commit_all("the files the sessions work on");
    fx.bind("A");
    fx.bind("B");
    do_work(&fx, "A", a);
    do_work(&fx, "B", b);
    fx
}

/// A tree's files and directories with their modes, its `.git` left out.
fn files_of(dir: &Path) -> BTreeMap<String, String> {
    let mut files = listing(dir);
    files.retain(|path, _| path != ".git" && !path.starts_with(".git/"));
    files
}

/// Conflicting paths as a list, each without the `~<commit>` that git appends to a file it
/// moves aside for a directory: that commit is the other side's, a snapshot commit for
/// `overlaps`, the new HEAD for `rebase`.
fn conflict_paths(value: &Value) -> Vec<String> {
    // Git sets a file aside beside a directory as `path~<side>`: the side's commit id, or the
    // name the conflict markers give it (`main`, `onto`, `session/<id>/…` with `_` for `/`).
    let aside = |path: &str| match path.rsplit_once('~') {
        Some((file, side))
            if (side.len() >= 40 && side.bytes().all(|b| b.is_ascii_hexdigit()))
                || side.starts_with("session_")
                || matches!(side, "main" | "onto") =>
        {
            file.to_string()
        }
        _ => path.to_string(),
    };
    value
        .as_array()
        .map(|a| a.iter().filter_map(|s| s.as_str().map(aside)).collect())
        .unwrap_or_default()
}

/// Predicts with `overlaps`, promotes `A`, commits it and rebases `B`: the prediction and the
/// rebase agree, and the checkout changes only through the promote and the commit.
fn overlaps_agrees_with_rebase(a: &Work, b: &Work) -> Result<(), TestCaseError> {
    let fx = sessions(a, b);
    let checkout = checkout_listing(&fx.src);
    let (code, doc) = fx.json(&["overlaps"]);
    prop_assert_eq!(code, 0, "{}", doc);
    prop_assert_eq!(&doc["skipped"], &serde_json::json!([]), "{}", doc);
    let pair = doc["pairs"]
        .as_array()
        .and_then(|pairs| pairs.iter().find(|p| p["a"] == "A" && p["b"] == "B"))
        .cloned()
        .unwrap_or_else(|| panic!("no pair A/B: {doc}"));
    prop_assert_eq!(
        checkout_listing(&fx.src),
        checkout,
        "overlaps changed the checkout"
    );

    let (code, promoted) = fx.json(&["promote", "-s", "A"]);
    prop_assert_eq!(
        (code, promoted["outcome"].as_str()),
        (0, Some("applied")),
        "{}",
        promoted
    );
    prop_assert_eq!(
        files_of(&fx.src),
        files_of(&fx.isolation("A")),
        "the checkout holds exactly A's work"
    );
    fx.commit_all("take A");

    let checkout = checkout_listing(&fx.src);
    let (code, rebased) = fx.json(&["rebase", "-s", "B"]);
    prop_assert_eq!(
        checkout_listing(&fx.src),
        checkout,
        "rebase changed the checkout"
    );
    // `prediction` is a conflict when either landing order conflicts; `b_after_a` is this one.
    if pair["b_after_a"] == "conflict" || pair["a_after_b"] == "conflict" {
        prop_assert_eq!(&pair["prediction"], "conflict", "{}", pair);
    }
    let expected = match pair["b_after_a"].as_str() {
        Some("clean") => (0, "rebased"),
        Some("conflict") => (3, "conflicted"),
        other => panic!("prediction {other:?}: {pair}"),
    };
    prop_assert_eq!(
        (code, rebased["outcome"].as_str().unwrap_or("?")),
        expected,
        "overlaps predicted {} and rebase said {}",
        pair,
        rebased
    );
    if pair["a_after_b"] == pair["b_after_a"] {
        prop_assert_eq!(
            conflict_paths(&pair["conflicting_paths"]),
            conflict_paths(&rebased["conflicting_paths"]),
            "overlaps predicted {} and rebase said {}",
            pair,
            rebased
        );
    }
    Ok(())
}

fn config() -> ProptestConfig {
    let cases = crate::fixture::repetitions("A3S_ISO_OVERLAPS_CASES", 50) as u32;
    ProptestConfig {
        cases,
        failure_persistence: None,
        max_shrink_iters: 512,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn overlaps_predicts_what_rebase_does((a, b) in pair_of_works()) {
        overlaps_agrees_with_rebase(&a, &b)?;
    }
}

/// Runs `overlaps`, promotes `A`, commits it and rebases `B`: the pair's prediction and the
/// rebase's exit code and document.
fn predict_then_rebase(fx: &Fixture) -> (Value, (i32, Value)) {
    let (code, doc) = fx.json(&["overlaps"]);
    assert_eq!(code, 0, "{doc}");
    let pair = doc["pairs"][0].clone();
    let (code, promoted) = fx.json(&["promote", "-s", "A"]);
    assert_eq!(
        (code, &promoted["outcome"]),
        (0, &Value::from("applied")),
        "{promoted}"
    );
    fx.commit_all("take A");
    (pair, fx.json(&["rebase", "-s", "B"]))
}

/// A makes `gen` a directory, B makes it a file: a conflict, predicted and met.
#[test]
fn a_file_where_the_new_head_has_a_directory_is_a_conflict() {
    let fx = Fixture::new();
    fx.bind("A");
    fx.bind("B");
    write_file(&fx.isolation("A"), "gen/inner.txt", "from A\n", false);
    write_file(&fx.isolation("B"), "gen", "from B\n", false);
    let (pair, (code, rebased)) = predict_then_rebase(&fx);
    assert_eq!(pair["prediction"], "conflict", "{pair}");
    assert_eq!(
        (code, &rebased["outcome"]),
        (3, &Value::from("conflicted")),
        "{rebased}"
    );
}

/// A turns the tracked file `src/lib.txt` into a directory; B, which never touched it, adds a
/// file of its own: clean, predicted and met.
#[test]
fn a_tracked_file_the_new_head_makes_a_directory_rebases_cleanly() {
    let fx = Fixture::new();
    fx.bind("A");
    fx.bind("B");
    let a = fx.isolation("A");
    std::fs::remove_file(a.join("src/lib.txt")).unwrap();
    write_file(&a, "src/lib.txt/inner.txt", "one\ntwo\n", false);
    write_file(&fx.isolation("B"), "b.txt", "from B\n", false);
    let (pair, (code, rebased)) = predict_then_rebase(&fx);
    assert_eq!(pair["prediction"], "clean", "{pair}");
    assert_eq!(
        (code, &rebased["outcome"]),
        (0, &Value::from("rebased")),
        "{rebased}"
    );
}

/// B changes A's line in a commit and puts it back in its uncommitted work: its work as a
/// whole leaves the line alone, but its commit, replayed, meets A's change. `overlaps`
/// replays it as `rebase` does: B after A conflicts (A after B does not), so the pair is a
/// conflict, and the rebase stops there.
#[test]
fn a_change_committed_then_undone_is_replayed_by_rebase() {
    let fx = Fixture::new();
    fx.bind("A");
    fx.bind("B");
    write_file(
        &fx.isolation("A"),
        "src/lib.txt",
        "one\ntwo from A\n",
        false,
    );
    let b = fx.isolation("B");
    write_file(&b, "src/lib.txt", "one\ntwo from B\n", false);
    iso_git(&fx, "B", &["commit", "-q", "-am", "B changes line two"]);
    write_file(&b, "src/lib.txt", "one\ntwo\n", false);
    write_file(&b, "b.txt", "from B\n", false);
    let (pair, (code, rebased)) = predict_then_rebase(&fx);
    assert_eq!(
        (&pair["prediction"], &pair["b_after_a"], &pair["a_after_b"]),
        (
            &Value::from("conflict"),
            &Value::from("conflict"),
            &Value::from("clean")
        ),
        "{pair}"
    );
    assert_eq!(
        (code, &rebased["outcome"]),
        (3, &Value::from("conflicted")),
        "{pair} / {rebased}"
    );
    assert_eq!(
        pair["conflicting_paths"],
        serde_json::json!(["src/lib.txt"])
    );
}

/// Your own commit and your uncommitted work are yours, not a session's: A (bound before your
/// commit) and B (bound after it) do not conflict with each other, A's `with_head` names the
/// path your commit shares with it, and `with_your_changes` the path your uncommitted edit
/// shares with B.
#[test]
fn your_commits_and_your_uncommitted_work_are_named_as_yours() {
    let fx = Fixture::new();
    fx.bind("A");
    write_file(&fx.isolation("A"), "README.md", "A's README\n", false);
    fx.write("README.md", "your README\n");
    fx.commit_all("your commit");
    fx.bind("B");
    write_file(&fx.isolation("B"), "b.txt", "from B\n", false);
    write_file(
        &fx.isolation("B"),
        "src/lib.txt",
        "one\ntwo from B\n",
        false,
    );
    fx.write("src/lib.txt", "one\ntwo, yours, uncommitted\n");
    let before = checkout_listing(&fx.src);
    let (code, doc) = fx.json(&["overlaps"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(
        checkout_listing(&fx.src),
        before,
        "overlaps changed the checkout"
    );
    let pair = &doc["pairs"][0];
    assert_eq!(
        (&pair["prediction"], &pair["conflicting_paths"]),
        (&Value::from("clean"), &serde_json::json!([])),
        "{doc}"
    );
    let session = |id: &str| {
        doc["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["session_id"] == id)
            .unwrap()
            .clone()
    };
    let (a, b) = (session("A"), session("B"));
    assert_eq!(
        a["with_head"]["conflicting_paths"],
        serde_json::json!(["README.md"]),
        "{a}"
    );
    assert_eq!(a["with_your_changes"]["prediction"], "clean", "{a}");
    assert_eq!(b["with_head"]["prediction"], "clean", "{b}");
    assert_eq!(
        b["with_your_changes"]["conflicting_paths"],
        serde_json::json!(["src/lib.txt"]),
        "{b}"
    );
}

// ---------------------------------------------------------------------------------------
// Attacks on `overlaps`
// ---------------------------------------------------------------------------------------

fn pair_of<'a>(doc: &'a Value, a: &str, b: &str) -> &'a Value {
    doc["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| (p["a"] == a && p["b"] == b) || (p["a"] == b && p["b"] == a))
        .unwrap_or_else(|| panic!("no pair {a}/{b}: {doc}"))
}

/// Sessions bound at different revisions: `a` at the old HEAD edits README.md; the user
/// commits an edit of README.md; `b` is bound at the new HEAD and adds `b.txt` only. `b`
/// touches nothing of `a`'s: landing `b` first or last changes nothing for `a` (which meets
/// the user's commit either way). The pair must be `clean`.
///
/// What happens: the pair is predicted `conflict` at README.md (both orders), `list` shows
/// "b conflicts with a": the user's own commit, which `b` carries as its base, is counted as
/// `b`'s work.
#[test]
fn attack_overlaps_blames_a_session_for_the_users_commit() {
    let fx = Fixture::new();
    fx.bind("a");
    std::fs::write(fx.isolation("a").join("README.md"), "from a\n").unwrap();
    fx.write("README.md", "the user's\n");
    fx.commit_all("the user's commit");
    fx.bind("b");
    std::fs::write(fx.isolation("b").join("b.txt"), "b\n").unwrap();
    let (code, doc) = fx.json(&["overlaps"]);
    assert_eq!(code, 0, "{doc}");
    let pair = pair_of(&doc, "a", "b");
    // Proof that the conflict is the user's commit's, not b's: a alone conflicts the same way.
    let (_, alone) = fx.json(&["land", "-s", "a", "--keep-going"]);
    assert_eq!(
        alone["sessions"][0]["reason"], "rebase_conflicted",
        "{alone}"
    );
    assert_eq!(
        pair["prediction"], "clean",
        "b never touched README.md: {pair}"
    );
}

/// A conflicted session (its rebase waits at a conflict) is left out (`skipped`, reason
/// `conflicted`), and a session whose HEAD was moved backwards in its isolation (reset to
/// before its bound revision) is never predicted `clean` against a session editing what it
/// takes back; land of the latter onto a moved HEAD does not land a guess.
#[test]
fn attack_overlaps_conflicted_and_backwards_sessions() {
    let fx = Fixture::new();
    fx.write("two.txt", "two\n");
    fx.commit_all("two");
    fx.bind("back");
    fx.bind("other");
    fx.bind("stuck");
    fx.git(&fx.isolation("back"), &["reset", "-q", "--hard", "HEAD~1"]);
    std::fs::write(fx.isolation("other").join("two.txt"), "other\n").unwrap();
    std::fs::write(fx.isolation("stuck").join("README.md"), "stuck\n").unwrap();
    fx.write("README.md", "the user's\n");
    fx.commit_all("the user's README");
    let (code, rebased) = fx.json(&["rebase", "-s", "stuck"]);
    assert_eq!(code, 3, "{rebased}");
    let (code, doc) = fx.json(&["overlaps"]);
    assert_eq!(code, 0, "{doc}");
    let skipped = doc["skipped"].as_array().unwrap();
    assert!(
        skipped
            .iter()
            .any(|s| s["session_id"] == "stuck" && s["reason"] == "conflicted"),
        "{doc}"
    );
    assert!(
        !doc["pairs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["a"] == "stuck" || p["b"] == "stuck"),
        "{doc}"
    );
    assert_ne!(
        pair_of(&doc, "back", "other")["prediction"],
        "clean",
        "{doc}"
    );
    // Landing `other`, then `back`: back cannot be rebased (its HEAD is not after its bound
    // revision): it fails, and nothing of it lands.
    let base = head(&fx);
    let (code, land) = fx.json(&["land", "-s", "other", "-s", "back", "--keep-going"]);
    assert_ne!(code, 0, "{land}");
    assert_eq!(
        outcomes(&land),
        pairs(&[("other", "landed"), ("back", "failed")]),
        "{land}"
    );
    assert_eq!(read_path(fx.src.join("two.txt")), "other\n");
    assert_eq!(subjects_since(&fx, &base).len(), 1);
    assert_eq!(fx.git(&fx.src, &["status", "--porcelain"]), "");
}

/// One session whose work conflicts with a commit of yours (`README.md`) and with an untracked
/// file of yours (`b.txt`): human `overlaps` and `list` say both, as the JSON does.
#[test]
fn human_overlaps_and_list_show_conflicts_with_head_and_your_changes() {
    let fx = Fixture::new();
    fx.bind("s");
    let iso = fx.isolation("s");
    std::fs::write(iso.join("README.md"), "the session's\n").unwrap();
    std::fs::write(iso.join("b.txt"), "the session's b\n").unwrap();
    fx.write("README.md", "yours, committed\n");
    fx.commit_all("the user's commit");
    fx.write("b.txt", "yours, untracked\n");
    let (code, stdout, _) = crate::fixture::human(&fx, &["overlaps"]);
    assert_eq!(code, 0);
    assert_eq!(
        stdout,
        "1 session would conflict with HEAD; 1 session would conflict with your uncommitted changes\n\
         \x20 s: 2 changed: README.md, b.txt\n\
         \x20   conflicts with HEAD: README.md\n\
         \x20   conflicts with your uncommitted changes: b.txt\n"
    );
    let (code, listed) = fx.json(&["list"]);
    assert_eq!(code, 0, "{listed}");
    let session = &listed["sessions"][0];
    assert_eq!(
        session["conflicts_with_head"],
        serde_json::json!(["README.md"])
    );
    assert_eq!(
        session["conflicts_with_your_changes"],
        serde_json::json!(["b.txt"])
    );
    let (_, table, _) = crate::fixture::human(&fx, &["list"]);
    let row = table.lines().nth(1).unwrap();
    assert!(
        row.contains("bound (conflicts with HEAD, your uncommitted changes)"),
        "{table}"
    );
    // Nothing conflicting: the headline says so for all three.
    std::fs::remove_file(fx.src.join("b.txt")).unwrap();
    std::fs::write(iso.join("README.md"), "yours, committed\n").unwrap();
    let (_, stdout, _) = crate::fixture::human(&fx, &["overlaps"]);
    assert_eq!(
        stdout.lines().next(),
        Some("no conflicts between live sessions, with HEAD, or with your uncommitted changes")
    );
    let (_, table, _) = crate::fixture::human(&fx, &["list"]);
    assert!(!table.contains("conflicts with"), "{table}");
}
