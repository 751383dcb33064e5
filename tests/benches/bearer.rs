//! What verifying bearer tokens in the function costs a warm instance: a
//! `tools/call` through the edge with an ES256 or an RS256 (2048-bit) token,
//! side by side with the same call and no verifier, and the key fetches
//! that 10,000 verified requests cost. Run through `bash infra/bench.sh`.
//! Reports medians and ratios, not pass/fail: these machines are shared
//! and noisy.

use std::{sync::atomic::Ordering, time::Instant};

use bytes::Bytes;
use e2e::{
    issuer::{AUDIENCE, SigningKey, claims, issuer},
    *,
};
use mcp_stateless::{
    Dependencies, McpEndpoint, Mode,
    edge::bearer::{BearerPolicy, BearerVerifier},
};
use serde_json::json;

const REQUESTS: usize = 10_000;

/// Median nanoseconds of one `whoami` call through `endpoint.handle`.
async fn median_ns<S: rmcp::ServerHandler + Clone>(endpoint: &McpEndpoint<S>, authorization: Option<&str>) -> f64 {
    let body = request(1, "tools/call", json!({"name": "whoami", "arguments": {}}), json!({}));
    let mut samples = Vec::with_capacity(REQUESTS);
    for _ in 0..REQUESTS {
        let mut builder = http::Request::post("/mcp").header("host", "127.0.0.1").header("x-mcp-dev-principal", "bench");
        for (name, value) in standard_headers(&body) {
            builder = builder.header(name, value);
        }
        if let Some(value) = authorization {
            builder = builder.header("authorization", value);
        }
        let http_request = builder.body(Bytes::from(body.to_string())).unwrap();
        let start = Instant::now();
        let response = endpoint.handle(http_request).await;
        samples.push(start.elapsed().as_nanos() as f64);
        assert_eq!(response.status(), 200);
    }
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

#[tokio::main]
async fn main() {
    let issuer = issuer().await;
    let (es256, rs256) = (SigningKey::new("es256"), SigningKey::rsa("rs256", json!({"alg": "RS256", "use": "sig"})));
    issuer.keys.lock().unwrap().extend([es256.jwk(), rs256.jwk()]);
    let policy = BearerPolicy::new(issuer.url.clone(), vec![AUDIENCE.into()]).with_scopes(vec!["mcp".into()]);
    let verified = fixture_endpoint(Dependencies::in_process(), Mode::Local).with_bearer(BearerVerifier::new(policy).unwrap());
    let plain = fixture_endpoint(Dependencies::in_process(), Mode::Local);
    let es256_header = format!("Bearer {}", es256.sign(&claims(&issuer.url, "bench", "mcp")));
    let rs256_header = format!("Bearer {}", rs256.sign(&claims(&issuer.url, "bench", "mcp")));

    // Warmed alike: the verifier's first request fetches the keys.
    let _ = median_ns(&plain, None).await;
    let _ = median_ns(&verified, Some(&es256_header)).await;
    let plain_ns = median_ns(&plain, None).await;
    let es256_ns = median_ns(&verified, Some(&es256_header)).await;
    let rs256_ns = median_ns(&verified, Some(&rs256_header)).await;
    let fetches = issuer.fetches.load(Ordering::SeqCst);
    assert_eq!(fetches, 1, "one key fetch for all of them");

    println!("bearer bench: {REQUESTS} tools/call requests through the edge, warm, medians");
    println!("  no verifier:          {:.1} us per request", plain_ns / 1000.0);
    println!("  ES256 token verified: {:.1} us per request (ratio {:.2})", es256_ns / 1000.0, es256_ns / plain_ns);
    println!("  RS256 token verified: {:.1} us per request (ratio {:.2})", rs256_ns / 1000.0, rs256_ns / plain_ns);
    println!("  key set fetches for {} verified requests: {fetches}", 3 * REQUESTS);
}
