//! What the user granted an MCP server on its command line: the most any tool call gets. A
//! run gets the server's grants unless the call narrows them (a subset of the hosts, paths,
//! ports and variables, a shorter timeout); anything that reaches past the isolation (the
//! sandbox's opt-out, files written or read on the host, a tree made elsewhere, another
//! session's change sets) is offered only with the server flag that grants it. A call asking
//! for more is refused before anything runs, naming that flag.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::base::beneath::Dir;
use crate::base::command_env::EnvRequest;
use crate::base::error::{IoContext, Result};
use crate::mcp::protocol::RpcError;
use crate::mcp::tool::Tool;
use crate::services::network::{AllowEntry, PublishRequest};

/// The run grants: what every sandboxed run of the server gets, and the most a call may ask.
#[derive(Debug, Clone, Default)]
pub struct RunGrants {
    /// `--allow-network`: the whole network.
    pub allow_network: bool,
    /// `--allow-host`: these hosts through the proxy.
    pub allow_hosts: Vec<String>,
    /// `--publish`: these ports.
    pub publish: Vec<String>,
    /// `--allow-read` (and `A3S_ISO_ALLOW_READ`): these hidden or private paths.
    pub allow_read: Vec<PathBuf>,
    /// `--allow-write` (and `A3S_ISO_ALLOW_WRITE`): these paths besides the isolation.
    pub allow_write: Vec<PathBuf>,
    /// `--profile`: the profile runs use.
    pub profile: Option<String>,
    /// `--env`: the variables passed or set.
    pub env: Vec<EnvRequest>,
    /// `--timeout`: the longest a run may take (and its timeout unless the call says less).
    pub timeout: Option<Duration>,
    /// `--cache`: the presets' package-manager cache in every run (else the configuration's).
    pub cache: Option<crate::services::caches::CacheMode>,
}

/// Everything the server was granted.
#[derive(Debug, Clone, Default)]
pub struct Grants {
    /// `--allow-promote`: the `promote` and `land` tools.
    pub promote: bool,
    /// What runs get.
    pub run: RunGrants,
    /// `--allow-no-sandbox`: a call may run its command (or land's test) unsandboxed.
    pub no_sandbox: bool,
    /// `--allow-output DIR`: files a call may write (`output`, `artifacts`), beneath these.
    pub output: Vec<PathBuf>,
    /// `--allow-input DIR`: change-set documents a call may read (`change_set`), beneath these.
    pub input: Vec<PathBuf>,
    /// `--allow-base-dir DIR`: where a call may make an isolation (`base_dir`), beneath these.
    pub base_dir: Vec<PathBuf>,
    /// `--all-sessions`: every session of the repository, not only the server's own.
    pub all_sessions: bool,
    /// `--session ID`: sessions of the user's the server may act on besides those it binds.
    pub sessions: Vec<String>,
}

/// What a tool's argument reaches, and so which grant it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The server's own sessions and their isolations: no grant beyond the tool.
    Own,
    /// The whole network.
    Network,
    /// Hosts through the proxy.
    Hosts,
    /// Ports published on the host.
    Publish,
    /// Hidden or private paths, read.
    Read,
    /// Paths beside the isolation, written.
    Write,
    /// A profile's home paths and credentials.
    Profile,
    /// A plain host process.
    NoSandbox,
    /// A file written on the host.
    Output,
    /// A file read on the host.
    Input,
    /// A tree made outside the usual place.
    BaseDir,
    /// Change sets of any session.
    AnySession,
}

impl Reach {
    /// What argument `param` of `tool` reaches.
    pub fn of(tool: Tool, param: &str) -> Reach {
        match (tool, param) {
            (Tool::Run, "allow_network") => Reach::Network,
            (Tool::Run, "allow_host") => Reach::Hosts,
            (Tool::Run, "publish") => Reach::Publish,
            (Tool::Run, "allow_read") => Reach::Read,
            (Tool::Run, "allow_write") => Reach::Write,
            (Tool::Run, "profile") => Reach::Profile,
            (Tool::Run | Tool::Land, "no_sandbox") => Reach::NoSandbox,
            (Tool::Run | Tool::Capture, "output") | (Tool::Promote, "artifacts") => Reach::Output,
            (Tool::Diff | Tool::Promote, "change_set") | (Tool::Promote, "onto_head") => {
                Reach::Input
            }
            (Tool::Bind, "base_dir") => Reach::BaseDir,
            (Tool::Promote, "note") => Reach::AnySession,
            _ => Reach::Own,
        }
    }

    /// The server flag that grants it.
    pub fn flag(self) -> &'static str {
        self.grant().0
    }

    /// The server flag that grants it, and what it reaches in words.
    fn grant(self) -> (&'static str, &'static str) {
        match self {
            Reach::Own => ("", "acting on the server's own sessions"),
            Reach::Network => ("--allow-network", "the whole network"),
            Reach::Hosts => ("--allow-host", "reaching hosts through the proxy"),
            Reach::Publish => ("--publish", "publishing ports on the host"),
            Reach::Read => ("--allow-read", "reading hidden or private paths"),
            Reach::Write => ("--allow-write", "writing paths outside the isolation"),
            Reach::Profile => ("--profile", "running under a profile"),
            Reach::NoSandbox => ("--allow-no-sandbox", "running without the sandbox"),
            Reach::Output => ("--allow-output", "writing files on the host"),
            Reach::Input => ("--allow-input", "reading change-set documents on the host"),
            Reach::BaseDir => (
                "--allow-base-dir",
                "making an isolation in another directory",
            ),
            Reach::AnySession => (
                "--all-sessions",
                "recording change sets of any session as promoted",
            ),
        }
    }
}

/// `not_granted`: a call asked for more than the server's grants; `flag` would grant it.
pub fn not_granted(tool: Tool, param: &str, why: String, flag: &str) -> RpcError {
    RpcError::params(format!(
        "{}'s {param}: {why}; the server grants it when started with a3s-iso mcp {flag}",
        tool.as_str()
    ))
    .with_data(json!({
        "code": "not_granted",
        "tool": tool.as_str(),
        "argument": param,
        "grant": flag,
    }))
}

impl Grants {
    /// Whether calls may use an argument of this reach at all.
    pub fn offers(&self, reach: Reach) -> bool {
        let run = &self.run;
        match reach {
            Reach::Own => true,
            Reach::Network => run.allow_network,
            // Under the whole network, a call may narrow to a few hosts.
            Reach::Hosts => run.allow_network || !run.allow_hosts.is_empty(),
            Reach::Publish => !run.publish.is_empty(),
            Reach::Read => !run.allow_read.is_empty(),
            Reach::Write => !run.allow_write.is_empty(),
            Reach::Profile => run.profile.is_some(),
            Reach::NoSandbox => self.no_sandbox,
            Reach::Output => !self.output.is_empty(),
            Reach::Input => !self.input.is_empty(),
            Reach::BaseDir => !self.base_dir.is_empty(),
            Reach::AnySession => self.all_sessions,
        }
    }

    /// What is granted for an argument of this reach, as its description says it.
    pub fn granted(&self, reach: Reach) -> Option<String> {
        let run = &self.run;
        let listed = |items: &[String]| Some(items.join(", "));
        match reach {
            Reach::Own | Reach::Network | Reach::NoSandbox | Reach::AnySession => None,
            Reach::Hosts if run.allow_network => Some("any host".into()),
            Reach::Hosts => listed(&run.allow_hosts),
            Reach::Publish => listed(&run.publish),
            Reach::Read => Some(shown(&run.allow_read)),
            Reach::Write => Some(shown(&run.allow_write)),
            Reach::Profile => run.profile.clone(),
            Reach::Output => Some(format!("beneath {}", shown(&self.output))),
            Reach::Input => Some(format!("beneath {}", shown(&self.input))),
            Reach::BaseDir => Some(format!("beneath {}", shown(&self.base_dir))),
        }
    }

    /// Whether `tool` is offered at all.
    pub fn offers_tool(&self, tool: Tool) -> bool {
        self.promote || !tool.writes_source()
    }

    /// Refuses a call giving an argument that [`asks`] for a reach not granted.
    pub fn check_reach(&self, tool: Tool, args: &Map<String, Value>) -> Result<(), RpcError> {
        if !self.offers_tool(tool) {
            return Err(not_granted(
                tool,
                "tool",
                format!("the {} tool writes to the source checkout", tool.as_str()),
                "--allow-promote",
            ));
        }
        for (param, value) in args {
            let reach = Reach::of(tool, param);
            if asks(value) && !self.offers(reach) {
                let (flag, what) = reach.grant();
                let why = format!("{what} is not granted to this server");
                return Err(not_granted(tool, param, why, flag));
            }
        }
        Ok(())
    }

    /// Checks the grants when the server starts: hosts and ports that parse, paths that exist
    /// with links resolved (a call's path is compared with where the grant really leads).
    pub fn resolve(mut self, start_dir: &Path) -> Result<Grants> {
        for entry in &self.run.allow_hosts {
            AllowEntry::parse(entry)?;
        }
        for entry in &self.run.publish {
            PublishRequest::parse(entry)?;
        }
        let real = |paths: &mut Vec<PathBuf>| -> Result<()> {
            for path in paths.iter_mut() {
                let absolute = start_dir.join(&*path);
                *path = std::fs::canonicalize(&absolute)
                    .ctx(|| format!("cannot use the granted path {}", absolute.display()))?;
            }
            Ok(())
        };
        real(&mut self.output)?;
        real(&mut self.input)?;
        real(&mut self.base_dir)?;
        Ok(self)
    }
}

/// Whether an argument's value asks for something (not null, false or `[]`).
fn asks(value: &Value) -> bool {
    !matches!(value, Value::Null | Value::Bool(false)) && value != &json!([])
}

/// `path` with links resolved as far as it exists, the rest appended (no `..` allowed there):
/// where a write or read of it would really land.
pub fn real_path(path: &Path) -> Option<PathBuf> {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(mut real) = std::fs::canonicalize(&existing) {
            real.extend(rest.iter().rev());
            return Some(real);
        }
        rest.push(existing.file_name()?.to_os_string());
        existing = existing.parent()?.to_path_buf();
    }
}

/// Whether `path` (absolute) really lies beneath one of `granted` (real paths): lexically
/// clean, and beneath a grant once its links are resolved.
pub fn beneath(path: &Path, granted: &[PathBuf]) -> bool {
    clean(path) && real_path(path).is_some_and(|real| granted.iter().any(|g| real.starts_with(g)))
}

/// Whether `path` has no `.` or `..` in it.
fn clean(path: &Path) -> bool {
    (path.components()).all(|c| !matches!(c, Component::ParentDir | Component::CurDir))
}

/// A file (or `promote`'s artifacts directory) a call writes on the host: beneath an
/// `--allow-output` directory once links are resolved, and not itself a link (which could lead
/// anywhere once written through). It is then written beneath that directory, so a directory
/// on the way that became a link after this check is refused, never followed.
pub fn output_file(
    tool: Tool,
    param: &str,
    path: PathBuf,
    grants: &Grants,
) -> Result<GrantedFile, RpcError> {
    let grant = ("write", "--allow-output");
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(refusal(tool, param, &path, &grants.output, grant));
    }
    granted_file(tool, param, path, &grants.output, grant)
}

/// A granted file: the granted directory it lies in, and its place there.
#[derive(Debug)]
pub struct GrantedFile {
    root: PathBuf,
    rel: PathBuf,
    path: PathBuf,
}

impl GrantedFile {
    /// The directory it goes in, made where missing, each step beneath the grant.
    fn parent(&self) -> std::io::Result<Dir> {
        let root = Dir::open(&self.root)?;
        match self.rel.parent().filter(|p| !p.as_os_str().is_empty()) {
            Some(parent) => root.create_dirs(parent),
            None => Ok(root),
        }
    }

    fn name(&self) -> &Path {
        Path::new(self.rel.file_name().unwrap_or_default())
    }

    /// Replaces the file with `bytes` (atomically; a link there is replaced, not followed).
    pub fn write(&self, bytes: &[u8]) -> Result<()> {
        self.parent()
            .and_then(|dir| dir.replace(self.name(), bytes))
            .ctx(|| format!("cannot write {}", self.path.display()))
    }

    /// The path the call named.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory, made where missing and opened, each step beneath the grant.
    pub(crate) fn open_dir(&self) -> Result<Dir> {
        Dir::open(&self.root)
            .and_then(|root| root.create_dirs(&self.rel))
            .ctx(|| format!("cannot create {}", self.path.display()))
    }

    /// The file opened for reading (a link there, or on the way, is refused).
    pub fn open(&self) -> Result<std::fs::File> {
        Dir::open(&self.root)
            .and_then(|root| root.open_file(&self.rel))
            .ctx(|| format!("cannot open {}", self.path.display()))
    }

    /// The file opened for appending (made when missing; a link there is refused).
    pub fn append(&self) -> Result<std::fs::File> {
        self.parent()
            .and_then(|dir| dir.append(self.name(), 0o666))
            .ctx(|| format!("cannot open {}", self.path.display()))
    }
}

/// A file a call reads on the host: beneath an `--allow-input` directory once links are
/// resolved. It is then read beneath that directory, never through a link.
pub fn input_file(
    tool: Tool,
    param: &str,
    path: PathBuf,
    grants: &Grants,
) -> Result<GrantedFile, RpcError> {
    granted_file(tool, param, path, &grants.input, ("read", "--allow-input"))
}

/// `path` as the granted directory it lies in, once links are resolved (its path lexically
/// clean), and its place there; `(verb, flag)` say what the grant is for when it is not.
fn granted_file(
    tool: Tool,
    param: &str,
    path: PathBuf,
    granted: &[PathBuf],
    (verb, flag): (&str, &str),
) -> Result<GrantedFile, RpcError> {
    let found = real_path(&path).filter(|_| clean(&path)).and_then(|real| {
        let root = granted.iter().find(|g| real.starts_with(g))?;
        let rel = real.strip_prefix(root).ok()?.to_path_buf();
        Some((root.clone(), rel))
    });
    match found {
        Some((root, rel)) if rel.file_name().is_some() => Ok(GrantedFile { root, rel, path }),
        _ => Err(refusal(tool, param, &path, granted, (verb, flag))),
    }
}

/// The refusal of `path` for want of the grant `flag`, which lets a call `verb` files.
fn refusal(
    tool: Tool,
    param: &str,
    path: &Path,
    granted: &[PathBuf],
    (verb, flag): (&str, &str),
) -> RpcError {
    let why = format!(
        "{} is not beneath a directory the server may {verb} ({})",
        path.display(),
        shown(granted)
    );
    not_granted(tool, param, why, flag)
}

/// Paths as a grant lists them.
pub fn shown(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Grants of every kind, for tests: `/repo` is where paths are granted.
#[cfg(test)]
pub(crate) fn granting_all() -> Grants {
    Grants {
        promote: true,
        run: RunGrants {
            allow_network: false,
            allow_hosts: vec!["@npm".into()],
            publish: vec!["3000".into()],
            allow_read: vec!["/repo".into()],
            allow_write: vec!["/repo".into()],
            profile: Some("claude".into()),
            env: vec![EnvRequest::Pass("NODE_*".into())],
            timeout: Some(Duration::from_secs(600)),
            cache: None,
        },
        no_sandbox: true,
        output: vec!["/repo".into()],
        input: vec!["/repo".into()],
        base_dir: vec!["/repo".into()],
        all_sessions: true,
        sessions: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use crate::mcp::grants::*;

    #[test]
    fn a_path_beneath_a_grant_through_a_link_is_judged_where_it_leads() {
        let dir = tempfile::tempdir().unwrap();
        let granted = dir.path().join("granted");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&granted).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, granted.join("link")).unwrap();
        let grants = [std::fs::canonicalize(&granted).unwrap()];
        assert!(beneath(&granted.join("new/file.log"), &grants));
        assert!(!beneath(&granted.join("link/file.log"), &grants));
        assert!(!beneath(&granted.join("../elsewhere/file.log"), &grants));
        assert!(!beneath(&elsewhere.join("file.log"), &grants));
    }

    /// A directory on the way swapped for a link between the check and the write or read (a
    /// race an agent's own run can run against the server) is refused: nothing lands where it
    /// leads, and nothing there is read.
    #[test]
    fn a_directory_turned_into_a_link_after_the_check_is_not_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let granted = std::fs::canonicalize(dir.path()).unwrap().join("granted");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(granted.join("sub")).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        let grants = Grants {
            output: vec![granted.clone()],
            input: vec![granted.clone()],
            ..granting_all()
        };
        let file = |name: &str| granted.join("sub").join(name);
        let doc = output_file(Tool::Capture, "output", file("doc.json"), &grants).unwrap();
        let log = output_file(Tool::Run, "output", file("run.log"), &grants).unwrap();
        let read = input_file(Tool::Diff, "change_set", file("in.json"), &grants).unwrap();
        let artifacts = output_file(Tool::Promote, "artifacts", file("art"), &grants).unwrap();
        std::fs::remove_dir(granted.join("sub")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, granted.join("sub")).unwrap();
        std::fs::write(elsewhere.join("in.json"), "a secret").unwrap();
        assert!(doc.write(b"{}").is_err());
        assert!(log.append().is_err());
        assert!(read.open().is_err(), "read through the link");
        assert!(artifacts.open_dir().is_err(), "made through the link");
        let there: Vec<_> = std::fs::read_dir(&elsewhere).unwrap().flatten().collect();
        assert_eq!(there.len(), 1, "only the planted file is there");
        // Put back as a directory, each is written or read where the call named it.
        std::fs::remove_file(granted.join("sub")).unwrap();
        doc.write(b"{}").unwrap();
        std::io::Write::write_all(&mut log.append().unwrap(), b"line\n").unwrap();
        std::fs::write(file("in.json"), "{}").unwrap();
        assert_eq!(std::fs::read(file("doc.json")).unwrap(), b"{}");
        assert_eq!(std::fs::read(file("run.log")).unwrap(), b"line\n");
        artifacts.open_dir().unwrap();
        assert!(file("art").is_dir());
        let mut text = String::new();
        std::io::Read::read_to_string(&mut read.open().unwrap(), &mut text).unwrap();
        assert_eq!(text, "{}");
    }

    #[test]
    fn every_reach_but_the_own_names_a_flag() {
        for reach in [
            Reach::Network,
            Reach::Hosts,
            Reach::Publish,
            Reach::Read,
            Reach::Write,
            Reach::Profile,
            Reach::NoSandbox,
            Reach::Output,
            Reach::Input,
            Reach::BaseDir,
            Reach::AnySession,
        ] {
            assert!(reach.flag().starts_with("--"), "{reach:?}");
            assert!(!Grants::default().offers(reach), "{reach:?}");
        }
        assert!(Grants::default().offers(Reach::Own));
    }
}
