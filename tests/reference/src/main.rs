//! The reference for the Lambda-shaped cold-start bench
//! (`infra/lambda_cold_start_bench.py`): the least a Rust function on
//! `lambda_http` and the same AWS SDK crates can do to answer the bench's
//! four kinds of request with the AWS calls the starter makes for them,
//! and nothing else: no MCP, no checks, no logging.
//!
//! - `server/discover`: no AWS call;
//! - `plan_reminder` (a sealed multi-round call): KMS `GenerateDataKey`
//!   once (the key is kept, as the starter keeps its window's), then
//!   AES-256-GCM locally;
//! - `create_basket` (a handle): DynamoDB `UpdateItem` (the owner's
//!   count) and a conditional `PutItem`;
//! - `build_report` (a task): the count, two conditional `PutItem`s (input
//!   and record) and SQS `SendMessage`.
//!
//! The writes of `create_basket` and `build_report` have the shapes of the
//! starter's (`mcp-aws`'s `dynamo` module: `quota.rs` `take`, `handles.rs`
//! `create`, `tasks.rs` `create`): the count capped and applied once per
//! call id on an item new to this instance (a cold start's caller is new),
//! the items with the same attributes and conditions, so the emulator's work
//! is the same for both and the bench compares the functions, not their
//! items. Keep them in step when those change.
//!
//! It reads the starter's variables (`MCP_STATE_KEY_ID`, `MCP_TABLE_NAME`,
//! `MCP_TASK_QUEUE_URL`, `MCP_TRANSPORT`) and answers whole or streamed as
//! `MCP_TRANSPORT` says.

use std::sync::Arc;

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, Nonce, UnboundKey};
use aws_sdk_dynamodb::types::AttributeValue;
use lambda_http::{Body, Error, Request, Response, service_fn};
use serde_json::{Value, json};

struct Clients {
    kms: aws_sdk_kms::Client,
    dynamodb: aws_sdk_dynamodb::Client,
    sqs: aws_sdk_sqs::Client,
    key_id: String,
    table: String,
    queue: String,
    data_key: tokio::sync::OnceCell<LessSafeKey>,
    /// This instance's count item, as the starter's per-owner, per-window
    /// one; named at the first count, as no random number is drawn in Init
    /// (with aws-lc's defaults, the first draw seeds from CPU jitter).
    quota_key: std::sync::OnceLock<String>,
}

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_default()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn random_hex<const N: usize>() -> String {
    hex(&aws_lc_rs::rand::generate::<[u8; N]>(&aws_lc_rs::rand::SystemRandom::new()).expect("random").expose())
}

fn n(value: u64) -> AttributeValue {
    AttributeValue::N(value.to_string())
}

fn s(value: &str) -> AttributeValue {
    AttributeValue::S(value.to_owned())
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default()
}

const OWNER: &str = "reference-owner";

impl Clients {
    /// The owner's count: capped, and applied once under this call's id.
    async fn count(&self) -> Result<(), Error> {
        self.dynamodb
            .update_item()
            .table_name(&self.table)
            .key("pk", s(self.quota_key.get_or_init(|| format!("quota#reference#{}", random_hex::<16>()))))
            .update_expression("ADD #count :one SET #expires = :expires, #last_op = :op")
            .condition_expression(
                "(attribute_not_exists(#count) OR #count < :limit) AND (attribute_not_exists(#last_op) OR #last_op <> :op)",
            )
            .expression_attribute_names("#count", "count")
            .expression_attribute_names("#last_op", "last_op")
            .expression_attribute_names("#expires", "expires_at")
            .expression_attribute_values(":op", s(&random_hex::<12>()))
            .expression_attribute_values(":one", n(1))
            .expression_attribute_values(":limit", n(u64::from(u32::MAX)))
            .expression_attribute_values(":expires", n(now() + 3_600))
            .return_values_on_condition_check_failure(aws_sdk_dynamodb::types::ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await?;
        Ok(())
    }

    /// A new item under a fresh key, written only if none is there; with
    /// `op`, also if this call's id wrote it (a task's items).
    async fn put(&self, kind: &str, attributes: Vec<(&str, AttributeValue)>, op: Option<String>) -> Result<(), Error> {
        let mut put = self
            .dynamodb
            .put_item()
            .table_name(&self.table)
            .item("pk", s(&format!("handle#{kind}#{}", random_hex::<16>())))
            .item("owner", s(OWNER))
            .item("kind", s(kind));
        for (name, value) in attributes {
            put = put.item(name, value);
        }
        put = match op {
            Some(op) => put
                .item("last_op", s(&op))
                .condition_expression("attribute_not_exists(pk) OR #last_op = :op")
                .expression_attribute_names("#last_op", "last_op")
                .expression_attribute_values(":op", s(&op)),
            None => put.condition_expression("attribute_not_exists(pk)"),
        };
        put.send().await?;
        Ok(())
    }

    /// A handle's nine attributes: an empty basket, idle for a day, at
    /// most a week (the starter's basket kind).
    async fn put_handle(&self) -> Result<(), Error> {
        let (now, lines) = (now(), AttributeValue::M([("lines".to_owned(), AttributeValue::L(vec![]))].into()));
        let timestamps = [("created_at", now), ("last_used_at", now), ("expires_at", now + 86_400), ("deadline", now + 7 * 86_400)];
        let mut attributes = vec![("data", lines), ("version", n(1))];
        attributes.extend(timestamps.map(|(name, at)| (name, n(at))));
        self.put("basket", attributes, None).await
    }

    /// A task's input, then its record, each a JSON string.
    async fn put_task(&self) -> Result<(), Error> {
        let expires = n(now() + 3_600);
        let input = r#"{"tool":"build_report","arguments":{"topic":"reference"},"clientCapabilities":{}}"#;
        self.put("input", vec![("expires_at", expires.clone()), ("input", s(input))], Some(random_hex::<12>())).await?;
        let record = r#"{"status":"working","version":1,"attempts":0,"unfinishedRuns":0}"#;
        let attributes = vec![("status", s("working")), ("version", n(1)), ("expires_at", expires), ("task", s(record))];
        self.put("task", attributes, Some(random_hex::<12>())).await
    }

    async fn seal(&self) -> Result<String, Error> {
        let key = self
            .data_key
            .get_or_try_init(|| async {
                let output = self
                    .kms
                    .generate_data_key()
                    .key_id(&self.key_id)
                    .key_spec(aws_sdk_kms::types::DataKeySpec::Aes256)
                    .encryption_context("purpose", "mcp-request-state")
                    .send()
                    .await?;
                let plaintext = output.plaintext.ok_or("no plaintext")?;
                Ok::<_, Error>(LessSafeKey::new(UnboundKey::new(&AES_256_GCM, plaintext.as_ref()).map_err(|_| "bad key")?))
            })
            .await?;
        let mut state = b"{\"round\":1}".to_vec();
        let nonce = aws_lc_rs::rand::generate::<[u8; 12]>(&aws_lc_rs::rand::SystemRandom::new()).map_err(|_| "random")?.expose();
        key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(b"reference"), &mut state).map_err(|_| "seal")?;
        Ok(hex(&state))
    }

    async fn answer(&self, request: &Value) -> Result<Value, Error> {
        let tool = request.pointer("/params/name").and_then(Value::as_str).unwrap_or_default();
        let result = match (request["method"].as_str().unwrap_or_default(), tool) {
            ("server/discover", _) => json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}),
            ("tools/call", "plan_reminder") => json!({"resultType": "input_required", "requestState": self.seal().await?}),
            ("tools/call", "create_basket") => {
                self.count().await?;
                self.put_handle().await?;
                json!({"content": [{"type": "text", "text": "Created basket."}]})
            }
            // A listen open: the per-caller stream count and a read of the
            // change feed, then the acknowledgement (the stream's first event).
            ("subscriptions/listen", _) => {
                self.count().await?;
                self.dynamodb
                    .get_item()
                    .table_name(&self.table)
                    .key("pk", AttributeValue::S("reference#feed".into()))
                    .consistent_read(true)
                    .send()
                    .await?;
                return Ok(json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {}}));
            }
            ("tools/call", "build_report") => {
                self.count().await?;
                self.put_task().await?;
                self.sqs.send_message().queue_url(&self.queue).message_body("{}").message_group_id("reference").send().await?;
                json!({"resultType": "task", "task": {"taskId": "tsk_reference", "status": "working"}})
            }
            (method, tool) => return Err(format!("the reference does not answer {method} {tool}").into()),
        };
        Ok(json!({"jsonrpc": "2.0", "id": request["id"].clone(), "result": result}))
    }
}

async fn respond(clients: &Clients, event: Request) -> Result<Response<Body>, Error> {
    let request: Value = serde_json::from_slice(event.body().as_ref())?;
    let answer = clients.answer(&request).await?;
    Ok(Response::builder().status(200).header("content-type", "application/json").body(Body::from(answer.to_string()))?)
}

fn main() -> Result<(), Error> {
    tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
        let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest()).load().await;
        let clients = Arc::new(Clients {
            kms: aws_sdk_kms::Client::new(&sdk),
            dynamodb: aws_sdk_dynamodb::Client::new(&sdk),
            sqs: aws_sdk_sqs::Client::new(&sdk),
            key_id: var("MCP_STATE_KEY_ID"),
            table: var("MCP_TABLE_NAME"),
            queue: var("MCP_TASK_QUEUE_URL"),
            data_key: tokio::sync::OnceCell::new(),
            quota_key: std::sync::OnceLock::new(),
        });
        if var("MCP_TRANSPORT") == "streaming" {
            lambda_http::run_with_streaming_response(service_fn(move |event: Request| {
                let clients = clients.clone();
                async move { respond(&clients, event).await }
            }))
            .await
        } else {
            lambda_http::run(service_fn(move |event: Request| {
                let clients = clients.clone();
                async move { respond(&clients, event).await }
            }))
            .await
        }
    })
}
