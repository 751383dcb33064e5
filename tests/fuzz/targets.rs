//! The fuzz targets. Each takes the generator, makes one input, runs it and
//! checks what must hold for every input, not only that nothing panicked.

use std::sync::Arc;

use bytes::Bytes;
use e2e::fixture_server::LIST;
use mcp_stateless::{
    CallContext, Dependencies, EdgePolicy, Handles, McpEndpoint, Mode, RequestStates, StateScope,
    clock::SystemClock,
    handles::{access::HandleFailure, memory::InMemoryHandleStore},
    sealed::{
        redemption::InMemoryLedger,
        request_state::{EnvelopeSealer, InProcessKey},
    },
};
use serde_json::{Value, json};

use crate::mutate::{Rng, mutate_bytes, mutate_json, mutate_text};

/// What a target found wrong with one input's outcome.
pub(crate) type Verdict = Result<(), String>;

/// Arbitrary bodies and headers into the request handler, as the Lambda
/// adapter and the local server hand them over.
pub(crate) struct Edge {
    endpoint: McpEndpoint<everything::EverythingServer>,
    seeds: Vec<Value>,
    /// How far inputs got: HTTP refusals, JSON-RPC errors by code, results.
    outcomes: std::cell::RefCell<std::collections::BTreeMap<String, u64>>,
}

impl Edge {
    pub(crate) fn new() -> Self {
        let deps = Dependencies::in_process();
        let endpoint =
            McpEndpoint::new(everything::EverythingServer::new(deps.clone()), EdgePolicy::new(Mode::Local)).with_dependencies(&deps);
        let call = |name: &str, arguments: Value| json!({"name": name, "arguments": arguments});
        let seeds = [
            ("server/discover", json!({})),
            ("tools/list", json!({})),
            ("tools/call", call("test_simple_text", json!({}))),
            ("tools/call", call("test_input_required_result_multi_round", json!({}))),
            ("tools/call", call("test_prompt_with_arguments", json!({"arg1": "a", "arg2": "b"}))),
            (
                "tools/call",
                json!({"name": "test_input_required_result_request_state", "requestState": "AAAA", "inputResponses": {"x": {}}}),
            ),
            ("tools/call", call("test_x_mcp_header", json!({"region": "eu"}))),
            ("tools/call", call("test_tool_with_task", json!({}))),
            ("prompts/get", json!({"name": "test_simple_prompt"})),
            ("resources/read", json!({"uri": "test://static-text"})),
            ("tasks/get", json!({"taskId": "tsk_AAAAAAAAAAAAAAAAAAAAAA"})),
            ("completion/complete", json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "v"}})),
        ]
        .into_iter()
        .enumerate()
        .map(|(id, (method, params))| e2e::request(id as i64, method, params, json!({"elicitation": {}})))
        .collect();
        Self { endpoint, seeds, outcomes: Default::default() }
    }

    /// "HTTP 400: 12%, -32602: 40%, result: 30%, ...": evidence that inputs
    /// reach the handlers, not only the parser.
    pub(crate) fn outcomes(&self) -> String {
        let outcomes = self.outcomes.borrow();
        let total: u64 = outcomes.values().sum();
        let share = |count: &u64| 100.0 * *count as f64 / total.max(1) as f64;
        outcomes.iter().map(|(outcome, count)| format!("{outcome}: {:.1}%", share(count))).collect::<Vec<_>>().join(", ")
    }

    fn record(&self, status: u16, body: &[u8]) {
        let message: Value = serde_json::from_slice(body).unwrap_or_default();
        let outcome = match (&message["error"]["code"], message.get("result")) {
            (Value::Number(code), _) => code.to_string(),
            (_, Some(_)) => "result".to_owned(),
            _ => format!("HTTP {status}"),
        };
        *self.outcomes.borrow_mut().entry(outcome).or_default() += 1;
    }

    pub(crate) async fn run(&self, rng: &mut Rng) -> Verdict {
        let mut body = rng.pick(&self.seeds).clone();
        let mut headers = e2e::standard_headers(&body);
        headers.push(("host".into(), "127.0.0.1:3000".into()));
        headers.push(("x-mcp-dev-principal".into(), "alice".into()));
        for _ in 0..rng.below(4) {
            mutate_json(rng, &mut body);
        }
        let mut bytes = serde_json::to_vec(&body).expect("serializable");
        if rng.chance(3) {
            mutate_bytes(rng, &mut bytes);
        }
        if rng.chance(3) && !headers.is_empty() {
            let at = rng.below(headers.len());
            match rng.below(3) {
                0 => {
                    headers.remove(at);
                }
                1 => headers[at].1 = mutate_text(rng, &headers[at].1),
                _ => headers.push(("origin".into(), mutate_text(rng, "http://localhost:3000"))),
            }
        }
        let mut request = http::Request::builder().method(if rng.chance(50) { "GET" } else { "POST" }).uri(if rng.chance(50) {
            "/other"
        } else {
            "/mcp"
        });
        for (name, value) in &headers {
            // Values the http crate refuses never reach the handler.
            if let Ok(value) = http::HeaderValue::from_str(value) {
                request = request.header(name.as_str(), value);
            }
        }
        let request = request.body(Bytes::from(bytes)).map_err(|e| format!("request: {e}"))?;
        let response = self.endpoint.handle(request).await;
        self.record(response.status().as_u16(), response.body());
        check_answer(response.status().as_u16(), response.headers(), response.body())
    }
}

/// Whatever came in, the answer is a well-formed HTTP error or JSON-RPC
/// message, and never a server error (nothing here can fail to reach a
/// dependency: everything is in process).
fn check_answer(status: u16, headers: &http::HeaderMap, body: &[u8]) -> Verdict {
    if status >= 500 {
        return Err(format!("HTTP {status}: {}", String::from_utf8_lossy(body)));
    }
    let is_json = headers.get(http::header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if is_json && !body.is_empty() {
        let message: Value = serde_json::from_slice(body).map_err(|e| format!("HTTP {status}, body not JSON: {e}"))?;
        if message["jsonrpc"] != "2.0" {
            return Err(format!("HTTP {status}, not JSON-RPC: {message}"));
        }
        if message["error"]["code"] == -32603 {
            return Err(format!("internal error: {message}"));
        }
    }
    Ok(())
}

/// Damaged `requestState` tokens into the opener: none may open.
pub(crate) struct Token {
    states: RequestStates,
    ctx: CallContext,
    arguments: Value,
    sealed: String,
}

impl Token {
    pub(crate) async fn new() -> Self {
        let sealer = EnvelopeSealer::new(InProcessKey::generate());
        let states = RequestStates::new(Arc::new(sealer), Arc::new(InMemoryLedger::default()), Arc::new(SystemClock), "fuzz");
        let ctx = e2e::caller("alice");
        let arguments = json!({"basket": "bsk_x"});
        let sealed = states.seal(&ctx, StateScope::tool("checkout", &arguments), &json!({"version": 3})).await.expect("seals");
        Self { states, ctx, arguments, sealed }
    }

    pub(crate) async fn run(&self, rng: &mut Rng) -> Verdict {
        let token = if rng.chance(20) { mutate_text(rng, "") } else { mutate_text(rng, &self.sealed) };
        if token == self.sealed {
            return Ok(());
        }
        let scope = StateScope::tool("checkout", &self.arguments);
        match self.states.open::<Value>(&self.ctx, scope, &token).await {
            Ok(opened) => Err(format!("a damaged token opened: {token:?} -> {opened}")),
            Err(error) if error.code.0 == -32602 => Ok(()),
            Err(error) => Err(format!("a damaged token is not -32602 but {}: {}", error.code.0, error.message)),
        }
    }
}

/// Strings near a real handle into the parser and the store: one spelling
/// per handle, and nothing that was never minted is found.
pub(crate) struct Handle {
    handles: Handles,
    ctx: CallContext,
    minted: String,
}

impl Handle {
    pub(crate) async fn new() -> Self {
        let handles = Handles::new(Arc::new(InMemoryHandleStore::default()), Arc::new(SystemClock));
        let ctx = e2e::caller("alice");
        let minted = handles.create(&ctx, &LIST, json!({"entries": []})).await.expect("created");
        Self { handles, ctx, minted }
    }

    pub(crate) async fn run(&self, rng: &mut Rng) -> Verdict {
        let near = if rng.chance(4) { "lst_" } else { &self.minted };
        let candidate = mutate_text(rng, near);
        if LIST.is_well_formed(&candidate) {
            use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
            let random = &candidate["lst_".len()..];
            let canonical = URL_SAFE_NO_PAD.decode(random).map(|b| URL_SAFE_NO_PAD.encode(b));
            if canonical.as_deref() != Ok(random) {
                return Err(format!("accepted a non-canonical spelling: {candidate:?}"));
            }
        }
        match self.handles.read(&self.ctx, &LIST, &candidate).await {
            Ok(_) if candidate == self.minted => Ok(()),
            Ok(_) => Err(format!("found a handle that was never minted: {candidate:?}")),
            Err(HandleFailure::Unknown) => Ok(()),
            Err(other) => Err(format!("{candidate:?}: {other:?}")),
        }
    }
}
