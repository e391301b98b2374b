//! Random sequences of bind (by this process or by another owner, which may exit), edit,
//! capture, promote, discard, list, sweep and user commits, checked against a model and the
//! promises: a change set lands at most once, a refused or empty promote leaves the source
//! byte-identical, nothing but an applied promote changes the source, a sweep reclaims exactly
//! the sessions whose owner is dead (never a live one), keeps their work reachable at
//! `refs/a3s-iso/swept/<id>` and the session listed `swept` until `bind --resume` brings the
//! work back, and the heir of a dead owner takes its session over.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command, Stdio};

use proptest::prelude::*;
use serde_json::Value;

use crate::fixture::{Fixture, checkout_listing, error_code, listing};

const SESSIONS: usize = 2;
const FILES: usize = 3;

#[derive(Debug, Clone)]
enum Op {
    /// `bind` owned by this process (the parent of a3s-iso).
    Bind(usize),
    /// `bind --owner-pid` of a new process that stays alive until `OwnerExits`.
    BindAsOther(usize),
    /// `bind --owner-pid` of a new process that exits right after.
    BindAsShortLived(usize),
    /// `bind --owner-pid` of a process that has exited and been reaped: refused.
    BindAsReaped(usize),
    /// The other owner of a session (else of any session) exits and is reaped.
    OwnerExits(usize),
    /// A write into a session's isolation (else into any bound session's).
    Edit(usize, usize, u8),
    Capture(usize),
    Promote(usize),
    /// Promote a session that has work, if there is one (else `s`).
    PromoteWork(usize),
    Discard(usize),
    /// `bind --resume` of a swept session (nothing for any other).
    Resume(usize),
    List,
    Sweep {
        dry_run: bool,
    },
    UserCommit(u8),
}

fn op() -> impl Strategy<Value = Op> {
    let s = || 0..SESSIONS;
    prop_oneof![
        3 => s().prop_map(Op::Bind),
        2 => s().prop_map(Op::BindAsOther),
        3 => s().prop_map(Op::BindAsShortLived),
        1 => s().prop_map(Op::BindAsReaped),
        2 => s().prop_map(Op::OwnerExits),
        5 => (s(), 0..FILES, any::<u8>()).prop_map(|(s, f, c)| Op::Edit(s, f, c)),
        1 => s().prop_map(Op::Capture),
        2 => s().prop_map(Op::Promote),
        3 => s().prop_map(Op::PromoteWork),
        1 => s().prop_map(Op::Discard),
        2 => s().prop_map(Op::Resume),
        1 => Just(Op::List),
        3 => Just(Op::Sweep { dry_run: false }),
        1 => Just(Op::Sweep { dry_run: true }),
        1 => any::<u8>().prop_map(Op::UserCommit),
    ]
}

fn id(session: usize) -> String {
    format!("sm{session}")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// This test process.
    Me,
    /// One of `Others`, by index.
    Other(usize),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    Bound,
    Discarded,
    /// Reclaimed by a sweep; its edits wait in the swept snapshot.
    Swept,
}

/// What the model knows of a session (no entry: never bound).
#[derive(Debug, Clone)]
struct Session {
    state: State,
    owner: Owner,
    /// The files this session wrote in its isolation, with their last content.
    edits: BTreeMap<usize, u8>,
}

/// The other owners: processes this test started. Killed at the end whatever happens.
#[derive(Default)]
struct Others(Vec<(Child, bool)>);

impl Others {
    fn spawn(&mut self) -> usize {
        let child = Command::new("sleep")
            .arg("600")
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        self.0.push((child, true));
        self.0.len() - 1
    }

    fn pid(&self, i: usize) -> String {
        self.0[i].0.id().to_string()
    }

    fn exit(&mut self, i: usize) {
        let (child, alive) = &mut self.0[i];
        if *alive {
            child.kill().unwrap();
            child.wait().unwrap();
            *alive = false;
        }
    }

    fn alive(&self, owner: Owner) -> bool {
        match owner {
            Owner::Me => true,
            Owner::Other(i) => self.0[i].1,
        }
    }
}

impl Drop for Others {
    fn drop(&mut self) {
        for i in 0..self.0.len() {
            let (child, alive) = &mut self.0[i];
            if *alive {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// A pid that was a process of this host a moment ago and is now gone (exited and reaped).
fn reaped_pid() -> String {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid.to_string()
}

/// The content of `rev` (`<ref>:<path>`) in the source's repository, if it is there.
fn blob(fx: &Fixture, rev: &str) -> Option<String> {
    let mut cmd = Command::new("git");
    cmd.current_dir(&fx.src).args(["cat-file", "blob", rev]);
    crate::fixture::isolate(&mut cmd, &fx.home);
    let out = cmd.output().unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn code_of(doc: &Value) -> &str {
    error_code(doc)
}

struct Machine {
    fx: Fixture,
    others: Others,
    sessions: BTreeMap<usize, Session>,
    applied: BTreeSet<String>,
}

impl Machine {
    fn bound(&self, s: usize) -> Option<&Session> {
        self.sessions.get(&s).filter(|x| x.state == State::Bound)
    }

    /// The sessions a sweep must reclaim: bound, and their owner is dead.
    fn dead(&self) -> BTreeSet<String> {
        self.sessions
            .iter()
            .filter(|(_, x)| x.state == State::Bound && !self.others.alive(x.owner))
            .map(|(s, _)| id(*s))
            .collect()
    }

    /// What a bind of `s` reclaims as it starts: every other session whose owner is dead, as
    /// a sweep would (`sweep.auto`).
    fn reclaimed_by_a_bind_of(&mut self, s: usize) {
        let dead = self.dead();
        for (k, session) in self.sessions.iter_mut() {
            if *k != s && dead.contains(&id(*k)) {
                session.state = State::Swept;
            }
        }
    }

    /// A bind (`args`) by `owner`, against the model.
    fn bind(&mut self, s: usize, owner: Owner, args: &[&str]) -> Result<(), TestCaseError> {
        let (code, doc) = self.fx.json(args);
        self.reclaimed_by_a_bind_of(s);
        if self
            .sessions
            .get(&s)
            .is_some_and(|x| x.state == State::Swept)
        {
            // A plain bind never shadows a swept session's work.
            prop_assert_eq!(code, 1, "{}", doc);
            prop_assert_eq!(code_of(&doc), "session_exists");
            return Ok(());
        }
        match self.bound(s).map(|x| x.owner) {
            None => {
                prop_assert_eq!(code, 0, "{}", doc);
                prop_assert_eq!(&doc["reused"], false);
                self.sessions.insert(
                    s,
                    Session {
                        state: State::Bound,
                        owner,
                        edits: BTreeMap::new(),
                    },
                );
            }
            Some(previous) if previous == owner => {
                prop_assert_eq!(code, 0, "{}", doc);
                prop_assert_eq!(&doc["reused"], true);
            }
            Some(previous) if self.others.alive(previous) => {
                // Another live owner's session is never shared.
                prop_assert_eq!(code, 1, "{}", doc);
                prop_assert_eq!(code_of(&doc), "session_exists");
            }
            Some(_) => {
                // The heir of a dead owner takes the session over, isolation and work included.
                prop_assert_eq!(code, 0, "{}", doc);
                prop_assert_eq!(&doc["reused"], true);
                prop_assert!(
                    doc["warnings"]
                        .to_string()
                        .contains("took the session over"),
                    "{}",
                    doc
                );
                self.sessions.get_mut(&s).unwrap().owner = owner;
            }
        }
        if code == 0 {
            let pid = match owner {
                Owner::Me => std::process::id().to_string(),
                Owner::Other(i) => self.others.pid(i),
            };
            prop_assert_eq!(doc["owner"]["pid"].to_string(), pid);
        }
        Ok(())
    }

    /// The files a session wrote are in its isolation as it wrote them.
    fn check_isolation(&self, s: usize) -> Result<(), TestCaseError> {
        let iso = self.fx.isolation(&id(s));
        prop_assert!(iso.is_dir(), "{} is gone", iso.display());
        for (file, content) in &self.bound(s).unwrap().edits {
            let text = std::fs::read_to_string(iso.join(format!("f{file}.txt"))).unwrap();
            prop_assert_eq!(text, format!("{content}\n"));
        }
        Ok(())
    }

    /// A bind by a new process that stays alive (until `OwnerExits`) if it got the session.
    fn bind_as_other(&mut self, s: usize) -> Result<(), TestCaseError> {
        let other = self.others.spawn();
        let pid = self.others.pid(other);
        self.bind(
            s,
            Owner::Other(other),
            &["bind", "-s", &id(s), "--owner-pid", &pid],
        )?;
        if self.bound(s).map(|x| x.owner) != Some(Owner::Other(other)) {
            self.others.exit(other);
        }
        Ok(())
    }

    /// A bind by a new process that exits right after.
    fn bind_as_short_lived(&mut self, s: usize) -> Result<(), TestCaseError> {
        let other = self.others.spawn();
        let pid = self.others.pid(other);
        self.bind(
            s,
            Owner::Other(other),
            &["bind", "-s", &id(s), "--owner-pid", &pid],
        )?;
        self.others.exit(other);
        Ok(())
    }

    /// A bind for an owner that has exited and been reaped is refused, and changes nothing.
    fn bind_as_reaped(&self, s: usize) -> Result<(), TestCaseError> {
        let fx = &self.fx;
        let iso = fx.isolation(&id(s));
        let existed = iso.exists();
        let records = listing(&fx.src.join(".git/a3s-iso/sessions"));
        let pid = reaped_pid();
        let (code, doc) = fx.json(&["bind", "-s", &id(s), "--owner-pid", &pid]);
        prop_assert_eq!(code, 2, "{}", doc);
        prop_assert_eq!(code_of(&doc), "usage");
        prop_assert_eq!(iso.exists(), existed);
        prop_assert_eq!(listing(&fx.src.join(".git/a3s-iso/sessions")), records);
        Ok(())
    }

    /// The other owner of session `s` (else of any session) exits and is reaped.
    fn owner_exits(&mut self, s: usize) {
        let other_of = |x: &Session| match x.owner {
            Owner::Other(i) if x.state == State::Bound && self.others.alive(x.owner) => Some(i),
            _ => None,
        };
        let owner = self
            .sessions
            .get(&s)
            .and_then(other_of)
            .or_else(|| self.sessions.values().find_map(other_of));
        if let Some(i) = owner {
            self.others.exit(i);
        }
    }

    /// A write into session `s`'s isolation, else into any bound session's.
    fn edit(&mut self, s: usize, file: usize, content: u8) {
        let fx = &self.fx;
        // Into session `s`, else into any bound one.
        let s = Some(s)
            .filter(|s| self.bound(*s).is_some())
            .or_else(|| (0..SESSIONS).find(|s| self.bound(*s).is_some()))
            .unwrap_or(s);
        if let Some(session) = self.sessions.get_mut(&s)
            && session.state == State::Bound
        {
            let iso = fx.isolation(&id(s));
            std::fs::write(iso.join(format!("f{file}.txt")), format!("{content}\n")).unwrap();
            session.edits.insert(file, content);
        }
    }

    /// A capture succeeds for a bound session only, and names why for any other.
    fn capture(&self, s: usize) -> Result<(), TestCaseError> {
        let fx = &self.fx;
        let (code, doc) = fx.json(&["capture", "-s", &id(s)]);
        match self.sessions.get(&s).map(|x| &x.state) {
            Some(State::Bound) => prop_assert_eq!(code, 0, "{}", doc),
            Some(State::Discarded) => {
                prop_assert_eq!(code_of(&doc), "change_set_unavailable", "{}", doc)
            }
            Some(State::Swept) | None => {
                prop_assert_eq!(code_of(&doc), "session_not_found", "{}", doc)
            }
        }
        Ok(())
    }

    /// A promote, against the model: a change set lands at most once, and an applied one
    /// brings the session's files; whether the source may have changed.
    fn promote(
        &mut self,
        s: usize,
        before: &BTreeMap<String, String>,
    ) -> Result<bool, TestCaseError> {
        let fx = &self.fx;
        let mut source_may_change = false;
        let (code, doc) = fx.json(&["promote", "-s", &id(s)]);
        let outcome = doc["outcome"].as_str().unwrap_or("error");
        match self.sessions.get(&s).map(|x| &x.state) {
            Some(State::Bound) => prop_assert!(
                ["applied", "idempotent", "conflict", "empty"].contains(&outcome),
                "{}",
                doc
            ),
            Some(State::Discarded) => {
                prop_assert_eq!(code_of(&doc), "change_set_unavailable", "{}", doc)
            }
            Some(State::Swept) | None => {
                prop_assert_eq!(code_of(&doc), "session_not_found", "{}", doc)
            }
        }
        match outcome {
            "applied" => {
                prop_assert_eq!(code, 0);
                let digest = doc["digest"].as_str().unwrap().to_string();
                prop_assert!(
                    self.applied.insert(digest),
                    "a change set landed twice: {}",
                    doc
                );
                prop_assert_ne!(checkout_listing(&fx.src), before.clone());
                for (file, content) in &self.bound(s).unwrap().edits {
                    let text =
                        std::fs::read_to_string(fx.src.join(format!("f{file}.txt"))).unwrap();
                    prop_assert_eq!(text, format!("{content}\n"));
                }
                // The user accepts the work, so the checkout is clean again.
                fx.commit_all(&format!("accept {}", id(s)));
                source_may_change = true;
            }
            "conflict" => prop_assert_eq!(code, 3),
            "idempotent" => {
                prop_assert_eq!(code, 0);
                prop_assert!(
                    self.applied.contains(doc["digest"].as_str().unwrap()),
                    "idempotent for a digest never applied: {}",
                    doc
                );
            }
            "empty" => prop_assert_eq!(code, 0),
            _ => prop_assert_eq!(code, 1),
        }
        Ok(source_may_change)
    }

    /// A discard removes the session's isolation; an unknown session is named.
    fn discard(&mut self, s: usize) -> Result<(), TestCaseError> {
        let fx = &self.fx;
        let (code, doc) = fx.json(&["discard", "-s", &id(s)]);
        match self.sessions.get_mut(&s) {
            Some(session) => {
                prop_assert_eq!(code, 0, "{}", doc);
                session.state = State::Discarded;
                session.edits.clear();
            }
            None => prop_assert_eq!(code_of(&doc), "session_not_found", "{}", doc),
        }
        prop_assert!(!fx.isolation(&id(s)).exists());
        Ok(())
    }

    /// `bind --resume` of a swept session brings its work back as it was.
    fn resume(&mut self, s: usize) -> Result<(), TestCaseError> {
        let fx = &self.fx;
        if self
            .sessions
            .get(&s)
            .is_some_and(|x| x.state == State::Swept)
        {
            let (code, doc) = fx.json(&["bind", "-s", &id(s), "--resume"]);
            prop_assert_eq!(code, 0, "{}", doc);
            self.reclaimed_by_a_bind_of(s);
            let session = self.sessions.get_mut(&s).unwrap();
            session.state = State::Bound;
            session.owner = Owner::Me;
            // The work comes back as it was when the sweep took it.
            self.check_isolation(s)?;
        }
        Ok(())
    }

    /// `list --all` names every session in its model state, with its owner's liveness.
    fn list(&self) -> Result<(), TestCaseError> {
        let fx = &self.fx;
        let (code, doc) = fx.json(&["list", "--all"]);
        prop_assert_eq!(code, 0, "{}", doc);
        let listed: BTreeMap<String, &Value> = doc["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| (x["session_id"].as_str().unwrap().to_string(), x))
            .collect();
        let known: BTreeSet<String> = self.sessions.keys().map(|s| id(*s)).collect();
        prop_assert_eq!(listed.keys().cloned().collect::<BTreeSet<_>>(), known);
        for (s, session) in &self.sessions {
            let entry = listed[&id(*s)];
            // A bound session whose every edit is what HEAD holds has landed (the user
            // committed its promote, and nothing since changed those files).
            let in_head = |(file, content): (&usize, &u8)| {
                let at = format!("HEAD:f{file}.txt");
                let shown = std::process::Command::new("git")
                    .args(["-C", fx.src.to_str().unwrap(), "show", &at])
                    .output()
                    .unwrap();
                shown.status.success() && shown.stdout == format!("{content}\n").as_bytes()
            };
            let landed = !session.edits.is_empty() && session.edits.iter().all(in_head);
            let state = match session.state {
                State::Bound if landed => "landed",
                State::Bound => "bound",
                State::Discarded => "discarded",
                State::Swept => "swept",
            };
            prop_assert_eq!(&entry["state"], state, "{}", entry);
            if session.state == State::Bound {
                let liveness = match self.others.alive(session.owner) {
                    true => "alive",
                    false => "dead",
                };
                prop_assert_eq!(&entry["owner"]["liveness"], liveness, "{}", entry);
            }
        }
        Ok(())
    }

    /// A sweep reclaims exactly the dead, keeping their work at `refs/a3s-iso/swept/<id>`.
    fn sweep(&mut self, dry_run: bool) -> Result<(), TestCaseError> {
        let fx = &self.fx;
        let mut args = vec!["sweep", "--grace", "0s"];
        if dry_run {
            args.push("--dry-run");
        }
        let (code, doc) = fx.json(&args);
        prop_assert_eq!(code, 0, "{}", doc);
        let reclaimed: BTreeSet<String> = doc["reclaimed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["session_id"].as_str().unwrap().to_string())
            .collect();
        // Exactly the dead: never a live session, and no dead one left behind.
        let dead = self.dead();
        prop_assert_eq!(&reclaimed, &dead, "{}", doc);
        for item in doc["reclaimed"].as_array().unwrap() {
            prop_assert_eq!(&item["reason"], "owner_dead", "{}", item);
        }
        for s in 0..SESSIONS {
            if !dry_run && dead.contains(&id(s)) {
                prop_assert!(!fx.isolation(&id(s)).exists());
                // Its work is still reachable at refs/a3s-iso/swept/<id>.
                let session = self.sessions.get_mut(&s).unwrap();
                session.state = State::Swept;
                let session = session.clone();
                for (file, content) in &session.edits {
                    let swept = format!("refs/a3s-iso/swept/{}:f{file}.txt", id(s));
                    prop_assert_eq!(
                        blob(fx, &swept),
                        Some(format!("{content}\n")),
                        "{} after {}",
                        swept,
                        doc
                    );
                }
            } else if self.bound(s).is_some() {
                self.check_isolation(s)?;
            }
        }
        Ok(())
    }

    fn step(&mut self, op: Op) -> Result<(), TestCaseError> {
        let fx = &self.fx;
        let before = checkout_listing(&fx.src);
        let mut source_may_change = false;
        match op {
            Op::Bind(s) => self.bind(s, Owner::Me, &["bind", "-s", &id(s)])?,
            Op::BindAsOther(s) => self.bind_as_other(s)?,
            Op::BindAsShortLived(s) => self.bind_as_short_lived(s)?,
            Op::BindAsReaped(s) => self.bind_as_reaped(s)?,
            Op::OwnerExits(s) => self.owner_exits(s),
            Op::Edit(s, file, content) => self.edit(s, file, content),
            Op::Capture(s) => self.capture(s)?,
            Op::PromoteWork(s) => {
                let with_work = |s: &usize| self.bound(*s).is_some_and(|x| !x.edits.is_empty());
                let s = Some(s)
                    .filter(with_work)
                    .or_else(|| (0..SESSIONS).find(with_work))
                    .unwrap_or(s);
                return self.step(Op::Promote(s));
            }
            Op::Promote(s) => source_may_change = self.promote(s, &before)?,
            Op::Discard(s) => self.discard(s)?,
            Op::Resume(s) => self.resume(s)?,
            Op::List => self.list()?,
            Op::Sweep { dry_run } => self.sweep(dry_run)?,
            Op::UserCommit(content) => {
                fx.write("user.txt", &format!("{content}\n"));
                fx.git(&fx.src, &["add", "-A"]);
                fx.git(&fx.src, &["commit", "-q", "--allow-empty", "-m", "user"]);
                source_may_change = true;
            }
        }
        if !source_may_change {
            // Only an applied promote (or the user) changes the source, byte for byte.
            prop_assert_eq!(checkout_listing(&self.fx.src), before);
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        // `A3S_ISO_STATE_MACHINE_CASES` runs more or fewer (scripts/test.sh: fewer on SHA-256).
        cases: crate::fixture::repetitions("A3S_ISO_STATE_MACHINE_CASES", 256) as u32,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_promises_hold_for_any_sequence(ops in proptest::collection::vec(op(), 2..14)) {
        let mut machine = Machine {
            fx: Fixture::new(),
            others: Others::default(),
            sessions: BTreeMap::new(),
            applied: BTreeSet::new(),
        };
        for op in ops {
            machine.step(op)?;
        }
    }
}
