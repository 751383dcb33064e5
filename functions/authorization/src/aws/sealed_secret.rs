//! The upstream client secret sealed under the stack's own KMS key (the
//! symmetric `StateKey`) by `infra/seal-upstream-secret.sh`: the template
//! and the function's environment carry only the ciphertext, opened with
//! one KMS `Decrypt` per instance, on the first sign-in that needs it.
//!
//! The encryption context names the purpose and the stack, and the IAM
//! grant is conditioned on both: a ciphertext made for anything else under
//! the same key (a requestState data key, another stack's secret) does not
//! open here, and this grant opens nothing else.

use std::collections::HashMap;

use aws_sdk_kms::{
    Client,
    error::{DisplayErrorContext, ProvideErrorMetadata, SdkError},
    operation::decrypt::DecryptError,
    primitives::Blob,
};
use futures::future::BoxFuture;
use mcp_aws::kms_keys::{CONTEXT_AUDIENCE_KEY, CONTEXT_PURPOSE_KEY, decrypt_refused};

use crate::upstream::SecretSource;

/// The purpose the secret is sealed for, under [`CONTEXT_PURPOSE_KEY`]
/// (`kms:EncryptionContext:purpose` in template.yaml, and in
/// `infra/seal-upstream-secret.sh`).
pub const UPSTREAM_SECRET_PURPOSE: &str = "mcp-upstream-client-secret";

/// The encryption context a secret for the deployment `audience` (the
/// stack's name, `MCP_AUDIENCE`) is sealed and opened under.
pub fn encryption_context(audience: &str) -> HashMap<String, String> {
    HashMap::from([
        (CONTEXT_PURPOSE_KEY.to_owned(), UPSTREAM_SECRET_PURPOSE.to_owned()),
        (CONTEXT_AUDIENCE_KEY.to_owned(), audience.to_owned()),
    ])
}

/// Why the sealed secret did not open. No message carries the secret or a
/// byte of the ciphertext: they name the KMS error and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SealedSecretError {
    /// KMS would not open it: sealed under another context (another purpose
    /// or stack) or key, not a KMS ciphertext, or this role may not decrypt
    /// it. The KMS error code.
    #[error(
        "KMS refused to open the sealed upstream client secret ({0}): seal it for this stack with \
         infra/seal-upstream-secret.sh --stack NAME"
    )]
    Refused(String),
    /// KMS could not be asked (network, throttling, a KMS failure); the
    /// next sign-in asks again.
    #[error("KMS could not open the sealed upstream client secret: {0}")]
    Unavailable(String),
    /// It opened, but to bytes that are not UTF-8 text.
    #[error("the sealed upstream client secret opened to bytes that are not UTF-8 text")]
    NotText,
}

/// A ciphertext, opened under the key `key_id` for the deployment
/// `audience`.
pub struct SealedSecret {
    client: Client,
    key_id: String,
    audience: String,
    ciphertext: Vec<u8>,
}

impl SealedSecret {
    /// `ciphertext` (the KMS blob, decoded from base64) under `key_id`
    /// (id, ARN or alias: Decrypt is told the key, so a ciphertext of
    /// another key is refused), for `audience`; calls nothing yet.
    pub fn new(client: Client, key_id: &str, audience: &str, ciphertext: Vec<u8>) -> Self {
        Self { client, key_id: key_id.to_owned(), audience: audience.to_owned(), ciphertext }
    }

    /// The secret: one KMS `Decrypt`.
    pub async fn open(&self) -> Result<String, SealedSecretError> {
        let answer = self
            .client
            .decrypt()
            .key_id(&self.key_id)
            .ciphertext_blob(Blob::new(self.ciphertext.clone()))
            .set_encryption_context(Some(encryption_context(&self.audience)))
            .send()
            .await
            .map_err(classify)?;
        let plaintext = answer.plaintext.map(Blob::into_inner).unwrap_or_default();
        String::from_utf8(plaintext).map_err(|_| SealedSecretError::NotText)
    }
}

/// What KMS answers for a ciphertext it will never open is a refusal; the
/// rest may pass. Only the error's code is kept for a refusal: its message
/// is KMS's, and the code says enough.
fn classify(error: SdkError<DecryptError>) -> SealedSecretError {
    match &error {
        SdkError::ServiceError(service) if decrypt_refused(&error) => {
            SealedSecretError::Refused(service.err().code().unwrap_or("an unnamed KMS error").to_owned())
        }
        _ => SealedSecretError::Unavailable(DisplayErrorContext(error).to_string()),
    }
}

impl SecretSource for SealedSecret {
    fn secret(&self) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(async move { self.open().await.map_err(|error| error.to_string()) })
    }
}
