//! Issue 44's fault test: a bounded load of handles, multi-round calls,
//! tasks and 2025-era sessions on two instances of each function and a
//! worker, while a proxy in front of the emulator injects a fault into a
//! share of every AWS call (throttling, 500s, resets before and after the
//! call landed, answers held past the SDK's attempt timeout, first attempts
//! that land after their retry). Then every record is read back.
//!
//! It fails on anything acknowledged and lost, applied twice, deleted and
//! back, or reported wrongly; on a 5xx that is not the documented 503 with
//! `Retry-After`; on a panic; and on quota places leaked or counted twice.
//! Tasks run more than once are counted, not failed (delivery is at least
//! once; docs/tools.md, "Side effects in a task").
//!
//! Seeded and replayable: `MCP_FAULT_SEED` (the draws' sequence; the
//! machine's scheduling decides which request meets which draw) and
//! `MCP_FAULT_LOAD` (a multiple of the load) are read here;
//! `infra/fault-run.sh` runs it longer and prints the tally.

mod client;
mod lists;
mod rounds;
mod sessions;
mod tasks;
mod verdict;

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

use aws_sdk_dynamodb::types::AttributeValue;
use e2e::{
    emulator::{fresh_key, fresh_queues, fresh_table, scan, sdk, settings, start_fixtures_with, start_task_server_with, unique},
    fault_proxy::{Chaos, FaultProxy},
    tasks::WorkerProcess,
};
use futures::future::join_all;
use mcp_aws::CallLimits;
use mcp_stateless::clock::SystemClock;
use verdict::Tally;

/// Lambda's limits with a shorter attempt: the proxy holds answers up to
/// 2.5 s, so some are retried after they landed and some are waited for.
const LIMITS: CallLimits = CallLimits { attempt: Duration::from_millis(1_500), ..CallLimits::LAMBDA };

/// The load at `MCP_FAULT_LOAD` 1, about half a minute on two cores.
struct Load {
    owners: usize,
    lists: usize,
    appends: usize,
    rounds: usize,
    tasks: usize,
    sessions: usize,
}

fn scale() -> usize {
    std::env::var("MCP_FAULT_LOAD").ok().and_then(|v| v.parse().ok()).unwrap_or(1).max(1)
}

fn seed() -> u64 {
    std::env::var("MCP_FAULT_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(44)
}

impl Load {
    fn scaled() -> Self {
        let n = scale();
        Self { owners: 4 * n, lists: 2, appends: 4, rounds: 6 * n, tasks: 8 * n, sessions: 6 * n }
    }
}

/// Panics on the runtime's worker threads (the servers' tasks); the tests'
/// own assertions run on their test threads.
static SERVER_PANICS: AtomicU32 = AtomicU32::new(0);

fn count_server_panics() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() == Some("tokio-runtime-worker") {
                SERVER_PANICS.fetch_add(1, Ordering::SeqCst);
            }
            default(info);
        }));
    });
}

struct Rig {
    proxy: FaultProxy,
    direct: aws_config::SdkConfig,
    table: String,
    fixtures: [SocketAddr; 2],
    task_servers: [SocketAddr; 2],
    worker: WorkerProcess,
    worker_log: std::path::PathBuf,
}

impl Rig {
    async fn new() -> Self {
        let direct = sdk().await;
        let proxy = FaultProxy::in_front_of_emulator().await;
        let table = fresh_table(&direct).await;
        let queues = fresh_queues(&direct, 5, 6).await;
        let mut settings = settings(&fresh_key(&direct).await, &table, &unique("fault-load"));
        settings.task_queue_url = Some(queues.url.clone());
        let faulty = e2e::emulator::loader(&LIMITS).endpoint_url(&proxy.url).load().await;
        // Each instance its own SDK clients and key cache, as two Lambdas.
        let deps = || mcp_aws::dependencies(&settings, Some(&faulty), Arc::new(SystemClock));
        let fixtures = [start_fixtures_with(deps()).await, start_fixtures_with(deps()).await];
        let task_servers = [start_task_server_with(deps()).await, start_task_server_with(deps()).await];
        let worker_log = std::env::temp_dir().join(format!("{}.log", unique("fault-load-worker")));
        let worker = WorkerProcess::start_logging(
            env!("CARGO_BIN_EXE_fixture-worker"),
            &[
                ("AWS_ENDPOINT_URL", &proxy.url),
                ("MCP_AWS_ATTEMPT_TIMEOUT_MS", "1500"),
                ("MCP_AWS_OPERATION_TIMEOUT_MS", "5000"),
                ("MCP_TABLE_NAME", &table),
                ("MCP_TASK_QUEUE_URL", &queues.url),
                ("MCP_TASK_LEASE_SECONDS", "20"),
            ],
            std::fs::File::create(&worker_log).unwrap(),
        );
        Self { proxy, direct, table, fixtures, task_servers, worker, worker_log }
    }
}

async fn run(per_mille: u32) -> Tally {
    count_server_panics();
    let load = Load::scaled();
    let tally = Tally::default();
    let mut rig = Rig::new().await;
    rig.proxy.randomly(Chaos { seed: seed() ^ u64::from(per_mille), per_mille });

    let handles =
        join_all((0..load.owners).map(|o| lists::owner_load(rig.fixtures, format!("owner{o}"), load.lists, load.appends, &tally)));
    let rounds = join_all((0..load.rounds).map(|r| rounds::one_call(rig.fixtures, format!("rounds{r}"), &tally)));
    let tasks = join_all(
        (0..load.tasks).map(|t| tasks::one_task(rig.task_servers, format!("tasker{}", t % 3), format!("task{t}"), t % 4 == 3, &tally)),
    );
    let sessions = join_all((0..load.sessions).map(|s| sessions::one_session(rig.task_servers, format!("legacy{s}"), 3, &tally)));
    let (lists, ..) = tokio::join!(handles, rounds, tasks, sessions);

    rig.proxy.settle().await;
    for (name, n) in rig.proxy.drawn() {
        tally.add(format!("faults.{name}"), u64::from(n));
    }
    let lists: Vec<lists::List> = lists.into_iter().flatten().collect();
    lists::read_back(rig.fixtures[0], &lists, &tally).await;
    places(&rig, &tally).await;
    if rig.worker.exited() {
        tally.violation("panic", "the worker process ended".into());
    }
    let worker_log = std::fs::read_to_string(&rig.worker_log).unwrap_or_default();
    for line in worker_log.lines().filter(|l| l.contains("panicked")) {
        tally.violation("panic", format!("worker: {line}"));
    }
    let panics = SERVER_PANICS.load(Ordering::SeqCst);
    if panics > 0 {
        tally.violation("panic", format!("{panics} on the servers' threads (this process)"));
    }
    tally
}

fn attribute<'a>(item: &'a HashMap<String, AttributeValue>, name: &str) -> Option<&'a str> {
    match item.get(name)? {
        AttributeValue::S(s) | AttributeValue::N(s) => Some(s),
        _ => None,
    }
}

/// Every quota counter against what it counts, once every acknowledged
/// task has ended: the live lists for `lst`, the tasks not ended for `tsk`
/// (a create whose every answer failed may have left one, counted).
async fn places(rig: &Rig, tally: &Tally) {
    let is_task = |item: &HashMap<String, AttributeValue>| {
        attribute(item, "pk").is_some_and(|pk| pk.starts_with("handle#tsk#") && !pk.ends_with("#input"))
    };
    let ended = |item: &HashMap<String, AttributeValue>| matches!(attribute(item, "status"), Some("completed" | "failed" | "cancelled"));
    let items = scan(&rig.direct, &rig.table).await;
    let open_tasks = items.iter().filter(|i| is_task(i) && !ended(i)).count() as i64;
    let live_lists = items
        .iter()
        .filter(|i| attribute(i, "pk").is_some_and(|pk| pk.starts_with("handle#lst#")) && !i.contains_key("deleted_op"))
        .count() as i64;
    tally.add("tasks.stored", items.iter().filter(|i| is_task(i)).count() as u64);
    tally.add("tasks.stored_not_ended", open_tasks as u64);
    tally.add("handles.live_at_end", live_lists as u64);
    for (kind, counted_items) in [("lst", live_lists), ("tsk", open_tasks)] {
        let counted: i64 = items
            .iter()
            .filter(|i| attribute(i, "pk").is_some_and(|pk| pk.starts_with(&format!("quota#{kind}#"))))
            .filter_map(|i| attribute(i, "count")?.parse::<i64>().ok())
            .sum();
        match counted - counted_items {
            0 => {}
            leaked if leaked > 0 => tally.violation("leaked_places", format!("{kind}: counters hold {counted}, {counted_items} items")),
            _ => tally.violation("applied_twice", format!("{kind}: counters hold {counted}, {counted_items} items (given back twice)")),
        }
    }
}

async fn check(per_mille: u32) {
    let started = std::time::Instant::now();
    let tally = run(per_mille).await;
    tally.add("seconds", started.elapsed().as_secs());
    let report = tally.report(&format!("fault load at {}% (seed {}, load x{})", per_mille / 10, seed(), scale()));
    eprintln!("{report}");
    assert!(tally.violations().is_empty(), "{report}");
    assert!(tally.get("tasks.completed") + tally.get("tasks.cancelled") > 0, "the load ran: {report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_lost_doubled_or_misreported_without_faults() {
    check(0).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_lost_doubled_or_misreported_at_10_percent_faults() {
    check(100).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_is_lost_doubled_or_misreported_at_30_percent_faults() {
    check(300).await;
}
