use std::io::{BufRead, IsTerminal, Write};

use clap::{Args, ValueEnum};

use a3s_iso::base::error::Result;
use a3s_iso::context::Context;
use a3s_iso::services::config::{ConfigReport, Effective, Loaded, Origin, Setting, Trust, load};

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
    out.answer("a3s-iso.config.v1", &report, || render(&report, out));
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
    let mut fields = vec![
        (
            "repository file",
            format!("{} ({})", file.path.display(), file.trust.as_str()),
        ),
        ("user file", user),
    ];
    fields.extend(setting_fields(&report.settings, false));
    fields.extend(report.profiles.iter().map(|p| ("profile", profile_line(p))));
    out.fields(&fields);
    if matches!(file.trust, Trust::Untrusted | Trust::Changed) {
        // What trusting it would grant, shown before anyone trusts it.
        let asked = file
            .settings
            .as_ref()
            .map(|s| setting_fields(s, true))
            .unwrap_or_default();
        if !asked.is_empty() {
            out.line("the repository file asks for (not applied until you trust it):");
            let indented: Vec<(String, String)> = asked
                .into_iter()
                .map(|(k, v)| (format!("  {k}"), v))
                .collect();
            out.fields(&indented);
        }
        out.hint("the repository file's settings are not applied until you trust it: a3s-iso config trust");
    }
}

/// Every setting that grants or runs something, `KEY  VALUE (SOURCE)`; `only_set`: not defaults.
fn setting_fields(settings: &Effective, only_set: bool) -> Vec<(&'static str, String)> {
    let list = |items: &Vec<String>| match items.is_empty() {
        true => "-".to_string(),
        false => items.join("; "),
    };
    let or_dash = |value: Option<String>| value.unwrap_or_else(|| "-".into());
    let rows = [
        row("setup", &settings.setup, list),
        row("copy_ignored", &settings.copy_ignored, list),
        row(
            "run.allow_network",
            &settings.allow_network,
            bool::to_string,
        ),
        row("run.allow_host", &settings.allow_host, list),
        row("run.publish", &settings.publish, list),
        row("run.cache", &settings.cache, |cache| cache.to_string()),
        row("run.profile", &settings.profile, |p| or_dash(p.clone())),
        row("pool.size", &settings.pool_size, |n| {
            or_dash(n.map(|n| n.to_string()))
        }),
        row("pool.keep_ignored", &settings.pool_keep_ignored, |keep| {
            or_dash(keep.as_ref().map(list))
        }),
    ];
    rows.into_iter()
        .filter(|(_, source, _)| !only_set || *source != Origin::Default)
        .map(|(key, source, value)| (key, format!("{value} ({})", source.as_str())))
        .collect()
}

/// A setting's row: its key, where it came from, its value as shown.
fn row<T>(key: &'static str, setting: &Setting<T>, shown: impl Fn(&T) -> String) -> Row {
    (key, setting.source, shown(&setting.value))
}

type Row = (&'static str, Origin, String);

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

/// Whether the user, asked on a terminal (never with `--json`), approves the repository's file.
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
        "{} {what}; it can run commands and open the network. It asks for:\n",
        file.path.display()
    );
    for (key, value) in setting_fields(&file.settings(), true) {
        let _ = writeln!(err, "  {key:<18} {}", super::inert(&value));
    }
    let _ = writeln!(err, "\nThe file:\n");
    for line in file.text.lines() {
        let _ = writeln!(err, "  | {}", super::inert(line));
    }
    let _ = write!(err, "\ntrust it? [y/N] ");
    let _ = err.flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}
