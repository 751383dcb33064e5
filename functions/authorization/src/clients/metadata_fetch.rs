//! Fetching a client's metadata document without becoming a way into the
//! network this server runs in (SSRF; 2026-07-28 security considerations).
//!
//! - https only, on the URL's own port;
//! - the host is resolved here, and a name with any address that is not
//!   public (loopback, private, link-local, shared, reserved, multicast,
//!   and IPv4 inside IPv6 forms) is refused;
//! - the address checked is the address dialled: TLS and HTTP run on that
//!   connection, with the URL's host as the TLS server name, so a second
//!   lookup (DNS rebinding) never happens;
//! - no redirect is followed, the body is read to [`MAX_DOCUMENT_BYTES`],
//!   and the whole fetch stops after [`FETCH_TIMEOUT`].
//!
//! `MCP_OAUTH_CIMD_TRUSTED_HOSTS` names `host:port` pairs whose documents
//! may come from any address (tests, private deployments); they still take
//! https, with the system's roots and those `SSL_CERT_FILE` adds.

use std::{
    net::{IpAddr, Ipv4Addr, SocketAddr},
    sync::Arc,
    time::Duration,
};

use bytes::Bytes;
use http::{Request, StatusCode, header};
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use url::{Host, Url};

/// The largest document read (Cloudflare's provider takes 5 KB too).
pub const MAX_DOCUMENT_BYTES: usize = 5 * 1024;
/// The longest a fetch may take, lookup to last byte.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a document was not fetched. Said to the developer on the error page.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum FetchError {
    /// The host resolves to an address this server does not fetch from.
    #[error("the client_id's host resolves to an address that is not public")]
    NotPublic,
    /// The host could not be resolved or reached, or TLS failed.
    #[error("the client_id's host could not be reached over https: {0}")]
    Unreachable(String),
    /// Not answered with 200 (redirects are not followed).
    #[error("the client_id URL answered HTTP {0}")]
    Status(u16),
    /// Over the limit of what was fetched.
    #[error("the client's document is over {0} bytes")]
    TooLarge(usize),
    /// Over [`FETCH_TIMEOUT`].
    #[error("the client metadata document took over {} s", FETCH_TIMEOUT.as_secs())]
    TooSlow,
}

impl FetchError {
    /// Whether the host may answer next time: a challenge page or a
    /// refusal of the moment (403, 408, 425, 429), a server error, an
    /// unreachable host or a time-out. A copy of the document may stand
    /// in; after any other failure the client is not known.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Unreachable(_) | Self::TooSlow => true,
            Self::Status(status) => matches!(status, 403 | 408 | 425 | 429 | 500..=599),
            Self::NotPublic | Self::TooLarge(_) => false,
        }
    }
}

/// A fetched document, and how long its server says it may be kept.
pub struct Fetched {
    /// The body.
    pub body: Bytes,
    /// `Cache-Control: max-age`, in seconds, if given (and not `no-store`).
    pub max_age: Option<u64>,
}

/// Fetches documents by [the rules above](self).
pub struct GuardedFetcher {
    tls: Arc<rustls::ClientConfig>,
    trusted_hosts: Vec<String>,
}

impl GuardedFetcher {
    /// With the system's TLS roots (and `SSL_CERT_FILE`'s).
    pub fn new(trusted_hosts: Vec<String>) -> Result<Self, String> {
        let mut roots = rustls::RootCertStore::empty();
        let found = rustls_native_certs::load_native_certs();
        for certificate in found.certs {
            let _ = roots.add(certificate);
        }
        if roots.is_empty() {
            return Err("no TLS root certificates to fetch client metadata documents with".into());
        }
        Ok(Self::with_roots(roots, trusted_hosts))
    }

    /// With `roots` only (tests).
    pub fn with_roots(roots: rustls::RootCertStore, trusted_hosts: Vec<String>) -> Self {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("the provider supports TLS 1.2 and 1.3")
            .with_root_certificates(roots)
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        Self { tls: Arc::new(tls), trusted_hosts }
    }

    /// `url`'s document. `url` is an https URL with a host (checked by the caller).
    pub async fn get(&self, url: &Url) -> Result<Fetched, FetchError> {
        self.get_within(url, MAX_DOCUMENT_BYTES).await
    }

    /// `url`'s body, of `max_bytes` at most (a client's key set is larger
    /// than its document).
    pub async fn get_within(&self, url: &Url, max_bytes: usize) -> Result<Fetched, FetchError> {
        tokio::time::timeout(FETCH_TIMEOUT, self.fetch(url, max_bytes)).await.unwrap_or(Err(FetchError::TooSlow))
    }

    async fn fetch(&self, url: &Url, max_bytes: usize) -> Result<Fetched, FetchError> {
        let unreachable = |why: &dyn std::fmt::Display| FetchError::Unreachable(why.to_string());
        let host = url.host_str().ok_or_else(|| unreachable(&"no host"))?.to_owned();
        let port = url.port_or_known_default().unwrap_or(443);
        let trusted = self.trusted_hosts.iter().any(|entry| *entry == format!("{}:{port}", host.to_ascii_lowercase()));
        let addresses: Vec<SocketAddr> = match url.host() {
            Some(Host::Ipv4(ip)) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
            Some(Host::Ipv6(ip)) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
            _ => tokio::net::lookup_host((host.as_str(), port)).await.map_err(|e| unreachable(&e))?.collect(),
        };
        if addresses.is_empty() {
            return Err(unreachable(&"no address"));
        }
        if !trusted && addresses.iter().any(|address| !is_public(address.ip())) {
            return Err(FetchError::NotPublic);
        }
        let tcp = tokio::net::TcpStream::connect(&addresses[..]).await.map_err(|e| unreachable(&e))?;
        let name = ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']').to_owned()).map_err(|e| unreachable(&e))?;
        let tls = tokio_rustls::TlsConnector::from(self.tls.clone()).connect(name, tcp).await.map_err(|e| unreachable(&e))?;
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.map_err(|e| unreachable(&e))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        let path = &url[url::Position::BeforePath..url::Position::AfterQuery];
        let authority = &url[url::Position::BeforeHost..url::Position::AfterPort];
        let request = Request::get(path)
            .header(header::HOST, authority)
            .header(header::ACCEPT, "application/json")
            .header(header::USER_AGENT, concat!("mcp-authorization/", env!("CARGO_PKG_VERSION")))
            .body(Empty::<Bytes>::new())
            .map_err(|e| unreachable(&e))?;
        let response = sender.send_request(request).await.map_err(|e| unreachable(&e))?;
        if response.status() != StatusCode::OK {
            return Err(FetchError::Status(response.status().as_u16()));
        }
        let max_age = max_age(response.headers());
        let declared = response.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
        if declared.is_some_and(|length| length > max_bytes) {
            return Err(FetchError::TooLarge(max_bytes));
        }
        let body = Limited::new(response.into_body(), max_bytes).collect().await.map_err(|_| FetchError::TooLarge(max_bytes))?.to_bytes();
        Ok(Fetched { body, max_age })
    }
}

/// `Cache-Control: max-age=N`, unless the document may not be stored.
fn max_age(headers: &http::HeaderMap) -> Option<u64> {
    let value = headers.get(header::CACHE_CONTROL)?.to_str().ok()?.to_ascii_lowercase();
    if value.contains("no-store") || value.contains("no-cache") {
        return Some(0);
    }
    value.split(',').find_map(|part| part.trim().strip_prefix("max-age=")?.trim_matches('"').parse().ok())
}

/// Whether `ip` is an address on the public internet (IANA special-purpose
/// registries, both families; IPv4 carried in IPv6 judged as IPv4).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let segments = v6.segments();
            let nat64 = segments[0] == 0x64 && segments[1] == 0xff9b && segments[2..6] == [0, 0, 0, 0];
            if nat64 {
                let [a, b] = segments[6].to_be_bytes();
                let [c, d] = segments[7].to_be_bytes();
                return is_public_v4(Ipv4Addr::new(a, b, c, d));
            }
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                // Local-use NAT64 (RFC 8215): the network's own translator,
                // where the IPv4 address may sit anywhere from /48 to /96,
                // so none of it is read as public.
                || (segments[0] == 0x64 && segments[1] == 0xff9b && segments[2] == 1)
                || (segments[0] & 0xfe00) == 0xfc00 // unique local
                || (segments[0] & 0xffc0) == 0xfe80 // link-local
                || (segments[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
                || (segments[0] == 0x2001 && segments[1] == 0x0db8) // documentation
                || (segments[0] == 0x2001 && segments[1] < 0x0200) // IETF protocol assignments (Teredo, ORCHID, ...)
                || segments[0] == 0x2002 // 6to4: carries any IPv4 address
                || segments[0..6] == [0, 0, 0, 0, 0, 0]) // IPv4-compatible (deprecated)
        }
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || ip.is_unspecified()
        || a == 0
        || (a == 100 && (b & 0xc0) == 64) // shared address space (CGNAT)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (b & 0xfe) == 18) // benchmarking
        || a >= 240) // reserved
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each refused range, one address at each edge inside it and the
    /// address just past each edge that no other range holds (where a
    /// neighbour is refused too, the two are one row).
    #[test]
    fn only_public_addresses_are_fetched_from() {
        const V4: &[(&str, &[&str], &[&str])] = &[
            ("0.0.0.0/8 (this network)", &["0.0.0.0", "0.255.255.255"], &["1.0.0.0"]),
            ("10.0.0.0/8 (private)", &["10.0.0.0", "10.255.255.255"], &["9.255.255.255", "11.0.0.0"]),
            ("100.64.0.0/10 (shared, CGNAT)", &["100.64.0.0", "100.127.255.255"], &["100.63.255.255", "100.128.0.0"]),
            ("127.0.0.0/8 (loopback)", &["127.0.0.0", "127.255.255.255"], &["126.255.255.255", "128.0.0.0"]),
            (
                "169.254.0.0/16 (link-local, metadata)",
                &["169.254.0.0", "169.254.169.254", "169.254.255.255"],
                &["169.253.255.255", "169.255.0.0"],
            ),
            ("172.16.0.0/12 (private)", &["172.16.0.0", "172.31.255.255"], &["172.15.255.255", "172.32.0.0"]),
            ("192.0.0.0/24 (IETF protocol assignments)", &["192.0.0.0", "192.0.0.255"], &["191.255.255.255", "192.0.1.0"]),
            ("192.0.2.0/24 (documentation)", &["192.0.2.0", "192.0.2.255"], &["192.0.1.255", "192.0.3.0"]),
            ("192.168.0.0/16 (private)", &["192.168.0.0", "192.168.255.255"], &["192.167.255.255", "192.169.0.0"]),
            ("198.18.0.0/15 (benchmarking)", &["198.18.0.0", "198.19.255.255"], &["198.17.255.255", "198.20.0.0"]),
            ("198.51.100.0/24 (documentation)", &["198.51.100.0", "198.51.100.255"], &["198.51.99.255", "198.51.101.0"]),
            ("203.0.113.0/24 (documentation)", &["203.0.113.0", "203.0.113.255"], &["203.0.112.255", "203.0.114.0"]),
            (
                "224.0.0.0/4 (multicast), 240.0.0.0/4 (reserved, broadcast)",
                &["224.0.0.0", "239.255.255.255", "240.0.0.0", "255.255.255.255"],
                &["223.255.255.255"],
            ),
        ];
        const V6: &[(&str, &[&str], &[&str])] = &[
            ("::/96 (unspecified, loopback, IPv4-compatible)", &["::", "::1", "::127.0.0.1", "::ffff:ffff"], &["::1:0:0"]),
            (
                "64:ff9b::/96 (NAT64) over a refused IPv4",
                &["64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1"],
                &["64:ff9b::808:808", "64:ff9b:0:0:0:1::"],
            ),
            (
                "64:ff9b:1::/48 (local-use NAT64)",
                &["64:ff9b:1::", "64:ff9b:1::808:808", "64:ff9b:1:ffff:ffff:ffff:ffff:ffff"],
                &["64:ff9b:0:ffff:ffff:ffff:ffff:ffff", "64:ff9b:2::"],
            ),
            (
                "2001::/23 (IETF protocol assignments, Teredo)",
                &["2001::", "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff"],
                &["2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2001:200::"],
            ),
            (
                "2001:db8::/32 (documentation)",
                &["2001:db8::", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff"],
                &["2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db9::"],
            ),
            (
                "2002::/16 (6to4)",
                &["2002::", "2002:7f00:1::", "2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff"],
                &["2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "2003::"],
            ),
            (
                "fc00::/7 (unique local)",
                &["fc00::", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"],
                &["fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fe00::"],
            ),
            (
                "fe80::/10 (link-local), fec0::/10 (site-local), ff00::/8 (multicast)",
                &[
                    "fe80::",
                    "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                    "fec0::",
                    "feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                    "ff00::",
                    "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                ],
                &["fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff"],
            ),
        ];
        let judged = |text: &str| is_public(text.parse().unwrap_or_else(|_| panic!("{text} is an address")));
        for (range, inside, outside) in V4 {
            for address in *inside {
                // The same address carried in IPv6 is judged as itself.
                for form in [address.to_string(), format!("::ffff:{address}"), format!("64:ff9b::{address}")] {
                    assert!(!judged(&form), "{form} is in {range}");
                }
            }
            for address in *outside {
                for form in [address.to_string(), format!("::ffff:{address}"), format!("64:ff9b::{address}")] {
                    assert!(judged(&form), "{form} is outside {range}");
                }
            }
        }
        for (range, inside, outside) in V6 {
            inside.iter().for_each(|address| assert!(!judged(address), "{address} is in {range}"));
            outside.iter().for_each(|address| assert!(judged(address), "{address} is outside {range}"));
        }
        for public in ["93.184.216.34", "8.8.8.8", "2606:4700::1111", "2a00:1450:4001::200e"] {
            assert!(judged(public), "{public}");
        }
    }

    #[test]
    fn a_document_is_kept_as_long_as_its_server_says() {
        let mut headers = http::HeaderMap::new();
        headers.insert(header::CACHE_CONTROL, "public, max-age=600".parse().unwrap());
        assert_eq!(max_age(&headers), Some(600));
        headers.insert(header::CACHE_CONTROL, "no-store".parse().unwrap());
        assert_eq!(max_age(&headers), Some(0));
        assert_eq!(max_age(&http::HeaderMap::new()), None);
    }
}
