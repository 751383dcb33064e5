//! `ChangeFeed`: list versions any instance bumps, and the live deployment's digests.

use crate::subscriptions::{ChangeFeed, ListDigests, ListKind, feed::Lists};

fn digests(tag: &str) -> ListDigests {
    ListDigests { tools: format!("tools-{tag}"), prompts: "prompts".into(), resources: format!("resources-{tag}") }
}

/// A `ChangeFeed`: list versions any instance bumps, and the deployment
/// recorded once per build, the first recorder winning.
pub async fn change_feed(feed: &dyn ChangeFeed) {
    // A feed nobody wrote: every list at version 0, no deployment recorded.
    let fresh = feed.lists().await.unwrap();
    assert_eq!(fresh, Lists::default());

    // A bump moves its own list only, and says when.
    feed.bump(ListKind::Tools, 1_000).await.unwrap();
    feed.bump(ListKind::Tools, 2_000).await.unwrap();
    let bumped = feed.lists().await.unwrap();
    assert_eq!((bumped.tools.version, bumped.tools.changed_at_ms), (2, 2_000));
    assert_eq!((bumped.prompts.version, bumped.resources.version), (0, 0));

    // Recording a deployment bumps each list whose digest changed.
    assert!(feed.record(&bumped, &digests("v1"), 3_000).await.unwrap());
    let first = feed.lists().await.unwrap();
    assert_eq!(first.tools.digest, "tools-v1");
    assert_eq!((first.tools.version, first.prompts.version, first.resources.version), (3, 1, 1));
    assert_eq!(first.resources.changed_at_ms, 3_000);

    // The same lists again change nothing; another build's bump only theirs.
    assert!(feed.record(&first, &digests("v1"), 4_000).await.unwrap());
    assert_eq!(feed.lists().await.unwrap(), first);
    assert!(feed.record(&first, &digests("v2"), 5_000).await.unwrap());
    let second = feed.lists().await.unwrap();
    assert_eq!((second.tools.version, second.prompts.version, second.resources.version), (4, 1, 2));

    // A recorder that read before another deployment was recorded loses,
    // and writes nothing; a bump in between does not make it lose.
    assert!(!feed.record(&first, &digests("v3"), 6_000).await.unwrap());
    assert_eq!(feed.lists().await.unwrap(), second);
    feed.bump(ListKind::Prompts, 7_000).await.unwrap();
    assert!(feed.record(&second, &digests("v3"), 8_000).await.unwrap());
    let third = feed.lists().await.unwrap();
    assert_eq!(third.tools.digest, "tools-v3");

    // Lists that are the ones seen need no write, however stale the read.
    assert!(feed.record(&second, &digests("v2"), 9_000).await.unwrap());
    assert_eq!(feed.lists().await.unwrap(), third);
}
