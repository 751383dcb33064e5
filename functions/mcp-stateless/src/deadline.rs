//! When an invocation must have answered, and the one rule for stopping
//! short of it: the edge's calls and streams, and the worker's task runs,
//! all cut a margin before it.

use std::time::{Duration, SystemTime};

use tokio::time::Instant;

/// The moment an invocation must have answered (Lambda's deadline), on this
/// process's monotonic clock (tokio's, so tests with paused time move it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Deadline(Instant);

impl Deadline {
    /// At `instant`.
    pub fn at(instant: Instant) -> Self {
        Self(instant)
    }

    /// `left` from now.
    pub fn after(left: Duration) -> Self {
        Self(Instant::now() + left)
    }

    /// Lambda's deadline (epoch milliseconds) on this process's clock. One
    /// already past is no deadline: an invocation starts before its
    /// deadline, and emulators send other values (`cargo lambda watch`
    /// sends the timeout itself, 600000).
    pub fn from_epoch_ms(epoch_ms: u64) -> Option<Self> {
        let at = SystemTime::UNIX_EPOCH + Duration::from_millis(epoch_ms);
        at.duration_since(SystemTime::now()).ok().map(Self::after)
    }

    /// When to stop, `margin` before the deadline; the deadline itself
    /// where the clock cannot go back that far.
    pub fn cut(self, margin: Duration) -> Instant {
        self.0.checked_sub(margin).unwrap_or(self.0)
    }

    /// How long is left before the cut, `margin` before the deadline
    /// (zero once it has passed).
    pub fn remaining(self, margin: Duration) -> Duration {
        self.cut(margin).saturating_duration_since(Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_already_past_is_none() {
        assert!(Deadline::from_epoch_ms(600_000).is_none(), "cargo lambda watch's relative value");
        let in_a_minute = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap() + Duration::from_secs(60);
        let left = Deadline::from_epoch_ms(in_a_minute.as_millis() as u64).unwrap().remaining(Duration::ZERO);
        assert!(left > Duration::from_secs(50) && left <= Duration::from_secs(60), "{left:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn the_cut_is_a_margin_before_the_deadline() {
        let deadline = Deadline::after(Duration::from_secs(10));
        assert_eq!(deadline.remaining(Duration::from_secs(2)), Duration::from_secs(8));
        assert_eq!(deadline.cut(Duration::from_secs(2)), Instant::now() + Duration::from_secs(8));
        assert_eq!(deadline.remaining(Duration::from_secs(20)), Duration::ZERO, "past: nothing left");
    }
}
