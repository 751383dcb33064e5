//! Which hosts are this machine: the one rule every check that trusts
//! "local" uses (the edge's `Host` and `Origin` defaults, the scheme of
//! URLs written from `Host`, plain-http key URLs, the local authorization
//! server, loopback redirect URIs).
//!
//! Loopback is an address in `127.0.0.0/8`, `::1` (also when written as
//! the IPv4-mapped `::ffff:127.x.y.z`, which a dual-stack socket dials as
//! `127.x.y.z`), and the name `localhost` itself, in any case (RFC 6761,
//! 6.3; RFC 8252, 7.3 and 8.3). Nothing else, though some of it looks local:
//! - `localhost.` and the names under `.localhost`: RFC 6761 asks resolvers
//!   to answer them with loopback, but the system resolver reads
//!   `/etc/hosts`, which names `localhost` alone, and sends the rest to
//!   DNS, which this machine does not control; browsers differ too;
//! - `0.0.0.0` and `::`: "no address", which Linux happens to connect to
//!   the local host (how pages reached local servers until browsers began
//!   blocking it); no client needs to name them;
//! - `::127.0.0.1`, IPv4-compatible (deprecated, RFC 4291, 2.5.5.1): no
//!   stack routes it to loopback;
//! - names that spell an address (`127.0.0.1.nip.io`): DNS answers them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use url::Host;

/// Whether `host`, as a URL parser read it, is this machine. The parser
/// has already decoded percent-escapes and read numeric forms (`127.1`,
/// `0x7f.0.0.1`) as addresses.
pub fn is_loopback_host<S: AsRef<str>>(host: &Host<S>) -> bool {
    match host {
        Host::Domain(name) => name.as_ref().eq_ignore_ascii_case("localhost"),
        Host::Ipv4(address) => address.is_loopback(),
        Host::Ipv6(address) => IpAddr::V6(*address).to_canonical().is_loopback(),
    }
}

/// Whether `host` (no port), as written in a header or a configured
/// authority, is this machine. Read strictly: dotted-quad IPv4, bracketed
/// IPv6, or a name; no percent-escapes or short numeric forms, which no
/// client writes in a `Host` header.
pub fn is_loopback_name(host: &str) -> bool {
    let parsed = match host.strip_prefix('[').and_then(|rest| rest.strip_suffix(']')) {
        Some(inner) => inner.parse::<Ipv6Addr>().ok().map(Host::Ipv6),
        None => match host.parse::<Ipv4Addr>() {
            Ok(address) => Some(Host::Ipv4(address)),
            Err(_) => Some(Host::Domain(host)),
        },
    };
    parsed.is_some_and(|host| is_loopback_host(&host))
}

/// Whether `host[:port]` (a `Host` header, an origin's authority) names
/// this machine; only a port of digits may follow the host.
pub fn is_loopback_authority(authority: &str) -> bool {
    host_of(authority).is_some_and(is_loopback_name)
}

/// The host of `host[:port]`, IPv6 brackets kept; none when anything but
/// a port of digits follows it (`[::1]evil.example`, `localhost:x`,
/// `localhost:`).
pub fn host_of(authority: &str) -> Option<&str> {
    let (host, rest) = match authority.strip_prefix('[').and_then(|inner| inner.split_once(']')) {
        Some((address, rest)) => (&authority[..address.len() + 2], rest),
        None => match authority.rsplit_once(':') {
            Some((host, _port)) => (host, &authority[host.len()..]),
            None => (authority, ""),
        },
    };
    let port_ok = rest.is_empty() || rest.strip_prefix(':').is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    port_ok.then_some(host)
}

#[cfg(test)]
mod tests {
    use url::Url;

    use super::*;

    /// The host of `url`, as the parser reads it.
    fn url_host_is_loopback(url: &str) -> bool {
        Url::parse(url).ok().and_then(|url| url.host().map(|host| is_loopback_host(&host))).unwrap_or(false)
    }

    #[test]
    fn loopback_is_127_slash_8_the_ipv6_loopback_and_localhost() {
        for host in [
            "127.0.0.1",
            "127.255.255.254",
            "127.0.0.0",
            "[::1]",
            "[0:0:0:0:0:0:0:1]",
            "[::ffff:127.0.0.1]",
            "[::ffff:127.9.8.7]",
            "localhost",
            "LOCALHOST",
            "LocalHost",
        ] {
            assert!(is_loopback_name(host), "{host}");
            assert!(url_host_is_loopback(&format!("http://{host}:8080/")), "{host}");
        }
        // What a URL parser reads as a loopback address, it is.
        for url in ["http://127.1/", "http://0x7f.0.0.1/", "http://%6c%6f%63%61%6c%68%6f%73%74/", "http://2130706433/"] {
            assert!(url_host_is_loopback(url), "{url}");
        }
    }

    #[test]
    fn what_only_looks_local_is_not() {
        for host in [
            // Just outside 127.0.0.0/8 and ::1.
            "126.255.255.255",
            "128.0.0.0",
            "[::2]",
            "[::ffff:126.255.255.255]",
            "[::ffff:128.0.0.1]",
            // "No address", and the deprecated IPv4-compatible form.
            "0.0.0.0",
            "[::]",
            "[::127.0.0.1]",
            "[::ffff:0.0.0.0]",
            // Names DNS answers.
            "localhost.",
            "app.localhost",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "localtest.me",
            // Other local-ish addresses.
            "10.0.0.1",
            "169.254.169.254",
            "[fe80::1]",
            "[fd00::1]",
        ] {
            assert!(!is_loopback_name(host), "{host}");
            assert!(!url_host_is_loopback(&format!("http://{host}:8080/")), "{host}");
        }
        // Header text is read strictly: no short, numeric or escaped forms,
        // no unbracketed IPv6, no port.
        for host in ["127.1", "2130706433", "%6c%6f%63%61%6c%68%6f%73%74", "::1", "[::1", "localhost:3000", ""] {
            assert!(!is_loopback_name(host), "{host}");
        }
    }

    #[test]
    fn an_authority_is_a_host_and_at_most_a_port_of_digits() {
        for authority in ["localhost", "localhost:3000", "127.0.0.1:1", "[::1]", "[::1]:8080", "LOCALHOST:80"] {
            assert!(is_loopback_authority(authority), "{authority}");
        }
        for authority in ["localhost:", "localhost:x", "[::1]evil.example", "[::1]:80evil", "localhost.evil.example:3000", "0.0.0.0:3000"] {
            assert!(!is_loopback_authority(authority), "{authority}");
        }
        assert_eq!(host_of("Example.com:443"), Some("Example.com"));
        assert_eq!(host_of("[::1]:9"), Some("[::1]"));
        assert_eq!(host_of("example.com:"), None);
    }
}
