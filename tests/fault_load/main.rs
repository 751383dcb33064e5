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
//! once; docs/tools.md, "Side effects in a task"). And none of the sealed
//! states or session ids handed out may show up in a log.
//!
//! Seeded and replayable: `MCP_FAULT_SEED` (the draws' sequence; the
//! machine's scheduling decides which request meets which draw) and
//! `MCP_FAULT_LOAD` (a multiple of the load) are read here;
//! `infra/fault-run.sh` runs it longer and prints the tally.

mod client;
mod lists;
mod places;
mod rounds;
mod sessions;
mod tasks;
mod verdict;

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use e2e::{
    emulator::{fresh_key, fresh_queues, fresh_table, sdk, settings, start_fixtures_with, start_task_server_with, unique},
    fault_proxy::{Chaos, FaultProxy},
    tasks::WorkerProcess,
};
use futures::future::join_all;
use mcp_aws::CallLimits;
use mcp_stateless::{clock::SystemClock, tasks::TaskPolicy};
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

/// Panics on each test's runtime threads (the servers' tasks), by the
/// runtime's thread name: the tests run side by side in this process, and
/// one's panic is not another's. The tests' own assertions run on their
/// test threads.
static SERVER_PANICS: Mutex<BTreeMap<String, u32>> = Mutex::new(BTreeMap::new());

fn count_server_panics() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Some(name) = std::thread::current().name().filter(|name| name.starts_with(RUNTIME_PREFIX)) {
                *SERVER_PANICS.lock().unwrap().entry(name.to_owned()).or_default() += 1;
            }
            default(info);
        }));
    });
}

const RUNTIME_PREFIX: &str = "fault-load-";

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
        // A task no worker took up is sent again after 20 s (not 5
        // minutes), well within the bound that calls a task lost.
        let task_deps = || {
            let mut deps = deps();
            deps.tasks = deps.tasks.with_policy({
                let mut policy = TaskPolicy::default();
                policy.start_deadline = Duration::from_secs(20);
                policy
            });
            deps
        };
        let fixtures = [start_fixtures_with(deps()).await, start_fixtures_with(deps()).await];
        let task_servers = [start_task_server_with(task_deps()).await, start_task_server_with(task_deps()).await];
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
                // As verbose as a deployment can be, so the secret check
                // reads everything the worker could ever write.
                ("MCP_LOG_LEVEL", "debug"),
            ],
            std::fs::File::create(&worker_log).unwrap(),
        );
        Self { proxy, direct, table, fixtures, task_servers, worker, worker_log }
    }
}

async fn run(per_mille: u32) -> Tally {
    count_server_panics();
    capture_logs();
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
    places::check(&rig.direct, &rig.table, &tally).await;
    if rig.worker.exited() {
        tally.violation("panic", "the worker process ended".into());
    }
    let worker_log = std::fs::read_to_string(&rig.worker_log).unwrap_or_default();
    for line in worker_log.lines().filter(|l| l.contains("panicked")) {
        tally.violation("panic", format!("worker: {line}"));
    }
    secrets_unlogged(&tally, &worker_log);
    let panics = SERVER_PANICS.lock().unwrap().get(&runtime_name(per_mille)).copied().unwrap_or(0);
    if panics > 0 {
        tally.violation("panic", format!("{panics} on the servers' threads (this process)"));
    }
    tally
}

/// What the servers in this process log, as a deployment at its most
/// verbose writes it (the project's filter at `LogLevel=debug`): read back
/// for the secrets the load was handed. Shared by the rates that run side by side;
/// each checks its own secrets once its servers are done.
static LOG: Mutex<Vec<u8>> = Mutex::new(Vec::new());

struct LogWriter;

impl std::io::Write for LogWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        LOG.lock().map_err(|_| std::io::Error::other("poisoned"))?.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn capture_logs() {
    static CAPTURE: std::sync::Once = std::sync::Once::new();
    CAPTURE.call_once(|| {
        use tracing_subscriber::layer::SubscriberExt;
        let subscriber = tracing_subscriber::fmt()
            .with_writer(|| LogWriter)
            .with_ansi(false)
            .with_max_level(tracing::Level::DEBUG)
            .finish()
            .with(mcp_stateless::logging::filter("debug"));
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
    });
}

/// None of the sealed states and session ids handed out shows up in the
/// servers' log or the worker's.
fn secrets_unlogged(tally: &Tally, worker_log: &str) {
    let log = String::from_utf8_lossy(&LOG.lock().unwrap()).into_owned();
    tally.add("log.bytes", (log.len() + worker_log.len()) as u64);
    for secret in tally.secrets() {
        tally.count("log.secrets_checked");
        let logged = log.lines().chain(worker_log.lines()).find(|line| line.contains(&secret));
        if let Some(line) = logged {
            // Where it was logged, not what: the line up to the secret.
            let before: String = line[..line.find(&secret).unwrap_or(0)].chars().take(160).collect();
            tally.violation("secret_logged", format!("a secret handed out is in a log line: {before}…"));
        }
    }
}

fn runtime_name(per_mille: u32) -> String {
    format!("{RUNTIME_PREFIX}{per_mille}")
}

/// One rate's run on a runtime of its own, named for it.
fn check(per_mille: u32) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name(runtime_name(per_mille))
        .enable_all()
        .build()
        .expect("a runtime");
    let started = std::time::Instant::now();
    let tally = runtime.block_on(run(per_mille));
    tally.add("seconds", started.elapsed().as_secs());
    let report = tally.report(&format!("fault load at {}% (seed {}, load x{})", per_mille / 10, seed(), scale()));
    eprintln!("{report}");
    assert!(tally.violations().is_empty(), "{report}");
    assert!(tally.get("tasks.completed") + tally.get("tasks.cancelled") > 0, "the load ran: {report}");
}

#[test]
fn nothing_is_lost_doubled_or_misreported_without_faults() {
    check(0);
}

#[test]
fn nothing_is_lost_doubled_or_misreported_at_10_percent_faults() {
    check(100);
}

#[test]
fn nothing_is_lost_doubled_or_misreported_at_30_percent_faults() {
    check(300);
}
