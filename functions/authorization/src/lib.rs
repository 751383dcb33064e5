//! The stack's own OAuth 2.1 authorization server, in front of one
//! upstream OpenID provider (the stack's Cognito user pool, or any other),
//! so that every MCP client signs in given only the server's URL.
//!
//! Stateless on Lambda like the MCP function: registered clients are
//! sealed records, the pages between the browser and the provider carry
//! their state sealed and bound to the browser, and only codes and refresh
//! tokens (by hash) are kept, in DynamoDB. Access tokens are JWTs the MCP
//! function verifies as it would any issuer's.
//!
//! - [`server`]: routing and dependencies; [`authorize`] and [`token`]: the flows;
//! - [`clients`]: who a client id is (CIMD or registration), redirect URIs;
//! - [`upstream`]: the OpenID provider; [`signing`]: access tokens;
//! - [`grants`]: codes and refresh tokens; [`sealing`]: sealed records;
//! - [`scopes`]: what is asked and granted; `remembered_consent` and
//!   `cookies`: approvals a browser remembers, and its cookies;
//! - [`discovery`]: metadata and keys; [`pages`], [`responses`]: what is sent;
//! - [`aws`]: KMS and DynamoDB; [`entry`]: Lambda and the local server.

#![warn(missing_docs)]

pub mod authorize;
pub mod aws;
pub mod clients;
#[cfg(feature = "contracts")]
pub mod contracts;
mod cookies;
pub mod discovery;
pub mod entry;
pub mod grants;
pub mod lifetimes;
pub mod pages;
pub mod pkce;
mod remembered_consent;
pub mod resource;
pub mod responses;
pub mod scopes;
pub mod sealing;
pub mod server;
pub mod settings;
pub mod sign_in_log;
pub mod signing;
pub mod token;
pub mod upstream;

pub use server::{AuthorizationServer, Parts};
pub use settings::OAuthSettings;
