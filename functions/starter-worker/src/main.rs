//! The starter's task worker, a Lambda function of its own fed by the task
//! queue (or, locally, polling it: `bash infra/run-worker.sh`). It runs the
//! task tools listed in `starter/src/tools/mod.rs`; nothing to edit here.

fn main() -> Result<(), mcp_stateless::StartError> {
    mcp_aws::start_worker(mcp_function::tools::task_tools())
}
