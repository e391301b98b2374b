//! A run's sandbox from the server's grants and what the call asks: what the call leaves out
//! is the grant whole, what it gives must lie within the grant and replaces it. Planning only.

use std::path::PathBuf;
use std::time::Duration;

use crate::base::command_env::EnvRequest;
use crate::base::duration::shown;
use crate::mcp::grants::{self, RunGrants, not_granted};
use crate::mcp::place::Place;
use crate::mcp::protocol::RpcError;
use crate::mcp::tool::Tool;
use crate::services::network::{AllowEntry, PublishRequest};

/// What a `run` call asked of the grants (`None`: left out).
#[derive(Debug, Default)]
pub(crate) struct Asked {
    pub allow_network: Option<bool>,
    pub allow_host: Option<Vec<String>>,
    pub publish: Option<Vec<String>>,
    pub allow_write: Option<Vec<PathBuf>>,
    pub allow_read: Option<Vec<PathBuf>>,
    pub profile: Option<String>,
    pub env: Option<Vec<EnvRequest>>,
    pub timeout: Option<Duration>,
}

/// The run's grants narrowed by `asked` (what the run gets); a value beyond them is `not_granted`.
pub(crate) fn run(asked: &Asked, place: &Place) -> Result<RunGrants, RpcError> {
    let granted = &place.grants.run;
    let (allow_network, allow_hosts) = network(asked, granted)?;
    Ok(RunGrants {
        allow_network,
        allow_hosts,
        publish: publish(asked.publish.as_deref(), granted)?,
        allow_write: paths(
            asked.allow_write.as_deref(),
            &granted.allow_write,
            "allow_write",
            place,
        )?,
        allow_read: paths(
            asked.allow_read.as_deref(),
            &granted.allow_read,
            "allow_read",
            place,
        )?,
        profile: profile(asked.profile.as_deref(), granted)?,
        env: env(asked.env.as_deref(), granted)?,
        timeout: timeout(asked.timeout, granted)?,
        cache: granted.cache,
    })
}

fn refused(param: &str, why: String, flag: &str) -> RpcError {
    not_granted(Tool::Run, param, why, flag)
}

/// The whole network only when granted and not turned down; hosts within the granted ones
/// (any host when the whole network is granted: a few hosts are less).
fn network(asked: &Asked, granted: &RunGrants) -> Result<(bool, Vec<String>), RpcError> {
    let Some(hosts) = &asked.allow_host else {
        let whole = asked.allow_network.unwrap_or(granted.allow_network);
        let hosts = match whole {
            true => Vec::new(),
            false => granted.allow_hosts.clone(),
        };
        return Ok((whole, hosts));
    };
    let grant: Vec<AllowEntry> = granted
        .allow_hosts
        .iter()
        .filter_map(|h| AllowEntry::parse(h).ok())
        .collect();
    for host in hosts {
        let entry = AllowEntry::parse(host).map_err(|e| RpcError::params(e.to_string()))?;
        if !granted.allow_network && !entry.within(&grant) {
            let why = format!(
                "{host} is not within the hosts granted ({})",
                granted.allow_hosts.join(", ")
            );
            return Err(refused("allow_host", why, &format!("--allow-host {host}")));
        }
    }
    Ok((false, hosts.clone()))
}

/// Ports among the granted ones, each exactly as granted (host port included).
fn publish(asked: Option<&[String]>, granted: &RunGrants) -> Result<Vec<String>, RpcError> {
    let Some(asked) = asked else {
        return Ok(granted.publish.clone());
    };
    let grant: Vec<PublishRequest> = granted
        .publish
        .iter()
        .filter_map(|p| PublishRequest::parse(p).ok())
        .collect();
    for port in asked {
        let request = PublishRequest::parse(port).map_err(|e| RpcError::params(e.to_string()))?;
        if !grant.contains(&request) {
            let why = format!(
                "{port} is not among the ports granted ({})",
                granted.publish.join(", ")
            );
            return Err(refused("publish", why, &format!("--publish {port}")));
        }
    }
    Ok(asked.to_vec())
}

/// Paths beneath granted ones, judged where their links lead.
fn paths(
    asked: Option<&[PathBuf]>,
    granted: &[PathBuf],
    param: &str,
    place: &Place,
) -> Result<Vec<PathBuf>, RpcError> {
    let Some(asked) = asked else {
        return Ok(granted.to_vec());
    };
    let real: Vec<PathBuf> = granted
        .iter()
        .filter_map(|p| grants::real_path(p))
        .collect();
    let flag = format!("--{}", param.replace('_', "-"));
    let mut given = Vec::new();
    for path in asked {
        let path = place.path(path.clone());
        if !grants::beneath(&path, &real) {
            let why = format!(
                "{} is not beneath the paths granted ({})",
                path.display(),
                grants::shown(granted)
            );
            return Err(refused(param, why, &format!("{flag} {}", path.display())));
        }
        given.push(path);
    }
    Ok(given)
}

fn profile(asked: Option<&str>, granted: &RunGrants) -> Result<Option<String>, RpcError> {
    match asked {
        None => Ok(granted.profile.clone()),
        Some(name) if granted.profile.as_deref() == Some(name) => Ok(Some(name.to_string())),
        Some(name) => Err(refused(
            "profile",
            format!(
                "the server grants the profile {}, not {name}",
                granted.profile.as_deref().unwrap_or("none")
            ),
            &format!("--profile {name}"),
        )),
    }
}

/// Variables the grant passes (a value set by the call passes nothing of the server's); the
/// values the grant sets always stay.
fn env(asked: Option<&[EnvRequest]>, granted: &RunGrants) -> Result<Vec<EnvRequest>, RpcError> {
    let Some(asked) = asked else {
        return Ok(granted.env.clone());
    };
    let mut env: Vec<EnvRequest> = granted
        .env
        .iter()
        .filter(|e| matches!(e, EnvRequest::Set(..)))
        .cloned()
        .collect();
    for request in asked {
        if let EnvRequest::Pass(name) = request
            && !granted.env.iter().any(|g| g.covers(request))
        {
            let why = format!("the server's variable {name} is not granted");
            return Err(refused("env", why, &format!("--env {name}")));
        }
        env.push(request.clone());
    }
    Ok(env)
}

/// A timeout no longer than the granted one.
fn timeout(asked: Option<Duration>, granted: &RunGrants) -> Result<Option<Duration>, RpcError> {
    let Some(asked) = asked else {
        return Ok(granted.timeout);
    };
    match granted.timeout {
        Some(most) if asked > most => Err(refused(
            "timeout",
            format!(
                "{} is longer than the granted {}s",
                shown(asked),
                most.as_secs()
            ),
            &format!("--timeout {}", shown(asked)),
        )),
        _ => Ok(Some(asked)),
    }
}
