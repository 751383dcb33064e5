//! The `notifications.taskIds` of a listen request (ext-tasks, "Task
//! Status Notifications"). rmcp's filter has no such field, so the edge
//! reads it from the body before rmcp parses it, hands it to the stream in
//! the request's scope (`protocol::scope::ListenScope::task_ids`), and
//! names it in the acknowledgement rmcp sends.

use serde_json::{Value, json};

use super::MAX_LISTEN_TASK_IDS;
use crate::protocol::context::CallContext;

/// The task ids one listen stream watches.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskIdsFilter(pub Vec<String>);

/// Why a listen request's `taskIds` are refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskIdsRefusal {
    /// Not an array of strings, or too many (-32602).
    Malformed(String),
    /// Named by a client that did not declare the tasks extension (-32021
    /// with these `requiredCapabilities`).
    MissingCapability(Value),
}

impl TaskIdsFilter {
    /// The `notifications.taskIds` of a listen request's `params`: strings,
    /// at most [`MAX_LISTEN_TASK_IDS`], and only from a client that
    /// declared the tasks extension.
    pub fn from_params(params: Option<&Value>, ctx: &CallContext) -> Result<Self, TaskIdsRefusal> {
        let Some(ids) = params.and_then(|p| p.pointer("/notifications/taskIds")) else {
            return Ok(Self::default());
        };
        let ids: Vec<String> = ids
            .as_array()
            .and_then(|ids| ids.iter().map(|id| id.as_str().map(str::to_owned)).collect())
            .ok_or_else(|| TaskIdsRefusal::Malformed("notifications.taskIds must be an array of strings".into()))?;
        if ids.len() > MAX_LISTEN_TASK_IDS {
            return Err(TaskIdsRefusal::Malformed(format!("notifications.taskIds may name at most {MAX_LISTEN_TASK_IDS} tasks")));
        }
        if !ids.is_empty() && !ctx.declares("extensions", Some(rmcp::model::TASKS_EXTENSION_ID)) {
            return Err(TaskIdsRefusal::MissingCapability(json!({"extensions": {rmcp::model::TASKS_EXTENSION_ID: {}}})));
        }
        Ok(Self(ids))
    }

    /// Names the task ids agreed to in `message`, if it is the stream's
    /// acknowledgement (ext-tasks: the acknowledgement echoes the filter).
    /// Whether it was.
    pub fn acknowledge(&self, message: &mut Value) -> bool {
        if message.get("method").and_then(Value::as_str) != Some("notifications/subscriptions/acknowledged") {
            return false;
        }
        if !self.0.is_empty()
            && let Some(filter) = message.pointer_mut("/params/notifications").and_then(Value::as_object_mut)
        {
            filter.insert("taskIds".into(), json!(self.0));
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::context::Principal;

    fn ctx(capabilities: Value) -> CallContext {
        CallContext::with_capabilities(Principal::Anonymous, capabilities)
    }

    #[test]
    fn task_ids_are_strings_bounded_and_need_the_tasks_extension() {
        let tasks = ctx(json!({"extensions": {rmcp::model::TASKS_EXTENSION_ID: {}}}));
        let params = |ids: Value| json!({"notifications": {"taskIds": ids}});
        assert_eq!(TaskIdsFilter::from_params(None, &tasks), Ok(TaskIdsFilter::default()));
        assert_eq!(TaskIdsFilter::from_params(Some(&params(json!(["tsk_a"]))), &tasks), Ok(TaskIdsFilter(vec!["tsk_a".into()])));
        assert!(matches!(TaskIdsFilter::from_params(Some(&params(json!(["a", 1]))), &tasks), Err(TaskIdsRefusal::Malformed(_))));
        let too_many = params(json!(vec!["tsk_a"; MAX_LISTEN_TASK_IDS + 1]));
        assert!(matches!(TaskIdsFilter::from_params(Some(&too_many), &tasks), Err(TaskIdsRefusal::Malformed(_))));
        assert!(matches!(
            TaskIdsFilter::from_params(Some(&params(json!(["tsk_a"]))), &ctx(json!({}))),
            Err(TaskIdsRefusal::MissingCapability(_))
        ));
        // No ids asks for nothing, so needs nothing.
        assert_eq!(TaskIdsFilter::from_params(Some(&params(json!([]))), &ctx(json!({}))), Ok(TaskIdsFilter::default()));
    }

    #[test]
    fn the_acknowledgement_names_the_ids_and_nothing_else_is_touched() {
        let filter = TaskIdsFilter(vec!["tsk_a".into()]);
        let mut ack =
            json!({"method": "notifications/subscriptions/acknowledged", "params": {"notifications": {"toolsListChanged": true}}});
        assert!(filter.acknowledge(&mut ack));
        assert_eq!(ack["params"]["notifications"]["taskIds"], json!(["tsk_a"]));
        let mut other = json!({"method": "notifications/tools/list_changed", "params": {"notifications": {}}});
        assert!(!filter.acknowledge(&mut other));
        assert!(other["params"]["notifications"].get("taskIds").is_none());
    }
}
