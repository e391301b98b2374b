//! `list` and `show` as people and scripts read them: the SOURCE column of `list --all`,
//! discarded sessions hidden unless asked for, and `-z` records that give paths as their bytes.

use std::path::Path;

use crate::fixture::{Fixture, human};

#[test]
fn list_all_has_a_source_column() {
    let fx = Fixture::new();
    fx.bind("s1");
    let (code, stdout, _) = human(&fx, &["list", "--all"]);
    assert_eq!(code, 0);
    let mut lines = stdout.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header[..3], ["SESSION", "SOURCE", "STATE"], "{stdout}");
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    let source = std::fs::canonicalize(&fx.src).unwrap();
    assert_eq!(row[0], "s1");
    assert_eq!(Path::new(row[1]), source, "{stdout}");
    assert_eq!(row[2], "bound");
    // Without --all there is one source, and no column for it.
    let (_, stdout, _) = human(&fx, &["list"]);
    assert!(!stdout.contains("SOURCE"), "{stdout}");
}

#[test]
fn list_hides_discarded_sessions_unless_all() {
    let fx = Fixture::new();
    fx.bind("kept");
    fx.bind("gone");
    fx.json(&["discard", "-s", "gone"]);
    let (_, list) = fx.json(&["list"]);
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["kept"], "{list}");
    assert_eq!(list["hidden_discarded"], 1);
    let (_, all) = fx.json(&["list", "--all"]);
    let gone = all["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["session_id"] == "gone")
        .unwrap_or_else(|| panic!("{all}"));
    assert_eq!(gone["state"], "discarded");
    let out = fx.cmd().args(["list"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 discarded session not shown"), "{stderr}");
}

/// `list -z` and `show -z` give a path whose name holds a newline, a tab and bytes that are
/// not UTF-8 exactly as its bytes, one NUL-ended record each.
#[test]
fn list_and_show_z_give_paths_as_their_bytes() {
    use std::os::unix::ffi::OsStrExt;
    let fx = Fixture::new();
    let base: &[u8] = b"odd\nname\t\xff";
    let dir = fx.root.join(std::ffi::OsStr::from_bytes(base));
    std::fs::create_dir(&dir).unwrap();
    let out = fx
        .cmd()
        .args(["-q", "bind", "-s", "z", "--base-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = fx.cmd().args(["path", "-s", "z"]).output().unwrap();
    let bytes = out.stdout.strip_suffix(b"\n").unwrap();
    let tree = std::path::PathBuf::from(std::ffi::OsStr::from_bytes(bytes));
    assert!(
        tree.as_os_str()
            .as_bytes()
            .starts_with(dir.as_os_str().as_bytes())
    );
    assert!(tree.is_dir());

    let out = fx.cmd().args(["list", "-z"]).output().unwrap();
    assert!(out.status.success());
    let records: Vec<&[u8]> = out.stdout.split(|b| *b == 0).collect();
    assert_eq!(
        records.len(),
        2,
        "one record, then the end: {:?}",
        out.stdout
    );
    assert_eq!(records[1], b"");
    let fields: Vec<&[u8]> = records[0].splitn(7, |b| *b == b'\t').collect();
    assert_eq!(fields[0], b"z");
    assert_eq!(fields[1], b"bound");
    assert_eq!(fields[6], tree.as_os_str().as_bytes());

    let out = fx.cmd().args(["show", "-s", "z", "-z"]).output().unwrap();
    assert!(out.status.success());
    let isolation: Vec<u8> = [b"isolation\t", tree.as_os_str().as_bytes(), b"\0"].concat();
    assert!(
        out.stdout
            .windows(isolation.len())
            .any(|w| w == isolation.as_slice()),
        "{:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(out.stdout.starts_with(b"session\tz\0"));
}

/// `list`'s HEAD column and `head_moved`, and `show`'s: one answer each time. HEAD where a
/// branch-mode step of the session left it has not moved (a promote now is not refused); a
/// commit of the user's on top has.
#[test]
fn list_and_show_agree_on_whether_head_moved() {
    let fx = Fixture::new();
    fx.bind("b");
    let iso = fx.isolation("b");
    std::fs::write(iso.join("a.txt"), "a\n").unwrap();
    crate::fixture::agent_commit(&fx, &iso, "agent: a");
    let (code, doc) = fx.json(&["promote", "-s", "b", "--mode", "branch"]);
    assert_eq!(
        (code, doc["outcome"].as_str()),
        (0, Some("applied")),
        "{doc}"
    );
    let answers = |fx: &Fixture| {
        let (_, listed) = fx.json(&["list"]);
        let (_, shown) = fx.json(&["show", "-s", "b"]);
        let (_, table, _) = human(fx, &["list"]);
        let column = table.lines().nth(1).unwrap().split_whitespace().nth(3);
        let (_, card, _) = human(fx, &["show", "-s", "b"]);
        let line = card.lines().find(|l| l.contains("head moved")).unwrap();
        (
            listed["sessions"][0]["head_moved"].clone(),
            shown["head_moved"].clone(),
            column.unwrap().to_string(),
            line.split_whitespace().last().unwrap().to_string(),
        )
    };
    let same = (false.into(), false.into(), "same".into(), "no".into());
    assert_eq!(answers(&fx), same);
    fx.write("user.txt", "mine\n");
    fx.commit_all("the user's commit");
    let moved = (true.into(), true.into(), "moved".into(), "yes".into());
    assert_eq!(answers(&fx), moved);
}
