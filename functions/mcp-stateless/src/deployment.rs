//! The deployment, decided once at start by the settings (`settings.rs`),
//! each decision named: where requests come in ([`Entry`]), how answers
//! leave ([`Transport`]), which runtime runs the process ([`Runtime`]),
//! how it logs ([`LogFormat`]), which hosts are its own ([`HostRule`]) and
//! whether its state must be shared between instances. [`Mode`], Lambda or
//! local, only chooses their defaults ([`Deployment::defaults`],
//! [`Transport::default_in`]): nothing after the start asks it. Below
//! every other module, so that none has to reach up into the edge for them.
//!
//! These enums are exhaustive on purpose: a new way in (a container's
//! port, another event source) is a variant here, a file in the edge that
//! serves it and the settings' branch that chooses it, and the compiler
//! then names every start that has to serve it too.

/// Where the process runs. It chooses the defaults of the decisions below
/// and nothing else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(
    clippy::exhaustive_enums,
    reason = "exhaustive on purpose: a new variant must be served or refused by every start, and the compiler names them (docs/transports.md, Another way in)"
)]
pub enum Mode {
    /// Lambda events, through the Lambda Runtime API
    /// (`AWS_LAMBDA_RUNTIME_API` is set).
    Lambda,
    /// The local HTTP server (`cargo run`).
    Local,
}

/// How responses leave the function: whole (API Gateway HTTP API, which
/// cannot stream) or as they are written (a REST API with response
/// streaming, a Function URL, the local server). Chosen at deploy time
/// (`MCP_TRANSPORT`), read once at start (`settings.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(
    clippy::exhaustive_enums,
    reason = "exhaustive on purpose: a new variant must be served or refused by every start, and the compiler names them (docs/transports.md, Another way in)"
)]
pub enum Transport {
    /// Each answer leaves whole, once the handler has finished.
    Buffered,
    /// Answers leave as they are written: progress and log messages on
    /// the way, and `subscriptions/listen` streams held open.
    Streaming,
}

impl Transport {
    /// Buffered in Lambda, as the template's default API (an HTTP API)
    /// needs; streaming locally.
    pub fn default_in(mode: Mode) -> Self {
        match mode {
            Mode::Lambda => Self::Buffered,
            Mode::Local => Self::Streaming,
        }
    }
}

/// Where requests come in.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(
    clippy::exhaustive_enums,
    reason = "exhaustive on purpose: a new variant must be served or refused by every start, and the compiler names them (docs/transports.md, Another way in)"
)]
pub enum Entry {
    /// Events from the Lambda Runtime API, through `lambda_http`.
    Lambda,
    /// An HTTP port of the process's own, at `addr`.
    Local {
        /// The address to listen on (`host:port`).
        addr: String,
    },
}

/// The Tokio runtime the process runs on ([`crate::block_on`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Runtime {
    /// One thread: Lambda hands a sandbox one event at a time, so worker
    /// threads would cost start-up and memory for nothing.
    OneThread,
    /// A worker thread per core, for a server that takes concurrent
    /// requests.
    PerCore,
}

/// How the process writes its log (to stderr, either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LogFormat {
    /// One JSON object a line, without a time (CloudWatch Logs stamps
    /// each line), and each request's record in CloudWatch's embedded
    /// metric format, which makes the per-method metrics.
    Json,
    /// Lines for a terminal, the request's record among them.
    Text,
}

/// Which `Host` and `Origin` names are the server's own, beyond those
/// `MCP_ALLOWED_HOSTS` lists (the DNS-rebinding defence).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostRule {
    /// The API's own domain, as the event (not a header) names it, and
    /// the list (custom domains).
    ApiDomain,
    /// The list, or, when it is empty, the loopback names.
    Loopback,
}

/// The decisions a start makes once and hands down.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Deployment {
    /// Where requests come in.
    pub entry: Entry,
    /// The runtime the process runs on.
    pub runtime: Runtime,
    /// How it logs.
    pub log_format: LogFormat,
    /// Which hosts are its own.
    pub host_rule: HostRule,
    /// Whether every instance must see the same state (`requestState`
    /// keys, handles, tasks): where any instance may serve any request,
    /// the in-process stand-ins are refused at start.
    pub shared_state: bool,
}

impl Deployment {
    /// What `mode` chooses, a local server listening on `local_addr`.
    pub fn defaults(mode: Mode, local_addr: impl Into<String>) -> Self {
        match mode {
            Mode::Lambda => Self {
                entry: Entry::Lambda,
                runtime: Runtime::OneThread,
                log_format: LogFormat::Json,
                host_rule: HostRule::ApiDomain,
                shared_state: true,
            },
            Mode::Local => Self {
                entry: Entry::Local { addr: local_addr.into() },
                runtime: Runtime::PerCore,
                log_format: LogFormat::Text,
                host_rule: HostRule::Loopback,
                shared_state: false,
            },
        }
    }

    /// Whether requests come from the Lambda Runtime API (whose
    /// environment the AWS SDK's configuration reads).
    pub fn on_lambda(&self) -> bool {
        self.entry == Entry::Lambda
    }
}
