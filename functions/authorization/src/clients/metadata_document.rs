//! Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-
//! document-00; both MCP revisions say servers SHOULD take them): the
//! `client_id` is an https URL, the document there describes the client,
//! and its `client_id` must be that URL. Documents are kept in this
//! instance for what their server allows, at most an hour, and fetched
//! at most [`MAX_FETCHES_PER_MINUTE`] times a minute ([`metadata_fetch`](super::metadata_fetch)
//! says how each fetch is guarded).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use mcp_stateless::clock::Clock;
use serde::Deserialize;
use url::Url;

use super::{
    Client, ClientError, clean_name,
    metadata_fetch::{FetchError, GuardedFetcher},
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

#[derive(Deserialize)]
struct Document {
    client_id: String,
    client_name: Option<String>,
    redirect_uris: Vec<String>,
    token_endpoint_auth_method: Option<String>,
}

struct Kept {
    client: Client,
    until: u64,
}

/// The documents this instance fetched and keeps.
pub struct MetadataDocuments {
    fetcher: GuardedFetcher,
    clock: Arc<dyn Clock>,
    max_age: Duration,
    kept: Mutex<HashMap<String, Kept>>,
    /// The minute fetches are counted in, how many it has had, and by whom.
    budget: Mutex<Budget>,
}

#[derive(Default)]
struct Budget {
    minute: u64,
    fetches: u32,
    by_sender: HashMap<String, u32>,
}

impl MetadataDocuments {
    /// Fetching with `fetcher`, keeping documents `max_age` at most.
    pub fn new(fetcher: GuardedFetcher, clock: Arc<dyn Clock>, max_age: Duration) -> Self {
        Self { fetcher, clock, max_age, kept: Mutex::default(), budget: Mutex::default() }
    }

    /// The client the document at `client_id` describes, for a request from `sender`.
    pub async fn client(&self, client_id: &str, sender: &str) -> Result<Client, ClientError> {
        let url = document_url(client_id).map_err(ClientError::Unknown)?;
        let now = self.clock.now();
        if let Some(kept) = self.kept.lock().ok().and_then(|kept| kept.get(client_id).filter(|k| k.until > now).map(|k| k.client.clone())) {
            return Ok(kept);
        }
        self.spend_fetch(now, sender)?;
        let fetched = self.fetcher.get(&url).await.map_err(|error| {
            // Where the fetch failed stays in the log: "not public" beside
            // "unreachable" would tell a prober which names resolve inside.
            tracing::info!(%error, client_id, "a client metadata document could not be fetched");
            match error {
                FetchError::NotPublic | FetchError::Unreachable(_) | FetchError::TooSlow => {
                    ClientError::Unknown("its client_id URL could not be fetched (https, from a public address, within 5 s)".into())
                }
                _ => ClientError::Unknown(error.to_string()),
            }
        })?;
        let client = parse(client_id, &url, &fetched.body).map_err(ClientError::Unknown)?;
        let keep_for = fetched.max_age.unwrap_or(DEFAULT_MAX_AGE).min(self.max_age.as_secs());
        if keep_for > 0
            && let Ok(mut kept) = self.kept.lock()
        {
            if kept.len() >= MAX_CACHED {
                kept.retain(|_, k| k.until > now);
            }
            if kept.len() >= MAX_CACHED
                && let Some(any) = kept.keys().next().cloned()
            {
                kept.remove(&any);
            }
            kept.insert(client_id.to_owned(), Kept { client: client.clone(), until: now + keep_for });
        }
        Ok(client)
    }

    fn spend_fetch(&self, now: u64, sender: &str) -> Result<(), ClientError> {
        let mut budget = self.budget.lock().map_err(|_| ClientError::Unavailable("fetch budget lock poisoned".into()))?;
        let minute = now / 60;
        if budget.minute != minute {
            *budget = Budget { minute, ..Budget::default() };
        }
        let spent = budget.by_sender.get(sender).copied().unwrap_or(0);
        let room = budget.by_sender.len() < MAX_SENDERS || spent > 0;
        if budget.fetches >= MAX_FETCHES_PER_MINUTE || spent >= MAX_FETCHES_PER_SENDER_PER_MINUTE || !room {
            return Err(ClientError::Unavailable("too many client metadata documents fetched this minute; try again".into()));
        }
        budget.fetches += 1;
        budget.by_sender.insert(sender.to_owned(), spent + 1);
        Ok(())
    }
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
fn parse(client_id: &str, url: &Url, body: &[u8]) -> Result<Client, String> {
    let document: Document =
        serde_json::from_slice(body).map_err(|_| "the client metadata document is not valid JSON metadata".to_owned())?;
    if document.client_id != client_id {
        return Err("the client metadata document names another client_id".into());
    }
    // Only public clients: this server verifies no client key.
    if document.token_endpoint_auth_method.as_deref().is_some_and(|method| method != "none") {
        return Err("the client metadata document asks for client authentication; only \"none\" is supported".into());
    }
    let redirect_uris = redirect::parse_all(&document.redirect_uris)?;
    Ok(Client {
        id: client_id.to_owned(),
        name: clean_name(document.client_name),
        verified_host: url.host_str().map(str::to_owned),
        redirect_uris,
    })
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

    #[test]
    fn the_document_must_name_its_own_url() {
        let url = Url::parse("https://app.example.com/c.json").unwrap();
        let doc = |id: &str, method: &str| {
            format!(r#"{{"client_id":"{id}","client_name":"App","redirect_uris":["http://127.0.0.1/cb"]{method}}}"#)
        };
        let client = parse(url.as_str(), &url, doc("https://app.example.com/c.json", "").as_bytes()).unwrap();
        assert_eq!((client.name.as_deref(), client.verified_host.as_deref()), (Some("App"), Some("app.example.com")));
        assert!(
            parse(url.as_str(), &url, doc("https://evil.example.com/c.json", "").as_bytes()).unwrap_err().contains("another client_id")
        );
        let secret = doc("https://app.example.com/c.json", r#","token_endpoint_auth_method":"private_key_jwt""#);
        assert!(parse(url.as_str(), &url, secret.as_bytes()).is_err());
    }
}
