use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use a3s_iso::base::error::{Error, Result};
use a3s_iso::context::Context;
use a3s_iso::services::remote::{
    DeleteSelection, PushOptions, PushResult, PushSource, delete_changes, push,
};

use super::{Output, SessionArg, Tone};

/// `a3s-iso push`'s arguments.
#[derive(Debug, Args)]
pub struct PushArgs {
    #[command(flatten)]
    pub session: SessionArg,

    /// Push a change-set document instead of the session's change set
    #[arg(long, value_name = "FILE", conflicts_with_all = ["session", "run"])]
    pub change_set: Option<PathBuf>,

    /// Push the stored change set of this run of the session
    #[arg(long, value_name = "RUN")]
    pub run: Option<String>,

    /// The remote (default: the current branch's upstream remote, else origin)
    #[arg(value_name = "REMOTE")]
    pub remote: Option<String>,

    /// Accept a URL or path that is not a configured remote
    #[arg(long)]
    pub allow_url: bool,

    /// Delete change sets from the remote instead (with --digest or --older-than)
    #[arg(long, conflicts_with_all = ["change_set", "run"])]
    pub delete: bool,

    /// With --delete: the change set to delete, or a unique prefix of at least 8 hex digits
    /// (repeatable)
    #[arg(long, value_name = "DIGEST", requires = "delete")]
    pub digest: Vec<String>,

    /// With --delete: every change set dated more than DUR ago
    #[arg(long, value_name = "DUR", value_parser = super::parse_duration, requires = "delete",
        conflicts_with = "digest")]
    pub older_than: Option<Duration>,
}

pub fn run(ctx: &Context, args: &PushArgs, out: &Output) -> Result<i32> {
    if args.delete {
        return delete(ctx, args, out);
    }
    let source = match (&args.change_set, &args.run) {
        (Some(path), _) => PushSource::Document(path.clone()),
        (None, Some(run_id)) => PushSource::Run {
            session_id: args.session.session.clone(),
            run_id: run_id.clone(),
        },
        (None, None) => PushSource::Session(args.session.session.clone()),
    };
    let options = PushOptions {
        source,
        remote: args.remote.clone(),
        allow_url: args.allow_url,
    };
    let outcome = out.spinning("pushing", || push(ctx, &options))?;
    out.warnings(&outcome.warnings);
    if out.json_done("a3s-iso.push.v1", &outcome) {
        return Ok(0);
    }
    let remote = &outcome.remote.name;
    let (headline, tone) = match outcome.outcome {
        PushResult::Pushed => (format!("pushed to {remote}"), Tone::Good),
        PushResult::Unchanged => (
            format!("unchanged: {remote} holds this change set already; nothing pushed"),
            Tone::Quiet,
        ),
    };
    out.headline_toned(&headline, tone);
    out.fields(&[
        ("digest", outcome.digest.to_string()),
        ("ref", outcome.reference.clone()),
        ("commit", outcome.commit.clone()),
        ("session", outcome.session_id.clone()),
        ("run", outcome.run_id.clone()),
        ("size", super::human_bytes(outcome.patch_bytes)),
    ]);
    out.hint(&format!(
        "promote it elsewhere with: a3s-iso promote --from {} --digest {}",
        outcome.remote.name, outcome.digest
    ));
    Ok(0)
}

fn delete(ctx: &Context, args: &PushArgs, out: &Output) -> Result<i32> {
    let selection = match (&args.older_than, args.digest.is_empty()) {
        (Some(window), _) => DeleteSelection::OlderThan(*window),
        (None, false) => DeleteSelection::Digests(args.digest.clone()),
        (None, true) => {
            return Err(Error::Usage {
                message: "push --delete needs --digest DIGEST or --older-than DUR".into(),
            });
        }
    };
    let outcome = delete_changes(
        ctx,
        args.remote.as_deref(),
        args.allow_url,
        &selection,
        false,
    )?;
    if out.json_done("a3s-iso.push-delete.v1", &outcome) {
        return Ok(0);
    }
    let (n, remote) = (outcome.deleted.len(), &outcome.remote.name);
    out.headline(&format!(
        "deleted {n} change set{} from {remote}",
        super::plural(n)
    ));
    for digest in &outcome.deleted {
        out.line(&format!("  {digest}"));
    }
    for digest in &outcome.absent {
        out.line(&format!("  {digest} (not there)"));
    }
    Ok(0)
}
