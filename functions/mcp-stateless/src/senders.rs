//! Whom an address stands for where costly lookups are budgeted per
//! sender (KMS `Decrypt` of unseen 2025-era session keys without sign-in,
//! the authorization server's document fetches and sealed pages).
//!
//! An IPv4 address is one sender: they are scarce, and an attacker holds
//! few. An IPv6 address is not: a subscriber line is given at least a /64
//! (the smallest subnet SLAAC works in, RFC 4291, 2.5.1; RFC 6177 advises
//! /48 to /56 per site), and a host on it may use any address of it (and
//! does: temporary addresses, RFC 8981), so a budget per full address
//! would bound nothing. Its /64 is the sender, as rate limiters commonly
//! count IPv6. The price: hosts that share a /64 (one office network, one
//! cloud subnet) share a budget. A holder of a /48 still gets 65,536
//! senders; the budgets for all senders together bound it. An IPv4-mapped
//! IPv6 address (`::ffff:a.b.c.d`, what a dual-stack socket reports for
//! an IPv4 peer) is its IPv4 address. The /64 is written as a key, not in
//! RFC 5952's short form.

use std::net::IpAddr;

/// The longest text kept for an address that does not parse (API Gateway
/// and sockets give addresses; anything else is bounded, not trusted).
const MAX_UNPARSED: usize = 64;

/// The sender `address` is counted as: an IPv4 address itself, an IPv6
/// address's /64 (`2001:db8:1:2::/64`).
pub fn budgeted_as(address: &str) -> String {
    match address.trim().parse::<IpAddr>().map(|ip| ip.to_canonical()) {
        Ok(IpAddr::V4(v4)) => v4.to_string(),
        Ok(IpAddr::V6(v6)) => {
            let [a, b, c, d, ..] = v6.segments();
            format!("{a:x}:{b:x}:{c:x}:{d:x}::/64")
        }
        Err(_) => address.chars().take(MAX_UNPARSED).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::budgeted_as;

    #[test]
    fn an_ipv6_host_is_one_sender_whichever_address_of_its_64_it_picks() {
        let one = budgeted_as("2001:db8:1:2::1");
        assert_eq!(one, "2001:db8:1:2::/64");
        assert_eq!(budgeted_as("2001:0db8:0001:0002:ffff:1234:5678:9abc"), one, "another address of the /64, written long");
        assert_ne!(budgeted_as("2001:db8:1:3::1"), one, "the next /64 is another sender");
    }

    #[test]
    fn an_ipv4_address_is_a_sender_of_its_own_also_when_mapped() {
        assert_eq!(budgeted_as("198.51.100.7"), "198.51.100.7");
        assert_ne!(budgeted_as("198.51.100.8"), budgeted_as("198.51.100.7"));
        assert_eq!(budgeted_as("::ffff:198.51.100.7"), "198.51.100.7", "as a dual-stack socket reports it");
    }

    #[test]
    fn anything_else_is_kept_bounded() {
        assert_eq!(budgeted_as("unknown"), "unknown");
        assert_eq!(budgeted_as(&"x".repeat(1000)).len(), 64);
    }
}
