//! Which destination addresses a proxy may reach. Shared by proxy validation (IP literals at
//! create time) and the gateway's connect-time guard (every resolved address).
//!
//! One list, [`SPECIAL_V4`] and [`SPECIAL_V6`], taken from IANA's IPv4 and IPv6
//! Special-Purpose Address Registries (entries whose "Globally Reachable" is False or N/A),
//! plus multicast and, for IPv6, the prefixes whose real endpoint is chosen by a translator or
//! relay on someone's network (NAT64, Teredo). An IPv6 address that carries an IPv4 address
//! the host itself would dial (IPv4-mapped `::ffff:a.b.c.d`, the deprecated IPv4-compatible
//! `::a.b.c.d`, and 6to4 `2002:aabb:ccdd::/48`) is judged by that IPv4 address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// IPv4 ranges a proxy may not reach unless private destinations are allowed:
/// `(network, prefix length, what it is)`.
pub const SPECIAL_V4: &[(Ipv4Addr, u8, &str)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8, "\"this network\" (RFC 791)"),
    (Ipv4Addr::new(10, 0, 0, 0), 8, "private use (RFC 1918)"),
    (
        Ipv4Addr::new(100, 64, 0, 0),
        10,
        "shared address space (RFC 6598)",
    ),
    (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback (RFC 1122)"),
    (Ipv4Addr::new(169, 254, 0, 0), 16, "link local (RFC 3927)"),
    (Ipv4Addr::new(172, 16, 0, 0), 12, "private use (RFC 1918)"),
    (
        Ipv4Addr::new(192, 0, 0, 0),
        24,
        "IETF protocol assignments (RFC 6890)",
    ),
    (Ipv4Addr::new(192, 0, 2, 0), 24, "documentation (RFC 5737)"),
    (
        Ipv4Addr::new(192, 88, 99, 0),
        24,
        "6to4 relay anycast (RFC 7526)",
    ),
    (Ipv4Addr::new(192, 168, 0, 0), 16, "private use (RFC 1918)"),
    (Ipv4Addr::new(198, 18, 0, 0), 15, "benchmarking (RFC 2544)"),
    (
        Ipv4Addr::new(198, 51, 100, 0),
        24,
        "documentation (RFC 5737)",
    ),
    (
        Ipv4Addr::new(203, 0, 113, 0),
        24,
        "documentation (RFC 5737)",
    ),
    (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast (RFC 5771)"),
    (Ipv4Addr::new(240, 0, 0, 0), 4, "reserved (RFC 1112)"),
    (
        Ipv4Addr::new(255, 255, 255, 255),
        32,
        "limited broadcast (RFC 919)",
    ),
];

/// IPv6 ranges a proxy may not reach unless private destinations are allowed (the forms
/// judged by their IPv4 address are handled before this list is consulted).
pub const SPECIAL_V6: &[(Ipv6Addr, u8, &str)] = &[
    (
        Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 0),
        128,
        "unspecified (RFC 4291)",
    ),
    (
        Ipv6Addr::new(0, 0, 0, 0, 0, 0, 0, 1),
        128,
        "loopback (RFC 4291)",
    ),
    (
        Ipv6Addr::new(0, 0, 0, 0, 0xffff, 0, 0, 0),
        96,
        "IPv4-translated (RFC 2765)",
    ),
    (
        Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0),
        96,
        "IPv4/IPv6 translation, NAT64 (RFC 6052)",
    ),
    (
        Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0),
        48,
        "local-use IPv4/IPv6 translation (RFC 8215)",
    ),
    (
        Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0),
        64,
        "discard-only (RFC 6666)",
    ),
    (
        Ipv6Addr::new(0x100, 0, 0, 1, 0, 0, 0, 0),
        64,
        "dummy IPv6 prefix (RFC 9780)",
    ),
    (
        Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
        23,
        "IETF protocol assignments, Teredo among them (RFC 2928, RFC 4380)",
    ),
    (
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
        32,
        "documentation (RFC 3849)",
    ),
    (
        Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
        20,
        "documentation (RFC 9637)",
    ),
    (
        Ipv6Addr::new(0x5f00, 0, 0, 0, 0, 0, 0, 0),
        16,
        "segment routing SIDs (RFC 9602)",
    ),
    (
        Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
        7,
        "unique local (RFC 4193)",
    ),
    (
        Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0),
        10,
        "link-local unicast (RFC 4291)",
    ),
    (
        Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0),
        10,
        "site-local, deprecated (RFC 3879)",
    ),
    (
        Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0),
        8,
        "multicast (RFC 4291)",
    ),
];

/// True for addresses a proxy must not reach unless private destinations are allowed.
pub fn is_internal(ip: IpAddr) -> bool {
    special_purpose(ip).is_some()
}

/// What special-purpose range `ip` is in, if any (see the module documentation).
pub fn special_purpose(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => special_v4(v4),
            None => special_v6(v6),
        },
    }
}

fn special_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let bits = u32::from(ip);
    SPECIAL_V4.iter().find_map(|&(net, len, name)| {
        let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
        (bits & mask == u32::from(net) & mask).then_some(name)
    })
}

fn special_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let bits = u128::from(ip);
    SPECIAL_V6.iter().find_map(|&(net, len, name)| {
        let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
        (bits & mask == u128::from(net) & mask).then_some(name)
    })
}

/// The IPv4 address an IPv6 address stands for, for the forms the host itself dials as IPv4:
/// IPv4-mapped, IPv4-compatible (but not `::` or `::1`), and 6to4.
fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    let from = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    if s[..6].iter().all(|&x| x == 0) && !(s[6] == 0 && s[7] <= 1) {
        return Some(from(s[6], s[7]));
    }
    (s[0] == 0x2002).then(|| from(s[1], s[2]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn internal(s: &str) -> bool {
        is_internal(s.parse().expect("ip"))
    }

    /// The first and last address of every listed range are refused; the addresses just
    /// outside are judged on their own.
    #[test]
    fn every_listed_range_is_refused_from_end_to_end() {
        for &(net, len, name) in SPECIAL_V4 {
            let first = u32::from(net);
            let last = first | u32::MAX.checked_shr(u32::from(len)).unwrap_or(0);
            for bits in [first, last] {
                assert!(is_internal(IpAddr::V4(bits.into())), "{name}: {net}/{len}");
            }
        }
        for &(net, len, name) in SPECIAL_V6 {
            let first = u128::from(net);
            let last = first | u128::MAX.checked_shr(u32::from(len)).unwrap_or(0);
            for bits in [first, last] {
                let ip = Ipv6Addr::from(bits);
                assert!(is_internal(IpAddr::V6(ip)), "{name}: {ip} in {net}/{len}");
            }
        }
    }

    #[test]
    fn internal_ranges() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "ff02::1",
            "2002:7f00:1::1",
            "2002:a9fe:a9fe::",
            // NAT64 (also with a public IPv4 address inside),
            // IPv4-translated, discard.
            "64:ff9b::8.8.8.8",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "::ffff:0:8.8.8.8",
            "::ffff:0:7f00:1",
            "100::1",
            "2001::1",
            "2001:db8::1",
        ] {
            assert!(internal(ip), "{ip} is internal");
        }
    }

    #[test]
    fn public_addresses() {
        for ip in [
            "8.8.8.8",
            "1.1.1.1",
            "172.32.0.1",
            "100.128.0.1",
            "192.0.3.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "2002:808:808::1",
            "2620:4f:8000::1",
            "100:0:0:2::1",
            "64:ff9b:2::1",
        ] {
            assert!(!internal(ip), "{ip} is public");
        }
    }
}
