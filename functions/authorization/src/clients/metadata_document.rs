//! Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-
//! document-00; both MCP revisions say servers SHOULD take them): the
//! `client_id` is an https URL, the document there describes the client,
//! and its `client_id` must be that URL. Documents are kept in this
//! instance for what their server allows, at most an hour, and fetched
//! at most [`MAX_FETCHES_PER_MINUTE`] times a minute ([`metadata_fetch`](super::metadata_fetch)
//! says how each fetch is guarded).
//!
//! When a fetch fails in a way the host may mend (a challenge page, a
//! 5xx, a time-out; [`FetchError::is_transient`]), or the budget is
//! spent, the last good copy ([`last_good`](super::last_good)) stands in,
//! else a pinned copy ([`pins`](super::pins)), else the client gets
//! [`ClientError::Unavailable`]: `503` and `Retry-After`, never a redirect.
//!
//! A document's client authenticates at the token endpoint as it says
//! ([`authentication`](super::authentication)): `none`, or
//! `private_key_jwt` with keys at `jwks_uri` or in `jwks`. One that offers
//! `none` in `token_endpoint_auth_methods_supported` (ChatGPT's does,
//! beside `private_key_jwt`) may come without an assertion; SECURITY.md
//! argues it.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use mcp_stateless::{
    clock::Clock,
    edge::bearer::key_set::{KeySet, readable_keys},
};
use serde::Deserialize;
use url::Url;

use crate::{
    settings::OAuthSettings,
    sign_in_log::{self, Event, Facts},
};

use super::{
    Client, ClientError,
    authentication::{Authentication, KeySource},
    clean_name,
    last_good::{InMemoryCopies, LAST_GOOD_LIFETIME, LastGood, LastGoodCopies},
    metadata_fetch::{FetchError, GuardedFetcher},
    pins::Pins,
    redirect,
};

/// Documents fetched by one instance in a minute, at most: a flood of
/// made-up client ids costs this many outbound requests, no more.
pub const MAX_FETCHES_PER_MINUTE: u32 = 60;
/// Of those, for requests from one address: one sender's made-up ids do
/// not spend what other clients' first sign-ins need.
pub const MAX_FETCHES_PER_SENDER_PER_MINUTE: u32 = 10;
/// Senders counted in a minute, at most (beyond, each counts as over).
const MAX_SENDERS: usize = 4096;
/// Documents kept by one instance, at most.
pub const MAX_CACHED: usize = 256;
/// How long a document is kept when its server says nothing.
pub const DEFAULT_MAX_AGE: u64 = 300;
/// How long a copy that stood in is kept in the instance: the next
/// request tries the host again soon, without a fetch per request.
const STAND_IN_MAX_AGE: u64 = 60;
/// The shortest time between two fetches of one client's key set for a
/// key id it lacked.
pub const KEY_REFETCH_FLOOR: u64 = 60;
/// The largest client key set read.
pub const MAX_KEY_SET_BYTES: usize = 16 * 1024;

#[derive(Deserialize)]
struct Document {
    client_id: String,
    client_name: Option<String>,
    redirect_uris: Vec<String>,
    token_endpoint_auth_method: Option<String>,
    /// SEP-3149 and the CIMD draft's later revisions: every method the
    /// client can use.
    token_endpoint_auth_methods_supported: Option<Vec<String>>,
    jwks_uri: Option<String>,
    jwks: Option<serde_json::Value>,
}

struct Kept<T> {
    value: T,
    until: u64,
}

/// The documents this instance fetched and keeps.
pub struct MetadataDocuments {
    fetcher: GuardedFetcher,
    clock: Arc<dyn Clock>,
    max_age: Duration,
    kept: Mutex<HashMap<String, Kept<Client>>>,
    key_sets: Mutex<HashMap<String, Kept<KeySet>>>,
    copies: Arc<dyn LastGoodCopies>,
    pins: Pins,
    /// The minute fetches are counted in, how many it has had, and by whom.
    budget: Mutex<Budget>,
}

#[derive(Default)]
struct Budget {
    minute: u64,
    fetches: u32,
    by_sender: HashMap<String, u32>,
}

/// Which copies may stand in for a document.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Standing {
    /// The fetch failed as hosts do: the last good copy, else a pin.
    AnyCopy,
    /// No fetch was made (the budget is spent): a copy the instance would
    /// still keep, no older, and no pin.
    RecentCopyOnly,
}

/// Why a fetched body is not the client.
enum Unusable {
    /// Not JSON at all: a challenge page served with 200, say.
    NotJson,
    /// A document, but not one this client may be (said to the developer).
    Refused(String),
}

impl MetadataDocuments {
    /// Fetching with `fetcher`, keeping documents `max_age` at most; last
    /// good copies in this process, the shipped pins.
    pub fn new(fetcher: GuardedFetcher, clock: Arc<dyn Clock>, max_age: Duration) -> Self {
        Self {
            fetcher,
            clock,
            max_age,
            kept: Mutex::default(),
            key_sets: Mutex::default(),
            copies: Arc::new(InMemoryCopies::default()),
            pins: Pins::shipped_except(&[]),
            budget: Mutex::default(),
        }
    }

    /// As `settings` configure them (their keeping time, their unpinned
    /// clients), with last good copies in `copies`.
    pub fn configured(settings: &OAuthSettings, fetcher: GuardedFetcher, clock: Arc<dyn Clock>, copies: Arc<dyn LastGoodCopies>) -> Self {
        Self::new(fetcher, clock, settings.lifetimes.metadata_cache)
            .with_last_good(copies)
            .with_pins(Pins::shipped_except(&settings.unpinned_clients))
    }

    /// Last good copies kept in `copies` (the table, shared by every instance).
    pub fn with_last_good(mut self, copies: Arc<dyn LastGoodCopies>) -> Self {
        self.copies = copies;
        self
    }

    /// With `pins` as the last resort.
    pub fn with_pins(mut self, pins: Pins) -> Self {
        self.pins = pins;
        self
    }

    /// The client the document at `client_id` describes, for a request from `sender`.
    pub async fn client(&self, client_id: &str, sender: &str) -> Result<Client, ClientError> {
        let url = document_url(client_id).map_err(ClientError::Unknown)?;
        let now = self.clock.now();
        if let Some(client) = fresh(&self.kept, client_id, now) {
            return Ok(client);
        }
        // A spent budget is something a caller can cause: then only a copy
        // fetched within the instance's keeping time stands in, never an
        // older one or a pin, which the host may have changed since.
        if let Err(spent) = self.spend_fetch(now, sender) {
            return self.stand_in(client_id, &url, now, spent, Standing::RecentCopyOnly).await;
        }
        let fetched = match self.fetcher.get(&url).await {
            // "Not public" is answered as "unreachable" is (the log says
            // which): a different answer would tell a prober which names
            // resolve inside.
            Err(error) if error.is_transient() || error == FetchError::NotPublic => {
                return self.stand_in(client_id, &url, now, error.to_string(), Standing::AnyCopy).await;
            }
            Err(error) => return Err(self.gone(client_id, error.to_string()).await),
            Ok(fetched) => fetched,
        };
        let client = match parse(client_id, &url, &fetched.body) {
            Ok(client) => client,
            Err(Unusable::NotJson) => {
                return self.stand_in(client_id, &url, now, "the answer was not a JSON document".into(), Standing::AnyCopy).await;
            }
            Err(Unusable::Refused(why)) => return Err(self.gone(client_id, why).await),
        };
        let copy = LastGood { body: fetched.body, fetched_at: now };
        if let Err(error) = self.copies.keep(client_id, &copy, now + LAST_GOOD_LIFETIME.as_secs()).await {
            // The sign-in goes on; only the next failed fetch misses it.
            tracing::warn!(%error, client_id, "a client metadata document's last good copy could not be kept");
        }
        let keep_for = fetched.max_age.unwrap_or(DEFAULT_MAX_AGE).min(self.max_age.as_secs());
        keep(&self.kept, client_id, &client, now, keep_for);
        Ok(client)
    }

    /// The host said the document is gone or is not one (a 404, another
    /// client's, too large): believed, and its last good copy forgotten,
    /// so that no failure later brings back what the host withdrew.
    async fn gone(&self, client_id: &str, why: String) -> ClientError {
        sign_in_log::record(Facts::new(Event::DocumentFetchFailed, client_id).saying(&why));
        if let Err(error) = self.copies.forget(client_id).await {
            tracing::warn!(%error, client_id, "a withdrawn client metadata document's last good copy could not be forgotten");
        }
        ClientError::Unknown(why)
    }

    /// What stands in for a document that could not be fetched: its last
    /// good copy, else its pin (as `standing` allows), else nothing just now.
    async fn stand_in(&self, client_id: &str, url: &Url, now: u64, why: String, standing: Standing) -> Result<Client, ClientError> {
        let copy = match self.copies.last_good(client_id, now).await {
            Ok(copy) => copy,
            Err(error) => {
                tracing::warn!(%error, client_id, "a client metadata document's last good copy could not be read");
                None
            }
        };
        let recent_enough = |copy: &LastGood| standing == Standing::AnyCopy || copy.fetched_at + self.max_age.as_secs() > now;
        let copied = copy
            .filter(recent_enough)
            .and_then(|copy| parse(client_id, url, &copy.body).ok())
            .map(|client| (client, "the last good copy stood in"));
        let stand_in = copied.or_else(|| {
            let pinned = self.pins.document(client_id).filter(|_| standing == Standing::AnyCopy)?;
            parse(client_id, url, pinned.as_bytes()).ok().map(|client| (client, "the pinned copy stood in"))
        });
        let stand_in = stand_in.map(|(client, which)| (Client { from_copy: true, ..client }, which));
        // What happened first: the reason may be long, and the line is capped.
        let outcome = format!("{}; {why}", stand_in.as_ref().map_or("no copy stood in: 503", |(_, which)| *which));
        sign_in_log::record(Facts::new(Event::DocumentFetchFailed, client_id).saying(&outcome));
        match stand_in {
            Some((client, _)) => {
                keep(&self.kept, client_id, &client, now, STAND_IN_MAX_AGE);
                Ok(client)
            }
            None => Err(ClientError::Unavailable(format!("its client metadata document could not be fetched just now ({why}); try again"))),
        }
    }

    /// The keys `source` names, fetched for a request from `sender` and
    /// kept like documents; fetched again when `stale` (a key id the kept
    /// set lacks: the client rotated its keys).
    pub async fn key_set(&self, source: &KeySource, sender: &str, stale: bool) -> Result<KeySet, ClientError> {
        let now = self.clock.now();
        let url = match source {
            KeySource::Inline(jwks) => return key_set(jwks.as_bytes(), now).ok_or_else(no_keys),
            KeySource::Url(url) => url,
        };
        // A key id the set lacks refetches it, at most once a minute: any
        // string shaped like a JWT names one, and it must not become a
        // fetch of the client's keys per request.
        if let Some(set) = fresh(&self.key_sets, url.as_str(), now)
            && (!stale || now < set.fetched_at + KEY_REFETCH_FLOOR)
        {
            return Ok(set);
        }
        self.spend_fetch(now, sender).map_err(ClientError::Unavailable)?;
        let fetched = self.fetcher.get_within(url, MAX_KEY_SET_BYTES).await.map_err(|error| {
            tracing::info!(%error, jwks_uri = url.as_str(), "a client's key set could not be fetched");
            match error {
                error if error.is_transient() => ClientError::Unavailable("the client's key set could not be fetched just now".into()),
                _ => ClientError::Unknown("the client's jwks_uri could not be fetched".into()),
            }
        })?;
        let set = key_set(&fetched.body, now).ok_or_else(no_keys)?;
        let keep_for = fetched.max_age.unwrap_or(DEFAULT_MAX_AGE).min(self.max_age.as_secs());
        keep(&self.key_sets, url.as_str(), &set, now, keep_for);
        Ok(set)
    }

    fn spend_fetch(&self, now: u64, sender: &str) -> Result<(), String> {
        let mut budget = self.budget.lock().map_err(|_| "fetch budget lock poisoned".to_owned())?;
        let minute = now / 60;
        if budget.minute != minute {
            *budget = Budget { minute, ..Budget::default() };
        }
        let spent = budget.by_sender.get(sender).copied().unwrap_or(0);
        let room = budget.by_sender.len() < MAX_SENDERS || spent > 0;
        if budget.fetches >= MAX_FETCHES_PER_MINUTE || spent >= MAX_FETCHES_PER_SENDER_PER_MINUTE || !room {
            return Err("too many client documents fetched this minute".into());
        }
        budget.fetches += 1;
        budget.by_sender.insert(sender.to_owned(), spent + 1);
        Ok(())
    }
}

fn no_keys() -> ClientError {
    ClientError::Unknown("the client publishes no key this server can read".into())
}

/// A JWKS's readable keys, if it has any.
fn key_set(body: &[u8], now: u64) -> Option<KeySet> {
    #[derive(Deserialize)]
    struct Jwks {
        keys: Vec<serde_json::Value>,
    }
    let keys = readable_keys(serde_json::from_slice::<Jwks>(body).ok()?.keys);
    (!keys.is_empty()).then(|| KeySet::new(keys, now))
}

/// What `kept` holds for `id` until later than `now`.
fn fresh<T: Clone>(kept: &Mutex<HashMap<String, Kept<T>>>, id: &str, now: u64) -> Option<T> {
    kept.lock().ok()?.get(id).filter(|kept| kept.until > now).map(|kept| kept.value.clone())
}

/// Keeps `value` under `id` for `keep_for` seconds, within [`MAX_CACHED`] entries.
fn keep<T: Clone>(kept: &Mutex<HashMap<String, Kept<T>>>, id: &str, value: &T, now: u64, keep_for: u64) {
    let Ok(mut kept) = kept.lock() else { return };
    if keep_for == 0 {
        return;
    }
    if kept.len() >= MAX_CACHED {
        kept.retain(|_, k| k.until > now);
    }
    if kept.len() >= MAX_CACHED
        && let Some(any) = kept.keys().next().cloned()
    {
        kept.remove(&any);
    }
    kept.insert(id.to_owned(), Kept { value: value.clone(), until: now + keep_for });
}

/// `client_id` as a document URL: https, a host, a path beyond `/`, no
/// fragment, no user information, no dot segments, written as parsed.
fn document_url(client_id: &str) -> Result<Url, String> {
    let url = Url::parse(client_id).map_err(|_| "the client_id is not a URL".to_owned())?;
    if url.scheme() != "https" || url.host().is_none() {
        return Err("a client_id URL must be https".into());
    }
    if url.path() == "/" || url.fragment().is_some() || !url.username().is_empty() || url.password().is_some() {
        return Err("a client_id URL needs a path, and no fragment or user information".into());
    }
    // Dot segments and other spellings the parser rewrites are refused:
    // the id compared, shown and fetched is one and the same string.
    if url.as_str() != client_id {
        return Err("a client_id URL must be written in its normal form".into());
    }
    Ok(url)
}

/// The client a fetched document describes, if it may be one.
fn parse(client_id: &str, url: &Url, body: &[u8]) -> Result<Client, Unusable> {
    let refused = |why: &str| Unusable::Refused(why.to_owned());
    let json: serde_json::Value = serde_json::from_slice(body).map_err(|_| Unusable::NotJson)?;
    let document: Document =
        serde_json::from_value(json).map_err(|_| refused("the client metadata document is not valid JSON metadata"))?;
    if document.client_id != client_id {
        return Err(refused("the client metadata document names another client_id"));
    }
    let authentication = authentication(&document).map_err(Unusable::Refused)?;
    let redirect_uris = redirect::parse_all(&document.redirect_uris).map_err(Unusable::Refused)?;
    Ok(Client {
        id: client_id.to_owned(),
        name: clean_name(document.client_name),
        verified_host: url.host_str().map(str::to_owned),
        redirect_uris,
        authentication,
        from_copy: false,
    })
}

/// How the document's client authenticates: as its method says, or with
/// no assertion when it offers `none` too. Methods that need a secret
/// shared with this server (`client_secret_*`) cannot be a document's.
fn authentication(document: &Document) -> Result<Authentication, String> {
    let method = document.token_endpoint_auth_method.as_deref().unwrap_or("none");
    let offers_none = method == "none" || document.token_endpoint_auth_methods_supported.iter().flatten().any(|m| m == "none");
    let offers_jwt =
        method == "private_key_jwt" || document.token_endpoint_auth_methods_supported.iter().flatten().any(|m| m == "private_key_jwt");
    let keys = match (&document.jwks_uri, &document.jwks) {
        (Some(_), Some(_)) => return Err("the client metadata document names both jwks_uri and jwks".into()),
        (Some(uri), None) => Some(KeySource::Url(key_url(uri)?)),
        (None, Some(jwks)) => Some(KeySource::Inline(jwks.to_string())),
        (None, None) => None,
    };
    match (offers_jwt, keys) {
        (true, Some(keys)) => Ok(Authentication::PrivateKeyJwt { keys, required: !offers_none }),
        (true, None) if !offers_none => Err("the client metadata document asks for private_key_jwt but names no jwks_uri or jwks".into()),
        _ if offers_none => Ok(Authentication::None),
        _ => Err(format!("the client metadata document asks for {method}; this server takes none and private_key_jwt")),
    }
}

/// A `jwks_uri`: an https URL, fetched as guardedly as the document.
fn key_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|_| "the client's jwks_uri is not a URL".to_owned())?;
    if url.scheme() != "https" || url.host().is_none() || url.fragment().is_some() || !url.username().is_empty() {
        return Err("the client's jwks_uri must be an https URL".into());
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_id_url_is_https_with_a_path_in_normal_form() {
        assert!(document_url("https://app.example.com/oauth/client.json").is_ok());
        for bad in [
            "http://app.example.com/client.json",
            "https://app.example.com/",
            "https://app.example.com",
            "https://app.example.com/a/../client.json",
            "https://user@app.example.com/client.json",
            "https://app.example.com/client.json#x",
            "https://APP.example.com/client.json",
        ] {
            assert!(document_url(bad).is_err(), "{bad}");
        }
    }

    fn parsed(body: &str) -> Result<Client, String> {
        let url = Url::parse("https://app.example.com/c.json").unwrap();
        parse(url.as_str(), &url, body.as_bytes()).map_err(|unusable| match unusable {
            Unusable::NotJson => "not JSON".to_owned(),
            Unusable::Refused(why) => why,
        })
    }

    fn doc(id: &str, extra: &str) -> String {
        format!(r#"{{"client_id":"{id}","client_name":"App","redirect_uris":["http://127.0.0.1/cb"]{extra}}}"#)
    }

    #[test]
    fn the_document_must_name_its_own_url() {
        let client = parsed(&doc("https://app.example.com/c.json", "")).unwrap();
        assert_eq!((client.name.as_deref(), client.verified_host.as_deref()), (Some("App"), Some("app.example.com")));
        assert_eq!(client.authentication, Authentication::None);
        assert!(parsed(&doc("https://evil.example.com/c.json", "")).unwrap_err().contains("another client_id"));
        assert_eq!(parsed("<html>challenge</html>").unwrap_err(), "not JSON", "a challenge page may be stood in for");
    }

    #[test]
    fn a_document_authenticates_as_it_says_and_may_offer_none() {
        let id = "https://app.example.com/c.json";
        let keys = r#","jwks_uri":"https://app.example.com/jwks.json""#;
        // ChatGPT's shape: private_key_jwt, with none offered.
        let chatgpt = format!(
            r#","token_endpoint_auth_method":"private_key_jwt","token_endpoint_auth_methods_supported":["none","private_key_jwt"]{keys}"#
        );
        let jwks_uri = KeySource::Url(Url::parse("https://app.example.com/jwks.json").unwrap());
        assert_eq!(
            parsed(&doc(id, &chatgpt)).unwrap().authentication,
            Authentication::PrivateKeyJwt { keys: jwks_uri.clone(), required: false }
        );
        let strict = format!(r#","token_endpoint_auth_method":"private_key_jwt"{keys}"#);
        assert_eq!(parsed(&doc(id, &strict)).unwrap().authentication, Authentication::PrivateKeyJwt { keys: jwks_uri, required: true });
        let inline = r#","token_endpoint_auth_method":"private_key_jwt","jwks":{"keys":[]}"#;
        assert!(matches!(
            parsed(&doc(id, inline)).unwrap().authentication,
            Authentication::PrivateKeyJwt { keys: KeySource::Inline(_), required: true }
        ));
        // A secret shared with this server cannot be a document's; with none offered, the client is public.
        assert!(parsed(&doc(id, r#","token_endpoint_auth_method":"client_secret_basic""#)).unwrap_err().contains("client_secret_basic"));
        let offered = r#","token_endpoint_auth_method":"client_secret_post","token_endpoint_auth_methods_supported":["none"]"#;
        assert_eq!(parsed(&doc(id, offered)).unwrap().authentication, Authentication::None);
        assert!(parsed(&doc(id, r#","token_endpoint_auth_method":"private_key_jwt""#)).unwrap_err().contains("no jwks_uri"));
        let plain = r#","token_endpoint_auth_method":"private_key_jwt","jwks_uri":"http://app.example.com/jwks.json""#;
        assert!(parsed(&doc(id, plain)).unwrap_err().contains("https"));
    }
}
