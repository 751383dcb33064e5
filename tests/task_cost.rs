//! What a task costs in DynamoDB: a 60-second task whose status changes
//! every second, run by a worker in a process of its own, every DynamoDB
//! call of both functions metered by a proxy in front of the emulator.
//!
//! Units are counted as DynamoDB bills on-demand tables: a write is one
//! unit per KB of the item written, a strongly consistent read one unit
//! per 4 KB of the item read (never less than one each). The emulator's
//! own `ConsumedCapacity` is a flat 1.0 per call whatever the size, so the
//! sizes are read off the requests and answers instead. `cargo test
//! --test tasks_sqs a_minute_long_task -- --nocapture` prints the breakdown
//! (the test runs in the `tasks_sqs` binary, beside the other queue tests).

use std::{sync::Arc, time::Duration};

use e2e::{
    emulator::{fresh_queues, fresh_table, sdk, start_task_server_with, unique},
    fault_proxy::{Call, FaultProxy, Service},
    tasks::{WorkerProcess, get_task, is_terminal, rpc, start_task},
};
use mcp_aws::AwsSettings;
use mcp_stateless::clock::SystemClock;
use serde_json::{Value, json};

const TASK_SECONDS: u64 = 60;

/// DynamoDB's item size: attribute names plus values (strings and binary
/// by their bytes, numbers about one byte per two digits, documents with
/// a few bytes of overhead).
fn item_size(item: &serde_json::Map<String, Value>) -> usize {
    item.iter().map(|(name, value)| name.len() + value_size(value)).sum()
}

fn value_size(value: &Value) -> usize {
    let Some((kind, inner)) = value.as_object().and_then(|o| o.iter().next()) else { return 0 };
    match (kind.as_str(), inner) {
        ("S" | "B", Value::String(s)) => s.len(),
        ("N", Value::String(n)) => n.len().div_ceil(2) + 1,
        ("M", Value::Object(map)) => 3 + map.iter().map(|(k, v)| k.len() + value_size(v) + 1).sum::<usize>(),
        ("L", Value::Array(items)) => 3 + items.iter().map(|v| value_size(v) + 1).sum::<usize>(),
        _ => 1,
    }
}

#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Units {
    calls: u32,
    /// Bytes of the items written and read.
    written: usize,
    read: usize,
    write_units: u64,
    read_units: u64,
}

impl Units {
    fn of(calls: &[Call]) -> Self {
        let mut units = Self::default();
        for call in calls {
            units.calls += 1;
            let request: Value = serde_json::from_slice(&call.request).unwrap_or_default();
            let response: Value = serde_json::from_slice(&call.response).unwrap_or_default();
            match call.operation.as_str() {
                "GetItem" => {
                    let size = response["Item"].as_object().map_or(0, item_size);
                    units.read += size;
                    units.read_units += (size as u64).div_ceil(4 * 1024).max(1);
                }
                "PutItem" => {
                    let size = request["Item"].as_object().map_or(0, item_size);
                    units.written += size;
                    units.write_units += (size as u64).div_ceil(1024).max(1);
                }
                // Counters and deletes of small items.
                _ => units.write_units += 1,
            }
        }
        units
    }

    fn per_second(&self) -> String {
        let seconds = TASK_SECONDS as f64;
        format!(
            "{} calls, {:.2} write units/s ({} B written), {:.2} read units/s ({} B read)",
            self.calls,
            self.write_units as f64 / seconds,
            self.written,
            self.read_units as f64 / seconds,
            self.read
        )
    }
}

#[tokio::test]
async fn costs_a_few_units_a_second_and_unnamed_arguments_cost_nothing() {
    let direct = sdk().await;
    // One meter per function: the request side and the worker.
    let (server_meter, worker_meter) = (FaultProxy::in_front_of_emulator().await, FaultProxy::in_front_of_emulator().await);
    let queues = fresh_queues(&direct, 30, 3).await;
    let settings = {
        let mut value = AwsSettings::default();
        value.table_name = Some(fresh_table(&direct).await);
        value.audience = Some(unique("cost"));
        value.task_queue_url = Some(queues.url.clone());
        value
    };
    let through_meter = e2e::emulator::loader(&e2e::emulator::limits()).endpoint_url(&server_meter.url).load().await;
    let addr = start_task_server_with(mcp_aws::dependencies(&settings, Some(&through_meter), Arc::new(SystemClock))).await;
    let _worker = WorkerProcess::start(
        env!("CARGO_BIN_EXE_fixture-worker"),
        &[
            ("AWS_ENDPOINT_URL", &worker_meter.url),
            ("MCP_TABLE_NAME", settings.table_name.as_deref().unwrap()),
            ("MCP_TASK_QUEUE_URL", &queues.url),
        ],
    );

    let id = start_task(addr, "alice", "slow_compute", json!({"seconds": TASK_SECONDS, "label": "cost"})).await;
    // A client polling at the suggested interval.
    let started = std::time::Instant::now();
    let done = loop {
        let got = get_task(addr, "alice", &id).await["result"].clone();
        if is_terminal(&got) {
            break got;
        }
        assert!(started.elapsed() < Duration::from_secs(TASK_SECONDS * 4), "{got}");
        tokio::time::sleep(Duration::from_millis(got["pollIntervalMs"].as_u64().unwrap_or(1_000))).await;
    };
    assert_eq!(done["status"], "completed", "{done}");
    let worker = Units::of(&worker_meter.calls(Service::DynamoDb));
    let request_side = Units::of(&server_meter.calls(Service::DynamoDb));

    // The same task with 300 kB of arguments its schema does not name:
    // refused by the published schema before anything is stored.
    let before = server_meter.calls(Service::DynamoDb).len();
    let unnamed = json!({"seconds": 1, "label": "big", "unnamed": "x".repeat(300_000)});
    let refused = rpc(addr, "alice", "tools/call", json!({"name": "slow_compute", "arguments": unnamed})).await;
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let oversized = Units::of(&server_meter.calls(Service::DynamoDb)[before..]);

    eprintln!("task_cost: a {TASK_SECONDS} s task, its status changing every second");
    eprintln!("task_cost: worker (claim, heartbeats, outcome): {}", worker.per_second());
    eprintln!("task_cost: request side (create, a poll a second): {}", request_side.per_second());
    eprintln!("task_cost: with 300 kB of unnamed arguments: {oversized:?}");
    assert_eq!(oversized.calls, 0, "refused: nothing stored, nothing read");
    // A heartbeat a second: one small read, and one small write when the
    // status changed. Nothing the worker writes is over a kilobyte.
    assert!(worker.write_units <= worker.calls.into(), "no write over 1 KB: {worker:?}");
    assert!(worker.read_units <= worker.calls.into(), "no read over 4 KB: {worker:?}");
    assert!(worker.calls <= 3 * TASK_SECONDS as u32, "about two calls per heartbeat at most: {worker:?}");
}
