//! `gc` leaves nothing of a discarded session that no one can use (its seeds above all), says
//! what it keeps and why, counts true bytes; `gc --all` after `discard --all --purge` leaves a
//! repository as the README's uninstall says, pool spares included. Attacked with concurrent
//! binds and pool fills, and with SIGKILLs at random moments.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::fixture::{Fixture, ok, state_dir, worked};

/// The reasons `gc` may give for an item it keeps (docs/json.md).
const KEPT_REASONS: [&str; 8] = [
    "live",
    "retained",
    "inside_window",
    "idempotence",
    "checked_out",
    "busy",
    "pool",
    "isolation_exists",
];

/// Every file under `dir`, relative, sorted (none when it does not exist).
fn files_under(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                walk(root, &path, out);
            } else {
                out.push(path.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// The bytes of every file under `dir`.
fn bytes_under(dir: &Path) -> u64 {
    files_under(dir)
        .iter()
        .filter_map(|rel| std::fs::symlink_metadata(dir.join(rel)).ok())
        .map(|m| m.len())
        .sum()
}

/// The seed files of the state dir.
fn seeds(fx: &Fixture) -> BTreeSet<String> {
    files_under(&state_dir(fx).join("seeds"))
        .into_iter()
        .collect()
}

/// The names of the admin dirs git has for the source's linked worktrees.
fn admins(fx: &Fixture) -> BTreeSet<String> {
    std::fs::read_dir(fx.src.join(".git/worktrees"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether a seed file belongs to the isolation whose admin dir is named `admin`.
fn seed_of(seed: &str, admin: &str) -> bool {
    seed.strip_prefix(admin)
        .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('+'))
}

/// The spare trees beside the source.
fn spare_trees(fx: &Fixture) -> Vec<PathBuf> {
    std::fs::read_dir(fx.src.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains(".pool-"))
        .collect()
}

fn pool_size(fx: &Fixture, size: &str) -> Value {
    ok(fx, &["pool", "--size", size])
}

/// A pool of two, a session bound from it, one bound cold, both captured; `done` landed.
fn sessions_with_a_pool(fx: &Fixture) {
    pool_size(fx, "2");
    worked(fx, "warm", "warm.txt");
    worked(fx, "done", "done.txt");
    pool_size(fx, "1");
    worked(fx, "cold", "cold.txt");
    let landed = ok(fx, &["land", "-s", "done"]);
    assert_eq!(landed["sessions"][0]["outcome"], "landed", "{landed}");
}

/// The promise: a discarded session's isolation is gone, and so must be the seeds that only
/// sped up its snapshots, at the first `gc`, whatever the retention window. Everything `gc`
/// does not remove that a clean-up could have touched is listed with a reason, and the bytes
/// it reports are the bytes that left the disk.
/// What stays is listed once, with a reason from the documented set and its bytes: every
/// seed left and every spare of the pool.
fn what_stays_is_listed_once_with_its_reason(fx: &Fixture, done: &Value) {
    // What stays is listed, with a reason from the documented set, and its bytes.
    let kept = done["kept"].as_array().unwrap();
    for item in kept {
        let reason = item["reason"].as_str().unwrap();
        assert!(KEPT_REASONS.contains(&reason), "{item}");
    }
    // Each once: a promoted session's journal entry is its session's and the journal's.
    let locations: Vec<String> = kept
        .iter()
        .map(|i| {
            i["ref"]
                .as_str()
                .or(i["path"].as_str())
                .unwrap()
                .to_string()
        })
        .collect();
    let unique: BTreeSet<&String> = locations.iter().collect();
    assert_eq!(unique.len(), locations.len(), "{done}");
    let kept_paths: BTreeSet<String> = kept
        .iter()
        .filter_map(|i| i["path"].as_str().map(str::to_string))
        .collect();
    for seed in seeds(fx) {
        let path = state_dir(fx).join("seeds").join(&seed);
        assert!(
            kept_paths.contains(&path.display().to_string()),
            "{seed} stays unlisted: {done}"
        );
    }
    let spares = spare_trees(fx);
    assert!(!spares.is_empty(), "the pool is empty");
    for spare in &spares {
        assert!(
            kept.iter().any(|i| i["kind"] == "spare"
                && i["reason"] == "pool"
                && i["path"] == spare.display().to_string()),
            "the spare {} is not listed as kept: {done}",
            spare.display()
        );
    }
    assert_eq!(
        done["kept_bytes"].as_u64(),
        Some(kept.iter().filter_map(|i| i["bytes"].as_u64()).sum()),
        "{done}"
    );
}

#[test]
fn gc_removes_the_seeds_of_discarded_isolations_and_says_what_it_keeps() {
    let fx = Fixture::new();
    sessions_with_a_pool(&fx);
    worked(&fx, "live", "live.txt");
    ok(&fx, &["discard", "-s", "warm"]);
    ok(&fx, &["discard", "-s", "cold"]);
    ok(&fx, &["discard", "-s", "done"]);
    let before = bytes_under(&state_dir(&fx));
    let done = ok(&fx, &["gc"]);
    let after = bytes_under(&state_dir(&fx));
    let admins = admins(&fx);
    let orphans: Vec<String> = seeds(&fx)
        .into_iter()
        .filter(|s| !admins.iter().any(|a| seed_of(s, a)))
        .collect();
    assert!(
        orphans.is_empty(),
        "seeds of isolations that are gone outlived gc: {orphans:?}\n{done}"
    );
    assert_eq!(
        done["bytes"].as_u64().unwrap(),
        before - after,
        "the bytes gc reports are not the bytes that left the state dir: {done}"
    );
    what_stays_is_listed_once_with_its_reason(&fx, &done);
    let kept = done["kept"].as_array().unwrap();
    // The discarded sessions' evidence stays inside the window, and says so.
    for id in ["warm", "cold", "done"] {
        let record = state_dir(&fx).join(format!("sessions/{id}.json"));
        assert!(record.is_file());
        assert!(
            kept.iter().any(
                |i| i["path"] == record.display().to_string() && i["reason"] == "inside_window"
            ),
            "{done}"
        );
    }
    // The live session's seed stays: its next capture still works from it.
    let live_admin = crate::fixture::admin_dir(&fx, "live");
    let name = live_admin
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(seeds(&fx).iter().any(|s| s == &format!("{name}.index")));
    std::fs::write(fx.isolation("live").join("more.txt"), "more\n").unwrap();
    ok(&fx, &["capture", "-s", "live"]);
}

/// The human output says what stays and why, as the JSON does.
#[test]
fn gc_tells_a_human_what_it_keeps_and_why() {
    let fx = Fixture::new();
    worked(&fx, "gone", "gone.txt");
    // The pool is full when `gone` is discarded: its tree is removed, not recycled.
    pool_size(&fx, "1");
    ok(&fx, &["discard", "-s", "gone"]);
    let out = fx.cmd().args(["gc"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let root = fx.root.display().to_string();
    let text = text.replace(&root, "<root>");
    let text = masked(&text);
    insta::assert_snapshot!(text, @"
    removed 5 items (<size>), kept 6 (<size>)
      remove lease          <root>/work/src/.git/a3s-iso/leases/gone.lock  (no one holds it)
      remove seed           <root>/work/src/.git/a3s-iso/seeds/-src.a3s-isolate-gone+bound.index  (its isolation is gone)
      remove seed           <root>/work/src/.git/a3s-iso/seeds/-src.a3s-isolate-gone.flat  (its isolation is gone)
      remove seed           <root>/work/src/.git/a3s-iso/seeds/-src.a3s-isolate-gone.index  (its isolation is gone)
      remove seed           <root>/work/src/.git/a3s-iso/seeds/-src.a3s-isolate-gone.tree  (its isolation is gone)
      keep   ref            refs/a3s-iso/runs/gone/<run>  (inside the retention window: gc --older-than 0s removes it)
      keep   ref            refs/a3s-iso/sessions/gone/base  (inside the retention window: gc --older-than 0s removes it)
      keep   runs           <root>/work/src/.git/a3s-iso/runs/gone  (inside the retention window: gc --older-than 0s removes it)
      keep   session_record <root>/work/src/.git/a3s-iso/sessions/gone.json  (inside the retention window: gc --older-than 0s removes it)
      keep   spare          <root>/work/.src.a3s-isolate-.pool-1  (the pool's: pool --size 0 or gc --all removes it)
      keep   pool_settings  <root>/work/src/.git/a3s-iso/pool/settings.json  (the pool's: pool --size 0 or gc --all removes it)
    ");
}

/// The output with its sizes (which vary with the object format) and run ids masked: the
/// headline's parentheses, and what follows `runs/gone/` in a ref.
fn masked(text: &str) -> String {
    let mut lines = text.lines();
    let headline = lines.next().unwrap_or_default();
    let mut out: String = headline
        .split('(')
        .enumerate()
        .map(|(i, part)| match (i, part.split_once(')')) {
            (0, _) | (_, None) => part.to_string(),
            (_, Some((_, rest))) => format!("(<size>){rest}"),
        })
        .collect();
    out.push('\n');
    for line in lines {
        let line = match line.split_once("refs/a3s-iso/runs/gone/") {
            Some((head, tail)) => {
                let rest = tail.split_once(' ').map_or("", |(_, r)| r);
                format!("{head}refs/a3s-iso/runs/gone/<run> {rest}")
            }
            None => line.to_string(),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The README's uninstall: `discard --all --purge`, then `gc --all`, leaves only the lock file
/// of what a3s-iso stored in the repository's git dir, no private ref, no worktree admin dir,
/// and beside the source no isolation and no pool spare.
#[test]
fn uninstall_leaves_only_the_lock_file_and_no_spare() {
    let fx = Fixture::new();
    let pristine_git: BTreeSet<String> = files_under(&fx.src.join(".git")).into_iter().collect();
    sessions_with_a_pool(&fx);
    pool_size(&fx, "3");
    ok(&fx, &["discard", "--all", "--purge"]);
    let done = ok(&fx, &["gc", "--all"]);
    assert_eq!(files_under(&state_dir(&fx)), Vec::<String>::new(), "{done}");
    assert!(!state_dir(&fx).exists(), "the state dir stays: {done}");
    let ours: Vec<String> = files_under(&fx.src.join(".git"))
        .into_iter()
        .filter(|f| !pristine_git.contains(f))
        .filter(|f| f.contains("a3s-iso") || f.starts_with("worktrees/"))
        .collect();
    assert_eq!(ours, ["a3s-iso.lock"], "{done}");
    assert!(admins(&fx).is_empty(), "{:?}", admins(&fx));
    assert_eq!(spare_trees(&fx), Vec::<PathBuf>::new(), "{done}");
    let beside: Vec<String> = std::fs::read_dir(fx.src.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("a3s-isolate"))
        .collect();
    assert!(beside.is_empty(), "{beside:?}");
    assert_eq!(
        fx.git(
            &fx.src,
            &["for-each-ref", "refs/a3s-iso", "refs/heads/a3s-iso"]
        ),
        ""
    );
    // The removed spares are listed with the rest.
    assert!(
        done["removed"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["kind"] == "spare"),
        "{done}"
    );
    // A later bind starts from nothing: no pool.
    let bound = fx.bind("again");
    assert_eq!(bound["warm"], false, "{bound}");
}

/// Every bound session's record names an admin dir whose seed and bind-time index are there,
/// and its isolation captures; every spare a record calls ready is whole.
fn live_seeds_and_spares_whole(fx: &Fixture, context: &str) {
    let dir = state_dir(fx);
    for name in files_under(&dir.join("sessions")) {
        let record: Value =
            serde_json::from_slice(&std::fs::read(dir.join("sessions").join(&name)).unwrap())
                .unwrap();
        if record["state"] != "bound" {
            continue;
        }
        let admin = record["admin_dir"].as_str().unwrap();
        let admin = Path::new(admin).file_name().unwrap().to_string_lossy();
        for seed in [format!("{admin}.index"), format!("{admin}+bound.index")] {
            assert!(
                dir.join("seeds").join(&seed).is_file(),
                "{context}: the seed {seed} of the live session {name} is gone"
            );
        }
    }
    for name in files_under(&dir.join("pool/spares")) {
        let Some(slot) = name.strip_suffix(".json") else {
            continue;
        };
        let spare: Value =
            serde_json::from_slice(&std::fs::read(dir.join("pool/spares").join(&name)).unwrap())
                .unwrap();
        if spare["state"] == "ready" {
            let tree = Path::new(spare["path"].as_str().unwrap());
            assert!(tree.join(".git").is_file(), "{context}: spare {slot}");
            assert!(
                dir.join(format!("pool/spares/{slot}.index")).is_file(),
                "{context}: the index of spare {slot}"
            );
        }
    }
}

/// Whether the result tree of a capture's change set holds `file`.
fn result_holds(fx: &Fixture, captured: &Value, file: &str) -> bool {
    let tree = captured["result_tree"].as_str().unwrap();
    let tree = tree.strip_prefix("git-tree:").unwrap_or(tree);
    fx.git(&fx.src, &["ls-tree", "-r", "--name-only", tree])
        .lines()
        .any(|l| l == file)
}

/// The promise "never a live session's seed nor a spare being handed out": `gc` (plain,
/// `--older-than 0s` and `--all`) runs over and over while sessions are bound warm from the
/// pool, captured and discarded back into it, and the pool is refilled. Every command
/// succeeds; every live session keeps its seeds and captures from them; every spare is whole;
/// the last `gc` leaves no seed of an isolation that is gone.
#[test]
fn attack_gc_racing_binds_and_pool_refills_never_takes_a_live_seed_or_a_spare() {
    let fx = Fixture::new();
    for i in 0..30 {
        fx.write(&format!("d{}/f{i}.txt", i % 3), &format!("file {i}\n"));
    }
    fx.commit_all("more files");
    pool_size(&fx, "2");
    let rounds = crate::fixture::repetitions("A3S_ISO_RACE_ROUNDS", 8);
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let gcs = scope.spawn(|| {
            let mut n = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let args: &[&str] = match n % 3 {
                    0 => &["gc"],
                    1 => &["gc", "--older-than", "0s"],
                    _ => &["gc", "--all"],
                };
                let (code, doc) = fx.json(args);
                assert_eq!(code, 0, "{args:?}: {doc}");
                n += 1;
                // The lock is not fair: a pause lets the binds in.
                std::thread::sleep(std::time::Duration::from_millis(30));
            }
            n
        });
        let fills = scope.spawn(|| {
            let mut n = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let (code, doc) = fx.json(&["pool", "--size", "2"]);
                assert_eq!(code, 0, "{doc}");
                n += 1;
                std::thread::sleep(std::time::Duration::from_millis(30));
            }
            n
        });
        let mut warm = 0;
        for i in 0..rounds {
            let id = format!("r{i}");
            let bound = fx.bind(&id);
            warm += usize::from(bound["warm"] == true);
            std::fs::write(fx.isolation(&id).join("mine.txt"), format!("{id}\n")).unwrap();
            live_seeds_and_spares_whole(&fx, &id);
            let captured = ok(&fx, &["capture", "-s", &id]);
            assert!(result_holds(&fx, &captured, "mine.txt"), "{captured}");
            live_seeds_and_spares_whole(&fx, &id);
            if i % 2 == 0 {
                ok(&fx, &["discard", "-s", &id]);
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let (gcs, fills) = (gcs.join().unwrap(), fills.join().unwrap());
        eprintln!("gc race: {rounds} binds ({warm} warm), {gcs} gc runs, {fills} pool refills");
    });
    let done = ok(&fx, &["gc"]);
    live_seeds_and_spares_whole(&fx, "after the race");
    let admins = admins(&fx);
    let orphans: Vec<String> = seeds(&fx)
        .into_iter()
        .filter(|s| !admins.iter().any(|a| seed_of(s, a)))
        .collect();
    assert!(orphans.is_empty(), "{orphans:?}: {done}");
    for i in (1..rounds).step_by(2) {
        let id = format!("r{i}");
        std::fs::write(fx.isolation(&id).join("later.txt"), "later\n").unwrap();
        let captured = ok(&fx, &["capture", "-s", &id]);
        assert!(result_holds(&fx, &captured, "later.txt"), "{captured}");
    }
}

/// The promise "a `gc` killed anywhere leaves a state the next one finishes": `gc --all` and
/// `gc --older-than 0s`, SIGKILLed with their process group at random moments over a store
/// with a live session, discarded ones and pool spares. After each kill the live session's
/// seeds are there and it captures, every spare a record calls ready is whole, and the next
/// `gc` (run to its end) leaves no seed of an isolation that is gone and nothing of the
/// discarded sessions but their kept evidence. `A3S_ISO_KILLS_WANTED` sets the kills.
#[test]
fn attack_gc_killed_at_random_moments_never_loses_a_live_seed() {
    use crate::sweep_races::{
        KillTiming, Rng, duration_of, kill_group_after, kills_wanted, spawn_in_group,
    };
    let fx = Fixture::new();
    for i in 0..30 {
        fx.write(&format!("d{}/f{i}.txt", i % 3), &format!("file {i}\n"));
    }
    fx.commit_all("more files");
    worked(&fx, "live", "live.txt");
    let mut rng = Rng::seeded(53, "gc kills");
    let prepare = |fx: &Fixture, n: usize| {
        for k in 0..2 {
            let id = format!("d{n}-{k}");
            worked(fx, &id, "gone.txt");
            ok(fx, &["discard", "-s", &id]);
        }
        pool_size(fx, "1");
    };
    let mut took = std::time::Duration::MAX;
    for n in 0..2 {
        prepare(&fx, 1000 + n);
        took = took.min(duration_of(&fx, &["gc", "--all"]));
    }
    let mut timing = KillTiming::new(took);
    let (kills, most_attempts) = kills_wanted();
    let (mut attempts, mut killed) = (0, 0);
    while killed < kills && attempts < most_attempts {
        prepare(&fx, attempts);
        let args: &[&str] = if attempts % 2 == 0 {
            &["gc", "--all"]
        } else {
            &["gc", "--older-than", "0s"]
        };
        attempts += 1;
        let before = files_under(&state_dir(&fx));
        let gc = spawn_in_group(&fx, args);
        let was_running = kill_group_after(gc, timing.delay(&mut rng));
        killed += usize::from(was_running);
        let changed = files_under(&state_dir(&fx)) != before;
        timing.adjust(match (was_running, changed) {
            (false, _) => Some(false),
            (true, false) => Some(true),
            (true, true) => None,
        });
        let context = format!("kill {attempts} of {args:?}");
        live_seeds_and_spares_whole(&fx, &context);
        let done = ok(&fx, &["gc", "--older-than", "0s"]);
        live_seeds_and_spares_whole(&fx, &context);
        let recorded: Vec<String> = files_under(&state_dir(&fx).join("pool/spares"))
            .into_iter()
            .filter(|n| n.ends_with(".json"))
            .collect();
        assert_eq!(
            spare_trees(&fx).len(),
            recorded.len(),
            "{context}: a spare tree without a record outlived the next gc: {done}"
        );
        let admins = admins(&fx);
        let orphans: Vec<String> = seeds(&fx)
            .into_iter()
            .filter(|s| !admins.iter().any(|a| seed_of(s, a)))
            .collect();
        assert!(orphans.is_empty(), "{context}: {orphans:?}: {done}");
        let leftovers: Vec<String> = files_under(&state_dir(&fx))
            .into_iter()
            .filter(|f| f.contains("/d") && !f.starts_with("promoted/"))
            .collect();
        assert!(leftovers.is_empty(), "{context}: {leftovers:?}: {done}");
        std::fs::write(fx.isolation("live").join(format!("k{attempts}.txt")), "k\n").unwrap();
        ok(&fx, &["capture", "-s", "live"]);
    }
    eprintln!(
        "gc kills: {attempts} attempts (a gc --all takes {took:?}), {killed} killed while running"
    );
    assert!(
        killed >= kills,
        "only {killed} gc runs were killed while running"
    );
}
