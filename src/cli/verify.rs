use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use a3s_iso::base::error::{ChangeSetRule, Error, Result};
use a3s_iso::context::Context;
use a3s_iso::model::changeset::{RunState, verify_file};

use super::Output;

/// `a3s-iso verify`'s arguments.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The change-set document to check (- for standard input)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

#[derive(Serialize)]
struct VerifyOutcome {
    valid: bool,
    patch_digest: String,
    patch_bytes: u64,
    session_id: String,
    run_id: String,
    state: RunState,
}

/// What `verify --json` says of a document that breaks a rule, the rule and field as data.
#[derive(Serialize)]
struct Invalid<'a> {
    valid: bool,
    rule: ChangeSetRule,
    field: &'a str,
    message: String,
    hint: Option<String>,
}

/// Verifies the document and renders what it holds. With `--json`, a document that breaks a
/// rule is a verify result (`valid: false`, `rule`, `field`, exit 5), not an error document;
/// one that cannot be read is still an error (`change_set_unavailable`).
pub fn run(ctx: &Context, args: &VerifyArgs, out: &Output) -> Result<i32> {
    let verified = verify_file(&ctx.git, &args.file);
    if out.json
        && let Err(err @ Error::ChangeSetInvalid { rule, field, .. }) = &verified
    {
        let invalid = Invalid {
            valid: false,
            rule: *rule,
            field,
            message: err.to_string(),
            hint: a3s_iso::interface::errors::hint(err),
        };
        out.document("a3s-iso.verify.v1", &invalid);
        return Ok(err.code().exit_code());
    }
    let cs = verified?.change_set;
    let outcome = VerifyOutcome {
        valid: true,
        patch_digest: cs.patch_digest.into(),
        patch_bytes: cs.patch_bytes,
        session_id: cs.identity.session_id,
        run_id: cs.identity.run_id,
        state: cs.state,
    };
    if out.json_done("a3s-iso.verify.v1", &outcome) {
        return Ok(0);
    }
    out.headline_toned("valid", super::Tone::Good);
    out.fields(&[
        ("patch digest", outcome.patch_digest),
        ("size", super::human_bytes(outcome.patch_bytes)),
        ("session", outcome.session_id),
        ("run", outcome.run_id),
        ("state", outcome.state.to_string()),
    ]);
    Ok(0)
}
