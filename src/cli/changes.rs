use std::path::PathBuf;

use clap::Args;

use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
use a3s_iso::ops::changes::{answer, read_request};

use super::Output;

/// `a3s-iso changes`'s arguments.
#[derive(Debug, Args)]
pub struct ChangesArgs {
    /// The change-set request (a3s.code.agent-change-set-request.v1) to answer (- for standard input)
    #[arg(long, value_name = "FILE")]
    pub request: PathBuf,
}

/// Answers the request with the run's change-set document exactly as stored, on stdout.
pub fn run(ctx: &Context, args: &ChangesArgs, out: &Output) -> Result<i32> {
    let identity = read_request(&args.request)?;
    let answer = answer(ctx, &identity)?;
    out.raw_bytes(&answer.bytes);
    if !out.json {
        let cs = &answer.change_set;
        out.note(&format!(
            "run {} of session {}: {}, {} ({})",
            cs.identity.run_id,
            cs.identity.session_id,
            cs.state,
            super::human_bytes(cs.patch_bytes),
            cs.patch_digest
        ));
    }
    Ok(0)
}
