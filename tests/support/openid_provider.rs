//! An OpenID provider on a loopback port for the authorization server's
//! Rust tests: discovery, an authorization endpoint that signs in one test
//! user at once (a provider that remembers its user, as Cognito's session
//! cookie does), and a token endpoint that checks the client's secret
//! (`client_secret_basic`), the code (once), the redirect URI and PKCE,
//! then answers an ES256 ID token with the request's nonce. The browser
//! tests use a real provider (`oidc-provider`); this one is what `cargo
//! test` can run with nothing installed.

use std::{
    collections::HashMap,
    convert::Infallible,
    sync::{Arc, Mutex},
};

use aws_lc_rs::digest::{SHA256, digest};
use base64::{
    Engine,
    engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD},
};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use serde_json::json;

use crate::issuer::SigningKey;

pub const CLIENT_ID: &str = "stack-authorization-server";
pub const CLIENT_SECRET: &str = "upstream-test-secret";
pub const SUBJECT: &str = "alice";

struct Pending {
    redirect_uri: String,
    challenge: String,
    nonce: String,
}

pub struct Provider {
    pub issuer: String,
    /// The callback the authorization server registered here.
    pub callback: Arc<Mutex<String>>,
    /// Token requests that were refused, and why.
    pub refusals: Arc<Mutex<Vec<String>>>,
}

pub async fn start() -> Provider {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let provider = Provider { issuer: issuer.clone(), callback: Arc::default(), refusals: Arc::default() };
    let key = Arc::new(SigningKey::new("op-key"));
    let codes: Arc<Mutex<HashMap<String, Pending>>> = Arc::default();
    let (callback, refusals) = (provider.callback.clone(), provider.refusals.clone());
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let (issuer, key, codes, callback, refusals) = (issuer.clone(), key.clone(), codes.clone(), callback.clone(), refusals.clone());
            tokio::spawn(async move {
                let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
                    let (issuer, key, codes, callback, refusals) =
                        (issuer.clone(), key.clone(), codes.clone(), callback.clone(), refusals.clone());
                    async move {
                        let (parts, body) = request.into_parts();
                        let body = body.collect().await.unwrap().to_bytes();
                        Ok::<_, Infallible>(answer(&parts, &body, &issuer, &key, &codes, &callback, &refusals))
                    }
                });
                let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    provider
}

fn reply(status: u16, body: serde_json::Value) -> http::Response<Full<Bytes>> {
    let mut response = http::Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = http::StatusCode::from_u16(status).unwrap();
    response.headers_mut().insert("content-type", "application/json".parse().unwrap());
    response
}

fn form(text: &str) -> HashMap<String, String> {
    url::form_urlencoded::parse(text.as_bytes()).into_owned().collect()
}

fn answer(
    parts: &http::request::Parts,
    body: &[u8],
    issuer: &str,
    key: &SigningKey,
    codes: &Mutex<HashMap<String, Pending>>,
    callback: &Mutex<String>,
    refusals: &Mutex<Vec<String>>,
) -> http::Response<Full<Bytes>> {
    match parts.uri.path() {
        "/.well-known/openid-configuration" => reply(
            200,
            json!({
                "issuer": issuer,
                "authorization_endpoint": format!("{issuer}/authorize"),
                "token_endpoint": format!("{issuer}/token"),
                "jwks_uri": format!("{issuer}/jwks"),
                "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                "code_challenge_methods_supported": ["S256"],
            }),
        ),
        "/authorize" => {
            let query = form(parts.uri.query().unwrap_or_default());
            let registered = callback.lock().unwrap().clone();
            if query.get("client_id").map(String::as_str) != Some(CLIENT_ID)
                || query.get("redirect_uri") != Some(&registered)
                || query.get("code_challenge_method").map(String::as_str) != Some("S256")
            {
                return reply(400, json!({"error": "invalid_request"}));
            }
            let code = URL_SAFE_NO_PAD.encode(mcp_stateless::random::bytes::<16>());
            codes.lock().unwrap().insert(
                code.clone(),
                Pending { redirect_uri: registered.clone(), challenge: query["code_challenge"].clone(), nonce: query["nonce"].clone() },
            );
            let mut location = url::Url::parse(&registered).unwrap();
            location.query_pairs_mut().append_pair("code", &code).append_pair("state", &query["state"]);
            let mut response = http::Response::new(Full::new(Bytes::new()));
            *response.status_mut() = http::StatusCode::FOUND;
            response.headers_mut().insert("location", location.as_str().parse().unwrap());
            response
        }
        "/token" => {
            let refuse = |why: &str| {
                refusals.lock().unwrap().push(why.to_owned());
                reply(400, json!({"error": "invalid_grant"}))
            };
            let expected = format!("Basic {}", STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}")));
            if parts.headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
                return refuse("client authentication");
            }
            let form = form(std::str::from_utf8(body).unwrap());
            let Some(pending) = form.get("code").and_then(|code| codes.lock().unwrap().remove(code)) else {
                return refuse("unknown or used code");
            };
            if form.get("redirect_uri") != Some(&pending.redirect_uri) {
                return refuse("redirect_uri");
            }
            let verifier = form.get("code_verifier").cloned().unwrap_or_default();
            if URL_SAFE_NO_PAD.encode(digest(&SHA256, verifier.as_bytes())) != pending.challenge {
                return refuse("PKCE");
            }
            let now = jsonwebtoken::get_current_timestamp();
            let id_token = key.sign(&json!({
                "iss": issuer, "sub": SUBJECT, "aud": CLIENT_ID, "iat": now, "exp": now + 300, "nonce": pending.nonce,
            }));
            reply(200, json!({"access_token": "upstream-access-token", "token_type": "Bearer", "id_token": id_token, "expires_in": 300}))
        }
        _ => reply(404, json!({})),
    }
}
