//! Wall-clock seconds, injectable so tests can move time (expiry of sealed
//! state and of handles).

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{SystemTime, UNIX_EPOCH},
};

/// Where the machinery reads the time (expiry of sealed state, handles,
/// tasks and key sets), so tests can substitute a [`ManualClock`].
pub trait Clock: Send + Sync {
    /// Seconds since the Unix epoch.
    fn now(&self) -> u64;

    /// Milliseconds since the Unix epoch, for task timestamps.
    fn now_ms(&self) -> u64 {
        self.now() * 1_000
    }
}

/// The system's wall clock; a clock set before 1970 reads as zero.
#[allow(clippy::exhaustive_structs, reason = "a unit struct, constructed by its name; it has nothing to add")]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
    }

    fn now_ms(&self) -> u64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
    }
}

/// A clock tests set and advance by hand.
#[derive(Clone, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    /// A clock standing at `seconds` since the Unix epoch.
    pub fn at(seconds: u64) -> Self {
        Self(Arc::new(AtomicU64::new(seconds)))
    }

    /// Moves this clock, and every clone of it, `seconds` ahead.
    pub fn advance(&self, seconds: u64) {
        self.0.fetch_add(seconds, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}
