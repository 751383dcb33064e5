//! Random bytes from the operating system's CSPRNG (`getrandom(2)`), for
//! nonces, state ids, handles and the in-process key.
//!
//! Not aws-lc's DRBG: seeding it runs a CPU-jitter entropy source that costs
//! tens of milliseconds on first use (docs/benchmarks.md), a tax on every
//! cold start.

/// `N` random bytes. Panics only if the kernel cannot provide randomness,
/// in which case no secure operation is possible anyway.
pub fn bytes<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    getrandom::fill(&mut out).expect("the operating system's CSPRNG is unavailable");
    out
}
