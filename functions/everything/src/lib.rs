//! Fixtures for the official MCP conformance suite at revision 2026-07-28,
//! and at 2025-11-25 for 2025-era clients (`legacy_tools.rs`);
//! `SCENARIOS.md` beside the suite's runner lists what each one must do.
//! One file per capability, as rmcp's own examples are laid out.

// Sampling and roots are deprecated by SEP-2577 but still part of 2026-07-28,
// and the suite's MRTR fixtures ask for both.
#![allow(deprecated)]

mod content_tools;
mod legacy_tools;
mod listen_tools;
mod mrtr_tools;
mod prompts;
mod resources;
mod schema_tools;
mod server;
mod task_tools;

pub use server::EverythingServer;
pub use task_tools::task_tools;

/// A 1x1 red PNG.
pub(crate) const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
