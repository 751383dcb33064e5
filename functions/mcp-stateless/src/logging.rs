//! tracing-subscriber set-up: JSON lines in Lambda (CloudWatch), readable
//! text locally. Level from `MCP_LOG_LEVEL` (or `RUST_LOG`), default `info`.
//!
//! `Targets` rather than `EnvFilter`: `target=level` directives are all this
//! needs, and `EnvFilter`'s regex engine costs artifact size and start-up.

use tracing::{
    Event, Level, Subscriber,
    field::{Field, Visit},
};
use tracing_subscriber::{
    Layer,
    filter::{LevelFilter, Targets},
    layer::{Context, SubscriberExt},
    util::SubscriberInitExt,
};

use crate::deployment::LogFormat;

/// Whether `requested` is a level or `target=level` directives, each
/// ending in a level.
pub fn is_valid(requested: &str) -> bool {
    requested.split(',').all(|d| d.rsplit('=').next().is_some_and(|l| l.trim().parse::<LevelFilter>().is_ok()))
}

/// `info`, `debug`, or directives such as `info,hyper=debug`; rmcp stays
/// at `warn` whatever was asked for, since at debug and trace it logs whole
/// JSON-RPC messages, arguments and requestState included; the Lambda
/// runtime and the AWS SDK stay at `debug`, since at trace they log whole
/// events and requests (bearer tokens, codes, refresh tokens, cookies).
/// Public for tests that write the log somewhere of their own and read it
/// back as a deployment would write it.
pub fn filter(requested: &str) -> Targets {
    // Every directive must end in a level: a bare word would otherwise be
    // read as a target, and silence everything else.
    let asked = Some(requested)
        .filter(|r| is_valid(r))
        .and_then(|r| r.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_default(LevelFilter::INFO).with_target("rmcp", LevelFilter::WARN));
    // A ceiling, not a directive of its own: `hyper=debug` added to `info`
    // would raise hyper to debug, since the most specific directive wins.
    // So each clamped target gets what was asked for it, at most its
    // ceiling, and so does each requested directive under it (matched as
    // `Targets` matches, by prefix: `hyper` covers `hyper_util`).
    let ceiling = |target: &str, level: LevelFilter| {
        CLAMPED.iter().filter(|(clamped, _)| target.starts_with(clamped)).fold(level, |level, (_, most)| level.min(*most))
    };
    let mut capped = Targets::new()
        .with_targets(
            asked
                .iter()
                .filter(|(target, _)| !CLAMPED.iter().any(|(clamped, _)| clamped == target))
                .map(|(target, level)| (target.to_owned(), ceiling(target, level))),
        )
        .with_targets(CLAMPED.iter().map(|(clamped, _)| (*clamped, ceiling(clamped, asked_for(&asked, clamped)))));
    if let Some(default) = asked.default_level() {
        capped = capped.with_default(default);
    }
    capped
}

/// The most verbose level `targets` enables for `target`.
fn asked_for(targets: &Targets, target: &str) -> LevelFilter {
    [Level::TRACE, Level::DEBUG, Level::INFO, Level::WARN, Level::ERROR]
        .into_iter()
        .find(|level| targets.would_enable(target, level))
        .map_or(LevelFilter::OFF, LevelFilter::from_level)
}

/// The targets held below what their trace level would write, and the
/// most each may write.
const CLAMPED: &[(&str, LevelFilter)] = &[
    ("rmcp", LevelFilter::WARN),
    ("lambda_runtime", LevelFilter::DEBUG),
    ("lambda_http", LevelFilter::DEBUG),
    ("aws_smithy_runtime", LevelFilter::DEBUG),
    ("aws_smithy_http_client", LevelFilter::DEBUG),
    ("hyper", LevelFilter::DEBUG),
];

/// Logs to stderr from here on, at `requested` ([`crate::settings::Settings::log_level`]).
pub fn init(format: LogFormat, requested: &str) {
    let _ = subscriber(format, requested, std::io::stderr).try_init();
}

/// What [`init`] installs, writing to `writer`. The formatter's own level
/// is opened to `TRACE` so that [`filter`] alone decides: left at its
/// default it drops everything below `INFO` before the filter is asked,
/// and `MCP_LOG_LEVEL=debug` would write no debug line.
fn subscriber<W>(format: LogFormat, requested: &str, writer: W) -> Box<dyn Subscriber + Send + Sync>
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    let builder = tracing_subscriber::fmt().with_writer(writer).with_max_level(LevelFilter::TRACE);
    match format {
        LogFormat::Json => Box::new(
            builder
                .json()
                .flatten_event(true)
                .with_current_span(false)
                .without_time()
                .finish()
                .with(filter(requested))
                .with(ClientLeftDuringDrain),
        ),
        LogFormat::Text => Box::new(builder.finish().with(filter(requested)).with(ClientLeftDuringDrain)),
    }
}

/// Drops one rmcp error that is no error here (docs/rmcp-workarounds.md,
/// row 18): when a client leaves a streamed answer (a listen stream it
/// closes, as clients do), rmcp cancels the request's service, the
/// handler ends and its final result is queued; rmcp's drain then sends
/// it to the response channel the client took with it and logs `ERROR
/// failed to send pending response during drain error=channel closed`
/// (`service.rs`, `serve_inner`). Only that event, with that error, is
/// dropped: any other from `rmcp::service` passes.
#[derive(Debug, Clone, Copy, Default)]
#[allow(clippy::exhaustive_structs, reason = "a unit filter, named where a subscriber is set up; nothing to add")]
pub struct ClientLeftDuringDrain;

/// The text of the drain error rmcp logs, and the error a closed
/// response channel gives.
const DRAIN_MESSAGE: &str = "failed to send pending response during drain";
const CHANNEL_CLOSED: &str = "channel closed";

impl<S: Subscriber> Layer<S> for ClientLeftDuringDrain {
    fn event_enabled(&self, event: &Event<'_>, _: Context<'_, S>) -> bool {
        let metadata = event.metadata();
        if *metadata.level() != Level::ERROR || metadata.target() != "rmcp::service" {
            return true;
        }
        let mut fields = DrainFields::default();
        event.record(&mut fields);
        !(fields.message == DRAIN_MESSAGE && fields.error == CHANNEL_CLOSED)
    }
}

/// The two fields of rmcp's drain error, as text.
#[derive(Default)]
struct DrainFields {
    message: String,
    error: String,
}

impl Visit for DrainFields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "message" => self.message = format!("{value:?}"),
            "error" => self.error = format!("{value:?}"),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use tracing::Level;

    use super::*;

    #[test]
    fn rmcp_stays_at_warn_and_bad_input_falls_back_to_info() {
        let debug = filter("debug");
        assert!(debug.would_enable("mcp_stateless::edge", &Level::DEBUG));
        assert!(!debug.would_enable("rmcp::service", &Level::INFO));
        assert!(debug.would_enable("rmcp::service", &Level::WARN));
        let trace = filter("trace,lambda_runtime=trace");
        assert!(!trace.would_enable("lambda_runtime::layers::api_response", &Level::TRACE), "events hold tokens");
        assert!(!trace.would_enable("aws_smithy_runtime::client", &Level::TRACE));
        assert!(trace.would_enable("mcp_stateless::edge", &Level::TRACE));
        let bad = filter("not a level!");
        assert!(bad.would_enable("mcp_aws", &Level::INFO) && !bad.would_enable("mcp_aws", &Level::DEBUG));
    }

    #[test]
    fn a_clamp_is_a_ceiling_never_a_raise() {
        let info = filter("info");
        for target in ["hyper::proto", "hyper_util::client", "aws_smithy_runtime::client", "lambda_runtime::layers", "lambda_http"] {
            assert!(info.would_enable(target, &Level::INFO) && !info.would_enable(target, &Level::DEBUG), "{target} at info");
        }
        let error = filter("error");
        assert!(!error.would_enable("rmcp::service", &Level::WARN) && error.would_enable("rmcp::service", &Level::ERROR));
        assert!(!error.would_enable("hyper", &Level::WARN));
        let debug = filter("debug");
        assert!(debug.would_enable("hyper::proto", &Level::DEBUG) && !debug.would_enable("hyper::proto", &Level::TRACE));
        // Asked for by name, more specifically than the clamp: still under it.
        let named = filter("info,rmcp::service=trace,hyper_util=trace,lambda_runtime_api_client=trace");
        assert!(!named.would_enable("rmcp::service", &Level::INFO) && named.would_enable("rmcp::service", &Level::WARN));
        assert!(named.would_enable("hyper_util::client", &Level::DEBUG) && !named.would_enable("hyper_util::client", &Level::TRACE));
        assert!(!named.would_enable("lambda_runtime_api_client", &Level::TRACE));
        assert!(!named.would_enable("mcp_aws", &Level::DEBUG), "the default is kept");
        // A target asked for below its ceiling stays there.
        assert!(!filter("debug,hyper=warn").would_enable("hyper::proto", &Level::INFO));
    }

    /// What the subscriber [`init`] installs writes, at `requested`, of
    /// one event per level (and rmcp's debug, which stays out).
    fn written(format: LogFormat, requested: &str) -> String {
        let buffer = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
        let sink = buffer.clone();
        let writer = move || Sink(sink.clone());
        tracing::subscriber::with_default(subscriber(format, requested, writer), || {
            tracing::trace!(target: "mcp_stateless::edge", "a trace line");
            tracing::debug!(target: "mcp_stateless::edge", "a debug line");
            tracing::info!(target: "mcp_stateless::edge", "an info line");
            tracing::debug!(target: "rmcp::service", "rmcp's debug line");
            tracing::debug!(target: "aws_smithy_runtime::client", "the SDK's debug line");
        });
        let bytes = buffer.lock().unwrap().clone();
        String::from_utf8(bytes).unwrap()
    }

    struct Sink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_installed_subscriber_writes_the_level_requested_in_both_formats() {
        for format in [LogFormat::Text, LogFormat::Json] {
            let debug = written(format, "debug");
            assert!(debug.contains("a debug line") && debug.contains("an info line"), "{format:?}: {debug}");
            assert!(!debug.contains("a trace line") && !debug.contains("rmcp's debug line"), "{format:?}: {debug}");
            assert!(debug.contains("the SDK's debug line"), "{format:?}: {debug}");
            let info = written(format, "info");
            assert!(info.contains("an info line") && !info.contains("a debug line"), "{format:?}: {info}");
            assert!(!info.contains("the SDK's debug line"), "{format:?}: {info}");
            assert!(written(format, "trace").contains("a trace line"), "{format:?}");
        }
    }
}
