//! Approvals a browser remembers, so that a client it approved does not
//! ask again: per client id and redirect URI (the exact strings the
//! request sent, a loopback port included), for the scope approved (a
//! wider one shows the page again), for [`Lifetimes::remembered_consent`].
//!
//! They live in the browser alone, in one cookie sealed and bound to its
//! binding cookie: a remembered approval copied into another browser opens
//! nowhere (its binding differs), and a confused-deputy link (another
//! client, or this client with another redirect URI) finds nothing that
//! covers it. Only clients with a metadata document are remembered: a
//! registration is self-asserted (anyone may register any name with any
//! redirect URI), so its page, which says "unverified", shows every time
//! (SECURITY.md). The user withdraws them at [`PATHS`]`.forget` (linked
//! from the consent page) with a form whose proof is sealed to the same
//! binding (CSRF), or by clearing the site's cookies.
//!
//! [`Lifetimes::remembered_consent`]: crate::lifetimes::Lifetimes

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use serde::{Deserialize, Serialize};

use crate::{
    clients::is_metadata_document_id,
    cookies::{Cookie, Jar},
    pages, scopes,
    sealing::{Purpose, SealingError},
    server::{AuthorizationServer, PATHS, parameter, parameters, sender},
};

/// The most approvals one browser remembers (the oldest goes first).
const MAX_REMEMBERED: usize = 10;
/// The longest cookie value written: browsers keep 4096 bytes a cookie,
/// name and attributes included.
const MAX_COOKIE_VALUE_BYTES: usize = 3800;

/// One approval, as the cookie carries it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Approval {
    #[serde(rename = "c")]
    client_id: String,
    #[serde(rename = "r")]
    redirect_uri: String,
    #[serde(rename = "s")]
    scope: String,
    /// Until when (epoch seconds).
    #[serde(rename = "u")]
    until: u64,
}

impl Approval {
    /// `client_id`'s approval for `scope`, answered at `redirect_uri`.
    pub(crate) fn of(client_id: &str, redirect_uri: &str, scope: &str) -> Self {
        Self { client_id: client_id.to_owned(), redirect_uri: redirect_uri.to_owned(), scope: scope.to_owned(), until: 0 }
    }
}

/// The approvals a browser remembers.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Remembered {
    #[serde(rename = "a")]
    approvals: Vec<Approval>,
}

impl Remembered {
    /// Whether it remembers any approval at all.
    pub(crate) fn is_empty(&self) -> bool {
        self.approvals.is_empty()
    }

    /// Whether an approval still current covers `asked` exactly: its
    /// client, its redirect URI, and a scope within the one approved.
    pub(crate) fn covers(&self, asked: &Approval, now: u64) -> bool {
        self.approvals.iter().any(|approval| {
            approval.until > now
                && approval.client_id == asked.client_id
                && approval.redirect_uri == asked.redirect_uri
                && scopes::is_within(&asked.scope, &approval.scope)
        })
    }

    /// With `approval` (the newest, replacing one for the same client and
    /// redirect URI), without the expired, and at most [`MAX_REMEMBERED`].
    fn with(mut self, approval: Approval, now: u64) -> Self {
        self.approvals
            .retain(|kept| kept.until > now && !(kept.client_id == approval.client_id && kept.redirect_uri == approval.redirect_uri));
        self.approvals.push(approval);
        let excess = self.approvals.len().saturating_sub(MAX_REMEMBERED);
        self.approvals.drain(..excess);
        self
    }
}

impl AuthorizationServer {
    /// The approvals `browser` remembers, from its cookie; none when the
    /// cookie is missing, another browser's, expired or not this server's.
    pub(crate) async fn remembered(&self, request: &Request<Bytes>, jar: &Jar, browser: &str) -> Remembered {
        let Some(sealed) = jar.read(request.headers(), Cookie::Remembered) else {
            return Remembered::default();
        };
        match self.parts.seals.open(Purpose::RememberedConsent, browser, sealed, sender(request)).await {
            Ok(opened) => opened.value,
            Err(SealingError::Unavailable(why)) => {
                // The page then shows: asking again is the safe failure.
                tracing::warn!(%why, "remembered approvals could not be opened");
                Remembered::default()
            }
            Err(_) => Remembered::default(),
        }
    }

    /// Remembers in `response`'s cookies that `browser` gave `approval`,
    /// beside what it remembered; the binding cookie then lives as long.
    /// A registered client's approval is never remembered.
    pub(crate) async fn remember(
        &self,
        request: &Request<Bytes>,
        jar: &Jar,
        browser: &str,
        mut approval: Approval,
        response: &mut Response<Bytes>,
    ) {
        if !is_metadata_document_id(&approval.client_id) {
            return;
        }
        let lifetime = self.parts.settings.lifetimes.remembered_consent;
        let now = self.parts.clock.now();
        approval.until = now + lifetime.as_secs();
        let mut remembered = self.remembered(request, jar, browser).await.with(approval, now);
        loop {
            match self.parts.seals.seal(Purpose::RememberedConsent, browser, &remembered, lifetime).await {
                Ok(sealed) if sealed.len() <= MAX_COOKIE_VALUE_BYTES => {
                    jar.set(response, Cookie::Remembered, &sealed, lifetime);
                    jar.set(response, Cookie::Binding, browser, lifetime);
                    return;
                }
                // Too large for a cookie: the oldest approvals go first.
                Ok(_) | Err(SealingError::TooLarge) if remembered.approvals.len() > 1 => {
                    remembered.approvals.remove(0);
                }
                Ok(_) | Err(SealingError::TooLarge) => return,
                Err(error) => {
                    // The sign-in goes on; only the memory of it is lost.
                    tracing::warn!(%error, "an approval could not be remembered");
                    return;
                }
            }
        }
    }

    /// `GET /oauth/consent/forget`: the form that forgets this browser's
    /// approvals, its proof sealed to the browser's binding.
    pub(crate) async fn forget_page(&self, request: &Request<Bytes>) -> Response<Bytes> {
        let endpoints = self.endpoints(request.headers());
        let Some(browser) = Jar::of(&endpoints).binding(request.headers()) else {
            return pages::notice("Nothing to forget", "This browser remembers no approval for this server.");
        };
        let lifetime = self.parts.settings.lifetimes.sign_in;
        match self.parts.seals.seal(Purpose::ForgetConsent, &browser, &true, lifetime).await {
            Ok(proof) => pages::forget(&format!("{}{}", endpoints.issuer, PATHS.forget), &proof),
            Err(error) => {
                tracing::error!(%error, "the forget form could not be sealed");
                pages::error(StatusCode::SERVICE_UNAVAILABLE, "This page is unavailable just now; try again.")
            }
        }
    }

    /// `POST /oauth/consent/forget`: clears the remembered approvals, if
    /// the form came from this server's page in this browser (a forged
    /// post from another site carries neither the cookie nor the proof).
    pub(crate) async fn forget(&self, request: &Request<Bytes>) -> Response<Bytes> {
        let endpoints = self.endpoints(request.headers());
        let jar = Jar::of(&endpoints);
        let form = std::str::from_utf8(request.body()).ok().and_then(|body| parameters(body).ok()).unwrap_or_default();
        let proof = parameter(&form, "proof").unwrap_or_default();
        let proven = match jar.binding(request.headers()) {
            Some(browser) => self.parts.seals.open::<bool>(Purpose::ForgetConsent, &browser, proof, sender(request)).await.is_ok(),
            None => false,
        };
        if !proven {
            return pages::error(StatusCode::BAD_REQUEST, "This form has expired or was opened in another browser: open it again.");
        }
        let mut page = pages::notice("Approvals forgotten", "Apps will ask for your approval again in this browser.");
        jar.set(&mut page, Cookie::Remembered, "", std::time::Duration::ZERO);
        page
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLIENT: &str = "https://claude.ai/oauth/mcp-oauth-client-metadata";
    const REDIRECT: &str = "https://claude.ai/api/mcp/auth_callback";

    fn approved(client_id: &str, redirect_uri: &str, scope: &str, until: u64) -> Approval {
        Approval { until, ..Approval::of(client_id, redirect_uri, scope) }
    }

    #[test]
    fn an_approval_covers_its_client_redirect_and_scope_only_until_it_ends() {
        let remembered = Remembered::default().with(approved(CLIENT, REDIRECT, "mcp", 2_000), 1_000);
        assert!(remembered.covers(&Approval::of(CLIENT, REDIRECT, "mcp"), 1_999));
        assert!(remembered.covers(&Approval::of(CLIENT, REDIRECT, " offline_access"), 1_000));
        assert!(!remembered.covers(&Approval::of(CLIENT, REDIRECT, "mcp"), 2_000), "ended");
        assert!(!remembered.covers(&Approval::of(CLIENT, "https://claude.ai/other", "mcp"), 1_000), "another redirect URI");
        assert!(!remembered.covers(&Approval::of("https://evil.example/c.json", REDIRECT, "mcp"), 1_000), "another client");
        assert!(!remembered.covers(&Approval::of(CLIENT, REDIRECT, "mcp admin"), 1_000), "a wider scope");
    }

    #[test]
    fn the_newest_approval_replaces_its_own_and_the_oldest_go_first() {
        let mut remembered = Remembered::default();
        for n in 0..MAX_REMEMBERED + 2 {
            remembered = remembered.with(approved(&format!("{CLIENT}/{n}"), REDIRECT, "mcp", 5_000), 1_000);
        }
        assert_eq!(remembered.approvals.len(), MAX_REMEMBERED);
        assert!(!remembered.covers(&Approval::of(&format!("{CLIENT}/0"), REDIRECT, "mcp"), 1_000));
        let renewed = remembered.with(approved(&format!("{CLIENT}/5"), REDIRECT, "mcp admin", 9_000), 6_000);
        assert_eq!(renewed.approvals.len(), 1, "the expired dropped, the same client and redirect replaced");
        assert!(renewed.covers(&Approval::of(&format!("{CLIENT}/5"), REDIRECT, "mcp admin"), 8_000));
    }
}
