//! Tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663): tool
//! calls that outlive one invocation. The request function writes a durable
//! record and enqueues it; a worker function, fed by the queue, runs the
//! tool and writes the outcome; any instance answers `tasks/get`,
//! `tasks/update` and `tasks/cancel` from the record.
//!
//! - [`tool`]: what a tool author writes (`TaskTool`, `TaskRun`, `TaskStep`);
//! - [`record`]: the stored task and its wire shapes;
//! - [`store`], [`queue`]: the ports, with in-memory implementations;
//! - [`backend`]: store, queue and policy, joined to a function's tools;
//! - [`timings`]: lifetime, lease, start deadline and retries, derived from
//!   the worker timeout and attempts in one place;
//! - [`service`]: `Tasks`, the request side;
//! - [`worker`]: `TaskWorker`, the worker side.

pub mod backend;
pub mod policy;
pub mod queue;
pub mod record;
pub mod service;
pub mod store;
pub mod timings;
pub mod tool;
pub mod worker;

#[cfg(test)]
mod tests;

pub use backend::TaskBackend;
pub use policy::{TaskPolicy, TaskSettings};
pub use service::Tasks;
pub use tool::{TaskRun, TaskStep, TaskSupport, TaskTool, TaskTools};
pub use worker::{Disposition, TaskWorker};

/// The `ServerHandler` methods of the tasks extension (`tasks/get`,
/// `tasks/update`, `tasks/cancel`), answered by the server's [`Tasks`]
/// field: write `mcp_stateless::task_methods!(tasks);` inside
/// `impl ServerHandler for YourServer`. rmcp gates them on the client's
/// declared capability and checks `Mcp-Name` before they run.
#[macro_export]
macro_rules! task_methods {
    ($field:ident) => {
        async fn get_task(
            &self,
            request: ::rmcp::model::GetTaskParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> Result<::rmcp::model::GetTaskResult, ::rmcp::ErrorData> {
            self.$field.get(&$crate::CallContext::of(&context)?, &request.task_id).await
        }

        async fn update_task(
            &self,
            request: ::rmcp::model::UpdateTaskParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> Result<(), ::rmcp::ErrorData> {
            self.$field.update(&$crate::CallContext::of(&context)?, &request).await
        }

        async fn cancel_task(
            &self,
            request: ::rmcp::model::CancelTaskParams,
            context: ::rmcp::service::RequestContext<::rmcp::RoleServer>,
        ) -> Result<(), ::rmcp::ErrorData> {
            self.$field.cancel(&$crate::CallContext::of(&context)?, &request.task_id).await
        }
    };
}
