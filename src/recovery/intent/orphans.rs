//! Git processes a crashed branch promote left running. They run in process groups of their
//! own (so that a Ctrl-C cannot cut them in half), out of reach of a kill of a3s-iso's group:
//! a `cherry-pick` may still be finishing. Each carries the promote's token in its environment,
//! and recovery waits for them.

use std::time::{Duration, Instant};

use crate::recovery::intent::stash::TOKEN_VAR;

/// The processes but this one whose environment (readable: ours) carries the token.
fn carrying(token: &str) -> Vec<u32> {
    let needle = format!("{TOKEN_VAR}={token}\0").into_bytes();
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.windows(needle.len()).any(|w| w == needle.as_slice()))
        })
        .collect()
}

/// Waits until no process carries the token, up to `patience`; returns those still running.
pub(crate) fn wait_for(token: &str, patience: Duration) -> Vec<u32> {
    let deadline = Instant::now() + patience;
    loop {
        let left = carrying(token);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
