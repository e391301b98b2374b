//! Whether a session's commits can land as the very commits `git cherry-pick --no-edit` of
//! each would make on your branch's tip, written in objects alone: only when nothing a pick
//! does differently applies. A pick skips an empty commit, drops a signature, keeps an
//! encoding, drops leading blank lines of a message, follows `commit.cleanup`, runs your
//! commit hooks, and copies the author line as it is where `commit-tree` would tidy it.

use std::path::Path;

use crate::base::error::Result;
use crate::git::Git;

/// The hooks a cherry-pick may run for each commit it makes.
const PICK_HOOKS: [&str; 4] = [
    "pre-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
];

/// Whether commits (`raw`, their trees filtered to `trees`) on a commit of `start_tree` land
/// as picked: none is empty there and each is plain ([`plain_commit`]).
pub(super) fn lands_as_picked(start_tree: &str, trees: &[String], raw: &[Vec<u8>]) -> bool {
    let mut before = start_tree;
    for (tree, raw) in trees.iter().zip(raw) {
        if tree == before || !plain_commit(raw) {
            return false;
        }
        before = tree;
    }
    true
}

/// Whether the repository at `source` makes a pick do more than copy: a `commit.cleanup`
/// setting, or a commit hook in place.
pub(super) fn picks_do_more_here(git: &Git, source: &Path) -> Result<bool> {
    // A pick re-encodes to `i18n.commitEncoding`, and cleans up as `commit.cleanup` says.
    let settings = git.config_matching(source, r"^(commit\.cleanup|i18n\.commitencoding)$")?;
    if settings.exit_code == Some(0) {
        return Ok(true);
    }
    let hooks: Vec<String> = PICK_HOOKS
        .iter()
        .map(|hook| format!("hooks/{hook}"))
        .collect();
    let paths = git.git_paths(source, &hooks)?;
    Ok(paths.iter().any(|path| path.exists()))
}

/// A commit object, in UTF-8 and without NUL, with only a tree, parents, an author and a
/// committer, an author line `commit-tree` writes back as it is, and a message whose first
/// line is not blank.
fn plain_commit(raw: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(raw) else {
        return false;
    };
    let Some((headers, message)) = text.split_once("\n\n") else {
        return false;
    };
    let known = ["tree ", "parent ", "author ", "committer "];
    // Split at `\n` alone: `lines()` would take off a `\r` a pick copies.
    let plain_headers = headers
        .split('\n')
        .all(|line| known.iter().any(|field| line.starts_with(field)));
    let author = headers
        .split('\n')
        .find_map(|line| line.strip_prefix("author "));
    let first = message.lines().next().unwrap_or_default();
    plain_headers
        && !text.contains('\0')
        && author.is_some_and(author_as_is)
        && !first.trim().is_empty()
}

/// Whether `NAME <EMAIL> SECONDS ZONE` is as git writes an identity given those parts: no
/// character git trims at either end of the name or email, none it drops inside, a date in
/// seconds without a leading zero, and a zone git keeps as it is.
fn author_as_is(line: &str) -> bool {
    let Some((name, rest)) = line.split_once(" <") else {
        return false;
    };
    let Some((email, date)) = rest.split_once("> ") else {
        return false;
    };
    let Some((seconds, zone)) = date.split_once(' ') else {
        return false;
    };
    // An identity that long cannot travel to `commit-tree` in its environment.
    line.len() <= MAX_IDENT
        && tidy(name)
        && tidy(email)
        && seconds_as_is(seconds)
        && zone_as_is(zone)
}

/// The longest author line copied by `commit-tree` rather than left to a pick.
const MAX_IDENT: usize = 4096;

/// Not empty, no character git trims at either end, and none it drops inside.
fn tidy(part: &str) -> bool {
    let crud = |c: char| c <= ' ' || ".,:;<>\"\\'".contains(c);
    let (Some(first), Some(last)) = (part.chars().next(), part.chars().last()) else {
        return false;
    };
    !crud(first) && !crud(last) && !part.contains(['<', '>', '\n', '\r'])
}

/// Seconds since the epoch as git writes them, up to the year 9999 (git refuses more).
fn seconds_as_is(seconds: &str) -> bool {
    seconds.len() <= 12
        && seconds.parse::<u64>().is_ok_and(|s| s <= 253_402_300_799)
        && seconds.bytes().all(|b| b.is_ascii_digit())
        && (seconds == "0" || !seconds.starts_with('0'))
}

/// `+HHMM` or `-HHMM` of a real offset; `-0000` git writes as `+0000`.
fn zone_as_is(zone: &str) -> bool {
    let bytes = zone.as_bytes();
    let digits = |range: std::ops::Range<usize>| {
        zone.get(range)
            .filter(|d| d.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|d| d.parse::<u32>().ok())
    };
    match (bytes.len(), bytes.first(), digits(1..3), digits(3..5)) {
        (5, Some(b'+' | b'-'), Some(hours), Some(minutes)) => {
            hours <= 14 && minutes < 60 && zone != "-0000"
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commit(author: &str, message: &str) -> Vec<u8> {
        format!("tree 1\nparent 2\nauthor {author}\ncommitter C <c@x> 1 +0000\n\n{message}")
            .into_bytes()
    }

    #[test]
    fn only_what_commit_tree_writes_back_as_it_is_lands_as_picked() {
        let fine = "Agent <a@x> 1700000000 +0100";
        assert!(plain_commit(&commit(fine, "subject\n\nbody\n")));
        assert!(plain_commit(&commit("Ada Lovelace <a@x> 0 -0330", "s")));
        for author in [
            "\"Agent\" <a@x> 1700000000 +0000",
            "Agent, <a@x> 1700000000 +0000",
            " Agent <a@x> 1700000000 +0000",
            "Agent < a@x> 1700000000 +0000",
            "Agent <a@x>  1700000000 +0000",
            "Agent <a@x> 01700000000 +0000",
            "Agent <a@x> 1700000000 -0000",
            "Agent <a@x> 1700000000 +2500",
            "Agent <a@x> 1700000000",
            " <a@x> 1700000000 +0000",
            "Agent <> 1700000000 +0000",
            "Agent <a@x> 1700000000 +0000\r",
            "Agent\r <a@x> 1700000000 +0000",
            "Agent <a@x> 18446744073709551615 +0000",
        ] {
            assert!(!plain_commit(&commit(author, "subject\n")), "{author}");
        }
        let long = format!("{} <a@x> 1 +0000", "A".repeat(MAX_IDENT));
        assert!(!plain_commit(&commit(&long, "s\n")));
        for message in [
            "\nsubject after a blank line\n",
            "  \nsubject\n",
            "",
            "a\0b\n",
        ] {
            assert!(!plain_commit(&commit(fine, message)), "{message:?}");
        }
        let signed = format!(
            "tree 1\nauthor {fine}\ncommitter {fine}\ngpgsig -----BEGIN-----\n sig\n\nsubject\n"
        );
        assert!(!plain_commit(signed.as_bytes()));
        let encoded = format!("tree 1\nauthor {fine}\ncommitter {fine}\nencoding latin1\n\ns\n");
        assert!(!plain_commit(encoded.as_bytes()));
    }

    #[test]
    fn an_empty_commit_leaves_the_chain_to_the_pick() {
        let raw = vec![commit("A <a@x> 1 +0000", "s\n"); 2];
        let trees = ["t1".to_string(), "t2".to_string()];
        assert!(lands_as_picked("t0", &trees, &raw));
        assert!(!lands_as_picked("t1", &trees, &raw));
        assert!(!lands_as_picked("t0", &["t1".into(), "t1".into()], &raw));
    }
}
