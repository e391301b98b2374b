//! The network a sandboxed run gets: the allowlist proxy and ports published to the host.
//! May call: base, git, store, context, model, recovery and the rest of services.
//!
//! The command keeps its own network namespace with only loopback. The sandbox helper, which
//! lives in that namespace, binds the proxy's listener there and hands it to `run` (and, on
//! request, fresh TCP sockets made there) over a socket pair ([`crate::base::sandbox::SocketFactory`]).
//! `run` serves the proxy on that listener and connects out from the host's namespace, only to
//! what the allowlist names, and only to the addresses it checked itself. The helper also
//! binds a UDP socket on the sandbox's `127.0.0.1:53`, which the sandbox's `/etc/resolv.conf`
//! names: `run` answers every name lookup there at once, never forwarding one, and records
//! the names ([`dns`]), so that a failed run can say which hosts it tried and what grant
//! would let them through ([`denied`]).

mod address;
mod allow;
mod denied;
mod dns;
mod proxy;
mod publish;
mod service;
mod tunnel;

pub use crate::services::network::address::forbidden;
pub use crate::services::network::allow::{AllowEntry, Allowlist, PRESETS};
pub use crate::services::network::denied::{denied, grant_for};
pub use crate::services::network::dns::answer as dns_answer;
pub use crate::services::network::publish::PublishRequest;
pub use crate::services::network::service::{Kept, NetworkPlan, NetworkService};
pub use crate::store::network_report::{
    AllowedReport, Denied, DeniedBy, MAX_REFUSALS, NetworkReport, PROXY_PORT, Published, Refusal,
    RefusalReason, host_port, no_retry_env, proxy_address, proxy_env,
};
