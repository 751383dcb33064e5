//! The contract suite of the authorization server's port, `GrantStore`
//! (its codes and refresh tokens), for this repository's adapters and a
//! fork's own, behind the `contracts` feature as `mcp_stateless::contracts`
//! are.

use crate::grants::{CodeGrant, GrantStore, Presented, RefreshGrant, Revocation, Rotated, Usable, key_of, new_secret};

fn code_grant(expires_at: u64) -> CodeGrant {
    CodeGrant {
        client_id: "client".into(),
        redirect_uri: "http://127.0.0.1/cb".into(),
        code_challenge: "c".repeat(43),
        resource: "https://mcp.example.com/mcp".into(),
        scope: "mcp".into(),
        subject: "issuer#alice".into(),
        expires_at,
        must_authenticate: false,
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
        authenticated: false,
    }
}

/// A `GrantStore`: a code is taken once, however many try; a refresh
/// token rotates, the previous one is usable until its successor is used
/// and ends its family after; of concurrent rotations exactly one lands;
/// revocation ends a family for its own client only, and one started by a
/// client that authenticated only when it authenticates again.
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

    // Refresh: the current token rotates; the previous one stays usable
    // until its successor is used (a retry after a lost answer), and then
    // its use ends the family, newer tokens too.
    let family = new_secret();
    let (first, second, retried, third) = (key_of(&new_secret()), key_of(&new_secret()), key_of(&new_secret()), key_of(&new_secret()));
    let grant = refresh_grant(&family, now + 600);
    grants.start_family(&first, &grant).await.unwrap();
    let read = usable(grants.present_refresh(&first, now, now + 600).await.unwrap());
    assert_eq!(read.grant, grant);
    assert_eq!(grants.rotate_refresh(&first, &read, &second, &grant).await.unwrap(), Rotated::Done);
    // The answer carrying `second` was lost: `first` again, and `second` is dropped.
    let again = usable(grants.present_refresh(&first, now, now + 600).await.unwrap());
    assert_eq!(grants.rotate_refresh(&first, &again, &retried, &grant).await.unwrap(), Rotated::Done);
    assert!(matches!(grants.present_refresh(&second, now, now + 600).await.unwrap(), Presented::Reused(_)), "a dropped successor");
    assert_eq!(grants.present_refresh(&retried, now, now + 600).await.unwrap(), Presented::Unknown, "its family is revoked");

    let family = new_secret();
    let grant = refresh_grant(&family, now + 600);
    let (first, second) = (key_of(&new_secret()), key_of(&new_secret()));
    grants.start_family(&first, &grant).await.unwrap();
    let read = usable(grants.present_refresh(&first, now, now + 600).await.unwrap());
    grants.rotate_refresh(&first, &read, &second, &grant).await.unwrap();
    let read = usable(grants.present_refresh(&second, now, now + 600).await.unwrap());
    grants.rotate_refresh(&second, &read, &third, &grant).await.unwrap();
    assert!(matches!(grants.present_refresh(&first, now, now + 600).await.unwrap(), Presented::Reused(_)), "its successor was used");
    assert_eq!(grants.present_refresh(&third, now, now + 600).await.unwrap(), Presented::Unknown, "its family is revoked");
    assert_eq!(grants.present_refresh(&key_of("never issued"), now, now + 600).await.unwrap(), Presented::Unknown);
    let expired = key_of(&new_secret());
    grants.start_family(&expired, &refresh_grant(&new_secret(), now + 10)).await.unwrap();
    assert_eq!(grants.present_refresh(&expired, now + 10, now + 600).await.unwrap(), Presented::Unknown);

    // Presenting changes nothing: a refresh that fails after it (signing,
    // the store) leaves the token usable.
    let kept = key_of(&new_secret());
    grants.start_family(&kept, &refresh_grant(&new_secret(), now + 600)).await.unwrap();
    for _ in 0..3 {
        assert!(matches!(grants.present_refresh(&kept, now, now + 600).await.unwrap(), Presented::Usable(_)));
    }

    // Concurrent rotations of one token: exactly one lands; the others
    // change nothing and end no family.
    let contested = key_of(&new_secret());
    let grant = refresh_grant(&new_secret(), now + 600);
    grants.start_family(&contested, &grant).await.unwrap();
    let read = usable(grants.present_refresh(&contested, now, now + 600).await.unwrap());
    let successors: Vec<String> = (0..8).map(|_| key_of(&new_secret())).collect();
    let rotations =
        futures::future::join_all(successors.iter().map(|successor| grants.rotate_refresh(&contested, &read, successor, &grant))).await;
    let done: Vec<&String> = successors.iter().zip(&rotations).filter(|(_, r)| matches!(r, Ok(Rotated::Done))).map(|(s, _)| s).collect();
    assert_eq!(done.len(), 1, "{rotations:?}");
    assert!(matches!(grants.present_refresh(done[0], now, now + 600).await.unwrap(), Presented::Usable(_)), "the winner is current");

    // Revocation ends the family for its own client only; a family
    // started by a client that authenticated, only when it authenticates.
    let (kept, ended) = (key_of(&new_secret()), key_of(&new_secret()));
    grants.start_family(&kept, &refresh_grant(&new_secret(), now + 600)).await.unwrap();
    assert_eq!(grants.revoke_refresh(&kept, "another client", true, now + 600).await.unwrap(), Revocation::Unknown);
    assert!(matches!(grants.present_refresh(&kept, now, now + 600).await.unwrap(), Presented::Usable(_)));
    grants.start_family(&ended, &refresh_grant(&new_secret(), now + 600)).await.unwrap();
    assert_eq!(grants.revoke_refresh(&ended, "client", false, now + 600).await.unwrap(), Revocation::Ended);
    assert_eq!(grants.present_refresh(&ended, now, now + 600).await.unwrap(), Presented::Unknown);
    assert_eq!(grants.revoke_refresh(&key_of(&new_secret()), "client", false, now + 600).await.unwrap(), Revocation::Unknown);
    let keyed = key_of(&new_secret());
    grants.start_family(&keyed, &RefreshGrant { authenticated: true, ..refresh_grant(&new_secret(), now + 600) }).await.unwrap();
    assert_eq!(grants.revoke_refresh(&keyed, "client", false, now + 600).await.unwrap(), Revocation::Unauthenticated);
    assert!(matches!(grants.present_refresh(&keyed, now, now + 600).await.unwrap(), Presented::Usable(_)), "still usable");
    assert_eq!(grants.revoke_refresh(&keyed, "client", true, now + 600).await.unwrap(), Revocation::Ended);
    assert_eq!(grants.present_refresh(&keyed, now, now + 600).await.unwrap(), Presented::Unknown);
}

fn usable(presented: Presented) -> Usable {
    match presented {
        Presented::Usable(usable) => usable,
        other => panic!("not usable: {other:?}"),
    }
}
