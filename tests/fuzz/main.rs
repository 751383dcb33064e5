//! A stable-toolchain fuzzer for the three places untrusted bytes enter:
//! the request handler (`edge`), the `requestState` opener (`token`) and
//! handle parsing and lookup (`handle`).
//!
//! ```text
//! fuzz <edge|token|handle|all> [inputs per target] [seed]
//! ```
//!
//! Inputs are deterministic per seed, so a failure prints the seed and the
//! input number to replay it. Panics are caught and counted as failures, as
//! are broken invariants (see each target). `infra/fuzz.sh` runs 10^6
//! inputs per target; the test command runs a short smoke of each.

mod mutate;
mod targets;

use std::{panic::AssertUnwindSafe, process::ExitCode, time::Instant};

use futures::FutureExt;

use mutate::Rng;
use targets::{Edge, Handle, Token, Verdict};

const TARGETS: [&str; 3] = ["edge", "token", "handle"];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let which = args.first().map(String::as_str).unwrap_or("all");
    let inputs: u64 = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(10_000);
    let seed: u64 = args.get(2).and_then(|n| n.parse().ok()).unwrap_or_else(|| u64::from_le_bytes(mcp_stateless::random::bytes::<8>()));
    let chosen: Vec<&str> = if which == "all" { TARGETS.to_vec() } else { vec![which] };
    if chosen.iter().any(|t| !TARGETS.contains(t)) {
        eprintln!("usage: fuzz <edge|token|handle|all> [inputs] [seed]");
        return ExitCode::from(2);
    }
    // Caught panics are reported below, once, with the input that caused them.
    std::panic::set_hook(Box::new(|_| {}));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let mut failed = false;
    for target in chosen {
        failed |= runtime.block_on(fuzz(target, inputs, seed));
    }
    if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

/// Runs `inputs` inputs of `target`; true if any failed.
async fn fuzz(target: &str, inputs: u64, seed: u64) -> bool {
    let edge = if target == "edge" { Some(Edge::new()) } else { None };
    let token = if target == "token" { Some(Token::new().await) } else { None };
    let handle = if target == "handle" { Some(Handle::new().await) } else { None };
    let started = Instant::now();
    let (mut panics, mut broken) = (0u64, 0u64);
    for n in 0..inputs {
        // One generator per input: input n replays from (seed, n) alone.
        let mut rng = Rng::new(seed ^ n.wrapping_mul(0x2545_F491_4F6C_DD1D));
        let run = async {
            match (&edge, &token, &handle) {
                (Some(edge), _, _) => edge.run(&mut rng).await,
                (_, Some(token), _) => token.run(&mut rng).await,
                (_, _, Some(handle)) => handle.run(&mut rng).await,
                _ => unreachable!("one target is set"),
            }
        };
        let verdict: Verdict = match AssertUnwindSafe(run).catch_unwind().await {
            Ok(verdict) => verdict,
            Err(panic) => {
                panics += 1;
                let what = panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
                Err(format!("panicked: {}", what.unwrap_or_default()))
            }
        };
        if let Err(why) = verdict {
            broken += 1;
            if broken <= 5 {
                let why: String = why.chars().take(600).collect();
                eprintln!("fuzz {target}: input {n} (seed {seed}): {why}");
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    if let Some(edge) = &edge {
        println!("fuzz edge outcomes: {}", edge.outcomes());
    }
    println!(
        "fuzz {target}: {inputs} inputs, {panics} panics, {} broken invariants, {:.0} inputs/s, seed {seed}",
        broken - panics,
        inputs as f64 / secs
    );
    broken > 0
}
