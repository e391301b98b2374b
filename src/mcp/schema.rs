//! The tools' arguments as JSON Schema (`inputSchema`): each tool's parameters, named as the
//! command line names its options (`--allow-network` is `allow_network`).

use serde_json::{Map, Value, json};

/// What kind of value a parameter takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string.
    Text,
    /// A boolean, false when left out (a command-line flag).
    Flag,
    /// An array of strings.
    Texts,
    /// One of these strings.
    Choice(&'static [&'static str]),
}

/// One parameter of a tool.
#[derive(Debug, Clone, Copy)]
pub struct Param {
    /// Its name in `arguments`.
    pub name: &'static str,
    /// The kind of value it takes.
    pub kind: Kind,
    /// What it does, for the agent choosing arguments.
    pub description: &'static str,
    /// Whether a call must give it.
    pub required: bool,
}

const fn param(name: &'static str, kind: Kind, description: &'static str) -> Param {
    Param {
        name,
        kind,
        description,
        required: false,
    }
}

/// `session_id` for the tools that act on one existing session.
pub const SESSION: Param = param(
    "session_id",
    Kind::Text,
    "The session (default: the isolation the server runs in, or the source's only live session)",
);

/// A tool's `inputSchema`: an object of its parameters, nothing else.
pub fn input_schema(params: &[Param]) -> Value {
    let properties: Map<String, Value> = params
        .iter()
        .map(|p| (p.name.to_string(), property(p)))
        .collect();
    let required: Vec<&str> = params
        .iter()
        .filter(|p| p.required)
        .map(|p| p.name)
        .collect();
    let mut schema = json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    });
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

fn property(p: &Param) -> Value {
    let mut schema = match p.kind {
        Kind::Text => json!({ "type": "string" }),
        Kind::Flag => json!({ "type": "boolean", "default": false }),
        Kind::Texts => json!({ "type": "array", "items": { "type": "string" } }),
        Kind::Choice(values) => json!({ "type": "string", "enum": values }),
    };
    if p.required && p.kind == Kind::Texts {
        schema["minItems"] = json!(1);
    }
    schema["description"] = json!(p.description);
    schema
}

pub(crate) const BIND: &[Param] = &[
    param(
        "session_id",
        Kind::Text,
        "The session id (generated when omitted): letters, digits, '.', '_' and '-'",
    ),
    param(
        "allow_dirty",
        Kind::Flag,
        "Bind at HEAD even though the source has local changes (they stay out of the isolation)",
    ),
    param(
        "carry_wip",
        Kind::Flag,
        "Start from the source's working state: HEAD plus staged, unstaged and untracked changes",
    ),
    param(
        "submodules",
        Kind::Flag,
        "Initialise submodules in the isolation, each cloned from the source's own copy",
    ),
    param(
        "read_only",
        Kind::Flag,
        "Record a session without an isolation tree; writing tools then refuse it",
    ),
    param(
        "base_dir",
        Kind::Text,
        "Create the isolation in this directory instead of next to the source",
    ),
    param(
        "resume",
        Kind::Flag,
        "Rebuild a swept, discarded or missing isolation of session_id and restore its work",
    ),
    param(
        "owner",
        Kind::Text,
        "Who owns the session: \"none\" (sweep keeps it) or \"pid:N\" (default: the process that \
         started this server, the agent's client)",
    ),
    param(
        "copy_ignored",
        Kind::Texts,
        "Copy the source's ignored files under these pathspecs (build caches) into the new isolation",
    ),
];

pub(crate) const RUN: &[Param] = &[
    SESSION,
    Param {
        required: true,
        ..param(
            "command",
            Kind::Texts,
            "The command and its arguments, each exactly (no shell: use [\"sh\", \"-c\", \"...\"] \
             for one)",
        )
    },
    param(
        "run_id",
        Kind::Text,
        "Name the run (generated when omitted); a run id is never reused",
    ),
    param(
        "timeout",
        Kind::Text,
        "Stop the command after this long (SIGTERM, SIGKILL 2 s later): 500ms, 90s, 10m, 1h",
    ),
    param(
        "allow_network",
        Kind::Flag,
        "Let the command reach the network (denied by default)",
    ),
    param(
        "allow_write",
        Kind::Texts,
        "Also let the command write to these existing paths",
    ),
    param(
        "allow_read",
        Kind::Texts,
        "Let the command read these paths although they are hidden (secrets such as ~/.ssh) or private",
    ),
    param(
        "env",
        Kind::Texts,
        "Pass the variable NAME (or a pattern such as NODE_*) to the command, or set NAME=VALUE; \
         otherwise it gets an allowlist of the server's environment",
    ),
    param(
        "allow_host",
        Kind::Texts,
        "Let the command reach these hosts (HOST[:PORT], *.domain, an IP address, or @crates, \
         @npm, @pypi, @github, @anthropic, @openai) through a3s-iso's proxy; not with \
         allow_network",
    ),
    param(
        "publish",
        Kind::Texts,
        "Publish these ports inside on the host's 127.0.0.1 while the run lives \
         ([HOST_PORT:]PORT); not with allow_network",
    ),
    param(
        "profile",
        Kind::Text,
        "Run under this profile: claude, codex, aider, generic or one of the user's \
         configuration (its home paths, variables and hosts)",
    ),
    param(
        "ignore_config",
        Kind::Flag,
        "Do not read the repository's .a3s-iso.toml at all",
    ),
    param(
        "no_sandbox",
        Kind::Flag,
        "Run the command as a plain host process, without the sandbox (no allow_* then)",
    ),
    param(
        "release_identity",
        Kind::Text,
        "The agent_release_identity recorded in the run's change set (sha256:<64 hex>)",
    ),
    param(
        "output",
        Kind::Text,
        "Append the command's stdout and stderr to this file instead of returning them with the result",
    ),
];

pub(crate) const DIFF: &[Param] = &[
    SESSION,
    param(
        "change_set",
        Kind::Text,
        "Show a change-set document's patch (verified first) instead of a session's",
    ),
    param(
        "digest",
        Kind::Text,
        "Show a promoted change set from its artifacts: sha256:<hex>, or a unique prefix of at least 8 hex digits",
    ),
    param(
        "cumulative",
        Kind::Flag,
        "The session's whole work since its base tree, promoted steps included (default: what \
         promote would apply now)",
    ),
    param(
        "patch",
        Kind::Flag,
        "Also return the patch itself (its first 64 KiB) after the document",
    ),
];

pub(crate) const SHOW: &[Param] = &[SESSION];

pub(crate) const LIST: &[Param] = &[param(
    "all",
    Kind::Flag,
    "Every session: discarded ones too, and those of every source this user has bound from",
)];

pub(crate) const OVERLAPS: &[Param] = &[];

pub(crate) const CAPTURE: &[Param] = &[
    SESSION,
    param(
        "run_id",
        Kind::Text,
        "Name the capture; capturing the same run id again returns the stored document",
    ),
    param(
        "output",
        Kind::Text,
        "Also write the change-set document to this file",
    ),
    param(
        "release_identity",
        Kind::Text,
        "The agent_release_identity recorded in the document (sha256:<64 hex>)",
    ),
];

pub(crate) const DISCARD: &[Param] = &[
    SESSION,
    param(
        "all",
        Kind::Flag,
        "Every session bound from this checkout in this store, one after the other",
    ),
    param(
        "purge",
        Kind::Flag,
        "Also delete the session's record, refs, retained branch, change sets and artifacts",
    ),
];

pub(crate) const PROMOTE: &[Param] = &[
    SESSION,
    param(
        "change_set",
        Kind::Text,
        "Promote a change-set document instead of a session (validated completely first)",
    ),
    param(
        "mode",
        Kind::Choice(&["patch", "branch"]),
        "How the work lands: uncommitted changes (patch, the default) or the session's commits \
         replayed onto the current branch (branch)",
    ),
    param(
        "no_apply",
        Kind::Flag,
        "Write the artifacts (patch, summary.json) and stop: the source is left untouched",
    ),
    param(
        "artifacts",
        Kind::Text,
        "Where to write the patch and summary.json (default: under the state dir)",
    ),
    param(
        "note",
        Kind::Text,
        "Record this digest as promoted by other means, so that promoting it later is idempotent",
    ),
    param(
        "rebase",
        Kind::Flag,
        "When the source's HEAD moved: rebase the session onto it first, and promote only if that was clean",
    ),
    param(
        "reapply",
        Kind::Flag,
        "Land again a promoted change set whose landing is no longer in the checkout",
    ),
    param(
        "digest",
        Kind::Text,
        "With reapply: the promoted change set to land again (sha256:<hex> or a unique prefix)",
    ),
    param(
        "message",
        Kind::Text,
        "Branch mode: the message of the commit that holds the session's uncommitted changes",
    ),
    param(
        "onto_head",
        Kind::Flag,
        "Apply a change-set document onto the checkout even though its base tree is not HEAD's",
    ),
];

pub(crate) const LAND: &[Param] = &[
    param(
        "sessions",
        Kind::Texts,
        "The sessions to land, in this order (default with neither this nor all: continue a \
         queue that stopped)",
    ),
    param(
        "all",
        Kind::Flag,
        "Every live session of the source, oldest bind first",
    ),
    param(
        "test",
        Kind::Text,
        "A shell command that must exit 0 in each session's sandbox on its rebased tree",
    ),
    param(
        "mode",
        Kind::Choice(&["squash", "branch", "patch"]),
        "How each session lands: one commit (squash, the default), its commits replayed \
         (branch), or uncommitted changes (patch, one session only)",
    ),
    param(
        "message",
        Kind::Text,
        "The message of the squashed commit (branch mode: of the commit of uncommitted changes)",
    ),
    param(
        "keep_going",
        Kind::Flag,
        "Go on with the rest after a session that does not land",
    ),
    param(
        "no_sandbox",
        Kind::Flag,
        "Run the test command as a plain host process, without the sandbox",
    ),
    param(
        "keep",
        Kind::Flag,
        "Keep each landed session's isolation (to go on working in steps); by default it goes \
         back to the pool, or is discarded with its evidence kept",
    ),
];
