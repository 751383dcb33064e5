//! requestState sealed under KMS data keys (moto's KMS, real AWS SDK):
//! bound to caller, request, audience and expiry; single use on request;
//! fails closed; survives key rotation; opens on any instance.

use std::{sync::Arc, time::Duration};

use e2e::{emulator::*, *};
use mcp_aws::{KeyWindow, KmsDataKeys};
use mcp_stateless::{
    clock::{ManualClock, SystemClock},
    sealed::request_state::{EnvelopeSealer, OpenError, RequestStateSealer, StateBinding},
};
use serde_json::{Value, json};

const ELICIT: fn() -> Value = || json!({"elicitation": {}});

async fn kms_sealer(
    key: &str,
    audience: &str,
    window: KeyWindow,
    clock: ManualClock,
) -> (EnvelopeSealer<KmsDataKeys>, Arc<mcp_aws::kms_keys::KmsCallCounts>) {
    let keys = KmsDataKeys::new(aws_sdk_kms::Client::new(&sdk().await), key, audience, window);
    let calls = keys.calls.clone();
    (EnvelopeSealer::new(keys).with_clock(Arc::new(clock)), calls)
}

#[tokio::test]
async fn multi_round_flow_hops_between_independent_instances() {
    let sdk = sdk().await;
    let settings = settings(&fresh_key(&sdk).await, &fresh_table(&sdk).await, "e2e-hop");
    let a = start_fixtures(&settings, Arc::new(SystemClock)).await;
    let b = start_fixtures(&settings, Arc::new(SystemClock)).await;

    let round1 = call_tool(a, "alice", "two_questions", json!({}), ELICIT(), json!({})).await;
    let state1 = round1["result"]["requestState"].as_str().unwrap().to_owned();
    let round2 = call_tool(b, "alice", "two_questions", json!({}), ELICIT(), answer(&state1, "first", "tea")).await;
    assert_eq!(round2["result"]["resultType"], "input_required", "{round2}");
    let state2 = round2["result"]["requestState"].as_str().unwrap().to_owned();
    assert_ne!(state1, state2, "round two carries a fresh state");
    let round3 = call_tool(a, "alice", "two_questions", json!({}), ELICIT(), answer(&state2, "second", "cake")).await;
    assert_eq!(text_of(&round3), "tea, cake");

    // Declining ends the flow with a normal result.
    let declined = call_tool(
        a,
        "alice",
        "two_questions",
        json!({}),
        ELICIT(),
        json!({"requestState": state1, "inputResponses": {"first": {"action": "decline"}}}),
    )
    .await;
    assert_eq!(text_of(&declined), "Stopped.");
}

fn answer(state: &str, key: &str, text: &str) -> Value {
    json!({"requestState": state, "inputResponses": {key: {"action": "accept", "content": {key: text}}}})
}

#[tokio::test]
async fn every_changed_byte_truncation_and_unknown_version_fail_closed() {
    let key = fresh_key(&sdk().await).await;
    // Each changed byte of the data key is a key KMS is asked about: a
    // budget for all of them, so every answer is KMS's own.
    let window = {
        let mut value = KeyWindow::default();
        value.max_decrypts_per_minute = 10_000;
        value.max_decrypts_per_caller_per_minute = 10_000;
        value
    };
    let (sealer, _) = kms_sealer(&key, "e2e", window, ManualClock::at(1_000)).await;
    let binding = StateBinding::new(&caller("alice"), "tools/call", "checkout", &json!({"basket": "b"}), "e2e");
    let token = sealer.seal(&binding, &json!({"step": 1}), Duration::from_secs(600)).await.unwrap();
    assert!(sealer.open(&binding, &token).await.is_ok());

    let bytes = token.as_bytes();
    for i in 0..bytes.len() {
        let mut changed = bytes.to_vec();
        changed[i] = if changed[i] == b'A' { b'B' } else { b'A' };
        let changed = String::from_utf8(changed).unwrap();
        match sealer.open(&binding, &changed).await {
            Ok(_) => panic!("byte {i} changed and the state still opened"),
            Err(OpenError::KeyUnavailable(e)) => panic!("byte {i}: a bad token must be invalid, not a server error: {e}"),
            Err(_) => {}
        }
    }
    for cut in [0, 3, 20, token.len() / 2, token.len() - 1] {
        assert!(sealer.open(&binding, &token[..cut]).await.is_err(), "truncated at {cut}");
    }
    assert_eq!(sealer.open(&binding, &token.replacen("v1.", "v9.", 1)).await.unwrap_err(), OpenError::Malformed);
}

#[tokio::test]
async fn principal_tool_arguments_audience_and_expiry_are_bound() {
    let key = fresh_key(&sdk().await).await;
    let clock = ManualClock::at(1_000);
    let (sealer, _) = kms_sealer(&key, "stage-a", KeyWindow::default(), clock.clone()).await;
    let bind = |who: &str, tool: &str, args: Value, audience: &str| StateBinding::new(&caller(who), "tools/call", tool, &args, audience);
    let original = bind("alice", "checkout", json!({"basket": "b1"}), "stage-a");
    let token = sealer.seal(&original, &json!({}), Duration::from_secs(600)).await.unwrap();

    for other in [
        bind("bob", "checkout", json!({"basket": "b1"}), "stage-a"),
        bind("alice", "plan_reminder", json!({"basket": "b1"}), "stage-a"),
        bind("alice", "checkout", json!({"basket": "b2"}), "stage-a"),
        bind("alice", "checkout", json!({"basket": "b1"}), "stage-b"),
    ] {
        assert_eq!(sealer.open(&other, &token).await.unwrap_err(), OpenError::Forged);
    }

    // Another deployment's instance cannot even unwrap the data key: the KMS
    // encryption context names the audience, and KMS enforces it.
    let (other_stage, _) = kms_sealer(&key, "stage-b", KeyWindow::default(), clock.clone()).await;
    assert_eq!(other_stage.open(&original, &token).await.unwrap_err(), OpenError::KeyRefused);

    clock.advance(600);
    assert_eq!(sealer.open(&original, &token).await.unwrap_err(), OpenError::Expired);
}

#[tokio::test]
async fn state_sealed_before_a_key_rotation_still_opens() {
    let key = fresh_key(&sdk().await).await;
    let window = {
        let mut value = KeyWindow::default();
        value.max_seals = 1;
        value
    };
    let (sealer, calls) = kms_sealer(&key, "e2e", window, ManualClock::at(1_000)).await;
    let binding = StateBinding::new(&caller("alice"), "tools/call", "t", &json!({}), "e2e");
    let old = sealer.seal(&binding, &json!("old"), Duration::from_secs(600)).await.unwrap();
    let new = sealer.seal(&binding, &json!("new"), Duration::from_secs(600)).await.unwrap();
    assert_eq!(calls.generate_data_key.load(std::sync::atomic::Ordering::Relaxed), 2, "the window rolled over");
    assert_eq!(sealer.open(&binding, &old).await.unwrap().data, json!("old"));
    assert_eq!(sealer.open(&binding, &new).await.unwrap().data, json!("new"));
    assert_eq!(calls.decrypt.load(std::sync::atomic::Ordering::Relaxed), 0, "both keys were still cached");

    // A cold instance unwraps each data key once.
    let (cold, cold_calls) = kms_sealer(&key, "e2e", KeyWindow::default(), ManualClock::at(1_000)).await;
    assert!(cold.open(&binding, &old).await.is_ok());
    assert!(cold.open(&binding, &old).await.is_ok());
    assert_eq!(cold_calls.decrypt.load(std::sync::atomic::Ordering::Relaxed), 1);
}

/// A forged token names whatever "encrypted data key" it likes; each one
/// KMS is asked about costs a Decrypt (about 57 ms and account quota).
/// Replays of one cost one call, oversized ones none, and new ones a
/// bounded number per minute.
#[tokio::test]
async fn forged_data_keys_cost_at_most_one_decrypt_each_and_a_bounded_number_per_minute() {
    let key = fresh_key(&sdk().await).await;
    let window = {
        let mut value = KeyWindow::default();
        value.max_decrypts_per_minute = 5;
        value
    };
    let (sealer, calls) = kms_sealer(&key, "e2e", window, ManualClock::at(1_000)).await;
    let decrypts = || calls.decrypt.load(std::sync::atomic::Ordering::Relaxed);
    let binding = StateBinding::new(&caller("mallory"), "tools/call", "t", &json!({}), "e2e");

    for _ in 0..20 {
        assert_eq!(sealer.open(&binding, &forged(&[7u8; 184])).await.unwrap_err(), OpenError::KeyRefused);
    }
    assert_eq!(decrypts(), 1, "a refused data key is remembered");
    assert_eq!(sealer.open(&binding, &forged(&[1u8; 2_000])).await.unwrap_err(), OpenError::Malformed);
    assert_eq!(decrypts(), 1, "no KMS call for a key KMS could not have made");
    for i in 0..20u8 {
        assert!(sealer.open(&binding, &forged(&[i; 184])).await.is_err());
    }
    assert_eq!(decrypts(), 5, "the per-minute bound");

    // The instance's own states still open: their key needs no Decrypt.
    let own = sealer.seal(&binding, &json!({"ok": true}), Duration::from_secs(600)).await.unwrap();
    assert_eq!(sealer.open(&binding, &own).await.unwrap().data, json!({"ok": true}));
    assert_eq!(decrypts(), 5);
}

/// Issue 16, finding 1: one caller's forged tokens must not make another
/// caller's genuine state fail on the same instance, nor evict the keys
/// genuine states need; a spent budget is the server's condition
/// (retryable), never "invalid".
#[tokio::test]
async fn forged_tokens_spend_their_callers_budget_not_another_callers() {
    let key = fresh_key(&sdk().await).await;
    let (sealer_a, _) = kms_sealer(&key, "e2e", KeyWindow::default(), ManualClock::at(1_000)).await;
    let window = {
        let mut value = KeyWindow::default();
        value.cache_entries = 2;
        value
    };
    let (sealer_c, calls_c) = kms_sealer(&key, "e2e", window.clone(), ManualClock::at(1_000)).await;
    let decrypts = || calls_c.decrypt.load(std::sync::atomic::Ordering::Relaxed);
    let alice = StateBinding::new(&caller("alice"), "tools/call", "t", &json!({}), "e2e");
    let mallory = StateBinding::new(&caller("mallory"), "tools/call", "t", &json!({}), "e2e");
    let genuine = sealer_a.seal(&alice, &json!({"round": 2}), Duration::from_secs(600)).await.unwrap();
    // C learns alice's key (sealed on A) once.
    assert_eq!(sealer_c.open(&alice, &genuine).await.unwrap().data, json!({"round": 2}));
    assert_eq!(decrypts(), 1);

    let per_caller = window.max_decrypts_per_caller_per_minute;
    for i in 0..61u8 {
        let outcome = sealer_c.open(&mallory, &forged(&[i; 150])).await.unwrap_err();
        let expected = if u32::from(i) < per_caller { OpenError::KeyRefused } else { OpenError::OverBudget };
        assert_eq!(outcome, expected, "forged token {i}");
    }
    assert_eq!(decrypts(), 1 + u64::from(per_caller), "mallory spent only her own budget");
    // The refusals did not evict alice's key (the good-key cache holds 2).
    assert_eq!(sealer_c.open(&alice, &genuine).await.unwrap().data, json!({"round": 2}));
    assert_eq!(decrypts(), 1 + u64::from(per_caller), "alice's key still cached");
    // A new genuine state of alice's, under a key C has not seen, still opens.
    let (sealer_b, _) = kms_sealer(&key, "e2e", KeyWindow::default(), ManualClock::at(1_000)).await;
    let from_b = sealer_b.seal(&alice, &json!({"round": 3}), Duration::from_secs(600)).await.unwrap();
    assert_eq!(sealer_c.open(&alice, &from_b).await.unwrap().data, json!({"round": 3}));
}

/// v1. | u16 length | key ref | 12-byte nonce | ciphertext and 16-byte tag
fn forged(key_ref: &[u8]) -> String {
    use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
    let mut raw = (key_ref.len() as u16).to_be_bytes().to_vec();
    raw.extend_from_slice(key_ref);
    raw.extend_from_slice(&[0u8; 12 + 32]);
    format!("v1.{}", URL_SAFE_NO_PAD.encode(raw))
}

/// The request log's counters (CloudWatch metrics in Lambda): each request
/// counts its own KMS calls and data-key cache hits.
#[tokio::test]
async fn kms_calls_and_cache_hits_are_counted_per_request() {
    use mcp_stateless::metrics::{Counter, scope};
    let key = fresh_key(&sdk().await).await;
    let (sealer, _) = kms_sealer(&key, "e2e", KeyWindow::default(), ManualClock::at(1_000)).await;
    let binding = StateBinding::new(&caller("alice"), "tools/call", "t", &json!({}), "e2e");
    let data = json!({});
    let seal = || sealer.seal(&binding, &data, Duration::from_secs(600));
    let (first, cold) = scope(seal()).await;
    let (_, warm) = scope(seal()).await;
    assert_eq!((cold.get(Counter::KmsCalls), cold.get(Counter::DataKeyCacheHits)), (1, 0), "GenerateDataKey");
    assert_eq!((warm.get(Counter::KmsCalls), warm.get(Counter::DataKeyCacheHits)), (0, 1), "the instance's data key");

    let (other, _) = kms_sealer(&key, "e2e", KeyWindow::default(), ManualClock::at(1_000)).await;
    let (opened, unwrapped) = scope(other.open(&binding, &first.unwrap())).await;
    assert!(opened.is_ok());
    assert_eq!((unwrapped.get(Counter::KmsCalls), unwrapped.get(Counter::DataKeyCacheHits)), (1, 0), "Decrypt on another instance");
}

/// Round one of a confirmed discard of a one-entry list; returns the list
/// and the state.
async fn discard_round1(addr: std::net::SocketAddr, who: &str) -> (String, String) {
    let list = text_of(&call_tool(addr, who, "open_list", json!({}), json!({}), json!({})).await);
    let appended = call_tool(addr, who, "append", json!({"list": list, "entry": "tea"}), json!({}), json!({})).await;
    assert_eq!(text_of(&appended), "1 entries", "{appended}");
    let round1 = call_tool(addr, who, "discard_list", json!({"list": list}), ELICIT(), json!({})).await;
    (list, round1["result"]["requestState"].as_str().unwrap_or_else(|| panic!("{round1}")).to_owned())
}

fn confirm(state: &str) -> Value {
    json!({"requestState": state, "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": true}}}})
}

#[tokio::test]
async fn single_use_state_is_refused_on_replay_and_multi_use_is_not() {
    let sdk = sdk().await;
    let settings = settings(&fresh_key(&sdk).await, &fresh_table(&sdk).await, "e2e-once");
    let a = start_fixtures(&settings, Arc::new(SystemClock)).await;
    let b = start_fixtures(&settings, Arc::new(SystemClock)).await;

    let (list, state) = discard_round1(a, "alice").await;
    let placed = call_tool(b, "alice", "discard_list", json!({"list": list}), ELICIT(), confirm(&state)).await;
    assert_eq!(text_of(&placed), "Discarded 1 entries.");
    for instance in [a, b] {
        let replay = call_tool(instance, "alice", "discard_list", json!({"list": list}), ELICIT(), confirm(&state)).await;
        assert_eq!(replay["error"]["code"], -32602, "{replay}");
        assert_eq!(replay["error"]["message"], "requestState is invalid or expired; retry the request without it");
    }

    // two_questions' state is multi-use (the spec's default): a retry of
    // round two within the expiry is served again.
    let round1 = call_tool(a, "alice", "two_questions", json!({}), ELICIT(), json!({})).await;
    let state = round1["result"]["requestState"].as_str().unwrap();
    for instance in [a, b] {
        let again = call_tool(instance, "alice", "two_questions", json!({}), ELICIT(), answer(state, "first", "tea")).await;
        assert_eq!(again["result"]["resultType"], "input_required", "{again}");
    }
}

#[tokio::test]
async fn kms_unreachable_is_an_internal_error_and_writes_nothing() {
    let sdk = sdk().await;
    let (key, table) = (fresh_key(&sdk).await, fresh_table(&sdk).await);
    let healthy = start_fixtures(&settings(&key, &table, "e2e-down"), Arc::new(SystemClock)).await;
    let (list, state) = discard_round1(healthy, "alice").await;
    let items_before = scan(&sdk, &table).await.len();

    // Nothing listens on port 1.
    let broken = start_fixtures_with(deps_with_kms_at("http://127.0.0.1:1", &key, &table, "e2e-down", Arc::new(SystemClock)).await).await;
    let round2 = call_tool(broken, "alice", "discard_list", json!({"list": list}), ELICIT(), confirm(&state)).await;
    assert_eq!(round2["error"]["code"], -32603, "{round2}");
    assert_eq!(round2["error"]["message"], "request state service unavailable");
    let round1 = call_tool(broken, "alice", "discard_list", json!({"list": list}), ELICIT(), json!({})).await;
    assert_eq!(round1["error"]["code"], -32603, "{round1}");
    assert_eq!(scan(&sdk, &table).await.len(), items_before, "no single-use record, no change to the list");

    // Throttling after the SDK's retries is also the server's failure.
    let throttled = failing_kms("ThrottlingException", 400).await;
    let slow = start_fixtures_with(deps_with_kms_at(&throttled, &key, &table, "e2e-down", Arc::new(SystemClock)).await).await;
    let round2 = call_tool(slow, "alice", "discard_list", json!({"list": list}), ELICIT(), confirm(&state)).await;
    assert_eq!(round2["error"]["code"], -32603, "{round2}");
    assert_eq!(scan(&sdk, &table).await.len(), items_before);
}

#[tokio::test]
async fn a_data_key_kms_refuses_makes_the_state_invalid() {
    let sdk = sdk().await;
    let (key, table) = (fresh_key(&sdk).await, fresh_table(&sdk).await);
    let healthy = start_fixtures(&settings(&key, &table, "e2e-disabled"), Arc::new(SystemClock)).await;
    let (list, state) = discard_round1(healthy, "alice").await;
    let items_before = scan(&sdk, &table).await.len();

    let disabled = failing_kms("DisabledException", 400).await;
    let instance = start_fixtures_with(deps_with_kms_at(&disabled, &key, &table, "e2e-disabled", Arc::new(SystemClock)).await).await;
    let round2 = call_tool(instance, "alice", "discard_list", json!({"list": list}), ELICIT(), confirm(&state)).await;
    assert_eq!(round2["error"]["code"], -32602, "{round2}");
    assert_eq!(round2["error"]["message"], "requestState is invalid or expired; retry the request without it");
    assert_eq!(scan(&sdk, &table).await.len(), items_before);
}

#[tokio::test]
async fn a_client_without_elicitation_never_receives_one() {
    let sdk = sdk().await;
    let addr = start_fixtures(&settings(&fresh_key(&sdk).await, &fresh_table(&sdk).await, "e2e-caps"), Arc::new(SystemClock)).await;
    let list = text_of(&call_tool(addr, "alice", "open_list", json!({}), json!({}), json!({})).await);
    let reply = call_tool(addr, "alice", "discard_list", json!({"list": list}), json!({"sampling": {}}), json!({})).await;
    assert_eq!(reply["error"]["code"], -32021, "{reply}");
    assert_eq!(reply["error"]["data"]["requiredCapabilities"], json!({"elicitation": {"form": {}}}));
}
