//! Outcomes, states and reasons are enums: nothing in `src/` compares one as a string. The
//! codes are the ones the enums spell (every `=> "snake_case"` arm of an `as_str` table), and
//! the test looks for the shapes a string comparison of one takes.

use std::path::Path;

use regex::Regex;

/// The shapes of a string comparison of a code. `{codes}` is the alternation of every code.
const SHAPES: [&str; 4] = [
    // `outcome.as_str() == "applied"`, whatever the literal: an enum's code compared as text.
    r#"\.as_str\(\)\s*[!=]=\s*""#,
    // `x == "conflict"`, `"conflict" != x`, `== Some("conflict")`.
    r#"[!=]=\s*(Some\()?"({codes})""#,
    r#""({codes})"\s*[!=]="#,
    // A match arm on a code: `"applied" =>`, `"applied" | "idempotent" =>`.
    r#"^\s*"({codes})"(\s*\|\s*"[a-z_]+")*\s*(if\b.*)?=>"#,
];

/// A line that compares a file name's extension compares no code, whatever the literal
/// (`json` is also a change-set rule).
const NOT_A_CODE: &str = r"\.extension\(\)";

/// Lines that compare a literal that is also a code, but are no comparison of one: file (from
/// the repository root) and the trimmed line.
const ALLOWED: [(&str, &str); 4] = [
    // `bind --owner none`: the option's own value, parsed by `OwnerChoice::parse`.
    ("src/ops/bind.rs", r#"if text == "none" {"#),
    // The word `run` among the raw arguments clap refused: a subcommand's name (the MCP
    // server's `Tool` spells the same word as a tool's).
    (
        "src/cli/output.rs",
        r#"let is_run = raw.iter().skip(1).any(|a| a == "run");"#,
    ),
    // git's own name of an object type, as `cat-file` prints it.
    ("src/git/ops.rs", r#"kind == "commit""#),
    ("src/git/ops.rs", r#"kind == "tree""#),
];

/// The codes the enums of `src/` spell.
fn codes(sources: &[(String, String)]) -> Vec<String> {
    // A match arm naming a code, or a variant of a `wire_enum!` with its name.
    let arm = Regex::new(r#"=>\s*"([a-z][a-z0-9]*(_[a-z0-9]+)*)",?\s*$"#).unwrap();
    let named =
        Regex::new(r#"^\s*[A-Z][A-Za-z0-9]* = "([a-z][a-z0-9]*(_[a-z0-9]+)*)",?\s*$"#).unwrap();
    let mut codes: Vec<String> = sources
        .iter()
        .flat_map(|(_, text)| text.lines())
        .filter_map(|line| {
            (arm.captures(line).or_else(|| named.captures(line))).map(|c| c[1].to_string())
        })
        .collect();
    codes.sort();
    codes.dedup();
    codes
}

/// The library's and the CLI's code without comments and without their `#[cfg(test)]` module
/// (tests compare codes in documents as strings on purpose).
fn sources(dir: &Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            let code: Vec<&str> = code
                .lines()
                .map(|l| {
                    if l.trim_start().starts_with("//") {
                        ""
                    } else {
                        l
                    }
                })
                .collect();
            out.push((path.display().to_string(), code.join("\n")));
        }
    }
}

/// Every line of `sources` that compares a code as a string, as `file:line: text`.
fn string_comparisons(sources: &[(String, String)], codes: &[String]) -> Vec<String> {
    let alternation = codes.join("|");
    let shapes: Vec<Regex> = SHAPES
        .iter()
        .map(|s| Regex::new(&s.replace("{codes}", &alternation)).unwrap())
        .collect();
    let not_a_code = Regex::new(NOT_A_CODE).unwrap();
    let mut found = Vec::new();
    for (file, text) in sources {
        for (n, line) in text.lines().enumerate() {
            let allowed = ALLOWED
                .iter()
                .any(|(f, l)| file.ends_with(f) && line.trim() == *l);
            if !allowed && !not_a_code.is_match(line) && shapes.iter().any(|s| s.is_match(line)) {
                found.push(format!("{file}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn no_outcome_reason_or_state_is_compared_as_a_string() {
    let mut all = Vec::new();
    sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut all);
    let codes = codes(&all);
    for code in [
        "applied",
        "conflict",
        "head_moved",
        "bound",
        "completed",
        "symbolic_link",
    ] {
        assert!(
            codes.iter().any(|c| c == code),
            "{code} not found among {codes:?}"
        );
    }
    let found = string_comparisons(&all, &codes);
    assert!(
        found.is_empty(),
        "compare the enum, not its code:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_flags_string_comparisons_and_nothing_else() {
    let codes: Vec<String> = ["applied", "conflict", "head_moved", "bound", "json"]
        .map(String::from)
        .to_vec();
    let flagged = [
        r#"    if outcome.as_str() == "applied" {"#,
        r#"    if report.reason.as_str() != "x" {"#,
        r#"    let done = doc["outcome"] == "applied";"#,
        r#"    if "conflict" == outcome {"#,
        r#"    if reason != Some("head_moved") {"#,
        r#"        "conflict" => 3,"#,
        r#"        "applied" | "idempotent" => 0,"#,
        r#"        "bound" if alive => true,"#,
        r#"    if rule == "json" {"#,
    ];
    let legitimate = [
        r#"            Outcome::Applied => "applied","#,
        r#"        self.mode == "160000""#,
        r#"    if text == "none" {"#,
        r#"            [_, "missing"] | [_, "ambiguous"] => found.push(CatFile::Missing),"#,
        r#"        .find(|state| state.as_str() == text)"#,
        r#"    push("bound", outcome.bound_revision.clone());"#,
        r#"    matches!(self.outcome, Outcome::Conflict | Outcome::Partial)"#,
        r#"    if applied == "yes" {"#,
        r#"            p.extension().is_some_and(|e| e == "json")"#,
    ];
    for line in flagged {
        let found = string_comparisons(&[("f.rs".into(), line.into())], &codes);
        assert_eq!(found.len(), 1, "not flagged: {line}");
    }
    let allowed = string_comparisons(
        &[(
            "/x/src/ops/bind.rs".into(),
            "    if text == \"none\" {".into(),
        )],
        &["none".into()],
    );
    assert!(allowed.is_empty(), "{allowed:?}");
    let elsewhere = string_comparisons(
        &[("/x/src/other.rs".into(), "    if text == \"none\" {".into())],
        &["none".into()],
    );
    assert_eq!(elsewhere.len(), 1, "the allowance is for one file only");
    for line in legitimate {
        let found = string_comparisons(&[("f.rs".into(), line.into())], &codes);
        assert!(found.is_empty(), "flagged: {found:?}");
    }
    let table = "    match self {\n        Reason::HeadMoved => \"head_moved\",\n    }";
    assert_eq!(codes_of(table), ["head_moved"]);
}

fn codes_of(text: &str) -> Vec<String> {
    codes(&[("f.rs".into(), text.into())])
}
