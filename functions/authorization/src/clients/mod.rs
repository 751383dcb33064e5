//! Who a `client_id` is. Two kinds, neither stored:
//! - an https URL: a Client ID Metadata Document (CIMD, preferred by both
//!   MCP revisions), fetched and checked ([`metadata_document`]);
//! - anything else: an id this server made at registration (RFC 7591),
//!   which is the registration itself, sealed ([`registration`]).

pub mod authentication;
pub mod kind;
pub mod last_good;
pub mod metadata_document;
pub mod metadata_fetch;
pub mod pins;
pub mod redirect;
pub mod registration;

use std::sync::Arc;

use mcp_stateless::edge::bearer::key_set::Lookup;
use serde::{Deserialize, Serialize};

use self::authentication::AssertionError;
pub use self::{
    authentication::{Authentication, Verified},
    kind::is_metadata_document_id,
};
use self::{
    metadata_document::MetadataDocuments,
    redirect::{Destination, RedirectUri},
};
use crate::sealing::{Purpose, SealingError, Seals};

/// The longest client name kept; longer ones are cut (it is only shown).
pub const MAX_CLIENT_NAME_CHARS: usize = 100;

/// A client, found from its id.
#[derive(Debug, Clone)]
pub struct Client {
    /// Its `client_id`, as it sent it.
    pub id: String,
    /// The name it gave (unverified unless `verified_host` is set).
    pub name: Option<String>,
    /// For a metadata document: the host that published it, which the
    /// consent page names as who vouches for the name.
    pub verified_host: Option<String>,
    /// Where it may be answered.
    pub redirect_uris: Vec<RedirectUri>,
    /// How it proves itself at the token endpoint.
    pub authentication: Authentication,
    /// Described by a copy that stood in for its document (the last good
    /// one, or a pin), not by a fetch just now.
    pub from_copy: bool,
}

impl Client {
    /// The registered URI `requested` is, if any.
    pub fn redirect_uri(&self, requested: &str) -> Option<&RedirectUri> {
        self.redirect_uris.iter().find(|uri| uri.admits(requested))
    }

    /// Whether every place it may be answered is on the user's own device.
    pub fn is_local_only(&self) -> bool {
        self.redirect_uris.iter().all(|uri| uri.destination() != Destination::Web)
    }
}

/// Why a client id names no client.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// Not a client: the id is malformed, forged or expired, or its
    /// metadata document is unusable (the reason says which, for the
    /// developer).
    #[error("{0}")]
    Unknown(String),
    /// The server could not tell just now (keys unavailable, its document
    /// could not be fetched and no copy stands in, or too many documents
    /// fetched this minute): `503` with `Retry-After`.
    #[error("{0}")]
    Unavailable(String),
}

/// A registration as its sealed client id carries it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Registered {
    /// `client_name`.
    #[serde(rename = "n", default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `redirect_uris`, checked at registration.
    #[serde(rename = "r")]
    pub redirect_uris: Vec<String>,
}

/// Finds clients by id.
#[derive(Clone)]
pub struct Clients {
    seals: Seals,
    documents: Arc<MetadataDocuments>,
}

impl Clients {
    /// Registered ids open with `seals`; metadata documents come from `documents`.
    pub fn new(seals: Seals, documents: Arc<MetadataDocuments>) -> Self {
        Self { seals, documents }
    }

    /// The client `client_id` names, for a request from `sender` (its
    /// source address: what key lookups and document fetches are budgeted to).
    pub async fn find(&self, client_id: &str, sender: &str) -> Result<Client, ClientError> {
        if is_metadata_document_id(client_id) {
            return self.documents.client(client_id, sender).await;
        }
        let opened = self.seals.open::<Registered>(Purpose::ClientId, "", client_id, sender).await.map_err(|error| match error {
            SealingError::Invalid | SealingError::TooLarge => ClientError::Unknown("unknown client_id: register again".into()),
            SealingError::Unavailable(why) => ClientError::Unavailable(why),
        })?;
        let redirect_uris = redirect::parse_all(&opened.value.redirect_uris).map_err(ClientError::Unknown)?;
        Ok(Client {
            id: client_id.to_owned(),
            name: opened.value.name,
            verified_host: None,
            redirect_uris,
            authentication: Authentication::None,
            from_copy: false,
        })
    }

    /// Checks `assertion`, an RFC 7523 client assertion of `client_id`,
    /// for a server known as any of `audiences`: what is left is to spend
    /// its `jti` once.
    pub async fn authenticate(
        &self,
        client_id: &str,
        assertion: &str,
        audiences: &[&str],
        now: u64,
        sender: &str,
    ) -> Result<Verified, ClientError> {
        let client = self.find(client_id, sender).await?;
        let Authentication::PrivateKeyJwt { keys, .. } = &client.authentication else {
            // A copy may leave out keys its document has (ChatGPT's pin
            // does): the assertion may be good, which cannot be told now.
            if client.from_copy {
                return Err(ClientError::Unavailable("the client's keys are not known just now".into()));
            }
            return Err(ClientError::Unknown("this client publishes no keys to authenticate with".into()));
        };
        let (kid, alg) = authentication::header(assertion).map_err(refused)?;
        let mut set = self.documents.key_set(keys, sender, false).await?;
        // A key id the kept set lacks: the client may have rotated its keys.
        if matches!(set.lookup(kid.as_deref(), alg), Lookup::Absent) {
            set = self.documents.key_set(keys, sender, true).await?;
        }
        authentication::verify(assertion, client_id, &set, audiences, now).map_err(refused)
    }

    /// The seals registration makes ids with.
    pub(crate) fn seals(&self) -> &Seals {
        &self.seals
    }
}

fn refused(error: AssertionError) -> ClientError {
    ClientError::Unknown(error.to_string())
}

/// A name cut to [`MAX_CLIENT_NAME_CHARS`], control characters dropped.
pub(crate) fn clean_name(name: Option<String>) -> Option<String> {
    name.map(|name| name.chars().filter(|c| !c.is_control()).take(MAX_CLIENT_NAME_CHARS).collect::<String>())
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
}
