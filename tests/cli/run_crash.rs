//! `run` SIGKILLed with its process group: once the next command ran, nothing of it is left
//! (its private TMPDIR included) and the session is as it was.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::fixture::{Fixture, json_of};
use crate::sweep_races::{Rng, assert_consistent, entries, kill_group_after, wait_for, with_work};

#[test]
fn a_killed_run_leaves_no_scratch_once_the_next_command_ran() {
    let fx = Fixture::new();
    let host_tmp = fx.root.join("host-tmp");
    std::fs::create_dir(&host_tmp).unwrap();
    fx.bind("killed");
    with_work(&fx, "killed");
    let mut rng = Rng::seeded(47, "run kills");
    for _ in 0..4 {
        use std::os::unix::process::CommandExt;
        let run = fx
            .cmd()
            .env("TMPDIR", &host_tmp)
            .args(["run", "-s", "killed", "--no-sandbox", "--"])
            .args(["sh", "-c", "touch started; sleep 3"])
            .process_group(0)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = fx.isolation("killed").join("started");
        assert!(wait_for(&started, Duration::from_secs(30)));
        std::fs::remove_file(&started).unwrap();
        assert!(kill_group_after(run, Duration::from_millis(rng.below(50))));
        assert!(
            !entries(&host_tmp).is_empty(),
            "the run's TMPDIR was made there"
        );
        let (code, list) = fx.json_in_tmp(&host_tmp, &["list", "--all"]);
        assert_eq!(code, 0, "{list}");
        assert_eq!(entries(&host_tmp), Vec::<String>::new());
        assert_consistent(&fx, &list, &[]);
    }
}

trait InTmp {
    fn json_in_tmp(&self, tmp: &Path, args: &[&str]) -> (i32, Value);
}

impl InTmp for Fixture {
    /// `--json` ARGS in the source, with `TMPDIR` set.
    fn json_in_tmp(&self, tmp: &Path, args: &[&str]) -> (i32, Value) {
        json_of(
            self.cmd()
                .env("TMPDIR", tmp)
                .arg("--json")
                .args(args)
                .output()
                .unwrap(),
        )
    }
}
