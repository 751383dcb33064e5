//! What can go wrong in a store, whatever backs it (DynamoDB or memory).

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
