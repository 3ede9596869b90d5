//! Which client a request comes from, when reverse proxies stand in front: the peer, unless it
//! is a trusted proxy, in which case the nearest address in `X-Forwarded-For` that is not
//! itself a trusted proxy. An address that cannot be read stops the walk at the last one
//! trusted: what lies to its left was written by the client and proves nothing.
//!
//! An IPv4-mapped IPv6 address (`::ffff:203.0.113.70`, what a dual-stack listener or load
//! balancer reports for an IPv4 client) is the IPv4 address it carries, everywhere: in the
//! comparison with the trusted proxies, and in what a limit counts ([`counted_as`]). Only a
//! native IPv6 client is grouped by its /64 (docs/api.md, "Browsers and CORS").

use std::net::{IpAddr, Ipv6Addr};

/// The client behind `peer`, given the `X-Forwarded-For` header values `forwarded` (in
/// order) and the `trusted` proxies. IPv4-mapped addresses come back as IPv4.
pub fn client_behind<'a>(
    peer: IpAddr,
    forwarded: impl Iterator<Item = &'a str>,
    trusted: &[IpAddr],
) -> IpAddr {
    let peer = peer.to_canonical();
    let is_trusted = |ip: IpAddr| trusted.iter().any(|t| t.to_canonical() == ip);
    if !is_trusted(peer) {
        return peer;
    }
    let hops: Vec<&str> = forwarded
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    for hop in hops.iter().rev() {
        match hop.parse::<IpAddr>().map(|ip| ip.to_canonical()) {
            Ok(ip) if is_trusted(ip) => continue,
            Ok(ip) => return ip,
            Err(_) => break,
        }
    }
    peer
}

/// The client behind `peer` (see [`client_behind`]) as a per-client limit counts it (see
/// [`counted_as`]): what the public keys' limit and the console's sign-in throttle key by.
pub fn counted_client<'a>(
    peer: IpAddr,
    forwarded: impl Iterator<Item = &'a str>,
    trusted: &[IpAddr],
) -> IpAddr {
    counted_as(client_behind(peer, forwarded, trusted))
}

/// What a per-client limit counts `ip` as: an IPv4 address (also one carried in an
/// IPv4-mapped IPv6 address) as itself; a native IPv6 address as its /64, since one
/// subscriber usually holds a whole /64 and could otherwise start afresh from each address.
pub fn counted_as(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let network = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(network))
        }
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(raw: &str) -> IpAddr {
        raw.parse().expect("ip")
    }

    #[test]
    fn only_a_trusted_peer_names_the_client() {
        let trusted = [ip("10.0.0.2"), ip("10.0.0.3")];
        let peer = ip("10.0.0.2");
        let of = |h: &[&str]| client_behind(peer, h.iter().copied(), &trusted);
        assert_eq!(of(&["198.51.100.1, 10.0.0.3"]), ip("198.51.100.1"));
        assert_eq!(of(&["203.0.113.9", "198.51.100.1"]), ip("198.51.100.1"));
        assert_eq!(
            of(&["198.51.100.1, junk, 10.0.0.3"]),
            peer,
            "unreadable: stop"
        );
        assert_eq!(of(&[]), peer);
        let untrusted = ip("203.0.113.50");
        assert_eq!(
            client_behind(untrusted, ["198.51.100.1"].into_iter(), &trusted),
            untrusted
        );
    }

    #[test]
    fn mapped_ipv4_addresses_are_the_ipv4_address_they_carry() {
        let trusted = [ip("10.0.0.2")];
        // A dual-stack listener reports the balancer as a mapped address: still trusted.
        let mapped_peer = ip("::ffff:10.0.0.2");
        assert_eq!(
            client_behind(mapped_peer, ["::ffff:203.0.113.70"].into_iter(), &trusted),
            ip("203.0.113.70")
        );
        // A mapped hop that is a trusted proxy is skipped like its IPv4 form.
        assert_eq!(
            client_behind(
                ip("10.0.0.2"),
                ["198.51.100.1, ::ffff:10.0.0.2"].into_iter(),
                &trusted
            ),
            ip("198.51.100.1")
        );
        // An untrusted mapped peer is the client, as IPv4.
        assert_eq!(
            client_behind(ip("::ffff:203.0.113.71"), std::iter::empty(), &trusted),
            ip("203.0.113.71")
        );
    }

    #[test]
    fn limits_count_ipv4_alone_and_native_ipv6_by_its_64() {
        assert_eq!(counted_as(ip("203.0.113.70")), ip("203.0.113.70"));
        assert_eq!(counted_as(ip("::ffff:203.0.113.70")), ip("203.0.113.70"));
        assert_ne!(
            counted_as(ip("::ffff:203.0.113.70")),
            counted_as(ip("::ffff:203.0.113.71")),
            "two IPv4 clients behind a dual-stack listener are two clients"
        );
        assert_eq!(counted_as(ip("2001:db8:1:2::1")), ip("2001:db8:1:2::"));
        assert_eq!(
            counted_as(ip("2001:db8:1:2:ffff::9")),
            counted_as(ip("2001:db8:1:2::1"))
        );
        assert_ne!(
            counted_as(ip("2001:db8:1:3::1")),
            counted_as(ip("2001:db8:1:2::1"))
        );
    }
}
