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
}

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_default()
}

fn item_key(kind: &str) -> AttributeValue {
    let random = aws_lc_rs::rand::generate::<[u8; 16]>(&aws_lc_rs::rand::SystemRandom::new()).expect("random").expose();
    AttributeValue::S(format!("reference#{kind}#{}", random.iter().map(|b| format!("{b:02x}")).collect::<String>()))
}

impl Clients {
    async fn count(&self) -> Result<(), Error> {
        self.dynamodb
            .update_item()
            .table_name(&self.table)
            .key("pk", AttributeValue::S("reference#count".into()))
            .update_expression("ADD #c :one")
            .expression_attribute_names("#c", "count")
            .expression_attribute_values(":one", AttributeValue::N("1".into()))
            .send()
            .await?;
        Ok(())
    }

    async fn put(&self, kind: &str) -> Result<(), Error> {
        self.dynamodb
            .put_item()
            .table_name(&self.table)
            .item("pk", item_key(kind))
            .item("data", AttributeValue::S("{}".into()))
            .condition_expression("attribute_not_exists(pk)")
            .send()
            .await?;
        Ok(())
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
        Ok(state.iter().map(|b| format!("{b:02x}")).collect())
    }

    async fn answer(&self, request: &Value) -> Result<Value, Error> {
        let tool = request.pointer("/params/name").and_then(Value::as_str).unwrap_or_default();
        let result = match (request["method"].as_str().unwrap_or_default(), tool) {
            ("server/discover", _) => json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}),
            ("tools/call", "plan_reminder") => json!({"resultType": "input_required", "requestState": self.seal().await?}),
            ("tools/call", "create_basket") => {
                self.count().await?;
                self.put("handle").await?;
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
                self.put("input").await?;
                self.put("task").await?;
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
