//! Redirect URIs: which a client may register, and whether a request's
//! redirect URI is one of them.
//!
//! 2026-07-28 (basic/authorization, security considerations) asks for https
//! or localhost redirect URIs, matched exactly. Loopback ones match on any
//! port (RFC 8252, 7.3: a native app takes whatever port is free). Private-
//! use schemes (RFC 8252, 7.1) are also taken, because Cursor registers
//! `cursor://anysphere.cursor-mcp/oauth/callback` beside its https and
//! localhost ones and returns through it: such a URI reaches an app on the
//! user's own device, PKCE keeps a code another app intercepts useless,
//! and the consent page names the scheme and warns. Schemes that run or
//! read something in the browser itself are refused outright, whatever
//! their case or spelling, since the check is made on the parsed scheme.

use mcp_stateless::loopback::is_loopback_host;
use url::Url;

/// The most redirect URIs a client may list.
pub const MAX_REDIRECT_URIS: usize = 10;
/// The longest redirect URI taken (it travels sealed through sign-in).
pub const MAX_REDIRECT_URI_BYTES: usize = 1000;

/// Schemes a redirect never uses: each runs or reads something in the
/// browser, or is a web scheme checked by the rules above.
const REFUSED_SCHEMES: [&str; 9] = ["javascript", "data", "vbscript", "file", "blob", "about", "ftp", "ws", "wss"];

/// Where a redirect URI leads, as the consent page tells the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    /// An https site.
    Web,
    /// A program on the user's own machine (`http://localhost`, an address
    /// in `127.0.0.0/8` or `[::1]`, any port: the workspace's one loopback
    /// rule, `mcp_stateless::loopback`).
    Loopback,
    /// An app on the user's device, by its own scheme.
    App,
}

/// A redirect URI a client may use: parsed, and known to be one of the
/// three kinds above.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirectUri {
    /// As the client wrote it: matching is on this text, never on a
    /// normalised form (OAuth 2.1, 4.1.1; RFC 9700, 4.1.3), so no other
    /// spelling of it (`/x/../cb`, `%2e`, a host's case) is admitted.
    text: String,
    url: Url,
    destination: Destination,
}

impl RedirectUri {
    /// `text` if it may be registered, else why not.
    pub fn parse(text: &str) -> Result<Self, String> {
        if text.len() > MAX_REDIRECT_URI_BYTES {
            return Err(format!("a redirect URI longer than {MAX_REDIRECT_URI_BYTES} bytes"));
        }
        let url = Url::parse(text).map_err(|_| "a redirect URI that is not an absolute URI".to_owned())?;
        if url.fragment().is_some() {
            return Err("a redirect URI with a fragment (RFC 6749, 3.1.2)".into());
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("a redirect URI with user information".into());
        }
        let destination = match url.scheme() {
            "https" if url.host().is_some() => Destination::Web,
            "http" if url.host().is_some_and(|host| is_loopback_host(&host)) => Destination::Loopback,
            "http" | "https" => return Err("an http redirect URI to a host other than loopback: use https".into()),
            scheme if REFUSED_SCHEMES.contains(&scheme) => return Err(format!("a {scheme}: redirect URI")),
            _ => Destination::App,
        };
        Ok(Self { text: text.to_owned(), url, destination })
    }

    /// Where it leads.
    pub fn destination(&self) -> Destination {
        self.destination
    }

    /// The URI as registered, as the client wrote it.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// What the consent page names: the host, or the app's scheme.
    pub fn shown_as(&self) -> String {
        match self.destination {
            Destination::App => format!("{}:", self.url.scheme()),
            _ => self.url.host_str().unwrap_or_default().to_owned(),
        }
    }

    /// Whether `requested` (as a client sent it) is this URI: the same
    /// text, or for loopback, the same text but for the port (RFC 8252,
    /// 7.3), which alone may differ.
    pub fn admits(&self, requested: &str) -> bool {
        if requested == self.text {
            return true;
        }
        if self.destination != Destination::Loopback {
            return false;
        }
        match (without_port(&self.text), without_port(requested)) {
            (Some(registered), Some(asked)) => registered == asked,
            _ => false,
        }
    }

    /// The URI with the authorization response's parameters appended.
    pub fn with_query(&self, pairs: &[(&str, &str)], requested: &str) -> String {
        // The client's own URI (the port it is listening on), known by
        // [`Self::admits`] to be this one.
        let mut url = Url::parse(requested).unwrap_or_else(|_| self.url.clone());
        url.query_pairs_mut().extend_pairs(pairs);
        url.into()
    }
}

/// `http://HOST:PORT/rest` as `http://HOST/rest`, textually; none for
/// text that is not an `http:` URI or whose port is not digits.
fn without_port(text: &str) -> Option<String> {
    let rest = text.strip_prefix("http://")?;
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    // An IPv6 host's own colons are inside its brackets.
    let host_end = if authority.starts_with('[') { authority.find(']')? + 1 } else { authority.find(':').unwrap_or(authority.len()) };
    let (host, port) = authority.split_at(host_end);
    match port.strip_prefix(':') {
        None if port.is_empty() => {}
        Some(digits) if !digits.is_empty() && digits.len() <= 5 && digits.bytes().all(|b| b.is_ascii_digit()) => {}
        _ => return None,
    }
    Some(format!("http://{host}{tail}"))
}

/// The URIs a client lists, each checked; at least one, at most
/// [`MAX_REDIRECT_URIS`].
pub fn parse_all(uris: &[String]) -> Result<Vec<RedirectUri>, String> {
    if uris.is_empty() {
        return Err("no redirect_uris".into());
    }
    if uris.len() > MAX_REDIRECT_URIS {
        return Err(format!("more than {MAX_REDIRECT_URIS} redirect_uris"));
    }
    uris.iter().map(|uri| RedirectUri::parse(uri)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn web_loopback_and_app_uris_are_taken_and_the_rest_refused() {
        for (uri, destination) in [
            ("https://claude.ai/api/mcp/auth_callback", Destination::Web),
            ("http://localhost:3334/oauth/callback", Destination::Loopback),
            ("http://127.0.0.1/callback", Destination::Loopback),
            ("http://[::1]:9/cb", Destination::Loopback),
            ("http://LOCALHOST/cb", Destination::Loopback),
            ("http://127.0.0.2:8080/cb", Destination::Loopback),
            ("cursor://anysphere.cursor-mcp/oauth/callback", Destination::App),
        ] {
            assert_eq!(RedirectUri::parse(uri).unwrap().destination(), destination, "{uri}");
        }
        for uri in [
            "http://example.com/cb",
            "http://127.0.0.1.evil.example/cb",
            // Not loopback by the one rule: names DNS answers, "no address".
            "http://localhost./cb",
            "http://app.localhost/cb",
            "http://0.0.0.0:8080/cb",
            "http://[::]:8080/cb",
            "JavaScript:alert(1)",
            " javascript:alert(1)",
            "data:text/html,x",
            "https://example.com/cb#frag",
            "https://user@example.com/cb",
            "/relative",
        ] {
            assert!(RedirectUri::parse(uri).is_err(), "{uri} must be refused");
        }
    }

    /// OAuth 2.1 and RFC 9700 (4.1.3) ask for exact string matching: a
    /// spelling that a URL parser would read as the same URI is another.
    #[test]
    fn no_other_spelling_of_a_registered_uri_is_admitted() {
        let loopback = RedirectUri::parse("http://127.0.0.1:33418/callback").unwrap();
        for other in [
            "http://127.0.0.1:50123/x/../callback",
            "http://127.0.0.1:50123/./callback",
            "http://127.0.0.1:50123/%63allback",
            "http://127.0.0.1:050123/callback",
            "http://127.0.0.1:50123:1/callback",
            "http://127.0.0.1:/callback",
            "HTTP://127.0.0.1:50123/callback",
            "http://127.0.0.1:50123/callback?",
            "http://127.0.0.1:50123/callback#",
            "http://0x7f.0.0.1:50123/callback",
            "http://user@127.0.0.1:50123/callback",
        ] {
            assert!(!loopback.admits(other), "{other}");
        }
        let web = RedirectUri::parse("https://App.Example.com/cb").unwrap();
        assert_eq!(web.as_str(), "https://App.Example.com/cb", "kept as the client wrote it");
        assert!(web.admits("https://App.Example.com/cb"));
        assert!(!web.admits("https://app.example.com/cb"), "another spelling");
        let web = RedirectUri::parse("https://app.example.com/a/../cb").unwrap();
        assert!(!web.admits("https://app.example.com/cb"));
    }

    #[test]
    fn matching_is_exact_but_for_a_loopback_port() {
        let web = RedirectUri::parse("https://app.example.com/cb").unwrap();
        assert!(web.admits("https://app.example.com/cb"));
        for other in [
            "https://app.example.com/cb/",
            "https://app.example.com/cB",
            "https://app.example.com:444/cb",
            "https://app.example.com/cb?x=1",
        ] {
            assert!(!web.admits(other), "{other}");
        }
        let loopback = RedirectUri::parse("http://127.0.0.1:33418/callback").unwrap();
        assert!(loopback.admits("http://127.0.0.1:50123/callback"));
        assert!(loopback.admits("http://127.0.0.1/callback"));
        assert!(!loopback.admits("http://localhost:50123/callback"), "another host");
        assert!(!loopback.admits("http://127.0.0.1:50123/other"), "another path");
        assert!(!loopback.admits("https://127.0.0.1:50123/callback"), "another scheme");
        let ipv6 = RedirectUri::parse("http://[::1]:9/cb").unwrap();
        assert!(ipv6.admits("http://[::1]:4000/cb"));
        assert!(!ipv6.admits("http://[::2]:4000/cb"));
        let app = RedirectUri::parse("cursor://anysphere.cursor-mcp/oauth/callback").unwrap();
        assert!(app.admits("cursor://anysphere.cursor-mcp/oauth/callback"));
        assert!(!app.admits("cursor://anysphere.cursor-mcp/oauth/callback2"));
        assert_eq!(app.shown_as(), "cursor:");
    }
}
