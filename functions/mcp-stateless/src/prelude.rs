//! One import path for tool authors: everything a tool, a task tool, a
//! prompt, a resource or a server's wiring names from this crate,
//! whichever module it lives in. `use mcp_stateless::prelude::*;` or name
//! what you use.

pub use crate::{
    handles::{
        Change, HandleKind, HandleRecord,
        access::{HandleFailure, Handles},
        resource::{HandleResource, HandleResources},
    },
    protocol::{
        context::{CallContext, Principal},
        elicitation::{
            ElicitationReply, ask_one, checked_reply, elicitation_reply, form_request, read_elicitation, require_form_elicitation,
        },
        report::Reporter,
    },
    sealed::mrtr::{RequestStates, StateScope},
    server::{AskingPrompt, Dependencies, FixedResource, Registry, ResourceReader, ResourceRequest, Resources, TemplatedResource},
    subscriptions::{ListKind, Subscriptions},
    tasks::{TaskRun, TaskStep, TaskSupport, TaskTool, TaskTools, Tasks},
};
