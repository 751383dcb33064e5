//! A fault-injecting HTTP proxy between the AWS SDK and the emulator.
//!
//! The SDK is pointed at the proxy; the proxy forwards every request to the
//! emulator unless a fault is set for the request's service (read from the
//! `X-Amz-Target` header: `TrentService.*` is KMS, `DynamoDB_20120810.*`
//! DynamoDB, `AmazonSQS.*` SQS). Faults are what a real dependency does on
//! a bad day: an error status with the service's error body (throttling,
//! 500), an answer slower than the caller waits, or a connection dropped
//! with no answer. Clearing the fault restores the path, so tests can
//! check recovery.
//!
//! [`FaultProxy::randomly`] draws a fault for every request from a seeded
//! generator instead: the fault test under load (`tests/fault_load`).

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{body::Incoming, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Service {
    Kms,
    DynamoDb,
    Sqs,
}

impl Service {
    fn of(target: &str) -> Option<Self> {
        let prefix = target.split('.').next()?;
        match prefix {
            "TrentService" => Some(Self::Kms),
            "DynamoDB_20120810" => Some(Self::DynamoDb),
            "AmazonSQS" => Some(Self::Sqs),
            _ => None,
        }
    }

    /// The JSON error a throttled call of this service gets.
    fn throttling(self) -> &'static str {
        match self {
            Self::Kms => "ThrottlingException",
            Self::DynamoDb => "com.amazonaws.dynamodb.v20120810#ThrottlingException",
            Self::Sqs => "com.amazonaws.sqs#RequestThrottled",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// 400 with the service's throttling error (retried by the SDK).
    Throttling,
    /// 500 InternalFailure (retried by the SDK).
    ServerError,
    /// Forwards, but only after this long.
    Slow(Duration),
    /// Reads the request and closes the connection without an answer.
    Reset,
    /// Reads the request and never answers (a black-holed endpoint).
    Stall,
    /// Forwards the request (it takes effect) and drops the answer, once:
    /// the caller cannot tell it landed, and its retry must not repeat it.
    LoseAnswer,
    /// Drops the connection and holds the request, once, until
    /// [`FaultProxy::land_held`] forwards it: a first attempt that reaches
    /// the service late, after its retry and whatever came next.
    LandLate,
    /// Forwards at once (it takes effect) and answers only after this
    /// long: past the SDK's attempt timeout, the caller retries what landed.
    HoldAnswer(Duration),
    /// Drops the connection and forwards the request after this long, on
    /// its own: a first attempt that lands after its retry.
    LandAfter(Duration),
}

/// How [`FaultProxy::randomly`] draws: `per_mille` of the requests get a
/// fault, chosen evenly among [`RANDOM_FAULTS`], from a generator seeded
/// with `seed`. Requests arrive in the order concurrency gives them, so a
/// seed replays the same sequence of draws, not always the same requests.
#[derive(Debug, Clone, Copy)]
pub struct Chaos {
    pub seed: u64,
    pub per_mille: u32,
}

/// What [`Chaos`] draws from: every fault a request can meet that the SDK
/// retries (a stalled endpoint is the operation timeout's, tested on its own).
pub const RANDOM_FAULTS: [&str; 6] = ["throttling", "server_error", "reset", "lose_answer", "hold_answer", "land_late"];

/// SplitMix64: a seeded sequence is all the proxy needs, not a crate.
fn next_random(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

struct Drawing {
    chaos: Chaos,
    state: u64,
}

impl Drawing {
    /// The fault for the next request, if any, and its name.
    fn draw(&mut self) -> Option<(Fault, &'static str)> {
        if next_random(&mut self.state) % 1000 >= u64::from(self.chaos.per_mille) {
            return None;
        }
        let pick = (next_random(&mut self.state) % RANDOM_FAULTS.len() as u64) as usize;
        // Up to 2.5 s: within and beyond the attempt timeouts tests use.
        let delay = Duration::from_millis(100 + next_random(&mut self.state) % 2_400);
        let fault = match pick {
            0 => Fault::Throttling,
            1 => Fault::ServerError,
            2 => Fault::Reset,
            3 => Fault::LoseAnswer,
            4 => Fault::HoldAnswer(delay),
            _ => Fault::LandAfter(delay),
        };
        Some((fault, RANDOM_FAULTS[pick]))
    }
}

/// Where a fault applies: every request of a service, or only one of its
/// operations (`PutItem`, `UpdateItem`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    fault: Fault,
    /// Matching requests that pass untouched before the fault starts.
    passing: u32,
    operation: Option<&'static str>,
    /// Only requests whose body holds this (an item's key: a hot key).
    holding: Option<String>,
}

/// One answered request that went through the proxy: its operation and
/// what went each way (for counting what DynamoDB would bill).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub operation: String,
    pub request: Bytes,
    pub response: Bytes,
}

#[derive(Default)]
struct Faults {
    by_service: HashMap<Service, Target>,
    /// Requests [`Fault::LandLate`] holds back.
    held: Vec<(http::request::Parts, Bytes)>,
    /// Requests that reached the proxy, per service, faulted or not.
    seen: HashMap<Service, u32>,
    calls: Vec<(Service, Call)>,
    drawing: Option<Drawing>,
    /// Faults drawn so far, by name.
    drawn: HashMap<&'static str, u32>,
    /// Requests [`Fault::LandAfter`] forwards later, until they have.
    landing: Vec<tokio::task::JoinHandle<()>>,
    /// Faults for the next requests of one operation, in order
    /// ([`FaultProxy::in_turn`]), before any other.
    in_turn: std::collections::VecDeque<(Service, &'static str, Fault)>,
}

#[derive(Clone)]
pub struct FaultProxy {
    pub url: String,
    faults: Arc<Mutex<Faults>>,
    upstream: SocketAddr,
}

impl FaultProxy {
    /// Listens on a loopback port and forwards to `upstream` (`http://host:port`).
    pub async fn start(upstream: &str) -> Self {
        let upstream: SocketAddr = upstream.trim_start_matches("http://").trim_end_matches('/').parse().expect("upstream host:port");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let faults: Arc<Mutex<Faults>> = Arc::default();
        let shared = faults.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let faults = shared.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request| handle(request, upstream, faults.clone()));
                    let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
                });
            }
        });
        Self { url, faults, upstream }
    }

    /// In front of the emulator (`crate::emulator::emulator_env`).
    pub async fn in_front_of_emulator() -> Self {
        Self::start(&crate::emulator::emulator_var("AWS_ENDPOINT_URL")).await
    }

    pub fn set(&self, service: Service, fault: Fault) {
        self.set_after(service, fault, 0);
    }

    /// `fault` for `service` once `passing` more of its requests went through:
    /// to fail the second call of a sequence and not the first.
    pub fn set_after(&self, service: Service, fault: Fault, passing: u32) {
        self.faults.lock().unwrap().by_service.insert(service, Target { fault, passing, operation: None, holding: None });
    }

    /// `fault` for `service`'s `operation` only, once `passing` more of
    /// that operation's requests went through.
    pub fn set_on(&self, service: Service, operation: &'static str, fault: Fault, passing: u32) {
        self.faults.lock().unwrap().by_service.insert(service, Target { fault, passing, operation: Some(operation), holding: None });
    }

    /// `faults` for the next requests of `service`'s `operation`, one
    /// each, in order: a first attempt that lands late and retries that
    /// are throttled, say.
    pub fn in_turn(&self, service: Service, operation: &'static str, faults: &[Fault]) {
        self.faults.lock().unwrap().in_turn.extend(faults.iter().map(|fault| (service, operation, *fault)));
    }

    /// `fault` for `service`'s requests whose body holds `key` (a hot
    /// key's partition: throttling that meets one item and no other).
    pub fn set_on_key(&self, service: Service, key: &str, fault: Fault) {
        let target = Target { fault, passing: 0, operation: None, holding: Some(key.to_owned()) };
        self.faults.lock().unwrap().by_service.insert(service, target);
    }

    /// Faults drawn at random for every request of every service (see
    /// [`Chaos`]), on top of any set for a service.
    pub fn randomly(&self, chaos: Chaos) {
        self.faults.lock().unwrap().drawing = Some(Drawing { chaos, state: chaos.seed });
    }

    /// The faults drawn so far, by name (see [`RANDOM_FAULTS`]).
    pub fn drawn(&self) -> HashMap<&'static str, u32> {
        self.faults.lock().unwrap().drawn.clone()
    }

    /// Stops drawing, and waits until every request drawn to land late
    /// has landed: what is in the store afterwards is all there will be.
    pub async fn settle(&self) {
        let landing = {
            let mut faults = self.faults.lock().unwrap();
            faults.drawing = None;
            std::mem::take(&mut faults.landing)
        };
        for request in landing {
            let _ = request.await;
        }
    }

    /// Every answered request of `service` so far, in order.
    pub fn calls(&self, service: Service) -> Vec<Call> {
        self.faults.lock().unwrap().calls.iter().filter(|(s, _)| *s == service).map(|(_, call)| call.clone()).collect()
    }

    pub fn clear(&self) {
        let mut faults = self.faults.lock().unwrap();
        faults.by_service.clear();
        faults.drawing = None;
    }

    /// Forwards the requests held back by [`Fault::LandLate`], in order,
    /// and answers how many the service refused (a write that must not
    /// apply twice is refused by its condition).
    pub async fn land_held(&self) -> (usize, usize) {
        let held = std::mem::take(&mut self.faults.lock().unwrap().held);
        let mut refused = 0;
        for (parts, body) in held.iter().cloned() {
            let response = forward(parts, body, self.upstream).await;
            if response.is_ok_and(|response| !response.status().is_success()) {
                refused += 1;
            }
        }
        (held.len(), refused)
    }

    pub fn seen(&self, service: Service) -> u32 {
        self.faults.lock().unwrap().seen.get(&service).copied().unwrap_or(0)
    }
}

/// The error `handle` gives hyper to drop the connection unanswered.
#[derive(Debug)]
struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped by the fault proxy")
    }
}

impl std::error::Error for Dropped {}

async fn handle(
    request: http::Request<Incoming>,
    upstream: SocketAddr,
    faults: Arc<Mutex<Faults>>,
) -> Result<http::Response<Full<Bytes>>, Dropped> {
    let target = request.headers().get("x-amz-target").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let service = Service::of(&target);
    let operation = target.rsplit('.').next().unwrap_or_default().to_owned();
    let (parts, body) = request.into_parts();
    let body = body.collect().await.map_err(|_| Dropped)?.to_bytes();
    let fault = service.and_then(|service| {
        let mut faults = faults.lock().unwrap();
        *faults.seen.entry(service).or_default() += 1;
        if faults.in_turn.front().is_some_and(|(s, o, _)| *s == service && *o == operation) {
            return faults.in_turn.pop_front().map(|(_, _, fault)| fault);
        }
        let set = match faults.by_service.get_mut(&service) {
            Some(t) if t.operation.is_some_and(|o| o != operation) => None,
            Some(t) if t.holding.as_ref().is_some_and(|key| !contains(&body, key.as_bytes())) => None,
            Some(t) if t.passing > 0 => {
                t.passing -= 1;
                None
            }
            Some(Target { fault: fault @ (Fault::LoseAnswer | Fault::LandLate), .. }) => {
                let fault = *fault;
                faults.by_service.remove(&service);
                Some(fault)
            }
            Some(t) => Some(t.fault),
            None => None,
        };
        set.or_else(|| {
            let (fault, name) = faults.drawing.as_mut()?.draw()?;
            *faults.drawn.entry(name).or_default() += 1;
            Some(fault)
        })
    });
    match fault {
        Some(Fault::LandLate) => {
            faults.lock().unwrap().held.push((parts, body));
            return Err(Dropped);
        }
        Some(Fault::LandAfter(delay)) => {
            let late = tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let _ = forward(parts, body, upstream).await;
            });
            faults.lock().unwrap().landing.push(late);
            return Err(Dropped);
        }
        _ => {}
    }
    let answered = answer(fault, service, &operation, parts, body.clone(), upstream).await;
    if let (Ok(response), Some(service)) = (&answered, service) {
        let response = response.body().clone().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
        let call = Call { operation, request: body, response };
        faults.lock().unwrap().calls.push((service, call));
    }
    answered
}

async fn answer(
    fault: Option<Fault>,
    service: Option<Service>,
    operation: &str,
    parts: http::request::Parts,
    body: Bytes,
    upstream: SocketAddr,
) -> Result<http::Response<Full<Bytes>>, Dropped> {
    match (fault, service) {
        // DynamoDB cancels a transaction one of whose items is throttled,
        // with a reason per item; the SDK does not retry it.
        (Some(Fault::Throttling), Some(Service::DynamoDb)) if operation == "TransactWriteItems" => Ok(cancelled_for_throttling(&body)),
        (Some(Fault::Throttling), Some(service)) => Ok(error_response(400, service.throttling())),
        (Some(Fault::ServerError), _) => Ok(error_response(500, "InternalFailure")),
        (Some(Fault::Reset), _) => Err(Dropped),
        (Some(Fault::Stall), _) => std::future::pending().await,
        (Some(Fault::LoseAnswer), _) => {
            let _ = forward(parts, body, upstream).await;
            Err(Dropped)
        }
        (Some(Fault::HoldAnswer(delay)), _) => {
            let answered = forward(parts, body, upstream).await;
            tokio::time::sleep(delay).await;
            answered
        }
        (Some(Fault::Slow(delay)), _) => {
            tokio::time::sleep(delay).await;
            forward(parts, body, upstream).await
        }
        _ => forward(parts, body, upstream).await,
    }
}

fn cancelled_for_throttling(request: &[u8]) -> http::Response<Full<Bytes>> {
    let items =
        serde_json::from_slice::<serde_json::Value>(request).ok().and_then(|r| r["TransactItems"].as_array().map(Vec::len)).unwrap_or(1);
    let reason =
        serde_json::json!({"Code": "ThrottlingError", "Message": "Throughput exceeds the current capacity of your table or index."});
    let body = serde_json::json!({
        "__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
        "message": "Transaction cancelled, please refer cancellation reasons for specific reasons",
        "CancellationReasons": vec![reason; items],
    });
    http::Response::builder()
        .status(400)
        .header("content-type", "application/x-amz-json-1.0")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|window| window == needle)
}

fn error_response(status: u16, error_type: &str) -> http::Response<Full<Bytes>> {
    let body = format!(r#"{{"__type":"{error_type}","message":"injected by the fault proxy"}}"#);
    http::Response::builder()
        .status(status)
        .header("content-type", "application/x-amz-json-1.0")
        .header("x-amzn-query-error", format!("{};Sender", error_type.rsplit('#').next().unwrap_or(error_type)))
        .body(Full::new(Bytes::from(body)))
        .unwrap()
}

async fn forward(parts: http::request::Parts, body: Bytes, upstream: SocketAddr) -> Result<http::Response<Full<Bytes>>, Dropped> {
    let stream = tokio::net::TcpStream::connect(upstream).await.map_err(|_| Dropped)?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|_| Dropped)?;
    tokio::spawn(connection);
    let response = sender.send_request(http::Request::from_parts(parts, Full::new(body))).await.map_err(|_| Dropped)?;
    let (parts, body) = response.into_parts();
    let body = body.collect().await.map_err(|_| Dropped)?.to_bytes();
    Ok(http::Response::from_parts(parts, Full::new(body)))
}
