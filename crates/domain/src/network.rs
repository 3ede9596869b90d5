//! Which destination addresses a proxy may reach. Shared by proxy validation (IP literals at
//! create time) and the gateway's connect-time guard (every resolved address).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// True for addresses a proxy must not reach unless private destinations are allowed:
/// loopback, private (RFC 1918, unique-local), link-local (including 169.254.169.254, the cloud
/// metadata service), unspecified, multicast, broadcast, shared (CGNAT), IETF-protocol and
/// documentation ranges — also when an IPv4 address is carried inside IPv6 (mapped,
/// compatible, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`). Teredo (`2001::/32`) and site-local
/// (`fec0::/10`) are refused outright: their real endpoint cannot be judged from the address.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_internal_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => is_internal_v4(v4),
            None => is_internal_v6(v6),
        },
    }
}

/// The IPv4 address an IPv6 address carries, for the forms that route to it.
fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = v6.segments();
    let from = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    if let Some(v4) = v6.to_ipv4_mapped().or_else(|| compatible_v4(v6)) {
        return Some(v4);
    }
    if s[0] == 0x0064 && s[1] == 0xff9b && s[2..6].iter().all(|&x| x == 0) {
        return Some(from(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return Some(from(s[1], s[2]));
    }
    None
}

fn compatible_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    // Deprecated IPv4-compatible form ::a.b.c.d (but not :: or ::1, handled as IPv6).
    let s = v6.segments();
    (s[..6].iter().all(|&x| x == 0) && !(s[6] == 0 && s[7] <= 1)).then(|| {
        let [a, b] = s[6].to_be_bytes();
        let [c, d] = s[7].to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    })
}

fn is_internal_v4(ip: Ipv4Addr) -> bool {
    let [a, b, _, _] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..=127).contains(&b))
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240
}

fn is_internal_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first & 0xffc0) == 0xfec0
        || (first == 0x2001 && ip.segments()[1] == 0x0db8)
        || (first == 0x2001 && ip.segments()[1] == 0x0000)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn internal(s: &str) -> bool {
        is_internal(s.parse().expect("ip"))
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
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(!internal(ip), "{ip} is public");
        }
    }
}
