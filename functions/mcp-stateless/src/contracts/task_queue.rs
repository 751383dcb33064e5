//! `TaskQueue`: what the request side enqueues is what the worker receives.

use crate::{
    protocol::context::Principal,
    tasks::{
        queue::{TaskMessage, TaskQueue},
        record::TASK_IDS,
    },
};

fn messages() -> Vec<TaskMessage> {
    ["alice", "bob", "alice"]
        .into_iter()
        .map(|subject| {
            let owner = Principal::Verified { issuer: "https://issuer.example".into(), subject: subject.into() };
            TaskMessage::for_key(&TASK_IDS.key(owner.binding_id(), &TASK_IDS.mint()))
        })
        .collect()
}

/// Enqueues three messages and checks that `receive` yields the same ones,
/// each naming the record it was sent for.
pub async fn task_queue<F, Fut>(queue: &dyn TaskQueue, receive: F)
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Vec<TaskMessage>>,
{
    let sent = messages();
    for message in &sent {
        queue.enqueue(message).await.unwrap();
    }
    let mut received = receive(sent.len()).await;
    let mut expected = sent.clone();
    received.sort_by(|a, b| a.pk.cmp(&b.pk));
    expected.sort_by(|a, b| a.pk.cmp(&b.pk));
    assert_eq!(received, expected);
}
