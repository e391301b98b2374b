//! Which hosts the sandbox kept a run's command from, and the `--allow-host` grant that would
//! let each through: a preset that names the host, else the host itself.

use crate::services::network::allow::{Allowlist, DEFAULT_PORTS, PRESETS, Target};
use crate::store::network_report::{Denied, DeniedBy, Refusal, RefusalReason};

/// The only port of a preset.
const PRESET_PORT: u16 = 443;

/// The hosts denied: each name looked up that the allowlist does not name (a name it names
/// is reached through the proxy, whatever its lookup said), then each host and port the
/// proxy refused for want of a grant. Each once, in the order first tried.
pub fn denied(lookups: &[String], refused: &[Refusal], allow: &Allowlist) -> Vec<Denied> {
    let mut denied: Vec<Denied> = Vec::new();
    let mut add = |entry: Denied| {
        let seen = denied
            .iter()
            .any(|d| d.host == entry.host && d.port == entry.port && d.how == entry.how);
        if !seen {
            denied.push(entry);
        }
    };
    for host in lookups {
        let target = Target::Name(host.clone());
        if allow.check(&target, PRESET_PORT) == Err(RefusalReason::HostNotAllowed) {
            add(Denied {
                host: host.clone(),
                port: None,
                how: DeniedBy::Lookup,
                allow_host: grant_for(host, None),
            });
        }
    }
    for refusal in refused {
        let wants_grant = matches!(
            refusal.reason,
            RefusalReason::HostNotAllowed | RefusalReason::PortNotAllowed
        );
        if wants_grant && !refusal.host.is_empty() {
            add(Denied {
                host: refusal.host.clone(),
                port: Some(refusal.port),
                how: DeniedBy::Proxy,
                allow_host: grant_for(&refusal.host, Some(refusal.port)),
            });
        }
    }
    denied
}

/// The `--allow-host` value allowing `host` on `port`: the preset naming the host (when the port is
/// a preset's, or unknown), else the host, with the port unless an entry allows it by default.
pub fn grant_for(host: &str, port: Option<u16>) -> String {
    let bare = host.trim_end_matches('.').to_ascii_lowercase();
    let preset = PRESETS
        .iter()
        .find(|(_, hosts)| hosts.contains(&bare.as_str()))
        .map(|(name, _)| (*name).to_string());
    match (preset, port) {
        (Some(preset), None | Some(PRESET_PORT)) => preset,
        (_, Some(port)) if !DEFAULT_PORTS.contains(&port) => format!("{host}:{port}"),
        _ => host.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(host: &str, port: u16, reason: RefusalReason) -> Refusal {
        Refusal {
            host: host.into(),
            port,
            reason,
            address: None,
        }
    }

    #[test]
    fn a_host_a_preset_names_is_granted_by_the_preset_on_its_port_only() {
        assert_eq!(grant_for("registry.npmjs.org", None), "@npm");
        assert_eq!(grant_for("files.pythonhosted.org", Some(443)), "@pypi");
        assert_eq!(grant_for("Static.Crates.IO.", None), "@crates");
        assert_eq!(grant_for("github.com", Some(80)), "github.com");
        assert_eq!(grant_for("github.com", Some(22)), "github.com:22");
        assert_eq!(grant_for("example.org", None), "example.org");
        assert_eq!(grant_for("example.org", Some(8443)), "example.org:8443");
    }

    #[test]
    fn lookups_of_allowed_names_and_refusals_that_no_grant_cures_are_not_listed() {
        let allow = Allowlist::parse(&["@npm".into()]).unwrap();
        let lookups = vec!["registry.npmjs.org".into(), "pypi.org".into()];
        let refused = vec![
            refusal("pypi.org", 443, RefusalReason::HostNotAllowed),
            refusal("pypi.org", 443, RefusalReason::HostNotAllowed),
            refusal("registry.npmjs.org", 80, RefusalReason::PortNotAllowed),
            refusal("", 0, RefusalReason::BadRequest),
            refusal("x.example", 443, RefusalReason::Unresolvable),
        ];
        let listed: Vec<(String, Option<u16>, DeniedBy, String)> =
            denied(&lookups, &refused, &allow)
                .into_iter()
                .map(|d| (d.host, d.port, d.how, d.allow_host))
                .collect();
        assert_eq!(
            listed,
            vec![
                ("pypi.org".into(), None, DeniedBy::Lookup, "@pypi".into()),
                (
                    "pypi.org".into(),
                    Some(443),
                    DeniedBy::Proxy,
                    "@pypi".into()
                ),
                (
                    "registry.npmjs.org".into(),
                    Some(80),
                    DeniedBy::Proxy,
                    "registry.npmjs.org".into()
                ),
            ]
        );
    }
}
