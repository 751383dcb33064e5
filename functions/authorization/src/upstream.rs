//! Sign-in at the upstream OpenID provider (the stack's Cognito user pool,
//! or any provider) through this server's one client there: the code flow
//! with PKCE of its own and a sealed `state`, the client authenticated the
//! way the provider's metadata says. The provider's tokens stop here: only
//! the subject of its ID token is kept, and the MCP client never sees them.
//!
//! The ID token comes straight from the provider's token endpoint over TLS,
//! which OpenID Connect Core 1.0 (3.1.3.7, 6) lets stand in for checking
//! its signature; its issuer, audience, expiry and nonce are checked.

use std::{sync::Arc, time::Duration};

use base64::{
    Engine,
    engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD},
};
use bytes::Bytes;
use futures::future::BoxFuture;
use http::{Request, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use mcp_stateless::edge::bearer::key_url::KeyUrl;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::OnceCell;
use url::form_urlencoded;

use crate::settings::UpstreamSettings;

/// The largest answer read from the provider.
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// The longest a call to the provider may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the upstream sign-in failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    /// The provider could not be reached, or answered what it should not.
    #[error("the identity provider is unavailable: {0}")]
    Unavailable(String),
    /// The provider refused the code, or its ID token does not check out.
    #[error("the identity provider's answer was refused: {0}")]
    Refused(String),
}

#[derive(Deserialize)]
struct Discovery {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    #[serde(default)]
    token_endpoint_auth_methods_supported: Vec<String>,
}

#[derive(Deserialize)]
struct IdClaims {
    iss: String,
    sub: String,
    aud: Value,
    exp: f64,
    #[serde(default)]
    nonce: Option<String>,
    #[serde(default)]
    azp: Option<String>,
}

/// Where this server's client secret at the provider comes from, asked
/// once per instance ([`crate::aws::SealedSecret`] on AWS).
pub trait SecretSource: Send + Sync {
    /// The secret.
    fn secret(&self) -> BoxFuture<'_, Result<String, String>>;
}

/// The upstream provider, discovered on first use.
pub struct Upstream {
    settings: UpstreamSettings,
    secret_source: Option<Arc<dyn SecretSource>>,
    secret: OnceCell<Option<String>>,
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    discovery: OnceCell<Discovery>,
}

impl Upstream {
    /// For `settings`; fetches nothing yet.
    pub fn new(settings: UpstreamSettings) -> Result<Self, String> {
        let connector = mcp_stateless::edge::bearer::issuer_keys::https_connector()?;
        Ok(Self {
            secret: OnceCell::new(),
            secret_source: None,
            settings,
            client: Client::builder(TokioExecutor::new()).build(connector),
            discovery: OnceCell::new(),
        })
    }

    /// With the client secret from `source` (read on first need).
    pub fn with_secret_source(mut self, source: Arc<dyn SecretSource>) -> Self {
        self.secret_source = Some(source);
        self
    }

    async fn client_secret(&self) -> Result<Option<&str>, UpstreamError> {
        let secret = self
            .secret
            .get_or_try_init(|| async {
                match &self.secret_source {
                    Some(source) => source.secret().await.map(Some).map_err(UpstreamError::Unavailable),
                    None => Ok(self.settings.client_secret.clone()),
                }
            })
            .await?;
        Ok(secret.as_deref())
    }

    async fn call(&self, request: Request<Full<Bytes>>) -> Result<(StatusCode, Bytes), UpstreamError> {
        let unavailable = |e: &dyn std::fmt::Display| UpstreamError::Unavailable(e.to_string());
        let response = tokio::time::timeout(CALL_TIMEOUT, self.client.request(request))
            .await
            .map_err(|_| unavailable(&"timed out"))?
            .map_err(|e| unavailable(&e))?;
        let status = response.status();
        let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES).collect().await.map_err(|e| unavailable(&e))?.to_bytes();
        Ok((status, body))
    }

    async fn discovery(&self) -> Result<&Discovery, UpstreamError> {
        self.discovery
            .get_or_try_init(|| async {
                let url = format!("{}/.well-known/openid-configuration", self.settings.issuer);
                let request = Request::get(&url).body(Full::default()).map_err(|e| UpstreamError::Unavailable(e.to_string()))?;
                let (status, body) = self.call(request).await?;
                if status != StatusCode::OK {
                    return Err(UpstreamError::Unavailable(format!("{url}: HTTP {status}")));
                }
                let discovery: Discovery = serde_json::from_slice(&body).map_err(|e| UpstreamError::Unavailable(format!("{url}: {e}")))?;
                // OpenID Connect Discovery 1.0, 4.3: the issuer it names is the one configured.
                if discovery.issuer.trim_end_matches('/') != self.settings.issuer {
                    return Err(UpstreamError::Unavailable(format!("{url} names another issuer")));
                }
                for endpoint in [&discovery.authorization_endpoint, &discovery.token_endpoint] {
                    KeyUrl::parse(endpoint).map_err(|why| UpstreamError::Unavailable(format!("an endpoint {why}")))?;
                }
                Ok(discovery)
            })
            .await
    }

    /// Whether `iss`, from an authorization response, names this provider
    /// (RFC 9207: an answer from another provider is a mix-up attack).
    pub fn is_issuer(&self, iss: &str) -> bool {
        iss.trim_end_matches('/') == self.settings.issuer
    }

    /// Where to send the browser to sign in.
    pub async fn authorization_url(&self, redirect_uri: &str, state: &str, challenge: &str, nonce: &str) -> Result<String, UpstreamError> {
        let discovery = self.discovery().await?;
        let query = form_urlencoded::Serializer::new(String::new())
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.settings.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("scope", "openid")
            .append_pair("state", state)
            .append_pair("nonce", nonce)
            .append_pair("code_challenge", challenge)
            .append_pair("code_challenge_method", "S256")
            .finish();
        let separator = if discovery.authorization_endpoint.contains('?') { '&' } else { '?' };
        Ok(format!("{}{separator}{query}", discovery.authorization_endpoint))
    }

    /// The user the provider's `code` signs in, as `<issuer>#<subject>`.
    pub async fn subject(&self, code: &str, verifier: &str, redirect_uri: &str, nonce: &str, now: u64) -> Result<String, UpstreamError> {
        let discovery = self.discovery().await?;
        let secret = self.client_secret().await?;
        let request = self.token_request(discovery, secret, code, verifier, redirect_uri)?;
        let (status, body) = self.call(request).await?;
        if status.is_server_error() {
            return Err(UpstreamError::Unavailable(format!("token endpoint: HTTP {status}")));
        }
        if status != StatusCode::OK {
            let error = serde_json::from_slice::<Value>(&body).ok().and_then(|v| v["error"].as_str().map(str::to_owned));
            return Err(UpstreamError::Refused(format!("token endpoint: HTTP {status} {}", error.unwrap_or_default())));
        }
        let answer: Value = serde_json::from_slice(&body).map_err(|_| UpstreamError::Refused("token answer is not JSON".into()))?;
        let id_token = answer["id_token"].as_str().ok_or_else(|| UpstreamError::Refused("no id_token".into()))?;
        let claims = id_claims(id_token)?;
        let refused = |why: &str| UpstreamError::Refused(why.to_owned());
        if claims.iss != discovery.issuer {
            return Err(refused("the ID token is from another issuer"));
        }
        let audiences: Vec<&str> = match &claims.aud {
            Value::String(one) => vec![one.as_str()],
            Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !audiences.contains(&self.settings.client_id.as_str()) {
            return Err(refused("the ID token is for another client"));
        }
        if audiences.len() > 1 && claims.azp.as_deref() != Some(self.settings.client_id.as_str()) {
            return Err(refused("the ID token was issued to another party"));
        }
        if claims.exp < now as f64 {
            return Err(refused("the ID token has expired"));
        }
        if claims.nonce.as_deref() != Some(nonce) {
            return Err(refused("the ID token's nonce is not this sign-in's"));
        }
        if claims.sub.is_empty() {
            return Err(refused("the ID token names no subject"));
        }
        Ok(format!("{}#{}", claims.iss, claims.sub))
    }

    /// The code's exchange at the token endpoint, the client authenticated
    /// the way the provider says it takes.
    fn token_request(
        &self,
        discovery: &Discovery,
        secret: Option<&str>,
        code: &str,
        verifier: &str,
        redirect_uri: &str,
    ) -> Result<Request<Full<Bytes>>, UpstreamError> {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("grant_type", "authorization_code")
            .append_pair("code", code)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("code_verifier", verifier);
        let mut request = Request::post(&discovery.token_endpoint).header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        let methods = &discovery.token_endpoint_auth_methods_supported;
        match secret {
            // client_secret_basic is the default (OpenID Connect Discovery 1.0, 3).
            Some(secret) if methods.is_empty() || methods.iter().any(|m| m == "client_secret_basic") => {
                let encode = |text: &str| form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
                let credentials = STANDARD.encode(format!("{}:{}", encode(&self.settings.client_id), encode(secret)));
                request = request.header(header::AUTHORIZATION, format!("Basic {credentials}"));
            }
            Some(secret) => {
                form.append_pair("client_id", &self.settings.client_id).append_pair("client_secret", secret);
            }
            None => {
                form.append_pair("client_id", &self.settings.client_id);
            }
        }
        request.body(Full::from(form.finish())).map_err(|e| UpstreamError::Unavailable(e.to_string()))
    }
}

fn id_claims(token: &str) -> Result<IdClaims, UpstreamError> {
    let payload = token.split('.').nth(1).ok_or_else(|| UpstreamError::Refused("the ID token is not a JWT".into()))?;
    let json =
        URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).map_err(|_| UpstreamError::Refused("the ID token is not a JWT".into()))?;
    serde_json::from_slice(&json).map_err(|_| UpstreamError::Refused("the ID token's claims are incomplete".into()))
}
