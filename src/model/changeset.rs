//! The portable change-set document (`a3s.code.agent-change-set.v1`): building, reading and
//! validating. Validation checks every rule and names the rule and the field that failed.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::base::error::{ChangeSetRule, Error, NoDocument, Result};
use crate::base::ids::{Digest, TreeId};
use crate::git::{Git, PatchInput};

/// The document's `schema`.
pub(crate) const SCHEMA: &str = "a3s.code.agent-change-set.v1";
/// The `identity` object's `schema`.
pub(crate) const IDENTITY_SCHEMA: &str = "a3s.code.agent-run-identity.v1";
/// The `identity` object's `protocol`.
pub(crate) const PROTOCOL: &str = "a3s.code.agent.v1";
/// The patch's `format`.
pub(crate) const FORMAT: &str = "git_unified_diff_v1";
/// How the patch is carried (`encoding`).
pub(crate) const ENCODING: &str = "base64";
/// The largest patch a document carries.
pub(crate) const MAX_PATCH_BYTES: u64 = 4_194_304;
/// The largest document: a 4 MiB patch in base64 plus room for the other fields.
pub(crate) const MAX_DOCUMENT_BYTES: u64 = 5_723_477;

pub use crate::store::state::RunState;

/// The `identity` object of a document: who produced the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    /// Always `a3s.code.agent-run-identity.v1`.
    pub schema: String,
    /// Always `a3s.code.agent.v1`.
    pub protocol: String,
    /// `sha256:<64 hex>` naming the release of the agent (or a3s-iso) that ran.
    pub agent_release_identity: String,
    /// The session the run belongs to.
    pub session_id: String,
    /// The run.
    pub run_id: String,
}

/// A change-set document: the patch from a base tree to a result tree, with its digest, in the
/// field order and spelling of the format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeSet {
    /// Always `a3s.code.agent-change-set.v1`.
    pub schema: String,
    /// Who produced the run.
    pub identity: Identity,
    /// How the run ended.
    pub state: RunState,
    /// Always `git_unified_diff_v1`.
    pub format: String,
    /// Always `base64`.
    pub encoding: String,
    /// `git-tree:<hex>`: the tree the patch applies to.
    pub base_tree: TreeId,
    /// `git-tree:<hex>`: the tree the patch produces.
    pub result_tree: TreeId,
    /// `sha256:<64 hex>` of exactly the patch bytes.
    pub patch_digest: Digest,
    /// The decoded patch's size.
    pub patch_bytes: u64,
    /// The patch, standard base64 with padding.
    pub patch_base64: String,
    /// When the result was observed, in milliseconds since the epoch.
    pub observed_at_ms: u64,
}

/// The default `agent_release_identity`: the sha256 of `a3s-iso/<version>`.
pub(crate) fn default_release_identity() -> String {
    crate::model::snapshot::digest_bytes(
        format!("a3s-iso/{}", env!("CARGO_PKG_VERSION")).as_bytes(),
    )
}

/// What a new document is built from; the constant fields are filled in.
pub(crate) struct NewChangeSet<'a> {
    pub release_identity: &'a str,
    pub session_id: &'a str,
    pub run_id: &'a str,
    pub state: RunState,
    pub base_tree: &'a TreeId,
    pub result_tree: &'a TreeId,
    pub patch: &'a [u8],
    pub patch_digest: &'a Digest,
    pub observed_at_ms: u64,
}

impl ChangeSet {
    /// Builds a document (the patch is encoded, its size taken).
    pub(crate) fn new(n: NewChangeSet<'_>) -> ChangeSet {
        ChangeSet {
            schema: SCHEMA.into(),
            identity: Identity {
                schema: IDENTITY_SCHEMA.into(),
                protocol: PROTOCOL.into(),
                agent_release_identity: n.release_identity.into(),
                session_id: n.session_id.into(),
                run_id: n.run_id.into(),
            },
            state: n.state,
            format: FORMAT.into(),
            encoding: ENCODING.into(),
            base_tree: n.base_tree.clone(),
            result_tree: n.result_tree.clone(),
            patch_digest: n.patch_digest.clone(),
            patch_bytes: n.patch.len() as u64,
            patch_base64: BASE64.encode(n.patch),
            observed_at_ms: n.observed_at_ms,
        }
    }

    /// The document without its patch (`patch_base64` empty; `patch_bytes` and `patch_digest`
    /// still describe it), as a remote change set carries it beside the patch blob.
    pub(crate) fn detached(&self) -> ChangeSet {
        ChangeSet {
            patch_base64: String::new(),
            ..self.clone()
        }
    }

    /// The document as stored and written out: pretty JSON with a final newline.
    pub(crate) fn to_json(&self) -> Result<Vec<u8>> {
        let mut bytes = serde_json::to_vec_pretty(self)
            .map_err(|e| Error::internal(format!("cannot serialise a change set: {e}")))?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}

/// A document that passed every rule, with its decoded patch.
#[derive(Debug, Clone)]
pub struct Verified {
    /// The document.
    pub change_set: ChangeSet,
    /// Its patch, decoded.
    pub patch: Vec<u8>,
}

fn invalid(rule: ChangeSetRule, field: &str, detail: impl Into<String>) -> Error {
    Error::ChangeSetInvalid {
        rule,
        field: field.into(),
        detail: detail.into(),
    }
}

const TOP_FIELDS: &[&str] = &[
    "schema",
    "identity",
    "state",
    "format",
    "encoding",
    "base_tree",
    "result_tree",
    "patch_digest",
    "patch_bytes",
    "patch_base64",
    "observed_at_ms",
];
const IDENTITY_FIELDS: &[&str] = &[
    "schema",
    "protocol",
    "agent_release_identity",
    "session_id",
    "run_id",
];

fn check_fields(object: &Map<String, Value>, allowed: &[&str], prefix: &str) -> Result<()> {
    if let Some(unknown) = object.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(invalid(
            ChangeSetRule::UnknownField,
            &format!("{prefix}{unknown}"),
            "fields not in the format are rejected",
        ));
    }
    if let Some(missing) = allowed.iter().find(|k| !object.contains_key(**k)) {
        return Err(invalid(
            ChangeSetRule::MissingField,
            &format!("{prefix}{missing}"),
            "required",
        ));
    }
    Ok(())
}

fn string<'a>(object: &'a Map<String, Value>, key: &str, field: &str) -> Result<&'a str> {
    object[key]
        .as_str()
        .ok_or_else(|| invalid(ChangeSetRule::Type, field, "must be a string"))
}

fn exact(object: &Map<String, Value>, key: &str, field: &str, expected: &str) -> Result<()> {
    let value = string(object, key, field)?;
    if value != expected {
        return Err(invalid(
            ChangeSetRule::ExactString,
            field,
            format!("must be {expected:?}, not {value:?}"),
        ));
    }
    Ok(())
}

pub use crate::base::ids::MIN_DIGEST_PREFIX;
pub(crate) use crate::base::ids::{DigestQuery, is_sha256_digest};

fn sha256_field(object: &Map<String, Value>, key: &str, field: &str) -> Result<()> {
    let value = string(object, key, field)?;
    match is_sha256_digest(value) {
        true => Ok(()),
        false => Err(invalid(
            ChangeSetRule::Sha256Format,
            field,
            "must be sha256: and 64 lowercase hex digits",
        )),
    }
}

fn id_field(object: &Map<String, Value>, key: &str, field: &str) -> Result<()> {
    let value = string(object, key, field)?;
    let broken = if value.trim().is_empty() {
        "must not be blank"
    } else if value.len() > 256 {
        "must be at most 256 bytes"
    } else if value.contains(['\0', '\r', '\n']) {
        "must not contain NUL, CR or LF"
    } else {
        return Ok(());
    };
    Err(invalid(ChangeSetRule::IdFormat, field, broken))
}

fn tree_check(object: &Map<String, Value>, key: &str) -> Result<()> {
    let value = string(object, key, key)?;
    match value.strip_prefix(crate::base::ids::TREE_PREFIX) {
        Some(hex) if crate::base::ids::is_object_hex(hex) => Ok(()),
        _ => Err(invalid(
            ChangeSetRule::TreeFormat,
            key,
            "must be git-tree: and 40 or 64 lowercase hex digits",
        )),
    }
}

fn integer(object: &Map<String, Value>, key: &str) -> Result<u64> {
    object[key]
        .as_u64()
        .ok_or_else(|| invalid(ChangeSetRule::Type, key, "must be a non-negative integer"))
}

/// Checks a document against every rule of the format. Reads nothing but `bytes`.
pub(crate) fn verify(bytes: &[u8]) -> Result<Verified> {
    let value = checked_fields(bytes, MAX_DOCUMENT_BYTES, "")?;
    let patch = decode_patch(object_of(&value)?)?;
    let change_set: ChangeSet = serde_json::from_value(value)
        .map_err(|e| Error::internal(format!("a valid document did not deserialise: {e}")))?;
    Ok(Verified { change_set, patch })
}

/// The largest detached document (a document without its patch, as a remote change set
/// carries it): its fields only.
pub(crate) const MAX_DETACHED_BYTES: u64 = 65_536;

/// Checks a detached document: every rule of the format, except that `patch_base64` must be
/// empty and `patch_bytes` (not bound to the document limit) describes a patch carried beside
/// it, which the caller checks against `patch_bytes` and `patch_digest`.
pub(crate) fn verify_detached(bytes: &[u8]) -> Result<ChangeSet> {
    let value = checked_fields(bytes, MAX_DETACHED_BYTES, " of a detached document")?;
    let top = object_of(&value)?;
    integer(top, "patch_bytes")?;
    if !string(top, "patch_base64", "patch_base64")?.is_empty() {
        return Err(invalid(
            ChangeSetRule::DetachedPatch,
            "patch_base64",
            "must be empty: the patch is the blob beside the document",
        ));
    }
    serde_json::from_value(value)
        .map_err(|e| Error::internal(format!("a valid document did not deserialise: {e}")))
}

/// The top-level object of a document [`checked_fields`] accepted.
fn object_of(value: &Value) -> Result<&Map<String, Value>> {
    value
        .as_object()
        .ok_or_else(|| Error::internal("a checked document is not an object"))
}

/// `bytes` as one JSON object under the rules every document shares: at most `limit` bytes
/// (`what` names the limit in the message), JSON, no key twice in one object, an object.
fn parse_object(bytes: &[u8], limit: u64, what: &str) -> Result<Value> {
    if bytes.len() as u64 > limit {
        return Err(invalid(
            ChangeSetRule::DocumentSize,
            "(document)",
            format!("{} bytes, over the {limit}-byte limit{what}", bytes.len()),
        ));
    }
    // Before the value is parsed: one tree of the document in memory at a time (its patch
    // may be large). Bytes that are not JSON have no duplicate, and fail the parse below.
    if let Some(path) = crate::model::json::first_duplicate_key(bytes) {
        return Err(invalid(
            ChangeSetRule::DuplicateKey,
            &path,
            "a key appears twice in one object",
        ));
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|e| {
        invalid(
            ChangeSetRule::Json,
            "(document)",
            format!("not a JSON document: {e}"),
        )
    })?;
    if !value.is_object() {
        return Err(invalid(
            ChangeSetRule::Type,
            "(document)",
            "must be a JSON object",
        ));
    }
    Ok(value)
}

/// The `identity` object of a document's top level, with exactly the identity's fields.
fn identity_of(top: &Map<String, Value>) -> Result<&Map<String, Value>> {
    let identity = top["identity"]
        .as_object()
        .ok_or_else(|| invalid(ChangeSetRule::Type, "identity", "must be an object"))?;
    check_fields(identity, IDENTITY_FIELDS, "identity.")?;
    Ok(identity)
}

/// Checks the values of a run identity (`a3s.code.agent-run-identity.v1`), rule by rule in a
/// fixed order, wherever a document carries one.
fn check_identity(identity: &Map<String, Value>) -> Result<()> {
    exact(identity, "schema", "identity.schema", IDENTITY_SCHEMA)?;
    exact(identity, "protocol", "identity.protocol", PROTOCOL)?;
    sha256_field(
        identity,
        "agent_release_identity",
        "identity.agent_release_identity",
    )?;
    id_field(identity, "session_id", "identity.session_id")?;
    id_field(identity, "run_id", "identity.run_id")
}

/// The document parsed, with every rule but the patch's checked: its size against `limit`
/// (`what` names the limit in the message), JSON, duplicate keys, fields and their values.
fn checked_fields(bytes: &[u8], limit: u64, what: &str) -> Result<Value> {
    let value = parse_object(bytes, limit, what)?;
    let top = object_of(&value)?;
    check_fields(top, TOP_FIELDS, "")?;
    let identity = identity_of(top)?;
    check_values(top, identity)?;
    Ok(value)
}

/// Checks every field but the patch, rule by rule in a fixed order: the first rule broken is
/// the one reported.
fn check_values(top: &Map<String, Value>, identity: &Map<String, Value>) -> Result<()> {
    exact(top, "schema", "schema", SCHEMA)?;
    check_identity(identity)?;
    exact(top, "format", "format", FORMAT)?;
    exact(top, "encoding", "encoding", ENCODING)?;
    sha256_field(top, "patch_digest", "patch_digest")?;
    let state = string(top, "state", "state")?;
    if RunState::parse(state).is_none() {
        return Err(invalid(
            ChangeSetRule::State,
            "state",
            format!("must be completed, failed or cancelled, not {state:?}"),
        ));
    }
    tree_check(top, "base_tree")?;
    tree_check(top, "result_tree")?;
    if integer(top, "observed_at_ms")? == 0 {
        return Err(invalid(
            ChangeSetRule::ObservedAt,
            "observed_at_ms",
            "must be greater than 0",
        ));
    }
    Ok(())
}

/// The `schema` of a change-set request.
pub(crate) const REQUEST_SCHEMA: &str = "a3s.code.agent-change-set-request.v1";
/// The largest change-set request: its identity, generously escaped and indented.
pub(crate) const MAX_REQUEST_BYTES: u64 = 16_384;
const REQUEST_FIELDS: &[&str] = &["schema", "identity"];

/// Checks a change-set request (`a3s.code.agent-change-set-request.v1`: `schema` and the run
/// `identity`, nothing more) under the rules of the change-set document: its size, JSON,
/// duplicate keys, unknown and missing fields at every level, the exact strings and the
/// identity's rules. A broken rule is [`Error::RequestInvalid`], naming the rule and the field.
pub(crate) fn verify_request(bytes: &[u8]) -> Result<Identity> {
    let checked = || -> Result<Value> {
        let value = parse_object(bytes, MAX_REQUEST_BYTES, " of a change-set request")?;
        let top = object_of(&value)?;
        check_fields(top, REQUEST_FIELDS, "")?;
        let identity = identity_of(top)?;
        exact(top, "schema", "schema", REQUEST_SCHEMA)?;
        check_identity(identity)?;
        Ok(value)
    };
    let value = checked().map_err(|err| match err {
        Error::ChangeSetInvalid {
            rule,
            field,
            detail,
        } => Error::RequestInvalid {
            rule,
            field,
            detail,
        },
        other => other,
    })?;
    serde_json::from_value(value["identity"].clone())
        .map_err(|e| Error::internal(format!("a valid identity did not deserialise: {e}")))
}

/// The patch, decoded, after its size and its digest were checked.
fn decode_patch(top: &Map<String, Value>) -> Result<Vec<u8>> {
    let patch_bytes = integer(top, "patch_bytes")?;
    if patch_bytes > MAX_PATCH_BYTES {
        return Err(invalid(
            ChangeSetRule::PatchSize,
            "patch_bytes",
            format!("{patch_bytes} is over {MAX_PATCH_BYTES}"),
        ));
    }
    let encoded = string(top, "patch_base64", "patch_base64")?;
    let patch = BASE64.decode(encoded).map_err(|e| {
        invalid(
            ChangeSetRule::Base64,
            "patch_base64",
            format!("not standard padded base64: {e}"),
        )
    })?;
    if patch.len() as u64 != patch_bytes {
        return Err(invalid(
            ChangeSetRule::PatchBytes,
            "patch_bytes",
            format!("says {patch_bytes}, the decoded patch has {}", patch.len()),
        ));
    }
    let digest = crate::model::snapshot::digest_bytes(&patch);
    if digest != string(top, "patch_digest", "patch_digest")? {
        return Err(invalid(
            ChangeSetRule::Digest,
            "patch_digest",
            format!("the patch's sha256 is {digest}"),
        ));
    }
    Ok(patch)
}

/// Checks that a document's patch (`field` names where it is, `sections` counts its `diff
/// --git` headers) is one git reads whole: its digest only says the bytes are the ones the
/// document names, not that they are a patch, and git applies the sections before one it
/// cannot read and drops the rest. Parsing
/// needs no repository (`git apply --numstat`); whether it applies is promote's to find out.
pub(crate) fn check_patch(
    git: &Git,
    patch: PatchInput<'_>,
    sections: u64,
    field: &str,
) -> Result<()> {
    let empty = match patch {
        PatchInput::Bytes(bytes) => bytes.is_empty(),
        PatchInput::File(path) => std::fs::metadata(path).is_ok_and(|m| m.len() == 0),
    };
    if empty {
        return Ok(());
    }
    git.parse_patch(patch, sections)?.map_err(|why| {
        invalid(
            ChangeSetRule::Patch,
            field,
            format!("not a patch git can read: {why}"),
        )
    })
}

/// Reads and verifies a document from a file (or `-` for standard input), its patch included
/// ([`check_patch`]).
pub fn verify_file(git: &Git, path: &std::path::Path) -> Result<Verified> {
    let verified = verify_fields_of_file(path)?;
    let sections = crate::model::snapshot::count_files(&verified.patch);
    check_patch(
        git,
        PatchInput::Bytes(&verified.patch),
        sections,
        "patch_base64",
    )?;
    Ok(verified)
}

/// Reads and verifies a document from a file (or `-` for standard input). Either source is
/// read to at most one byte past the size limit, so a huge document is refused by the size rule
/// without being buffered whole.
fn verify_fields_of_file(path: &std::path::Path) -> Result<Verified> {
    let bytes = if path == std::path::Path::new("-") {
        read_bounded(std::io::stdin().lock(), MAX_DOCUMENT_BYTES)
            .map_err(|e| Error::io("cannot read standard input", e))?
    } else {
        let file = std::fs::File::open(path).map_err(|e| NoDocument::Unreadable {
            path: path.to_path_buf(),
            error: e.to_string(),
        })?;
        read_bounded(file, MAX_DOCUMENT_BYTES)
            .map_err(|e| Error::io(format!("cannot read {}", path.display()), e))?
    };
    verify(&bytes)
}

/// At most `limit + 1` bytes of `input`: enough to tell that it is too large.
pub(crate) fn read_bounded(input: impl std::io::Read, limit: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(input, limit + 1), &mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use crate::model::changeset::*;

    fn sample(patch: &[u8]) -> ChangeSet {
        ChangeSet::new(NewChangeSet {
            release_identity: &default_release_identity(),
            session_id: "s",
            run_id: "r",
            state: RunState::Completed,
            base_tree: &TreeId::new(crate::model::snapshot::EMPTY_TREE_SHA1).unwrap(),
            result_tree: &TreeId::new(crate::model::snapshot::EMPTY_TREE_SHA1).unwrap(),
            patch,
            patch_digest: &Digest::new(crate::model::snapshot::digest_bytes(patch)).unwrap(),
            observed_at_ms: 1,
        })
    }

    fn rule_of(doc: &Value) -> String {
        match verify(&serde_json::to_vec(doc).unwrap()) {
            Err(Error::ChangeSetInvalid { rule, field, .. }) => format!("{rule}@{field}"),
            other => panic!("expected invalid, got {other:?}"),
        }
    }

    #[test]
    fn a_built_document_verifies_including_an_empty_patch() {
        for patch in [&b""[..], b"diff --git a/x b/x\n"] {
            let doc = sample(patch);
            let verified = verify(&doc.to_json().unwrap()).unwrap();
            assert_eq!(verified.change_set, doc);
            assert_eq!(verified.patch, patch);
        }
    }

    #[test]
    fn each_rule_names_itself_and_its_field() {
        let good = serde_json::to_value(sample(b"abc")).unwrap();
        let with = |f: &dyn Fn(&mut Value)| {
            let mut doc = good.clone();
            f(&mut doc);
            rule_of(&doc)
        };
        assert_eq!(with(&|d| d["extra"] = 1.into()), "unknown_field@extra");
        assert_eq!(
            with(&|d| d["identity"]["extra"] = 1.into()),
            "unknown_field@identity.extra"
        );
        assert_eq!(
            with(&|d| {
                d.as_object_mut().unwrap().remove("state");
            }),
            "missing_field@state"
        );
        assert_eq!(with(&|d| d["schema"] = "x".into()), "exact_string@schema");
        assert_eq!(
            with(&|d| d["identity"]["protocol"] = "x".into()),
            "exact_string@identity.protocol"
        );
        assert_eq!(with(&|d| d["format"] = "x".into()), "exact_string@format");
        assert_eq!(
            with(&|d| d["encoding"] = "hex".into()),
            "exact_string@encoding"
        );
        assert_eq!(
            with(&|d| d["patch_digest"] = "sha256:ABC".into()),
            "sha256_format@patch_digest"
        );
        assert_eq!(
            with(&|d| d["identity"]["agent_release_identity"] = "md5:x".into()),
            "sha256_format@identity.agent_release_identity"
        );
        assert_eq!(
            with(&|d| d["identity"]["run_id"] = "a\nb".into()),
            "id_format@identity.run_id"
        );
        assert_eq!(
            with(&|d| d["identity"]["session_id"] = "  ".into()),
            "id_format@identity.session_id"
        );
        assert_eq!(
            with(&|d| d["identity"]["session_id"] = "x".repeat(257).into()),
            "id_format@identity.session_id"
        );
        assert_eq!(with(&|d| d["state"] = "done".into()), "state@state");
        assert_eq!(
            with(&|d| d["base_tree"] = "git-tree:123".into()),
            "tree_format@base_tree"
        );
        assert_eq!(
            with(&|d| d["result_tree"] = "tree:abc".into()),
            "tree_format@result_tree"
        );
        assert_eq!(
            with(&|d| d["observed_at_ms"] = 0.into()),
            "observed_at@observed_at_ms"
        );
        assert_eq!(
            with(&|d| d["patch_bytes"] = 4_194_305.into()),
            "patch_size@patch_bytes"
        );
        assert_eq!(
            with(&|d| d["patch_base64"] = "YWJj".trim_end_matches('j').into()),
            "base64@patch_base64"
        );
        assert_eq!(
            with(&|d| d["patch_bytes"] = 4.into()),
            "patch_bytes@patch_bytes"
        );
        assert_eq!(
            with(&|d| d["patch_digest"] = crate::model::snapshot::digest_bytes(b"abd").into()),
            "digest@patch_digest"
        );
        let huge = vec![b' '; MAX_DOCUMENT_BYTES as usize + 1];
        assert!(
            matches!(verify(&huge), Err(Error::ChangeSetInvalid { rule, .. }) if rule == ChangeSetRule::DocumentSize)
        );
    }

    /// One change to a built document: a field set to a value, removed, or an unknown one added.
    #[derive(Debug, Clone)]
    enum Mutation {
        Set(&'static str, Value),
        Remove(&'static str),
        Add(&'static str, String),
    }

    /// The object that holds `path` (`"a.b"` → `doc["a"]`) and the last key, if that object is
    /// still there (an earlier mutation may have removed or replaced it).
    fn parent_of<'a>(
        doc: &'a mut Value,
        path: &'a str,
    ) -> Option<(&'a mut Map<String, Value>, &'a str)> {
        let (parent, key) = match path.rsplit_once('.') {
            Some((parent, key)) => (doc.get_mut(parent)?, key),
            None => (doc, path),
        };
        Some((parent.as_object_mut()?, key))
    }

    impl Mutation {
        fn apply(&self, doc: &mut Value) {
            match self {
                Mutation::Set(path, value) => {
                    if let Some((object, key)) = parent_of(doc, path) {
                        object.insert(key.to_string(), value.clone());
                    }
                }
                Mutation::Remove(path) => {
                    if let Some((object, key)) = parent_of(doc, path) {
                        object.remove(key);
                    }
                }
                Mutation::Add(parent, key) => {
                    let parent = if parent.is_empty() {
                        Some(doc)
                    } else {
                        doc.get_mut(*parent)
                    };
                    if let Some(object) = parent.and_then(Value::as_object_mut) {
                        object.insert(key.clone(), Value::from(1));
                    }
                }
            }
        }
    }

    fn sha256_hex(bytes: &[u8]) -> String {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(bytes))
    }

    /// Values for one field: the right ones, near misses, and values of the wrong type.
    fn mutation() -> impl proptest::strategy::Strategy<Value = Mutation> {
        use proptest::prelude::*;
        let text = |s: &str| Value::from(s.to_string());
        let exact = |field: &'static str, good: &'static str| {
            prop_oneof![
                Just(good.to_string()),
                Just(good.to_uppercase()),
                Just(format!("{good} ")),
                Just(good.replace("v1", "v2")),
                Just(String::new()),
            ]
            .prop_map(move |v| Mutation::Set(field, Value::from(v)))
        };
        let id = |field: &'static str| {
            prop_oneof![
                "[A-Za-z0-9._-]{1,12}",
                "[ -~]{1,16}",
                Just(String::new()),
                "[ \t]{1,3}",
                "[a-z]{0,3}[\0\r\n][a-z]{0,3}",
                "x{254,258}",
                "é{127,129}",
                "[a-zé🦀 ]{1,8}",
            ]
            .prop_map(move |v| Mutation::Set(field, Value::from(v)))
        };
        let digest = |field: &'static str| {
            prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..8)
                    .prop_map(|b| format!("sha256:{}", sha256_hex(&b))),
                "sha256:[0-9a-f]{63,65}",
                "sha256:[0-9A-F]{64}",
                "sha1:[0-9a-f]{64}",
                "[0-9a-f]{64}",
                "sha256:[0-9a-g]{64}",
            ]
            .prop_map(move |v| Mutation::Set(field, Value::from(v)))
        };
        let tree = |field: &'static str| {
            prop_oneof![
                "git-tree:[0-9a-f]{40}",
                "git-tree:[0-9a-f]{64}",
                "git-tree:[0-9a-f]{39}",
                "git-tree:[0-9a-f]{41}",
                "git-tree:[0-9a-f]{63}",
                "git-tree:[0-9A-F]{40}",
                "tree:[0-9a-f]{40}",
                "[0-9a-f]{40}",
            ]
            .prop_map(move |v| Mutation::Set(field, Value::from(v)))
        };
        let number = |field: &'static str| {
            prop_oneof![
                Just(Value::from(0)),
                Just(Value::from(1)),
                (0u64..=8).prop_map(Value::from),
                Just(Value::from(MAX_PATCH_BYTES)),
                Just(Value::from(MAX_PATCH_BYTES + 1)),
                Just(Value::from(u64::MAX)),
                Just(Value::from(-1)),
                Just(Value::from(1.5)),
                Just(Value::from("1")),
                Just(Value::Null),
            ]
            .prop_map(move |v| Mutation::Set(field, v))
        };
        let base64 = prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..8).prop_map(|b| BASE64.encode(b)),
            proptest::collection::vec(any::<u8>(), 1..8)
                .prop_map(|b| BASE64.encode(b).trim_end_matches('=').to_string()),
            proptest::collection::vec(any::<u8>(), 1..8)
                .prop_map(|b| base64::engine::general_purpose::URL_SAFE.encode(b)),
            "[A-Za-z0-9+/=\\- \n]{0,12}",
        ]
        .prop_map(|v| Mutation::Set("patch_base64", Value::from(v)));
        let field = prop_oneof![
            Just("schema"),
            Just("identity"),
            Just("state"),
            Just("format"),
            Just("encoding"),
            Just("base_tree"),
            Just("result_tree"),
            Just("patch_digest"),
            Just("patch_bytes"),
            Just("patch_base64"),
            Just("observed_at_ms"),
            Just("identity.schema"),
            Just("identity.protocol"),
            Just("identity.agent_release_identity"),
            Just("identity.session_id"),
            Just("identity.run_id"),
        ];
        prop_oneof![
            exact("schema", SCHEMA),
            exact("identity.schema", IDENTITY_SCHEMA),
            exact("identity.protocol", PROTOCOL),
            exact("format", FORMAT),
            exact("encoding", ENCODING),
            id("identity.session_id"),
            id("identity.run_id"),
            digest("identity.agent_release_identity"),
            digest("patch_digest"),
            tree("base_tree"),
            tree("result_tree"),
            number("observed_at_ms"),
            number("patch_bytes"),
            base64,
            prop_oneof![
                Just(text("completed")),
                Just(text("failed")),
                Just(text("cancelled")),
                Just(text("Completed")),
                Just(text("running")),
                Just(text("")),
                Just(Value::Null),
            ]
            .prop_map(|v| Mutation::Set("state", v)),
            field.clone().prop_map(Mutation::Remove),
            field.prop_map(|f| Mutation::Set(f, Value::from(vec![1, 2]))),
            (prop_oneof![Just(""), Just("identity")], "[a-z_]{1,8}")
                .prop_map(|(parent, key)| Mutation::Add(parent, key)),
        ]
    }

    /// The rules of the format, written out from the contract independently of `verify`.
    fn rules_accept(doc: &Value) -> bool {
        let pattern = |re: &str, v: &Value| {
            v.as_str()
                .is_some_and(|s| regex::Regex::new(re).unwrap().is_match(s))
        };
        let has_exactly = |v: &Value, keys: &[&str]| {
            v.as_object()
                .is_some_and(|o| o.len() == keys.len() && keys.iter().all(|k| o.contains_key(*k)))
        };
        let id_ok = |v: &Value| {
            v.as_str().is_some_and(|s| {
                !s.chars().all(char::is_whitespace)
                    && s.len() <= 256
                    && !s.contains(['\0', '\r', '\n'])
            })
        };
        if !has_exactly(doc, TOP_FIELDS) || !has_exactly(&doc["identity"], IDENTITY_FIELDS) {
            return false;
        }
        let identity = &doc["identity"];
        let Some(patch) = doc["patch_base64"]
            .as_str()
            .and_then(|s| BASE64.decode(s).ok())
        else {
            return false;
        };
        doc["schema"] == SCHEMA
            && identity["schema"] == IDENTITY_SCHEMA
            && identity["protocol"] == PROTOCOL
            && doc["format"] == FORMAT
            && doc["encoding"] == ENCODING
            && pattern("^sha256:[0-9a-f]{64}$", &identity["agent_release_identity"])
            && pattern("^sha256:[0-9a-f]{64}$", &doc["patch_digest"])
            && id_ok(&identity["session_id"])
            && id_ok(&identity["run_id"])
            && ["completed", "failed", "cancelled"]
                .iter()
                .any(|s| doc["state"] == *s)
            && pattern("^git-tree:([0-9a-f]{40}|[0-9a-f]{64})$", &doc["base_tree"])
            && pattern(
                "^git-tree:([0-9a-f]{40}|[0-9a-f]{64})$",
                &doc["result_tree"],
            )
            && doc["observed_at_ms"].as_u64().is_some_and(|n| n > 0)
            && doc["patch_bytes"].as_u64() == Some(patch.len() as u64)
            && patch.len() as u64 <= MAX_PATCH_BYTES
            && doc["patch_digest"] == format!("sha256:{}", sha256_hex(&patch))
    }

    /// A document built from `patch`, then changed by each mutation in turn.
    fn mutated(patch: &[u8], mutations: &[Mutation]) -> Value {
        let mut doc = serde_json::to_value(sample(patch)).unwrap();
        for m in mutations {
            m.apply(&mut doc);
        }
        doc
    }

    /// The generated documents reach every rule, and some pass: the property below can fail.
    #[test]
    fn the_mutations_reach_every_rule() {
        use proptest::strategy::{Strategy, ValueTree};
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = proptest::collection::vec(mutation(), 1..3);
        let mut rules = std::collections::BTreeSet::new();
        let mut accepted = 0;
        for _ in 0..4096 {
            let mutations = strategy.new_tree(&mut runner).unwrap().current();
            match verify(&serde_json::to_vec(&mutated(b"abc", &mutations)).unwrap()) {
                Ok(_) => accepted += 1,
                Err(Error::ChangeSetInvalid { rule, .. }) => {
                    rules.insert(rule);
                }
                Err(other) => panic!("{other:?}"),
            }
        }
        assert!(accepted >= 100, "only {accepted} documents passed");
        let every: std::collections::BTreeSet<ChangeSetRule> = [
            ChangeSetRule::UnknownField,
            ChangeSetRule::MissingField,
            ChangeSetRule::Type,
            ChangeSetRule::ExactString,
            ChangeSetRule::Sha256Format,
            ChangeSetRule::IdFormat,
            ChangeSetRule::State,
            ChangeSetRule::TreeFormat,
            ChangeSetRule::ObservedAt,
            ChangeSetRule::PatchSize,
            ChangeSetRule::Base64,
            ChangeSetRule::PatchBytes,
            ChangeSetRule::Digest,
        ]
        .into_iter()
        .collect();
        let missed: Vec<_> = every.difference(&rules).collect();
        assert!(missed.is_empty(), "rules never reached: {missed:?}");
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config {
            cases: 1024,
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        })]

        /// Built documents with fields changed to good values, near misses and wrong types: the
        /// validator accepts exactly those the rules accept, and says so as `change_set_invalid`.
        #[test]
        fn verify_accepts_exactly_what_the_rules_accept(
            patch in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
            mutations in proptest::collection::vec(mutation(), 0..3),
        ) {
            let doc = mutated(&patch, &mutations);
            let result = verify(&serde_json::to_vec(&doc).unwrap());
            proptest::prop_assert_eq!(result.is_ok(), rules_accept(&doc), "{}", doc);
            match result {
                Ok(verified) => proptest::prop_assert_eq!(
                    verified.patch,
                    BASE64.decode(doc["patch_base64"].as_str().unwrap()).unwrap()
                ),
                Err(err) => proptest::prop_assert!(
                    matches!(err, Error::ChangeSetInvalid { .. }),
                    "{:?}", err
                ),
            }
        }
    }

    #[test]
    fn run_states_keep_their_document_spelling() {
        for state in RunState::ALL {
            let json = serde_json::to_value(state).unwrap();
            assert_eq!(json, state.as_str());
            assert_eq!(serde_json::from_value::<RunState>(json).unwrap(), state);
            assert_eq!(RunState::parse(state.as_str()), Some(state));
        }
        assert!(serde_json::from_value::<RunState>("done".into()).is_err());
        assert_eq!(RunState::parse("Completed"), None);
        let mut doc = serde_json::to_value(sample(b"")).unwrap();
        assert_eq!(doc["state"], "completed");
        doc["state"] = "done".into();
        assert!(serde_json::from_value::<ChangeSet>(doc).is_err());
    }

    proptest::proptest! {
        /// Any patch round-trips through a document; flipping any byte of it breaks the digest.
        #[test]
        fn documents_round_trip(patch in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512), flip in 0usize..512) {
            let doc = sample(&patch);
            let verified = verify(&doc.to_json().unwrap()).unwrap();
            proptest::prop_assert_eq!(&verified.patch, &patch);
            if !patch.is_empty() {
                let mut tampered = patch.clone();
                let i = flip % tampered.len();
                tampered[i] ^= 0x01;
                let mut value = serde_json::to_value(&doc).unwrap();
                value["patch_base64"] = BASE64.encode(&tampered).into();
                proptest::prop_assert!(verify(&serde_json::to_vec(&value).unwrap()).is_err());
            }
        }
    }
}
