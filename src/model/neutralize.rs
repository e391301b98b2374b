//! After a run, nothing the session wrote may make a git command that *you* run in its
//! isolation execute code. Your `git status` there reads the isolation's admin dir
//! (`config.worktree`, when the repository sets `extensions.worktreeConfig`) and recurses into
//! every submodule and embedded repository, reading their `config` and running their hooks on
//! `commit`: all of it the session's to write. So, outside the sandbox, once the run is over:
//!
//! - each of those config files keeps only settings that run nothing ([`INERT`]): no
//!   `core.fsmonitor`, `core.hooksPath`, `core.sshCommand`, `core.pager`, `core.editor`,
//!   filters, diff and merge drivers, `include*`, aliases, credential helpers;
//! - hooks lose their execute bits;
//! - a `commondir` (which would point git at another repository's config) goes;
//!
//! and `run` warns, naming the repository and what it took away. Files are reached without
//! following a symbolic link (a link is never written through; a config or hooks directory
//! that is a link is removed, the link only).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::base::paths::RepoPath;
use crate::base::warning::{RunWarning, Warning};
use crate::git::Git;

/// Settings that choose nothing to run, by `section.key` (lower case, any subsection).
const INERT: &[&str] = &[
    "core.repositoryformatversion",
    "core.bare",
    "core.worktree",
    "core.filemode",
    "core.symlinks",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.logallrefupdates",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
    "core.quotepath",
    "extensions.objectformat",
    "extensions.compatobjectformat",
    "extensions.refstorage",
    "extensions.worktreeconfig",
    "extensions.preciousobjects",
    "extensions.partialclone",
    "remote.url",
    "remote.fetch",
    "branch.remote",
    "branch.merge",
    "submodule.url",
    "submodule.active",
    "user.name",
    "user.email",
    "index.version",
];

/// `section.key` of a config key (`remote.origin.url` → `remote.url`), lower case.
fn class_of(key: &str) -> String {
    let lower = key.to_ascii_lowercase();
    match (lower.split_once('.'), lower.rsplit_once('.')) {
        (Some((section, _)), Some((_, name))) => format!("{section}.{name}"),
        _ => lower,
    }
}

/// Whether a path is a real directory (not a link to one).
fn real_dir(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// The git dirs of an isolation that a session could have written and your git would read:
/// each nested repository's (`<path>/.git`, a directory, or a `gitdir:` file naming one inside
/// the isolation or its admin dir) and every submodule's under `<admin>/modules/`.
pub(crate) fn git_dirs(tree: &Path, admin: &Path, nested: &[RepoPath]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for path in nested {
        let top = path.under(tree);
        let dot_git = top.join(".git");
        match fs::symlink_metadata(&dot_git) {
            Ok(m) if m.is_dir() => dirs.push(dot_git),
            Ok(m) if m.is_file() => {
                if let Some(target) = gitdir_of(&dot_git, &top)
                    && (target.starts_with(tree) || target.starts_with(admin))
                    && real_dir(&target)
                {
                    dirs.push(target);
                }
            }
            _ => {}
        }
    }
    let mut todo = vec![(admin.join("modules"), 0)];
    while let Some((dir, depth)) = todo.pop() {
        if !real_dir(&dir) {
            continue;
        }
        for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if fs::symlink_metadata(path.join("HEAD")).is_ok() {
                todo.push((path.join("modules"), depth + 1));
                dirs.push(path);
            } else if depth < 8 {
                todo.push((path, depth + 1));
            }
        }
    }
    // What the session wrote can lead out of its isolation (a link on the way to a nested
    // repository or to the git dir its `.git` file names): only a git dir that really lies in
    // the isolation or its admin dir is touched, never another repository's.
    let within: Vec<PathBuf> = [tree, admin]
        .iter()
        .filter_map(|p| fs::canonicalize(p).ok())
        .collect();
    let mut dirs: Vec<PathBuf> = dirs
        .into_iter()
        .filter_map(|d| fs::canonicalize(d).ok())
        .filter(|d| within.iter().any(|w| d.starts_with(w)))
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// The directory a `.git` file names (`gitdir: X`, relative to `top`), lexically resolved.
fn gitdir_of(file: &Path, top: &Path) -> Option<PathBuf> {
    let text = fs::read(file).ok()?;
    let text = String::from_utf8(text).ok()?;
    let named = text.trim_end().strip_prefix("gitdir: ")?;
    let mut out = PathBuf::new();
    for part in top.join(named).components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    Some(out)
}

/// Neutralises the session-writable git configuration of one isolation after a run: its admin
/// dir's `config.worktree` and every git dir of [`git_dirs`]. `trusted` is a directory git may
/// run in (the source's common dir). Returns one warning per repository changed.
pub(crate) fn after_run(
    git: &Git,
    trusted: &Path,
    admin: &Path,
    git_dirs: &[PathBuf],
) -> Vec<Warning> {
    let mut warnings = Vec::new();
    let mut note = |what: &Path, took: Vec<String>| {
        if !took.is_empty() {
            let place = what.to_path_buf();
            warnings.push(RunWarning::GitCodeTakenAway { place, took }.into());
        }
    };
    note(
        admin,
        reduce_config(git, trusted, &admin.join("config.worktree")),
    );
    for dir in git_dirs {
        let mut took = reduce_config(git, trusted, &dir.join("config"));
        took.extend(reduce_config(git, trusted, &dir.join("config.worktree")));
        took.extend(disarm_hooks(&dir.join("hooks")));
        took.extend(drop_commondir(dir));
        note(dir, took);
    }
    warnings
}

/// Neutralises the admin dir's layer `upper` before its files move down into `admin`, where
/// your git may read them the moment they are there (and for good when `run` dies midway):
/// its `config.worktree`, and the `config`, `config.worktree` and hooks of every directory
/// under its `modules/` (a submodule's git dir, whole or only what the command changed of
/// it). Returns one warning per git dir changed, named as it is in `admin`.
pub(crate) fn layer_before_move_down(
    git: &Git,
    trusted: &Path,
    upper: &Path,
    admin: &Path,
) -> Vec<Warning> {
    let named = |dir: &Path| admin.join(dir.strip_prefix(upper).unwrap_or(dir));
    let mut warnings = Vec::new();
    let mut note = |dir: &Path, took: Vec<String>| {
        if !took.is_empty() {
            let place = named(dir);
            warnings.push(RunWarning::GitCodeTakenAway { place, took }.into());
        }
    };
    // A whiteout (a character device) deletes what is below: it stays as it is.
    let whiteout = |p: &Path| {
        use std::os::unix::fs::FileTypeExt;
        fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_char_device())
    };
    let reduce = |file: PathBuf| match whiteout(&file) {
        true => Vec::new(),
        false => reduce_config(git, trusted, &file),
    };
    note(upper, reduce(upper.join("config.worktree")));
    let mut todo = vec![(upper.join("modules"), 0)];
    while let Some((dir, depth)) = todo.pop() {
        if !real_dir(&dir) || depth > 16 {
            continue;
        }
        let mut took = reduce(dir.join("config"));
        took.extend(reduce(dir.join("config.worktree")));
        if !whiteout(&dir.join("hooks")) {
            took.extend(disarm_hooks(&dir.join("hooks")));
        }
        if !whiteout(&dir.join("commondir")) {
            took.extend(drop_commondir(&dir));
        }
        note(&dir, took);
        // A git dir's own content holds no git dir (its refs may be called `config`).
        const INSIDE: [&str; 6] = ["hooks", "refs", "logs", "objects", "info", "worktrees"];
        for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
            let inside = INSIDE.iter().any(|n| entry.file_name() == *n);
            if entry.file_type().is_ok_and(|t| t.is_dir()) && !inside {
                todo.push((entry.path(), depth + 1));
            }
        }
    }
    warnings
}

/// Removes a `commondir` from a repository's own git dir (a submodule's or a nested
/// repository's): git writes one only in a linked worktree's admin dir, and one planted there
/// would make your git read the config (and hooks) of a directory the session chose. A link
/// there is removed, never followed.
fn drop_commondir(dir: &Path) -> Vec<String> {
    let file = dir.join("commondir");
    match fs::symlink_metadata(&file) {
        Ok(meta) => {
            let _ = remove_entry(&file, &meta);
            vec!["commondir".into()]
        }
        Err(_) => Vec::new(),
    }
}

/// Rewrites a config file with only its [`INERT`] settings; returns the keys it dropped. A
/// link there is removed (never followed); a file git cannot read is removed whole.
fn reduce_config(git: &Git, trusted: &Path, file: &Path) -> Vec<String> {
    let Ok(meta) = fs::symlink_metadata(file) else {
        return Vec::new();
    };
    if !meta.is_file() {
        let _ = remove_entry(file, &meta);
        return vec![format!("{} (not a file)", file_name(file))];
    }
    let Ok(entries) = git.config_file_entries(trusted, file) else {
        let _ = fs::remove_file(file);
        return vec![format!("{} (unreadable)", file_name(file))];
    };
    let (kept, dropped): (Vec<_>, Vec<_>) = entries
        .into_iter()
        .partition(|(key, value)| INERT.contains(&class_of(key).as_str()) && plain(value));
    if dropped.is_empty() {
        return Vec::new();
    }
    let text = render(&kept);
    if crate::base::fsutil::write_atomic(file, text.as_bytes()).is_err() {
        let _ = fs::remove_file(file);
    }
    let mut keys: Vec<String> = dropped.into_iter().map(|(k, _)| k).collect();
    keys.dedup();
    keys
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn remove_entry(path: &Path, meta: &fs::Metadata) -> std::io::Result<()> {
    if meta.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    }
}

/// A value a config file can hold on one quoted line (no control character but tab).
fn plain(value: &Option<Vec<u8>>) -> bool {
    value
        .as_deref()
        .is_none_or(|v| v.iter().all(|b| *b >= 0x20 || *b == b'\t') && !v.contains(&0x7f))
}

/// Config text for `(key, value)` entries, one section header per change of section.
fn render(entries: &[(String, Option<Vec<u8>>)]) -> String {
    let mut text = String::new();
    let mut current = String::new();
    for (key, value) in entries {
        let (Some((section, rest)), Some((head, name))) =
            (key.split_once('.'), key.rsplit_once('.'))
        else {
            continue;
        };
        let header = if head.len() > section.len() {
            let sub = &rest[..rest.len() - name.len() - 1];
            format!(
                "[{section} \"{}\"]",
                sub.replace('\\', "\\\\").replace('"', "\\\"")
            )
        } else {
            format!("[{section}]")
        };
        if header != current {
            text.push_str(&header);
            text.push('\n');
            current = header;
        }
        match value {
            None => text.push_str(&format!("\t{name}\n")),
            Some(v) => {
                let v = String::from_utf8_lossy(v);
                let quoted = v
                    .replace('\\', "\\\\")
                    .replace('"', "\\\"")
                    .replace('\t', "\\t");
                text.push_str(&format!("\t{name} = \"{quoted}\"\n"));
            }
        }
    }
    text
}

/// Takes the execute bits off every hook (a link among them is removed); a hooks directory
/// that is a link is removed, the link only. Returns what it changed.
fn disarm_hooks(hooks: &Path) -> Vec<String> {
    let Ok(meta) = fs::symlink_metadata(hooks) else {
        return Vec::new();
    };
    if !meta.is_dir() {
        let _ = remove_entry(hooks, &meta);
        return vec!["hooks (not a directory)".into()];
    }
    let mut disarmed = Vec::new();
    for entry in fs::read_dir(hooks).into_iter().flatten().flatten() {
        let path = entry.path();
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        let name = format!("hooks/{}", entry.file_name().to_string_lossy());
        if meta.file_type().is_symlink() {
            let _ = fs::remove_file(&path);
            disarmed.push(name);
        } else if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
            let mode = meta.permissions().mode() & 0o7777 & !0o7111;
            let _ = fs::set_permissions(&path, fs::Permissions::from_mode(mode));
            disarmed.push(name);
        }
    }
    disarmed
}

#[cfg(test)]
mod tests {
    use crate::model::neutralize::*;

    #[test]
    fn keys_are_classed_by_section_and_name() {
        assert_eq!(class_of("remote.a.b.url"), "remote.url");
        assert_eq!(class_of("core.fsmonitor"), "core.fsmonitor");
        assert!(!INERT.contains(&class_of("core.hooksPath").as_str()));
        assert!(INERT.contains(&class_of("Core.FileMode").as_str()));
    }

    #[test]
    fn rendered_entries_quote_subsections_and_values() {
        let text = render(&[
            ("core.bare".into(), Some(b"false".to_vec())),
            ("remote.o \"x\".url".into(), Some(b"a\\b\"c".to_vec())),
            ("core.symlinks".into(), None),
        ]);
        assert_eq!(
            text,
            "[core]\n\tbare = \"false\"\n[remote \"o \\\"x\\\"\"]\n\turl = \"a\\\\b\\\"c\"\n[core]\n\tsymlinks\n"
        );
    }
}
