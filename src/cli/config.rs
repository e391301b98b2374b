use std::io::{BufRead, IsTerminal, Write};

use clap::{Args, ValueEnum};

use a3s_iso::base::error::Result;
use a3s_iso::services::config::{ConfigReport, Loaded, Setting, Trust, load};
use a3s_iso::workspace::context::Context;

use super::Output;

/// `a3s-iso config`'s arguments.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// `trust`: approve the repository's .a3s-iso.toml as it is now (for you only); its setup
    /// commands and network setting then apply to binds and runs, until the file changes
    #[arg(value_enum, value_name = "ACTION")]
    pub action: Option<ConfigAction>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConfigAction {
    /// Approve the repository's .a3s-iso.toml as it is now, for you
    Trust,
}

pub fn run(ctx: &Context, args: &ConfigArgs, out: &Output) -> Result<i32> {
    let mut loaded = load(ctx, true)?;
    if let Some(ConfigAction::Trust) = args.action {
        let file = loaded.trust_repository_file()?;
        if !out.json {
            out.info(&format!(
                "trusted {} ({}) for you",
                file.path.display(),
                file.sha256
            ));
        }
        loaded = load(ctx, true)?;
    }
    let report = loaded.report()?;
    if out.json {
        out.document("a3s-iso.config.v1", &report);
    } else {
        render(&report, out);
    }
    Ok(0)
}

fn render(report: &ConfigReport, out: &Output) {
    out.headline(&format!("configuration of {}", report.source.display()));
    let file = &report.repository_file;
    let user = match &report.user_file.path {
        Some(path) if report.user_file.present => path.display().to_string(),
        Some(path) => format!("{} (none)", path.display()),
        None => "(no per-user config directory)".into(),
    };
    let settings = &report.settings;
    let list = |s: &Setting<Vec<String>>| {
        let value = if s.value.is_empty() {
            "-".to_string()
        } else {
            s.value.join("; ")
        };
        format!("{value} ({})", s.source.as_str())
    };
    let mut fields = vec![
        (
            "repository file",
            format!("{} ({})", file.path.display(), file.trust.as_str()),
        ),
        ("user file", user),
        ("setup", list(&settings.setup)),
        ("copy_ignored", list(&settings.copy_ignored)),
        (
            "run.allow_network",
            format!(
                "{} ({})",
                settings.allow_network.value,
                settings.allow_network.source.as_str()
            ),
        ),
        (
            "run.profile",
            format!(
                "{} ({})",
                settings.profile.value.as_deref().unwrap_or("-"),
                settings.profile.source.as_str()
            ),
        ),
        (
            "pool.size",
            format!(
                "{} ({})",
                settings
                    .pool_size
                    .value
                    .map_or_else(|| "-".into(), |n| n.to_string()),
                settings.pool_size.source.as_str()
            ),
        ),
    ];
    fields.extend(report.profiles.iter().map(|p| ("profile", profile_line(p))));
    out.fields(&fields);
    if matches!(file.trust, Trust::Untrusted | Trust::Changed) {
        out.hint("the repository file's settings are not applied until you trust it: a3s-iso config trust");
    }
}

/// `NAME (SOURCE): writes ~/.a/, ~/.b; env A, B*; hosts @x` (`-` for what it has none of).
fn profile_line(profile: &a3s_iso::services::profile::Profile) -> String {
    let list = |items: Vec<String>| match items.is_empty() {
        true => "-".to_string(),
        false => items.join(", "),
    };
    let source = match profile.source {
        a3s_iso::services::profile::ProfileSource::BuiltIn => "built in",
        a3s_iso::services::profile::ProfileSource::User => "user",
    };
    format!(
        "{} ({source}): writes {}; env {}; hosts {}",
        profile.name,
        list(profile.writable.iter().map(|e| e.spelled()).collect()),
        list(profile.env.clone()),
        list(profile.hosts.clone())
    )
}

/// The configuration a bind uses: refused while the repository's file is untrusted, unless the
/// user, asked on a terminal, approves it now (recorded, as `config trust` does).
pub fn approved(ctx: &Context, ignore_repository: bool, out: &Output) -> Result<Loaded> {
    let loaded = load(ctx, !ignore_repository)?;
    let Some(file) = loaded.repository.as_ref() else {
        return Ok(loaded);
    };
    if file.trust == Trust::Trusted {
        return Ok(loaded);
    }
    if !ask_on_terminal(file, out) {
        loaded.require_trusted()?;
    }
    loaded.trust_repository_file()?;
    load(ctx, true)
}

/// Whether the user, asked on a terminal (never with `--json` or without one), approves the
/// repository's file now.
pub fn ask_on_terminal(file: &a3s_iso::services::config::RepositoryFile, out: &Output) -> bool {
    let terminal = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    !out.json && terminal && ask(file)
}

/// Shows the file on stderr and asks whether to trust it; yes only on `y` or `yes`.
fn ask(file: &a3s_iso::services::config::RepositoryFile) -> bool {
    let mut err = std::io::stderr().lock();
    let what = if file.trust == Trust::Changed {
        "has changed since you trusted it"
    } else {
        "is not trusted yet"
    };
    let _ = writeln!(
        err,
        "{} {what}; it can run commands and open the network:\n",
        file.path.display()
    );
    for line in file.text.lines() {
        let _ = writeln!(err, "  | {}", super::inert(line));
    }
    let _ = write!(err, "\ntrust it? [y/N] ");
    let _ = err.flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}
