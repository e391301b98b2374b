//! Reading the text of a patch a3s-iso made (`--no-renames --full-index --binary`): the path
//! of each `diff --git` section, and each section's images from its extended header.

use std::io::BufRead;

/// One path's images as a section's header gives them: `(mode, object id)` before and after
/// (`None`: the path is created, or deleted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SectionImages {
    pub(crate) path: Vec<u8>,
    pub(crate) old: Option<(String, String)>,
    pub(crate) new: Option<(String, String)>,
}

/// What a section's extended header said so far.
#[derive(Default)]
struct Header {
    old_mode: Option<String>,
    new_mode: Option<String>,
    ids: Option<(String, String)>,
    created: bool,
    deleted: bool,
    /// A line this reading does not know (a rename, a copy, a dissimilarity).
    unknown: bool,
}

/// Every section's images, read line by line (a large patch is never held in memory). `None`
/// when any section does not say both images in full: a mode-only change has no `index` line,
/// a path whose type changes is two sections. Then the trees must be asked.
pub(crate) fn section_images(patch: impl BufRead) -> std::io::Result<Option<Vec<SectionImages>>> {
    let mut sections = Vec::new();
    let mut current: Option<(Vec<u8>, Header)> = None;
    let mut in_body = false;
    for line in patch.split(b'\n') {
        let line = line?;
        if let Some(rest) = line.strip_prefix(b"diff --git ") {
            if let Some(done) = current.take() {
                sections.push(done);
            }
            current = Some((header_path(rest), Header::default()));
            in_body = false;
            continue;
        }
        let Some((_, header)) = current.as_mut().filter(|_| !in_body) else {
            continue;
        };
        in_body = header.read(&line);
    }
    sections.extend(current);
    let images = sections
        .into_iter()
        .map(|(path, header)| header.images(path));
    let Some(images) = images.collect::<Option<Vec<_>>>() else {
        return Ok(None);
    };
    let mut paths: Vec<&[u8]> = images.iter().map(|s| s.path.as_slice()).collect();
    paths.sort_unstable();
    if paths.windows(2).any(|pair| pair[0] == pair[1]) {
        return Ok(None);
    }
    Ok(Some(images))
}

impl Header {
    /// Takes one line of the extended header; `true` once the section's body begins.
    fn read(&mut self, line: &[u8]) -> bool {
        let text = String::from_utf8_lossy(line);
        if ["--- ", "+++ ", "@@ ", "Binary files "]
            .iter()
            .any(|p| text.starts_with(p))
            || text == "GIT binary patch"
        {
            return true;
        }
        if let Some(mode) = text.strip_prefix("old mode ") {
            self.old_mode = Some(mode.into());
        } else if let Some(mode) = text.strip_prefix("new mode ") {
            self.new_mode = Some(mode.into());
        } else if let Some(mode) = text.strip_prefix("deleted file mode ") {
            self.deleted = true;
            self.old_mode = Some(mode.into());
        } else if let Some(mode) = text.strip_prefix("new file mode ") {
            self.created = true;
            self.new_mode = Some(mode.into());
        } else if let Some(rest) = text.strip_prefix("index ") {
            let (ids, mode) = rest.split_once(' ').unwrap_or((rest, ""));
            if !mode.is_empty() {
                self.old_mode = Some(mode.into());
                self.new_mode = Some(mode.into());
            }
            self.ids = ids
                .split_once("..")
                .map(|(old, new)| (old.to_string(), new.to_string()));
        } else {
            self.unknown = true;
        }
        false
    }

    /// Both images, when the header said everything about them.
    fn images(self, path: Vec<u8>) -> Option<SectionImages> {
        let (old_id, new_id) = self.ids?;
        let full = |id: &str| {
            matches!(id.len(), 40 | 64)
                && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        };
        if self.unknown || !full(&old_id) || old_id.len() != new_id.len() || !full(&new_id) {
            return None;
        }
        let old = match self.created {
            true => None,
            false => Some((self.old_mode?, old_id)),
        };
        let new = match self.deleted {
            true => None,
            false => Some((self.new_mode?, new_id)),
        };
        Some(SectionImages { path, old, new })
    }
}

/// The path of a `diff --git a/P b/P` header (`--no-renames`: both sides name it), or of
/// `"a/P" "b/P"` when git quoted it.
pub(crate) fn header_path(header: &[u8]) -> Vec<u8> {
    if header.first() == Some(&b'"') {
        let name = unquote(&header[1..]);
        return name.strip_prefix(b"a/").unwrap_or(&name).to_vec();
    }
    // `a/` + P + ` b/` + P: both halves are the same length.
    let half = header.len().saturating_sub(5) / 2;
    match header.get(2..2 + half) {
        Some(path) if header.len() == 2 * half + 5 => path.to_vec(),
        _ => header.strip_prefix(b"a/").unwrap_or(header).to_vec(),
    }
}

/// A C-quoted name as git writes it (`quote_c_style`), after its opening quote and up to its
/// closing one.
pub(crate) fn unquote(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() && text[i] != b'"' {
        if text[i] != b'\\' || i + 1 >= text.len() {
            out.push(text[i]);
            i += 1;
            continue;
        }
        let next = text[i + 1];
        let octal = text
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        if let Some(digits) = octal {
            out.push(
                digits
                    .iter()
                    .fold(0u8, |n, d| n.wrapping_mul(8) + (d - b'0')),
            );
            i += 4;
            continue;
        }
        out.push(match next {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'a' => 7,
            b'b' => 8,
            b'f' => 12,
            b'v' => 11,
            other => other,
        });
        i += 2;
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::model::patch_text::*;

    fn id(c: char) -> String {
        c.to_string().repeat(40)
    }

    #[test]
    fn every_kind_of_section_gives_both_images() {
        let (a, b, z) = (id('a'), id('b'), id('0'));
        let patch = format!(
            "diff --git a/m b/m\nindex {a}..{b} 100644\n--- a/m\n+++ b/m\n@@ -1 +1 @@\n-x\n+diff --git a/q b/q\n\
             diff --git \"a/t\\tn\" \"b/t\\tn\"\nnew file mode 100755\nindex {z}..{b}\nGIT binary patch\nliteral 1\nIcmZpc0001D2LJ#7\n\n\
             diff --git a/d b/d\ndeleted file mode 120000\nindex {a}..{z}\n--- a/d\n+++ /dev/null\n\
             diff --git a/x y b/x y\nold mode 100644\nnew mode 100755\nindex {a}..{b}\n"
        );
        let found = section_images(patch.as_bytes()).unwrap().unwrap();
        let image = |m: &str, o: &str| Some((m.to_string(), o.to_string()));
        assert_eq!(
            found,
            vec![
                SectionImages {
                    path: b"m".to_vec(),
                    old: image("100644", &a),
                    new: image("100644", &b)
                },
                SectionImages {
                    path: b"t\tn".to_vec(),
                    old: None,
                    new: image("100755", &b)
                },
                SectionImages {
                    path: b"d".to_vec(),
                    old: image("120000", &a),
                    new: None
                },
                SectionImages {
                    path: b"x y".to_vec(),
                    old: image("100644", &a),
                    new: image("100755", &b)
                },
            ]
        );
    }

    #[test]
    fn a_section_that_does_not_say_both_images_gives_none() {
        let (a, b) = (id('a'), id('b'));
        let mode_only = "diff --git a/m b/m\nold mode 100644\nnew mode 100755\n";
        let type_change = format!(
            "diff --git a/l b/l\ndeleted file mode 100644\nindex {a}..{}\n--- a/l\n+++ /dev/null\ndiff --git a/l b/l\nnew file mode 120000\nindex {}..{b}\n",
            id('0'),
            id('0')
        );
        let renamed = format!("diff --git a/m b/m\nsimilarity index 90%\nindex {a}..{b} 100644\n");
        let abbreviated = "diff --git a/m b/m\nindex abc..def 100644\n";
        for patch in [mode_only, &type_change, &renamed, abbreviated] {
            assert_eq!(section_images(patch.as_bytes()).unwrap(), None, "{patch}");
        }
        assert_eq!(section_images(&b""[..]).unwrap(), Some(Vec::new()));
    }

    /// git in `dir`, isolated from the machine's configuration.
    fn git(dir: &std::path::Path, args: &[&str], input: Option<&[u8]>) -> Vec<u8> {
        git_on(dir, None, args, input)
    }

    /// [`git`] with `GIT_INDEX_FILE` at `index` when one is given.
    fn git_on(
        dir: &std::path::Path,
        index: Option<&std::path::Path>,
        args: &[&str],
        input: Option<&[u8]>,
    ) -> Vec<u8> {
        let mut cmd = crate::git::testing::isolated(dir);
        if let Some(index) = index {
            cmd.env("GIT_INDEX_FILE", index);
        }
        crate::git::testing::output(cmd, args, input.unwrap_or_default())
    }

    /// A tree of `(mode, path, content)` entries, made with `mktree` (one level at a time).
    fn tree(dir: &std::path::Path, entries: &[(&str, &[u8], &[u8])]) -> String {
        let mut index_info = Vec::new();
        for (mode, path, content) in entries {
            let oid = match *mode {
                "160000" => String::from_utf8(content.to_vec()).unwrap(),
                _ => {
                    let out = git(dir, &["hash-object", "-w", "--stdin"], Some(content));
                    String::from_utf8(out).unwrap().trim().to_string()
                }
            };
            index_info.extend_from_slice(format!("{mode} {oid}\t").as_bytes());
            index_info.extend_from_slice(path);
            index_info.push(0);
        }
        let index = dir.join(".git/test-index");
        let _ = std::fs::remove_file(&index);
        // Each call asserts that git succeeded.
        git_on(
            dir,
            Some(&index),
            &["update-index", "-z", "--index-info"],
            Some(&index_info),
        );
        let written = git_on(dir, Some(&index), &["write-tree"], None);
        String::from_utf8(written).unwrap().trim().to_string()
    }

    /// What `diff-tree` says of every path that differs, as `section_images` gives it.
    fn tree_diff(dir: &std::path::Path, a: &str, b: &str) -> Vec<SectionImages> {
        let raw = git(
            dir,
            &[
                "diff-tree",
                "-r",
                "-z",
                "--no-renames",
                "--full-index",
                a,
                b,
            ],
            None,
        );
        let mut fields = raw.split(|b| *b == 0).filter(|f| !f.is_empty());
        let mut out = Vec::new();
        while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
            let meta = String::from_utf8_lossy(meta);
            let w: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
            let side = |mode: &str, oid: &str| {
                (mode != "000000").then(|| (mode.to_string(), oid.to_string()))
            };
            out.push(SectionImages {
                path: path.to_vec(),
                old: side(w[0], w[2]),
                new: side(w[1], w[3]),
            });
        }
        out
    }

    fn patch(dir: &std::path::Path, a: &str, b: &str) -> Vec<u8> {
        let mut args: Vec<&str> = crate::git::diff::PATCH_CONFIG.to_vec();
        args.push("diff");
        args.extend_from_slice(crate::git::diff::PATCH_FLAGS);
        args.extend_from_slice(&[a, b, "--"]);
        git(dir, &args, None)
    }

    #[test]
    fn the_headers_of_a_patch_git_made_say_what_diff_tree_says() {
        for format in ["sha1", "sha256"] {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path();
            git(
                dir,
                &["init", "-q", &format!("--object-format={format}")],
                None,
            );
            let commit = |c: char| c.to_string().repeat(if format == "sha1" { 40 } else { 64 });
            let (sub_a, sub_b) = (commit('1'), commit('2'));
            let binary: Vec<u8> = (0..=255u8).cycle().take(3000).collect();
            let mut changed_binary = binary.clone();
            changed_binary[1000] ^= 0xff;
            let before: Vec<(&str, &[u8], &[u8])> = vec![
                ("100644", b"kept", b"same\n"),
                ("100644", b"text", b"one\ntwo\n"),
                ("100644", b"bin", &binary),
                ("100644", b"gone", b"bye\n"),
                ("100644", b"exec", b"#!/bin/sh\n"),
                ("120000", b"link", b"kept"),
                ("100644", b"with space", b"a\n"),
                ("100644", b"quo\"te\ttab\nline", b"q\n"),
                ("100644", b"caf\xc3\xa9", b"utf-8\n"),
                ("100644", b"raw\xff\xfe", b"not utf-8\n"),
                ("160000", b"sub", sub_a.as_bytes()),
                ("100644", b"empty-then-full", b""),
                ("100644", b"no-newline", b"end"),
            ];
            let after: Vec<(&str, &[u8], &[u8])> = vec![
                ("100644", b"kept", b"same\n"),
                (
                    "100644",
                    b"text",
                    b"one\n+diff --git a/x b/x\ndiff --git a/y b/y\nindex 1..2 100644\ntwo\n",
                ),
                ("100644", b"bin", &changed_binary),
                ("100755", b"exec", b"#!/bin/sh\nexit 0\n"),
                ("120000", b"link", b"text"),
                ("100644", b"with space", b"b\n"),
                ("100644", b"quo\"te\ttab\nline", b"Q\n"),
                ("100644", b"caf\xc3\xa9", b"UTF-8\n"),
                ("100644", b"raw\xff\xfe", b"still not utf-8\n"),
                ("160000", b"sub", sub_b.as_bytes()),
                ("100644", b"empty-then-full", b"full\n"),
                ("100644", b"no-newline", b"end, still"),
                ("100644", b"new/deep/file", b"new\n"),
                ("100755", b"new-exec", b""),
                ("120000", b"new-link", b"../elsewhere"),
                ("160000", b"new-sub", sub_a.as_bytes()),
            ];
            let (a, b) = (tree(dir, &before), tree(dir, &after));
            let parsed = section_images(&patch(dir, &a, &b)[..]).unwrap();
            assert_eq!(parsed, Some(tree_diff(dir, &a, &b)), "{format}");
            assert_eq!(parsed.unwrap().len(), 16, "{format}");
            // The other way round: every creation a deletion.
            let parsed = section_images(&patch(dir, &b, &a)[..]).unwrap();
            assert_eq!(parsed, Some(tree_diff(dir, &b, &a)), "{format}");
            // A mode-only change and a change of type do not say both images: the trees must
            // be asked.
            let mode_only = tree(dir, &[("100755", b"kept", b"same\n")]);
            let kept = tree(dir, &[("100644", b"kept", b"same\n")]);
            assert_eq!(
                section_images(&patch(dir, &kept, &mode_only)[..]).unwrap(),
                None
            );
            let retyped = tree(dir, &[("120000", b"kept", b"same\n")]);
            assert_eq!(
                section_images(&patch(dir, &kept, &retyped)[..]).unwrap(),
                None
            );
        }
    }
}
