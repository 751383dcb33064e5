//! Seal + open per MRTR round on a warm instance, and the KMS calls that
//! 10,000 rounds cost, side by side with the in-process key. Needs the
//! emulator (run through `bash infra/bench.sh`). Reports ratios and counts,
//! not pass/fail: these machines are shared and noisy.

use std::{
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

use mcp_aws::{KeyWindow, KmsDataKeys};
use mcp_stateless::sealed::request_state::{DataKeySource, EnvelopeSealer, InProcessKey, RequestStateSealer, StateBinding};
use serde_json::json;

const ROUNDS: usize = 10_000;

fn binding() -> StateBinding {
    StateBinding::new(&e2e::caller("bench"), "tools/call", "checkout", &json!({"basket": "bsk_x"}), "bench")
}

/// Median nanoseconds of one seal + open round over `ROUNDS` rounds.
async fn rounds<K: DataKeySource>(sealer: &EnvelopeSealer<K>) -> f64 {
    let binding = binding();
    let continuation = json!({"step": "confirm", "lines": 3});
    let mut samples = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let token = sealer.seal(&binding, &continuation, Duration::from_secs(600)).await.unwrap();
        let opened = sealer.open(&binding, &token).await.unwrap();
        samples.push(start.elapsed().as_nanos() as f64);
        assert_eq!(opened.data, continuation);
    }
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

#[tokio::main]
async fn main() {
    let sdk = e2e::emulator::sdk().await;
    let key = e2e::emulator::fresh_key(&sdk).await;
    let keys = KmsDataKeys::new(aws_sdk_kms::Client::new(&sdk), &key, "bench", KeyWindow::default());
    let calls = keys.calls.clone();
    let kms = EnvelopeSealer::new(keys);
    let local = EnvelopeSealer::new(InProcessKey::generate());

    // The KMS sealer starts cold: its first seal fetches the data key, and
    // that call is counted. The in-process one is warmed for fairness.
    let _ = rounds(&local).await;
    let kms_ns = rounds(&kms).await;
    let local_ns = rounds(&local).await;
    let kms_calls = calls.generate_data_key.load(Ordering::Relaxed) + calls.decrypt.load(Ordering::Relaxed);

    // A second instance opening tokens it did not seal: one Decrypt per data key.
    let cold = KmsDataKeys::new(aws_sdk_kms::Client::new(&sdk), &key, "bench", KeyWindow::default());
    let cold_calls = cold.calls.clone();
    let other = EnvelopeSealer::new(cold);
    let token = kms.seal(&binding(), &json!(1), Duration::from_secs(600)).await.unwrap();
    for _ in 0..ROUNDS {
        other.open(&binding(), &token).await.unwrap();
    }
    let other_calls = cold_calls.decrypt.load(Ordering::Relaxed);

    println!("request_state bench: {ROUNDS} rounds of seal + open on one warm instance");
    println!("  KMS data key:     median {:.1} us per round", kms_ns / 1000.0);
    println!("  in-process key:   median {:.1} us per round", local_ns / 1000.0);
    println!("  ratio KMS/in-process: {:.2}", kms_ns / local_ns);
    println!("  KMS calls for {ROUNDS} rounds on one instance, from cold: {kms_calls} (target: at most 2)");
    println!("  KMS calls on another instance opening {ROUNDS} tokens of one data key: {other_calls}");
}
