//! `list --remote`: the change sets a remote holds. `ls-remote` gives each ref and its
//! commit; the commits themselves (their messages name session, run, state and size; their
//! date is the document's `observed_at_ms`) are fetched without their trees into a throwaway
//! bare repository of a3s-iso's own, which reads the source repository's configuration (its
//! remotes and credentials) through an include: a filtered fetch makes the repository it
//! runs in a partial clone, which the source must never become. A server that does not
//! support filters sends the whole change sets, which costs time but changes nothing.

use std::path::Path;

use serde::Serialize;

use crate::base::error::{IoContext, Result};
use crate::context::Context;
use crate::git::CatFile;
use crate::services::remote::carrier;
use crate::services::remote::select::{self, Remote};

/// What the listing reads, for its report.
pub const READS: &str = "ls-remote for refs/a3s-iso/changes/*, then each change set's commit (without its trees) for session, run, state, size and date; labels only, verified by fetch and promote";

/// One change set on a remote, as its ref and its commit's message say (labels: nothing
/// here is verified until it is fetched).
#[derive(Debug, Clone, Serialize)]
pub struct ListedChangeSet {
    /// `sha256:<hex>`, from the ref's name.
    pub digest: String,
    /// The ref on the remote.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The commit it points at.
    pub commit: String,
    /// The session the message names.
    pub session_id: Option<String>,
    /// The run the message names.
    pub run_id: Option<String>,
    /// The state the message names.
    pub state: Option<String>,
    /// The patch size the message names.
    pub patch_bytes: Option<u64>,
    /// The commit's date (the document's `observed_at_ms`, to the second).
    pub observed_at_ms: Option<u64>,
}

/// What a remote holds.
#[derive(Debug, Clone, Serialize)]
pub struct RemoteListing {
    /// The remote.
    pub remote: Remote,
    /// What was read to list them.
    pub reads: &'static str,
    /// The change sets, ordered by digest.
    pub change_sets: Vec<ListedChangeSet>,
}

/// Lists the change sets on `remote` (default: the current branch's upstream remote, else
/// `origin`).
pub fn list_remote(ctx: &Context, remote: Option<&str>, allow_url: bool) -> Result<RemoteListing> {
    let located = crate::recovery::locate(ctx)?;
    let dir = &located.repo.toplevel;
    let remote = select::choose(&ctx.git, dir, remote, allow_url)?;
    let mut refs = select::held(&ctx.git, dir, &remote)?;
    refs.sort_by(|a, b| a.1.cmp(&b.1));
    let commits = if refs.is_empty() {
        Vec::new()
    } else {
        let scratch = located
            .store
            .scratch_dir()
            .join(crate::base::maker::owned_name("list"));
        let read = read_commits(ctx, &located, &remote, &scratch, &refs);
        let _ = std::fs::remove_dir_all(&scratch);
        read?
    };
    let change_sets = refs
        .into_iter()
        .zip(commits)
        .map(|((commit, reference), content)| listed(commit, reference, content))
        .collect();
    Ok(RemoteListing {
        remote,
        reads: READS,
        change_sets,
    })
}

fn listed(commit: String, reference: String, content: Option<Vec<u8>>) -> ListedChangeSet {
    let text = content.map(|c| String::from_utf8_lossy(&c).into_owned());
    let labels = text.as_deref().and_then(|t| {
        let (_, message) = t.split_once("\n\n")?;
        carrier::parse_message(message)
    });
    let observed_at_ms = text.as_deref().and_then(|t| {
        let line = t.lines().find(|l| l.starts_with("committer "))?;
        let mut fields = line.rsplitn(3, ' ');
        let _zone = fields.next()?;
        fields.next()?.parse::<u64>().ok().map(|s| s * 1000)
    });
    ListedChangeSet {
        digest: select::ref_digest(&reference).unwrap_or_default(),
        reference,
        commit,
        session_id: labels.as_ref().map(|l| l.session_id.clone()),
        run_id: labels.as_ref().map(|l| l.run_id.clone()),
        state: labels.as_ref().map(|l| l.state.clone()),
        patch_bytes: labels.as_ref().map(|l| l.patch_bytes),
        observed_at_ms,
    }
}

/// Fetches the commits of `refs` without their trees into a throwaway repository at
/// `scratch` and reads each (`None` for one that did not arrive as a commit).
fn read_commits(
    ctx: &Context,
    located: &crate::context::Located,
    remote: &Remote,
    scratch: &Path,
    refs: &[(String, String)],
) -> Result<Vec<Option<Vec<u8>>>> {
    let format = ctx.git.object_format(&located.repo.toplevel)?.as_str();
    ctx.git.init_bare(scratch, format)?;
    let (promisor, fetch_name) = match remote.configured {
        true => (remote.name.as_str(), remote.name.as_str()),
        false => ("a3s-iso-list", "a3s-iso-list"),
    };
    let mut config = format!(
        "[include]\n\tpath = {}\n[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n\tpartialClone = {}\n\tobjectFormat = {format}\n[remote {}]\n\tpromisor = true\n",
        quoted(&located.repo.common_dir.join("config").to_string_lossy()),
        quoted(promisor),
        quoted(promisor),
    );
    if !remote.configured {
        config.push_str(&format!("\turl = {}\n", quoted(&remote.name)));
    }
    let path = scratch.join("config");
    std::fs::write(&path, config).ctx(|| format!("cannot write {}", path.display()))?;
    let refspecs: Vec<String> = refs.iter().map(|(_, r)| format!("+{r}:{r}")).collect();
    ctx.git.fetch_filtered_into(
        (&located.repo.toplevel, scratch),
        fetch_name,
        &refspecs,
        "tree:0",
    )?;
    let oids: Vec<String> = refs.iter().map(|(oid, _)| oid.clone()).collect();
    Ok(ctx
        .git
        .cat_file_batch(scratch, &oids)?
        .into_iter()
        .map(|found| match found {
            CatFile::Found { kind, content } if crate::git::is_commit_type(&kind) => Some(content),
            _ => None,
        })
        .collect())
}

/// A value in a git config file, quoted (`"` and `\` escaped).
fn quoted(value: &str) -> String {
    format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
}
