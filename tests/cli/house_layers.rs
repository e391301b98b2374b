//! The shape of the code itself: no function in `src/` over 100 lines, and no circle of
//! imports between the library's modules (a module is a file; `promote/branch.rs` is
//! `promote::branch`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_FUNCTION_LINES: usize = 100;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The file's code before its test module, with string literals and comments blanked.
fn code_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let without_comment = line.split("//").next().unwrap_or("");
        lines.push(blank_strings(without_comment));
    }
    lines
}

fn blank_strings(line: &str) -> String {
    let mut out = String::new();
    let mut in_string = false;
    let mut escaped = false;
    for c in line.chars() {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (_, false, '"') => in_string = !in_string,
            (true, ..) => {}
            (false, ..) => out.push(c),
        }
    }
    out
}

/// `(name, lines)` of every function in a file.
fn function_lengths(path: &Path) -> Vec<(String, usize)> {
    let lines = code_lines(path);
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(name) = fn_name(&lines[i]) else {
            i += 1;
            continue;
        };
        let (mut depth, mut started, mut j) = (0i64, false, i);
        while j < lines.len() {
            depth += lines[j].matches('{').count() as i64 - lines[j].matches('}').count() as i64;
            started |= lines[j].contains('{');
            if (started && depth <= 0) || (!started && lines[j].trim_end().ends_with(';')) {
                break;
            }
            j += 1;
        }
        if started {
            found.push((name, j - i + 1));
        }
        i = j + 1;
    }
    found
}

fn fn_name(line: &str) -> Option<String> {
    let mut words = line.split_whitespace().peekable();
    while let Some(word) = words.next() {
        if word == "fn" {
            let name = words.next()?;
            return Some(name.split(['(', '<']).next()?.to_string());
        }
        let qualifier = word.starts_with("pub")
            || matches!(word, "async" | "const" | "unsafe" | "extern" | "\"C\"");
        if !qualifier {
            return None;
        }
    }
    None
}

#[test]
fn no_function_in_src_is_longer_than_the_limit() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut long = Vec::new();
    for file in &files {
        for (name, lines) in function_lengths(file) {
            if lines > MAX_FUNCTION_LINES {
                long.push(format!("{}: {name} ({lines} lines)", file.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "split these by meaning:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_length_check_sees_long_functions() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("long.rs");
    let body = "    let x = 1;\n".repeat(120);
    std::fs::write(
        &file,
        format!("pub(crate) fn long() {{\n{body}}}\nfn short() {{}}\n"),
    )
    .unwrap();
    let lengths = function_lengths(&file);
    assert_eq!(lengths, vec![("long".into(), 122), ("short".into(), 1)]);
}

/// The module a library file is: `src/promote/mod.rs` → `promote`, `src/promote/patch.rs` →
/// `promote::patch`. The binary's files (`main.rs`, `cli/`) are not the library's.
fn module_of(file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src()).ok()?.with_extension("");
    let parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    match parts.as_slice() {
        [first, ..] if first == "cli" || first == "main" || first == "lib" => None,
        [.., last] if last == "mod" => Some(parts[..parts.len() - 1].join("::")),
        _ => Some(parts.join("::")),
    }
}

/// The library modules a file's code names (`crate::a::b` → the longest known module prefix;
/// `super::x` → the parent module). A module also depends on the submodules it declares, so a
/// submodule that reaches back into its parent closes a circle.
fn dependencies(module: &str, file: &Path, known: &BTreeSet<String>) -> BTreeSet<String> {
    let code = code_lines(file).join("\n");
    let mut deps: BTreeSet<String> = known
        .iter()
        .filter(|k| k.rsplit_once("::").is_some_and(|(p, _)| p == module))
        .cloned()
        .collect();
    let parent = module.rsplit_once("::").map(|(p, _)| p.to_string());
    for (start, _) in code
        .match_indices("crate::")
        .chain(code.match_indices("super::"))
    {
        let path: String = code[start..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        let mut segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
        let root = segments.remove(0);
        let mut prefix = match (root, &parent) {
            ("super", Some(parent)) => parent.clone(),
            ("super", None) => continue,
            _ => String::new(),
        };
        let mut best = (!prefix.is_empty()).then(|| prefix.clone());
        for segment in segments {
            prefix = if prefix.is_empty() {
                segment.to_string()
            } else {
                format!("{prefix}::{segment}")
            };
            if known.contains(&prefix) {
                best = Some(prefix.clone());
            }
        }
        if let Some(dep) = best.filter(|d| d != module) {
            deps.insert(dep);
        }
    }
    deps
}

/// Every cycle's modules, found by depth-first search over the import graph.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        if let Some(at) = path.iter().position(|n| n == node) {
            found.push(path[at..].to_vec());
            return;
        }
        if done.contains(node) {
            return;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            visit(next, graph, path, done, found);
        }
        path.pop();
        done.insert(node.to_string());
    }
    let mut found = Vec::new();
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, graph, &mut Vec::new(), &mut done, &mut found);
    }
    found
}

#[test]
fn no_import_circle_between_library_modules() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let modules: BTreeMap<String, PathBuf> = files
        .iter()
        .filter_map(|f| module_of(f).map(|m| (m, f.clone())))
        .collect();
    let known: BTreeSet<String> = modules.keys().cloned().collect();
    let graph: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|(module, file)| (module.clone(), dependencies(module, file, &known)))
        .collect();
    assert!(
        graph
            .get("promote::branch")
            .is_some_and(|d| d.contains("promote::outcome"))
    );
    let found = cycles(&graph);
    let shown: Vec<String> = found.iter().map(|c| c.join(" -> ")).collect();
    assert!(found.is_empty(), "import circles:\n{}", shown.join("\n"));
}

#[test]
fn the_circle_check_finds_circles() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(
        cycles(&graph),
        vec![vec!["a".to_string(), "b".into(), "c".into()]]
    );
}
