//! tracing-subscriber set-up: JSON lines in Lambda (CloudWatch), readable
//! text locally. Level from `MCP_LOG_LEVEL` (or `RUST_LOG`), default `info`.

use tracing_subscriber::EnvFilter;

use crate::edge::policy::Mode;

pub fn init(mode: Mode) {
    let requested = std::env::var("MCP_LOG_LEVEL")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "info".to_owned());
    // rmcp traces whole JSON-RPC messages at debug/trace level, arguments and
    // requestState included: keep it at warn whatever was asked for.
    let filter = EnvFilter::try_new(format!("{requested},rmcp=warn")).unwrap_or_else(|_| EnvFilter::new("info,rmcp=warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = match mode {
        Mode::Lambda => builder.json().flatten_event(true).with_current_span(false).without_time().try_init(),
        Mode::Local => builder.with_ansi(false).try_init(),
    };
}
