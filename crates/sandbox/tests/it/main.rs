//! Integration tests of the sandbox crate through its public API: the read-only jail run
//! directly (no classifier involved), the environment scrub and the resource limits.
#![allow(clippy::unwrap_used, clippy::expect_used)]
