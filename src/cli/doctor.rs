use std::path::PathBuf;

use serde::Serialize;

use a3s_iso::base::probe::{Features, features};
use a3s_iso::git::Git;
use a3s_iso::ops::doctor::{CheckStatus, DoctorOptions, DoctorReport, doctor};

use super::{Cli, Output};

/// `a3s-iso doctor`'s arguments.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Accept a kernel without Landlock (ABI 3 or later) as a warning: run's read-only mounts
    /// still confine writes. By default both layers are required (exit 4 without Landlock)
    #[arg(long)]
    pub landlock_optional: bool,
}

fn options(cli: &Cli, args: &DoctorArgs) -> DoctorOptions {
    let start_dir = cli
        .repo
        .clone()
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("."));
    DoctorOptions {
        git: cli.git.clone(),
        start_dir: std::path::absolute(&start_dir).unwrap_or(start_dir),
        state_dir: cli.state_dir.clone(),
        helper: None,
        require_landlock: !args.landlock_optional,
    }
}

/// Runs every check and prints them; exits 4 when something needed is unavailable.
pub fn run(cli: &Cli, args: &DoctorArgs, out: &Output) -> i32 {
    let report = doctor(&options(cli, args));
    out.answer("a3s-iso.doctor.v1", &report, || print_report(&report, out));
    report.exit_code()
}

fn print_report(report: &DoctorReport, out: &Output) {
    let width = report
        .checks
        .iter()
        .map(|c| name_of(c).len())
        .max()
        .unwrap_or(0);
    for check in &report.checks {
        let status = match check.status {
            CheckStatus::Ok => "ok  ",
            CheckStatus::Warn => "warn",
            CheckStatus::Fail => "FAIL",
        };
        out.line(&format!(
            "{status}  {:<width$}  {}",
            name_of(check),
            check.detail
        ));
        if let Some(hint) = check
            .hint
            .as_deref()
            .filter(|_| check.status != CheckStatus::Ok)
        {
            out.line(&format!("      {:<width$}  hint: {hint}", ""));
        }
    }
    out.line(if report.sandbox_available {
        "run can sandbox commands here"
    } else {
        "run cannot sandbox commands here (run --no-sandbox runs them unconfined)"
    });
    print_hidden(report, out);
}

/// The hidden set, one path a line, with the profiles that see an agent's login.
fn print_hidden(report: &DoctorReport, out: &Output) {
    use a3s_iso::services::profile::SecretKind;
    out.line("hidden from every sandboxed run (--allow-read shows one):");
    for secret in &report.hidden {
        let what = match secret.kind {
            SecretKind::Secret => String::new(),
            SecretKind::AgentLogin if secret.visible_to.is_empty() => "  (a login)".into(),
            SecretKind::AgentLogin => {
                format!("  (seen by --profile {})", secret.visible_to.join(", "))
            }
            SecretKind::ProfileStore => "  (the profiles' copies)".into(),
        };
        let here = if secret.present { "" } else { "  (not here)" };
        out.line(&format!("  {}{what}{here}", secret.path.display()));
    }
}

fn name_of(check: &a3s_iso::ops::doctor::Check) -> String {
    serde_json::to_value(check.name)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// What `version` reports.
#[derive(Serialize)]
struct VersionReport {
    version: &'static str,
    git: Option<GitReport>,
    #[serde(flatten)]
    features: Features,
}

#[derive(Serialize)]
struct GitReport {
    version: String,
    #[serde(with = "a3s_iso::base::paths::fs_path")]
    path: PathBuf,
}

/// `version`: a3s-iso's version, git's, and the kernel features the sandbox relies on.
pub fn version(cli: &Cli, out: &Output) -> i32 {
    let git = Git::locate(cli.git.as_deref()).ok().map(|git| GitReport {
        version: git.version().to_string(),
        path: git.path().to_path_buf(),
    });
    let report = VersionReport {
        version: env!("CARGO_PKG_VERSION"),
        git,
        features: features(),
    };
    if out.json_done("a3s-iso.version.v1", &report) {
        return 0;
    }
    let f = &report.features;
    let yes = |b: bool| if b { "yes" } else { "no" };
    out.line(&format!("a3s-iso {}", report.version));
    out.fields(&[
        (
            "git",
            report
                .git
                .as_ref()
                .map(|g| format!("{} ({})", g.version, g.path.display()))
                .unwrap_or_else(|| "not usable (see a3s-iso doctor)".into()),
        ),
        ("kernel", f.kernel.clone()),
        (
            "landlock",
            f.landlock_abi
                .map(|abi| format!("ABI {abi}"))
                .unwrap_or_else(|| "none".into()),
        ),
        (
            "namespaces",
            format!(
                "user {}, mount {}, pid {}, net {}",
                yes(f.user_namespaces),
                yes(f.mount_namespaces),
                yes(f.pid_namespaces),
                yes(f.net_namespaces)
            ),
        ),
        ("seccomp", yes(f.seccomp).to_string()),
    ]);
    0
}
