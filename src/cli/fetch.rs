use clap::Args;

use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
use a3s_iso::services::remote::{DEFAULT_MAX_BYTES, FetchRequest, fetch};

use super::{Output, Tone};

/// `a3s-iso fetch`'s arguments.
#[derive(Debug, Args)]
pub struct FetchArgs {
    /// The remote to fetch from (a configured remote; a URL needs --allow-url)
    #[arg(value_name = "REMOTE")]
    pub remote: String,

    /// Only this change set: sha256:<hex> or a unique prefix of at least 8 hex digits
    /// (default: every change set on the remote)
    #[arg(long, value_name = "DIGEST")]
    pub digest: Option<String>,

    /// The largest patch to read, in bytes (K, M, G suffixes: powers of 1024)
    #[arg(long, value_name = "BYTES", value_parser = a3s_iso::interface::request::parse_bytes,
        default_value_t = DEFAULT_MAX_BYTES)]
    pub max_bytes: u64,

    /// Accept a URL or path that is not a configured remote
    #[arg(long)]
    pub allow_url: bool,
}

pub fn run(ctx: &Context, args: &FetchArgs, out: &Output) -> Result<i32> {
    let outcome = fetch(
        ctx,
        &FetchRequest {
            remote: args.remote.clone(),
            digest: args.digest.clone(),
            allow_url: args.allow_url,
            max_bytes: args.max_bytes,
        },
    )?;
    for refused in &outcome.refused {
        out.warn(&format!(
            "{} refused ({}) at {}: {}",
            refused.digest, refused.rule, refused.field, refused.detail
        ));
    }
    if out.json_done("a3s-iso.fetch.v1", &outcome) {
        return Ok(0);
    }
    let (n, remote) = (outcome.fetched.len(), &outcome.remote.name);
    let headline = format!("fetched {n} change set{} from {remote}", super::plural(n));
    let tone = match outcome.refused.is_empty() {
        true => Tone::Good,
        false => Tone::Bad,
    };
    out.headline_toned(&headline, tone);
    for fetched in &outcome.fetched {
        out.line(&format!(
            "  {}  {} {}  {}",
            fetched.digest,
            fetched.session_id,
            fetched.run_id,
            super::human_bytes(fetched.patch_bytes)
        ));
    }
    Ok(0)
}
