//! What the edge lets in: path, hosts, origins, body size. Read once at
//! start (`settings.rs`); the same variable names in Lambda, in the local
//! server and in `template.yaml`.

pub use crate::deployment::{HostRule, LogFormat, Mode, Transport};

/// The largest request body accepted when `MCP_MAX_BODY_BYTES` is unset.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;
/// The path MCP is served at ([`is_mcp_path`]: also with a trailing
/// slash); every other path answers 404, the protected-resource
/// metadata's aside.
pub const MCP_PATH: &str = "/mcp";

/// Whether `path` is the MCP endpoint: [`MCP_PATH`], or `/mcp/` as a user
/// may type it. Served alike, since clients keep the URL as typed (Gemini
/// CLI compares it with the metadata's `resource`), and a 404 there reads
/// as a server that is down; nothing else under `/mcp/` is.
pub fn is_mcp_path(path: &str) -> bool {
    path.strip_prefix(MCP_PATH).is_some_and(|rest| rest.is_empty() || rest == "/")
}
/// Header a developer may use to act as a principal. Honoured only by the
/// local server: in Lambda, identity comes from the authorizer alone.
pub const DEV_PRINCIPAL_HEADER: &str = "x-mcp-dev-principal";

/// What the edge admits and how it answers, read once at start
/// (`settings.rs`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct EdgePolicy {
    /// Which names are the server's own beside `allowed_hosts`.
    pub host_rule: HostRule,
    /// The request log's format.
    pub log_format: LogFormat,
    /// `MCP_ALLOWED_HOSTS`: hostnames (no port) accepted in `Host`. Locally: these, or loopback
    /// names when empty. In Lambda: the API's own domain (from the event's
    /// request context) and these (custom domains).
    pub allowed_hosts: Vec<String>,
    /// `MCP_ALLOWED_ORIGINS`: hostnames accepted in a present `Origin`.
    /// Empty: the same set as hosts.
    pub allowed_origins: Vec<String>,
    /// `MCP_MAX_BODY_BYTES`: a larger request body is refused with HTTP
    /// 413 before it is parsed.
    pub max_body_bytes: usize,
    /// `MCP_TRANSPORT`: whether answers leave whole or streamed; whole
    /// ones cannot serve `subscriptions/listen`.
    pub transport: Transport,
}

impl EdgePolicy {
    /// The defaults `mode` chooses (`deployment.rs`).
    pub fn new(mode: Mode) -> Self {
        let deployment = crate::deployment::Deployment::defaults(mode, "");
        Self {
            host_rule: deployment.host_rule,
            log_format: deployment.log_format,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            transport: Transport::default_in(mode),
        }
    }

    /// DNS-rebinding defence (basic/transports/streamable-http, "Security Warning").
    pub fn host_allowed(&self, host: &str, api_domain: Option<&str>) -> bool {
        self.name_allowed(&self.allowed_hosts, host_of_authority(host), api_domain)
    }

    /// `origin` is the header value, `scheme://host[:port]` or `null`.
    pub fn origin_allowed(&self, origin: &str, api_domain: Option<&str>) -> bool {
        let Some((_, authority)) = origin.split_once("://") else {
            return false;
        };
        let list = if self.allowed_origins.is_empty() { &self.allowed_hosts } else { &self.allowed_origins };
        self.name_allowed(list, host_of_authority(authority), api_domain)
    }

    /// In Lambda the API's own domain is always allowed, and the list adds
    /// custom domains; locally the list replaces the loopback names.
    fn name_allowed(&self, list: &[String], name: String, api_domain: Option<&str>) -> bool {
        if self.host_rule == HostRule::ApiDomain && api_domain.is_some_and(|domain| domain.eq_ignore_ascii_case(&name)) {
            return true;
        }
        if !list.is_empty() {
            return list.contains(&name);
        }
        self.host_rule == HostRule::Loopback && crate::loopback::is_loopback_name(&name)
    }
}

/// The lowercase host of `host[:port]`, keeping IPv6 brackets. Anything
/// after the host but a numeric port (`[::1]evil.example`, `localhost:x`)
/// makes the whole authority the "host", which no allowlist names.
fn host_of_authority(authority: &str) -> String {
    let authority = authority.trim().trim_end_matches('/');
    crate::loopback::host_of(authority).unwrap_or(authority).to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_defaults_to_loopback_names_with_any_port() {
        let p = EdgePolicy::new(Mode::Local);
        assert!(p.host_allowed("127.0.0.1:3000", None));
        assert!(p.host_allowed("localhost", None));
        assert!(p.host_allowed("[::1]:8080", None));
        assert!(!p.host_allowed("evil.example.com", None));
        assert!(!p.host_allowed("localhost.evil.example.com:3000", None));
        // The one loopback rule (`loopback.rs`): all of 127.0.0.0/8, no
        // look-alike name, not 0.0.0.0.
        assert!(p.host_allowed("127.0.0.2:3000", None));
        assert!(p.host_allowed("LOCALHOST:3000", None));
        assert!(!p.host_allowed("localhost.:3000", None));
        assert!(!p.host_allowed("0.0.0.0:3000", None));
        assert!(!p.host_allowed("127.0.0.1.nip.io:3000", None));
        // Only a numeric port may follow the host.
        assert!(!p.host_allowed("[::1]evil.example", None));
        assert!(!p.host_allowed("[::1]:80evil", None));
        assert!(!p.host_allowed("localhost:evil", None));
        assert!(!p.host_allowed("localhost:", None));
        assert!(p.origin_allowed("http://[::1]:6274", None));
        assert!(!p.origin_allowed("http://[::1]evil.example", None));
        assert!(p.origin_allowed("http://localhost:6274", None));
        assert!(!p.origin_allowed("http://evil.example.com", None));
        assert!(!p.origin_allowed("null", None));
    }

    #[test]
    fn the_endpoint_is_mcp_with_or_without_one_trailing_slash() {
        assert!(is_mcp_path("/mcp") && is_mcp_path("/mcp/"));
        for path in ["/mcp//", "/mcp/x", "/mcpx", "/MCP", "/", "", "/api/mcp"] {
            assert!(!is_mcp_path(path), "{path}");
        }
    }

    #[test]
    fn lambda_defaults_to_the_api_domain() {
        let p = EdgePolicy::new(Mode::Lambda);
        let api = Some("abc.execute-api.eu-west-1.amazonaws.com");
        assert!(p.host_allowed("abc.execute-api.eu-west-1.amazonaws.com", api));
        assert!(!p.host_allowed("localhost", api));
        assert!(!p.origin_allowed("https://evil.example.com", api));
        assert!(!p.host_allowed("abc.execute-api.eu-west-1.amazonaws.com", None));

        let mut custom = EdgePolicy::new(Mode::Lambda);
        custom.allowed_hosts = vec!["mcp.example.com".into()];
        assert!(custom.host_allowed("mcp.example.com", api));
        assert!(custom.host_allowed("abc.execute-api.eu-west-1.amazonaws.com", api));
        assert!(!custom.host_allowed("evil.example.com", api));
    }

    #[test]
    fn configured_lists_replace_the_defaults() {
        let mut p = EdgePolicy::new(Mode::Local);
        p.allowed_hosts = vec!["mcp.example.com".into()];
        p.allowed_origins = vec!["app.example.com".into()];
        assert!(p.host_allowed("MCP.example.com:443", None));
        assert!(!p.host_allowed("localhost", None));
        assert!(p.origin_allowed("https://app.example.com", None));
        assert!(!p.origin_allowed("https://mcp.example.com", None));
    }
}
