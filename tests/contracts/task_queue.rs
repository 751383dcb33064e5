//! `TaskQueue` (`mcp_stateless::contracts::task_queue`): in process and on SQS.

use mcp_stateless::{
    contracts::task_queue as suite,
    tasks::queue::{InProcessQueue, TaskMessage},
};

#[tokio::test]
async fn in_process() {
    let (queue, receiver) = InProcessQueue::new();
    let receiver = tokio::sync::Mutex::new(receiver);
    suite(&queue, |count| {
        let receiver = &receiver;
        async move {
            let mut receiver = receiver.lock().await;
            let mut out = Vec::new();
            while out.len() < count {
                // Sent before this reads: already in the channel, or lost.
                out.push(receiver.try_recv().expect("every message enqueued is there"));
            }
            out
        }
    })
    .await;
}

#[tokio::test]
async fn sqs() {
    let sdk = e2e::emulator::sdk().await;
    let client = aws_sdk_sqs::Client::new(&sdk);
    let url = client.create_queue().queue_name(e2e::emulator::unique("contract")).send().await.unwrap().queue_url.unwrap();
    let queue = mcp_aws::SqsTaskQueue::new(client.clone(), &url);
    suite(&queue, |count| {
        let (client, url) = (client.clone(), url.clone());
        async move {
            let mut out: Vec<TaskMessage> = Vec::new();
            // Long polls, each answered as soon as messages are there; a
            // queue that lost one fails the test rather than hanging it.
            for _ in 0..24 {
                if out.len() >= count {
                    break;
                }
                let batch = client.receive_message().queue_url(&url).max_number_of_messages(10).wait_time_seconds(5).send().await.unwrap();
                for message in batch.messages.unwrap_or_default() {
                    out.push(serde_json::from_str(message.body.as_deref().unwrap()).expect("a task message"));
                }
            }
            out
        }
    })
    .await;
}
