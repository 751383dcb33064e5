//! PKCE (RFC 7636), S256 only, in one place: the challenge a client sends
//! to `/oauth/authorize`, the verifier that proves it at the token
//! endpoint, and the pair this server makes for its own sign-in upstream.

use aws_lc_rs::digest::{SHA256, digest};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use mcp_stateless::random;

/// The one method taken: OAuth 2.1, 4.1.1 (no method means `plain`, which is not).
pub const METHOD: &str = "S256";

/// Why a request's challenge is refused, as the client is told.
pub fn check_challenge(method: Option<&str>, challenge: Option<&str>) -> Result<(), &'static str> {
    if method != Some(METHOD) {
        return Err("PKCE is required, with code_challenge_method S256");
    }
    let challenge = challenge.unwrap_or_default();
    if challenge.len() != 43 || !challenge.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
        return Err("code_challenge must be a base64url SHA-256");
    }
    Ok(())
}

/// Whether `verifier` (43 to 128 unreserved characters, RFC 7636, 4.1)
/// is the one `challenge` was made from.
pub fn proves(verifier: &str, challenge: &str) -> bool {
    (43..=128).contains(&verifier.len())
        && verifier.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
        && challenge_of(verifier) == challenge
}

/// A new verifier and its challenge.
pub fn new_pair() -> (String, String) {
    let verifier = URL_SAFE_NO_PAD.encode(random::bytes::<32>());
    let challenge = challenge_of(&verifier);
    (verifier, challenge)
}

fn challenge_of(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(digest(&SHA256, verifier.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s256_only_and_the_verifier_proves_its_own_challenge() {
        let (verifier, challenge) = new_pair();
        assert!(check_challenge(Some("S256"), Some(&challenge)).is_ok());
        assert!(check_challenge(None, Some(&challenge)).is_err(), "no method is plain");
        assert!(check_challenge(Some("plain"), Some(&challenge)).is_err());
        assert!(check_challenge(Some("S256"), Some("short")).is_err());
        assert!(proves(&verifier, &challenge));
        assert!(!proves(&new_pair().0, &challenge));
        // RFC 7636, appendix B.
        assert!(proves("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
        assert!(!proves("too-short", &challenge_of("too-short")));
    }
}
