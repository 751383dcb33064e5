//! Bounded load against a running starter: callers in groups of four share
//! an owner and a basket, and each loops over an append to the shared
//! basket, a view of it, and a three-round `plan_reminder` (two sealed
//! `requestState`s). A full basket is replaced by the first caller that
//! finds it full. At the end every basket is read back: its line count
//! must equal the appends that were answered as done (a lost update shows
//! as fewer lines).
//!
//! ```text
//! load <host:port> [seconds] [callers] [server pid]
//! ```
//!
//! Prints requests, HTTP statuses, JSON-RPC errors, p50/p99/max latency,
//! lost updates, and the server's RSS at start and end (with its pid).
//! `infra/load.sh` starts the server and the emulator and runs this.

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use e2e::{post_with, request, set_header};
use serde_json::{Value, json};

const GROUP: usize = 4;

#[derive(Default)]
struct Tally {
    latencies_us: Vec<u64>,
    /// The same latencies by tool, to see which calls make the tail.
    by_tool: BTreeMap<String, Vec<u64>>,
    statuses: BTreeMap<u16, u64>,
    rpc_errors: BTreeMap<i64, u64>,
    unexpected: u64,
}

/// One basket and the appends answered as done for it.
struct Basket {
    id: String,
    appended: AtomicU64,
}

struct Group {
    owner: String,
    baskets: Mutex<Vec<Arc<Basket>>>,
}

struct Caller {
    addr: SocketAddr,
    group: Arc<Group>,
    tally: Tally,
}

impl Caller {
    async fn call(&mut self, tool: &str, arguments: Value, extra: Value) -> Value {
        let mut body = request(1, "tools/call", json!({"name": tool, "arguments": arguments}), json!({"elicitation": {"form": {}}}));
        if let Value::Object(extra) = extra {
            for (k, v) in extra {
                body["params"][k] = v;
            }
        }
        let started = Instant::now();
        let owner = self.group.owner.clone();
        let reply = post_with(self.addr, &body, |h| set_header(h, "x-mcp-dev-principal", &owner)).await;
        let took = started.elapsed().as_micros() as u64;
        self.tally.latencies_us.push(took);
        self.tally.by_tool.entry(tool.to_owned()).or_default().push(took);
        *self.tally.statuses.entry(reply.status).or_default() += 1;
        let message = if reply.status == 200 { reply.message() } else { Value::Null };
        if let Some(code) = message["error"]["code"].as_i64() {
            *self.tally.rpc_errors.entry(code).or_default() += 1;
        }
        message
    }

    fn text(message: &Value) -> &str {
        message["result"]["content"][0]["text"].as_str().unwrap_or("")
    }

    async fn current_basket(&mut self) -> Arc<Basket> {
        if let Some(basket) = self.group.baskets.lock().unwrap().last().cloned() {
            return basket;
        }
        self.replace_basket(None).await
    }

    /// A new basket for the group, unless another caller already replaced `full`.
    async fn replace_basket(&mut self, full: Option<&str>) -> Arc<Basket> {
        let created = self.call("create_basket", json!({}), json!({})).await;
        let id = Self::text(&created).split_whitespace().nth(2).unwrap_or("").trim_end_matches('.').to_owned();
        let mut baskets = self.group.baskets.lock().unwrap();
        match baskets.last() {
            Some(last) if Some(last.id.as_str()) != full => last.clone(),
            _ => {
                let basket = Arc::new(Basket { id, appended: AtomicU64::new(0) });
                baskets.push(basket.clone());
                basket
            }
        }
    }

    async fn run(mut self, until: Instant) -> Tally {
        let mut n = 0u64;
        while Instant::now() < until {
            n += 1;
            let basket = self.current_basket().await;
            let added = self.call("add_item", json!({"basket": basket.id, "item": format!("item {n}"), "quantity": 1}), json!({})).await;
            match Self::text(&added) {
                text if text.starts_with("Added") => {
                    basket.appended.fetch_add(1, Ordering::SeqCst);
                }
                "The basket is full." => {
                    self.replace_basket(Some(&basket.id)).await;
                }
                _ => self.tally.unexpected += 1,
            }
            let viewed = self.call("view_basket", json!({"basket": basket.id}), json!({})).await;
            if viewed["result"]["structuredContent"]["lines"].as_array().is_none() {
                self.tally.unexpected += 1;
            }
            self.reminder(n).await;
        }
        self.tally
    }

    async fn reminder(&mut self, n: u64) {
        let round1 = self.call("plan_reminder", json!({}), json!({})).await;
        let what = json!({"requestState": round1["result"]["requestState"], "inputResponses": {"what": {"action": "accept", "content": {"what": format!("task {n}")}}}});
        let round2 = self.call("plan_reminder", json!({}), what).await;
        let when = json!({"requestState": round2["result"]["requestState"], "inputResponses": {"when": {"action": "accept", "content": {"when": "2026-12-01T09:00:00Z"}}}});
        let round3 = self.call("plan_reminder", json!({}), when).await;
        if round3["result"]["resultType"] != "complete" || !Self::text(&round3).contains(&format!("task {n}")) {
            self.tally.unexpected += 1;
        }
    }
}

fn rss_kib(pid: Option<u32>) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid?)).ok()?;
    status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.split_whitespace().next()?.parse().ok()
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize] as f64 / 1_000.0
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let addr: SocketAddr = args.first().expect("usage: load <host:port> [seconds] [callers] [server pid]").parse().expect("host:port");
    let seconds: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(60);
    let callers: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(64);
    let pid: Option<u32> = args.get(3).and_then(|s| s.parse().ok());
    let rss_start = rss_kib(pid);

    let groups: Vec<Arc<Group>> = (0..callers.div_ceil(GROUP))
        .map(|g| Arc::new(Group { owner: format!("load-{g}-{}", std::process::id()), baskets: Mutex::default() }))
        .collect();
    let started = Instant::now();
    let until = started + Duration::from_secs(seconds);
    let runs = (0..callers).map(|i| Caller { addr, group: groups[i / GROUP].clone(), tally: Tally::default() }.run(until));
    let tallies = futures::future::join_all(runs).await;
    let elapsed = started.elapsed().as_secs_f64();
    let rss_end = rss_kib(pid);

    let mut total = Tally::default();
    for tally in tallies {
        total.latencies_us.extend(tally.latencies_us);
        for (tool, latencies) in tally.by_tool {
            total.by_tool.entry(tool).or_default().extend(latencies);
        }
        for (status, count) in tally.statuses {
            *total.statuses.entry(status).or_default() += count;
        }
        for (code, count) in tally.rpc_errors {
            *total.rpc_errors.entry(code).or_default() += count;
        }
        total.unexpected += tally.unexpected;
    }
    total.latencies_us.sort_unstable();

    // Read every basket back: lines stored against appends answered as done.
    let mut checker = Caller { addr, group: groups[0].clone(), tally: Tally::default() };
    let (mut baskets, mut lost, mut appended) = (0, 0u64, 0u64);
    for group in &groups {
        checker.group = group.clone();
        let group_baskets: Vec<Arc<Basket>> = group.baskets.lock().unwrap().clone();
        for basket in group_baskets {
            let view = checker.call("view_basket", json!({"basket": basket.id}), json!({})).await;
            let stored = view["result"]["structuredContent"]["lines"].as_array().map_or(0, Vec::len) as u64;
            let done = basket.appended.load(Ordering::SeqCst);
            lost += done.saturating_sub(stored);
            appended += done;
            baskets += 1;
            if stored != done {
                eprintln!("basket {}: {done} appends answered, {stored} lines stored", basket.id);
            }
        }
    }

    let requests = total.latencies_us.len();
    let server_errors: u64 = total.statuses.iter().filter(|(s, _)| **s >= 500).map(|(_, c)| c).sum();
    println!("load: {callers} callers for {seconds} s: {requests} requests, {:.0} req/s", requests as f64 / elapsed);
    println!("load: HTTP statuses {:?}; JSON-RPC errors {:?}; unexpected answers {}", total.statuses, total.rpc_errors, total.unexpected);
    println!(
        "load: latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        percentile(&total.latencies_us, 0.50),
        percentile(&total.latencies_us, 0.99),
        percentile(&total.latencies_us, 1.0)
    );
    for (tool, latencies) in &mut total.by_tool {
        latencies.sort_unstable();
        println!(
            "load:   {tool}: {} calls, p50 {:.1} ms, p99 {:.1} ms",
            latencies.len(),
            percentile(latencies, 0.5),
            percentile(latencies, 0.99)
        );
    }
    println!("load: {appended} appends over {baskets} baskets, {lost} lost updates");
    match (rss_start, rss_end) {
        (Some(start), Some(end)) => {
            println!("load: server RSS {:.1} MiB at start, {:.1} MiB at end", start as f64 / 1024.0, end as f64 / 1024.0)
        }
        _ => println!("load: server RSS not read (no pid given)"),
    }
    let clean = server_errors == 0 && lost == 0 && total.unexpected == 0 && !total.rpc_errors.contains_key(&-32603);
    println!("load: {}", if clean { "clean" } else { "FAILED" });
    std::process::exit(if clean { 0 } else { 1 });
}
