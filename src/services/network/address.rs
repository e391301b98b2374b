//! Which addresses the proxy never connects to unless an IP-literal entry names them: those
//! that reach the host itself, its local networks or cloud metadata services.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `ip` is loopback, link-local (169.254.169.254 included), private (RFC 1918),
/// unique-local, unspecified, multicast, broadcast or reserved, CGNAT (100.64.0.0/10),
/// IETF-assigned (192.0.0.0/24), benchmarking (198.18.0.0/15), local-use NAT64, IPv4-compatible,
/// or an IPv6 form that embeds one of those IPv4 addresses ([`embedded_v4`]).
pub fn forbidden(ip: IpAddr) -> bool {
    forbidden_itself(ip) || embedded_v4(ip).into_iter().any(forbidden_v4)
}

/// Whether `ip` is forbidden by its own class, leaving aside any IPv4 address it embeds.
pub(crate) fn forbidden_itself(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

/// Whether an IPv4 address is one of the forbidden classes.
pub(crate) fn forbidden_v4(ip: Ipv4Addr) -> bool {
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
    let [first, second, third, ..] = ip.segments();
    // ::a.b.c.d (IPv4-compatible, deprecated but still routed by some stacks): no public host
    // has one, so the whole block is refused, whatever it embeds.
    let compatible = ip.segments()[..6].iter().all(|s| *s == 0);
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || compatible
        // Unique-local fc00::/7, link-local fe80::/10, site-local fec0::/10.
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first & 0xffc0) == 0xfec0
        // The local-use NAT64 prefix 64:ff9b:1::/48 is a network's own.
        || (first == 0x64 && second == 0xff9b && third == 1)
}

/// The IPv4 addresses an IPv6 form carries, which a translator, relay or tunnel reaches when
/// the form is connected to: IPv4-mapped `::ffff:a.b.c.d` and -compatible `::a.b.c.d`, NAT64
/// `64:ff9b::a.b.c.d`, 6to4 `2002:AABB:CCDD::/48`, Teredo `2001:0::/32` (its server, bits 32
/// to 63, and its client, the last 32 bits inverted) and an ISATAP interface id
/// (`…:0:5efe:a.b.c.d`, or `200:5efe` with the universal bit). None for an IPv4 address.
pub(crate) fn embedded_v4(ip: IpAddr) -> Vec<Ipv4Addr> {
    let IpAddr::V6(v6) = ip else {
        return Vec::new();
    };
    let s = v6.segments();
    let o = v6.octets();
    let at = |i: usize| Ipv4Addr::new(o[i], o[i + 1], o[i + 2], o[i + 3]);
    let last = at(12);
    let mut found = Vec::new();
    if s[..5].iter().all(|x| *x == 0) && (s[5] == 0 || s[5] == 0xffff) {
        found.push(last);
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6].iter().all(|x| *x == 0) {
        found.push(last);
    }
    if s[0] == 0x2002 {
        found.push(at(2));
    }
    if s[0] == 0x2001 && s[1] == 0 {
        found.push(at(4));
        found.push(Ipv4Addr::from(!u32::from(last)));
    }
    if (s[4] & 0xfdff) == 0 && s[5] == 0x5efe {
        found.push(last);
    }
    found
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
            // 6to4 of loopback, private and metadata addresses.
            "2002:7f00:1::",
            "2002:a00:1:ffff::1",
            "2002:a9fe:a9fe::1",
            // Teredo: a forbidden server (1.1.1.1 client), a forbidden client (1.1.1.1 server).
            "2001:0:a9fe:a9fe::fefe:fefe",
            "2001:0:101:101::80ff:fffe",
            "2001:0:101:101:8000:0:f5ff:fffe",
            // ISATAP interface ids under a global prefix, with and without the universal bit.
            "2606:4700::5efe:a9fe:a9fe",
            "2606:4700::200:5efe:a00:1",
            "64:ff9b::7f00:1",
            "::a9fe:a9fe",
            "::1.1.1.1",
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
            "2002:101:101::1",
            "2001:0:101:101::fefe:fefe",
            "2606:4700::5efe:101:101",
            "2606:4700::300:5efe:a00:1",
        ] {
            assert!(!forbidden(good.parse().unwrap()), "{good}");
        }
    }

    #[test]
    fn every_embedding_yields_its_ipv4_address() {
        let v4 = |text: &str| text.parse::<Ipv4Addr>().unwrap();
        for (form, expected) in [
            ("::ffff:10.1.2.3", vec![v4("10.1.2.3")]),
            ("::10.1.2.3", vec![v4("10.1.2.3")]),
            ("64:ff9b::10.1.2.3", vec![v4("10.1.2.3")]),
            ("2002:a01:203:4::5", vec![v4("10.1.2.3")]),
            (
                "2001:0:4136:e378:8000:63bf:3fff:fdd2",
                vec![v4("65.54.227.120"), v4("192.0.2.45")],
            ),
            ("fe80::5efe:a01:203", vec![v4("10.1.2.3")]),
            ("2606:4700::200:5efe:a01:203", vec![v4("10.1.2.3")]),
            ("2606:4700::1111", vec![]),
            ("64:ff9b:0:1::a01:203", vec![]),
            ("10.1.2.3", vec![]),
        ] {
            assert_eq!(embedded_v4(form.parse().unwrap()), expected, "{form}");
        }
    }
}
