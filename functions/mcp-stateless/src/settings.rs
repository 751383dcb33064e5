//! Configuration, read once at start: every variable the machinery takes
//! (the names are those of `template.yaml` and `docs/reference.md`), each
//! with its default and its check, into one typed value the start hands
//! down. A bad value stops the start with a message that names the
//! variable and what it accepts; nothing else in this crate reads the
//! environment. The AWS adapters' own names are `mcp-aws`'s settings.
//!
//! Whether the Lambda Runtime API is there ([`detect_mode`]) chooses the
//! defaults of the deployment's decisions (`deployment.rs`); the settings
//! hand down the decisions, never the mode.
//!
//! Whether answers stream, and so whether `subscriptions/listen` is
//! served, is decided here once: the edge's transport and the listen
//! policy come from the same [`Transport`].

use std::{str::FromStr, time::Duration};

use crate::{
    deployment::{Deployment, Mode, Transport},
    edge::{
        bearer::BearerPolicy,
        local::{DEFAULT_LOCAL_ADDR, DEV_PRINCIPAL_BEYOND_LOOPBACK},
        policy::{DEFAULT_MAX_BODY_BYTES, EdgePolicy},
        protected_resource::ResourceMetadata,
    },
    logging,
    server::Dependencies,
    subscriptions::ListenPolicy,
    tasks::{TaskPolicy, TaskSettings},
};

/// What the machinery was configured with.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Settings {
    /// The deployment's decisions, as Lambda (`AWS_LAMBDA_RUNTIME_API` is
    /// set) or the local server chooses them. The local server's address:
    /// `MCP_LOCAL_ADDR`; else `127.0.0.1:$PORT` when `PORT` is set (as
    /// process managers and benchmark harnesses set it); else
    /// [`DEFAULT_LOCAL_ADDR`]. Loopback unless `MCP_LOCAL_ADDR` says otherwise.
    pub deployment: Deployment,
    /// `MCP_TRANSPORT` (`buffered` or `streaming`; unset: buffered in
    /// Lambda, the template's default API, streaming locally) as
    /// `edge.transport`, and `MCP_ALLOWED_HOSTS`, `MCP_ALLOWED_ORIGINS`,
    /// `MCP_MAX_BODY_BYTES`.
    pub edge: EdgePolicy,
    /// `MCP_LISTEN` (`on`, the default, or `off`), `MCP_LISTEN_SECONDS`,
    /// `MCP_FEED_POLL_MS`, `MCP_LISTEN_MAX_PER_OWNER`;
    /// enabled where answers stream.
    pub listen: ListenPolicy,
    /// `MCP_WORKER_TIMEOUT_SECONDS` and the `MCP_TASK_*` variables.
    pub tasks: TaskPolicy,
    /// `MCP_JWT_*`: tokens verified in the function; `None` unless
    /// `MCP_JWT_ISSUER` is set.
    pub bearer: Option<BearerPolicy>,
    /// `MCP_AUTHORIZATION_SERVERS`, `MCP_SCOPES_SUPPORTED`, `MCP_RESOURCE`,
    /// `MCP_BASE_PATH`: the protected-resource metadata.
    pub resource_metadata: ResourceMetadata,
    /// `MCP_LOCAL_ALLOW_REMOTE=1`: the local server may listen beyond
    /// loopback, where anyone reaching it can claim any principal.
    pub allow_remote: bool,
    /// `MCP_LOCAL_AUTHORIZATION_SERVER`: the local authorization server the
    /// local server passes its paths to (same address, as on AWS).
    pub local_authorization: Option<String>,
    /// `MCP_LOG_LEVEL`, else `RUST_LOG` where this filter can read it, else `info`.
    pub log_level: String,
    /// `MCP_METRICS_NAMESPACE`: `MCP` unless set (the template sets the stack name).
    pub metrics_namespace: String,
}

impl Settings {
    /// `deps` under the task and listen policies these settings read.
    pub fn configure(&self, deps: Dependencies) -> Dependencies {
        Dependencies {
            tasks: deps.tasks.with_policy(self.tasks.clone()),
            subscriptions: deps.subscriptions.with_policy(self.listen.clone()),
            ..deps
        }
    }

    /// This process's settings: its mode, and its environment.
    pub fn from_env() -> Result<Self, String> {
        Self::read(detect_mode(), &Variables::new(|name| std::env::var(name).ok()))
    }

    /// What nothing set gives in `mode`.
    pub fn defaults(mode: Mode) -> Self {
        Self::read(mode, &Variables::new(|_| None)).expect("the defaults are valid")
    }

    /// The settings `variables` give in `mode`.
    pub fn read(mode: Mode, variables: &Variables<impl Fn(&str) -> Option<String>>) -> Result<Self, String> {
        // `PORT` is read only where it can matter: a local server whose
        // address is not given outright (a stray one never stops a Lambda).
        let local_addr = match variables.text("MCP_LOCAL_ADDR") {
            Some(addr) => addr,
            None if mode == Mode::Local => match variables.number::<u16>("PORT", "a port number")? {
                Some(port) => format!("127.0.0.1:{port}"),
                None => DEFAULT_LOCAL_ADDR.to_owned(),
            },
            None => DEFAULT_LOCAL_ADDR.to_owned(),
        };
        let deployment = Deployment::defaults(mode, local_addr);
        let transport = match variables.text("MCP_TRANSPORT").as_deref() {
            None => Transport::default_in(mode),
            Some("buffered") => Transport::Buffered,
            Some("streaming") => Transport::Streaming,
            Some(other) => return Err(format!("MCP_TRANSPORT must be buffered or streaming, not {other:?}")),
        };
        let hostnames = |name| variables.list(name).into_iter().map(|host| host.to_ascii_lowercase()).collect();
        let edge = EdgePolicy {
            host_rule: deployment.host_rule,
            log_format: deployment.log_format,
            allowed_hosts: hostnames("MCP_ALLOWED_HOSTS"),
            allowed_origins: hostnames("MCP_ALLOWED_ORIGINS"),
            max_body_bytes: variables.number("MCP_MAX_BODY_BYTES", "a byte count")?.unwrap_or(DEFAULT_MAX_BODY_BYTES),
            transport,
        };
        // Listen streams need answers that stream, and a deployment may turn
        // them off there too: each open stream holds an invocation for its
        // lifetime, which clients may open on their own (docs/reference.md).
        let listen_on = match variables.text("MCP_LISTEN").as_deref() {
            None | Some("on") => true,
            Some("off") => false,
            Some(other) => return Err(format!("MCP_LISTEN must be on or off, not {other:?}")),
        };
        let defaults = ListenPolicy::new(transport == Transport::Streaming && listen_on);
        let listen = ListenPolicy {
            lifetime: variables.seconds("MCP_LISTEN_SECONDS")?.unwrap_or(defaults.lifetime),
            // Shorter polls would only cost reads.
            poll_interval: variables
                .number::<u64>("MCP_FEED_POLL_MS", "milliseconds")?
                .map_or(defaults.poll_interval, |ms| Duration::from_millis(ms.max(10))),
            max_per_owner: variables.count("MCP_LISTEN_MAX_PER_OWNER", "a count of streams")?.unwrap_or(defaults.max_per_owner),
            ..defaults
        };
        let tasks = TaskPolicy::from_settings(&TaskSettings {
            worker_timeout: variables.seconds("MCP_WORKER_TIMEOUT_SECONDS")?,
            max_attempts: variables.count("MCP_TASK_MAX_ATTEMPTS", "a count of attempts")?,
            lease: variables.seconds("MCP_TASK_LEASE_SECONDS")?,
            start_deadline: variables.seconds("MCP_TASK_START_DEADLINE_SECONDS")?,
            ttl: variables.seconds("MCP_TASK_TTL_SECONDS")?,
            max_per_owner: variables.count("MCP_TASK_MAX_PER_OWNER", "a count of tasks")?,
        });
        let bearer = match variables.text("MCP_JWT_ISSUER") {
            None => None,
            Some(issuer) => {
                let policy = BearerPolicy {
                    issuer,
                    audiences: variables.list("MCP_JWT_AUDIENCE"),
                    scopes: variables.list("MCP_JWT_SCOPES"),
                    jwks_url: variables.text("MCP_JWT_JWKS_URL"),
                };
                policy.check()?;
                Some(policy)
            }
        };
        let resource_metadata = ResourceMetadata {
            authorization_servers: variables.list("MCP_AUTHORIZATION_SERVERS"),
            scopes_supported: variables.list("MCP_SCOPES_SUPPORTED"),
            resource: variables.text("MCP_RESOURCE"),
            base_path: variables.text("MCP_BASE_PATH").unwrap_or_default().trim_end_matches('/').to_owned(),
        };
        let allow_remote = match variables.text(DEV_PRINCIPAL_BEYOND_LOOPBACK).as_deref() {
            None | Some("0") => false,
            Some("1") => true,
            Some(other) => return Err(format!("{DEV_PRINCIPAL_BEYOND_LOOPBACK} must be 1 or 0, not {other:?}")),
        };
        // RUST_LOG is every Rust tool's, often in a whole shell's
        // environment, in forms this filter does not take: it is a
        // fallback, and one this cannot read is no reason to stop.
        let log_level = match variables.text("MCP_LOG_LEVEL") {
            Some(level) if logging::is_valid(&level) => level,
            Some(other) => {
                return Err(format!(
                    "MCP_LOG_LEVEL must be a level (error, warn, info, debug, trace) or target=level directives, not {other:?}"
                ));
            }
            None => variables.text("RUST_LOG").filter(|level| logging::is_valid(level)).unwrap_or_else(|| "info".to_owned()),
        };
        Ok(Self {
            deployment,
            edge,
            listen,
            tasks,
            bearer,
            resource_metadata,
            allow_remote,
            local_authorization: variables.text(crate::edge::authorization_forward::LOCAL_AUTHORIZATION_SERVER),
            log_level,
            metrics_namespace: variables.text("MCP_METRICS_NAMESPACE").unwrap_or_else(|| "MCP".to_owned()),
        })
    }
}

/// Lambda when the Lambda Runtime API is present, the local server otherwise.
pub fn detect_mode() -> Mode {
    if std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some() { Mode::Lambda } else { Mode::Local }
}

/// Variables as the settings read them: trimmed, and empty as unset (a
/// template's `""` for "not in this deployment").
pub struct Variables<F>(F);

impl<F: Fn(&str) -> Option<String>> Variables<F> {
    /// Over any source of variables: the environment, or a test's map.
    pub fn new(lookup: F) -> Self {
        Self(lookup)
    }

    /// The value of `name`, trimmed; `None` when unset or blank.
    pub fn text(&self, name: &str) -> Option<String> {
        (self.0)(name).map(|value| value.trim().to_owned()).filter(|value| !value.is_empty())
    }

    /// A comma-separated list, its entries trimmed, empty ones dropped.
    pub fn list(&self, name: &str) -> Vec<String> {
        self.text(name).map(|v| v.split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect()).unwrap_or_default()
    }

    /// A non-negative whole number, `accepts` saying what it counts.
    pub fn number<T: FromStr>(&self, name: &str, accepts: &str) -> Result<Option<T>, String> {
        self.text(name)
            .map(|value| value.parse().map_err(|_| format!("{name} must be {accepts} (a whole number), not {value:?}")))
            .transpose()
    }

    /// A count, as large as it likes: one past what a `u32` holds is no limit.
    pub fn count(&self, name: &str, accepts: &str) -> Result<Option<u32>, String> {
        Ok(self.number::<u64>(name, accepts)?.map(|n| n.min(u64::from(u32::MAX)) as u32))
    }

    /// A whole number of seconds.
    pub fn seconds(&self, name: &str) -> Result<Option<Duration>, String> {
        Ok(self.number(name, "a number of seconds")?.map(Duration::from_secs))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::deployment::{Entry, HostRule, LogFormat, Runtime};

    fn read(mode: Mode, pairs: &[(&str, &str)]) -> Result<Settings, String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        Settings::read(mode, &Variables::new(move |name| map.get(name).cloned()))
    }

    #[test]
    fn the_mode_chooses_each_decision_and_the_settings_hand_them_down() {
        let lambda = Settings::defaults(Mode::Lambda);
        assert_eq!(lambda.deployment.entry, Entry::Lambda);
        assert_eq!(lambda.deployment.runtime, Runtime::OneThread, "Lambda hands a sandbox one event at a time");
        assert!(lambda.deployment.shared_state, "any instance serves any request");
        assert_eq!((lambda.edge.host_rule, lambda.edge.log_format), (HostRule::ApiDomain, LogFormat::Json));
        let local = read(Mode::Local, &[("MCP_LOCAL_ADDR", "127.0.0.1:9")]).unwrap();
        assert_eq!(local.deployment.entry, Entry::Local { addr: "127.0.0.1:9".into() });
        assert_eq!(local.deployment.runtime, Runtime::PerCore);
        assert!(!local.deployment.shared_state);
        assert_eq!((local.edge.host_rule, local.edge.log_format), (HostRule::Loopback, LogFormat::Text));
        assert_eq!(
            (local.edge.host_rule, local.edge.log_format),
            (local.deployment.host_rule, local.deployment.log_format),
            "the edge is told what the deployment decided"
        );
    }

    #[test]
    fn streaming_and_listen_are_decided_once() {
        for (mode, pairs, streams) in [
            (Mode::Local, &[][..], true),
            (Mode::Lambda, &[][..], false),
            (Mode::Lambda, &[("MCP_TRANSPORT", "streaming")][..], true),
            (Mode::Local, &[("MCP_TRANSPORT", " buffered ")][..], false),
            (Mode::Lambda, &[("MCP_TRANSPORT", "streaming"), ("MCP_LISTEN", "off")][..], false),
            (Mode::Local, &[("MCP_LISTEN", "on")][..], true),
        ] {
            let settings = read(mode, pairs).unwrap();
            let off = pairs.contains(&("MCP_LISTEN", "off"));
            assert_eq!(settings.edge.transport == Transport::Streaming, streams || off, "{mode:?} {pairs:?}");
            assert_eq!(settings.listen.enabled, streams, "listen is served where answers stream, unless turned off");
        }
    }

    #[test]
    fn a_bad_value_stops_the_start_naming_the_variable_and_what_it_accepts() {
        for (name, value, accepts) in [
            ("MCP_TRANSPORT", "stream", "buffered or streaming"),
            ("MCP_MAX_BODY_BYTES", "1MB", "a byte count"),
            ("MCP_LISTEN_SECONDS", "five", "a number of seconds"),
            ("MCP_LISTEN", "yes", "on or off"),
            ("MCP_FEED_POLL_MS", "-1", "milliseconds"),
            ("MCP_LISTEN_MAX_PER_OWNER", "lots", "a count of streams"),
            ("MCP_WORKER_TIMEOUT_SECONDS", "300s", "a number of seconds"),
            ("MCP_TASK_MAX_ATTEMPTS", "3.5", "a count of attempts"),
            ("MCP_TASK_LEASE_SECONDS", "x", "a number of seconds"),
            ("MCP_TASK_START_DEADLINE_SECONDS", "x", "a number of seconds"),
            ("MCP_TASK_TTL_SECONDS", "1h", "a number of seconds"),
            ("MCP_TASK_MAX_PER_OWNER", "many", "a count of tasks"),
            ("PORT", "70000", "a port number"),
            ("MCP_LOCAL_ALLOW_REMOTE", "yes", "1 or 0"),
            ("MCP_LOG_LEVEL", "loud", "a level"),
        ] {
            let error = read(Mode::Local, &[(name, value)]).unwrap_err();
            assert!(error.starts_with(name) && error.contains(accepts) && error.contains(value), "{name}={value}: {error}");
        }
        let bearer = read(Mode::Lambda, &[("MCP_JWT_ISSUER", "https://issuer.example.com")]).unwrap_err();
        assert!(bearer.contains("MCP_JWT_AUDIENCE"), "{bearer}");
        assert!(read(Mode::Lambda, &[("PORT", "not-a-port")]).is_ok(), "PORT means nothing to a Lambda");
        assert_eq!(
            read(Mode::Local, &[("RUST_LOG", "my_crate")]).unwrap().log_level,
            "info",
            "another tool's RUST_LOG is no reason to stop"
        );
        assert!(read(Mode::Local, &[("PORT", "x"), ("MCP_LOCAL_ADDR", "127.0.0.1:9")]).is_ok(), "nor beside MCP_LOCAL_ADDR");
    }

    #[test]
    fn values_are_read_as_the_template_writes_them() {
        let settings = read(
            Mode::Lambda,
            &[
                ("MCP_ALLOWED_HOSTS", " MCP.Example.com, ,api.example.com "),
                ("MCP_MAX_BODY_BYTES", "2048"),
                ("MCP_LISTEN_SECONDS", "60"),
                ("MCP_FEED_POLL_MS", "1"),
                ("MCP_TASK_MAX_PER_OWNER", "7"),
                ("MCP_LISTEN_MAX_PER_OWNER", "99999999999"),
                ("MCP_LOG_LEVEL", "debug,hyper=info"),
                ("MCP_JWT_ISSUER", ""),
                ("MCP_BASE_PATH", "/api/"),
            ],
        )
        .unwrap();
        assert_eq!(settings.edge.allowed_hosts, ["mcp.example.com", "api.example.com"]);
        assert_eq!(settings.edge.max_body_bytes, 2048);
        assert_eq!(settings.listen.lifetime, Duration::from_secs(60));
        assert_eq!(settings.listen.poll_interval, Duration::from_millis(10), "polls are at least 10 ms apart");
        assert_eq!(settings.tasks.max_per_owner, 7);
        assert_eq!(settings.listen.max_per_owner, u32::MAX, "a count past u32 is no limit, as before");
        assert_eq!(settings.log_level, "debug,hyper=info");
        assert!(settings.bearer.is_none(), "an empty issuer is no issuer");
        assert_eq!(settings.resource_metadata.base_path, "/api");
        assert_eq!(read(Mode::Local, &[("PORT", "8080")]).unwrap().deployment.entry, Entry::Local { addr: "127.0.0.1:8080".into() });
        let defaults = Settings::defaults(Mode::Local);
        assert_eq!(defaults.deployment.entry, Entry::Local { addr: DEFAULT_LOCAL_ADDR.into() });
        assert_eq!((defaults.log_level.as_str(), defaults.metrics_namespace.as_str()), ("info", "MCP"));
        assert_eq!(defaults.tasks, TaskPolicy::default());
    }
}
