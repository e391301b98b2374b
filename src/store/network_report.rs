//! What a run reports of its network: the mode, the allowlist, the published ports and the
//! proxy's refusals; and the proxy's fixed place inside.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::base::sandbox::NetworkAccess;
use crate::base::wire::wire_enum;

/// The port of the proxy on the sandbox's loopback: fixed, so that the command's environment
/// is known before it starts (`--publish` of it is refused).
pub const PROXY_PORT: u16 = 3128;

/// How many refusals a run keeps (the first ones).
pub const MAX_REFUSALS: usize = 1000;

/// The proxy's address inside the sandbox, as `host:port`.
pub fn proxy_address() -> String {
    format!("127.0.0.1:{PROXY_PORT}")
}

/// The variables that send the command's HTTP clients to the proxy (loopback excepted).
pub fn proxy_env() -> Vec<(String, String)> {
    let url = format!("http://{}", proxy_address());
    let mut vars: Vec<(String, String)> = [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ]
    .iter()
    .map(|name| ((*name).to_string(), url.clone()))
    .collect();
    for name in ["NO_PROXY", "no_proxy"] {
        vars.push((name.into(), "localhost,127.0.0.1,::1".into()));
    }
    vars
}

/// What a command whose network is denied gets unless given its own: package managers told not
/// to retry a download that cannot succeed (npm would wait 70 seconds between retries), so that
/// the command fails at once and `run` can say which hosts it tried.
pub fn no_retry_env() -> Vec<(String, String)> {
    [
        ("npm_config_fetch_retries", "0"),
        ("PIP_RETRIES", "0"),
        ("CARGO_NET_RETRY", "0"),
    ]
    .iter()
    .map(|(name, value)| ((*name).to_string(), (*value).to_string()))
    .collect()
}

wire_enum! {
    /// Why the proxy refused a connection.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    pub enum RefusalReason {
        /// No `--allow-host` entry names the host.
        HostNotAllowed = "host_not_allowed",
        /// The host is allowed, but not on this port.
        PortNotAllowed = "port_not_allowed",
        /// Every address the name resolved to is loopback, private, link-local or the like, and
        /// no IP-literal entry allows it.
        AddressNotAllowed = "address_not_allowed",
        /// An HTTP request line naming another proxy hop (`CONNECT`, or an absolute URI) came
        /// first through an established tunnel.
        ConnectInTunnel = "connect_in_tunnel",
        /// The name did not resolve.
        Unresolvable = "unresolvable",
        /// Not a proxy request the proxy serves (no absolute `http://` URI, no port on CONNECT).
        BadRequest = "bad_request",
    }
}

/// One connection the proxy refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// The host asked for, as the command gave it (its first 253 bytes and `...` when longer;
    /// empty for a request that could not be parsed).
    pub host: String,
    /// The port asked for.
    pub port: u16,
    /// Why.
    pub reason: RefusalReason,
    /// With `address_not_allowed`: the address refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<IpAddr>,
}

/// How the sandbox kept the command from a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeniedBy {
    /// The command looked the name up: the sandbox's name responder said there is no such
    /// name (the network is denied, or the proxy is the only way out).
    Lookup,
    /// The proxy refused a connection to it (`host_not_allowed` or `port_not_allowed`).
    Proxy,
}

/// A host the command tried and the sandbox kept from it, with the grant that allows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Denied {
    /// The host name (lower case, at most 253 bytes).
    pub host: String,
    /// The port, when known (a lookup has none).
    pub port: Option<u16>,
    /// How it was kept from the command.
    pub how: DeniedBy,
    /// What to give `--allow-host` to allow it: a preset naming the host (`@npm`), else the
    /// host (with its port when the default ports do not cover it).
    pub allow_host: String,
}

/// One `--allow-host` entry as given and what it allows (`host:port` each).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllowedReport {
    /// The entry as given.
    pub entry: String,
    /// What it expands to.
    pub expanded: Vec<String>,
}

/// A port published from the sandbox to the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Published {
    /// The host address it listens on (always `127.0.0.1`).
    pub host: String,
    /// The host's port.
    pub host_port: u16,
    /// The port inside.
    pub port: u16,
}

/// What a run's command could reach of the network (`network` in `a3s-iso.run.v1`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkReport {
    /// `denied` (loopback only), `allowlist` (loopback and the proxy) or `allowed`.
    pub mode: NetworkAccess,
    /// The `--allow-host` entries.
    pub allowed: Vec<AllowedReport>,
    /// The proxy's address inside (`null` without an allowlist).
    pub proxy: Option<String>,
    /// The published ports.
    pub published: Vec<Published>,
    /// The connections the proxy refused, in order (the first [`MAX_REFUSALS`]).
    pub refused: Vec<Refusal>,
    /// The hosts the command tried that the sandbox kept from it: names looked up (with the
    /// network denied, or not on the allowlist) and hosts the proxy refused; each once.
    #[serde(default)]
    pub denied: Vec<Denied>,
}

impl NetworkReport {
    /// The report before the command runs (nothing refused yet).
    pub fn planned(
        mode: NetworkAccess,
        allowed: Vec<AllowedReport>,
        published: Vec<Published>,
    ) -> Self {
        NetworkReport {
            mode,
            proxy: (!allowed.is_empty()).then(proxy_address),
            allowed,
            published,
            refused: Vec::new(),
            denied: Vec::new(),
        }
    }

    /// `N connection(s) refused (host:port reason, ...)`, or `None` when none was.
    pub fn refusal_summary(&self) -> Option<String> {
        if self.refused.is_empty() {
            return None;
        }
        let shown: Vec<String> = self
            .refused
            .iter()
            .take(3)
            .map(|r| format!("{} {}", host_port(&r.host, r.port), r.reason))
            .collect();
        let more = self.refused.len().saturating_sub(shown.len());
        Some(format!(
            "{} connection{} refused ({}{})",
            self.refused.len(),
            if self.refused.len() == 1 { "" } else { "s" },
            shown.join(", "),
            if more > 0 {
                format!(", {more} more")
            } else {
                String::new()
            }
        ))
    }
}

/// `host:port`.
pub fn host_port(host: &str, port: u16) -> String {
    format!("{host}:{port}")
}
