//! Bearer tokens verified by the function (`AuthMode=jwt` behind a REST
//! API): against an issuer served here, with keys made here, over HTTP as
//! a client and the issuer would talk.

use std::{
    convert::Infallible,
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
};

use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use bytes::Bytes;
use e2e::{fixture_server::FixtureServer, *};
use http_body_util::Full;
use hyper::{server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_stateless::{
    Dependencies, McpEndpoint, Mode,
    edge::{
        bearer::{BearerPolicy, BearerVerifier},
        protected_resource::ResourceMetadata,
    },
};
use serde_json::{Value, json};

struct SigningKey {
    kid: String,
    pair: EcdsaKeyPair,
}

impl SigningKey {
    fn new(kid: &str) -> Self {
        Self { kid: kid.into(), pair: EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap() }
    }

    fn jwk(&self) -> Value {
        let point = self.pair.public_key().as_ref();
        json!({
            "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": self.kid,
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        })
    }

    fn sign(&self, claims: &Value) -> String {
        let der = self.pair.to_pkcs8v1().unwrap();
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &EncodingKey::from_ec_der(der.as_ref())).unwrap()
    }
}

/// An issuer on a loopback port: its OpenID configuration and key set,
/// which tests replace (a rotation), and how often the keys were fetched.
struct Issuer {
    url: String,
    keys: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<AtomicUsize>,
}

async fn issuer() -> Issuer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let keys: Arc<Mutex<Vec<Value>>> = Arc::default();
    let fetches = Arc::new(AtomicUsize::new(0));
    let (served_keys, counted, base) = (keys.clone(), fetches.clone(), url.clone());
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let (keys, fetches, base) = (served_keys.clone(), counted.clone(), base.clone());
            tokio::spawn(async move {
                let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
                    let body = match request.uri().path() {
                        "/.well-known/openid-configuration" => json!({"issuer": base, "jwks_uri": format!("{base}/jwks.json")}),
                        _ => {
                            fetches.fetch_add(1, Ordering::SeqCst);
                            json!({"keys": *keys.lock().unwrap()})
                        }
                    };
                    async move { Ok::<_, Infallible>(http::Response::new(Full::new(Bytes::from(body.to_string())))) }
                });
                let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    Issuer { url, keys, fetches }
}

const AUDIENCE: &str = "mcp-e2e";

fn claims(issuer: &str, subject: &str, scope: &str) -> Value {
    let now = jsonwebtoken::get_current_timestamp();
    json!({"iss": issuer, "sub": subject, "aud": AUDIENCE, "scope": scope, "iat": now, "exp": now + 600})
}

/// An issuer publishing one key, `kid`, and a server trusting it.
async fn serving_with_key(kid: &str) -> (Issuer, SigningKey, SocketAddr) {
    let issuer = issuer().await;
    let key = SigningKey::new(kid);
    issuer.keys.lock().unwrap().push(key.jwk());
    let addr = server(&issuer).await;
    (issuer, key, addr)
}

async fn server(issuer: &Issuer) -> SocketAddr {
    let policy = BearerPolicy { issuer: issuer.url.clone(), audiences: vec![AUDIENCE.into()], scopes: vec!["mcp".into()], jwks_url: None };
    let metadata = ResourceMetadata {
        authorization_servers: vec![issuer.url.clone()],
        scopes_supported: vec!["mcp".into()],
        resource: None,
        base_path: "/api".into(),
    };
    let endpoint: McpEndpoint<FixtureServer> = fixture_endpoint(Dependencies::in_process(), Mode::Local)
        .with_resource_metadata(metadata)
        .with_bearer(BearerVerifier::new(policy).unwrap());
    spawn(endpoint).await
}

async fn whoami(addr: SocketAddr, token: Option<&str>) -> Reply {
    let body = request(1, "tools/call", json!({"name": "whoami", "arguments": {}}), json!({}));
    post_with(addr, &body, |headers| {
        // The development header is no identity once tokens are checked.
        set_header(headers, "x-mcp-dev-principal", "mallory");
        if let Some(token) = token {
            set_header(headers, "authorization", &format!("Bearer {token}"));
        }
    })
    .await
}

fn challenge(reply: &Reply) -> String {
    reply.headers.get(http::header::WWW_AUTHENTICATE).map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default()
}

#[tokio::test]
async fn a_valid_token_names_the_caller_and_anything_else_is_refused_with_a_challenge() {
    let (issuer, key, addr) = serving_with_key("k1").await;
    let metadata = format!("resource_metadata=\"http://{addr}/api/.well-known/oauth-protected-resource/mcp\"");

    let reply = whoami(addr, Some(&key.sign(&claims(&issuer.url, "user-9", "openid mcp")))).await;
    assert_eq!(reply.status, 200);
    let expected = json!({"Verified": {"issuer": issuer.url, "subject": "user-9"}}).to_string();
    assert_eq!(reply.message()["result"]["content"][0]["text"], expected);

    let missing = whoami(addr, None).await;
    assert_eq!(missing.status, 401);
    assert_eq!(challenge(&missing), format!("Bearer {metadata}"), "clients find the metadata from the 401");

    let now = jsonwebtoken::get_current_timestamp();
    let mut expired = claims(&issuer.url, "user-9", "mcp");
    expired["exp"] = json!(now - 3600);
    let mut other_audience = claims(&issuer.url, "user-9", "mcp");
    other_audience["aud"] = json!("someone-else");
    let forged = SigningKey { kid: "k1".into(), pair: EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap() };
    let hs256 = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims(&issuer.url, "user-9", "mcp"), &EncodingKey::from_secret(b"shared").unwrap()).unwrap();
    for (why, token) in [
        ("expired", key.sign(&expired)),
        ("another audience", key.sign(&other_audience)),
        ("another issuer", key.sign(&claims("https://evil.example.com", "user-9", "mcp"))),
        ("signed by another key under the same kid", forged.sign(&claims(&issuer.url, "user-9", "mcp"))),
        ("a shared-secret algorithm", hs256),
        ("not a token", "not.a.token".into()),
    ] {
        let reply = whoami(addr, Some(&token)).await;
        assert_eq!(reply.status, 401, "{why}");
        assert_eq!(challenge(&reply), format!("Bearer error=\"invalid_token\", {metadata}"), "{why}");
    }

    let unscoped = whoami(addr, Some(&key.sign(&claims(&issuer.url, "user-9", "openid")))).await;
    assert_eq!(unscoped.status, 403);
    assert_eq!(challenge(&unscoped), format!("Bearer error=\"insufficient_scope\", scope=\"mcp\", {metadata}"));

    // The metadata itself needs no token; the MCP endpoint does, whatever the method.
    let document = send_to(addr, "GET", "/.well-known/oauth-protected-resource/mcp", &[], Vec::new()).await;
    assert_eq!(document.status, 200);
    assert_eq!(document.json()["resource"], format!("http://{addr}/api/mcp"));
    assert_eq!(send(addr, "GET", &[], Vec::new()).await.status, 401);
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1, "the keys were fetched once for all of these");
}

#[tokio::test]
async fn unknown_key_ids_reach_the_issuer_at_most_once_a_minute() {
    let (issuer, old, addr) = serving_with_key("old").await;
    assert_eq!(whoami(addr, Some(&old.sign(&claims(&issuer.url, "a", "mcp")))).await.status, 200);
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1);

    // Tokens under key ids the function has not seen would each make it
    // fetch the keys again; within a minute of the last fetch they are
    // refused without asking (a real rotation is picked up by the first
    // such token after that minute).
    for kid in ["forged-1", "forged-2", "forged-3"] {
        let forged = SigningKey::new(kid);
        issuer.keys.lock().unwrap().push(forged.jwk());
        assert_eq!(whoami(addr, Some(&forged.sign(&claims(&issuer.url, "a", "mcp")))).await.status, 401);
    }
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1, "no fetch within a minute of the last");
    assert_eq!(whoami(addr, Some(&old.sign(&claims(&issuer.url, "a", "mcp")))).await.status, 200, "known keys still work");
}
