//! Intentionally empty: the helpers the tests share are in `support/client.rs`,
//! included by each test file.
