//! Scopes as clients send them, and as this server grants them: the one
//! place their rules live (RFC 6749, 3.3).
//!
//! - A scope string is split on any run of spaces, empties ignored:
//!   Claude.ai sends `scope=+offline_access`, that is `" offline_access"`,
//!   sometimes with nothing else.
//! - Scopes not offered are left out of the grant, and a request left with
//!   none gets the offered ones (RFC 6749, 3.3 lets the server grant other
//!   than asked), rather than an `invalid_scope` a client cannot act on.
//! - `offline_access` (OpenID Connect Core, 11) is understood: it asks for
//!   a refresh token, which every grant here has. It is advertised in the
//!   authorization server's metadata only, never in the protected
//!   resource's (workers-oauth-provider #260: it is no right at the MCP
//!   server), and it is never written into a grant's scope: an access
//!   token's `scope` claim is what the MCP function checks against
//!   `MCP_JWT_SCOPES` (one of them must be there), and a refresh narrowed
//!   to `scope=offline_access` would otherwise mint a token holding only
//!   it, which the MCP function refuses with a 403 the client cannot
//!   explain. Left out, the claim holds resource scopes only, and asking
//!   for `offline_access` again on a refresh is within any grant.

/// The scope that asks for a refresh token.
pub const OFFLINE_ACCESS: &str = "offline_access";

/// The scope tokens in `text`: split on any run of spaces, empties ignored.
pub fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(' ').filter(|token| !token.is_empty())
}

/// The scope granted to a request that `asked` for these, out of
/// `offered` (this server's scopes, or on a refresh the grant's): those of
/// `offered` it names, in `offered`'s order; all of `offered` when it
/// names none of them, or asks nothing.
pub fn granted<S: AsRef<str>>(asked: Option<&str>, offered: &[S]) -> String {
    let asked: Vec<&str> = asked.map(|asked| tokens(asked).collect()).unwrap_or_default();
    let named: Vec<&str> = offered.iter().map(AsRef::as_ref).filter(|scope| asked.contains(scope)).collect();
    let chosen = if named.is_empty() { offered.iter().map(AsRef::as_ref).collect() } else { named };
    chosen.join(" ")
}

/// Whether every scope `asked` names is within `granted` (a refresh's
/// narrowing, RFC 6749, 6; a remembered approval's scope). `offline_access`
/// is within every grant: it asks for what every grant has.
pub fn is_within(asked: &str, granted: &str) -> bool {
    tokens(asked).all(|scope| scope == OFFLINE_ACCESS || tokens(granted).any(|held| held == scope))
}

/// The authorization server metadata's `scopes_supported` (RFC 8414):
/// the offered scopes and `offline_access`.
pub fn advertised(offered: &[String]) -> Vec<String> {
    offered.iter().cloned().chain([OFFLINE_ACCESS.to_owned()]).collect()
}

/// Why `offered` (`MCP_SCOPES_SUPPORTED`) cannot be offered, if it cannot:
/// `offline_access` is understood without being listed, and listed it
/// would reach the protected resource's metadata and access tokens.
pub fn check_offered(offered: &[String]) -> Result<(), String> {
    if offered.iter().any(|scope| scope == OFFLINE_ACCESS) {
        return Err(format!(
            "MCP_SCOPES_SUPPORTED names the MCP server's own scopes: leave {OFFLINE_ACCESS} out (the authorization server understands it)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered() -> Vec<String> {
        vec!["mcp".to_owned()]
    }

    #[test]
    fn scopes_are_taken_as_clients_send_them() {
        for asked in [" offline_access", "offline_access", "mcp  offline_access", "  mcp ", "admin", "", "   "] {
            assert_eq!(granted(Some(asked), &offered()), "mcp", "{asked:?}");
        }
        assert_eq!(granted(None, &offered()), "mcp");
        let two = vec!["mcp".to_owned(), "admin".to_owned()];
        assert_eq!(granted(Some("admin offline_access"), &two), "admin");
        assert_eq!(granted(Some("admin mcp mcp"), &two), "mcp admin", "in the offered order, once each");
        assert_eq!(granted(None, &two), "mcp admin");
    }

    #[test]
    fn offline_access_is_within_every_grant_and_nothing_wider_is() {
        assert!(is_within("mcp", "mcp admin"));
        assert!(is_within(" offline_access", "mcp"));
        assert!(is_within("mcp  offline_access", "mcp"));
        assert!(is_within("", "mcp"));
        assert!(!is_within("mcp admin", "mcp"));
        assert!(!is_within("admin", ""));
    }

    #[test]
    fn offline_access_is_advertised_by_the_authorization_server_not_offered_as_a_resource_scope() {
        assert_eq!(advertised(&offered()), ["mcp", "offline_access"]);
        assert!(check_offered(&offered()).is_ok());
        let error = check_offered(&["mcp".to_owned(), "offline_access".to_owned()]).unwrap_err();
        assert!(error.contains("MCP_SCOPES_SUPPORTED") && error.contains("offline_access"), "{error}");
    }
}
