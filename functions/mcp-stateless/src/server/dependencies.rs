//! What a function's tools are built from: one value per port, made once
//! per cold start, in memory here or on AWS (`mcp_aws::Dependencies`).

use std::sync::Arc;

use crate::{
    clock::{Clock, SystemClock},
    handles::{access::Handles, memory::InMemoryHandleStore},
    sealed::{
        mrtr::RequestStates,
        redemption::InMemoryLedger,
        request_state::{EnvelopeSealer, InProcessKey},
    },
    subscriptions, tasks,
};

/// What a function's tools are built from, once per cold start
/// ([`Dependencies::new`]; it grows with the ports).
#[derive(Clone)]
#[non_exhaustive]
pub struct Dependencies {
    /// `requestState` sealing and opening, for multi-round tools.
    pub request_states: RequestStates,
    /// Owner-bound handles, for state that spans calls.
    pub handles: Handles,
    /// Task storage and dispatch; `tasks.with_tools(...)` gives the
    /// request side for a function's task tools.
    pub tasks: tasks::TaskBackend,
    /// `subscriptions/listen` streams and the change feed they read.
    pub subscriptions: subscriptions::Subscriptions,
}

impl Dependencies {
    /// From one value per port. (2025-era sessions, the `legacy`
    /// feature's, are sealed as `request_states` seals and kept where
    /// `handles` are: the edge makes them, `McpEndpoint::with_dependencies`.)
    pub fn new(
        request_states: RequestStates,
        handles: Handles,
        tasks: tasks::TaskBackend,
        subscriptions: subscriptions::Subscriptions,
    ) -> Self {
        Self { request_states, handles, tasks, subscriptions }
    }

    /// Zero-setup defaults: `requestState` sealed under a random in-process
    /// key (see [`InProcessKey`] for what that does not give you), handles,
    /// single-use records and tasks in memory, task work in this process.
    pub fn in_process() -> Self {
        Self::in_process_with_clock(Arc::new(SystemClock))
    }

    /// The same, on `clock`. States are sealed for the audience `local`:
    /// the key is this process's alone, so no other deployment could open
    /// them anyway.
    pub fn in_process_with_clock(clock: Arc<dyn Clock>) -> Self {
        let audience = "local";
        let sealer = Arc::new(EnvelopeSealer::new(InProcessKey::generate()).with_clock(clock.clone()));
        let store = Arc::new(InMemoryHandleStore::default());
        Self::new(
            RequestStates::new(sealer, Arc::new(InMemoryLedger::default()), clock.clone(), audience),
            Handles::new(store, clock.clone()),
            tasks::TaskBackend::in_process(clock.clone()),
            subscriptions::Subscriptions::in_process(clock),
        )
    }
}
