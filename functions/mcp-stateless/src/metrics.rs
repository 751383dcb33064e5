//! Per-request counters for the request log line (which Lambda writes as a
//! CloudWatch Embedded Metric Format record, see `edge::request_log`).
//!
//! The edge opens a scope around each request; code anywhere below it (the
//! KMS key source, the DynamoDB store, the compare-and-set loops) calls
//! [`count`] without being handed anything. Outside a scope (a task
//! worker, a test) counting does nothing.

use std::{
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
};

/// What is counted per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Counter {
    /// A KMS `GenerateDataKey` or `Decrypt` call.
    KmsCalls,
    /// A requestState data key served from the instance's cache.
    DataKeyCacheHits,
    /// A DynamoDB write refused by its condition (a lost compare-and-set,
    /// or an item that was gone, foreign or expired).
    ConditionalCheckFailures,
    /// A compare-and-set retried after losing to a concurrent writer.
    StoreRetries,
    /// A read of the mailbox a 2025-era call waits on for its client's
    /// answers.
    MailboxReads,
    /// A request served at its `_meta` version though its
    /// `MCP-Protocol-Version` header named another version this server
    /// speaks (`edge::tolerance`).
    ToleratedVersionMismatch,
    /// An `MCP-Protocol-Version` header that repeated one value.
    ToleratedRepeatedVersion,
    /// A 2025-shaped request served at its session's version though its
    /// header named a newer one.
    ToleratedSessionVersion,
    /// A POST with no `Accept` header, answered as JSON.
    ToleratedMissingAccept,
}

impl Counter {
    /// Every counter, in the order the log line and the metric record
    /// name them.
    pub const ALL: [Counter; 9] = [
        Counter::KmsCalls,
        Counter::DataKeyCacheHits,
        Counter::ConditionalCheckFailures,
        Counter::StoreRetries,
        Counter::MailboxReads,
        Counter::ToleratedVersionMismatch,
        Counter::ToleratedRepeatedVersion,
        Counter::ToleratedSessionVersion,
        Counter::ToleratedMissingAccept,
    ];

    /// Whether it counts a client shape the edge tolerated.
    pub fn is_tolerance(self) -> bool {
        matches!(
            self,
            Counter::ToleratedVersionMismatch
                | Counter::ToleratedRepeatedVersion
                | Counter::ToleratedSessionVersion
                | Counter::ToleratedMissingAccept
        )
    }

    /// The metric's name in CloudWatch.
    pub fn name(self) -> &'static str {
        match self {
            Counter::KmsCalls => "KmsCalls",
            Counter::DataKeyCacheHits => "DataKeyCacheHits",
            Counter::ConditionalCheckFailures => "ConditionalCheckFailures",
            Counter::StoreRetries => "StoreRetries",
            Counter::MailboxReads => "MailboxReads",
            Counter::ToleratedVersionMismatch => "ToleratedVersionMismatch",
            Counter::ToleratedRepeatedVersion => "ToleratedRepeatedVersion",
            Counter::ToleratedSessionVersion => "ToleratedSessionVersion",
            Counter::ToleratedMissingAccept => "ToleratedMissingAccept",
        }
    }
}

/// The counts of one request.
#[derive(Debug, Default)]
pub struct Counts([AtomicU32; Counter::ALL.len()]);

impl Counts {
    /// How often `counter` was counted in the request so far.
    pub fn get(&self, counter: Counter) -> u32 {
        self.0[counter as usize].load(Ordering::Relaxed)
    }
}

tokio::task_local! {
    static CURRENT: Arc<Counts>;
}

/// Adds one to `counter` for the request being served, if any.
pub fn count(counter: Counter) {
    let _ = CURRENT.try_with(|counts| counts.0[counter as usize].fetch_add(1, Ordering::Relaxed));
}

/// Runs `future` as one request's scope; its counts are read afterwards.
pub async fn scope<F: Future>(future: F) -> (F::Output, Arc<Counts>) {
    let counts = Arc::new(Counts::default());
    let output = CURRENT.scope(counts.clone(), future).await;
    (output, counts)
}

/// Runs `future` inside an existing request's scope: work a request
/// started that runs beside its response (a legacy call's conversation)
/// counts as the request's.
pub async fn within<F: Future>(counts: Arc<Counts>, future: F) -> F::Output {
    CURRENT.scope(counts, future).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn counts_belong_to_their_own_scope_only() {
        count(Counter::KmsCalls); // outside any scope: nothing happens
        let ((), first) = scope(async {
            count(Counter::KmsCalls);
            count(Counter::KmsCalls);
            count(Counter::StoreRetries);
        })
        .await;
        let ((), second) = scope(async { count(Counter::DataKeyCacheHits) }).await;
        assert_eq!((first.get(Counter::KmsCalls), first.get(Counter::StoreRetries)), (2, 1));
        assert_eq!(first.get(Counter::DataKeyCacheHits), 0);
        assert_eq!((second.get(Counter::KmsCalls), second.get(Counter::DataKeyCacheHits)), (0, 1));
    }
}
