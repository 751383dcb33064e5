//! The authorization server driven over HTTP as a client and a browser
//! would: registration, the consent page, the upstream sign-in (a provider
//! on loopback, `support/openid_provider.rs`), the code exchange and
//! refresh, and each rule that keeps a token from the wrong hands. Its
//! tokens are then verified by the MCP function's own verifier. One flow
//! runs on the emulator (KMS sealing and signing, DynamoDB grants, the
//! upstream client secret sealed under a KMS key, as
//! `infra/seal-upstream-secret.sh` seals it).

use std::{collections::HashMap, net::SocketAddr, sync::Arc};

use authorization::{
    AuthorizationServer, OAuthSettings, Parts,
    aws::{
        DynamoDocuments, DynamoGrants, KmsSigner, SealedSecret, SealedSecretError,
        sealed_secret::{UPSTREAM_SECRET_PURPOSE, encryption_context},
    },
    clients::{
        Clients,
        last_good::{InMemoryCopies, LastGoodCopies},
        metadata_document::MetadataDocuments,
        metadata_fetch::GuardedFetcher,
    },
    grants::{GrantStore, InMemoryGrants},
    sealing::{MAX_SEALED_BYTES, Seals},
    signing::{InProcessSigner, TokenSigner},
    upstream::{SecretSource, Upstream},
};
use aws_lc_rs::digest::{SHA256, digest};
use base64::{
    Engine,
    engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD},
};
use e2e::{
    Reply,
    document_host::{Answer, DocumentHost},
    emulator,
    issuer::SigningKey,
    openid_provider, send_to,
};
use mcp_stateless::{
    Mode,
    clock::{Clock, ManualClock, SystemClock},
    edge::bearer::{BearerPolicy, BearerVerifier, Refusal},
    sealed::{
        redemption::{InMemoryLedger, RedemptionLedger},
        request_state::{EnvelopeSealer, InProcessKey, RequestStateSealer},
    },
    settings::Variables,
};
use serde_json::{Value, json};

const LOOPBACK_REDIRECT: &str = "http://127.0.0.1:8765/callback";
/// The deployment the tests' records and secrets are bound to (a stack's
/// name on AWS).
const AUDIENCE: &str = "e2e-authorization";

struct Stack {
    /// Where clients reach it (the MCP server's address, when in front).
    addr: SocketAddr,
    /// Where the authorization server itself listens.
    authorization: SocketAddr,
    issuer: String,
    provider: openid_provider::Provider,
}

struct Backends {
    /// Where the upstream client secret comes from; `None`: the environment.
    upstream_secret: Option<Arc<dyn SecretSource>>,
    sealer: Arc<dyn RequestStateSealer>,
    grants: Arc<dyn GrantStore>,
    ledger: Arc<dyn RedemptionLedger>,
    signer: Arc<dyn TokenSigner>,
    clock: Arc<dyn Clock>,
    /// Client metadata documents' last good copies.
    copies: Arc<dyn LastGoodCopies>,
}

fn in_memory() -> Backends {
    Backends {
        clock: Arc::new(SystemClock),
        upstream_secret: None,
        sealer: Arc::new(EnvelopeSealer::new(InProcessKey::generate()).with_max_token_bytes(MAX_SEALED_BYTES)),
        grants: Arc::new(InMemoryGrants::default()),
        ledger: Arc::new(InMemoryLedger::default()),
        signer: Arc::new(InProcessSigner::generate()),
        copies: Arc::new(InMemoryCopies::default()),
    }
}

/// KMS and DynamoDB on the emulator: a fresh table, sealing key and
/// ECC_NIST_P256 signing key made through `direct`, called through `through`
/// (a meter in front of the emulator, or the emulator itself).
async fn on_aws(direct: &aws_config::SdkConfig, through: &aws_config::SdkConfig) -> Backends {
    let table = emulator::fresh_table(direct).await;
    let signing = aws_sdk_kms::Client::new(direct)
        .create_key()
        .key_spec(aws_sdk_kms::types::KeySpec::EccNistP256)
        .key_usage(aws_sdk_kms::types::KeyUsageType::SignVerify)
        .send()
        .await
        .unwrap()
        .key_metadata
        .unwrap()
        .key_id;
    let sealing = emulator::fresh_key(direct).await;
    let (kms, dynamo) = (aws_sdk_kms::Client::new(through), aws_sdk_dynamodb::Client::new(through));
    let keys = mcp_aws::KmsDataKeys::new(kms.clone(), &sealing, AUDIENCE, mcp_aws::KeyWindow::default());
    Backends {
        clock: Arc::new(SystemClock),
        upstream_secret: None,
        sealer: Arc::new(EnvelopeSealer::new(keys)),
        grants: Arc::new(DynamoGrants::new(dynamo.clone(), &table)),
        ledger: Arc::new(mcp_aws::DynamoStore::new(dynamo.clone(), &table)),
        signer: Arc::new(KmsSigner::new(kms, &signing)),
        copies: Arc::new(DynamoDocuments::new(dynamo, &table)),
    }
}

async fn start(backends: Backends, fetcher: GuardedFetcher) -> Stack {
    start_at(backends, fetcher, None, &[]).await
}

/// The server on a port of its own, or, given `front` (a listener the
/// MCP server will serve on), reached through that address as locally.
async fn start_at(backends: Backends, fetcher: GuardedFetcher, front: Option<SocketAddr>, settings: &[(&'static str, &str)]) -> Stack {
    let provider = openid_provider::start().await;
    let mut variables: HashMap<&str, String> = HashMap::from([
        ("MCP_OAUTH_UPSTREAM_ISSUER", provider.issuer.clone()),
        ("MCP_OAUTH_UPSTREAM_CLIENT_ID", openid_provider::CLIENT_ID.to_owned()),
    ]);
    variables.extend(settings.iter().map(|(name, value)| (*name, (*value).to_owned())));
    if backends.upstream_secret.is_none() {
        variables.insert("MCP_OAUTH_UPSTREAM_CLIENT_SECRET", openid_provider::CLIENT_SECRET.to_owned());
    }
    let settings = OAuthSettings::read(Mode::Local, &Variables::new(|name| variables.get(name).cloned())).unwrap();
    let configured_issuer = settings.issuer.clone();
    let clock = backends.clock;
    let seals = Seals::new(backends.sealer, AUDIENCE);
    let documents = Arc::new(MetadataDocuments::configured(&settings, fetcher, clock.clone(), backends.copies));
    let mut upstream = Upstream::new(settings.upstream.clone().unwrap()).unwrap();
    if let Some(source) = backends.upstream_secret {
        upstream = upstream.with_secret_source(source);
    }
    let upstream = Some(Arc::new(upstream));
    let server = AuthorizationServer::new(Parts {
        settings,
        clients: Clients::new(seals.clone(), documents),
        seals,
        grants: backends.grants,
        ledger: backends.ledger,
        signer: backends.signer,
        upstream,
        clock,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(authorization::entry::serve_local(Arc::new(server), listener));
    let (authorization, addr) = (addr, front.unwrap_or(addr));
    let issuer = configured_issuer.unwrap_or_else(|| format!("http://{addr}"));
    *provider.callback.lock().unwrap() = format!("{issuer}/oauth/callback");
    Stack { addr, authorization, issuer, provider }
}

/// A stack on memory but for its document copies (`copies`), fetching with `fetcher`.
async fn start_with_documents(fetcher: GuardedFetcher, copies: Arc<dyn LastGoodCopies>, settings: &[(&'static str, &str)]) -> Stack {
    start_at(Backends { copies, ..in_memory() }, fetcher, None, settings).await
}

fn no_documents() -> GuardedFetcher {
    GuardedFetcher::with_roots(rustls::RootCertStore::empty(), Vec::new())
}

async fn stack() -> Stack {
    start(in_memory(), no_documents()).await
}

fn encode(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish()
}

fn location(reply: &Reply) -> url::Url {
    let text = reply.headers.get("location").unwrap_or_else(|| panic!("no Location on HTTP {}: {:?}", reply.status, reply.body));
    url::Url::parse(text.to_str().unwrap()).unwrap()
}

fn query(url: &url::Url) -> HashMap<String, String> {
    url.query_pairs().into_owned().collect()
}

fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(digest(&SHA256, verifier.as_bytes()))
}

const VERIFIER: &str = "a-verifier-of-at-least-forty-three-characters-0123456789";

impl Stack {
    async fn get(&self, path: &str, cookie: Option<&str>) -> Reply {
        let headers: Vec<(String, String)> = cookie.map(|c| vec![("cookie".to_owned(), c.to_owned())]).unwrap_or_default();
        send_to(self.addr, "GET", path, &headers, Vec::new()).await
    }

    async fn post_form(&self, path: &str, cookie: Option<&str>, pairs: &[(&str, &str)]) -> Reply {
        let mut headers = vec![("content-type".to_owned(), "application/x-www-form-urlencoded".to_owned())];
        if let Some(cookie) = cookie {
            headers.push(("cookie".to_owned(), cookie.to_owned()));
        }
        send_to(self.addr, "POST", path, &headers, encode(pairs).into_bytes()).await
    }

    async fn register(&self, metadata: Value) -> Reply {
        let headers = vec![("content-type".to_owned(), "application/json".to_owned())];
        send_to(self.addr, "POST", "/oauth/register", &headers, metadata.to_string().into_bytes()).await
    }

    async fn client(&self, redirect_uris: &[&str]) -> String {
        let reply = self.register(json!({"redirect_uris": redirect_uris, "client_name": "E2E client"})).await;
        assert_eq!(reply.status, 201, "{:?}", reply.body);
        reply.json()["client_id"].as_str().unwrap().to_owned()
    }

    fn resource(&self) -> String {
        format!("{}/mcp", self.issuer)
    }

    fn authorize_path(&self, client_id: &str, redirect_uri: &str, extra: &[(&str, &str)]) -> String {
        let challenge = challenge(VERIFIER);
        let resource = self.resource();
        let mut pairs = vec![
            ("response_type", "code"),
            ("client_id", client_id),
            ("redirect_uri", redirect_uri),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("state", "client-state"),
            ("resource", resource.as_str()),
        ];
        for (name, value) in extra {
            pairs.retain(|(n, _)| n != name);
            if !value.is_empty() {
                pairs.push((name, value));
            }
        }
        format!("/oauth/authorize?{}", encode(&pairs))
    }

    /// The consent page for `path`: its browser cookie and sealed request.
    async fn consent_page(&self, path: &str) -> (String, String) {
        let page = self.get(path, None).await;
        assert_eq!(page.status, 200, "{}", String::from_utf8_lossy(&page.body));
        let cookie = page.headers["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_owned();
        let html = String::from_utf8(page.body.to_vec()).unwrap();
        let sealed = html.split("name=\"request\" value=\"").nth(1).unwrap().split('"').next().unwrap().to_owned();
        (cookie, sealed)
    }

    /// Approves in the browser with `cookie`, signs in upstream, and
    /// returns where the browser is sent back to the client.
    async fn approve(&self, cookie: &str, sealed: &str) -> url::Url {
        let approved = self.post_form("/oauth/consent", Some(cookie), &[("request", sealed), ("decision", "approve")]).await;
        self.follow_upstream(cookie, &approved).await
    }

    /// From `sent` (a 303 to the upstream provider), signs in there and
    /// returns where the browser with `cookie` is sent back to the client.
    async fn follow_upstream(&self, cookie: &str, sent: &Reply) -> url::Url {
        assert_eq!(sent.status, 303, "{}", String::from_utf8_lossy(&sent.body));
        let upstream = location(sent);
        assert!(upstream.as_str().starts_with(&self.provider.issuer), "{upstream}");
        let provider: SocketAddr = upstream.host_str().map(|h| format!("{h}:{}", upstream.port().unwrap())).unwrap().parse().unwrap();
        let signed_in = send_to(provider, "GET", &upstream[url::Position::BeforePath..], &[], Vec::new()).await;
        assert_eq!(signed_in.status, 302);
        let callback = location(&signed_in);
        let back = self.get(&callback[url::Position::BeforePath..], Some(cookie)).await;
        assert_eq!(back.status, 303, "{}", String::from_utf8_lossy(&back.body));
        location(&back)
    }

    /// A code for `client_id`, through the whole browser flow.
    async fn code(&self, client_id: &str, redirect_uri: &str) -> String {
        let (cookie, sealed) = self.consent_page(&self.authorize_path(client_id, redirect_uri, &[])).await;
        let back = self.approve(&cookie, &sealed).await;
        let answer = query(&back);
        assert_eq!(answer.get("state").map(String::as_str), Some("client-state"));
        assert_eq!(answer.get("iss"), Some(&self.issuer), "RFC 9207: iss in every authorization response");
        answer["code"].clone()
    }

    async fn exchange(&self, client_id: &str, code: &str, verifier: &str, extra: &[(&str, &str)]) -> Reply {
        let mut pairs = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", client_id),
            ("redirect_uri", LOOPBACK_REDIRECT),
            ("code_verifier", verifier),
        ];
        pairs.extend_from_slice(extra);
        self.post_form("/oauth/token", None, &pairs).await
    }

    async fn refresh(&self, client_id: &str, token: &str, extra: &[(&str, &str)]) -> Reply {
        let mut pairs = vec![("grant_type", "refresh_token"), ("refresh_token", token), ("client_id", client_id)];
        pairs.extend_from_slice(extra);
        self.post_form("/oauth/token", None, &pairs).await
    }

    async fn revoke(&self, client_id: &str, token: &str, extra: &[(&str, &str)]) -> Reply {
        let mut pairs = vec![("token", token), ("token_type_hint", "refresh_token"), ("client_id", client_id)];
        pairs.extend_from_slice(extra);
        self.post_form("/oauth/revoke", None, &pairs).await
    }

    /// A refresh that must work: its access token verifies; the next refresh token.
    async fn refreshed(&self, client_id: &str, token: String) -> String {
        let reply = self.refresh(client_id, &token, &[]).await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        verify(&self.verifier(&self.resource()), reply.json()["access_token"].as_str().unwrap()).await.unwrap();
        reply.json()["refresh_token"].as_str().unwrap().to_owned()
    }

    fn verifier(&self, audience: &str) -> BearerVerifier {
        BearerVerifier::new(BearerPolicy::new(self.issuer.clone(), vec![audience.to_owned()]).with_scopes(vec!["mcp".to_owned()])).unwrap()
    }
}

async fn verify(verifier: &BearerVerifier, token: &str) -> Result<mcp_stateless::Principal, Refusal> {
    let mut headers = http::HeaderMap::new();
    headers.insert("authorization", format!("Bearer {token}").parse().unwrap());
    verifier.verify(&headers).await
}

fn error_of(reply: &Reply) -> String {
    reply.json()["error"].as_str().unwrap_or_default().to_owned()
}

/// The whole flow, then what the MCP function's verifier makes of it.
async fn signs_in_refreshes_and_verifies(stack: &Stack) {
    let client_id = stack.client(&[LOOPBACK_REDIRECT]).await;
    let code = stack.code(&client_id, LOOPBACK_REDIRECT).await;
    let tokens = stack.exchange(&client_id, &code, VERIFIER, &[("resource", &stack.resource())]).await;
    assert_eq!(tokens.status, 200, "{:?}", tokens.body);
    assert_eq!(tokens.headers["cache-control"], "no-store");
    let tokens = tokens.json();
    assert_eq!((tokens["token_type"].as_str(), tokens["scope"].as_str()), (Some("Bearer"), Some("mcp")));
    let access = tokens["access_token"].as_str().unwrap();
    let principal = verify(&stack.verifier(&stack.resource()), access).await.unwrap();
    let expected_subject = format!("{}#{}", stack.provider.issuer, openid_provider::SUBJECT);
    assert_eq!(principal, mcp_stateless::Principal::Verified { issuer: stack.issuer.clone(), subject: expected_subject });
    // A token for this server is no token for another (RFC 8707).
    assert_eq!(verify(&stack.verifier("https://other.example.com/mcp"), access).await, Err(Refusal::Invalid));
    // Refresh rotates. Its answer lost, the client retries with the old
    // token: that works, and drops the successor it never received.
    let first = tokens["refresh_token"].as_str().unwrap();
    let refreshed = |token: String| stack.refreshed(&client_id, token);
    let lost = refreshed(first.to_owned()).await;
    assert_ne!(lost, first);
    let second = refreshed(first.to_owned()).await;
    assert_ne!(second, lost);
    // Used after its successor, a token ends the family, newer tokens too.
    let third = refreshed(second.clone()).await;
    for (token, why) in [(first, "a token whose successor was used"), (&third, "reuse revoked the whole family")] {
        let refused = stack.refresh(&client_id, token, &[]).await;
        assert_eq!((refused.status, error_of(&refused)), (400, "invalid_grant".to_owned()), "{why}");
    }
    // A successor dropped by a retry is no token either, and its use ends
    // its family in the same way.
    let code = stack.code(&client_id, LOOPBACK_REDIRECT).await;
    let first = stack.exchange(&client_id, &code, VERIFIER, &[]).await.json()["refresh_token"].as_str().unwrap().to_owned();
    let dropped = refreshed(first.clone()).await;
    let kept = refreshed(first).await;
    for token in [&dropped, &kept] {
        let refused = stack.refresh(&client_id, token, &[]).await;
        assert_eq!((refused.status, error_of(&refused)), (400, "invalid_grant".to_owned()));
    }
    // Revocation (RFC 7009): 200 for an unknown token and another
    // client's, which stays usable; its own client's ends the family.
    let code = stack.code(&client_id, LOOPBACK_REDIRECT).await;
    let current = stack.exchange(&client_id, &code, VERIFIER, &[]).await.json()["refresh_token"].as_str().unwrap().to_owned();
    let other_client = stack.client(&[LOOPBACK_REDIRECT]).await;
    for (by, token) in [(&client_id, "a-token-never-issued"), (&other_client, current.as_str())] {
        let answered = stack.revoke(by, token, &[]).await;
        assert_eq!((answered.status, answered.headers["cache-control"].to_str().unwrap()), (200, "no-store"));
    }
    let current = refreshed(current).await;
    assert_eq!(stack.revoke(&client_id, &current, &[]).await.status, 200);
    let refused = stack.refresh(&client_id, &current, &[]).await;
    assert_eq!((refused.status, error_of(&refused)), (400, "invalid_grant".to_owned()), "revoked");
}

#[tokio::test]
async fn a_registered_client_signs_in_refreshes_and_its_token_verifies() {
    signs_in_refreshes_and_verifies(&stack().await).await;
}

/// `secret` sealed as `infra/seal-upstream-secret.sh` seals it: KMS
/// `Encrypt` under `key` with `context`, printed as base64.
async fn seal(sdk: &aws_config::SdkConfig, key: &str, secret: &str, context: HashMap<String, String>) -> String {
    let answer = aws_sdk_kms::Client::new(sdk)
        .encrypt()
        .key_id(key)
        .plaintext(aws_sdk_kms::primitives::Blob::new(secret.as_bytes()))
        .set_encryption_context(Some(context))
        .send()
        .await
        .unwrap();
    STANDARD.encode(answer.ciphertext_blob.unwrap().into_inner())
}

/// The secret the function would open given `sealed` in
/// `MCP_OAUTH_UPSTREAM_CLIENT_SECRET_SEALED`, under `key` for `AUDIENCE`.
fn sealed_secret(sdk: &aws_config::SdkConfig, key: &str, sealed: &str) -> SealedSecret {
    let variables = HashMap::from([
        ("MCP_OAUTH_UPSTREAM_ISSUER", "https://idp.example.com"),
        ("MCP_OAUTH_UPSTREAM_CLIENT_ID", openid_provider::CLIENT_ID),
        ("MCP_OAUTH_UPSTREAM_CLIENT_SECRET_SEALED", sealed),
    ]);
    let settings = OAuthSettings::read(Mode::Local, &Variables::new(|name| variables.get(name).map(|v| (*v).to_owned()))).unwrap();
    let ciphertext = settings.upstream.unwrap().client_secret_sealed.unwrap();
    SealedSecret::new(aws_sdk_kms::Client::new(sdk), key, AUDIENCE, ciphertext)
}

#[tokio::test]
async fn on_the_emulator_with_kms_sealing_and_signing_and_dynamodb_grants() {
    let sdk = emulator::sdk().await;
    // The upstream client secret as on AWS: sealed under the stack's
    // symmetric key for this purpose and this deployment.
    let key = emulator::fresh_key(&sdk).await;
    let sealed = seal(&sdk, &key, openid_provider::CLIENT_SECRET, encryption_context(AUDIENCE)).await;
    let mut backends = on_aws(&sdk, &sdk).await;
    backends.upstream_secret = Some(Arc::new(sealed_secret(&sdk, &key, &sealed)));
    signs_in_refreshes_and_verifies(&start(backends, no_documents()).await).await;
}

/// A ciphertext made for anything else under the same key cannot stand in
/// for the secret: KMS refuses it, the error says what to do and carries
/// neither secret nor ciphertext, and a sign-in ends at the client with
/// `temporarily_unavailable` while the server serves on.
#[tokio::test]
async fn an_upstream_secret_sealed_for_anything_else_is_refused_and_sign_in_says_so() {
    let sdk = emulator::sdk().await;
    let (key, other_key) = (emulator::fresh_key(&sdk).await, emulator::fresh_key(&sdk).await);
    let secret = openid_provider::CLIENT_SECRET;
    let mut request_state = encryption_context(AUDIENCE);
    request_state.insert(mcp_aws::kms_keys::CONTEXT_PURPOSE_KEY.to_owned(), mcp_aws::kms_keys::CONTEXT_PURPOSE.to_owned());
    assert_ne!(mcp_aws::kms_keys::CONTEXT_PURPOSE, UPSTREAM_SECRET_PURPOSE);
    let candidates = [
        ("the requestState purpose", seal(&sdk, &key, secret, request_state).await),
        ("another stack", seal(&sdk, &key, secret, encryption_context("another-stack")).await),
        ("no context", seal(&sdk, &key, secret, HashMap::new()).await),
        ("another key", seal(&sdk, &other_key, secret, encryption_context(AUDIENCE)).await),
        ("not a KMS ciphertext", STANDARD.encode(b"base64, but nothing KMS made")),
    ];
    for (what, sealed) in &candidates {
        let error = sealed_secret(&sdk, &key, sealed).open().await.unwrap_err();
        assert!(matches!(error, SealedSecretError::Refused(_)), "{what}: {error:?}");
        let message = error.to_string();
        assert!(message.contains("seal-upstream-secret.sh"), "{what}: {message}");
        assert!(!message.contains(secret) && !message.contains(sealed.as_str()), "{what}: {message}");
    }
    let mut backends = in_memory();
    backends.upstream_secret = Some(Arc::new(sealed_secret(&sdk, &key, &candidates[0].1)));
    let stack = start(backends, no_documents()).await;
    let client_id = stack.client(&[LOOPBACK_REDIRECT]).await;
    let (cookie, sealed) = stack.consent_page(&stack.authorize_path(&client_id, LOOPBACK_REDIRECT, &[])).await;
    let answer = query(&stack.approve(&cookie, &sealed).await);
    assert_eq!(answer.get("error").map(String::as_str), Some("temporarily_unavailable"), "{answer:?}");
    assert!(!answer.contains_key("code"));
    assert_eq!(stack.get("/.well-known/oauth-authorization-server", None).await.status, 200, "the server serves on");
}

#[tokio::test]
async fn the_metadata_says_what_spec_following_clients_need() {
    let stack = stack().await;
    for path in ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"] {
        let reply = stack.get(path, None).await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.headers["access-control-allow-origin"], "*", "browser clients read it");
        let metadata = reply.json();
        assert_eq!(metadata["issuer"], stack.issuer, "the issuer the client built the URL from");
        assert_eq!(metadata["code_challenge_methods_supported"], json!(["S256"]));
        assert!(metadata["token_endpoint_auth_methods_supported"].as_array().unwrap().contains(&json!("none")));
        assert_eq!(metadata["client_id_metadata_document_supported"], true);
        assert_eq!(metadata["authorization_response_iss_parameter_supported"], true);
        assert_eq!(metadata["registration_endpoint"], format!("{}/oauth/register", stack.issuer));
        assert_eq!(metadata["scopes_supported"], json!(["mcp", "offline_access"]), "offline_access: here only");
    }
    let keys = stack.get("/oauth/jwks", None).await.json();
    assert_eq!((keys["keys"][0]["kty"].as_str(), keys["keys"][0]["alg"].as_str()), (Some("EC"), Some("ES256")));
}

/// The issuer is the deployment's (`MCP_OAUTH_ISSUER`), whatever `Host` a
/// request carries: on a custom domain with and without a base path, and on
/// a REST API's stage, the metadata at every well-known path, the
/// authorization response's `iss` (RFC 9207) and the access token's `iss`
/// are that one string, byte for byte.
#[tokio::test]
async fn a_configured_issuer_is_the_one_every_document_and_token_names() {
    for (issuer, base_path) in [
        ("https://mcp.example.com", ""),
        ("https://mcp.example.com/tools", "/tools"),
        ("https://abc123.execute-api.eu-west-1.amazonaws.com/api", "/api"),
    ] {
        let stack = start_at(in_memory(), no_documents(), None, &[("MCP_OAUTH_ISSUER", issuer), ("MCP_BASE_PATH", base_path)]).await;
        // Each form a client builds from the issuer (RFC 8414 path
        // insertion, OpenID appending), as it reaches the function: with
        // the base path (a custom domain's mapping) or without (a stage).
        let mut paths = Vec::new();
        for well_known in ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"] {
            paths.extend([well_known.to_owned(), format!("{well_known}{base_path}"), format!("{base_path}{well_known}")]);
        }
        for path in &paths {
            let own = path.strip_prefix(base_path).filter(|p| p.starts_with('/')).unwrap_or(path);
            assert!(authorization::discovery::is_metadata_path(own, base_path), "{path}");
            for host in ["attacker.example", "127.0.0.1:1", "mcp.example.com:8443"] {
                let reply = send_to(stack.addr, "GET", path, &[("host".to_owned(), host.to_owned())], Vec::new()).await;
                assert_eq!(reply.status, 200, "{path}");
                assert_eq!(reply.json()["issuer"], issuer, "{path} with Host {host}");
            }
        }
        // A sign-in (its Host loopback, which an unset issuer would follow):
        // `code` checks the authorization response's iss.
        let client_id = stack.client(&[LOOPBACK_REDIRECT]).await;
        let code = stack.code(&client_id, LOOPBACK_REDIRECT).await;
        let tokens = stack.exchange(&client_id, &code, VERIFIER, &[]).await;
        assert_eq!(tokens.status, 200, "{:?}", tokens.body);
        let access = tokens.json()["access_token"].as_str().unwrap().to_owned();
        let payload = URL_SAFE_NO_PAD.decode(access.split('.').nth(1).unwrap()).unwrap();
        let claims: Value = serde_json::from_slice(&payload).unwrap();
        assert_eq!((claims["iss"].as_str(), claims["aud"].as_str()), (Some(issuer), Some(format!("{issuer}/mcp").as_str())));
    }
}

#[tokio::test]
async fn pkce_is_required_and_only_s256() {
    let stack = stack().await;
    let client_id = stack.client(&[LOOPBACK_REDIRECT]).await;
    for extra in [&[("code_challenge_method", "plain")][..], &[("code_challenge_method", "")], &[("code_challenge", "")]] {
        let reply = stack.get(&stack.authorize_path(&client_id, LOOPBACK_REDIRECT, extra), None).await;
        assert_eq!(reply.status, 303, "{extra:?}");
        let answer = query(&location(&reply));
        assert_eq!(answer["error"], "invalid_request", "{extra:?}");
        assert_eq!((answer["state"].as_str(), answer["iss"].as_str()), ("client-state", stack.issuer.as_str()));
    }
    // At the token endpoint: no verifier, or the wrong one.
    let code = stack.code(&client_id, LOOPBACK_REDIRECT).await;
    let missing =
        stack.post_form("/oauth/token", None, &[("grant_type", "authorization_code"), ("code", &code), ("client_id", &client_id)]).await;
    assert_eq!(error_of(&missing), "invalid_request");
    let code = stack.code(&client_id, LOOPBACK_REDIRECT).await;
    let wrong = stack.exchange(&client_id, &code, "another-verifier-of-at-least-forty-three-characters-0", &[]).await;
    assert_eq!(error_of(&wrong), "invalid_grant");
}

#[tokio::test]
async fn a_redirect_uri_that_differs_gets_a_page_and_never_a_redirect() {
    let stack = stack().await;
    let web = stack.client(&["https://app.example.com/oauth/callback"]).await;
    for other in [
        "https://app.example.com/oauth/callbacK",
        "https://app.example.com/oauth/callback/x",
        "https://app.example.com:8443/oauth/callback",
        "https://evil.example.com/oauth/callback",
    ] {
        // With a request error too: the error must not travel to `other`.
        let reply = stack.get(&stack.authorize_path(&web, other, &[("code_challenge_method", "plain")]), None).await;
        assert_eq!(reply.status, 400, "{other}");
        assert!(reply.headers.get("location").is_none(), "no redirect to {other}");
    }
    // A loopback redirect URI matches on any port (RFC 8252, 7.3), and only that.
    let native = stack.client(&[LOOPBACK_REDIRECT]).await;
    assert_eq!(stack.get(&stack.authorize_path(&native, "http://127.0.0.1:50999/callback", &[]), None).await.status, 200);
    assert_eq!(stack.get(&stack.authorize_path(&native, "http://127.0.0.1:50999/other", &[]), None).await.status, 400);
    // An id this server did not make is no client.
    // Its last character changed (to `x`, or `y` where it was `x` already: one id in 64).
    let last = if native.ends_with('x') { "y" } else { "x" };
    let forged = format!("{}{last}", &native[..native.len() - 1]);
    assert_eq!(stack.get(&stack.authorize_path(&forged, LOOPBACK_REDIRECT, &[]), None).await.status, 400);
}

#[tokio::test]
async fn a_code_is_good_once_and_for_its_own_client_only() {
    let stack = stack().await;
    let client_id = stack.client(&[LOOPBACK_REDIRECT]).await;
    let other = stack.client(&[LOOPBACK_REDIRECT]).await;
    let code = stack.code(&client_id, LOOPBACK_REDIRECT).await;
    assert_eq!(stack.exchange(&client_id, &code, VERIFIER, &[]).await.status, 200);
    assert_eq!(error_of(&stack.exchange(&client_id, &code, VERIFIER, &[]).await), "invalid_grant", "replayed");
    let code = stack.code(&client_id, LOOPBACK_REDIRECT).await;
    assert_eq!(error_of(&stack.exchange(&other, &code, VERIFIER, &[]).await), "invalid_grant", "another client's");
    assert_eq!(error_of(&stack.exchange(&client_id, &code, VERIFIER, &[]).await), "invalid_grant", "and it is spent");
}

#[tokio::test]
async fn a_resource_other_than_this_server_is_an_invalid_target() {
    let stack = stack().await;
    let client_id = stack.client(&[LOOPBACK_REDIRECT]).await;
    let reply =
        stack.get(&stack.authorize_path(&client_id, LOOPBACK_REDIRECT, &[("resource", "https://other.example.com/mcp")]), None).await;
    assert_eq!(query(&location(&reply))["error"], "invalid_target");
    let code = stack.code(&client_id, LOOPBACK_REDIRECT).await;
    let exchanged = stack.exchange(&client_id, &code, VERIFIER, &[("resource", "https://other.example.com/mcp")]).await;
    assert_eq!(error_of(&exchanged), "invalid_target");
}

#[tokio::test]
async fn consent_opens_only_in_the_browser_it_was_shown_in_and_once() {
    let stack = stack().await;
    let client_id = stack.client(&[LOOPBACK_REDIRECT]).await;
    let path = stack.authorize_path(&client_id, LOOPBACK_REDIRECT, &[]);
    let (cookie, sealed) = stack.consent_page(&path).await;
    let (other_browser, _) = stack.consent_page(&path).await;
    assert_ne!(cookie, other_browser);
    for browser in [None, Some(other_browser.as_str())] {
        let reply = stack.post_form("/oauth/consent", browser, &[("request", &sealed), ("decision", "approve")]).await;
        assert_eq!(reply.status, 400, "{browser:?}");
        assert!(reply.headers.get("location").is_none());
    }
    // Approved in its own browser, once; the answer's state then opens
    // only there too (an approval cannot be finished in a victim's browser).
    let approved = stack.post_form("/oauth/consent", Some(&cookie), &[("request", &sealed), ("decision", "approve")]).await;
    assert_eq!(approved.status, 303);
    let replayed = stack.post_form("/oauth/consent", Some(&cookie), &[("request", &sealed), ("decision", "approve")]).await;
    assert_eq!(replayed.status, 400, "a consent is answered once");
    let state = query(&location(&approved))["state"].clone();
    let callback = format!("/oauth/callback?{}", encode(&[("code", "upstream-code"), ("state", &state)]));
    assert_eq!(stack.get(&callback, Some(&other_browser)).await.status, 400);
    // Skipping consent: a state this server never sealed.
    let skipped = format!("/oauth/callback?{}", encode(&[("code", "upstream-code"), ("state", "v1.AAAA")]));
    assert_eq!(stack.get(&skipped, Some(&cookie)).await.status, 400);
    // Deny goes back to the client as access_denied.
    let (cookie, sealed) = stack.consent_page(&path).await;
    let denied = stack.post_form("/oauth/consent", Some(&cookie), &[("request", &sealed), ("decision", "deny")]).await;
    assert_eq!(query(&location(&denied))["error"], "access_denied");
}

#[tokio::test]
async fn the_consent_page_names_the_client_and_cannot_be_framed() {
    let stack = stack().await;
    let client_id = stack.client(&[LOOPBACK_REDIRECT]).await;
    let page = stack.get(&stack.authorize_path(&client_id, LOOPBACK_REDIRECT, &[]), None).await;
    let csp = page.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("frame-ancestors 'none'") && csp.contains("default-src 'none'"), "{csp}");
    assert_eq!(page.headers["x-frame-options"], "DENY");
    let cookie = page.headers["set-cookie"].to_str().unwrap();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"), "{cookie}");
    let html = String::from_utf8(page.body.to_vec()).unwrap();
    for shown in ["E2E client", "unverified", "127.0.0.1", "this computer", &stack.resource(), "<button"] {
        assert!(html.contains(shown), "the page shows {shown}");
    }
    assert!(!html.contains("<script") && !html.contains("src="), "nothing runs, nothing loads");
}

/// The scope a sign-in asking `scope` (as it reaches the query, already
/// encoded) ends with, and whether it brought a refresh token.
async fn granted_for(stack: &Stack, client_id: &str, scope: &str) -> (String, bool) {
    let path = format!("{}&scope={scope}", stack.authorize_path(client_id, LOOPBACK_REDIRECT, &[("scope", "")]));
    let (cookie, sealed) = stack.consent_page(&path).await;
    let code = query(&stack.approve(&cookie, &sealed).await)["code"].clone();
    let tokens = stack.exchange(client_id, &code, VERIFIER, &[]).await.json();
    (tokens["scope"].as_str().unwrap_or_default().to_owned(), tokens["refresh_token"].is_string())
}

#[tokio::test]
async fn scopes_are_taken_as_clients_send_them_and_offline_access_is_understood() {
    let stack = stack().await;
    let client_id = stack.client(&[LOOPBACK_REDIRECT]).await;
    // Claude.ai's `+offline_access` (a leading space), alone or beside
    // `mcp`; a scope never offered; an empty one: the default scopes, and
    // `offline_access` never in the token (the MCP function checks `scope`).
    for scope in ["+offline_access", "offline_access", "mcp++offline_access", "admin", ""] {
        assert_eq!(granted_for(&stack, &client_id, scope).await, ("mcp".to_owned(), true), "{scope:?}");
    }
    let code = stack.code(&client_id, LOOPBACK_REDIRECT).await;
    let tokens = stack.exchange(&client_id, &code, VERIFIER, &[]).await.json();
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let wider = stack.refresh(&client_id, refresh, &[("scope", "mcp admin")]).await;
    assert_eq!(error_of(&wider), "invalid_scope");
}

#[tokio::test]
async fn registration_takes_only_redirects_a_client_may_have() {
    let stack = stack().await;
    for (metadata, error) in [
        (json!({"redirect_uris": ["javascript:alert(1)"]}), "invalid_redirect_uri"),
        (json!({"redirect_uris": ["http://app.example.com/cb"]}), "invalid_redirect_uri"),
        (json!({"redirect_uris": []}), "invalid_redirect_uri"),
        (json!({"redirect_uris": ["cursor://anysphere.cursor-mcp/oauth/callback"], "application_type": "web"}), "invalid_redirect_uri"),
        (json!({"redirect_uris": [LOOPBACK_REDIRECT], "grant_types": ["client_credentials"]}), "invalid_client_metadata"),
        (json!({"redirect_uris": [LOOPBACK_REDIRECT], "application_type": "desktop"}), "invalid_client_metadata"),
        (json!("not an object"), "invalid_client_metadata"),
    ] {
        let reply = stack.register(metadata.clone()).await;
        assert_eq!((reply.status, error_of(&reply)), (400, error.to_owned()), "{metadata}");
    }
    // Cursor's three, as it registers them.
    let cursor = stack
        .register(json!({"redirect_uris": [
            "cursor://anysphere.cursor-mcp/oauth/callback",
            "https://www.cursor.com/agents/mcp/oauth/callback",
            "http://localhost:8787/callback"
        ], "client_name": "Cursor"}))
        .await;
    assert_eq!(cursor.status, 201);
    let answer = cursor.json();
    assert_eq!((answer["token_endpoint_auth_method"].as_str(), answer["application_type"].as_str()), (Some("none"), Some("native")));
}

#[tokio::test]
async fn a_token_signed_by_another_key_is_refused() {
    let stack = stack().await;
    let now = jsonwebtoken::get_current_timestamp();
    let claims = json!({"iss": stack.issuer, "sub": "x", "aud": stack.resource(), "scope": "mcp", "iat": now, "exp": now + 60});
    // Same issuer, same key id even: another key's signature.
    let kid = stack.get("/oauth/jwks", None).await.json()["keys"][0]["kid"].as_str().unwrap().to_owned();
    let forged = SigningKey::new(&kid).sign(&claims);
    assert_eq!(verify(&stack.verifier(&stack.resource()), &forged).await, Err(Refusal::Invalid));
}

/// A document host serving, at `/client.json`, a document that names
/// itself, with `extra` members.
fn metadata_document(host: &DocumentHost, path: &str, extra: Value) -> Value {
    let mut document = json!({"client_id": host.url(path), "client_name": "Metadata App", "redirect_uris": [LOOPBACK_REDIRECT]});
    document.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    document
}

fn trusting(host: &DocumentHost) -> GuardedFetcher {
    GuardedFetcher::with_roots(host.roots.clone(), vec![host.trusted()])
}

#[tokio::test]
async fn a_client_metadata_document_is_fetched_guarded_and_must_name_itself() {
    let host = DocumentHost::start().await;
    host.serve("/client.json", 200, metadata_document(&host, "/client.json", json!({})).to_string());
    host.serve("/other.json", 200, metadata_document(&host, "/client.json", json!({})).to_string());
    host.serve("/large.json", 200, format!("{{\"client_id\":\"x\",\"pad\":\"{}\"}}", "x".repeat(6 * 1024)));
    host.serve("/gone.json", 404, "not here");
    let trusted = start(in_memory(), trusting(&host)).await;
    let client_id = host.url("/client.json");
    let page = trusted.get(&trusted.authorize_path(&client_id, LOOPBACK_REDIRECT, &[]), None).await;
    assert_eq!(page.status, 200, "{}", String::from_utf8_lossy(&page.body));
    let html = String::from_utf8(page.body.to_vec()).unwrap();
    assert!(html.contains("Metadata App") && html.contains("published by localhost"), "{html}");
    // The whole flow with the URL as the client id.
    let code = trusted.code(&client_id, LOOPBACK_REDIRECT).await;
    assert_eq!(trusted.exchange(&client_id, &code, VERIFIER, &[]).await.status, 200);
    for (path, why) in [("/other.json", "another client_id"), ("/large.json", "over 5120 bytes"), ("/gone.json", "HTTP 404")] {
        let other = host.url(path);
        // `/other.json`'s document is fetched at its own URL and names `/client.json`.
        let reply = trusted.get(&trusted.authorize_path(&other, LOOPBACK_REDIRECT, &[]), None).await;
        assert_eq!(reply.status, 400, "{path}");
        assert!(String::from_utf8_lossy(&reply.body).contains(why), "{path}: {}", String::from_utf8_lossy(&reply.body));
    }
    // Untrusted, the same host is a loopback address: never fetched.
    let guarded = start(in_memory(), GuardedFetcher::with_roots(host.roots.clone(), Vec::new())).await;
    let reply = guarded.get(&guarded.authorize_path(&client_id, LOOPBACK_REDIRECT, &[]), None).await;
    assert_eq!(reply.status, 503, "answered as an unreachable host is");
    // The page does not say why (which names resolve inside is the prober's
    // question); the log does.
    let page = String::from_utf8_lossy(&reply.body);
    assert!(page.contains("could not be looked up just now") && !page.contains("public"), "{page}");
}

#[tokio::test]
async fn locally_one_address_serves_the_mcp_endpoint_and_its_authorization_server() {
    // The MCP server's port first: the authorization server names it as
    // its issuer, from the Host header the MCP server passes on.
    let front = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let mcp = front.local_addr().unwrap();
    let stack = start_at(in_memory(), no_documents(), Some(mcp), &[]).await;
    let authorization = stack.authorization;
    let resource = stack.resource();
    let endpoint = e2e::everything_endpoint()
        .with_resource_metadata(mcp_stateless::edge::protected_resource::ResourceMetadata::new(
            vec![stack.issuer.clone()],
            vec!["mcp".into()],
        ))
        .with_bearer(stack.verifier(&resource));
    let forward = mcp_stateless::edge::authorization_forward::AuthorizationForward::new(&format!("http://{authorization}")).unwrap();
    tokio::spawn(mcp_stateless::edge::local::serve_local_with(Arc::new(endpoint), front, Some(Arc::new(forward))));

    // A client given only the URL: 401, the resource metadata, the issuer's metadata, all here.
    let list = e2e::request(1, "tools/list", json!({}), json!({}));
    let refused = e2e::post(mcp, &list).await;
    assert_eq!(refused.status, 401);
    let challenge = refused.headers["www-authenticate"].to_str().unwrap().to_owned();
    assert!(challenge.contains(&format!("http://{mcp}/.well-known/oauth-protected-resource/mcp")), "{challenge}");
    let resource_metadata = stack.get("/.well-known/oauth-protected-resource/mcp", None).await.json();
    assert_eq!(resource_metadata["authorization_servers"], json!([stack.issuer]));
    assert_eq!(resource_metadata["resource"], resource);
    assert_eq!(stack.get("/.well-known/oauth-authorization-server", None).await.json()["issuer"], stack.issuer);

    let client_id = stack.client(&[LOOPBACK_REDIRECT]).await;
    let code = stack.code(&client_id, LOOPBACK_REDIRECT).await;
    let token = stack.exchange(&client_id, &code, VERIFIER, &[]).await.json()["access_token"].as_str().unwrap().to_owned();
    let served = e2e::post_with(mcp, &list, |headers| e2e::set_header(headers, "authorization", &format!("Bearer {token}"))).await;
    assert_eq!(served.status, 200, "{:?}", served.body);
    assert!(served.message()["result"]["tools"].as_array().is_some_and(|tools| !tools.is_empty()));
}

/// The AWS calls behind one sign-in and one refresh, by operation, on a
/// fresh instance (the keys' first fetches included), metered by a proxy
/// in front of the emulator. `cargo test --test authorization cost --
/// --nocapture` prints them; docs/reference.md prices them.
#[tokio::test]
async fn what_one_sign_in_and_one_refresh_cost_in_kms_and_dynamodb() {
    use e2e::fault_proxy::{FaultProxy, Service};
    let direct = emulator::sdk().await;
    let meter = FaultProxy::in_front_of_emulator().await;
    let sdk = emulator::loader(&emulator::limits()).endpoint_url(&meter.url).load().await;
    let backends = on_aws(&direct, &sdk).await;
    let stack = start(backends, no_documents()).await;
    let operations = |service| {
        let mut counted: Vec<(String, u32)> = Vec::new();
        for call in meter.calls(service) {
            match counted.iter_mut().find(|(operation, _)| *operation == call.operation) {
                Some((_, n)) => *n += 1,
                None => counted.push((call.operation, 1)),
            }
        }
        counted.sort();
        counted
    };
    let client_id = stack.client(&[LOOPBACK_REDIRECT]).await;
    let code = stack.code(&client_id, LOOPBACK_REDIRECT).await;
    let tokens = stack.exchange(&client_id, &code, VERIFIER, &[]).await.json();
    let sign_in = (operations(Service::Kms), operations(Service::DynamoDb));
    println!("one registration and sign-in: KMS {:?}, DynamoDB {:?}", sign_in.0, sign_in.1);
    let (kms_before, dynamo_before) = (meter.calls(Service::Kms).len(), meter.calls(Service::DynamoDb).len());
    assert_eq!(stack.refresh(&client_id, tokens["refresh_token"].as_str().unwrap(), &[]).await.status, 200);
    let refresh: Vec<String> = meter.calls(Service::Kms)[kms_before..].iter().map(|c| c.operation.clone()).collect();
    let refresh_dynamo: Vec<String> = meter.calls(Service::DynamoDb)[dynamo_before..].iter().map(|c| c.operation.clone()).collect();
    println!("one refresh: KMS {refresh:?}, DynamoDB {refresh_dynamo:?}");
    let count = |list: &[(String, u32)], op: &str| list.iter().find(|(o, _)| o.ends_with(op)).map_or(0, |(_, n)| *n);
    // KMS: one data key for this instance's seals, the public key once, one signature.
    assert_eq!(
        (count(&sign_in.0, "GenerateDataKey"), count(&sign_in.0, "GetPublicKey"), count(&sign_in.0, "Sign")),
        (1, 1, 1),
        "{sign_in:?}"
    );
    assert_eq!(count(&sign_in.0, "Decrypt"), 0, "its own seals open under the key it holds");
    // DynamoDB: the consent and the upstream state spent once each, the code kept and taken, the refresh token's family started.
    assert_eq!(
        (count(&sign_in.1, "PutItem"), count(&sign_in.1, "DeleteItem"), count(&sign_in.1, "TransactWriteItems"), sign_in.1.len()),
        (3, 1, 1, 3),
        "{sign_in:?}"
    );
    assert_eq!(refresh, ["Sign"], "a refresh signs once and seals nothing");
    assert_eq!(
        refresh_dynamo,
        ["GetItem", "GetItem", "TransactWriteItems"],
        "the token and its family read, the next one kept in one write"
    );
}

#[tokio::test]
async fn a_narrower_refresh_narrows_the_access_token_only_and_state_is_bounded() {
    let stack = start_at(in_memory(), no_documents(), None, &[("MCP_SCOPES_SUPPORTED", "mcp,admin")]).await;
    let client_id = stack.client(&[LOOPBACK_REDIRECT]).await;
    let long_state = "s".repeat(513);
    let reply = stack.get(&stack.authorize_path(&client_id, LOOPBACK_REDIRECT, &[("state", &long_state)]), None).await;
    assert_eq!(query(&location(&reply))["error"], "invalid_request", "state is carried sealed: 512 bytes at most");
    let code = stack.code(&client_id, LOOPBACK_REDIRECT).await;
    let tokens = stack.exchange(&client_id, &code, VERIFIER, &[]).await.json();
    assert_eq!(tokens["scope"], "mcp admin");
    let narrowed = stack.refresh(&client_id, tokens["refresh_token"].as_str().unwrap(), &[("scope", "mcp")]).await.json();
    assert_eq!(narrowed["scope"], "mcp");
    // RFC 6749, 6: the new refresh token carries the grant whole.
    let other = stack.refresh(&client_id, narrowed["refresh_token"].as_str().unwrap(), &[("scope", "admin")]).await;
    assert_eq!((other.status, other.json()["scope"].as_str()), (200, Some("admin")), "{:?}", other.body);
}

#[tokio::test]
async fn a_registration_too_large_to_carry_is_refused_at_registration() {
    let stack = stack().await;
    let uris: Vec<String> = (0..10).map(|n| format!("https://app.example.com/{}/{n}", "p".repeat(150))).collect();
    let reply = stack.register(json!({"redirect_uris": uris})).await;
    assert_eq!((reply.status, error_of(&reply)), (400, "invalid_client_metadata".to_owned()), "{:?}", reply.body);
}

/// A refresh that fails on the server's side (KMS `Sign`, the store's
/// write, an answer lost after the write landed) spends nothing: the
/// client's retry with the same token works, and the grant goes on.
#[tokio::test]
async fn a_refresh_that_fails_on_the_servers_side_can_be_retried() {
    use e2e::fault_proxy::{Fault, FaultProxy, Service};
    let direct = emulator::sdk().await;
    let proxy = FaultProxy::in_front_of_emulator().await;
    let sdk = emulator::loader(&emulator::limits()).endpoint_url(&proxy.url).load().await;
    let stack = start(on_aws(&direct, &sdk).await, no_documents()).await;
    let client_id = stack.client(&[LOOPBACK_REDIRECT]).await;
    let code = stack.code(&client_id, LOOPBACK_REDIRECT).await;
    let mut token = stack.exchange(&client_id, &code, VERIFIER, &[]).await.json()["refresh_token"].as_str().unwrap().to_owned();
    for (service, operation, fault) in [
        (Service::Kms, "Sign", Fault::ServerError),
        (Service::DynamoDb, "TransactWriteItems", Fault::ServerError),
        (Service::DynamoDb, "TransactWriteItems", Fault::Reset),
        (Service::DynamoDb, "GetItem", Fault::Throttling),
    ] {
        proxy.set_on(service, operation, fault, 0);
        let failed = stack.refresh(&client_id, &token, &[]).await;
        assert_eq!((failed.status, error_of(&failed)), (503, "temporarily_unavailable".to_owned()), "{operation} {fault:?}");
        assert!(failed.headers.contains_key("retry-after"), "{operation} {fault:?}: {:?}", failed.headers);
        proxy.clear();
        let retried = stack.refresh(&client_id, &token, &[]).await;
        assert_eq!(retried.status, 200, "{operation} {fault:?}: {:?}", retried.body);
        token = retried.json()["refresh_token"].as_str().unwrap().to_owned();
    }
    // The write lands and its answer is lost: whatever this attempt is
    // told, the client's retry with the same token goes on.
    proxy.set_on(Service::DynamoDb, "TransactWriteItems", Fault::LoseAnswer, 0);
    let first_try = stack.refresh(&client_id, &token, &[]).await;
    proxy.clear();
    assert!([200, 400, 503].contains(&first_try.status), "{:?}", first_try.body);
    let retried = stack.refresh(&client_id, &token, &[]).await;
    assert_eq!(retried.status, 200, "{:?}", retried.body);
    let next = retried.json()["refresh_token"].as_str().unwrap().to_owned();
    assert_eq!(stack.refresh(&client_id, &next, &[]).await.status, 200, "the grant goes on");
}

/// The value `reply` sets cookie `name` to, if it sets it.
fn cookie_set(reply: &Reply, name: &str) -> Option<String> {
    reply
        .headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|line| line.to_str().ok()?.split(';').next()?.split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.to_owned())
}

/// The remembered approvals' cookie on a loopback issuer (`__Host-` over https).
const REMEMBERED: &str = "mcp-oauth-consent";

/// A document host serving two clients' documents, `/client.json` and `/second.json`.
async fn two_documents() -> DocumentHost {
    let host = DocumentHost::start().await;
    for path in ["/client.json", "/second.json"] {
        host.serve(path, 200, metadata_document(&host, path, json!({})).to_string());
    }
    host
}

/// A stack whose client metadata documents are served on loopback
/// ([`two_documents`]), with `settings`: it and its two clients' ids.
async fn documents_stack(backends: Backends, settings: &[(&'static str, &str)]) -> (Stack, String, String) {
    let host = two_documents().await;
    let stack = start_at(backends, trusting(&host), None, settings).await;
    (stack, host.url("/client.json"), host.url("/second.json"))
}

/// Approves `path` in a fresh browser, asking to be remembered: the
/// browser's binding cookie, and the remembered approvals' if it got one.
async fn approve_remembering(stack: &Stack, path: &str) -> (String, Option<String>) {
    let (binding, sealed) = stack.consent_page(path).await;
    let form = [("request", sealed.as_str()), ("decision", "approve"), ("remember", "yes")];
    let approved = stack.post_form("/oauth/consent", Some(&binding), &form).await;
    assert_eq!(approved.status, 303, "{}", String::from_utf8_lossy(&approved.body));
    (binding, cookie_set(&approved, REMEMBERED).map(|value| format!("{REMEMBERED}={value}")))
}

#[tokio::test]
async fn a_remembered_approval_skips_the_page_for_its_browser_client_redirect_and_scope_only() {
    let (stack, client_id, second) = documents_stack(in_memory(), &[("MCP_SCOPES_SUPPORTED", "mcp,admin")]).await;
    let narrow = stack.authorize_path(&client_id, LOOPBACK_REDIRECT, &[("scope", "mcp")]);
    let (binding, remembered) = approve_remembering(&stack, &narrow).await;
    let browser = format!("{binding}; {}", remembered.expect("an approval of a metadata document's client is remembered"));
    // Straight to the provider, as an approval goes, and the sign-in ends at the client.
    let skipped = stack.get(&narrow, Some(&browser)).await;
    let back = query(&stack.follow_upstream(&browser, &skipped).await);
    assert_eq!(back.get("state").map(String::as_str), Some("client-state"));
    let tokens = stack.exchange(&client_id, &back["code"], VERIFIER, &[]).await.json();
    assert_eq!(tokens["scope"], "mcp");
    // Anything else the page again: another redirect URI (the loopback
    // port too), another client, a wider scope.
    let (other_binding, _) = stack.consent_page(&narrow).await;
    let moved = format!("{other_binding}; {}", browser.split("; ").nth(1).unwrap());
    for (path, cookies, what) in [
        (stack.authorize_path(&client_id, "http://127.0.0.1:50999/callback", &[("scope", "mcp")]), &browser, "another redirect URI"),
        (stack.authorize_path(&second, LOOPBACK_REDIRECT, &[("scope", "mcp")]), &browser, "another client"),
        (stack.authorize_path(&client_id, LOOPBACK_REDIRECT, &[]), &browser, "a wider scope (mcp admin)"),
        (narrow.clone(), &moved, "the remembered cookie in another browser"),
    ] {
        let page = stack.get(&path, Some(cookies)).await;
        assert_eq!(page.status, 200, "{what}: {}", String::from_utf8_lossy(&page.body));
        assert!(String::from_utf8_lossy(&page.body).contains("Allow access"), "{what}");
    }
    // Withdrawn: the forget form, its proof bound to this browser.
    let form = stack.get("/oauth/consent/forget", Some(&browser)).await;
    let html = String::from_utf8(form.body.to_vec()).unwrap();
    assert_eq!(form.headers["x-frame-options"], "DENY");
    let proof = html.split("name=\"proof\" value=\"").nth(1).unwrap().split('"').next().unwrap().to_owned();
    let forged = stack.post_form("/oauth/consent/forget", Some(&other_binding), &[("proof", &proof)]).await;
    assert_eq!((forged.status, cookie_set(&forged, REMEMBERED)), (400, None), "another browser's post forgets nothing");
    assert_eq!(stack.post_form("/oauth/consent/forget", None, &[("proof", &proof)]).await.status, 400);
    let forgotten = stack.post_form("/oauth/consent/forget", Some(&browser), &[("proof", &proof)]).await;
    assert_eq!(forgotten.status, 200);
    assert_eq!(cookie_set(&forgotten, REMEMBERED).as_deref(), Some(""));
    assert!(forgotten.headers["set-cookie"].to_str().unwrap().contains("Max-Age=0"));
    assert_eq!(stack.get(&narrow, Some(&binding)).await.status, 200, "the page again");
}

#[tokio::test]
async fn a_trusted_client_skips_the_page_and_a_registered_one_is_never_remembered() {
    let host = two_documents().await;
    let client_id = host.url("/client.json");
    let stack = start_at(in_memory(), trusting(&host), None, &[("MCP_OAUTH_TRUSTED_CLIENT_IDS", &client_id)]).await;
    // A browser never seen: bound on the way to the provider.
    let skipped = stack.get(&stack.authorize_path(&client_id, LOOPBACK_REDIRECT, &[]), None).await;
    let binding = format!("mcp-oauth={}", cookie_set(&skipped, "mcp-oauth").expect("a binding cookie"));
    let back = query(&stack.follow_upstream(&binding, &skipped).await);
    assert_eq!(stack.exchange(&client_id, &back["code"], VERIFIER, &[]).await.status, 200);
    // A registration: no memory asked for is kept, and the page says so.
    let registered = stack.client(&[LOOPBACK_REDIRECT]).await;
    let path = stack.authorize_path(&registered, LOOPBACK_REDIRECT, &[]);
    let (binding, remembered) = approve_remembering(&stack, &path).await;
    assert_eq!(remembered, None);
    let page = stack.get(&path, Some(&binding)).await;
    assert_eq!(page.status, 200);
    assert!(String::from_utf8_lossy(&page.body).contains("not remembered"));
}

#[tokio::test]
async fn a_remembered_approval_ends_after_its_lifetime() {
    let clock = ManualClock::at(jsonwebtoken::get_current_timestamp());
    let backends = Backends {
        clock: Arc::new(clock.clone()),
        sealer: Arc::new(
            EnvelopeSealer::new(InProcessKey::generate()).with_max_token_bytes(MAX_SEALED_BYTES).with_clock(Arc::new(clock.clone())),
        ),
        ..in_memory()
    };
    let (stack, client_id, _) = documents_stack(backends, &[]).await;
    let path = stack.authorize_path(&client_id, LOOPBACK_REDIRECT, &[]);
    let (binding, remembered) = approve_remembering(&stack, &path).await;
    let browser = format!("{binding}; {}", remembered.unwrap());
    assert_eq!(stack.get(&path, Some(&browser)).await.status, 303, "remembered");
    clock.advance(authorization::lifetimes::Lifetimes::default().remembered_consent.as_secs() + 1);
    assert_eq!(stack.get(&path, Some(&browser)).await.status, 200, "ended: the page again");
}

/// An RFC 7523 client assertion of `client_id` for `audience`, signed by
/// `key`, with `claims` over the usual ones.
fn assertion(key: &SigningKey, client_id: &str, audience: &str, claims: Value) -> String {
    let now = jsonwebtoken::get_current_timestamp();
    let jti = URL_SAFE_NO_PAD.encode(mcp_stateless::random::bytes::<16>());
    let mut all = json!({"iss": client_id, "sub": client_id, "aud": audience, "iat": now, "exp": now + 60, "jti": jti});
    all.as_object_mut().unwrap().extend(claims.as_object().unwrap().clone());
    key.sign(&all)
}

fn with_assertion(assertion: &str) -> [(&str, &str); 2] {
    [("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"), ("client_assertion", assertion)]
}

/// ChatGPT's document shape (django-oauth-toolkit #1845): `private_key_jwt`
/// with `none` offered beside it, keys at `jwks_uri`. It signs in without
/// an assertion; an assertion it sends must hold; a family started with
/// one is refreshed and revoked only with one. A document that offers no `none`
/// authenticates every time.
#[tokio::test]
async fn chatgpts_document_signs_in_and_its_assertions_are_verified() {
    let host = DocumentHost::start().await;
    let key = SigningKey::new("chatgpt-1");
    // Kept a minute, as a publisher's documents are: the many requests
    // below fetch each once, within the fetch budget.
    let kept = |body: String| Answer { status: 200, body, cache_control: Some("max-age=60") };
    host.answer("/jwks.json", kept(json!({"keys": [key.jwk()]}).to_string()));
    let methods = json!({
        "token_endpoint_auth_method": "private_key_jwt",
        "token_endpoint_auth_methods_supported": ["none", "private_key_jwt"],
        "jwks_uri": host.url("/jwks.json"),
    });
    host.answer("/chatgpt.json", kept(metadata_document(&host, "/chatgpt.json", methods).to_string()));
    let strict = json!({"token_endpoint_auth_method": "private_key_jwt", "jwks_uri": host.url("/jwks.json")});
    host.answer("/strict.json", kept(metadata_document(&host, "/strict.json", strict).to_string()));
    let stack = start(in_memory(), trusting(&host)).await;
    let metadata = stack.get("/.well-known/oauth-authorization-server", None).await.json();
    for endpoint in ["token", "revocation"] {
        assert_eq!(metadata[format!("{endpoint}_endpoint_auth_methods_supported")], json!(["none", "private_key_jwt"]));
        assert!(metadata[format!("{endpoint}_endpoint_auth_signing_alg_values_supported")].as_array().unwrap().contains(&json!("ES256")));
    }
    let (client_id, token_endpoint) = (host.url("/chatgpt.json"), format!("{}/oauth/token", stack.issuer));

    // No assertion: `none` is offered.
    let code = stack.code(&client_id, LOOPBACK_REDIRECT).await;
    let public = stack.exchange(&client_id, &code, VERIFIER, &[]).await;
    assert_eq!(public.status, 200, "{:?}", public.body);

    // Assertions that do not hold are invalid_client, and spend no code.
    let code = stack.code(&client_id, LOOPBACK_REDIRECT).await;
    let now = jsonwebtoken::get_current_timestamp();
    let replayed = assertion(&key, &client_id, &token_endpoint, json!({}));
    let first_use = stack.refresh(&client_id, public.json()["refresh_token"].as_str().unwrap(), &with_assertion(&replayed)).await;
    assert_eq!(first_use.status, 200, "{:?}", first_use.body);
    for (bad, why) in [
        (assertion(&SigningKey::new("chatgpt-1"), &client_id, &token_endpoint, json!({})), "another key"),
        (assertion(&key, &client_id, &token_endpoint, json!({"iat": now - 600, "exp": now - 300})), "expired"),
        (assertion(&key, &client_id, &token_endpoint, json!({"exp": now + 3600})), "too long-lived"),
        (assertion(&key, &client_id, "https://other.example.com/oauth/token", json!({})), "another audience"),
        (assertion(&key, &host.url("/strict.json"), &token_endpoint, json!({})), "another client's iss and sub"),
        (assertion(&key, &client_id, &token_endpoint, json!({"jti": null})), "no jti"),
        (replayed.clone(), "replayed"),
        ("not.a.jwt".to_owned(), "not a JWT"),
    ] {
        let refused = stack.exchange(&client_id, &code, VERIFIER, &with_assertion(&bad)).await;
        assert_eq!((refused.status, error_of(&refused)), (401, "invalid_client".to_owned()), "{why}: {:?}", refused.body);
    }
    // A key id the set lacks fetches the set again, at most once a minute.
    let fetched = host.fetches("/jwks.json");
    for n in 0..3 {
        let unknown_key = assertion(&SigningKey::new(&format!("rotated-{n}")), &client_id, &token_endpoint, json!({}));
        assert_eq!(stack.exchange(&client_id, &code, VERIFIER, &with_assertion(&unknown_key)).await.status, 401);
    }
    assert!(host.fetches("/jwks.json") <= fetched + 1, "{} fetches for three unknown key ids", host.fetches("/jwks.json") - fetched);
    let authenticated =
        stack.exchange(&client_id, &code, VERIFIER, &with_assertion(&assertion(&key, &client_id, &stack.issuer, json!({})))).await;
    assert_eq!(authenticated.status, 200, "the issuer is an audience too, and the code was not spent: {:?}", authenticated.body);
    let refresh_token = authenticated.json()["refresh_token"].as_str().unwrap().to_owned();
    let bare = stack.refresh(&client_id, &refresh_token, &[]).await;
    assert_eq!((bare.status, error_of(&bare)), (401, "invalid_client".to_owned()), "an authenticated family always authenticates");
    let again = stack.refresh(&client_id, &refresh_token, &with_assertion(&assertion(&key, &client_id, &token_endpoint, json!({})))).await;
    assert_eq!(again.status, 200, "{:?}", again.body);
    // ...and is revoked only with one: whoever holds its current token cannot end it.
    let current = again.json()["refresh_token"].as_str().unwrap().to_owned();
    let revocation_endpoint = format!("{}/oauth/revoke", stack.issuer);
    let for_revocation = assertion(&key, &client_id, &revocation_endpoint, json!({}));
    let refused = stack.refresh(&client_id, &current, &with_assertion(&for_revocation)).await;
    assert_eq!((refused.status, error_of(&refused)), (401, "invalid_client".to_owned()), "made for revocation, not taken here");
    let bare = stack.revoke(&client_id, &current, &[]).await;
    assert_eq!((bare.status, error_of(&bare)), (401, "invalid_client".to_owned()), "{:?}", bare.body);
    let wrong_key = assertion(&SigningKey::new("chatgpt-1"), &client_id, &revocation_endpoint, json!({}));
    assert_eq!(stack.revoke(&client_id, &current, &with_assertion(&wrong_key)).await.status, 401);
    // Those refusals left the family as it was: it still refreshes.
    let spent_at_token = assertion(&key, &client_id, &token_endpoint, json!({}));
    let still = stack.refresh(&client_id, &current, &with_assertion(&spent_at_token)).await;
    assert_eq!(still.status, 200, "{:?}", still.body);
    let current = still.json()["refresh_token"].as_str().unwrap().to_owned();
    let replayed = stack.revoke(&client_id, &current, &with_assertion(&spent_at_token)).await;
    assert_eq!((replayed.status, error_of(&replayed)), (401, "invalid_client".to_owned()), "a jti spent at the token endpoint");
    let signed = assertion(&key, &client_id, &revocation_endpoint, json!({}));
    let revoked = stack.revoke(&client_id, &current, &with_assertion(&signed)).await;
    assert_eq!(revoked.status, 200, "the revocation endpoint is an audience there: {:?}", revoked.body);
    let ended = stack.refresh(&client_id, &current, &with_assertion(&assertion(&key, &client_id, &token_endpoint, json!({})))).await;
    assert_eq!((ended.status, error_of(&ended)), (400, "invalid_grant".to_owned()), "revoked");

    // A document that offers no `none`: an assertion every time.
    let strict_id = host.url("/strict.json");
    let code = stack.code(&strict_id, LOOPBACK_REDIRECT).await;
    let bare = stack.exchange(&strict_id, &code, VERIFIER, &[]).await;
    assert_eq!((bare.status, error_of(&bare)), (401, "invalid_client".to_owned()), "{:?}", bare.body);
    let code = stack.code(&strict_id, LOOPBACK_REDIRECT).await;
    let signed =
        stack.exchange(&strict_id, &code, VERIFIER, &with_assertion(&assertion(&key, &strict_id, &token_endpoint, json!({})))).await;
    assert_eq!(signed.status, 200, "{:?}", signed.body);
}

/// A document whose host starts answering a challenge page (403), a 5xx or
/// nothing: the last good copy stands in, shared through the table by
/// another instance; a pinned copy where there is none; else 503 with
/// `Retry-After`, never a redirect. A host that serves another document,
/// or says it is gone, is believed.
#[tokio::test]
async fn a_document_fetch_that_fails_falls_back_to_the_last_good_copy_or_a_pin_else_503() {
    let direct = emulator::sdk().await;
    let table = emulator::fresh_table(&direct).await;
    let copies = || -> Arc<dyn LastGoodCopies> { Arc::new(DynamoDocuments::new(aws_sdk_dynamodb::Client::new(&direct), &table)) };
    let host = DocumentHost::start().await;
    let client_id = host.url("/client.json");
    let document = metadata_document(&host, "/client.json", json!({})).to_string();
    host.serve("/client.json", 200, document.clone());
    // One instance fetches it (and keeps its copy in the table)...
    let first = start_with_documents(trusting(&host), copies(), &[]).await;
    assert_eq!(first.get(&first.authorize_path(&client_id, LOOPBACK_REDIRECT, &[]), None).await.status, 200);
    // ...then the host challenges cloud addresses, fails, or hangs.
    let second = start_with_documents(trusting(&host), copies(), &[]).await;
    for (status, body) in [(403, "<html>Just a moment...</html>"), (503, "busy"), (200, "<html>Checking your browser</html>")] {
        host.serve("/client.json", status, body);
        let page = second.get(&second.authorize_path(&client_id, LOOPBACK_REDIRECT, &[]), None).await;
        assert_eq!(page.status, 200, "HTTP {status}: the last good copy stands in: {}", String::from_utf8_lossy(&page.body));
        assert!(String::from_utf8_lossy(&page.body).contains("Metadata App"));
    }
    // Nothing kept anywhere: 503, Retry-After, no redirect, nothing of what the host said.
    let unknown = host.url("/new.json");
    host.serve("/new.json", 403, "<html>challenge-token-4711</html>");
    let fresh = start_with_documents(trusting(&host), copies(), &[]).await;
    let reply = fresh.get(&fresh.authorize_path(&unknown, LOOPBACK_REDIRECT, &[]), None).await;
    assert_eq!(reply.status, 503, "{}", String::from_utf8_lossy(&reply.body));
    assert!(reply.headers.contains_key("retry-after") && !reply.headers.contains_key("location"));
    assert!(!String::from_utf8_lossy(&reply.body).contains("challenge-token-4711"), "the fetched body is never echoed");
    // A host that now serves another valid document, or says it is gone, is believed.
    host.serve(
        "/client.json",
        200,
        metadata_document(&host, "/client.json", json!({"redirect_uris": ["http://127.0.0.1:9/elsewhere"]})).to_string(),
    );
    // (A copy that stood in is kept a minute in its instance: another instance asks.)
    for (status, body, what) in
        [(200, "", "the new document's redirect URIs count, not the copy's"), (404, "gone", "a document gone is gone")]
    {
        if status == 404 {
            host.serve("/client.json", status, body);
        }
        let instance = start_with_documents(trusting(&host), copies(), &[]).await;
        let reply = instance.get(&instance.authorize_path(&client_id, LOOPBACK_REDIRECT, &[]), None).await;
        assert_eq!(reply.status, 400, "{what}");
    }
    // A withdrawn document's copy is forgotten: a failure later brings nothing back.
    host.serve("/client.json", 403, "<html>challenge</html>");
    let after = start_with_documents(trusting(&host), copies(), &[]).await;
    assert_eq!(after.get(&after.authorize_path(&client_id, LOOPBACK_REDIRECT, &[]), None).await.status, 503);

    // Claude Code's document cannot be fetched from here: its pin stands in, unless unpinned.
    let claude_code = "https://claude.ai/oauth/claude-code-client-metadata";
    let pinned = start_with_documents(no_documents(), copies(), &[]).await;
    let page = pinned.get(&pinned.authorize_path(claude_code, "http://127.0.0.1:41234/callback", &[]), None).await;
    assert_eq!(page.status, 200, "{}", String::from_utf8_lossy(&page.body));
    assert!(String::from_utf8_lossy(&page.body).contains("Claude Code"));
    let unpinned = start_with_documents(no_documents(), copies(), &[("MCP_OAUTH_UNPINNED_CLIENTS", claude_code)]).await;
    let reply = unpinned.get(&unpinned.authorize_path(claude_code, "http://127.0.0.1:41234/callback", &[]), None).await;
    assert_eq!((reply.status, reply.headers.contains_key("retry-after")), (503, true));
}
