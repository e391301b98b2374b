//! The published JSON contract: every document a command prints with `--json`, and the records
//! a3s-iso keeps on disk, validated against the schemas in `schemas/`.
//!
//! The validator is a compact one for the subset of JSON Schema (draft 2020-12) the schemas
//! use. It is stricter than the schemas themselves on one point: a property a schema does not
//! declare is an error here (published consumers must tolerate added fields; this project
//! must document every field it prints).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

use serde_json::{Value, json};

use crate::fixture::Fixture;

const SCHEMA_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/schemas");

/// The keywords the schemas may use: anything else is a typo or a feature this validator
/// does not check, and fails `every_schema_file_is_well_formed`.
const KEYWORDS: [&str; 17] = [
    "$schema",
    "$id",
    "$defs",
    "$ref",
    "title",
    "description",
    "type",
    "const",
    "enum",
    "pattern",
    "minimum",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "anyOf",
    "oneOf",
];

/// Loads schema files from a directory and validates values against them.
struct Validator {
    dir: PathBuf,
    /// A property no schema declares is an error (as `additionalProperties: false` would make
    /// it); without it, the schemas are read as published (added fields are v1-compatible).
    strict: bool,
}

impl Validator {
    /// The strict validator: every field printed must be declared.
    fn new() -> Validator {
        Validator {
            dir: PathBuf::from(SCHEMA_DIR),
            strict: true,
        }
    }

    /// The validator a consumer of the published schemas would be.
    fn as_published() -> Validator {
        Validator {
            strict: false,
            ..Validator::new()
        }
    }

    /// A schema file, parsed once per test binary (every document the suite reads is checked).
    fn load(&self, file: &str) -> Value {
        static CACHE: OnceLock<Mutex<HashMap<PathBuf, Value>>> = OnceLock::new();
        let path = self.dir.join(file);
        let cache = CACHE.get_or_init(Default::default);
        if let Some(schema) = cache.lock().unwrap().get(&path) {
            return schema.clone();
        }
        let schema = self.parse(file);
        cache.lock().unwrap().insert(path, schema.clone());
        schema
    }

    fn parse(&self, file: &str) -> Value {
        let path = self.dir.join(file);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file} is not JSON: {e}"))
    }

    /// The errors of `value` against the schema file `file` (empty: valid).
    fn errors(&self, file: &str, value: &Value) -> Vec<String> {
        let schema = self.load(file);
        let mut errors = Vec::new();
        self.check(file, &schema, value, "$", &mut errors);
        errors
    }

    /// Resolves `other.schema.json#/$defs/x` or `#/$defs/x` (relative to `file`).
    fn resolve(&self, file: &str, reference: &str) -> (String, Value) {
        let (target, pointer) = reference.split_once('#').unwrap_or((reference, ""));
        let target = if target.is_empty() { file } else { target };
        let doc = self.load(target);
        let found = doc
            .pointer(pointer)
            .unwrap_or_else(|| panic!("{file}: $ref {reference} resolves to nothing"))
            .clone();
        (target.to_string(), found)
    }

    fn check(&self, file: &str, schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
        if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
            let (target, resolved) = self.resolve(file, reference);
            self.check(&target, &resolved, value, at, errors);
        }
        if let Some(types) = schema.get("type")
            && !type_matches(types, value)
        {
            errors.push(format!("{at}: {value} is not of type {types}"));
            return;
        }
        if let Some(expected) = schema.get("const")
            && expected != value
        {
            errors.push(format!("{at}: {value} is not {expected}"));
        }
        if let Some(options) = schema.get("enum").and_then(Value::as_array)
            && !options.contains(value)
        {
            errors.push(format!("{at}: {value} is not one of {options:?}"));
        }
        self.check_scalar(schema, value, at, errors);
        self.check_object(file, schema, value, at, errors);
        if let (Some(items), Some(array)) = (schema.get("items"), value.as_array()) {
            for (i, item) in array.iter().enumerate() {
                self.check(file, items, item, &format!("{at}[{i}]"), errors);
            }
        }
        self.check_alternatives(file, schema, value, at, errors);
    }

    fn check_scalar(&self, schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
        if let (Some(pattern), Some(text)) = (
            schema.get("pattern").and_then(Value::as_str),
            value.as_str(),
        ) && !compiled(pattern).is_match(text)
        {
            errors.push(format!("{at}: {text:?} does not match {pattern}"));
        }
        if let (Some(min), Some(number)) = (
            schema.get("minimum").and_then(Value::as_f64),
            value.as_f64(),
        ) && number < min
        {
            errors.push(format!("{at}: {number} is below {min}"));
        }
    }

    fn check_object(
        &self,
        file: &str,
        schema: &Value,
        value: &Value,
        at: &str,
        errors: &mut Vec<String>,
    ) {
        let Some(object) = value.as_object() else {
            return;
        };
        for key in schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !object.contains_key(key) {
                errors.push(format!("{at}: required field {key:?} is missing"));
            }
        }
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        for (key, item) in object {
            match properties.get(key) {
                Some(sub) => self.check(file, sub, item, &format!("{at}.{key}"), errors),
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(true)) => {}
                    Some(sub @ Value::Object(_)) => {
                        self.check(file, sub, item, &format!("{at}.{key}"), errors)
                    }
                    // Strict: a field no schema declares is undocumented (or renamed).
                    _ if self.strict => {
                        errors.push(format!("{at}: field {key:?} is not in the schema"))
                    }
                    _ => {}
                },
            }
        }
    }

    fn check_alternatives(
        &self,
        file: &str,
        schema: &Value,
        value: &Value,
        at: &str,
        errors: &mut Vec<String>,
    ) {
        let matching = |options: &Vec<Value>| {
            options
                .iter()
                .filter(|option| {
                    let mut inner = Vec::new();
                    self.check(file, option, value, at, &mut inner);
                    inner.is_empty()
                })
                .count()
        };
        if let Some(options) = schema.get("anyOf").and_then(Value::as_array)
            && matching(options) == 0
        {
            errors.push(format!("{at}: {value} matches none of anyOf"));
        }
        if let Some(options) = schema.get("oneOf").and_then(Value::as_array) {
            let n = matching(options);
            if n != 1 {
                errors.push(format!(
                    "{at}: {value} matches {n} of oneOf, not exactly one"
                ));
            }
        }
    }
}

/// A schema's pattern, compiled once.
fn compiled(pattern: &str) -> regex::Regex {
    static CACHE: OnceLock<Mutex<HashMap<String, regex::Regex>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut cache = cache.lock().unwrap();
    cache
        .entry(pattern.to_string())
        .or_insert_with(|| regex::Regex::new(pattern).unwrap())
        .clone()
}

fn type_matches(types: &Value, value: &Value) -> bool {
    let one = |name: &str| match name {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        other => panic!("unknown type {other}"),
    };
    match types {
        Value::String(name) => one(name),
        Value::Array(names) => names.iter().filter_map(Value::as_str).any(one),
        other => panic!("type must be a string or a list, not {other}"),
    }
}

/// The schema file of a document, from its own `schema` field.
fn schema_file(doc: &Value) -> String {
    let name = doc["schema"].as_str().expect("a schema field");
    if name == "a3s.code.agent-change-set.v1" {
        return "change-set.schema.json".into();
    }
    if name == "a3s.code.agent-change-set-request.v1" {
        return "change-set-request.schema.json".into();
    }
    let kind = name
        .strip_prefix("a3s-iso.")
        .unwrap_or_else(|| panic!("{name} is not an a3s-iso schema"));
    format!("{kind}.schema.json")
}

/// Checks a document of any test against its published schema, read as published: a field
/// the schema does not declare passes (the strict checks of this module find those), and so
/// does a kind that has no schema file yet.
pub fn assert_conforms(doc: &Value) {
    let file = schema_file(doc);
    if !Path::new(SCHEMA_DIR).join(&file).is_file() {
        return;
    }
    let errors = Validator::as_published().errors(&file, doc);
    assert!(errors.is_empty(), "against {file}:\n{errors:#?}\n{doc:#}");
}

/// Asserts that `doc` is valid against the schema its `schema` field names, strictly; returns
/// the file.
pub(crate) fn assert_valid(what: &str, doc: &Value) -> String {
    let file = schema_file(doc);
    let errors = Validator::new().errors(&file, doc);
    assert!(
        errors.is_empty(),
        "{what} against {file}:\n{errors:#?}\n{doc:#}"
    );
    file
}

/// A schema of the `$defs` of `common.schema.json`, for the validator's own tests.
fn common(def: &str) -> Value {
    json!({ "$ref": format!("common.schema.json#/$defs/{def}") })
}

fn errors_of(schema: &Value, value: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    Validator::new().check("common.schema.json", schema, value, "$", &mut errors);
    errors
}

#[test]
fn the_validator_rejects_what_it_should() {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": { "type": "string" },
            "count": { "type": "integer", "minimum": 0 },
            "state": { "enum": ["a", "b"] },
            "tree": common("tree_id"),
            "maybe": { "type": ["string", "null"] },
            "either": { "oneOf": [{ "const": 1 }, { "type": "integer", "minimum": 5 }] },
            "list": { "type": "array", "items": { "type": "boolean" } }
        },
        "required": ["name", "count"]
    });
    let good = json!({
        "name": "x", "count": 1, "state": "a", "maybe": null, "either": 1,
        "tree": format!("git-tree:{}", "a".repeat(40)), "list": [true]
    });
    assert_eq!(errors_of(&schema, &good), Vec::<String>::new());
    let bad = |change: &dyn Fn(&mut Value), expect: &str| {
        let mut doc = good.clone();
        change(&mut doc);
        let errors = errors_of(&schema, &doc);
        assert!(
            errors.iter().any(|e| e.contains(expect)),
            "{doc}: expected an error with {expect:?}, got {errors:?}"
        );
    };
    bad(&|d| d["count"] = json!("1"), "is not of type");
    bad(&|d| d["count"] = json!(1.5), "is not of type");
    bad(&|d| d["count"] = json!(-1), "is below");
    bad(&|d| d["maybe"] = json!(3), "is not of type");
    bad(&|d| d["list"] = json!([true, "no"]), "$.list[1]");
    bad(&|d| d["state"] = json!("c"), "is not one of");
    bad(
        &|d| d.as_object_mut().unwrap().remove("name").map(drop).unwrap(),
        "required field \"name\"",
    );
    bad(
        &|d| {
            let count = d.as_object_mut().unwrap().remove("count").unwrap();
            d["cnt"] = count;
        },
        "field \"cnt\" is not in the schema",
    );
    bad(&|d| d["tree"] = json!("a".repeat(40)), "does not match");
    bad(
        &|d| d["tree"] = json!(format!("git-tree:{}", "A".repeat(40))),
        "does not match",
    );
    bad(&|d| d["either"] = json!(3), "matches 0 of oneOf");
    // Read as published, an added field passes; a missing one still does not.
    let mut added = good.clone();
    added["new_field"] = json!(1);
    let mut published = Vec::new();
    Validator::as_published().check("common.schema.json", &schema, &added, "$", &mut published);
    assert_eq!(published, Vec::<String>::new());
    assert!(!errors_of(&schema, &added).is_empty());
    added.as_object_mut().unwrap().remove("name");
    Validator::as_published().check("common.schema.json", &schema, &added, "$", &mut published);
    assert_eq!(published.len(), 1, "{published:?}");
    // Both alternatives: not exactly one.
    let both = json!({ "oneOf": [{ "type": "integer" }, { "minimum": 0 }] });
    assert!(!errors_of(&both, &json!(2)).is_empty());
    let any = json!({ "anyOf": [{ "type": "string" }, { "type": "null" }] });
    assert!(errors_of(&any, &json!(null)).is_empty());
    assert!(!errors_of(&any, &json!(1)).is_empty());
}

#[test]
fn every_schema_file_is_well_formed_and_documented() {
    let contract = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/json.md"))
        .expect("docs/json.md");
    let validator = Validator::new();
    let mut files: Vec<String> = std::fs::read_dir(SCHEMA_DIR)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert!(files.len() > 15, "{files:?}");
    for file in &files {
        assert!(file.ends_with(".schema.json"), "{file}");
        let schema = validator.load(file);
        walk(&validator, file, &schema);
        assert!(
            contract.contains(&format!("(../schemas/{file})")),
            "docs/json.md links no {file}"
        );
        // A document's schema names itself: `a3s-iso.<kind>.v1` lives in `<kind>.v1.schema.json`.
        if let Some(name) = schema
            .pointer("/properties/schema/const")
            .and_then(Value::as_str)
        {
            assert_eq!(schema_file(&json!({ "schema": name })), *file);
            assert_eq!(schema["title"], name, "{file}");
        }
    }
}

/// Every keyword is one the validator knows; every `$ref` resolves.
fn walk(validator: &Validator, file: &str, schema: &Value) {
    let Some(object) = schema.as_object() else {
        return;
    };
    for (key, value) in object {
        assert!(
            KEYWORDS.contains(&key.as_str()),
            "{file}: unknown keyword {key}"
        );
        match key.as_str() {
            "$ref" => {
                validator.resolve(file, value.as_str().unwrap());
            }
            "properties" | "$defs" => {
                for sub in value.as_object().unwrap().values() {
                    walk(validator, file, sub);
                }
            }
            "anyOf" | "oneOf" => {
                for sub in value.as_array().unwrap() {
                    walk(validator, file, sub);
                }
            }
            "items" | "additionalProperties" => walk(validator, file, value),
            _ => {}
        }
    }
    if let (Some(required), Some(properties)) = (
        object.get("required").and_then(Value::as_array),
        object.get("properties").and_then(Value::as_object),
    ) {
        for key in required {
            assert!(
                properties.contains_key(key.as_str().unwrap()),
                "{file}: {key} is required but not declared"
            );
        }
    }
}

/// Runs `a3s-iso --json ARGS` in `dir`, checks the exit status and validates the document.
fn checked(
    fx: &Fixture,
    dir: &Path,
    args: &[&str],
    code: i32,
    seen: &mut BTreeSet<String>,
) -> Value {
    let (got, doc) = fx.json_in(dir, args);
    assert_eq!(got, code, "{args:?}: {doc:#}");
    seen.insert(assert_valid(&format!("{args:?}"), &doc));
    doc
}

/// Every command's success document, each outcome a test can provoke, and the records on
/// disk, against their schemas.
#[test]
fn every_command_document_matches_its_schema() {
    let fx = Fixture::new();
    let mut seen = BTreeSet::new();
    let bound = checked(&fx, &fx.src, &["bind", "-s", "demo"], 0, &mut seen);
    run_capture_verify(&fx, &mut seen);
    let applied = promote_and_read(&fx, &mut seen);
    records_on_disk(&fx, &applied, &mut seen);
    fx.commit_all("take the agent's work");
    conflict_and_empty(&fx, &mut seen);
    sweep_retain_discard(&fx, &mut seen);
    checked(&fx, &fx.src, &["version"], 0, &mut seen);
    checked(&fx, &fx.src, &["config"], 0, &mut seen);
    checked(&fx, &fx.src, &["profile", "diff"], 0, &mut seen);
    let (code, doctor) = fx.json(&["doctor"]);
    assert!(code == 0 || code == 4, "{doctor}");
    seen.insert(assert_valid("doctor", &doctor));
    error_documents(&fx, &mut seen);
    pool_gc_and_remote(&fx, &mut seen);
    discard_all(&fx, &mut seen);
    let init = checked(&fx, &fx.src, &["init", "claude"], 0, &mut seen);
    assert_eq!(init["changed"], true, "{init}");
    let published: BTreeSet<String> = std::fs::read_dir(SCHEMA_DIR)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| f != "common.schema.json")
        .collect();
    let unchecked: Vec<&String> = published.difference(&seen).collect();
    assert!(
        unchecked.is_empty(),
        "no real document checked against {unchecked:?}"
    );
    // The schemas are strict enough to notice a renamed field and a bare tree id.
    let mut renamed = bound.clone();
    let tree = renamed
        .as_object_mut()
        .unwrap()
        .remove("base_tree")
        .unwrap();
    renamed["base_tree_id"] = tree.clone();
    assert!(
        !Validator::new()
            .errors("bind.v1.schema.json", &renamed)
            .is_empty()
    );
    let mut bare = bound.clone();
    bare["base_tree"] = json!(tree.as_str().unwrap().trim_start_matches("git-tree:"));
    assert!(
        !Validator::new()
            .errors("bind.v1.schema.json", &bare)
            .is_empty()
    );
}

/// A run that changes files, one that fails, a capture, and verify of it and of a tampered copy.
fn run_capture_verify(fx: &Fixture, seen: &mut BTreeSet<String>) {
    let src = &fx.src;
    checked(fx, src, &["bind", "-s", "ro", "--read-only"], 0, seen);
    checked(fx, src, &["path", "-s", "demo"], 0, seen);
    let edit = "echo 'agent line' >> README.md; echo new > added.txt";
    let run = [
        "run",
        "-s",
        "demo",
        "--no-sandbox",
        "--run-id",
        "edit",
        "--",
        "sh",
        "-c",
        edit,
    ];
    checked(fx, src, &run, 0, seen);
    let failed = [
        "run",
        "-s",
        "demo",
        "--no-sandbox",
        "--run-id",
        "bad",
        "--",
        "sh",
        "-c",
        "exit 3",
    ];
    checked(fx, src, &failed, 3, seen);
    // The environment's names are in the document, its values never.
    let env = [
        "run",
        "-s",
        "demo",
        "--no-sandbox",
        "--run-id",
        "env",
        "--env",
        "SET_FOR_THE_SCHEMA=value-never-printed",
        "--",
        "true",
    ];
    let named = checked(fx, src, &env, 0, seen);
    let passed = named["sandbox"]["env_passed"].as_array().unwrap();
    assert!(passed.contains(&json!("SET_FOR_THE_SCHEMA")), "{named}");
    assert!(passed.contains(&json!("PATH")), "{named}");
    assert!(named["sandbox"]["env_dropped"].is_array(), "{named}");
    assert!(
        !named.to_string().contains("value-never-printed"),
        "{named}"
    );
    checked(
        fx,
        src,
        &["capture", "-s", "demo", "--run-id", "cap"],
        0,
        seen,
    );
    let stored = src.join(".git/a3s-iso/runs/demo/cap.json");
    checked(fx, src, &["verify", stored.to_str().unwrap()], 0, seen);
    changes_request(fx, &stored, seen);
    let mut tampered: Value = serde_json::from_slice(&std::fs::read(&stored).unwrap()).unwrap();
    assert_valid("the stored change set", &tampered);
    tampered["patch_bytes"] = json!(1);
    let tampered_path = fx.root.join("tampered.json");
    std::fs::write(&tampered_path, tampered.to_string()).unwrap();
    let invalid = checked(
        fx,
        src,
        &["verify", tampered_path.to_str().unwrap()],
        5,
        seen,
    );
    assert_eq!(invalid["valid"], false, "{invalid}");
    assert_eq!(invalid["rule"], "patch_bytes", "{invalid}");
}

/// A change-set request for the run `stored` holds, against its schema, answered with that
/// document; the same request for an unknown run is `run_not_found`, with an extra field
/// `change_set_invalid` naming the rule and the field.
fn changes_request(fx: &Fixture, stored: &Path, seen: &mut BTreeSet<String>) {
    let document: Value = serde_json::from_slice(&std::fs::read(stored).unwrap()).unwrap();
    let identity = &document["identity"];
    let mut request = crate::fixture::change_set_request(
        identity["agent_release_identity"].as_str().unwrap(),
        identity["session_id"].as_str().unwrap(),
        identity["run_id"].as_str().unwrap(),
    );
    seen.insert(assert_valid("a change-set request", &request));
    let file = fx.root.join("request.json");
    let args = ["changes", "--request", file.to_str().unwrap()];
    std::fs::write(&file, request.to_string()).unwrap();
    let answer = checked(fx, &fx.src, &args, 0, seen);
    assert_eq!(answer, document);
    request["identity"]["run_id"] = json!("no-such-run");
    std::fs::write(&file, request.to_string()).unwrap();
    error(fx, seen, &fx.src, &args, "run_not_found", 1);
    request["identity"]["extra"] = json!(1);
    assert!(
        !Validator::new()
            .errors("change-set-request.schema.json", &request)
            .is_empty()
    );
    std::fs::write(&file, request.to_string()).unwrap();
    let refused = checked(fx, &fx.src, &args, 5, seen);
    assert_eq!(refused["error"]["code"], "change_set_invalid", "{refused}");
    assert_eq!(refused["error"]["rule"], "unknown_field", "{refused}");
    assert_eq!(refused["error"]["field"], "identity.extra", "{refused}");
}

/// The read-only views and every promote outcome up to `applied` and `idempotent`; returns
/// the `applied` document.
fn promote_and_read(fx: &Fixture, seen: &mut BTreeSet<String>) -> Value {
    let src = &fx.src;
    checked(fx, src, &["list"], 0, seen);
    checked(fx, src, &["show", "-s", "demo"], 0, seen);
    checked(fx, src, &["diff", "-s", "demo"], 0, seen);
    let planned = checked(fx, src, &["promote", "-s", "demo", "--no-apply"], 0, seen);
    assert_eq!(planned["outcome"], "planned");
    let applied = checked(fx, src, &["promote", "-s", "demo"], 0, seen);
    assert_eq!(applied["outcome"], "applied");
    let again = checked(fx, src, &["promote", "-s", "demo"], 0, seen);
    assert_eq!(again["outcome"], "idempotent");
    checked(fx, src, &["log"], 0, seen);
    let runs = checked(fx, src, &["log", "--runs"], 0, seen);
    assert!(runs["runs"].as_array().unwrap().len() >= 4, "{runs}");
    checked(fx, src, &["show", "-s", "demo"], 0, seen);
    // The other scopes of diff: a document's change set, a promoted one, the cumulative one.
    let stored = src.join(".git/a3s-iso/runs/demo/cap.json");
    let of_document = checked(
        fx,
        src,
        &["diff", "--change-set", stored.to_str().unwrap()],
        0,
        seen,
    );
    assert_eq!(of_document["scope"], "change_set");
    let digest = applied["digest"].as_str().unwrap();
    let promoted = checked(fx, src, &["diff", "--digest", digest], 0, seen);
    assert_eq!(promoted["scope"], "promoted");
    let cumulative = checked(fx, src, &["diff", "-s", "demo", "--cumulative"], 0, seen);
    assert_eq!(cumulative["from_tree"], of_document["from_tree"]);
    applied
}

/// summary.json, the journal entry, the session record and the run exit record.
fn records_on_disk(fx: &Fixture, applied: &Value, seen: &mut BTreeSet<String>) {
    let state = fx.src.join(".git/a3s-iso");
    let read = |path: PathBuf| -> Value {
        serde_json::from_slice(&std::fs::read(&path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let artifacts = PathBuf::from(applied["artifacts"].as_str().unwrap());
    let summary = read(artifacts.join("summary.json"));
    assert_eq!(summary["schema"], "a3s-iso.promote.v1");
    assert_eq!(summary["outcome"], "applied");
    assert_valid("summary.json", &summary);
    let hex = applied["digest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:");
    let entry = read(state.join(format!("promoted/{hex}.json")));
    assert_eq!(entry["step"]["from_tree"], applied["from_tree"]);
    seen.insert(assert_valid("the journal entry", &entry));
    let record = read(state.join("sessions/demo.json"));
    assert!(
        record["base_tree"]
            .as_str()
            .unwrap()
            .starts_with("git-tree:")
    );
    seen.insert(assert_valid("the session record", &record));
    seen.insert(assert_valid(
        "the run exit record",
        &read(state.join("run-exits/demo/bad.json")),
    ));
}

fn conflict_and_empty(fx: &Fixture, seen: &mut BTreeSet<String>) {
    fx.bind("idle");
    let empty = checked(fx, &fx.src, &["promote", "-s", "idle"], 0, seen);
    assert_eq!(empty["outcome"], "empty");
    fx.bind("late");
    std::fs::write(fx.isolation("late").join("late.txt"), "late\n").unwrap();
    fx.write("user.txt", "the user's own commit\n");
    fx.commit_all("the user moves on");
    let conflict = checked(fx, &fx.src, &["promote", "-s", "late"], 3, seen);
    assert_eq!(
        (conflict["outcome"].clone(), conflict["reason"].clone()),
        (json!("conflict"), json!("head_moved"))
    );
    checked(fx, &fx.src, &["overlaps"], 0, seen);
    let rebased = checked(fx, &fx.src, &["rebase", "-s", "late"], 0, seen);
    assert_eq!(rebased["outcome"], "rebased", "{rebased}");
    // Kept: the session goes on working below.
    let landed = checked(fx, &fx.src, &["land", "-s", "late", "--keep"], 0, seen);
    assert_eq!(landed["sessions"][0]["outcome"], "landed", "{landed}");
    assert_eq!(landed["sessions"][0]["cleanup"], "kept", "{landed}");
    let shown = checked(fx, &fx.src, &["show", "-s", "late"], 0, seen);
    assert_eq!(shown["state"], "landed", "{shown}");
}

fn sweep_retain_discard(fx: &Fixture, seen: &mut BTreeSet<String>) {
    fx.bind("kept");
    let mut owner = Command::new("sleep")
        .arg("600")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = owner.id().to_string();
    let (code, doc) = fx.json(&["bind", "-s", "dead", "--owner-pid", &pid]);
    assert_eq!(code, 0, "{doc}");
    owner.kill().unwrap();
    owner.wait().unwrap();
    // Named like an isolation, but a link: skipped, with a code and a detail.
    std::os::unix::fs::symlink(&fx.root, fx.root.join("work/.src.a3s-isolate-link")).unwrap();
    checked(
        fx,
        &fx.src,
        &["retain", "-s", "kept", "--reason", "look later"],
        0,
        seen,
    );
    checked(fx, &fx.src, &["sweep", "--dry-run"], 0, seen);
    let swept = checked(fx, &fx.src, &["sweep"], 0, seen);
    assert_eq!(swept["skipped"][0]["reason"], "symbolic_link", "{swept}");
    assert!(swept["skipped"][0]["detail"].is_string(), "{swept}");
    let kept: Vec<&Value> = swept["kept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| &k["reason"])
        .collect();
    assert!(kept.contains(&&json!("retained")), "{swept}");
    assert_eq!(swept["reclaimed"][0]["reason"], "owner_dead", "{swept}");
    checked(fx, &fx.src, &["list"], 0, seen);
    checked(fx, &fx.src, &["show", "-s", "dead"], 0, seen);
    checked(fx, &fx.src, &["discard", "-s", "demo"], 0, seen);
}

/// The pool (a warm bind, a recycling discard), a change set through a bare remote (push,
/// list, fetch, promote --from, an unknown digest, push --delete) and gc, local and remote.
fn pool_gc_and_remote(fx: &Fixture, seen: &mut BTreeSet<String>) {
    let src = &fx.src;
    let work = fx.root.join("work");
    fx.git(&work, &["init", "-q", "--bare", "-b", "main", "remote.git"]);
    let remote = work.join("remote.git");
    fx.git(src, &["remote", "add", "origin", remote.to_str().unwrap()]);
    fx.git(src, &["push", "-q", "origin", "HEAD:main"]);
    checked(fx, src, &["pool", "--size", "1"], 0, seen);
    let warm = checked(fx, src, &["bind", "-s", "warm", "--allow-dirty"], 0, seen);
    assert_eq!(warm["warm"], true, "{warm}");
    let isolation = PathBuf::from(warm["worktree"].as_str().unwrap());
    std::fs::write(isolation.join("remote.txt"), "travels\n").unwrap();
    let pushed = checked(fx, src, &["push", "-s", "warm"], 0, seen);
    let digest = pushed["digest"].as_str().unwrap().to_string();
    checked(fx, src, &["list", "--remote", "origin"], 0, seen);
    fx.git(&work, &["clone", "-q", remote.to_str().unwrap(), "b"]);
    let b = work.join("b");
    checked(fx, &b, &["fetch", "origin", "--digest", &digest], 0, seen);
    let from = ["promote", "--from", "origin", "--digest", &digest];
    let landed = checked(fx, &b, &from, 0, seen);
    assert_eq!(landed["outcome"], "applied", "{landed}");
    assert!(landed["fetched"].is_object(), "{landed}");
    let unknown = format!("sha256:{}", "ab".repeat(32));
    error(
        fx,
        seen,
        &b,
        &["promote", "--from", "origin", "--digest", &unknown],
        "change_set_not_found",
        1,
    );
    let recycled = checked(fx, src, &["discard", "-s", "warm", "--purge"], 0, seen);
    assert_eq!(recycled["recycled"], true, "{recycled}");
    assert!(!recycled["purged_items"].as_array().unwrap().is_empty());
    checked(fx, src, &["gc", "--dry-run", "--older-than", "0s"], 0, seen);
    let remote_gc = [
        "gc",
        "--older-than",
        "0s",
        "--remote",
        "origin",
        "--dry-run",
    ];
    let planned = checked(fx, src, &remote_gc, 0, seen);
    assert_eq!(
        planned["remote"]["deleted"][0],
        digest.as_str(),
        "{planned}"
    );
    checked(
        fx,
        src,
        &["push", "--delete", "--digest", &digest, "origin"],
        0,
        seen,
    );
    checked(fx, src, &["pool", "--size", "0"], 0, seen);
}

/// `discard --all` over every session left (read-only, retained, swept, missing, promoted …),
/// one of them busy with a run: that one stays, in `failed` with its code, and the exit status
/// is its failure's. Then `--purge` of them all. Each discarded session is reported as
/// `discard -s` reports one, without `schema`.
fn discard_all(fx: &Fixture, seen: &mut BTreeSet<String>) {
    let src = &fx.src;
    let (code, doc) = fx.json(&["bind", "-s", "busy", "--allow-dirty"]);
    assert_eq!(code, 0, "{doc}");
    let started = fx.root.join("busy-started");
    let release = fx.root.join("busy-release");
    let hold = format!(
        "touch '{}'; while [ ! -e '{}' ]; do sleep 0.05; done",
        started.display(),
        release.display()
    );
    let mut run = fx
        .cmd()
        .args(["run", "-s", "busy", "--no-sandbox", "--", "sh", "-c", &hold])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !started.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the run never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let all = checked(fx, src, &["discard", "--all"], 6, seen);
    std::fs::write(&release, "").unwrap();
    assert!(run.wait().unwrap().success());
    assert_eq!(
        all["failed"],
        json!([{
            "session_id": "busy",
            "code": "session_busy",
            "message": all["failed"][0]["message"].clone(),
        }]),
        "{all}"
    );
    let discarded = all["sessions"].as_array().unwrap();
    assert!(discarded.len() >= 5, "{all}");
    for session in discarded {
        let mut alone = session.clone();
        alone["schema"] = json!("a3s-iso.discard.v1");
        assert_valid("a session of discard --all", &alone);
    }
    let purged = checked(fx, src, &["discard", "--all", "--purge"], 0, seen);
    assert_eq!(purged["failed"], json!([]), "{purged}");
    assert!(
        purged["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["purged"] == true),
        "{purged}"
    );
    let (_, list) = fx.json(&["list", "--all"]);
    assert_eq!(list["sessions"], json!([]), "{list}");
}

/// `discard --all` reports each session as `discard` does: its item schema is discard.v1's
/// body, field for field (a `$ref` to discard.v1 would require the `schema` field, which the
/// items do not carry).
#[test]
fn discard_all_reports_sessions_in_discards_shape() {
    let validator = Validator::new();
    let one = validator.load("discard.v1.schema.json");
    let all = validator.load("discard-all.v1.schema.json");
    let item = &all["$defs"]["discarded"];
    let mut body = one["properties"].as_object().unwrap().clone();
    body.remove("schema");
    assert_eq!(item["properties"], Value::Object(body));
    let required: Vec<&Value> = one["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| *r != "schema")
        .collect();
    assert_eq!(
        item["required"]
            .as_array()
            .unwrap()
            .iter()
            .collect::<Vec<_>>(),
        required
    );
}

/// Runs a command that must fail with `code` and exit `exit`, and validates its error document.
fn error(
    fx: &Fixture,
    seen: &mut BTreeSet<String>,
    dir: &Path,
    args: &[&str],
    code: &str,
    exit: i32,
) {
    let doc = checked(fx, dir, args, exit, seen);
    assert_eq!(doc["error"]["code"], code, "{args:?}: {doc}");
}

/// Each error code a test can provoke, as an error document with its exit status.
fn error_documents(fx: &Fixture, seen: &mut BTreeSet<String>) {
    let src = &fx.src;
    error(
        fx,
        seen,
        src,
        &["capture", "-s", "nope"],
        "session_not_found",
        1,
    );
    error(fx, seen, src, &["bind", "-s", "../escape"], "invalid_id", 5);
    error(fx, seen, src, &["bind", "--no-such-flag"], "usage", 2);
    // Not a repository.
    error(
        fx,
        seen,
        &fx.root,
        &["bind", "-s", "outside"],
        "isolation_unavailable",
        4,
    );
    let missing = fx.root.join("missing.json");
    error(
        fx,
        seen,
        src,
        &["verify", missing.to_str().unwrap()],
        "change_set_unavailable",
        1,
    );
    error(
        fx,
        seen,
        src,
        &["capture", "-s", "ro"],
        "read_only_session",
        1,
    );
    error(
        fx,
        seen,
        src,
        &[
            "run",
            "-s",
            "idle",
            "--no-sandbox",
            "--",
            "no-such-command-here",
        ],
        "command_not_found",
        127,
    );
    let mut other = Command::new("sleep")
        .arg("600")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = other.id().to_string();
    error(
        fx,
        seen,
        src,
        &["bind", "-s", "idle", "--owner-pid", &pid],
        "session_exists",
        1,
    );
    other.kill().unwrap();
    other.wait().unwrap();
    errors_of_state(fx, seen);
}

/// The errors that depend on what a session holds or where the source is, and a branch-mode
/// report on the way.
fn errors_of_state(fx: &Fixture, seen: &mut BTreeSet<String>) {
    let src = &fx.src;
    let tampered = fx.root.join("tampered.json");
    let tampered = tampered.to_str().unwrap();
    error(
        fx,
        seen,
        src,
        &["promote", "--change-set", tampered],
        "change_set_invalid",
        5,
    );
    std::fs::write(fx.isolation("late").join("c.txt"), "first\n").unwrap();
    checked(
        fx,
        src,
        &["capture", "-s", "late", "--run-id", "c"],
        0,
        seen,
    );
    std::fs::write(fx.isolation("late").join("c.txt"), "second\n").unwrap();
    error(
        fx,
        seen,
        src,
        &["capture", "-s", "late", "--run-id", "c"],
        "capture_conflict",
        3,
    );
    std::fs::write(fx.isolation("occupied"), "not an isolation\n").unwrap();
    error(
        fx,
        seen,
        src,
        &["bind", "-s", "occupied"],
        "isolation_path_occupied",
        1,
    );
    fx.bind("detached");
    std::fs::write(fx.isolation("detached").join("d.txt"), "d\n").unwrap();
    fx.git(src, &["checkout", "-q", "--detach"]);
    let branch = ["promote", "-s", "detached", "--mode", "branch"];
    error(fx, seen, src, &branch, "detached_source", 1);
    fx.git(src, &["checkout", "-q", "-"]);
    // Branch mode's report, with the commits it replayed.
    fx.bind("branch");
    let iso = fx.isolation("branch");
    std::fs::write(iso.join("b.txt"), "b\n").unwrap();
    fx.git(&iso, &["add", "b.txt"]);
    fx.git(&iso, &["commit", "-q", "-m", "the agent's commit"]);
    let report = checked(
        fx,
        src,
        &["promote", "-s", "branch", "--mode", "branch"],
        0,
        seen,
    );
    assert_eq!(report["outcome"], "applied", "{report}");
    assert!(
        !report["branch"]["replayed"].as_array().unwrap().is_empty(),
        "{report}"
    );
    fx.bind("vanished");
    std::fs::remove_dir_all(fx.isolation("vanished")).unwrap();
    error(
        fx,
        seen,
        src,
        &["capture", "-s", "vanished"],
        "isolation_missing",
        4,
    );
    fx.write("wip.txt", "local work\n");
    error(fx, seen, src, &["bind", "-s", "dirty"], "dirty_source", 1);
}

/// A record written before tree ids carried their prefix and records their `schema`: tree ids
/// in bare hex, no `schema` field.
fn make_old(path: &Path) {
    fn strip(value: &mut Value) {
        match value {
            Value::String(text) => {
                if let Some(bare) = text.strip_prefix("git-tree:") {
                    *text = bare.to_string();
                }
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            Value::Object(map) => map.values_mut().for_each(strip),
            _ => {}
        }
    }
    let mut record: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    record.as_object_mut().unwrap().remove("schema");
    strip(&mut record);
    std::fs::write(path, serde_json::to_vec_pretty(&record).unwrap()).unwrap();
}

/// a3s-iso reads the session records and journal entries it wrote before, and writes them in
/// the current form when it changes them.
#[test]
fn older_records_without_schema_and_with_bare_tree_ids_are_read() {
    let fx = Fixture::new();
    let state = fx.src.join(".git/a3s-iso");
    let record = state.join("sessions/old.json");
    fx.bind("old");
    std::fs::write(fx.isolation("old").join("one.txt"), "one\n").unwrap();
    let (code, first) = fx.json(&["capture", "-s", "old"]);
    assert_eq!(code, 0, "{first}");
    make_old(&record);
    let before = std::fs::read_to_string(&record).unwrap();
    assert!(
        !before.contains("git-tree:") && !before.contains("schema"),
        "{before}"
    );
    let (code, shown) = fx.json(&["show", "-s", "old"]);
    assert_eq!(code, 0, "{shown}");
    assert_valid("show of an older record", &shown);
    let (code, step1) = fx.json(&["promote", "-s", "old"]);
    assert_eq!(
        (code, step1["outcome"].as_str()),
        (0, Some("applied")),
        "{step1}"
    );
    assert_eq!(step1["from_tree"], first["base_tree"]);
    let hex = step1["digest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:");
    let entry = state.join(format!("promoted/{hex}.json"));
    make_old(&entry);
    make_old(&record);
    // Step 2 starts from step 1's result, read from the older journal entry.
    std::fs::write(fx.isolation("old").join("two.txt"), "two\n").unwrap();
    let (code, second) = fx.json(&["capture", "-s", "old"]);
    assert_eq!(code, 0, "{second}");
    let (code, step2) = fx.json(&["promote", "-s", "old"]);
    assert_eq!(
        (code, step2["outcome"].as_str()),
        (0, Some("applied")),
        "{step2}"
    );
    assert_eq!(step2["step"], 2, "{step2}");
    assert_eq!(step2["from_tree"], first["result_tree"], "{step2}");
    assert_eq!(std::fs::read(fx.src.join("two.txt")).unwrap(), b"two\n");
    let (code, log) = fx.json(&["log"]);
    assert_eq!(code, 0, "{log}");
    assert_eq!(log["promotions"].as_array().unwrap().len(), 2, "{log}");
    // The record a3s-iso rewrote is in the current form again.
    let rewritten: Value = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    assert_valid("the rewritten session record", &rewritten);
    assert_eq!(rewritten["last_run"]["result_tree"], second["result_tree"]);
}
