//! Which key of a published set verifies a token: the one its `kid`
//! names, held to the key's own constraints (RFC 8725, 3.1). A JWK that
//! names an `alg` verifies only that algorithm; one published for `"use":
//! "enc"`, or with `key_ops` that leave out `verify`, verifies nothing.
//! The bearer verifier reads issuers' sets with it, and the authorization
//! server its clients' (RFC 7523 client assertions).

use std::str::FromStr;

use jsonwebtoken::{
    Algorithm, DecodingKey,
    jwk::{Jwk, KeyAlgorithm, KeyOperations, PublicKeyUse},
};

/// The outcome of looking a token's key up in a set.
#[non_exhaustive]
pub enum Lookup {
    /// The key that verifies it.
    Usable(DecodingKey),
    /// The key is published, but not for this algorithm or use.
    Unusable,
    /// No such key: a rotation this instance has not seen, or a forgery.
    Absent,
}

/// One fetched set: the keys that parsed, and when.
#[derive(Clone)]
#[non_exhaustive]
pub struct KeySet {
    /// Each key as published, and as jsonwebtoken verifies with it.
    pub keys: Vec<(Jwk, DecodingKey)>,
    /// When it was fetched (epoch seconds).
    pub fetched_at: u64,
}

/// The keys of a JWKS's `keys` that this build can read, one at a time:
/// one of a kind it cannot (a new curve, an encryption key) does not cost
/// the others.
pub fn readable_keys(keys: Vec<serde_json::Value>) -> Vec<(Jwk, DecodingKey)> {
    keys.into_iter()
        .filter_map(|key| serde_json::from_value::<Jwk>(key).ok())
        .filter_map(|jwk| DecodingKey::from_jwk(&jwk).ok().map(|key| (jwk, key)))
        .collect()
}

impl KeySet {
    /// `keys`, fetched at `fetched_at`.
    pub fn new(keys: Vec<(Jwk, DecodingKey)>, fetched_at: u64) -> Self {
        Self { keys, fetched_at }
    }

    /// A `kid` may name several keys (RFC 7517, 4.5: a signing and an
    /// encryption key, say): the one that verifies `alg` is taken.
    pub fn lookup(&self, kid: Option<&str>, alg: Algorithm) -> Lookup {
        let mut named = self.keys.iter().filter(|(jwk, _)| kid.is_none() || jwk.common.key_id.as_deref() == kid).peekable();
        if named.peek().is_none() {
            return Lookup::Absent;
        }
        let mut fitting = named.filter(|(jwk, _)| verifies(jwk, alg));
        match (kid, fitting.next(), fitting.next()) {
            (_, None, _) => Lookup::Unusable,
            (Some(_), Some((_, key)), _) => Lookup::Usable(key.clone()),
            // A token without `kid` only fits an issuer with one key that
            // could have signed it.
            (None, Some((_, key)), None) => Lookup::Usable(key.clone()),
            (None, Some(_), Some(_)) => Lookup::Unusable,
        }
    }
}

/// Whether `jwk`'s own parameters let it verify a signature made with
/// `alg` (jsonwebtoken checks the key's type against the algorithm's).
fn verifies(jwk: &Jwk, alg: Algorithm) -> bool {
    let algorithm = match jwk.common.key_algorithm {
        None => true,
        Some(published) => signing_algorithm(published) == Some(alg),
    };
    let usage = matches!(jwk.common.public_key_use, None | Some(PublicKeyUse::Signature));
    let operations = jwk.common.key_operations.as_ref().is_none_or(|ops| ops.contains(&KeyOperations::Verify));
    algorithm && usage && operations
}

/// The signature algorithm a JWK's `alg` names; `None` for encryption
/// algorithms (`RSA-OAEP`) and names this build does not know.
fn signing_algorithm(published: KeyAlgorithm) -> Option<Algorithm> {
    Algorithm::from_str(&published.to_string()).ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn jwk(extra: serde_json::Value) -> Jwk {
        // An RSA public key's shape; the numbers need not be a real key here.
        let mut key = json!({"kty": "RSA", "kid": "k", "n": "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw", "e": "AQAB"});
        key.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        serde_json::from_value(key).unwrap()
    }

    #[test]
    fn a_key_verifies_only_what_it_is_published_for() {
        let rs256 = jwk(json!({"alg": "RS256", "use": "sig"}));
        assert!(verifies(&rs256, Algorithm::RS256));
        for other in [Algorithm::RS384, Algorithm::RS512, Algorithm::PS256] {
            assert!(!verifies(&rs256, other), "{other:?} with a key published for RS256");
        }
        let unnamed = jwk(json!({}));
        for any in [Algorithm::RS256, Algorithm::RS384, Algorithm::PS256] {
            assert!(verifies(&unnamed, any), "{any:?} with a key that names no alg");
        }
        assert!(!verifies(&jwk(json!({"use": "enc"})), Algorithm::RS256));
        assert!(!verifies(&jwk(json!({"alg": "RSA-OAEP"})), Algorithm::RS256));
        assert!(!verifies(&jwk(json!({"alg": "RSA-OAEP", "use": "enc"})), Algorithm::RS256));
        assert!(!verifies(&jwk(json!({"alg": "something-new"})), Algorithm::RS256));
        assert!(!verifies(&jwk(json!({"key_ops": ["encrypt", "sign"]})), Algorithm::RS256));
        assert!(verifies(&jwk(json!({"key_ops": ["verify"]})), Algorithm::RS256));
        assert!(verifies(&jwk(json!({"use": "sig", "key_ops": ["verify"], "alg": "PS256"})), Algorithm::PS256));
    }
}
