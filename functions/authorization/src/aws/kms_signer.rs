//! Access tokens signed by a KMS asymmetric key (`ECC_NIST_P256`,
//! `SIGN_VERIFY`): the private key never leaves KMS. One `Sign` call per
//! token issued (one per sign-in and per refresh); the public key is
//! fetched with `GetPublicKey` once per instance, for the JWKS and the
//! tokens' `kid`.

use aws_sdk_kms::{
    Client,
    primitives::Blob,
    types::{MessageType, SigningAlgorithmSpec},
};
use futures::future::BoxFuture;
use tokio::sync::OnceCell;

use crate::signing::{PublicKey, SigningError, TokenSigner, der_to_jose};

/// The DER prefix of a P-256 SubjectPublicKeyInfo (RFC 5480), which
/// `GetPublicKey` returns, before the 65-byte uncompressed point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01,
    0x07, 0x03, 0x42, 0x00,
];

/// Signs with the KMS key `key_id`.
pub struct KmsSigner {
    client: Client,
    key_id: String,
    public: OnceCell<PublicKey>,
}

impl KmsSigner {
    /// For the key `key_id` (id, ARN or alias); calls nothing yet.
    pub fn new(client: Client, key_id: &str) -> Self {
        Self { client, key_id: key_id.to_owned(), public: OnceCell::new() }
    }
}

fn failed(error: impl std::fmt::Display) -> SigningError {
    SigningError(error.to_string())
}

impl TokenSigner for KmsSigner {
    fn public_key(&self) -> BoxFuture<'_, Result<PublicKey, SigningError>> {
        Box::pin(async move {
            self.public
                .get_or_try_init(|| async {
                    let answer = self
                        .client
                        .get_public_key()
                        .key_id(&self.key_id)
                        .send()
                        .await
                        .map_err(|e| failed(aws_sdk_kms::error::DisplayErrorContext(e)))?;
                    let der = answer.public_key().map(Blob::as_ref).unwrap_or_default();
                    let point = der.strip_prefix(&P256_SPKI_PREFIX[..]).ok_or_else(|| failed("the signing key is not ECC_NIST_P256"))?;
                    PublicKey::from_point(point)
                })
                .await
                .cloned()
        })
    }

    fn sign<'a>(&'a self, message: &'a [u8]) -> BoxFuture<'a, Result<[u8; 64], SigningError>> {
        Box::pin(async move {
            let answer = self
                .client
                .sign()
                .key_id(&self.key_id)
                // RAW: KMS hashes the message itself (SHA-256 for
                // ECDSA_SHA_256). A token's signing input is well under
                // the 4,096 bytes KMS takes raw.
                .message(Blob::new(message))
                .message_type(MessageType::Raw)
                .signing_algorithm(SigningAlgorithmSpec::EcdsaSha256)
                .send()
                .await
                .map_err(|e| failed(aws_sdk_kms::error::DisplayErrorContext(e)))?;
            der_to_jose(answer.signature().map(Blob::as_ref).unwrap_or_default())
        })
    }
}
