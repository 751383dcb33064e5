//! The conformance fixtures' task worker: runs `everything`'s task tools
//! for tasks the queue delivers (a Lambda SQS consumer, or a local poller).

#[tokio::main]
async fn main() -> Result<(), mcp_stateless::StartError> {
    mcp_aws::run_worker(everything::task_tools()).await
}
