//! AWS behind `mcp-stateless`'s ports: KMS data keys for sealing `requestState`,
//! DynamoDB for handles and single-use records, and the entry point every
//! function's `main` calls.
//!
//! Clients are built once per cold start and make no network call until a
//! request needs one.

pub mod attribute_values;
pub mod dynamo_handles;
pub mod kms_keys;
pub mod settings;

use std::sync::Arc;

use mcp_stateless::{
    Dependencies, Handles, Mode, RequestStates, StartError,
    clock::{Clock, SystemClock},
    handles::{HandleStore, memory::InMemoryHandleStore},
    sealed::redemption::{InMemoryLedger, RedemptionLedger},
    sealed::request_state::{EnvelopeSealer, InProcessKey, RequestStateSealer},
};

pub use dynamo_handles::DynamoStore;
pub use kms_keys::{KeyWindow, KmsDataKeys};
pub use settings::AwsSettings;

/// The SDK configuration from the environment (`AWS_REGION`,
/// `AWS_ENDPOINT_URL` for emulators, credentials).
pub async fn sdk_config() -> aws_config::SdkConfig {
    aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await
}

/// Dependencies for `settings`: AWS where configured, memory elsewhere.
pub fn dependencies(settings: &AwsSettings, sdk: Option<&aws_config::SdkConfig>, clock: Arc<dyn Clock>) -> Dependencies {
    let audience = settings.audience();
    let sealer: Arc<dyn RequestStateSealer> = match (&settings.state_key_id, sdk) {
        (Some(key_id), Some(sdk)) => {
            let keys = KmsDataKeys::new(aws_sdk_kms::Client::new(sdk), key_id, audience, KeyWindow::default());
            Arc::new(EnvelopeSealer::new(keys).with_clock(clock.clone()))
        }
        _ => Arc::new(EnvelopeSealer::new(InProcessKey::generate()).with_clock(clock.clone())),
    };
    let (store, ledger): (Arc<dyn HandleStore>, Arc<dyn RedemptionLedger>) = match (&settings.table_name, sdk) {
        (Some(table), Some(sdk)) => {
            let dynamo = Arc::new(DynamoStore::new(aws_sdk_dynamodb::Client::new(sdk), table));
            (dynamo.clone(), dynamo)
        }
        _ => (Arc::new(InMemoryHandleStore::default()), Arc::new(InMemoryLedger::default())),
    };
    Dependencies {
        request_states: RequestStates::new(sealer, ledger, clock.clone(), audience),
        handles: Handles::new(store, clock),
    }
}

/// Reads the settings, builds the dependencies once and serves
/// `build_handler` until the process ends: Lambda events when the Lambda
/// runtime is present, the local server otherwise.
pub async fn run<S, F>(build_handler: F) -> Result<(), StartError>
where
    S: rmcp::ServerHandler + Clone,
    F: FnOnce(Dependencies) -> S,
{
    let mode = mcp_stateless::detect_mode();
    mcp_stateless::edge::logging::init(mode);
    let settings = AwsSettings::from_env();
    settings.check(mode).map_err(StartError::Config)?;
    let uses_aws = settings.state_key_id.is_some() || settings.table_name.is_some();
    let sdk = if uses_aws { Some(sdk_config().await) } else { None };
    if mode == Mode::Local {
        tracing::info!(
            request_state = if settings.state_key_id.is_some() { "KMS" } else { "in-process key" },
            handles = if settings.table_name.is_some() { "DynamoDB" } else { "memory" },
            audience = settings.audience(),
            "dependencies"
        );
    }
    let deps = dependencies(&settings, sdk.as_ref(), Arc::new(SystemClock));
    mcp_stateless::serve(mode, deps, build_handler).await
}
