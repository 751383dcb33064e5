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
