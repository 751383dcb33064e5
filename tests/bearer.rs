//! Bearer tokens verified by the function (`AuthMode=jwt` behind a REST
//! API): against an issuer served here, with keys made here, over HTTP as
//! a client and the issuer would talk.

use std::{net::SocketAddr, sync::Arc, sync::atomic::Ordering, time::Duration};

use e2e::{
    fixture_server::FixtureServer,
    issuer::{AUDIENCE, Issuer, SigningKey, claims, issuer},
    *,
};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcp_stateless::{
    Dependencies, McpEndpoint, Mode,
    clock::{Clock, ManualClock, SystemClock},
    edge::{
        bearer::{BearerPolicy, BearerVerifier, issuer_keys::KeyTimings},
        protected_resource::ResourceMetadata,
    },
};
use serde_json::{Value, json};

fn policy(issuer: &Issuer) -> BearerPolicy {
    BearerPolicy::new(issuer.url.clone(), vec![AUDIENCE.into()]).with_scopes(vec!["mcp".into()])
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
    serve(issuer, BearerVerifier::new(policy(issuer)).unwrap()).await
}

/// A fetch bound that no loaded machine reaches.
fn patient() -> KeyTimings {
    let mut timings = KeyTimings::default();
    timings.fetch_timeout = Duration::from_secs(60);
    timings
}

/// An issuer publishing `keys`, and a server trusting it whose key set
/// ages by the clock returned (which the test moves).
async fn serving_on_clock(timings: KeyTimings, keys: &[&SigningKey]) -> (Issuer, ManualClock, SocketAddr) {
    let clock = ManualClock::at(SystemClock.now());
    let issuer = issuer().await;
    issuer.keys.lock().unwrap().extend(keys.iter().map(|key| key.jwk()));
    let addr = serve(&issuer, BearerVerifier::with_keys(policy(&issuer), timings, Arc::new(clock.clone())).unwrap()).await;
    (issuer, clock, addr)
}

async fn serve(issuer: &Issuer, verifier: BearerVerifier) -> SocketAddr {
    let metadata = ResourceMetadata::new(vec![issuer.url.clone()], vec!["mcp".into()]).with_base_path("/api");
    let endpoint: McpEndpoint<FixtureServer> =
        fixture_endpoint(Dependencies::in_process(), Mode::Local).with_resource_metadata(metadata).with_bearer(verifier);
    spawn(endpoint).await
}

async fn whoami(addr: SocketAddr, token: Option<&str>) -> Reply {
    whoami_with(addr, token.iter().map(|token| format!("Bearer {token}"))).await
}

/// `whoami` with these `Authorization` header values, in order.
async fn whoami_with(addr: SocketAddr, authorization: impl IntoIterator<Item = String>) -> Reply {
    let body = request(1, "tools/call", json!({"name": "whoami", "arguments": {}}), json!({}));
    post_with(addr, &body, |headers| {
        // The development header is no identity once tokens are checked.
        set_header(headers, "x-mcp-dev-principal", "mallory");
        headers.extend(authorization.into_iter().map(|value| ("authorization".to_owned(), value)));
    })
    .await
}

async fn whoami_status(addr: SocketAddr, token: String) -> u16 {
    whoami(addr, Some(&token)).await.status
}

/// `whoami`'s status until it is `status` (the bound only ends a test that
/// would otherwise hang).
async fn eventually(addr: SocketAddr, token: &str, status: u16) {
    for _ in 0..6_000 {
        if whoami(addr, Some(token)).await.status == status {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("never {status}");
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
    assert_eq!(challenge(&missing), format!("Bearer scope=\"mcp\", {metadata}"), "clients find the metadata and the scopes from the 401");

    let now = jsonwebtoken::get_current_timestamp();
    let mut expired = claims(&issuer.url, "user-9", "mcp");
    expired["exp"] = json!(now - 3600);
    let mut other_audience = claims(&issuer.url, "user-9", "mcp");
    other_audience["aud"] = json!("someone-else");
    let forged = SigningKey::new("k1");
    let hs256 = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &claims(&issuer.url, "user-9", "mcp"),
        &EncodingKey::from_secret(b"shared").unwrap(),
    )
    .unwrap();
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
        assert_eq!(challenge(&reply), format!("Bearer error=\"invalid_token\", scope=\"mcp\", {metadata}"), "{why}");
    }

    let unscoped = whoami(addr, Some(&key.sign(&claims(&issuer.url, "user-9", "openid")))).await;
    assert_eq!(unscoped.status, 403);
    assert_eq!(challenge(&unscoped), format!("Bearer error=\"insufficient_scope\", scope=\"mcp\", {metadata}"));

    // The metadata itself needs no token; the MCP endpoint does, whatever the method.
    let document = send_to(addr, "GET", "/.well-known/oauth-protected-resource/mcp", &[], Vec::new()).await;
    assert_eq!(document.status, 200);
    assert_eq!(document.json()["resource"], format!("http://{addr}/api/mcp"));
    assert_eq!(send(addr, "GET", &[], Vec::new()).await.status, 401);
    // Typed with a trailing slash, the endpoint is its own resource (RFC
    // 9728, 3.3), as clients that compare it with the URL typed need.
    let slashed = send_to(addr, "POST", "/mcp/", &[], Vec::new()).await;
    assert_eq!(slashed.status, 401);
    assert!(challenge(&slashed).ends_with("/api/.well-known/oauth-protected-resource/mcp/\""), "{}", challenge(&slashed));
    let document = send_to(addr, "GET", "/.well-known/oauth-protected-resource/mcp/", &[], Vec::new()).await;
    assert_eq!(document.json()["resource"], format!("http://{addr}/api/mcp/"));
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

/// 1. Plain http is for loopback hosts only, decided on the parsed URL:
/// userinfo that makes a remote host look like `127.0.0.1` is refused,
/// in `MCP_JWT_JWKS_URL` at start and in the discovery document's
/// `jwks_uri` (the forms a reviewer tries are unit tests of `key_url`).
#[tokio::test]
async fn a_key_url_that_only_looks_like_loopback_is_refused_at_start_and_in_discovery() {
    let (issuer, key, _) = serving_with_key("k1").await;
    // `localhost` stands for a remote host: before, the text's prefix
    // `http://127.0.0.1` passed and the keys came from whatever followed
    // the '@'.
    let port = issuer.url.rsplit(':').next().unwrap().to_owned();
    let disguised = format!("http://127.0.0.1:1@localhost:{port}/jwks.json");

    let configured = {
        let mut value = policy(&issuer);
        value.jwks_url = Some(disguised.clone());
        value
    };
    let refused = BearerVerifier::new(configured).err().expect("a disguised MCP_JWT_JWKS_URL stops the start");
    assert!(refused.starts_with("MCP_JWT_JWKS_URL") && refused.contains("user name or password"), "{refused}");
    let issuer_refused = BearerVerifier::new({
        let mut value = policy(&issuer);
        value.issuer = format!("http://127.0.0.1:1@localhost:{port}");
        value
    })
    .err();
    assert!(issuer_refused.is_some_and(|why| why.starts_with("MCP_JWT_ISSUER")));

    // Nor from a document that is another issuer's (OpenID Connect
    // Discovery 1.0, 4.3).
    let other = {
        let mut value = policy(&issuer);
        value.issuer = format!("{}/tenant", issuer.url);
        value
    };
    let addr = serve(&issuer, BearerVerifier::new(other).unwrap()).await;
    let reply = whoami(addr, Some(&key.sign(&claims(&format!("{}/tenant", issuer.url), "user-9", "mcp")))).await;
    assert_eq!(reply.status, 503, "the configuration names another issuer");

    *issuer.jwks_uri.lock().unwrap() = disguised;
    let addr = server(&issuer).await;
    let reply = whoami(addr, Some(&key.sign(&claims(&issuer.url, "user-9", "mcp")))).await;
    assert_eq!(reply.status, 503, "no keys are fetched from a disguised jwks_uri");
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 0, "the disguised host was never asked");
}

/// 2. A refetch for an unknown key id never holds up a request whose key
/// is cached, and a rotation's new key arrives with the fetch in flight.
#[tokio::test]
async fn a_slow_key_fetch_holds_up_no_request_whose_key_is_cached() {
    let old = SigningKey::new("old");
    let (issuer, clock, addr) = serving_on_clock(patient(), &[&old]).await;
    let old_token = old.sign(&claims(&issuer.url, "a", "mcp"));
    assert_eq!(whoami(addr, Some(&old_token)).await.status, 200);

    let rotated = SigningKey::new("rotated");
    issuer.keys.lock().unwrap().push(rotated.jwk());
    clock.advance(61);
    // The issuer now answers key requests only when the test lets it.
    let held = issuer.hold.write().await;
    let rotated_token = rotated.sign(&claims(&issuer.url, "b", "mcp"));
    let first = tokio::spawn(whoami_status(addr, rotated_token.clone()));
    issuer.wait_for_fetches(2).await;
    // More requests under the new key wait for the fetch in flight rather
    // than start one or give up (were one late, the key is there for it).
    let more: Vec<_> = (0..3).map(|_| tokio::spawn(whoami_status(addr, rotated_token.clone()))).collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Before, this waited behind the fetch's lock until the fetch gave up,
    // and the rotated key's request then failed with it.
    for _ in 0..3 {
        assert_eq!(whoami(addr, Some(&old_token)).await.status, 200, "a cached key is served while the fetch is in flight");
    }
    drop(held);
    assert_eq!(first.await.unwrap(), 200, "the rotated key came with the fetch (had the cached requests waited, it would have timed out)");
    for waiting in more {
        assert_eq!(waiting.await.unwrap(), 200, "a request that waited for the fetch in flight");
    }
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 2, "one fetch for them all");
}

/// 3. Scopes are read from `scope` and `scp`, as a string or a list, as
/// API Gateway's JWT authorizer reads them.
#[tokio::test]
async fn scopes_count_from_scope_or_scp_as_a_string_or_a_list() {
    let (issuer, key, addr) = serving_with_key("k1").await;
    let with = |scopes: Value| {
        let mut claims = claims(&issuer.url, "user-9", "");
        claims.as_object_mut().unwrap().remove("scope");
        claims.as_object_mut().unwrap().extend(scopes.as_object().unwrap().clone());
        key.sign(&claims)
    };
    for granted in [
        json!({"scp": "mcp"}),
        json!({"scp": "openid mcp"}),
        json!({"scp": ["openid", "mcp"]}),
        json!({"scope": ["mcp"]}),
        json!({"scope": "openid", "scp": ["mcp"]}),
    ] {
        assert_eq!(whoami(addr, Some(&with(granted.clone()))).await.status, 200, "{granted}");
    }
    for lacking in [json!({"scp": ["openid"]}), json!({"scp": "mcp:read"}), json!({"scp": ["openid mcp"]}), json!({"scp": []}), json!({})] {
        assert_eq!(whoami(addr, Some(&with(lacking.clone()))).await.status, 403, "{lacking}");
    }
    assert_eq!(whoami(addr, Some(&with(json!({"scp": ["mcp", 7]})))).await.status, 200, "the strings of a mixed list count");
    assert_eq!(
        whoami(addr, Some(&with(json!({"scp": 7, "scope": {"mcp": true}})))).await.status,
        403,
        "a claim that is no string nor list grants nothing"
    );
}

/// 4. A key verifies only the algorithm its JWK names, and nothing if it
/// is published for encryption (RFC 8725, 3.1).
#[tokio::test]
async fn a_key_verifies_only_what_the_issuer_published_it_for() {
    let issuer = issuer().await;
    let rs256 = SigningKey::rsa("rs256", json!({"alg": "RS256", "use": "sig"}));
    let unnamed = SigningKey::rsa("unnamed", json!({}));
    let encryption = SigningKey::rsa("enc", json!({"alg": "RSA-OAEP", "use": "enc"}));
    let encryption_use = SigningKey::rsa("enc-use", json!({"use": "enc"}));
    let encrypt_ops = SigningKey::rsa("encrypt-ops", json!({"key_ops": ["encrypt"]}));
    let verify_ops = SigningKey::rsa("verify-ops", json!({"alg": "PS256", "key_ops": ["verify"]}));
    // One kid for an encryption key and, after it, a signing key (RFC 7517,
    // 4.5, allows it): the one that verifies is taken.
    let (shared_enc, shared_sig) = (SigningKey::rsa("shared", json!({"alg": "RSA-OAEP", "use": "enc"})), SigningKey::new("shared"));
    for key in [&rs256, &unnamed, &encryption, &encryption_use, &encrypt_ops, &verify_ops, &shared_enc, &shared_sig] {
        issuer.keys.lock().unwrap().push(key.jwk());
    }
    let addr = server(&issuer).await;
    let claims = claims(&issuer.url, "user-9", "mcp");

    assert_eq!(whoami(addr, Some(&rs256.sign_as("RS256", &claims))).await.status, 200);
    for alg in ["RS384", "RS512", "PS256"] {
        assert_eq!(whoami(addr, Some(&rs256.sign_as(alg, &claims))).await.status, 401, "{alg} with a key published for RS256");
        assert_eq!(whoami(addr, Some(&unnamed.sign_as(alg, &claims))).await.status, 200, "{alg} with a key that names no alg");
    }
    for key in [&encryption, &encryption_use, &encrypt_ops] {
        assert_eq!(whoami(addr, Some(&key.sign_as("RS256", &claims))).await.status, 401, "{}", key.published);
    }
    assert_eq!(whoami(addr, Some(&verify_ops.sign_as("PS256", &claims))).await.status, 200);
    assert_eq!(whoami(addr, Some(&shared_sig.sign(&claims))).await.status, 200, "the signing key of a shared kid");
    assert_eq!(whoami(addr, Some(&shared_enc.sign_as("RS256", &claims))).await.status, 401, "the encryption key of a shared kid");
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1, "a published key that may not verify is no reason to fetch again");
}

/// 5. One `Authorization` header, its scheme in any case (RFC 9110, 11.1).
#[tokio::test]
async fn one_authorization_header_whose_scheme_is_read_in_any_case() {
    let (issuer, key, addr) = serving_with_key("k1").await;
    let token = key.sign(&claims(&issuer.url, "user-9", "mcp"));
    for scheme in ["Bearer", "bearer", "BEARER", "BeArEr"] {
        assert_eq!(whoami_with(addr, [format!("{scheme} {token}")]).await.status, 200, "{scheme}");
    }
    let twice = whoami_with(addr, [format!("Bearer {token}"), "Bearer forged".to_owned()]).await;
    assert_eq!(twice.status, 400, "two Authorization headers");
    assert!(challenge(&twice).starts_with("Bearer error=\"invalid_request\", resource_metadata="), "{}", challenge(&twice));
    assert_eq!(whoami_with(addr, [format!("Bearer {token}"), format!("Bearer {token}")]).await.status, 400, "even the same token twice");
    for other in [format!("Basic {token}"), format!("Bearer{token}"), "Bearer".to_owned()] {
        let reply = whoami_with(addr, [other.clone()]).await;
        assert_eq!((reply.status, challenge(&reply).contains("error=")), (401, false), "{other}: no bearer token");
    }
}

/// 6a. A token issued in the future, beyond the leeway, is refused.
#[tokio::test]
async fn a_token_issued_in_the_future_is_refused() {
    let (issuer, key, addr) = serving_with_key("k1").await;
    let now = jsonwebtoken::get_current_timestamp();
    for (iat, status) in [
        (json!(now + 3600), 401),
        (json!(now + 120), 401),
        (json!(now + 30), 200),
        (json!(now as f64 - 0.5), 200),
        (json!("yesterday"), 401),
    ] {
        let mut claims = claims(&issuer.url, "user-9", "mcp");
        claims["iat"] = iat.clone();
        assert_eq!(whoami(addr, Some(&key.sign(&claims))).await.status, status, "iat {iat}");
    }
}

/// 6b. The key set has a maximum age: refreshed in the background once
/// it is ten minutes old (requests go on with it meanwhile), so a key the
/// issuer withdraws stops working; served while refreshes fail for up to
/// an hour after its fetch, then refused with 503 until the issuer answers.
#[tokio::test]
async fn the_key_set_is_refreshed_in_the_background_and_not_trusted_past_its_age() {
    let (withdrawn, kept) = (SigningKey::new("withdrawn"), SigningKey::new("kept"));
    let (issuer, clock, addr) = serving_on_clock(patient(), &[&withdrawn, &kept]).await;
    let (withdrawn_token, kept_token) = (withdrawn.sign(&claims(&issuer.url, "a", "mcp")), kept.sign(&claims(&issuer.url, "b", "mcp")));
    assert_eq!(whoami(addr, Some(&withdrawn_token)).await.status, 200);

    // The issuer withdraws a key; nothing changes until the set is old.
    *issuer.keys.lock().unwrap() = vec![kept.jwk()];
    clock.advance(599);
    assert_eq!(whoami(addr, Some(&withdrawn_token)).await.status, 200);
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 1);

    // Old enough: the next request is answered from the set it has, and
    // starts a refresh that it does not wait for.
    clock.advance(2);
    let held = issuer.hold.write().await;
    assert_eq!(whoami(addr, Some(&withdrawn_token)).await.status, 200);
    issuer.wait_for_fetches(2).await;
    assert_eq!(whoami(addr, Some(&kept_token)).await.status, 200, "served while the refresh is in flight");
    drop(held);
    eventually(addr, &withdrawn_token, 401).await;
    assert_eq!(whoami(addr, Some(&kept_token)).await.status, 200);
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 2);

    // The issuer answers with no keys, then fails: the set in hand is
    // still served ...
    let stranger = SigningKey::new("stranger").sign(&claims(&issuer.url, "c", "mcp"));
    for (fetches, outage) in [(3, "an empty key set"), (4, "a failed refresh")] {
        if fetches == 3 {
            issuer.keys.lock().unwrap().clear();
        } else {
            issuer.failing.store(true, Ordering::SeqCst);
        }
        clock.advance(601);
        assert_eq!(whoami(addr, Some(&kept_token)).await.status, 200);
        issuer.wait_for_fetches(fetches).await;
        // A token under an unknown key waits for the fetch in flight, and
        // fetches nothing itself (within the floor).
        assert_eq!(whoami(addr, Some(&stranger)).await.status, 401);
        assert_eq!(whoami(addr, Some(&kept_token)).await.status, 200, "{outage} keeps the set");
    }
    assert_eq!(issuer.fetches.load(Ordering::SeqCst), 4);
    // ... until an hour after the last fetch that worked.
    *issuer.keys.lock().unwrap() = vec![kept.jwk()];
    clock.advance(2400);
    assert_eq!(whoami(addr, Some(&kept_token)).await.status, 503, "a set past its age is not trusted");
    issuer.failing.store(false, Ordering::SeqCst);
    assert_eq!(whoami(addr, Some(&kept_token)).await.status, 503, "within a minute of the last try the issuer is not asked");
    clock.advance(61);
    assert_eq!(whoami(addr, Some(&kept_token)).await.status, 200, "the issuer answers again");
}

/// 6c. On Lambda an instance is frozen between requests, and a background
/// refresh can be cut off by it: one whose time ran out across a freeze
/// (by the wall clock, far past its bound) does not hold the next fetch
/// back by the floor, since it says nothing of the issuer.
#[tokio::test]
async fn a_refresh_cut_off_by_a_freeze_does_not_count_against_the_floor() {
    let key = SigningKey::new("k1");
    // The default bound: this test waits it out once.
    let (issuer, clock, addr) = serving_on_clock(KeyTimings::default(), &[&key]).await;
    let token = key.sign(&claims(&issuer.url, "a", "mcp"));
    assert_eq!(whoami(addr, Some(&token)).await.status, 200);

    let held = issuer.hold.write().await;
    clock.advance(601);
    assert_eq!(whoami(addr, Some(&token)).await.status, 200);
    issuer.wait_for_fetches(2).await;
    // The instance "sleeps" while the refresh is in flight: half a minute,
    // far past the fetch's bound and within the floor.
    clock.advance(30);
    // This waits for the refresh to time out, then fetches again itself.
    let stranger = SigningKey::new("stranger");
    issuer.keys.lock().unwrap().push(stranger.jwk());
    let waiting = tokio::spawn(whoami_status(addr, stranger.sign(&claims(&issuer.url, "b", "mcp"))));
    issuer.wait_for_fetches(3).await;
    drop(held);
    assert_eq!(waiting.await.unwrap(), 200, "the fetch after the freeze brought the new key");
}
