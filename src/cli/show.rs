use a3s_iso::base::argv::shell_quote;
use a3s_iso::base::error::Result;
use a3s_iso::base::owner::OwnerLiveness;
use a3s_iso::base::reflink::Fill;
use a3s_iso::base::sandbox::NetworkAccess;
use a3s_iso::context::Context;
pub use a3s_iso::interface::request::show::ShowArgs;
use a3s_iso::ops::log::format_utc;
use a3s_iso::ops::show::{RunView, ShowOutcome, show};
use a3s_iso::recovery::session_git::PrivateRefs;

use super::Output;

/// Shows one session as `key  value` lines, or one JSON document.
pub fn run(ctx: &Context, args: &ShowArgs, out: &Output) -> Result<i32> {
    let outcome = show(ctx, args.session.session.as_deref())?;
    if out.json_done("a3s-iso.show.v1", &outcome) {
        return Ok(0);
    }
    if args.nul {
        return nul_records(&outcome);
    }
    out.headline(&outcome.session_id);
    out.fields(&fields(&outcome));
    if !outcome.runs.is_empty() {
        out.line("");
        out.line("runs:");
        for run in &outcome.runs {
            out.line(&run_line(run));
        }
        let last = outcome.runs.last().and_then(|run| run.network.as_ref());
        for refusal in last.map(|n| n.refused.as_slice()).unwrap_or_default() {
            out.line(&refusal_line(refusal));
        }
    }
    if let Some(live) = &outcome.live_run {
        out.line("");
        out.line(&format!("running: {}", live.run_id));
        for p in &live.published {
            out.line(&format!(
                "  published {}:{} -> {}",
                p.host, p.host_port, p.port
            ));
        }
    }
    if !outcome.promotions.is_empty() {
        out.line("");
        out.line("promotions:");
        for p in &outcome.promotions {
            let step = p.step.map_or("-".into(), |n| format!("step {n}"));
            let nested = p
                .nested
                .as_ref()
                .map(|path| format!(" in {}", path.shown()))
                .unwrap_or_default();
            out.line(&format!(
                "  {step}{nested}  {}  {}  {} ({})",
                short_digest(&p.digest),
                format_utc(p.promoted_at_ms),
                p.how,
                p.mode.as_str(),
            ));
        }
    }
    Ok(0)
}

/// `    refused <host>:<port>: <reason> (<address>)`.
fn refusal_line(refusal: &a3s_iso::services::network::Refusal) -> String {
    let address = refusal
        .address
        .map(|a| format!(" ({a})"))
        .unwrap_or_default();
    format!(
        "    refused {}: {}{address}",
        a3s_iso::services::network::host_port(&refusal.host, refusal.port),
        refusal.reason
    )
}

/// `  <id>  <state>  <digest>  <when>`, then how it ended and what it ran, when recorded.
fn run_line(run: &RunView) -> String {
    let mut line = format!(
        "  {}  {}  {}  {}",
        run.run_id,
        run.state.map_or("unreadable", |s| s.as_str()),
        run.digest.as_deref().map_or("-".into(), short_digest),
        run.observed_at_ms.map_or("-".into(), format_utc),
    );
    for part in [ended(run.exit_code, run.signal), command_line(run)]
        .into_iter()
        .flatten()
    {
        line.push_str("  ");
        line.push_str(&part);
    }
    line
}

/// `exit N` or `signal N`, when the run's exit record says.
pub(super) fn ended(exit_code: Option<i32>, signal: Option<i32>) -> Option<String> {
    match (exit_code, signal) {
        (Some(code), _) => Some(format!("exit {code}")),
        (None, Some(signal)) => Some(format!("signal {signal}")),
        (None, None) => None,
    }
}

/// The command line, shell-quoted, and in parentheses where it ran (unless at the isolation's
/// root) and what it was allowed beyond the defaults, as `run`'s flags say it.
pub(super) fn command_line(run: &RunView) -> Option<String> {
    let mut line = run.ran.argv.as_ref()?.shell_line();
    let mut notes = Vec::new();
    if let Some(cwd) = run.ran.cwd.as_ref().filter(|cwd| cwd.as_os_str() != ".") {
        notes.push(format!("in {}", shell_quote(cwd.as_os_str())));
    }
    if let Some(sandbox) = &run.sandbox {
        if !sandbox.enabled {
            notes.push("--no-sandbox".into());
        } else if sandbox.network == NetworkAccess::Allowed {
            notes.push("--allow-network".into());
        }
        if let Some(profile) = &sandbox.profile {
            notes.push(format!("--profile {}", shell_quote(profile.name.as_ref())));
        }
        for (flag, paths) in [
            ("--allow-write", &sandbox.allow_write),
            ("--allow-read", &sandbox.allow_read),
        ] {
            let quoted = paths.iter().map(|p| shell_quote(p.as_os_str()));
            notes.extend(quoted.map(|p| format!("{flag} {p}")));
        }
    }
    if let Some(network) = &run.network {
        let hosts = network.allowed.iter();
        notes.extend(hosts.map(|a| format!("--allow-host {}", shell_quote(a.entry.as_ref()))));
        let published = network.published.iter();
        notes.extend(published.map(|p| format!("--publish {}:{}", p.host_port, p.port)));
    }
    if !notes.is_empty() {
        line.push_str(&format!("  ({})", notes.join(", ")));
    }
    Some(line)
}

/// The state, and any operation on the session in progress or interrupted.
fn state_line(o: &ShowOutcome) -> String {
    let mut line = o.state.to_string();
    for op in &o.interrupted {
        line.push_str(&format!(" ({} unfinished)", op.operation.as_str()));
    }
    line
}

/// The session's fields, in the order `bind` prints its own.
fn fields(o: &ShowOutcome) -> Vec<(&'static str, String)> {
    let mut fields = vec![
        ("state", state_line(o)),
        ("source", o.source.display().to_string()),
        (
            "isolation",
            match &o.worktree {
                Some(tree) => format!("{} ({})", tree.display(), o.tree),
                None => "none (read-only)".into(),
            },
        ),
        ("revision", o.bound_revision.clone()),
        ("base tree", o.base_tree.to_string()),
        (
            "head moved",
            o.head_moved
                .map_or("unknown".into(), |m| if m { "yes" } else { "no" }.into()),
        ),
        ("owner", owner(o)),
        ("bound at", format_utc(o.created_at_ms)),
        (
            "files changed",
            match (o.files_changed, o.files_to_promote) {
                (Some(all), Some(next)) => format!("{all} ({next} not yet promoted)"),
                _ => "-".into(),
            },
        ),
    ];
    if let (Some(Fill::Clone), Some(disk)) = (o.fill, &o.disk) {
        // A checkout holds all its bytes alone; a clone's are worth showing.
        fields.push(("files", super::output::cloned(disk)));
    }
    if let Some(git) = private_git(&o.git) {
        fields.push(("git", git));
    }
    if !o.conflicting_paths.is_empty() {
        fields.push(("conflicts", super::inert_joined(&o.conflicting_paths)));
    }
    if let Some(reason) = &o.retained_reason {
        fields.push(("retained", reason.clone()));
    }
    if let Some(at) = o.swept_at_ms {
        let snapshot = o.swept_ref.clone().unwrap_or_else(|| "no snapshot".into());
        fields.push(("swept", format!("{} ({snapshot})", format_utc(at))));
    }
    fields
}

/// The session's own branches (HEAD's marked `*`), tags and stash, when git inside its runs
/// made any: `branches feature*, fix; tags v1; stash 2`.
fn private_git(git: &PrivateRefs) -> Option<String> {
    let head = git.head_branch.as_deref();
    let branches: Vec<String> = git
        .branches
        .iter()
        .map(|b| match Some(b.name.as_str()) == head {
            true => format!("{}*", b.name),
            false => b.name.clone(),
        })
        .collect();
    let tags: Vec<&str> = git.tags.iter().map(|t| t.name.as_str()).collect();
    let mut parts = Vec::new();
    if !branches.is_empty() {
        parts.push(format!("branches {}", branches.join(", ")));
    }
    if !tags.is_empty() {
        parts.push(format!("tags {}", tags.join(", ")));
    }
    if git.stash_entries > 0 {
        parts.push(format!("stash {}", git.stash_entries));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

fn owner(o: &ShowOutcome) -> String {
    let Some(owner) = &o.owner else {
        return "none (ownerless)".into();
    };
    let liveness = match owner.liveness {
        OwnerLiveness::Alive => "alive",
        OwnerLiveness::Dead => "dead",
        OwnerLiveness::Foreign => "on another host",
        OwnerLiveness::Unknown => "liveness unknown",
    };
    format!("{} ({liveness})", owner.describe())
}

pub(super) fn short_digest(digest: &str) -> String {
    let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
    format!("sha256:{}", hex.chars().take(12).collect::<String>())
}

/// `show -z`: the session's fields as `key<TAB>value<NUL>`, its paths as their bytes.
fn nul_records(o: &ShowOutcome) -> Result<i32> {
    use std::os::unix::ffi::OsStrExt;
    let mut records: Vec<(&str, Vec<u8>)> = vec![
        ("session", o.session_id.as_bytes().to_vec()),
        ("source", o.source.as_os_str().as_bytes().to_vec()),
        (
            "isolation",
            o.worktree
                .as_ref()
                .map(|t| t.as_os_str().as_bytes().to_vec())
                .unwrap_or_default(),
        ),
    ];
    for (key, value) in fields(o) {
        if !matches!(key, "source" | "isolation" | "conflicts") {
            records.push((key, value.into_bytes()));
        }
    }
    records.extend(
        o.conflicting_paths
            .iter()
            .map(|p| ("conflict", p.clone().into_bytes())),
    );
    super::write_nul_records(&records)?;
    Ok(0)
}
