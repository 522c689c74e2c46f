//! Integration tests of tool-core through its public API: the permission engine's rule
//! forms and evaluation order, the execution path and batch runner, and a host's own tool.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod custom_tool;
mod exec;
mod fixtures;
mod live;
mod path_fields;
mod permissions;
mod sessions;
