//! What can go wrong in a store, whatever backs it (DynamoDB or memory),
//! the retry pace of compare-and-set loops, and how stored keys and ids
//! spell bytes.

use std::time::Duration;

/// Lowercase hex, as keys, hashes and ids are written.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Clients never see the detail: the edge answers -32603 and logs it.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum StoreError {
    /// Unreachable, throttled or failing after the SDK's own retries.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// An item that does not have the shape this crate writes.
    #[error("stored item is corrupt: {0}")]
    Corrupt(String),
}

/// The in-memory stores' map, behind one lock.
pub struct LockedMap<T>(std::sync::Mutex<std::collections::HashMap<String, T>>);

impl<T> Default for LockedMap<T> {
    fn default() -> Self {
        Self(Default::default())
    }
}

impl<T> LockedMap<T> {
    pub fn with<R>(&self, f: impl FnOnce(&mut std::collections::HashMap<String, T>) -> R) -> Result<R, StoreError> {
        let mut items = self.0.lock().map_err(|_| StoreError::Unavailable("store lock poisoned".into()))?;
        Ok(f(&mut items))
    }
}

/// The pace of a compare-and-set loop that lost to a concurrent writer:
/// exponential backoff with random jitter (so writers that collided do not
/// collide again in step), no sleep after the last attempt, and every
/// retry counted in the request's metrics.
pub struct Backoff {
    attempts_left: u32,
    delay: Duration,
}

impl Backoff {
    pub fn new(max_attempts: u32, first_delay: Duration) -> Self {
        Self { attempts_left: max_attempts.saturating_sub(1), delay: first_delay }
    }

    /// Waits before the next attempt, or answers false when none is left
    /// (without waiting).
    pub async fn retry(&mut self) -> bool {
        if self.attempts_left == 0 {
            return false;
        }
        self.attempts_left -= 1;
        crate::metrics::count(crate::metrics::Counter::StoreRetries);
        let jitter = self.delay.mul_f64(f64::from(crate::random::bytes::<1>()[0]) / 255.0);
        tokio::time::sleep(self.delay + jitter).await;
        self.delay *= 2;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn no_sleep_after_the_last_attempt_and_jittered_waits() {
        let started = tokio::time::Instant::now();
        let mut backoff = Backoff::new(4, Duration::from_millis(10));
        let mut retries = 0;
        while backoff.retry().await {
            retries += 1;
        }
        assert_eq!(retries, 3, "four attempts: three waits between them");
        // 10 + 20 + 40 ms, each plus up to 100 % jitter; nothing after the last.
        let waited = started.elapsed();
        assert!(waited >= Duration::from_millis(70) && waited <= Duration::from_millis(140), "{waited:?}");
        assert!(!backoff.retry().await, "still none left");
        assert_eq!(started.elapsed(), waited, "and no wait for it");
    }
}
