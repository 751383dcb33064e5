//! The contract suite of the authorization server's port, `GrantStore`
//! (its codes and refresh tokens), for this repository's adapters and a
//! fork's own, behind the `contracts` feature as `mcp_stateless::contracts`
//! are.

use crate::grants::{CodeGrant, GrantStore, RefreshGrant, Rotation, key_of, new_secret};

fn code_grant(expires_at: u64) -> CodeGrant {
    CodeGrant {
        client_id: "client".into(),
        redirect_uri: "http://127.0.0.1/cb".into(),
        code_challenge: "c".repeat(43),
        resource: "https://mcp.example.com/mcp".into(),
        scope: "mcp".into(),
        subject: "issuer#alice".into(),
        expires_at,
    }
}

fn refresh_grant(family: &str, expires_at: u64) -> RefreshGrant {
    RefreshGrant {
        family: family.into(),
        client_id: "client".into(),
        resource: "https://mcp.example.com/mcp".into(),
        scope: "mcp".into(),
        subject: "issuer#alice".into(),
        expires_at,
    }
}

/// A `GrantStore`: a code is taken once, however many try; a refresh
/// token is current once, a second use ends its family, and of
/// concurrent uses exactly one wins; revocation ends a family for its own
/// client only.
pub async fn grant_store(grants: &dyn GrantStore) {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("after 1970").as_secs();
    // A code: taken once; an expired one never.
    let code = key_of(&new_secret());
    grants.put_code(&code, &code_grant(now + 60)).await.unwrap();
    assert_eq!(grants.take_code(&code, now).await.unwrap(), Some(code_grant(now + 60)));
    assert_eq!(grants.take_code(&code, now).await.unwrap(), None);
    let old = key_of(&new_secret());
    grants.put_code(&old, &code_grant(now + 60)).await.unwrap();
    assert_eq!(grants.take_code(&old, now + 60).await.unwrap(), None, "expired");
    let raced = key_of(&new_secret());
    grants.put_code(&raced, &code_grant(now + 60)).await.unwrap();
    let takes = futures::future::join_all((0..8).map(|_| grants.take_code(&raced, now))).await;
    assert_eq!(takes.into_iter().filter(|t| matches!(t, Ok(Some(_)))).count(), 1, "exactly one take wins");

    // Refresh: current once; used again, the family ends, newer tokens too.
    let family = new_secret();
    let (first, second) = (key_of(&new_secret()), key_of(&new_secret()));
    grants.put_refresh(&first, &refresh_grant(&family, now + 600)).await.unwrap();
    assert_eq!(grants.use_refresh(&first, now, now + 600).await.unwrap(), Rotation::Current(refresh_grant(&family, now + 600)));
    grants.put_refresh(&second, &refresh_grant(&family, now + 600)).await.unwrap();
    assert_eq!(grants.use_refresh(&first, now, now + 600).await.unwrap(), Rotation::Reused);
    assert_eq!(grants.use_refresh(&second, now, now + 600).await.unwrap(), Rotation::Unknown, "its family is revoked");
    assert_eq!(grants.use_refresh(&key_of("never issued"), now, now + 600).await.unwrap(), Rotation::Unknown);
    let expired = key_of(&new_secret());
    grants.put_refresh(&expired, &refresh_grant(&new_secret(), now + 10)).await.unwrap();
    assert_eq!(grants.use_refresh(&expired, now + 10, now + 600).await.unwrap(), Rotation::Unknown);

    // Concurrent uses of one token: exactly one is current.
    let contested = key_of(&new_secret());
    grants.put_refresh(&contested, &refresh_grant(&new_secret(), now + 600)).await.unwrap();
    let uses = futures::future::join_all((0..8).map(|_| grants.use_refresh(&contested, now, now + 600))).await;
    let current = uses.iter().filter(|u| matches!(u, Ok(Rotation::Current(_)))).count();
    assert_eq!(current, 1, "{uses:?}");

    // Revocation ends the family for its own client only.
    let (kept, ended) = (key_of(&new_secret()), key_of(&new_secret()));
    grants.put_refresh(&kept, &refresh_grant(&new_secret(), now + 600)).await.unwrap();
    grants.revoke_refresh(&kept, "another client", now + 600).await.unwrap();
    assert!(matches!(grants.use_refresh(&kept, now, now + 600).await.unwrap(), Rotation::Current(_)));
    grants.put_refresh(&ended, &refresh_grant(&new_secret(), now + 600)).await.unwrap();
    grants.revoke_refresh(&ended, "client", now + 600).await.unwrap();
    assert_eq!(grants.use_refresh(&ended, now, now + 600).await.unwrap(), Rotation::Unknown);
}
