//! Access tokens: JWTs (RFC 9068) signed ES256 by a key that never leaves
//! KMS on AWS ([`crate::aws::KmsSigner`]), or by a key made in the process
//! for local runs ([`InProcessSigner`]). The public key is published as a
//! JWKS, named by the RFC 7638 thumbprint of its JWK.

use std::sync::Arc;

use aws_lc_rs::{
    digest::{SHA256, digest},
    rand::SystemRandom,
    signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair},
};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::{Value, json};

/// Why nothing was signed.
#[derive(Debug, thiserror::Error)]
#[error("token signing unavailable: {0}")]
pub struct SigningError(pub String);

/// A P-256 public key as the JWKS publishes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    /// The uncompressed point's x coordinate (32 bytes).
    pub x: [u8; 32],
    /// Its y coordinate.
    pub y: [u8; 32],
}

impl PublicKey {
    /// From an uncompressed SEC1 point (`04 || x || y`).
    pub fn from_point(point: &[u8]) -> Result<Self, SigningError> {
        match point {
            [0x04, rest @ ..] if rest.len() == 64 => {
                let (mut x, mut y) = ([0; 32], [0; 32]);
                x.copy_from_slice(&rest[..32]);
                y.copy_from_slice(&rest[32..]);
                Ok(Self { x, y })
            }
            _ => Err(SigningError("not an uncompressed P-256 point".into())),
        }
    }

    /// The key id: the RFC 7638 thumbprint (members in lexical order).
    pub fn kid(&self) -> String {
        let canonical =
            format!(r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#, URL_SAFE_NO_PAD.encode(self.x), URL_SAFE_NO_PAD.encode(self.y));
        URL_SAFE_NO_PAD.encode(digest(&SHA256, canonical.as_bytes()))
    }

    /// The JWK.
    pub fn jwk(&self) -> Value {
        json!({
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": self.kid(),
            "x": URL_SAFE_NO_PAD.encode(self.x), "y": URL_SAFE_NO_PAD.encode(self.y),
        })
    }
}

/// The port access tokens are signed through.
pub trait TokenSigner: Send + Sync {
    /// The public key (fetched once per instance where it is remote).
    fn public_key(&self) -> BoxFuture<'_, Result<PublicKey, SigningError>>;
    /// The ES256 signature of `message`: `r || s`, 64 bytes (RFC 7518, 3.4).
    fn sign<'a>(&'a self, message: &'a [u8]) -> BoxFuture<'a, Result<[u8; 64], SigningError>>;
}

/// A key made when the process starts: tokens stop verifying when it ends.
/// For `cargo run` only; the start refuses it on Lambda.
pub struct InProcessSigner {
    pair: EcdsaKeyPair,
}

impl InProcessSigner {
    /// A fresh key.
    pub fn generate() -> Self {
        Self { pair: EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).expect("a P-256 key") }
    }
}

impl TokenSigner for InProcessSigner {
    fn public_key(&self) -> BoxFuture<'_, Result<PublicKey, SigningError>> {
        let key = PublicKey::from_point(self.pair.public_key().as_ref());
        Box::pin(async move { key })
    }

    fn sign<'a>(&'a self, message: &'a [u8]) -> BoxFuture<'a, Result<[u8; 64], SigningError>> {
        let signed = self
            .pair
            .sign(&SystemRandom::new(), message)
            .map_err(|_| SigningError("ECDSA signing failed".into()))
            .and_then(|signature| signature.as_ref().try_into().map_err(|_| SigningError("not a 64-byte signature".into())));
        Box::pin(async move { signed })
    }
}

/// What an access token says.
#[derive(Debug, Clone, Serialize)]
pub struct AccessClaims<'a> {
    /// This server.
    pub iss: &'a str,
    /// The user: the upstream subject qualified by its issuer.
    pub sub: &'a str,
    /// The MCP endpoint (RFC 8707).
    pub aud: &'a str,
    /// The client it was issued to.
    pub client_id: &'a str,
    /// Space-separated scopes.
    pub scope: &'a str,
    /// Issued at (epoch seconds).
    pub iat: u64,
    /// Expires at.
    pub exp: u64,
    /// A random id.
    pub jti: String,
}

/// `claims` as a signed JWT (`typ: at+jwt`, RFC 9068).
pub async fn access_token(signer: &Arc<dyn TokenSigner>, claims: &AccessClaims<'_>) -> Result<String, SigningError> {
    let kid = signer.public_key().await?.kid();
    let header = json!({"alg": "ES256", "typ": "at+jwt", "kid": kid});
    let payload = serde_json::to_vec(claims).map_err(|e| SigningError(e.to_string()))?;
    let signing_input = format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(payload));
    let signature = signer.sign(signing_input.as_bytes()).await?;
    Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature)))
}

/// An ASN.1 DER `ECDSA-Sig-Value` (what KMS returns) as JOSE's `r || s`.
pub fn der_to_jose(der: &[u8]) -> Result<[u8; 64], SigningError> {
    let bad = || SigningError("not a DER ECDSA signature".into());
    let body = match der {
        [0x30, len, rest @ ..] if usize::from(*len) == rest.len() && *len < 0x80 => rest,
        _ => return Err(bad()),
    };
    let mut out = [0u8; 64];
    let mut rest = body;
    for half in out.chunks_mut(32) {
        let (integer, after) = match rest {
            [0x02, len, tail @ ..] if usize::from(*len) <= tail.len() => tail.split_at(usize::from(*len)),
            _ => return Err(bad()),
        };
        // Big-endian, possibly with a leading zero byte: right-aligned in 32.
        let digits: &[u8] = {
            let mut digits = integer;
            while let [0, tail @ ..] = digits {
                digits = tail;
            }
            digits
        };
        if digits.len() > 32 {
            return Err(bad());
        }
        half[32 - digits.len()..].copy_from_slice(digits);
        rest = after;
    }
    if !rest.is_empty() {
        return Err(bad());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use aws_lc_rs::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

    use super::*;

    #[test]
    fn a_der_signature_becomes_the_fixed_form_that_verifies() {
        let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_ASN1_SIGNING).unwrap();
        let rng = SystemRandom::new();
        for _ in 0..32 {
            let der = pair.sign(&rng, b"message").unwrap();
            let fixed = der_to_jose(der.as_ref()).unwrap();
            UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, pair.public_key().as_ref()).verify(b"message", &fixed).unwrap();
        }
        assert!(der_to_jose(&[0x30, 2, 0x02, 0]).is_err());
    }

    #[tokio::test]
    async fn a_token_names_its_key_and_verifies_under_it() {
        let signer: Arc<dyn TokenSigner> = Arc::new(InProcessSigner::generate());
        let claims = AccessClaims { iss: "i", sub: "s", aud: "a", client_id: "c", scope: "mcp", iat: 1, exp: 2, jti: "j".into() };
        let token = access_token(&signer, &claims).await.unwrap();
        let parts: Vec<&str> = token.split('.').collect();
        let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        let key = signer.public_key().await.unwrap();
        assert_eq!(header["kid"], key.kid());
        let point = [&[4u8][..], &key.x, &key.y].concat();
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point)
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .unwrap();
    }
}
