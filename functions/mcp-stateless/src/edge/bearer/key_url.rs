//! Where the issuer's keys may come from: https anywhere, plain http only
//! from this machine (tests, an identity provider run locally).
//!
//! Decided on the URL as parsed (WHATWG, the `url` crate), never on its
//! text: `http://127.0.0.1:1@evil.example/` starts like loopback but names
//! the host `evil.example`. The keys are then fetched from the parsed URL's
//! own serialisation, so the host checked is the host dialled, whatever
//! percent-encoding, backslashes or case the configured text used. Which
//! hosts are loopback is the crate's one rule (`loopback.rs`).

use url::Url;

use crate::loopback::is_loopback_host;

/// A URL the issuer's OpenID configuration or keys may be fetched from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyUrl(Url);

impl KeyUrl {
    /// `text` if it is https, or plain http to a loopback host; otherwise
    /// why not. The reason never repeats the text, which could carry a
    /// password.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut url = Url::parse(text).map_err(|e| format!("not a URL ({e})"))?;
        // Userinfo has no business in a key URL, and is how a look-alike
        // loopback prefix hides the real host: refused outright.
        if !url.username().is_empty() || url.password().is_some() {
            return Err("must not carry a user name or password".into());
        }
        url.set_fragment(None);
        match (url.scheme(), url.host()) {
            ("https", Some(_)) => Ok(Self(url)),
            ("http", Some(host)) if is_loopback_host(&host) => Ok(Self(url)),
            ("http", Some(host)) => {
                Err(format!("plain http to {host}: only a loopback host (127.0.0.0/8, [::1], localhost) may be reached without TLS"))
            }
            _ => Err("must be an https URL (plain http only on loopback)".into()),
        }
    }

    /// `text`, named by a document fetched from `origin`: held to the same
    /// rule, and plain http only if `origin` was plain http too. A document
    /// fetched over https must not send the fetch to a loopback port in
    /// clear: on Lambda, `127.0.0.1:9001` is the Runtime API, where a GET
    /// takes the next invocation, other callers' tokens included.
    pub fn parse_beside(text: &str, origin: &KeyUrl) -> Result<Self, String> {
        let url = Self::parse(text)?;
        if url.0.scheme() == "http" && origin.0.scheme() != "http" {
            return Err("must be https: it was named by a document fetched over https".into());
        }
        Ok(url)
    }

    /// The URL to request, as parsed and checked.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_anywhere_and_plain_http_on_loopback_hosts() {
        for (text, fetched) in [
            ("https://issuer.example.com", "https://issuer.example.com/"),
            ("https://issuer.example.com/tenant/.well-known/jwks.json", "https://issuer.example.com/tenant/.well-known/jwks.json"),
            ("http://127.0.0.1:8080/jwks.json", "http://127.0.0.1:8080/jwks.json"),
            ("http://127.9.8.7/jwks.json", "http://127.9.8.7/jwks.json"),
            ("http://localhost", "http://localhost/"),
            ("http://[::1]:9000/keys", "http://[::1]:9000/keys"),
            ("http://[::ffff:127.0.0.1]/keys", "http://[::ffff:7f00:1]/keys"),
            // Case and encodings are read as the parser reads them, and the
            // fetch goes to that same reading.
            ("HTTP://LOCALHOST:1/jwks.json", "http://localhost:1/jwks.json"),
            ("HTTPS://Issuer.Example.COM/k", "https://issuer.example.com/k"),
            ("http://%6c%6f%63%61%6c%68%6f%73%74/jwks.json", "http://localhost/jwks.json"),
            ("http://%31%32%37.0.0.1/jwks.json", "http://127.0.0.1/jwks.json"),
            ("http://127.1/jwks.json", "http://127.0.0.1/jwks.json"),
            ("http://127.0.0.1\\@evil.example/jwks.json", "http://127.0.0.1/@evil.example/jwks.json"),
            ("https://issuer.example.com/jwks.json#fragment", "https://issuer.example.com/jwks.json"),
        ] {
            assert_eq!(KeyUrl::parse(text).map(|url| url.as_str().to_owned()), Ok(fetched.to_owned()), "{text}");
        }
    }

    #[test]
    fn anything_that_only_looks_local_is_refused() {
        for text in [
            // Userinfo: the real host follows the '@'.
            "http://127.0.0.1:1@evil.example:8080/jwks.json",
            "http://localhost@evil.example/jwks.json",
            "http://[::1]@evil.example/jwks.json",
            "http://user:secret@127.0.0.1/jwks.json",
            "https://user@issuer.example.com/jwks.json",
            "http://%31%32%37.0.0.1:1@evil.example/jwks.json",
            // Names that DNS resolves, wherever it likes.
            "http://127.0.0.1.evil.example/jwks.json",
            "http://localhost.evil.example",
            "http://localhost./jwks.json",
            "http://127.0.0.1%2eevil.example/jwks.json",
            "http://issuer.example.com",
            "HTTP://ISSUER.EXAMPLE.COM",
            // Addresses that are not this machine.
            "http://[::2]/jwks.json",
            "http://[fe80::1]/jwks.json",
            "http://0.0.0.0/jwks.json",
            "http://10.0.0.1/jwks.json",
            // Other schemes, and no URL at all.
            "ftp://127.0.0.1/jwks.json",
            "file:///etc/jwks.json",
            "//127.0.0.1/jwks.json",
            "127.0.0.1/jwks.json",
            "",
        ] {
            assert!(KeyUrl::parse(text).is_err(), "{text} was accepted");
        }
    }

    #[test]
    fn a_document_fetched_over_https_names_only_https_urls() {
        let https = KeyUrl::parse("https://issuer.example.com/.well-known/openid-configuration").unwrap();
        let loopback = KeyUrl::parse("http://127.0.0.1:8080/.well-known/openid-configuration").unwrap();
        assert!(KeyUrl::parse_beside("http://127.0.0.1:9001/2018-06-01/runtime/invocation/next", &https).is_err());
        assert!(KeyUrl::parse_beside("http://localhost/jwks.json", &https).is_err());
        assert!(KeyUrl::parse_beside("https://keys.example.com/jwks.json", &https).is_ok());
        assert!(KeyUrl::parse_beside("http://127.0.0.1:8080/jwks.json", &loopback).is_ok());
        assert!(KeyUrl::parse_beside("http://evil.example/jwks.json", &loopback).is_err());
    }

    #[test]
    fn the_reason_never_repeats_a_password() {
        let reason = KeyUrl::parse("http://user:hunter2@evil.example/jwks.json").unwrap_err();
        assert!(!reason.contains("hunter2"), "{reason}");
        assert!(reason.contains("user name or password"), "{reason}");
    }
}
