//! Names that say which process made an entry: `<stem>-<pid>-<start ticks>-<host key>-<n>-<nanos>`,
//! so that a later command can tell a provably dead maker's leftover from a live one's (the
//! store's scratch cleaning reads them; git's hermetic dirs and patch files are named with them).

use std::sync::OnceLock;

use crate::base::owner::{hostname, start_identity};

/// This process's start ticks (field 22 of `/proc/<pid>/stat`), when they can be read.
pub(crate) fn start_ticks(pid: u32) -> Option<u64> {
    start_identity(pid)?
        .strip_prefix("linux-proc-start-ticks:")?
        .parse()
        .ok()
}

/// Eight hex digits standing for where a pid means this process: the host name and the PID
/// namespace. A command in a run's sandbox (a PID namespace of its own, where the host's pids
/// are not visible) sees the makers outside as foreign, never as dead.
fn host_key() -> &'static str {
    static KEY: OnceLock<String> = OnceLock::new();
    KEY.get_or_init(|| {
        use sha2::{Digest, Sha256};
        let namespace = std::fs::read_link("/proc/self/ns/pid").unwrap_or_default();
        let mut hasher = Sha256::new();
        hasher.update(hostname().as_bytes());
        hasher.update([0u8]);
        hasher.update(namespace.as_os_str().as_encoded_bytes());
        hex::encode(&hasher.finalize()[..4])
    })
}

/// `<pid>-<start ticks>-<host key>` of this process (ticks 0 when they cannot be read: then
/// nothing it makes is ever judged dead).
pub(crate) fn maker_tag() -> &'static str {
    static TAG: OnceLock<String> = OnceLock::new();
    TAG.get_or_init(|| {
        let pid = std::process::id();
        let ticks = start_ticks(pid).unwrap_or(0);
        format!("{pid}-{ticks}-{}", host_key())
    })
}

/// A fresh name for a scratch entry of this process: `<stem>-<maker>-<n>-<nanos>`.
pub(crate) fn owned_name(stem: &str) -> String {
    let unique = crate::base::beneath::count_and_clock();
    format!("{stem}-{}-{unique}", maker_tag())
}

/// Who made a scratch entry, as its name says.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Maker {
    pub(crate) pid: u32,
    pub(crate) ticks: u64,
    pub(crate) host: String,
}

/// The maker an entry's name carries (a `.lock` beside a temporary index counts as the
/// index's); `None` for a name not made by [`owned_name`].
pub(crate) fn maker_of(name: &str) -> Option<Maker> {
    let name = name.strip_suffix(".lock").unwrap_or(name);
    let parts: Vec<&str> = name.rsplitn(6, '-').collect();
    let [nanos, n, host, ticks, pid, stem] = parts[..] else {
        return None;
    };
    let hex8 = |s: &str| s.len() == 8 && s.bytes().all(|b| b.is_ascii_hexdigit());
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if stem.is_empty() || !hex8(nanos) || !digits(n) || !hex8(host) || !digits(ticks) {
        return None;
    }
    let maker = Maker {
        pid: pid.parse().ok()?,
        ticks: ticks.parse().ok()?,
        host: host.to_string(),
    };
    (maker.pid > 0 && maker.ticks > 0).then_some(maker)
}

/// Whether a maker of this host and PID namespace is provably dead (gone, a zombie, or reused).
pub(crate) fn is_dead(maker: &Maker) -> bool {
    maker.host == host_key() && start_ticks(maker.pid) != Some(maker.ticks)
}

/// Whether `name` (made by [`owned_name`]) names a provably dead maker; false for any other.
pub(crate) fn made_by_dead(name: &str) -> bool {
    maker_of(name).is_some_and(|maker| is_dead(&maker))
}
