//! What can go wrong in a store, whatever backs it (DynamoDB or memory),
//! the retry pace of compare-and-set loops, how owner-bound items (handles,
//! tasks) are named and keyed, and how stored keys and ids spell bytes.

use std::time::Duration;

use aws_lc_rs::digest::{SHA256, digest};
use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};

use crate::random;

const ID_RANDOM_BYTES: usize = 16;
/// base64url of 16 bytes, unpadded.
const ID_RANDOM_CHARS: usize = 22;

/// The ids of one kind of owner-bound item: `<prefix>_<128 random bits,
/// base64url>`. Nothing in an id encodes the owner, a counter or a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct IdKind {
    /// Short and readable, lowercase ASCII (`bsk`, `tsk`).
    pub prefix: &'static str,
}

impl IdKind {
    /// A new id, unguessable.
    pub fn mint(self) -> String {
        format!("{}_{}", self.prefix, URL_SAFE_NO_PAD.encode(random::bytes::<ID_RANDOM_BYTES>()))
    }

    /// Whether `id` has the shape [`IdKind::mint`] gives: checked before
    /// any store call, so a malformed string costs nothing.
    pub fn is_well_formed(self, id: &str) -> bool {
        id.strip_prefix(self.prefix).and_then(|rest| rest.strip_prefix('_')).is_some_and(|random| {
            random.len() == ID_RANDOM_CHARS
                && random.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                && URL_SAFE_NO_PAD.decode(random).is_ok_and(|bytes| bytes.len() == ID_RANDOM_BYTES)
        })
    }

    /// Where the item `id` of the owner whose binding id is `owner` lives.
    pub fn key(self, owner: String, id: &str) -> ItemKey {
        let mut material = Vec::with_capacity(owner.len() + id.len() + 8);
        for part in [owner.as_bytes(), id.as_bytes()] {
            material.extend_from_slice(&(part.len() as u32).to_be_bytes());
            material.extend_from_slice(part);
        }
        let hash = hex(digest(&SHA256, &material).as_ref());
        // `handle#` for tasks too: the prefix the table's items and the
        // roles' LeadingKeys were written with.
        ItemKey { partition_key: format!("handle#{}#{hash}", self.prefix), owner, kind: self.prefix }
    }
}

/// Where one owner's item lives. The key is derived from the owner *and*
/// the id, so another principal's lookup of a stolen id finds nothing at
/// all ("State Handle Hijacking", security-best-practices).
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(
    clippy::exhaustive_structs,
    reason = "records the storage adapters (mcp-aws) build: a new field must be filled by each, so adding one should not compile until it is"
)]
pub struct ItemKey {
    /// `handle#<prefix>#<hex SHA-256 of owner and id>`.
    pub partition_key: String,
    /// The owner's binding id (`Principal::binding_id`).
    pub owner: String,
    /// The id prefix of its kind.
    pub kind: &'static str,
}

/// Lowercase hex, as keys, hashes and ids are written. On every store
/// call's path, so one allocation, not one per byte.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

/// Clients never see the detail: the edge answers -32603 and logs it.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreError {
    /// Unreachable, throttled or failing after the SDK's own retries.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// An item that does not have the shape this crate writes.
    #[error("stored item is corrupt: {0}")]
    Corrupt(String),
}

/// The in-memory stores' map, behind one lock.
pub(crate) struct LockedMap<T>(std::sync::Mutex<std::collections::HashMap<String, T>>);

impl<T> Default for LockedMap<T> {
    fn default() -> Self {
        Self(Default::default())
    }
}

impl<T> LockedMap<T> {
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut std::collections::HashMap<String, T>) -> R) -> Result<R, StoreError> {
        let mut items = self.0.lock().map_err(|_| StoreError::Unavailable("store lock poisoned".into()))?;
        Ok(f(&mut items))
    }
}

/// The pace of a compare-and-set loop that lost to a concurrent writer:
/// exponential backoff with random jitter (so writers that collided do not
/// collide again in step), no sleep after the last attempt, and every
/// retry counted in the request's metrics. Public for the AWS adapters'
/// own loops (a transaction that met another on the same item).
#[derive(Debug)]
pub struct Backoff {
    attempts_left: u32,
    delay: Duration,
}

impl Backoff {
    /// At most `max_attempts` attempts, the first wait `first_delay` (plus
    /// jitter).
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
        let jitter = self.delay.mul_f64(f64::from(random::bytes::<1>()[0]) / 255.0);
        tokio::time::sleep(self.delay + jitter).await;
        self.delay *= 2;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_lowercase_two_digits_per_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
        assert_eq!(hex(&[]), "");
    }

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
