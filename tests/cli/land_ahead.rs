//! A queue snapshots the next session while the one before it lands: each test here holds the
//! first session's test open and, meanwhile, reaches into the second session the ways an agent
//! could (a `run`, an edit or a deletion made in its isolation directly), then checks the
//! bytes on disk: nothing written is lost, nothing deleted comes back, and the queue finishes.

use crate::fixture::{Fixture, wait_for};
use crate::land_queue::{outcomes, session_adding_its_file};

/// Sessions `a` and `b`, `b`'s isolation holding `README.md` as bound, the user's commit
/// changing `README.md` (so that `b`'s rebase writes it), and `land --all --keep` started with
/// `a`'s test held open until `go` exists in the returned directory (`started` once it runs).
fn queue_held_at_the_first_test(fx: &Fixture) -> (std::process::Child, std::path::PathBuf) {
    session_adding_its_file(fx, "a");
    session_adding_its_file(fx, "b");
    fx.write("README.md", "the user's\n");
    fx.commit_all("the user's README");
    let flags = fx.root.join("flags");
    std::fs::create_dir_all(&flags).unwrap();
    let dir = flags.display();
    let test = format!(
        "if [ -e a.txt ]; then touch {dir}/started; \
         while [ ! -e {dir}/go ]; do sleep 0.05; done; fi"
    );
    let child = fx
        .cmd()
        .args(["--json", "land", "--all", "--keep", "--no-sandbox"])
        .args(["--test", test.as_str()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&flags.join("started"), std::time::Duration::from_secs(30));
    // The snapshot ahead is taken beside the first landing: give it the time it takes.
    std::thread::sleep(std::time::Duration::from_millis(300));
    (child, flags)
}

/// Lets the held test end; the queue's JSON.
fn finish(child: std::process::Child, flags: &std::path::Path) -> serde_json::Value {
    std::fs::write(flags.join("go"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn a_run_in_the_next_session_waits_for_its_landing() {
    let fx = Fixture::new();
    let (child, flags) = queue_held_at_the_first_test(&fx);
    let run = fx
        .cmd()
        .args(["--json", "run", "-s", "b", "--no-sandbox", "--"])
        .args(["sh", "-c", "echo late >> README.md"])
        .output()
        .unwrap();
    // `run`'s own errors exit 125.
    assert_eq!(run.status.code(), Some(125), "{run:?}");
    let error: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(error["error"]["code"], "session_busy", "{error}");
    let doc = finish(child, &flags);
    let landed = [("a", "landed"), ("b", "landed")].map(|(s, o)| (s.into(), o.into()));
    assert_eq!(outcomes(&doc), landed, "{doc}");
    assert_eq!(fx.git(&fx.src, &["show", "HEAD:b.txt"]), "b");
    let readme = std::fs::read_to_string(fx.isolation("b").join("README.md")).unwrap();
    assert_eq!(readme, "the user's\n");
    // Free again once the queue ended.
    let (code, _) = fx.json(&["run", "-s", "b", "--no-sandbox", "--", "true"]);
    assert_eq!(code, 0);
}

#[test]
fn an_edit_after_the_snapshot_ahead_is_never_written_over() {
    let fx = Fixture::new();
    let (child, flags) = queue_held_at_the_first_test(&fx);
    let readme = fx.isolation("b").join("README.md");
    std::fs::write(&readme, "the agent's, after the snapshot\n").unwrap();
    let doc = finish(child, &flags);
    assert_eq!(outcomes(&doc)[0], ("a".into(), "landed".into()), "{doc}");
    assert_ne!(outcomes(&doc)[1].1, "landed", "{doc}");
    // The next command that takes the lock finishes whatever was left: the edit stays.
    let (code, _) = fx.json(&["list"]);
    assert_eq!(code, 0);
    let kept = std::fs::read_to_string(&readme).unwrap();
    assert_eq!(kept, "the agent's, after the snapshot\n");
    assert!(!fx.src.join(".git/a3s-iso/rebasing/b.json").exists());
    // Landed again, the edit meets the user's README as any edit would: a conflict in the
    // isolation, nothing landed.
    let (code, doc) = fx.json(&["land", "-s", "b", "--keep"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(fx.git(&fx.src, &["show", "HEAD:README.md"]), "the user's");
    let conflicted = std::fs::read_to_string(&readme).unwrap();
    assert!(
        conflicted.contains("the agent's, after the snapshot"),
        "{conflicted}"
    );
}

#[test]
fn a_deletion_after_the_snapshot_ahead_is_never_undone() {
    let fx = Fixture::new();
    let (child, flags) = queue_held_at_the_first_test(&fx);
    let readme = fx.isolation("b").join("README.md");
    std::fs::remove_file(&readme).unwrap();
    let doc = finish(child, &flags);
    assert_eq!(outcomes(&doc)[0], ("a".into(), "landed".into()), "{doc}");
    let (code, _) = fx.json(&["list"]);
    assert_eq!(code, 0);
    assert!(
        std::fs::symlink_metadata(&readme).is_err(),
        "the deleted file came back: {doc}"
    );
    // Whatever `b` reported, HEAD holds the user's README: the deletion was not landed unseen.
    assert_eq!(fx.git(&fx.src, &["show", "HEAD:README.md"]), "the user's");
}
