//! What the first request that needs AWS costs on a cold instance, step by
//! step, next to the same calls warm: SDK configuration, credentials, a new
//! connection, KMS GenerateDataKey and DynamoDB GetItem. Against the
//! emulator (plain HTTP on loopback: no TLS handshake and no network, which
//! in a region add to the first call of each client). Medians of 20 cold
//! sequences, each with a fresh SDK configuration and fresh clients.
//!
//! `cargo bench -p e2e --bench first_aws_request` with the emulator's
//! environment (infra/bench.sh runs it).

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_kms::{config::ProvideCredentials, types::DataKeySpec};

const RUNS: usize = 20;

#[derive(Default)]
struct Steps {
    config: Vec<Duration>,
    credentials: Vec<Duration>,
    tcp_connect: Vec<Duration>,
    kms_first: Vec<Duration>,
    kms_warm: Vec<Duration>,
    dynamodb_first: Vec<Duration>,
    dynamodb_warm: Vec<Duration>,
}

async fn timed<T>(into: &mut Vec<Duration>, future: impl Future<Output = T>) -> T {
    let started = Instant::now();
    let value = future.await;
    into.push(started.elapsed());
    value
}

fn median(values: &mut [Duration]) -> f64 {
    values.sort();
    values[values.len() / 2].as_secs_f64() * 1000.0
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let Ok(endpoint) = std::env::var("AWS_ENDPOINT_URL") else {
        eprintln!("first_aws_request: needs the emulator (AWS_ENDPOINT_URL); run infra/bench.sh");
        return;
    };
    let deployment = mcp_stateless::Settings::from_env().unwrap().deployment;
    let settings = || mcp_aws::AwsSettings::from_env(&deployment).unwrap();
    let sdk = mcp_aws::sdk_config(&settings()).await;
    let key = aws_sdk_kms::Client::new(&sdk).create_key().send().await.unwrap().key_metadata.unwrap().key_id;
    let table = e2e::emulator::fresh_table(&sdk).await;
    let authority = endpoint.trim_start_matches("http://").trim_end_matches('/').to_owned();

    let mut steps = Steps::default();
    for _ in 0..RUNS {
        // The settings' read of the environment as a start makes it.
        let sdk = timed(&mut steps.config, async { mcp_aws::sdk_config(&settings()).await }).await;
        let provider = sdk.credentials_provider().expect("a credentials provider");
        timed(&mut steps.credentials, async { provider.provide_credentials().await.unwrap() }).await;
        timed(&mut steps.tcp_connect, tokio::net::TcpStream::connect(&authority)).await.unwrap();
        let kms = aws_sdk_kms::Client::new(&sdk);
        let dynamodb = aws_sdk_dynamodb::Client::new(&sdk);
        let generate = || kms.generate_data_key().key_id(&key).key_spec(DataKeySpec::Aes256).send();
        timed(&mut steps.kms_first, generate()).await.unwrap();
        timed(&mut steps.kms_warm, generate()).await.unwrap();
        let get = || dynamodb.get_item().table_name(&table).key("pk", AttributeValue::S("nothing".into())).send();
        timed(&mut steps.dynamodb_first, get()).await.unwrap();
        timed(&mut steps.dynamodb_warm, get()).await.unwrap();
    }
    let kms_first = median(&mut steps.kms_first);
    let kms_warm = median(&mut steps.kms_warm);
    let dynamodb_first = median(&mut steps.dynamodb_first);
    let dynamodb_warm = median(&mut steps.dynamodb_warm);
    println!("first AWS request on a cold instance, emulator, median of {RUNS} (ms):");
    println!("  SDK configuration (aws_config::load_defaults)  {:.3}", median(&mut steps.config));
    println!("  credentials (environment provider)            {:.3}", median(&mut steps.credentials));
    println!("  TCP connect to the endpoint (alone)           {:.3}", median(&mut steps.tcp_connect));
    println!("  KMS GenerateDataKey: first {kms_first:.3}, warm {kms_warm:.3}, first/warm {:.2}", kms_first / kms_warm);
    println!("  DynamoDB GetItem: first {dynamodb_first:.3}, warm {dynamodb_warm:.3}, first/warm {:.2}", dynamodb_first / dynamodb_warm);
}
