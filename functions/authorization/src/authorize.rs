//! The browser's part of signing in (RFC 6749, 4.1, with PKCE S256 only):
//!
//! 1. `GET /oauth/authorize`: the client and its redirect URI are checked
//!    first; until both are, a problem gets an error page and no redirect
//!    (an open redirect otherwise). Then the request itself; its problems
//!    go back to the client, with `state` and `iss` (RFC 9207). A good
//!    request gets the consent page, which carries it sealed and bound to
//!    this browser's cookie; unless the operator trusts the client
//!    (`MCP_OAUTH_TRUSTED_CLIENT_IDS`) or this browser remembers approving
//!    this very request (`remembered_consent`), when it goes on as an
//!    approval would.
//! 2. `POST /oauth/consent`: the form opens only with the cookie of the
//!    browser it was shown in (CSRF), once. Approval sends the browser to
//!    the upstream provider with a sealed `state`, bound to the same
//!    cookie. Nothing is forwarded upstream before the user approves (now,
//!    or earlier in this browser, for this client, redirect URI and
//!    scope): a provider that remembers the user cannot be made to sign
//!    them in for a client they never saw (the spec's "confused deputy").
//! 3. `GET /oauth/callback`: the state opens only in the browser that
//!    approved, once; the provider's code becomes the user's subject, and
//!    the client gets a code of this server's, good once for a minute.

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use mcp_stateless::{random, sealed::redemption::Redemption};
use serde::{Deserialize, Serialize};

use crate::{
    clients::{ClientError, is_metadata_document_id, redirect::RedirectUri},
    cookies::{Cookie, Jar, new_binding},
    grants::{CodeGrant, key_of, new_secret},
    pages::{self, Consent},
    pkce,
    remembered_consent::{Approval, Remembered},
    resource,
    responses::{self, ErrorCode},
    scopes,
    sealing::{Purpose, SealingError},
    server::{AuthorizationServer, Endpoints, PATHS, parameter, parameters, sender},
    upstream::UpstreamError,
};

/// The longest `state` taken from a client.
pub const MAX_STATE_BYTES: usize = 512;

/// An authorization request that passed every check, as the consent page
/// carries it (sealed) to the approval.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Approved {
    client_id: String,
    /// As the client sent it (its port, for loopback).
    redirect_uri: String,
    state: Option<String>,
    challenge: String,
    scope: String,
    resource: String,
    /// Whether the client must authenticate at the token endpoint (its
    /// document offers no `none`): the code remembers, so the token
    /// endpoint need not look the client up again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    must_authenticate: bool,
}

/// The sign-in at the provider, as its `state` carries it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct InFlight {
    request: Approved,
    verifier: String,
    nonce: String,
}

/// A request that failed after its redirect URI was trusted: sent back there.
struct Refusal {
    code: ErrorCode,
    description: String,
}

fn refusal(code: ErrorCode, description: impl Into<String>) -> Refusal {
    Refusal { code, description: description.into() }
}

impl AuthorizationServer {
    /// The client's redirect with `pairs`, `state` and `iss` (RFC 9207).
    fn answer_client(endpoints: &Endpoints, redirect_uri: &str, state: Option<&str>, pairs: &[(&str, &str)]) -> Response<Bytes> {
        let mut all: Vec<(&str, &str)> = pairs.to_vec();
        if let Some(state) = state {
            all.push(("state", state));
        }
        all.push(("iss", &endpoints.issuer));
        // The redirect URI was checked against the client's before any
        // answer is sent to it.
        let location = match RedirectUri::parse(redirect_uri) {
            Ok(uri) => uri.with_query(&all, redirect_uri),
            Err(_) => return pages::error(StatusCode::BAD_REQUEST, "The redirect URI is not valid."),
        };
        responses::redirect(&location)
    }

    fn refuse_to_client(endpoints: &Endpoints, redirect_uri: &str, state: Option<&str>, refusal: Refusal) -> Response<Bytes> {
        tracing::info!(error = refusal.code.as_str(), description = %refusal.description, "authorization refused");
        Self::answer_client(
            endpoints,
            redirect_uri,
            state,
            &[("error", refusal.code.as_str()), ("error_description", &refusal.description)],
        )
    }

    /// `GET /oauth/authorize`.
    pub(crate) async fn authorize(&self, request: &Request<Bytes>) -> Response<Bytes> {
        let endpoints = self.endpoints(request.headers());
        let pairs = match parameters(request.uri().query().unwrap_or_default()) {
            Ok(pairs) => pairs,
            Err(why) => return pages::error(StatusCode::BAD_REQUEST, &why),
        };
        let Some(client_id) = parameter(&pairs, "client_id") else {
            return pages::error(StatusCode::BAD_REQUEST, "The request names no client (client_id).");
        };
        let client = match self.parts.clients.find(client_id, sender(request)).await {
            Ok(client) => client,
            Err(ClientError::Unknown(why)) => {
                return pages::error(StatusCode::BAD_REQUEST, &format!("The client is not known here: {why}."));
            }
            Err(ClientError::Unavailable(why)) => {
                tracing::warn!(%why, "a client could not be looked up");
                return pages::error(StatusCode::SERVICE_UNAVAILABLE, "The client could not be looked up just now; try again.");
            }
        };
        // OAuth 2.1, 4.1.1: with one registered URI the parameter may be left out.
        let redirect_uri = match parameter(&pairs, "redirect_uri") {
            Some(requested) => requested.to_owned(),
            None if client.redirect_uris.len() == 1 => client.redirect_uris[0].as_str().to_owned(),
            None => return pages::error(StatusCode::BAD_REQUEST, "The request names no redirect URI (redirect_uri)."),
        };
        let Some(registered) = client.redirect_uri(&redirect_uri).cloned() else {
            return pages::error(StatusCode::BAD_REQUEST, "The redirect URI is not one this client registered.");
        };
        let state = parameter(&pairs, "state");
        let approved = match self.check_request(&pairs, &endpoints, &client.id, &redirect_uri) {
            Ok(approved) => Approved { must_authenticate: client.authentication.required(), ..approved },
            Err(refusal) => return Self::refuse_to_client(&endpoints, &redirect_uri, state, refusal),
        };
        if self.parts.upstream.is_none() {
            tracing::error!("sign-in is not set up: MCP_OAUTH_UPSTREAM_ISSUER and MCP_OAUTH_UPSTREAM_CLIENT_ID are unset");
            return pages::error(StatusCode::INTERNAL_SERVER_ERROR, "Sign-in is not set up on this server.");
        }
        let jar = Jar::of(&endpoints);
        let known = jar.binding(request.headers());
        let browser = known.clone().unwrap_or_else(new_binding);
        let remembered = match &known {
            Some(browser) => self.remembered(request, &jar, browser).await,
            None => Remembered::default(),
        };
        let asked = Approval::of(&approved.client_id, &approved.redirect_uri, &approved.scope);
        // Only exact ids the operator named (metadata documents, checked
        // at start), or what this browser approved before, bound to it.
        let trusted = self.parts.settings.trusted_client_ids.contains(&client.id);
        if trusted || remembered.covers(&asked, self.parts.clock.now()) {
            tracing::info!(trusted, "consent skipped");
            let mut response = self.send_upstream(&endpoints, &approved, &browser).await;
            if known.is_none() {
                jar.set(&mut response, Cookie::Binding, &browser, self.parts.settings.lifetimes.sign_in);
            }
            return response;
        }
        let lifetime = self.parts.settings.lifetimes.sign_in;
        let sealed = match self.parts.seals.seal(Purpose::Consent, &browser, &approved, lifetime).await {
            Ok(sealed) => sealed,
            Err(SealingError::TooLarge) => {
                let refusal = refusal(ErrorCode::InvalidRequest, "the request is too large to carry through sign-in");
                return Self::refuse_to_client(&endpoints, &redirect_uri, state, refusal);
            }
            Err(_) => {
                let refusal = refusal(ErrorCode::TemporarilyUnavailable, "sign-in is unavailable; try again");
                return Self::refuse_to_client(&endpoints, &redirect_uri, state, refusal);
            }
        };
        let scopes: Vec<String> = scopes::tokens(&approved.scope).map(str::to_owned).collect();
        let action = format!("{}{}", endpoints.issuer, PATHS.consent);
        let forget = format!("{}{}", endpoints.issuer, PATHS.forget);
        let remembers = self.parts.settings.lifetimes.remembered_consent;
        let mut page = pages::consent(&Consent {
            client: &client,
            redirect_shown: registered.shown_as(),
            destination: registered.destination(),
            scopes: &scopes,
            resource: &approved.resource,
            sealed_request: &sealed,
            action: &action,
            remember_days: is_metadata_document_id(&client.id).then_some(remembers.as_secs() / 86_400),
            forget: &forget,
        });
        // Sent again with every page, so it outlives the sign-in it carries
        // (the same value: other tabs' sign-ins stay bound to it), and the
        // approvals it remembers while they last.
        let binding_lifetime = if remembered.is_empty() { lifetime } else { remembers };
        jar.set(&mut page, Cookie::Binding, &browser, binding_lifetime);
        page
    }

    /// The request's own checks, once its client and redirect URI are trusted.
    fn check_request(
        &self,
        pairs: &[(String, String)],
        endpoints: &Endpoints,
        client_id: &str,
        redirect_uri: &str,
    ) -> Result<Approved, Refusal> {
        if parameter(pairs, "response_type") != Some("code") {
            return Err(refusal(ErrorCode::UnsupportedResponseType, "response_type must be code"));
        }
        // Carried through the consent page and the provider's sign-in, sealed:
        // kept to what a client needs (an opaque random value).
        if parameter(pairs, "state").is_some_and(|state| state.len() > MAX_STATE_BYTES) {
            return Err(refusal(ErrorCode::InvalidRequest, format!("state may be {MAX_STATE_BYTES} bytes at most")));
        }
        let challenge = parameter(pairs, "code_challenge");
        pkce::check_challenge(parameter(pairs, "code_challenge_method"), challenge)
            .map_err(|why| refusal(ErrorCode::InvalidRequest, why))?;
        let challenge = challenge.unwrap_or_default();
        // RFC 8707: the only resource here is this MCP server. A client
        // that sends none (some do; the spec says they must) gets it too.
        if !resource::admits(parameter(pairs, "resource"), &endpoints.resource) {
            return Err(refusal(ErrorCode::InvalidTarget, format!("tokens here are for {} only", endpoints.resource)));
        }
        // What is not offered is left out, and nothing left means the
        // default scopes, never `invalid_scope` (RFC 6749, 3.3; `scopes`).
        let scope = scopes::granted(parameter(pairs, "scope"), &self.parts.settings.scopes);
        Ok(Approved {
            client_id: client_id.to_owned(),
            redirect_uri: redirect_uri.to_owned(),
            state: parameter(pairs, "state").map(str::to_owned),
            challenge: challenge.to_owned(),
            scope,
            resource: endpoints.resource.clone(),
            must_authenticate: false,
        })
    }

    /// A sealed record of `purpose` from this browser, opened and spent
    /// once; with the browser's binding, which the next record is sealed to.
    async fn open_once<T: serde::de::DeserializeOwned>(
        &self,
        request: &Request<Bytes>,
        endpoints: &Endpoints,
        purpose: Purpose,
        sealed: Option<&str>,
    ) -> Result<(T, String), Response<Bytes>> {
        let headers = request.headers();
        let expired =
            || pages::error(StatusCode::BAD_REQUEST, "This sign-in has expired, was already answered, or was started in another browser.");
        let browser = Jar::of(endpoints).binding(headers).ok_or_else(|| {
            pages::error(
                StatusCode::BAD_REQUEST,
                "This browser did not keep the sign-in's cookie: allow cookies for this site and start again.",
            )
        })?;
        let opened = match self.parts.seals.open::<T>(purpose, &browser, sealed.unwrap_or_default(), sender(request)).await {
            Ok(opened) => opened,
            Err(SealingError::Unavailable(why)) => {
                tracing::error!(%why, "sealing keys unavailable");
                return Err(pages::error(StatusCode::SERVICE_UNAVAILABLE, "Sign-in is unavailable just now; try again."));
            }
            Err(_) => return Err(expired()),
        };
        match self.parts.ledger.redeem(&opened.jti, opened.expires_at, self.parts.clock.now()).await {
            Ok(Redemption::First) => Ok((opened.value, browser)),
            Ok(Redemption::Replay) => Err(expired()),
            Err(error) => {
                tracing::error!(%error, "single-use ledger unavailable");
                Err(pages::error(StatusCode::SERVICE_UNAVAILABLE, "Sign-in is unavailable just now; try again."))
            }
        }
    }

    /// `POST /oauth/consent`.
    pub(crate) async fn consent(&self, request: &Request<Bytes>) -> Response<Bytes> {
        let endpoints = self.endpoints(request.headers());
        let form = std::str::from_utf8(request.body()).ok().and_then(|body| parameters(body).ok()).unwrap_or_default();
        let (approved, browser): (Approved, _) =
            match self.open_once(request, &endpoints, Purpose::Consent, parameter(&form, "request")).await {
                Ok(opened) => opened,
                Err(page) => return page,
            };
        let state = approved.state.as_deref();
        if parameter(&form, "decision") != Some("approve") {
            return Self::refuse_to_client(
                &endpoints,
                &approved.redirect_uri,
                state,
                refusal(ErrorCode::AccessDenied, "the user denied access"),
            );
        }
        let mut response = self.send_upstream(&endpoints, &approved, &browser).await;
        if parameter(&form, "remember") == Some("yes") {
            let approval = Approval::of(&approved.client_id, &approved.redirect_uri, &approved.scope);
            self.remember(request, &Jar::of(&endpoints), &browser, approval, &mut response).await;
        }
        response
    }

    /// An approved request on to the upstream provider, its sign-in sealed
    /// in `state` and bound to `browser` (after the consent page, or in
    /// its stead when the client is trusted or the approval remembered).
    async fn send_upstream(&self, endpoints: &Endpoints, approved: &Approved, browser: &str) -> Response<Bytes> {
        let state = approved.state.as_deref();
        let Some(upstream) = &self.parts.upstream else {
            return pages::error(StatusCode::INTERNAL_SERVER_ERROR, "Sign-in is not set up on this server.");
        };
        let (verifier, challenge) = pkce::new_pair();
        let nonce = URL_SAFE_NO_PAD.encode(random::bytes::<16>());
        let in_flight = InFlight { request: approved.clone(), verifier, nonce: nonce.clone() };
        let lifetime = self.parts.settings.lifetimes.sign_in;
        let unavailable = || refusal(ErrorCode::TemporarilyUnavailable, "sign-in is unavailable; try again");
        let Ok(sealed) = self.parts.seals.seal(Purpose::UpstreamState, browser, &in_flight, lifetime).await else {
            return Self::refuse_to_client(endpoints, &approved.redirect_uri, state, unavailable());
        };
        let callback = format!("{}{}", endpoints.issuer, PATHS.callback);
        match upstream.authorization_url(&callback, &sealed, &challenge, &nonce).await {
            Ok(location) => responses::redirect(&location),
            Err(error) => {
                tracing::error!(%error, "the upstream provider is unavailable");
                Self::refuse_to_client(endpoints, &approved.redirect_uri, state, unavailable())
            }
        }
    }

    /// `GET /oauth/callback`.
    pub(crate) async fn callback(&self, request: &Request<Bytes>) -> Response<Bytes> {
        let endpoints = self.endpoints(request.headers());
        let pairs = parameters(request.uri().query().unwrap_or_default()).unwrap_or_default();
        let (in_flight, _): (InFlight, _) =
            match self.open_once(request, &endpoints, Purpose::UpstreamState, parameter(&pairs, "state")).await {
                Ok(opened) => opened,
                Err(page) => return page,
            };
        let approved = &in_flight.request;
        let (redirect_uri, state) = (approved.redirect_uri.as_str(), approved.state.as_deref());
        let Some(upstream) = &self.parts.upstream else {
            return pages::error(StatusCode::INTERNAL_SERVER_ERROR, "Sign-in is not set up on this server.");
        };
        if parameter(&pairs, "iss").is_some_and(|iss| !upstream.is_issuer(iss)) {
            return Self::refuse_to_client(
                &endpoints,
                redirect_uri,
                state,
                refusal(ErrorCode::AccessDenied, "the sign-in answer came from another issuer"),
            );
        }
        let Some(code) = parameter(&pairs, "code") else {
            let said = parameter(&pairs, "error").unwrap_or("no code");
            return Self::refuse_to_client(
                &endpoints,
                redirect_uri,
                state,
                refusal(ErrorCode::AccessDenied, format!("sign-in did not complete: {said}")),
            );
        };
        let callback = format!("{}{}", endpoints.issuer, PATHS.callback);
        let now = self.parts.clock.now();
        let subject = match upstream.subject(code, &in_flight.verifier, &callback, &in_flight.nonce, now).await {
            Ok(subject) => subject,
            Err(UpstreamError::Refused(why)) => {
                tracing::warn!(%why, "the upstream sign-in was refused");
                return Self::refuse_to_client(&endpoints, redirect_uri, state, refusal(ErrorCode::AccessDenied, "sign-in was refused"));
            }
            Err(UpstreamError::Unavailable(why)) => {
                tracing::error!(%why, "the upstream provider is unavailable");
                let refusal = refusal(ErrorCode::TemporarilyUnavailable, "sign-in is unavailable; try again");
                return Self::refuse_to_client(&endpoints, redirect_uri, state, refusal);
            }
        };
        let code = new_secret();
        let grant = CodeGrant {
            client_id: approved.client_id.clone(),
            redirect_uri: approved.redirect_uri.clone(),
            code_challenge: approved.challenge.clone(),
            resource: approved.resource.clone(),
            scope: approved.scope.clone(),
            subject,
            expires_at: now + self.parts.settings.lifetimes.code.as_secs(),
            must_authenticate: approved.must_authenticate,
        };
        if let Err(error) = self.parts.grants.put_code(&key_of(&code), &grant).await {
            tracing::error!(%error, "an authorization code could not be stored");
            return Self::refuse_to_client(
                &endpoints,
                redirect_uri,
                state,
                refusal(ErrorCode::ServerError, "the code could not be issued"),
            );
        }
        Self::answer_client(&endpoints, redirect_uri, state, &[("code", &code)])
    }
}
