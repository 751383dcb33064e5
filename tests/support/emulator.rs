//! The AWS emulator (moto's server) the `*_kms` and `*_dynamodb` tests run
//! against, through the real AWS SDK with an endpoint override. Started by
//! `infra/start-emulators.sh`; `infra/test.sh` does all of it.

use std::{net::SocketAddr, sync::Arc};

use aws_sdk_dynamodb::types::{AttributeDefinition, BillingMode, KeySchemaElement, TimeToLiveSpecification};
use mcp_aws::AwsSettings;
use mcp_stateless::{Dependencies, EdgePolicy, McpEndpoint, Mode, clock::Clock};
use serde_json::Value;

/// What the emulator-backed tests read: the AWS SDK's variables for the
/// emulator, the per-call limits it needs, and the table definition.
const NAMES: [&str; 9] = [
    "AWS_ENDPOINT_URL",
    "AWS_REGION",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_EC2_METADATA_DISABLED",
    "MCP_AWS_ATTEMPT_TIMEOUT_MS",
    "MCP_AWS_OPERATION_TIMEOUT_MS",
    "MCP_TEST_TABLE_DEFINITION",
];

/// The emulator's environment: the one `infra/test.sh` exported, or, when a
/// plain `cargo test` runs with nothing set up, the one
/// `infra/emulator-for-tests.sh` prints after starting the emulator. Never
/// written into this process's environment (other test threads read it);
/// the tests pass it on explicitly, to the SDK and to worker processes.
pub fn emulator_env() -> &'static [(String, String)] {
    static ENV: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();
    ENV.get_or_init(|| {
        if std::env::var("AWS_ENDPOINT_URL").is_ok() {
            return NAMES.iter().filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?))).collect();
        }
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../infra/emulator-for-tests.sh");
        let output = std::process::Command::new("bash")
            .arg(script)
            .stderr(std::process::Stdio::inherit())
            .output()
            .unwrap_or_else(|error| panic!("could not run {script}: {error}"));
        assert!(output.status.success(), "starting the emulator failed (see above); `bash infra/test.sh` sets up and runs every test");
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| line.split_once('='))
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .collect()
    })
}

/// One variable of [`emulator_env`].
pub fn emulator_var(name: &str) -> String {
    lookup(name).unwrap_or_else(|| panic!("{name} is not in the emulator's environment"))
}

fn lookup(name: &str) -> Option<String> {
    emulator_env().iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
}

/// The per-call limits for the emulator, which on a busy machine answers in
/// seconds where AWS takes milliseconds.
pub fn limits() -> mcp_aws::CallLimits {
    mcp_aws::CallLimits::from_lookup(lookup).expect("the emulator's limits are numbers")
}

/// SDK configuration pointing at the emulator, whether or not this process's
/// environment names it (see [`emulator_env`]).
pub async fn sdk() -> aws_config::SdkConfig {
    let endpoint = emulator_var("AWS_ENDPOINT_URL");
    assert!(endpoint.starts_with("http://127.0.0.1"), "the emulator is on loopback, not at {endpoint}");
    loader(&limits()).endpoint_url(endpoint).load().await
}

/// The emulator's region and credentials under `limits`, for a caller that
/// sets the endpoint itself (a proxy in front of the emulator).
pub fn loader(limits: &mcp_aws::CallLimits) -> aws_config::ConfigLoader {
    let credentials = aws_sdk_sqs::config::Credentials::new(
        emulator_var("AWS_ACCESS_KEY_ID"),
        emulator_var("AWS_SECRET_ACCESS_KEY"),
        Some(emulator_var("AWS_SESSION_TOKEN")),
        None,
        "emulator",
    );
    // Not Lambda's environment: the SDK's default chains, as locally.
    mcp_aws::loader_for(limits, &mcp_aws::SdkEnvironment::default())
        .region(aws_config::Region::new(emulator_var("AWS_REGION")))
        .credentials_provider(credentials)
}

pub fn unique(prefix: &str) -> String {
    let random = mcp_stateless::random::bytes::<6>();
    format!("{prefix}-{}", random.iter().map(|b| format!("{b:02x}")).collect::<String>())
}

/// A table made from the definition `infra/bootstrap.py` read out of
/// template.yaml (`MCP_TEST_TABLE_DEFINITION`), so tests and deployment share
/// one source of truth.
pub async fn fresh_table(sdk: &aws_config::SdkConfig) -> String {
    let path = emulator_var("MCP_TEST_TABLE_DEFINITION");
    let definition: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let client = aws_sdk_dynamodb::Client::new(sdk);
    let name = unique("state");
    let mut create = client.create_table().table_name(&name).billing_mode(BillingMode::from(definition["BillingMode"].as_str().unwrap()));
    for attribute in definition["AttributeDefinitions"].as_array().unwrap() {
        create = create.attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(attribute["AttributeName"].as_str().unwrap())
                .attribute_type(attribute["AttributeType"].as_str().unwrap().into())
                .build()
                .unwrap(),
        );
    }
    for key in definition["KeySchema"].as_array().unwrap() {
        create = create.key_schema(
            KeySchemaElement::builder()
                .attribute_name(key["AttributeName"].as_str().unwrap())
                .key_type(key["KeyType"].as_str().unwrap().into())
                .build()
                .unwrap(),
        );
    }
    create.send().await.unwrap();
    let ttl = definition["TimeToLiveAttribute"].as_str().unwrap();
    assert_eq!(ttl, mcp_aws::dynamo::TTL_ATTRIBUTE, "template.yaml's TTL attribute is the one the code writes");
    client
        .update_time_to_live()
        .table_name(&name)
        .time_to_live_specification(TimeToLiveSpecification::builder().attribute_name(ttl).enabled(true).build().unwrap())
        .send()
        .await
        .unwrap();
    name
}

pub async fn fresh_key(sdk: &aws_config::SdkConfig) -> String {
    let client = aws_sdk_kms::Client::new(sdk);
    let key = client.create_key().description("e2e request state").send().await.unwrap();
    key.key_metadata.unwrap().key_id
}

pub fn settings(key: &str, table: &str, audience: &str) -> AwsSettings {
    {
        let mut value = AwsSettings::default();
        value.state_key_id = Some(key.into());
        value.table_name = Some(table.into());
        value.audience = Some(audience.into());
        value
    }
}

/// An independently built server instance: its own SDK clients, key cache
/// and local port, sharing only the emulator with other instances.
pub async fn start_fixtures(settings: &AwsSettings, clock: Arc<dyn Clock>) -> SocketAddr {
    let sdk = sdk().await;
    let deps = mcp_aws::dependencies(settings, Some(&sdk), clock);
    start_fixtures_with(deps).await
}

pub async fn start_fixtures_with(deps: Dependencies) -> SocketAddr {
    crate::spawn(crate::fixture_endpoint(deps, Mode::Local)).await
}

/// A stand-in KMS endpoint that answers every call with the JSON-protocol
/// error `error_type` (as real KMS does for a disabled key or throttling),
/// since moto does not refuse disabled keys.
pub async fn failing_kms(error_type: &'static str, status: u16) -> String {
    use http_body_util::Full;
    use hyper::{server::conn::http1, service::service_fn};
    use hyper_util::rt::TokioIo;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else { return };
            tokio::spawn(async move {
                let service = service_fn(move |_request| async move {
                    let body = format!(r#"{{"__type":"{error_type}","message":"injected by the test"}}"#);
                    let response = http::Response::builder()
                        .status(status)
                        .header("content-type", "application/x-amz-json-1.1")
                        .body(Full::new(bytes::Bytes::from(body)))
                        .unwrap();
                    Ok::<_, std::convert::Infallible>(response)
                });
                let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
            });
        }
    });
    format!("http://{addr}")
}

/// Dependencies whose KMS client talks to `kms_endpoint` while DynamoDB is
/// the emulator's: for injecting KMS failures.
pub async fn deps_with_kms_at(kms_endpoint: &str, key: &str, table: &str, audience: &str, clock: Arc<dyn Clock>) -> Dependencies {
    use mcp_stateless::{Handles, RequestStates, sealed::request_state::EnvelopeSealer};
    let sdk = sdk().await;
    let kms_config = aws_sdk_kms::config::Builder::from(&sdk).endpoint_url(kms_endpoint).build();
    let keys = mcp_aws::KmsDataKeys::new(aws_sdk_kms::Client::from_conf(kms_config), key, audience, Default::default());
    let store = Arc::new(mcp_aws::DynamoStore::new(aws_sdk_dynamodb::Client::new(&sdk), table));
    let sealer = Arc::new(EnvelopeSealer::new(keys).with_clock(clock.clone()));
    Dependencies::new(
        RequestStates::new(sealer, store.clone(), clock.clone(), audience),
        Handles::new(store.clone(), clock.clone()),
        mcp_stateless::tasks::TaskBackend::in_process_with_store(store.clone(), clock.clone()),
        mcp_stateless::subscriptions::Subscriptions::new(
            store.clone(),
            store,
            clock,
            mcp_stateless::subscriptions::ListenPolicy::new(true),
        ),
    )
}

/// Every item in `table` (the tests' tables are small).
pub async fn scan(
    sdk: &aws_config::SdkConfig,
    table: &str,
) -> Vec<std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>> {
    aws_sdk_dynamodb::Client::new(sdk).scan().table_name(table).send().await.unwrap().items.unwrap_or_default()
}

/// A task queue and its dead-letter queue (after `max_receives`
/// deliveries), with a short visibility timeout as the local set-up has.
pub struct Queues {
    pub url: String,
    pub dead_letter_url: String,
}

pub async fn fresh_queues(sdk: &aws_config::SdkConfig, visibility_seconds: u32, max_receives: u32) -> Queues {
    use aws_sdk_sqs::types::QueueAttributeName;
    let client = aws_sdk_sqs::Client::new(sdk);
    let dead_letter_url = client.create_queue().queue_name(unique("dlq")).send().await.unwrap().queue_url.unwrap();
    let attributes =
        client.get_queue_attributes().queue_url(&dead_letter_url).attribute_names(QueueAttributeName::QueueArn).send().await.unwrap();
    let dead_letter_arn = attributes.attributes.unwrap()[&QueueAttributeName::QueueArn].clone();
    let redrive = serde_json::json!({"deadLetterTargetArn": dead_letter_arn, "maxReceiveCount": max_receives.to_string()});
    let url = client
        .create_queue()
        .queue_name(unique("tasks"))
        .attributes(QueueAttributeName::VisibilityTimeout, visibility_seconds.to_string())
        .attributes(QueueAttributeName::RedrivePolicy, redrive.to_string())
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    Queues { url, dead_letter_url }
}

/// The conformance fixture server (with `e2e::tasks::task_fixtures`) on the
/// emulator's table and queue, in this process.
pub async fn start_task_server(settings: &AwsSettings, clock: Arc<dyn Clock>) -> SocketAddr {
    let sdk = sdk().await;
    let deps = mcp_aws::dependencies(settings, Some(&sdk), clock);
    start_task_server_with(deps).await
}

pub async fn start_task_server_with(deps: Dependencies) -> SocketAddr {
    let server = everything::EverythingServer::with_task_tools(deps.clone(), crate::tasks::task_fixtures());
    crate::spawn(McpEndpoint::new(server, EdgePolicy::new(Mode::Local)).with_dependencies(&deps)).await
}
