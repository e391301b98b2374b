//! Which addresses the proxy never connects to unless an IP-literal entry names them: those
//! that reach the host itself, its local networks or cloud metadata services.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `ip` is loopback, link-local (169.254.169.254 included), private (RFC 1918),
/// unique-local, unspecified, multicast, broadcast or reserved, CGNAT (100.64.0.0/10),
/// IETF-assigned (192.0.0.0/24), benchmarking (198.18.0.0/15), local-use NAT64, or an
/// IPv4-mapped, -compatible or NAT64 form of one of those.
pub fn forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_multicast()
        || ip.is_broadcast()
        // "This network" 0.0.0.0/8, CGNAT 100.64.0.0/10, reserved 240.0.0.0/4; IETF protocol
        // assignments 192.0.0.0/24 (DS-Lite's own tunnel addresses among them) and the
        // benchmarking 198.18.0.0/15, both local to a network by definition.
        || a == 0
        || (a == 100 && (b & 0xc0) == 64)
        || a >= 240
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || (a == 198 && (b & 0xfe) == 18)
}

fn forbidden_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return forbidden_v4(v4);
    }
    let first = ip.segments()[0];
    // ::a.b.c.d (IPv4-compatible, deprecated but still routed by some stacks).
    let compatible = ip.segments()[..6].iter().all(|s| *s == 0);
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || compatible
        // Unique-local fc00::/7, link-local fe80::/10, site-local fec0::/10.
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first & 0xffc0) == 0xfec0
        // NAT64 64:ff9b::/96 reaches IPv4 addresses through a translator; the local-use
        // prefix 64:ff9b:1::/48 is a network's own.
        || (first == 0x64 && ip.segments()[1] == 0xff9b && forbidden_v4(nat64_v4(ip)))
        || (first == 0x64 && ip.segments()[1] == 0xff9b && ip.segments()[2] == 1)
}

fn nat64_v4(ip: Ipv6Addr) -> Ipv4Addr {
    let o = ip.octets();
    Ipv4Addr::new(o[12], o[13], o[14], o[15])
}

#[cfg(test)]
mod tests {
    use crate::services::network::address::*;

    #[test]
    fn local_and_metadata_addresses_are_forbidden_public_ones_are_not() {
        for bad in [
            "127.0.0.1",
            "127.1.2.3",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "0.1.2.3",
            "100.64.0.1",
            "100.127.255.255",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::0101:0101",
            "192.0.0.1",
            "192.0.0.170",
            "198.18.0.1",
            "198.19.255.255",
            "::ffff:198.18.0.1",
        ] {
            assert!(forbidden(bad.parse().unwrap()), "{bad}");
        }
        for good in [
            "1.1.1.1",
            "100.63.0.1",
            "100.128.0.1",
            "172.32.0.1",
            "2606:4700::1111",
            "::ffff:1.1.1.1",
            "192.0.1.1",
            "198.17.0.1",
            "198.20.0.1",
            "64:ff9b::101:101",
        ] {
            assert!(!forbidden(good.parse().unwrap()), "{good}");
        }
    }
}
