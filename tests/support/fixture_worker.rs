//! The worker the queue tests start in a process of their own: the same
//! entry point as a worker Lambda function, running `e2e::tasks::task_fixtures`.

fn main() -> Result<(), mcp_stateless::StartError> {
    mcp_aws::start_worker(e2e::tasks::task_fixtures())
}
