//! Random sequences of bind, edit, capture, promote, discard, sweep and user commits, checked
//! against the promises: a change set lands at most once, a refused or empty promote leaves the
//! source byte-identical, nothing but an applied promote changes the source, and a sweep never
//! reclaims a live session.

use std::collections::{BTreeSet, HashMap};

use proptest::prelude::*;

use crate::fixture::{Fixture, checkout_listing};

#[derive(Debug, Clone)]
enum Op {
    Bind(usize),
    Edit(usize, usize, u8),
    Capture(usize),
    Promote(usize),
    Discard(usize),
    Sweep,
    UserCommit(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..3usize).prop_map(Op::Bind),
        (0..3usize, 0..3usize, any::<u8>()).prop_map(|(s, f, c)| Op::Edit(s, f, c)),
        (0..3usize).prop_map(Op::Capture),
        (0..3usize).prop_map(Op::Promote),
        (0..3usize).prop_map(Op::Discard),
        Just(Op::Sweep),
        any::<u8>().prop_map(Op::UserCommit),
    ]
}

fn id(session: usize) -> String {
    format!("sm{session}")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_promises_hold_for_any_sequence(ops in proptest::collection::vec(op(), 1..10)) {
        let fx = Fixture::new();
        let mut applied: BTreeSet<String> = BTreeSet::new();
        let mut bound: HashMap<usize, bool> = HashMap::new();
        for op in ops {
            let before = checkout_listing(&fx.src);
            match op {
                Op::Bind(s) => {
                    let (code, doc) = fx.json(&["bind", "-s", &id(s)]);
                    prop_assert!(code == 0 || doc["error"]["code"] == "session_exists", "{doc}");
                    if code == 0 {
                        bound.insert(s, true);
                    }
                    prop_assert_eq!(checkout_listing(&fx.src), before);
                }
                Op::Edit(s, file, content) => {
                    if bound.get(&s) == Some(&true) {
                        let iso = fx.isolation(&id(s));
                        std::fs::write(iso.join(format!("f{file}.txt")), format!("{content}\n")).unwrap();
                    }
                }
                Op::Capture(s) => {
                    let (code, doc) = fx.json(&["capture", "-s", &id(s)]);
                    prop_assert!(code == 0 || ["session_not_found", "change_set_unavailable"].contains(&doc["error"]["code"].as_str().unwrap_or("")), "{doc}");
                    prop_assert_eq!(checkout_listing(&fx.src), before);
                }
                Op::Promote(s) => {
                    let (code, doc) = fx.json(&["promote", "-s", &id(s)]);
                    let outcome = doc["outcome"].as_str().unwrap_or("error");
                    match outcome {
                        "applied" => {
                            prop_assert_eq!(code, 0);
                            let digest = doc["digest"].as_str().unwrap().to_string();
                            prop_assert!(applied.insert(digest), "a change set landed twice: {}", doc);
                            // The user accepts the work, so the checkout is clean again.
                            fx.commit_all(&format!("accept {}", id(s)));
                        }
                        "conflict" => {
                            prop_assert_eq!(code, 3);
                            prop_assert_eq!(checkout_listing(&fx.src), before);
                        }
                        "idempotent" | "empty" => {
                            prop_assert_eq!(code, 0);
                            prop_assert_eq!(checkout_listing(&fx.src), before);
                        }
                        _ => {
                            prop_assert!(["session_not_found", "change_set_unavailable"].contains(&doc["error"]["code"].as_str().unwrap_or("")), "{doc}");
                            prop_assert_eq!(checkout_listing(&fx.src), before);
                        }
                    }
                    if outcome == "idempotent" {
                        prop_assert!(applied.contains(doc["digest"].as_str().unwrap()), "idempotent for a digest never applied: {}", doc);
                    }
                }
                Op::Discard(s) => {
                    let (code, _) = fx.json(&["discard", "-s", &id(s)]);
                    if code == 0 {
                        bound.insert(s, false);
                    }
                    prop_assert!(!fx.isolation(&id(s)).exists() || bound.get(&s) == Some(&true));
                    prop_assert_eq!(checkout_listing(&fx.src), before);
                }
                Op::Sweep => {
                    let (code, doc) = fx.json(&["sweep", "--grace", "0s"]);
                    prop_assert_eq!(code, 0);
                    // Every session here is owned by this live test process.
                    prop_assert!(doc["reclaimed"].as_array().unwrap().is_empty(), "{doc}");
                    for (s, is_bound) in &bound {
                        prop_assert_eq!(fx.isolation(&id(*s)).exists(), *is_bound);
                    }
                    prop_assert_eq!(checkout_listing(&fx.src), before);
                }
                Op::UserCommit(content) => {
                    fx.write("user.txt", &format!("{content}\n"));
                    fx.git(&fx.src, &["add", "-A"]);
                    fx.git(&fx.src, &["commit", "-q", "--allow-empty", "-m", "user"]);
                }
            }
        }
    }
}
