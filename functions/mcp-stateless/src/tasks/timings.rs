//! placeholder
pub const VISIBILITY_FACTOR: u64 = 6;
pub const WORKER_TIMEOUTS: [u64; 5] = [60, 120, 300, 600, 900];
