//! Integration tests of tool-core through its public API: the permission engine's rule
//! forms and evaluation order, and the execution path and batch runner.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod exec;
mod fixtures;
mod permissions;
