//! AWS behind `mcp-stateless`'s ports: KMS data keys for sealing
//! `requestState` ([`kms_keys`]); one DynamoDB table for handles,
//! single-use records, quota counts, tasks and the change feed
//! ([`dynamo`], whose header has the item map); SQS for task messages
//! ([`sqs_queue`]); the SDK's configuration ([`sdk`]), the bounds of every
//! call ([`call_limits`]) and the settings, the one module that reads the
//! environment ([`settings`]);
//! and the entry points every function's `main` calls ([`start`], and
//! [`worker_entry`] for the task worker).
//!
//! Clients are built once per cold start and make no network call until a
//! request needs one.

// The public surface a fork builds on may grow without breaking it: every
// exported struct and enum is `#[non_exhaustive]`, or says with
// `#[allow(clippy::exhaustive_..., reason = "...")]` why a new field or
// variant should break the code that uses it (the lint gate's clippy runs
// with -D warnings).
#![warn(missing_docs, clippy::exhaustive_structs, clippy::exhaustive_enums)]

pub mod call_limits;
pub mod dynamo;
pub mod kms_keys;
pub mod sdk;
pub mod settings;
pub mod sqs_queue;
pub mod worker_entry;

use std::sync::Arc;

use mcp_stateless::{
    Dependencies, Entry, Handles, RequestStates, Settings, StartError,
    clock::{Clock, SystemClock},
    handles::{HandleStore, memory::InMemoryHandleStore},
    quota::{CreationQuota, InMemoryQuota},
    sealed::redemption::{InMemoryLedger, RedemptionLedger},
    sealed::request_state::{DEFAULT_MAX_TOKEN_BYTES, EnvelopeSealer, InProcessKey, RequestStateSealer},
    subscriptions::{ChangeFeed, InMemoryFeed, ListenPolicy, Subscriptions},
    tasks::{
        TaskBackend, TaskTools, TaskWorker,
        store::{TaskStore, memory::InMemoryTaskStore},
        timings,
    },
};

pub use call_limits::CallLimits;
pub use dynamo::DynamoStore;
pub use kms_keys::{KeyWindow, KmsDataKeys};
pub use sdk::{SdkEnvironment, loader_for, sdk_config};
pub use settings::AwsSettings;
pub use sqs_queue::SqsTaskQueue;

/// The sealer for `settings`, sealing tokens of `max_token_bytes` at most:
/// KMS data keys where a key is named, a key made in this process elsewhere
/// (local only).
pub fn sealer(
    settings: &AwsSettings,
    sdk: Option<&aws_config::SdkConfig>,
    clock: Arc<dyn Clock>,
    max_token_bytes: usize,
) -> Arc<dyn RequestStateSealer> {
    match (&settings.state_key_id, sdk) {
        (Some(key_id), Some(sdk)) => {
            let keys = KmsDataKeys::new(aws_sdk_kms::Client::new(sdk), key_id, settings.audience(), KeyWindow::default());
            Arc::new(EnvelopeSealer::new(keys).with_clock(clock).with_max_token_bytes(max_token_bytes))
        }
        _ => Arc::new(EnvelopeSealer::new(InProcessKey::generate()).with_clock(clock).with_max_token_bytes(max_token_bytes)),
    }
}

/// Dependencies for `settings`: AWS where configured, memory elsewhere.
pub fn dependencies(settings: &AwsSettings, sdk: Option<&aws_config::SdkConfig>, clock: Arc<dyn Clock>) -> Dependencies {
    let audience = settings.audience();
    let sealer = sealer(settings, sdk, clock.clone(), DEFAULT_MAX_TOKEN_BYTES);
    #[allow(clippy::type_complexity)]
    let (store, ledger, task_store, quota, feed): (
        Arc<dyn HandleStore>,
        Arc<dyn RedemptionLedger>,
        Arc<dyn TaskStore>,
        Arc<dyn CreationQuota>,
        Arc<dyn ChangeFeed>,
    ) = match (&settings.table_name, sdk) {
        (Some(table), Some(sdk)) => {
            let dynamo = Arc::new(DynamoStore::new(aws_sdk_dynamodb::Client::new(sdk), table));
            (dynamo.clone(), dynamo.clone(), dynamo.clone(), dynamo.clone(), dynamo)
        }
        _ => (
            Arc::new(InMemoryHandleStore::default()),
            Arc::new(InMemoryLedger::default()),
            Arc::new(InMemoryTaskStore::default()),
            Arc::new(InMemoryQuota::default()),
            Arc::new(InMemoryFeed::default()),
        ),
    };
    let tasks = match (&settings.task_queue_url, sdk) {
        (Some(url), Some(sdk)) => {
            TaskBackend::new(task_store, Arc::new(SqsTaskQueue::new(aws_sdk_sqs::Client::new(sdk), url)), clock.clone())
        }
        _ => TaskBackend::in_process_with_store(task_store, clock.clone()),
    };
    Dependencies::new(
        RequestStates::new(sealer, ledger, clock.clone(), audience),
        Handles::new(store, clock.clone()).with_quota(quota.clone()),
        tasks.with_quota(quota.clone()),
        // Served where answers stream; the start applies the settings
        // (`Settings::configure`).
        Subscriptions::new(feed, quota, clock, ListenPolicy::new(true)),
    )
}

/// A function's `main`: reads the settings, then [`run`]s on the runtime
/// they chose (see [`mcp_stateless::block_on`]).
pub fn start<S, F>(build_handler: F) -> Result<(), StartError>
where
    S: rmcp::ServerHandler + Clone,
    F: FnOnce(Dependencies) -> S,
{
    let common = Settings::from_env().map_err(StartError::Config)?;
    mcp_stateless::block_on(common.deployment.runtime, run(common, build_handler))
}

/// A worker function's `main`: [`run_worker`] on the runtime the settings
/// chose.
pub fn start_worker(tools: TaskTools) -> Result<(), StartError> {
    let common = Settings::from_env().map_err(StartError::Config)?;
    mcp_stateless::block_on(common.deployment.runtime, run_worker(common, tools))
}

/// Reads this crate's settings, builds the dependencies once and serves
/// `build_handler` as `common` say until the process ends.
pub async fn run<S, F>(common: Settings, build_handler: F) -> Result<(), StartError>
where
    S: rmcp::ServerHandler + Clone,
    F: FnOnce(Dependencies) -> S,
{
    mcp_stateless::logging::init(common.deployment.log_format, &common.log_level);
    let settings = AwsSettings::from_env(&common.deployment).map_err(StartError::Config)?;
    settings.check(&common.deployment).map_err(StartError::Config)?;
    let uses_aws = settings.state_key_id.is_some() || settings.table_name.is_some() || settings.task_queue_url.is_some();
    let sdk = if uses_aws { Some(sdk_config(&settings).await) } else { None };
    if let Entry::Local { .. } = common.deployment.entry {
        tracing::info!(
            request_state = if settings.state_key_id.is_some() { "KMS" } else { "in-process key" },
            handles = if settings.table_name.is_some() { "DynamoDB" } else { "memory" },
            task_worker = if settings.task_queue_url.is_some() { "SQS" } else { "in-process" },
            audience = settings.audience(),
            "dependencies"
        );
    }
    let deps = dependencies(&settings, sdk.as_ref(), Arc::new(SystemClock));
    mcp_stateless::serve(common, deps, build_handler).await
}

/// The worker function's `main`: runs `tools` for tasks the queue delivers,
/// as a Lambda SQS consumer or, locally, by polling the queues. Needs the
/// table and the queue (`MCP_TABLE_NAME`, `MCP_TASK_QUEUE_URL`) in both.
pub async fn run_worker(common: Settings, tools: TaskTools) -> Result<(), StartError> {
    mcp_stateless::logging::init(common.deployment.log_format, &common.log_level);
    let settings = AwsSettings::from_env(&common.deployment).map_err(StartError::Config)?;
    let (Some(table), Some(queue_url)) = (&settings.table_name, &settings.task_queue_url) else {
        return Err(StartError::Config(format!("the worker needs {} and {}", settings::TABLE_NAME, settings::TASK_QUEUE_URL)));
    };
    let limits = settings.limits;
    let sdk = sdk_config(&settings).await;
    let sqs = aws_sdk_sqs::Client::new(&sdk);
    let store = Arc::new(DynamoStore::new(aws_sdk_dynamodb::Client::new(&sdk), table));
    let queue = Arc::new(SqsTaskQueue::new(sqs.clone(), queue_url));
    // The outcome's write must fit before the invocation's deadline.
    let mut policy = common.tasks;
    policy.deadline_margin = timings::deadline_margin(limits.operation);
    let backend = TaskBackend::new(store.clone(), queue, Arc::new(SystemClock)).with_policy(policy).with_quota(store);
    let worker = TaskWorker::new(backend.with_tools(tools));
    match common.deployment.entry {
        Entry::Lambda => {
            let retries = worker_entry::Retries { client: sqs, queue_url: queue_url.clone() };
            worker_entry::serve_lambda(worker, settings.dead_letter_queue_arn, retries).await.map_err(StartError::Lambda)
        }
        Entry::Local { .. } => {
            worker_entry::poll_queues(worker, sqs, queue_url.clone(), settings.dead_letter_queue_url, &limits).await;
            Ok(())
        }
    }
}
