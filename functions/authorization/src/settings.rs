//! The authorization server's configuration, read once at start from the
//! environment (the same names locally, in Lambda and in `template.yaml`).
//! No secret is read here on AWS: there the upstream client secret comes
//! sealed under the stack's KMS key (a ciphertext, opened on first use by
//! `aws::SealedSecret`), and in plain text from the environment only where
//! the process runs locally.

use base64::{Engine, engine::general_purpose::STANDARD};
use mcp_stateless::{Deployment, Entry, Mode, loopback::is_loopback_authority, settings::Variables};

use crate::lifetimes::Lifetimes;

/// `MCP_OAUTH_UPSTREAM_ISSUER`: the OpenID provider users sign in at.
pub const UPSTREAM_ISSUER: &str = "MCP_OAUTH_UPSTREAM_ISSUER";
/// `MCP_OAUTH_UPSTREAM_CLIENT_ID`: this server's one client at the provider.
pub const UPSTREAM_CLIENT_ID: &str = "MCP_OAUTH_UPSTREAM_CLIENT_ID";
/// `MCP_OAUTH_UPSTREAM_CLIENT_SECRET`: that client's secret; unset for a
/// public client (PKCE only). Local runs only.
pub const UPSTREAM_CLIENT_SECRET: &str = "MCP_OAUTH_UPSTREAM_CLIENT_SECRET";
/// `MCP_OAUTH_UPSTREAM_CLIENT_SECRET_SEALED`: that secret sealed under the
/// stack's KMS key (`MCP_STATE_KEY_ID`), base64, as
/// `infra/seal-upstream-secret.sh` prints it; opened once per instance.
pub const UPSTREAM_CLIENT_SECRET_SEALED: &str = "MCP_OAUTH_UPSTREAM_CLIENT_SECRET_SEALED";
/// The longest ciphertext KMS `Decrypt` takes (its `CiphertextBlob` limit).
pub const MAX_SEALED_SECRET_BYTES: usize = 6144;
/// `MCP_OAUTH_CIMD_TRUSTED_HOSTS`: `host:port` entries whose client
/// metadata documents may be fetched from any address (tests, private
/// deployments). Empty by default.
pub const CIMD_TRUSTED_HOSTS: &str = "MCP_OAUTH_CIMD_TRUSTED_HOSTS";
/// `MCP_OAUTH_UNPINNED_CLIENTS`: client ids whose shipped pinned
/// documents are not used (`*`: none are). Empty by default.
pub const UNPINNED_CLIENTS: &str = "MCP_OAUTH_UNPINNED_CLIENTS";
/// `MCP_OAUTH_TRUSTED_CLIENT_IDS`: client ids (exact strings,
/// comma-separated) whose consent page is skipped, each a client metadata
/// document's https URL. Empty by default.
pub const TRUSTED_CLIENT_IDS: &str = "MCP_OAUTH_TRUSTED_CLIENT_IDS";
/// `MCP_OAUTH_SIGNING_KEY_ID`: the KMS key (ECC_NIST_P256, SIGN_VERIFY)
/// access tokens are signed with. Unset: a key made in this process (local only).
pub const SIGNING_KEY_ID: &str = "MCP_OAUTH_SIGNING_KEY_ID";
/// `MCP_OAUTH_LOCAL_ADDR`: where the local server listens (the MCP
/// server's `MCP_LOCAL_AUTHORIZATION_SERVER` names it).
pub const LOCAL_ADDR: &str = "MCP_OAUTH_LOCAL_ADDR";
/// `MCP_OAUTH_ISSUER`: this server's issuer URL, as the deployment publishes
/// it (`template.yaml` derives it from `PublicBaseUrl`). Required on
/// Lambda; unset locally, the request's loopback origin and `MCP_BASE_PATH`.
pub const ISSUER: &str = "MCP_OAUTH_ISSUER";

/// The OpenID provider behind the sign-in, and this server's client there.
#[derive(Clone)]
pub struct UpstreamSettings {
    /// Its issuer URL: https, or http on a loopback host.
    pub issuer: String,
    /// The client id it registered for this server.
    pub client_id: String,
    /// The client's secret, if it is a confidential client (local runs).
    pub client_secret: Option<String>,
    /// The secret sealed under the stack's KMS key (on AWS): the KMS
    /// ciphertext, decoded from base64. Not a secret without `kms:Decrypt`
    /// under its encryption context, but never printed either.
    pub client_secret_sealed: Option<Vec<u8>>,
}

impl std::fmt::Debug for UpstreamSettings {
    // The secret never reaches a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamSettings")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "<set>"))
            .field("client_secret_sealed", &self.client_secret_sealed.as_ref().map(|_| "<set>"))
            .finish()
    }
}

/// What the server was configured with.
#[derive(Debug, Clone)]
pub struct OAuthSettings {
    /// The deployment's decisions, as Lambda or the local server chooses
    /// them; locally it listens at `MCP_OAUTH_LOCAL_ADDR`, else
    /// [`DEFAULT_LOCAL_ADDR`].
    pub deployment: Deployment,
    /// `MCP_OAUTH_ISSUER`; `None` only locally (see [`ISSUER`]).
    pub issuer: Option<String>,
    /// `MCP_RESOURCE`: the MCP endpoint tokens are for. Unset: the issuer
    /// with `/mcp` appended.
    pub resource: Option<String>,
    /// `MCP_BASE_PATH`: the prefix clients see before the function's paths
    /// (a REST API's stage), without a trailing slash.
    pub base_path: String,
    /// `MCP_SCOPES_SUPPORTED` (comma-separated); unset: `mcp`.
    pub scopes: Vec<String>,
    /// The upstream provider; `None` until configured, when `/authorize`
    /// answers that sign-in is not set up.
    pub upstream: Option<UpstreamSettings>,
    /// `MCP_OAUTH_CIMD_TRUSTED_HOSTS`, lowercased.
    pub cimd_trusted_hosts: Vec<String>,
    /// `MCP_OAUTH_UNPINNED_CLIENTS`.
    pub unpinned_clients: Vec<String>,
    /// `MCP_OAUTH_TRUSTED_CLIENT_IDS`.
    pub trusted_client_ids: Vec<String>,
    /// `MCP_OAUTH_SIGNING_KEY_ID`.
    pub signing_key_id: Option<String>,
    /// `MCP_LOG_LEVEL`, else `info`.
    pub log_level: String,
    /// `MCP_METRICS_NAMESPACE`, else `MCP`: where the sign-in metrics go
    /// (the template names the stack, as for the MCP function's).
    pub metrics_namespace: String,
    /// How long codes, tokens and registrations live.
    pub lifetimes: Lifetimes,
}

/// Where the local authorization server listens unless told otherwise:
/// beside the MCP server's default port, which forwards to it.
pub const DEFAULT_LOCAL_ADDR: &str = "127.0.0.1:3001";

impl OAuthSettings {
    /// This process's settings.
    pub fn from_env() -> Result<Self, String> {
        Self::read(mcp_stateless::detect_mode(), &Variables::new(|name| std::env::var(name).ok()))
    }

    /// The settings `variables` give in `mode`.
    pub fn read(mode: Mode, variables: &Variables<impl Fn(&str) -> Option<String>>) -> Result<Self, String> {
        let deployment = Deployment::defaults(mode, variables.text(LOCAL_ADDR).unwrap_or_else(|| DEFAULT_LOCAL_ADDR.to_owned()));
        let upstream = match (variables.text(UPSTREAM_ISSUER), variables.text(UPSTREAM_CLIENT_ID)) {
            (None, None) => None,
            (Some(issuer), Some(client_id)) => {
                mcp_stateless::edge::bearer::key_url::KeyUrl::parse(&issuer).map_err(|why| format!("{UPSTREAM_ISSUER} {why}"))?;
                let client_secret = variables.text(UPSTREAM_CLIENT_SECRET);
                if client_secret.is_some() && deployment.on_lambda() {
                    return Err(format!("{UPSTREAM_CLIENT_SECRET} is for local runs: on AWS no secret goes into a function's environment"));
                }
                let client_secret_sealed = variables.text(UPSTREAM_CLIENT_SECRET_SEALED).map(|text| sealed_secret(&text)).transpose()?;
                if client_secret.is_some() && client_secret_sealed.is_some() {
                    return Err(format!("set {UPSTREAM_CLIENT_SECRET} or {UPSTREAM_CLIENT_SECRET_SEALED}, not both"));
                }
                Some(UpstreamSettings { issuer: issuer.trim_end_matches('/').to_owned(), client_id, client_secret, client_secret_sealed })
            }
            (Some(_), None) => return Err(format!("{UPSTREAM_CLIENT_ID} must be set beside {UPSTREAM_ISSUER}")),
            (None, Some(_)) => return Err(format!("{UPSTREAM_ISSUER} must be set beside {UPSTREAM_CLIENT_ID}")),
        };
        let scopes = match variables.list("MCP_SCOPES_SUPPORTED") {
            scopes if scopes.is_empty() => vec!["mcp".to_owned()],
            scopes => scopes,
        };
        crate::scopes::check_offered(&scopes)?;
        let signing_key_id = variables.text(SIGNING_KEY_ID);
        // Tokens one instance signs, every instance and the MCP function
        // verify: a key made in the process cannot be shared.
        if deployment.shared_state && signing_key_id.is_none() {
            return Err(format!("{SIGNING_KEY_ID} must name the KMS signing key: a key made in the process is for local runs"));
        }
        let base_path = variables.text("MCP_BASE_PATH").unwrap_or_default().trim_end_matches('/').to_owned();
        let issuer = variables.text(ISSUER).map(|issuer| checked_issuer(issuer, &base_path)).transpose()?;
        // A Host header is the client's to write: on Lambda an issuer taken
        // from it would be the attacker's (tokens and metadata naming their
        // domain), and clients compare the issuer byte for byte.
        if issuer.is_none() && deployment.on_lambda() {
            return Err(format!(
                "{ISSUER} must name this server's issuer (https://<public domain><base path>): on AWS it is never taken from a request"
            ));
        }
        let lower = |name| variables.list(name).into_iter().map(|host| host.to_ascii_lowercase()).collect();
        Ok(Self {
            deployment,
            issuer,
            resource: variables.text("MCP_RESOURCE"),
            base_path,
            scopes,
            upstream,
            cimd_trusted_hosts: lower(CIMD_TRUSTED_HOSTS),
            unpinned_clients: variables.list(UNPINNED_CLIENTS),
            trusted_client_ids: trusted_client_ids(variables.list(TRUSTED_CLIENT_IDS))?,
            signing_key_id,
            log_level: variables.text("MCP_LOG_LEVEL").unwrap_or_else(|| "info".to_owned()),
            metrics_namespace: variables.text("MCP_METRICS_NAMESPACE").unwrap_or_else(|| "MCP".to_owned()),
            lifetimes: Lifetimes::default(),
        })
    }

    /// The issuer for a request whose `Host` header is `host`: the
    /// configured one, whatever the request says. Locally and unset, the
    /// request's origin if it is loopback (the MCP server forwards with its
    /// own `Host`), else the address this server listens at.
    pub fn issuer_for(&self, host: Option<&str>) -> String {
        if let Some(issuer) = &self.issuer {
            return issuer.clone();
        }
        let listening = match &self.deployment.entry {
            Entry::Local { addr } => addr.as_str(),
            Entry::Lambda => DEFAULT_LOCAL_ADDR,
        };
        let host = host.filter(|host| is_loopback_authority(host)).unwrap_or(listening);
        format!("http://{host}{}", self.base_path)
    }
}

/// `issuer` if clients can find and compare it: https (http on a loopback
/// host), no query, fragment or trailing slash (clients compare the
/// metadata's `issuer` with the URL they built it from byte for byte, RFC
/// 8414 section 3.3), and its path the `base_path` requests arrive under,
/// where its well-known URLs reach this function.
fn checked_issuer(issuer: String, base_path: &str) -> Result<String, String> {
    let url = url::Url::parse(&issuer).map_err(|_| format!("{ISSUER} is not a URL: {issuer:?}"))?;
    let loopback = url.host().is_some_and(|host| mcp_stateless::loopback::is_loopback_host(&host));
    let secure = url.scheme() == "https" || (url.scheme() == "http" && loopback);
    if !secure || url.host().is_none() || url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
        return Err(format!("{ISSUER} must be an https URL (http only on loopback) without query or fragment, not {issuer:?}"));
    }
    if issuer.ends_with('/') {
        return Err(format!(
            "{ISSUER} must not end with /: clients compare it byte for byte with the authorization_servers they were given"
        ));
    }
    if url.path().trim_end_matches('/') != base_path {
        return Err(format!(
            "{ISSUER}'s path ({:?}) must be MCP_BASE_PATH ({base_path:?}): clients fetch the metadata under the issuer's path",
            url.path().trim_end_matches('/')
        ));
    }
    Ok(issuer)
}

/// `ids` if each may be trusted: a metadata document's https URL, whose
/// host vouches for it. A registered id is never trusted: a registration
/// is self-asserted, and its page says so (SECURITY.md). Compared as
/// exact strings: `claude.ai` also hosts loopback clients' documents.
fn trusted_client_ids(ids: Vec<String>) -> Result<Vec<String>, String> {
    for id in &ids {
        let document_url =
            url::Url::parse(id).is_ok_and(|url| url.scheme() == "https" && url.host().is_some() && url.path() != "/" && url.as_str() == id);
        if !document_url {
            return Err(format!(
                "{TRUSTED_CLIENT_IDS}: {id:?} is not a client metadata document's https URL (registered client ids are never trusted)"
            ));
        }
    }
    Ok(ids)
}

/// The ciphertext in `text`, as `infra/seal-upstream-secret.sh` printed it
/// (standard base64). The errors name the variable, never its value.
fn sealed_secret(text: &str) -> Result<Vec<u8>, String> {
    let bytes = STANDARD
        .decode(text)
        .map_err(|_| format!("{UPSTREAM_CLIENT_SECRET_SEALED} is not base64: paste what infra/seal-upstream-secret.sh printed"))?;
    if bytes.len() > MAX_SEALED_SECRET_BYTES {
        return Err(format!("{UPSTREAM_CLIENT_SECRET_SEALED} is longer than a KMS ciphertext can be ({MAX_SEALED_SECRET_BYTES} bytes)"));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn read(mode: Mode, pairs: &[(&str, &str)]) -> Result<OAuthSettings, String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        OAuthSettings::read(mode, &Variables::new(move |name| map.get(name).cloned()))
    }

    #[test]
    fn a_secret_in_a_lambdas_environment_stops_the_start() {
        let pairs = [
            (UPSTREAM_ISSUER, "https://idp.example.com"),
            (UPSTREAM_CLIENT_ID, "abc"),
            (UPSTREAM_CLIENT_SECRET, "s3cret"),
            (SIGNING_KEY_ID, "alias/k"),
        ];
        let error = read(Mode::Lambda, &pairs).unwrap_err();
        assert!(error.contains(UPSTREAM_CLIENT_SECRET), "{error}");
        let local = read(Mode::Local, &pairs).unwrap();
        assert!(!format!("{local:?}").contains("s3cret"), "the secret is never printed");
    }

    /// An upstream with `sealed` as its sealed secret, and `extra`.
    fn sealed(mode: Mode, sealed: &str, extra: &[(&str, &str)]) -> Result<OAuthSettings, String> {
        let mut pairs = vec![
            (UPSTREAM_ISSUER, "https://idp.example.com"),
            (UPSTREAM_CLIENT_ID, "abc"),
            (SIGNING_KEY_ID, "alias/k"),
            (ISSUER, "https://mcp.example.com"),
            (UPSTREAM_CLIENT_SECRET_SEALED, sealed),
        ];
        pairs.extend_from_slice(extra);
        read(mode, &pairs)
    }

    #[test]
    fn a_sealed_secret_is_base64_taken_on_lambda_and_never_beside_a_plain_one() {
        let ciphertext = STANDARD.encode(b"a KMS ciphertext blob");
        // On Lambda, where the plain variable is refused, and locally.
        for mode in [Mode::Lambda, Mode::Local] {
            let upstream = sealed(mode, &ciphertext, &[]).unwrap().upstream.unwrap();
            assert_eq!(upstream.client_secret_sealed.as_deref(), Some(&b"a KMS ciphertext blob"[..]));
            assert_eq!(upstream.client_secret, None);
            assert!(!format!("{upstream:?}").contains(&ciphertext), "the ciphertext is not printed");
        }
        let both = sealed(Mode::Local, &ciphertext, &[(UPSTREAM_CLIENT_SECRET, "s3cret")]).unwrap_err();
        assert!(both.contains(UPSTREAM_CLIENT_SECRET_SEALED) && both.contains("not both"), "{both}");
        assert!(!both.contains("s3cret") && !both.contains(&ciphertext), "{both}");
        // Not base64, or longer than any KMS ciphertext: the start stops,
        // naming the variable and not its value.
        let garbage = "not*base64*at#all";
        let error = sealed(Mode::Lambda, garbage, &[]).unwrap_err();
        assert!(error.contains(UPSTREAM_CLIENT_SECRET_SEALED) && error.contains("not base64"), "{error}");
        assert!(!error.contains(garbage), "{error}");
        let long = sealed(Mode::Lambda, &STANDARD.encode(vec![7u8; MAX_SEALED_SECRET_BYTES + 1]), &[]).unwrap_err();
        assert!(long.contains("longer than a KMS ciphertext"), "{long}");
        // Blank is unset: a public client.
        assert_eq!(sealed(Mode::Lambda, "  ", &[]).unwrap().upstream.unwrap().client_secret_sealed, None);
    }

    #[test]
    fn the_upstream_is_named_whole_and_over_https_or_loopback() {
        assert!(read(Mode::Local, &[(UPSTREAM_ISSUER, "https://idp.example.com")]).unwrap_err().contains(UPSTREAM_CLIENT_ID));
        let plain = read(Mode::Local, &[(UPSTREAM_ISSUER, "http://idp.example.com"), (UPSTREAM_CLIENT_ID, "a")]).unwrap_err();
        assert!(plain.contains(UPSTREAM_ISSUER), "{plain}");
        let local = read(Mode::Local, &[(UPSTREAM_ISSUER, "http://127.0.0.1:4000/"), (UPSTREAM_CLIENT_ID, "a")]).unwrap();
        assert_eq!(local.upstream.unwrap().issuer, "http://127.0.0.1:4000");
        assert!(read(Mode::Lambda, &[]).unwrap_err().contains(SIGNING_KEY_ID));
        assert_eq!(read(Mode::Local, &[]).unwrap().scopes, ["mcp"]);
    }

    #[test]
    fn only_metadata_document_urls_are_trusted_and_offline_access_is_no_resource_scope() {
        let claude = "https://claude.ai/oauth/mcp-oauth-client-metadata";
        let both = format!("{claude}, https://vscode.dev/oauth/client-metadata.json");
        let trusted = read(Mode::Local, &[(TRUSTED_CLIENT_IDS, &both)]).unwrap().trusted_client_ids;
        assert_eq!(trusted, [claude, "https://vscode.dev/oauth/client-metadata.json"]);
        for refused in ["v1.a-registered-client-id", "http://claude.ai/c.json", "https://claude.ai/", "https://claude.ai/x/../c.json"] {
            let error = read(Mode::Local, &[(TRUSTED_CLIENT_IDS, refused)]).unwrap_err();
            assert!(error.contains(TRUSTED_CLIENT_IDS) && error.contains("never trusted"), "{refused}: {error}");
        }
        let error = read(Mode::Local, &[("MCP_SCOPES_SUPPORTED", "mcp,offline_access")]).unwrap_err();
        assert!(error.contains("offline_access"), "{error}");
    }

    #[test]
    fn on_lambda_the_issuer_is_configured_and_never_read_from_a_request() {
        let key = (SIGNING_KEY_ID, "alias/k");
        let error = read(Mode::Lambda, &[key]).unwrap_err();
        assert!(error.contains(ISSUER) && error.contains("never taken from a request"), "{error}");
        // The deployment shapes: the API's own domain (an HTTP API, a REST
        // API's stage), a custom domain with and without a base path.
        for (issuer, base_path) in [
            ("https://abc123.execute-api.eu-west-1.amazonaws.com", ""),
            ("https://abc123.execute-api.eu-west-1.amazonaws.com/api", "/api"),
            ("https://mcp.example.com", ""),
            ("https://mcp.example.com/tools", "/tools"),
        ] {
            let settings = read(Mode::Lambda, &[key, (ISSUER, issuer), ("MCP_BASE_PATH", base_path)]).unwrap();
            for forged in [Some("evil.example.com"), Some("127.0.0.1:3000"), None] {
                assert_eq!(settings.issuer_for(forged), issuer, "{forged:?}");
            }
        }
        for (refused, why) in [
            ("https://mcp.example.com/", "byte for byte"),
            ("http://mcp.example.com", "https"),
            ("https://mcp.example.com?x=1", "https"),
            ("https://mcp.example.com#x", "https"),
            ("mcp.example.com", "not a URL"),
            ("https://mcp.example.com/tools", "MCP_BASE_PATH"),
        ] {
            let error = read(Mode::Lambda, &[key, (ISSUER, refused)]).unwrap_err();
            assert!(error.contains(ISSUER) && error.contains(why), "{refused}: {error}");
        }
        let staged = read(Mode::Lambda, &[key, (ISSUER, "https://mcp.example.com"), ("MCP_BASE_PATH", "/api")]).unwrap_err();
        assert!(staged.contains("MCP_BASE_PATH"), "{staged}");
    }

    #[test]
    fn locally_an_unset_issuer_follows_a_loopback_host_only() {
        let local = read(Mode::Local, &[(LOCAL_ADDR, "127.0.0.1:4001"), ("MCP_BASE_PATH", "/api")]).unwrap();
        assert_eq!(local.issuer_for(Some("localhost:3000")), "http://localhost:3000/api");
        assert_eq!(local.issuer_for(Some("127.0.0.1:3000")), "http://127.0.0.1:3000/api");
        for other in [Some("evil.example.com"), Some("localhost.evil.example"), None] {
            assert_eq!(local.issuer_for(other), "http://127.0.0.1:4001/api", "{other:?}");
        }
        let configured = read(Mode::Local, &[(ISSUER, "http://127.0.0.1:3000")]).unwrap();
        assert_eq!(configured.issuer_for(Some("localhost:9999")), "http://127.0.0.1:3000");
    }
}
