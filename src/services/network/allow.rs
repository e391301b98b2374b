//! `--allow-host` entries: what they name, what they expand to, and whether a host and port
//! the command asks the proxy for is one of them.

use std::net::{IpAddr, Ipv6Addr};

use crate::base::error::Result;
use crate::services::network::address::{embedded_v4, forbidden_itself, forbidden_v4};
use crate::store::network_report::{AllowedReport, RefusalReason};

/// The presets: each a list of the hosts that service's clients really use (port 443 only).
pub const PRESETS: &[(&str, &[&str])] = &[
    // cargo: the sparse index, crate downloads, and the API (search, publish).
    (
        "@crates",
        &["crates.io", "index.crates.io", "static.crates.io"],
    ),
    // npm and yarn's mirror of the same registry.
    ("@npm", &["registry.npmjs.org", "registry.yarnpkg.com"]),
    // pip: the index and the files it links to.
    ("@pypi", &["pypi.org", "files.pythonhosted.org"]),
    // git over HTTPS, the API, archives, raw files and release downloads.
    (
        "@github",
        &[
            "github.com",
            "api.github.com",
            "codeload.github.com",
            "raw.githubusercontent.com",
            "objects.githubusercontent.com",
            "release-assets.githubusercontent.com",
        ],
    ),
    ("@anthropic", &["api.anthropic.com"]),
    ("@openai", &["api.openai.com"]),
];

/// The ports an entry without one allows.
pub(crate) const DEFAULT_PORTS: [u16; 2] = [80, 443];

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostPattern {
    /// This name exactly (lower case, no trailing dot).
    Name(String),
    /// Any name ending in `.` and this suffix (not the suffix itself).
    Wildcard(String),
    /// This address (an IP literal).
    Ip(IpAddr),
}

/// One host and port an entry allows.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    host: HostPattern,
    port: u16,
}

impl Rule {
    fn display(&self) -> String {
        match &self.host {
            HostPattern::Name(name) => format!("{name}:{}", self.port),
            HostPattern::Wildcard(suffix) => format!("*.{suffix}:{}", self.port),
            HostPattern::Ip(IpAddr::V6(v6)) => format!("[{v6}]:{}", self.port),
            HostPattern::Ip(ip) => format!("{ip}:{}", self.port),
        }
    }
}

/// One `--allow-host` argument, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowEntry {
    given: String,
    rules: Vec<Rule>,
}

/// The host a request names, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Name(String),
    Ip(IpAddr),
}

impl AllowEntry {
    /// Parses `HOST[:PORT]`, `*.DOMAIN[:PORT]`, an IP literal (`[v6]:PORT` with a port) or a
    /// preset (`@crates`…); anything else is `invalid_input`.
    pub fn parse(given: &str) -> Result<AllowEntry> {
        let invalid = |why: &str| crate::base::invalid::Invalid::AllowHost {
            given: given.to_string(),
            why: why.to_string(),
        };
        let rules: Vec<(HostPattern, u16)> = if let Some(preset) = given.strip_prefix('@') {
            let (_, hosts) = PRESETS
                .iter()
                .find(|(name, _)| name[1..] == *preset)
                .ok_or_else(|| {
                    invalid(&format!("no such preset (there are {})", preset_names()))
                })?;
            #[cfg(feature = "fault-injection")]
            if let Some(rules) = test_preset_rules(given) {
                return Ok(AllowEntry {
                    given: given.to_string(),
                    rules,
                });
            }
            let name = |host: &&str| HostPattern::Name((*host).to_string());
            hosts.iter().map(|host| (name(host), 443)).collect()
        } else {
            let (host, port) = split_host_port(given).map_err(&invalid)?;
            let ports = match port {
                Some(port) => vec![parse_port(port).map_err(&invalid)?],
                None => DEFAULT_PORTS.to_vec(),
            };
            let host = parse_pattern(host).map_err(invalid)?;
            ports.iter().map(|p| (host.clone(), *p)).collect()
        };
        let rules = rules.into_iter().map(|(host, port)| Rule { host, port });
        Ok(AllowEntry {
            given: given.to_string(),
            rules: rules.collect(),
        })
    }

    /// Whether every host and port this entry allows is allowed by one of `granted` (what an
    /// MCP server's tool call may ask within the hosts its command line granted).
    pub fn within(&self, granted: &[AllowEntry]) -> bool {
        self.rules.iter().all(|rule| {
            granted
                .iter()
                .flat_map(|entry| &entry.rules)
                .any(|grant| grant.port == rule.port && covers(&grant.host, &rule.host))
        })
    }
}

/// With the `fault-injection` feature only: the rules `A3S_ISO_TEST_PRESET_HOSTS`
/// (`@npm=127.0.0.2:8080|host:port,@pypi=…`) gives a preset instead of its real hosts, so that
/// tests serve a preset's registry on loopback. A release build never reads it.
#[cfg(feature = "fault-injection")]
fn test_preset_rules(preset: &str) -> Option<Vec<Rule>> {
    let given = std::env::var("A3S_ISO_TEST_PRESET_HOSTS").ok()?;
    let (_, entries) = given
        .split(',')
        .filter_map(|pair| pair.split_once('='))
        .find(|(name, _)| *name == preset)?;
    let parsed: Result<Vec<AllowEntry>> = entries
        .split('|')
        .filter(|e| !e.starts_with('@'))
        .map(AllowEntry::parse)
        .collect();
    parsed
        .ok()
        .map(|e| e.into_iter().flat_map(|e| e.rules).collect())
}

fn preset_names() -> String {
    PRESETS
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `host` and the port text, if any: `[v6]:port`, `[v6]`, a bare IPv6 address, `host:port`.
fn split_host_port(given: &str) -> std::result::Result<(&str, Option<&str>), &'static str> {
    if let Some(rest) = given.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or("an unclosed [")?;
        return match after.strip_prefix(':') {
            _ if after.is_empty() => Ok((host, None)),
            Some(port) => Ok((host, Some(port))),
            None => Err("expected :PORT after ]"),
        };
    }
    if given.parse::<Ipv6Addr>().is_ok() {
        return Ok((given, None));
    }
    Ok((given.rsplit_once(':')).map_or((given, None), |(host, port)| (host, Some(port))))
}

fn parse_port(text: &str) -> std::result::Result<u16, &'static str> {
    (text.parse::<u16>().ok().filter(|port| *port != 0))
        .ok_or("the port must be a number from 1 to 65535")
}

fn parse_pattern(host: &str) -> std::result::Result<HostPattern, &'static str> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        // Compared with requests in the same form: `[::ffff:10.0.0.1]` is 10.0.0.1.
        return Ok(HostPattern::Ip(canonical(ip)));
    }
    if let Some(suffix) = host.strip_prefix("*.") {
        let suffix = normal_name(suffix).ok_or("not a host name after *.")?;
        if !suffix.contains('.') {
            return Err("a wildcard needs a domain of two labels or more (*.example.org)");
        }
        return Ok(HostPattern::Wildcard(suffix));
    }
    normal_name(host)
        .map(HostPattern::Name)
        .ok_or("not a host name, *.domain, IP address or @preset")
}

/// A host name in lower case without its trailing dot, if it is one: labels of letters,
/// digits, `-` and `_`, 1 to 63 characters, not starting or ending with `-`.
pub(crate) fn normal_name(host: &str) -> Option<String> {
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    let valid_label = |label: &str| {
        (1..=63).contains(&label.len())
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    (!host.is_empty() && host.len() <= 253 && host.split('.').all(valid_label)).then_some(host)
}

/// The `--allow-host` entries of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlist {
    entries: Vec<AllowEntry>,
}

impl Allowlist {
    /// Parses every entry; the first invalid one is `invalid_input`.
    pub fn parse(given: &[String]) -> Result<Allowlist> {
        Ok(Allowlist {
            entries: given
                .iter()
                .map(|g| AllowEntry::parse(g))
                .collect::<Result<_>>()?,
        })
    }

    /// No entry: no proxy.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries as given and expanded.
    pub fn report(&self) -> Vec<AllowedReport> {
        self.entries
            .iter()
            .map(|e| AllowedReport {
                entry: e.given.clone(),
                expanded: e.rules.iter().map(Rule::display).collect(),
            })
            .collect()
    }

    fn rules(&self) -> impl Iterator<Item = &Rule> {
        self.entries.iter().flat_map(|e| e.rules.iter())
    }

    /// Whether an IP-literal entry names `ip` on `port`.
    pub(crate) fn allows_address(&self, ip: IpAddr, port: u16) -> bool {
        self.rules()
            .any(|r| r.port == port && r.host == HostPattern::Ip(canonical(ip)))
    }

    /// Whether the proxy may connect to `ip` on `port`: an IP-literal entry names it, or it is
    /// not forbidden itself and every IPv4 address it embeds is either not forbidden or named
    /// by an IP-literal entry (the same rule as for that IPv4 address given alone).
    pub(crate) fn permits_address(&self, ip: IpAddr, port: u16) -> bool {
        self.allows_address(ip, port)
            || (!forbidden_itself(ip)
                && embedded_v4(ip)
                    .into_iter()
                    .all(|v4| !forbidden_v4(v4) || self.allows_address(IpAddr::V4(v4), port)))
    }

    /// Whether the host and port are allowed before any resolution: the host must match an
    /// entry (an IP literal only an IP-literal entry), and one of its entries the port.
    pub(crate) fn check(
        &self,
        target: &Target,
        port: u16,
    ) -> std::result::Result<(), RefusalReason> {
        let matching: Vec<&Rule> = self
            .rules()
            .filter(|rule| match (&rule.host, target) {
                (HostPattern::Name(name), Target::Name(host)) => name == host,
                (HostPattern::Wildcard(suffix), Target::Name(host)) => under(host, suffix),
                (HostPattern::Ip(ip), Target::Ip(host)) => *ip == canonical(*host),
                _ => false,
            })
            .collect();
        if matching.is_empty() {
            Err(RefusalReason::HostNotAllowed)
        } else if !matching.iter().any(|rule| rule.port == port) {
            Err(RefusalReason::PortNotAllowed)
        } else {
            Ok(())
        }
    }
}

/// An IPv4-mapped IPv6 address as its IPv4 address; any other as it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

/// The host of a request's authority: an IP literal (`[v6]` or v4) or a host name; `None` for
/// anything else.
pub(crate) fn target_of(host: &str) -> Option<Target> {
    if let Ok(ip) = bare(host).parse::<IpAddr>() {
        return Some(Target::Ip(ip));
    }
    normal_name(host).map(Target::Name)
}

/// A host without the brackets of an IPv6 literal.
pub(crate) fn bare(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

/// Whether `name` is a name under the domain `suffix` (not `suffix` itself).
fn under(name: &str, suffix: &str) -> bool {
    name.strip_suffix(suffix)
        .is_some_and(|head| head.ends_with('.') && head.len() > 1)
}

/// Whether `grant` names every host `asked` names.
fn covers(grant: &HostPattern, asked: &HostPattern) -> bool {
    match (grant, asked) {
        (HostPattern::Name(g), HostPattern::Name(a)) => g == a,
        (HostPattern::Wildcard(g), HostPattern::Name(a)) => under(a, g),
        (HostPattern::Wildcard(g), HostPattern::Wildcard(a)) => g == a || under(a, g),
        (HostPattern::Ip(g), HostPattern::Ip(a)) => g == a,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::services::network::allow::*;

    fn list(entries: &[&str]) -> Allowlist {
        Allowlist::parse(&entries.iter().map(|e| e.to_string()).collect::<Vec<_>>()).unwrap()
    }

    fn check(allow: &Allowlist, host: &str, port: u16) -> std::result::Result<(), RefusalReason> {
        allow.check(&target_of(host).unwrap(), port)
    }

    #[test]
    fn entries_allow_their_host_on_their_ports_only() {
        let allow = list(&[
            "api.example.com",
            "*.example.org",
            "127.0.0.1:8080",
            "[::1]:9",
        ]);
        assert_eq!(check(&allow, "API.example.com.", 443), Ok(()));
        assert_eq!(check(&allow, "api.example.com", 80), Ok(()));
        assert_eq!(
            check(&allow, "api.example.com", 22),
            Err(RefusalReason::PortNotAllowed)
        );
        assert_eq!(
            check(&allow, "example.com", 443),
            Err(RefusalReason::HostNotAllowed)
        );
        assert_eq!(check(&allow, "a.b.example.org", 443), Ok(()));
        assert_eq!(
            check(&allow, "example.org", 443),
            Err(RefusalReason::HostNotAllowed)
        );
        for lookalike in [
            "badexample.org",
            "evil-example.org",
            "example.org.evil.com",
            "a.example.org.evil.com",
            "a.example.orgx",
        ] {
            assert_eq!(
                check(&allow, lookalike, 443),
                Err(RefusalReason::HostNotAllowed),
                "{lookalike}"
            );
        }
        assert_eq!(check(&allow, "A.EXAMPLE.ORG.", 443), Ok(()));
        assert_eq!(check(&allow, "127.0.0.1", 8080), Ok(()));
        assert_eq!(check(&allow, "[::ffff:127.0.0.1]", 8080), Ok(()));
        assert_eq!(check(&allow, "[::1]", 9), Ok(()));
        assert_eq!(
            check(&allow, "[::1]", 8080),
            Err(RefusalReason::PortNotAllowed)
        );
        assert_eq!(
            check(&allow, "[::2]", 9),
            Err(RefusalReason::HostNotAllowed)
        );
        assert!(allow.allows_address("127.0.0.1".parse().unwrap(), 8080));
        assert!(!allow.allows_address("127.0.0.1".parse().unwrap(), 80));
    }

    #[test]
    fn an_ip_entry_in_mapped_form_is_its_ipv4_address() {
        let allow = list(&["[::ffff:10.1.2.3]:8080"]);
        assert_eq!(check(&allow, "10.1.2.3", 8080), Ok(()));
        assert_eq!(check(&allow, "[::ffff:10.1.2.3]", 8080), Ok(()));
        assert_eq!(check(&allow, "[::ffff:a01:203]", 8080), Ok(()));
        assert!(allow.allows_address("10.1.2.3".parse().unwrap(), 8080));
        assert!(allow.allows_address("::ffff:10.1.2.3".parse().unwrap(), 8080));
        assert_eq!(allow.report()[0].expanded, ["10.1.2.3:8080"]);
    }

    #[test]
    fn an_embedded_ipv4_address_is_permitted_only_as_that_address_would_be() {
        let ip = |text: &str| text.parse::<IpAddr>().unwrap();
        let none = list(&["example.com"]);
        for refused in [
            "2002:7f00:1::1",
            "2001:0:101:101::80ff:fffe",
            "2001:0:a9fe:a9fe::fefe:fefe",
            "2606:4700::5efe:a00:1",
            "64:ff9b::a00:1",
            "::ffff:a00:1",
        ] {
            assert!(!none.permits_address(ip(refused), 443), "{refused}");
        }
        for public in ["2002:101:101::1", "2001:0:101:101::fefe:fefe", "1.1.1.1"] {
            assert!(none.permits_address(ip(public), 443), "{public}");
        }
        // An IP entry for the embedded address permits its forms on its port only; one for
        // the IPv6 form permits that form.
        let named = list(&["10.0.0.1:8080", "[2002:7f00:1::1]:8080"]);
        assert!(named.permits_address(ip("2002:a00:1::1"), 8080));
        assert!(named.permits_address(ip("64:ff9b::a00:1"), 8080));
        assert!(!named.permits_address(ip("2002:a00:1::1"), 443));
        assert!(!named.permits_address(ip("2002:a00:2::1"), 8080));
        assert!(named.permits_address(ip("2002:7f00:1::1"), 8080));
        assert!(!named.permits_address(ip("2002:7f00:1::2"), 8080));
        // Teredo embeds two addresses: both must pass.
        assert!(!named.permits_address(ip("2001:0:a00:1::80ff:fffe"), 8080));
        assert!(named.permits_address(ip("2001:0:a00:1::fefe:fefe"), 8080));
        // A form forbidden by its own class stays forbidden, whatever it embeds.
        assert!(!named.permits_address(ip("fd00::5efe:101:101"), 8080));
    }

    #[test]
    fn invalid_entries_are_invalid_input() {
        for bad in [
            "",
            "exa mple.com",
            "*.com",
            "*.com.*",
            "a:0",
            "a:65536",
            "a:x",
            "@nope",
            "[::1",
            "[::1]x",
            "-a.com",
            "a..com",
            "http://a.com",
        ] {
            let err = AllowEntry::parse(bad).unwrap_err();
            assert_eq!(
                err.code(),
                crate::base::error::ErrorCode::InvalidInput,
                "{bad}"
            );
        }
    }

    #[test]
    fn presets_expand_to_port_443() {
        let allow = list(&["@pypi"]);
        assert_eq!(
            allow.report()[0].expanded,
            ["pypi.org:443", "files.pythonhosted.org:443"]
        );
    }
}
