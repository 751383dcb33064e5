//! A token issuer on a loopback port, and signing keys made here: what the
//! bearer tests and the bearer bench verify tokens against.

use std::{
    convert::Infallible,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use aws_lc_rs::{
    rand::SystemRandom,
    rsa::KeySize,
    signature::{self, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair, RsaKeyPair},
};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use bytes::Bytes;
use http_body_util::Full;
use hyper::{server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::sync::RwLock;

enum Pair {
    Ec(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

/// A signing key, and what its JWK publishes beside the key itself.
pub struct SigningKey {
    pub kid: String,
    pair: Pair,
    pub published: Value,
}

impl SigningKey {
    /// An ES256 key published for signatures.
    pub fn new(kid: &str) -> Self {
        let pair = Pair::Ec(EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap());
        Self { kid: kid.into(), pair, published: json!({"alg": "ES256", "use": "sig"}) }
    }

    /// An RSA key whose JWK carries `published` (`alg`, `use`, `key_ops`).
    pub fn rsa(kid: &str, published: Value) -> Self {
        Self { kid: kid.into(), pair: Pair::Rsa(RsaKeyPair::generate(KeySize::Rsa2048).unwrap()), published }
    }

    pub fn jwk(&self) -> Value {
        let mut jwk = match &self.pair {
            Pair::Ec(pair) => {
                let point = pair.public_key().as_ref();
                json!({"kty": "EC", "crv": "P-256", "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65])})
            }
            Pair::Rsa(pair) => {
                let public = pair.public_key();
                json!({
                    "kty": "RSA",
                    "n": URL_SAFE_NO_PAD.encode(public.modulus().big_endian_without_leading_zero()),
                    "e": URL_SAFE_NO_PAD.encode(public.exponent().big_endian_without_leading_zero()),
                })
            }
        };
        jwk["kid"] = json!(self.kid);
        jwk.as_object_mut().unwrap().extend(self.published.as_object().unwrap().clone());
        jwk
    }

    /// Signed with the key's usual algorithm (ES256, RS256).
    pub fn sign(&self, claims: &Value) -> String {
        self.sign_as(if matches!(self.pair, Pair::Ec(_)) { "ES256" } else { "RS256" }, claims)
    }

    /// A JWS (RFC 7515, compact) made by hand, so a test can sign with an
    /// algorithm the key was not published for.
    pub fn sign_as(&self, alg: &str, claims: &Value) -> String {
        let header = json!({"alg": alg, "typ": "JWT", "kid": self.kid});
        let input = format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        let rng = SystemRandom::new();
        let signature = match (&self.pair, alg) {
            (Pair::Ec(pair), "ES256") => pair.sign(&rng, input.as_bytes()).unwrap().as_ref().to_vec(),
            (Pair::Rsa(pair), _) => {
                let padding: &'static dyn signature::RsaEncoding = match alg {
                    "RS256" => &signature::RSA_PKCS1_SHA256,
                    "RS384" => &signature::RSA_PKCS1_SHA384,
                    "RS512" => &signature::RSA_PKCS1_SHA512,
                    "PS256" => &signature::RSA_PSS_SHA256,
                    other => panic!("no {other} here"),
                };
                let mut signature = vec![0; pair.public_modulus_len()];
                pair.sign(padding, &rng, input.as_bytes(), &mut signature).unwrap();
                signature
            }
            (Pair::Ec(_), other) => panic!("no {other} with an EC key here"),
        };
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
    }
}

/// An issuer on a loopback port: its OpenID configuration and key set,
/// which tests replace (a rotation). `hold` keeps key requests waiting
/// while a test holds its write lock; `failing` answers them 500;
/// `fetches` counts the key requests that arrived.
pub struct Issuer {
    pub url: String,
    pub jwks_uri: Arc<Mutex<String>>,
    pub keys: Arc<Mutex<Vec<Value>>>,
    pub fetches: Arc<AtomicUsize>,
    pub hold: Arc<RwLock<()>>,
    pub failing: Arc<AtomicBool>,
}

pub async fn issuer() -> Issuer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let issuer = Issuer {
        jwks_uri: Arc::new(Mutex::new(format!("{url}/jwks.json"))),
        url,
        keys: Arc::default(),
        fetches: Arc::default(),
        hold: Arc::default(),
        failing: Arc::default(),
    };
    let served = (
        issuer.url.clone(),
        issuer.jwks_uri.clone(),
        issuer.keys.clone(),
        issuer.fetches.clone(),
        issuer.hold.clone(),
        issuer.failing.clone(),
    );
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let (base, jwks_uri, keys, fetches, hold, failing) = served.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
                    let (base, jwks_uri, keys, fetches, hold, failing) =
                        (base.clone(), jwks_uri.clone(), keys.clone(), fetches.clone(), hold.clone(), failing.clone());
                    async move {
                        let body = match request.uri().path() {
                            // Under any path: a configured issuer with a path
                            // finds this document, which names `base`.
                            path if path.ends_with("/.well-known/openid-configuration") => {
                                json!({"issuer": base, "jwks_uri": *jwks_uri.lock().unwrap()})
                            }
                            _ => {
                                fetches.fetch_add(1, Ordering::SeqCst);
                                let _held = hold.read().await;
                                if failing.load(Ordering::SeqCst) {
                                    let mut response = http::Response::new(Full::new(Bytes::from_static(b"{}")));
                                    *response.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
                                    return Ok::<_, Infallible>(response);
                                }
                                json!({"keys": *keys.lock().unwrap()})
                            }
                        };
                        Ok(http::Response::new(Full::new(Bytes::from(body.to_string()))))
                    }
                });
                let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    issuer
}

impl Issuer {
    /// Waits until `count` key requests have arrived (the bound only ends
    /// a test that would otherwise hang).
    pub async fn wait_for_fetches(&self, count: usize) {
        for _ in 0..6_000 {
            if self.fetches.load(Ordering::SeqCst) >= count {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the issuer saw {} key requests, not {count}", self.fetches.load(Ordering::SeqCst));
    }
}

pub const AUDIENCE: &str = "mcp-e2e";

pub fn claims(issuer: &str, subject: &str, scope: &str) -> Value {
    let now = jsonwebtoken::get_current_timestamp();
    json!({"iss": issuer, "sub": subject, "aud": AUDIENCE, "scope": scope, "iat": now, "exp": now + 600})
}
