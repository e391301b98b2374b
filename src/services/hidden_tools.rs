//! Where the command's program, and the interpreter its `#!` line names, live on the host,
//! when that is under a directory the sandbox replaces with an empty one (`/tmp`, `/var/tmp`,
//! the runtime dir): a tool installed there with npm, linked into `PATH` from a `bin`
//! directory, is "not found" inside. Each is named with the directory to allow, the tool's
//! installation prefix with links resolved (the directory holding both the link on `PATH` and
//! what it links to, above any `node_modules` and its `bin` or `lib`), so that `--allow-read`
//! of it lets both the link and its target through. Pure planning from the spec, the program
//! and the `PATH` the command gets; only the host's files are looked at.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use crate::base::sandbox::SandboxSpec;
use crate::services::hidden_paths::{Access, HiddenPath, HiddenReason, read_planted, restored};

/// How much of a script's first line is read for its interpreter.
const SHEBANG_BYTES: u64 = 256;

/// The program's and its interpreter's places the sandbox hides, each with the prefix to
/// allow (at most two entries; none when both are within the command's reach).
pub fn find(spec: &SandboxSpec, program: &OsStr, path_env: Option<&OsStr>) -> Vec<HiddenPath> {
    let Some(found) = locate(program, path_env) else {
        return Vec::new();
    };
    let mut hidden: Vec<HiddenPath> = hidden_tool(spec, &found).into_iter().collect();
    let interpreter = std::fs::canonicalize(&found)
        .ok()
        .filter(|real| readable_script(spec, real))
        .and_then(|real| interpreter_of(&real))
        .and_then(|interp| locate(&interp, path_env));
    if let Some(interpreter) = interpreter
        && let Some(tool) = hidden_tool(spec, &interpreter)
        && !hidden.iter().any(|h| h.allow_path == tool.allow_path)
    {
        hidden.push(tool);
    }
    hidden
}

/// The file `program` names, as the command would find it: itself when it is absolute, else
/// the first executable file of that name in an absolute `PATH` directory.
fn locate(program: &OsStr, path_env: Option<&OsStr>) -> Option<PathBuf> {
    let bytes = program.as_bytes();
    if bytes.contains(&b'/') {
        return bytes.starts_with(b"/").then(|| PathBuf::from(program));
    }
    if bytes.is_empty() {
        return None;
    }
    std::env::split_paths(path_env?)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// `found` and each link on the way to its file, when one is under a private directory and
/// not restored inside: named with the prefix to allow.
fn hidden_tool(spec: &SandboxSpec, found: &Path) -> Option<HiddenPath> {
    let chain = link_chain(found)?;
    let kept = std::iter::once(found)
        .chain(chain.iter().map(PathBuf::as_path))
        .find_map(|p| {
            let root = spec.private.iter().find(|d| p.starts_with(d))?;
            (!restored(spec, p)).then_some(root)
        })?;
    let under_root: Vec<&Path> = chain
        .iter()
        .map(PathBuf::as_path)
        .filter(|p| p.starts_with(kept))
        .collect();
    Some(HiddenPath {
        path: chain.last()?.clone(),
        reason: HiddenReason::Private,
        under: Some(kept.clone()),
        allow: Access::Read,
        allow_path: install_prefix(kept, &under_root),
    })
}

/// `found` with its directory's links resolved, then each link it leads through, then the
/// file itself (all absolute, at most 40 links).
fn link_chain(found: &Path) -> Option<Vec<PathBuf>> {
    let resolved_dir = |p: &Path| -> Option<PathBuf> {
        let dir = std::fs::canonicalize(p.parent()?).ok()?;
        Some(dir.join(p.file_name()?))
    };
    let mut chain = vec![resolved_dir(found)?];
    for _ in 0..40 {
        let current = chain.last()?;
        let Ok(target) = std::fs::read_link(current) else {
            break;
        };
        let next = current.parent()?.join(target);
        chain.push(resolved_dir(&next)?);
    }
    let real = std::fs::canonicalize(found).ok()?;
    if chain.last() != Some(&real) {
        chain.push(real);
    }
    Some(chain)
}

/// The directory to allow for `paths` (all under `root`): the deepest directory holding them
/// all, taken up above a `node_modules` in it and then above a `bin` or `lib` it ends in
/// (an installation's prefix: `<prefix>/bin/tool -> ../lib/node_modules/pkg/cli.js`), never
/// `root` itself or above (then the top directory under `root` of the first path).
fn install_prefix(root: &Path, paths: &[&Path]) -> PathBuf {
    let mut common: PathBuf = paths
        .first()
        .and_then(|p| p.parent())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| root.to_path_buf());
    for path in paths.iter().skip(1) {
        while !path.starts_with(&common) {
            if !common.pop() {
                break;
            }
        }
    }
    let names: Vec<Component> = common.components().collect();
    if let Some(at) = names.iter().position(|c| c.as_os_str() == "node_modules") {
        common = names[..at].iter().collect();
    }
    if common
        .file_name()
        .is_some_and(|name| name == "bin" || name == "lib")
    {
        common.pop();
    }
    if common.starts_with(root) && common != root {
        return common;
    }
    let top = paths
        .first()
        .and_then(|p| p.strip_prefix(root).ok())
        .and_then(|rest| rest.components().next());
    top.map_or_else(|| root.to_path_buf(), |top| root.join(top))
}

/// Whether `real`'s first line may be read: a file the command could have read itself, never
/// a secret the sandbox hides or a kernel view.
fn readable_script(spec: &SandboxSpec, real: &Path) -> bool {
    let kernel = ["/proc", "/sys", "/dev"].map(Path::new);
    !kernel.iter().any(|d| real.starts_with(d)) && !spec.hidden.iter().any(|h| real.starts_with(h))
}

/// The program a `#!` line runs: its interpreter, or what `/usr/bin/env` (`-S` too) looks up; read
/// as a planted file (no link followed at the end, no FIFO waited on, 256 bytes at most).
fn interpreter_of(real: &Path) -> Option<std::ffi::OsString> {
    let head = read_planted(real, SHEBANG_BYTES)?;
    let line = head.strip_prefix(b"#!")?;
    let line = &line[..line.iter().position(|b| *b == b'\n')?];
    let mut words = line
        .split(|b| *b == b' ' || *b == b'\t')
        .filter(|w| !w.is_empty());
    let interpreter = words.next()?;
    if Path::new(OsStr::from_bytes(interpreter)).file_name() != Some(OsStr::new("env")) {
        return Some(OsStr::from_bytes(interpreter).to_os_string());
    }
    let program = words.find(|w| !w.starts_with(b"-") && !w.contains(&b'='))?;
    Some(OsStr::from_bytes(program).to_os_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(list: &[&str]) -> Vec<PathBuf> {
        list.iter().map(PathBuf::from).collect()
    }

    fn prefix(root: &str, list: &[&str]) -> PathBuf {
        let owned = paths(list);
        let refs: Vec<&Path> = owned.iter().map(PathBuf::as_path).collect();
        install_prefix(Path::new(root), &refs)
    }

    #[test]
    fn the_prefix_holds_the_link_and_its_target_above_node_modules_bin_and_lib() {
        let npm_global = [
            "/var/tmp/p/bin/tool",
            "/var/tmp/p/lib/node_modules/pkg/cli.js",
        ];
        assert_eq!(prefix("/var/tmp", &npm_global), Path::new("/var/tmp/p"));
        let local_bin = [
            "/var/tmp/x/proj/node_modules/.bin/claude",
            "/var/tmp/x/proj/node_modules/@anthropic/claude/cli.js",
        ];
        assert_eq!(prefix("/var/tmp", &local_bin), Path::new("/var/tmp/x/proj"));
        let interpreter = ["/tmp/node-v20/bin/node"];
        assert_eq!(prefix("/tmp", &interpreter), Path::new("/tmp/node-v20"));
        // Link and target in different trees under the root: the first one's top directory.
        let apart = ["/var/tmp/a/bin/tool", "/var/tmp/b/cli.js"];
        assert_eq!(prefix("/var/tmp", &apart), Path::new("/var/tmp/a"));
        // Right under the root: never the root itself.
        assert_eq!(prefix("/tmp", &["/tmp/tool"]), Path::new("/tmp/tool"));
        assert_eq!(prefix("/tmp", &["/tmp/bin/tool"]), Path::new("/tmp/bin"));
    }

    #[test]
    fn a_shebang_names_its_interpreter_or_what_env_runs() {
        let dir = tempfile::tempdir().unwrap();
        let cases: [(&[u8], Option<&str>); 6] = [
            (b"#!/usr/bin/env node\nx", Some("node")),
            (b"#!/usr/bin/env -S node --flag\n", Some("node")),
            (b"#! /opt/py/bin/python3 -u\n", Some("/opt/py/bin/python3")),
            (b"#!/usr/bin/env A=1 deno run\n", Some("deno")),
            (b"echo no shebang\n", None),
            (b"#!/bin/sh", None),
        ];
        for (i, (text, expected)) in cases.iter().enumerate() {
            let file = dir.path().join(format!("s{i}"));
            std::fs::write(&file, text).unwrap();
            let got = interpreter_of(&file);
            assert_eq!(got.as_deref(), expected.map(OsStr::new), "{text:?}");
        }
        let fifo = dir.path().join("fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        assert_eq!(interpreter_of(&fifo), None);
    }

    #[test]
    fn a_tool_linked_from_a_private_prefix_is_named_with_that_prefix() {
        let root = tempfile::tempdir().unwrap();
        let root_path = std::fs::canonicalize(root.path()).unwrap();
        let prefix = root_path.join("p");
        let pkg = prefix.join("lib/node_modules/pkg");
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::create_dir_all(prefix.join("bin")).unwrap();
        std::fs::write(pkg.join("cli.js"), "#!/bin/sh\necho hi\n").unwrap();
        std::fs::set_permissions(pkg.join("cli.js"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::os::unix::fs::symlink("../lib/node_modules/pkg/cli.js", prefix.join("bin/tool"))
            .unwrap();
        let spec = SandboxSpec {
            private: vec![root_path.clone()],
            ..SandboxSpec::default()
        };
        let path_env =
            std::env::join_paths(["/nonexistent", prefix.join("bin").to_str().unwrap()]).unwrap();
        let found = find(&spec, OsStr::new("tool"), Some(&path_env));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].allow_path, prefix);
        assert_eq!(found[0].path, pkg.join("cli.js"));
        assert_eq!(found[0].under.as_deref(), Some(root_path.as_path()));
        // Allowed: nothing to name.
        let allowed = SandboxSpec {
            visible: vec![prefix.clone()],
            ..spec
        };
        assert!(find(&allowed, OsStr::new("tool"), Some(&path_env)).is_empty());
        // Not on PATH, or a relative path: nothing.
        assert!(find(&allowed, OsStr::new("nope"), Some(&path_env)).is_empty());
        assert!(find(&allowed, OsStr::new("bin/tool"), Some(&path_env)).is_empty());
    }
}
