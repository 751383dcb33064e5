//! The browser's two cookies, named, read and written in one place: its
//! binding (random; every sealed record of the pages is bound to it) and
//! the approvals it remembers (`remembered_consent`). Both `HttpOnly` and
//! `SameSite=Lax`: sent when a client sends the browser here (a top-level
//! GET), never with another site's POST. Over https both are `__Host-`, so
//! the browser keeps them to this host, over https, for every path; on a
//! loopback issuer over http (local runs) browsers refuse `__Host-` and
//! `Secure`, so they go without.

use std::time::Duration;

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, header};
use mcp_stateless::random;

use crate::server::Endpoints;

/// Which cookie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cookie {
    /// The browser's binding.
    Binding,
    /// The approvals it remembers, sealed and bound to the binding.
    Remembered,
}

/// The cookies of one issuer: `__Host-` over https, plain on loopback http.
pub(crate) struct Jar {
    secure: bool,
}

impl Jar {
    /// The cookies as `endpoints`' issuer names them.
    pub(crate) fn of(endpoints: &Endpoints) -> Self {
        Self { secure: endpoints.issuer.starts_with("https://") }
    }

    fn name(&self, cookie: Cookie) -> &'static str {
        match (cookie, self.secure) {
            (Cookie::Binding, true) => "__Host-mcp-oauth",
            (Cookie::Binding, false) => "mcp-oauth",
            (Cookie::Remembered, true) => "__Host-mcp-oauth-consent",
            (Cookie::Remembered, false) => "mcp-oauth-consent",
        }
    }

    /// `cookie`'s value, if the browser sent it.
    pub(crate) fn read<'a>(&self, headers: &'a HeaderMap, cookie: Cookie) -> Option<&'a str> {
        let name = self.name(cookie);
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value)
    }

    /// This browser's binding, if it sent one: 32 random bytes, base64url.
    pub(crate) fn binding(&self, headers: &HeaderMap) -> Option<String> {
        self.read(headers, Cookie::Binding)
            .filter(|value| value.len() == 43 && value.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
            .map(str::to_owned)
    }

    /// Sets `cookie` to `value` on `response` for `max_age` (zero: clears it).
    pub(crate) fn set(&self, response: &mut Response<Bytes>, cookie: Cookie, value: &str, max_age: Duration) {
        let secure = if self.secure { "; Secure" } else { "" };
        let line = format!("{}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{secure}", self.name(cookie), max_age.as_secs());
        if let Ok(line) = HeaderValue::from_str(&line) {
            response.headers_mut().append(header::SET_COOKIE, line);
        }
    }
}

/// A new browser binding.
pub(crate) fn new_binding() -> String {
    URL_SAFE_NO_PAD.encode(random::bytes::<32>())
}
