//! Which client a request comes from, when reverse proxies stand in front: the peer, unless it
//! is a trusted proxy, in which case the nearest address in `X-Forwarded-For` that is not
//! itself a trusted proxy. An address that cannot be read stops the walk at the last one
//! trusted: what lies to its left was written by the client and proves nothing.

use std::net::IpAddr;

/// The client behind `peer`, given the `X-Forwarded-For` header values `forwarded` (in
/// order) and the `trusted` proxies.
pub fn client_behind<'a>(
    peer: IpAddr,
    forwarded: impl Iterator<Item = &'a str>,
    trusted: &[IpAddr],
) -> IpAddr {
    if !trusted.contains(&peer) {
        return peer;
    }
    let hops: Vec<&str> = forwarded
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    for hop in hops.iter().rev() {
        match hop.parse::<IpAddr>() {
            Ok(ip) if trusted.contains(&ip) => continue,
            Ok(ip) => return ip,
            Err(_) => break,
        }
    }
    peer
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
}
