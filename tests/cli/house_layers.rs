//! The shape of the code itself: no function in `src/`, `tests/` or `crates/` over 80 lines;
//! the library's folders are its layers, and every import goes down a
//! layer (or stays inside its folder), never up, and never from one verb to another; and no
//! circle of imports between its modules (a module is a file; `ops/promote/branch.rs` is
//! `ops::promote::branch`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The longest a function may be, in the library, the tests and the workspace's other crates.
const MAX_FUNCTION_LINES: usize = 80;

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

/// The file's code before its test module, with string and character literals and comments
/// blanked (a string spanning lines blanks each of them; a `{` in a literal counts for nothing).
fn code_lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = Vec::new();
    for line in blank_literals(&text).lines() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        lines.push(line.to_string());
    }
    lines
}

/// What the scanner is inside of.
#[derive(Clone, Copy, PartialEq)]
enum Within {
    Code,
    LineComment,
    BlockComment(usize),
    Str,
    RawStr(usize),
}

/// `text` with every comment and every string or character literal removed, line breaks kept.
fn blank_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut within = Within::Code;
    let mut i = 0;
    while i < chars.len() {
        let (c, next) = (chars[i], chars.get(i + 1).copied());
        if c == '\n' {
            out.push('\n');
            if within == Within::LineComment {
                within = Within::Code;
            }
            i += 1;
            continue;
        }
        let (now, step) = scan_step(&chars, i, within, &mut out, c, next);
        within = now;
        i += step;
    }
    out
}

/// One step of `blank_literals` at `chars[i]`: the state after it and how many characters it
/// took (code is copied to `out`; nothing else is).
fn scan_step(
    chars: &[char],
    i: usize,
    within: Within,
    out: &mut String,
    c: char,
    next: Option<char>,
) -> (Within, usize) {
    match within {
        Within::LineComment => (within, 1),
        Within::BlockComment(depth) => match (c, next) {
            ('*', Some('/')) if depth == 1 => (Within::Code, 2),
            ('*', Some('/')) => (Within::BlockComment(depth - 1), 2),
            ('/', Some('*')) => (Within::BlockComment(depth + 1), 2),
            _ => (within, 1),
        },
        Within::Str => match c {
            '\\' if next != Some('\n') => (within, 2),
            '"' => (Within::Code, 1),
            _ => (within, 1),
        },
        Within::RawStr(hashes) => {
            let closes = c == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#'));
            if closes {
                (Within::Code, 1 + hashes)
            } else {
                (within, 1)
            }
        }
        Within::Code => code_step(chars, i, out, c, next),
    }
}

/// A step in code: a literal or comment opening, or a character copied.
fn code_step(
    chars: &[char],
    i: usize,
    out: &mut String,
    c: char,
    next: Option<char>,
) -> (Within, usize) {
    let ident = |k: usize| chars[k].is_alphanumeric() || chars[k] == '_';
    // `r"…"`, `r#"…"#` and `br"…"` open raw strings; `for"` or `bar#` do not.
    let raw_may_open = i == 0 || !ident(i - 1) || (chars[i - 1] == 'b' && (i < 2 || !ident(i - 2)));
    match (c, next) {
        ('/', Some('/')) => (Within::LineComment, 2),
        ('/', Some('*')) => (Within::BlockComment(1), 2),
        ('"', _) => (Within::Str, 1),
        ('r', Some('"' | '#')) if raw_may_open => {
            let hashes = chars[i + 1..].iter().take_while(|c| **c == '#').count();
            if chars.get(i + 1 + hashes) == Some(&'"') {
                (Within::RawStr(hashes), 2 + hashes)
            } else {
                out.push(c);
                (Within::Code, 1)
            }
        }
        ('\'', _) => {
            // A character literal (`'{'`, `'\n'`, `'\u{7f}'`); a lifetime (`'a`) is code.
            let end = match next {
                Some('\\') => (chars.get(i + 3..).unwrap_or_default().iter())
                    .position(|c| *c == '\'')
                    .map(|p| i + 3 + p),
                Some(_) if chars.get(i + 2) == Some(&'\'') => Some(i + 2),
                _ => None,
            };
            match end {
                Some(end) => (Within::Code, end - i + 1),
                None => {
                    out.push(c);
                    (Within::Code, 1)
                }
            }
        }
        _ => {
            out.push(c);
            (Within::Code, 1)
        }
    }
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

/// Every function of the `.rs` files under `dir` longer than `limit`, as `path: name (n lines)`.
fn functions_longer_than(dir: &Path, limit: usize) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    files.sort();
    let mut long = Vec::new();
    for file in &files {
        for (name, lines) in function_lengths(file) {
            if lines > limit {
                long.push(format!("{}: {name} ({lines} lines)", file.display()));
            }
        }
    }
    long
}

#[test]
fn no_function_in_src_tests_or_crates_is_longer_than_the_limit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let long: Vec<String> = ["src", "tests", "crates"]
        .iter()
        .flat_map(|dir| functions_longer_than(&root.join(dir), MAX_FUNCTION_LINES))
        .collect();
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

#[test]
fn the_length_check_counts_no_brace_of_a_literal_or_comment() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("literals.rs");
    let code = concat!(
        "fn a<'x>(s: &'x str) -> bool {\n",
        "    let url = \"http://h/{\"; // }\n",
        "    let script = r#\"if x {\n",
        "      echo \"}}\"\n",
        "    \"#;\n",
        "    /* { /* } */ { */\n",
        "    s.contains('{') || s.contains('\\'') || url.len() == script.len()\n",
        "}\n",
        "fn b() {}\n",
    );
    std::fs::write(&file, code).unwrap();
    assert_eq!(
        function_lengths(&file),
        vec![("a".into(), 8), ("b".into(), 1)]
    );
}

/// The module a library file is: `src/promote/mod.rs` → `promote`, `src/promote/patch.rs` →
/// `promote::patch`. The binary's files (`main.rs`, `cli/`) are not the library's.
fn module_of(root: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(root).ok()?.with_extension("");
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
        // `super::super::x`: one level up for each further `super`.
        while segments.first() == Some(&"super") {
            segments.remove(0);
            prefix = prefix
                .rsplit_once("::")
                .map_or(String::new(), |(p, _)| p.to_string());
        }
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

/// The import graph of the library under `root` (a `src` directory).
fn library_graph(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let modules: BTreeMap<String, PathBuf> = files
        .iter()
        .filter_map(|f| module_of(root, f).map(|m| (m, f.clone())))
        .collect();
    let known: BTreeSet<String> = modules.keys().cloned().collect();
    modules
        .iter()
        .map(|(module, file)| (module.clone(), dependencies(module, file, &known)))
        .collect()
}

/// The library's folders, lowest first: a module may import its own folder's modules and
/// those of any folder below its own (ARCHITECTURE.md says what each holds).
const LAYERS: &[&str] = &[
    "base",
    "git",
    "store",
    "context",
    "model",
    "recovery",
    "services",
    "ops",
    "flows",
    "interface",
    "mcp",
];

/// The folder where verbs live: one verb never imports another.
const VERBS: &str = "ops";

fn rank(module: &str) -> Option<usize> {
    let folder = module.split("::").next()?;
    LAYERS.iter().position(|l| *l == folder)
}

/// Every import that goes up a layer or from one verb to another, and every module outside
/// the layers' folders.
fn layer_violations(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut found = Vec::new();
    for (module, deps) in graph {
        let Some(own) = rank(module) else {
            found.push(format!("{module}: not in a layer's folder"));
            continue;
        };
        for dep in deps {
            let verb = |m: &str| m.split("::").nth(1).map(str::to_string);
            match rank(dep) {
                Some(theirs) if theirs > own => found.push(format!("{module} -> {dep}: upward")),
                Some(_) if module.starts_with("ops::") && dep.starts_with("ops::") => {
                    if verb(module) != verb(dep) {
                        found.push(format!("{module} -> {dep}: one verb imports another"));
                    }
                }
                Some(_) => {}
                None => found.push(format!("{module} -> {dep}: not in a layer's folder")),
            }
        }
    }
    debug_assert_eq!(LAYERS[7], VERBS);
    found
}

#[test]
fn every_import_goes_down_a_layer() {
    let graph = library_graph(&src());
    assert!(
        graph
            .get("ops::promote::branch")
            .is_some_and(|d| d.contains("ops::promote::outcome") && d.contains("store::state"))
    );
    let found = layer_violations(&graph);
    assert!(
        found.is_empty(),
        "imports across layers:\n{}",
        found.join("\n")
    );
}

/// Writes `code` to `path` under a planted `root`, making its directories.
fn plant_file(root: &Path, path: &str, code: &str) {
    let file = root.join(path);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, code).unwrap();
}

#[test]
fn the_layer_check_sees_planted_imports() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("src");
    let plant = |path: &str, code: &str| plant_file(&root, path, code);
    plant("lib.rs", "pub mod base;\npub mod ops;\npub mod services;\n");
    plant("base/mod.rs", "pub mod fsutil;\n");
    plant("base/fsutil.rs", "pub fn f() { crate::ops::bind::g(); }\n");
    plant(
        "services/pool.rs",
        "use crate::base::fsutil::f;\npub fn p() { f() }\n",
    );
    plant(
        "ops/bind.rs",
        "pub fn g() { crate::services::pool::p(); }\n",
    );
    plant("ops/run/mod.rs", "mod sandbox;\nuse crate::ops::bind::g;\n");
    plant(
        "ops/run/sandbox.rs",
        "use super::super::bind;\nuse crate::ops::run::x;\n",
    );
    plant("loose.rs", "pub fn l() {}\n");
    let found = layer_violations(&library_graph(&root));
    assert_eq!(
        found,
        vec![
            "base::fsutil -> ops::bind: upward".to_string(),
            "loose: not in a layer's folder".into(),
            "ops::run -> ops::bind: one verb imports another".into(),
            "ops::run::sandbox -> ops::bind: one verb imports another".into(),
        ]
    );
}

/// The layers a folder's `mod.rs` says it may call: the layer names on its second line,
/// `//! May call: …`, under a first `//!` line saying what lives there; `None` when its first
/// two lines are not those.
fn may_call(mod_rs: &Path) -> Option<BTreeSet<String>> {
    let text = std::fs::read_to_string(mod_rs).ok()?;
    let mut lines = text.lines();
    let first = lines.next()?.strip_prefix("//! ")?;
    let list = lines.next()?.strip_prefix("//! May call: ")?;
    if first.trim().is_empty() {
        return None;
    }
    let words = list.split(|c: char| !(c.is_alphanumeric() || c == '_'));
    Some(
        words
            .filter(|w| LAYERS.contains(w))
            .map(str::to_string)
            .collect(),
    )
}

/// Every module folder under `root` (one holding `.rs` files), its path from `root`, sorted.
fn module_folders(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if !path.is_dir() {
                continue;
            }
            let holds_code = std::fs::read_dir(&path)
                .unwrap()
                .any(|e| e.unwrap().path().extension().is_some_and(|x| x == "rs"));
            if holds_code {
                found.push(path.strip_prefix(root).unwrap().to_path_buf());
            }
            pending.push(path);
        }
    }
    found.sort();
    found
}

/// The layers a folder inside a layer may say it calls: the layers below its own, or those
/// and the rest of its own layer (`ops/` excepted: a verb's folder calls no other verb).
fn nested_may_call(layer: &str, below: &BTreeSet<String>, said: &BTreeSet<String>) -> bool {
    let mut with_own = below.clone();
    with_own.insert(layer.to_string());
    said == below || (layer != "ops" && *said == with_own)
}

/// Every module folder of `root`, nested ones too, whose module file (`mod.rs`, or `name.rs`
/// beside `name/`) does not open with what lives there and what it may call, or whose list is
/// not the layers below its own (a nested folder may add the rest of its own layer; a folder
/// outside the layers, the binary's `cli/`, needs the lines only).
fn folder_doc_violations(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for folder in module_folders(root) {
        let name = folder.to_string_lossy().into_owned();
        let mut module_file = root.join(&folder).join("mod.rs");
        if !module_file.exists() {
            module_file = root.join(&folder).with_extension("rs");
        }
        let shown = module_file
            .strip_prefix(root)
            .unwrap()
            .display()
            .to_string();
        let Some(said) = may_call(&module_file) else {
            found.push(format!("{shown}: no `//! May call:` as its second line"));
            continue;
        };
        let layer = name.split('/').next().unwrap();
        let Some(own) = rank(layer) else { continue };
        let allowed: BTreeSet<String> = LAYERS[..own].iter().map(|l| l.to_string()).collect();
        let fits = match name.contains('/') {
            false => said == allowed,
            true => nested_may_call(layer, &allowed, &said),
        };
        if !fits {
            found.push(format!(
                "{shown}: may call {said:?}, the layers allow {allowed:?}"
            ));
        }
    }
    found
}

#[test]
fn every_folder_says_what_it_may_call_as_the_layers_order() {
    let found = folder_doc_violations(&src());
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_folder_doc_check_sees_planted_docs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("src");
    let plant = |path: &str, code: &str| plant_file(&root, path, code);
    plant(
        "base/mod.rs",
        "//! The bottom.\n//! May call: no other folder.\n",
    );
    plant("git/mod.rs", "//! Runs git.\n//! May call: base, store.\n");
    plant(
        "store/mod.rs",
        "//! The store.\n//!\n//! May call: base, git.\n",
    );
    plant(
        "model/mod.rs",
        "//! The data.\n//! May call: base, git, store, context.\n",
    );
    plant(
        "cli/mod.rs",
        "//! The binary's.\n//! May call: any folder.\n",
    );
    plant("ops/mod.rs", "mod bind;\n");
    plant("ops/bind.rs", "pub fn b() {}\n");
    plant(
        "base/beneath.rs",
        "//! Beneath.\n//! May call: the rest of base.\n",
    );
    plant("base/beneath/remove.rs", "pub fn r() {}\n");
    let model_nested =
        "//! Nested.\n//! May call: base, git, store, context and the rest of model.\n";
    plant("model/nested/mod.rs", model_nested);
    plant("model/nested/part.rs", "pub fn p() {}\n");
    let verb_calls_verbs =
        "//! A verb.\n//! May call: base, git, store, context, model, recovery, services, ops.\n";
    plant("ops/run/mod.rs", verb_calls_verbs);
    plant("ops/promote/mod.rs", "//! `promote`.\nmod patch;\n");
    plant(
        "services/pool/mod.rs",
        "//! The pool.\n//! May call: base, ops.\n",
    );
    plant("cli/snapshots/x.snap", "not code\n");
    assert_eq!(
        folder_doc_violations(&root),
        vec![
            "git/mod.rs: may call {\"base\", \"store\"}, the layers allow {\"base\"}".to_string(),
            "ops/mod.rs: no `//! May call:` as its second line".into(),
            "ops/promote/mod.rs: no `//! May call:` as its second line".into(),
            "ops/run/mod.rs: may call {\"base\", \"context\", \"git\", \"model\", \"ops\", \"recovery\", \"services\", \"store\"}, the layers allow {\"base\", \"context\", \"git\", \"model\", \"recovery\", \"services\", \"store\"}".into(),
            "services/pool/mod.rs: may call {\"base\", \"ops\"}, the layers allow {\"base\", \"context\", \"git\", \"model\", \"recovery\", \"store\"}".into(),
            "store/mod.rs: no `//! May call:` as its second line".into(),
        ]
    );
}

/// ARCHITECTURE.md's "Layers" part has a paragraph for every folder, led by its name in bold
/// (`- **`ops/`**`) or under a heading of it.
#[test]
fn the_architecture_has_a_paragraph_per_folder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let layers = text.split("\n## Layers\n").nth(1).expect("a Layers part");
    let layers = layers.split("\n## ").next().unwrap();
    let mut missing = Vec::new();
    for folder in LAYERS.iter().chain(&["cli"]) {
        let led = layers.lines().any(|line| {
            let named = [format!("`{folder}/`"), format!("`src/{folder}/`")];
            named.iter().any(|n| {
                line.starts_with(&format!("- **{n}**")) || line.starts_with(&format!("### {n}"))
            })
        });
        if !led {
            missing.push(*folder);
        }
    }
    assert!(missing.is_empty(), "no paragraph led by: {missing:?}");
}

/// The library's modules and their files.
fn library_modules(root: &Path) -> BTreeMap<String, PathBuf> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    files
        .iter()
        .filter_map(|f| module_of(root, f).map(|m| (m, f.clone())))
        .collect()
}

/// The name a line defines as a type (`struct`, `enum`, `trait`, `type`), if it does.
fn defined_type(line: &str) -> Option<String> {
    let mut words = line.split_whitespace().skip_while(|w| w.starts_with("pub"));
    let kind = words.next()?;
    if !["struct", "enum", "trait", "type"].contains(&kind) {
        return None;
    }
    let name: String = (words.next()?.chars())
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The type an inherent `impl` block of a line gives methods to (`impl Name {`,
/// `impl<'a> path::Name<'a> {`); a trait's impl (`impl T for Name`) is not one.
fn inherent_impl(line: &str) -> Option<String> {
    let rest = line.trim_start().strip_prefix("impl")?;
    if line.contains(" for ") || !line.trim_end().ends_with('{') {
        return None;
    }
    let rest = match rest.strip_prefix('<') {
        Some(generic) => generic.split_once('>')?.1,
        None => rest.strip_prefix(' ')?,
    };
    let path: String = (rest.trim_start().chars())
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
        .collect();
    path.rsplit("::").next().map(str::to_string)
}

/// Every inherent `impl` block that gives a type of a lower layer methods from a higher one:
/// code of the lower layer calling them would call upward without naming the higher module.
fn impl_violations(root: &Path) -> Vec<String> {
    let modules = library_modules(root);
    let mut defined: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (module, file) in &modules {
        for name in code_lines(file).iter().filter_map(|l| defined_type(l)) {
            defined.entry(name).or_default().push(module.clone());
        }
    }
    let mut found = Vec::new();
    for (module, file) in &modules {
        for name in code_lines(file).iter().filter_map(|l| inherent_impl(l)) {
            // A name defined once, elsewhere, in a lower layer.
            let Some([home]) = defined.get(&name).map(Vec::as_slice) else {
                continue;
            };
            if let (Some(theirs), Some(own)) = (rank(home), rank(module))
                && theirs < own
            {
                found.push(format!(
                    "{module}: impl {name} of {home}: methods given upward"
                ));
            }
        }
    }
    found
}

#[test]
fn no_layer_gives_methods_to_a_lower_layers_type() {
    let found = impl_violations(&src());
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_impl_check_sees_planted_methods() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("src");
    let plant = |path: &str, code: &str| plant_file(&root, path, code);
    plant(
        "context/mod.rs",
        "pub struct Context {}\nimpl Context {\n}\n",
    );
    plant(
        "recovery/mod.rs",
        "impl crate::context::Context {\n}\nimpl Clone for Context {\n}\n",
    );
    plant(
        "ops/x.rs",
        "pub(crate) struct Own<'a>(&'a str);\nimpl<'a> Own<'a> {\n}\n",
    );
    assert_eq!(
        impl_violations(&root),
        vec!["recovery: impl Context of context: methods given upward".to_string()]
    );
}

#[test]
fn no_import_circle_between_library_modules() {
    let graph = library_graph(&src());
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

/// What starts a git command and takes arguments: the runner's command type, and the
/// constructors that make one (`Git::at`, `HermeticGit::cmd`, `ObjectView::cmd`, a fetch's
/// command, the environment of a git started by hand).
const ARGV_BUILDERS: &[&str] = &[
    "GitCmd",
    ".at(",
    ".cmd()",
    "fetch_cmd",
    "hermetic_env",
    "piped_expression",
];

/// Every line outside `src/git/` (its code, not its comments, strings or tests) that builds a
/// git argv, as `path:line: code`.
fn argv_built_outside_git(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let relative = file.strip_prefix(root).unwrap();
        if relative.starts_with("git") {
            continue;
        }
        for (n, line) in code_lines(&file).iter().enumerate() {
            if ARGV_BUILDERS.iter().any(|b| line.contains(b)) {
                found.push(format!("{}:{}: {}", relative.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn every_git_argv_is_built_in_the_git_folder() {
    let found = argv_built_outside_git(&src());
    assert!(
        found.is_empty(),
        "git argv built outside src/git/ (add a typed operation there):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_argv_check_sees_planted_builders() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("src");
    let plant = |path: &str, code: &str| plant_file(&root, path, code);
    plant(
        "git/ops.rs",
        "fn f(g: &Git) { g.at(d).args([\"rev-parse\"]).run(); }\n",
    );
    plant(
        "ops/bind.rs",
        "fn b(git: &Git, d: &Path) {\n    git\n        .at(d)\n        .args([\"status\"]);\n}\n",
    );
    plant(
        "services/pool.rs",
        "// git.at(dir) in a comment\nfn p(c: &dyn Fn() -> GitCmd<'_>) { let s = \".cmd()\"; }\n",
    );
    plant(
        "model/wip.rs",
        "fn w(wt: &HermeticGit) { wt.cmd().run(); }\n",
    );
    plant(
        "recovery/x.rs",
        "fn y() {}\n#[cfg(test)]\nmod tests { fn t(g: &Git) { g.at(d); } }\n",
    );
    assert_eq!(
        argv_built_outside_git(&root),
        vec![
            "model/wip.rs:1: fn w(wt: &HermeticGit) { wt.cmd().run(); }".to_string(),
            "ops/bind.rs:3: .at(d)".into(),
            "services/pool.rs:2: fn p(c: &dyn Fn() -> GitCmd<'_>) { let s = ; }".into(),
        ]
    );
}

/// Every line of the `.rs` files under `dirs` (relative to `root`) whose code names `word` as
/// a whole word, as `path:line`.
fn code_naming(root: &Path, dirs: &[&str], word: &str) -> Vec<String> {
    let mut files = Vec::new();
    for dir in dirs {
        rust_files(&root.join(dir), &mut files);
    }
    files.sort();
    let mut found = Vec::new();
    for file in files {
        for (n, line) in code_lines(&file).iter().enumerate() {
            if line
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == word)
            {
                let relative = file.strip_prefix(root).unwrap();
                found.push(format!("{}:{}", relative.display(), n + 1));
            }
        }
    }
    found
}

/// `unsafe` is the sandbox's `sys` module's alone: the crate denies it at its root (and any
/// `unsafe` block without its SAFETY comment), allows it on `mod sys;` only, and no other code
/// of the library or the workspace's crates holds an `unsafe` block, function or impl (the
/// tests' own signals to process groups are theirs).
#[test]
fn unsafe_code_is_denied_outside_the_sandboxs_sys_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = std::fs::read_to_string(root.join("crates/sandbox/src/lib.rs")).unwrap();
    assert!(
        lib.contains("\n#![deny(unsafe_code)]\n"),
        "the sandbox crate denies unsafe"
    );
    assert!(lib.contains("\n#![deny(clippy::undocumented_unsafe_blocks)]\n"));
    assert!(lib.contains("\n#[allow(unsafe_code)]\nmod sys;\n"));
    let allows: Vec<String> = ["src", "crates", "tests"]
        .iter()
        .flat_map(|dir| code_naming(root, &[dir], "allow"))
        .filter(|at| {
            let (path, line) = at.rsplit_once(':').unwrap();
            let n: usize = line.parse().unwrap();
            let text = std::fs::read_to_string(root.join(path)).unwrap();
            text.lines().nth(n - 1).unwrap().contains("unsafe_code")
        })
        .map(|at| at.rsplit_once(':').unwrap().0.to_string())
        .collect();
    assert_eq!(
        allows,
        ["crates/sandbox/src/lib.rs"],
        "allow(unsafe_code) elsewhere"
    );
    let lines = code_naming(root, &["src", "crates"], "unsafe");
    let outside: Vec<&String> = lines
        .iter()
        .filter(|at| !at.starts_with("crates/sandbox/src/sys.rs:"))
        .collect();
    assert!(outside.is_empty(), "unsafe outside sys.rs: {outside:?}");
    assert!(
        !lines.is_empty(),
        "sys.rs holds the unsafe the sandbox needs"
    );
}

/// A version triple of `rust-version` text (`1.88` is 1.88.0).
fn rust_version(text: &str) -> (u32, u32, u32) {
    let mut parts = text.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let mut next = || parts.next().unwrap_or(0);
    (next(), next(), next())
}

/// `rust-version` is what `cargo install --locked` needs: no locked dependency asks for a
/// newer Rust than the packages of this workspace claim. (The standard library calls are
/// checked against it by clippy's `incompatible_msrv`, which CI runs.)
#[test]
fn the_rust_version_claimed_covers_every_locked_dependency() {
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = metadata["packages"].as_array().unwrap();
    let members: Vec<&str> = metadata["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    let claimed: Vec<(u32, u32, u32)> = packages
        .iter()
        .filter(|p| members.contains(&p["id"].as_str().unwrap()))
        .map(|p| rust_version(p["rust_version"].as_str().expect("a rust-version")))
        .collect();
    let least = *claimed.iter().min().unwrap();
    assert_eq!(least, rust_version(env!("CARGO_PKG_RUST_VERSION")));
    for package in packages {
        if let Some(needed) = package["rust_version"].as_str() {
            assert!(
                rust_version(needed) <= least,
                "{} {} needs Rust {needed}, newer than the {least:?} claimed",
                package["name"],
                package["version"]
            );
        }
    }
}
