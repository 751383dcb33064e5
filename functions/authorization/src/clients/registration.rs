//! Dynamic client registration (RFC 7591), stateless: the client id this
//! answers with is the registration itself, sealed, so nothing is stored
//! and nothing needs cleaning up. Deprecated in 2026-07-28, and still the
//! only way many clients sign in (mcp-remote, GitHub Copilot CLI).
//!
//! Every client is public: the answer says `token_endpoint_auth_method:
//! none` whatever was asked (RFC 7591, 3.2.1 lets the server choose), and
//! the code flow's PKCE is what proves the client at the token endpoint.

use bytes::Bytes;
use http::StatusCode;
use serde::Deserialize;
use serde_json::json;

use super::{Clients, Registered, clean_name, redirect};
use crate::{
    responses::{ErrorCode, OAuthError, json_response},
    sealing::{Purpose, SealingError},
    sign_in_log::{self, Event, Facts},
};

/// The largest registration request read.
pub const MAX_REGISTRATION_BYTES: usize = 16 * 1024;
/// The longest client id registration makes: it travels inside the sealed
/// consent page and sign-in state, whose sum must stay a URL's size.
pub const MAX_CLIENT_ID_BYTES: usize = 2048;

#[derive(Deserialize)]
struct Request {
    redirect_uris: Option<Vec<String>>,
    client_name: Option<String>,
    grant_types: Option<Vec<String>>,
    response_types: Option<Vec<String>>,
    application_type: Option<String>,
}

impl Clients {
    /// Registers the client `body` describes.
    pub async fn register(&self, body: &[u8], now: u64, lifetime: std::time::Duration) -> Result<http::Response<Bytes>, OAuthError> {
        let metadata = |why: &str| OAuthError::new(ErrorCode::InvalidClientMetadata, why);
        if body.len() > MAX_REGISTRATION_BYTES {
            return Err(metadata("the registration is too large"));
        }
        let request: Request =
            serde_json::from_slice(body).map_err(|_| metadata("the registration is not a JSON object of client metadata"))?;
        let uris = request.redirect_uris.unwrap_or_default();
        let parsed = redirect::parse_all(&uris).map_err(|why| OAuthError::new(ErrorCode::InvalidRedirectUri, why))?;
        if let Some(types) = &request.grant_types
            && (!types.iter().any(|t| t == "authorization_code") || types.iter().any(|t| t != "authorization_code" && t != "refresh_token"))
        {
            return Err(metadata("grant_types may be authorization_code and refresh_token only"));
        }
        if let Some(types) = &request.response_types
            && types.iter().any(|t| t != "code")
        {
            return Err(metadata("response_types may be code only"));
        }
        // SEP-837: native for loopback (and app) redirects, web otherwise.
        // An app scheme belongs to a native app (RFC 8252, 7.1).
        let native = parsed.iter().any(|uri| uri.destination() != redirect::Destination::Web);
        let application_type = match request.application_type.as_deref() {
            None => {
                if native {
                    "native"
                } else {
                    "web"
                }
            }
            Some("native") => "native",
            Some("web") if parsed.iter().any(|uri| uri.destination() == redirect::Destination::App) => {
                return Err(OAuthError::new(ErrorCode::InvalidRedirectUri, "a web client cannot use an app's own scheme"));
            }
            Some("web") => "web",
            Some(_) => return Err(metadata("application_type must be web or native")),
        };
        let registered =
            Registered { name: clean_name(request.client_name), redirect_uris: parsed.iter().map(|uri| uri.as_str().to_owned()).collect() };
        let too_large = || metadata("the registration is too large to carry in a client id: fewer or shorter redirect_uris");
        let client_id = self.seals().seal(Purpose::ClientId, "", &registered, lifetime).await.map_err(|error| match error {
            SealingError::Invalid | SealingError::TooLarge => too_large(),
            SealingError::Unavailable(_) => OAuthError::new(ErrorCode::TemporarilyUnavailable, "registration is unavailable; try again"),
        })?;
        if client_id.len() > MAX_CLIENT_ID_BYTES {
            return Err(too_large());
        }
        let mut answer = json!({
            "client_id": client_id,
            "client_id_issued_at": now,
            "redirect_uris": registered.redirect_uris,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "application_type": application_type,
        });
        if let Some(name) = &registered.name {
            answer["client_name"] = json!(name);
        }
        let logged = Facts::new(Event::Registration, &client_id);
        sign_in_log::record(registered.name.as_deref().map_or(logged, |name| logged.saying(name)));
        Ok(json_response(StatusCode::CREATED, &answer))
    }
}
