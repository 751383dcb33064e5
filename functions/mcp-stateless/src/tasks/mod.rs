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
