//! What a person sees, command by command: each test drives a small scenario in the fixture
//! and pins the human output (command line, stdout, stderr, exit code) inline, normalised by
//! [`Transcript`] so that it reads the same on every machine and for either object format.

use crate::fixture::{Fixture, Transcript};

/// A session `a` whose run edited README.md and added `added.txt`, recorded as run `edit`.
fn session_with_work(fx: &Fixture) {
    fx.bind("a");
    let (code, doc) = fx.json(&[
        "run",
        "-s",
        "a",
        "--no-sandbox",
        "--run-id",
        "edit",
        "--",
        "sh",
        "-c",
        "echo 'agent line' >> README.md; echo new > added.txt",
    ]);
    assert_eq!(code, 0, "{doc}");
}

#[test]
fn bind_fresh_reused_and_refused() {
    let fx = Fixture::new();
    let mut t = Transcript::new(&fx);
    t.run(&["bind", "-s", "a"]);
    t.run(&["bind", "-s", "a"]);
    t.run(&["bind", "-s", "Bad Name"]);
    fx.write("wip.txt", "local\n");
    t.run(&["bind", "-s", "b"]);
    insta::assert_snapshot!(t.text(), @r#"
    $ a3s-iso bind -s a
    [ROOT]/work/.src.a3s-isolate-a
    session    a
    source     [ROOT]/work/src
    revision   [COMMIT-1]
    base tree  [TREE-1]
    owner      pid [PID] ([TEST-BINARY]) on [HOST]
    flags      -
    [exit 0]
    $ a3s-iso bind -s a
    [ROOT]/work/.src.a3s-isolate-a
    session    a
    source     [ROOT]/work/src
    revision   [COMMIT-1]
    base tree  [TREE-1]
    owner      pid [PID] ([TEST-BINARY]) on [HOST]
    flags      reused
    [exit 0]
    $ a3s-iso bind -s 'Bad Name'
    [stderr] error[invalid_id]: invalid id "Bad Name": only letters, digits, '.', '_' and '-' are allowed
    [exit 5]
    $ a3s-iso bind -s b
    [stderr] error[dirty_source]: the source has local changes that the isolation would not contain: wip.txt
    [stderr]   hint: commit or stash them, or bind with --carry-wip (the isolation starts with them) or --allow-dirty (isolation at HEAD, local changes left out)
    [exit 1]
    "#);
}

#[test]
fn bind_generated_id() {
    let fx = Fixture::new();
    let mut t = Transcript::new(&fx);
    t.run(&["bind"]);
    insta::assert_snapshot!(t.text(), @"
    $ a3s-iso bind
    [ROOT]/work/.src.a3s-isolate-[SESSION-1]
    session    [SESSION-1]
    source     [ROOT]/work/src
    revision   [COMMIT-1]
    base tree  [TREE-1]
    owner      pid [PID] ([TEST-BINARY]) on [HOST]
    flags      -
    [exit 0]
    ");
}

#[test]
fn run_completed_and_failed() {
    let fx = Fixture::new();
    fx.bind("a");
    let mut t = Transcript::new(&fx);
    let edit = "echo 'agent line' >> README.md; echo new > added.txt";
    t.run(&[
        "run",
        "-s",
        "a",
        "--no-sandbox",
        "--run-id",
        "edit",
        "--",
        "sh",
        "-c",
        edit,
    ]);
    t.run(&[
        "run",
        "-s",
        "a",
        "--no-sandbox",
        "--run-id",
        "fail",
        "--",
        "sh",
        "-c",
        "exit 3",
    ]);
    t.run(&["run", "-s", "a", "--no-sandbox", "--", "true"]);
    t.run(&[
        "run",
        "-s",
        "a",
        "--no-sandbox",
        "--run-id",
        "edit",
        "--",
        "true",
    ]);
    insta::assert_snapshot!(t.text(), @r#"
    $ a3s-iso run -s a --no-sandbox --run-id edit -- sh -c 'echo '\''agent line'\'' >> README.md; echo new > added.txt'
    [stderr] a3s-iso: run edit completed (exit 0): 2 files changed, [SIZE], sha256:[DIGEST-1]
    [exit 0]
    $ a3s-iso run -s a --no-sandbox --run-id fail -- sh -c 'exit 3'
    [stderr] a3s-iso: run fail failed (exit 3): 0 files changed, 0 bytes, sha256:[DIGEST-2]
    [exit 3]
    $ a3s-iso run -s a --no-sandbox -- true
    [stderr] a3s-iso: run [RUN-1] completed (exit 0): 0 files changed, 0 bytes, sha256:[DIGEST-2]
    [exit 0]
    $ a3s-iso run -s a --no-sandbox --run-id edit -- true
    [stderr] error[capture_conflict]: run "edit" of session "a" already holds evidence; runs are never redone under the same id
    [stderr]   hint: evidence is immutable: capture under a new run id; the stored document is unchanged
    [exit 125]
    "#);
}

#[test]
fn capture_of_work_and_of_nothing() {
    let fx = Fixture::new();
    fx.bind("idle");
    session_with_work(&fx);
    let mut t = Transcript::new(&fx);
    t.run(&["capture", "-s", "a", "--run-id", "cap"]);
    t.run(&["capture", "-s", "idle", "--run-id", "cap"]);
    t.run(&["capture", "-s", "nope"]);
    insta::assert_snapshot!(t.text(), @r#"
    $ a3s-iso capture -s a --run-id cap
    2 files changed, [SIZE]
    session       a
    run           cap
    patch digest  sha256:[DIGEST-1]
    base          git-tree:[TREE-1]
    result        git-tree:[TREE-2]
    ref           refs/a3s-iso/runs/a/cap
      README.md
      added.txt
    [exit 0]
    $ a3s-iso capture -s idle --run-id cap
    0 files changed, 0 bytes
    session       idle
    run           cap
    patch digest  sha256:[DIGEST-2]
    base          git-tree:[TREE-1]
    result        git-tree:[TREE-1]
    ref           refs/a3s-iso/runs/idle/cap
    [exit 0]
    $ a3s-iso capture -s nope
    [stderr] error[session_not_found]: no session "nope" in [ROOT]/work/src/.git/a3s-iso
    [stderr]   hint: a3s-iso list shows this store's sessions; bind this one with a3s-iso bind -s nope, or name its store with --state-dir
    [exit 1]
    "#);
}

#[test]
fn show_a_session_with_runs_and_a_promotion() {
    let fx = Fixture::new();
    session_with_work(&fx);
    let mut t = Transcript::new(&fx);
    t.run(&["show", "-s", "a"]);
    t.run(&["promote", "-s", "a"]);
    t.run(&["show", "-s", "a"]);
    insta::assert_snapshot!(t.text(), @r"
    $ a3s-iso show -s a
    a
    state          bound
    source         [ROOT]/work/src
    isolation      [ROOT]/work/.src.a3s-isolate-a (healthy)
    revision       [COMMIT-1]
    base tree      [TREE-1]
    head moved     no
    owner          pid [PID] ([TEST-BINARY]) on [HOST] (alive)
    bound at       [TIME]
    files changed  2 (2 not yet promoted)

    runs:
      edit  completed  sha256:[digest-1]    [TIME]                exit 0  sh -c 'echo '\''agent line'\'' >> README.md; echo new > added.txt'  (--no-sandbox)
    [exit 0]
    $ a3s-iso promote -s a
    applied: 2 files changed
    session    a
    digest     sha256:[DIGEST-1]
    size       [SIZE]
    step       1
    bound      [COMMIT-1]
    current    [COMMIT-1]
    artifacts  [ROOT]/work/src/.git/a3s-iso/artifacts/[DIGEST-1]
      README.md
      added.txt
    [exit 0]
    $ a3s-iso show -s a
    a
    state          bound
    source         [ROOT]/work/src
    isolation      [ROOT]/work/.src.a3s-isolate-a (healthy)
    revision       [COMMIT-1]
    base tree      [TREE-1]
    head moved     no
    owner          pid [PID] ([TEST-BINARY]) on [HOST] (alive)
    bound at       [TIME]
    files changed  2 (0 not yet promoted)

    runs:
      edit  completed  sha256:[digest-1]    [TIME]                exit 0  sh -c 'echo '\''agent line'\'' >> README.md; echo new > added.txt'  (--no-sandbox)

    promotions:
      step 1  sha256:[digest-1]    [TIME]                applied (patch)
    [exit 0]
    ");
}

#[test]
fn list_sessions_in_every_state() {
    let fx = Fixture::new();
    let mut t = Transcript::new(&fx);
    t.run(&["list"]);
    session_with_work(&fx);
    fx.bind("kept");
    fx.bind("gone");
    fx.json(&["retain", "-s", "kept", "--reason", "look later"]);
    fx.json(&["discard", "-s", "gone"]);
    fx.write("user.txt", "user\n");
    fx.commit_all("the user moves on");
    t.run(&["list"]);
    insta::assert_snapshot!(t.text(), @"
    $ a3s-iso list
    no sessions
    [exit 0]
    $ a3s-iso list
    SESSION  STATE     REVISION      HEAD   OWNER  LAST RUN        PATH
    a        bound     [commit-1]    moved  alive  edit completed  [ROOT]/work/.src.a3s-isolate-a
    kept     retained  [commit-1]    moved  alive  -               [ROOT]/work/.src.a3s-isolate-kept.retained-[TIME]
    [stderr] 1 discarded session not shown (list --all shows them)
    [exit 0]
    ");
}

#[test]
fn diff_full_stat_and_names() {
    let fx = Fixture::new();
    session_with_work(&fx);
    let mut t = Transcript::new(&fx);
    t.run(&["diff", "-s", "a"]);
    t.run(&["diff", "-s", "a", "--stat"]);
    t.run(&["diff", "-s", "a", "--name-only"]);
    insta::assert_snapshot!(t.text(), @"
    $ a3s-iso diff -s a
    diff --git a/README.md b/README.md
    index [BLOB-1]..[BLOB-2] 100644
    --- a/README.md
    +++ b/README.md
    @@ -1 +1,2 @@
     hello
    +agent line
    diff --git a/added.txt b/added.txt
    new file mode 100644
    index [ZERO]..[BLOB-3]
    --- /dev/null
    +++ b/added.txt
    @@ -0,0 +1 @@
    +new
    [exit 0]
    $ a3s-iso diff -s a --stat
     README.md |   1 +
     added.txt |   1 + (added)
     2 files changed, 2 insertions(+), 0 deletions(-)
    [exit 0]
    $ a3s-iso diff -s a --name-only
    README.md
    added.txt
    [exit 0]
    ");
}

#[test]
fn promote_planned_applied_again_and_conflicting() {
    let fx = Fixture::new();
    session_with_work(&fx);
    fx.bind("late");
    std::fs::write(fx.isolation("late").join("late.txt"), "late\n").unwrap();
    let mut t = Transcript::new(&fx);
    t.run(&["promote", "-s", "a", "--no-apply"]);
    t.run(&["promote", "-s", "a"]);
    t.run(&["promote", "-s", "a"]);
    fx.commit_all("take the agent's work");
    t.run(&["promote", "-s", "late"]);
    insta::assert_snapshot!(t.text(), @"
    $ a3s-iso promote -s a --no-apply
    planned: artifacts written, source untouched (--no-apply)
    session    a
    digest     sha256:[DIGEST-1]
    size       [SIZE]
    step       1
    bound      [COMMIT-1]
    current    [COMMIT-1]
    artifacts  [ROOT]/work/src/.git/a3s-iso/artifacts/[DIGEST-1]
      README.md
      added.txt
    [exit 0]
    $ a3s-iso promote -s a
    applied: 2 files changed
    session    a
    digest     sha256:[DIGEST-1]
    size       [SIZE]
    step       1
    bound      [COMMIT-1]
    current    [COMMIT-1]
    artifacts  [ROOT]/work/src/.git/a3s-iso/artifacts/[DIGEST-1]
      README.md
      added.txt
    [exit 0]
    $ a3s-iso promote -s a
    idempotent: this change set was promoted before; nothing applied
    session  a
    digest   sha256:[DIGEST-1]
    size     [SIZE]
    step     1
    [exit 0]
    $ a3s-iso promote -s late
    conflict (head_moved): nothing applied
    session  late
    digest   sha256:[DIGEST-2]
    size     [SIZE]
    step     1
    bound    [COMMIT-1]
    current  [COMMIT-2]
    [stderr]   hint: the source's HEAD moved since bind: a3s-iso rebase -s ID moves the session onto it (conflicts stay in its isolation), or promote --rebase does that and promotes if it was clean; --mode branch replays the session's commits onto the new HEAD instead
    [exit 3]
    ");
}

#[test]
fn land_a_queue_of_two() {
    let fx = Fixture::new();
    session_with_work(&fx);
    fx.bind("b");
    std::fs::write(fx.isolation("b").join("b.txt"), "b\n").unwrap();
    let mut t = Transcript::new(&fx);
    t.run(&[
        "land",
        "-s",
        "a",
        "-s",
        "b",
        "--no-sandbox",
        "--test",
        "test -f README.md",
    ]);
    t.run(&["land", "-s", "a"]);
    insta::assert_snapshot!(t.text(), @"
    $ a3s-iso land -s a -s b --no-sandbox --test 'test -f README.md'
    2 of 2 sessions landed
      a: landed as [commit-1], isolation removed (evidence kept), test exit 0, [DUR]
      b: landed as [commit-2], isolation removed (evidence kept), test exit 0, [DUR]
    [exit 0]
    $ a3s-iso land -s a
    0 of 1 sessions landed
      a: landed before, isolation removed (evidence kept), [DUR]
    [exit 0]
    ");
}

#[test]
fn rebase_onto_a_moved_head_clean_and_conflicting() {
    let fx = Fixture::new();
    session_with_work(&fx);
    fx.bind("c");
    std::fs::write(fx.isolation("c").join("src/lib.txt"), "one\nagent\n").unwrap();
    fx.write("src/lib.txt", "one\nuser\n");
    fx.commit_all("the user edits lib");
    let mut t = Transcript::new(&fx);
    t.run(&["rebase", "-s", "a"]);
    t.run(&["rebase", "-s", "a"]);
    t.run(&["rebase", "-s", "c"]);
    t.run(&["rebase", "-s", "c", "--abort"]);
    insta::assert_snapshot!(t.text(), @"
    $ a3s-iso rebase -s a
    rebased
    session   a
    from      [commit-1]
    onto      [commit-2]
    replayed  0
    [exit 0]
    $ a3s-iso rebase -s a
    up to date
    session   a
    from      [commit-2]
    onto      [commit-2]
    replayed  0
    [exit 0]
    $ a3s-iso rebase -s c
    conflicted
    session   c
    from      [commit-1]
    onto      [commit-2]
    replayed  0
      conflict: src/lib.txt
    [stderr]   hint: resolve them in the isolation (a3s-iso run -s c -- ..., or by hand), git add them, then a3s-iso rebase -s c --continue; or a3s-iso rebase -s c --abort
    [exit 3]
    $ a3s-iso rebase -s c --abort
    aborted: the isolation is as it was
    session   c
    from      [commit-1]
    onto      [commit-2]
    replayed  0
    [exit 0]
    ");
}

#[test]
fn overlaps_between_live_sessions() {
    let fx = Fixture::new();
    let mut t = Transcript::new(&fx);
    t.run(&["overlaps"]);
    for (id, text) in [("x", "one\nx\n"), ("y", "one\ny\n"), ("z", "one\ntwo\n")] {
        fx.bind(id);
        std::fs::write(fx.isolation(id).join("src/lib.txt"), text).unwrap();
    }
    std::fs::write(fx.isolation("z").join("z.txt"), "z\n").unwrap();
    t.run(&["overlaps"]);
    insta::assert_snapshot!(t.text(), @"
    $ a3s-iso overlaps
    no conflicts between live sessions, with HEAD, or with your uncommitted changes
    [exit 0]
    $ a3s-iso overlaps
    1 pair of sessions would conflict
      x: 1 changed: src/lib.txt
      y: 1 changed: src/lib.txt
      z: 1 changed: z.txt
      x / y: conflict: src/lib.txt
      x / z: clean
      y / z: clean
    [exit 0]
    ");
}

#[test]
fn log_of_promotions_and_runs() {
    let fx = Fixture::new();
    let mut t = Transcript::new(&fx);
    t.run(&["log"]);
    session_with_work(&fx);
    fx.json(&["promote", "-s", "a"]);
    t.run(&["log"]);
    t.run(&["log", "--runs"]);
    insta::assert_snapshot!(t.text(), @r"
    $ a3s-iso log
    no promotions
    [exit 0]
    $ a3s-iso log
    TIME                  SESSION  DIGEST               LANDING          FILES  SOURCE HEAD
    [TIME]                a        sha256:[digest]      applied (patch)  2      [commit-1]
    [exit 0]
    $ a3s-iso log --runs
    TIME                  SESSION  RUN   STATE      ENDED   COMMAND
    [TIME]                a        edit  completed  exit 0  sh -c 'echo '\''agent line'\'' >> README.md; echo new > added.txt'  (--no-sandbox)
    [exit 0]
    ");
}

#[test]
fn discard_retain_and_sweep() {
    let fx = Fixture::new();
    session_with_work(&fx);
    fx.bind("idle");
    let mut t = Transcript::new(&fx);
    t.run(&["retain", "-s", "a", "--reason", "look at it later"]);
    t.run(&["retain", "-s", "nope", "--reason", "x"]);
    t.run(&["discard", "-s", "idle"]);
    t.run(&["discard", "-s", "idle"]);
    t.run(&["sweep", "--dry-run"]);
    t.run(&["sweep"]);
    insta::assert_snapshot!(t.text(), @r#"
    $ a3s-iso retain -s a --reason 'look at it later'
    [ROOT]/work/.src.a3s-isolate-a.retained-[TIME]
    session  a
    was      [ROOT]/work/.src.a3s-isolate-a
    reason   look at it later
    [exit 0]
    $ a3s-iso retain -s nope --reason x
    [stderr] error[session_not_found]: no session "nope" in [ROOT]/work/src/.git/a3s-iso
    [stderr]   hint: a3s-iso list shows this store's sessions; bind this one with a3s-iso bind -s nope, or name its store with --state-dir
    [exit 1]
    $ a3s-iso discard -s idle
    idle: discarded
    removed  [ROOT]/work/.src.a3s-isolate-idle
    [exit 0]
    $ a3s-iso discard -s idle
    idle: already discarded (nothing to remove)
    [exit 0]
    $ a3s-iso sweep --dry-run
    would reclaim 0 isolations (0 bytes), kept 1, skipped 0
      keep     [ROOT]/work/.src.a3s-isolate-a.retained-[TIME]  (retained: look at it later)

    kept: 1 retained
    [exit 0]
    $ a3s-iso sweep
    reclaimed 0 isolations (0 bytes), kept 1, skipped 0
      keep     [ROOT]/work/.src.a3s-isolate-a.retained-[TIME]  (retained: look at it later)

    kept: 1 retained
    [exit 0]
    "#);
}

#[test]
fn gc_dry_run_and_all() {
    let fx = Fixture::new();
    session_with_work(&fx);
    fx.json(&["promote", "-s", "a"]);
    fx.json(&["discard", "-s", "a"]);
    let mut t = Transcript::new(&fx);
    // A temporary directory of its own: what a killed run of another test leaves in the
    // machine's is no part of this one.
    let tmp = fx.root.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    t.env("TMPDIR", &tmp);
    t.run(&["gc", "--dry-run"]);
    t.run(&["gc", "--older-than", "0s", "--dry-run"]);
    t.run(&["gc", "--all"]);
    insta::assert_snapshot!(t.text(), @"
    $ a3s-iso gc --dry-run
    would remove 5 items ([SIZE]), kept 7 ([SIZE])
      remove lease          [ROOT]/work/src/.git/a3s-iso/leases/a.lock  (no one holds it)
      remove seed           [ROOT]/work/src/.git/a3s-iso/seeds/-src.a3s-isolate-a+bound.index  (its isolation is gone)
      remove seed           [ROOT]/work/src/.git/a3s-iso/seeds/-src.a3s-isolate-a.flat  (its isolation is gone)
      remove seed           [ROOT]/work/src/.git/a3s-iso/seeds/-src.a3s-isolate-a.index  (its isolation is gone)
      remove seed           [ROOT]/work/src/.git/a3s-iso/seeds/-src.a3s-isolate-a.tree  (its isolation is gone)
      keep   ref            refs/a3s-iso/runs/a/edit  (inside the retention window: gc --older-than 0s removes it)
      keep   ref            refs/a3s-iso/sessions/a/base  (inside the retention window: gc --older-than 0s removes it)
      keep   runs           [ROOT]/work/src/.git/a3s-iso/runs/a  (inside the retention window: gc --older-than 0s removes it)
      keep   run_exits      [ROOT]/work/src/.git/a3s-iso/run-exits/a  (inside the retention window: gc --older-than 0s removes it)
      keep   artifacts      [ROOT]/work/src/.git/a3s-iso/artifacts/[HEX-1]  (inside the retention window: gc --older-than 0s removes it)
      keep   session_record [ROOT]/work/src/.git/a3s-iso/sessions/a.json  (inside the retention window: gc --older-than 0s removes it)
      keep   journal_entry  [ROOT]/work/src/.git/a3s-iso/promoted/[HEX-1].json  (inside the retention window: gc --older-than 0s removes it)
    [exit 0]
    $ a3s-iso gc --older-than 0s --dry-run
    would remove 12 items ([SIZE]), kept 0 (0 bytes)
      remove ref            refs/a3s-iso/runs/a/edit  (session discarded)
      remove ref            refs/a3s-iso/sessions/a/base  (session discarded)
      remove runs           [ROOT]/work/src/.git/a3s-iso/runs/a  (session discarded)
      remove run_exits      [ROOT]/work/src/.git/a3s-iso/run-exits/a  (session discarded)
      remove artifacts      [ROOT]/work/src/.git/a3s-iso/artifacts/[HEX-1]  (session discarded)
      remove seed           [ROOT]/work/src/.git/a3s-iso/seeds/-src.a3s-isolate-a.index  (session discarded)
      remove seed           [ROOT]/work/src/.git/a3s-iso/seeds/-src.a3s-isolate-a+bound.index  (session discarded)
      remove seed           [ROOT]/work/src/.git/a3s-iso/seeds/-src.a3s-isolate-a.tree  (session discarded)
      remove seed           [ROOT]/work/src/.git/a3s-iso/seeds/-src.a3s-isolate-a.flat  (session discarded)
      remove lease          [ROOT]/work/src/.git/a3s-iso/leases/a.lock  (session discarded)
      remove session_record [ROOT]/work/src/.git/a3s-iso/sessions/a.json  (session discarded)
      remove journal_entry  [ROOT]/work/src/.git/a3s-iso/promoted/[HEX-1].json  (older than the retention window)
    [exit 0]
    $ a3s-iso gc --all
    removed 13 items ([SIZE]), kept 0 (0 bytes)
      remove ref            refs/a3s-iso/runs/a/edit  (session discarded)
      remove ref            refs/a3s-iso/sessions/a/base  (session discarded)
      remove runs           [ROOT]/work/src/.git/a3s-iso/runs/a  (session discarded)
      remove run_exits      [ROOT]/work/src/.git/a3s-iso/run-exits/a  (session discarded)
      remove artifacts      [ROOT]/work/src/.git/a3s-iso/artifacts/[HEX-1]  (session discarded)
      remove seed           [ROOT]/work/src/.git/a3s-iso/seeds/-src.a3s-isolate-a.index  (session discarded)
      remove seed           [ROOT]/work/src/.git/a3s-iso/seeds/-src.a3s-isolate-a+bound.index  (session discarded)
      remove seed           [ROOT]/work/src/.git/a3s-iso/seeds/-src.a3s-isolate-a.tree  (session discarded)
      remove seed           [ROOT]/work/src/.git/a3s-iso/seeds/-src.a3s-isolate-a.flat  (session discarded)
      remove lease          [ROOT]/work/src/.git/a3s-iso/leases/a.lock  (session discarded)
      remove journal_entry  [ROOT]/work/src/.git/a3s-iso/promoted/[HEX-1].json  (older than the retention window)
      remove registry_entry [ROOT]/home/.local/share/a3s-iso/sources/[SOURCE].json  (gc --all)
      remove session_record [ROOT]/work/src/.git/a3s-iso/sessions/a.json  (session discarded)
    [exit 0]
    ");
}

#[test]
fn pool_status_before_and_after_filling() {
    let fx = Fixture::new();
    let mut t = Transcript::new(&fx);
    t.run(&["pool", "--status"]);
    t.run(&["pool", "--size", "1"]);
    t.run(&["pool", "--status"]);
    t.run(&["bind", "-s", "p"]);
    t.run(&["pool", "--size", "0"]);
    insta::assert_snapshot!(t.text(), @"
    $ a3s-iso pool --status
    pool of [ROOT]/work/src: 0 of 0 spares ready
    keep ignored  -
    reflink       [REFLINK]
    [exit 0]
    $ a3s-iso pool --size 1
    pool of [ROOT]/work/src: 1 of 1 spare ready
    built         1
    keep ignored  -
    reflink       [REFLINK]
      1 ready [ROOT]/work/.src.a3s-isolate-.pool-1
    [exit 0]
    $ a3s-iso pool --status
    pool of [ROOT]/work/src: 1 of 1 spare ready
    keep ignored  -
    reflink       [REFLINK]
      1 ready [ROOT]/work/.src.a3s-isolate-.pool-1
    [exit 0]
    $ a3s-iso bind -s p
    [ROOT]/work/.src.a3s-isolate-p
    session    p
    source     [ROOT]/work/src
    revision   [COMMIT-1]
    base tree  [TREE-1]
    owner      pid [PID] ([TEST-BINARY]) on [HOST]
    flags      warm
    [exit 0]
    $ a3s-iso pool --size 0
    pool of [ROOT]/work/src: 0 of 0 spares ready
    keep ignored  -
    reflink       [REFLINK]
    [exit 0]
    ");
}

#[test]
fn config_defaults() {
    let fx = Fixture::new();
    insta::assert_snapshot!(fx.transcript(&["config"]), @"
    $ a3s-iso config
    configuration of [ROOT]/work/src
    repository file    [ROOT]/work/src/.a3s-iso.toml (absent)
    user file          [ROOT]/home/.config/a3s-iso/config.toml (none)
    setup              - (default)
    copy_ignored       - (default)
    run.allow_network  false (default)
    run.allow_host     - (default)
    run.publish        - (default)
    run.cache          private (default)
    run.profile        - (default)
    pool.size          - (default)
    pool.keep_ignored  - (default)
    profile            aider (built in): writes ~/.aider/; env OPENAI_API_KEY, OPENAI_*, ANTHROPIC_API_KEY, ANTHROPIC_*, AIDER_OPENAI_API_KEY, AIDER_ANTHROPIC_API_KEY, AIDER_*; hosts @openai, @anthropic
    profile            claude (built in): writes ~/.claude/, ~/.claude.json; env ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_*, CLAUDE_CODE_OAUTH_TOKEN, CLAUDE_CODE_*, DISABLE_AUTOUPDATER, DISABLE_TELEMETRY; hosts @anthropic
    profile            codex (built in): writes ~/.codex/; env OPENAI_API_KEY, OPENAI_*, CODEX_API_KEY, CODEX_*; hosts @openai
    profile            generic (built in): writes -; env -; hosts -
    [exit 0]
    ");
}

#[test]
fn config_of_an_untrusted_file_then_trusted() {
    let fx = Fixture::new();
    fx.write(".a3s-iso.toml", "[run]\nallow_network = true\n");
    fx.commit_all("config");
    let mut t = Transcript::new(&fx);
    t.run(&["config"]);
    t.run(&["config", "trust"]);
    insta::assert_snapshot!(t.text(), @"
    $ a3s-iso config
    configuration of [ROOT]/work/src
    repository file    [ROOT]/work/src/.a3s-iso.toml (untrusted)
    user file          [ROOT]/home/.config/a3s-iso/config.toml (none)
    setup              - (default)
    copy_ignored       - (default)
    run.allow_network  false (default)
    run.allow_host     - (default)
    run.publish        - (default)
    run.cache          private (default)
    run.profile        - (default)
    pool.size          - (default)
    pool.keep_ignored  - (default)
    profile            aider (built in): writes ~/.aider/; env OPENAI_API_KEY, OPENAI_*, ANTHROPIC_API_KEY, ANTHROPIC_*, AIDER_OPENAI_API_KEY, AIDER_ANTHROPIC_API_KEY, AIDER_*; hosts @openai, @anthropic
    profile            claude (built in): writes ~/.claude/, ~/.claude.json; env ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_*, CLAUDE_CODE_OAUTH_TOKEN, CLAUDE_CODE_*, DISABLE_AUTOUPDATER, DISABLE_TELEMETRY; hosts @anthropic
    profile            codex (built in): writes ~/.codex/; env OPENAI_API_KEY, OPENAI_*, CODEX_API_KEY, CODEX_*; hosts @openai
    profile            generic (built in): writes -; env -; hosts -
    the repository file asks for (not applied until you trust it):
      run.allow_network  true (repository)
    [stderr]   hint: the repository file's settings are not applied until you trust it: a3s-iso config trust
    [exit 0]
    $ a3s-iso config trust
    configuration of [ROOT]/work/src
    repository file    [ROOT]/work/src/.a3s-iso.toml (trusted)
    user file          [ROOT]/home/.config/a3s-iso/config.toml (none)
    setup              - (default)
    copy_ignored       - (default)
    run.allow_network  true (repository)
    run.allow_host     - (default)
    run.publish        - (default)
    run.cache          private (default)
    run.profile        - (default)
    pool.size          - (default)
    pool.keep_ignored  - (default)
    profile            aider (built in): writes ~/.aider/; env OPENAI_API_KEY, OPENAI_*, ANTHROPIC_API_KEY, ANTHROPIC_*, AIDER_OPENAI_API_KEY, AIDER_ANTHROPIC_API_KEY, AIDER_*; hosts @openai, @anthropic
    profile            claude (built in): writes ~/.claude/, ~/.claude.json; env ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_*, CLAUDE_CODE_OAUTH_TOKEN, CLAUDE_CODE_*, DISABLE_AUTOUPDATER, DISABLE_TELEMETRY; hosts @anthropic
    profile            codex (built in): writes ~/.codex/; env OPENAI_API_KEY, OPENAI_*, CODEX_API_KEY, CODEX_*; hosts @openai
    profile            generic (built in): writes -; env -; hosts -
    [stderr] trusted [ROOT]/work/src/.a3s-iso.toml (sha256:[DIGEST-1]) for you
    [exit 0]
    ");
}

#[test]
fn path_of_a_session_and_of_none() {
    let fx = Fixture::new();
    let mut t = Transcript::new(&fx);
    t.run(&["path"]);
    fx.bind("a");
    t.run(&["path", "-s", "a"]);
    t.run(&["path"]);
    t.run_in(&fx.isolation("a"), &["path"]);
    insta::assert_snapshot!(t.text(), @"
    $ a3s-iso path
    [stderr] error[session_not_found]: [ROOT]/work/src has no live session
    [stderr]   hint: bind a session first (a3s-iso bind)
    [exit 1]
    $ a3s-iso path -s a
    [ROOT]/work/.src.a3s-isolate-a
    [exit 0]
    $ a3s-iso path
    [ROOT]/work/.src.a3s-isolate-a
    [exit 0]
    $ a3s-iso path
    [ROOT]/work/.src.a3s-isolate-a
    [exit 0]
    ");
}

#[test]
fn verify_a_document_and_a_broken_one() {
    let fx = Fixture::new();
    session_with_work(&fx);
    fx.json(&["capture", "-s", "a", "--run-id", "cap"]);
    let doc = fx.src.join(".git/a3s-iso/runs/a/cap.json");
    let mut broken: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&doc).unwrap()).unwrap();
    broken["patch_bytes"] = serde_json::json!(broken["patch_bytes"].as_u64().unwrap() + 1);
    let broken_path = fx.root.join("broken.json");
    std::fs::write(&broken_path, broken.to_string()).unwrap();
    let mut t = Transcript::new(&fx);
    t.run(&["verify", doc.to_str().unwrap()]);
    t.run(&["verify", broken_path.to_str().unwrap()]);
    t.run(&["verify", fx.root.join("missing.json").to_str().unwrap()]);
    insta::assert_snapshot!(t.text(), @"
    $ a3s-iso verify [ROOT]/work/src/.git/a3s-iso/runs/a/cap.json
    valid
    patch digest  sha256:[DIGEST-1]
    size          [SIZE]
    session       a
    run           cap
    state         completed
    [exit 0]
    $ a3s-iso verify [ROOT]/broken.json
    [stderr] error[change_set_invalid]: change set invalid (patch_bytes) at patch_bytes: says [SIZE]+1, the decoded patch has [SIZE]
    [stderr]   hint: the document was altered after capture, or was not written by a capture
    [exit 5]
    $ a3s-iso verify [ROOT]/missing.json
    [stderr] error[change_set_unavailable]: cannot read [ROOT]/missing.json: No such file or directory (os error 2)
    [exit 1]
    ");
}

#[test]
fn changes_answers_a_request() {
    let fx = Fixture::new();
    fx.bind("a");
    let release = format!("sha256:{}", "a1".repeat(32));
    let edit = ["--", "sh", "-c", "echo 'agent line' >> README.md"];
    let (code, doc) = fx.json(
        &[
            &[
                "run",
                "-s",
                "a",
                "--no-sandbox",
                "--run-id",
                "r1",
                "--release-identity",
                &release,
            ][..],
            &edit[..],
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{doc}");
    let file = fx.root.join("request.json");
    let request = crate::fixture::change_set_request(&release, "a", "r1");
    std::fs::write(&file, request.to_string()).unwrap();
    let unknown = fx.root.join("unknown.json");
    let request = crate::fixture::change_set_request(&release, "a", "r2");
    std::fs::write(&unknown, request.to_string()).unwrap();
    let mut t = Transcript::new(&fx);
    t.run(&["changes", "--request", file.to_str().unwrap()]);
    t.run(&["changes", "--request", unknown.to_str().unwrap()]);
    insta::assert_snapshot!(t.text(), @r#"
    $ a3s-iso changes --request [ROOT]/request.json
    {
      "schema": "a3s.code.agent-change-set.v1",
      "identity": {
        "schema": "a3s.code.agent-run-identity.v1",
        "protocol": "a3s.code.agent.v1",
        "agent_release_identity": "sha256:[DIGEST-1]",
        "session_id": "a",
        "run_id": "r1"
      },
      "state": "completed",
      "format": "git_unified_diff_v1",
      "encoding": "base64",
      "base_tree": "git-tree:[TREE-1]",
      "result_tree": "git-tree:[TREE-2]",
      "patch_digest": "sha256:[DIGEST-2]",
      "patch_bytes": [SIZE],
      "patch_base64": "[PATCH]",
      "observed_at_ms": [MS]
    }
    [stderr] a3s-iso: run r1 of session a: completed, [SIZE] (sha256:[DIGEST-2])
    [exit 0]
    $ a3s-iso changes --request [ROOT]/unknown.json
    [stderr] error[run_not_found]: session "a" has no run "r2"
    [stderr]   hint: a3s-iso show -s a lists its runs; a run is known once it has started or been captured
    [exit 1]
    "#);
}

#[test]
fn push_and_fetch_through_a_bare_remote() {
    let fx = Fixture::new();
    session_with_work(&fx);
    let remote = fx.root.join("work/remote.git");
    fx.git(
        &fx.root.join("work"),
        &["init", "-q", "--bare", "remote.git"],
    );
    fx.git(
        &fx.src,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    let mut t = Transcript::new(&fx);
    t.run(&["push", "-s", "a", "--run", "edit"]);
    t.run(&["push", "-s", "a", "--run", "edit"]);
    t.run(&["fetch", "origin"]);
    t.run(&["fetch", "nowhere"]);
    insta::assert_snapshot!(t.text(), @r#"
    $ a3s-iso push -s a --run edit
    pushed to origin
    digest   sha256:[DIGEST-1]
    ref      refs/a3s-iso/changes/[DIGEST-1]
    commit   [COMMIT-1]
    session  a
    run      edit
    size     [SIZE]
    [stderr]   hint: promote it elsewhere with: a3s-iso promote --from origin --digest sha256:[DIGEST-1]
    [exit 0]
    $ a3s-iso push -s a --run edit
    unchanged: origin holds this change set already; nothing pushed
    digest   sha256:[DIGEST-1]
    ref      refs/a3s-iso/changes/[DIGEST-1]
    commit   [COMMIT-1]
    session  a
    run      edit
    size     [SIZE]
    [stderr]   hint: promote it elsewhere with: a3s-iso promote --from origin --digest sha256:[DIGEST-1]
    [exit 0]
    $ a3s-iso fetch origin
    fetched 1 change set from origin
      sha256:[DIGEST-1]  a edit  [SIZE]
    [exit 0]
    $ a3s-iso fetch nowhere
    [stderr] error[invalid_input]: "nowhere" is not a remote of this repository (configured: origin); change sets travel through configured remotes only (git remote add NAME URL), or a URL with --allow-url
    [exit 5]
    "#);
}

#[test]
fn promote_rebase_after_the_head_moved() {
    let fx = Fixture::new();
    session_with_work(&fx);
    fx.write("user.txt", "user\n");
    fx.commit_all("the user moves on");
    let mut t = Transcript::new(&fx);
    t.run(&["promote", "-s", "a", "--rebase"]);
    t.run(&["promote", "-s", "a", "--mode", "branch"]);
    insta::assert_snapshot!(t.text(), @"
    $ a3s-iso promote -s a --rebase
    applied: 2 files changed
    session    a
    digest     sha256:[DIGEST-1]
    size       [SIZE]
    step       1
    bound      [COMMIT-1]
    current    [COMMIT-1]
    artifacts  [ROOT]/work/src/.git/a3s-iso/artifacts/[DIGEST-1]
      README.md
      added.txt
    [exit 0]
    $ a3s-iso promote -s a --mode branch
    idempotent: this change set was promoted before; nothing applied
    session  a
    digest   sha256:[DIGEST-1]
    size     [SIZE]
    step     1
    bound    [COMMIT-1]
    [exit 0]
    ");
}

#[test]
fn land_stops_at_a_failing_test() {
    let fx = Fixture::new();
    session_with_work(&fx);
    fx.bind("b");
    std::fs::write(fx.isolation("b").join("b.txt"), "b\n").unwrap();
    let mut t = Transcript::new(&fx);
    t.run(&[
        "land",
        "-s",
        "b",
        "-s",
        "a",
        "--no-sandbox",
        "--test",
        "test -f added.txt",
    ]);
    t.run(&["land", "--abort"]);
    insta::assert_snapshot!(t.text(), @"
    $ a3s-iso land -s b -s a --no-sandbox --test 'test -f added.txt'
    stopped at session b: 0 landed
      b: test failed, test exit 1, output in [ROOT]/work/src/.git/a3s-iso/land-tests/b/[RUN-1].log, [DUR]
      a: not reached
    [stderr]   hint: the test failed on session b (exit 1, output in [ROOT]/work/src/.git/a3s-iso/land-tests/b/[RUN-1].log): fix the session's work in $(a3s-iso path -s b); then `a3s-iso land` continues the queue (it rebases and tests the session anew)
    [exit 3]
    $ a3s-iso land --abort
    dropped the stopped queue of 2 sessions; no session was touched
      b: test failed, test exit 1, output in [ROOT]/work/src/.git/a3s-iso/land-tests/b/[RUN-1].log, [DUR]
      a: not reached
    [exit 0]
    ");
}

#[test]
fn discard_a_session_with_unpromoted_work() {
    let fx = Fixture::new();
    session_with_work(&fx);
    let mut t = Transcript::new(&fx);
    t.run(&["discard", "-s", "a"]);
    t.run(&["list"]);
    t.run(&["show", "-s", "a"]);
    insta::assert_snapshot!(t.text(), @r"
    $ a3s-iso discard -s a
    a: discarded
    removed  [ROOT]/work/.src.a3s-isolate-a
    [exit 0]
    $ a3s-iso list
    no sessions
    [stderr] 1 discarded session not shown (list --all shows them)
    [exit 0]
    $ a3s-iso show -s a
    a
    state          discarded
    source         [ROOT]/work/src
    isolation      [ROOT]/work/.src.a3s-isolate-a (removed)
    revision       [COMMIT-1]
    base tree      [TREE-1]
    head moved     no
    owner          pid [PID] ([TEST-BINARY]) on [HOST] (alive)
    bound at       [TIME]
    files changed  -

    runs:
      edit  completed  sha256:[digest]      [TIME]                exit 0  sh -c 'echo '\''agent line'\'' >> README.md; echo new > added.txt'  (--no-sandbox)
    [exit 0]
    ");
}

#[test]
fn shell_init_and_profile_with_nothing_held() {
    let fx = Fixture::new();
    let mut t = Transcript::new(&fx);
    t.run(&["profile", "diff"]);
    t.run(&["profile", "diff", "nope"]);
    insta::assert_snapshot!(t.text(), @r#"
    $ a3s-iso profile diff
    [stderr] aider: nothing held for review
    [stderr] claude: nothing held for review
    [stderr] codex: nothing held for review
    [exit 0]
    $ a3s-iso profile diff nope
    [stderr] error[invalid_input]: no profile "nope" (there are: aider, claude, codex, generic)
    [exit 5]
    "#);
}

/// The normalisation replaces ids, times, sizes and durations, and leaves words, arguments
/// and nothing-sized values as they are, so that a change of wording still shows.
#[test]
fn normalisation_is_precise() {
    let fx = Fixture::new();
    let head = crate::fixture::head(&fx);
    let tree = fx.git(&fx.src, &["rev-parse", "HEAD^{tree}"]);
    let digest = format!("sha256:{}", "0123456789abcdef".repeat(4));
    let raw = format!(
        "{head} {tree} {head} {short} {digest} {hex} {hex_short}\n\
         r-0192abc1234-deadbeef r-0192abc1234-deadbeef r-0192abc1235-00c0ffee s-0192abc1234-0badf00d\n\
         added decade facade deadbeef cafe1234cafe\n\
         gc --older-than 0s, 0.3s, 12.0s, 0 bytes, 1 byte, 12 bytes, 4.9 KiB, 1,024 files\n\
         2026-01-02 03:04:05Z 2031-07-08 09:10:11Z\n",
        short = &head[..12],
        hex = "0123456789abcdef".repeat(4),
        hex_short = "0123456789ab",
    );
    insta::assert_snapshot!(crate::fixture::normalised(&fx, &raw), @"
    [COMMIT-1] [TREE-1] [COMMIT-1] [commit-1] sha256:[DIGEST-1] [DIGEST-1] [digest-1]
    [RUN-1] [RUN-1] [RUN-2] [SESSION-1]
    added decade facade deadbeef cafe1234cafe
    gc --older-than 0s, [DUR], [DUR], 0 bytes, [SIZE], [SIZE], [SIZE], 1,024 files
    2026-01-02 03:04:05Z [TIME]
    ");
}

/// The same scenario on a SHA-1 and a SHA-256 repository reads the same.
#[test]
fn transcripts_read_the_same_for_either_object_format() {
    let texts: Vec<String> = ["sha1", "sha256"]
        .iter()
        .map(|format| {
            let fx = Fixture::with_object_format(format);
            let mut t = Transcript::new(&fx);
            t.run(&["bind", "-s", "a"]);
            let edit = "echo 'agent line' >> README.md; echo new > added.txt";
            t.run(&["run", "-s", "a", "--no-sandbox", "--", "sh", "-c", edit]);
            t.run(&["promote", "-s", "a"]);
            t.run(&["show", "-s", "a"]);
            t.run(&["log"]);
            t.run(&["diff", "-s", "a", "--cumulative"]);
            t.text()
        })
        .collect();
    assert_eq!(texts[0], texts[1]);
    assert!(
        texts[0].contains("[COMMIT-1]") && texts[0].contains("[RUN-1]"),
        "{}",
        texts[0]
    );
}

/// The checks whose result is the machine's (git's version, the kernel's sandbox layers, the
/// file system): `doctor` pins the rest (the repository's state, the hidden set) exactly.
const MACHINE_CHECKS: &[&str] = &[
    "git",
    "landlock",
    "user_namespace",
    "mount_namespace",
    "pid_namespace",
    "net_namespace",
    "seccomp",
    "pty",
    "sandbox_trial",
    "filesystem",
    "reflink",
    // Where this machine's agents are installed.
    "agent_tools",
];

/// `text` with each machine check's line (and its hint) as `[MACHINE] <name>`, the verdict on
/// the sandbox and the exit code as placeholders (0, or 4 without Landlock; another code stays).
fn without_machine_checks(text: &str) -> String {
    let check = regex::Regex::new(r"^(ok  |warn|FAIL)  (\w+) ").unwrap();
    let mut out = Vec::new();
    let mut in_machine_check = false;
    for line in text.lines() {
        if let Some(c) = check.captures(line) {
            in_machine_check = MACHINE_CHECKS.contains(&&c[2]);
            out.push(if in_machine_check {
                format!("[MACHINE] {}", &c[2])
            } else {
                line.into()
            });
        } else if in_machine_check && line.trim_start().starts_with("hint: ") {
            continue;
        } else if line.starts_with("run can") || line.starts_with("run cannot") {
            out.push("run [CAN OR CANNOT] sandbox commands here".into());
        } else if line == "[exit 0]" || line == "[exit 4]" {
            out.push("[exit [0 OR 4]]".into());
        } else {
            out.push(line.into());
        }
    }
    out.join("\n")
}

#[test]
fn doctor_on_a_fresh_source() {
    let fx = Fixture::new();
    insta::assert_snapshot!(without_machine_checks(&fx.transcript(&["doctor"])), @"
    $ a3s-iso doctor
    [MACHINE] git
    [MACHINE] landlock
    [MACHINE] user_namespace
    [MACHINE] mount_namespace
    [MACHINE] pid_namespace
    [MACHINE] net_namespace
    [MACHINE] seccomp
    [MACHINE] pty
    [MACHINE] sandbox_trial
    ok    repository               source [ROOT]/work/src
    [MACHINE] filesystem
    [MACHINE] reflink
    ok    state_dir                [ROOT]/work/src/.git/a3s-iso (created by the first bind)
    ok    lock                     [ROOT]/work/src/.git/a3s-iso.lock is free
    ok    stale_claims             none
    ok    unfinished_intents       none
    ok    pending_tree_operations  none
    ok    scratch_leftovers        none
    ok    user_registry            [ROOT]/home/.local/share/a3s-iso (no source registered)
    [MACHINE] agent_tools
    run [CAN OR CANNOT] sandbox commands here
    hidden from every sandboxed run (--allow-read shows one):
      [ROOT]/home/.ssh  (not here)
      [ROOT]/home/.gnupg  (not here)
      [ROOT]/home/.aws  (not here)
      [ROOT]/home/.config/gcloud  (not here)
      [ROOT]/home/.azure  (not here)
      [ROOT]/home/.kube  (not here)
      [ROOT]/home/.docker/config.json  (not here)
      [ROOT]/home/.git-credentials  (not here)
      [ROOT]/home/.netrc  (not here)
      [ROOT]/home/.config/gh  (not here)
      [ROOT]/home/.npmrc  (not here)
      [ROOT]/home/.pypirc  (not here)
      [ROOT]/home/.cargo/credentials  (not here)
      [ROOT]/home/.cargo/credentials.toml  (not here)
      [ROOT]/home/.config/git/credentials  (not here)
      [ROOT]/home/.aider/oauth-keys.env  (seen by --profile aider)  (not here)
      [ROOT]/home/.claude/.credentials.json  (seen by --profile claude)  (not here)
      [ROOT]/home/.codex/auth.json  (seen by --profile codex)  (not here)
      [ROOT]/home/.local/share/a3s-iso/profiles  (the profiles' copies)  (not here)
    [exit [0 OR 4]]
    ");
}

#[test]
fn doctor_after_a_bind() {
    let fx = Fixture::new();
    fx.bind("a");
    insta::assert_snapshot!(without_machine_checks(&fx.transcript(&["doctor"])), @"
    $ a3s-iso doctor
    [MACHINE] git
    [MACHINE] landlock
    [MACHINE] user_namespace
    [MACHINE] mount_namespace
    [MACHINE] pid_namespace
    [MACHINE] net_namespace
    [MACHINE] seccomp
    [MACHINE] pty
    [MACHINE] sandbox_trial
    ok    repository               source [ROOT]/work/src
    [MACHINE] filesystem
    [MACHINE] reflink
    ok    state_dir                [ROOT]/work/src/.git/a3s-iso
    ok    lock                     [ROOT]/work/src/.git/a3s-iso.lock is free
    ok    stale_claims             none
    ok    unfinished_intents       none
    ok    pending_tree_operations  none
    ok    scratch_leftovers        none
    ok    user_registry            [ROOT]/home/.local/share/a3s-iso (1 source registered)
    [MACHINE] agent_tools
    run [CAN OR CANNOT] sandbox commands here
    hidden from every sandboxed run (--allow-read shows one):
      [ROOT]/home/.ssh  (not here)
      [ROOT]/home/.gnupg  (not here)
      [ROOT]/home/.aws  (not here)
      [ROOT]/home/.config/gcloud  (not here)
      [ROOT]/home/.azure  (not here)
      [ROOT]/home/.kube  (not here)
      [ROOT]/home/.docker/config.json  (not here)
      [ROOT]/home/.git-credentials  (not here)
      [ROOT]/home/.netrc  (not here)
      [ROOT]/home/.config/gh  (not here)
      [ROOT]/home/.npmrc  (not here)
      [ROOT]/home/.pypirc  (not here)
      [ROOT]/home/.cargo/credentials  (not here)
      [ROOT]/home/.cargo/credentials.toml  (not here)
      [ROOT]/home/.config/git/credentials  (not here)
      [ROOT]/home/.aider/oauth-keys.env  (seen by --profile aider)  (not here)
      [ROOT]/home/.claude/.credentials.json  (seen by --profile claude)  (not here)
      [ROOT]/home/.codex/auth.json  (seen by --profile codex)  (not here)
      [ROOT]/home/.local/share/a3s-iso/profiles  (the profiles' copies)  (not here)
    [exit [0 OR 4]]
    ");
}

#[test]
fn diff_of_a_promoted_digest_and_of_a_document() {
    let fx = Fixture::new();
    session_with_work(&fx);
    let (code, doc) = fx.json(&["promote", "-s", "a"]);
    assert_eq!(code, 0, "{doc}");
    fx.json(&["capture", "-s", "a", "--run-id", "cap"]);
    let digest = doc["digest"].as_str().unwrap_or_else(|| panic!("{doc}"));
    let document = fx.src.join(".git/a3s-iso/runs/a/cap.json");
    let mut t = Transcript::new(&fx);
    t.run(&["diff", "--digest", &digest[..15], "--stat"]);
    t.run(&[
        "diff",
        "--change-set",
        document.to_str().unwrap(),
        "--name-only",
    ]);
    t.run(&["diff", "-s", "a"]);
    t.run(&["diff", "-s", "a", "--cumulative", "--stat"]);
    t.run(&["diff", "--digest", "sha256:0000"]);
    insta::assert_snapshot!(t.text(), @r#"
    $ a3s-iso diff --digest sha256:[digest] --stat
     README.md |   1 +
     added.txt |   1 + (added)
     2 files changed, 2 insertions(+), 0 deletions(-)
    [exit 0]
    $ a3s-iso diff --change-set [ROOT]/work/src/.git/a3s-iso/runs/a/cap.json --name-only
    README.md
    added.txt
    [exit 0]
    $ a3s-iso diff -s a
    [stderr] a3s-iso: no changes
    [exit 0]
    $ a3s-iso diff -s a --cumulative --stat
     README.md |   1 +
     added.txt |   1 + (added)
     2 files changed, 2 insertions(+), 0 deletions(-)
    [exit 0]
    $ a3s-iso diff --digest sha256:0000
    [stderr] error[usage]: --digest "sha256:0000" is not sha256:<64 hex digits> or a prefix of at least 8 of them
    [exit 2]
    "#);
}

#[test]
fn init_claude_twice() {
    let fx = Fixture::new();
    let mut t = Transcript::new(&fx);
    t.run(&["init", "claude"]);
    t.run(&["init", "claude"]);
    insta::assert_snapshot!(t.text(), @"
    $ a3s-iso init claude
    created [ROOT]/work/src/.claude/settings.local.json with the hooks
      WorktreeCreate  a3s-iso hook claude worktree-create
      WorktreeRemove  a3s-iso hook claude worktree-remove
    [stderr] warning: .claude/settings.local.json is not ignored by git: it would count as a local change of the source (add it to .git/info/exclude)
    [exit 0]
    $ a3s-iso init claude
    [ROOT]/work/src/.claude/settings.local.json: the hooks are there already
      WorktreeCreate  a3s-iso hook claude worktree-create (already there)
      WorktreeRemove  a3s-iso hook claude worktree-remove (already there)
    [stderr] warning: .claude/settings.local.json is not ignored by git: it would count as a local change of the source (add it to .git/info/exclude)
    [exit 0]
    ");
}

#[test]
fn land_in_branch_mode_with_a_message() {
    let fx = Fixture::new();
    session_with_work(&fx);
    let mut t = Transcript::new(&fx);
    t.run(&[
        "land",
        "-s",
        "a",
        "--mode",
        "branch",
        "-m",
        "the agent's work",
        "--keep",
    ]);
    t.run(&["list"]);
    insta::assert_snapshot!(t.text(), @r"
    $ a3s-iso land -s a --mode branch -m 'the agent'\''s work' --keep
    1 of 1 sessions landed
      a: landed as [commit-1], [DUR]
    [exit 0]
    $ a3s-iso list
    SESSION  STATE   REVISION      HEAD  OWNER  LAST RUN        PATH
    a        landed  [commit-2]    same  alive  edit completed  [ROOT]/work/.src.a3s-isolate-a
    [exit 0]
    ");
}

#[test]
fn sweep_reclaims_the_isolation_of_a_dead_owner() {
    let fx = Fixture::new();
    // Bound first: a bind reclaims the dead owners' sessions it finds as it starts.
    fx.bind("live");
    crate::sweep_races::dead_owner_session(&fx, "dead");
    let mut t = Transcript::new(&fx);
    t.run(&["list"]);
    t.run(&["sweep", "--dry-run"]);
    t.run(&["sweep"]);
    t.run(&["list"]);
    insta::assert_snapshot!(t.text(), @"
    $ a3s-iso list
    SESSION  STATE  REVISION      HEAD  OWNER  LAST RUN  PATH
    dead     bound  [commit-1]    same  dead   -         [ROOT]/work/.src.a3s-isolate-dead
    live     bound  [commit-1]    same  alive  -         [ROOT]/work/.src.a3s-isolate-live
    [exit 0]
    $ a3s-iso sweep --dry-run
    would reclaim 1 isolation ([SIZE]), kept 1, skipped 0
      reclaim  [ROOT]/work/.src.a3s-isolate-dead  (owner_dead: its owner is gone, [SIZE])
      keep     [ROOT]/work/.src.a3s-isolate-live  (live: owner pid [PID] on [HOST] is alive)

    kept: 1 live
    [exit 0]
    $ a3s-iso sweep
    reclaimed 1 isolation ([SIZE]), kept 1, skipped 0
      reclaim  [ROOT]/work/.src.a3s-isolate-dead  (owner_dead: its owner is gone, [SIZE])
      keep     [ROOT]/work/.src.a3s-isolate-live  (live: owner pid [PID] on [HOST] is alive)

    kept: 1 live
    [exit 0]
    $ a3s-iso list
    SESSION  STATE  REVISION      HEAD  OWNER  LAST RUN  PATH
    dead     swept  [commit-1]    same  dead   -         refs/a3s-iso/swept/dead (bind -s dead --resume)
    live     bound  [commit-1]    same  alive  -         [ROOT]/work/.src.a3s-isolate-live
    [exit 0]
    ");
}
