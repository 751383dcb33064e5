//! The everything function's local server on a clock the caller moves, for
//! clients driven across a 2025-era session's expiry
//! (tests/clients/stale_session.mjs): prints its URL, then takes lines on
//! standard input, `advance SECONDS`, each answered `ok` once the clock moved.
//! A test harness, never deployed.

use std::sync::Arc;

use mcp_stateless::{
    Dependencies, EdgePolicy, McpEndpoint, Mode,
    clock::{Clock, ManualClock, SystemClock},
};
use std::io::BufRead;

#[tokio::main]
async fn main() {
    let clock = Arc::new(ManualClock::at(SystemClock.now()));
    let deps = Dependencies::in_process_with_clock(clock.clone());
    let endpoint = McpEndpoint::new(everything::EverythingServer::new(deps.clone()), EdgePolicy::new(Mode::Local)).with_dependencies(&deps);
    let addr = e2e::spawn(endpoint).await;
    println!("http://{addr}/mcp");
    // Read on a thread of its own: the server's tasks go on meanwhile.
    let commands = tokio::task::spawn_blocking(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            match line.trim().strip_prefix("advance ").map(str::parse::<u64>) {
                Some(Ok(seconds)) => {
                    clock.advance(seconds);
                    println!("ok");
                }
                _ => println!("error: expected `advance SECONDS`, got {line:?}"),
            }
        }
    });
    // Standard input closed: the client is done.
    let _ = commands.await;
}
