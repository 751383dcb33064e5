//! The client's part (RFC 6749, 3.2 and 6; RFC 7009): codes for tokens,
//! refresh tokens for new ones, and revocation. Most clients are public
//! (those with keys add an RFC 7523 assertion, `authenticate`), so the
//! code is proven by its PKCE verifier and the refresh token by being the
//! current one of its family: it is rotated on every use, and a token
//! used after its successor ends the family (OAuth 2.1, 4.3.1). The one
//! before the current one stays usable until the current one is used: a
//! client whose answer was lost retries with it (`grants` says how).

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use bytes::Bytes;
use headers::{Authorization, HeaderMapExt, authorization::Basic};
use http::{Request, Response, StatusCode, header};
use mcp_stateless::{random, storage::StoreError};
use serde_json::json;

use mcp_stateless::sealed::redemption::Redemption;

use crate::{
    clients::{ClientError, authentication::JWT_BEARER},
    grants::{Presented, RefreshGrant, Revocation, Rotated, key_of, new_secret},
    pkce, resource,
    responses::{ErrorCode, OAuthError, json_response},
    scopes,
    server::{AuthorizationServer, Endpoints, PATHS, parameter, parameters, sender},
    sign_in_log::{self, Event, Facts},
    signing::{self, AccessClaims},
};

/// The largest token or revocation request read.
const MAX_FORM_BYTES: usize = 16 * 1024;

fn invalid(code: ErrorCode, description: &str) -> OAuthError {
    OAuthError::new(code, description)
}

fn must_authenticate() -> OAuthError {
    invalid(ErrorCode::InvalidClient, "this client authenticates with private_key_jwt (a client_assertion)")
}

fn bad_refresh_token() -> OAuthError {
    invalid(ErrorCode::InvalidGrant, "the refresh token is invalid, expired, revoked or already used")
}

fn store_failed(error: StoreError) -> OAuthError {
    tracing::error!(%error, "the grant store failed");
    invalid(ErrorCode::TemporarilyUnavailable, "try again")
}

/// A form body's parameters, and the client id from it or from HTTP Basic
/// (a public client may send its id there with an empty secret).
fn form_and_client(request: &Request<Bytes>) -> Result<(Vec<(String, String)>, String), OAuthError> {
    if request.body().len() > MAX_FORM_BYTES {
        return Err(invalid(ErrorCode::InvalidRequest, "the request is too large"));
    }
    let body = std::str::from_utf8(request.body()).map_err(|_| invalid(ErrorCode::InvalidRequest, "the body is not a form"))?;
    let form = parameters(body).map_err(|why| OAuthError::new(ErrorCode::InvalidRequest, why))?;
    let from_basic = match request.headers().typed_try_get::<Authorization<Basic>>() {
        Ok(basic) => basic.map(|basic| form_decoded(basic.username())),
        Err(_) => None,
    };
    let client_id = match (parameter(&form, "client_id"), from_basic.flatten()) {
        (Some(body), Some(basic)) if body != basic => return Err(invalid(ErrorCode::InvalidClient, "two different client ids")),
        (Some(id), _) => id.to_owned(),
        (None, Some(id)) if !id.is_empty() => id,
        _ => return Err(invalid(ErrorCode::InvalidClient, "client_id is required")),
    };
    Ok((form, client_id))
}

/// The client id as HTTP Basic carries it (RFC 6749, 2.3.1: form-encoded,
/// so `+` is a space and `%XX` a byte); `None` if it is not UTF-8.
fn form_decoded(text: &str) -> Option<String> {
    percent_encoding::percent_decode_str(&text.replace('+', " ")).decode_utf8().ok().map(|text| text.into_owned())
}

fn client_failed(error: ClientError) -> OAuthError {
    match error {
        ClientError::Unknown(why) => {
            tracing::info!(%why, "a client's authentication was refused");
            invalid(ErrorCode::InvalidClient, &why)
        }
        ClientError::Unavailable(why) => {
            tracing::warn!(%why, "a client could not be looked up");
            invalid(ErrorCode::TemporarilyUnavailable, "the client could not be looked up just now; try again")
        }
    }
}

impl AuthorizationServer {
    /// Whether the request, sent to this server's path `at`, carries a
    /// client assertion that holds (RFC 7521, 4.2; RFC 7523, 3): checked,
    /// and its `jti` spent once. No assertion is `false`; one that fails is
    /// `invalid_client`.
    async fn authenticate(
        &self,
        form: &[(String, String)],
        client_id: &str,
        endpoints: &Endpoints,
        at: &str,
        now: u64,
        sender: &str,
    ) -> Result<bool, OAuthError> {
        let assertion = match (parameter(form, "client_assertion_type"), parameter(form, "client_assertion")) {
            (None, None) => return Ok(false),
            (Some(JWT_BEARER), Some(assertion)) => assertion,
            _ => return Err(invalid(ErrorCode::InvalidClient, "client_assertion_type must be jwt-bearer, with a client_assertion")),
        };
        // The audiences that name this server here (RFC 7523, 3): the
        // issuer, the token endpoint (which clients name wherever they
        // send an assertion), and the endpoint the assertion was sent to.
        // No other: an assertion made for revocation is not taken at the
        // token endpoint.
        let token_endpoint = format!("{}{}", endpoints.issuer, PATHS.token);
        let here = format!("{}{at}", endpoints.issuer);
        let audiences = [endpoints.issuer.as_str(), token_endpoint.as_str(), here.as_str()];
        let verified = self.parts.clients.authenticate(client_id, assertion, &audiences, now, sender).await.map_err(client_failed)?;
        // Spent under the client's id: one client's ids never clash with another's.
        let spent = key_of(&format!("{client_id}\n{}", verified.jti));
        match self.parts.ledger.redeem(&spent, verified.expires_at, now).await {
            Ok(Redemption::First) => Ok(true),
            Ok(Redemption::Replay) => Err(invalid(ErrorCode::InvalidClient, "the client assertion was used before")),
            Err(error) => {
                tracing::error!(%error, "single-use ledger unavailable");
                Err(invalid(ErrorCode::TemporarilyUnavailable, "try again"))
            }
        }
    }

    /// `POST /oauth/token`.
    pub(crate) async fn token(&self, request: &Request<Bytes>) -> Result<Response<Bytes>, OAuthError> {
        let (form, client_id) = form_and_client(request)?;
        let endpoints = self.endpoints(request.headers());
        let now = self.parts.clock.now();
        let authenticated = self.authenticate(&form, &client_id, &endpoints, PATHS.token, now, sender(request)).await?;
        let lifetimes = &self.parts.settings.lifetimes;
        let resource_asked = parameter(&form, "resource");
        // The access token's scopes, and the grant's (which a refresh
        // token keeps whole, RFC 6749, 6: a narrower request narrows only
        // the access token).
        let (subject, scope, granted, family, presented) = match parameter(&form, "grant_type") {
            Some("authorization_code") => {
                let code = parameter(&form, "code").ok_or_else(|| invalid(ErrorCode::InvalidRequest, "code is required"))?;
                let verifier = parameter(&form, "code_verifier")
                    .ok_or_else(|| invalid(ErrorCode::InvalidRequest, "code_verifier is required (PKCE)"))?;
                // Taken (so spent) before any check: a code tried by the
                // wrong client or with the wrong verifier is gone for all.
                let grant = self.parts.grants.take_code(&key_of(code), now).await.map_err(store_failed)?;
                let bad_code = || invalid(ErrorCode::InvalidGrant, "the code is invalid, expired, used, or not this client's");
                let grant = grant.ok_or_else(bad_code)?;
                if grant.client_id != client_id {
                    return Err(bad_code());
                }
                if grant.must_authenticate && !authenticated {
                    return Err(must_authenticate());
                }
                if parameter(&form, "redirect_uri").is_some_and(|uri| uri != grant.redirect_uri) {
                    return Err(invalid(ErrorCode::InvalidGrant, "redirect_uri is not the one the code was sent to"));
                }
                if !pkce::proves(verifier, &grant.code_challenge) {
                    return Err(invalid(ErrorCode::InvalidGrant, "code_verifier does not match the code_challenge"));
                }
                if !resource::admits(resource_asked, &grant.resource) {
                    return Err(invalid(ErrorCode::InvalidTarget, "the code was issued for another resource"));
                }
                (grant.subject, grant.scope.clone(), grant.scope, URL_SAFE_NO_PAD.encode(random::bytes::<16>()), None)
            }
            Some("refresh_token") => {
                let token =
                    parameter(&form, "refresh_token").ok_or_else(|| invalid(ErrorCode::InvalidRequest, "refresh_token is required"))?;
                let key = key_of(token);
                let revoked_until = now + lifetimes.refresh_token.as_secs();
                // Read, not spent: the token is replaced only by the write
                // that stores its successor, after the access token is
                // signed, so no failure on this side ends the grant.
                let usable = match self.parts.grants.present_refresh(&key, now, revoked_until).await.map_err(store_failed)? {
                    Presented::Usable(usable) => usable,
                    Presented::Reused(grant) => {
                        tracing::warn!("a refresh token was used after its successor: its family is revoked");
                        sign_in_log::record(Facts::new(Event::RefreshReuse, &grant.client_id).of(&grant.subject));
                        return Err(bad_refresh_token());
                    }
                    Presented::Unknown => return Err(bad_refresh_token()),
                };
                let grant = &usable.grant;
                if grant.client_id != client_id {
                    return Err(bad_refresh_token());
                }
                // A family started with an assertion is never refreshed without one.
                if grant.authenticated && !authenticated {
                    return Err(must_authenticate());
                }
                if !resource::admits(resource_asked, &grant.resource) {
                    return Err(invalid(ErrorCode::InvalidTarget, "the refresh token was issued for another resource"));
                }
                // RFC 6749, 6: a narrower scope may be asked for, never a wider one.
                let scope = match parameter(&form, "scope") {
                    None => grant.scope.clone(),
                    Some(asked) if !scopes::is_within(asked, &grant.scope) => {
                        return Err(invalid(ErrorCode::InvalidScope, "a scope that was never granted"));
                    }
                    Some(asked) => {
                        let held: Vec<&str> = scopes::tokens(&grant.scope).collect();
                        scopes::granted(Some(asked), &held)
                    }
                };
                (grant.subject.clone(), scope, grant.scope.clone(), grant.family.clone(), Some((key, usable)))
            }
            Some(_) => return Err(invalid(ErrorCode::UnsupportedGrantType, "grant_type must be authorization_code or refresh_token")),
            None => return Err(invalid(ErrorCode::InvalidRequest, "grant_type is required")),
        };
        let claims = AccessClaims {
            iss: &endpoints.issuer,
            sub: &subject,
            aud: &endpoints.resource,
            client_id: &client_id,
            scope: &scope,
            iat: now,
            exp: now + lifetimes.access_token.as_secs(),
            jti: URL_SAFE_NO_PAD.encode(random::bytes::<16>()),
        };
        let access_token = signing::access_token(&self.parts.signer, &claims).await.map_err(|error| {
            tracing::error!(%error, "an access token could not be signed");
            invalid(ErrorCode::TemporarilyUnavailable, "try again")
        })?;
        let refresh_token = new_secret();
        let refresh = RefreshGrant {
            family,
            client_id: client_id.clone(),
            resource: endpoints.resource.clone(),
            scope: granted,
            subject: subject.clone(),
            expires_at: now + lifetimes.refresh_token.as_secs(),
            authenticated,
        };
        let successor = key_of(&refresh_token);
        let event = if presented.is_none() { Event::SignIn } else { Event::Refresh };
        match presented {
            None => self.parts.grants.start_family(&successor, &refresh).await.map_err(store_failed)?,
            Some((key, usable)) => {
                match self.parts.grants.rotate_refresh(&key, &usable, &successor, &refresh).await.map_err(store_failed)? {
                    Rotated::Done => {}
                    // A concurrent refresh of the same family won: this one
                    // changed nothing, and its token is what it was.
                    Rotated::Raced => return Err(bad_refresh_token()),
                }
            }
        }
        sign_in_log::record(Facts::new(event, &client_id).of(&subject).saying(if authenticated { "private_key_jwt" } else { "public" }));
        Ok(json_response(
            StatusCode::OK,
            &json!({
                "access_token": access_token,
                "token_type": "Bearer",
                "expires_in": lifetimes.access_token.as_secs(),
                "refresh_token": refresh_token,
                "scope": scope,
            }),
        ))
    }

    /// `POST /oauth/revoke` (RFC 7009): a refresh token's family ends.
    /// Access tokens are short JWTs nothing can recall; revoking one, or
    /// an unknown token, is answered 200 all the same (RFC 7009, 2.2).
    /// A family started with a client assertion is revoked only with one,
    /// as it is refreshed only with one.
    pub(crate) async fn revoke(&self, request: &Request<Bytes>) -> Result<Response<Bytes>, OAuthError> {
        let (form, client_id) = form_and_client(request)?;
        let token = parameter(&form, "token").ok_or_else(|| invalid(ErrorCode::InvalidRequest, "token is required"))?;
        let now = self.parts.clock.now();
        let endpoints = self.endpoints(request.headers());
        let authenticated = self.authenticate(&form, &client_id, &endpoints, PATHS.revoke, now, sender(request)).await?;
        let revoked_until = now + self.parts.settings.lifetimes.refresh_token.as_secs();
        let revocation =
            self.parts.grants.revoke_refresh(&key_of(token), &client_id, authenticated, revoked_until).await.map_err(store_failed)?;
        if revocation == Revocation::Unauthenticated {
            return Err(must_authenticate());
        }
        // Said whether or not the token was known and the client's (RFC 7009 answers 200 to both).
        sign_in_log::record(Facts::new(Event::Revocation, &client_id));
        let mut response = Response::new(Bytes::new());
        response.headers_mut().insert(header::CACHE_CONTROL, http::HeaderValue::from_static("no-store"));
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::form_decoded;

    #[test]
    fn a_basic_client_id_is_form_decoded() {
        assert_eq!(form_decoded("https%3A%2F%2Fapp.example%2Fc.json%3Fv%3D2").as_deref(), Some("https://app.example/c.json?v=2"));
        assert_eq!(form_decoded("a+b").as_deref(), Some("a b"));
        assert_eq!(form_decoded("v1.abc-_").as_deref(), Some("v1.abc-_"));
        assert_eq!(form_decoded("%FF"), None, "not UTF-8");
    }
}
