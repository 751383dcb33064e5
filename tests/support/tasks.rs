//! Tasks over HTTP, and the fixture worker the queue tests run in a
//! process of its own.

use std::{
    net::SocketAddr,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use mcp_stateless::tasks::{TaskRun, TaskStep, TaskSupport, TaskTool, TaskTools};
use rmcp::ErrorData;
use serde_json::{Value, json};

use crate::{post_with, request, set_header};

/// Capabilities of a client that declared the tasks extension.
pub fn tasks_capable() -> Value {
    json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Nothing {}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct PanicAfter {
    /// How long the run lasts before it panics.
    #[serde(default)]
    after_ms: u64,
}

async fn always_panics(arguments: PanicAfter, _run: TaskRun) -> Result<TaskStep, ErrorData> {
    tokio::time::sleep(Duration::from_millis(arguments.after_ms)).await;
    panic!("always_panics panicked, as it always does")
}

/// What a panic does in the release build (`panic = "abort"`): the
/// process ends at once, with no chance to settle anything.
async fn always_aborts(_: Nothing, _run: TaskRun) -> Result<TaskStep, ErrorData> {
    std::process::abort()
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Seconds {
    /// How long the run lasts.
    seconds: u64,
    /// Said last, after " for ", where given: whose task this is.
    #[serde(default)]
    label: Option<String>,
}

/// Says which run it is and the idempotency key it was given: in its
/// status while it runs, then in its result.
async fn says_its_attempt(arguments: Seconds, run: TaskRun) -> Result<TaskStep, ErrorData> {
    let label = arguments.label.map(|label| format!(" for {label}")).unwrap_or_default();
    let said = format!("attempt {} key {}{label}", run.attempt(), run.idempotency_key());
    run.set_status(said.clone());
    tokio::time::sleep(Duration::from_secs(arguments.seconds)).await;
    Ok(TaskStep::text(said))
}

/// The conformance fixtures' task tools, one that says which run it is,
/// and two whose every run fails: one panics (unwinding, as in a debug
/// build), one aborts the process.
pub fn task_fixtures() -> TaskTools {
    everything::task_tools()
        .with(TaskTool::new("says_its_attempt", "Says its attempt and key, after seconds", TaskSupport::Required, says_its_attempt))
        .with(TaskTool::new("always_panics", "Panics in every run, after after_ms", TaskSupport::Required, always_panics))
        .with(TaskTool::new("always_aborts", "Aborts the process in every run", TaskSupport::Required, always_aborts))
}

/// Sends `method` with `params` as `principal`, declaring the tasks extension.
pub async fn rpc(addr: SocketAddr, principal: &str, method: &str, params: Value) -> Value {
    let body = request(7, method, params, tasks_capable());
    post_with(addr, &body, |h| set_header(h, "x-mcp-dev-principal", principal)).await.message()
}

/// Calls `tool` and answers the task id of the `CreateTaskResult`.
pub async fn start_task(addr: SocketAddr, principal: &str, tool: &str, arguments: Value) -> String {
    let created = rpc(addr, principal, "tools/call", json!({"name": tool, "arguments": arguments})).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    created["result"]["taskId"].as_str().unwrap().to_owned()
}

pub async fn get_task(addr: SocketAddr, principal: &str, id: &str) -> Value {
    rpc(addr, principal, "tasks/get", json!({"taskId": id})).await
}

/// Polls `tasks/get` until `done` holds for the result, or panics after `limit`.
pub async fn wait_for(addr: SocketAddr, principal: &str, id: &str, limit: Duration, done: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let got = get_task(addr, principal, id).await;
        if done(&got["result"]) {
            return got["result"].clone();
        }
        assert!(started.elapsed() < limit, "task {id} not there after {limit:?}: {got}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub fn is_terminal(result: &Value) -> bool {
    matches!(result["status"].as_str(), Some("completed" | "failed" | "cancelled"))
}

/// A worker process, killed when dropped.
pub struct WorkerProcess(Child);

impl WorkerProcess {
    /// Starts `binary` (a test's `env!("CARGO_BIN_EXE_fixture-worker")`)
    /// with the emulator's environment and `env` on top.
    pub fn start(binary: &str, env: &[(&str, &str)]) -> Self {
        Self::start_logging(binary, env, Stdio::inherit())
    }

    /// [`start`](Self::start), its log (standard error) to `log`. It logs
    /// at `warn` unless `env` sets `MCP_LOG_LEVEL`.
    pub fn start_logging(binary: &str, env: &[(&str, &str)], log: impl Into<Stdio>) -> Self {
        let mut command = Command::new(binary);
        command
            .envs(crate::emulator::emulator_env().iter().map(|(n, v)| (n.as_str(), v.as_str())))
            .env("MCP_LOG_LEVEL", "warn")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(log);
        Self(command.spawn().expect("the fixture worker starts"))
    }

    /// Whether the process has ended (crashed, aborted, killed).
    pub fn exited(&mut self) -> bool {
        self.0.try_wait().ok().flatten().is_some()
    }

    /// SIGKILL: no chance to clean up, as when Lambda ends a sandbox.
    pub fn kill(mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
