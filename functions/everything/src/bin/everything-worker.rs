//! The conformance fixtures' task worker: runs `everything`'s task tools
//! for tasks the queue delivers (a Lambda SQS consumer, or a local poller).

fn main() -> Result<(), mcp_stateless::StartError> {
    mcp_aws::start_worker(everything::task_tools())
}
